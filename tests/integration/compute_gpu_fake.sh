#!/usr/bin/env bash
# The GPU cases end to end without a GPU: the real binary with the fake libnvidia-ml.so
# (tests/fake_nvml, one H100 from tests/fixtures/nvml/h100x1.json, variants derived below) and the
# fake plugin (tests/fake_plugin: FAKE_GPU_DEVICES=1 starts it; GEMMs at $FAKE_GPU_TFLOPS, host
# copies at $FAKE_GPU_COPY_GBPS, the host buffers really copied once and checked). Asserts the
# records and the H100 table's row outcomes in report.json:
#  - telemetry rows: a healthy GPU passes; 90 C fails; thermal or hardware slowdown during GEMM
#    fails; the software power cap is recorded and passes; memory held outside our own buffers
#    > 95% fails, while a GPU as full only because of our own buffers passes;
#  - compute.host_device_copy: GB/s = bytes moved / median / 1e9, NUMA binding recorded, far
#    cases waived on a one-node machine, the PCIe row passes at Gen5 x16 and fails when the link
#    runs at Gen4 during the copy, the h2d row fails at 85% of the healthy rate;
#  - and on this GPU-less machine without the fakes, every case is waived with the reason.
# Budget: < 60 s on 2 cores.
source "$(dirname "$0")/lib.sh"
FAKE_NVML=${CB_BINARY_DIR:-}/tests/fake_nvml/libnvidia-ml.so
FAKE_PLUGIN=${CB_BINARY_DIR:-}/tests/fake_plugin/libfake_gpu_plugin.so
ROOT=$CB_FIXTURES/fsroot/two-socket   # one NVIDIA H100 on its PCI bus
SPEC=$SPECS/h100-sxm-80g-8x.json

# 0. No GPU on the bus, no fakes: all 24 host-copy cases waived with the reason; list shows them.
expect_rc 0 "$CB_BIN" list
expect_out "compute.host_device_copy +\[gpu GPU\]"
expect_out "24 case\(s\) in suite ci"
env CLUSTERBENCH_NVML_LIB=/nonexistent.so "$CB_BIN" run --suite ci --only compute.host_device_copy \
  --out "$TMP/w" >"$TMP/out" 2>&1
py "
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 24, len(recs)
assert all(r['status'] == 'waived' and r['message'] == 'no NVIDIA GPU on the PCI bus' for r in recs), recs[0]
assert all(r['scope']['kind'] == 'gpu' for r in recs)
" "$TMP/w/records.jsonl"
ok "no GPU: 24 host-copy cases waived with the reason"

if [ "${CB_HAVE_NVML:-1}" != "1" ] || [ ! -f "$FAKE_NVML" ] || [ ! -f "$FAKE_PLUGIN" ]; then
  echo "SKIP: no fake NVML or fake plugin in this build"; exit 77
fi

# variant NAME PYTHON: writes $TMP/NAME.json, the one-H100 fixture with `g` (its GPU) modified.
variant() {
  python3 - "$CB_FIXTURES/nvml/h100x1.json" "$TMP/$1.json" "$2" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
g = d["gpus"][0]
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
P
}

# fake_run NAME OUT ARGS...: the real binary on the fake GPU described by $TMP/NAME.json.
fake_run() {
  local name=$1 out=$2; shift 2
  env CLUSTERBENCH_NVML_LIB="$FAKE_NVML" FAKE_NVML_JSON="$TMP/$name.json" \
    CLUSTERBENCH_GPU_PLUGIN="$FAKE_PLUGIN" FAKE_GPU_DEVICES=1 \
    "$CB_BIN" run --suite ci --fs-root "$ROOT" --spec "$SPEC" --out "$TMP/$out" "$@" \
    >"$TMP/out" 2>&1
  [ -s "$TMP/$out/report.json" ] || { cat "$TMP/out" >&2; fail "$out: no report.json"; }
}

# rows OUT ID=OUTCOME...: asserts row outcomes in OUT's report.json.
rows() {
  python3 - "$TMP/$1/report.json" "${@:2}" <<'P' || { cat "$TMP/out" >&2; fail "row outcomes of $1"; }
import json, sys
rep = json.load(open(sys.argv[1]))
got = {r["id"]: r for r in rep["rows"]}
for want in sys.argv[2:]:
    rid, outcome = want.split("=")
    r = got.get(rid)
    assert r is not None, "no row %s" % rid
    assert r["outcome"] == outcome, "%s: %s, wanted %s (%s)" % (rid, r["outcome"], outcome, r.get("message"))
P
}

