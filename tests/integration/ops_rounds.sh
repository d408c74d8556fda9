#!/usr/bin/env bash
# run --rounds N (docs/compare.md "Rounds"): each STREAM case runs once per round, for min_time / N
# each time; its final record holds one repetition per round (the median as its value), written
# after snapshots that a later round replaces; run.json says N. Each round before the last prints
# what it measured ("this round:"), the last the case's record. A --time-limit that ends the
# rounds early leaves final records with the rounds that ran. A run killed between rounds is
# completed by --resume, which redoes the cases whose last record is a snapshot and keeps N (a
# different --rounds is refused). Bad values are exit 2. Budget: ~30 s on 2 shared cores.
source "$(dirname "$0")/lib.sh"

stream_spec "$TMP/spec.json" 0.001 rounds-test
BASE=(run --suite ci --only compute.memory_bandwidth --spec "$TMP/spec.json"
      --set compute.memory_bandwidth.array_bytes=8M)

# check DIR ROUNDS_PLANNED MIN_RUN MAX_RUN: one final record per kernel, n = the rounds run.
check() {
  py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
planned, lo, hi = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
assert json.load(open(sys.argv[1] + '/run.json'))['rounds'] == planned
last = {}
for r in recs:
    last[r['case_key']] = r
assert sorted(r['params']['kernel'] for r in last.values()) == ['add', 'copy', 'scale', 'triad'], last
for r in last.values():
    ro = r['extra']['rounds']
    assert r['status'] == 'ok' and not r['extra'].get('snapshot'), r
    assert ro['planned'] == planned and lo <= ro['run'] <= hi, ro
    m = {x['name']: x for x in r['metrics']}['bandwidth']
    # One repetition per round; the value is their median (an odd count: the middle one).
    assert m['reps'] == ro['values']['bandwidth'] and len(m['reps']) == ro['run'], (m, ro)
    if ro['run'] % 2:
        assert m['value'] == sorted(m['reps'])[ro['run'] // 2], m
    best = {x['name']: x for x in r['metrics']}['bandwidth_best']
    assert best['value'] == max(ro['values']['bandwidth_best']) and not best.get('reps'), best
    # Each round measured for min_time / rounds (ci: 0.05 s): its samples are in gbench.json.
    assert r['time']['n'] == ro['run'], r['time']
print({r['params']['kernel']: r['extra']['rounds']['run'] for r in last.values()})
" "$@"
}

# 1. Three rounds: every case three times, the snapshots of rounds 1 and 2 before the final record.
expect_rc 0 "$CB_BIN" "${BASE[@]}" --rounds 3 --out "$TMP/a"
check "$TMP/a" 3 3 3
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert len(recs) == 12, len(recs)
assert sum(1 for r in recs if r['extra'].get('snapshot')) == 8, recs
" "$TMP/a"
expect_out "\[4/4 round 3/3, [0-9]+ s, about 0 s left\] compute.memory_bandwidth \{\"kernel\":\"triad\"\} .*\(3 reps"
# Rounds 1 and 2 print what they measured ("this round:"), round 3 the case's record, once.
expect_out "^\[1/4 round 1/3, [0-9]+ s, about [0-9]+ s left\] this round: compute.memory_bandwidth \{\"kernel\":\"copy\"\} [^ ]+: bandwidth [0-9.]+ GB/s"
[ "$(grep -c 'compute.memory_bandwidth {"kernel":"copy"}' "$TMP/out")" = 3 ] &&
  [ "$(grep 'compute.memory_bandwidth {"kernel":"copy"}' "$TMP/out" | grep -c '\] this round: ')" = 2 ] ||
  { cat "$TMP/out"; fail "the copy case is not printed once a round, its record once after its last"; }
expect_rc 0 "$CB_BIN" "${BASE[@]}" --rounds 3 --dry-run
expect_out "compute.memory_bandwidth \{\"kernel\":\"copy\"\}"
ok "--rounds 3: one repetition per round, snapshots replaced, each round's value printed"

# 2. A time limit that ends the rounds early: the records are final with the rounds that ran.
#    Rounds of about 2 s (min_time 2 / 4 rounds = 0.5 s a case): half the estimate ends the run in
#    round 2 or 3.
LONG=(--set compute.memory_bandwidth.min_time=2 --rounds 4)
est=$("$CB_BIN" "${BASE[@]}" "${LONG[@]}" --dry-run | awk '/^total:/ {print $(NF-1)}')
limit=$(python3 -c "print(round(0.5 * $est, 2))")
expect_rc 0 "$CB_BIN" "${BASE[@]}" "${LONG[@]}" --time-limit "$limit" --out "$TMP/b"
check "$TMP/b" 4 1 3
expect_out "note: the run ended before its last round \(--time-limit\): 4 case\(s\) ran fewer than 4 rounds"
py "
import re
assert 'time_limit' not in json.load(open(sys.argv[1] + '/run.json'))
last = {}
for l in open(sys.argv[1] + '/records.jsonl'):
    r = json.loads(l)
    last[r['case_key']] = r
for r in last.values():
    assert r['message'] == '%d of 4 rounds ran (the run ended before the rest)' % r['extra']['rounds']['run'], r
    # Its console line names the rounds it ran, with nothing left.
    k = json.dumps(r['params'], separators=(',', ':'))
    line = [l for l in open(sys.argv[2]) if ' compute.memory_bandwidth ' + k in l][-1]
    assert re.match(r'\[\d/4 round %d/4, \d+ s, about 0 s left\]' % r['extra']['rounds']['run'], line), line
" "$TMP/b" "$TMP/out"
ok "--time-limit $limit of a $est s estimate: final records of fewer rounds, nothing MISSING"

# 3. Killed after round 1's first snapshot; --resume redoes the unfinished cases in 3 rounds.
"$CB_BIN" "${BASE[@]}" --set compute.memory_bandwidth.min_time=1.5 --rounds 3 --out "$TMP/c" \
  >"$TMP/c.log" 2>&1 &
kill9_after_first_record $! "$TMP/c"
expect_rc 2 "$CB_BIN" run --resume "$TMP/c" --rounds 2
expect_out "--rounds: earlier '3', now '2'"
expect_rc 0 "$CB_BIN" run --resume "$TMP/c"
check "$TMP/c" 3 3 3
ok "killed in round 1 after $n snapshot(s): --resume completed every case in 3 rounds"

# 4. SIGINT in round 2 or 3: the case in progress is failed, says its round, and keeps what its
#    earlier rounds measured (extra.rounds); the cases before it keep their snapshots.
"$CB_BIN" "${BASE[@]}" --set compute.memory_bandwidth.min_time=1.5 --rounds 3 --out "$TMP/e" \
  >"$TMP/e.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  [ -s "$TMP/e/records.jsonl" ] && [ "$(wc -l <"$TMP/e/records.jsonl")" -ge 5 ] && break
  sleep 0.1
done
sleep 0.2  # inside the next case (0.5 s a round), not in the few ms between two cases
kill -INT $pid
wait $pid
rc=$?
[ "$rc" = 3 ] || { cat "$TMP/e.log"; fail "SIGINT: exit $rc, expected 3"; }
py "
import re
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
failed = [r for r in recs if r['status'] == 'failed']
assert len(failed) == 1, failed
f = failed[0]
m = re.match(r'round ([23]) of 3: aborted: ', f['message'])
assert m and f['extra']['rounds']['run'] == int(m.group(1)) - 1, f
assert len(f['extra']['rounds']['values']['bandwidth']) == int(m.group(1)) - 1, f
assert all(r['extra'].get('snapshot') for r in recs if r['status'] == 'ok'), recs
print(f['params'], f['message'][:40], f['extra']['rounds']['values']['bandwidth'])
" "$TMP/e"
ok "SIGINT in a later round: the case says its round and keeps its earlier rounds"

# 4b. The suites' defaults: ci, quick and full in 5 rounds; --rounds 1 turns it off;
#     CLUSTERBENCH_ROUNDS (which ctest sets to 1 for the other tests) replaces the default, not a
#     given --rounds, and a bad value is refused naming it.
for suite in ci quick full; do
  expect_rc 0 env -u CLUSTERBENCH_ROUNDS "$CB_BIN" run --suite "$suite" \
    --only compute.memory_bandwidth --dry-run
  expect_out "^clusterbench --dry-run: suite $suite, 5 rounds, "
done
expect_rc 0 env -u CLUSTERBENCH_ROUNDS "$CB_BIN" run --suite quick --only compute.memory_bandwidth \
  --rounds 1 --dry-run
expect_out "^clusterbench --dry-run: suite quick, 1 rank"
expect_rc 0 env CLUSTERBENCH_ROUNDS=3 "$CB_BIN" run --suite ci --only compute.memory_bandwidth --dry-run
expect_out "^clusterbench --dry-run: suite ci, 3 rounds, "
expect_out "^note: 3 rounds: fewer than 5 repetitions a case; compare cannot judge these cases"
expect_rc 0 env CLUSTERBENCH_ROUNDS=3 "$CB_BIN" run --suite ci --only compute.memory_bandwidth \
  --rounds 7 --dry-run
expect_out "^clusterbench --dry-run: suite ci, 7 rounds, "
expect_rc 0 env CLUSTERBENCH_ROUNDS=1 "$CB_BIN" run --suite ci --only compute.memory_bandwidth --dry-run
expect_out "^clusterbench --dry-run: suite ci, 1 rank"
for bad in 0 21 x 2.5; do
  expect_rc 2 env CLUSTERBENCH_ROUNDS=$bad "$CB_BIN" run --suite ci --only compute.memory_bandwidth \
    --out "$TMP/env-bad"
  expect_out "CLUSTERBENCH_ROUNDS='$bad' is not a whole number from 1 to 20"
done
[ ! -e "$TMP/env-bad" ] || fail "a refused CLUSTERBENCH_ROUNDS created $TMP/env-bad"
"$CB_BIN" run --suite ci --only io.tiers --rounds 3 --out "$TMP/tiers" >"$TMP/out" 2>&1
rc=$?  # this machine's verdict on the chosen table: 0, 1 or 4, never a refusal or an abort
case $rc in 0 | 1 | 4) ;; *) cat "$TMP/out"; fail "--only io.tiers --rounds 3: exit $rc" ;; esac
if grep -E "^note: [0-9]+ rounds?:|round [0-9]/" "$TMP/out"; then fail "rounds shown for a run without round cases"; fi
ok "ci, quick and full default to 5 rounds, CLUSTERBENCH_ROUNDS replaces it, --rounds 1 turns it off; no rounds shown without round cases"

# 5. Bad values: exit 2, nothing created.
for bad in 0 21 x 2.5; do
  expect_rc 2 "$CB_BIN" "${BASE[@]}" --rounds "$bad" --out "$TMP/d"
  expect_out "--rounds: '$bad' is not a whole number from 1 to 20"
done
[ ! -e "$TMP/d" ] || fail "a refused --rounds created $TMP/d"
ok "--rounds 0 / 21 / x / 2.5: exit 2, named"
echo "$PASSES passed, 0 failed"
