// io.fio: runs io/profiles/*.fio with fio (never a reimplementation) against a scratch directory
// it creates and removes, and turns fio's JSON into records. Formulas: docs/metrics.md "fio";
// safety rules: docs/fio.md "Safety".
#include "io/fio.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "core/api/abort_cleanup.hpp"
#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"
#include "env/paths.hpp"
#include "io/fio_options.hpp"
#include "io/scratch.hpp"
#include "process/process.hpp"
#include "records/utf8.hpp"

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

namespace {

std::string comma_joined(const std::vector<std::string>& xs) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : ",") + x;
  return out;
}

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

/// The knobs of io.fio as one case reads them.
struct FioOptions {
  std::string binary;         ///< fio, by name (looked up on PATH) or path
  std::string profiles_dir;   ///< where NAME.fio lives
  long long size = 0;         ///< bytes of each job's file
  std::string runtime, ramp;  ///< fio time values, handed to fio as given
  int repeat = 5;             ///< fio runs per case
  std::string scratch;        ///< the named scratch directory ("" when not named)
  bool named = false;         ///< --set io.fio.scratch given
  std::string device;         ///< a raw block device as the target
  bool on_device = false;     ///< --set io.fio.device given
  bool allow_destructive = false;
};

/// One case's fio job: the profile's job file and what fio's environment gives it.
struct ProfileJob {
  std::string profile, bin, job_file, job_text;
  int numjobs = 1;
  long long size = 0;
  std::string runtime, ramp;
  int repeat = 5;  ///< fio runs per case, each with its own ramp
};

/// Where fio writes: its working directory, where its output is captured, the target the user
/// or the automatic choice named, and that target's filesystem type.
struct FioTarget {
  std::string work_dir, capture_dir;
  ScratchChoice where;
  std::string fs_type;
};

struct Attempt {
  ProcessResult proc;
  std::optional<FioOutput> parsed;
  std::string parse_error;
};

/// One run of fio; fio and its job processes die with an aborting run (a hung collective, a
/// signal).
Attempt attempt_fio(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const FioTarget& t) {
  Attempt a;
  Child child = start_process(argv, env, t.work_dir, t.capture_dir);
  CHECK_SYS(child.pid);
  {
    AbortCleanup kill_on_abort([child] { kill_child(child); });
    a.proc = wait_process(child, t.capture_dir);
  }
  try {
    a.parsed = parse_fio_json(a.proc.out);
  } catch (const FioParseError& e) {
    a.parse_error = e.what();
  }
  return a;
}

/// fio's last attempt: direct=1 first, then, where the filesystem refuses O_DIRECT, buffered
/// (env's CB_FIO_DIRECT becomes 0, `fallback` says why).
struct FioRun {
  Attempt a;
  bool direct = true;
  std::string fallback;
};

FioRun run_fio(const std::vector<std::string>& argv, std::map<std::string, std::string>& env,
               const FioTarget& t) {
  FioRun r{attempt_fio(argv, env, t), true, ""};
  const Attempt& a = r.a;
  bool failed = a.proc.exit_code != 0 || !a.parsed;
  if (failed &&
      looks_like_direct_refused(a.proc.out, a.proc.err, a.parsed ? &*a.parsed : nullptr)) {
    std::string prelude = a.parsed ? a.parsed->preamble : a.proc.out;
    r.fallback = "direct=1 refused (EINVAL) on " + t.where.dir + ": " +
                 fio_error_text(prelude, a.proc.err) + "; ran buffered (direct=0)";
    r.direct = false;
    env["CB_FIO_DIRECT"] = "0";
    r.a = attempt_fio(argv, env, t);
  }
  return r;
}

