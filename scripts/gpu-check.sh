#!/usr/bin/env bash
# One-shot GPU check (DESIGN.md, issue #3 item 7): build a single-process binary, run the GPU cases
# on this machine's GPUs, run the same work through PyTorch as an anchor, and print a table of our
# median, the anchor's median and their ratio. It finishes within 5 minutes, build included.
# On a machine without a GPU it still runs to the end and prints the waived rows.
#
#   scripts/gpu-check.sh [--build-dir DIR] [--out DIR] [--bundle]
#
#   --build-dir DIR  where the -DCLUSTERBENCH_MPI=OFF build lives (default build-gpucheck). A
#                    binary already there (brought from another machine) is used as it is.
#   --out DIR        run directory (default DIR/gpu-check-<UTC time>)
#   --bundle         build, copy the non-system shared libraries the binary and plugin need into
#                    DIR/lib (hwloc, Google Benchmark, OpenBLAS ...; never CUDA's), then stop: the
#                    build folder can then be carried to a GPU machine that lacks them. CUDA's own
#                    libraries come from that machine (the toolkit, or PyTorch's nvidia-* wheels).
#
# Exit status: 0 when the checks ran (their verdicts are in the table), 1 on a build or tool error.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-gpucheck
OUT=""
BUNDLE=0
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) BUILD=$(realpath -m "$2"); shift 2 ;;
    --out) OUT=$(realpath -m "$2"); shift 2 ;;
    --bundle) BUNDLE=1; shift ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 1 ;;
  esac
