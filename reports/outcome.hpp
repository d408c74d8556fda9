// Outcomes of spec rows and their items (docs/design.md "Spec tables"): an enum in code, the same
// words as always in report.json, report.md, junit.xml and on the console.
#pragma once

#include <array>
#include <ostream>
#include <string>
#include <string_view>

namespace clusterbench::report {

/// A row's or item's outcome, worst first: a row takes the worst outcome of its items.
enum class Outcome { kFail, kMissing, kWaived, kWarn, kPass };

/// Shorthands for the five outcomes.
inline constexpr Outcome kFail = Outcome::kFail;
inline constexpr Outcome kMissing = Outcome::kMissing;
inline constexpr Outcome kWaived = Outcome::kWaived;
inline constexpr Outcome kWarn = Outcome::kWarn;
inline constexpr Outcome kPass = Outcome::kPass;

/// The five outcomes in order of badness: FAIL, MISSING, WAIVED, WARN, PASS.
inline constexpr std::array<Outcome, 5> kOutcomeOrder = {kFail, kMissing, kWaived, kWarn, kPass};

/// The outcome's word in every output: "FAIL", "MISSING", "WAIVED", "WARN" or "PASS".
const std::string& to_string(Outcome outcome);

/// Rank in kOutcomeOrder (0 = FAIL, the worst).
inline int outcome_rank(Outcome outcome) { return static_cast<int>(outcome); }

/// Prints the word (test failure messages, console).
inline std::ostream& operator<<(std::ostream& out, Outcome outcome) {
  return out << to_string(outcome);
}

}  // namespace clusterbench::report
