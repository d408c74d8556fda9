#!/usr/bin/env bash
# Issue 20, item 3: after network.tuning ran (its setting guard registers an abort cleanup; it
# must not take over the signal handler), a job cancelled with SIGTERM (mpirun forwards it to
# every rank) still records the abort: exit 3, run.json aborted naming SIGTERM, a failed record
# for the case in progress (io.fio), network.tuning's record kept, no fio process or scratch left.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
for t in mpirun fio; do
  command -v $t >/dev/null || fail "$t not installed (scripts/setup.sh installs it)"
done
mkdir -p "$TMP/scratch" "$TMP/tmpdir"
TMPDIR=$TMP/tmpdir timeout 120 "${MPIRUN[@]}" -np 2 -x TMPDIR "$CB_BIN" run --suite ci \
  --only network.tuning --only io.fio --set io.fio.profiles=seq_write --set io.fio.size=4M \
  --set io.fio.runtime=60 --set io.fio.repeat=1 --set io.fio.scratch="$TMP/scratch" \
  --spec "$SPECS/cpu-node.json" --out "$TMP/run" >"$TMP/out" 2>&1 &
job=$!
for _ in $(seq 1 600); do
  grep -q '"network.tuning"' "$TMP/run/records.jsonl" 2>/dev/null && pgrep -x fio >/dev/null && break
  sleep 0.1
done
grep -q '"network.tuning"' "$TMP/run/records.jsonl" || { kill -9 $job; cat "$TMP/out"; fail "network.tuning never recorded"; }
sleep 1
# A cancelled job: the launcher sends SIGTERM to every rank (mpirun's own exit code is then its).
ranks=$(pgrep -P "$(pgrep -P $job -x mpirun || echo $job)")
[ -n "$ranks" ] || fail "no rank processes under mpirun"
kill -TERM $ranks
wait $job
rc=$?
[ "$rc" -eq 3 ] || { cat "$TMP/out" >&2; fail "expected exit 3 after SIGTERM, got $rc"; }
py "
run = json.load(open(sys.argv[1] + '/run.json'))
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert run['aborted'] and run['exit_code'] == 3 and 'SIGTERM' in run['abort_reason'], run
tuning = [r for r in recs if r['benchmark'] == 'network.tuning']
fio = [r for r in recs if r['benchmark'] == 'io.fio']
assert tuning and all(r['status'] != 'failed' for r in tuning), tuning
assert fio and all(r['status'] == 'failed' and 'SIGTERM' in r['message'] for r in fio), fio
" "$TMP/run"
sleep 0.5
left=$(find "$TMP/scratch" "$TMP/tmpdir" -mindepth 1 -not -path "*/ompi.*" | head -n 5)
[ -z "$left" ] || fail "left behind after the abort: $left"
ok "SIGTERM after network.tuning: exit 3, aborted run.json, failed io.fio record, nothing left"
echo "PASS ($PASSES checks)"
