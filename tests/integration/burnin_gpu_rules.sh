#!/usr/bin/env bash
# The burn-in follows docs/design.md's GPU rules: on a node with NVIDIA GPUs (fixture tree + fake NVML,
# 8x H100) whose plugin cannot load, the GPU's record is failed with the exact error text, the GPU
# table burnin-gpu.json is chosen, the verdict names the GPU, and nothing is soaked (it does not
# wait out the minutes). It never falls back to the CPU. One process. Budget: about 10 s.
source "$(dirname "$0")/lib.sh"
FAKE_NVML=${CB_BINARY_DIR:-}/tests/fake_nvml/libnvidia-ml.so
[ "${CB_HAVE_NVML:-1}" = "1" ] && [ -f "$FAKE_NVML" ] || { echo "SKIP: no fake NVML"; exit 77; }

start=$(date +%s)
expect_rc 1 env CLUSTERBENCH_NVML_LIB="$FAKE_NVML" FAKE_NVML_JSON="$CB_FIXTURES/nvml/h100x8.json" \
  CLUSTERBENCH_GPU_PLUGIN=/nonexistent/libclusterbench_gpu.so \
  "$CB_BIN" burnin --minutes 0.5 --fs-root "$CB_FIXTURES/fsroot/two-socket" --out "$TMP/run"
[ $(($(date +%s) - start)) -lt 25 ] || fail "waited out the soak with nothing to soak"
expect_out "spec: .*reports/specs/burnin-gpu.json"
py "
d = sys.argv[1]
recs = [json.loads(l) for l in open(d + '/records.jsonl')]
assert len(recs) == 1, recs
r = recs[0]
assert r['status'] == 'failed' and r['scope']['kind'] == 'gpu' and r['scope']['gpu_index'] == 0, r
assert r['scope']['uuid'] == 'GPU-6d8a3b2e-1f4c-7a90-b2d1-0c5e8f3a4b01', r['scope']
assert r['message'].startswith('GPU plugin /nonexistent/libclusterbench_gpu.so: '), r['message']
assert 'cannot open shared object file' in r['message'], r['message']
assert r['params']['backend'] == 'cublaslt' and r['params']['dtype'] == 'bf16', r['params']
assert r['extra']['series'] == [] and r['metrics'] == [], r
rep = json.load(open(d + '/report.json'))
row = [x for x in rep['rows'] if x['id'] == 'burnin.verification'][0]
assert row['outcome'] == 'FAIL' and row['worst_item'].split('/')[1].startswith('gpu0['), row
assert 'cannot open shared object file' in row['message'], row['message']
assert rep['exit_code'] == 1
" "$TMP/run"
ok "GPUs on the bus, plugin missing: failed GPU record with dlopen's text, FAIL names gpu0"
echo "$PASSES passed, 0 failed"
