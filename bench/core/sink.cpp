// Record sink: see sink.hpp.
#include "core/sink.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/run_lock.hpp"
#include "process/process.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

namespace {

constexpr char kAppend = 'A', kRunJson = 'R', kClaimAbort = 'X', kRelease = 'Z';
constexpr const char* kAbortMarker = "/.abort-recorded";
constexpr size_t kHeader = 5, kAck = 12;  // op + u32 length; u64 seq + i32 errno

bool read_full(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool send_full(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

/// run.json by a temporary file, fsync and rename, without exceptions (the writer is a fork of
/// a threaded process): the errno of a failure, 0 when written.
int write_atomic(const std::string& path, const std::string& tmp, const char* data, size_t n) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int err = 0;
  for (size_t off = 0; off < n && !err;) {
    ssize_t w = ::write(fd, data + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      err = w < 0 ? errno : ENOSPC;
    else
      off += static_cast<size_t>(w);
  }
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) ::unlink(tmp.c_str());
  return err;
}

/// Space held back in the run directory for the abort of a run whose output filesystem fills:
/// DIR/.cb-reserve, allocated (fallocate(2), never written) to 1 MiB + twice the largest run.json
/// written, and given back at the first write that finds no space, so that the failed record of
/// the case in progress and run.json's "aborted" still fit. Removed when the writer ends. Where
/// the filesystem cannot allocate (EOPNOTSUPP), there is no reserve.
class Reserve {
 public:
  explicit Reserve(std::string path) : path_(std::move(path)) {}
  /// Makes the reserve at the run's first write (a run refused before it writes leaves its
  /// directory untouched); once only.
  void ensure() {
    if (made_) return;
    made_ = true;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    grow(0);
  }
  /// Holds at least 1 MiB + 2 x `run_json` bytes.
  void grow(size_t run_json) {
    const auto want = static_cast<off_t>((1 << 20) + 2 * run_json);
    if (fd_ < 0 || want <= size_) return;
    if (::fallocate(fd_, 0, 0, want) == 0) size_ = want;
  }
  bool held() const { return fd_ >= 0; }
  /// Gives the space back (the file goes).
  void release() {
    if (fd_ < 0) return;
    const int truncated = ::ftruncate(fd_, 0);  // the space now, even while a reader holds it
    (void)truncated;
    ::close(fd_);
    ::unlink(path_.c_str());
    fd_ = -1;
  }

 private:
  std::string path_;
  int fd_ = -1;
  off_t size_ = 0;
  bool made_ = false;
};

/// Appends `n` bytes to records.jsonl (O_APPEND): one write(2), so a reader never sees two records
/// interleaved, then fdatasync. Out of space with the reserve held: the reserve is given back
/// and the rest of the line written into it; then -ENOSPC (the line is whole on disk, and the
/// run must stop: the disk is full). Else 0 or the errno.
int append_line(int fd, const char* data, size_t n, Reserve& reserve) {
  size_t off = 0;
  int full = 0;
  while (off < n) {
    ssize_t w = ::write(fd, data + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w > 0) {
      off += static_cast<size_t>(w);
      continue;
    }
    const int err = w < 0 ? errno : ENOSPC;
    if ((err != ENOSPC && err != EDQUOT) || !reserve.held()) return err;
    reserve.release();
    full = err;
  }
  ::fdatasync(fd);
  return -full;
}

/// The writer process: requests in order from `sock`, each confirmed with its sequence number and
/// errno; ends when the run's end of the socket is closed and every request is done.
[[noreturn]] void writer_main(int sock, int records_fd, const std::string& run_path,
                              const std::string& tmp_path, const std::string& marker) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) std::signal(sig, SIG_DFL);
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  prctl(PR_SET_NAME, "cb-record-writer");
  std::string buf;
  bool dropping = false;  // another rank recorded the abort: write nothing more
  bool claimed = false;   // this writer created the marker
  Reserve reserve(run_path.substr(0, run_path.rfind('/')) + "/.cb-reserve");
  for (uint64_t seq = 1;; ++seq) {
    char hdr[kHeader];
    uint32_t len = 0;
    if (!read_full(sock, hdr, kHeader)) {
      reserve.release();
      _exit(0);
    }
    std::memcpy(&len, hdr + 1, 4);
    buf.resize(len + 1);
    if (!read_full(sock, buf.data(), len)) {
      reserve.release();
      _exit(0);
    }
    int err = 0;
    // Another rank recorded the abort (this one was stopped meanwhile): its run.json stands.
    if (!dropping && !claimed && ::access(marker.c_str(), F_OK) == 0) dropping = true;
    if (hdr[0] == kRelease) {
      reserve.release();
    } else if (dropping) {
      err = ECANCELED;
    } else if (hdr[0] == kClaimAbort) {
      int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      err = fd < 0 ? errno : 0;
      if (fd >= 0) ::close(fd);
      dropping = err == EEXIST;
      claimed = err == 0;
    } else if (hdr[0] == kAppend) {
      reserve.ensure();
      buf[len] = '\n';
      err = append_line(records_fd, buf.data(), len + 1, reserve);
    } else {
      reserve.ensure();
      err = write_atomic(run_path, tmp_path, buf.data(), len);
      if ((err == ENOSPC || err == EDQUOT) && reserve.held()) {
        reserve.release();  // room for this run.json and the abort's, which follows
        if (write_atomic(run_path, tmp_path, buf.data(), len) == 0) err = -err;
      }
      if (!err) reserve.grow(len);
    }
    char ack[kAck];
    std::memcpy(ack, &seq, 8);
    std::memcpy(ack + 8, &err, 4);
    send_full(sock, ack, kAck);  // the run may be gone: the write is done all the same
  }
}

