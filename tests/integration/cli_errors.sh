#!/usr/bin/env bash
# Bad input: each case exits 2 with an error naming the file and line/column or field.
source "$(dirname "$0")/lib.sh"

# A command-line error names the subcommand it is about.
expect_rc 2 "$CB_BIN" io make-dataset
expect_out "^clusterbench io make-dataset: dir is required$"
expect_rc 2 "$CB_BIN" run --no-such-option
expect_out "^clusterbench run: The following argument was not expected: --no-such-option$"
# Issue 46: an option given an empty value is not taken as "not given".
for opt in --spec --out; do
  expect_rc 2 "$CB_BIN" run --suite ci --dry-run "$opt" ''
  expect_out "^clusterbench: $opt: empty value; name it, or leave the option out$"
done
ok "command-line errors name the subcommand (exit 2)"

# A malformed spec: file and line/column.
printf '{\n  "schema": "clusterbench.spec/1",\n  "name": "x",\n  "requirements": [ oops ]\n}\n' >"$TMP/bad.json"
expect_rc 2 "$CB_BIN" run --suite ci --spec "$TMP/bad.json" --out "$TMP/r0"
expect_out "bad.json: .*line 4, column"
ok "malformed spec names file, line and column"

# A spec row missing a field: file, row and field.
cat >"$TMP/nofield.json" <<'J'
{"schema": "clusterbench.spec/1", "name": "x", "requirements": [
 {"id": "r1", "title": "t", "source": "s", "severity": "fail",
  "select": {"env": "/cpu/physical_cores"}, "scope": "node", "aggregate": "each", "op": ">="}]}
J
expect_rc 2 "$CB_BIN" run --suite ci --spec "$TMP/nofield.json" --out "$TMP/r1"
expect_out "nofield.json: .*requirement 'r1': missing field 'value'"
ok "spec row without a value names the row and field"

# A spec row whose unit differs from its env field's unit.
sed 's/"op": ">="}/"op": ">=", "value": 64, "unit": "GiB"}/' "$TMP/nofield.json" >"$TMP/unit.json"
expect_rc 2 "$CB_BIN" run --suite ci --spec "$TMP/unit.json" --out "$TMP/r2"
expect_out "requirement 'r1': field 'unit' is 'GiB' but /cpu/physical_cores is in 'count'"
ok "env unit mismatch is an error"

# An unknown --only pattern lists the known benchmarks.
expect_rc 2 "$CB_BIN" run --suite ci --only 'nosuch.*' --out "$TMP/r3"
expect_out "matches no benchmark; known benchmarks:"
expect_out "compute.memory_bandwidth"
ok "unknown --only lists the known benchmarks"
# --only takes its globs space- or comma-separated (a comma list is not one unknown pattern).
expect_rc 0 "$CB_BIN" run --suite ci --dry-run --only 'compute.memory_*, io.fio' compute.gemm \
  --out "$TMP/r3"
py "
import re
ids = sorted(set(re.findall(r'^ +[0-9.]+ +node +([a-z_.]+) ', open(sys.argv[1]).read(), re.M)))
assert ids == ['compute.gemm', 'compute.memory_bandwidth', 'io.fio'], ids
" "$TMP/out"
# Nothing but commas is an error naming the value, and never takes the next option as a glob.
expect_rc 2 "$CB_BIN" run --suite ci --dry-run --only ',' --out "$TMP/r3"
expect_out "^clusterbench run: --only ',' holds no glob \(globs are separated by spaces or commas"
ok "--only 'a, b' c selects a, b and c; --only ',' is an error"

# A malformed --set.
expect_rc 2 "$CB_BIN" run --suite ci --set nonsense --out "$TMP/r4"
expect_out "--set: 'nonsense' is not KEY=VALUE"
expect_rc 2 "$CB_BIN" run --suite ci --set nosuch.key=1 --out "$TMP/r4"
expect_out "--set nosuch.key: no benchmark or area"
# A misspelt knob of a real benchmark, and of an area, are refused too (not silently ignored).
expect_rc 2 "$CB_BIN" run --suite ci --set collectives.all_reduce.backend=mpi --out "$TMP/r4"
expect_out "--set collectives.all_reduce.backend: collectives.all_reduce has no such knob"
expect_rc 2 "$CB_BIN" run --suite ci --set io.sratch=/tmp --out "$TMP/r4"
expect_out "--set io.sratch: io has no such knob"
ok "bad --set is refused"