done
START=$(date +%s)
OUT=${OUT:-$BUILD/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
BIN=$BUILD/clusterbench
say() { printf '== %s (%ds)\n' "$*" $(($(date +%s) - START)); }

# --- build ------------------------------------------------------------------------------------
if [ ! -x "$BIN" ]; then
  say "building $BIN (-DCLUSTERBENCH_MPI=OFF)"
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCLUSTERBENCH_MPI=OFF -DCLUSTERBENCH_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=Release >"$BUILD.configure.log" 2>&1 ||
    { tail -30 "$BUILD.configure.log"; echo "gpu-check: configure failed" >&2; exit 1; }
  cmake --build "$BUILD" --target clusterbench -j"$(nproc)" >"$BUILD.build.log" 2>&1 ||
    { tail -30 "$BUILD.build.log"; echo "gpu-check: build failed" >&2; exit 1; }
fi
[ -f "$BUILD/libclusterbench_gpu.so" ] && PLUGIN=$BUILD/libclusterbench_gpu.so || PLUGIN=""
say "binary $BIN${PLUGIN:+, plugin $PLUGIN}"

if [ "$BUNDLE" = 1 ]; then
  mkdir -p "$BUILD/lib"
  for f in "$BIN" ${PLUGIN:+"$PLUGIN"}; do
    ldd "$f" | awk '/=> \// {print $3}' | while read -r lib; do
      case $(basename "$lib") in
        libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++*|libgcc_s*) ;;
        libcuda*|libcublas*|libnccl*|libnvidia*) ;;  # the GPU machine's own
        *) cp -L "$lib" "$BUILD/lib/" ;;
      esac
    done
  done
  strip --strip-unneeded "$BUILD"/lib/* 2>/dev/null || true
  du -shc "$BUILD/lib" "$BIN" ${PLUGIN:+"$PLUGIN"}  # a device machine takes at most 64 MiB
  say "bundled into $BUILD/lib"
  exit 0
fi

# CUDA libraries: the toolkit's, else PyTorch's pip wheels (nvidia/cublas/lib, nvidia/nccl/lib ...).
LIBS=$BUILD/lib
PYLIBS=$(python3 - 2>/dev/null <<'P'
import glob, os, site
dirs = site.getsitepackages() + [site.getusersitepackages()]
print(":".join(sorted({os.path.dirname(p) for d in dirs for p in glob.glob(d + "/nvidia/*/lib/lib*.so*")})))
P
)
export LD_LIBRARY_PATH=$LIBS${PYLIBS:+:$PYLIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$OUT"

# --- sections: each prints its part and appends "area|case|ours|anchor|unit" rows to $TABLE ----
TABLE=$OUT/gpu-check.table
: >"$TABLE"

section_inventory() {
  say "inventory"
  "$BIN" inventory >"$OUT/inventory.json" 2>"$OUT/inventory.err" || true
  python3 - "$OUT/inventory.json" <<'P'
import json, sys
try:
    env = json.load(open(sys.argv[1]))
except Exception as e:
    print("inventory unreadable:", e); sys.exit(0)
st = env.get("gpu_status", {})
print("host %s: %d GPU(s) on the PCI bus, NVML %s, driver %s" % (
    env.get("host"), st.get("on_pci", 0), st.get("nvml"), env.get("versions", {}).get("driver", "")))
for g in env.get("gpus", []):
    print("  gpu%d %s %s bus %s PCIe gen %s/%s x%s/%s" % (g.get("index"), g.get("name"), g.get("uuid"),
          g.get("pci_bus_id"), g.get("pcie", {}).get("gen_current"), g.get("pcie", {}).get("gen_max"),
          g.get("pcie", {}).get("width_current"), g.get("pcie", {}).get("width_max")))
P
}

# compute.gemm at 8192^3 in FP16, BF16, TF32, FP8 (cuBLASLt), anchored by torch.matmul and
# torch._scaled_mm on the same GPU in the same run.
section_gemm() {
  say "compute.gemm (cuBLASLt, 8192^3)"
  timeout 150 "$BIN" run --suite quick --only compute.gemm --set compute.gemm.backends=cublaslt \
    --set compute.gemm.dtypes=fp16,bf16,tf32,fp8_e4m3 --set compute.gemm.shapes=8192 \
    --set compute.gemm.min_time=1 --out "$OUT/gemm" >"$OUT/gemm.log" 2>&1
  echo "clusterbench exited $? (verdicts: $OUT/gemm/report.md)"
  say "torch anchors"
  timeout 90 python3 - >"$OUT/gemm-anchor.json" 2>"$OUT/gemm-anchor.err" <<'P'
import json
out = {}
try:
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
except Exception as e:  # no torch, or no GPU: every anchor says why
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)})); raise SystemExit
n = 8192
def median_seconds(fn, reps=20):
    fn(); torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return sorted(times)[(len(times) - 1) // 2]
for dtype in ("fp16", "bf16", "tf32", "fp8_e4m3"):
    try:
        if dtype == "fp8_e4m3":
            a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
            b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()
            one = torch.tensor(1.0, device="cuda")
            fn = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        else:
            t = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[dtype]
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
            a = torch.randn(n, n, device="cuda", dtype=t)
            b = torch.randn(n, n, device="cuda", dtype=t)
            fn = lambda: torch.matmul(a, b)
        out[dtype] = 2 * n ** 3 / median_seconds(fn) / 1e12
    except Exception as e:
        out[dtype] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
P
  python3 - "$OUT/gemm/records.jsonl" "$OUT/gemm-anchor.json" >>"$TABLE" <<'P'
import json, sys
try:
    anchor = json.load(open(sys.argv[2]))
except Exception as e:
    anchor = {"error": "anchor produced no result (%s)" % e}
recs = []
try:
    recs = [json.loads(l) for l in open(sys.argv[1])]
except OSError as e:
    print("compute.gemm|all|no records: %s||TFLOP/s" % e)
for r in recs:
    d = r["params"]["dtype"]
    m = {x["name"]: x["value"] for x in r.get("metrics", [])}
    ours = "%.1f" % m["tflops"] if r["status"] == "ok" else "%s: %s" % (r["status"], r["message"])
    a = anchor.get(d, anchor.get("error", "no anchor"))
    a = "%.1f" % a if isinstance(a, (int, float)) else "n/a (%s)" % a
    gpu = r["scope"].get("gpu_index", "")
    print("compute.gemm|%s 8192^3 gpu%s|%s|%s|TFLOP/s" % (d, gpu, ours, a))
P
}

