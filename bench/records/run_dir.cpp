// A run directory read (run_dir.hpp): run.json and records.jsonl, one record per case key.
#include "records/run_dir.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <string_view>
#include <unordered_map>

#include "records/utf8.hpp"

namespace clusterbench {

namespace {

/// The case key a record is matched on (made from its fields when the line had none).
std::string key_of(const ResultRecord& r) {
  return r.case_key.empty() ? make_case_key(r.benchmark, r.params, r.scope) : r.case_key;
}

/// Frees what a superseded record holds (it is dropped at LastOfEachCase::finish).
void empty_record(ResultRecord& r) {
  r.params = json(), r.extra = json(), r.error = HeapOptional<ErrorInfo>();
  std::vector<Metric>().swap(r.metrics);
  for (std::string* s : {&r.run_id, &r.case_key, &r.message, &r.started_at, &r.scope.host,
                         &r.scope.uuid, &r.scope.pci_bus_id})
    std::string().swap(*s);
  std::vector<std::string>().swap(r.scope.hosts);
}

}  // namespace

void LastOfEachCase::add(std::vector<ResultRecord>& recs, size_t i) {
  if (dead_.size() < recs.size()) dead_.resize(recs.size());
  const std::string made = recs[i].case_key.empty() ? key_of(recs[i]) : std::string();
  const std::string_view key = made.empty() ? std::string_view(recs[i].case_key) : made;
  const size_t h = std::hash<std::string_view>()(key);
  auto [first, last] = seen_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const size_t j = it->second;
    const ResultRecord& earlier = recs[j];
    if ((earlier.case_key.empty() ? key_of(earlier) : earlier.case_key) != key) continue;
    // A long case's snapshots (extra.snapshot) are meant to be replaced; anything else is a
    // resumed run's earlier try.
    if (!(earlier.extra.is_object() && earlier.extra.value("snapshot", false))) ++replaced_;
    empty_record(recs[j]);
    dead_[j] = 1, ++dropped_;
    it->second = i;
    return;
  }
  seen_.emplace(h, i);
}

void LastOfEachCase::finish(RecordsFile& file, const std::string& where) {
  if (replaced_ > 0)
    file.warnings.push_back(where + ": " + std::to_string(replaced_) +
                            " record(s) superseded by a later record of the same case "
                            "(a resumed run); the last one counts");
  if (dropped_ == 0) return;
  auto& recs = file.records;
  size_t to = 0;  // in place: a second array of a million records was a GiB at 1,000 nodes
  for (size_t i = 0; i < recs.size(); ++i)
    if (!(i < dead_.size() && dead_[i])) {
      if (to != i) recs[to] = std::move(recs[i]);
      ++to;
    }
  recs.erase(recs.begin() + static_cast<long>(to), recs.end());
}

void keep_last_of_each_case(RecordsFile& file, const std::string& rec_path) {
  LastOfEachCase last;
  for (size_t i = 0; i < file.records.size(); ++i) last.add(file.records, i);
  last.finish(file, rec_path);
}

RunDir read_run_dir(const std::string& dir, bool with_plan, const ExtraKeys* keep) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw InputError(dir + ": results directory does not exist");
  if (!S_ISDIR(st.st_mode)) throw InputError(dir + ": not a directory");
  RunDir rd;
  rd.dir = dir;
  std::string run_path = dir + "/run.json";
  if (::stat(run_path.c_str(), &st) != 0)
    throw InputError(dir + ": no run.json here; is this a clusterbench results directory?");
  // run.json (114 MB at 1,000 nodes: the plan's case keys) is parsed on a thread of its own
  // while the records are read; its errors still come first.
  // Every error names the file: "DIR/run.json: schema ..." (compare reads two of them).
  auto read_run = [&run_path](bool plan) {
    try {
      if (auto fast = read_run_json_fast(run_path, plan)) return std::move(*fast);
      if (plan) return read_json_file(run_path).get<RunRecord>();
      // The plan is most of a large run.json: skipped while parsing, never built.
      require_regular_file(run_path);  // a FIFO would block the read
      std::ifstream in(run_path);
      if (!in) throw InputError(run_path + ": cannot open (" + std::strerror(errno) + ")");
      auto skip_plan = [](int depth, json::parse_event_t event, json& parsed) {
        return !(depth == 1 && event == json::parse_event_t::key && parsed == "plan");
      };
      return parse_json_stream(in, run_path, skip_plan).get<RunRecord>();
    } catch (const json::parse_error& e) {
      // Streamed, so the text is read again (only on error) to name a byte that is not UTF-8.
      std::ifstream again(run_path, std::ios::binary);
      const std::string why = utf8_error(std::string(std::istreambuf_iterator<char>(again), {}));
      throw InputError(run_path + ": " + (why.empty() ? error_text(e.what()) : why));
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (what.rfind(run_path, 0) == 0) throw;
      if (what.rfind("run.json: ", 0) == 0) what.erase(0, 10);
      throw InputError(run_path + ": " + what);
    }
  };
  auto run_future = std::async(std::launch::async, read_run, with_plan);
  std::string rec_path = dir + "/records.jsonl";
  const bool have_records = ::stat(rec_path.c_str(), &st) == 0;
  std::exception_ptr records_error;
  try {
    if (have_records) rd.records = read_records(rec_path, keep, true);
  } catch (...) {
    records_error = std::current_exception();
  }
  rd.run = run_future.get();
  if (records_error) std::rethrow_exception(records_error);
  // No records: whether the plan was empty decides below, so it is read after all (rare).
  if (!have_records && !with_plan) rd.run = read_run(true);
  if (have_records) {
    // read_records kept the last record of each case as it read
  } else if (rd.run.plan.empty()) {
    throw InputError(dir + ": empty results directory (no records.jsonl and an empty plan)");
  } else {
    rd.records.warnings.push_back(rec_path + ": missing; no case finished");
  }
  return rd;
}

}  // namespace clusterbench
