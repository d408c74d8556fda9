// Running an external tool (fio) and capturing what it printed: io benchmarks invoke tools, they
// never reimplement them.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace clusterbench::io {

/// What a finished child process left.
struct ProcessResult {
  int exit_code = -1;    ///< exit status, or 128 + signal number when killed by a signal
  int signal = 0;        ///< the signal that killed it, 0 when it exited
  std::string out, err;  ///< everything it wrote to stdout and stderr
};

/// Full path of an executable: `name` itself when it holds a '/', else the first match on $PATH.
/// Empty when none is found or it is not executable.
std::string find_on_path(const std::string& name);

/// Runs `argv` (argv[0] a path) in `cwd` with this process's environment plus `env` (which wins),
/// waits, and returns its output. stdout/stderr go through files in `capture_dir`, so a tool
/// that prints a lot cannot block on a pipe. The child gets stdin (/dev/null), stdout and stderr
/// and no other descriptor of ours, and leads its own process group, which is killed when it
/// exits (what it left running) or when the run aborts. Throws CallError when it cannot be
/// started.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, const std::string& cwd,
                          const std::string& capture_dir);

}  // namespace clusterbench::io
