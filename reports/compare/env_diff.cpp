// Environment and settings differences between two runs (env_diff.hpp).
#include "reports/compare/env_diff.hpp"

#include <map>
#include <set>
#include <tuple>

namespace clusterbench::report {

namespace {

/// Environment fields compared per host: (field, value) pairs, several per field for GPUs,
/// NICs and disks (keyed by UUID or name so the same part is compared with itself).
std::vector<std::pair<std::string, std::string>> env_fields(const EnvRecord& e) {
  std::vector<std::pair<std::string, std::string>> f = {
      {"driver", e.versions.driver},
      {"cuda_driver", e.versions.cuda_driver},
      {"cuda_runtime", e.versions.cuda_runtime},
      {"cublas", e.versions.cublas},
      {"nccl", e.versions.nccl},
      {"mpi", e.versions.mpi},
      {"kernel", e.versions.kernel},
      {"fio", e.versions.fio},
      {"clusterbench", e.versions.clusterbench},
      {"gpu count", std::to_string(e.gpus.size())},
      {"tuning governor", e.tuning.governor},
      {"tuning nr_hugepages", std::to_string(e.tuning.nr_hugepages)},
      {"tuning thp", e.tuning.thp},
      {"tuning net.core.rmem_max", std::to_string(e.tuning.net_core_rmem_max)},
      {"tuning net.core.wmem_max", std::to_string(e.tuning.net_core_wmem_max)},
      {"tuning tcp_rmem", e.tuning.tcp_rmem},
      {"tuning tcp_wmem", e.tuning.tcp_wmem},
  };
  for (const auto& g : e.gpus) f.push_back({"gpu vbios " + g.uuid, g.vbios});
  for (const auto& n : e.nics)
    if (n.physical()) f.push_back({"nic firmware " + n.name, n.firmware});
  for (const auto& d : e.block_devices) f.push_back({"disk firmware " + d.name, d.firmware});
  // Not probed in a record written before the software stack was: not a change.
  if (!e.software.pytorch.state.empty())
    for (auto& [name, value] : software_fields(e.software)) f.push_back({name, value});
  return f;
}

/// The field name shown: per-part fields are grouped by kind ("gpu vbios"), so that one change
/// over a thousand GPUs is one row.
std::string field_group(const std::string& field) {
  for (const char* prefix : {"gpu vbios ", "disk firmware "})
    if (field.rfind(prefix, 0) == 0) return std::string(prefix, std::string(prefix).size() - 1);
  return field;
}

/// What the two runs were asked to do differently (run.json suite, only, rounds, set): a change
/// there explains a change in the numbers as much as a driver does. Listed with hosts "all".
void compare_settings(const RunRecord& b, const RunRecord& c, EnvDiff& out) {
  auto add = [&](const std::string& field, const std::string& bv, const std::string& cv) {
    if (bv != cv) out.changes.push_back({field, bv, cv, {"all"}});
  };
  add("--suite", b.suite, c.suite);
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s.empty() ? std::string("(all)") : s;
  };
  add("--only", joined(b.only), joined(c.only));
  // One round's repetitions sample one window, five rounds' five moments: not like for like.
  add("--rounds", std::to_string(b.rounds), std::to_string(c.rounds));
  auto sets = [](const std::vector<std::string>& v) {
    std::map<std::string, std::string> m;
    for (const auto& kv : v) {
      auto eq = kv.find('=');
      m[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    return m;
  };
  auto bs = sets(b.set), cs = sets(c.set);
  std::set<std::string> keys;
  for (const auto& [k, v] : bs) keys.insert(k);
  for (const auto& [k, v] : cs) keys.insert(k);
  for (const auto& k : keys) {
    auto bi = bs.find(k), ci = cs.find(k);
    add("--set " + k, bi == bs.end() ? "(default)" : bi->second,
        ci == cs.end() ? "(default)" : ci->second);
  }
}

}  // namespace

EnvDiff diff_env(const RunDir& b, const RunDir& c) {
  EnvDiff out;
  compare_settings(b.run, c.run, out);
  std::map<std::string, const EnvRecord*> bh, ch;
  for (const auto& e : b.run.env) bh[e.host] = &e;
  for (const auto& e : c.run.env) ch[e.host] = &e;
  std::map<std::tuple<std::string, std::string, std::string>, std::set<std::string>> groups;
  for (const auto& [host, be] : bh) {
    auto it = ch.find(host);
    if (it == ch.end()) {
      out.hosts_removed.push_back(host);
      continue;
    }
    std::map<std::string, std::string> cur;
    for (auto& [k, v] : env_fields(*it->second)) cur[k] = v;
    for (auto& [k, v] : env_fields(*be)) {
      auto ci = cur.find(k);
      if (ci == cur.end() || ci->second == v) continue;
      groups[{field_group(k), v, ci->second}].insert(host);
    }
  }
  for (const auto& [host, ce] : ch)
    if (!bh.count(host)) out.hosts_added.push_back(host);
  for (auto& [key, hosts] : groups) {
    auto& [field, bv, cv] = key;
    out.changes.push_back({field, bv, cv, std::vector<std::string>(hosts.begin(), hosts.end())});
  }
  return out;
}

}  // namespace clusterbench::report
