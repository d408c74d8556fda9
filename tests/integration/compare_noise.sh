#!/usr/bin/env bash
# Issue 19, "a compare that does not cry wolf": two back-to-back `run --suite ci` (its default 5
# rounds; ctest's CLUSTERBENCH_ROUNDS=1 is unset; fio's sequential read and random write of its
# six profiles, which take half a run's time otherwise) on this machine, nothing changed, then
# `compare`: every call made by the rule, a host drift (exit 4) only when measured, at least 90%
# of the ok cases comparable (>= 5 repetitions a side), every case spread over rounds holding one
# repetition per round; printed.
# Then a real change is still caught: STREAM and the dataloader slowed 5x on purpose
# (CLUSTERBENCH_TEST_SLOWDOWN, a rate 80% lower: more than twice the 25% tolerance cpu-node.json
# gives them) are regressed, each with its Mann-Whitney p-value. 5x, not 2.5x: this shared VM's
# speed drifts up to 2x between two runs (a 2.5x slowdown once measured -21% after a slow
# baseline); 5x stays past the tolerance through a drift of 3x. Runs alone (RUN_SERIAL): timing.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || fail "mpirun not installed (scripts/setup.sh installs it)"
command -v fio >/dev/null || fail "fio not installed (scripts/setup.sh installs it)"

# run_ci NAME [ENV...]: a ci run that completed (verdict 0, 1 or 4 on this machine).
run_ci() {
  local name=$1
  shift
  env -u CLUSTERBENCH_ROUNDS "$@" "${MPIRUN[@]}" -np 2 "$CB_BIN" run --suite ci --out "$TMP/$name" \
    --set io.fio.profiles=seq_read,rand_write >"$TMP/$name.log" 2>&1
  local rc=$?
  case $rc in 0 | 1 | 4) ;; *) tail -30 "$TMP/$name.log" >&2; fail "run $name: exit $rc" ;; esac
}
# Nothing changed between the two runs. What compare says is printed, and every call must follow
# the rule: a regression or improvement past its tolerance with p < 0.05 on >= 5 repetitions a
# side; a host drift (exit 4) only when the host probe's medians are more than 10% apart with
# p < 0.05 on >= 5 samples a side, a case's CPU share moved, or its cores' round trip did (this
# VM's two vCPUs switch between 90 and 420 ns every few seconds: docs/compare.md "Host drift");
# >= 90% of the ok cases comparable by their repetitions; 0 regressed (exit 0, or 4 when a host
# drift was measured) and every row the same outcome (docs/compare.md "Rounds" has the pairs
# measured with and without rounds).
run_ci a
run_ci b
"$CB_BIN" compare "$TMP/a" "$TMP/b" --out "$TMP/cmp" >"$TMP/cmp.log" 2>&1
rc=$?
echo "back-to-back pair: compare exit $rc: $(grep '^COMPARE:' "$TMP/cmp.log")"
grep '^REGRESSED\|^IMPROVED\|^host drift' "$TMP/cmp.log" | cut -c1-200
case $rc in 0 | 1 | 4) ;; *) cat "$TMP/cmp.log" >&2; fail "compare exit $rc" ;; esac
py "
c = json.load(open(sys.argv[1] + '/cmp/compare.json'))
rc = int(sys.argv[2])
assert c['schema'] == 'clusterbench.compare/3', c['schema']
assert (rc == 1) == (c['counts']['regressed'] > 0), (rc, c['counts'])
assert (rc == 4) == (c['counts']['regressed'] == 0 and c['drift_cases'] > 0), (rc, c['counts'])
ok = [x for x in c['cases'] if x['baseline_status'] == 'ok' and x['current_status'] == 'ok'
      and x['metrics']]
drifted = [x for x in ok if 'host drift' in (x['message'] or '')]
assert len(drifted) == c['drift_cases'], (len(drifted), c['drift_cases'])
comparable = [x for x in ok if x['verdict'] != 'not_comparable']
frac = (len(comparable) + len(drifted)) / len(ok)
print('ok cases with metrics: %d, judged: %d, not judged for host drift: %d, comparable by their '
      'repetitions: %.1f%%' % (len(ok), len(comparable), len(drifted), 100 * frac))
for x in ok:
    if x['verdict'] == 'not_comparable' and 'host drift' not in x['message']:
        print('not comparable:', x['benchmark'], x['message'])
for x in comparable:
    for m in x['metrics']:
        if m['verdict'] in ('regressed', 'improved'):
            assert m['baseline_n'] >= 5 and m['current_n'] >= 5, m
            assert m['p_value'] is not None and m['p_value'] < 0.05, m
            assert abs(m['change_pct']) > 100 * m['tolerance'], m
