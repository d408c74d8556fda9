// Scratch directories and their safety checks: owners, sweeps, removal, refusals of unsafe
// targets, open writers (see scratch.hpp and docs/fio.md "Safety"). The scratch device is in
// scratch_device.cpp.
#include "io/scratch.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "core/api/error.hpp"
#include "env/sysfs.hpp"
#include "process/process.hpp"

namespace fs = std::filesystem;

namespace clusterbench::io {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace

std::string system_tmpdir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

namespace {

/// Field 22 of /proc/PID/stat (the start time in clock ticks since boot); "" when `pid` does
/// not run.
std::string process_start(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto rp = stat.rfind(')');
  if (rp == std::string::npos) return "";
  std::istringstream rest(stat.substr(rp + 1));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {  // fields 3.. follow the command name
  }
  return field;
}

}  // namespace

std::string scratch_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string scratch_pid_namespace() {
  std::error_code ec;
  const std::string link = fs::read_symlink("/proc/self/ns/pid", ec).string();  // pid:[4026531836]
  const auto open = link.find('['), close = link.find(']');
  return ec || open == std::string::npos || close == std::string::npos
             ? ""
             : link.substr(open + 1, close - open - 1);
}

std::string scratch_owner_line() {
  const long pid = static_cast<long>(::getpid());
  const std::string ns = scratch_pid_namespace();
  return "pid=" + std::to_string(pid) + " host=" + scratch_host() + " start=" + process_start(pid) +
         (ns.empty() ? "" : " pidns=" + ns);
}

bool scratch_owner_gone(const std::string& line, const std::string& host) {
  std::istringstream in(line);
  std::string word, owner_host, start, pidns;
  long pid = 0;
  while (in >> word) {
    if (starts_with(word, "pid=")) pid = std::atol(word.c_str() + 4);
    if (starts_with(word, "host=")) owner_host = word.substr(5);
    if (starts_with(word, "start=")) start = word.substr(6);
    if (starts_with(word, "pidns=")) pidns = word.substr(6);
  }
  if (pid <= 0 || owner_host.empty() || owner_host != host) return false;
  // Another pid namespace (a container with the host's name): its pids mean nothing here.
  if (!pidns.empty() && pidns != scratch_pid_namespace()) return false;
  const std::string now = process_start(pid);
  return now.empty() || (!start.empty() && now != start);
}

std::vector<std::string> sweep_dead_scratch(const std::string& parent, const std::string& host) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const fs::path dir = e.path();
    std::error_code st_ec;
    if (!starts_with(dir.filename().string(), "cb-") ||
        !fs::is_directory(fs::symlink_status(dir, st_ec)))
      continue;
    const fs::path owner = dir / kScratchOwnerFile;
    if (!fs::is_regular_file(fs::symlink_status(owner, st_ec))) continue;
    std::ifstream in(owner);
    std::string line;
    std::getline(in, line);
    if (!scratch_owner_gone(line, host)) continue;
    std::error_code rm_ec;
    fs::remove_all(dir, rm_ec);
    if (!rm_ec) removed.push_back(dir.string());
  }
  return removed;
}

bool remove_all_bounded(const std::string& path, double seconds, bool detach) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (detach) ::setsid();
    std::error_code ec;
    for (int attempt = 0; attempt < 40; ++attempt) {  // 40 x 50 ms
      ec.clear();
      fs::remove_all(path, ec);
      if (!ec) break;
      ::usleep(50000);
    }
    ::_exit(ec ? 1 : 0);
  }
  if (pid < 0) {  // no child: remove it here
    std::error_code ec;
    fs::remove_all(path, ec);
    return !ec;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= until) return false;  // it goes on without us
    ::usleep(10000);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

