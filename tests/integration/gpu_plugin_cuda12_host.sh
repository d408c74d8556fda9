#!/usr/bin/env bash
# The CUDA 12 host check (tests/compute.cmake): the GPU plugin's host sources compiled and linked
# against PyPI's CUDA 12.2 runtime, cuBLAS and NCCL wheels in .deps/cuda12. Checks that the result
# needs libcudart.so.12, libcublasLt.so.12 and libnccl.so.2 (and nothing of CUDA 13), that it was
# compiled against the wheels' versions, and that those libraries define every symbol it uses
# except the kernel launchers defined in the plugin's .cu files (PyPI has no CUDA 12 nvcc to compile
# them). Budget: < 10 s.
source "$(dirname "$0")/lib.sh"
: "${CB_BINARY_DIR:?}"
LIB=$CB_BINARY_DIR/tests/cuda12_host/libcb_cuda12_hostcheck.so
WHEELS=$CB_SOURCE_DIR/.deps/cuda12/nvidia
[ -f "$LIB" ] || fail "$LIB was not built"

python3 - "$LIB" "$WHEELS" "$CB_SOURCE_DIR" <<'P' >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "CUDA 12 host check"; }
import glob, os, re, subprocess, sys
lib, wheels, src = sys.argv[1:4]

def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout

needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", run("readelf", "-d", lib))
for want in ("libcudart.so.12", "libcublasLt.so.12", "libnccl.so.2"):
    assert want in needed, f"{want} not among NEEDED {needed}"
assert not [n for n in needed if n.endswith(".so.13")], f"a CUDA 13 library is needed: {needed}"
print("NEEDED:", " ".join(needed))

# The versions compiled against: cb_cuda12_host_versions = {CUDART_VERSION, CUBLAS_VERSION, NCCL}.
sym = [l.split() for l in run("nm", "-D", "-S", "--defined-only", lib).splitlines()
       if l.endswith(" cb_cuda12_host_versions")]
assert sym, "cb_cuda12_host_versions missing"
addr, size = int(sym[0][0], 16), int(sym[0][1], 16)
assert size == 12, size
# Map the symbol's address to a file offset through the section headers.
data = open(lib, "rb").read()
for line in run("readelf", "-W", "-S", lib).splitlines():
    m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
    if m:
        vaddr, off, sz = (int(m.group(i), 16) for i in (2, 3, 4))
        if vaddr and vaddr <= addr < vaddr + sz:
            raw = data[off + addr - vaddr: off + addr - vaddr + 12]
            break
cudart, cublas, nccl = (int.from_bytes(raw[i:i + 4], "little") for i in (0, 4, 8))
def header(path, name):
    return int(re.search(rf"#define {name}\s+(\d+)", open(path).read()).group(1))
want_cudart = header(f"{wheels}/cuda_runtime/include/cuda_runtime_api.h", "CUDART_VERSION")
want_nccl = header(f"{wheels}/nccl/include/nccl.h", "NCCL_VERSION_CODE")
assert cudart == want_cudart and 12020 <= cudart < 13000, (cudart, want_cudart)
assert cublas // 10000 == 12, cublas
assert nccl == want_nccl, (nccl, want_nccl)
print(f"compiled against CUDA runtime {cudart}, cuBLAS {cublas}, NCCL {nccl}")

# Every undefined symbol is defined by the wheels' libraries or the C/C++ runtime, except the
# kernel launchers that the .cu files define.
defined = set()
for so in ("cuda_runtime/lib/libcudart.so.12", "cublas/lib/libcublasLt.so.12", "nccl/lib/libnccl.so.2"):
    for l in run("nm", "-D", "--defined-only", f"{wheels}/{so}").splitlines():
        parts = l.split()
        if len(parts) >= 3:
            defined.add(parts[2].split("@")[0])
left = []
for l in run("nm", "-D", "--undefined-only", lib).splitlines():
    kind, name = l.split()[-2:]
    if kind != "U" or "@" in name:  # weak, or versioned from glibc / libstdc++ / libgcc / cudart
        continue
    if name not in defined:
        left.append(name)
cu_text = "".join(open(f).read() for d in ("bench", "compute", "collectives", "io", "network") for f in glob.glob(f"{src}/{d}/**/*.cu", recursive=True))
demangled = run("c++filt", *left).split("\n") if left else []
launchers = []
for name, pretty in zip(left, demangled):
    fn = pretty.split("(")[0].split("::")[-1]
    assert re.search(rf"\b{re.escape(fn)}\s*\(", cu_text), f"{pretty}: defined nowhere in the wheels or the .cu files"
    launchers.append(fn)
assert launchers, "expected the .cu kernel launchers to be the only symbols left"
print("left for the .cu files (no CUDA 12 nvcc on PyPI):", " ".join(sorted(launchers)))
P
cat "$TMP/out"
ok "CUDA 12.2 host sources: libcudart.so.12, libcublasLt.so.12, libnccl.so.2; only .cu launchers left"
echo "$PASSES passed, 0 failed"
