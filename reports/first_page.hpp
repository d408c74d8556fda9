// The first page of report.md and report.html: what to fix, what is worth a look, and what could
// not be judged, in words (docs/report.md "First page").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "reports/report.hpp"
#include "reports/text.hpp"

namespace clusterbench::report {

/// One row on the first page with its non-PASS items in words.
struct FirstPageEntry {
  const RowResult* row = nullptr;
  std::vector<std::string> items;  ///< "node07 GPU3 (0000:3a:00.0, serial 1650...): 512 GB/s ..."
  size_t more = 0;                 ///< items left out of `items` (report.json lists them)
};

/// The first page: FAIL rows (fix), WARN rows (look), MISSING rows, and WAIVED rows grouped by
/// their reason (one line per reason, naming the rows).
struct FirstPage {
  std::vector<FirstPageEntry> fix, look, missing;
  std::vector<std::pair<std::string, std::vector<std::string>>> waived;  ///< reason -> row ids
  std::vector<std::string> outliers;  ///< fleet outliers in words (at most 10)
};

/// At most this many items of one row are named on the first page.
inline constexpr size_t kFirstPageItems = 5;

/// An item of a row in words: a node stays "node07"; a GPU item "node07/gpu3[GPU-...]" becomes
/// "node07 GPU3 (0000:3a:00.0, serial 1650...)" from the node's env record (what it lacks is left
/// out); others are unchanged.
std::string item_words(const std::string& item, const RunDir& run);

/// The first page as HTML (a section "What to fix", "Worth a look", "Not judged"), every text
/// escaped.
std::string render_first_page_html(const FirstPage& p);

/// The first page of `r` (rows in table order within each part).
FirstPage first_page(const Report& r);

/// The first page as Markdown: "## What to fix", "## Worth a look", "## Not judged" (parts with
/// nothing are left out; "Nothing to fix" when no row failed).
std::string render_first_page_markdown(const FirstPage& p);

}  // namespace clusterbench::report
