#!/usr/bin/env bash
# Issue 20, "a dead rank becomes a failed record": under `mpirun -np 2`, during a case, rank 0 or
# rank 1 is killed with SIGKILL, or the job is cancelled (SIGTERM to mpirun). mpirun then sends
# the survivors SIGTERM and, a second later, SIGKILL. Each time the case in progress gets exactly
# one failed record and run.json is aborted with exit_code 3: rank 0 writes them when it lives;
# when rank 0 is the one killed, rank 1 writes them ("recorded by rank 1"), having found that rank
# 0 neither said it records the abort nor answers. The job's own exit code is mpirun's (137 after
# a SIGKILL). Budget: about 30 s.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || fail "mpirun not installed (scripts/setup.sh installs it)"

quick_spec rank-kill9
NAMED=(bash -c 'CLUSTERBENCH_HOSTNAME=cbkill$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$CB_TESTBIN")

# rank_pid DIR RANK: the pid of that rank of the job writing DIR: started by mpirun (not rank 0's
# record writer, which has rank 0's command line and environment), its environment names the rank.
rank_pid() {
  for p in $(pgrep -f -- "clusterbench_testbin run .*--out $1"); do
    [ "$(ps -o comm= -p "$(ps -o ppid= -p "$p" | tr -d ' ')")" = mpirun ] || continue
    { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" &&
      echo "$p" && return
  done
}

# killed_run NAME WHAT [S]: starts the job (test.quick, then test.hang sleeping S s per batch,
# default 60), waits for the first record and for test.hang to begin, then does WHAT (rank0,
# rank1, writer or cancel); sets $rc, $took.
killed_run() {
  local name=$1 what=$2 dir=$TMP/$1 start seconds=${3:-60}
  start=$(date +%s)
  timeout 60 "${MPIRUN[@]}" -np 2 "${NAMED[@]}" run --suite ci --only test.quick \
    --only test.hang --set test.hang.seconds=$seconds --spec "$TMP/spec.json" --case-timeout 120 \
    --out "$dir" >"$TMP/$name.out" 2>&1 &
  local job=$!
  wait_until 30 test -s "$dir/records.jsonl" ||
    { kill "$job"; cat "$TMP/$name.out" >&2; fail "$name: no record"; }
  sleep 1  # test.hang has started: its record is what the kill must not lose
  case $what in
    rank0 | rank1)
      local pid
      pid=$(rank_pid "$dir" "${what#rank}")
      [ -n "$pid" ] || fail "$name: no process of $what"
      kill -9 "$pid"
      ;;
    cancel) pkill -TERM -f "^mpirun .*--out $dir" ;;
    writer)  # rank 0's record writer: its own session, the rank's command line
      local w
      for w in $(pgrep -f -- "clusterbench_testbin run .*--out $dir"); do
        [ "$(cat "/proc/$w/comm" 2>/dev/null)" = cb-record-write ] && kill -9 "$w"
      done
      ;;
  esac
  wait "$job"
  rc=$?
  took=$(($(date +%s) - start))
  cp "$TMP/$name.out" "$TMP/out"
  [ "$took" -le 30 ] || fail "$name: took $took s"
}
# recorded DIR REGEX: test.quick ok; one failed test.hang record and run.json aborted, both
# with a message matching REGEX (lib.sh).
recorded() {
  failed_case "$1" "$2"
  aborted "$1" "$2"
}

killed_run kill0 rank0
[ "$rc" -eq 137 ] || { cat "$TMP/out" >&2; fail "rank 0 killed: mpirun exit $rc, expected 137"; }
recorded "$TMP/kill0" "terminated by signal SIGTERM .*did not finish: rank 0 on cbkill0 \(no answer.*recorded by rank 1 on cbkill1"
ok "rank 0 killed (SIGKILL) mid-case: rank 1 wrote the failed record and run.json ($took s)"

killed_run kill1 rank1
[ "$rc" -eq 137 ] || { cat "$TMP/out" >&2; fail "rank 1 killed: mpirun exit $rc, expected 137"; }
recorded "$TMP/kill1" "^(aborted: )?terminated by signal SIGTERM \(a rank died, or the job was cancelled\) during test.hang"
! grep -q "recorded by rank 1" "$TMP/kill1/run.json" || fail "rank 1 killed: it recorded"
ok "rank 1 killed (SIGKILL) mid-case: rank 0 wrote the failed record and run.json ($took s)"

! grep -q "recorded by rank 1" "$TMP/out" || fail "rank 1 killed: a message claims rank 1 recorded"

# The record writer killed: rank 0 writes the case's records and the abort itself.
killed_run writer writer 0.05
[ "$rc" -eq 3 ] || { cat "$TMP/out" >&2; fail "record writer killed: exit $rc, expected 3"; }
expect_out "recorded test.hang .* and the abort directly"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert [r['benchmark'] for r in recs] == ['test.quick', 'test.hang'], recs
run = json.load(open(sys.argv[1] + '/run.json'))
assert run['aborted'] and run['exit_code'] == 3, run
assert 'record writer process' in run['abort_reason'], run['abort_reason']
" "$TMP/writer"
ok "record writer killed: the case's record and the aborted run.json written by rank 0 ($took s)"

killed_run cancel cancel
[ "$rc" -ne 0 ] || fail "cancelled job: exit 0"
recorded "$TMP/cancel" "^(aborted: )?terminated by signal SIGTERM"
! grep -q "recorded by rank 1" "$TMP/cancel/run.json" "$TMP/cancel/records.jsonl" ||
  fail "cancelled job: rank 1 recorded although rank 0 was alive"
ok "job cancelled (SIGTERM to mpirun): rank 0 wrote one failed record, rank 1 none (exit $rc)"
echo "PASS ($PASSES checks)"
