#!/usr/bin/env bash
# `clusterbench compare` and the fleet outputs of `clusterbench report`, on fixture run dirs.
# Budget: < 10 s.
source "$(dirname "$0")/lib.sh"
F=$CB_FIXTURES/results

# A driver upgrade: 4 regressed (STREAM triad -12%, GEMM bf16 -10% on GPU A, GEMM fp16 -3%,
# STREAM add missing), 2 improved, 1 not significant (GEMM bf16 -10% on GPU B, +-15% spread),
# 1 unchanged, 1 new, 1 not compared.
expect_rc 1 "$CB_BIN" compare "$F/compare-baseline" "$F/compare-current" --out "$TMP/cmp"
expect_out "^REGRESSED compute.memory_bandwidth \{\"kernel\":\"triad\",\"threads\":64\} node01; bandwidth 300 -> 264 GB/s \(-12%, p = 0.0005828, n = 7/7\)$"
expect_out "^REGRESSED compute.memory_bandwidth \{\"kernel\":\"add\",\"threads\":64\} node01: case missing from CURRENT$"
expect_out "^env driver: 535.161.08 -> 550.54.15 on node01$"
expect_out "^COMPARE: REGRESSED \(exit 1\): 4 regressed, 2 improved, 1 new, 1 not_significant, 1 not_compared, 1 unchanged$"
py '
d = sys.argv[1]
j = json.load(open(d + "/compare.json"))
assert j["schema"] == "clusterbench.compare/3" and j["exit_code"] == 1
v = {(c["benchmark"], json.dumps(c["params"], sort_keys=True), c["item"]): c for c in j["cases"]}
a = "node01/gpu1[GPU-c0de0001-0000-4000-8000-000000000000]"
g = v[("compute.gemm", json.dumps({"dtype": "bf16", "k": 8192, "m": 8192, "n": 8192}), a)]
m = g["metrics"][0]
assert (m["baseline"], m["current"], round(m["change_pct"], 9), m["verdict"]) == (700, 630, -10, "regressed"), m
assert m["baseline_n"] == m["current_n"] == 7 and 0 < m["p_value"] < 0.05, m
assert {e["field"]: (e["baseline"], e["current"]) for e in j["env_changes"]}["driver"] == ("535.161.08", "550.54.15")
x = open(d + "/compare.junit.xml").read()
assert x.count("<failure") == 4 and x.count("<skipped") == 1, x
md = open(d + "/compare.md").read()
assert "| driver | 535.161.08 | 550.54.15 | node01 |" in md
ns = [c for c in j["cases"] if c["verdict"] == "not_significant"]
assert len(ns) == 1 and ns[0]["metrics"][0]["detectable_pct"] > 10 and ns[0]["metrics"][0]["reps_needed"] > 7, ns
assert "\n## Not significant\n" in md and " repetitions a side would detect " in md, md
' "$TMP/cmp"
ok "compare: driver upgrade fixture, exit 1, numbers in compare.json/.md/.junit.xml"

# Wider tolerances turn the GEMM, STREAM and HBM changes into noise (6 unchanged); the missing
# case still regresses.
expect_rc 1 "$CB_BIN" compare "$F/compare-baseline" "$F/compare-current" --out "$TMP/cmp2" \
  --tolerance 'GB/s=15%' --tolerance 'compute.gemm=12%'
expect_out "^COMPARE: REGRESSED \(exit 1\): 1 regressed, 1 improved, 1 new, 1 not_compared, 6 unchanged$"
ok "compare --tolerance by unit and by benchmark glob"

expect_rc 0 "$CB_BIN" compare "$F/compare-baseline" "$F/compare-baseline" --out "$TMP/cmp3"
expect_out "^COMPARE: NO REGRESSION \(exit 0\): 1 not_compared, 8 unchanged$"
expect_out "^warning: BASELINE and CURRENT are the same run \(.+\): nothing can have changed"
ok "compare a run with itself: exit 0"

expect_rc 2 "$CB_BIN" compare "$F/compare-baseline" "$TMP/nonexistent" --out "$TMP/cmp4"
expect_rc 2 "$CB_BIN" compare "$F/compare-baseline" "$F/compare-current" --tolerance 'GB/s=lots'
expect_out "--tolerance 'GB/s=lots': 'lots' is not a percentage"
# Keys that name no metric (a unit's case, a misspelt benchmark): exit 2 naming both, no files.
expect_rc 2 "$CB_BIN" compare "$F/compare-baseline" "$F/compare-current" --out "$TMP/cmp5" \
  --tolerance 'gb/s=15%' --tolerance 'compute.gemmm=12%' --tolerance 'compute.gemm=12%'
