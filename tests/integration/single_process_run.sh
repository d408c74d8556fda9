#!/usr/bin/env bash
# The binary alone, without a launcher: a complete run directory whose report rows agree with the
# records they cite; `report` re-renders it with the same verdict. (The -DCLUSTERBENCH_MPI=OFF
# binary doing the same: single_process_nompi.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/check_run.sh"

# 1. The MPI build run without mpirun (singleton).
expect_rc 1 "$CB_BIN" run --suite ci --only compute.memory_bandwidth --set compute.memory_bandwidth.array_bytes=16M --out "$TMP/run"
expect_out "VERDICT: FAIL \(exit 1\)"
check_run "$TMP/run"
ok "single process run writes a complete, consistent run directory"
# The console's line per case: its place in the plan and the headline number of its record, to
# 4 significant digits, with its repetitions and spread (core/case_line.hpp).
py "
import re
out = open(sys.argv[1]).read()
recs = [json.loads(l) for l in open(sys.argv[2] + '/records.jsonl')]
for i, r in enumerate(recs, 1):
    m = r['metrics'][0]
    pat = (r'^\[%d/4, [0-9]+ s, about [0-9]+ s left\] compute.memory_bandwidth \{\"kernel\":\"%s\"\} '
           r'[^ ]+: bandwidth ([0-9.]+) GB/s \(%d reps, spread [0-9.]+%%\)$') % (i, r['params']['kernel'], len(m['reps']))
    got = re.search(pat, out, re.M)
    assert got, (pat, out[:2000])
    assert abs(float(got.group(1)) - m['value']) <= 0.0005 * m['value'], (got.group(1), m['value'])
assert 'manual_time' not in out, 'Google Benchmark batch lines on the console'
" "$TMP/out" "$TMP/run"
ok "the console prints one line per case with its headline number"

expect_rc 1 "$CB_BIN" report "$TMP/run"
expect_out "VERDICT: FAIL \(exit 1\)"
ok "report re-renders with the same verdict"

# Default directory: results/<run-id> with results/latest pointing at it.
( cd "$TMP" && "$CB_BIN" run --suite ci --only compute.memory_bandwidth --set compute.memory_bandwidth.array_bytes=8M >/dev/null 2>&1 )
[ -L "$TMP/results/latest" ] || fail "results/latest is not a symlink"
[ -s "$TMP/results/latest/run.json" ] || fail "results/latest/run.json missing"
id=$(basename "$(readlink "$TMP/results/latest")")
[[ "$id" =~ ^[0-9]{8}T[0-9]{6}Z-.+ ]] || fail "run id '$id' is not <UTC>-<host>"
ok "default results/<run-id> and results/latest"

# The version is the build's (computed at build time, not when CMake configured).
if sha=$(git -C "$CB_SOURCE_DIR" describe --always --dirty --abbrev=12 2>/dev/null); then
  expect_rc 0 "$CB_BIN" --version
  expect_out "^clusterbench [0-9.]+\\+$sha\$"
  py "
run = json.load(open(sys.argv[1] + '/run.json'))
assert run['version'].endswith('+' + sys.argv[2]), (run['version'], sys.argv[2])
" "$TMP/results/latest" "$sha"
  ok "--version and run.json carry the source tree's git describe ($sha)"
fi

echo "$PASSES passed, 0 failed"
