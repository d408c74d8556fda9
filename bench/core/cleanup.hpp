// Work to undo when a run is aborted (case deadline, SIGINT/SIGTERM, AbortRun): the process then
// ends by MPI_Abort and no destructor runs, so a benchmark that started a child process or made a
// scratch directory registers how to undo it for as long as it exists.
#pragma once

#include <functional>

namespace clusterbench {

/// Registers `undo` from construction to destruction. Thread-safe. `undo` must be quick and must
/// not throw (kill a process group, remove a directory).
class AbortCleanup {
 public:
  explicit AbortCleanup(std::function<void()> undo);
  ~AbortCleanup();
  AbortCleanup(const AbortCleanup&) = delete;
  AbortCleanup& operator=(const AbortCleanup&) = delete;

 private:
  long id_;
};

/// Runs every registered cleanup, newest first (a child is killed before its directory goes).
/// Called by the watchdog and the AbortRun path just before the process ends.
void run_abort_cleanups();

}  // namespace clusterbench
