#!/usr/bin/env bash
# clusterbench burnin on CPU ranks, for real: mpirun -np 2, 0.2 min (six intervals of 2 s).
# Per-rank records with a time series, per-rank verdicts from reports/, the burn-in chart, and
# `clusterbench report` on the run directory. Budget: about 20 s.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }

# The verdict is 0 (PASS/WARN) or 1 (a rate drop FAILs): on a 2-core machine shared with other
# tests the rate can fall by more than 10% for real, so the rows are checked against their evidence.
"${MPIRUN[@]}" -np 2 "$CB_BIN" burnin --minutes 0.2 --out "$TMP/run" >"$TMP/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || { cat "$TMP/out" >&2; fail "burn-in exit $rc, not 0 or 1"; }
expect_out "burn-in .*2 rank\(s\) on 1 node\(s\), 0.2 min in 6 intervals of 2 s"
expect_out "burnin-cpu.json"
# A line per interval as it ends, with each rank's rate as its record's series holds it.
py "
import re
out = open(sys.argv[1]).read().splitlines()
lines = [l for l in out if 'burn-in interval ' in l]
assert len(lines) == 6, out
recs = {}
for l in open(sys.argv[2] + '/records.jsonl'):
    r = json.loads(l)
    recs[r['scope']['rank']] = r
for k, l in enumerate(lines):
    m = re.match(r'\[1/1, \d+ s\] burn-in interval (\d+)/6: (\S+)/rank0 ([0-9.e+-]+) TFLOP/s; (\S+)/rank1 ([0-9.e+-]+) TFLOP/s; all_reduce busbw [0-9.e+-]+ GB/s$', l)
    assert m and int(m.group(1)) == k + 1, l
    for rank, shown in ((0, float(m.group(3))), (1, float(m.group(5)))):
        want = recs[rank]['extra']['series'][k]['rate_tflops']
        assert abs(shown - want) <= 6e-4 * want, (l, rank, want)
" "$TMP/out" "$TMP/run"
ok "a console line per interval with each rank's rate (as the records hold it)"
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
lines = [json.loads(l) for l in open(d + '/records.jsonl')]
# One snapshot per rank after every interval, then the final records; the last of a case counts.
assert len(lines) == 2 * 6 + 2 and all(r['extra'].get('snapshot') for r in lines[:12]), len(lines)
assert not any(r['extra'].get('snapshot') for r in lines[12:]), lines[12:]
recs = list({(r := json.loads(l))['case_key']: r for l in open(d + '/records.jsonl')}.values())
assert run['suite'] == 'burnin' and run['exit_code'] == int(sys.argv[2]) and not run['aborted'], run
assert run['spec']['path'].endswith('reports/specs/burnin-cpu.json'), run['spec']
assert len(run['plan']) == 1 and len(run['plan'][0]['case_keys']) == 2, run['plan']
assert sorted(r['scope']['rank'] for r in recs) == [0, 1], recs
for r in recs:
    assert r['benchmark'] == 'burnin.soak' and r['status'] == 'ok', r
    assert r['scope']['kind'] == 'rank' and r['case_key'] in run['plan'][0]['case_keys'], r['scope']
    assert r['params'] == {'backend': 'openblas', 'dtype': 'fp32', 'm': 256, 'n': 256, 'k': 256}
    s = r['extra']['series']
    assert len(s) == 6 and [iv['index'] for iv in s] == list(range(6)), len(s)
    flop = 2 * 256**3
    for iv in s:
        assert iv['products'] > 0 and iv['flop'] == flop * iv['products'], iv
        # The rate is the FLOP over the GEMM thread's CPU seconds.
        assert abs(iv['rate_tflops'] - iv['flop'] / iv['seconds'] / 1e12) < 1e-9 * iv['rate_tflops']
        assert iv['verification']['passed'] and iv['verification']['samples'] == 16, iv
        assert iv['allreduce']['ops'] > 0 and iv['allreduce']['wrong'] == 0, iv['allreduce']
        assert iv['allreduce']['bytes'] == 1 << 20, iv['allreduce']
        assert 1.5 < iv['t_end_s'] - iv['t_start_s'] < 3.5, iv
    m = {x['name']: x for x in r['metrics']}
    assert m['verification_errors']['value'] == 0 and m['intervals']['value'] == 6, m
    rates = sorted(iv['rate_tflops'] for iv in s)
    assert m['rate_worst_interval']['value'] == rates[0], m
    assert abs(m['rate_median']['value'] - (rates[2] + rates[3]) / 2) < 1e-12, m
    # A soak shorter than two minutes: its first and last minute are its first and last interval.
    assert abs(m['rate_first_minute']['value'] - s[0]['rate_tflops']) <= 1e-12, m
    assert abs(m['rate_last_minute']['value'] - s[-1]['rate_tflops']) <= 1e-12, m
    assert m['rate_first_minute']['unit'] == 'TFLOP/s'
    assert 'temperature_max' not in m
    assert 'no NVML telemetry' in r['extra']['telemetry']['status'], r['extra']['telemetry']
    assert r['extra']['time_basis'] == 'thread_cpu' and r['extra']['allreduce']['backend'] == 'mpi'
    # rate_drop: the median of the last third (2 intervals) against the first third; rate_dip:
    # the worst interval against the median of all six (hand-computed from the series).
    r6 = [iv['rate_tflops'] for iv in s]
    first, last, med = (r6[0] + r6[1]) / 2, (r6[4] + r6[5]) / 2, (rates[2] + rates[3]) / 2
    assert abs(m['rate_drop']['value'] - 100 * (first - last) / first) < 1e-9, m['rate_drop']
    assert abs(m['rate_dip']['value'] - 100 * (med - rates[0]) / med) < 1e-9, m['rate_dip']
