#!/usr/bin/env bash
# The binary picks, among the plugins of its plugin folder, the one the driver supports (the fake
# NVML reports the driver's CUDA version; the fake plugins say they were built with CUDA 13.0 and
# 12.2), and exits 2 naming the driver needed and the plugins present when none fits. The chosen
# plugin's CUDA start fails (no device), so each GPU case is `failed` naming the plugin's path.
# Budget: < 30 s.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}" "${CB_BINARY_DIR:?}"
BIN=$CB_TESTBIN
ROOT=$CB_FIXTURES/fsroot/two-socket   # one NVIDIA H100 on its PCI bus
FAKE_NVML=$CB_BINARY_DIR/tests/fake_nvml/libnvidia-ml.so
P13=$CB_BINARY_DIR/tests/fake_plugins/cuda13000/libclusterbench_gpu.so
P12=$CB_BINARY_DIR/tests/fake_plugins/cuda12020/libclusterbench_gpu_cuda12.so
if [ "${CB_HAVE_NVML:-1}" != "1" ] || [ ! -f "$FAKE_NVML" ]; then
  echo "SKIP: built without nvml.h (the driver's version comes from the fake NVML)"; exit 77
fi
[ -f "$P13" ] && [ -f "$P12" ] || fail "fake plugins not built"

mkdir -p "$TMP/both" "$TMP/only13" "$TMP/only12"
ln -s "$P13" "$TMP/both/"; ln -s "$P12" "$TMP/both/"
ln -s "$P13" "$TMP/only13/"; ln -s "$P12" "$TMP/only12/"
# NVML descriptions: h100x8.json is driver 535.161.08 = CUDA 12.2; the same GPUs on 580 and 525.
nvml_driver 13000 580.65.06 "$TMP/nvml-13000.json"
nvml_driver 12000 525.60.13 "$TMP/nvml-12000.json"

# run DIR NVML_JSON OUT: the GPU probe with the plugins of DIR.
run() {
  env -u CLUSTERBENCH_GPU_PLUGIN -u FAKE_GPU_DEVICES -u FAKE_GPU_DRIVER_INSUFFICIENT \
    CLUSTERBENCH_NVML_LIB="$FAKE_NVML" FAKE_NVML_JSON="$2" CLUSTERBENCH_GPU_PLUGIN_DIR="$1" \
    "$BIN" run --suite ci --only test.gpu_probe --spec "$CB_FIXTURES/specs/gpu-probe.json" \
    --fs-root "$ROOT" --out "$3"
}
# chosen OUT: the plugin path named by the failed test.gpu_probe record.
chosen() {
  python3 - "$1/records.jsonl" <<'P'
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
msgs = [r for r in msgs if r["benchmark"] == "test.gpu_probe"]
assert msgs and all(r["status"] == "failed" for r in msgs), msgs
m = msgs[0]["message"]
want = ": cudaGetDeviceCount: no CUDA-capable device is detected (cudaErrorNoDevice)"
assert m.startswith("GPU plugin ") and m.endswith(want), m
print(m[len("GPU plugin "):-len(want)])
P
}
H12=$CB_FIXTURES/nvml/h100x8.json

# 1. Driver 535 (CUDA 12.2), both plugins: the CUDA 12 plugin.
expect_rc 1 run "$TMP/both" "$H12" "$TMP/r1"
got=$(chosen "$TMP/r1") || fail "case 1 records"
[ "$got" = "$TMP/both/libclusterbench_gpu_cuda12.so" ] || fail "driver 12.2 chose '$got'"
ok "driver 535 (CUDA 12.2): libclusterbench_gpu_cuda12.so"

# 2. Driver 580 (CUDA 13.0), both plugins: the CUDA 13 plugin.
expect_rc 1 run "$TMP/both" "$TMP/nvml-13000.json" "$TMP/r2"
got=$(chosen "$TMP/r2") || fail "case 2 records"
[ "$got" = "$TMP/both/libclusterbench_gpu.so" ] || fail "driver 13.0 chose '$got'"
ok "driver 580 (CUDA 13.0): libclusterbench_gpu.so"

# 3. Driver 580, only the CUDA 12 plugin: it runs (backward compatibility).
expect_rc 1 run "$TMP/only12" "$TMP/nvml-13000.json" "$TMP/r3"
got=$(chosen "$TMP/r3") || fail "case 3 records"
[ "$got" = "$TMP/only12/libclusterbench_gpu_cuda12.so" ] || fail "driver 13.0, only 12: '$got'"
ok "driver 580, only the CUDA 12 plugin: it is used"

# 4. Driver 525 (CUDA 12.0), only the CUDA 12.2 plugin: tried through minor-version compatibility.
expect_rc 1 run "$TMP/only12" "$TMP/nvml-12000.json" "$TMP/r4"
got=$(chosen "$TMP/r4") || fail "case 4 records"
[ "$got" = "$TMP/only12/libclusterbench_gpu_cuda12.so" ] || fail "driver 12.0: '$got'"
ok "driver 525 (CUDA 12.0), CUDA 12.2 plugin: tried (minor-version compatibility)"

# 5. Driver 535, only the CUDA 13 plugin: exit 2, naming the driver needed and the plugins present.
expect_rc 2 run "$TMP/only13" "$H12" "$TMP/r5"
expect_out "GPU plugin $TMP/only13/libclusterbench_gpu.so: CUDA driver version is insufficient: the driver \(535\.161\.08\) supports CUDA 12\.2, and no GPU plugin present fits it: libclusterbench_gpu\.so \(CUDA 13\.0, driver >= 580\)\. Install a driver for CUDA 13\.0 or newer \(>= 580\), or add a plugin built with CUDA <= 12\.2 \(libclusterbench_gpu_cuda12\.so"
[ ! -e "$TMP/r5/records.jsonl" ] || fail "exit 2 wrote records"
ok "driver 535, only the CUDA 13 plugin: exit 2 naming driver >= 580 and the plugin present"
echo "$PASSES passed, 0 failed"
