#!/usr/bin/env bash
# fio refuses a target another process holds open for writing (found through /proc/*/fd and the
# access mode in /proc/*/fdinfo), with exit 2 and a waived record (extra.refused) that names the
# path, the pid and the process; a reader alone does not refuse. The other refusals (not enough
# space, unsafe device) also exit 2 and keep their record. Budget: ~15 s.
source "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || { echo "SKIP: fio is not installed"; exit 77; }
SCR=$TMP/scratch
mkdir -p "$SCR/job"
record() { python3 -c "import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')][0]))" "$1"; }
RUN=(run --suite ci --only io.fio --set io.fio.profiles=seq_read --set io.fio.scratch="$SCR")

# Another job writing a file below the scratch directory (O_WRONLY), and one reading.
sleep 300 3>"$SCR/job/ckpt.bin" &
writer=$!
sleep 300 3<"$SCR/job/ckpt.bin" &
reader=$!
rw=""
trap 'kill $writer $reader $rw 2>/dev/null; rm -rf "$TMP"' EXIT

# 1. Refused: exit 2, the record says why.
expect_rc 2 "$CB_BIN" "${RUN[@]}" --out "$TMP/a"
expect_out "case\(s\) refused"
record "$TMP/a" >"$TMP/a.json"
py "
r = json.load(open(sys.argv[1]))
want = 'refused: scratch directory %s is open for writing by another process: pid %s (sleep) writes %s/job/ckpt.bin' % (sys.argv[2], sys.argv[3], sys.argv[2])
assert r['status'] == 'waived' and r['message'] == want, (r['message'], want)
assert r['extra']['refused'] is True, r['extra']
assert json.load(open(sys.argv[4]))['exit_code'] == 2
" "$TMP/a.json" "$SCR" "$writer" "$TMP/a/run.json"
[ "$(ls -A "$SCR")" = job ] || fail "fio wrote into the refused scratch: $(ls -A "$SCR")"
ok "scratch with a writer (pid $writer): refused, exit 2, record names path, pid and process"

# 2. O_RDWR counts as writing too.
kill $writer
wait $writer 2>/dev/null
sleep 300 3<>"$SCR/job/ckpt.bin" &
rw=$!
expect_rc 2 "$CB_BIN" "${RUN[@]}" --out "$TMP/b"
record "$TMP/b" >"$TMP/b.json"
py "
r = json.load(open(sys.argv[1]))
assert r['message'].endswith('pid %s (sleep) writes %s/job/ckpt.bin' % (sys.argv[2], sys.argv[3])), r['message']
" "$TMP/b.json" "$rw" "$SCR"
ok "O_RDWR holder (pid $rw): refused"

# 3. Only a reader left: fio runs.
kill $rw
wait $rw 2>/dev/null
"$CB_BIN" "${RUN[@]}" --out "$TMP/c" >"$TMP/out" 2>&1
rc=$?
case $rc in 0 | 1 | 4) ;; *) cat "$TMP/out" >&2; fail "with a reader only: exit $rc" ;; esac
record "$TMP/c" >"$TMP/c.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'ok' and 'refused' not in r['extra'], r['message']
" "$TMP/c.json"
ok "a reader alone (pid $reader): fio runs (exit $rc)"

# 4. Not enough space: refused before fio, exit 2, the waived record kept.
expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_write \
  --set io.fio.size=1T --set io.fio.scratch="$SCR" --out "$TMP/d"
record "$TMP/d" >"$TMP/d.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'waived' and r['message'].startswith('refused: profile seq_write needs 4398046511104 B'), r
assert r['extra']['refused'] is True
" "$TMP/d.json"
ok "not enough space: exit 2, record kept"

# 5. An unsafe device target: exit 2, record kept.
expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_write \
  --set io.fio.device=/dev/null --out "$TMP/e"
record "$TMP/e" >"$TMP/e.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'waived' and 'allow_destructive_device=true' in r['message'] and r['extra']['refused'], r
" "$TMP/e.json"
ok "unsafe device: exit 2, record kept"
echo "$PASSES passed, 0 failed"
