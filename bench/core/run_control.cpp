// Resume, dry-run estimates, time limit and busy-GPU check (run_control.hpp).
#include "core/run_control.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "core/run_lock.hpp"
#include "core/sink.hpp"
#include "core/version.hpp"
#include "env/nvml.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

// ---------------------------------------------------------------------------------------------
// Estimates.

CaseEstimate estimate_case(const Benchmark& b, const json& params, const Settings& settings,
                           const NodeEnv& node) {
  CaseEstimate e;
  e.benchmark = b.id();
  e.params = params;
  e.level = level_name(b.case_level(params));
  if (b.case_needs_gpu(params) && !node.gpu.runs()) {
    e.note = std::string(gpu_state_name(node.gpu.state)) + ": " + node.gpu.reason;
    return e;
  }
  std::string reason;
  try {
    reason = b.applicable(node);
    if (reason.empty()) reason = b.case_waiver(params, node);
  } catch (const std::exception& ex) {
    e.note = std::string("failed: applicability check failed: ") + ex.what();
    return e;
  }
  if (!reason.empty()) {
    e.note = "waived: " + reason;
    return e;
  }
  e.seconds = b.estimate_s(settings, params);
  return e;
}

namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.2f" : "%.1f", s);
  return buf;
}

}  // namespace

