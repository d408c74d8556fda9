#!/usr/bin/env bash
# -DCLUSTERBENCH_MPI=OFF: a single-process binary that runs the suite and writes the same complete,
# consistent run directory as the MPI build run alone (single_process_run). The binary is the one
# gpu_bundle_rehearsal builds (build/gpu-bundle: -DCLUSTERBENCH_MPI=OFF, with the GPU check's
# options), so that make test compiles the MPI-less binary once, not twice.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/check_run.sh"
: "${CB_BINARY_DIR:?}"
NOMPI=$CB_BINARY_DIR/gpu-bundle/clusterbench
[ -x "$NOMPI" ] || fail "$NOMPI missing: gpu_bundle_rehearsal builds it (ctest runs it first)"
grep -q '^CLUSTERBENCH_MPI:BOOL=OFF' "$CB_BINARY_DIR/gpu-bundle/CMakeCache.txt" ||
  fail "$NOMPI was not configured with -DCLUSTERBENCH_MPI=OFF"
if ldd "$NOMPI" | grep -q libmpi; then fail "the MPI=OFF binary links libmpi"; fi
ok "the -DCLUSTERBENCH_MPI=OFF binary links no libmpi"
expect_rc 1 "$NOMPI" run --suite ci --only compute.memory_bandwidth \
  --set compute.memory_bandwidth.array_bytes=16M --out "$TMP/nompi"
expect_out "VERDICT: FAIL \(exit 1\)"
check_run "$TMP/nompi"
ok "-DCLUSTERBENCH_MPI=OFF builds a single-process binary that runs the suite"
echo "$PASSES passed, 0 failed"