/// A failed job (its errno, with fio's own text) or a failed fio (exit code or signal, what it
/// printed, why its output did not parse) as a CallError.
void throw_if_failed(const Attempt& a, const std::string& job_file) {
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
  if (a.proc.exit_code == 0 && a.parsed) return;
  std::string text = fio_error_text(a.proc.out, a.proc.err);
  if (text.empty()) text = valid_utf8(a.proc.err.substr(0, 500));  // not cut inside a character
  if (a.proc.out.empty()) text += std::string(text.empty() ? "" : "; ") + "no output on stdout";
  if (!a.parse_error.empty()) text += std::string(text.empty() ? "" : "; ") + a.parse_error;
  const char* sig = a.proc.signal ? sigabbrev_np(a.proc.signal) : nullptr;
  std::string code = a.proc.signal ? "killed by signal " + std::to_string(a.proc.signal) +
                                         (sig ? std::string(" (SIG") + sig + ")" : "")
                                   : "exit " + std::to_string(a.proc.exit_code);
  throw_call_error("fio", code, text, ("fio " + job_file).c_str(), __FILE__, __LINE__);
}

/// Refused when another process holds `target` (or a file below it) open for writing.
void refuse_if_written(const std::string& target, const std::string& what) {
  auto writers = open_writers(target);
  if (!writers.empty())
    throw Refused("refused: " + what + " " + target +
                  " is open for writing by another process: " + describe_writers(writers));
}

/// Refused unless `dir` holds every job's file plus a 64 MiB margin.
void refuse_if_too_full(const ProfileJob& job, const std::string& dir) {
  long long need = static_cast<long long>(job.numjobs) * job.size;
  long long avail = free_bytes(dir);
  if (avail < 0)
    throw Refused("refused: scratch directory " + dir +
                  " cannot be examined (statvfs: " + std::strerror(errno) + ")");
  long long margin = 64LL << 20;
  if (avail < need + margin)
    throw Refused("refused: profile " + job.profile + " needs " + std::to_string(need) + " B (" +
                  std::to_string(job.numjobs) + " jobs x " + std::to_string(job.size) +
                  " B) plus a 64 MiB margin in " + dir + ", which has " + std::to_string(avail) +
                  " B free");
}

/// `path` with every symlink resolved (realpath), so that the checks and fio see the same file;
/// `path` itself when it does not exist (the checks then say so).
std::string resolved_path(const std::string& path) {
  std::error_code ec;
  std::string r = std::filesystem::canonical(path, ec).string();
  return ec ? path : r;
}

/// Refused unless fio may be handed `path` (fio_path_refusal), before and after its symlinks
/// are resolved; returns the resolved path.
std::string checked_fio_path(const std::string& path, const std::string& what) {
  std::string why = fio_path_refusal(path, what);
  const std::string real = resolved_path(path);
  if (why.empty()) why = fio_path_refusal(real, what + " (resolved)");
  if (!why.empty()) throw Refused(why);
  return real;
}

/// True when a job file's `value` stays in fio's scratch directory: ${CB_FIO_DIR}, a path below
/// it, or a relative path (fio runs in that directory), with no '$' after it and no "..".
bool inside_scratch(const std::string& value) {
  std::string rest = value;
  const std::string dir = "${CB_FIO_DIR}";
  if (rest.rfind(dir, 0) == 0) {
    rest = rest.substr(dir.size());
    if (!rest.empty() && rest[0] != '/') return false;
    rest = "." + rest;
  }
  if (rest.empty() || rest[0] == '/' || rest.find('$') != std::string::npos) return false;
  for (const auto& part : std::filesystem::path(rest))
    if (part == "..") return false;
  return true;
}

