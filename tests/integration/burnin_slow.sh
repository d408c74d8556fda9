#!/usr/bin/env bash
# A burn-in in which rank 1 is slowed by 20% from halfway (test-only fault injection
# CLUSTERBENCH_TEST_BURNIN_SLOW_RANK: 25% more CPU time per product, so 1/1.25 = 80% of the
# rate): rank 1 fails burnin.rate_drop (tolerance 10%) and rank 0 passes. The rate is per CPU
# second of the GEMM thread, so the two ranks sharing two busy cores do not make it flake.
# Budget: about 25 s.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }

expect_rc 1 "${MPIRUN[@]}" -np 2 -x CLUSTERBENCH_TEST_BURNIN_SLOW_RANK=1 \
  "$CB_BIN" burnin --minutes 0.25 --out "$TMP/run"
py "
d = sys.argv[1]
recs = {json.loads(l)['scope']['rank']: json.loads(l) for l in open(d + '/records.jsonl')}
slowed = ['fault_injection' in iv for iv in recs[1]['extra']['series']]
assert slowed == [False] * 3 + [True] * 3, slowed
assert not any('fault_injection' in iv for iv in recs[0]['extra']['series'])
rep = json.load(open(d + '/report.json'))
row = [r for r in rep['rows'] if r['id'] == 'burnin.rate_drop'][0]
items = {it['item'].rsplit('/', 1)[1]: it for it in row['items']}
assert items['rank1']['outcome'] == 'FAIL' and items['rank0']['outcome'] == 'PASS', items
assert 12 < items['rank1']['value'] < 30, items['rank1']  # 20% injected
assert row['worst_item'].endswith('/rank1') and row['outcome'] == 'FAIL'
ver = [r for r in rep['rows'] if r['id'] == 'burnin.verification'][0]
assert ver['outcome'] == 'PASS', ver
" "$TMP/run"
ok "rank 1 slowed 20% from halfway fails on its rate drop; rank 0 passes"
echo "$PASSES passed, 0 failed"