# The cases spread over rounds: STREAM, OpenBLAS GEMM, the dataloader, fio (one run a round), MPI
# collectives; each record holds its five rounds' values as the repetitions of its main metric.
for side in ('a', 'b'):
    run = json.load(open(sys.argv[1] + '/' + side + '/run.json'))
    assert run['rounds'] == 5, run.get('rounds')
    last = {}
    for l in open(sys.argv[1] + '/' + side + '/records.jsonl'):
        r = json.loads(l)
        last[r['case_key']] = r
    spread = [r for r in last.values() if r['status'] == 'ok' and 'rounds' in r.get('extra', {})]
    assert {r['benchmark'] for r in spread} >= {'compute.memory_bandwidth', 'compute.gemm',
        'io.dataloader', 'io.fio', 'collectives.all_reduce'}, {r['benchmark'] for r in spread}
    for r in spread:
        ro, m = r['extra']['rounds'], r['metrics'][0]
        assert ro['planned'] == 5 and ro['run'] == 5 and not r['extra'].get('snapshot'), ro
        assert m['reps'] == ro['values'][m['name']] and len(m['reps']) == 5, (r['case_key'], m)
        assert m['value'] == sorted(m['reps'])[2], (r['case_key'], m)
    assert not any(r.get('extra', {}).get('snapshot') for r in last.values()), side
    print(side, ':', len(spread), 'cases spread over 5 rounds')
for d in c['host_drift']:
    assert abs(d['change_pct']) > 10 and d['p_value'] < 0.05, d
    assert d['baseline_n'] >= 5 and d['current_n'] >= 5, d
    print('host drift:', d)
assert frac >= 0.9, frac
# The evidence compare had on each regressed case, for a reader of a failed run: each side's CPU
# share and core-to-core round trips (per round), and the host probes.
def evidence(side, key):
    e = {}
    for l in open(sys.argv[1] + '/' + side + '/records.jsonl'):
        r = json.loads(l)
        if r['case_key'] == key:
            e = r
    ex = e.get('extra', {})
    return {'host_probe': ex.get('host_probe'), 'c2c_ns': ex.get('rounds', {}).get('c2c_ns')}
for x in c['cases']:
    if x['verdict'] == 'regressed':
        print('evidence', x['case_key'], 'a:', evidence('a', x['case_key']), 'b:',
              evidence('b', x['case_key']))
# Nothing changed, so nothing regressed (a host drift, measured, may leave the pair inconclusive)
# and every row has the same outcome; a row whose threshold lies inside its repetitions' range in
# either run (within_noise: the report says a rerun could change it) may differ, and is printed.
assert c['counts']['regressed'] == 0 and rc in (0, 4), (rc, c['counts'])
rows = {}
for side in ('a', 'b'):
    for r in json.load(open(sys.argv[1] + '/' + side + '/report.json'))['rows']:
        rows.setdefault(r['id'], []).append((r['outcome'], r.get('within_noise')))
differ = {k: v for k, v in rows.items() if len(v) != 2 or v[0][0] != v[1][0]}
print('rows whose outcome differs:', differ)
assert all(len(v) == 2 and (v[0][1] or v[1][1]) for v in differ.values()), differ
" "$TMP" "$rc"
ok "two back-to-back ci runs: compare exit $rc, 0 regressed, the same rows, every call by the rule"

