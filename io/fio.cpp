// io.fio: runs io/profiles/*.fio with fio (never a reimplementation) against a scratch directory
// it creates and removes, and turns fio's JSON into records. Formulas: docs/metrics.md "fio";
// safety rules: docs/fio.md "Safety".
#include "io/fio.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/benchmark.hpp"
#include "core/watchdog.hpp"
#include "core/error.hpp"
#include "io/scratch.hpp"
#include "process/process.hpp"

namespace clusterbench::io {

const std::vector<std::string>& fio_profiles() {
  static const std::vector<std::string> k = {"seq_read",   "seq_write",  "rand_read",
                                             "rand_write", "mixed_7030", "checkpoint_write"};
  return k;
}

bool looks_like_direct_refused(const std::string& out, const std::string& err,
                               const FioOutput* parsed) {
  if (parsed)
    for (const auto& j : parsed->jobs)
      if (j.error == EINVAL) return true;
  for (const std::string* t : {&out, &err})
    if (t->find("err=22") != std::string::npos ||
        t->find("does not support direct=1") != std::string::npos)
      return true;
  return false;
}

long long fio_default_size(const std::string& suite) {
  return suite == "ci" ? 16LL << 20 : suite == "quick" ? 1LL << 30 : 4LL << 30;
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("io.fio: cannot read profile " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// numjobs= of a profile (1 when absent).
int profile_numjobs(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  int n = 1;
  while (std::getline(in, line))
    if (line.rfind("numjobs=", 0) == 0) n = std::max(1, std::atoi(line.c_str() + 8));
  return n;
}

/// Seconds of a fio time value: a whole number with an optional unit ("500ms", "2", "1m",
/// "10s"; no unit is seconds; fio HOWTO "Time values"). Only forms that fio reads the same way
/// are accepted: no fraction, exponent, hex or sign, since the text itself is handed to fio.
/// Throws InputError naming `what` otherwise.
double fio_seconds(const std::string& text, const std::string& what) {
  static const std::map<std::string, double> scale = {
      {"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  auto unit = scale.find(text.substr(digits));
  if (digits == 0 || digits > 9 || unit == scale.end())
    throw InputError(what + ": '" + text +
                     "' is not a time (a whole number of s, ms, us, m, h or d, e.g. 30s, 500ms)");
  return std::stod(text.substr(0, digits)) * unit->second;
}

struct Attempt {
  ProcessResult proc;
  std::optional<FioOutput> parsed;
  std::string parse_error;
};

class Fio : public Benchmark {
 public:
  std::string id() const override { return "io.fio"; }
  std::string description() const override {
    return "fio job profiles (seq/rand read/write, mixed 70/30, checkpoint) on local scratch";
  }
  Level level() const override { return Level::node; }
  std::vector<std::string> knobs() const override {
    return {"profiles", "scratch", "size",         "runtime",
            "ramp",     "binary",  "profiles_dir", "allow_destructive_device",
            "device"};
  }
  std::vector<json> cases(const Settings& s) const override {
    // fio would read the knobs only when it starts, on every node: a typo is bad input here.
    for (const char* key : {"runtime", "ramp", "size"})
      if (s.has(id(), key) && (s.get(id(), key, "").empty() || s.get(id(), key, "")[0] == '-'))
        throw InputError(std::string("--set ") + id() + "." + key + ": must be a positive value");
    if (fio_seconds(fio_runtime(s), "--set io.fio.runtime") <= 0)
      throw InputError("--set io.fio.runtime: must be a positive value");
    fio_seconds(fio_ramp(s), "--set io.fio.ramp");
    if (s.get_size(id(), "size", fio_default_size(s.suite())) <= 0)
      throw InputError("--set io.fio.size: must be a positive value");
    if (s.get(id(), "scratch", "").find(':') != std::string::npos)
      throw InputError("--set " + id() +
                       ".scratch: fio's directory= cannot hold ':'; choose another path");
    std::vector<json> out;
    for (const auto& p : s.get_list(id(), "profiles", fio_profiles())) {
      if (std::find(fio_profiles().begin(), fio_profiles().end(), p) == fio_profiles().end() &&
          !s.has(id(), "profiles_dir"))
        throw InputError("--set io.fio.profiles: unknown profile '" + p + "'");
      out.push_back({{"profile", p}});
    }
    return out;
  }
  /// fio's ramp and runtime per case, plus its start, file layout and our parsing: ~1.8 s on the
  /// 2-core CI machine (0.9 s idle, 3.6 s under heavy shared load).
  double estimate_s(const Settings& s, const json& /*params*/) const override {
    return 1.8 + fio_seconds(fio_ramp(s), "--set io.fio.ramp") +
           fio_seconds(fio_runtime(s), "--set io.fio.runtime");
  }
  /// fio's runtime= and ramp_time= for this suite, as fio reads them (seconds by default).
  std::string fio_runtime(const Settings& s) const {
    return s.get(id(), "runtime", s.by_suite<std::string>("1", "10", "60"));
  }
  std::string fio_ramp(const Settings& s) const {
    return s.get(id(), "ramp", s.by_suite<std::string>("500ms", "2", "5"));
  }
  std::string applicable(const NodeEnv& node) const override {
    std::string bin = node.settings.get(id(), "binary", "fio");
    if (find_on_path(bin).empty()) return "fio not found (looked for '" + bin + "' on PATH)";
    return "";
  }

  void run(CaseRun& run) const override {
    const Settings& s = run.settings();
    const std::string profile = run.params().at("profile");
    const std::string bin = find_on_path(s.get(id(), "binary", "fio"));
    if (bin.empty()) throw Waived("fio not found");
    std::string dir =
        s.get(id(), "profiles_dir", std::string(CLUSTERBENCH_SOURCE_DIR) + "/io/profiles");
    std::string job_file = dir + "/" + profile + ".fio";
    std::string job_text = read_file(job_file);
    int numjobs = profile_numjobs(job_text);
    long long size = s.get_size(id(), "size", fio_default_size(s.suite()));
    const std::string runtime = fio_runtime(s), ramp = fio_ramp(s);

    auto mounts = read_mountinfo();
    if (s.has(id(), "device")) {
      run_on_device(run, bin, profile, job_file, job_text, numjobs, size, runtime, ramp, mounts);
      return;
    }
    // Where: a directory of our own on the scratch filesystem.
    bool named = s.has(id(), "scratch");
    ScratchChoice where;
    if (named) {
      where = {s.get(id(), "scratch", ""), "--set io.fio.scratch"};
    } else {
      where = default_scratch(run.env().block_devices, mounts, system_tmpdir(),
                              [](const std::string& d) { return free_bytes(d); });
    }
    // The target must be an existing directory this process may create its files in.
    const std::string origin = named ? "--set " + id() + ".scratch" : where.reason;
    if (where.dir.empty())
      throw Refused("refused: " + origin + " names no directory (it is empty)");
    {
      std::error_code ec;
      if (!std::filesystem::is_directory(where.dir, ec))
        throw Refused("refused: " + origin + " " + where.dir + " is not a directory" +
                      (std::filesystem::exists(where.dir, ec) ? "" : " (it does not exist)"));
      if (::access(where.dir.c_str(), W_OK | X_OK) != 0)
        throw Refused("refused: " + origin + " " + where.dir +
                      ": fio cannot create its files there (" + std::strerror(errno) + ")");
    }
    const Mount* m = mount_of(where.dir, mounts);
    std::string fs_type = m ? m->fs_type : "";
    if (is_network_fs(fs_type) && !named)
      throw Refused("refused: " + where.dir + " is on a network filesystem (" + fs_type +
                    "); name it with --set io.fio.scratch to test it");
    long long need = static_cast<long long>(numjobs) * size;
    long long avail = free_bytes(where.dir);
    if (avail < 0)
      throw Refused("refused: scratch directory " + where.dir +
                    " cannot be examined (statvfs: " + std::strerror(errno) + ")");
    long long margin = 64LL << 20;
    if (avail < need + margin)
      throw Refused("refused: profile " + profile + " needs " + std::to_string(need) + " B (" +
                    std::to_string(numjobs) + " jobs x " + std::to_string(size) +
                    " B) plus a 64 MiB margin in " + where.dir + ", which has " +
                    std::to_string(avail) + " B free");

    // A named target that another process is writing is refused. The automatic choice (the
    // fastest NVMe mount, else $TMPDIR) is shared by the whole system: writers there are normal.
    if (named) refuse_if_written(where.dir, "scratch directory");
    ScratchDir work(where.dir, "fio-" + profile);       // fio's files; removed on any exit
    ScratchDir capture(system_tmpdir(), "fio-output");  // fio's stdout/stderr
    execute(run, bin, job_file, job_text, size, runtime, ramp, work.path(), capture.path(), where,
            fs_type);
  }

 private:
  /// Refused when another process holds `target` (or a file below it) open for writing.
  static void refuse_if_written(const std::string& target, const std::string& what) {
    auto writers = open_writers(target);
    if (!writers.empty())
      throw Refused("refused: " + what + " " + target +
                    " is open for writing by another process: " + describe_writers(writers));
  }

  /// A raw block device as the target (--set io.fio.device=/dev/X), only when it passes every
  /// check of raw_device_refusal. The profile's directory= becomes filename=DEVICE and each job
  /// gets its own region (offset_increment = size).
  void run_on_device(CaseRun& run, const std::string& bin, const std::string& profile,
                     const std::string& job_file, const std::string& job_text, int numjobs,
                     long long size, const std::string& runtime, const std::string& ramp,
                     const std::vector<Mount>& mounts) const {
    const Settings& s = run.settings();
    std::string device = s.get(id(), "device", "");
    bool allowed = s.get(id(), "allow_destructive_device", "false") == "true";
    std::string why = raw_device_refusal(device, allowed, mounts);
    if (!why.empty()) throw Refused(why);
    refuse_if_written(device, "device");
    ScratchDir capture(system_tmpdir(), "fio-output");
    std::string text = job_text;
    auto pos = text.find("directory=${CB_FIO_DIR}");
    CHECK_MSG(pos != std::string::npos, "clusterbench",
              job_file + " has no directory=${CB_FIO_DIR} line to point at the device");
    text.replace(pos, std::string("directory=${CB_FIO_DIR}").size(),
                 "filename=" + device + "\noffset_increment=${CB_FIO_SIZE}");
    std::string device_job = capture.path() + "/" + profile + ".fio";
    std::ofstream(device_job) << text;
    (void)numjobs;
    ScratchChoice where{device, "--set io.fio.device (allow_destructive_device=true)"};
    execute(run, bin, device_job, text, size, runtime, ramp, capture.path(), capture.path(), where,
            "raw block device");
  }

  /// Runs fio on `job_file` (retrying buffered when direct=1 is refused) and records the result.
  void execute(CaseRun& run, const std::string& bin, const std::string& job_file,
               const std::string& job_text, long long size, const std::string& runtime,
               const std::string& ramp, const std::string& work_dir, const std::string& capture_dir,
               const ScratchChoice& where, const std::string& fs_type) const {
    const std::string profile = run.params().at("profile");
    std::map<std::string, std::string> env = {{"CB_FIO_DIR", work_dir},
                                              {"CB_FIO_SIZE", std::to_string(size)},
                                              {"CB_FIO_RUNTIME", runtime},
                                              {"CB_FIO_RAMP", ramp},
                                              {"CB_FIO_DIRECT", "1"}};
    std::vector<std::string> argv = {bin, "--output-format=json", job_file};

    auto attempt = [&]() {
      Attempt a;
      Child child = start_process(argv, env, work_dir, capture_dir);
      CHECK_SYS(child.pid);
      {  // fio and its job processes die with an aborting run (a hung collective, a signal)
        AbortCleanup kill_on_abort([child] { kill_child(child); });
        a.proc = wait_process(child, capture_dir);
      }
      try {
        a.parsed = parse_fio_json(a.proc.out);
      } catch (const FioParseError& e) {
        a.parse_error = e.what();
      }
      return a;
    };
    Attempt a = attempt();
    bool direct = true;
    std::string fallback;
    bool failed = a.proc.exit_code != 0 || !a.parsed;
    if (failed &&
        looks_like_direct_refused(a.proc.out, a.proc.err, a.parsed ? &*a.parsed : nullptr)) {
      std::string prelude = a.parsed ? a.parsed->preamble : a.proc.out;
      fallback = "direct=1 refused (EINVAL) on " + where.dir + ": " +
                 fio_error_text(prelude, a.proc.err) + "; ran buffered (direct=0)";
      direct = false;
      env["CB_FIO_DIRECT"] = "0";
      a = attempt();
    }

    run.set_extra("profile", profile);
    run.set_extra("job_file", job_file);
    run.set_extra("job_file_text", job_text);
    run.set_extra("fio_command", argv);
    run.set_extra("fio_env", env);
    run.set_extra("direct", direct);
    if (!fallback.empty()) run.set_extra("direct_fallback", fallback);
    run.set_extra("scratch", where.dir);
    run.set_extra("scratch_reason", where.reason);
    run.set_extra("scratch_fs_type", fs_type);
    run.set_extra("fio_exit_code", a.proc.exit_code);

    if (a.parsed) {
      for (const auto& j : a.parsed->jobs) {
        if (j.error == 0) continue;
        std::string text = fio_error_text(a.parsed->preamble, a.proc.err);
        throw_call_error("fio", std::to_string(j.error),
                         std::string(std::strerror(j.error)) + " in job '" + j.name + "'" +
                             (text.empty() ? "" : ": " + text),
                         ("fio " + job_file).c_str(), __FILE__, __LINE__);
      }
    }
    if (a.proc.exit_code != 0 || !a.parsed) {
      std::string text = fio_error_text(a.proc.out, a.proc.err);
      if (text.empty()) text = a.proc.err.substr(0, 500);
      if (a.proc.out.empty()) text += std::string(text.empty() ? "" : "; ") + "no output on stdout";
      if (!a.parse_error.empty()) text += std::string(text.empty() ? "" : "; ") + a.parse_error;
      const char* sig = a.proc.signal ? sigabbrev_np(a.proc.signal) : nullptr;
      std::string code = a.proc.signal ? "killed by signal " + std::to_string(a.proc.signal) +
                                             (sig ? std::string(" (SIG") + sig + ")" : "")
                                       : "exit " + std::to_string(a.proc.exit_code);
      throw_call_error("fio", code, text, ("fio " + job_file).c_str(), __FILE__, __LINE__);
    }
    record(run, *a.parsed);
  }

  static void record(CaseRun& run, const FioOutput& f) {
    run.set_extra("fio_version", f.version);
    run.set_extra("fio_json", f.document);  // fio's own output: the record's numbers come from it
    json options = {{"global", f.global_options}, {"jobs", json::array()}};
    for (const auto& j : f.jobs) options["jobs"].push_back(j.options);
    run.set_extra("job_options", options);
    // With group_reporting there is one entry; otherwise bandwidth and IOPS add up over the
    // entries and each percentile is the worst entry's.
    for (int dir = 0; dir < 2; ++dir) {
      std::string name = dir == 0 ? "read" : "write";
      double bw = 0, iops = 0;
      std::optional<double> p50, p99, p999;
      bool any = false;
      std::string source;
      auto worst = [](std::optional<double>& acc, const std::optional<double>& v) {
        if (v && (!acc || *v > *acc)) acc = v;
      };
      for (const auto& j : f.jobs) {
        const FioDirection& d = dir == 0 ? j.read : j.write;
        if (!d.active()) continue;
        any = true;
        bw += d.bw_bytes_per_s;
        iops += d.iops;
        source = d.bw_source;
        worst(p50, d.clat_p50_us);
        worst(p99, d.clat_p99_us);
        worst(p999, d.clat_p999_us);
      }
      if (!any) continue;
      run.add_metric(name + "_bw", bw / 1e9, "GB/s");
      run.add_metric(name + "_iops", iops, "IOPS");
      if (p50) run.add_metric(name + "_clat_p50", *p50, "us", false);
      if (p99) run.add_metric(name + "_clat_p99", *p99, "us", false);
      if (p999) run.add_metric(name + "_clat_p999", *p999, "us", false);
      run.set_extra(name + "_bw_source", source);
    }
  }
};

CLUSTERBENCH_REGISTER(Fio);

}  // namespace
}  // namespace clusterbench::io
