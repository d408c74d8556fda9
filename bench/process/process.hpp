// Running an external tool (fio, gnuplot, Chromium) and capturing what it printed: benchmarks
// invoke tools, they never reimplement them. Shared by the io benchmarks and reports/, so it
// depends on neither the core nor MPI.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace clusterbench {

/// What a finished child process left.
struct ProcessResult {
  int exit_code = -1;    ///< exit status, 128 + signal number when killed by a signal, 127 when
                         ///< the program could not be executed, -1 when no child was started
  int signal = 0;        ///< the signal that killed it, 0 when it exited
  std::string out, err;  ///< everything it wrote to stdout and stderr
};

/// Full path of an executable: `name` itself when it holds a '/', else the first match on $PATH.
/// Empty when none is found or it is not executable.
std::string find_on_path(const std::string& name);

/// Starts `argv` (argv[0] a path; no shell) in `cwd` (empty: ours) with this process's environment
/// plus `env` (which wins). Its stdout and stderr go to the files `capture_dir`/stdout and
/// `capture_dir`/stderr, so a tool that prints a lot cannot block on a pipe; stdin is /dev/null.
/// The child gets no other descriptor of ours (not MPI's sockets and pipes) and leads its own
/// process group (pgid = the returned pid). Returns the pid, or -1 with errno set when fork
/// fails; an exec failure is the child's exit 127 with the reason on its stderr.
pid_t start_process(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& cwd,
                    const std::string& capture_dir);

/// Waits for `pid` (from start_process), kills what it left running in its process group, and
/// returns its exit and the captured output read from `capture_dir`.
ProcessResult wait_process(pid_t pid, const std::string& capture_dir);

/// start_process then wait_process. When fork fails: exit_code -1 and the reason in `err`.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, const std::string& cwd,
                          const std::string& capture_dir);

}  // namespace clusterbench
