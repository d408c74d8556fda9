// The report's "Links" section: the node x node matrices make_report built (links.hpp), printed.
#pragma once

#include <string>
#include <vector>

#include "reports/links.hpp"

namespace clusterbench::report {

/// "## Links" Markdown section: one node x node table per matrix ("-" on the diagonal and for
/// pairs without a record), values with 3 significant digits; "" when there are no matrices.
std::string render_link_matrices_markdown(const std::vector<LinkMatrix>& matrices);

}  // namespace clusterbench::report
