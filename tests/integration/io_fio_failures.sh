#!/usr/bin/env bash
# io.fio's failure paths, each leaving the scratch directory empty:
#  - direct=1 refused with EINVAL (a fake fio that fails like fio on such a filesystem the first
#    time) -> rerun buffered (real fio), recorded as direct=false with fio's message;
#  - ENOSPC from fio (fake fio printing fio 3.33's real ENOSPC output) -> failed with fio's message;
#  - fio missing -> waived "fio not found";
#  - a run that would not fit in the scratch filesystem -> refused before fio starts (waived,
#    extra.refused; the run exits 2).
# Budget: about 10 s.
source "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || { echo "fio not installed"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# run_cb CMD...: a run that completed; its verdict (0, 1 or 4) depends on this machine's spec rows.
run_cb() {
  "$@" >"$TMP/out" 2>&1
  local rc=$?
  case $rc in 0 | 1 | 4) ;; *) cat "$TMP/out" >&2; fail "exit $rc: $*" ;; esac
}
FAKE=$CB_SOURCE_DIR/tests/integration/fake_fio.sh
SCR=$TMP/scratch
mkdir -p "$SCR"
scratch_empty() { [ -z "$(ls -A "$SCR")" ] || fail "$1: scratch not empty: $(ls -AR "$SCR")"; }
record() {  # record DIR: the single io.fio record as JSON on stdout
  python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]+'/records.jsonl')]; assert len(r)==1, r; print(json.dumps(r[0]))" "$1"
}

# EINVAL on direct=1 -> buffered retry.
FAKE_FIO_MODE=einval FAKE_FIO_LOG=$TMP/fake.log FAKE_FIO_FDS=$TMP/fds run_cb "$CB_BIN" run --suite ci --only io.fio \
  --set io.fio.profiles=rand_read --set io.fio.scratch="$SCR" --set io.fio.binary="$FAKE" --out "$TMP/einval"
scratch_empty einval
# The first run retried buffered; the 4 other runs went buffered at once: 5 runs, all direct=0.
[ "$(sort -u "$TMP/fake.log")" = 0 ] && [ "$(wc -l <"$TMP/fake.log")" -eq 5 ] ||
  fail "the runs did not all run with CB_FIO_DIRECT=0: $(cat "$TMP/fake.log")"
record "$TMP/einval" >"$TMP/einval.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'ok', r
x = r['extra']
assert x['direct'] is False and x['fio_env']['CB_FIO_DIRECT'] == '0'
assert 'direct=1 refused (EINVAL)' in x['direct_fallback'], x['direct_fallback']
assert 'err=22' in x['direct_fallback'] and 'does not support direct=1' in x['direct_fallback']
assert x['fio_json']['jobs'][0]['job options'] == {'rw': 'randread', 'bs': '4k', 'iodepth': '32', 'numjobs': '4'}
m = {k['name']: k['reps'][-1] for k in r['metrics']}  # the last run's, as in fio_json
assert abs(m['read_bw'] - x['fio_json']['jobs'][0]['read']['bw_bytes'] / 1e9) < 1e-12
" "$TMP/einval.json"
ok "EINVAL on direct=1 -> buffered rerun recorded"
# fio gets stdin, stdout and stderr and nothing else of ours (MPI's sockets and pipes, our files).
grep -q '^2 .*/stderr$' "$TMP/fds" || fail "no captured stderr in: $(cat "$TMP/fds")"
extra=$(awk '$1 > 2' "$TMP/fds")
[ -z "$extra" ] || fail "descriptors leaked into fio: $extra"
ok "fio inherits only stdin, stdout and stderr"

# ENOSPC -> failed with fio's message; the file the job left is removed.
FAKE_FIO_MODE=enospc CB_FIXTURES=$CB_FIXTURES run_cb "$CB_BIN" run --suite ci --only io.fio \
  --set io.fio.profiles=seq_write --set io.fio.scratch="$SCR" --set io.fio.binary="$FAKE" --out "$TMP/enospc"
scratch_empty enospc
record "$TMP/enospc" >"$TMP/enospc.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'failed', r
assert r['error']['library'] == 'fio' and r['error']['code'] == '28', r['error']
assert 'No space left on device' in r['message'] and 'err=28/file:io_u.c:1876' in r['message'], r['message']
assert r['metrics'] == []
# What it measured stays (issue 46): the disk it ran on, how fio ran, fio's own output.
x = r['extra']
assert x['scratch_device'] and x['scratch'] and x['profile'] == 'seq_write', sorted(x)
assert x['fio_exit_code'] == [1] and x['fio_command'][-1].endswith('seq_write.fio'), x['fio_exit_code']
text = open(sys.argv[2]).read()
fixture = json.loads(text[text.index('{'):])  # fio prints its error lines before the JSON
assert x['fio_json']['jobs'] == fixture['jobs'], 'fio_json is not fio\'s output'
" "$TMP/enospc.json" "$CB_FIXTURES/fio/fio-3.33-enospc.json"
ok "ENOSPC -> failed with fio's message, scratch emptied, the disk and fio's output kept"

# fio missing -> waived.
run_cb "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_read \
  --set io.fio.binary=no-such-fio-binary --set io.fio.scratch="$SCR" --out "$TMP/missing"
