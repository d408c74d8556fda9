// Child processes with captured output: see process.hpp.
#include "process/process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "records/utf8.hpp"

extern char** environ;

namespace clusterbench {

namespace {
constexpr const char* kTagVar = "CB_PROCESS_TAG";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

namespace {
std::mutex& own_sessions_mutex() {
  static std::mutex m;
  return m;
}
std::vector<pid_t>& own_sessions() {
  static std::vector<pid_t> v;
  return v;
}
}  // namespace

void add_own_session(pid_t sid) {
  std::lock_guard<std::mutex> lock(own_sessions_mutex());
  own_sessions().push_back(sid);
}

bool is_own_session(pid_t sid) {
  std::lock_guard<std::mutex> lock(own_sessions_mutex());
  const auto& v = own_sessions();
  return sid > 0 && std::find(v.begin(), v.end(), sid) != v.end();
}

std::string find_on_path(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream in(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (dir.empty()) continue;
    std::string p = dir + "/" + name;
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

Child start_process(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& cwd,
                    const std::string& capture_dir) {
  static std::atomic<long> started{0};
  Child child;
  child.tag =
      std::string(kTagVar) + "=" + std::to_string(::getpid()) + "." + std::to_string(++started);
  std::string out_path = capture_dir + "/stdout", err_path = capture_dir + "/stderr";
  // Environment: ours, with `env` replacing or adding entries.
  std::vector<std::string> envs;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && (env.count(kv.substr(0, eq)) || kv.substr(0, eq) == kTagVar))
      continue;
    envs.push_back(kv);
  }
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  envs.push_back(child.tag);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  const pid_t parent = ::getpid();
  pid_t pid = fork();
  if (pid < 0) return child;
  if (pid == 0) {
    setpgid(0, 0);  // the tool and its helpers (fio's job processes): one group, killed together
    // Dies with us, even when we are SIGKILLed. SIGTERM, not SIGKILL: fio stops its job
    // processes (own sessions, and not covered by this) on SIGTERM, but leaves them running
    // when it is SIGKILLed. The parent may have died before prctl: then go at once.
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) _exit(126);
    int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(126);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    // Nothing else of ours: not the originals above, not MPI's sockets and pipes (a child that
    // outlives us must not hold the job's connections open).
    if (::close_range(3, ~0U, 0) != 0) {  // kernels before 5.9
      struct rlimit rl {};
      rlim_t top = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
      for (rlim_t fd = 3; fd < std::min<rlim_t>(top, 1 << 20); ++fd) ::close(static_cast<int>(fd));
    }
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execve(cargv[0], cargv.data(), cenv.data());
    dprintf(2, "exec %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  child.pid = pid;
  return child;
}

void kill_child(const Child& child) {
  if (child.pid <= 0) return;
  ::kill(-child.pid, SIGKILL);
  ::kill(child.pid, SIGKILL);
  // Twice: a descendant may have been forking while the first pass read /proc.
  for (int pass = 0; pass < 2; ++pass) {
    DIR* proc = ::opendir("/proc");
    if (!proc) return;
    while (dirent* e = ::readdir(proc)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end || pid == ::getpid()) continue;
      std::string environ_text = slurp(std::string("/proc/") + e->d_name + "/environ");
      // Entries are NUL-separated: match a whole entry.
      size_t at = environ_text.find(child.tag);
      while (at != std::string::npos) {
        size_t after = at + child.tag.size();
        if ((at == 0 || environ_text[at - 1] == '\0') &&
            (after == environ_text.size() || environ_text[after] == '\0')) {
          ::kill(static_cast<pid_t>(pid), SIGKILL);
          break;
        }
        at = environ_text.find(child.tag, at + 1);
      }
    }
    ::closedir(proc);
  }
}

ProcessResult wait_process(const Child& child, const std::string& capture_dir, double timeout_s) {
  int status = 0;
  ProcessResult r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    pid_t w = waitpid(child.pid, &status, timeout_s > 0 ? WNOHANG : 0);
    if (w == child.pid) break;
    if (w < 0 && errno != EINTR) {
      r.err = std::string("waitpid: ") + std::strerror(errno);
      kill_child(child);
      return r;
    }
    if (w == 0) {  // still running (WNOHANG)
      if (std::chrono::steady_clock::now() >= deadline && !r.timed_out) {
        kill_child(child);
        r.timed_out = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // What it left behind (fio's job processes after fio itself crashed, a daemonised helper)
  // would go on writing into a scratch directory that is about to be removed.
  kill_child(child);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  // A tool's bytes are not text: what it printed is kept as valid UTF-8 (records/utf8.hpp).
  r.out = valid_utf8(slurp(capture_dir + "/stdout"));
  r.err = valid_utf8(slurp(capture_dir + "/stderr"));
  return r;
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, const std::string& cwd,
                          const std::string& capture_dir, double timeout_s) {
  Child child = start_process(argv, env, cwd, capture_dir);
  if (child.pid < 0) {
    ProcessResult r;
    r.err = (argv.empty() ? std::string("?") : argv[0]) +
            ": cannot start (fork: " + std::strerror(errno) + ")";
    return r;
  }
  return wait_process(child, capture_dir, timeout_s);
}

}  // namespace clusterbench
