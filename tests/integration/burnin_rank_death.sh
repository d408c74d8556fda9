#!/usr/bin/env bash
# A rank dies during a burn-in (kill -9; docs/burnin.md "Signals"). Part 1: rank 1 is killed in
# the second interval: mpirun tears the job down (SIGTERM to rank 0, SIGKILL a second later), and
# rank 0 must leave every finished interval of both ranks on disk, a failed record naming rank 1,
# and run.json aborted with exit code 3. Part 2: rank 0 itself is killed: the records rewritten
# after each interval still hold the finished intervals, and `report` does not PASS the rate on
# them. Two mpirun -np 2 soaks of 0.5 min, each cut after about 7 s. Budget: about 25 s.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }

# start_soak DIR: a 0.5-min soak (six intervals of 5 s) under mpirun, its pid in $mp.
start_soak() {
  "${MPIRUN[@]}" -np 2 "$CB_BIN" burnin --minutes 0.5 --out "$1" >"$TMP/out" 2>&1 &
  mp=$!
  for _ in $(seq 1 150); do
    [ -s "$1/records.jsonl" ] && break
    sleep 0.1
  done
  [ -s "$1/records.jsonl" ] || { kill -9 "$mp"; cat "$TMP/out" >&2; fail "no interval written"; }
}
# pid_of_rank R: the process of world rank R among mpirun's children.
pid_of_rank() {
  for p in $(pgrep -P "$mp"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p"
  done
}

# Part 1: rank 1 dies in interval 2 (5 to 10 s), after interval 1 was gathered.
start_soak "$TMP/a"
sleep 2
py "
recs = list({(r := json.loads(l))['case_key']: r for l in open(sys.argv[1] + '/records.jsonl')}.values())
assert sorted(r['scope']['rank'] for r in recs) == [0, 1], recs
for r in recs:
    assert r['status'] == 'ok' and len(r['extra']['series']) == 1, r
    assert r['extra']['stopped_early'].startswith('in progress: 1 of 6 intervals written'), r
" "$TMP/a"
ok "after interval 1, records.jsonl holds both ranks' first interval (a snapshot of each appended every interval)"
r1=$(pid_of_rank 1)
[ -n "$r1" ] || { kill -9 "$mp"; fail "no process of rank 1"; }
kill -9 "$r1"
wait "$mp"
rc=$?
[ "$rc" -ne 0 ] || fail "mpirun exited 0 after a rank was killed"
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert run['aborted'] is True and run['exit_code'] == 3 and run['finished_at'], run
assert run['abort_reason'].startswith('rank 1 (') and 'died during interval 2 of 6' in run['abort_reason'], run
recs = {}
for l in open(d + '/records.jsonl'):  # the last record of a rank's case counts
    r = json.loads(l)
    recs[r['scope']['rank']] = r
r0, r1 = recs[0], recs[1]
assert r0['status'] == 'ok' and r1['status'] == 'failed', (r0['status'], r1['status'])
assert r1['message'].startswith('rank 1 (') and 'died during interval 2 of 6' in r1['message'], r1
assert 'rank 1' in r0['extra']['stopped_early'], r0['extra']['stopped_early']
for r in (r0, r1):
    s = r['extra']['series']
    assert [iv['index'] for iv in s] == [0], s  # interval 1 finished; 2 was cut by the death
    iv = s[0]
    assert iv['products'] > 0 and iv['flop'] == 2 * 256**3 * iv['products'], iv
    assert iv['verification']['passed'] and iv['allreduce']['ops'] > 0, iv
    m = {x['name']: x['value'] for x in r['metrics']}
    assert m['intervals'] == 1 and abs(m['rate_median'] - iv['rate_tflops']) < 1e-12, m
" "$TMP/a"
ok "rank 1 killed: rank 0 writes both series, a failed record naming rank 1, run.json aborted, 3"

# Part 2: rank 0 dies after interval 2: its last rewrite of the records is what is left.
start_soak "$TMP/b"
for _ in $(seq 1 100); do
  grep -q "in progress: 2 of 6" "$TMP/b/records.jsonl" 2>/dev/null && break
  sleep 0.1
done
r0=$(pid_of_rank 0)
[ -n "$r0" ] || { kill -9 "$mp"; fail "no process of rank 0"; }
kill -9 "$r0"
wait "$mp"
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert not run.get('finished_at'), run  # killed: never finished
recs = list({(r := json.loads(l))['case_key']: r for l in open(d + '/records.jsonl')}.values())
assert sorted(r['scope']['rank'] for r in recs) == [0, 1], recs
for r in recs:
    s = r['extra']['series']
    assert [iv['index'] for iv in s] == [0, 1], s
    assert all(iv['flop'] == 2 * 256**3 * iv['products'] for iv in s), s
    assert r['extra']['stopped_early'].startswith('in progress: 2 of 6'), r['extra']
" "$TMP/b"
"$CB_BIN" report "$TMP/b" >"$TMP/out" 2>&1
py "
rep = json.load(open(sys.argv[1] + '/report.json'))
rows = {r['id']: r for r in rep['rows']}
assert rows['burnin.rate_drop']['outcome'] == 'MISSING', rows['burnin.rate_drop']
assert all(it['outcome'] != 'PASS' for it in rows['burnin.rate_drop']['items'])
assert rows['burnin.verification']['outcome'] == 'PASS', rows['burnin.verification']
" "$TMP/b"
ok "rank 0 killed: its finished intervals are on disk, report judges no rate on two of six"
echo "$PASSES passed, 0 failed"
