#!/usr/bin/env python3
"""The include rules of docs/architecture.md, checked over the source tree (ctest `layering`).

    tests/support/layering.py SOURCE_DIR

Every quoted #include of a C++/CUDA source outside tests/ is resolved the way the build does (the
including file's folder, then bench/, then the root) and both ends are put in a layer:

    records  bench/records     process  bench/process (may use records' utf8.hpp)     env   bench/env
    gpu      bench/gpu         core     bench/core         app   bench/app
    compute, collectives, io, network   (benchmark folders)
    reports  reports/

A layer may include only what ALLOWED below gives it. Of bench/core, a benchmark folder may
include the public face, bench/core/api/, alone (and a header at bench/core/ that only includes
api/ headers: an old path kept for files not yet moved); the rest of bench/core is internal. A
benchmark folder may include another benchmark folder's public header (a .hpp at its top) only
from a composite benchmark named in COMPOSITES. Nothing outside app/ includes app/. The CMake link lines of the libraries keep the same
arrows: clusterbench_core never links clusterbench_reports, reports/ links no MPI, CUDA or core.
Every breach is printed with file:line; exit 1 when there is one.
"""
import os
import re
import sys

BENCH_LAYERS = ["records", "process", "env", "gpu", "core", "app"]
BENCHMARK_FOLDERS = ["compute", "collectives", "io", "network"]
FRAMEWORK = {"core", "env", "records", "gpu", "process"}

ALLOWED = {
    "records": {"records"},
    "process": {"process", "records"},  # records/utf8.hpp: a tool's output made valid UTF-8
    "env": {"env", "records", "process"},
    "gpu": {"gpu", "env", "records"},
    "core": {"core", "env", "records", "gpu", "process"},
    "app": set(BENCH_LAYERS) | set(BENCHMARK_FOLDERS) | {"reports"},
    "reports": {"reports", "records", "process"},
}
for folder in BENCHMARK_FOLDERS:
    ALLOWED[folder] = FRAMEWORK | {folder}

# Composite benchmarks (docs/design.md "Layout"): the other benchmark folders' public headers each may
# include. The burn-in soak drives the GEMM operation and a collective backend.
COMPOSITES = {
    "compute/burnin_soak.cpp": {"collectives/collective.hpp"},
    "compute/burnin_allreduce.hpp": {"collectives/collective.hpp"},
    # The training step drives a collective backend and the loader pipeline on its dataset.
    "compute/training_engine.hpp": {"collectives/collective.hpp"},
    "compute/training_step.cpp": {"collectives/collective.hpp", "io/dataloader.hpp",
                                  "io/dataset.hpp", "io/scratch.hpp"},
}

# bench/core's public face: what a benchmark author includes (Benchmark, CaseRun, knobs, Settings,
# GpuCase, errors, Context, abort clean-ups, operation counts).
CORE_API = "bench/core/api/"

# Internal headers of bench/core a benchmark file still includes, until it moves to CaseRun: the
# burn-in soak's console lines (case_line.hpp: CaseRun::print_progress), its question to rank 0
# over the progress channel (progress.hpp) and a signal's name (watchdog.hpp).
TRANSITIONAL = {
    "compute/burnin_soak.cpp": {"bench/core/case_line.hpp", "bench/core/progress.hpp",
                                "bench/core/watchdog.hpp"},
    "compute/burnin_series.cpp": {"bench/core/case_line.hpp"},
}

# Libraries of the CMake files and the libraries they must not link.
LINK_RULES = {
    "clusterbench_records": {"clusterbench_core", "clusterbench_reports", "clusterbench_env",
                             "clusterbench_gpu_host", "MPI::MPI_CXX"},
    "clusterbench_process": {"clusterbench_core", "clusterbench_reports", "MPI::MPI_CXX"},
    "clusterbench_env": {"clusterbench_core", "clusterbench_reports", "MPI::MPI_CXX"},
    "clusterbench_gpu_host": {"clusterbench_core", "clusterbench_reports", "MPI::MPI_CXX"},
    "clusterbench_core": {"clusterbench_reports", "LibArchive::LibArchive"},
    "clusterbench_reports": {"clusterbench_core", "clusterbench_env", "clusterbench_gpu_host",
                             "MPI::MPI_CXX", "CUDA::cudart", "CUDA::cublasLt"},
}
for obj in ("cb_compute", "cb_collectives", "cb_io", "cb_network"):
    LINK_RULES[obj] = {"clusterbench_reports"}

