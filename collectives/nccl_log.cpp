// NCCL's logging, read back (nccl_log.hpp).
#include "collectives/nccl_log.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

namespace clusterbench::collectives {

namespace {

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

/// "NET/IB/0/GDRDMA" -> "NET/IB/GDRDMA", "NET/Socket/3" -> "NET/Socket": the NIC index differs by
/// channel and says nothing about the transport.
std::string transport_kind(std::string via) {
  while (!via.empty() && std::isspace(static_cast<unsigned char>(via.back()))) via.pop_back();
  std::string out, seg;
  auto flush = [&] {
    bool digits = !seg.empty() && std::all_of(seg.begin(), seg.end(),
                                              [](unsigned char c) { return std::isdigit(c) != 0; });
    if (!seg.empty() && !digits) out += (out.empty() ? "" : "/") + seg;
    seg.clear();
  };
  for (char c : via) {
    if (c == '/')
      flush();
    else
      seg += c;
  }
  flush();
  return out;
}

}  // namespace

NcclLogFacts parse_nccl_log(std::istream& in) {
  static const std::regex version(R"(NCCL version (\S+))");
  static const std::regex network(R"(NCCL INFO Using network (\S+))");
  static const std::regex nics(R"(NCCL INFO NET/IB ?: Using (.*?)(?: \[RO\])?;)");
  static const std::regex nic(R"(\[\d+\](\S+))");
  static const std::regex via(R"(NCCL INFO (?:Channel|Ring) \d+(?:/\d+)? : .* via (.+)$)");
  static const std::regex nvls(R"(NCCL INFO NVLS multicast support is (not )?available)");
  static const std::regex connected(R"(NCCL INFO Connected (.+?)\s*$)");
  static const std::regex env(R"(NCCL INFO (NCCL_\w+) set by environment to (.*?)\.?\s*$)");
  static const std::regex choice(
      R"(NCCL INFO (\w+): (\d+) Bytes -> Algo (\w+) proto (\w+)(?: channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})?)");
  NcclLogFacts f;
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (std::regex_search(line, m, choice)) {
      NcclChoice c;
      c.func = m[1];
      c.bytes = std::stoll(m[2]);
      c.algo = m[3];
      c.proto = m[4];
      if (m[5].matched) c.channels = std::stoi(m[6]) - std::stoi(m[5]) + 1;
      f.choices.push_back(c);
    } else if (std::regex_search(line, m, via)) {
      add_unique(f.transports, transport_kind(m[1]));
    } else if (std::regex_search(line, m, network)) {
      f.network = m[1];
    } else if (std::regex_search(line, m, nics)) {
      std::string list = m[1];
      for (std::sregex_iterator it(list.begin(), list.end(), nic), end; it != end; ++it)
        add_unique(f.nics, (*it)[1]);
    } else if (std::regex_search(line, m, nvls)) {
      f.nvls = m[1].matched ? 0 : 1;
    } else if (std::regex_search(line, m, env)) {
      f.env[m[1].str()] = m[2].str();
    } else if (std::regex_search(line, m, connected)) {
      add_unique(f.connected, m[1]);
    } else if (f.version.empty() && std::regex_search(line, m, version)) {
      f.version = m[1];
    }
  }
  return f;
}

json to_json(const NcclLogFacts& f) {
  json j = json::object();
  if (!f.version.empty()) j["version"] = f.version;
  if (!f.network.empty()) j["network"] = f.network;
  if (!f.nics.empty()) j["nics"] = f.nics;
  if (!f.transports.empty()) j["transports"] = f.transports;
  if (f.nvls >= 0) j["nvls"] = f.nvls == 1;
  if (!f.connected.empty()) j["connected"] = f.connected;
  if (!f.env.empty()) j["env"] = f.env;
  return j;
}

const NcclChoice* last_choice(const NcclLogFacts& f, const std::string& func) {
  for (auto it = f.choices.rbegin(); it != f.choices.rend(); ++it)
    if (it->func == func) return &*it;
  return nullptr;
}

std::string nccl_func_name(const std::string& collective) {
  if (collective == "all_reduce") return "AllReduce";
  if (collective == "all_gather") return "AllGather";
  if (collective == "reduce_scatter") return "ReduceScatter";
  if (collective == "broadcast") return "Broadcast";
  if (collective == "reduce") return "Reduce";
  return "";
}

bool algorithm_is_wire(const std::string& algo) {
  std::string a = algo;
  std::transform(a.begin(), a.end(), a.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return a == "RING";
}

}  // namespace clusterbench::collectives
