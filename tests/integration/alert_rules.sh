#!/usr/bin/env bash
# `clusterbench report --alert-rules FILE`: Prometheus alerting rules from a spec table's
# thresholds. promtool (Debian's prometheus package) checks the rules of every shipped table and
# runs them over made-up series: each of the guide's four alerts and the health counters fire
# past the table's threshold and stay quiet short of it, also for a site's table that changes a
# row. Then the refusals (exit 2). Budget: < 15 s.
source "$(dirname "$0")/lib.sh"
export PATH=$CB_SOURCE_DIR/.deps/prometheus/usr/bin:$PATH
command -v promtool >/dev/null ||
  fail "promtool not found (scripts/setup.sh --test unpacks Debian's prometheus into .deps/prometheus)"
cd "$CB_SOURCE_DIR" || fail "no source dir"

n=0
for table in reports/specs/*.json; do
  name=$(basename "$table" .json)
  expect_rc 0 "$CB_BIN" report --spec "$name" --alert-rules "$TMP/$name.yml"
  expect_out "alert rules: [0-9]+ from $name"
  promtool check rules "$TMP/$name.yml" >"$TMP/check.out" 2>&1 ||
    { cat "$TMP/check.out" >&2; fail "promtool check rules $name.yml"; }
  n=$((n + 1))
done
[ "$n" -ge 11 ] || fail "expected 11 shipped tables, found $n"
grep -q "SUCCESS: 10 rules found" <(promtool check rules "$TMP/h100-sxm-80g-8x.yml" 2>&1) ||
  fail "the H100 table should give 10 rules"
ok "promtool check rules passes on the rules of all $n shipped tables (10 on the H100 table)"

# A site's table: the GPU temperature row at 80 C and 4 NICs per node.
cat >"$TMP/site.json" <<EOF
{"schema": "clusterbench.spec/5", "name": "site", "nics_per_node": 4,
 "extends": "$CB_SOURCE_DIR/reports/specs/h100-sxm-80g-8x.json",
 "requirements": [{"id": "gpu.gemm_temperature", "title": "GPU temperature <= 80 C",
   "source": "this site's cooling", "severity": "fail", "scope": "gpu", "aggregate": "each",
   "select": {"benchmark": "compute.gemm", "params": {"backend": "cublaslt"},
              "metric": "temperature_max"}, "op": "<=", "value": 80, "unit": "C"}]}
EOF
expect_rc 0 "$CB_BIN" report --spec "$TMP/site.json" --alert-rules "$TMP/site.yml"

# promtool test rules: series on either side of each threshold, the expected alerts written
# with the labels and annotations of the rules file (which promtool compares too).
# make_test RULES TEMP_LIMIT PORTS_ACTIVE fire|quiet OUT: PORTS_ACTIVE of 8 ports active at
# 25 GB/s, and whether the network alert must fire.
make_test() {
  python3 - "$@" <<'PY'
import sys, yaml
rules_file, temp_limit, ports, net, out = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rules = {r["alert"]: r for r in yaml.safe_load(open(rules_file))["groups"][0]["rules"]}
def alert(name, **labels):
    r = rules[name]
    return {"exp_labels": dict(r["labels"], **labels), "exp_annotations": r["annotations"]}
g = 'gpu="0",Hostname="n1"'
series = [
    {"series": "DCGM_FI_DEV_GPU_TEMP{%s}" % g, "values": "%g+0x20" % (temp_limit + 1)},
    {"series": 'DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="n1"}', "values": "%g+0x20" % (temp_limit - 1)},
    {"series": "DCGM_FI_DEV_GPU_UTIL{%s}" % g, "values": "40+0x80"},
    {"series": 'DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="n1"}', "values": "60+0x80"},
    {"series": "DCGM_FI_DEV_FB_USED{%s}" % g, "values": "96+0x20"},
    {"series": "DCGM_FI_DEV_FB_FREE{%s}" % g, "values": "4+0x20"},
    {"series": 'DCGM_FI_DEV_FB_USED{gpu="1",Hostname="n1"}', "values": "90+0x20"},
    {"series": 'DCGM_FI_DEV_FB_FREE{gpu="1",Hostname="n1"}', "values": "10+0x20"},
    {"series": "DCGM_FI_DEV_XID_ERRORS{%s}" % g, "values": "0 0 79+0x20"},
    {"series": 'DCGM_FI_DEV_XID_ERRORS{gpu="1",Hostname="n1"}', "values": "0+0x20"},
    # 20 corrected errors within the hour on GPU 0 (limit 10), 5 on GPU 1.
    {"series": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{%s}" % g, "values": "0+1x20"},
    {"series": 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{gpu="1",Hostname="n1"}', "values": "0+0x15 5+0x5"},
]
for p in range(8):
    labels = 'instance="n1:9100",device="mlx5_%d",port="1"' % p
    series.append({"series": "node_infiniband_rate_bytes_per_second{%s}" % labels,
                   "values": "25000000000+0x20"})
    series.append({"series": "node_infiniband_state_id{%s}" % labels,
                   "values": ("4" if p < ports else "1") + "+0x20"})
at20 = lambda name, alerts: {"eval_time": "20m", "alertname": name, "exp_alerts": alerts}
g0 = {"gpu": "0", "Hostname": "n1"}
tests = [at20("GpuTemperatureHigh", [alert("GpuTemperatureHigh", **g0)]),
         at20("GpuMemoryHigh", [alert("GpuMemoryHigh", **g0)]),
         at20("GpuXidError", [alert("GpuXidError", **g0)]),
         at20("GpuEccCorrected", [alert("GpuEccCorrected", **g0)]),
         at20("GpuUtilisationLow", []),  # 20 minutes < its hour
         {"eval_time": "70m", "alertname": "GpuUtilisationLow",
          "exp_alerts": [alert("GpuUtilisationLow", **g0)]},
         at20("NodeNetworkBandwidthLow",
              [alert("NodeNetworkBandwidthLow", instance="n1:9100")] if net == "fire" else [])]
doc = {"rule_files": [rules_file], "evaluation_interval": "1m",
       "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": tests}]}
open(out, "w").write(yaml.safe_dump(doc, sort_keys=False))
PY
}
run_test() {
  promtool test rules "$1" >"$TMP/test.out" 2>&1 || { cat "$TMP/test.out" >&2; fail "$2"; }
}
# The H100 table: 85 C, 8 NICs: 100 GB/s = 1e11 B/s; 3 ports of 8 active (7.5e10) fire.
make_test "$TMP/h100-sxm-80g-8x.yml" 85 3 fire "$TMP/t1.yml"
run_test "$TMP/t1.yml" "the H100 table's rules over made-up series"
make_test "$TMP/h100-sxm-80g-8x.yml" 85 4 quiet "$TMP/t2.yml"  # 4 x 25 GB/s: not below
run_test "$TMP/t2.yml" "the network rule fired at 50% of the peak"
# The test can fail: the same series against another threshold.
make_test "$TMP/h100-sxm-80g-8x.yml" 80 3 fire "$TMP/t3.yml"
promtool test rules "$TMP/t3.yml" >"$TMP/test.out" 2>&1 && fail "promtool passed a wrong threshold"
ok "promtool test rules: temperature, memory, XID, corrected ECC, utilisation (after 1 h) and the node's line rate fire past the H100 table's thresholds, not short of them"
# The site's table: 80 C and 4 NICs (50 GB/s): 3 active ports (75 GB/s) do not fire.
make_test "$TMP/site.yml" 80 3 quiet "$TMP/t4.yml"
run_test "$TMP/t4.yml" "the site table's rules over made-up series"
make_test "$TMP/site.yml" 80 1 fire "$TMP/t5.yml"
run_test "$TMP/t5.yml" "the site table's network rule at 1 of 4 ports"
ok "a site's table (80 C, 4 NICs per node) moves its rules' thresholds"

# Without --spec: the table run.json names. The run is not evaluated: no report file.
cp -r "$CB_FIXTURES/results/fleet-4x8" "$TMP/run"
rm -f "$TMP/run"/report.*
expect_rc 0 "$CB_BIN" report "$TMP/run" --alert-rules "$TMP/run.yml"
expect_out "alert rules: 0 from fleet-fixture \\(tests/fixtures/results/fleet-4x8/spec.json\\)"
[ ! -e "$TMP/run/report.json" ] || fail "--alert-rules evaluated the run"
grep -q "^groups: \[\]$" "$TMP/run.yml" || fail "a table with no alerts: groups: []"
ok "without --spec, the table run.json names (0 alerts: an empty group list); no report written"

# Refusals (exit 2).
expect_rc 2 "$CB_BIN" report --spec h100-sxm-80g-8x --alert-rules "$TMP/x.yml" --html "$TMP/x.html"
expect_out "--alert-rules writes the rules only"
echo "my notes" >"$TMP/notes.yml"
expect_rc 2 "$CB_BIN" report --spec h100-sxm-80g-8x --alert-rules "$TMP/notes.yml"
expect_out "--alert-rules $TMP/notes.yml: exists and is not an earlier --alert-rules output"
[ "$(cat "$TMP/notes.yml")" = "my notes" ] || fail "--alert-rules replaced a user's file"
expect_rc 0 "$CB_BIN" report --spec h100-sxm-80g-8x --alert-rules "$TMP/h100-sxm-80g-8x.yml"
# Never over a table the one read extends, even with --force.
cp -r reports/specs "$TMP/specs"
expect_rc 2 "$CB_BIN" report --spec "$TMP/specs/h100-sxm-80g-8x.json" \
  --alert-rules "$TMP/specs/gpu-node-base.json" --force
expect_out "is the spec table .*gpu-node-base.json"
cmp -s "$TMP/specs/gpu-node-base.json" reports/specs/gpu-node-base.json ||
  fail "--alert-rules replaced a parent table"
expect_rc 2 "$CB_BIN" report --spec h100-sxm-80g-8x --alert-rules ""
expect_out "--alert-rules: empty value"
expect_rc 2 "$CB_BIN" report "$TMP/run" --alert-rules "$TMP/run/rules.yml"
expect_out "lies inside the run directory"
python3 - "$TMP/site.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["alerts"] = [{"id": "Hot", "title": "hot", "expr": "DCGM_FI_DEV_GPU_TEMP", "row": "gpu.gemm_temp"}]
json.dump(t, open(sys.argv[1], "w"))
PY
expect_rc 2 "$CB_BIN" report --spec "$TMP/site.json" --alert-rules "$TMP/bad.yml"
expect_out "site.json: alert 'Hot': row 'gpu.gemm_temp' is not in the table"
[ ! -e "$TMP/bad.yml" ] || fail "a refused table left a rules file"
ok "refusals: with --html, over a user's file, over a table the one read extends (--force too), an empty path, inside a run directory, an alert on a missing row (exit 2)"
echo "PASS: $PASSES checks"