/// Forks the writer (twice: it belongs to no one's process group and leaves no zombie), with only
/// `sock` and `records_fd` open and its stdio on /dev/null (a launcher waits for its ranks' output
/// to close). Returns the writer's session id (the first child's pid), or -1 when fork failed.
pid_t start_writer(int sock, int records_fd, const std::string& dir) {
  const std::string run_path = dir + "/run.json";
  const std::string tmp_path = run_path + ".tmp." + std::to_string(::getpid()) + "w";
  pid_t first = ::fork();
  if (first < 0) return -1;
  if (first == 0) {
    ::setsid();
    if (::fork() != 0) _exit(0);
    int null_fd = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd)
      if (null_fd >= 0 && null_fd != fd) ::dup2(null_fd, fd);
    int lo = std::min(sock, records_fd), hi = std::max(sock, records_fd);
    if (lo > 3) ::close_range(3, static_cast<unsigned>(lo - 1), 0);
    if (hi > lo + 1) ::close_range(static_cast<unsigned>(lo + 1), static_cast<unsigned>(hi - 1), 0);
    ::close_range(static_cast<unsigned>(hi + 1), ~0U, 0);
    writer_main(sock, records_fd, run_path, tmp_path, dir + kAbortMarker);
  }
  add_own_session(first);  // the writer's session: it writes this run's files, nobody else's
  int status = 0;
  while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  return first;
}

/// The stopped (SIGSTOP, state T) processes of session `sid`: a record writer someone stopped,
/// which would otherwise stay stopped forever after the run.
std::vector<pid_t> stopped_in_session(pid_t sid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string line;
    std::getline(in, line);
    const size_t close = line.rfind(')');  // comm may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    long ppid = 0, pgrp = 0, session = 0;
    if (rest >> state >> ppid >> pgrp >> session && session == sid &&
        (state == 'T' || state == 't'))
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace

Sink::Sink(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    throw std::runtime_error(dir_ + ": cannot create the results directory (" + ec.message() + ")");
  acquire_run_lock(dir_);  // one live run per directory (a resume of a running run is refused)
  std::string path = dir_ + "/records.jsonl";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": open: " + std::strerror(errno));
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    int err = errno;
    ::close(fd);
    throw std::runtime_error(dir_ + ": record writer: socketpair: " + std::strerror(err));
  }
  // Room for many records, so that a run rarely waits to queue one.
  int bytes = 8 << 20;
  if (::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
    ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  writer_session_ = start_writer(sv[1], fd, dir_);
  int err = errno;
  ::close(sv[1]);
  ::close(fd);
  if (writer_session_ < 0) {
    ::close(sv[0]);
    throw std::runtime_error(dir_ + ": record writer: fork: " + std::strerror(err));
  }
  sock_ = sv[0];
}

