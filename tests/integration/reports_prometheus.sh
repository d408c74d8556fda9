#!/usr/bin/env bash
# `report --prometheus FILE` and `run --prometheus FILE`: the textfile parses under a strict
# grammar of the exposition format (reports_prom_parse.py, itself checked on broken inputs
# first) and every sample equals its record's value in base units. Budget: < 20 s.
source "$(dirname "$0")/lib.sh"
PARSE="python3 $(dirname "$0")/reports_prom_parse.py"

# The parser rejects what node_exporter's textfile collector rejects.
bad=('a 1 1796029210' 'a{b="x\q"} 1' 'a{b="1",b="2"} 1' $'a 1\nb 1\na 2' $'a 1\n# TYPE a gauge'
     'a{__b="1"} 1' 'a one' '0a 1' $'a 1\n\nb 1')
for b in "${bad[@]}"; do
  printf '%s\n' "$b" >"$TMP/bad.prom"
  $PARSE "$TMP/bad.prom" >/dev/null 2>&1 && fail "the parser accepted: $b"
done
printf 'a 1' >"$TMP/bad.prom"
$PARSE "$TMP/bad.prom" >/dev/null 2>&1 && fail "the parser accepted a file without a final newline"
ok "the strict parser rejects ${#bad[@]} + 1 malformed files"

# The fleet fixture, with GPU telemetry on every GEMM record and fio read metrics on every fio
# record, so that each family of the headline table has samples (spread small enough that no new
# fleet outlier appears: the failing hosts stay node02-04).
RUN=$TMP/fleet
cp -r "$CB_FIXTURES/results/fleet-4x8" "$RUN"
py '
p = sys.argv[1] + "/records.jsonl"
out = []
for line in open(p):
    r = json.loads(line)
    g = r["scope"].get("gpu_index", 0)
    if r["benchmark"] == "compute.gemm":
        r["metrics"] += [{"name": "sm_clock_median", "value": 1980.0 - g, "unit": "MHz", "higher_is_better": True},
                         {"name": "temperature_max", "value": 60.5 + g / 4, "unit": "C", "higher_is_better": False},
                         {"name": "power_max", "value": 650.25 + g, "unit": "W", "higher_is_better": False}]
    if r["benchmark"] == "io.fio":
        n = int(r["scope"]["host"][-2:])
        r["metrics"] += [{"name": "read_bw", "value": 6.5 + n / 10, "unit": "GB/s", "higher_is_better": True},
                         {"name": "read_iops", "value": 1000000.0 + n, "unit": "IOPS", "higher_is_better": True},
                         {"name": "read_clat_p99", "value": 87.5 + n, "unit": "us", "higher_is_better": False}]
    out.append(json.dumps(r))
open(p, "w").write("\n".join(out) + "\n")
' "$RUN"
mkdir -p "$TMP/textfile"
expect_rc 0 env PATH=/usr/bin:/bin "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" \
  --prometheus "$TMP/textfile/clusterbench.prom"
[ "$(ls "$TMP/textfile")" = clusterbench.prom ] || fail "textfile dir: $(ls "$TMP/textfile")"
$PARSE "$TMP/textfile/clusterbench.prom" >"$TMP/prom.json" || fail "strict parse failed"
py '
fam = json.load(open(sys.argv[1]))["families"]
run = sys.argv[2]
# name, scale, unit of each headline metric (docs/report.md "Prometheus").
table = {("compute.gemm", "tflops"): ("clusterbench_gemm_tflops", 1),
         ("compute.gemm", "sm_clock_median"): ("DCGM_FI_DEV_SM_CLOCK", 1),
         ("compute.gemm", "temperature_max"): ("DCGM_FI_DEV_GPU_TEMP", 1),
         ("compute.gemm", "power_max"): ("DCGM_FI_DEV_POWER_USAGE", 1),
         ("compute.gpu_memory_bandwidth", "bandwidth"): ("clusterbench_gpu_memory_bandwidth_bytes_per_second", 1e9),
         ("compute.host_device_copy", "bandwidth"): ("clusterbench_host_device_copy_bytes_per_second", 1e9),
         ("compute.memory_bandwidth", "bandwidth"): ("clusterbench_host_memory_bandwidth_bytes_per_second", 1e9),
         ("io.fio", "read_bw"): ("clusterbench_fio_read_bytes_per_second", 1e9),
         ("io.fio", "read_iops"): ("clusterbench_fio_read_iops", 1),
         ("io.fio", "read_clat_p99"): ("clusterbench_fio_read_clat_p99_seconds", 1e-6),
         ("io.dataloader", "samples_per_s"): ("clusterbench_dataloader_samples_per_second", 1)}
