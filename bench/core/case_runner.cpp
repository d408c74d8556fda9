// The case runner (case_runner.hpp).
#include "core/case_runner.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>

#include "core/api/error.hpp"
#include "core/api/host_probe.hpp"
#include "core/case_line.hpp"
#include "core/progress.hpp"
#include "core/watchdog.hpp"
#include "records/spec.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

namespace {

using Clock = std::chrono::steady_clock;

/// Test only (docs/compare.md): CLUSTERBENCH_TEST_SLOWDOWN=GLOB=FACTOR[,GLOB=FACTOR...] makes
/// every timed batch of the benchmarks matching a GLOB count as FACTOR times its measured seconds
/// (a scaled clock), as a slower machine would. 1 when unset or for other ids.
double test_slowdown(const std::string& id) {
  const char* v = std::getenv("CLUSTERBENCH_TEST_SLOWDOWN");
  if (!v) return 1;
  std::stringstream list(v);
  std::string entry;
  while (std::getline(list, entry, ',')) {
    auto eq = entry.rfind('=');
    if (eq == std::string::npos || !glob_match(entry.substr(0, eq), id)) continue;
    char* end = nullptr;
    double f = std::strtod(entry.c_str() + eq + 1, &end);
    return end && *end == '\0' && f > 1 && f < 100 ? f : 1;
  }
  return 1;
}

/// `batch(n)`'s seconds times `factor`. No sleep: during one, a pipelined benchmark's workers
/// (the dataloader's) would run ahead and make the next batch faster, so the injected change
/// would be smaller than FACTOR by however much the machine let them.
double slowed_batch(const std::function<double(long long)>& batch, long long n, double factor) {
  auto t0 = Clock::now();
  double t = batch(n);
  if (t < 0) t = std::chrono::duration<double>(Clock::now() - t0).count();
  return t * factor;
}

/// CaseRun of one rank in one case.
class CaseRunImpl : public CaseRun {
 public:
  CaseRunImpl(const Benchmark& b, const RankCase& rc, CaseEnv& ce, const Group& group)
      : bench_(b), rc_(rc), ce_(ce), group_(group) {}
  ~CaseRunImpl() override {
    if (ce_.on_signal && signal_handler_set_) ce_.on_signal(nullptr);
  }

  const json& params() const override { return rc_.params; }
  const Settings& settings() const override { return ce_.settings; }
  const Context& ctx() const override { return ce_.ctx; }
  const EnvRecord& env() const override { return ce_.env; }
  const GpuDisposition& gpu() const override { return ce_.gpu; }
  double min_time() const override { return bench_.min_time(ce_.settings); }
  int group_size() const override { return group_.size(); }
  int rounds() const override { return ce_.rounds; }
  const Scope& scope() const override { return rc_.scope; }

  void exec(const std::function<double(long long)>& batch, const std::string& label,
            const std::function<double(long long)>& paired) override {
    LoopSpec spec;
    spec.name = bench_.id() + "/" + dump_json(rc_.params) + (label.empty() ? "" : "/" + label);
    spec.min_time = min_time();
    spec.combine_max = rc_.level == Level::cluster;
    spec.samples = loop_samples(ce_.settings.loop_samples());
    const Group& g = group_;
    const double slow = test_slowdown(bench_.id());
    auto slowed = [&batch, slow](long long n) { return slowed_batch(batch, n, slow); };
    LoopResult r = measure(
        spec, [&g](std::vector<double>& v) { g.allreduce_max(v); }, ce_.reporter,
        slow > 1 ? std::function<double(long long)>(slowed) : batch, paired);
    if (slow > 1)
      extra_["fault_injection"] = "every batch's time counted " + std::to_string(slow) +
                                  "x (CLUSTERBENCH_TEST_SLOWDOWN, test only)";
    stats_ = r.stats;
    samples_ = std::move(r.samples);
    paired_stats_ = r.paired;
    batch_ = r.batch;
  }
  const TimeStats& stats() const override { return stats_; }
  const TimeStats& paired_stats() const override { return paired_stats_; }
  const std::vector<double>& samples() const override { return samples_; }
  void add(Metric m) override { metrics_.push_back(std::move(m)); }
  void set_extra(const std::string& key, json value) override { extra_[key] = std::move(value); }
  /// The evidence set so far, for the record of a case that failed (its metrics are not kept:
  /// a failed record is judged by its status, never by a number it half measured).
  json take_extra() { return std::exchange(extra_, json::object()); }
  void add_record(const Scope& scope, std::vector<Metric> metrics, const TimeStats& time,
                  json extra) override {
    ResultRecord r;
    r.scope = scope;
    r.metrics = std::move(metrics);
    r.time = time;
    r.extra = std::move(extra);
    more_.push_back(std::move(r));
  }
  void finish_as(Status status, const std::string& message,
                 const std::optional<ErrorInfo>& error) override {
    final_status_ = status;
    final_message_ = message;
    final_error_ = error;
  }
  void append_snapshot(ResultRecord rec) override {
    if (!ce_.append) return;
    rec.run_id = ce_.run_id;
    rec.benchmark = bench_.id();
    rec.case_key = make_case_key(rec.benchmark, rec.params, rec.scope);
    rec.extra["snapshot"] = true;  // replaced by a later record of its case (records.md)
    ce_.append(rec);
  }
  void on_signal(std::function<std::optional<std::string>(const std::string&)> handler) override {
    if (!ce_.on_signal) return;
    signal_handler_set_ = static_cast<bool>(handler);
    ce_.on_signal(std::move(handler));
  }
  void mark_aborted(const std::string& reason) override {
    if (ce_.mark_aborted) ce_.mark_aborted(reason);
  }
  int signal_received() const override { return Watchdog::signal_received(); }
  void print_table(const std::string& text, bool open) override {
    console_table(text, open);
    table_printed_ = true;
  }
  void print_progress(const std::string& text) override { console_progress(text); }
  void note_progress(const std::string& text) override { progress_note(text); }
  std::unique_ptr<AbortCleanup> on_abort(std::function<void()> undo) override {
    return std::make_unique<AbortCleanup>(std::move(undo));
  }
  /// Whether the case printed its own table (print_table).
  bool table_printed() const { return table_printed_; }