# compute.gpu_memory_bandwidth (kernel and cudaMemcpyAsync device-to-device), anchored by a
# PyTorch device copy (Tensor.copy_) of the same size; GB/s counts bytes read + written.
section_gpu_memory_bandwidth() {
  say "compute.gpu_memory_bandwidth"
  timeout 90 "$BIN" run --suite quick --only compute.gpu_memory_bandwidth \
    --set compute.gpu_memory_bandwidth.min_time=1 --out "$OUT/dcopy" >"$OUT/dcopy.log" 2>&1
  echo "clusterbench exited $? (verdicts: $OUT/dcopy/report.md)"
  local bytes
  bytes=$(python3 -c "import json,sys
r=[json.loads(l) for l in open(sys.argv[1])]
print(next((x['extra']['buffer_bytes'] for x in r if x['status']=='ok'), 1 << 30))" \
    "$OUT/dcopy/records.jsonl" 2>/dev/null || echo $((1 << 30)))
  say "torch anchor (device copy of $bytes bytes)"
  timeout 60 python3 - "$bytes" >"$OUT/dcopy-anchor.json" 2>"$OUT/dcopy-anchor.err" <<'P'
import json, sys
try:
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    n = int(sys.argv[1])
    a = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    b = torch.empty_like(a)
    b.copy_(a); torch.cuda.synchronize()
    times = []
    for _ in range(50):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); b.copy_(a); e.record(); e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    print(json.dumps({"gbps": 2 * n / sorted(times)[(len(times) - 1) // 2] / 1e9}))
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
P
  python3 - "$OUT/dcopy/records.jsonl" "$OUT/dcopy-anchor.json" >>"$TABLE" <<'P'
import json, sys
try:
    anchor = json.load(open(sys.argv[2]))
except Exception as e:
    anchor = {"error": "anchor produced no result (%s)" % e}
a = anchor.get("gbps")
a = "%.1f" % a if isinstance(a, (int, float)) else "n/a (%s)" % anchor.get("error")
try:
    recs = [json.loads(l) for l in open(sys.argv[1])]
except OSError as e:
    recs = []
    print("compute.gpu_memory_bandwidth|all|no records: %s|%s|GB/s" % (e, a))
for r in recs:
    m = {x["name"]: x["value"] for x in r.get("metrics", [])}
    ours = "%.1f" % m["bandwidth"] if r["status"] == "ok" else "%s: %s" % (r["status"], r["message"])
    print("compute.gpu_memory_bandwidth|%s gpu%s|%s|%s|GB/s" % (
        r["params"]["method"], r["scope"].get("gpu_index", ""), ours, a))
P
}

# Sections run in this order. Other areas add a section_<name> function above (printing its part
# and appending rows to $TABLE) and its name here: the collectives check goes after gemm.
SECTIONS=(inventory gemm gpu_memory_bandwidth)
for s in "${SECTIONS[@]}"; do "section_$s"; done

# --- the table ----------------------------------------------------------------------------------
say "summary"
python3 - "$TABLE" <<'P'
import sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.strip()]
hdr = ["benchmark", "case", "ours (median)", "anchor (median)", "ratio", "unit"]
out = []
for area, case, ours, anchor, unit in rows:
    try:
        ratio = "%.3f" % (float(ours) / float(anchor))
    except ValueError:
        ratio = "-"
    out.append([area, case, ours, anchor, ratio, unit])
w = [max(len(r[i]) for r in [hdr] + out) for i in range(len(hdr))]
w = [min(x, 70) for x in w]
fmt = lambda r: "  ".join(c[:70].ljust(w[i]) for i, c in enumerate(r))
print(fmt(hdr)); print(fmt(["-" * x for x in w]))
for r in out: print(fmt(r))
P
say "done: $OUT"