namespace {

/// The guard's body (start_scratch_guard); never returns.
[[noreturn]] void run_scratch_guard(const std::string& path, int rfd) {
  ::setsid();  // not in the group a launcher kills
  if (::chdir("/") != 0) {
  }
  const int null = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3 && null >= 0; ++fd) ::dup2(null, fd);
  if (rfd > 3) ::close_range(3, rfd - 1, 0);  // mpirun's pipes, the records pipe, sockets
  ::close_range(rfd + 1, ~0U, 0);
  char byte = 0;
  ssize_t n = 0;
  do {
    n = ::read(rfd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 1) ::_exit(0);                            // released: the owner removed it
  for (int attempt = 0; attempt < 600; ++attempt) {  // 600 x 50 ms
    std::error_code ec;
    fs::remove_all(path, ec);
    if (!ec && !fs::exists(fs::symlink_status(path, ec))) ::_exit(0);
    ::usleep(50000);
  }
  ::_exit(1);
}

}  // namespace

int start_scratch_guard(const std::string& path) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {  // twice: the guard is nobody's child to reap
    if (::fork() == 0) run_scratch_guard(path, fds[0]);
    ::_exit(0);
  }
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    return -1;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return fds[1];
}

void release_scratch_guard(int fd) {
  if (fd < 0) return;
  const char byte = 'k';
  if (::send(fd, &byte, 1, MSG_NOSIGNAL) != 1) {  // the guard is gone: nothing to release
  }
  ::close(fd);
}

ScratchDir::ScratchDir(const std::string& parent, const std::string& tag) {
  for (const auto& d : sweep_dead_scratch(parent))
    std::cerr << "clusterbench: removed " << d << ", left by a run that is gone" << std::endl;
  std::string tmpl = parent + "/cb-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    int e = errno;
    throw_call_error("libc", std::to_string(e), std::strerror(e), "mkdtemp", __FILE__, __LINE__);
  }
  path_ = buf.data();
  std::ofstream(path_ + "/" + kScratchOwnerFile) << scratch_owner_line() << "\n";
  remove_on_abort_ =
      std::make_unique<AbortCleanup>([p = path_] { remove_all_bounded(p, 5, /*detach=*/true); });
  guard_fd_ = start_scratch_guard(path_);
}

ScratchDir::~ScratchDir() {
  // A few GB of fio files take seconds on a busy disk: only a filesystem that does not answer
  // for 2 minutes is left to the child.
  if (!remove_all_bounded(path_, 120))
    std::cerr << "clusterbench: removing " << path_
              << " did not finish within 120 s (a very slow, frozen or hung filesystem?); a child "
                 "process goes on with it"
              << std::endl;
  release_scratch_guard(guard_fd_);
}

std::string block_signature(const std::string& h) {
  auto at = [&](size_t off, const std::string& magic) {
    return h.size() >= off + magic.size() && h.compare(off, magic.size(), magic) == 0;
  };
  if (at(0, "XFSB")) return "xfs";
  if (at(0, std::string("LUKS\xba\xbe", 6))) return "crypto_LUKS";
  if (at(65600, "_BHRfS_M")) return "btrfs";
  if (at(1080, std::string("\x53\xef", 2))) return "ext2/3/4";
  if (at(4086, "SWAPSPACE2") || at(4086, "SWAP-SPACE")) return "swap";
  if (at(512, "LABELONE")) return "LVM2_member";
  if (at(512, "EFI PART")) return "GPT partition table";
  if (at(510, std::string("\x55\xaa", 2))) return "MBR partition table";
  return "";
}

std::string raw_device_refusal(const std::string& device, bool allowed,
                               const std::vector<Mount>& mounts, const std::string& fs_root) {
  if (!allowed)
    return "refused: " + device +
           " is a raw block device; writing it destroys its contents. Pass --set "
           "io.fio.allow_destructive_device=true to allow an empty device";
  struct stat st {};
  if (stat(device.c_str(), &st) != 0 || !S_ISBLK(st.st_mode))
    return "refused: " + device + " is not a block device";
  std::string name = fs::path(device).filename().string();
  for (const auto& m : mounts)
    if (m.source == device || starts_with(m.source, device))
      return "refused: " + device + " is mounted (" + m.source + " on " + m.mount_point + ")";
  std::string sys = sysfs::under(fs_root, "/sys/class/block/" + name);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(sys, ec))
    if (fs::exists(e.path() / "partition"))
      return "refused: " + device + " has partition " + e.path().filename().string();
  for (const auto& e : fs::directory_iterator(sys + "/holders", ec))
    return "refused: " + device + " is held by " + e.path().filename().string();
  int fd = ::open(device.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "refused: cannot open " + device + ": " + std::strerror(errno);
  std::string head(68 * 1024, '\0');
  ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  if (n < 0) return "refused: cannot read " + device + ": " + std::strerror(errno);
  head.resize(static_cast<size_t>(n));
  std::string sig = block_signature(head);
  if (!sig.empty()) return "refused: " + device + " holds a " + sig + " signature";
  return "";
}