std::string render_dry_run(const std::vector<CaseEstimate>& cases, const std::string& header) {
  std::ostringstream out;
  out << header;
  double total = 0;
  int runs = 0;
  out << "  estimate_s  level    case\n";
  for (const auto& c : cases) {
    total += c.seconds;
    if (c.note.empty()) ++runs;
    char col[32];
    std::snprintf(col, sizeof col, "  %10s  %-7s  ", seconds_text(c.seconds).c_str(),
                  c.level.c_str());
    out << col << c.benchmark << " " << dump_json(c.params);
    if (!c.note.empty()) out << "  (" << c.note << ")";
    out << "\n";
  }
  out << "total: " << cases.size() << " case(s), " << runs << " to run, estimated "
      << seconds_text(total) << " s\n";
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// Resume.

namespace {

std::string list_text(const std::vector<std::string>& xs) {
  std::string out = "[";
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + xs[i];
  return out + "]";
}

void differ(std::vector<std::string>& out, const std::string& what, const std::string& earlier,
            const std::string& now) {
  if (earlier != now) out.push_back(what + ": earlier '" + earlier + "', now '" + now + "'");
}

/// The rounds of a run without --rounds: CLUSTERBENCH_ROUNDS when set (rank 0's, so that every
/// rank plans the same rounds; a site's default, or a test harness's 1), else the suite's. The
/// burn-in takes 1 whatever is set (its soak is not in rounds). Throws InputError naming the
/// variable when it is not a whole number from 1 to kMaxRounds.
int default_rounds(const std::string& suite, const Context& ctx) {
  std::string text;
  if (ctx.is_root())
    if (const char* v = std::getenv("CLUSTERBENCH_ROUNDS")) text = v;
  text = ctx.bcast(text);
  if (text.empty() || suite_rounds(suite) == 1) return suite_rounds(suite);
  if (const int n = parse_rounds(text)) return n;
  // At most 40 bytes, with control characters escaped: the message stays one readable line.
  const std::string shown = json(valid_utf8(text.substr(0, 40))).dump();
  throw InputError("CLUSTERBENCH_ROUNDS='" + shown.substr(1, shown.size() - 2) +
                   (text.size() > 40 ? "..." : "") + "' is not a whole number from 1 to " +
                   std::to_string(kMaxRounds) + " (the rounds of a run without --rounds)");
}

}  // namespace

RunOptions resolve_resume(const RunOptions& given, const Context& ctx, ResumeState& state) {
  if (given.resume_dir.empty()) {
    RunOptions o = given;
    if (o.rounds == 0) o.rounds = default_rounds(o.suite, ctx);
    return o;
  }
  auto norm = [](const std::string& p) {
    auto n = std::filesystem::absolute(p).lexically_normal();
    return n.has_filename() ? n : n.parent_path();  // "R/" names R
  };
  if (!given.out_dir.empty() && norm(given.out_dir) != norm(given.resume_dir))
    throw InputError("--resume " + given.resume_dir + " appends to that directory; --out " +
                     given.out_dir + " names another");
  std::string text, error;
  if (ctx.is_root()) {
    try {
      const std::string path = given.resume_dir + "/run.json";
      std::ifstream in(path);
      if (!in) throw InputError(path + ": cannot open (nothing to resume)");
      std::stringstream ss;
      ss << in.rdbuf();
      json j = json::parse(ss.str());
      (void)j.get<RunRecord>();  // validates the schema and fields
      // Before the lock file is written: a frozen filesystem must not hold rank 0 (sink.hpp).
      probe_output_writable(given.resume_dir, std::min(30.0, given.phase_timeout_s / 2));
      acquire_run_lock(given.resume_dir);  // a run still going is refused, naming pid and host
      text = dump_json(j);
    } catch (const OutputStalled& e) {
      error = std::string("3--resume ") + given.resume_dir + ": " + e.what();
    } catch (const std::exception& e) {
      error = std::string("2--resume ") + given.resume_dir + ": " + e.what();
    }
  }
  error = ctx.bcast(error);  // "3..." a stalled filesystem (exit 3), "2..." bad input
  if (!error.empty() && error[0] == '3') throw OutputStalled(error.substr(1));
  if (!error.empty()) throw InputError(error.substr(1));
  state.active = true;
  state.dir = given.resume_dir;
  state.run_json = json::parse(ctx.bcast(text));
  state.run = state.run_json.get<RunRecord>();
  const RunRecord& e = state.run;

  RunOptions o = given;
  std::vector<std::string> diffs;
  differ(diffs, "version", e.version, clusterbench_version());
  if (given.suite_given) differ(diffs, "suite", e.suite, given.suite);
  o.suite = e.suite;
  if (given.only_given) differ(diffs, "--only", list_text(e.only), list_text(given.only));
  o.only = e.only;
  if (given.set_given) differ(diffs, "--set", list_text(e.set), list_text(given.set));
  o.set = e.set;
  if (given.rounds != 0)
    differ(diffs, "--rounds", std::to_string(e.rounds), std::to_string(given.rounds));
  o.rounds = e.rounds;
  // The spec: the earlier run's file unless given; its sha256 is compared once it is read.
  if (!given.spec_given) o.spec_path = e.spec.path;
  if (!diffs.empty()) {
    std::string msg = "--resume " + given.resume_dir + ": this run differs from the earlier one:";
    for (const auto& d : diffs) msg += "\n  " + d;
    throw InputError(msg);
  }
  return o;
}

namespace {

/// The records file's text without a torn last line (a write the killed run did not finish).
/// With `repair` the file itself is repaired: a whole record that only lacks its newline gets it;
/// a partial line moves to records.jsonl.torn.
std::string complete_lines(const std::string& path, bool repair) {
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const size_t complete = text.empty() || text.back() == '\n' ? text.size() : text.rfind('\n') + 1;
  if (complete == text.size()) return text;
  const std::string torn = text.substr(complete);
  bool whole = false;  // a whole record that only lacks its newline: keep it, add the newline
  try {
    whole = json::parse(torn).is_object();
  } catch (const std::exception&) {
  }
  if (repair && whole) {
    std::ofstream(path, std::ios::app) << '\n';
  } else if (repair) {
    std::ofstream(path + ".torn", std::ios::app) << torn << '\n';
    std::filesystem::resize_file(path, complete);
    std::cerr << "clusterbench: --resume: " << path << ": its torn last line (" << torn.size()
              << " bytes, a partial write of the killed run) was moved to " << path << ".torn"
              << std::endl;
  }
  if (!whole) text.resize(complete);
  return text;
}

}  // namespace

void read_resume_records(ResumeState& state, bool repair) {
  const std::string path = state.dir + "/records.jsonl";
  std::map<std::string, bool> last;  // case key -> its last record is done
  std::istringstream lines(complete_lines(path, repair));
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception& e) {
      throw InputError("--resume " + state.dir + ": " + path + ":" + std::to_string(number) +
                       ": not a record (" + e.what() + "); fix or remove that line, then resume");
    }
    std::string key = j.value("case_key", "");
    if (key.empty()) {
      try {
        ResultRecord r = j.get<ResultRecord>();
        key = make_case_key(r.benchmark, r.params, r.scope);
      } catch (const std::exception&) {
        continue;
      }
    }
    const std::string status = j.value("status", "");
    const bool has_extra = j.contains("extra") && j["extra"].is_object();
    const bool refused = has_extra && j["extra"].value("refused", false);
    // A snapshot (a case spread over --rounds that the run left after some of them) is redone.
    const bool snapshot = has_extra && j["extra"].value("snapshot", false);
    last[key] = !snapshot && (status == "ok" || (status == "waived" && !refused));
  }
  for (const auto& [key, done] : last)
    if (done) state.done_keys.insert(key);
}

std::vector<std::string> plan_differences(const RunRecord& earlier, const RunRecord& now) {
  std::vector<std::string> out;
  if (earlier.world_size != now.world_size)
    out.push_back("ranks: earlier " + std::to_string(earlier.world_size) + ", now " +
                  std::to_string(now.world_size));
  differ(out, "hosts", list_text(earlier.hosts), list_text(now.hosts));
  std::vector<std::string> a, b;
  for (const auto& pc : earlier.plan) a.insert(a.end(), pc.case_keys.begin(), pc.case_keys.end());
  for (const auto& pc : now.plan) b.insert(b.end(), pc.case_keys.begin(), pc.case_keys.end());
  if (out.empty() && a != b) {
    std::string first;
    for (size_t i = 0; i < std::max(a.size(), b.size()) && first.empty(); ++i) {
      std::string x = i < a.size() ? a[i] : "(none)", y = i < b.size() ? b[i] : "(none)";
      if (x != y) first = "case " + std::to_string(i + 1) + " earlier '" + x + "', now '" + y + "'";
    }
    out.push_back("plan: earlier " + std::to_string(a.size()) + " case record(s), now " +
                  std::to_string(b.size()) + "; " + first);
  }
  return out;
}