Sink::~Sink() {
  // The reserve goes before the run ends, briefly waited for (a frozen filesystem holds the
  // writer: it is given back when the writer ends).
  int err = 0;
  if (sock_ >= 0 && !gone_.load()) try {
      err = wait(send(kRelease, ""), 2.0);
    } catch (const std::exception&) {  // the writer is gone: nothing to give back
    }
  if (err == ETIMEDOUT) kill_stopped_writer();
  if (sock_ >= 0) ::close(sock_);
}

void Sink::kill_stopped_writer() const {
  if (writer_session_ <= 0) return;
  for (pid_t pid : stopped_in_session(writer_session_)) {
    std::cerr << "clusterbench: " << dir_ << ": the record writer (pid " << pid
              << ") was stopped; killed it (what it still held is not written)" << std::endl;
    ::kill(pid, SIGKILL);
  }
}

uint64_t Sink::send(char op, const std::string& payload) {
  std::lock_guard<std::mutex> lock(send_mu_);
  char hdr[kHeader];
  hdr[0] = op;
  uint32_t len = static_cast<uint32_t>(payload.size());
  std::memcpy(hdr + 1, &len, 4);
  if (!send_full(sock_, hdr, kHeader) || !send_full(sock_, payload.data(), payload.size())) {
    gone_.store(true);
    throw std::runtime_error(dir_ + ": the record writer process is gone (" + std::strerror(errno) +
                             ")");
  }
  return ++sent_;
}

int Sink::wait(uint64_t seq, double wait_s) {
  if (wait_s == 0) return 0;  // queued: the writer writes it whether or not anyone waits
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, wait_s)));
  std::unique_lock<std::timed_mutex> lock(ack_mu_, std::defer_lock);
  if (wait_s < 0)
    lock.lock();
  else if (!lock.try_lock_until(deadline))
    return ETIMEDOUT;
  while (acked_ < seq) {
    int ms = -1;
    if (wait_s >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return ETIMEDOUT;
      ms = static_cast<int>(left.count()) + 1;
    }
    pollfd pfd{sock_, POLLIN, 0};
    if (::poll(&pfd, 1, ms) <= 0) continue;  // EINTR or the time ran out: checked above
    char ack[kAck];
    if (!read_full(sock_, ack, kAck)) return EPIPE;
    int err = 0;
    std::memcpy(&acked_, ack, 8);
    std::memcpy(&err, ack + 8, 4);
    if (err) failed_[acked_] = err;
  }
  auto it = failed_.find(seq);
  if (it == failed_.end()) return 0;
  int err = it->second;
  failed_.erase(it);
  return err;
}

void Sink::check(int err, double wait_s, const std::string& file) const {
  if (err == 0) return;
  std::string path = dir_ + "/" + file;
  if (err < 0)  // written, into the space held back for the abort: the run must stop now
    throw std::runtime_error(path + ": write: " + std::strerror(-err) +
                             " (this write went into the space held back for the abort; the run "
                             "stops)");
  if (err == ETIMEDOUT) {
    char text[160];
    std::snprintf(text, sizeof text,
                  ": not confirmed within %g s (the output filesystem takes no writes: frozen or "
                  "hung?); it stays queued",
                  wait_s);
    throw std::runtime_error(path + text);
  }
  if (err == EPIPE) {
    gone_.store(true);
    throw std::runtime_error(path + ": the record writer process ended");
  }
  if (err == ECANCELED)
    throw std::runtime_error(path +
                             ": not written: another rank recorded the run's abort there "
                             "while this one was stopped");
  throw std::runtime_error(path + ": write: " + std::strerror(err));
}

bool Sink::claim_abort(double wait_s) {
  int err = wait(send(kClaimAbort, ""), wait_s);
  return err != EEXIST && err != ECANCELED;
}

void Sink::write_run(const RunRecord& run, double wait_s) {
  json j = run;
  {
    std::lock_guard<std::mutex> lock(fields_mu_);
    for (const auto& [k, v] : run_fields_.items()) j[k] = v;
  }
  check(wait(send(kRunJson, dump_json(j, 2) + "\n"), wait_s), wait_s, "run.json");
}

void Sink::set_run_field(const std::string& key, json value) {
  std::lock_guard<std::mutex> lock(fields_mu_);
  run_fields_[key] = std::move(value);
}

void Sink::append(const ResultRecord& rec, double wait_s) {
  append_line(dump_json(json(rec)), wait_s);
}

