// Fleet view of a multi-node run (docs/report.md "Fleet"): one row per node with its pass/fail
// counts, fleet outliers (GPUs and nodes more than a tolerance worse than the fleet median, even
// when they pass the spec), the located slow links, and the lists of failing hosts (to drain)
// and suspect hosts (to look at). The outlier mechanism is generic over scope kinds gpu, node and
// link; the report answers links by their localisation.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "records/records.hpp"
#include "records/spec.hpp"
#include "reports/compare/tolerance.hpp"
#include "reports/localize.hpp"
#include "reports/rows.hpp"

namespace clusterbench::report {

/// One item more than `tolerance` worse than the median of its group.
struct Outlier {
  std::string benchmark;
  json params = json::object();
  std::string metric, unit;
  bool higher_is_better = true;
  std::string kind;  ///< gpu | node | link
  std::string item;  ///< scope item: "node02/gpu3[GPU-...]", "node02", "node01<->node02"
  std::string host;  ///< the host (the first host of a link)
  std::vector<std::string> hosts;  ///< link: both hosts
  int gpu_index = -1;
  std::string uuid, pci_bus_id;  ///< from the record's scope, else from the host's EnvRecord
  double value = 0, median = 0;
  double deviation = 0;  ///< (value - median) / median; negative = below the median
  double tolerance = 0;  ///< fraction
  int fleet_size = 0;    ///< items in the group
  double p_value = -1;   ///< U test of its repetitions against the fleet's; -1: not tested
  std::string case_key;
};

/// Benchmark -> the metrics its spec rows judge (its headline metrics).
using HeadlineMetrics = std::map<std::string, std::set<std::string>>;

/// The metrics `rows` judge, per benchmark (Select::benchmark and Select::metric).
HeadlineMetrics headline_metrics(const std::vector<RowResult>& rows);

/// Finds outliers among `records`. Groups are (benchmark, params, metric, scope kind) over `ok`
/// records of scope gpu, node or link, for each benchmark's headline metrics only: those
/// `headline` lists for it, else the record's first metric (never a best-of number or a p50 wait
/// beside it). A group needs at least `min_items` (default 3) distinct items, since a median of
/// two says nothing about which is wrong. An item is an outlier when value < median * (1 - tol)
/// for higher-is-better metrics, value > median * (1 + tol) otherwise, and, where it and the
/// fleet have repetitions (kMinReps or more), its repetitions differ from the rest of the
/// fleet's with significance (two-sided Mann-Whitney U, p < kAlpha, as compare's test). tol: the
/// last `rules` entry matching the benchmark (glob, or glob:metric), else the last matching the
/// unit, else the spec's family (`families`, SpecFamily::outlier_tolerance, reports/families.hpp),
/// else kDefaultOutlierTolerance (0.10). `env` fills UUID and PCI bus id where a record's scope
/// lacks them. Sorted by benchmark, params, metric, then worst deviation first. `records` hold one
/// record per case key, as a RunDir's do.
std::vector<Outlier> find_outliers(const std::vector<ResultRecord>& records,
                                   const std::vector<EnvRecord>& env,
                                   const std::vector<SpecFamily>& families = {},
                                   const std::vector<ToleranceRule>& rules = {}, int min_items = 3,
                                   const HeadlineMetrics& headline = {});

/// One row per node.
struct FleetNode {
  std::string host;
  std::map<Outcome, int> items;  ///< spec outcome -> items on this host (all five keys)
  int records_ok = 0, records_failed = 0, records_waived = 0;
  int outliers = 0;                     ///< gpu and node outliers on this host
  std::vector<std::string> reasons;     ///< why it is drained (its FAIL rows); empty when it is not
  std::vector<std::string> suspicions;  ///< failed records, outliers, located slow links
};

struct FleetView {
  std::vector<FleetNode> nodes;            ///< in report host order
  std::vector<Outlier> outliers;           ///< gpu and node outliers
  std::vector<Located> located;            ///< the slow links and their faults (localize.hpp)
  std::vector<std::string> failing_hosts;  ///< hosts with reasons (a FAIL row), in node order
  std::vector<std::string> suspect_hosts;  ///< hosts with suspicions and no FAIL row, in node order
};

/// Builds the fleet view (make_report computes it once: Report::fleet). Nodes: `hosts`, then
/// hosts seen only in records. A host is failing (to be drained) only when one of its items FAILs
/// in `rows` (an item "host/..." or "host", or either end of a link "a<->b", except that a link
/// whose localisation blames one end, a node or a NIC, fails that end only): a FAIL outcome is a
/// fail-severity row's. A host with no FAIL item is suspect when it has a `failed` record, a gpu
/// or node outlier (find_outliers with `families` and `rules`), or when its links locate a fault
/// in it (a node or a NIC: locate_link_faults over `links`, the report's link matrices): worth a
/// look, never a drain. Slow links are answered once, by the localisation (FleetView::located):
/// link outliers are not in FleetView::outliers, and a slow link alone marks no host (which end
/// is at fault needs more than one link).
FleetView fleet_view(const RunDir& run, const std::vector<RowResult>& rows,
                     const std::vector<std::string>& hosts, const std::vector<LinkMatrix>& links,
                     const std::vector<SpecFamily>& families,
                     const std::vector<ToleranceRule>& rules = {});

}  // namespace clusterbench::report