rep = json.load(open(d + '/report.json'))
rows = {row['id']: row for row in rep['rows']}
by_rank = {r['scope']['rank']: {x['name']: x['value'] for x in r['metrics']} for r in recs}
for rid, metric, bound in (('burnin.verification', 'verification_errors', 0),
                           ('burnin.rate_drop', 'rate_drop', 10), ('burnin.rate_dip', 'rate_dip', 25)):
    items = sorted(rows[rid]['items'], key=lambda it: it['item'])
    assert len(items) == 2 and items[0]['item'].endswith('/rank0'), items
    assert items[1]['item'].endswith('/rank1'), items
    worst = max(by_rank[0][metric], by_rank[1][metric])
    bad = 'FAIL' if rid != 'burnin.rate_dip' else 'WARN'
    assert rows[rid]['outcome'] == ('PASS' if worst <= bound else bad), (rid, worst, rows[rid])
assert rows['burnin.verification']['outcome'] == 'PASS', rows['burnin.verification']
want = 1 if rows['burnin.rate_drop']['outcome'] == 'FAIL' else 0
assert run['exit_code'] == want, (run['exit_code'], want)
" "$TMP/run" "$rc"
ok "2 ranks: six intervals each, verified, per-rank rows match their hand-computed evidence (exit $rc)"

if command -v gnuplot >/dev/null; then
  grep -q "Burn-in: rate per interval over time" "$TMP/run/report.html" || fail "no burn-in chart"
  grep -q "rank1" "$TMP/run/report.html" || fail "burn-in chart lacks rank1"
  ok "report.html has the burn-in chart"
fi

expect_rc "$rc" "$CB_BIN" report "$TMP/run"
expect_out "burnin.rate_drop"
ok "clusterbench report works on the burn-in directory"

# The run's own output directories rule (new_run_dir): a finished run or a foreign file is refused.
expect_rc 2 "$CB_BIN" burnin --minutes 0.1 --out "$TMP/run"
expect_out "already holds a run; choose an empty --out directory"
mkdir -p "$TMP/foreign" && echo mine >"$TMP/foreign/notes.txt"
expect_rc 2 "$CB_BIN" burnin --minutes 0.1 --out "$TMP/foreign"
expect_out "not empty and not a clusterbench run \(holds notes.txt\)"
[ "$(cat "$TMP/foreign/notes.txt")" = mine ] && [ ! -e "$TMP/foreign/records.jsonl" ] ||
  fail "a refused burn-in touched the foreign directory"
ok "burn-in refuses an --out directory holding a run or other files"

expect_rc 2 "$CB_BIN" burnin --minutes 0 --out "$TMP/bad"
expect_out "--minutes 0.000000: must be in \(0, 10080\]"
expect_rc 2 "$CB_BIN" burnin --minutes 0.1 --dtype bf16 --out "$TMP/bad2"
expect_out "--dtype bf16: the CPU burn-in runs fp32 or fp64"
[ ! -e "$TMP/bad2/run.json" ] || fail "a refused burn-in wrote a run directory"
ok "--minutes 0 and a CPU --dtype bf16 are usage errors (exit 2)"

# Out-of-range values are refused as the messages say, not replaced by a default or rounded.
expect_rc 2 "$CB_BIN" burnin --minutes 0.1 --shape 0 --out "$TMP/bad3"
expect_out "--shape 0: must be in \[1, 65536\]"
expect_rc 2 "$CB_BIN" burnin --minutes 0.1 --shape 65537 --out "$TMP/bad3"
expect_out "--shape 65537: must be in \[1, 65536\]"
for b in 0 3 6 5G; do
  expect_rc 2 "$CB_BIN" burnin --minutes 0.1 --allreduce-bytes "$b" --out "$TMP/bad3"
  expect_out "--allreduce-bytes [0-9]+: must be in \[4, 4G\] and a multiple of 4"
done
[ ! -e "$TMP/bad3" ] || fail "a refused burn-in wrote a run directory"
ok "--shape 0/65537 and --allreduce-bytes 0/3/6/5G are usage errors (exit 2)"

# A shape whose product does not fit many times in an interval is refused before anything runs:
# 0.05 min has six intervals of 0.5 s, and one 6000^3 product takes seconds on one core.
start=$(date +%s)
expect_rc 2 "$CB_BIN" burnin --minutes 0.05 --shape 6000 --out "$TMP/big"
[ $(($(date +%s) - start)) -le 5 ] || fail "the refusal of --shape 6000 took more than 5 s"
expect_out "--shape 6000: one fp32 6000x6000x6000 product takes about [0-9.e+]+ s on this CPU"
expect_out "more than 0.05 s \(a tenth of the 0.5-s interval, at most 1 s\)"
[ ! -e "$TMP/big" ] || fail "a refused burn-in wrote a run directory"
ok "--shape 6000 for 0.05 min is refused up front (exit 2), naming the estimate and the bound"
echo "$PASSES passed, 0 failed"