  /// Moves what the benchmark measured into `rec` (a benchmark that ended normally).
  void fill(ResultRecord& rec) {
    for (const auto& m : metrics_) {
      bool finite = std::isfinite(m.value);
      for (double r : m.reps) finite = finite && std::isfinite(r);
      if (!finite)
        throw std::runtime_error("metric '" + m.name + "' is not a finite number (" +
                                 std::to_string(m.value) + ")");
    }
    rec.time = stats_;
    rec.metrics = std::move(metrics_);
    rec.extra = std::move(extra_);
    if (batch_ > 0) rec.extra["batch"] = batch_;
    if (final_status_) {
      rec.status = *final_status_;
      rec.message = final_message_;
      rec.error = final_error_;
    }
  }
  std::vector<ResultRecord> more_;  ///< add_record's, completed by the caller

 private:
  const Benchmark& bench_;
  const RankCase& rc_;
  CaseEnv& ce_;
  const Group& group_;
  std::vector<Metric> metrics_;
  json extra_ = json::object();
  long long batch_ = 0;
  TimeStats stats_, paired_stats_;
  std::vector<double> samples_;
  std::optional<Status> final_status_;
  std::string final_message_;
  std::optional<ErrorInfo> final_error_;
  bool signal_handler_set_ = false;
  bool table_printed_ = false;
};

/// Whether this rank runs the case, and if not why: ok, or waived/failed with `reason`.
Status disposition(const Benchmark& b, const RankCase& rc, const CaseEnv& ce, std::string& reason) {
  if (!rc.in_domain) return Status::ok;
  if (b.case_needs_gpu(rc.params) && !ce.gpu.runs()) {
    reason = ce.gpu.reason;
    return ce.gpu.state == GpuState::waived ? Status::waived : Status::failed;
  }
  NodeEnv node{ce.env, ce.gpu, ce.ctx, ce.settings};
  try {
    reason = b.applicable(node);
    if (reason.empty()) reason = b.case_waiver(rc.params, node);
  } catch (const std::exception& e) {
    reason = std::string("applicability check failed: ") + e.what();
    return Status::failed;
  }
  return reason.empty() ? Status::ok : Status::waived;
}

/// Runs the benchmark on a member rank, turning what it throws into `rec`'s status.
void run_member(const Benchmark& b, CaseRunImpl& run, ResultRecord& rec, CaseResult& out,
                CaseEnv& ce) {
  try {
    b.run(run);
    run.fill(rec);
  } catch (const Refused& w) {
    rec.status = Status::waived, rec.message = w.what();
    rec.extra["refused"] = true;
    out.refused = true;
  } catch (const Waived& w) {
    rec.status = Status::waived, rec.message = w.what();
  } catch (const CallError& e) {
    rec.status = Status::failed, rec.message = e.what();
    rec.error = e.info();
    rec.extra = run.take_extra();  // the evidence so far: what it ran, on what, what it saw
  } catch (const AbortRun& e) {
    std::cerr << "clusterbench: " << ce.ctx.host() << " rank " << ce.ctx.world_rank()
              << ": aborting the run: " << e.what() << std::endl;
    if (ce.abort_run) ce.abort_run(e.what());
    run_abort_cleanups();
    ce.ctx.abort(3);
  } catch (const std::exception& e) {
    rec.status = Status::failed, rec.message = e.what();
    rec.extra = run.take_extra();
    ErrorInfo info;
    info.host = ce.ctx.host();
    info.rank = ce.ctx.world_rank();
    rec.error = info;
  }
}

/// The records of a rank: its record, then a cluster case's add_record records.
std::vector<ResultRecord> case_records(const Benchmark& b, const RankCase& rc, ResultRecord rec,
                                       std::vector<ResultRecord>& more, const CaseEnv& ce) {
  if (!rc.in_domain) return {};
  if (rc.level == Level::cluster && ce.ctx.world_rank() != 0 && rec.status == Status::ok) return {};
  std::vector<ResultRecord> out;
  const bool links = rec.status == Status::ok && rc.level == Level::cluster;
  if (links)
    for (auto& m : more) {
      m.run_id = rec.run_id, m.benchmark = rec.benchmark, m.params = rec.params;
      m.combine = rec.combine, m.status = Status::ok, m.started_at = rec.started_at;
      m.duration_s = rec.duration_s;
      m.case_key = make_case_key(b.id(), rec.params, m.scope);
    }
  out.push_back(std::move(rec));
  if (links)
    for (auto& m : more) out.push_back(std::move(m));
  return out;
}

}  // namespace

