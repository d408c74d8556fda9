#!/usr/bin/env bash
# The CUDA 12 plugin built from the CUDA 12.2 wheels (cmake/gpu_plugin_cuda12.cmake):
#  1. it needs libcudart.so.12, libcublasLt.so.12 and libnccl.so.2 and nothing of CUDA 13; its
#     side file says the wheels' CUDART_VERSION; the wheels define every symbol it uses;
#  2. its kernels are PTX of ISA 8.2 (what driver 535 reads) that the CUDA 12.2 ptxas assembles
#     for sm_80 and sm_90, one .entry per kernel the launchers name;
#  3. the binary, with both real plugins in its plugin folder and the (fake) driver 535, loads the
#     CUDA 12 one with the wheels on the library path: its real libcudart.so.12 starts and finds no
#     driver here; without the wheels the case names the library missing; with driver 580 the
#     CUDA 13 plugin is chosen; with driver 525 neither (exit 2: the PTX needs driver >= 535).
# Budget: < 30 s.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}" "${CB_BINARY_DIR:?}"
LIB=$CB_BINARY_DIR/libclusterbench_gpu_cuda12.so
GEN=$CB_BINARY_DIR/gpu-cuda12/ptx_kernels_gen.cpp
WHEELS=$CB_SOURCE_DIR/.deps/cuda12/nvidia
[ -f "$LIB" ] && [ -f "$GEN" ] ||
  fail "$LIB was not built (scripts/setup.sh --test fetches the CUDA 12.2 wheels it is built from)"

python3 - "$LIB" "$WHEELS" "$GEN" "$TMP" <<'P' >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "CUDA 12 plugin"; }
import re, subprocess, sys
lib, wheels, gen, tmp = sys.argv[1:5]

def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout

needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", run("readelf", "-d", lib))
for want in ("libcudart.so.12", "libcublasLt.so.12", "libnccl.so.2"):
    assert want in needed, f"{want} not among NEEDED {needed}"
assert not [n for n in needed if n.endswith(".so.13")], f"a CUDA 13 library is needed: {needed}"
cudart = int(re.search(r"#define CUDART_VERSION\s+(\d+)",
                       open(f"{wheels}/cuda_runtime/include/cuda_runtime_api.h").read()).group(1))
side = open(lib + ".cuda").read().strip()
assert side.endswith(f" cuda={cudart} kernels=ptx driver=535") and cudart == 12020, (side, cudart)
print("NEEDED:", " ".join(needed), "|", side)

defined = set()
for so in ("cuda_runtime/lib/libcudart.so.12", "cublas/lib/libcublasLt.so.12", "nccl/lib/libnccl.so.2"):
    for l in run("nm", "-D", "--defined-only", f"{wheels}/{so}").splitlines():
        parts = l.split()
        if len(parts) >= 3:
            defined.add(parts[2].split("@")[0])
left = [l.split()[-1] for l in run("nm", "-D", "--undefined-only", lib).splitlines()
        if l.split()[-2] == "U" and "@" not in l.split()[-1]]
left = [n for n in left if n not in defined]
assert not left, f"used but defined by no wheel: {left}"
print("every CUDA symbol it uses is in the CUDA 12.2 wheels")

text = open(gen).read()
ptx = text[text.index('R"cbptx(') + 8:text.index(')cbptx"')]
assert re.search(r"^\.version 8\.2$", ptx, re.M), "PTX ISA is not 8.2"
assert re.search(r"^\.target sm_80$", ptx, re.M), "PTX target is not sm_80"
entries = set(re.findall(r"\.entry\s+(\w+)\(", ptx))
lowered = re.findall(r'\{"[^"]+", "(\w+)"\}', text)
assert lowered and set(lowered) <= entries, set(lowered) - entries
open(f"{tmp}/k.ptx", "w").write(ptx)
for arch in ("sm_80", "sm_90"):
    run(f"{wheels}/cuda_nvcc/bin/ptxas", f"-arch={arch}", f"{tmp}/k.ptx", "-o", f"{tmp}/k-{arch}.cubin")
print(f"PTX 8.2: {len(lowered)} kernels, assembled by the CUDA 12.2 ptxas for sm_80 and sm_90")
P
cat "$TMP/out"
ok "libcudart.so.12, libcublasLt.so.12, libnccl.so.2 from the wheels; PTX 8.2 assembles for sm_80/sm_90"

