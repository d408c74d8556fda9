// Abort clean-ups: what must be undone when a run ends by abort (a hang, a signal, a failed
// communicator), when the process ends by MPI_Abort and no destructor runs: a child process to
// kill, a scratch directory to remove, a sysctl to write back. The watchdog (the process's one
// signal handler, internal to bench/core) runs them. Part of the public face of bench/core.
#pragma once

#include <functional>

namespace clusterbench {

/// Registers `undo` from construction to destruction. Thread-safe. `undo` must be quick and must
/// not throw (kill a process group, remove a directory, write back a sysctl).
class AbortCleanup {
 public:
  explicit AbortCleanup(std::function<void()> undo);
  ~AbortCleanup();
  AbortCleanup(const AbortCleanup&) = delete;
  AbortCleanup& operator=(const AbortCleanup&) = delete;

 private:
  long id_;
};

}  // namespace clusterbench
