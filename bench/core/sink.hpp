// The record sink of rank 0: run.json rewritten atomically, records.jsonl appended one write and
// one fdatasync per record, so a killed run loses nothing already measured.
//
// The writes are made by a writer process of their own (forked once, in its own session, its
// stdio on /dev/null): the run's process never waits inside the filesystem. A frozen or hung
// output filesystem then holds the writer, not the rank, so the run's deadlines can still end the
// job (mpirun waits for its ranks, which must be able to exit); what the writer holds is written
// once the filesystem thaws, and the writer ends when the run has ended and its queue is empty.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench {

class Sink {
 public:
  /// wait_s of a call that waits until the writer confirms the write.
  static constexpr double kWaitForever = -1;

  /// Creates `dir` (and parents), takes its run lock (acquire_run_lock: InputError when a live
  /// run holds it), opens records.jsonl and starts the writer process. Throws
  /// std::runtime_error naming the directory on failure.
  explicit Sink(std::string dir);
  /// Closes the channel: the writer finishes what it holds, then ends.
  ~Sink();
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  const std::string& dir() const { return dir_; }
  /// Rewrites run.json: temporary file, fsync, rename. Thread-safe. Waits up to `wait_s` seconds
  /// (kWaitForever: no limit; 0: queue it and return) for the writer to confirm; throws
  /// std::runtime_error naming the file and the errno text when the write failed, or the wait ran
  /// out (the write stays queued).
  void write_run(const RunRecord& run, double wait_s = kWaitForever);
  /// A top-level run.json field beyond RunRecord's ("resumes", "time_limit", "shared_gpus"),
  /// written with every later write_run. Thread-safe.
  void set_run_field(const std::string& key, json value);
  /// Appends one record as one line with a single write(2), then fdatasync. Thread-safe; waits
  /// and throws as write_run does (e.g. "records.jsonl: write: No space left on device").
  void append(const ResultRecord& rec, double wait_s = kWaitForever);
  /// Appends an already serialised record line (no trailing newline).
  void append_line(const std::string& line, double wait_s = kWaitForever);
  /// At an abort: claims the right to record it (creates DIR/.abort-recorded, exclusively). False
  /// when another rank recorded it first (claim_abort_marker): the writer then drops every later
  /// write. True when claimed, or not confirmed within `wait_s` (the writes are queued anyway and
  /// dropped by the writer if the claim fails later).
  bool claim_abort(double wait_s);
  /// Kills the writer process if someone stopped it (SIGSTOP): it would stay stopped after the
  /// run, holding what it has not written (a frozen filesystem's writer is not stopped, and
  /// writes once it thaws). Says so on stderr.
  void kill_stopped_writer() const;
  /// True once a request found the writer process gone (killed): the run then writes directly.
  bool writer_gone() const { return gone_.load(); }

 private:
  uint64_t send(char op, const std::string& payload);
  /// Waits up to `wait_s` (kWaitForever: no limit) for the confirmation of request `seq`: 0, the
  /// errno of the failed write, ETIMEDOUT, or EPIPE when the writer is gone.
  int wait(uint64_t seq, double wait_s);
  /// Throws for `err` from wait() on `file` (nothing for 0).
  void check(int err, double wait_s, const std::string& file) const;
  std::string dir_;
  int sock_ = -1;  // our end of the writer's socket pair: requests out, confirmations in
  std::mutex send_mu_;
  std::timed_mutex ack_mu_;
  uint64_t sent_ = 0;               // under send_mu_
  uint64_t acked_ = 0;              // under ack_mu_
  std::map<uint64_t, int> failed_;  // under ack_mu_: seq -> errno of a failed write
  std::mutex fields_mu_;
  json run_fields_ = json::object();
  mutable std::atomic<bool> gone_{false};
  pid_t writer_session_ = -1;  ///< the writer's session (setsid): where a stopped writer is found
};

/// A rank other than 0 at an abort, before it writes to DIR: creates DIR/.abort-recorded
/// exclusively. False when it exists (rank 0 recorded the abort first). Throws
/// std::runtime_error naming the file when it cannot be created for another reason.
bool claim_abort_marker(const std::string& dir);

/// Appends `lines` (serialised records, no newline) to DIR/records.jsonl, one write(2) each on
/// an O_APPEND descriptor, then fdatasync: how a rank other than 0 records an abort when rank 0 is
/// stopped. Throws std::runtime_error naming the file.
void append_record_lines(const std::string& dir, const std::vector<std::string>& lines);

/// Marks DIR/run.json aborted with `reason` (aborted, abort_reason, exit_code 3, finished_at),
/// rewriting it atomically. Throws std::runtime_error naming the file when it cannot be read,
/// parsed or written.
void mark_run_json_aborted(const std::string& dir, const std::string& reason);

/// True when DIR/run.json says the run ended (its exit_code is set: finished or already marked
/// aborted); false when it is running, or the file cannot be read or parsed.
bool run_json_finished(const std::string& dir);

/// The output filesystem did not take a write in time (frozen or hung): the run ends with exit 3.
class OutputStalled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Before rank 0 first writes under `path` (a run directory, made or not yet): a child process
/// creates and removes a probe file in its nearest existing ancestor, so that a frozen or hung
/// filesystem holds the child, never the run, in the kernel. Throws OutputStalled naming the
/// folder when the child has not finished within `seconds`; returns otherwise (an error such as
/// ENOSPC is left to the write that follows, which names its file).
void probe_output_writable(const std::string& path, double seconds);

/// An aborted run has no verdict: removes DIR's report files (report.md/.json/.html, junit.xml,
/// failing-hosts.txt, suspect-hosts.txt) and the temporary files a writer killed mid-way left
/// (*.tmp.*). `clusterbench report DIR` makes the report again, with the abort. Errors are ignored.
void discard_report_files(const std::string& dir);

/// A run refused while its directory was being made (a full filesystem): removes what it put
/// there (an empty records.jsonl, run.lock, temporary files) and, when `remove_dir`, the
/// directory if it is then empty, so that the same command works once the cause is fixed.
void discard_new_run_dir(const std::string& dir, bool remove_dir);

/// Points `<root>/latest` at `run_dir` (a relative symlink, replaced atomically).
void update_latest_link(const std::string& root, const std::string& run_dir);

}  // namespace clusterbench
