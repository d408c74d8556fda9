#!/usr/bin/env bash
# reports/ knows no benchmark (issue 17, "The verdict is made once"): no benchmark id that
# `clusterbench list` prints appears in reports/**/*.cpp (comments included), and no string literal
# there starts with an area prefix ("collectives.", "compute.", "io.", "network.", "burnin.").
# What the reports need to know about a benchmark (outlier tolerance, Prometheus gauges, line
# chart, soak series) lives in the spec tables' families (docs/specs.md "Families"). The check
# finds a planted id and a planted prefix. Budget: < 5 s.
source "$(dirname "$0")/lib.sh"
"$CB_BIN" list >"$TMP/list" 2>&1 || { cat "$TMP/list" >&2; fail "clusterbench list failed"; }
ids=$(grep -oE '^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+' "$TMP/list" | sort -u)
n=$(printf '%s\n' $ids | grep -c .)
[ "$n" -ge 10 ] || fail "expected the benchmark ids of clusterbench list, got: $ids"

# check DIR: prints each hit as FILE:LINE:TEXT; fails (1) when there is one.
check() {
  local hits=0
  local files
  mapfile -t files < <(cd "$1" && find . -name '*.cpp' | sed 's|^\./||' | sort)
  for id in $ids; do
    (cd "$1" && grep -nwF -- "$id" "${files[@]}") && hits=1
  done
  (cd "$1" && grep -nE '"(collectives|compute|io|network|burnin)\.' "${files[@]}") && hits=1
  return $hits
}

expect_rc 0 check "$CB_SOURCE_DIR/reports"
ok "reports/**/*.cpp names none of the $n benchmark ids and no area prefix"

# plant FILE LINE WANT-REGEX: a copy of reports/*.cpp with one line added fails, naming it.
plant() {
  rm -rf "$TMP/r"; mkdir -p "$TMP/r"
  (cd "$CB_SOURCE_DIR/reports" && find . -name '*.cpp' -print0 | xargs -0 cp --parents -t "$TMP/r/")
  printf '%s\n' "$2" >>"$TMP/r/$1"
  expect_rc 1 check "$TMP/r"
  expect_out "$3"
}
plant fleet.cpp 'static double t(const std::string& b) { return b == "compute.gemm" ? 0.05 : 0.1; }' \
  'fleet.cpp:[0-9]+:.*"compute.gemm"'
plant charts.cpp '// io.dataloader is drawn against workers' 'charts.cpp:[0-9]+:// io.dataloader'
plant prometheus.cpp 'const char* kArea = "collectives.";' 'prometheus.cpp:[0-9]+:.*"collectives\."'
plant burnin.cpp 'const char* kSoak = "burnin.soak";' 'burnin.cpp:[0-9]+:.*"burnin\.soak"'
plant compare/judge.cpp '// compute.gemm is judged apart' 'compare/judge.cpp:[0-9]+:// compute.gemm'
ok "a planted benchmark id or area prefix in reports/**/*.cpp is found and named"
