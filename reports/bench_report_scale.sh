#!/usr/bin/env bash
# Scale benchmark of `clusterbench report` and `clusterbench compare` (docs/report.md "Scale"):
# a synthetic result set of NODES x GPUS (default 1,000 x 8) with the record count of the `full`
# plan, timed with /usr/bin/time -v. Not a test: it prints the numbers and whether each command
# finished under the 10 s goal.
#
#   reports/bench_report_scale.sh [NODES] [GPUS]      CB_BIN=build-rep/clusterbench (default build/)
#
# The plan is the real one: `clusterbench run --suite full` is started and stopped (SIGTERM) as
# soon as it has written run.json, whose plan lists every case with its level.
set -uo pipefail
cd "$(dirname "$0")/.."
NODES=${1:-1000}
GPUS=${2:-8}
CB_BIN=${CB_BIN:-build/clusterbench}
SPEC=${SPEC:-reports/specs/h100-sxm-80g-8x.json}
[ -x "$CB_BIN" ] || { echo "bench_report_scale: $CB_BIN is not built (set CB_BIN)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_report_scale: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
W=$(mktemp -d /tmp/cb-scale.XXXXXX)
trap 'rm -rf "$W"' EXIT

# The full plan: wait for run.json, then stop the run we started.
"$CB_BIN" run --suite full --out "$W/plan" >"$W/plan.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -s "$W/plan/run.json" ] && break; sleep 0.1; done
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ -s "$W/plan/run.json" ] || { cat "$W/plan.log" >&2; echo "no run.json from the full plan" >&2; exit 1; }
"$CB_BIN" inventory >"$W/env.json" || exit 1

gen() {
  python3 reports/gen_scale_results.py --plan "$W/plan/run.json" --env "$W/env.json" \
    --spec "$SPEC" --nodes "$NODES" --gpus "$GPUS" --variant "$1" --out "$W/$1"
}
records=$(gen baseline) && gen current >/dev/null || exit 1
# The generator's 1.6 GB still being written back would be timed with the commands: flush it.
sync

# /usr/bin/time -v: wall clock and peak resident memory of one command.
measure() {
  local label=$1; shift
  /usr/bin/time -v "$@" >"$W/$label.out" 2>"$W/$label.time"
  local rc=$?
  local wall rss cpu
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0;
    for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$W/$label.time")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$W/$label.time")
  # CPU seconds too: on a shared machine the wall clock mostly measures the other processes.
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.1f", s}' "$W/$label.time")
  local verdict=MET
  awk -v w="$wall" 'BEGIN { exit !(w < 10) }' || verdict=MISSED
  printf '%-8s %6.2f s wall, %s s CPU  peak RSS %5s MiB  exit %d  goal < 10 s: %s\n' "$label" \
    "$wall" "$cpu" "$rss" "$rc" "$verdict"
}

lines=$(wc -l <"$W/current/records.jsonl")
printf 'synthetic set: %d nodes x %d GPUs, %d planned cases of the full suite\n' "$NODES" "$GPUS" \
  "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["plan"]))' "$W/plan/run.json")"
printf 'records: %d per run (%d lines); records.jsonl %d bytes, run.json %d bytes\n' "$records" \
  "$lines" "$(stat -c %s "$W/current/records.jsonl")" "$(stat -c %s "$W/current/run.json")"
measure report "$CB_BIN" report "$W/current"
measure compare "$CB_BIN" compare "$W/baseline" "$W/current" --out "$W/cmp"
printf 'report.html %d bytes, report.json %d bytes, compare.json %d bytes\n' \
  "$(stat -c %s "$W/current/report.html")" "$(stat -c %s "$W/current/report.json")" \
  "$(stat -c %s "$W/cmp/compare.json")"
grep -m1 '^VERDICT' "$W/report.out"
grep -m1 '^COMPARE' "$W/compare.out"
