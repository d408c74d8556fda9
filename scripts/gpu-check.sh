#!/usr/bin/env bash
# One-shot GPU check (docs/design.md): build a single-process binary, run the GPU cases
# on this machine's GPUs, run the same work through PyTorch as an anchor, and print a table of our
# median, the anchor's median and their ratio. It finishes within 5 minutes: each section has a
# time budget, and past 270 s the remaining sections are skipped, saying so.
# On a machine without a GPU it still runs to the end and prints the waived rows.
#
#   scripts/gpu-check.sh [--build-dir DIR] [--out DIR] [--bundle | --from-bundle FILE]
#
#   --build-dir DIR     where the -DCLUSTERBENCH_MPI=OFF build lives (default build-gpucheck). A
#                       binary already there (brought from another machine) is used as it is.
#   --out DIR           run directory (default DIR/gpu-check-<UTC time>)
#   --bundle            build with -DCLUSTERBENCH_GPU_CHECK=ON (no libarchive, no tcmalloc), copy
#                       the non-system shared libraries the binary and plugin need into DIR/lib
#                       (never CUDA's), and pack the source tree, binary, plugin and lib/ into one
#                       xz-compressed tar; ends with the line "bundle: PATH BYTES", PATH being the
#                       one file to carry to a GPU machine. CUDA's own libraries come from that
#                       machine (the toolkit, or PyTorch's nvidia-* wheels).
#   --from-bundle FILE  unpack FILE (made by --bundle) beside itself, into FILE.d, and run the
#                       check from it, without building (FILE may also be an unpacked bundle).
#
# Exit status: 0 when the checks ran (their verdicts are in the table), 1 on a build or tool error.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-gpucheck
OUT=""
BUNDLE=0
FROM=""
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) BUILD=$(realpath -m "$2"); shift 2 ;;
    --out) OUT=$(realpath -m "$2"); shift 2 ;;
    --bundle) BUNDLE=1; shift ;;
    --from-bundle) FROM=$(realpath -m "$2"); shift 2 ;;
    -h|--help) sed -n 2,24p "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 1 ;;
  esac
done
if [ -n "$FROM" ]; then
  # The bundle holds clusterbench-gpu-check/{scripts,...,build-gpucheck/{clusterbench,lib,...}}.
  # A file is unpacked beside itself into FILE.d (python3's tarfile where xz is missing, as on a
  # bare machine); a folder is an unpacked bundle.
  if [ -d "$FROM" ]; then
    DEST=$FROM
  elif [ -f "$FROM" ]; then
    DEST=${FROM%.tar.xz}.d
    rm -rf "$DEST" && mkdir -p "$DEST" || { echo "gpu-check: cannot create $DEST" >&2; exit 1; }
    if command -v xz >/dev/null; then
      tar -xJf "$FROM" -C "$DEST"
    else
      python3 -m tarfile -e "$FROM" "$DEST"
    fi || { echo "gpu-check: cannot unpack $FROM into $DEST" >&2; exit 1; }
  else
    echo "gpu-check: no bundle $FROM" >&2; exit 1
  fi
  [ -d "$DEST/clusterbench-gpu-check" ] && DEST=$DEST/clusterbench-gpu-check
  exec bash "$DEST/scripts/gpu-check.sh" --build-dir "$DEST/build-gpucheck" ${OUT:+--out "$OUT"}
