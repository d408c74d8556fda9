// Health counters (health.hpp, docs/health.md): one snapshot of a node's error counters. Every
// file is read below fs_root; what cannot be read is left out with its reason, never guessed.
#include "env/health.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "env/nvml.hpp"

namespace clusterbench::health {

namespace fs = std::filesystem;

namespace {

/// The InfiniBand port counters read (/sys/class/infiniband/<dev>/ports/<n>/counters/<name>).
constexpr const char* kIbCounters[] = {"symbol_error", "link_downed", "link_error_recovery",
                                       "port_rcv_errors", "port_xmit_discards"};

/// AER files of a PCI device and the snapshot keys they are stored under.
constexpr std::pair<const char*, const char*> kAerFiles[] = {{"aer_dev_correctable", "correctable"},
                                                             {"aer_dev_nonfatal", "nonfatal"},
                                                             {"aer_dev_fatal", "fatal"}};

/// Largest kernel log read (a regular file misnamed as the log must not exhaust memory).
constexpr size_t kMaxLogBytes = 64u << 20;
/// XID lines kept per snapshot (the latest ones).
constexpr size_t kMaxXidLines = 256;

std::string under(const std::string& fs_root, const std::string& path) {
  if (fs_root.empty() || fs_root == "/") return path;
  std::string root = fs_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root + path;
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

/// An unsigned decimal counter file ("0\n"); nullopt when unreadable or not a number.
std::optional<unsigned long long> read_counter(const std::string& path) {
  auto text = read_text(path);
  if (!text) return std::nullopt;
  std::string t = trim(*text);
  if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  try {
    return std::stoull(t);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> sorted_entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

json read_ib_ports(const std::string& fs_root) {
  json ports = json::array();
  const std::string cls = under(fs_root, "/sys/class/infiniband");
  for (const auto& dev : sorted_entries(cls)) {
    for (const auto& port : sorted_entries(cls + "/" + dev + "/ports")) {
      const std::string dir = cls + "/" + dev + "/ports/" + port + "/counters";
      json counters = json::object();
      for (const char* name : kIbCounters)
        if (auto v = read_counter(dir + "/" + name)) counters[name] = *v;
      json p = {{"name", dev + "/" + port}, {"counters", counters}};
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) p["status"] = "no counters directory";
      ports.push_back(p);
    }
  }
  return ports;
}

/// Hex number file ("0x030200"); -1 when unreadable.
long long read_hex(const std::string& path) {
  auto text = read_text(path);
  if (!text) return -1;
  try {
    return std::stoll(trim(*text), nullptr, 16);
  } catch (const std::exception&) {
    return -1;
  }
}

/// The name of a NIC's PCI function: its IB device ("mlx5_0") or its interface ("eno1").
std::string nic_name(const std::string& dev_dir) {
  for (const char* sub : {"/infiniband", "/net"}) {
    auto names = sorted_entries(dev_dir + sub);
    if (!names.empty()) return names.front();
  }
  return "";
}

json read_pcie_aer(const std::string& fs_root, const json& gpus) {
  json devices = json::array();
  const std::string dir = under(fs_root, "/sys/bus/pci/devices");
  for (const auto& bdf : sorted_entries(dir)) {
    const std::string d = dir + "/" + bdf;
    const long long cls = read_hex(d + "/class");
    const long long vendor = read_hex(d + "/vendor");
    std::string role;
    if (vendor == 0x10de && (cls >> 16) == 0x03) role = "gpu";
    if ((cls >> 16) == 0x02) role = "nic";
    if (role.empty()) continue;
    json dev = {{"pci_bus_id", bdf}, {"role", role}};
    if (role == "nic") {
      dev["name"] = nic_name(d);
    } else {
      dev["name"] = "";
      for (const auto& g : gpus)
        if (g.value("pci_bus_id", "") == bdf)
          dev["name"] = "gpu" + std::to_string(g.value("index", -1));
    }
    bool any = false;
    for (const auto& [file, key] : kAerFiles) {
      auto text = read_text(d + "/" + file);
      if (!text) continue;
      any = true;
      dev[key] = parse_aer(*text);
    }
    dev["aer"] = any;
    devices.push_back(dev);
  }
  return devices;
}

/// /dev/kmsg below fs_root: every record (the device hands one per read() and EAGAIN at the end
/// with O_NONBLOCK; a fixture's regular file is read to EOF). XID lines and the last sequence.
json read_kernel_log(const std::string& fs_root) {
  const std::string path = under(fs_root, "/dev/kmsg");
  json log = {{"path", path}, {"readable", false}, {"last_seq", -1}, {"xid", json::array()}};
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    log["status"] = errno == ENOENT ? std::string("absent") : std::string(std::strerror(errno));
    return log;
  }
  std::string text;
  std::vector<char> buf(16384);
  std::string error;
  while (text.size() < kMaxLogBytes) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      text.append(buf.data(), static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || errno == EAGAIN) break;
    if (errno == EPIPE || errno == EINTR) continue;  // a record overwritten while reading
    error = std::strerror(errno);
    break;
  }
  ::close(fd);
  if (!error.empty() && text.empty()) {
    log["status"] = error;
    return log;
  }
  log["readable"] = true;
  log["status"] = error.empty() ? "ok" : error;
  long long last_seq = -1;
  std::vector<json> xids;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == ' ') continue;  // a record's key=value continuation
    unsigned prio = 0;
    long long seq = -1;
    if (std::sscanf(line.c_str(), "%u,%lld,", &prio, &seq) == 2) last_seq = std::max(last_seq, seq);
    json x = parse_xid_line(line);
    if (!x.is_null()) xids.push_back(std::move(x));
  }
  if (xids.size() > kMaxXidLines) xids.erase(xids.begin(), xids.end() - kMaxXidLines);
  log["last_seq"] = last_seq;
  log["xid"] = xids;
  return log;
}

}  // namespace