/// A job file's file or directory outside fio's scratch directory, refused unless
/// allow_destructive_device is given and it passes a device's checks: named by its resolved
/// path, fio may be handed it, and (a block device) raw_device_refusal, (any) no other writer.
void check_outside_target(const std::string& where, const std::string& value, bool allowed,
                          const std::vector<Mount>& mounts) {
  if (value.find('$') != std::string::npos || value.find('\\') != std::string::npos)
    throw Refused("refused: " + where + " cannot be checked (fio expands '$' and '\\' there); " +
                  "name the path itself, or use ${CB_FIO_DIR}");
  if (!allowed)
    throw Refused("refused: " + where + " is outside fio's scratch directory: writing it may " +
                  "destroy data. Pass --set io.fio.allow_destructive_device=true to allow it");
  const std::string real = checked_fio_path(value, where);
  if (real != value)
    throw Refused("refused: " + where + " is a symlink or not a normalised path (it resolves to " +
                  real + "); name " + real + " itself");
  struct stat st {};
  if (::stat(real.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
    std::string why = raw_device_refusal(real, allowed, mounts);
    if (!why.empty()) throw Refused(why + " (" + where + ")");
  }
  refuse_if_written(real, where + ":");
}

/// Refused unless every option of the job file is on the allow-list (job_option_refusal) and
/// every file and directory it names (job_file_targets) is fio's scratch directory or passes
/// check_outside_target; an include directive cannot be checked.
void check_job_targets(const std::string& job_file, const std::string& text, bool allowed,
                       const std::vector<Mount>& mounts) {
  if (std::string why = job_option_refusal(job_file, text); !why.empty()) throw Refused(why);
  for (const auto& t : job_file_targets(text)) {
    const std::string where =
        job_file + " line " + std::to_string(t.line) + " " + t.key + "=" + t.value;
    if (t.key == "include")
      throw Refused("refused: " + job_file + " line " + std::to_string(t.line) + " includes " +
                    t.value + ", whose targets cannot be checked; inline it");
    // fio splits filename= and directory= on ':' into several names.
    std::vector<std::string> names;
    if (t.key == "filename" || t.key == "directory") {
      std::istringstream in(t.value);
      for (std::string n; std::getline(in, n, ':');) names.push_back(n);
    } else {
      names.push_back(t.value);
    }
    for (const auto& n : names)
      if (!inside_scratch(n)) check_outside_target(where, n, allowed, mounts);
  }
}

/// The scratch disk's traffic during fio's runs against fio's own (extra.disk_load, docs/fio.md
/// "Disk load"): the bytes other work moved on the same disk while fio measured it, which
/// `compare` reads as it reads a case's CPU share.
class DiskLoad {
 public:
  explicit DiskLoad(std::string disk) : disk_(std::move(disk)) {}

  /// The readings just before one fio run.
  void before() { disk0_ = disk_now(), own0_ = children_io_bytes(); }

  /// The readings just after it: the run's bytes are added.
  void after() {
    const long long d = disk_now(), o = children_io_bytes();
    if (disk0_ < 0 || d < 0 || own0_ < 0 || o < 0) {
      read_ = false;
      return;
    }
    disk_bytes_ += d - disk0_, own_bytes_ += o - own0_;
  }

  /// {disk, disk_bytes, fio_bytes, other_bytes, fio_share}, or {disk, reason} when not measured.
  json evidence() const {
    if (disk_.empty())
      return {{"disk", nullptr},
              {"reason",
               "the scratch is on no known disk (tmpfs, overlay or a network "
               "filesystem): its load is not measured"}};
    if (!read_) return {{"disk", disk_}, {"reason", "/proc/diskstats has no line for " + disk_}};
    const long long other = std::max(0LL, disk_bytes_ - own_bytes_);
    // Buffered writes that reach the disk after the run leave fio with more than the disk.
    const double share =
        disk_bytes_ > 0
            ? std::min(1.0, static_cast<double>(own_bytes_) / static_cast<double>(disk_bytes_))
            : 1.0;
    return {{"disk", disk_},
            {"disk_bytes", disk_bytes_},
            {"fio_bytes", own_bytes_},
            {"other_bytes", other},
            {"fio_share", share}};
  }

 private:
  long long disk_now() const {
    if (disk_.empty()) return -1;
    std::ifstream in("/proc/diskstats");
    std::stringstream ss;
    ss << in.rdbuf();
    return diskstats_bytes(ss.str(), disk_);
  }

  std::string disk_;
  long long disk0_ = -1, own0_ = -1, disk_bytes_ = 0, own_bytes_ = 0;
  bool read_ = true;
};

/// Runs fio on `job` `job.repeat` times, each run with its own ramp: the first run retries
/// buffered when direct=1 is refused, and the others run as it did. `note` gets the evidence as
/// it grows (fio_command, fio_env, direct, direct_fallback, fio_exit_code, disk_load), before a
/// failed run throws (throw_if_failed), so that a failed record still says how fio was run.
/// `say`, when given, hears which run is under way ("fio run 3 of 5": CaseRun::note_progress).
std::vector<FioOutput> run_repeats(const ProfileJob& job, const FioTarget& t,
                                   const std::function<void(const json&)>& note,
                                   const std::function<void(const std::string&)>& say = nullptr) {
  std::map<std::string, std::string> env = {{"CB_FIO_DIR", t.work_dir},
                                            {"CB_FIO_SIZE", std::to_string(job.size)},
                                            {"CB_FIO_RUNTIME", job.runtime},
                                            {"CB_FIO_RAMP", job.ramp},
                                            {"CB_FIO_DIRECT", "1"}};
  std::vector<std::string> argv = {job.bin, "--output-format=json", job.job_file};
  json evidence = {{"fio_command", argv}};
  std::vector<FioOutput> outs;
  std::vector<int> exit_codes;
  DiskLoad load(load_disk(scratch_device_evidence(t.where.dir)));
  for (int i = 0; i < job.repeat; ++i) {
    if (say) say("fio run " + std::to_string(i + 1) + " of " + std::to_string(job.repeat));
    load.before();
    FioRun r = run_fio(argv, env, t);
    load.after();
    evidence["disk_load"] = load.evidence();
    if (!r.fallback.empty()) evidence["direct_fallback"] = r.fallback;
    evidence["fio_env"] = env;
    evidence["direct"] = env["CB_FIO_DIRECT"] == "1";
    exit_codes.push_back(r.a.proc.exit_code);
    evidence["fio_exit_code"] = exit_codes;
    // fio's own output of this run: on a failed run, the numbers of the jobs that finished stay
    // on the failed record (a successful run's record replaces it with the last run's).
    if (r.a.parsed) evidence["fio_json"] = r.a.parsed->document;
    note(evidence);
    throw_if_failed(r.a, job.job_file);
    outs.push_back(std::move(*r.a.parsed));
  }
  return outs;
}

/// The profile's job file, read, and the numbers fio's environment gives it.
ProfileJob load_job(const std::string& profiles_dir, const std::string& bin,
                    const std::string& profile, long long size, const std::string& runtime,
                    const std::string& ramp, int repeat) {
  ProfileJob job;
  job.profile = profile;
  job.bin = bin;
  job.job_file = profiles_dir + "/" + profile + ".fio";
  job.job_text = read_file(job.job_file);
  job.numjobs = profile_numjobs(job.job_text);
  job.size = size;
  job.runtime = runtime;
  job.ramp = ramp;
  job.repeat = repeat;
  return job;
}

/// Refused unless `dir` (resolved: the result) is an existing directory this process may create
/// files in; `origin` says where it came from.
std::string checked_directory(const std::string& dir, const std::string& origin) {
  if (dir.empty()) throw Refused("refused: " + origin + " names no directory (it is empty)");
  const std::string real = checked_fio_path(dir, origin);  // checks and fio on the resolved path
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Refused("refused: " + origin + " " + dir + " is not a directory" +
                  (std::filesystem::exists(dir, ec) ? "" : " (it does not exist)"));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Refused("refused: " + origin + " " + dir + ": fio cannot create its files there (" +
                  std::strerror(errno) + ")");
  return real;
}

/// One direction's numbers in one fio run: name -> value (bandwidth GB/s, IOPS, clat us). With
/// group_reporting there is one entry; otherwise bandwidth and IOPS add up over the entries
/// and each percentile is the worst entry's. Empty when the run moved no data that way.
std::map<std::string, double> direction_values(const FioOutput& f, bool read, std::string& source) {
  std::map<std::string, double> v;
  const std::string name = read ? "read" : "write";
  auto worst = [&](const std::string& key, const std::optional<double>& x) {
    if (x && (!v.count(key) || *x > v[key])) v[key] = *x;
  };
  for (const auto& j : f.jobs) {
    const FioDirection& d = read ? j.read : j.write;
    if (!d.active()) continue;
    v[name + "_bw"] += gb_per_s(d.bw_bytes_per_s);
    v[name + "_iops"] += d.iops;
    source = d.bw_source;
    worst(name + "_clat_p50", d.clat_p50_us);
    worst(name + "_clat_p99", d.clat_p99_us);
    worst(name + "_clat_p999", d.clat_p999_us);
  }
  return v;
}

class Fio : public Benchmark {
 public:
  std::string id() const override { return "io.fio"; }
  /// In rounds (--rounds N) each round runs repeat / N of the runs (at least one), so that the
  /// runs, each with its own ramp, are spread over the run instead of following each other.
  bool in_rounds(const json&) const override { return true; }
  std::map<std::string, std::string> round_sets(const Settings& s, int rounds) const override {
    const long long per_round = std::max(1LL, (repeat_(s) + rounds - 1) / rounds);
    return {{id() + ".repeat", std::to_string(per_round)}};
  }
  std::string description() const override {
    return "fio job profiles (seq/rand read/write, mixed 70/30, checkpoint) on local scratch";
  }
  Level level() const override { return Level::node; }
  std::vector<json> cases(const Settings& s) const override {
    // fio would read the knobs only when it starts, on every node: a typo is bad input here.
    for (const Knob<std::string>* k : {&runtime_, &ramp_}) {
      const std::string v = (*k)(s);
      if (k->given(s) && (v.empty() || v[0] == '-'))
        throw InputError("--set " + id() + "." + k->spec().name + ": must be a positive value");
    }
    if (fio_seconds(runtime_(s), "--set io.fio.runtime") <= 0)
      throw InputError("--set io.fio.runtime: must be a positive value");
    fio_seconds(ramp_(s), "--set io.fio.ramp");
    if (size_(s) <= 0) throw InputError("--set io.fio.size: must be a positive value");
    if (repeat_(s) < 1) throw InputError("--set io.fio.repeat: must be at least 1");
    if (scratch_(s).find(':') != std::string::npos)
      throw InputError("--set " + id() +
                       ".scratch: fio's directory= cannot hold ':'; choose another path");
    allow_destructive_device_(s);
    const std::string dir = profiles_dir(s);
    std::vector<json> out;
    for (const auto& p : profiles_(s)) {
      if (std::find(fio_profiles().begin(), fio_profiles().end(), p) == fio_profiles().end() &&
          !profiles_dir_.given(s))
        throw InputError("--set io.fio.profiles: unknown profile '" + p + "'");
      // A job file that is not there is bad input, not a storage row that FAILs.
      std::error_code ec;
      if (!std::filesystem::is_regular_file(dir + "/" + p + ".fio", ec))
        throw InputError("io.fio: no job file " + dir + "/" + p + ".fio (" +
                         (profiles_dir_.given(s)
                              ? "--set io.fio.profiles_dir"
                              : "the installed profiles; --set io.fio.profiles_dir") +
                         ")");
      out.push_back({{"profile", p}});
    }
    return out;
  }
  /// fio's ramp and runtime per run plus its start and our parsing (kFioRunOverheadS), and once
  /// the scratch set-up and the file's layout (kFioLayoutBytesPerS) (docs/launch.md "Estimates").
  double estimate_s(const Settings& s, const json& /*params*/) const override {
    return 0.3 + static_cast<double>(size_(s)) / kFioLayoutBytesPerS +
           static_cast<double>(repeat_(s)) *
               (kFioRunOverheadS + fio_seconds(ramp_(s), "--set io.fio.ramp") +
                fio_seconds(runtime_(s), "--set io.fio.runtime"));
  }
  std::string applicable(const NodeEnv& node) const override {
    std::string bin = binary_(node.settings);
    if (find_on_path(bin).empty()) return "fio not found (looked for '" + bin + "' on PATH)";
    return "";
  }

  /// Set-up (the job, the target and its checks), then fio and the record (execute).
  void run(CaseRun& run) const override {
    const FioOptions o = options(run.settings());
    const std::string bin = find_on_path(o.binary);
    if (bin.empty()) throw Waived("fio not found");
    const ProfileJob job = load_job(o.profiles_dir, bin, run.params().at("profile"), o.size,
                                    o.runtime, o.ramp, o.repeat);
    auto mounts = read_mountinfo();
    check_job_targets(job.job_file, job.job_text, o.allow_destructive, mounts);
    if (o.on_device) {
      run_on_device(run, job, o, mounts);
      return;
    }
    FioTarget t = scratch_target(run, o, mounts);
    refuse_if_too_full(job, t.where.dir);
    // A named target that another process is writing is refused. The automatic choice (the
    // fastest NVMe mount, else $TMPDIR) is shared by the whole system: writers there are normal.
    if (o.named) refuse_if_written(t.where.dir, "scratch directory");
    ScratchDir work(t.where.dir, "fio-" + job.profile);  // fio's files; removed on any exit
    ScratchDir capture(system_tmpdir(), "fio-output");   // fio's stdout/stderr
    t.work_dir = work.path();
    t.capture_dir = capture.path();
    execute(run, job, t);
    // The files go with `work` (seconds for gigabytes on a busy disk, at most 2 minutes on a
    // hung one): the console's still-running line says so, not "fio run k of n".
    run.note_progress("removing the scratch directory " + work.path());
  }

 private:
  /// The job files' directory, absolute: fio runs in another working directory.
  std::string profiles_dir(const Settings& s) const {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::absolute(profiles_dir_(s), ec);
    return ec ? profiles_dir_(s) : p.lexically_normal().string();
  }

  /// Reads the knobs (checked when the plan was made).
  FioOptions options(const Settings& s) const {
    FioOptions o;
    o.binary = binary_(s);
    o.profiles_dir = profiles_dir(s);
    o.size = size_(s);
    o.runtime = runtime_(s);
    o.ramp = ramp_(s);
    o.repeat = static_cast<int>(repeat_(s));
    o.scratch = scratch_(s);
    o.named = scratch_.given(s);
    o.device = device_(s);
    o.on_device = device_.given(s);
    o.allow_destructive = allow_destructive_device_(s) == "true";
    return o;
  }

  /// The directory of our own fio works in: on --set io.fio.scratch, else on the automatic
  /// choice. Refused unless it is an existing directory this process may create files in, and,
  /// when chosen automatically, on a local filesystem.
  FioTarget scratch_target(CaseRun& run, const FioOptions& o,
                           const std::vector<Mount>& mounts) const {
    FioTarget t;
    if (o.named)
      t.where = {o.scratch, "--set io.fio.scratch"};
    else
      t.where = default_scratch(run.env().block_devices, mounts, system_tmpdir(),
                                [](const std::string& d) { return free_bytes(d); });
    const std::string dir = t.where.dir;
    const std::string origin = o.named ? "--set " + id() + ".scratch" : t.where.reason;
    t.where.dir = checked_directory(dir, origin);
    const Mount* m = mount_of(dir, mounts);
    t.fs_type = m ? m->fs_type : "";
    if (is_network_fs(t.fs_type) && !o.named)
      throw Refused("refused: " + dir + " is on a network filesystem (" + t.fs_type +
                    "); name it with --set io.fio.scratch to test it");
    return t;
  }

  /// A raw block device as the target (--set io.fio.device=/dev/X), only when it passes every
  /// check of raw_device_refusal. The profile's directory= becomes filename=DEVICE and each job
  /// gets its own region (offset_increment = size).
  void run_on_device(CaseRun& run, const ProfileJob& job, const FioOptions& o,
                     const std::vector<Mount>& mounts) const {
    // Every check, and fio, on the resolved path: a symlink to a mounted or busy device is that
    // device.
    const std::string device = checked_fio_path(o.device, "--set io.fio.device");
    std::string why = raw_device_refusal(device, o.allow_destructive, mounts);
    if (!why.empty()) throw Refused(why + (device != o.device ? " (" + o.device + ")" : ""));
    refuse_if_written(device, "device");
    ScratchDir capture(system_tmpdir(), "fio-output");
    ProfileJob device_job = job;
    std::string& text = device_job.job_text;
    auto pos = text.find("directory=${CB_FIO_DIR}");
    CHECK_MSG(pos != std::string::npos, "clusterbench",
              job.job_file + " has no directory=${CB_FIO_DIR} line to point at the device");
    text.replace(pos, std::string("directory=${CB_FIO_DIR}").size(),
                 "filename=" + device + "\noffset_increment=${CB_FIO_SIZE}");
    device_job.job_file = capture.path() + "/" + job.profile + ".fio";
    std::ofstream(device_job.job_file) << text;
    FioTarget t{capture.path(),
                capture.path(),
                {device, "--set io.fio.device (allow_destructive_device=true)"},
                "raw block device"};
    execute(run, device_job, t);
  }

  /// Runs fio on the job `job.repeat` times (run_repeats) and records the result.
  static void execute(CaseRun& run, const ProfileJob& job, const FioTarget& t) {
    run.set_extra("profile", job.profile);
    run.set_extra("job_file", job.job_file);
    run.set_extra("job_file_text", job.job_text);
    run.set_extra("scratch", t.where.dir);
    run.set_extra("scratch_reason", t.where.reason);
    run.set_extra("scratch_fs_type", t.fs_type);
    run.set_extra("scratch_device", scratch_device_evidence(t.where.dir));  // what was measured
    std::vector<FioOutput> outs = run_repeats(
        job, t,
        [&run](const json& evidence) {
          for (const auto& [key, value] : evidence.items()) run.set_extra(key, value);
        },
        [&run](const std::string& text) { run.note_progress(text); });
    record(run, outs);
  }

  /// fio's numbers as metrics (each the median of the runs, with every run as a repetition) and
  /// its own output and options as evidence: the last run's whole JSON document.
  static void record(CaseRun& run, const std::vector<FioOutput>& outs) {
    const FioOutput& f = outs.back();
    run.set_extra("fio_version", f.version);
    run.set_extra("fio_json", f.document);  // fio's own output: the last repetition's numbers
    json options = {{"global", f.global_options}, {"jobs", json::array()}};
    for (const auto& j : f.jobs) options["jobs"].push_back(j.options);
    run.set_extra("job_options", options);
    run.set_extra("repeat", outs.size());
    json latency_of = json::object();
    for (bool read : {true, false}) {
      std::string source;
      std::map<std::string, std::vector<double>> reps;
      for (const auto& o : outs)
        for (const auto& [name, value] : direction_values(o, read, source))
          reps[name].push_back(value);
      if (reps.empty()) continue;
      for (const char* suffix : {"_bw", "_iops", "_clat_p50", "_clat_p99", "_clat_p999"}) {
        const std::string name = (read ? "read" : "write") + std::string(suffix);
        auto it = reps.find(name);
        if (it == reps.end() || it->second.size() != outs.size()) continue;
        const bool latency = name.find("_clat_") != std::string::npos;
        const std::string unit = latency ? "us" : suffix == std::string("_bw") ? "GB/s" : "IOPS";
        // fio's clat is in ns: a resolution of 0.001 us.
        run.add(
            Metric{name, median_of(it->second), unit, !latency, it->second, latency ? 0.001 : 0});
        if (latency) latency_of[name] = (read ? "read" : "write") + std::string("_iops");
      }
      run.set_extra(std::string(read ? "read" : "write") + "_bw_source", source);
    }
    // Its IOs in flight set its mean latency from its IOPS (Little's law): compare judges a
    // latency percentile that moved while the IOPS did not as a change of shape, not of speed.
    run.set_extra("little_law",
                  {{"in_flight", fio_in_flight(options)}, {"latency_of", latency_of}});
  }

  Knob<std::vector<std::string>> profiles_ =
      knobs_.list("profiles", comma_joined(fio_profiles()),
                  "fio job profiles (NAME.fio in profiles_dir), one case each");
  Knob<std::string> scratch_ =
      knobs_.text("scratch", "",
                  "directory fio writes in (default: the fastest local NVMe mount, else $TMPDIR)");
  Knob<long long> size_ =
      knobs_.size("size", SuiteDefault("16M", "1G", "4G"), "file size of each fio job (fio size=)");
  Knob<std::string> runtime_ =
      knobs_.text("runtime", SuiteDefault("300ms", "1500ms", "12"),
                  "fio runtime= per run: whole number + s, ms, us, m, h or d (no unit: s)");
  Knob<std::string> ramp_ = knobs_.text("ramp", SuiteDefault("200ms", "500ms", "2"),
                                        "fio ramp_time= before each run, same form as runtime");
  Knob<long long> repeat_ =
      knobs_.integer("repeat", "5", "count",
                     "fio runs per case (repetitions: compare needs 5 a side), each with its ramp");
  Knob<std::string> binary_ =
      knobs_.text("binary", "fio", "the fio program (a name on PATH or a path)");
  Knob<std::string> profiles_dir_ =
      knobs_.text("profiles_dir", data_dir("profiles", "io/profiles"),
                  "directory of the NAME.fio job files (other names allowed when given)");
  Knob<std::string> device_ = knobs_.text(
      "device", "",
      "a raw block device as the target, overwriting its data (needs allow_destructive_device)");
  Knob<std::string> allow_destructive_device_ = knobs_.choice(
      "allow_destructive_device", {"false", "true"},
      "true: allow fio to overwrite --set io.fio.device (refused if mounted or in use)");
};

CLUSTERBENCH_REGISTER(Fio);

}  // namespace

