// The console's line per finished case (docs/architecture.md "Console"): what was measured, with
// its headline number, printed by rank 0 as each case's records are written.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "records/records.hpp"

namespace clusterbench {

/// A number for the console: 4 significant digits, integers from 1000 up ("60.82", "40826").
std::string console_number(double v);

/// One record in a line: "compute.memory_bandwidth {"kernel":"copy"} vm: bandwidth 60.82 GB/s
/// (5 reps, spread 3.1%)" for an ok record (its first metric, the headline), "...: FAILED: why"
/// and "...: waived: why" for the others.
std::string case_line(const ResultRecord& r);

/// "[5/19, 12 s, about 30 s left]": the case's place in the plan ("5/19"), the time since the
/// run started, and the sum of the estimates of the cases still to run (seconds).
std::string progress_prefix(const std::string& place, double elapsed_s, double left_s);

/// Keeps the console from going quiet during a long case (fio, the dataloader, a burn-in soak):
/// while a case runs and no other line went out for `quiet_s` seconds, its thread prints
/// "[5/19, 42 s] still running io.fio {...}: 20 s so far (estimated 26 s)" to `out`. Rank 0 only.
class Heartbeat {
 public:
  /// `t0`: when the run started (the elapsed time of each line counts from it).
  Heartbeat(double quiet_s, std::ostream& out, std::chrono::steady_clock::time_point t0);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;
  /// Case `place` of the plan ("5/19") starts: `what` is its benchmark and params.
  void start_case(const std::string& place, const std::string& what, double estimate_s);
  void end_case();
  /// Another line went out now: the quiet time starts again.
  void printed();
  /// A line of the running case ("[5/19, 42 s] burn-in interval 3/20: ..."), now.
  void line(const std::string& text);
  /// What the running case is doing ("fio run 3 of 5"), appended to its next "still running"
  /// line; cleared when the case ends.
  void note(const std::string& text);
  /// A table's text from the running case (rows of nccl-tests' table), now. While `open` (the
  /// table goes on in the cases after this one of the same benchmark), this Heartbeat's own lines
  /// start with "# ", which readers of that format skip, so the table stays whole.
  void table(const std::string& text, bool open);

 private:
  using Clock = std::chrono::steady_clock;
  void loop();
  /// "# " while a table is open (see table()), else "". Under mu_.
  std::string comment() const { return table_of_.empty() ? "" : "# "; }
  double quiet_s_;
  std::ostream& out_;
  Clock::time_point t0_, case_start_{}, last_ = Clock::now();
  std::string place_, what_, note_;
  std::string table_of_;  ///< the benchmark whose table is open; "" when none
  double estimate_s_ = 0;
  bool in_case_ = false, stop_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

/// A line from the running case to the console (rank 0's Heartbeat, with the case's place and
/// the run's elapsed time); nothing where no Heartbeat runs (ranks other than 0, unit tests).
/// Thread-safe. For cases that take long and have something to say as they go: a burn-in
/// interval's rates and temperatures, a failure as it happens.
void console_progress(const std::string& text);

/// What the running case is doing now ("fio run 3 of 5"), shown in the Heartbeat's next
/// "still running" line; nothing where no Heartbeat runs. Thread-safe.
void progress_note(const std::string& text);

/// A table's text for the console (Heartbeat::table on rank 0's Heartbeat; std::cout where none
/// runs). `open`: the table goes on in the next cases. Thread-safe.
void console_table(const std::string& text, bool open);

}  // namespace clusterbench
