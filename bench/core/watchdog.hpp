// Watchdog: a thread that ends a run whose case passed its deadline, or that was signalled
// (SIGTERM/SIGINT: mpirun does so when a rank dies), after writing what it can.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace clusterbench {

class Watchdog {
 public:
  /// `on_abort(reason)` runs on the watchdog thread when a deadline passes or a signal arrives;
  /// it should record the abort; afterwards the process ends with exit code 3 (MPI_Abort).
  explicit Watchdog(std::function<void(const std::string&)> on_abort);
  ~Watchdog();
  /// Arms the deadline for the case named `what`.
  void arm(const std::string& what, double seconds);
  void disarm();
  /// Aborts now, from any thread, as a passed deadline does (`reason` goes to on_abort): rank 0
  /// does so when another rank reports its own abort (bench/progress.hpp).
  void trip(const std::string& reason);

 private:
  void loop();
  std::function<void(const std::string&)> on_abort_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool armed_ = false;
  std::string what_;
  std::string tripped_;
  double seconds_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

}  // namespace clusterbench