# A --fs-root that does not exist is bad input, not an empty inventory.
expect_rc 2 "$CB_BIN" inventory --fs-root "$TMP/no-such-root"
expect_out "--fs-root: Directory does not exist"
ok "missing --fs-root is refused"

# Results directory missing, empty, or with a malformed record.
expect_rc 2 "$CB_BIN" report "$TMP/does-not-exist"
expect_out "does-not-exist: results directory does not exist"
mkdir -p "$TMP/empty"
expect_rc 2 "$CB_BIN" report "$TMP/empty"
expect_out "empty: no run.json here"
ok "missing and empty results directories"

# A real run, then a record broken in the middle of records.jsonl: file:line and the field.
expect_rc 1 "$CB_BIN" run --suite ci --only compute.memory_bandwidth --set compute.memory_bandwidth.array_bytes=8M --out "$TMP/run"
cp -r "$TMP/run" "$TMP/broken"
python3 - "$TMP/broken/records.jsonl" <<'P'
import sys
p = sys.argv[1]
lines = open(p).read().splitlines()
lines[1] = lines[1].replace('"status":"ok"', '"status":"maybe"')
open(p, "w").write("\n".join(lines) + "\n")
P
expect_rc 2 "$CB_BIN" report "$TMP/broken"
expect_out "broken/records.jsonl:2: .*field '/status' is 'maybe'"
printf '{"schema": "clusterbench.run/1",\n "run_id": \n' >"$TMP/broken/run.json"
expect_rc 2 "$CB_BIN" report "$TMP/broken"
expect_out "broken/run.json: .*line 3, column"
ok "malformed results files name file and line"

# --out: a directory holding a run, or the user's own files, is refused before any case runs; the
# user's files keep their bytes and no records.jsonl appears. An empty directory is fine.
MBW=(--suite ci --only compute.memory_bandwidth --set compute.memory_bandwidth.array_bytes=8M)
expect_rc 2 "$CB_BIN" run "${MBW[@]}" --out "$TMP/run"
expect_out "^clusterbench: $TMP/run: already holds a run; choose an empty --out directory \\(or --resume $TMP/run\\)$"
mkdir -p "$TMP/mine/sub"
echo "# my notes" >"$TMP/mine/report.md"
echo "<testsuites/>" >"$TMP/mine/junit.xml"
echo "a" >"$TMP/mine/a.txt"
expect_rc 2 "$CB_BIN" run "${MBW[@]}" --out "$TMP/mine"
expect_out "^clusterbench: $TMP/mine: not empty and not a clusterbench run \\(holds a\\.txt, junit\\.xml, report\\.md and 1 more\\); choose an empty or new --out directory$"
[ "$(cat "$TMP/mine/report.md")" = "# my notes" ] || fail "report.md was overwritten"
[ ! -e "$TMP/mine/records.jsonl" ] || fail "records.jsonl created in a refused --out"
mkdir -p "$TMP/emptyout"
expect_rc 1 "$CB_BIN" run "${MBW[@]}" --out "$TMP/emptyout"
[ -s "$TMP/emptyout/records.jsonl" ] || fail "an empty --out directory was not used"
ok "--out holding a run or foreign files: exit 2 naming them; an empty --out directory runs"

# `report` on a read-only run directory (a read-only bind mount: root ignores file modes) prints
# the verdict and exits with its code, warning that the report files were not written.
cp -r "$TMP/run" "$TMP/ro"
rm -f "$TMP/ro/report."* "$TMP/ro/junit.xml"
if unshare -m true 2>/dev/null; then
  expect_rc 1 unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" &&
    exec "$2" report "$1"' sh "$TMP/ro" "$CB_BIN"
  expect_out "^clusterbench: warning: report files not written in $TMP/ro \\($TMP/ro/report\\.md.*\\); the verdict below is printed only$"
  expect_out "^VERDICT: FAIL \\(exit 1\\)"
  expect_out "^report: not written \\(see the warning above\\)$"
  [ ! -e "$TMP/ro/report.md" ] || fail "report.md written on a read-only mount"
  ok "report on a read-only run directory: verdict printed, exit 1, warning"
else
  echo "skip: unshare -m unavailable, read-only report not checked"
fi

# A record whose metric unit differs from the spec row's: an error, not a conversion.
cp -r "$TMP/run" "$TMP/units"
sed -i 's/"unit":"GB\/s"/"unit":"MB\/s"/g' "$TMP/units/records.jsonl"
expect_rc 2 "$CB_BIN" report "$TMP/units"
expect_out "host.memory_bandwidth_triad"
expect_out "MB/s"
ok "record unit mismatch is an error"

