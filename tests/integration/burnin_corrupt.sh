#!/usr/bin/env bash
# A burn-in in which rank 1's GEMM check fails from its second interval (test-only fault
# injection CLUSTERBENCH_TEST_BURNIN_CORRUPT_RANK): exit 1, and the verdict names rank 1 only.
# Budget: about 20 s.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }

expect_rc 1 "${MPIRUN[@]}" -np 2 -x CLUSTERBENCH_TEST_BURNIN_CORRUPT_RANK=1 \
  "$CB_BIN" burnin --minutes 0.1 --out "$TMP/run"
py "
d = sys.argv[1]
recs = {json.loads(l)['scope']['rank']: json.loads(l) for l in open(d + '/records.jsonl')}
bad, good = recs[1], recs[0]
vb = [iv['verification']['passed'] for iv in bad['extra']['series']]
assert vb == [True] + [False] * 5, vb
assert all(iv['verification']['passed'] for iv in good['extra']['series'])
m = {x['name']: x['value'] for x in bad['metrics']}
assert m['verification_errors'] == 5, m
assert bad['extra']['verification_error'].startswith('interval 1: fp32 256x256x256: sampled error '), bad['extra']
assert 'x the bound at C(0,0), row checksum ' in bad['extra']['verification_error'], bad['extra']
assert 'verification_error' not in good['extra']
rep = json.load(open(d + '/report.json'))
row = [r for r in rep['rows'] if r['id'] == 'burnin.verification'][0]
assert row['outcome'] == 'FAIL' and row['worst_item'].endswith('/rank1'), row
out = {it['item'].rsplit('/', 1)[1]: it['outcome'] for it in row['items']}
assert out == {'rank0': 'PASS', 'rank1': 'FAIL'}, out
assert rep['exit_code'] == 1
" "$TMP/run"
ok "a wrong product on rank 1 fails rank 1, and only rank 1"
# The console says so as it happens: interval 1 is clean, each later one names rank 1 only.
py "
lines = [l for l in open(sys.argv[1]).read().splitlines() if 'burn-in interval ' in l]
assert len(lines) == 6, lines
assert 'WRONG' not in lines[0], lines[0]
for l in lines[1:]:
    assert l.endswith('/rank1 WRONG GEMM RESULTS'), l
    assert 'rank0 WRONG' not in l, l
" "$TMP/out"
ok "each interval's console line names rank 1's wrong results as they happen"
echo "$PASSES passed, 0 failed"
