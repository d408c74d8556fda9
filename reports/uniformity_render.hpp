// Uniformity printed (docs/report.md "Uniformity"): report.md's and report.html's sections,
// report.json's "uniformity" and the console lines. It reads the Uniformity check_uniformity made
// (uniformity.hpp) and judges nothing.
#pragma once

#include <cstddef>
#include <string>

#include "reports/uniformity.hpp"

namespace clusterbench::report {

/// "## Uniformity" Markdown section: a table of fields (reference, nodes agreeing, nodes that
/// differ) and a table of deviations (host, field, value, reference, reason).
std::string render_uniformity_markdown(const Uniformity& u);

/// report.json "uniformity": fields[] {name, group, reference, expected, nodes, agreeing,
/// majority, deviations[] {host, value, reason}}, deviations[] {host, field, value, reference,
/// reason}, hosts[].
json uniformity_json(const Uniformity& u);

/// Console lines: "uniformity: N fields identical on M nodes" or one line per deviation (the
/// first `max_lines`, then "... and K more").
std::string render_uniformity_console(const Uniformity& u, size_t max_lines = 20);

/// report.html section `<h2 id="uniformity">` with the same two tables.
std::string render_uniformity_html(const Uniformity& u);

}  // namespace clusterbench::report