json parse_aer(std::string_view text) {
  json out = json::object();
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string name, count, extra;
    if (!(words >> name >> count) || (words >> extra)) continue;
    if (count.find_first_not_of("0123456789") != std::string::npos) continue;
    try {
      out[name] = std::stoull(count);
    } catch (const std::exception&) {
    }
  }
  return out;
}

json parse_xid_line(std::string_view line) {
  static constexpr std::string_view kTag = "NVRM: Xid (PCI:";
  const size_t at = line.find(kTag);
  if (at == std::string_view::npos) return nullptr;
  const size_t bus_begin = at + kTag.size();
  const size_t bus_end = line.find(')', bus_begin);
  if (bus_end == std::string_view::npos) return nullptr;
  std::string bus(line.substr(bus_begin, bus_end - bus_begin));
  size_t p = bus_end + 1;
  if (p < line.size() && line[p] == ':') ++p;
  while (p < line.size() && line[p] == ' ') ++p;
  size_t digits = p;
  while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) ++digits;
  if (digits == p) return nullptr;
  for (char& c : bus) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (std::count(bus.begin(), bus.end(), ':') == 1) bus = "0000:" + bus;  // "18:00" (no domain)
  if (bus.find('.') == std::string::npos) bus += ".0";
  long long seq = -1;
  unsigned prio = 0;
  const size_t semi = line.find(';');
  if (semi != std::string_view::npos && semi < at) {
    std::string prefix(line.substr(0, semi));
    if (std::sscanf(prefix.c_str(), "%u,%lld,", &prio, &seq) != 2) seq = -1;
  }
  return json{{"seq", seq},
              {"pci_bus_id", bus},
              {"xid", std::stoll(std::string(line.substr(p, digits - p)))},
              {"text", trim(std::string(line.substr(at)))}};
}

json read_counters(const std::string& fs_root, bool query_nvml) {
  json s = {{"schema", kHealthSchema}, {"collected_at", utc_now_iso()}, {"fs_root", fs_root}};
  std::string status = "not queried";
  json gpus = json::array();
  if (query_nvml) gpus = query_nvml_health(status);
  s["nvml"] = status;
  s["gpus"] = gpus;
  s["ib_ports"] = read_ib_ports(fs_root);
  s["pcie_aer"] = read_pcie_aer(fs_root, gpus);
  s["kernel_log"] = read_kernel_log(fs_root);
  return s;
}

// ---------------------------------------------------------------------------------------------
// XidWatcher.

XidWatcher::XidWatcher() = default;

XidWatcher::~XidWatcher() { stop(); }

void XidWatcher::start(unsigned poll_ms) {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  events_ = std::make_unique<NvmlXidEvents>();
  result_ = json{{"status", events_->status()},
                 {"gpus_registered", events_->registered()},
                 {"started_at", utc_now_iso()},
                 {"events", json::array()}};
  if (events_->registered() == 0) {
    if (events_->status() == "ok") result_["status"] = "no GPU to watch";
    return;
  }
  stop_ = false;
  thread_ = std::thread([this, poll_ms] { loop(poll_ms); });
}

void XidWatcher::loop(unsigned poll_ms) {
  while (!stop_) {
    NvmlXidEvent e;
    const int got = events_->wait(poll_ms, e);
    if (got == 1) {
      std::lock_guard lock(mu_);
      result_["events"].push_back(json{{"gpu_index", e.gpu_index},
                                       {"uuid", e.uuid},
                                       {"pci_bus_id", e.pci_bus_id},
                                       {"xid", e.xid},
                                       {"at", utc_now_iso()}});
    } else if (got < 0) {
      {
        std::lock_guard lock(mu_);
        result_["status"] = events_->status();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
    }
  }
}

json XidWatcher::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  if (events_) {
    if (result_.value("status", "") == "ok") result_["status"] = events_->status();
    result_["stopped_at"] = utc_now_iso();
    events_.reset();
  }
  return result_;
}

}  // namespace clusterbench::health