fi
START=$(date +%s)
OUT=${OUT:-$BUILD/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
BIN=$BUILD/clusterbench
say() { printf '== %s (%ds)\n' "$*" $(($(date +%s) - START)); }

# --- build ------------------------------------------------------------------------------------
if [ ! -x "$BIN" ] || [ "$BUNDLE" = 1 ]; then  # a bundle is always up to date
  say "building $BIN (-DCLUSTERBENCH_MPI=OFF)"
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  mkdir -p "$BUILD"
  cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCLUSTERBENCH_MPI=OFF -DCLUSTERBENCH_TESTS=OFF \
    -DCLUSTERBENCH_GPU_CHECK=ON -DCMAKE_BUILD_TYPE=Release >"$BUILD/gpu-check.configure.log" 2>&1 ||
    { tail -30 "$BUILD/gpu-check.configure.log"; echo "gpu-check: configure failed" >&2; exit 1; }
  cmake --build "$BUILD" --target clusterbench -j"$(nproc)" >"$BUILD/gpu-check.build.log" 2>&1 ||
    { tail -30 "$BUILD/gpu-check.build.log"; echo "gpu-check: build failed" >&2; exit 1; }
fi
[ -f "$BUILD/libclusterbench_gpu.so" ] && PLUGIN=$BUILD/libclusterbench_gpu.so || PLUGIN=""
say "binary $BIN${PLUGIN:+, plugin $PLUGIN}"

if [ "$BUNDLE" = 1 ]; then
  rm -rf "$BUILD/lib" && mkdir -p "$BUILD/lib"
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
  # One file to carry: the tracked source tree (scripts, specs, docs) and the built files, under
  # clusterbench-gpu-check/; a device machine takes at most 64 MiB, the bundle must stay <= 48 MiB.
  STAGE=$(mktemp -d)
  trap 'rm -rf "$STAGE"' EXIT
  TOP=$STAGE/clusterbench-gpu-check
  mkdir -p "$TOP/build-gpucheck"
  if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z | tar --null -T - -cf -) | tar -C "$TOP" -xf -
  else  # an unpacked bundle: its tree without the build
    (cd "$ROOT" && tar --exclude='./build*' --exclude=./.deps -cf - .) | tar -C "$TOP" -xf -
  fi
  cp -a "$BIN" "$BUILD/lib" "$TOP/build-gpucheck/"
  for p in "$BUILD"/libclusterbench_gpu*.so "$BUILD"/libclusterbench_gpu*.so.cuda; do
    [ -f "$p" ] && cp -a "$p" "$TOP/build-gpucheck/"
  done
  PACK=$BUILD/clusterbench-gpu-check.tar.xz
  tar -C "$STAGE" -cf - clusterbench-gpu-check | xz -T0 -9e >"$PACK" ||
    { echo "gpu-check: cannot write $PACK" >&2; exit 1; }
  say "bundled $(du -sh "$TOP" | cut -f1) into $PACK"
  echo "bundle: $PACK $(stat -c %s "$PACK")"
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
# The spec tables of this tree: a binary carried in a bundle is neither installed (no
# share/clusterbench beside it) nor in a build tree there (docs/install.md).
export CLUSTERBENCH_SPECS_DIR=${CLUSTERBENCH_SPECS_DIR:-$ROOT/reports/specs}
mkdir -p "$OUT"

# --- sections: each prints its part and appends "area|case|ours|anchor|unit" rows to $TABLE ----
TABLE=$OUT/gpu-check.table
: >"$TABLE"
SPEC_ARGS=()  # set by section_inventory

section_inventory() {
  say "inventory"
  timeout "${BUDGET[inventory]}" "$BIN" inventory >"$OUT/inventory.json" 2>"$OUT/inventory.err" || true
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
  # The spec table of this GPU model, named explicitly: the tables match 8-GPU nodes, and the run
  # would refuse a check machine with fewer GPUs (exit 2) before any case ran.
  local spec
  spec=$(python3 - "$OUT/inventory.json" "$ROOT/reports/specs" 2>/dev/null <<'P'
import glob, json, re, sys
gpus = json.load(open(sys.argv[1])).get("gpus", [])
if gpus:
    for f in sorted(glob.glob(sys.argv[2] + "/*.json")):
        m = json.load(open(f)).get("match") or {}
        if m.get("gpu_name") and re.search(m["gpu_name"], gpus[0].get("name", "")):
            print(f); break
    else:
        print(sys.argv[2] + "/gpu-node-base.json")
P
)
  if [ -n "$spec" ]; then SPEC_ARGS=(--spec "$spec"); echo "spec table: $spec"; fi
}