bool needs_rerun(const PlannedCase& pc, const ResumeState& state) {
  if (!state.active) return true;
  return std::any_of(pc.case_keys.begin(), pc.case_keys.end(),
                     [&](const std::string& k) { return !state.done_keys.count(k); });
}

json spec_chain_json(const std::vector<std::string>& chain) {
  json out = json::array();
  for (const auto& f : chain) {
    const std::string path = std::filesystem::absolute(f).lexically_normal().string();
    out.push_back({{"path", path}, {"sha256", sha256_file(path)}});
  }
  return out;
}

std::vector<std::string> spec_chain_differences(const json& earlier, const json& now) {
  std::vector<std::string> out;
  if (!earlier.is_array() || !now.is_array()) return out;
  auto sha_of = [](const json& chain, const std::string& path) -> std::string {
    for (const auto& f : chain)
      if (f.value("path", "") == path) return f.value("sha256", "");
    return "";
  };
  for (const auto& f : earlier) {
    const std::string path = f.value("path", ""), was = f.value("sha256", "");
    const std::string is = sha_of(now, path);
    if (is.empty())
      out.push_back("spec chain: " + path + " (sha256 " + was + ") is no longer extended");
    else if (is != was)
      out.push_back("spec chain: " + path + " changed: earlier sha256 " + was + ", now " + is);
  }
  for (const auto& f : now)
    if (sha_of(earlier, f.value("path", "")).empty())
      out.push_back("spec chain: " + f.value("path", "") + " is extended now, not earlier");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Busy GPUs.

void to_json(json& j, const BusyGpu& v) {
  j = json{{"host", v.host}, {"gpu_index", v.gpu_index}, {"gpu_uuid", v.gpu_uuid},
           {"pid", v.pid},   {"name", v.name},           {"type", v.type}};
  j["used_bytes"] = v.used_bytes >= 0 ? json(v.used_bytes) : json(nullptr);
}

void from_json(const json& j, BusyGpu& v) {
  v.host = j.value("host", "");
  v.gpu_index = j.value("gpu_index", -1);
  v.gpu_uuid = j.value("gpu_uuid", "");
  v.pid = j.value("pid", 0u);
  v.name = j.value("name", "");
  v.type = j.value("type", "");
  v.used_bytes = j.contains("used_bytes") && j["used_bytes"].is_number()
                     ? j["used_bytes"].get<long long>()
                     : -1;
}

namespace {

std::string proc_comm(unsigned pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace

std::vector<BusyGpu> other_gpu_processes(const Context& ctx, std::string* error) {
  // This job's own ranks are not "other" processes: their pids, per host.
  auto mine = ctx.allgather(ctx.host() + " " + std::to_string(::getpid()));
  std::string mine_here;
  for (const auto& m : mine)
    if (m.rfind(ctx.host() + " ", 0) == 0) mine_here += m.substr(ctx.host().size()) + " ";
  json list = json::array();
  if (ctx.is_leader()) {
    std::string status;
    auto procs = query_gpu_processes(status);
    if (status != "ok" && error) *error = status;
    for (const auto& p : procs) {
      if (mine_here.find(" " + std::to_string(p.pid) + " ") != std::string::npos) continue;
      BusyGpu b;
      b.host = ctx.host();
      b.gpu_index = p.gpu_index;
      b.gpu_uuid = p.gpu_uuid;
      b.pid = p.pid;
      b.name = !p.name.empty() ? p.name : proc_comm(p.pid);
      if (b.name.empty()) b.name = "?";
      b.used_bytes = p.used_bytes;
      b.type = p.type;
      list.push_back(b);
    }
  }
  std::vector<BusyGpu> out;
  for (const auto& g : ctx.allgather(ctx.is_leader() ? dump_json(list) : ""))
    if (!g.empty())
      for (const auto& b : json::parse(g)) out.push_back(b.get<BusyGpu>());
  return out;
}

std::string describe_busy(const std::vector<BusyGpu>& busy) {
  std::string out;
  for (const auto& b : busy) {
    char mem[48] = "memory unknown";
    if (b.used_bytes >= 0)
      std::snprintf(mem, sizeof mem, "%.2f GiB", static_cast<double>(b.used_bytes) / (1 << 30));
    out += "  " + b.host + " GPU " + std::to_string(b.gpu_index) +
           (b.gpu_uuid.empty() ? "" : " (" + b.gpu_uuid + ")") + ": pid " + std::to_string(b.pid) +
           " " + b.name + ", " + b.type + ", " + mem + "\n";
  }
  return out;
}

}  // namespace clusterbench
