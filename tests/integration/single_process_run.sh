#!/usr/bin/env bash
# The binary alone, without a launcher: a complete run directory whose report rows agree with the
# records they cite; `report` re-renders it with the same verdict. Then the -DCLUSTERBENCH_MPI=OFF
# build: a single-process binary (world size 1) that does the same.
source "$(dirname "$0")/lib.sh"

check_run() {  # check_run DIR: files present, report rows match records
  local dir=$1
  for f in run.json records.jsonl report.md report.json junit.xml gbench.json; do
    [ -s "$dir/$f" ] || fail "$dir/$f missing or empty"
  done
  py "
run = json.load(open(sys.argv[1] + '/run.json'))
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
rep = json.load(open(sys.argv[1] + '/report.json'))
assert run['schema'] == 'clusterbench.run/1' and run['world_size'] == 1, run['world_size']
assert run['exit_code'] == 1 and not run['aborted'] and run['finished_at']
assert len(run['plan']) == 4 and len(recs) == 4, (len(run['plan']), len(recs))
kernels = {r['params']['kernel']: r for r in recs}
assert set(kernels) == {'copy', 'scale', 'add', 'triad'}
for k, r in kernels.items():
    assert r['status'] == 'ok', r
    m = {x['name']: x for x in r['metrics']}
    bpe = {'copy': 16, 'scale': 16, 'add': 24, 'triad': 24}[k]
    n = r['extra']['array_bytes'] // 8
    # bandwidth = bytes per element x elements / median time / 1e9 (docs/metrics.md, STREAM)
    want = bpe * n / r['time']['median'] / 1e9
    assert abs(m['bandwidth']['value'] - want) <= 1e-9 * want, (m, want)
    assert m['bandwidth']['unit'] == 'GB/s' and r['scope']['kind'] == 'node'
    assert r['extra']['validation_relative_error'] <= 1e-13
    assert r['case_key'] == 'compute.memory_bandwidth|{\"kernel\":\"%s\"}|%s' % (k, r['scope']['host'])
rows = {x['id']: x for x in rep['rows']}
triad = rows['host.memory_bandwidth_triad']
assert abs(triad['value'] - {x['name']: x['value'] for x in kernels['triad']['metrics']}['bandwidth']) < 1e-9
assert triad['evidence'] == [kernels['triad']['case_key']], triad['evidence']
cores = rows['host.cpu_cores']
assert cores['outcome'] == 'FAIL' and cores['value'] == run['env'][0]['cpu']['physical_cores']
assert rep['exit_code'] == 1 and rep['verdict'] == 'FAIL'
" "$dir"
  grep -q '<testcase' "$dir/junit.xml" || fail "junit.xml has no testcase"
  grep -q 'host.cpu_cores' "$dir/report.md" || fail "report.md lacks the cpu row"
}

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

# 2. -DCLUSTERBENCH_MPI=OFF: a single-process binary.
NOMPI=$TMP/build-nompi
CB_CCACHE=$(command -v ccache || true)  # reuse compiled objects where ccache is installed
# Unoptimised (-O0): what is tested is that it builds without MPI and runs, not its speed, and
# it compiles faster (3m55 here alone; the test with a Release build took 603 s of a loaded CI
# run).
cmake -S "$CB_SOURCE_DIR" -B "$NOMPI" -DCLUSTERBENCH_MPI=OFF -DCLUSTERBENCH_CUDA=OFF \
  -DCLUSTERBENCH_TESTS=OFF -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O0 -DCMAKE_C_FLAGS=-O0 \
  ${CB_CCACHE:+-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache} >"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log"; fail "configure without MPI"; }
cmake --build "$NOMPI" --target clusterbench -j2 >"$TMP/build.log" 2>&1 || { tail -30 "$TMP/build.log"; fail "build without MPI"; }
if ldd "$NOMPI/clusterbench" | grep -q libmpi; then fail "the MPI=OFF binary links libmpi"; fi
expect_rc 1 "$NOMPI/clusterbench" run --suite ci --only compute.memory_bandwidth --set compute.memory_bandwidth.array_bytes=16M --out "$TMP/nompi"
check_run "$TMP/nompi"
ok "-DCLUSTERBENCH_MPI=OFF builds a single-process binary that runs the suite"

echo "$PASSES passed, 0 failed"