Scope scope_for(Level level, int world_rank, int local_rank, const std::string& host,
                const EnvRecord& env) {
  Scope s;
  s.host = host;
  switch (level) {
    case Level::node:
      s.kind = ScopeKind::node;
      break;
    case Level::gpu:
      s.kind = ScopeKind::gpu;
      s.rank = world_rank;
      s.gpu_index = local_rank;
      if (local_rank < static_cast<int>(env.gpus.size())) {
        s.uuid = env.gpus[static_cast<size_t>(local_rank)].uuid;
        s.pci_bus_id = env.gpus[static_cast<size_t>(local_rank)].pci_bus_id;
      }
      break;
    case Level::rank:
      s.kind = ScopeKind::rank;
      s.rank = world_rank;
      break;
    case Level::cluster:
      s.kind = ScopeKind::cluster;
      s.host.clear();
      break;
  }
  return s;
}

RankCase place_case(const Benchmark& b, const json& planned, const CaseEnv& ce) {
  RankCase rc;
  rc.params = b.params_on(planned, ce.env, ce.settings);
  rc.level = b.case_level(rc.params);
  rc.in_domain = rc.level != Level::node || ce.ctx.is_leader();
  rc.scope = scope_for(rc.level, ce.ctx.world_rank(), ce.ctx.local_rank(), ce.ctx.host(), ce.env);
  return rc;
}

namespace {
/// The core-to-core probe (host_probe.hpp) before or after a case: the node's local rank 0
/// measures (about 1 ms) while its other ranks sleep, so that no rank's work shares the probe's
/// cores. -1 on the other ranks, or when not measured.
double c2c_turn(const Context& ctx) {
  if (ctx.local_rank() == 0) return core_to_core_ns(0.001);
  std::this_thread::sleep_for(std::chrono::microseconds(2500));
  return -1;
}

/// The CPU share a case's record carries: this rank's, or on a cluster case the least of its
/// ranks' (a reduction over the case's group, which every member reaches after the case). An
/// operation waits on its slowest rank, so one rank that shared its core with other work slows
/// every rank, and rank 0's own share (what the record had carried) cannot show it
/// (docs/compare.md "Host drift").
double least_share(Level level, const Group& group, double share) {
  if (level != Level::cluster) return share;
  std::vector<double> v{-share};
  group.allreduce_max(v);
  return -v[0];
}

/// [before, after] in ns, null where not measured.
json c2c_pair(double before, double after) {
  json out = json::array();
  for (double v : {before, after}) out.push_back(v > 0 ? json(std::round(v * 10) / 10) : json());
  return out;
}
}  // namespace

