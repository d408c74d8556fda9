// Node x node matrices of link-scope records: what the report shows per link (Report::links).
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::report {

/// One matrix: the `ok` link records of one benchmark, params and metric.
struct LinkMatrix {
  std::string benchmark, metric, unit;
  json params = json::object();
  std::vector<std::string> hosts;           ///< in order of first appearance
  std::vector<std::vector<double>> values;  ///< symmetric; NaN where no record names the pair
};

/// Groups `ok` records of scope kind "link" by (benchmark, params, metric), in record order.
std::vector<LinkMatrix> link_matrices(const std::vector<ResultRecord>& records);

/// "## Links" Markdown section: one node x node table per matrix ("-" on the diagonal and for
/// pairs without a record), values with 3 significant digits; "" when there are no matrices.
std::string render_link_matrices_markdown(const std::vector<LinkMatrix>& matrices);

/// The same over link_matrices(records).
std::string render_link_matrices_markdown(const std::vector<ResultRecord>& records);

}  // namespace clusterbench::report