GEMM=(--only compute.gemm --set compute.gemm.backends=cublaslt --set compute.gemm.dtypes=bf16
      --set compute.gemm.shapes=8192)

# 1. Healthy GPU (41 C, no clock-event reason, 1 GiB used): every telemetry row passes.
variant healthy ""
fake_run healthy g1 "${GEMM[@]}"
rows g1 gpu.gemm_bf16=PASS gpu.gemm_temperature=PASS gpu.gemm_slowdown=PASS \
  gpu.gemm_memory_used_other=PASS
py "
r = [json.loads(l) for l in open(sys.argv[1])][0]
m = {x['name']: x['value'] for x in r['metrics']}
# TFLOP/s = 2 * 8192^3 / median / 1e12, the fake's 800 TFLOP/s
assert r['status'] == 'ok' and abs(m['tflops'] - 800) < 1e-6, (r['status'], r['message'], m)
assert m['temperature_max'] == 41 and m['slowdown_samples'] == 0 and m['power_cap_samples'] == 0, m
# (1 GiB used - own 3 x 8192^2 x 2 B) / 85520809984 B x 100
assert abs(m['memory_used_other'] - (1073741824 - 402653184) / 85520809984 * 100) < 1e-9, m
assert r['scope']['uuid'] == 'GPU-6d8a3b2e-1f4c-7a90-b2d1-0c5e8f3a4b01', r['scope']
assert r['extra']['telemetry']['samples'] >= 1
" "$TMP/g1/records.jsonl"
ok "healthy GPU: telemetry rows PASS, 800 TFLOP/s recorded"

# 2. 90 C: the temperature row fails (seed alert > 85 C).
variant hot "g['temperature_c'] = 90"
fake_run hot g2 "${GEMM[@]}"
rows g2 gpu.gemm_temperature=FAIL gpu.gemm_slowdown=PASS
py "
rep = json.load(open(sys.argv[1]))
r = next(r for r in rep['rows'] if r['id'] == 'gpu.gemm_temperature')
assert r['value'] == 90, r
" "$TMP/g2/report.json"
ok "90 C: gpu.gemm_temperature FAIL with 90"

# 3. Thermal slowdown (sw_thermal_slowdown with the power cap) and hardware slowdown: FAIL.
variant thermal "g['clocks_event_reasons'] = 0x20 | 0x4"
fake_run thermal g3 "${GEMM[@]}"
rows g3 gpu.gemm_slowdown=FAIL gpu.gemm_temperature=PASS
variant hwslow "g['clocks_event_reasons'] = 0x8"
fake_run hwslow g4 "${GEMM[@]}"
rows g4 gpu.gemm_slowdown=FAIL
ok "thermal or hardware slowdown during GEMM: gpu.gemm_slowdown FAIL"

# 4. The software power cap alone: recorded, not failed.
variant powercap "g['clocks_event_reasons'] = 0x4; g['power_mw'] = 700000"
fake_run powercap g5 "${GEMM[@]}"
rows g5 gpu.gemm_slowdown=PASS gpu.gemm_temperature=PASS
py "
r = [json.loads(l) for l in open(sys.argv[1])][0]
m = {x['name']: x['value'] for x in r['metrics']}
t = r['extra']['telemetry']
assert m['power_cap_samples'] >= 1 and m['power_cap_samples'] == t['samples'] and m['slowdown_samples'] == 0, m
assert t['clock_event_reason_names'] == ['sw_power_cap'] and m['power_max'] == 700, (t, m)
" "$TMP/g5/records.jsonl"
ok "software power cap: recorded (power_cap_samples), gpu.gemm_slowdown PASS"

# 5. Memory: 97% used by someone else WARNs (a warn row: not a hardware fault); 99% used of which our own 32768^3 bf16 buffers
#    (3 x 32768^2 x 2 B = 6442450944 B = 7.53%) are 7.5 points passes (91.47% outside ours).
variant busy "g['memory_used_bytes'] = int(0.97 * g['memory_total_bytes'])"
fake_run busy g6 "${GEMM[@]}"
rows g6 gpu.gemm_memory_used_other=WARN
variant ours "g['memory_used_bytes'] = int(0.99 * g['memory_total_bytes'])"
fake_run ours g7 --only compute.gemm --set compute.gemm.backends=cublaslt \
  --set compute.gemm.dtypes=bf16 --set compute.gemm.shapes=32768
