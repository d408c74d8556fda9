#!/usr/bin/env bash
# Three ways around io.fio's device checks, each refused (exit 2, a `waived` record with
# extra.refused) with the loop device's image and the victim file unchanged (sha256):
#   a symlink to a loop device another process holds open for writing (--set io.fio.device);
#   a ':' in the device path, which fio splits into two files (victim.dat:x writes victim.dat);
#   a custom profile (io.fio.profiles_dir) whose filename= / directory= points outside scratch;
#   a custom profile with an option off the allow-list (issue 46: exec_prerun= running dd onto the
#   loop device, write_iolog= appending to the victim, ioengine=exec, a foreign ${VAR}).
# Needs root and losetup (ctest lock loopdev). Budget: ~10 s.
source "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || { echo "SKIP: fio not installed"; exit 77; }
[ "$(id -u)" -eq 0 ] && command -v losetup >/dev/null || { echo "SKIP: needs root and losetup"; exit 77; }
truncate -s 64M "$TMP/img"
LOOP=$(losetup -f --show "$TMP/img") || { echo "SKIP: no loop device"; exit 77; }
holder=""
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null
  losetup -d "$LOOP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
head -c 4M /dev/urandom >"$TMP/victim.dat"
mkdir -p "$TMP/x" "$TMP/scratch" "$TMP/profiles" "$TMP/elsewhere"
sums() { sha256sum "$TMP/img" "$TMP/victim.dat"; ls "$TMP/elsewhere"; }
sums >"$TMP/sums.before"
BASE=(--suite ci --only io.fio --set io.fio.profiles=seq_write --set io.fio.size=1M
  --set io.fio.repeat=1 --set io.fio.runtime=200ms --spec "$SPECS/cpu-node.json")
# expect_refused NAME REGEX ARGS...: exit 2, one waived record with extra.refused whose message
# matches, and nothing written.
expect_refused() {
  local name=$1 re=$2
  shift 2
  expect_rc 2 "$CB_BIN" run "${BASE[@]}" --out "$TMP/$name" "$@"
  py "
import re
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert len(recs) == 1 and recs[0]['status'] == 'waived' and recs[0]['extra'].get('refused'), recs
assert re.search(sys.argv[2], recs[0]['message']), recs[0]['message']
" "$TMP/$name" "$re"
  sync
  sums | cmp -s - "$TMP/sums.before" || fail "$name: the image, the victim or elsewhere/ changed"
}

# 6. A symlink to a device another process writes: the checks see the device itself.
sleep 600 3<>"$LOOP" &
holder=$!
ln -s "$LOOP" "$TMP/x/devlink"
expect_refused symlink "device $LOOP is open for writing by another process: pid $holder" \
  --set io.fio.device="$TMP/x/devlink" --set io.fio.allow_destructive_device=true
kill "$holder"
wait "$holder" 2>/dev/null
holder=""
ok "symlink to a device open for writing: refused"

# 7. ':' in the target: fio would write victim.dat (and x).
ln -s "$LOOP" "$TMP/victim.dat:x"
expect_refused colon "holds ':', which fio reads specially" \
  --set io.fio.device="$TMP/victim.dat:x" --set io.fio.allow_destructive_device=true
ok "':' in the device path: refused"

# 8. Custom profiles writing outside the scratch directory, without the destructive flag.
printf '[global]\nsize=1M\nruntime=200ms\ntime_based=1\n[seq_write]\nrw=write\nfilename=%s\n' \
  "$TMP/victim.dat" >"$TMP/profiles/seq_write.fio"
expect_refused profile_file "filename=$TMP/victim.dat is outside fio's scratch directory" \
  --set io.fio.profiles_dir="$TMP/profiles" --set io.fio.scratch="$TMP/scratch"
printf '[seq_write]\nrw=write\nsize=1M\nfilename = %s\n' "$LOOP" >"$TMP/profiles/seq_write.fio"
expect_refused profile_dev "filename=$LOOP is outside fio's scratch directory" \
  --set io.fio.profiles_dir="$TMP/profiles" --set io.fio.scratch="$TMP/scratch"
printf '[seq_write]\nrw=write\nsize=1M\ndirectory=%s\n' "$TMP/elsewhere" >"$TMP/profiles/seq_write.fio"
expect_refused profile_dir "directory=$TMP/elsewhere is outside fio's scratch directory" \
  --set io.fio.profiles_dir="$TMP/profiles" --set io.fio.scratch="$TMP/scratch"
ok "custom profiles with filename= (file, device) or directory= outside scratch: refused"
# With the flag, a device another process writes is still refused through the profile.
sleep 600 3<>"$LOOP" &
holder=$!
printf '[seq_write]\nrw=write\nsize=1M\nfilename=%s\n' "$LOOP" >"$TMP/profiles/seq_write.fio"
expect_refused profile_busy "open for writing by another process: pid $holder" \
  --set io.fio.profiles_dir="$TMP/profiles" --set io.fio.scratch="$TMP/scratch" \
  --set io.fio.allow_destructive_device=true
ok "a profile's device open for writing: refused even with allow_destructive_device"
# 9. Options that run a command, write elsewhere or expand a variable clusterbench does not set:
#    refused by name before fio starts (the allow-list, docs/fio.md "Job-file options").
job() { printf '[seq_write]\nrw=write\nsize=1M\ndirectory=${CB_FIO_DIR}\n%s\n' "$1" >"$TMP/profiles/seq_write.fio"; }
job "exec_prerun=dd if=/dev/zero of=$LOOP bs=1M count=1 conv=notrunc"
expect_refused exec_prerun "line 5 .*option 'exec_prerun' is not on the allow-list" \
  --set io.fio.profiles_dir="$TMP/profiles" --set io.fio.scratch="$TMP/scratch"
job "write_iolog=$TMP/victim.dat"
expect_refused write_iolog "option 'write_iolog' is not on the allow-list" \
  --set io.fio.profiles_dir="$TMP/profiles" --set io.fio.scratch="$TMP/scratch"
job "ioengine=exec"
expect_refused engine_exec "ioengine 'exec' is not one of the engines that only move data" \
  --set io.fio.profiles_dir="$TMP/profiles" --set io.fio.scratch="$TMP/scratch"
job '${HOME_OPTION}'
expect_refused foreign_var 'expands \$\{HOME_OPTION\}, which clusterbench does not set' \
  --set io.fio.profiles_dir="$TMP/profiles" --set io.fio.scratch="$TMP/scratch"
ok "custom profiles with exec_prerun=, write_iolog=, ioengine=exec or a foreign \${VAR}: refused"
# A custom profile that stays in the scratch directory still runs.
printf '[seq_write]\nrw=write\nsize=1M\ntime_based=1\nruntime=200ms\ndirectory=${CB_FIO_DIR}\n' \
  >"$TMP/profiles/seq_write.fio"
"$CB_BIN" run "${BASE[@]}" --out "$TMP/inside" --set io.fio.profiles_dir="$TMP/profiles" \
  --set io.fio.scratch="$TMP/scratch" >"$TMP/out" 2>&1
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert len(recs) == 1 and recs[0]['status'] == 'ok', recs
" "$TMP/inside"
ok "a custom profile inside the scratch directory runs"
echo "$PASSES passed, 0 failed"