# A node that lost GPUs is judged by its model's table (issue 40): one H100 on the PCI bus of the
# two-socket fixture, where the H100 table wants 8, FAILs gpu.count "count 1 (expected 8)"
# instead of asking for --spec (it asked before: the tables matched by GPU count).
CLUSTERBENCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 \
  expect_rc 1 "$CB_BIN" run --suite ci --only compute.memory_bandwidth \
  --fs-root "$CB_FIXTURES/fsroot/two-socket" --out "$TMP/r5"
expect_out "auto: 1x NVIDIA 0x2330 matched h100-sxm-80g-8x.json"
py "
rows = {r['id']: r for r in json.load(open(sys.argv[1]))['rows']}
assert rows['gpu.count']['outcome'] == 'FAIL', rows['gpu.count']
import re
assert re.fullmatch(r'count 1 on \S+ \(expected 8\)', rows['gpu.count']['message']), rows['gpu.count']
assert rows['gpu.model']['outcome'] == 'PASS', rows['gpu.model']
" "$TMP/r5/report.json"
ok "a node with 1 of 8 GPUs: h100 table, gpu.count FAIL"

# A GPU no table knows (the fixture's H100 made a 10de:1db4, a V100): exit 2 asking for --spec,
# never judged as a CPU node.
cp -a "$CB_FIXTURES/fsroot/two-socket" "$TMP/unknown-gpu"
dev=$(readlink -f "$TMP/unknown-gpu/sys/bus/pci/devices/0000:17:00.0")
[ -f "$dev/device" ] || fail "fixture: no device file for the GPU"
echo 0x1db4 >"$dev/device"
CLUSTERBENCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1 \
  expect_rc 2 "$CB_BIN" run --suite ci --fs-root "$TMP/unknown-gpu" --out "$TMP/r5b"
expect_out "which no spec table in .* matches; pass --spec FILE"
ok "GPUs of an unknown model ask for --spec"

# Knob values that cannot work are refused before anything runs.
expect_rc 2 "$CB_BIN" run --suite ci --only compute.memory_bandwidth --set compute.memory_bandwidth.min_time=0 --out "$TMP/k1"
expect_out "min_time: .* must be in \(0, 3600\] seconds"
expect_rc 2 "$CB_BIN" run --suite ci --only compute.memory_bandwidth --set compute.memory_bandwidth.array_bytes=9000000T --out "$TMP/k2"
expect_out "array_bytes: '9000000T' is too large"
expect_rc 2 "$CB_BIN" run --suite ci --only compute.memory_bandwidth --set compute.memory_bandwidth.threads=100000 --out "$TMP/k3"
expect_out "threads: must be in 1..4096"
expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.runtime=-1 --out "$TMP/k4"
expect_out "io.fio.runtime: must be a positive value"
# fio would read these differently from us (1e9 -> 1 s, 0x2 -> 0 s): only whole numbers + unit.
for v in 1e9 0x2 1.5 10min; do
  expect_rc 2 "$CB_BIN" run --suite ci --only io.fio --set io.fio.runtime=$v --out "$TMP/k5$v"
  expect_out "io.fio.runtime: '$v' is not a time \\(a whole number of s, ms, us, m, h or d"
done
ok "impossible knob values exit 2"

# A metric without a finite value (JSON null) is an input error, never read as 0.
cp -r "$TMP/run" "$TMP/nullmetric"
python3 - "$TMP/nullmetric/records.jsonl" <<'P'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.loads(lines[0]); r["metrics"][0]["value"] = None; lines[0] = json.dumps(r)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
P
expect_rc 2 "$CB_BIN" report "$TMP/nullmetric"
expect_out "records.jsonl:1: field '/metrics/0/value' of metric 'bandwidth' is not a finite number"
ok "a null metric value is an input error"

# Counts of 0 and an empty preset are refused naming the knob, not run as the defaults (issue 46).
for a in rounds=0 threads=0 preset=; do
  expect_rc 2 "$CB_BIN" run --suite quick --dry-run --only compute.training_step \
    --set "compute.training_step.$a" --out "$TMP/ts$a"
  expect_out "compute.training_step.${a%%=*}=.*(must be at least 1|empty; name 7b or ci)"
done
ok "training_step rounds=0, threads=0 and preset= are exit 2 naming the knob"

echo "$PASSES passed, 0 failed"