record "$TMP/missing" >"$TMP/missing.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'waived' and r['message'].startswith('fio not found'), r
" "$TMP/missing.json"
ok "missing fio -> waived"

# Would not fit: 4 jobs x 1 TiB in the scratch filesystem -> refused before fio runs.
expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_write \
  --set io.fio.size=1T --set io.fio.scratch="$SCR" --out "$TMP/full"
scratch_empty nospace
record "$TMP/full" >"$TMP/full.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'waived' and r['message'].startswith('refused: profile seq_write needs 4398046511104 B'), r
" "$TMP/full.json"
ok "run larger than free space -> refused"

# A scratch "directory" that is a file, or does not exist -> refused naming the knob and path.
: >"$TMP/a-file"
expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_write \
  --set io.fio.scratch="$TMP/a-file" --out "$TMP/notdir"
record "$TMP/notdir" >"$TMP/notdir.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'waived' and r['extra']['refused'], r
assert r['message'] == 'refused: --set io.fio.scratch ' + sys.argv[2] + ' is not a directory', r
" "$TMP/notdir.json" "$TMP/a-file"
expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_write \
  --set io.fio.scratch="$TMP/no-such-dir" --out "$TMP/nodir"
record "$TMP/nodir" >"$TMP/nodir.json"
py "
r = json.load(open(sys.argv[1]))
assert r['message'].endswith('no-such-dir is not a directory (it does not exist)'), r
" "$TMP/nodir.json"
ok "scratch that is a file or missing -> refused, naming --set io.fio.scratch and the path"
# The report says what the exit code says: refused (2) outranks the FAIL rows of the case.
py "
j = json.load(open(sys.argv[1] + '/report.json'))
assert j['exit_code'] == 2, j['exit_code']
assert any(w.startswith('io.fio|') and ': refused: ' in w and 'is not a directory' in w for w in j['warnings']), j['warnings']
assert '**Verdict: REFUSED** (exit 2' in open(sys.argv[1] + '/report.md').read()
" "$TMP/nodir"
expect_rc 2 "$CB_BIN" report "$TMP/nodir"
expect_out "VERDICT: REFUSED \\(exit 2\\)"
ok "a refused case: report.json, report.md and clusterbench report all say exit 2"

# A process fio left behind in its group is killed when fio exits, before the scratch is removed.
FAKE_FIO_MODE=orphan run_cb "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_read \
  --set io.fio.scratch="$SCR" --set io.fio.binary="$FAKE" --out "$TMP/orphan"
sleep 0.5
! pgrep -f "sleep 31.4159" >/dev/null || fail "fio's leftover process still runs: $(pgrep -af 'sleep 31.4159')"
scratch_empty orphan
ok "a process fio leaves behind is killed with its group; scratch emptied"

# fio killed by a signal, or silent: failed records that say so.
for mode in segv silent; do
  FAKE_FIO_MODE=$mode run_cb "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_read \
    --set io.fio.scratch="$SCR" --set io.fio.binary="$FAKE" --out "$TMP/$mode"
  scratch_empty "$mode"
  record "$TMP/$mode" >"$TMP/$mode.json"
  py "
r, mode = json.load(open(sys.argv[1])), sys.argv[2]
assert r['status'] == 'failed', r
want = 'killed by signal 11 (SIGSEGV)' if mode == 'segv' else 'exit 0'
assert r['error']['code'] == want, r['error']
assert 'no output on stdout' in r['message'] and '( (' not in r['message'], r['message']
" "$TMP/$mode.json" "$mode"
done
ok "fio killed by SIGSEGV or printing nothing -> failed, saying which"

# Knobs fio would only read when it starts: bad input before anything runs, --dry-run too.
for kv in size=abc runtime=abc runtime=0 ramp=xyz ramp=2parsecs; do
  expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.$kv --set io.fio.scratch="$SCR" \
    --dry-run --out "$TMP/knob"
  expect_out "--set io.fio.${kv%%=*}"
  expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.$kv --set io.fio.scratch="$SCR" \
    --out "$TMP/knob.$kv"
  [ ! -e "$TMP/knob.$kv/records.jsonl" ] || [ ! -s "$TMP/knob.$kv/records.jsonl" ] ||
    fail "io.fio.$kv: a record was written: $(cat "$TMP/knob.$kv/records.jsonl")"
done
ok "io.fio size, runtime and ramp that fio could not read -> exit 2 at plan time"

# A raw block device without the explicit knob -> refused, nothing opened for writing.
expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_write \
  --set io.fio.device=/dev/null --out "$TMP/dev"
record "$TMP/dev" >"$TMP/dev.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'waived' and 'allow_destructive_device=true' in r['message'], r
" "$TMP/dev.json"
expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.profiles=seq_write \
  --set io.fio.device=/dev/null --set io.fio.allow_destructive_device=true --out "$TMP/dev2"
record "$TMP/dev2" >"$TMP/dev2.json"
py "
r = json.load(open(sys.argv[1]))
assert r['status'] == 'waived' and r['message'] == 'refused: /dev/null is not a block device', r
" "$TMP/dev2.json"
ok "raw device refusals"
echo "PASS ($PASSES checks)"