for f in fam.values():
    assert f["type"] == "gauge" and f["help"], f
def find(name, labels):
    hits = [v for l, v in fam[name]["samples"] if l == labels]
    assert len(hits) == 1, (name, labels, fam[name]["samples"][:3])
    return hits[0]
want = 0
for line in open(run + "/records.jsonl"):
    r = json.loads(line)
    s = r["scope"]
    for m in r["metrics"]:
        if (r["benchmark"], m["name"]) not in table:
            continue
        name, scale = table[(r["benchmark"], m["name"])]
        labels = {"host": s["host"]}
        if s["kind"] == "gpu":
            labels.update(gpu=str(s["gpu_index"]), uuid=s["uuid"], pci_bus_id=s["pci_bus_id"])
        if name.startswith("DCGM_"):
            labels["benchmark"] = r["benchmark"]
        labels.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in r["params"].items()})
        got = find(name, labels)
        assert got == m["value"] * scale, (name, labels, got, m["value"])
        want += 1
got = sum(len(fam[n]["samples"]) for n, _ in table.values() if n in fam)
assert got == want == 32 * 7 + 4 * 8, (got, want)  # 32 GPUs x 7 series, 4 nodes x 8 series
t = find("DCGM_FI_DEV_GPU_TEMP", {"host": "node02", "gpu": "3", "uuid": "GPU-c0de0002-0000-4000-8000-000000000003",
         "pci_bus_id": "00000000:61:00.0", "benchmark": "compute.gemm", "dtype": "bf16", "k": "8192", "m": "8192", "n": "8192"})
assert t == 61.25, t
assert find("clusterbench_fio_read_clat_p99_seconds", {"host": "node03", "profile": "seq_read"}) == 90.5 * 1e-6
failing = {l["host"]: v for l, v in fam["clusterbench_node_failing"]["samples"]}
assert failing == {"node01": 0, "node02": 0, "node03": 0, "node04": 0}, failing
suspect = {l["host"]: v for l, v in fam["clusterbench_node_suspect"]["samples"]}
assert suspect == {"node01": 0, "node02": 1, "node03": 1, "node04": 1}, suspect
assert open(run + "/failing-hosts.txt").read().split() == []
assert [l.split("\t")[0] for l in open(run + "/suspect-hosts.txt")] == ["node02", "node03", "node04"]
outl = {l["host"]: v for l, v in fam["clusterbench_node_outliers"]["samples"]}
assert outl == {"node01": 0, "node02": 1, "node03": 1, "node04": 1}, outl
items = {(l["host"], l["outcome"]): v for l, v in fam["clusterbench_node_spec_items"]["samples"]}
assert items[("node01", "PASS")] == 26 and items[("node02", "FAIL")] == 0, items
assert find("clusterbench_node_records", {"host": "node04", "status": "ok"}) == 38
assert fam["clusterbench_run_exit_code"]["samples"] == [[{}, 0]]
info = fam["clusterbench_run_info"]["samples"][0][0]
assert info["run_id"] == "20261130T090000Z-node01" and info["verdict"] == "PASS", info
' "$TMP/prom.json" "$RUN"
ok "report --prometheus: strict parse; 256 headline samples equal their records (DCGM names for clock, temperature, power); node and run series"

