#!/usr/bin/env bash
# scripts/gpu-check.sh rehearsed on this GPU-less machine with the build under test: it runs to
# the end and prints a table whose GEMM rows are waived ("no NVIDIA GPU on the PCI bus"), with
# the PyTorch anchor unavailable. Budget: < 30 s.
source "$(dirname "$0")/lib.sh"
: "${CB_BINARY_DIR:?}"
if [ -e /dev/nvidia0 ]; then echo "SKIP: this machine has a GPU; run scripts/gpu-check.sh itself"; exit 77; fi
expect_rc 0 env CLUSTERBENCH_NVML_LIB=/nonexistent.so bash "$CB_SOURCE_DIR/scripts/gpu-check.sh" \
  --build-dir "$CB_BINARY_DIR" --out "$TMP/gc"
expect_out "== inventory"
expect_out "0 GPU\(s\) on the PCI bus"
expect_out "benchmark +case +ours \(median\) +anchor \(median\) +ratio +unit"
# FP8 twice, labelled apart (fast_accum off, on), and BF16 at 1024^3 (the CUDA-graph launch).
for d in "fp16 8192" "bf16 8192" "tf32 8192" "fp8_e4m3 fast_accum=off 8192" \
         "fp8_e4m3 fast_accum=on 8192" "bf16 1024"; do
  expect_out "compute.gemm +$d\^3 gpu0 +waived: no NVIDIA GPU on the PCI bus +n/a"
done
for m in kernel memcpy; do
  expect_out "compute.gpu_memory_bandwidth +$m gpu0 +waived: no NVIDIA GPU on the PCI bus +n/a"
done
for d in "h2d pinned" "d2h pinned" "h2d pageable" "d2h pageable" "bidir pageable"; do
  expect_out "compute.host_device_copy +$d near gpu0 +waived: no NVIDIA GPU on the PCI bus +n/a"
done
# The training step: a node without GPUs runs the CPU engine, which runs fp32 only.
expect_out "compute.training_step +ci bf16 +waived: the CPU engine runs fp32 GEMMs \\(OpenBLAS sgemm\\) +n/a"
expect_out "== done: $TMP/gc"
py "
recs = [json.loads(l) for l in open(sys.argv[1])]
# FP8 twice: fast_accum off and on (issue 18 item 11).
assert sorted(r['params']['dtype'] for r in recs) == ['bf16', 'fp16', 'fp8_e4m3', 'fp8_e4m3', 'tf32'], recs
assert all(r['status'] == 'waived' and r['params']['m'] == 8192 for r in recs)
" "$TMP/gc/gemm/records.jsonl"
py "
recs = [json.loads(l) for l in open(sys.argv[1])]
assert sorted(r['params']['direction'] for r in recs) == ['d2h', 'h2d'], recs
assert all(r['status'] == 'waived' and r['params']['memory'] == 'pinned' for r in recs)
" "$TMP/gc/hcopy/records.jsonl"
py "
recs = [json.loads(l) for l in open(sys.argv[1])]
assert sorted(r['params']['direction'] for r in recs) == ['bidir', 'd2h', 'h2d'], recs
assert all(r['status'] == 'waived' and r['params']['memory'] == 'pageable' for r in recs)
" "$TMP/gc/hcopy-pageable/records.jsonl"
ok "gpu-check.sh runs to the end on a GPU-less machine and prints the waived rows"
echo "$PASSES passed, 0 failed"
