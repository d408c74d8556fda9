// The record sink of rank 0: run.json rewritten atomically, records.jsonl appended one write and
// one flush per record, so a killed run loses nothing already measured.
#pragma once

#include <mutex>
#include <string>

#include "records/records.hpp"

namespace clusterbench {

class Sink {
 public:
  /// Creates `dir` (and parents) and takes its run lock (acquire_run_lock: InputError when a
  /// live run holds it). Throws std::runtime_error naming the directory on failure.
  explicit Sink(std::string dir);
  ~Sink();
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  const std::string& dir() const { return dir_; }
  /// Rewrites run.json: temporary file, fsync, rename. Thread-safe.
  void write_run(const RunRecord& run);
  /// A top-level run.json field beyond RunRecord's ("resumes", "time_limit", "shared_gpus"),
  /// written with every later write_run. Thread-safe.
  void set_run_field(const std::string& key, json value);
  /// Appends one record as one line with a single write(2), then fdatasync. Thread-safe.
  /// Throws std::runtime_error (naming the file and errno text, e.g. "No space left on device").
  void append(const ResultRecord& rec);
  /// Appends an already serialised record line (no trailing newline).
  void append_line(const std::string& line);

 private:
  std::string dir_;
  int fd_ = -1;
  std::mutex mu_;
  json run_fields_ = json::object();
};

/// Points `<root>/latest` at `run_dir` (a relative symlink, replaced atomically).
void update_latest_link(const std::string& root, const std::string& run_dir);

}  // namespace clusterbench