# `run --prometheus`: a one-process run; the STREAM samples equal the records, in bytes/s.
expect_rc_in() { "$@" >"$TMP/out" 2>&1; local rc=$?; [[ " 0 1 4 " == *" $rc "* ]] || { cat "$TMP/out" >&2; fail "exit $rc: $*"; }; }
expect_rc_in "$CB_BIN" run --suite ci --only compute.memory_bandwidth --out "$TMP/run" \
  --set compute.memory_bandwidth.min_time=0.02 --prometheus "$TMP/run.prom"
$PARSE "$TMP/run.prom" >"$TMP/run.json" || fail "strict parse of run --prometheus failed"
py '
fam = json.load(open(sys.argv[1]))["families"]
recs = [json.loads(l) for l in open(sys.argv[2] + "/records.jsonl")]
ok = [r for r in recs if r["status"] == "ok"]
assert ok, recs
s = {tuple(sorted(l.items())): v for l, v in fam["clusterbench_host_memory_bandwidth_bytes_per_second"]["samples"]}
for r in ok:
    labels = {"host": r["scope"]["host"], **{k: v if isinstance(v, str) else json.dumps(v) for k, v in r["params"].items()}}
    bw = next(m["value"] for m in r["metrics"] if m["name"] == "bandwidth")
    assert s[tuple(sorted(labels.items()))] == bw * 1e9, (labels, s, bw)
assert len(s) == len(ok), (s, ok)
run = json.load(open(sys.argv[2] + "/run.json"))
assert fam["clusterbench_run_exit_code"]["samples"] == [[{}, run["exit_code"]]], run["exit_code"]
' "$TMP/run.json" "$TMP/run"
ok "run --prometheus: STREAM bandwidth samples equal the records (x 1e9 B/s) and the exit code"

# A --prometheus path inside the run directory, naming a directory, or in a missing or unwritable
# directory is refused (exit 2) before anything is written: run.json keeps its bytes, and `run`
# refuses before any case runs (no records.jsonl, no run.json).
run_sha=$(sha256sum "$TMP/run/run.json" | cut -d' ' -f1)
expect_rc 2 "$CB_BIN" report "$TMP/run" --prometheus "$TMP/run/run.json"
expect_out "^clusterbench: --prometheus $TMP/run/run\\.json: lies inside the run directory $TMP/run; write it elsewhere$"
[ "$(sha256sum "$TMP/run/run.json" | cut -d' ' -f1)" = "$run_sha" ] || fail "run.json was replaced"
expect_rc 2 "$CB_BIN" report "$TMP/run" --prometheus "$TMP"
expect_out "^clusterbench: --prometheus $TMP: is a directory; name a file$"
expect_rc 2 "$CB_BIN" report "$TMP/run" --prometheus /nonexistent/x.prom
expect_out "^clusterbench: --prometheus /nonexistent/x\\.prom: directory /nonexistent does not exist$"
expect_rc 2 "$CB_BIN" report "$TMP/run" --prometheus /proc/x.prom
expect_out "^clusterbench: --prometheus /proc/x\\.prom: cannot create a file in /proc \\("
for p in /nonexistent/x.prom "$TMP/run2/x.prom"; do
  expect_rc 2 "$CB_BIN" run --suite ci --only compute.memory_bandwidth --out "$TMP/run2" \
    --set compute.memory_bandwidth.min_time=0.02 --prometheus "$p"
  expect_out "^clusterbench: --prometheus $p: "
  grep -q "VERDICT\|memory_bandwidth.*GB/s" "$TMP/out" && fail "run --prometheus $p ran cases first"
  [ ! -e "$TMP/run2/run.json" ] && [ ! -s "$TMP/run2/records.jsonl" ] || fail "run2 holds a run"
done
ok "--prometheus inside the run, a directory, a missing or unwritable directory: exit 2, nothing run"
echo "PASS: $PASSES checks"
