// The fleet view printed (docs/report.md "Fleet"): report.md's section, report.json's "fleet" and
// failing-hosts.txt. It reads the FleetView make_report built (fleet.hpp) and judges nothing.
#pragma once

#include <string>

#include "reports/fleet.hpp"

namespace clusterbench::report {

/// "## Fleet" Markdown section: node table, outlier table, failing hosts.
std::string render_fleet_markdown(const FleetView& fleet);

/// JSON of the fleet view: nodes[], outliers[], localisation[], failing_hosts[] (report.json
/// "fleet").
json fleet_json(const FleetView& fleet);

/// failing-hosts.txt: one host per line, nothing else (empty when none), for draining.
std::string render_failing_hosts(const FleetView& fleet);

/// suspect-hosts.txt: one host per line with a tab and why (outliers, failed records, located
/// slow links) for the hosts with no FAIL row; never for draining (empty when none).
std::string render_suspect_hosts(const FleetView& fv);

}  // namespace clusterbench::report
