#!/usr/bin/env bash
# Bytes are not text: fio's output and a host name holding bytes that are not UTF-8 (\xff\xfe)
# reach records.jsonl, run.json and report.json as valid UTF-8 (U+FFFD for each bad byte), one
# process and under mpirun -np 2 (where a rank that threw used to leave the others hanging).
# A fake fio (tests/integration/fake_fio.sh, FAKE_FIO_MODE=badbytes) runs the real one and puts
# the bytes in its job names, a warning line before its JSON and its stderr.
# Budget: about 15 s.
source "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || { echo "fio not installed"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
FAKE=$CB_SOURCE_DIR/tests/integration/fake_fio.sh
SCR=$TMP/scratch
mkdir -p "$SCR"
export FAKE_FIO_MODE=badbytes
export CLUSTERBENCH_HOSTNAME=$'node\xff\xfe'

# check DIR: every result file is strict UTF-8 JSON; the io.fio record is ok, on the cleaned host,
# with the job name cleaned; `report` reads the run.
check() {
  py "
d = sys.argv[1]
def load(name):  # strict: bytes that are not UTF-8 raise here
    return open(os.path.join(d, name), encoding='utf-8', errors='strict').read()
recs = [json.loads(l) for l in load('records.jsonl').splitlines() if l.strip()]
run = json.loads(load('run.json'))
fio = [r for r in recs if r['benchmark'] == 'io.fio']
assert fio and all(r['status'] == 'ok' for r in fio), recs
host = 'node\ufffd\ufffd'
assert fio[0]['scope']['host'] == host, fio[0]['scope']
assert [e['host'] for e in run['env']] == [host], [e['host'] for e in run['env']]
name = fio[0]['extra']['fio_json']['jobs'][0]['jobname']
assert name.endswith('\ufffd\ufffd'), name
" "$1"
  expect_rc_in "$CB_BIN" report "$1"
  py "
json.loads(open(os.path.join(sys.argv[1], 'report.json'), encoding='utf-8', errors='strict').read())
" "$1"
}
# expect_rc_in CMD...: a run or report that completed (0, 1 or 4: this machine's spec rows decide).
expect_rc_in() {
  timeout 120 "$@" >"$TMP/out" 2>&1
  local rc=$?
  case $rc in 0 | 1 | 4) ;; *) cat "$TMP/out" >&2; fail "exit $rc: $*" ;; esac
}
ARGS=(run --suite ci --only io.fio --set io.fio.profiles=seq_read --set io.fio.scratch="$SCR"
      --set io.fio.binary="$FAKE")

expect_rc_in "$CB_BIN" "${ARGS[@]}" --out "$TMP/one"
check "$TMP/one"
ok "bytes that are not UTF-8 from fio and the host name: the run completes, records are UTF-8"

[ "${CB_HAVE_MPI:-1}" = 1 ] || { echo "no MPI build: the mpirun half is skipped"; exit 0; }
expect_rc_in "${MPIRUN[@]}" -np 2 -x CLUSTERBENCH_HOSTNAME -x FAKE_FIO_MODE "$CB_BIN" "${ARGS[@]}" \
  --out "$TMP/two"
check "$TMP/two"
ok "the same under mpirun -np 2: no hang, records are UTF-8"
