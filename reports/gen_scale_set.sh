#!/usr/bin/env bash
# Writes a baseline and a current run directory of NODES x GPUS as a real run of the `full` plan
# writes them (reports/gen_scale_results.py), into DIR/baseline and DIR/current, with
# DIR/truth.json (what `current` injected) and DIR/records (records per run). Used by
# reports/bench_report_scale.sh and tests/integration/report_scale.sh.
#
#   reports/gen_scale_set.sh DIR NODES GPUS      CB_BIN=build/clusterbench  SPEC=reports/specs/...
#
# The plan is the real one: `clusterbench run --suite full` is started and stopped (SIGTERM) as
# soon as it has written run.json, whose plan lists every case with its level.
set -uo pipefail
cd "$(dirname "$0")/.."
W=${1:?DIR}
NODES=${2:?NODES}
GPUS=${3:?GPUS}
CB_BIN=${CB_BIN:-build/clusterbench}
SPEC=${SPEC:-reports/specs/h100-sxm-80g-8x.json}
[ -x "$CB_BIN" ] || { echo "gen_scale_set: $CB_BIN is not built (set CB_BIN)" >&2; exit 2; }
mkdir -p "$W"
"$CB_BIN" run --suite full --out "$W/plan" >"$W/plan.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -s "$W/plan/run.json" ] && break; sleep 0.1; done
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ -s "$W/plan/run.json" ] || { cat "$W/plan.log" >&2; echo "no run.json from the full plan" >&2; exit 1; }
"$CB_BIN" inventory >"$W/env.json" || exit 1
gen() {
  python3 reports/gen_scale_results.py --plan "$W/plan/run.json" --env "$W/env.json" \
    --spec "$SPEC" --nodes "$NODES" --gpus "$GPUS" --variant "$1" --out "$W/$1" "${@:2}"
}
gen baseline >"$W/records" && gen current --truth "$W/truth.json" >/dev/null || exit 1
rm -rf "$W/plan"
