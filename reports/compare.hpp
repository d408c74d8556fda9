// Baseline comparison: `clusterbench compare BASELINE CURRENT` (docs/compare.md). Matches the
// records of two run directories case by case and calls each metric regressed, improved or
// unchanged: a change counts only past its tolerance and when a Mann-Whitney U test on the
// two sides' repetitions finds it significant, so that noise is not called a regression.
// The pieces live in reports/compare/: statistics.hpp (the test), tolerance.hpp, judge.hpp (a
// case and its metrics), host_drift.hpp and core_to_core.hpp (changes the host explains),
// env_diff.hpp, comparison.hpp (compare() itself) and render.hpp; this header includes them all.
#pragma once

#include "reports/compare/comparison.hpp"
#include "reports/compare/core_to_core.hpp"
#include "reports/compare/env_diff.hpp"
#include "reports/compare/host_drift.hpp"
#include "reports/compare/judge.hpp"
#include "reports/compare/render.hpp"
#include "reports/compare/statistics.hpp"
#include "reports/compare/tolerance.hpp"
