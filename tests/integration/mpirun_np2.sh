#!/usr/bin/env bash
# mpirun -np 2 on one node: two ranks, one node, node-level cases on the leader only, rank 0 the
# only writer, the same exit code from every rank.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }

expect_rc 1 "${MPIRUN[@]}" -np 2 "$CB_BIN" run --suite ci --only compute.memory_bandwidth \
  --set compute.memory_bandwidth.array_bytes=16M --out "$TMP/run"
expect_out "2 rank\(s\) on 1 node\(s\)"
[ "$(grep -c 'VERDICT:' "$TMP/out")" -eq 1 ] || fail "console output must come from rank 0 only"
py "
run = json.load(open(sys.argv[1] + '/run.json'))
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert run['world_size'] == 2 and len(run['hosts']) == 1 and len(run['env']) == 1, run['hosts']
assert len(recs) == 4, len(recs)  # node-level: the leader of the one node measured, once per kernel
assert all(r['status'] == 'ok' and r['scope']['host'] == run['hosts'][0] for r in recs)
assert all(len(p['case_keys']) == 1 for p in run['plan'])
assert run['env'][0]['versions']['mpi'].startswith('Open MPI'), run['env'][0]['versions']['mpi']
gb = json.load(open(sys.argv[1] + '/gbench.json'))
assert len(gb['benchmarks']) == 4, len(gb['benchmarks'])
assert all(b['run_type'] == 'iteration' and b['batch'] >= 1 for b in gb['benchmarks'])
" "$TMP/run"
ok "mpirun -np 2: world 2, one node, four node-level records, one writer"

# Each rank sees the same node split: np 3 with a node-level case and --only still agree.
expect_rc 1 "${MPIRUN[@]}" -np 3 "$CB_BIN" run --suite ci --only 'compute.memory_*' \
  --set compute.memory_bandwidth.kernels=triad --set compute.memory_bandwidth.array_bytes=8M --out "$TMP/run3"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert len(recs) == 1 and recs[0]['params'] == {'kernel': 'triad'}, recs
" "$TMP/run3"
ok "mpirun -np 3 with --only and --set"
echo "$PASSES passed, 0 failed"
