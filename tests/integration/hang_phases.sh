#!/usr/bin/env bash
# Issue 20, "deadlines everywhere": rank 0 and rank 1 each stopped (SIGSTOP) at start-up, in the
# middle of a case and in the report phase, under `mpirun -np 2` with 5 s deadlines. Every job
# ends with exit 3 within the deadline + 30 s, its messages name the phase and the rank and host
# that did not arrive, and where a run directory exists it holds the abort: a failed record for the
# case in progress (whichever rank saw it), run.json aborted with the reason. The stop is the
# test-only CLUSTERBENCH_TEST_STOP=RANK@POINT: the rank stops itself there, as `kill -STOP` would,
# so the moment is exact. Budget: about 60 s.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || fail "mpirun not installed (scripts/setup.sh installs it)"

quick_spec hang-phases
# Each rank its own host name, so that the messages must name the right one.
NAMED=(bash -c 'CLUSTERBENCH_HOSTNAME=cbstop$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$CB_TESTBIN")
deadline=5

# stopped_run NAME RANK@POINT CASES...: the job, timed; $rc, $took; its output in $TMP/NAME.out.
stopped_run() {
  local name=$1 stop=$2
  shift 2
  local start
  start=$(date +%s)
  CLUSTERBENCH_TEST_STOP=$stop timeout 120 "${MPIRUN[@]}" -np 2 "${NAMED[@]}" run --suite ci "$@" \
    --spec "$TMP/spec.json" --case-timeout $deadline --phase-timeout $deadline \
    --out "$TMP/$name" >"$TMP/$name.out" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  cp "$TMP/$name.out" "$TMP/out"
  [ "$rc" -eq 3 ] || { cat "$TMP/out" >&2; fail "$name ($stop): expected exit 3, got $rc"; }
  [ "$took" -le $((deadline + 30)) ] || fail "$name ($stop): took $took s (deadline $deadline s + 30)"
  grep -q "stops itself (SIGSTOP) at ${stop#*@}" "$TMP/out" || fail "$name: rank did not stop"
}

# Start-up: the other rank waits inside MPI_Init; no run directory can exist.
for r in 0 1; do
  other=$((1 - r))
  stopped_run "startup$r" "$r@start-up" --only test.quick
  expect_out "start-up: did not complete within $deadline s \(expected world size 2 \(from OMPI_COMM_WORLD_SIZE\), this is rank $other"
  [ ! -e "$TMP/startup$r" ] || fail "start-up: a run directory was made"
  ok "rank $r stopped at start-up: exit 3 in $took s, start-up phase and world size named"
done

# Mid-case: the case deadline passes on the rank that still runs; it names the stopped one. When
# rank 0 is the one stopped, rank 1 writes the failed record and marks run.json itself.
case_args=(--only test.quick --only test.hang --set test.hang.seconds=0.001)
for r in 0 1; do
  stopped_run "case$r" "$r@case:test.hang" "${case_args[@]}"
  why="case deadline of $deadline s passed during test.hang .*did not finish: rank $r on cbstop$r \(no answer"
  expect_out "$why"
  failed_case "$TMP/case$r" "$why"
  aborted "$TMP/case$r" "$why"
  ok "rank $r stopped mid-case: exit 3 in $took s, failed record and run.json name rank $r on cbstop$r"
done

# Report phase: rank 0 writes the report, rank 1 waits for its verdict.
stopped_run report1 1@report --only test.quick
why="phase deadline of $deadline s passed during report .*did not finish: rank 1 on cbstop1 \(no answer"
expect_out "$why"
aborted "$TMP/report1" "$why"
ok "rank 1 stopped in the report phase: exit 3 in $took s, run.json names rank 1 on cbstop1"
stopped_run report0 0@report --only test.quick
why="phase deadline of $deadline s passed during report .*did not finish: rank 0 on cbstop0 \(no answer.*recorded by rank 1 on cbstop1"
expect_out "$why"
aborted "$TMP/report0" "$why"
# Rank 0, continued by mpirun to be killed, must neither blame rank 1 nor undo the record.
! grep -q "did not finish: rank 1" "$TMP/out" || fail "rank 0, continued to be killed, blamed rank 1"
ok "rank 0 stopped in the report phase: exit 3 in $took s, rank 1 records it in run.json"
echo "PASS ($PASSES checks)"
