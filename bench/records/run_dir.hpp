// A run directory as reports read it: run.json and records.jsonl, with one record per case key
// (the last one of each: a resumed run's rerun, a long case's final record after its snapshots).
// read_run_dir is the one place that keeps the last record of a case; readers rely on it.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "records/result.hpp"
#include "records/run_record.hpp"

namespace clusterbench {

/// Result of reading records.jsonl.
struct RecordsFile {
  std::vector<ResultRecord> records;
  std::vector<std::string> warnings;  ///< e.g. a truncated last line
};

/// The top-level keys of a record's `extra` that a reader keeps (report_extra_keys()).
using ExtraKeys = std::set<std::string, std::less<>>;

/// Reads records.jsonl. A malformed line other than the last throws InputError naming
/// file:line and the field; a truncated last line (no trailing newline) is a warning.
/// `keep`: an ok record's `extra` holds only these keys (the rest of it is checked for UTF-8 and
/// structure, never built); failed and waived records keep all of theirs. nullptr: all.
/// `last_of_each_case`: as keep_last_of_each_case, done while reading (a superseded record's
/// memory is freed as soon as its successor is read: a long run's snapshots).
RecordsFile read_records(const std::string& path, const ExtraKeys* keep = nullptr,
                         bool last_of_each_case = false);

/// Keeps only the last record of each case key in `file` (in file order): a resumed run appends
/// a case's new record after its failed one, a long case (the burn-in soak) its final record after
/// its snapshots. Warns, naming `where`, when a superseded record was not a snapshot
/// (extra.snapshot). read_run_dir calls it; so does whoever makes a RunDir by hand.
void keep_last_of_each_case(RecordsFile& file, const std::string& where);

/// keep_last_of_each_case as the records arrive: add() each record in file order (an earlier
/// record of its case is emptied at once), then finish() drops the emptied ones and warns.
class LastOfEachCase {
 public:
  /// Record `i` of `recs` arrived (every earlier index was added before).
  void add(std::vector<ResultRecord>& recs, size_t i);
  /// Drops the superseded records from `file` (order kept); warns, naming `where`, when one was
  /// not a snapshot.
  void finish(RecordsFile& file, const std::string& where);

 private:
  std::unordered_multimap<size_t, size_t> seen_;  ///< hash of a case key -> its last record
  std::vector<char> dead_;                        ///< superseded, by index
  size_t replaced_ = 0, dropped_ = 0;
};

/// A whole run directory: run.json plus records.jsonl. Its records hold one record per case key
/// (keep_last_of_each_case): every reader counts on it and none computes it again.
struct RunDir {
  std::string dir;
  RunRecord run;
  RecordsFile records;
};

/// Reads a run directory. Throws InputError when it is missing, empty or malformed.
/// `with_plan` false leaves RunRecord::plan empty (compare has no use for it; it is most of a
/// 1,000-node run.json).
/// `keep`: as read_records's.
RunDir read_run_dir(const std::string& dir, bool with_plan = true, const ExtraKeys* keep = nullptr);

/// run.json at `path` read in one pass with simdjson (the plan built when `with_plan`, else
/// checked and dropped), every other field as from_json reads it. std::nullopt when the file is
/// anything but a well-formed run.json of the expected shape: the caller reads it the ordinary
/// way, which accepts it or says what is wrong (run_json_fast.cpp).
std::optional<RunRecord> read_run_json_fast(const std::string& path, bool with_plan);

}  // namespace clusterbench
