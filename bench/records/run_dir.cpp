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

void keep_last_of_each_case(RecordsFile& file, const std::string& rec_path) {
  auto& recs = file.records;
  auto key_of = [](const ResultRecord& r) {
    return r.case_key.empty() ? make_case_key(r.benchmark, r.params, r.scope) : r.case_key;
  };
  // Hashed views of the keys: 720,000 records at 1,000 nodes (docs/report.md "Scale").
  std::vector<std::string> made(recs.size());
  std::vector<std::string_view> keys(recs.size());
  for (size_t i = 0; i < recs.size(); ++i)
    keys[i] = recs[i].case_key.empty() ? std::string_view(made[i] = key_of(recs[i]))
                                       : std::string_view(recs[i].case_key);
  std::unordered_map<std::string_view, size_t> last;
  last.reserve(recs.size());
  for (size_t i = 0; i < recs.size(); ++i) last[keys[i]] = i;
  if (last.size() < recs.size()) {
    std::vector<char> kept(recs.size());  // decided before any record moves: keys view them
    size_t replaced = 0;  // a long case's snapshots (extra.snapshot) are meant to be replaced
    for (size_t i = 0; i < recs.size(); ++i) {
      kept[i] = last[keys[i]] == i;
      if (!kept[i] && !(recs[i].extra.is_object() && recs[i].extra.value("snapshot", false)))
        ++replaced;
    }
    if (replaced > 0)
      file.warnings.push_back(rec_path + ": " + std::to_string(replaced) +
                              " record(s) superseded by a later record of the same case "
                              "(a resumed run); the last one counts");
    size_t to = 0;  // in place: a second array of a million records was a GiB at 1,000 nodes
    for (size_t i = 0; i < recs.size(); ++i)
      if (kept[i]) {
        if (to != i) recs[to] = std::move(recs[i]);
        ++to;
      }
    recs.erase(recs.begin() + static_cast<long>(to), recs.end());
  }
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
    if (have_records) rd.records = read_records(rec_path, keep);
  } catch (...) {
    records_error = std::current_exception();
  }
  rd.run = run_future.get();
  if (records_error) std::rethrow_exception(records_error);
  // No records: whether the plan was empty decides below, so it is read after all (rare).
  if (!have_records && !with_plan) rd.run = read_run(true);
  if (have_records) {
    keep_last_of_each_case(rd.records, rec_path);
  } else if (rd.run.plan.empty()) {
    throw InputError(dir + ": empty results directory (no records.jsonl and an empty plan)");
  } else {
    rd.records.warnings.push_back(rec_path + ": missing; no case finished");
  }
  return rd;
}

}  // namespace clusterbench
