// compare() keeps of an unchanged case that the outputs only count its metric closest to
// regressing (CaseChange::reduced), and every metric of the cases it lists: all of them when they
// are few, the ones compare.md shows, and all with --all-cases.
#include <gtest/gtest.h>

#include "reports/compare.hpp"

using namespace clusterbench;
using namespace clusterbench::report;

namespace {

/// A run of `n` node cases, each with metrics "a" (value `a`) and "b", 5 repetitions each.
RunDir run_of(int n, double a) {
  RunDir rd;
  rd.dir = "mem";
  rd.run.run_id = "r";
  for (int i = 0; i < n; ++i) {
    ResultRecord r;
    r.benchmark = "t.case";
    r.params = {{"i", i}};
    r.scope.kind = ScopeKind::node;
    r.scope.host = "n1";
    r.case_key = make_case_key(r.benchmark, r.params, r.scope);
    for (const char* name : {"a", "b"}) {
      const double v = name[0] == 'a' ? a : 10;
      r.metrics.push_back({name, v, "GB/s", true, {v, v, v, v, v}});
    }
    rd.records.records.push_back(std::move(r));
  }
  return rd;
}

size_t reduced(const Comparison& c) {
  size_t n = 0;
  for (const auto& cc : c.cases) n += cc.reduced;
  return n;
}

}  // namespace

TEST(CompareReduce, CountedUnchangedCasesKeepTheirClosestMetric) {
  const RunDir base = run_of(1500, 100), cur = run_of(1500, 99.5);  // -0.5%: unchanged
  const Comparison c = compare(base, cur, {});
  ASSERT_EQ(c.counts.at(kUnchanged), 1500);
  EXPECT_EQ(reduced(c), 1500 - kMarkdownUnchanged);
  for (size_t i = 0; i < c.cases.size(); ++i) {
    const auto& cc = c.cases[i];
    ASSERT_EQ(cc.metrics.size(), i < kMarkdownUnchanged ? 2u : 1u) << i;
    EXPECT_EQ(cc.metrics.back().name, i < kMarkdownUnchanged ? "b" : "a");  // a moved towards worse
    EXPECT_NEAR(cc.metrics.back().change_pct, i < kMarkdownUnchanged ? 0 : -0.5, 1e-9);
  }
  EXPECT_EQ(reduced(compare(base, cur, {}, {}, true)), 0u);  // --all-cases
}

TEST(CompareReduce, FewUnchangedCasesAreListedWhole) {
  // 1,200 cases of which 600 regress: 600 unchanged, all listed, none reduced.
  RunDir base = run_of(1200, 100), cur = run_of(1200, 100);
  for (size_t i = 0; i < 600; ++i)
    for (auto& m : cur.records.records[i].metrics) {
      m.value *= 0.5;
      for (double& x : m.reps) x *= 0.5;
    }
  const Comparison c = compare(base, cur, {});
  EXPECT_EQ(c.counts.at(kRegressed), 600);
  EXPECT_EQ(c.counts.at(kUnchanged), 600);
  EXPECT_EQ(reduced(c), 0u);
  for (const auto& cc : c.cases) EXPECT_EQ(cc.metrics.size(), 2u);
}
