#!/usr/bin/env bash
# GPU cases: waived only where no NVIDIA GPU is on the PCI bus; failed, with the exact error text,
# where GPUs are on the bus but NVML, the plugin or CUDA fails; exit 2 for a driver older than the
# plugin's CUDA. Uses the tests' binary, which adds the GPU-level case test.gpu_probe.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}"
BIN=$CB_TESTBIN
ROOT=$CB_FIXTURES/fsroot/two-socket   # one NVIDIA H100 (0x2330) on its PCI bus
FAKE_NVML=${CB_BINARY_DIR:-}/tests/fake_nvml/libnvidia-ml.so
FAKE_PLUGIN=${CB_BINARY_DIR:-}/tests/fake_plugin/libfake_gpu_plugin.so

# status_of DIR: prints "status|message" of every test.gpu_probe record.
status_of() {
  python3 - "$1/records.jsonl" <<'P'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["benchmark"] == "test.gpu_probe":
        print(r["status"] + "|" + r["message"])
P
}

# 1. No NVIDIA GPU on the bus (this machine): waived, with the reason.
expect_rc 4 env CLUSTERBENCH_NVML_LIB=/nonexistent.so "$BIN" run --suite ci --only test.gpu_probe \
  --spec "$CB_FIXTURES/specs/gpu-probe.json" --out "$TMP/a"
expect_out "test.gpu_probe.rate +WAIVED"
st=$(status_of "$TMP/a")
[ "$st" = "waived|no NVIDIA GPU on the PCI bus" ] || fail "no-GPU case: got '$st'"
ok "no GPU on the bus: waived"

# 2. GPU on the bus, NVML's driver not loaded: failed with NVML's text.
if [ "${CB_HAVE_NVML:-1}" = "1" ] && [ -f "$FAKE_NVML" ]; then
  expect_rc 1 env CLUSTERBENCH_NVML_LIB="$FAKE_NVML" \
    FAKE_NVML_JSON="$CB_FIXTURES/nvml/driver-not-loaded.json" \
    "$BIN" run --suite ci --only test.gpu_probe --spec "$CB_FIXTURES/specs/gpu-probe.json" --fs-root "$ROOT" --out "$TMP/b"
  st=$(status_of "$TMP/b")
  [[ "$st" == "failed|NVIDIA GPUs on the PCI bus but NVML failed: nvmlInit: Driver Not Loaded" ]] ||
    fail "driver not loaded: got '$st'"
  ok "NVML Driver Not Loaded: failed"

  # 3. NVML fine (8x H100), the plugin cannot be loaded: failed with dlopen's text. The H100 table
  #    is chosen automatically from NVML's names.
  expect_rc 1 env CLUSTERBENCH_NVML_LIB="$FAKE_NVML" FAKE_NVML_JSON="$CB_FIXTURES/nvml/h100x8.json" \
    CLUSTERBENCH_GPU_PLUGIN=/nonexistent/libclusterbench_gpu.so \
    "$BIN" run --suite ci --only test.gpu_probe --fs-root "$ROOT" --out "$TMP/c"
  expect_out "spec: .*h100-sxm-80g-8x.json \(auto: 8x NVIDIA H100 80GB HBM3 matched"
  st=$(status_of "$TMP/c")
  [[ "$st" == "failed|GPU plugin /nonexistent/libclusterbench_gpu.so: /nonexistent/libclusterbench_gpu.so: cannot open shared object file"* ]] ||
    fail "plugin missing: got '$st'"
  py "r=json.load(open(sys.argv[1])); assert r['env'][0]['gpu_status']['on_pci']==1 and len(r['env'][0]['gpus'])==8, r['env'][0]['gpu_status']" "$TMP/c/run.json"
  ok "plugin cannot load: failed; H100 table auto-selected"

  # 4. The plugin loads but CUDA cannot start: failed with CUDA's text.
  expect_rc 1 env CLUSTERBENCH_NVML_LIB="$FAKE_NVML" FAKE_NVML_JSON="$CB_FIXTURES/nvml/h100x8.json" \
    CLUSTERBENCH_GPU_PLUGIN="$FAKE_PLUGIN" \
    "$BIN" run --suite ci --only test.gpu_probe --fs-root "$ROOT" --out "$TMP/d"
  st=$(status_of "$TMP/d")
  [[ "$st" == "failed|"*"cudaGetDeviceCount: no CUDA-capable device is detected"* ]] || fail "CUDA fails: got '$st'"
  ok "CUDA cannot start: failed"

  # 5. A plugin built for a newer CUDA than the driver: exit 2, naming the versions.
  expect_rc 2 env CLUSTERBENCH_NVML_LIB="$FAKE_NVML" FAKE_NVML_JSON="$CB_FIXTURES/nvml/h100x8.json" \
    CLUSTERBENCH_GPU_PLUGIN="$FAKE_PLUGIN" FAKE_GPU_DRIVER_INSUFFICIENT=1 \
    "$BIN" run --suite ci --only test.gpu_probe --fs-root "$ROOT" --out "$TMP/e"
  expect_out "driver supports CUDA 12.2, this plugin was built with CUDA 13.0"
  ok "driver too old for the plugin: exit 2"

  # 6. The real plugin of this build, on this GPU-less machine with a GPU in the fixture bus:
  #    failed, never waived.
  if [ -f "${CB_BINARY_DIR:-}/libclusterbench_gpu.so" ]; then
    expect_rc 1 env CLUSTERBENCH_NVML_LIB="$FAKE_NVML" FAKE_NVML_JSON="$CB_FIXTURES/nvml/h100x8.json" \
      "$BIN" run --suite ci --only test.gpu_probe --fs-root "$ROOT" --out "$TMP/f"
    st=$(status_of "$TMP/f")
    [[ "$st" == failed\|* ]] || fail "real plugin without a driver: got '$st'"
    echo "   real plugin says: ${st#failed|}"
    ok "real plugin without a driver: failed"
  fi
fi
echo "$PASSES passed, 0 failed"
