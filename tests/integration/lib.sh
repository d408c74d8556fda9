# Shared helpers of the integration tests (sourced). Each test gets a scratch directory that is
# removed on exit, and fails loudly with what it expected.
set -uo pipefail
: "${CB_BIN:?CB_BIN must name the clusterbench binary}"
CB_SOURCE_DIR=${CB_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CB_FIXTURES=${CB_FIXTURES:-$CB_SOURCE_DIR/tests/fixtures}
SPECS=$CB_SOURCE_DIR/reports/specs
TMP=$(mktemp -d /tmp/cbtest.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
PASSES=0

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { PASSES=$((PASSES + 1)); echo "ok: $*"; }

# expect_rc WANT CMD...: runs CMD, output in $TMP/out, and checks its exit code.
expect_rc() {
  local want=$1; shift
  "$@" >"$TMP/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    cat "$TMP/out" >&2
    fail "expected exit $want, got $rc: $*"
  fi
}
# expect_out REGEX: the last command's output matches.
expect_out() { grep -Eq -- "$1" "$TMP/out" || { cat "$TMP/out" >&2; fail "output lacks /$1/"; }; }
# nvml_driver CUDA VERSION OUT: the fake NVML's description of h100x8.json (driver 535.161.08,
# CUDA 12.2) with another driver: its CUDA version (13000) and version text (580.65.06).
nvml_driver() {
  python3 - "$CB_FIXTURES/nvml/h100x8.json" "$3" "$1" "$2" <<'P'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["cuda_driver_version"], doc["driver_version"] = int(sys.argv[3]), sys.argv[4]
json.dump(doc, open(sys.argv[2], "w"))
P
}

# stream_spec FILE [THRESHOLD [NAME]]: a spec table with one fail row per STREAM kernel
# (bw.copy ... bw.triad), bandwidth >= THRESHOLD GB/s (default 0.001: any machine meets it).
stream_spec() {
  python3 - "$1" "${2:-0.001}" "${3:-stream-test}" <<'P'
import json, sys
rows = [{"id": "bw." + k, "title": k, "source": "test", "severity": "fail",
         "select": {"benchmark": "compute.memory_bandwidth", "params": {"kernel": k}, "metric": "bandwidth"},
         "scope": "node", "aggregate": "each", "op": ">=", "value": float(sys.argv[2]), "unit": "GB/s"}
        for k in ("copy", "scale", "add", "triad")]
json.dump({"schema": "clusterbench.spec/1", "name": sys.argv[3], "requirements": rows}, open(sys.argv[1], "w"))
P
}

# py EXPR...: evaluates Python with json loaded; for assertions on result files.
py() { python3 -c "import json,sys,os
$1" "${@:2}" || fail "python check failed: $1"; }

# The mpirun flags docs/design.md gives: root, and no binding for threaded host benchmarks.
MPIRUN=(mpirun --bind-to none --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)

# kill9_after_first_record PID DIR: waits (up to 30 s) for DIR/records.jsonl to hold a record,
# then kill -9s PID and reaps it; sets $n to the records on disk, which must be 1 to 3.
kill9_after_first_record() {
  local pid=$1 dir=$2
  for _ in $(seq 1 300); do
    [ -s "$dir/records.jsonl" ] && break
    sleep 0.1
  done
  [ -s "$dir/records.jsonl" ] || { kill -9 "$pid"; fail "no record after 30 s"; }
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
  n=$(wc -l <"$dir/records.jsonl")
  [ "$n" -ge 1 ] && [ "$n" -lt 4 ] || fail "expected 1..3 records after the kill, got $n"
}

# our_fio: the fio processes of this test (fio and its job processes), by the CB_FIO_DIR below
# $TMP they inherit.
our_fio() {
  for p in $(pgrep -x fio); do
    { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -q "^CB_FIO_DIR=$TMP/" && echo "$p"
  done
  return 0
}
# wait_for_our_fio PID LOG: waits up to 20 s for fio and at least one of its job processes; else
# kills PID, prints LOG and fails.
wait_for_our_fio() {
  for _ in $(seq 1 200); do
    [ "$(our_fio | wc -l)" -ge 2 ] && return 0
    sleep 0.1
  done
  kill -9 "$1"
  cat "$2"
  fail "fio did not start its jobs"
}

# quick_spec NAME: writes $TMP/spec.json, a table of one fail row that test.quick (of the test
# binary) ran, named NAME: what the fault tests judge.
quick_spec() {
  cat >"$TMP/spec.json" <<J
{"schema": "clusterbench.spec/1", "name": "$1", "requirements": [
 {"id": "quick", "title": "quick case ran", "source": "test", "severity": "fail",
  "select": {"benchmark": "test.quick", "metric": "rate"}, "scope": "cluster", "aggregate": "each",
  "op": ">=", "value": 1, "unit": "count"}]}
J
}

# loop_fs MNT SIZE: an ext4 image of SIZE (truncate's syntax) loop-mounted at MNT, unmounted (and
# thawed) when the test ends. Extra mkfs.ext4 options may follow.
loop_fs() {
  local mnt=$1 size=$2
  shift 2
  mkdir -p "$mnt"
  truncate -s "$size" "$TMP/fs.img"
  mkfs.ext4 -q -F "$@" "$TMP/fs.img" || fail "mkfs.ext4"
  mount -o loop "$TMP/fs.img" "$mnt" || fail "cannot loop-mount a scratch image"
  trap 'pkill -KILL -f -- "--out '"$mnt"'/"; fsfreeze -u "'"$mnt"'" 2>/dev/null; sleep 0.3
        umount "'"$mnt"'" 2>/dev/null; rm -rf "$TMP"' EXIT
}

# wait_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds; false after SECONDS.
wait_until() {
  local tries=$(($1 * 10))
  shift
  for _ in $(seq 1 "$tries"); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

# The abort the fault tests expect, on a run of test.quick then test.hang (the test binary):
# aborted DIR REGEX: run.json is aborted (exit_code 3) with a reason matching REGEX.
aborted() {
  py "
import re
run = json.load(open(sys.argv[1] + '/run.json'))
assert run['aborted'] and run['exit_code'] == 3, run
assert re.search(sys.argv[2], run['abort_reason']), run['abort_reason']
" "$1" "$2"
}
# failed_case DIR REGEX: test.quick ok, test.hang's record failed with a message matching REGEX.
failed_case() {
  py "
import re
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
quick = [r for r in recs if r['benchmark'] == 'test.quick']
hang = [r for r in recs if r['benchmark'] == 'test.hang']
assert len(quick) == 1 and quick[0]['status'] == 'ok', quick
assert len(hang) == 1 and hang[0]['status'] == 'failed', hang
assert re.search(sys.argv[2], hang[0]['message']), hang[0]['message']
" "$1" "$2"
}

# bare_root: $TMP/root, a writable overlay over the cached bare Debian root
# (scripts/rootfs-minbase.sh; a copy where overlays cannot be mounted) with /proc, /sys and /dev
# bound; everything is unmounted on exit. in_root CMD then runs the bash line CMD there, with a
# clean environment and no PATH of ours. Needs root; fails (never skips) without mmdebstrap.
MOUNTS=()
bare_root() {
  [ "$(id -u)" = 0 ] || fail "needs root (chroot)"
  CHROOT=$(command -v chroot) || fail "no chroot (coreutils)"
  RFS=$(bash "$CB_SOURCE_DIR/scripts/rootfs-minbase.sh") ||
    fail "cannot make the bare root filesystem (mmdebstrap; scripts/setup.sh installs it)"
  R=$TMP/root
  trap bare_root_cleanup EXIT
  mkdir -p "$R" "$TMP/upper" "$TMP/work"
  mnt -t overlay overlay -o "lowerdir=$RFS,upperdir=$TMP/upper,workdir=$TMP/work" "$R" 2>/dev/null ||
    { rmdir "$R"; cp -a "$RFS" "$R"; }
  # rslave: the unmount at exit must not travel back to the host's own /dev/pts, /sys/fs/cgroup
  # (shared mounts on a systemd host).
  for fs in proc sys dev; do
    mnt --rbind "/$fs" "$R/$fs" || fail "cannot bind /$fs"
    mount --make-rslave "$R/$fs" || fail "cannot make $R/$fs a slave mount"
  done
}
bare_root_cleanup() {
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[i]}" 2>/dev/null; done
  rm -rf --one-file-system "$TMP"  # never into a /proc, /sys or /dev still bound
}
mnt() { mount "$@" && MOUNTS+=("${@: -1}"); }
in_root() {
  env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    CLUSTERBENCH_NVML_LIB=/nonexistent.so CLUSTERBENCH_ROUNDS="${CLUSTERBENCH_ROUNDS:-}" \
    "$CHROOT" "$R" bash -c "$1"
}