FAKE_NVML=$CB_BINARY_DIR/tests/fake_nvml/libnvidia-ml.so
if [ "${CB_HAVE_NVML:-1}" != "1" ] || [ ! -f "$FAKE_NVML" ]; then
  echo "SKIP: built without nvml.h (the driver's version comes from the fake NVML)"; exit 77
fi
mkdir -p "$TMP/plugins"
for f in libclusterbench_gpu.so libclusterbench_gpu_cuda12.so; do
  ln -s "$CB_BINARY_DIR/$f" "$CB_BINARY_DIR/$f.cuda" "$TMP/plugins/"
done
nvml_driver 13000 580.65.06 "$TMP/nvml-580.json"
nvml_driver 12000 525.60.13 "$TMP/nvml-525.json"
# probe LIBPATH NVML_JSON OUT: the GPU probe with both plugins; prints the failed case's message.
probe() {
  env -u CLUSTERBENCH_GPU_PLUGIN LD_LIBRARY_PATH="$1" CLUSTERBENCH_NVML_LIB="$FAKE_NVML" \
    FAKE_NVML_JSON="$2" CLUSTERBENCH_GPU_PLUGIN_DIR="$TMP/plugins" \
    "$CB_TESTBIN" run --suite ci --only test.gpu_probe --spec "$CB_FIXTURES/specs/gpu-probe.json" \
    --fs-root "$CB_FIXTURES/fsroot/two-socket" --out "$3" >"$3.log" 2>&1
  python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if "\"test.gpu_probe\"" in l]
assert r and r[0]["status"] == "failed", r
print(r[0]["message"])' "$3/records.jsonl"
}
H535=$CB_FIXTURES/nvml/h100x8.json   # driver 535.161.08, CUDA 12.2
LIBS=$WHEELS/cuda_runtime/lib:$WHEELS/cublas/lib:$WHEELS/nccl/lib
msg=$(probe "$LIBS" "$H535" "$TMP/r1") || fail "driver 535 with the wheels: no failed probe record"
[ "$msg" = "GPU plugin $TMP/plugins/libclusterbench_gpu_cuda12.so: cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver)" ] ||
  fail "driver 535 with the wheels: $msg"
ok "driver 535, wheels on the library path: the CUDA 12 plugin loads and its libcudart.so.12 starts"
msg=$(probe "" "$H535" "$TMP/r2") || fail "driver 535 without the wheels: no failed probe record"
[[ "$msg" == "GPU plugin $TMP/plugins/libclusterbench_gpu_cuda12.so: "*"libcudart.so.12: cannot open shared object file"* ]] ||
  fail "driver 535 without the wheels: $msg"
ok "driver 535, no CUDA 12 runtime: the case names libcudart.so.12"
msg=$(probe "$LIBS" "$TMP/nvml-580.json" "$TMP/r3") || fail "driver 580: no failed probe record"
[[ "$msg" == "GPU plugin $TMP/plugins/libclusterbench_gpu.so: "* ]] || fail "driver 580: $msg"
ok "driver 580: the CUDA 13 plugin"
# Driver 525 (CUDA 12.0): the runtime 12.2 would start (minor-version compatibility), but the
# PTX 8.2 kernels need driver 535: exit 2 before any case, naming both plugins' drivers.
env -u CLUSTERBENCH_GPU_PLUGIN LD_LIBRARY_PATH="$LIBS" CLUSTERBENCH_NVML_LIB="$FAKE_NVML" \
  FAKE_NVML_JSON="$TMP/nvml-525.json" CLUSTERBENCH_GPU_PLUGIN_DIR="$TMP/plugins" \
  "$CB_TESTBIN" run --suite ci --only test.gpu_probe --spec "$CB_FIXTURES/specs/gpu-probe.json" \
  --fs-root "$CB_FIXTURES/fsroot/two-socket" --out "$TMP/r4" >"$TMP/out" 2>&1
rc=$?
[ "$rc" = 2 ] || { cat "$TMP/out" >&2; fail "driver 525: exit $rc, expected 2"; }
expect_out "libclusterbench_gpu_cuda12\.so \(CUDA 12\.2, driver >= 535, PTX kernels\)"
expect_out "Install a driver for CUDA 12\.2 or newer \(>= 535\)"
ok "driver 525: exit 2, the CUDA 12 plugin's PTX kernels need driver >= 535"
echo "$PASSES passed, 0 failed"
