#!/usr/bin/env bash
# A run stopped while fio writes (SIGTERM, as mpirun or a scheduler sends) leaves no fio process
# and none of fio's files: the abort cleanups kill fio and its job processes (which fio puts in
# sessions of their own with setsid) and remove its directories.
source "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || { echo "SKIP: fio not installed"; exit 77; }
mkdir -p "$TMP/scratch" "$TMP/tmpdir"
TMPDIR=$TMP/tmpdir "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_write \
  --set io.fio.size=4M --set io.fio.runtime=60 --set io.fio.scratch="$TMP/scratch" \
  --spec "$SPECS/cpu-node.json" --out "$TMP/run" >"$TMP/out" 2>&1 &
pid=$!
wait_for_our_fio $pid "$TMP/out"
sleep 1
kill -TERM $pid
wait $pid
rc=$?
[ "$rc" -eq 3 ] || { cat "$TMP/out"; fail "expected exit 3 after SIGTERM, got $rc"; }
sleep 0.5
left=$(our_fio)
if [ -n "$left" ]; then
  ps -o pid,ppid,pgid,sid,cmd -p "$(echo $left | tr ' ' ,)" >&2
  kill -9 $left
  fail "fio processes still running after the abort: $left"
fi
# (OpenMPI keeps its own session directory ompi.* in TMPDIR after MPI_Abort: not ours.)
left=$(find "$TMP/scratch" "$TMP/tmpdir" -mindepth 1 -not -path "*/ompi.*" | head -n 5)
[ -z "$left" ] || fail "left behind after the abort: $left"
py "
run = json.load(open(sys.argv[1] + '/run.json'))
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert run['aborted'] and 'SIGTERM' in run['abort_reason'], run['abort_reason']
assert len(recs) == 1 and recs[0]['status'] == 'failed' and recs[0]['benchmark'] == 'io.fio', recs
" "$TMP/run"
ok "SIGTERM during fio: exit 3, no fio process, no file left, failed record"
echo "$PASSES passed, 0 failed"