# A real slowdown of two families is caught.
only=(--only compute.memory_bandwidth --only io.dataloader)
quick_run() {  # quick_run NAME [ENV...]
  local name=$1
  shift
  env "$@" "${MPIRUN[@]}" -np 2 "$CB_BIN" run --suite ci --rounds 5 "${only[@]}" --out "$TMP/$name" \
    >"$TMP/$name.log" 2>&1
  local rc=$?
  case $rc in 0 | 1 | 4) ;; *) tail -30 "$TMP/$name.log" >&2; fail "run $name: exit $rc" ;; esac
}
# On a loaded machine a baseline's rounds can spread so widely (STREAM scale at 34 GB/s with a
# 146% spread beside a build) that even -66% is not significant: the pair is measured again once,
# and the slowdown must be caught in one of the two (a real 5x is, on a quiet machine, every time).
slow_caught() {  # slow_caught N: the pair base<N>/slow<N> compared, both families regressed
  python3 -c "import json, sys
c = json.load(open(sys.argv[1] + '/cmp2' + sys.argv[2] + '/compare.json'))
slow = [json.loads(l) for l in open(sys.argv[1] + '/slow' + sys.argv[2] + '/records.jsonl')]
assert all('CLUSTERBENCH_TEST_SLOWDOWN' in r['extra'].get('fault_injection', '') for r in slow
           if r['status'] == 'ok'), 'the slowed run does not say it was slowed'
for bench, metric in [('compute.memory_bandwidth', 'bandwidth'), ('io.dataloader', 'samples_per_s')]:
    cases = [x for x in c['cases'] if x['benchmark'] == bench and x['baseline_status'] == 'ok']
    assert cases, bench
    for x in cases:
        m = {k['name']: k for k in x['metrics']}[metric]
        # 5x the time: the rate is 1/5 = 0.2 of the baseline's, -80%, more than twice the 25%
        # tolerance; measured, -80% times whatever this shared VM drifts between two runs.
        assert m['tolerance'] == 0.25 and 100 * (1 - 1 / 5) >= 2 * 100 * m['tolerance'], m
        assert m['verdict'] == 'regressed', (bench, x['params'], m)
        assert m['p_value'] is not None and m['p_value'] < 0.05, m
        assert -95 < m['change_pct'] < -100 * m['tolerance'], m
    print(bench, 'regressed:', ['%+.1f%% p=%.2g' % (
        {k['name']: k for k in x['metrics']}[metric]['change_pct'],
        {k['name']: k for k in x['metrics']}[metric]['p_value']) for x in cases])
" "$TMP" "$1"
}
for attempt in 1 2; do
  quick_run "base$attempt"
  quick_run "slow$attempt" CLUSTERBENCH_TEST_SLOWDOWN='compute.memory_bandwidth=5,io.dataloader=5'
  "$CB_BIN" compare "$TMP/base$attempt" "$TMP/slow$attempt" --out "$TMP/cmp2$attempt" \
    >"$TMP/cmp2$attempt.log" 2>&1
  rc=$?
  if [ $rc -eq 1 ] && grep -q "^REGRESSED compute.memory_bandwidth .*p = " "$TMP/cmp2$attempt.log" &&
    grep -q "^REGRESSED io.dataloader .*p = " "$TMP/cmp2$attempt.log" && slow_caught "$attempt"; then
    break
  fi
  grep '^COMPARE:\|^REGRESSED\|not significant' "$TMP/cmp2$attempt.log" | cut -c1-200
  [ $attempt -eq 2 ] && fail "a 5x slowdown not caught in either of two pairs (compare exit $rc)"
  echo "pair $attempt: the slowdown not confirmed (compare exit $rc); measuring the pair again"
done
ok "STREAM and the dataloader slowed 5x: regressed, each with its p-value"
# The report.md of a 2-rank ci run (docs/report.md "First page"): under 210 lines (200 until the
# base table gained the memory-type and CPU-clock rows, each a table line and, without DMI on this
# machine, a "not judged" line and a warning); it opens with
# the verdict, then every FAIL row in words with its node and the spec's remedy, the WARN rows, and
# what could not be judged (each MISSING row, the WAIVED rows one line per reason), before the
# table; the records are summarised (a sweep on one line, waived cases per benchmark and reason).
py "
import re
md = open(sys.argv[1] + '/report.md').read()
rep = json.load(open(sys.argv[1] + '/report.json'))
spec = {}
base = json.load(open(sys.argv[2] + '/reports/specs/base.json'))
for r in base['requirements']:
    spec[r['id']] = r
lines = md.count(chr(10))
assert lines < 210, lines
first = md.split('## Requirements')[0]
assert first.startswith('# clusterbench report: ') and '**Verdict: ' in first.splitlines()[2], first[:300]
rows = rep['rows']
for r in rows:
    head = '**' + r['title'] + '** (\x60' + r['id'] + '\x60)'
    if r['outcome'] in ('FAIL', 'WARN', 'MISSING'):
        assert head in first, r['id']
        line = first[first.index(head):].split(chr(10))[0]
    if r['outcome'] in ('FAIL', 'WARN'):
        assert r['remedy'] == spec[r['id']]['remedy'], (r['id'], r['remedy'])
        assert 'What to do: ' + r['remedy'] in line, line
        assert any(it['item'] in line for it in r['items'] if it['outcome'] != 'PASS'), line
        assert not re.search(r'\\((>=|<=|==|matches) ', line), line
    if r['outcome'] == 'WAIVED':
        assert re.search(r'- Waived \\([0-9]+ rows?: [^)]*\x60' + re.escape(r['id']) + '\x60', first), r['id']
assert first.index('## What to fix') < first.index('## Not judged')
last = {}  # the last record of each case (a case in rounds writes one per round)
for l in open(sys.argv[1] + '/records.jsonl'):
    r = json.loads(l)
    last[r['case_key']] = r
waived = sum(1 for r in last.values() if r['status'] == 'waived')
listed = sum(int(n) for n in re.findall(r'\\(([0-9]+) cases?\\)', md.split('Waived cases:')[1]))
assert listed == waived, (listed, waived)
assert re.search(r'collectives.all_reduce .* [0-9]+ sizes, ', md), 'no sweep line'
print('report.md:', lines, 'lines;', sum(r['outcome'] == 'FAIL' for r in rows), 'FAIL rows on the first page')
" "$TMP/a" "$CB_SOURCE_DIR"
ok "report.md of a ci run: under 200 lines, the first page names what to fix and what was not judged"
echo "PASS ($PASSES checks)"