std::string fio_path_refusal(const std::string& path, const std::string& what) {
  const std::string head = "refused: " + what + " '" + path + "'";
  if (path.empty()) return head + " is empty";
  for (char c : path) {
    if (std::iscntrl(static_cast<unsigned char>(c)))
      return head + " holds a control character, which would start a fio job-file line";
    if (std::string(":$;#\\").find(c) != std::string::npos)
      return head + " holds '" + std::string(1, c) + "', which fio reads specially (" +
             (c == ':'    ? "it splits file and directory names on ':', so another file would be "
                            "written"
              : c == '$'  ? "it expands $ in job files"
              : c == '\\' ? "it escapes with \\"
                          : "it starts a comment") +
             "); choose a path without it";
  }
  if (std::isspace(static_cast<unsigned char>(path.front())) ||
      std::isspace(static_cast<unsigned char>(path.back())))
    return head + " starts or ends with a blank, which fio strips";
  return "";
}

std::vector<JobFileTarget> job_file_targets(const std::string& text) {
  std::vector<JobFileTarget> out;
  std::istringstream in(text);
  std::string line;
  auto trim = [](std::string v) {
    const char* ws = " \t\r";
    auto b = v.find_first_not_of(ws);
    return b == std::string::npos ? "" : v.substr(b, v.find_last_not_of(ws) - b + 1);
  };
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line);
    if (line.empty() || line[0] == ';' || line[0] == '#' || line[0] == '[') continue;
    if (starts_with(line, "include ") || starts_with(line, "include\t")) {
      out.push_back({"include", trim(line.substr(8)), n});
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq));
    if (key == "filename" || key == "directory" || key == "filename_format" || key == "opendir")
      out.push_back({key, trim(line.substr(eq + 1)), n});
  }
  return out;
}