# compute.gemm at 8192^3 in FP16, BF16, TF32 and FP8 (cuBLASLt; FP8 without and with fast
# accumulation, two rows), and BF16 at 1024^3 (launch-bound: timed batches launch CUDA graphs),
# anchored by torch.matmul and torch._scaled_mm(use_fast_accum=False / True) on the same GPU in
# the same run, measured as ours: inputs of gemm_input_value's law (magnitude uniform in [0.25, 1),
# random sign), a 200 ms warm-up, batches of 20 products per CUDA event pair, medians.
section_gemm() {
  say "compute.gemm (cuBLASLt, 8192^3; bf16 1024^3)"
  timeout 120 "$BIN" run --suite quick "${SPEC_ARGS[@]}" --only compute.gemm --set compute.gemm.backends=cublaslt \
    --set compute.gemm.dtypes=fp16,bf16,tf32,fp8_e4m3 --set compute.gemm.shapes=8192 \
    --set compute.gemm.min_time=1 --out "$OUT/gemm" >"$OUT/gemm.log" 2>&1
  echo "clusterbench exited $? (its verdict code: 0 pass, 1 a row failed, 4 incomplete; verdicts: $OUT/gemm/report.md)"
  timeout 30 "$BIN" run --suite quick "${SPEC_ARGS[@]}" --only compute.gemm --set compute.gemm.backends=cublaslt \
    --set compute.gemm.dtypes=bf16 --set compute.gemm.shapes=1024 \
    --set compute.gemm.min_time=0.5 --out "$OUT/gemm-small" >"$OUT/gemm-small.log" 2>&1
  echo "clusterbench exited $? (1024^3; verdicts: $OUT/gemm-small/report.md)"
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
def inputs(rows, cols):  # gemm_input_value's law: magnitude uniform in [0.25, 1), random sign
    mag = torch.rand(rows, cols, device="cuda") * 0.75 + 0.25
    return torch.where(torch.rand(rows, cols, device="cuda") < 0.5, -mag, mag)
def median_seconds(fn, batch=20, samples=15):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    warm = 0.0
    while warm < 0.2:  # warm-up by time, as the plugin's (compute/gemm_select.hpp)
        s.record(); fn(); e.record(); e.synchronize()
        warm += s.elapsed_time(e) / 1e3
    times = []
    for _ in range(samples):
        s.record()
        for _ in range(batch): fn()
        e.record(); e.synchronize()
        times.append(s.elapsed_time(e) / 1e3 / batch)
    return sorted(times)[(len(times) - 1) // 2]
def product(dtype, fast):
    if dtype == "fp8_e4m3":  # _scaled_mm: A row-major, B column-major
        a = inputs(n, n).to(torch.float8_e4m3fn)
        b = inputs(n, n).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                        use_fast_accum=fast)
    t = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[dtype]
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    a, b = inputs(n, n).to(t), inputs(n, n).to(t)
    return lambda: torch.matmul(a, b)
# Keys as the table labels rows: "<dtype>[ fast_accum=off|on] <n>^3".
for n, dtype, fast in [(8192, "fp16", None), (8192, "bf16", None), (8192, "tf32", None),
                       (8192, "fp8_e4m3", False), (8192, "fp8_e4m3", True), (1024, "bf16", None)]:
    key = dtype + ("" if fast is None else " fast_accum=" + ("on" if fast else "off"))
    key += " %d^3" % n
    try:
        out[key] = 2 * n ** 3 / median_seconds(product(dtype, bool(fast))) / 1e12
    except Exception as e:
        out[key] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
P
  python3 - "$OUT/gemm-anchor.json" "$OUT/gemm/records.jsonl" "$OUT/gemm-small/records.jsonl" \
    >>"$TABLE" <<'P'
import json, sys
try:
    anchor = json.load(open(sys.argv[1]))
except Exception as e:
    anchor = {"error": "anchor produced no result (%s)" % e}
for path in sys.argv[2:]:
    try:
        recs = [json.loads(l) for l in open(path)]
    except OSError as e:
        print("compute.gemm|%s|no records: %s|n/a|TFLOP/s" % (path.split("/")[-2], e)); continue
    for r in recs:
        p = r["params"]
        fast = " fast_accum=%s" % p["fast_accum"] if "fast_accum" in p else ""
        label = "%s%s %d^3" % (p["dtype"], fast, p["m"])
        m = {x["name"]: x["value"] for x in r.get("metrics", [])}
        ours = "%.1f" % m["tflops"] if r["status"] == "ok" else "%s: %s" % (r["status"], r["message"])
        a = anchor.get(label, anchor.get("error", "no anchor"))
        a = "%.1f" % a if isinstance(a, (int, float)) else "n/a (%s)" % a
        gpu = r["scope"].get("gpu_index", "")
        print("compute.gemm|%s gpu%s|%s|%s|TFLOP/s" % (label, gpu, ours, a))
        x = r.get("extra", {})
        if r["status"] == "ok":  # the choice's warm-up, the launch
            al, ln = x.get("algorithm", {}), x.get("launch", {})
            print("compute.gemm|%s gpu%s choice, launch|warm-up %.2f s, %s rounds, %s/%s tried; %s|n/a|-" % (
                label, gpu, al.get("warmup_seconds", 0), al.get("selection_rounds"), al.get("tried"),
                al.get("heuristic_returned"), ln.get("mode", "?") + (
                    " of %s" % ln["products_per_graph"] if "products_per_graph" in ln else
                    ": " + ln.get("why", ""))))
P
}

