// The case runner: one planned case on this rank (docs/design.md "The benchmark interface").
// It decides whether the rank takes part (level, GPU disposition, applicability, agreed across
// ranks), runs the benchmark in the group of ranks that do, turns what it threw into the record's
// status, and returns the records this rank contributes; rank 0 picks the records to write
// (records_to_write). The run session (core/session.hpp) drives it case by case.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/api/benchmark.hpp"
#include "core/measure.hpp"

namespace clusterbench {

/// What every case of a run shares on this rank; the session owns it.
struct CaseEnv {
  const Context& ctx;
  const Settings& settings;
  const EnvRecord& env;       ///< this node's EnvRecord
  const GpuDisposition& gpu;  ///< this rank's
  std::string run_id;
  GbenchCollector& reporter;
  /// --allow-shared-gpus: other processes on this node's GPUs, written into GPU cases' records.
  json shared_gpus = json::array();
  /// Session services (empty in a unit test that needs none).
  /// World rank 0: appends a record now (a long case's snapshot). Thread-safe.
  std::function<void(const ResultRecord&)> append;
  /// World rank 0: marks run.json aborted (exit 3) with `reason`, the run going on in order.
  std::function<void(const std::string& reason)> mark_aborted;
  /// Installs (or, with an empty function, removes) the case's signal handler (CaseRun::on_signal).
  std::function<void(std::function<std::optional<std::string>(const std::string&)>)> on_signal;
  /// A benchmark threw AbortRun: record it, run the cleanups and end the process (exit 3).
  std::function<void(const std::string& reason)> abort_run;
  /// The rounds the case is spread over (CaseRun::rounds), 1 when it runs once.
  int rounds = 1;
};

/// One case as it runs on one rank: its params there (Benchmark::params_on), level and scope.
struct RankCase {
  json params;
  Level level = Level::node;
  bool in_domain = false;  ///< node cases: leaders only; other levels: every rank
  Scope scope;
};

/// The scope of a rank's record for a level: node (host), gpu (host, rank, local GPU index with
/// its UUID and bus id from `env`), rank (host, rank) or cluster.
Scope scope_for(Level level, int world_rank, int local_rank, const std::string& host,
                const EnvRecord& env);

/// This rank's view of planned case `planned` of `b`.
RankCase place_case(const Benchmark& b, const json& planned, const CaseEnv& ce);

/// What this rank contributes to a case: its records (none when it is not in the case's domain,
/// or a cluster case's non-root member whose record rank 0 writes).
struct CaseResult {
  std::vector<ResultRecord> records;
  bool refused = false;  ///< a Refused was thrown: the run exits 2
  /// The case printed its own table (CaseRun::print_table): its ok records get no console line.
  bool table_printed = false;
};

/// Runs planned case `planned` of `b` on this rank (a collective over the world: every rank calls
/// it, in the same case order). Never throws for the benchmark's errors: they become the record's
/// status (waived, failed) and message; AbortRun ends the run through `ce.abort_run`.
CaseResult run_case(const Benchmark& b, const json& planned, CaseEnv& ce);

/// Records as they cross ranks (Context::gather): one JSON line each.
std::string records_text(const std::vector<ResultRecord>& records);

/// Rank 0: the records to write for a case: its own (`mine`) and those every other rank sent
/// (`gathered`, by rank, records_text's lines; rank 0's own entry is not read). A cluster case has
/// one record (the first failed or waived rank's, scope cluster, else rank 0's with its added
/// link records). A line that is no record is left out, said on stderr (its case is then MISSING).
std::vector<ResultRecord> records_to_write(Level level, std::vector<ResultRecord> mine,
                                           const std::vector<std::string>& gathered);

/// A planned case as the whole job runs it: one entry per distinct params_on() result, with the
/// scopes of the records it is expected to produce.
struct ExpectedCase {
  json params;
  Level level = Level::node;
  std::vector<Scope> scopes;
};

/// The expected records of planned case `planned` of `b` over the job: every rank's params
/// (params_on with its node's EnvRecord, found by host in `envs`) and scope.
std::vector<ExpectedCase> expected_cases(const Benchmark& b, const json& planned, const Settings& s,
                                         const Context& ctx, const std::vector<EnvRecord>& envs);

}  // namespace clusterbench