void Sink::append_line(const std::string& line, double wait_s) {
  check(wait(send(kAppend, line), wait_s), wait_s, "records.jsonl");
}

bool claim_abort_marker(const std::string& dir) {
  const std::string path = dir + kAbortMarker;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw std::runtime_error(path + ": create: " + std::strerror(errno));
  }
  ::close(fd);
  return true;
}

void append_record_lines(const std::string& dir, const std::vector<std::string>& lines) {
  const std::string path = dir + "/records.jsonl";
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": open: " + std::strerror(errno));
  for (const auto& l : lines) {
    std::string buf = l + "\n";
    if (::write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) {
      int err = errno;
      ::close(fd);
      throw std::runtime_error(path + ": write: " + std::strerror(err));
    }
  }
  ::fdatasync(fd);
  ::close(fd);
}

void mark_run_json_aborted(const std::string& dir, const std::string& reason) {
  const std::string path = dir + "/run.json";
  std::ifstream in(path);
  std::stringstream text;
  if (in) text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  if (!j.is_object()) throw std::runtime_error(path + ": cannot read it to mark the abort");
  j["aborted"] = true;
  j["abort_reason"] = reason;
  j["exit_code"] = 3;
  j["finished_at"] = utc_now_iso();
  write_file_atomic(path, dump_json(j, 2) + "\n");
}

bool run_json_finished(const std::string& dir) {
  std::ifstream in(dir + "/run.json");
  std::stringstream text;
  if (in) text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  return j.is_object() && j.contains("exit_code") && !j["exit_code"].is_null();
}

void probe_output_writable(const std::string& path, double seconds) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::absolute(path.empty() ? "." : path, ec);
  while (!dir.empty() && dir != dir.root_path() && !fs::is_directory(dir, ec))
    dir = dir.parent_path();                // a stat only: a frozen filesystem still answers those
  const std::string folder = dir.string();  // made before the fork
  const std::string probe = (dir / (".cb-probe." + std::to_string(::getpid()))).string();
  pid_t child = ::fork();
  if (child < 0) return;  // nothing learnt; the writes that follow say what they meet
  if (child == 0) {
    // Async-signal-safe calls only (a fork of a threaded process); its own session, out of the
    // launcher's reach (killed between create and unlink, it would leave the file), and stdio
    // away from the launcher, which waits for its ranks' output to close. O_TMPFILE: a file
    // without a name, which nothing can leave behind; a named one where unsupported (NFS).
    ::setsid();
    int null_fd = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd)
      if (null_fd >= 0) ::dup2(null_fd, fd);
    int fd = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) _exit(::close(fd) == 0 ? 0 : 1);
    fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
    }
    _exit(0);
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.1, seconds));
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t r = ::waitpid(child, &status, WNOHANG);
    if (r == child || (r < 0 && errno != EINTR)) return;
    ::usleep(20000);
  }
  char text[64];
  std::snprintf(text, sizeof text, "%g s", seconds);
  throw OutputStalled(dir.string() + ": the output filesystem took no write within " + text +
                      " (frozen or hung?): nothing measured, no run directory made");
}

void discard_report_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* name : {"report.md", "report.json", "report.html", "junit.xml",
                           "failing-hosts.txt", "suspect-hosts.txt"})
    fs::remove(fs::path(dir) / name, ec);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tmp.") != std::string::npos) fs::remove(it->path(), ec);
  }
}

void discard_new_run_dir(const std::string& dir, bool remove_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::file_size(dir + "/records.jsonl", ec) == 0 && !ec) fs::remove(dir + "/records.jsonl", ec);
  for (const char* name : {"run.lock", ".abort-recorded"}) fs::remove(fs::path(dir) / name, ec);
  discard_report_files(dir);            // and the temporary files (run.json.tmp.*)
  if (remove_dir) fs::remove(dir, ec);  // only when empty
}

void update_latest_link(const std::string& root, const std::string& run_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = fs::path(run_dir).lexically_relative(root);
  if (target.empty() || target.string().rfind("..", 0) == 0) target = fs::absolute(run_dir);
  fs::path tmp = fs::path(root) / (".latest.tmp." + std::to_string(getpid()));
  fs::remove(tmp, ec);
  fs::create_directory_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, fs::path(root) / "latest", ec);
}

}  // namespace clusterbench
