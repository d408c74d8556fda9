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
  int exit_code = -1;      ///< exit status, 128 + signal number when killed by a signal, 127 when
                           ///< the program could not be executed, -1 when no child was started
  int signal = 0;          ///< the signal that killed it, 0 when it exited
  bool timed_out = false;  ///< killed (SIGKILL, its whole group) because it ran past the timeout
  std::string out, err;    ///< everything it wrote to stdout and stderr, as valid UTF-8 (bytes
                           ///< that are not become U+FFFD: records/utf8.hpp)
};

/// Marks session `sid` as this process's own: the session of a helper it started and detached
/// (the records writer calls setsid(), and its process is a grandchild). Thread-safe.
void add_own_session(pid_t sid);

/// Whether `sid` is a session add_own_session marked. Thread-safe.
bool is_own_session(pid_t sid);

/// Full path of an executable: `name` itself when it holds a '/', else the first match on $PATH.
/// Empty when none is found or it is not executable.
std::string find_on_path(const std::string& name);

/// A started child and what marks its descendants: the environment entry
/// CB_PROCESS_TAG=<our pid>.<n>, which every process it starts inherits.
struct Child {
  pid_t pid = -1;
  std::string tag;  ///< "CB_PROCESS_TAG=1234.5"
};

/// Starts `argv` (argv[0] a path; no shell) in `cwd` (empty: ours) with this process's environment
/// plus `env` (which wins) plus the child's tag. Its stdout and stderr go to the files
/// `capture_dir`/stdout and `capture_dir`/stderr, so a tool that prints a lot cannot block on a
/// pipe; stdin is /dev/null. The child gets no other descriptor of ours (not MPI's sockets and
/// pipes) and leads its own process group. It gets SIGTERM when the thread that started it ends,
/// so it dies with us even when we are SIGKILLed (PR_SET_PDEATHSIG; SIGTERM makes fio stop its
/// job processes too): start it from a thread that outlives it. pid -1 with errno set when fork
/// fails; an exec failure is the child's exit 127 with the reason on its stderr.
Child start_process(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& cwd,
                    const std::string& capture_dir);

/// SIGKILLs the child, its process group, and every process of ours whose environment holds the
/// child's tag: descendants that left the group or the session (fio's job processes call
/// setsid(), and outlive a killed fio) or were reparented. Safe from another thread (it reads
/// /proc and sends signals only).
void kill_child(const Child& child);

/// Waits for the child, then kill_child (what it left running would go on writing into a
/// scratch directory about to be removed), and returns its exit and the captured output read
/// from `capture_dir`. `timeout_s` > 0: past it the child and its descendants are killed and the
/// result says timed_out (exit 128 + SIGKILL).
ProcessResult wait_process(const Child& child, const std::string& capture_dir,
                           double timeout_s = 0);

/// start_process then wait_process. When fork fails: exit_code -1 and the reason in `err`.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, const std::string& cwd,
                          const std::string& capture_dir, double timeout_s = 0);

}  // namespace clusterbench