CaseResult run_case(const Benchmark& b, const json& planned, CaseEnv& ce) {
  const RankCase rc = place_case(b, planned, ce);
  ResultRecord rec;
  rec.run_id = ce.run_id;
  rec.benchmark = b.id();
  rec.params = rc.params;
  rec.scope = rc.scope;
  rec.combine = rc.level == Level::cluster ? "max" : "per_rank";
  rec.case_key = make_case_key(b.id(), rc.params, rec.scope);
  rec.started_at = utc_now_iso();

  std::string reason;
  Status status = disposition(b, rc, ce, reason);
  if (rc.level == Level::cluster) {  // a cluster case runs on every rank or on none
    long long skipping = ce.ctx.allreduce_sum(rc.in_domain && status != Status::ok ? 1 : 0);
    if (skipping > 0 && status == Status::ok)
      status = Status::waived, reason = "not applicable on another rank (its record says why)";
  }
  const bool member = rc.in_domain && status == Status::ok;
  auto group = ce.ctx.split(member);
  const auto t0 = Clock::now();
  rec.status = status;
  rec.message = reason;
  CaseResult out;
  std::vector<ResultRecord> more;
  if (member) {
    const double c2c_before = c2c_turn(ce.ctx);
    json probe = host_probe();  // the host's own speed, for compare (host_probe.hpp)
    const CpuUse use = cpu_use_now();
    CaseRunImpl run(b, rc, ce, *group);
    run_member(b, run, rec, out, ce);
    more = std::move(run.more_);
    out.table_printed = run.table_printed();
    probe["cpu_share"] = least_share(rc.level, *group, cpu_share(use, cpu_use_now()));
    if (ce.ctx.local_rank() == 0) probe["c2c_ns"] = c2c_pair(c2c_before, c2c_turn(ce.ctx));
    if (rec.status == Status::ok) rec.extra["host_probe"] = probe;
  }
  rec.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (b.case_needs_gpu(rc.params) && !ce.shared_gpus.empty())
    rec.extra["shared_gpus"] = {{"allowed", "--allow-shared-gpus"}, {"processes", ce.shared_gpus}};
  out.records = case_records(b, rc, std::move(rec), more, ce);
  return out;
}

std::string records_text(const std::vector<ResultRecord>& records) {
  std::string out;  // JSON text holds no raw newline: one record per line
  for (const auto& r : records) out += (out.empty() ? "" : "\n") + dump_json(json(r));
  return out;
}

namespace {

/// The records of one rank's records_text (`text`); a line that is no record is said on stderr.
std::vector<ResultRecord> read_records_text(const std::string& text, size_t rank) {
  std::vector<ResultRecord> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t nl = std::min(text.find('\n', pos), text.size());
    try {
      if (nl > pos) out.push_back(json::parse(text.substr(pos, nl - pos)).get<ResultRecord>());
    } catch (const std::exception& e) {
      std::cerr << ("clusterbench: a record from rank " + std::to_string(rank) +
                    " could not be read (" + e.what() + "); left out\n")
                << std::flush;
    }
    pos = nl + 1;
  }
  return out;
}

}  // namespace

std::vector<ResultRecord> records_to_write(Level level, std::vector<ResultRecord> mine,
                                           const std::vector<std::string>& gathered) {
  std::vector<std::vector<ResultRecord>> by_rank(std::max<size_t>(gathered.size(), 1));
  by_rank[0] = std::move(mine);
  for (size_t r = 1; r < gathered.size(); ++r) by_rank[r] = read_records_text(gathered[r], r);
  std::vector<ResultRecord> out;
  if (level != Level::cluster) {
    for (auto& recs : by_rank)
      for (auto& rec : recs) out.push_back(std::move(rec));
    return out;
  }
  // One record for the cluster: the first failed/waived rank's, else rank 0's.
  for (auto& recs : by_rank)
    if (!recs.empty() && recs.front().status != Status::ok) {
      recs.front().scope = Scope{};
      recs.front().scope.kind = ScopeKind::cluster;
      return {std::move(recs.front())};
    }
  return std::move(by_rank[0]);
}

std::vector<ExpectedCase> expected_cases(const Benchmark& b, const json& planned, const Settings& s,
                                         const Context& ctx, const std::vector<EnvRecord>& envs) {
  std::vector<ExpectedCase> out;
  std::map<std::string, int> local;  // next local rank per host
  std::vector<std::string> seen_hosts;
  const EnvRecord none;
  for (int r = 0; r < ctx.world_size(); ++r) {
    const std::string& host = ctx.rank_hosts()[static_cast<size_t>(r)];
    const int local_rank = local[host]++;
    const EnvRecord* env = &none;
    for (const auto& e : envs)
      if (e.host == host) env = &e;
    json params = b.params_on(planned, *env, s);
    Level level = b.case_level(params);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const ExpectedCase& e) { return e.params == params; });
    if (it == out.end()) it = out.insert(out.end(), {params, level, {}});
    if (level == Level::cluster) {
      if (it->scopes.empty()) it->scopes.push_back(scope_for(level, r, local_rank, host, *env));
      continue;
    }
    if (level == Level::node && local_rank != 0) continue;
    it->scopes.push_back(scope_for(level, r, local_rank, host, *env));
  }
  return out;
}

}  // namespace clusterbench
