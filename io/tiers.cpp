// io.tiers: each declared storage tier on every node, its filesystem, capacity and media, and
// fio's throughput there through io.fio's safety rules (docs/fio.md "Storage tiers").
#include "io/tiers.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"
#include "env/paths.hpp"
#include "io/fio.hpp"
#include "records/spec.hpp"

namespace clusterbench::io {

std::optional<FsSpace> statvfs_space(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  const double frsize = static_cast<double>(st.f_frsize);
  return FsSpace{terabytes(static_cast<double>(st.f_blocks) * frsize),
                 terabytes(static_cast<double>(st.f_bavail) * frsize)};
}

namespace {

/// One disk's kind: nvme, nvme over TRANSPORT, ssd (TRANSPORT), hdd (TRANSPORT), or unknown.
std::string disk_kind(const Disk& d) {
  // A virtual machine's disk says nothing true of the media behind it (virtio: rotational 1).
  if (d.transport == "virtio" || d.subsystem == "virtio") return "virtual disk (virtio)";
  if (d.nvme)
    return d.transport.empty() || d.transport == "pcie" ? "nvme" : "nvme over " + d.transport;
  const std::string how = d.transport.empty() ? "" : " (" + d.transport + ")";
  if (!d.rotational) return "unknown" + how;
  return (*d.rotational ? "hdd" : "ssd") + how;
}

std::string tb_text(double tb) {
  char buf[32];
  std::snprintf(buf, sizeof buf, tb >= 10 ? "%.1f" : "%.3g", tb);
  return std::string(buf) + " TB";
}

/// The probe's one line for people.
std::string probe_summary(const TierDecl& t, const TierProbe& p, const std::string& host) {
  std::string s = t.name + " " + t.path + " on " + host + ": ";
  if (!p.known) return s + "unknown: " + p.reason;
  if (!p.mounted) return s + "not mounted: " + p.reason;
  const ScratchDevice& d = p.device;
  s += d.fs_type + " on " + d.mount_point + " from " + d.source + ", " + p.media;
  s += p.space ? ", " + tb_text(p.space->capacity_tb) + ", " + tb_text(p.space->free_tb) + " free"
               : ", capacity unknown (" + p.reason + ")";
  return s + (p.shared ? ", shared (counted once)" : ", local (summed over nodes)");
}

}  // namespace

std::string tier_media(const ScratchDevice& d, bool network) {
  if (network) return "network (" + d.fs_type + ")";
  if (d.fs_type == "tmpfs" || d.fs_type == "ramfs") return "memory (" + d.fs_type + ")";
  if (d.disks.empty()) return "unknown (" + (d.reason.empty() ? "no disk found" : d.reason) + ")";
  std::vector<std::string> kinds;
  for (const auto& disk : d.disks)
    if (std::string k = disk_kind(disk); std::find(kinds.begin(), kinds.end(), k) == kinds.end())
      kinds.push_back(k);
  std::string out;
  for (const auto& k : kinds) out += (out.empty() ? "" : "+") + k;
  return out;
}

TierProbe probe_tier(const TierDecl& t, const std::vector<Mount>& mounts, const std::string& host,
                     const std::string& fs_root, const SpaceOf& space) {
  TierProbe p;
  const std::string root = fs_root == "/" ? "" : fs_root;
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(root + t.path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory &&
      ec != std::errc::too_many_symbolic_link_levels) {
    p.known = false;
    p.reason = t.path + " cannot be examined (" + ec.message() + ")";
  } else if (ec) {
    p.reason = t.path + " does not exist (" + ec.message() + ")";
  } else if (!std::filesystem::is_directory(real, ec)) {
    p.reason = t.path + " is not a directory";
  } else {
    p.real_path = real.string().substr(root.size());
    if (p.real_path.empty()) p.real_path = "/";
    p.device = scratch_device(p.real_path, mounts, fs_root);
    p.mounted = !t.mount_point || p.device.mount_point == p.real_path;
    if (!p.mounted)
      p.reason = t.path + " is a directory on " + p.device.mount_point + " (" + p.device.fs_type +
                 " from " + p.device.source +
                 "), not a mount point of its own: the tier's filesystem is not mounted (a "
                 "table sets mount_point false for a tier that is a directory)";
  }
  static const std::set<std::string> kPseudo = {
      "proc",      "sysfs",      "devtmpfs",    "devpts",   "cgroup",     "cgroup2", "debugfs",
      "tracefs",   "securityfs", "pstore",      "bpf",      "configfs",   "fusectl", "mqueue",
      "hugetlbfs", "autofs",     "binfmt_misc", "efivarfs", "rpc_pipefs", "nsfs"};
  if (p.mounted && kPseudo.count(p.device.fs_type)) {
    p.mounted = false;
    p.reason = t.path + " is on " + p.device.fs_type + " (" + p.device.mount_point +
               "), a kernel filesystem, not storage";
  }
  if (p.mounted) {
    p.network = is_network_fs(p.device.fs_type);
    p.shared = t.shared.value_or(p.network);
    p.filesystem_id = p.shared ? "shared:" + p.device.fs_type + ":" + p.device.source
                               : "local:" + host + ":" + p.device.dev;
    p.media = tier_media(p.device, p.network);
    p.space = space(root + p.real_path);
    if (!p.space) {
      p.reason = std::string("statvfs: ") + std::strerror(errno);
    } else if (p.space->capacity_tb <= 0) {
      p.space.reset();
      p.reason = "statvfs reports no blocks (" + p.device.fs_type + " keeps no count of its size)";
    }
  }
  p.summary = probe_summary(t, p, host);
  return p;
}

json tier_json(const TierDecl& t, const TierProbe& p) {
  const ScratchDevice& d = p.device;
  auto text = [&p](const std::string& s) { return p.mounted ? json(s) : json(nullptr); };
  return {
      {"name", t.name},
      {"path", t.path},
      {"origin", t.origin},
      {"mounted", p.known ? json(p.mounted) : json(nullptr)},
      {"reason", p.reason},
      {"real_path", p.real_path.empty() ? json(nullptr) : json(p.real_path)},
      {"mount_point", text(d.mount_point)},
      {"fs_type", text(d.fs_type)},
      {"source", text(d.source)},
      {"dev", text(d.dev)},
      {"network", p.mounted ? json(p.network) : json(nullptr)},
      {"shared", p.mounted ? json(p.shared) : json(nullptr)},
      {"filesystem_id", text(p.filesystem_id)},
      {"counting", p.mounted ? json(p.shared ? "shared: counted once" : "local: summed over nodes")
                             : json(nullptr)},
      {"media", text(p.media)},
      {"device", p.mounted ? scratch_device_json(d) : json(nullptr)},
      {"capacity_tb", p.space ? json(p.space->capacity_tb) : json(nullptr)},
      {"free_tb", p.space ? json(p.space->free_tb) : json(nullptr)},
      {"summary", p.summary}};
}

std::optional<json> json_in_child(const std::function<json()>& work, double seconds) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe2: " + std::string(std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid == 0) {  // the child: whatever may wait on a filesystem
    ::close(fds[0]);
    std::string out;
    try {
      out = work().dump();
    } catch (const std::exception&) {
      ::_exit(1);
    }
    for (size_t done = 0; done < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  }
  std::string text;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  bool eof = false;
  while (!eof && std::chrono::steady_clock::now() < until) {
    pollfd pfd{fds[0], POLLIN, 0};
    if (::poll(&pfd, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    eof = n == 0 || (n < 0 && errno != EINTR);
  }
  ::close(fds[0]);
  if (!eof) {
    ::kill(pid, SIGKILL);  // stuck in a filesystem: it dies when that wait ends
    ::waitpid(pid, nullptr, WNOHANG);
    return std::nullopt;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return json();
  return j;
}

namespace {

/// "" when a file can be created in `dir`, else strerror. An unnamed file (O_TMPFILE) first: a
/// probe killed while the filesystem is frozen leaves nothing behind once it thaws; a directory
/// made and removed where the filesystem has no unnamed files (NFS).
std::string write_test(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return "";
  }
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return std::strerror(errno);
  const std::string probe = dir + "/.cb-probe-" + std::to_string(::getpid());
  if (::mkdir(probe.c_str(), 0700) != 0 || ::rmdir(probe.c_str()) != 0) return std::strerror(errno);
  return "";
}

}  // namespace

json probe_tier_bounded(const TierDecl& t, const std::string& host, double seconds) {
  std::optional<json> j = json_in_child(
      [&] {
        TierProbe p = probe_tier(t, read_mountinfo(), host, "/", statvfs_space);
        json out = tier_json(t, p);
        out["write_error"] = "";
        if (p.mounted) out["write_error"] = write_test(p.real_path);
        return out;
      },
      seconds);
  if (j && j->is_object()) {
    (*j)["answered"] = true;
    return *j;
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", seconds);
  const std::string why = t.path + (j ? " could not be examined (the probe gave no answer)"
                                      : " did not answer within " + std::string(secs) +
                                            " s (a frozen filesystem, or a hung network mount)");
  return {{"name", t.name},
          {"path", t.path},
          {"origin", t.origin},
          {"answered", false},
          {"mounted", nullptr},
          {"reason", why},
          {"write_error", ""},
          {"summary", t.name + " " + t.path + " on " + host + ": unknown: " + why}};
}

std::vector<FoundFs> data_filesystems(const std::vector<Mount>& mounts, const std::string& fs_root,
                                      const SpaceOf& space) {
  static const std::set<std::string> kSkipTypes = {"squashfs", "overlay", "iso9660"};
  std::map<std::string, FoundFs> by_dev;  // dev (local) or source (network) -> shortest mount
  const std::string root = fs_root == "/" ? "" : fs_root;
  for (const auto& m : mounts) {
    const bool network = is_network_fs(m.fs_type);
    const bool block = m.dev.rfind("0:", 0) != 0;
    bool system = false;
    for (const char* top : {"/proc", "/sys", "/dev", "/run", "/boot"})
      system =
          system || m.mount_point == top || m.mount_point.rfind(std::string(top) + "/", 0) == 0;
    const bool read_only = (m.options + ",").rfind("ro,", 0) == 0;
    if ((!block && !network) || system || read_only || kSkipTypes.count(m.fs_type)) continue;
    const std::string key = network ? m.fs_type + ":" + m.source : m.dev;
    auto it = by_dev.find(key);
    if (it != by_dev.end() && it->second.mount_point.size() <= m.mount_point.size()) continue;
    ScratchDevice d = scratch_device(m.mount_point, mounts, fs_root);
    by_dev[key] = {m.mount_point,
                   m.fs_type,
                   m.source,
                   m.dev,
                   tier_media(d, network),
                   space(root + m.mount_point)};
  }
  std::vector<FoundFs> out;
  for (auto& [key, f] : by_dev) out.push_back(std::move(f));
  std::sort(out.begin(), out.end(),
            [](const FoundFs& a, const FoundFs& b) { return a.mount_point < b.mount_point; });
  return out;
}

namespace {

constexpr const char* kUnlabelled = "unlabelled";

class Tiers : public Benchmark {
 public:
  std::string id() const override { return "io.tiers"; }
  std::string description() const override {
    return "storage tiers (hot, warm, cold): mount, capacity, media and fio throughput per node";
  }
  Level level() const override { return Level::node; }
  std::vector<json> cases(const Settings& s) const override {
    for (const auto& name : spec_tier_names())
      if (given(s, name))
        if (std::string why = tier_path_refusal(path_(s, name)); !why.empty())
          throw InputError("--set io.tiers." + name + ": " + why);
    if (size_(s) <= 0) throw InputError("--set io.tiers.size: must be a positive value");
    if (repeat_(s) < 1) throw InputError("--set io.tiers.repeat: must be at least 1");
    if (fio_seconds(runtime_(s), "--set io.tiers.runtime") <= 0)
      throw InputError("--set io.tiers.runtime: must be a positive value");
    fio_seconds(ramp_(s), "--set io.tiers.ramp");
    for (const auto& p : profiles_(s))
      if (p.empty() || p.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789_-") != std::string::npos)
        throw InputError("--set io.tiers.profiles: '" + p +
                         "' is not a profile name (letters, digits, '_' and '-': NAME.fio in "
                         "profiles_dir)");
    // The job files are needed only where a tier is named here (a table's tiers are known
    // later: a missing job file then leaves that tier's throughput unmeasured, with the reason).
    const bool named = hot_.given(s) || warm_.given(s) || cold_.given(s);
    for (const auto& p : named ? profiles_(s) : std::vector<std::string>{}) {
      std::error_code ec;
      const std::string file = profiles_dir(s) + "/" + p + ".fio";
      if (!std::filesystem::is_regular_file(file, ec))
        throw InputError("io.tiers: no job file " + file + " (profile " + p +
                         "; --set io.tiers.profiles_dir, or io.profiles_dir for io.fio too)");
    }
    std::vector<json> out;
    for (const auto& name : spec_tier_names()) out.push_back({{"tier", name}});
    out.push_back({{"tier", kUnlabelled}});
    return out;
  }
  /// fio per profile as io.fio estimates it, for a tier named with --set; 0.2 s otherwise (a
  /// table's tier paths are known only once the table is chosen).
  double estimate_s(const Settings& s, const json& params) const override {
    const std::string tier = params.value("tier", "");
    const std::string path = tier == kUnlabelled ? "" : path_(s, tier);
    if (path.empty() || is_object_storage_url(path)) return 0.2;
    const double run_s = kFioRunOverheadS + fio_seconds(ramp_(s), "--set io.tiers.ramp") +
                         fio_seconds(runtime_(s), "--set io.tiers.runtime");
    return 0.3 + static_cast<double>(profiles_(s).size() * repeat_(s)) * run_s;
  }
  std::string applicable(const NodeEnv& /*node*/) const override { return ""; }

  void run(CaseRun& run) const override {
    const std::string name = run.params().at("tier");
    if (name == kUnlabelled) return run_unlabelled(run);
    const TierDecl t = declared(run.settings(), name);
    const json tier = probe_tier_bounded(t, run.ctx().host(), kProbeSeconds);
    run.set_extra("tier", tier);
    json unmeasured = json::object();
    const std::string reason = tier.value("reason", "");
    const bool mounted = tier["mounted"].is_boolean() && tier["mounted"].get<bool>();
    if (tier["mounted"].is_boolean())
      run.add(Metric{"mounted", mounted ? 1.0 : 0.0, "count"});
    else
      unmeasured["mounted"] = reason;
    if (tier.contains("capacity_tb") && tier["capacity_tb"].is_number())
      run.add(Metric{"capacity_tb", tier["capacity_tb"].get<double>(), "TB"});
    else if (!tier["mounted"].is_boolean() || mounted)
      unmeasured["capacity_tb"] = reason;  // unknown, not "not mounted"
    // Why fio does not run here, if it does not.
    std::string no_fio = !tier["mounted"].is_boolean() ? reason
                         : !mounted                    ? "not mounted: " + reason
                                                       : "";
    if (no_fio.empty() && !tier.value("write_error", "").empty())
      no_fio = "the tier refused a new file (" + tier.value("write_error", "") + ")";
    json fio = json::array();
    const auto profiles = profiles_(run.settings());
    for (const char* row_profile : {"seq_read", "seq_write", "checkpoint_write"})
      if (std::find(profiles.begin(), profiles.end(), row_profile) == profiles.end())
        unmeasured[std::string(row_profile) + "_bw"] =
            std::string("not run: --set io.tiers.profiles leaves out ") + row_profile;
    for (const auto& profile : profiles) {
      if (!no_fio.empty())
        unmeasured[profile + "_bw"] = no_fio;
      else
        measure(run, profile, t, tier.value("real_path", t.path), fio, unmeasured);
    }
    run.set_extra("fio", fio);
    run.set_extra("unmeasured", unmeasured);
    run.finish_as(Status::ok, tier.value("summary", ""));
  }

  /// How long a tier's filesystem has to answer the probe (resolve the path, statvfs, make and
  /// remove a directory).
  static constexpr double kProbeSeconds = 10;

 private:
  std::string path_(const Settings& s, const std::string& name) const {
    if (name == "hot") return hot_(s);
    if (name == "warm") return warm_(s);
    if (name == "cold") return cold_(s);
    return "";
  }
  bool given(const Settings& s, const std::string& name) const {
    return name == "hot" ? hot_.given(s) : name == "warm" ? warm_.given(s) : cold_.given(s);
  }

  /// The tier as --set or the run's spec table declares it; Waived when neither names a path or
  /// the path is object storage.
  TierDecl declared(const Settings& s, const std::string& name) const {
    TierDecl t{name, "", "", std::nullopt, true};
    for (const auto& st : s.spec_tiers())
      if (st.value("name", "") == name) {
        t.path = st.value("path", "");
        t.origin = "spec table tiers." + name;
        if (st.contains("shared") && st["shared"].is_boolean()) t.shared = st["shared"].get<bool>();
        t.mount_point = st.value("mount_point", true);
      }
    if (given(s, name)) t.path = path_(s, name), t.origin = "--set io.tiers." + name;
    if (t.path.empty())
      throw Waived("no path for storage tier " + name +
                   ": the spec table names none; --set io.tiers." + name + "=/PATH, or set tiers." +
                   name + ".path in a table that extends it");
    if (is_object_storage_url(t.path))
      throw Waived("storage tier " + name + " is object storage (" + t.path +
                   "): not measured; clusterbench measures filesystems only");
    return t;
  }

  /// One fio profile on the tier: its bandwidth metric(s) with their repetitions, or the reason
  /// it has none (fio not found, a refusal, fio's error) in `unmeasured`.
  void measure(CaseRun& run, const std::string& profile, const TierDecl& t, const std::string& dir,
               json& fio, json& unmeasured) const {
    const Settings& s = run.settings();
    FioInDirectory o{binary_(s),  profiles_dir(s), size_(s),
                     runtime_(s), ramp_(s),        static_cast<int>(repeat_(s))};
    try {
      FioProfileResult r = run_fio_in(o, profile, dir, "tier " + t.name + " (" + t.origin + ")");
      fio.push_back(r.evidence);
      for (const auto& [direction, reps] : r.bw) {
        const std::string metric =
            r.bw.size() == 1 ? profile + "_bw" : profile + "_" + direction + "_bw";
        run.add(Metric{metric, median_of(reps), "GB/s", true, reps});
      }
    } catch (const Waived& e) {
      unmeasured[profile + "_bw"] = std::string("fio: ") + e.what();
    } catch (const CallError& e) {
      unmeasured[profile + "_bw"] = std::string("fio failed: ") + e.what();
    } catch (const InputError& e) {  // a job file that cannot be read
      unmeasured[profile + "_bw"] = std::string("fio not run: ") + e.what();
    }
  }

  /// The job files' directory: --set io.tiers.profiles_dir, else io.fio's when given, else the
  /// installed profiles.
  std::string profiles_dir(const Settings& s) const {
    if (profiles_dir_.given(s) || !s.has("io.fio", "profiles_dir")) return profiles_dir_(s);
    return s.get("io.fio", "profiles_dir", profiles_dir_(s));
  }

  /// The node's data filesystems that hold no declared tier: listed, not judged.
  void run_unlabelled(CaseRun& run) const {
    const auto mounts = read_mountinfo();
    std::set<std::string> tier_devs;
    for (const auto& name : spec_tier_names()) {
      TierDecl t;
      try {
        t = declared(run.settings(), name);
      } catch (const Waived&) {
        continue;
      }
      const json p = probe_tier_bounded(t, run.ctx().host(), kProbeSeconds);
      if (p.value("mounted", json()) == json(true)) tier_devs.insert(p.value("dev", ""));
    }
    json list = json::array();
    std::string note;
    // statvfs in a child: a hung network mount must not hold the run.
    const SpaceOf bounded_space = [](const std::string& dir) -> std::optional<FsSpace> {
      std::optional<json> j = json_in_child(
          [&dir] {
            auto sp = statvfs_space(dir);
            return sp ? json::array({sp->capacity_tb, sp->free_tb}) : json();
          },
          kProbeSeconds / 2);
      if (!j || !j->is_array()) return std::nullopt;
      return FsSpace{(*j)[0].get<double>(), (*j)[1].get<double>()};
    };
    for (const auto& f : data_filesystems(mounts, "/", bounded_space)) {
      if (tier_devs.count(f.dev)) continue;
      note += (note.empty() ? "" : "; ") + f.mount_point + " (" + f.fs_type + " from " + f.source +
              ", " + f.media +
              (f.space ? ", " + tb_text(f.space->capacity_tb) + ", " + tb_text(f.space->free_tb) +
                             " free"
                       : "") +
              ")";
      list.push_back({{"mount_point", f.mount_point},
                      {"fs_type", f.fs_type},
                      {"source", f.source},
                      {"media", f.media},
                      {"capacity_tb", f.space ? json(f.space->capacity_tb) : json(nullptr)},
                      {"free_tb", f.space ? json(f.space->free_tb) : json(nullptr)}});
    }
    run.set_extra("filesystems", list);
    run.finish_as(Status::ok, "filesystems on no declared tier (listed, not judged): " +
                                  (note.empty() ? std::string("none") : note));
  }

  Knob<std::string> hot_ =
      knobs_.text("hot", "", "path of the hot tier (default: the spec table's tiers.hot.path)");
  Knob<std::string> warm_ =
      knobs_.text("warm", "", "path of the warm tier (default: the spec table's tiers.warm.path)");
  Knob<std::string> cold_ =
      knobs_.text("cold", "", "path of the cold tier (default: the spec table's tiers.cold.path)");
  Knob<std::vector<std::string>> profiles_ =
      knobs_.list("profiles", "seq_read,seq_write,checkpoint_write",
                  "fio job profiles run on each tier (NAME.fio in profiles_dir)");
  Knob<long long> size_ =
      knobs_.size("size", SuiteDefault("16M", "1G", "4G"), "file size of each fio job");
  Knob<std::string> runtime_ = knobs_.text("runtime", SuiteDefault("300ms", "1500ms", "12"),
                                           "fio runtime= per run (as io.fio.runtime)");
  Knob<std::string> ramp_ = knobs_.text("ramp", SuiteDefault("200ms", "500ms", "2"),
                                        "fio ramp_time= before each run (as io.fio.ramp)");
  Knob<long long> repeat_ = knobs_.integer("repeat", "5", "count", "fio runs per profile");
  Knob<std::string> binary_ =
      knobs_.text("binary", "fio", "the fio program (a name on PATH or a path)");
  Knob<std::string> profiles_dir_ = knobs_.text("profiles_dir", data_dir("profiles", "io/profiles"),
                                                "directory of the NAME.fio job files");
};

CLUSTERBENCH_REGISTER(Tiers);

}  // namespace
}  // namespace clusterbench::io
