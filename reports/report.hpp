// The verdict over a run, made once (docs/design.md "The verdict is made once"): make_report
// judges a run directory against a spec table (rows, fleet outliers, uniformity, links, soaks,
// health deltas) and decides the exit code; every renderer (render.hpp, html.hpp, charts.hpp,
// prometheus.hpp) reads the Report alone.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "records/records.hpp"
#include "records/spec.hpp"
#include "reports/burnin.hpp"
#include "reports/fleet.hpp"
#include "reports/health.hpp"
#include "reports/links.hpp"
#include "reports/mfu.hpp"
#include "reports/outcome.hpp"
#include "reports/rows.hpp"
#include "reports/uniformity.hpp"

namespace clusterbench::report {

/// Every judgement over a run, and what renderers show beside it.
struct Report {
  /// The run as read (records.jsonl, run.json); renderers show it.
  std::shared_ptr<const RunDir> run;
  std::shared_ptr<const Spec> spec;  ///< the table it was judged against, families included
  std::string run_id;
  std::string spec_name, spec_path, spec_sha256;
  std::vector<RowResult> rows;     ///< in table order (evaluate_rows)
  std::map<Outcome, int> counts;   ///< outcome -> rows; all five keys present
  std::vector<std::string> hosts;  ///< env hosts, then run.json hosts, then record hosts
  /// A truncated records file, an unfinished run, records of another run id, a spec changed
  /// since the run, each refused case, a --time-limit stop.
  std::vector<std::string> warnings;
  /// Cases refused before they ran (records with extra.refused: an unsafe target, a busy
  /// device), "<case key>: <message>".
  std::vector<std::string> refused;
  bool aborted = false;  ///< run.json says so
  std::string abort_reason;
  std::optional<TimeLimitStop> time_limit;  ///< run.json "time_limit": --time-limit stopped it
  FleetView fleet;                          ///< per node, outliers, failing hosts
  Uniformity uniformity;                    ///< the env fields that should agree across nodes
  std::vector<LinkMatrix> links;            ///< node x node matrices of link records
  std::vector<SoakResult> soaks;            ///< every soak record (burn-in), for its charts
  MfuView mfu;  ///< the training steps' model FLOPs utilisation against the table's peaks
  /// Every node's health deltas, in env order, when a row selects a health metric (else empty).
  std::vector<NodeHealth> health;
  int exit_code = 0;  ///< exit_code(*this)
};

/// Judges `run` against `spec`: rows (evaluate_rows), counts, hosts, warnings, refused cases, the
/// fleet view (with the spec's family tolerances), uniformity, link matrices, soaks, health deltas,
/// and last the exit code. The Report shares `run`. Throws InputError (exit 2) as evaluate_rows
/// does.
Report make_report(std::shared_ptr<const RunDir> run, const Spec& spec);

/// The same over a copy of `run`.
Report make_report(const RunDir& run, const Spec& spec);

/// The keys of an ok record's `extra` that the report reads, and those `spec`'s rows
/// select on or quote (a `{/extra/KEY...}` pointer in require, distinct, unmet, describe): what
/// they read a run directory with (read_run_dir's `keep`). Every other key is evidence for a
/// person (fio's own JSON, a link matrix), most of a large run's memory. `spec` nullptr: the
/// reports' own keys and those the shipped tables select on.
ExtraKeys report_extra_keys(const Spec* spec);

/// docs/design.md "Exit codes", precedence 2 > 3 > 1 > 4 > 0, decided here alone: 2 when a case was
/// refused (`refused`); else 3 when the run was aborted; else 1 when any row FAILs; else 4 when a
/// fail-severity row is MISSING or WAIVED, or when --time-limit left planned cases not run
/// (acceptance incomplete); else 0. Exit 2 for bad input is an InputError thrown before a Report
/// exists.
int exit_code(const Report& report);

/// Verdict word for an exit code: 0 PASS, 1 FAIL, 2 REFUSED, 3 ABORTED, 4 INCOMPLETE, else ERROR.
std::string verdict(int exit_code);

/// What the exit code means, one short phrase ("a requirement failed").
std::string exit_code_meaning(int exit_code);

}  // namespace clusterbench::report