namespace {
/// Whether the process whose /proc directory is `proc_dir` is this process's own helper: a child
/// of `self`, or in a session this process started (is_own_session: the detached records
/// writer). Fields 4 and 6 of its stat, after the command name's closing parenthesis.
bool own_helper(const std::string& proc_dir, int self) {
  std::ifstream in(proc_dir + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  std::string state;
  int ppid = -1, pgrp = -1, sid = -1;
  rest >> state >> ppid >> pgrp >> sid;
  return ppid == self || is_own_session(sid);
}
}  // namespace

namespace {

/// Whether `path` lies inside another host's ScratchDir below the target `under` (which ends in
/// '/'): a directory "cb-*" there whose owner file names a host other than `host`. That is
/// another node's rank measuring the same shared tier, seen where nodes share one kernel (network
/// namespaces, containers). A run of this host writing there is a writer like any other, and so
/// is whatever lies in a cb-* directory above the target or in one without a parsable owner.
bool other_hosts_scratch(const fs::path& path, const std::string& under, const std::string& host) {
  std::error_code ec;
  // "/".parent_path() is "/": the loop stops at the root (a target of "/" spun a core until the
  // case deadline).
  for (fs::path p = path.parent_path(); p.string().size() >= under.size();
       p = p == p.parent_path() ? fs::path() : p.parent_path()) {
    if (p.empty()) break;
    if (!starts_with(p.filename().string(), "cb-")) continue;
    std::ifstream in(p / kScratchOwnerFile);
    std::string line, word, owner_host;
    bool pid = false;
    std::getline(in, line);
    std::istringstream words(line);
    while (words >> word) {
      if (starts_with(word, "pid=")) pid = std::atol(word.c_str() + 4) > 0;
      if (starts_with(word, "host=")) owner_host = word.substr(5);
    }
    if (pid && !owner_host.empty() && owner_host != host) return true;
  }
  return false;
}

}  // namespace

namespace {

/// Whether the fd whose fdinfo(5) file is `fdinfo` is open for writing (O_WRONLY or O_RDWR).
bool writable(const fs::path& fdinfo) {
  std::ifstream info(fdinfo);
  std::string line;
  long flags = -1;
  while (std::getline(info, line))
    if (starts_with(line, "flags:")) flags = std::strtol(line.c_str() + 6, nullptr, 8);
  return flags >= 0 && ((flags & O_ACCMODE) == O_WRONLY || (flags & O_ACCMODE) == O_RDWR);
}

/// Whether `path` or one of its directories is the file `target` (same device and inode).
bool below_by_inode(const std::string& path, const struct stat& target) {
  for (fs::path q = path; !q.empty(); q = q.parent_path()) {
    struct stat st {};
    if (::stat(q.c_str(), &st) == 0 && st.st_dev == target.st_dev && st.st_ino == target.st_ino)
      return true;
    if (q == q.root_path()) break;
  }
  return false;
}

}  // namespace

std::vector<OpenWriter> open_writers(const std::string& target, int* unreadable,
                                     const std::string& proc_root) {
  std::vector<OpenWriter> out;
  if (unreadable) *unreadable = 0;
  std::error_code ec;
  const std::string want = fs::absolute(target, ec).lexically_normal().string();
  std::string under = want;
  if (under.empty() || under.back() != '/') under += '/';
  const int self = static_cast<int>(::getpid());
  const std::string host = scratch_host();
  struct stat target_st {};
  const bool target_known = ::stat(want.c_str(), &target_st) == 0;
  for (const auto& entry : fs::directory_iterator(proc_root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const int pid = std::atoi(name.c_str());
    // This process and its own helpers (the records writer writes the run's output, which may
    // well lie on the target).
    if (pid == self || own_helper(entry.path().string(), self)) continue;
    std::error_code fd_ec;
    fs::directory_iterator fds(entry.path() / "fd", fd_ec);
    if (fd_ec) {
      if (unreadable && fd_ec != std::errc::no_such_file_or_directory) ++*unreadable;
      continue;
    }
    for (const auto& fd : fds) {
      std::error_code link_ec;
      std::string path = fs::read_symlink(fd.path(), link_ec).string();
      if (link_ec || path.empty() || path[0] != '/') continue;  // pipes, sockets, anon inodes
      const bool by_path = path == want || starts_with(path, under);
      if (!by_path && !target_known) continue;
      if (!writable(entry.path() / "fdinfo" / fd.path().filename())) continue;
      // Through another path to the same directory (a bind mount, a symlinked parent): one of
      // the file's directories is the target itself (device and inode).
      if (!by_path && !below_by_inode(path, target_st)) continue;
      if (other_hosts_scratch(path, under, host)) continue;
      OpenWriter w;
      w.pid = pid;
      w.path = path;
      std::ifstream comm(entry.path() / "comm");
      std::getline(comm, w.comm);
      out.push_back(std::move(w));
    }
  }
  std::sort(out.begin(), out.end(), [](const OpenWriter& a, const OpenWriter& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.path < b.path;
  });
  return out;
}

std::string describe_writers(const std::vector<OpenWriter>& writers) {
  std::string out;
  for (size_t i = 0; i < writers.size() && i < 5; ++i)
    out += (i ? "; " : "") + std::string("pid ") + std::to_string(writers[i].pid) + " (" +
           writers[i].comm + ") writes " + writers[i].path;
  if (writers.size() > 5) out += "; and " + std::to_string(writers.size() - 5) + " more";
  return out;
}

}  // namespace clusterbench::io
