// The watchdog: the process's one signal handler and the thread that ends a run whose case passed
// its deadline, that a peer's abort tripped, or that was signalled (SIGTERM/SIGINT/SIGHUP: mpirun
// sends SIGTERM when a rank dies or the job is cancelled). Work that must be undone when the run
// ends that way (a child process, a scratch directory, a changed sysctl) registers an
// AbortCleanup: the process then ends by MPI_Abort and no destructor runs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace clusterbench {

/// What woke the watchdog.
struct WatchdogEvent {
  enum class Kind { deadline, trip, signal };
  Kind kind = Kind::deadline;
  std::string reason;  ///< e.g. "case deadline of 20 s passed during collectives.all_reduce {...}"
  int signal = 0;      ///< Kind::signal: SIGTERM, SIGINT or SIGHUP
};

class Watchdog {
 public:
  /// Installs the handler of SIGTERM, SIGINT and SIGHUP and starts the thread. `on_event(e)` runs
  /// on the watchdog's thread; it returns true to end the process (every AbortCleanup runs, then
  /// Context::abort(3)), false to go on watching (a signal is then not reported again).
  explicit Watchdog(std::function<bool(const WatchdogEvent&)> on_event);
  /// Stops the thread and restores the default dispositions of the three signals.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  /// Arms the deadline for the case named `what`.
  void arm(const std::string& what, double seconds);
  void disarm();
  /// Reports an event now, from any thread, as a passed deadline does (`reason` goes to
  /// on_event): rank 0 does so when another rank reports its own abort (core/progress.hpp).
  void trip(const std::string& reason);
  /// The signal received while a watchdog existed in this process (0: none).
  static int signal_received();
  /// "SIGTERM", "SIGINT", "SIGHUP" or "a signal".
  static const char* signal_name(int sig);

 private:
  void loop();
  std::function<bool(const WatchdogEvent&)> on_event_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool armed_ = false;
  int handled_signal_ = 0;
  std::string what_;
  std::string tripped_;
  double seconds_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

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

/// Runs every registered cleanup, newest first (a child is killed before its directory goes).
/// Called by the watchdog and the AbortRun path just before the process ends.
void run_abort_cleanups();

}  // namespace clusterbench