FioProfileResult run_fio_in(const FioInDirectory& o, const std::string& profile,
                            const std::string& dir, const std::string& origin) {
  const std::string bin = find_on_path(o.binary);
  if (bin.empty()) throw Waived("fio not found (looked for '" + o.binary + "' on PATH)");
  const ProfileJob job =
      load_job(o.profiles_dir, bin, profile, o.size, o.runtime, o.ramp, o.repeat);
  const auto mounts = read_mountinfo();
  check_job_targets(job.job_file, job.job_text, false, mounts);
  FioTarget t;
  t.where = {checked_directory(dir, origin), origin};
  const Mount* m = mount_of(t.where.dir, mounts);
  t.fs_type = m ? m->fs_type : "";
  refuse_if_too_full(job, t.where.dir);
  refuse_if_written(t.where.dir, origin);
  ScratchDir work(t.where.dir, "fio-" + job.profile);  // fio's files; removed on any exit
  ScratchDir capture(system_tmpdir(), "fio-output");   // fio's stdout/stderr
  t.work_dir = work.path();
  t.capture_dir = capture.path();
  FioProfileResult r;
  r.evidence = {{"profile", profile}, {"job_file", job.job_file}};
  std::vector<FioOutput> outs = run_repeats(job, t, [&r](const json& e) { r.evidence.update(e); });
  r.evidence["fio_version"] = outs.back().version;
  for (bool read : {true, false}) {
    std::string source;
    std::vector<double> reps;
    for (const auto& out : outs) {
      auto v = direction_values(out, read, source);
      if (auto it = v.find(read ? "read_bw" : "write_bw"); it != v.end())
        reps.push_back(it->second);
    }
    if (reps.size() == outs.size()) r.bw[read ? "read" : "write"] = std::move(reps);
  }
  return r;
}

}  // namespace clusterbench::io
