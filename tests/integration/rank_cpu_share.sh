#!/usr/bin/env bash
# A cluster case's record carries the least CPU share of its ranks (extra.host_probe.cpu_share):
# with other work pinned to rank 1's core, rank 0 alone on its own, the MPI records say about
# half a core (measured 0.41-0.50), not rank 0's ~0.9, so compare can tell that other work shared
# the case's cores (docs/compare.md "Host drift"). Ranks bound one per core, in order (rank 1 on
# CPU 1). Runs alone (RUN_SERIAL): it measures CPU shares.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || fail "mpirun not installed (scripts/setup.sh installs it)"
command -v taskset >/dev/null || fail "taskset not installed (util-linux)"
[ "$(nproc)" -ge 2 ] || fail "needs 2 CPUs"

BOUND=(mpirun --map-by core --bind-to core --report-bindings)
[ "$(id -u)" -eq 0 ] && BOUND+=(--allow-run-as-root)
run_mpi() {  # run_mpi OUT: the ci suite's MPI all_reduce, one round
  expect_rc 1 "${BOUND[@]}" -np 2 "$CB_BIN" run --suite ci --only collectives.all_reduce \
    --out "$TMP/$1"
  grep -q 'rank 1 bound to socket [0-9]*\[core 1\[' "$TMP/out" || { cat "$TMP/out"; fail "rank 1 not on core 1"; }
}
# shares OUT LO HI: every MPI record ok, its cpu_share within [LO, HI]; prints them.
shares() {
  py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
lo, hi = float(sys.argv[2]), float(sys.argv[3])
assert len(recs) == 7 and all(r['status'] == 'ok' for r in recs), [r['status'] for r in recs]
s = [r['extra']['host_probe']['cpu_share'] for r in recs]
print(sys.argv[1].split('/')[-1], 'cpu_share', ' '.join('%.2f' % x for x in s))
assert all(r['scope']['kind'] == 'cluster' for r in recs)
assert all(lo <= x <= hi for x in s), (lo, hi, s)
" "$TMP/$1" "$2" "$3"
}

run_mpi quiet
shares quiet 0.75 2.0
ok "alone on their cores: every rank near a whole core"

taskset -c 1 sh -c 'while :; do :; done' &
HOG=$!
trap 'kill $HOG 2>/dev/null; rm -rf "$TMP"' EXIT
sleep 0.3
run_mpi shared
kill $HOG
shares shared 0.05 0.65
ok "other work on rank 1's core: the record carries rank 1's share"
echo "$PASSES passed, 0 failed"
