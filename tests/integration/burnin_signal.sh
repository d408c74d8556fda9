#!/usr/bin/env bash
# SIGTERM during a burn-in: the GEMM stops within a second, writes the record with the
# intervals it has, marks run.json aborted and exits 3. A second soak is signalled (SIGINT)
# during its setup. One process, no mpirun. Budget: about 25 s.
source "$(dirname "$0")/lib.sh"

"$CB_BIN" burnin --minutes 1 --out "$TMP/run" >"$TMP/out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  [ -f "$TMP/run/run.json" ] && break
  sleep 0.1
done
[ -f "$TMP/run/run.json" ] || { kill -9 "$pid"; fail "run.json never appeared"; }
# The soak appends a snapshot at each interval's end: 5 s after the first, inside the second
# (10 to 20 s), whatever the load of the machine.
for _ in $(seq 1 300); do
  grep -q '"series"' "$TMP/run/records.jsonl" 2>/dev/null && break
  sleep 0.1
done
grep -q '"series"' "$TMP/run/records.jsonl" || { kill -9 "$pid"; fail "no first interval in 30 s"; }
sleep 5
kill -TERM "$pid"
start=$(date +%s)
wait "$pid"
rc=$?
[ "$rc" -eq 3 ] || { cat "$TMP/out" >&2; fail "expected exit 3 after SIGTERM, got $rc"; }
[ $(($(date +%s) - start)) -le 10 ] || fail "took more than 10 s to stop after SIGTERM"
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert run['aborted'] and 'SIGTERM' in run['abort_reason'] and run['exit_code'] == 3, run
recs = list({(r := json.loads(l))['case_key']: r for l in open(d + '/records.jsonl')}.values())
assert len(recs) == 1 and recs[0]['status'] == 'ok', recs
s = recs[0]['extra']['series']
assert len(s) == 2 and s[-1].get('partial') is True and 'partial' not in s[0], s
assert 'SIGTERM during interval 2 of 6' in recs[0]['extra']['stopped_early'], recs[0]['extra']
assert os.path.exists(d + '/report.json')
" "$TMP/run"
ok "SIGTERM: stops within seconds, writes what it has, exit 3"

# SIGINT during setup (test-only delay of 20 s in it): handled like one during the soak, not the
# default action's exit 130 without a word.
CLUSTERBENCH_TEST_BURNIN_SETUP_DELAY_S=20 "$CB_BIN" burnin --minutes 1 --out "$TMP/setup" \
  >"$TMP/out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  [ -f "$TMP/setup/run.json" ] && break
  sleep 0.1
done
[ -f "$TMP/setup/run.json" ] || { kill -9 "$pid"; fail "run.json never appeared"; }
# The signal once the soak's set-up (20 s here) has begun: one before it takes the run's own path.
for _ in $(seq 1 300); do
  grep -q "test set-up delay of 20 s begins" "$TMP/out" && break
  sleep 0.1
done
grep -q "test set-up delay of 20 s begins" "$TMP/out" || { kill -9 "$pid"; fail "no set-up delay"; }
sleep 0.5
kill -INT "$pid"
start=$(date +%s)
wait "$pid"
rc=$?
[ "$rc" -eq 3 ] || { cat "$TMP/out" >&2; fail "expected exit 3 after SIGINT in setup, got $rc"; }
[ $(($(date +%s) - start)) -le 5 ] || fail "took more than 5 s to stop after SIGINT in setup"
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert run['aborted'] and run['exit_code'] == 3 and run['finished_at'], run
assert run['abort_reason'] == 'stopped by SIGINT during setup, before the soak began', run
recs = list({(r := json.loads(l))['case_key']: r for l in open(d + '/records.jsonl')}.values())
assert len(recs) == 1 and recs[0]['status'] == 'failed' and recs[0]['extra']['series'] == [], recs
assert recs[0]['message'] == 'no interval finished: stopped by SIGINT during setup, before the soak began'
assert recs[0]['extra']['fault_injection'] == 'CLUSTERBENCH_TEST_BURNIN_SETUP_DELAY_S (test only)'
rep = json.load(open(d + '/report.json'))
assert all(r['outcome'] != 'PASS' for r in rep['rows'] if r['id'].startswith('burnin.')), rep['rows']
" "$TMP/setup"
ok "SIGINT during setup: exit 3, run.json aborted, the record says why, a report"
echo "$PASSES passed, 0 failed"
