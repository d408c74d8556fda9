#!/usr/bin/env bash
# One rank stops responding mid-sweep (collectives.fault=hang:RANK:BYTES keeps rank 2 out of the
# all_reduce of 4096 B): the watchdog ends the run with exit 3 within --case-timeout + 10 s,
# writes a failed record for the hung case, marks run.json aborted, and every record written
# before it stays intact; the record names the rank and host that never reached the operation.
# A backend's AbortRun does the same, on rank 0 or on another rank. Budget: about 35 s on 2 cores.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }

# Each rank gets its own host name (CLUSTERBENCH_HOSTNAME), so the record must name the right one.
NAMED=(bash -c 'CLUSTERBENCH_HOSTNAME=cbhang$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$CB_BIN")
deadline=5
start=$(date +%s)
expect_rc 3 "${MPIRUN[@]}" -np 3 "${NAMED[@]}" run --suite ci --only collectives.all_reduce \
  --set collectives.fault=hang:2:4096 --set collectives.min_time=0.02 \
  --case-timeout $deadline --out "$TMP/run"
took=$(( $(date +%s) - start ))
[ "$took" -le $((deadline + 10 + 5)) ] || fail "took $took s; the deadline is $deadline s (+10 s, +5 s start-up)"
expect_out "case deadline of $deadline s passed during collectives.all_reduce .*\"bytes\":4096"
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert run['aborted'] and run['exit_code'] == 3, run
assert 'bytes\":4096' in run['abort_reason'], run['abort_reason']
lines = open(d + '/records.jsonl').read().splitlines()
recs = [json.loads(l) for l in lines]   # every line whole: nothing torn by the abort
assert [r['params']['bytes'] for r in recs] == [8, 64, 512, 4096], [r['params'] for r in recs]
for r in recs[:3]:
    m = {x['name']: x['value'] for x in r['metrics']}
    assert r['status'] == 'ok' and m['wrong'] == 0 and m['busbw'] > 0, r
last = recs[3]
assert last['status'] == 'failed' and 'case deadline of 5 s' in last['message'], last
# The hung rank and its host are named: it never started the operation ranks 0 and 1 wait in.
assert 'did not finish: rank 2 on cbhang2 (never started operation 1 of the case' in last['message'], last['message']
assert 'waiting for it: rank 0 on cbhang0, rank 1 on cbhang1' in last['message'], last['message']
st = {x['rank']: (x['host'], x['state'], x['started'], x['finished']) for x in last['extra']['ranks']}
assert st == {0: ('cbhang0', 'waiting', 1, 0), 1: ('cbhang1', 'waiting', 1, 0),
              2: ('cbhang2', 'behind', 0, 0)}, st
assert 'did not finish: rank 2 on cbhang2' in run['abort_reason'], run['abort_reason']
assert len(run['plan']) == 7, len(run['plan'])   # 8 B .. 2 MiB x 8; the rest never ran
" "$TMP/run"
ok "rank 2 hung at 4096 B: exit 3 after $took s, failed record naming rank 2 on cbhang2, run.json aborted, 3 earlier records intact"

# Stray clients on a healthy rank's progress port (found with ss: the listener with backlog 128,
# owned by the process whose OMPI_COMM_WORLD_RANK is 1): 20 connections that send nothing and one
# that sends a byte every 0.8 s. Rank 1 must still answer rank 0 at the deadline: named waiting,
# not silent (each connection has its own second; none holds the others up).
"${MPIRUN[@]}" -np 3 "${NAMED[@]}" run --suite ci --only collectives.all_reduce \
  --set collectives.fault=hang:2:4096 --set collectives.min_time=0.02 \
  --case-timeout $deadline --out "$TMP/stray" >"$TMP/stray.log" 2>&1 &
job=$!
port=
for _ in $(seq 1 100); do
  for pid in $(pgrep -f -- "--out $TMP/stray"); do
    tr '\0' '\n' </proc/$pid/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 || continue
    port=$(ss -ltnpH 2>/dev/null | awk -v p="pid=$pid," '$0 ~ p && $3 == 128 {split($4, a, ":"); print a[length(a)]; exit}')
  done
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { kill $job; fail "no progress listener found for rank 1"; }
python3 - "$port" <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
drip = socket.create_connection(("127.0.0.1", port))
end = time.time() + 20
while time.time() < end:
    try:
        drip.send(b"x")
    except OSError:
        drip = socket.create_connection(("127.0.0.1", port))
    time.sleep(0.8)
PY
strays=$!
wait $job
rc=$?
kill $strays 2>/dev/null
wait $strays 2>/dev/null
[ $rc -eq 3 ] || { cat "$TMP/stray.log" >&2; fail "with stray clients: exit $rc, expected 3"; }
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/stray/records.jsonl')]
last = recs[-1]
st = {x['rank']: x['state'] for x in last['extra']['ranks']}
assert st == {0: 'waiting', 1: 'waiting', 2: 'behind'}, (st, last['message'])
" "$TMP"
ok "20 silent clients and a dripping one on rank 1's progress port: rank 1 still answers (waiting)"

# report reads the aborted run and returns 3 too.
expect_rc 3 "$CB_BIN" report "$TMP/run"
ok "report on the aborted run: exit 3"
# A backend whose communicator fails throws AbortRun (NCCL: deadline or async error, then
# ncclCommAbort). Injected on rank 0 at 512 B: the failed record carries the reason, run.json is
# aborted, exit 3, and the two earlier records stay.
expect_rc 3 "${MPIRUN[@]}" -np 2 "$CB_BIN" run --suite ci --only collectives.all_reduce \
  --set collectives.fault=abort:0:512 --set collectives.min_time=0.02 --out "$TMP/abort"
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert run['aborted'] and run['exit_code'] == 3, run
recs = [json.loads(l) for l in open(d + '/records.jsonl')]
assert [r['status'] for r in recs] == ['ok', 'ok', 'failed'], [r['status'] for r in recs]
assert 'injected fault: communicator failed at 512 B' in recs[2]['message'], recs[2]['message']
assert 'rank 0' in recs[2]['message'] and 'injected fault' in run['abort_reason'], run['abort_reason']
" "$TMP/abort"
ok "AbortRun on rank 0: failed record with the reason, run.json aborted, exit 3"

# The same on rank 1 (a failed NCCL communicator there): rank 1 tells rank 0 over the progress
# channel, and rank 0 writes the failed record naming rank 1, its host and the error. It ends
# well before the 60 s deadline: 2.4-3.6 s here, also beside busy CPUs or an fsync loop; 28 s
# once in CI while the GPU bundle rehearsal ran beside it (the cause was not found).
start=$(date +%s)
expect_rc 3 "${MPIRUN[@]}" -np 2 "${NAMED[@]}" run --suite ci --only collectives.all_reduce \
  --set collectives.fault=abort:1:512 --set collectives.min_time=0.02 --case-timeout 60 \
  --out "$TMP/abort1"
took=$(( $(date +%s) - start ))
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert run['aborted'] and run['exit_code'] == 3, run
recs = [json.loads(l) for l in open(d + '/records.jsonl')]
assert [r['status'] for r in recs] == ['ok', 'ok', 'failed'], [r['status'] for r in recs]
m = recs[2]['message']
assert 'rank 1 on cbhang1 aborted: injected fault: communicator failed at 512 B on cbhang1 rank 1' in m, m
assert recs[2]['params']['bytes'] == 512, recs[2]['params']
assert 'rank 1 on cbhang1 aborted' in run['abort_reason'], run['abort_reason']
" "$TMP/abort1"
[ "$took" -le 45 ] || { cat "$TMP/out" >&2; fail "abort on rank 1 took $took s (deadline 60 s)"; }
ok "AbortRun on rank 1: rank 0 writes the failed record naming rank 1 on cbhang1, exit 3 after $took s"

# A library error inside the operation on one rank (its MPI_Allreduce returns MPI_ERR_OTHER while
# rank 0 waits in it), in the harness's loop and in the plain reference loop: the run ends at
# once with exit 3, and the record names rank 1, its host and the failed call.
SHIM=$CB_BINARY_DIR/tests/support/libmpi_error_shim.so
for at in 50 reference; do
  args=(--set collectives.min_time=0.02)
  n=$at world=0 call='comm_)'
  if [ "$at" = reference ]; then
    args+=(--set collectives.reference=true)
    n=100 world=1 call='MPI_COMM_WORLD)'  # the plain loop alone uses MPI_COMM_WORLD
  fi
  start=$(date +%s)
  expect_rc 3 "${MPIRUN[@]}" -np 2 -x LD_PRELOAD="$SHIM" -x CB_SHIM_FAIL_AT="$n" \
    -x CB_SHIM_WORLD_ONLY="$world" "${NAMED[@]}" run \
    --suite ci --only collectives.all_reduce --set collectives.backends=mpi \
    --set collectives.dtypes=float --set collectives.maxbytes=64 --case-timeout 60 "${args[@]}" \
    --out "$TMP/mpierr.$at"
  took=$(( $(date +%s) - start ))
  py "
run = json.load(open(sys.argv[1] + '/run.json'))
assert run['aborted'] and run['exit_code'] == 3, run
last = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')][-1]
m = last['message']
assert last['status'] == 'failed' and 'rank 1 on cbhang1 aborted: MPI error' in m, m
assert 'MPI_ERR_OTHER' in m and 'MPI_Allreduce(' in m and sys.argv[2] in m, m
" "$TMP/mpierr.$at" "$call"
  [ "$took" -le 45 ] || { cat "$TMP/out" >&2; fail "an MPI error on rank 1 ($at) took $took s (deadline 60 s)"; }
  ok "MPI error on rank 1 inside the operation ($at): exit 3 after $took s, named in the record"
done
echo "$PASSES passed, 0 failed"
