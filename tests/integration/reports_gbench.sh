#!/usr/bin/env bash
# The run's gbench.json works with Google Benchmark's own compare.py (Debian libbenchmark-tools,
# run by the system /usr/bin/python3 with python3-numpy and python3-scipy): two one-process runs of
# STREAM, compared; the report names our cases with the times of both files. Budget: < 30 s.
source "$(dirname "$0")/lib.sh"
COMPARE=/usr/share/benchmark/compare.py
[ -r "$COMPARE" ] || { echo "SKIP: $COMPARE missing (apt-get install libbenchmark-tools; scripts/setup.sh installs it)"; exit 77; }
/usr/bin/python3 -c 'import numpy, scipy' 2>/dev/null \
  || { echo "SKIP: /usr/bin/python3 lacks numpy or scipy (apt-get install python3-numpy python3-scipy)"; exit 77; }

# min_time 0.25 s: one pass (about 2.5 ms) stays below min_time / 5 even on a loaded machine, so
# both runs name their cases alike (a slower pass would run a fixed 5 iterations, a name
# compare.py would not pair).
for r in a b; do
  "$CB_BIN" run --suite ci --only compute.memory_bandwidth --out "$TMP/$r" \
    --set compute.memory_bandwidth.kernels=copy,triad --set compute.memory_bandwidth.array_bytes=8M \
    --set compute.memory_bandwidth.min_time=0.25 \
    >"$TMP/run-$r.out" 2>&1
  rc=$?
  [[ " 0 1 4 " == *" $rc "* ]] || { cat "$TMP/run-$r.out" >&2; fail "run $r: exit $rc"; }
  [ -s "$TMP/$r/gbench.json" ] || fail "run $r wrote no gbench.json"
done

expect_rc 0 /usr/bin/python3 "$COMPARE" --no-color -d "$TMP/diff.json" benchmarks \
  "$TMP/a/gbench.json" "$TMP/b/gbench.json"
cp "$TMP/out" "$TMP/compare.txt"
py '
a = json.load(open(sys.argv[1] + "/a/gbench.json"))["benchmarks"]
b = json.load(open(sys.argv[1] + "/b/gbench.json"))["benchmarks"]
diff = json.load(open(sys.argv[1] + "/diff.json"))
text = open(sys.argv[1] + "/compare.txt").read().splitlines()
names = [x["name"] for x in a]
assert names == [x["name"] for x in b] and len(names) == 2, names
assert all(n.startswith("compute.memory_bandwidth/{") and n.endswith("/manual_time") for n in names), names
assert [d["name"] for d in diff] == names + ["OVERALL_GEOMEAN"], [d["name"] for d in diff]
for x, y, d in zip(a, b, diff):
    assert x["time_unit"] == "us" and x["real_time"] > 100, x  # ci batches run about 2.5 ms
    m = d["measurements"][0]
    assert (m["real_time"], m["real_time_other"]) == (x["real_time"], y["real_time"]), (m, x, y)
    assert abs(m["time"] - (y["real_time"] - x["real_time"]) / x["real_time"]) < 1e-12, m
    # The printed row: name, time change, cpu change, then old/new real and cpu times.
    row = [l for l in text if l.startswith(x["name"] + " ")]
    assert len(row) == 1, (x["name"], text)
    cols = row[0][len(x["name"]):].split()
    assert cols[0] == "{:+.4f}".format(m["time"]), (cols, m)
    assert cols[2:4] == ["{:.0f}".format(x["real_time"]), "{:.0f}".format(y["real_time"])], (cols, x, y)
' "$TMP"
ok "compare.py on two runs: both STREAM cases, times in us, changes as compare.py computes them"
echo "PASS: $PASSES checks"
