#!/usr/bin/env bash
# Nothing measured is lost: a run killed with SIGKILL after its first case leaves a directory that
# `report` reads; finished cases are reported, the rest of the plan is MISSING, and a truncated
# last line is a warning, not a crash.
source "$(dirname "$0")/lib.sh"

# A table with one fail row per kernel, thresholds any machine meets.
python3 - "$TMP/spec.json" <<'P'
import json, sys
rows = [{"id": "bw." + k, "title": k, "source": "test", "severity": "fail",
         "select": {"benchmark": "compute.memory_bandwidth", "params": {"kernel": k}, "metric": "bandwidth"},
         "scope": "node", "aggregate": "each", "op": ">=", "value": 0.001, "unit": "GB/s"}
        for k in ("copy", "scale", "add", "triad")]
# A chart of the four kernels (one node: each row alone would be one mark, and draw nothing), so
# that the end-of-run report starts gnuplot.
fams = [{"benchmark": "compute.memory_bandwidth",
         "chart": {"kind": "groups", "x": "kernel", "metric": "bandwidth", "title": "STREAM"}}]
json.dump({"schema": "clusterbench.spec/2", "name": "kill-test", "requirements": rows,
           "families": fams}, open(sys.argv[1], "w"))
P

# Cases of about 1.5 s each; kill -9 once the first record is on disk.
"$CB_BIN" run --suite ci --only compute.memory_bandwidth --spec "$TMP/spec.json" --set compute.memory_bandwidth.min_time=1.5 \
  --set compute.memory_bandwidth.array_bytes=8M --out "$TMP/run" >"$TMP/run.log" 2>&1 &
kill9_after_first_record $! "$TMP/run"

# run.json was written before the first case, with the plan; it has no end.
py "
run = json.load(open(sys.argv[1] + '/run.json'))
assert len(run['plan']) == 4 and run['exit_code'] is None and not run['finished_at'], run
" "$TMP/run"

# The report: finished kernels PASS, the others MISSING -> exit 4 (no FAIL, incomplete).
expect_rc 4 "$CB_BIN" report "$TMP/run"
expect_out "bw.copy +PASS"
expect_out "bw.triad +MISSING"
expect_out "VERDICT: INCOMPLETE \(exit 4\)"
py "
rep = json.load(open(sys.argv[1] + '/report.json'))
rows = {r['id']: r['outcome'] for r in rep['rows']}
assert rows['bw.copy'] == 'PASS' and rows['bw.triad'] == 'MISSING', rows
assert list(rows.values()).count('PASS') == int(sys.argv[2]), (rows, sys.argv[2])
assert any('finished' in w or 'killed' in w for w in rep['warnings']), rep['warnings']
" "$TMP/run" "$n"
ok "killed after $n case(s): finished cases reported, the rest MISSING, exit 4"

# A truncated last line (the write the kill interrupted) is a warning.
printf '{"schema":"clusterbench.result/1","benchmark":"compute.memory_bandwidth","status":"o' >>"$TMP/run/records.jsonl"
expect_rc 4 "$CB_BIN" report "$TMP/run"
expect_out "warning: .*records.jsonl:$((n + 1)): truncated last record ignored"
ok "truncated last line: warning, same verdict"
# Killed while the end-of-run report is being made (here: gnuplot, faked, never returns): the
# cases are done and run.json says finished, but its exit_code stays null, never a premature 0.
mkdir -p "$TMP/fakebin"
printf '#!/bin/sh\necho $$ >"%s"\nexec sleep 60\n' "$TMP/gnuplot-started" >"$TMP/fakebin/gnuplot"
chmod +x "$TMP/fakebin/gnuplot"
PATH="$TMP/fakebin:$PATH" "$CB_BIN" run --suite ci --only compute.memory_bandwidth --spec "$TMP/spec.json" \
  --set compute.memory_bandwidth.min_time=0.05 --set compute.memory_bandwidth.array_bytes=1M \
  --out "$TMP/run2" >"$TMP/run2.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -e "$TMP/gnuplot-started" ] && break; sleep 0.1; done
[ -e "$TMP/gnuplot-started" ] || { kill -9 $pid; cat "$TMP/run2.log"; fail "the report's gnuplot never started"; }
kill -9 $pid; wait $pid 2>/dev/null || true
sleep 0.2; kill -9 "$(cat "$TMP/gnuplot-started")" 2>/dev/null || true
py "
run = json.load(open(sys.argv[1] + '/run.json'))
assert run['finished_at'] and run['exit_code'] is None, (run['finished_at'], run['exit_code'])
" "$TMP/run2"
ok "killed during the report: run.json finished, exit_code null (not 0)"
echo "$PASSES passed, 0 failed"