expect_out "--tolerance 'gb/s', 'compute.gemmm': names no metric of either run"
[ ! -e "$TMP/cmp5/compare.json" ] || fail "compare files written despite the bad --tolerance"
expect_rc 2 "$CB_BIN" compare "$F/compare-baseline"
: >"$TMP/plain"
expect_rc 2 "$CB_BIN" compare "$F/compare-baseline" "$F/compare-current" --out "$TMP/plain"
expect_out "^clusterbench: --out $TMP/plain: is not a directory$"
expect_rc 2 "$CB_BIN" compare "$F/compare-baseline" "$F/compare-current" --out "$TMP/plain/sub"
expect_out "^clusterbench: --out $TMP/plain/sub: is not a directory$"
[ ! -s "$TMP/plain" ] || fail "compare wrote into the plain file given as --out"
# A directory nothing can be written into (root too: /proc) is refused before anything is read.
expect_rc 2 "$CB_BIN" compare "$F/compare-baseline" "$F/compare-current" --out /proc
expect_out "^clusterbench: --out /proc: cannot write into it \(.+\)$"
# CURRENT on a read-only mount (root ignores file modes) and no --out: the verdict and its exit
# code stand, with a warning that compare.md was not written.
cp -r "$F/compare-current" "$TMP/rocur"
rm -f "$TMP/rocur/compare."*
expect_rc 1 unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" &&
  exec "$2" compare "$3" "$1"' sh "$TMP/rocur" "$CB_BIN" "$F/compare-baseline"
expect_out "^warning: compare files not written in $TMP/rocur \(.+\); the verdict below is printed only"
expect_out "^COMPARE: REGRESSED \(exit 1\): 4 regressed"
expect_out "^compare: not written \(see the warning above\)$"
[ ! -e "$TMP/rocur/compare.md" ] || fail "compare.md written on a read-only mount"
ok "compare: bad input exits 2 (a plain file or an unwritable directory as --out too)"

# Fleet: 4 nodes x 8 GPUs with three slow GEMM GPUs; they pass the spec (>= 600) but are named.
RUN=$TMP/fleet
cp -r "$F/fleet-4x8" "$RUN"
rm -f "$RUN/report.html"
expect_rc 0 env PATH=/usr/bin:/bin "$CB_BIN" report "$RUN" --spec "$RUN/spec.json"
# They PASS every row: none is to be drained, all three are suspect (issue 47).
[ -f "$RUN/failing-hosts.txt" ] && [ ! -s "$RUN/failing-hosts.txt" ] ||
  fail "failing-hosts.txt is not empty: $(cat "$RUN/failing-hosts.txt")"
[ "$(cut -f1 "$RUN/suspect-hosts.txt")" = $'node02\nnode03\nnode04' ] ||
  fail "suspect-hosts.txt: $(cat "$RUN/suspect-hosts.txt")"
grep -q $'^node02\toutliers: compute.gemm ' "$RUN/suspect-hosts.txt" ||
  fail "suspect-hosts.txt does not say why: $(cat "$RUN/suspect-hosts.txt")"
py '
j = json.load(open(sys.argv[1] + "/report.json"))
o = [(x["host"], x["gpu_index"], x["uuid"], x["pci_bus_id"], x["value"]) for x in j["fleet"]["outliers"]]
assert o == [("node02", 3, "GPU-c0de0002-0000-4000-8000-000000000003", "00000000:61:00.0", 600.0),
             ("node04", 7, "GPU-c0de0004-0000-4000-8000-000000000007", "00000000:DF:00.0", 620.0),
             ("node03", 0, "GPU-c0de0003-0000-4000-8000-000000000000", "00000000:1B:00.0", 640.0)], o
n = {x["host"]: (x["items"]["PASS"], x["records_ok"], x["outliers"]) for x in j["fleet"]["nodes"]}
assert n == {"node01": (26, 38, 0), "node02": (26, 38, 1), "node03": (26, 38, 1), "node04": (26, 38, 1)}, n
md = open(sys.argv[1] + "/report.md").read()
assert "## Fleet" in md and "| node02 | 3 | GPU-c0de0002-0000-4000-8000-000000000003 | 00000000:61:00.0 | 600 TFLOP/s | 710 TFLOP/s | -15.49% | 5% |" in md
' "$RUN"
ok "report: fleet outliers name exactly the three slow GPUs, suspect and not drained"
echo "PASS: $PASSES checks"