# compute.gpu_memory_bandwidth (kernel and cudaMemcpyAsync device-to-device), anchored by a
# PyTorch device copy (Tensor.copy_) of the same size; GB/s counts bytes read + written.
section_gpu_memory_bandwidth() {
  say "compute.gpu_memory_bandwidth"
  timeout 90 "$BIN" run --suite quick "${SPEC_ARGS[@]}" --only compute.gpu_memory_bandwidth \
    --set compute.gpu_memory_bandwidth.min_time=1 --out "$OUT/dcopy" >"$OUT/dcopy.log" 2>&1
  echo "clusterbench exited $? (its verdict code: 0 pass, 1 a row failed, 4 incomplete; verdicts: $OUT/dcopy/report.md)"
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

# The seven collectives over NCCL on one rank: busbw's factor is 0 with one rank, so the
# sweep (float, half, bfloat16; 8 B to 64 MiB) is a correctness check, #wrong 0 in every case.
section_collectives() {
  say "collectives.* (NCCL, 1 rank: correctness)"
  timeout 150 "$BIN" run --suite quick "${SPEC_ARGS[@]}" --only 'collectives.*' --set collectives.backends=nccl \
    --set collectives.dtypes=float,half,bfloat16 --set collectives.maxbytes=64M \
    --set collectives.stepfactor=8 --set collectives.min_time=0.02 --out "$OUT/coll" \
    >"$OUT/coll.log" 2>&1
  echo "clusterbench exited $? (its verdict code: 0 pass, 1 a row failed, 4 incomplete; verdicts: $OUT/coll/report.md)"
  python3 - "$OUT/coll/records.jsonl" >>"$TABLE" <<'P'
import collections, json, sys
try:
    recs = [json.loads(l) for l in open(sys.argv[1])]
except OSError as e:
    recs = []
    print("collectives.*|nccl 1 rank|no records: %s|n/a|cases" % e)
by = collections.defaultdict(list)
for r in recs:
    by[r["benchmark"]].append(r)
for bench, rs in sorted(by.items()):
    ok = [r for r in rs if r["status"] == "ok"]
    wrong = sum(m["value"] for r in ok for m in r["metrics"] if m["name"].startswith("wrong"))
    bad = next((r for r in rs if r["status"] != "ok"), None)
    ours = "%d/%d ok, #wrong %d" % (len(ok), len(rs), wrong)
    if bad:
        ours += "; %s: %s" % (bad["status"], bad["message"])
    print("%s|nccl 1 rank, 3 types, 8 B-64 MiB|%s|n/a (correctness)|cases" % (bench, ours))
P
}

# compute.host_device_copy, pinned host memory on the GPU's NUMA node, H2D and D2H, anchored by
# PyTorch: a pinned tensor .to('cuda', non_blocking=True) and a device tensor copied into a pinned
# one (copy_(..., non_blocking=True)), timed with CUDA events; GB/s = bytes / median / 1e9.
section_host_device_copy() {
  say "compute.host_device_copy (near: pinned h2d/d2h; pageable h2d/d2h/bidir)"
  local bytes=$((256 << 20))
  timeout 60 "$BIN" run --suite quick "${SPEC_ARGS[@]}" --only compute.host_device_copy \
    --set compute.host_device_copy.directions=h2d,d2h --set compute.host_device_copy.memory=pinned \
    --set compute.host_device_copy.numa=near --set compute.host_device_copy.gpus=all \
    --set compute.host_device_copy.bytes=$bytes --set compute.host_device_copy.min_time=0.5 \
    --out "$OUT/hcopy" >"$OUT/hcopy.log" 2>&1
  echo "clusterbench exited $? (its verdict code: 0 pass, 1 a row failed, 4 incomplete; verdicts: $OUT/hcopy/report.md)"
  # Pageable: bidir issues each direction from a host thread of its own; read
  # against the pageable h2d and d2h beside it (no anchor).
  timeout 30 "$BIN" run --suite quick "${SPEC_ARGS[@]}" --only compute.host_device_copy \
    --set compute.host_device_copy.directions=h2d,d2h,bidir --set compute.host_device_copy.memory=pageable \
    --set compute.host_device_copy.numa=near --set compute.host_device_copy.gpus=all \
    --set compute.host_device_copy.bytes=$bytes --set compute.host_device_copy.min_time=0.3 \
    --out "$OUT/hcopy-pageable" >"$OUT/hcopy-pageable.log" 2>&1
  echo "clusterbench exited $? (pageable; verdicts: $OUT/hcopy-pageable/report.md)"
  say "torch anchor (pinned copies of $bytes bytes)"
  timeout 45 python3 - "$bytes" >"$OUT/hcopy-anchor.json" 2>"$OUT/hcopy-anchor.err" <<'P2'
import json, sys
try:
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    n = int(sys.argv[1])
    host = torch.empty(n, dtype=torch.uint8).random_().pin_memory()
    dev = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    back = torch.empty(n, dtype=torch.uint8).pin_memory()
    def median(fn):
        fn(); torch.cuda.synchronize()
        times = []
        for _ in range(30):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        return sorted(times)[(len(times) - 1) // 2]
    print(json.dumps({"h2d": n / median(lambda: host.to("cuda", non_blocking=True)) / 1e9,
                      "d2h": n / median(lambda: back.copy_(dev, non_blocking=True)) / 1e9}))
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
P2
  python3 - "$OUT/hcopy-anchor.json" "$OUT/hcopy/records.jsonl" "$OUT/hcopy-pageable/records.jsonl" \
    >>"$TABLE" <<'P2'
import json, sys
try:
    anchor = json.load(open(sys.argv[1]))
except Exception as e:
    anchor = {"error": "anchor produced no result (%s)" % e}
recs = []
for path in sys.argv[2:]:
    try:
        recs += [json.loads(l) for l in open(path)]
    except OSError as e:
        print("compute.host_device_copy|%s|no records: %s|n/a|GB/s" % (path.split("/")[-2], e))
for r in recs:
    d, mem = r["params"]["direction"], r["params"].get("memory", "pinned")
    m = {x["name"]: x["value"] for x in r.get("metrics", [])}
    a = anchor.get(d, anchor.get("error", "no anchor")) if mem == "pinned" else "pageable"
    a = "%.1f" % a if isinstance(a, (int, float)) else "n/a (%s)" % a
    ours = "%.1f" % m["bandwidth"] if r["status"] == "ok" else "%s: %s" % (r["status"], r["message"])
    gpu = r["scope"].get("gpu_index", "")
    threads = r.get("extra", {}).get("host_threads")
    more = " (%d host threads)" % threads if d == "bidir" and threads else ""
    print("compute.host_device_copy|%s %s near gpu%s%s|%s|%s|GB/s" % (d, mem, gpu, more, ours, a))
    if r["status"] == "ok" and "pcie_gen_min" in m:
        t = r["extra"]["telemetry"].get("pcie") or {}
        print("compute.host_device_copy|%s PCIe during copy gpu%s|gen %d x%d (max gen %s x%s)|n/a|link" % (
            d, gpu, m["pcie_gen_min"], m["pcie_width_min"], t.get("gen_max"), t.get("width_max")))
P2
}

# compute.training_step: the ci preset in bf16 on one GPU (one rank, so no collectives): the
# GPU engine's layer GEMMs (the plugin's gemm operations), host copies and step, the step against
# its prediction. Anchored by PyTorch: the same forward and backward GEMMs of one layer
# (torch.matmul / torch.bmm in bf16), CUDA-event timed; ms = the sum of their medians.
section_training_step() {
  say "compute.training_step (ci preset, bf16, 1 GPU)"
  timeout 60 "$BIN" run --suite quick "${SPEC_ARGS[@]}" --only compute.training_step \
    --set compute.training_step.preset=ci --set compute.training_step.dtype=bf16 \
    --set compute.training_step.min_time=0.2 --out "$OUT/train" >"$OUT/train.log" 2>&1
  echo "clusterbench exited $? (verdicts: $OUT/train/report.md)"
  timeout 40 python3 - >"$OUT/train-anchor.json" 2>"$OUT/train-anchor.err" <<'P2'
import json
try:
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    T, h, f, s, d, batch = 2048, 256, 1024, 256, 64, 8 * 4  # the ci preset
    fwd = [(T, 3 * h, h, 1), (s, s, d, batch), (s, d, s, batch), (T, h, h, 1), (T, f, h, 1), (T, h, f, 1)]
    shapes = fwd + [x for (m, n, k, c) in fwd for x in ((m, k, n, c), (k, n, m, c))]
    def median(fn):
        fn(); torch.cuda.synchronize()
        times = []
        for _ in range(20):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record(); b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        return sorted(times)[(len(times) - 1) // 2]
    total = 0.0
    for m, n, k, c in shapes:
        A = torch.randn(c, m, k, dtype=torch.bfloat16, device="cuda")
        B = torch.randn(c, k, n, dtype=torch.bfloat16, device="cuda")
        total += median(lambda: torch.bmm(A, B) if c > 1 else torch.matmul(A[0], B[0]))
    print(json.dumps({"layer_ms": total * 1e3}))
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
P2
  python3 - "$OUT/train-anchor.json" "$OUT/train/records.jsonl" >>"$TABLE" <<'P2'
import json, sys
try:
    anchor = json.load(open(sys.argv[1]))
except Exception as e:
    anchor = {"error": "anchor produced no result (%s)" % e}
a = anchor.get("layer_ms")
a = "%.3f" % a if isinstance(a, (int, float)) else "n/a (%s)" % anchor.get("error", "no anchor")
try:
    recs = [json.loads(l) for l in open(sys.argv[2])]
except OSError as e:
    recs = []
    print("compute.training_step|ci bf16|no records: %s|n/a|ms" % e)
for r in recs:
    if r["scope"]["kind"] != "cluster":
        continue
    if r["status"] != "ok":
        print("compute.training_step|ci bf16|%s: %s|%s|ms" % (r["status"], r["message"], a))
        continue
    m = {x["name"]: x["value"] for x in r["metrics"]}
    p = r["extra"]["parts"]
    print("compute.training_step|ci bf16 layer GEMMs fwd+bwd|%.3f|%s|ms" % (
        (p["forward_layer_s"] + p["backward_layer_s"]) * 1e3, a))
    print("compute.training_step|ci bf16 step (measured / predicted)|%.3f / %.3f|n/a|ms" % (
        m["step_time"], m["predicted_step_time"]))
    print("compute.training_step|ci bf16 bottleneck|%s|n/a|-" % r["extra"]["bottleneck_text"])
P2
  # The 7b preset's path on one GPU: ZeRO-2 with the optimizer offloaded (pinned D2H and H2D of
  # the shard, host Adam after fp16's loss-scale check and unscale), fp16, accumulation 4; 2 of
  # its 32 layers so that its host state fits (16 B of Adam state a parameter on the host), and
  # micro-batch 8 (the preset's 32 is 4x the GEMMs) so that a few steps fit the budget.
  say "compute.training_step (7b preset, 2 layers, ZeRO-2 with offload, 1 GPU)"
  timeout 40 "$BIN" run --suite quick "${SPEC_ARGS[@]}" --only compute.training_step \
    --set compute.training_step.preset=7b --set compute.training_step.layers=2 \
    --set compute.training_step.micro_batch=8 --set compute.training_step.rounds=1 \
    --set compute.training_step.min_time=0.1 \
    --out "$OUT/train7b" >"$OUT/train7b.log" 2>&1
  echo "clusterbench exited $? (verdicts: $OUT/train7b/report.md)"
  python3 - "$OUT/train7b/records.jsonl" >>"$TABLE" <<'P2'
import json, sys
try:
    recs = [json.loads(l) for l in open(sys.argv[1])]
except OSError as e:
    recs = []
    print("compute.training_step|7b offload|no records: %s|n/a|ms" % e)
for r in recs:
    if r["scope"]["kind"] != "cluster":
        continue
    if r["status"] != "ok":
        print("compute.training_step|7b offload|%s: %s|n/a|ms" % (r["status"], r["message"]))
        continue
    m = {x["name"]: x["value"] for x in r["metrics"]}
    p = r["extra"]["parts"]
    print("compute.training_step|7b offload d2h / host Adam / h2d|%.1f / %.1f / %.1f|n/a|ms" % (
        p.get("d2h_s", 0) * 1e3, p.get("optimizer_s", 0) * 1e3, p.get("h2d_s", 0) * 1e3))
    print("compute.training_step|7b offload step (measured / predicted)|%.3f / %.3f|n/a|ms" % (
        m["step_time"], m["predicted_step_time"]))
P2
}

# clusterbench burnin on the GPU: a 20-second soak (6 intervals of bf16 8192^3 GEMM
# with a concurrent 1-rank NCCL all_reduce), its per-GPU verdict, rates and the health counter
# deltas (ECC, XID, row remapping, NVLink, AER) read through the real NVML at the start and end.
section_burnin() {
  say "burnin (20 s soak: GEMM + all_reduce, verdicts, health counters)"
  timeout 90 "$BIN" burnin --minutes 0.34 --out "$OUT/burnin" \
    >"$OUT/burnin.log" 2>&1
  echo "clusterbench burnin exited $? (its verdict code; verdicts: $OUT/burnin/report.md)"
  python3 - "$OUT/burnin" >>"$TABLE" <<'P'
import json, os, sys
d = sys.argv[1]
try:
    recs = [json.loads(l) for l in open(os.path.join(d, "records.jsonl"))]
    rep = json.load(open(os.path.join(d, "report.json")))
except (OSError, ValueError) as e:
    recs, rep = [], {"rows": []}
    print("burnin|soak|no result: %s|n/a|verdict" % e)
for r in recs:
    m = {x["name"]: x["value"] for x in r.get("metrics", [])}
    sc = r["scope"]
    gpu = "gpu%s" % sc["gpu_index"] if "gpu_index" in sc else "cpu rank %s" % sc.get("rank", "")
    if r["status"] != "ok":
        print("burnin|%s|%s: %s|n/a|TFLOP/s" % (gpu, r["status"], r.get("message", "")))
        continue
    print("burnin|%s rate first/last/worst|%.1f/%.1f/%.1f|n/a|TFLOP/s" % (
        gpu, m.get("rate_first_minute", 0), m.get("rate_last_minute", 0),
        m.get("rate_worst_interval", 0)))
    print("burnin|%s max temperature, verification errors|%s C, %d|n/a|C, count" % (
        gpu, m.get("temperature_max", "n/a"), m.get("verification_errors", 0)))
    # Every product compared with the first on the GPU (verify_each), and every all_reduce.
    series = r.get("extra", {}).get("series", [])
    prod = [iv.get("verification", {}).get("products", {}) for iv in series]
    ar = [iv.get("allreduce", {}) for iv in series]
    print("burnin|%s products compared / wrong; all_reduces compared / wrong|%d / %d; %d / %d|n/a|count" % (
        gpu, sum(p.get("checked", 0) for p in prod), sum(p.get("wrong", 0) for p in prod),
        sum(a.get("compared", 0) for a in ar), sum(a.get("wrong_ops", 0) for a in ar)))
for row in rep.get("rows", []):
    if row["id"].startswith(("burnin.", "health.")):
        print("burnin|%s|%s|n/a|verdict" % (row["id"], row["outcome"]))
P
}

# Sections run in this order. Other areas add a section_<name> function above (printing its part
# and appending rows to $TABLE), its name here and its time budget (seconds) in BUDGET: the
# collectives check goes after gemm. A section runs at most its budget (then it is stopped, with
# its processes), and none starts past 270 s: each remaining one is skipped, saying so, and has a
# row in the table, so the check ends within 5 minutes.
SECTIONS=(inventory gemm collectives gpu_memory_bandwidth host_device_copy training_step burnin)
declare -A BUDGET=([inventory]=15 [gemm]=80 [collectives]=35 [gpu_memory_bandwidth]=30
                   [host_device_copy]=30 [training_step]=45 [burnin]=35)  # 270 s in all
DEADLINE=${CLUSTERBENCH_GPU_CHECK_DEADLINE:-270}
# kill_tree PID: stops PID and every process below it (`timeout` puts its command in a process
# group of its own, so a process group kill would miss it); /proc only, no procps needed.
kill_tree() {
  local c
  kill -STOP "$1" 2>/dev/null
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do kill_tree "$c"; done
  kill -TERM "$1" 2>/dev/null
  kill -CONT "$1" 2>/dev/null
}
section_inventory  # in this shell (it sets SPEC_ARGS), its binary under its budget
for s in "${SECTIONS[@]:1}"; do
  left=$((DEADLINE - ($(date +%s) - START)))
  if [ "$left" -le 0 ]; then
    say "skipping $s: past ${DEADLINE} s"
    echo "$s|all|skipped: past ${DEADLINE} s (the check ends within 5 minutes)|n/a|-" >>"$TABLE"
    continue
  fi
  budget=${BUDGET[$s]}
  [ "$budget" -gt "$left" ] && budget=$left
  ( "section_$s" ) &
  pid=$!
  ( trap 'kill "$sp"; exit' TERM; sleep "$budget" & sp=$!; wait "$sp"; kill_tree "$pid"
  ) >/dev/null 2>&1 &
  dog=$!
  wait "$pid"
  rc=$?
  kill "$dog" 2>/dev/null; wait "$dog" 2>/dev/null
  if [ "$rc" -ge 128 ]; then
    say "section $s stopped at its budget of ${budget} s"
    echo "$s|all|stopped: past its budget of ${budget} s|n/a|-" >>"$TABLE"
  fi
done

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
