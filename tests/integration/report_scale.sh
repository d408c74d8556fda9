#!/usr/bin/env bash
# report and compare on a 100-node x 8-GPU set written as a real run of the `full` plan writes it
# (reports/gen_scale_set.sh; issue 42): peak RSS per record stays within a bound (the measurement
# of 2026-12-07, after run.json and the records were read leaner, with 50% headroom: report 3.9
# KiB, compare 3.12 KiB per record of each side), and
# compare finds exactly the regressions the current run carries (8 slow GPUs in every GEMM case,
# one link at half its bandwidth, the driver change) and calls nothing else regressed. Wall time
# is a benchmark (reports/bench_report_scale.sh), not asserted. Budget: about 40 s.
source "$(dirname "$0")/lib.sh"
: "${CB_BIN:?}" "${CB_SOURCE_DIR:?}"
[ -x /usr/bin/time ] || fail "/usr/bin/time missing (scripts/setup.sh installs it)"
CB_BIN="$CB_BIN" "$CB_SOURCE_DIR/reports/gen_scale_set.sh" "$TMP/set" 100 8 >"$TMP/out" 2>&1 ||
  { cat "$TMP/out" >&2; fail "could not write the scale set"; }
records=$(cat "$TMP/set/records")
[ "$records" -gt 90000 ] || fail "the set has $records records per run, expected about 98,600"

# Peak RSS in KiB of a command (its exit code in $TMP/rc).
peak_kib() {
  /usr/bin/time -v "$@" >"$TMP/cmd.out" 2>"$TMP/time"
  echo $? >"$TMP/rc"
  awk -F': ' '/Maximum resident set size/ {print $2}' "$TMP/time"
}
report_kib=$(peak_kib "$CB_BIN" report "$TMP/set/current")
[ "$(cat "$TMP/rc")" -le 1 ] || { cat "$TMP/cmd.out" >&2; fail "report exited $(cat "$TMP/rc")"; }
[ -s "$TMP/set/current/report.json" ] || fail "no report.json"
compare_kib=$(peak_kib "$CB_BIN" compare "$TMP/set/baseline" "$TMP/set/current" --out "$TMP/cmp")
[ "$(cat "$TMP/rc")" -eq 1 ] || { cat "$TMP/cmd.out" >&2; fail "compare exited $(cat "$TMP/rc"), expected 1 (regressed)"; }
per() { awk -v k="$1" -v n="$2" 'BEGIN { printf "%.2f", k / n }'; }
report_per=$(per "$report_kib" "$records")
compare_per=$(per "$compare_kib" $((2 * records)))
echo "report: $report_kib KiB peak, $report_per KiB per record; compare: $compare_kib KiB, $compare_per KiB per record"
awk -v p="$report_per" 'BEGIN { exit !(p <= 3.9 * 1.5) }' ||
  fail "report's peak RSS per record grew to $report_per KiB (bound 5.85 KiB)"
ok "report's peak RSS is $report_per KiB per record (bound 5.85)"
awk -v p="$compare_per" 'BEGIN { exit !(p <= 3.12 * 1.5) }' ||
  fail "compare's peak RSS per record grew to $compare_per KiB (bound 4.68 KiB)"
ok "compare's peak RSS is $compare_per KiB per record of each side (bound 4.68)"
python3 "$CB_SOURCE_DIR/reports/check_scale_compare.py" "$TMP/set/truth.json" "$TMP/cmp/compare.json" \
  "$TMP/set/current/run.json" >"$TMP/check" || { cat "$TMP/check" >&2; fail "compare missed or invented a regression"; }
cat "$TMP/check"
grep -q "^regressions: EXACT" "$TMP/check" || fail "the check did not say EXACT"
ok "compare found exactly the injected regressions and nothing else"
echo "$PASSES passed, 0 failed"
