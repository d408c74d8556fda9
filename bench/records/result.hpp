// ResultRecord: what one case measured on one scope item (a line of records.jsonl), its metrics,
// scope and case key, and their JSON (docs/records.md "records.jsonl").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "records/json_io.hpp"
#include "records/schema.hpp"
#include "records/statistics.hpp"

namespace clusterbench {

/// The units clusterbench writes, exactly these ASCII strings (docs/design.md "Units").
/// Returns true when `unit` is one of them.
bool is_known_unit(const std::string& unit);

/// One measured value of a record: name, value, unit, direction, and the repetitions behind it.
struct Metric {
  Metric() = default;
  Metric(std::string name_, double value_, std::string unit_, bool higher_is_better_ = true,
         std::vector<double> reps_ = {}, double resolution_ = 0, double work_ = 0)
      : name(std::move(name_)),
        value(value_),
        unit(std::move(unit_)),
        higher_is_better(higher_is_better_),
        reps(std::move(reps_)),
        resolution(resolution_),
        work(work_) {}
  std::string name;
  double value = 0;
  std::string unit;
  bool higher_is_better = true;
  /// The metric's value in each repetition (measurement-loop sample, fio run), in `unit`; empty
  /// when the metric is one number (a count, an extreme such as the best time). `value` is their
  /// median. `compare` tests a change on them (reports/compare.hpp).
  std::vector<double> reps;
  /// Twice this (in `unit`) is the smallest change of a lower-is-better time that can count as
  /// one (the timer's resolution); 0 when not stated.
  double resolution = 0;
  /// A rate's work per operation, in `unit` x seconds (rate = work / seconds per operation), so
  /// that compare can tell the time per operation behind it; 0 for other metrics.
  double work = 0;
};

/// What a record's scope is: one GPU, one node, one rank (a CPU rank of the burn-in), a link
/// between two nodes, or the whole cluster.
enum class ScopeKind { gpu, node, rank, link, cluster };

/// "gpu", "node", "rank", "link", "cluster": the JSON and text form.
const char* scope_kind_name(ScopeKind k);

/// The kind named `text`; false when it names none.
bool parse_scope_kind(std::string_view text, ScopeKind& out);

struct Scope {
  ScopeKind kind = ScopeKind::node;
  std::string host;
  int rank = -1;
  int gpu_index = -1;
  std::string uuid, pci_bus_id;
  std::vector<std::string> hosts;  ///< link: the two hosts
};

/// Where an error came from (the CHECK macros fill it).
struct ErrorInfo {
  std::string library, code, call, where, host;
  int rank = -1;
};

/// An optional value kept on the heap: one pointer in the object that holds it when absent, for a
/// value that is large and rare (a record's ErrorInfo: 176 bytes inline as a std::optional, in
/// each of a million records of a fleet's run, docs/report.md "Scale"). Copies copy the value.
template <class T>
class HeapOptional {
 public:
  HeapOptional() = default;
  HeapOptional(const HeapOptional& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  HeapOptional(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(const HeapOptional& o) {
    p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  HeapOptional& operator=(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(const T& v) {
    p_ = std::make_unique<T>(v);
    return *this;
  }
  HeapOptional& operator=(const std::optional<T>& v) {
    p_ = v ? std::make_unique<T>(*v) : nullptr;
    return *this;
  }
  /// Whether it holds a value.
  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  /// The value; has_value() must be true.
  const T& operator*() const { return *p_; }
  T& operator*() { return *p_; }
  const T* operator->() const { return p_.get(); }
  T* operator->() { return p_.get(); }

 private:
  std::unique_ptr<T> p_;
};

/// What a case did on its scope item: it measured (ok), it could not run here for a stated reason
/// (waived), or it failed (the message says why).
enum class Status { ok, failed, waived };

/// "ok", "failed", "waived": the JSON and text form.
const char* status_name(Status s);

/// The status named `text`; false when it names none.
bool parse_status(std::string_view text, Status& out);

struct ResultRecord {
  std::string schema = kResultSchema;
  std::string run_id;
  std::string benchmark;
  json params = json::object();
  std::string case_key;
  Status status = Status::ok;
  std::string message;
  HeapOptional<ErrorInfo> error;
  std::vector<Metric> metrics;
  TimeStats time;
  Scope scope;
  std::string combine = "max";  ///< per_rank | max
  std::string started_at;
  double duration_s = 0;
  json extra = json::object();  ///< benchmark-specific evidence
};

/// The item a scope names, used in case keys and evidence: "node01", "node01/gpu3[GPU-uuid]",
/// "node01<->node02", "cluster".
std::string scope_item(const Scope& s);

/// Throws std::runtime_error when a host name of `s` holds a control character (read_records
/// turns it into an InputError naming the line; an EnvRecord's host is checked as it is read).
void check_host_names(const Scope& s);

/// Case key that `compare` matches on: benchmark, canonical params (sorted keys) and scope item.
std::string make_case_key(const std::string& benchmark, const json& params, const Scope& s);

/// JSON conversion (nlohmann ADL hooks): field by field, absent fields keeping their defaults.
void to_json(json& j, const Metric& v);
void from_json(const json& j, Metric& v);
void to_json(json& j, const TimeStats& v);
void from_json(const json& j, TimeStats& v);
void to_json(json& j, const ScopeKind& v);
void from_json(const json& j, ScopeKind& v);
void to_json(json& j, const Status& v);
void from_json(const json& j, Status& v);
void to_json(json& j, const Scope& v);
void from_json(const json& j, Scope& v);
void to_json(json& j, const ErrorInfo& v);
void from_json(const json& j, ErrorInfo& v);
void to_json(json& j, const ResultRecord& v);
void from_json(const json& j, ResultRecord& v);

}  // namespace clusterbench
