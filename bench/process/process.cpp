// Child processes with captured output: see process.hpp.
#include "process/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace clusterbench {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

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

pid_t start_process(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& cwd,
                    const std::string& capture_dir) {
  std::string out_path = capture_dir + "/stdout", err_path = capture_dir + "/stderr";
  // Environment: ours, with `env` replacing or adding entries.
  std::vector<std::string> envs;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && env.count(kv.substr(0, eq))) continue;
    envs.push_back(kv);
  }
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    setpgid(0, 0);  // the tool and its helpers (fio's job processes): one group, killed together
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
  return pid;
}

ProcessResult wait_process(pid_t pid, const std::string& capture_dir) {
  int status = 0;
  ProcessResult r;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      r.err = std::string("waitpid: ") + std::strerror(errno);
      return r;
    }
  }
  // What it left behind in its group (fio's job processes after fio itself crashed) would go on
  // writing into a scratch directory that is about to be removed.
  ::kill(-pid, SIGKILL);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  r.out = slurp(capture_dir + "/stdout");
  r.err = slurp(capture_dir + "/stderr");
  return r;
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, const std::string& cwd,
                          const std::string& capture_dir) {
  pid_t pid = start_process(argv, env, cwd, capture_dir);
  if (pid < 0) {
    ProcessResult r;
    r.err = (argv.empty() ? std::string("?") : argv[0]) +
            ": cannot start (fork: " + std::strerror(errno) + ")";
    return r;
  }
  return wait_process(pid, capture_dir);
}

}  // namespace clusterbench
