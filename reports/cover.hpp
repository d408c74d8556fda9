// The cover of the procurement PDF (docs/report.md "PDF"): a page of its own at the top of
// report.html, shown only in print, that says which cluster was measured, when, against which
// spec table (its sha256), by which clusterbench, and the serials of what was delivered.
#pragma once

#include <string>

#include "reports/report.hpp"

namespace clusterbench::report {

/// Nodes the cover lists one by one; beyond, a count (every node is in the Environment section).
inline constexpr size_t kCoverNodes = 64;

/// FAIL rows the cover names; beyond, a count.
inline constexpr size_t kCoverFailedRows = 8;

/// GPU serials a node's cover row lists; beyond, a count.
inline constexpr size_t kCoverGpuSerials = 8;

/// `<section class="cover">`: the verdict; the cluster (nodes, GPUs by model); the run's start and
/// finish, suite and id; the spec table's name, title, path and sha256; the clusterbench version;
/// the FAIL rows (title, failed items, the worst); then per node its system, board and chassis
/// serials (DMI; "unreadable" without root) and its GPUs' serials, up to kCoverNodes nodes. Text is
/// HTML-escaped.
std::string render_cover_html(const Report& report);

}  // namespace clusterbench::report
