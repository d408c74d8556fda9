#!/usr/bin/env bash
# Scale benchmark of `clusterbench report` and `clusterbench compare` (docs/report.md "Scale"): a
# result set of NODES x GPUS (default 1,000 x 8) as a real run of the `full` plan writes it
# (reports/gen_scale_set.sh), timed with /usr/bin/time -v. Not a test: it prints the numbers, each
# against its goal (report <= 3 s and 1.5 GiB, compare <= 3 s and 2 GiB, compare.json <= 64 MB),
# and whether compare found exactly the regressions the current run carries.
#
#   reports/bench_report_scale.sh [NODES] [GPUS]      CB_BIN=build-rep/clusterbench (default build/)
set -uo pipefail
cd "$(dirname "$0")/.."
NODES=${1:-1000}
GPUS=${2:-8}
export CB_BIN=${CB_BIN:-build/clusterbench}
[ -x /usr/bin/time ] || { echo "bench_report_scale: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
W=$(mktemp -d /tmp/cb-scale.XXXXXX)
trap 'rm -rf "$W"' EXIT
reports/gen_scale_set.sh "$W" "$NODES" "$GPUS" || exit 1
# The generator's gigabytes still being written back would be timed with the commands: flush.
sync

# /usr/bin/time -v: wall clock, CPU and peak resident memory of one command, against its goals.
measure() {
  local label=$1 max_s=$2 max_mib=$3; shift 3
  /usr/bin/time -v "$@" >"$W/$label.out" 2>"$W/$label.time"
  local rc=$?
  local wall rss cpu
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0;
    for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$W/$label.time")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$W/$label.time")
  # CPU seconds too: on a shared machine the wall clock mostly measures the other processes.
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.1f", s}' "$W/$label.time")
  local verdict=MET
  awk -v w="$wall" -v r="$rss" -v mw="$max_s" -v mr="$max_mib" 'BEGIN { exit !(w <= mw && r <= mr) }' ||
    verdict=MISSED
  printf '%-8s %6.2f s wall, %s s CPU  peak RSS %5s MiB  exit %d  goal <= %s s, <= %s MiB: %s\n' \
    "$label" "$wall" "$cpu" "$rss" "$rc" "$max_s" "$max_mib" "$verdict"
}

printf 'set: %d nodes x %d GPUs, %d records per run (%d lines); records.jsonl %d bytes, run.json %d bytes\n' \
  "$NODES" "$GPUS" "$(cat "$W/records")" "$(wc -l <"$W/current/records.jsonl")" \
  "$(stat -c %s "$W/current/records.jsonl")" "$(stat -c %s "$W/current/run.json")"
measure report 3 1536 "$CB_BIN" report "$W/current"
measure compare 3 2048 "$CB_BIN" compare "$W/baseline" "$W/current" --out "$W/cmp"
printf 'report.html %d bytes, report.json %d bytes, compare.json %d bytes (goal <= 64 MB)\n' \
  "$(stat -c %s "$W/current/report.html")" "$(stat -c %s "$W/current/report.json")" \
  "$(stat -c %s "$W/cmp/compare.json")"
grep -m1 '^VERDICT' "$W/report.out"
grep -m1 '^COMPARE' "$W/compare.out"
python3 reports/check_scale_compare.py "$W/truth.json" "$W/cmp/compare.json" "$W/current/run.json"
