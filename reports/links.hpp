// Node x node matrices of link-scope records, built once per report (Report::links): what the
// report shows per link (links_render.hpp) and what the localisation of slow links reads
// (localize.hpp).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::report {

/// One matrix: the `ok` link records of one benchmark, params and metric.
struct LinkMatrix {
  std::string benchmark, metric, unit;
  json params = json::object();
  std::vector<std::string> hosts;  ///< in order of first appearance
  bool higher_is_better = true;    ///< the metric's (its first record's)
  /// The records' first metric (their headline: bandwidth, latency_p50), not one beside it
  /// (a p99): only headline matrices locate slow links.
  bool headline = false;
  std::vector<std::vector<double>> values;  ///< symmetric; NaN where no record names the pair
  /// Each link's value in its best repetition: the value scaled by median / min time (a rate) or
  /// min / median (a time); NaN where the record has fewer than 2 timed repetitions (its noise is
  /// unknown) or no record names the pair.
  std::vector<std::vector<double>> best;
  /// Each link's value in every repetition (Metric::reps), keyed by host indices (lower first);
  /// links whose records carry none are absent.
  std::map<std::pair<size_t, size_t>, std::vector<double>> reps;
};

/// One link's value between two hosts.
struct LinkValue {
  std::string a, b;
  double value = 0;
};

/// The fleet's typical link: the median over hosts of each host's median link, where a median of
/// an even count takes the better of its two middle values (the higher for `higher_is_better`).
/// k slow hosts among n leave every other host's median normal while k < (n-1)/2, so it stays
/// the healthy value where the median of all links would not (2 slow hosts of 6 are 9 of 15
/// links), and the better middle keeps it healthy where a slow host makes half a host's links
/// slow (4 nodes). On 3 nodes each host has two links, and one slow link would pull two of the
/// three host medians down to half: there it is the median of the 3 links. NaN with fewer than
/// 3 hosts: a median of two says nothing about which is wrong.
double typical_link(const std::vector<LinkValue>& links, bool higher_is_better = true);

/// Groups `ok` records of scope kind "link" by (benchmark, params, metric), in record order.
std::vector<LinkMatrix> link_matrices(const std::vector<ResultRecord>& records);

}  // namespace clusterbench::report
