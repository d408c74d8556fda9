#!/usr/bin/env bash
# A full output filesystem (loop-mounted ext4 image, filled with fallocate) under `mpirun -np 2`:
# - filled in the middle of a run: exit 3, the message names the file and "No space left on
#   device", and the record measured before stays in records.jsonl;
# - filled while rank 0 is about to write the report (it stops itself there,
#   CLUSTERBENCH_TEST_STOP=0@report, and is continued once the image is full): exit 3, not the
#   verdict, the message says the report could not be written and how to make it later, every
#   record is on disk and `clusterbench report` makes the report once there is room;
# - full before the run starts: exit 2 naming run.json, nothing measured.
# Budget: about 20 s.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
for t in mpirun mkfs.ext4 losetup fallocate; do
  command -v $t >/dev/null || fail "$t not installed (scripts/setup.sh installs it)"
done

MNT=$TMP/mnt
loop_fs "$MNT" 16M -m 0

quick_spec output-full
# fill NAME: takes every free block of the image (files removed by `room`): most at once, the
# rest by writing until the filesystem refuses.
fill() {
  local avail
  sync
  avail=$(df -k --output=avail "$MNT" | tail -1)
  fallocate -l "$(((avail > 256 ? avail - 256 : 0) * 1024))" "$MNT/filler.$1" 2>/dev/null
  dd if=/dev/zero of="$MNT/filler.$1.rest" bs=4k status=none 2>/dev/null
  dd if=/dev/zero of="$MNT/filler.$1.tail" bs=1k conv=fsync status=none 2>/dev/null  # the last blocks
  ! dd if=/dev/zero of="$MNT/filler.$1.probe" bs=4k count=1 conv=fsync status=none 2>/dev/null ||
    fail "the image is not full"
}
room() { rm -f "$MNT"/filler.*; }
# job NAME [ENV...]: starts test.quick then test.hang (about 3 s) into $MNT/NAME, in the background.
job() {
  local name=$1
  shift
  env "$@" timeout 120 "${MPIRUN[@]}" -np 2 "$CB_TESTBIN" run --suite ci --only test.quick \
    --only test.hang --set test.hang.seconds=0.05 --spec "$TMP/spec.json" --case-timeout 60 \
    --phase-timeout 60 --out "$MNT/$name" >"$TMP/$name.out" 2>&1 &
  pid=$!
}
# quick_ok DIR: test.quick's record is on disk and ok.
quick_ok() {
  py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl') if l.strip()]
quick = [r for r in recs if r['benchmark'] == 'test.quick']
assert len(quick) == 1 and quick[0]['status'] == 'ok', recs
" "$1"
}

# 1. Full in the middle: rank 0 stops itself as test.hang starts (after test.quick's record);
# the image is filled, then it goes on: test.hang's record finds no space. The run directory's
# reserve (.cb-reserve, given back at the first write that finds none) takes that record and the
# abort: run.json says aborted, with the reason (issue 46; before, run.json stayed
# aborted:false and the case was lost), and the reserve is gone after the run.
job mid CLUSTERBENCH_TEST_STOP=0@case:test.hang
wait_until 30 grep -q "stops itself (SIGSTOP) at case:test.hang" "$TMP/mid.out" ||
  { kill $pid; cat "$TMP/mid.out" >&2; fail "rank 0 did not stop at test.hang"; }
quick_ok "$MNT/mid"
# A blank line (readers skip it) takes the rest of records.jsonl's last block: test.hang's record
# then needs a block of its own, which the filled image does not have.
bs=$(stat -f -c %S "$MNT")
tail_bytes=$(($(stat -c %s "$MNT/mid/records.jsonl") % bs))
((tail_bytes == 0)) || printf '%*s\n' $((bs - tail_bytes - 1)) '' >>"$MNT/mid/records.jsonl"
(($(stat -c %s "$MNT/mid/records.jsonl") % bs == 0)) || fail "records.jsonl does not end a block"
fill mid
pkill -CONT -f -- "clusterbench_testbin run .*--out $MNT/mid"
wait $pid
rc=$?
cp "$TMP/mid.out" "$TMP/out"
[ $rc -eq 3 ] || { cat "$TMP/out" >&2; fail "full mid-run: expected exit 3, got $rc"; }
expect_out "$MNT/mid/records.jsonl: write: No space left on device"
quick_ok "$MNT/mid"
py "
run = json.load(open(sys.argv[1] + '/run.json'))
assert run['aborted'] is True and 'No space left on device' in run['abort_reason'], run.get('abort_reason')
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl') if l.strip()]
hang = [r for r in recs if r['benchmark'] == 'test.hang']
assert len(hang) == 1 and hang[0]['status'] == 'ok', hang
" "$MNT/mid"
[ ! -e "$MNT/mid/.cb-reserve" ] || fail "the reserve is still there after the run"
room
expect_rc 3 "$CB_TESTBIN" report "$MNT/mid"
expect_out "ABORTED"
ok "full mid-run: exit 3 naming records.jsonl, both records kept, run.json aborted, report ABORTED"
room

# 2. Full at the report: rank 0 stops itself there; fill, continue it.
job rep CLUSTERBENCH_TEST_STOP=0@report
wait_until 30 grep -q "stops itself (SIGSTOP) at report" "$TMP/rep.out" ||
  { kill $pid; fail "rank 0 did not stop"; }
fill rep
pkill -CONT -f -- "clusterbench_testbin run .*--out $MNT/rep"
wait $pid
rc=$?
cp "$TMP/rep.out" "$TMP/out"
[ $rc -eq 3 ] || { cat "$TMP/out" >&2; fail "full at the report: expected exit 3, got $rc"; }
expect_out "$MNT/rep/[a-z.]+[0-9]*: write: No space left on device"
expect_out "run not complete: its report could not be .*clusterbench report $MNT/rep"
[ ! -e "$MNT/rep/report.md" ] || fail "a report.md was left"
quick_ok "$MNT/rep"
room
expect_rc 0 "$CB_TESTBIN" report "$MNT/rep"
[ -s "$MNT/rep/report.md" ] || fail "report made later: no report.md"
ok "full at the report: exit 3, no partial report, made later by \`report\` (exit 0)"

# 3. Full before the run: nothing can be recorded, refused.
fill pre
expect_rc 2 "${MPIRUN[@]}" -np 2 "$CB_TESTBIN" run --suite ci --only test.quick \
  --spec "$TMP/spec.json" --out "$MNT/pre"
expect_out "$MNT/pre[^ ]*: .*No space left on device"
room
expect_rc 0 "${MPIRUN[@]}" -np 2 "$CB_TESTBIN" run --suite ci --only test.quick \
  --spec "$TMP/spec.json" --out "$MNT/pre"
ok "full before the run: exit 2 naming the run directory; the same command works once there is room"
echo "PASS ($PASSES checks)"
