// The watchdog: the process's one signal handler and the thread that ends a run whose case passed
// its deadline, that a peer's abort tripped, or that was signalled (SIGTERM/SIGINT/SIGHUP: mpirun
// sends SIGTERM when a rank dies or the job is cancelled). Work that must be undone when the run
// ends that way (a child process, a scratch directory, a changed sysctl) registers an
// AbortCleanup (core/api/abort_cleanup.hpp): the process then ends by MPI_Abort and no destructor
// runs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/api/abort_cleanup.hpp"

namespace clusterbench {

/// What woke the watchdog.
struct WatchdogEvent {
  enum class Kind { deadline, trip, signal };
  Kind kind = Kind::deadline;
  std::string reason;  ///< e.g. "case deadline of 20 s passed during collectives.all_reduce {...}"
  int signal = 0;      ///< Kind::signal: SIGTERM, SIGINT or SIGHUP
  /// Seconds this process was stopped (SIGSTOP, a frozen VM) just before the event, seen as a
  /// gap in the watchdog's 0.1 s ticks; 0 when it was not. A process that was stopped is the one
  /// its peers waited for: it must not name them as the ones that did not arrive.
  double stopped_s = 0;
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
  /// Arms the deadline: `seconds` from now, the event's reason reads "<kind> deadline of N s
  /// passed during <what> <hint>" (kind "case" or "phase"; hint e.g. "(hung collective or dead
  /// peer?)"). Re-arming replaces the deadline.
  void arm(const std::string& what, double seconds, const std::string& kind = "case",
           const std::string& hint = "(hung collective or dead peer?)");
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
  std::string what_, kind_, hint_;
  std::string tripped_;
  double seconds_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::steady_clock::time_point stopped_until_{};  ///< end of the last gap in the ticks
  double stopped_s_ = 0;
  std::thread thread_;
};

/// A deadline for a step no Watchdog covers, because no run session exists yet or any more:
/// MPI_Init and the host exchange (start-up), MPI_Finalize. When `seconds` pass before done() (or
/// destruction), it prints "clusterbench: <phase>: did not complete within N s (<detail>)" on
/// stderr, runs the abort cleanups and ends the process with exit 3 (_exit: MPI may be half
/// initialised, so no MPI_Abort).
class ProcessDeadline {
 public:
  ProcessDeadline(std::string phase, double seconds, std::string detail);
  ~ProcessDeadline();
  ProcessDeadline(const ProcessDeadline&) = delete;
  ProcessDeadline& operator=(const ProcessDeadline&) = delete;
  void done();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

/// "expected world size N (from OMPI_COMM_WORLD_SIZE), this is rank R": what the launcher's
/// environment says before MPI_Init (OpenMPI, PMI/PMIx, Slurm); "world size unknown" without one.
std::string launcher_world_text();

/// Test-only fault injection for the hang tests: when $CLUSTERBENCH_TEST_STOP is "RANK@POINT"
/// (e.g. "1@report", "0@case:test.hang") and this process is world rank RANK (-1: read from the
/// launcher's environment) at POINT, the process stops itself with SIGSTOP, as `kill -STOP` would,
/// after saying so on stderr. Points: start-up, set-up, case:<benchmark id>, report.
void test_stop_point(const std::string& point, int rank);

/// Runs every registered cleanup, newest first (a child is killed before its directory goes).
/// Called by the watchdog and the AbortRun path just before the process ends.
void run_abort_cleanups();

}  // namespace clusterbench
