// Prometheus alerting rules from a spec table's `alerts` (docs/report.md "Alert rules"): the
// thresholds an operator's monitoring (the DCGM exporter, node_exporter) watches between runs,
// taken from the same rows that judge a run, so that a site's table changes both.
#pragma once

#include <string>

#include "records/spec.hpp"

namespace clusterbench::report {

/// The first line of every rules file this writes (an earlier output that --alert-rules may
/// replace starts with it).
inline constexpr const char* kAlertRulesMagic =
    "# Prometheus alerting rules written by clusterbench";

/// The condition of `alert` in PromQL: "(EXPR) OP THRESHOLD", the threshold as the shortest
/// decimal that reads back as it ("85", "100000000000", "0.5").
std::string alert_condition(const SpecAlert& alert);

/// The rules file (YAML, `promtool check rules` format) of `spec`'s alerts: one group named after
/// the table, one rule per alert with its condition, `for`, labels severity and spec_row (the
/// row it takes its threshold from; left out when the threshold is the alert's own) and annotations
/// summary (the title, with the threshold) and description (the source). Every string is a
/// double-quoted scalar; a comment names `version` (clusterbench's), the table, its sha256 and the
/// exporters' fields the rules read. A table with no alerts gives an empty group list.
std::string render_alert_rules(const Spec& spec, const std::string& spec_sha256,
                               const std::string& version);

}  // namespace clusterbench::report
