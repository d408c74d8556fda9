#!/usr/bin/env bash
# Issue 20: the output filesystem frozen (fsfreeze) in the middle of a run, on a loop-mounted
# ext4 image. The rank that writes the records never waits inside the filesystem (a writer
# process does: core/sink.hpp), so mpirun still ends with exit 3 within the phase deadline + 30 s,
# naming the phase; once the filesystem thaws, the writer puts down what it held: the case
# measured before the abort, and run.json marked aborted. Frozen before the run directory exists:
# exit 3 naming the filesystem, nothing left behind after the thaw. Budget: about 25 s.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
for t in mpirun fsfreeze mkfs.ext4 losetup; do
  command -v $t >/dev/null || fail "$t not installed (scripts/setup.sh installs it)"
done

MNT=$TMP/mnt
loop_fs "$MNT" 64M

quick_spec fsfreeze
deadline=5
start=$(date +%s)
# test.hang with rank 0 pausing 20 ms per batch: about a second, time to freeze after test.quick.
timeout 120 "${MPIRUN[@]}" -np 2 "$CB_TESTBIN" run --suite ci --only test.quick --only test.hang \
  --set test.hang.seconds=0.02 --spec "$TMP/spec.json" --case-timeout 60 \
  --phase-timeout $deadline --out "$MNT/run" >"$TMP/out" 2>&1 &
job=$!
for _ in $(seq 1 300); do
  grep -q '"test.quick"' "$MNT/run/records.jsonl" 2>/dev/null && break
  sleep 0.1
done
grep -q '"test.quick"' "$MNT/run/records.jsonl" || { kill $job; fail "no first record in 30 s"; }
fsfreeze -f "$MNT" || fail "fsfreeze -f"
wait $job
rc=$?
took=$(($(date +%s) - start))
[ "$rc" -eq 3 ] || { cat "$TMP/out" >&2; fsfreeze -u "$MNT"; fail "frozen output: expected exit 3, got $rc"; }
[ "$took" -le $((deadline + 30 + 5)) ] || fail "took $took s (phase deadline $deadline s + 30)"
expect_out "phase deadline of $deadline s passed during recording test.hang .*output filesystem"
# Still frozen: the job is over, the record of test.hang is not on disk yet.
grep -q '"test.hang"' "$MNT/run/records.jsonl" && fail "test.hang's record is on a frozen filesystem?"
ok "output filesystem frozen: mpirun ended with exit 3 in $took s, naming the recording phase"

fsfreeze -u "$MNT" || fail "fsfreeze -u"
for _ in $(seq 1 100); do
  grep -q '"aborted": true' "$MNT/run/run.json" 2>/dev/null && break
  sleep 0.1
done
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert run['aborted'] and run['exit_code'] == 3, run
assert 'recording test.hang' in run['abort_reason'], run['abort_reason']
recs = [json.loads(l) for l in open(d + '/records.jsonl')]
assert [r['benchmark'] for r in recs] == ['test.quick', 'test.hang'], recs
assert all(r['status'] == 'ok' for r in recs), recs
" "$MNT/run"
ok "thawed: the held record and the aborted run.json are written"

# Frozen before the run directory exists: rank 0 must not wait in mkdir. A child of it probes the
# filesystem (half the phase deadline); the job ends with exit 3 naming the folder, blaming no
# rank, and after the thaw no run directory and no process of the job are left.
fsfreeze -f "$MNT" || fail "fsfreeze -f"
start=$(date +%s)
expect_rc 3 timeout 120 "${MPIRUN[@]}" -np 2 "$CB_TESTBIN" run --suite ci --only test.quick \
  --spec "$TMP/spec.json" --phase-timeout $deadline --out "$MNT/pre"
took=$(($(date +%s) - start))
fsfreeze -u "$MNT" || fail "fsfreeze -u"
[ "$took" -le $((deadline + 30)) ] || fail "frozen before the run: took $took s"
expect_out "$MNT: the output filesystem took no write within [0-9.]+ s \(frozen or hung\?\)"
! grep -q "did not finish: rank" "$TMP/out" || fail "frozen before the run: a rank was blamed"
sleep 1
[ ! -e "$MNT/pre" ] || fail "frozen before the run: $MNT/pre was made after the thaw"
! pgrep -f -- "--out $MNT/pre" >/dev/null || fail "frozen before the run: a process was left"
! ls -A "$MNT" | grep -q cb-probe || fail "frozen before the run: the probe left a file"
ok "frozen before the run directory: exit 3 in $took s naming the filesystem, nothing left"

# --resume into a frozen filesystem: the same probe, before the run's lock file is written.
fsfreeze -f "$MNT" || fail "fsfreeze -f"
start=$(date +%s)
expect_rc 3 timeout 120 "${MPIRUN[@]}" -np 2 "$CB_TESTBIN" run --resume "$MNT/run" \
  --spec "$TMP/spec.json" --phase-timeout $deadline
took=$(($(date +%s) - start))
fsfreeze -u "$MNT" || fail "fsfreeze -u"
expect_out "--resume $MNT/run: $MNT/run: the output filesystem took no write within"
! grep -q "did not finish: rank\|a peer did not arrive" "$TMP/out" || fail "--resume frozen: a rank was blamed"
sleep 1
! pgrep -f -- "--resume $MNT/run" >/dev/null || fail "--resume frozen: a process was left"
ok "--resume into a frozen filesystem: exit 3 in $took s naming it, nothing left"
echo "PASS ($PASSES checks)"
