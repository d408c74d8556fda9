// compare's renderers (docs/compare.md "Output"): compare.md, compare.json, compare.junit.xml and
// the console summary. They read the Comparison alone; every verdict was made by compare().
#pragma once

#include <cstddef>
#include <string>

#include "reports/compare/comparison.hpp"

namespace clusterbench::report {

/// compare.md: verdict line, counts, the regressed/improved table (| case | metric | baseline |
/// current | change | spread b/c | tolerance | verdict |), environment changes, then unchanged.
std::string render_compare_markdown(const Comparison& c);

/// compare.json, schema clusterbench.compare/1 (docs/records.md). Beyond kFullDetailUnchanged
/// unchanged cases, "cases" omits the unchanged ones and "unchanged_by_benchmark" [{benchmark,
/// cases, closest: {case_key, item, metric, change_pct}}] counts them; "cases_listed" says
/// "all" or "all but unchanged".
json render_compare_json(const Comparison& c);

/// compare.junit.xml: testsuite "clusterbench.compare", one testcase per case; regressed ->
/// <failure>, not_compared -> <skipped>. Beyond kFullDetailUnchanged unchanged cases, the
/// unchanged ones are one testcase per benchmark ("N unchanged cases").
std::string render_compare_junit(const Comparison& c);

/// Console summary: one line per regressed case, then "COMPARE: REGRESSED (exit 1): ...".
std::string render_compare_console(const Comparison& c);

/// Writes compare.md, compare.json and compare.junit.xml into `dir` (created if absent).
void write_compare(const Comparison& c, const std::string& dir);

}  // namespace clusterbench::report