SOURCE_EXT = (".cpp", ".hpp", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    """The layer of a path relative to the source root, or None (tests, generated files)."""
    parts = rel.split("/")
    if parts[0] == "bench" and len(parts) > 2 and parts[1] in BENCH_LAYERS:
        return parts[1]
    if parts[0] in BENCHMARK_FOLDERS or parts[0] == "reports":
        return parts[0]
    return None


def resolve(root, including, name):
    for base in (os.path.dirname(including), "bench", ""):
        rel = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, rel)):
            return rel
    return None


FORWARD = re.compile(r'^\s*#\s*include\s+"core/api/[^"]+"\s*$')


def is_forwarder(root, rel):
    """A header of bench/core whose code is only includes of core/api/ headers (an old path)."""
    if not rel.endswith(".hpp"):
        return False
    code = [ln for ln in open(os.path.join(root, rel), encoding="utf-8").read().splitlines()
            if ln.strip() and not ln.strip().startswith("//") and ln.strip() != "#pragma once"]
    return bool(code) and all(FORWARD.match(ln) for ln in code)


def core_internal(root, src, target):
    """Whether benchmark file `src` reaches past bench/core's public face with `target`."""
    return (layer_of(target) == "core" and not target.startswith(CORE_API)
            and not is_forwarder(root, target) and target not in TRANSITIONAL.get(src, set()))


def is_public_header(rel):
    parts = rel.split("/")
    return len(parts) == 2 and parts[1].endswith(".hpp")


def source_files(root):
    for top in ["bench"] + BENCHMARK_FOLDERS + ["reports"]:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d != "standalone"]
            for f in sorted(filenames):
                if f.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def include_breaches(root):
    out = []
    for rel in source_files(root):
        src_layer = layer_of(rel)
        if src_layer is None:
            continue
        text = open(os.path.join(root, rel), encoding="utf-8").read()
        for m in INCLUDE.finditer(text):
            target = resolve(root, rel, m.group(1))
            if target is None:
                continue  # a generated header (git_sha.h) or a library's
            dst_layer = layer_of(target)
            line = text.count("\n", 0, m.start()) + 1
            if src_layer in BENCHMARK_FOLDERS and core_internal(root, rel, target):
                out.append(f"{rel}:{line}: {src_layer} includes {target}, internal to bench/core; "
                           f"benchmark folders include {CORE_API} only")
                continue
            if dst_layer is None or dst_layer in ALLOWED[src_layer]:
                continue
            if (src_layer in BENCHMARK_FOLDERS and dst_layer in BENCHMARK_FOLDERS
                    and is_public_header(target) and target in COMPOSITES.get(rel, set())):
                continue
            out.append(f"{rel}:{line}: {src_layer} includes {target} ({dst_layer}); "
                       f"{src_layer} may include {', '.join(sorted(ALLOWED[src_layer]))}")
    return out


def link_breaches(root):
    out = []
    call = re.compile(r"target_link_libraries\s*\(\s*(\S+)([^)]*)\)", re.S)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("build", "tests")]
        for f in filenames:
            if f != "CMakeLists.txt":
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            text = open(os.path.join(dirpath, f), encoding="utf-8").read()
            for m in call.finditer(text):
                target, libs = m.group(1), m.group(2).split()
                for lib in libs:
                    if lib in LINK_RULES.get(target, set()):
                        line = text.count("\n", 0, m.start()) + 1
                        out.append(f"{rel}:{line}: {target} links {lib}")
    return out


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else ".")
    breaches = include_breaches(root) + link_breaches(root)
    for b in breaches:
        print(b)
    files = sum(1 for _ in source_files(root))
    print(f"layering: {files} source files, {len(breaches)} breach(es)")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