rows g7 gpu.gemm_memory_used_other=PASS
py "
r = [json.loads(l) for l in open(sys.argv[1])][0]
m = {x['name']: x['value'] for x in r['metrics']}
want = (int(0.99 * 85520809984) - 3 * 32768**2 * 2) / 85520809984 * 100
assert abs(m['memory_used_other'] - want) < 1e-9 and 91 < want < 92, (m, want)
" "$TMP/g7/records.jsonl"
ok "memory used > 95% judged outside our own buffers"

# 6. Host copies on the fake GPU at 55 GB/s: near cases ok, far cases waived (one NUMA node here),
#    GB/s = bytes moved / median / 1e9, binding and PCIe readings recorded, rows PASS.
COPY=(--only compute.host_device_copy --set compute.host_device_copy.bytes=4M)
fake_run healthy c1 "${COPY[@]}"
rows c1 gpu.h2d_pinned=PASS gpu.d2h_pinned=PASS gpu.pcie_link_during_copy=PASS
py "
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 24, len(recs)
nodes = int(open('/sys/devices/system/node/online').read().strip().split('-')[-1]) + 1 if os.path.exists('/sys/devices/system/node/online') else 1
for r in recs:
    p = r['params']
    if p['numa'] == 'far' and nodes == 1:
        assert r['status'] == 'waived' and r['message'] == 'one NUMA node: no remote host memory', r
        continue
    assert r['status'] == 'ok', (p, r['message'])
    m = {x['name']: x for x in r['metrics']}
    moved = 4 * 2**20 * (2 if p['direction'] == 'bidir' else 1)
    assert r['extra']['bytes_per_op'] == moved
    bw = moved / r['time']['median'] / 1e9
    assert abs(m['bandwidth']['value'] - bw) <= 1e-9 * bw and abs(bw - 55) < 1e-6, (m['bandwidth'], bw)
    assert m['bandwidth']['unit'] == 'GB/s'
    assert m['pcie_gen_min']['value'] == 5 and m['pcie_width_min']['value'] == 16, m
    assert m['pcie_below_max_samples']['value'] == 0
    assert r['scope']['kind'] == 'gpu' and r['combine'] == 'per_rank'
    assert r['scope']['uuid'] == 'GPU-6d8a3b2e-1f4c-7a90-b2d1-0c5e8f3a4b01', r['scope']
    assert r['extra']['pci_bus_id'] == '00000000:18:00.0'
    n = r['extra']['numa']
    assert n['gpu_node'] == 0 and n['memory_node'] == 0 and n['memory_location'] == [0], n
    assert r['extra']['verification']['mismatches'] == 0 and r['extra']['verification']['checked_words'] > 0
    want = 'one GPU of the node at a time' if p['gpus'] == 'one' else 'all GPUs of the node at once'
    assert r['extra']['concurrency']['mode'] == want
    assert r['extra']['pcie_idle'] == {'gen_current': 5, 'gen_max': 5, 'width_current': 16, 'width_max': 16}
" "$TMP/c1/records.jsonl"
ok "host copies: GB/s arithmetic, NUMA binding, PCIe readings recorded; rows PASS"

# 7. A link at Gen4 of its Gen5 max during the copy fails the PCIe row; a GPU copying at 85% of
#    the healthy 55 GB/s (46.75) fails the h2d row (>= 49.5).
ONE=(--set compute.host_device_copy.directions=h2d --set compute.host_device_copy.memory=pinned
     --set compute.host_device_copy.numa=near)
variant gen4 "g['pcie']['gen_current'] = 4"
fake_run gen4 c2 "${COPY[@]}" "${ONE[@]}"
rows c2 gpu.pcie_link_during_copy=FAIL gpu.h2d_pinned=PASS
export FAKE_GPU_COPY_GBPS=46.75
fake_run healthy c3 "${COPY[@]}" "${ONE[@]}"
unset FAKE_GPU_COPY_GBPS
rows c3 gpu.h2d_pinned=FAIL gpu.pcie_link_during_copy=PASS
ok "link below its max during the copy: FAIL; 85% of the healthy rate: FAIL"
echo "$PASSES passed, 0 failed"
