#!/usr/bin/env bash
# A hung case and a dead rank end the run with exit 3: run.json records the abort, the case in
# progress gets a `failed` record, records already written stay, and `report` returns 3 too.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }

cat >"$TMP/spec.json" <<'J'
{"schema": "clusterbench.spec/1", "name": "watchdog-test", "requirements": [
 {"id": "quick", "title": "quick case ran", "source": "test", "severity": "fail",
  "select": {"benchmark": "test.quick", "metric": "rate"}, "scope": "cluster", "aggregate": "each",
  "op": ">=", "value": 1, "unit": "count"},
 {"id": "hang", "title": "hang case ran", "source": "test", "severity": "fail",
  "select": {"benchmark": "test.hang", "metric": "rate"}, "scope": "cluster", "aggregate": "each",
  "op": ">=", "value": 1, "unit": "count"}]}
J

check_abort() {  # check_abort DIR REASON-REGEX
  py "
import re
run = json.load(open(sys.argv[1] + '/run.json'))
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert run['aborted'] and run['exit_code'] == 3 and re.search(sys.argv[2], run['abort_reason']), run['abort_reason']
quick = [r for r in recs if r['benchmark'] == 'test.quick']
hang = [r for r in recs if r['benchmark'] == 'test.hang']
assert len(quick) == 1 and quick[0]['status'] == 'ok', quick
assert len(hang) == 1 and hang[0]['status'] == 'failed' and 'aborted' in hang[0]['message'], hang
" "$1" "$2"
}

# 1. A case that passes its deadline (one rank stalls, the other waits in the reduction).
start=$(date +%s)
"${MPIRUN[@]}" -np 2 "$CB_TESTBIN" run --suite ci --only 'test.quick' --only 'test.hang' \
  --set test.hang.rank=1 --spec "$TMP/spec.json" --case-timeout 3 --out "$TMP/hang" >"$TMP/out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" -eq 3 ] || { cat "$TMP/out"; fail "hung case: expected exit 3, got $rc"; }
[ "$took" -lt 60 ] || fail "hung case took ${took}s to end"
expect_out "run aborted: case deadline of 3 s passed during test.hang"
check_abort "$TMP/hang" "deadline of 3 s"
expect_rc 3 "$CB_TESTBIN" report "$TMP/hang"
expect_out "ABORTED"
ok "hung case: exit 3 after the deadline, failed record, earlier record kept, report exits 3"

# 2. A rank that dies mid-case: mpirun ends the others; rank 0 records the abort.
"${MPIRUN[@]}" -np 2 "$CB_TESTBIN" run --suite ci --only 'test.quick' --only 'test.hang' \
  --set test.hang.rank=1 --spec "$TMP/spec.json" --case-timeout 120 --out "$TMP/dead" >"$TMP/out" 2>&1 &
for _ in $(seq 1 200); do
  grep -q '"test.quick"' "$TMP/dead/records.jsonl" 2>/dev/null && break
  sleep 0.1
done
sleep 1
victim=$(pgrep -f "clusterbench_testbin run .*--out $TMP/dead" | while read -r p; do
  # rank 1 is the process whose environment says so
  tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && echo "$p"; done | head -n 1)
[ -n "$victim" ] || fail "could not find rank 1"
kill -9 "$victim"
wait %1 2>/dev/null
rc=$?
[ "$rc" -ne 0 ] || fail "a dead rank must not give exit 0"
check_abort "$TMP/dead" "signal|died"
expect_rc 3 "$CB_TESTBIN" report "$TMP/dead"
ok "dead rank (mpirun exit $rc): run.json aborted, failed record, report exits 3"
echo "$PASSES passed, 0 failed"
