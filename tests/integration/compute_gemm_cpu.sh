#!/usr/bin/env bash
# compute.gemm for real on this GPU-less machine, suite ci: the OpenBLAS cases are measured and
# verified (one node-level record each), BF16 is waived when OpenBLAS lacks cblas_sbgemm, and the
# cuBLASLt cases are waived because no NVIDIA GPU is on the PCI bus. Each rate is recomputed from
# the record's own shape and median time. Budget: < 60 s on 2 cores.
source "$(dirname "$0")/lib.sh"

# 1. The ci suite. The cpu-node table fails this 2-core machine on host rows: exit 1.
expect_rc 1 env CLUSTERBENCH_NVML_LIB=/nonexistent.so "$CB_BIN" run --suite ci --only compute.gemm \
  --out "$TMP/run"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
run = json.load(open(sys.argv[1] + '/run.json'))
assert len(run['plan']) == 15 and len(recs) == 15, (len(run['plan']), len(recs))
gpu = [r for r in recs if r['params']['backend'] == 'cublaslt']
cpu = [r for r in recs if r['params']['backend'] == 'openblas']
assert sorted(r['params']['dtype'] for r in gpu) == ['bf16', 'fp16', 'fp32', 'fp8_e4m3', 'fp8_e4m3', 'tf32']
assert sorted(r['params'].get('fast_accum', '') for r in gpu) == ['', '', '', '', 'off', 'on']
for r in gpu:
    assert r['status'] == 'waived' and r['message'] == 'no NVIDIA GPU on the PCI bus', r
    assert r['scope']['kind'] == 'gpu' and r['params']['m'] == 8192 and not r['metrics']
assert {p['level'] for p in run['plan'] if p['params']['backend'] == 'openblas'} == {'node'}
assert {p['level'] for p in run['plan'] if p['params']['backend'] == 'cublaslt'} == {'gpu'}
measured = 0
for r in cpu:
    p = r['params']
    assert r['scope']['kind'] == 'node' and r['combine'] == 'per_rank', r['scope']
    assert p['m'] in (256, 512, 1024) and p['m'] == p['n'] == p['k'], p
    if p['dtype'] == 'bf16' and r['status'] == 'waived':
        assert 'does not export cblas_sbgemm' in r['message'], r['message']
        continue
    assert r['status'] == 'ok', r
    measured += 1
    m = {x['name']: x for x in r['metrics']}
    flop = 2 * p['m'] * p['n'] * p['k']
    assert r['extra']['flop_per_op'] == flop
    want = flop / r['time']['median'] / 1e12
    assert m['tflops']['unit'] == 'TFLOP/s' and m['tflops']['higher_is_better']
    assert abs(m['tflops']['value'] - want) <= 1e-9 * want, (m['tflops'], want)
    best = flop / r['time']['min'] / 1e12
    assert abs(m['tflops_best']['value'] - best) <= 1e-9 * best and best >= want * (1 - 1e-12)
    v = r['extra']['verification']
    assert v['passed'] and 0 <= v['max_ratio'] <= 1 and v['samples'] == 64, v
    assert v['checksum']['rows'] == p['m'] and 0 <= v['checksum']['max_ratio'] <= 1, v
    assert r['extra']['input_type'] == p['dtype']
    assert r['extra']['output_type'] == ('fp32' if p['dtype'] == 'bf16' else p['dtype'])
    assert r['extra']['backend']['library'] == 'OpenBLAS' and r['extra']['backend']['threads'] >= 1
    assert r['time']['n'] >= 1 and r['time']['median'] > 0
    print('   %s %dx%dx%d: %.2f GFLOP/s' % (p['dtype'], p['m'], p['n'], p['k'], want * 1e3))
assert measured >= 6, measured
" "$TMP/run"
ok "ci suite: OpenBLAS measured and verified, cuBLASLt waived without a GPU, rates recomputed"

# 2. --set: a non-square shape, one dtype; rows and columns land where the shape says.
expect_rc 1 env CLUSTERBENCH_NVML_LIB=/nonexistent.so "$CB_BIN" run --suite ci --only compute.gemm \
  --set compute.gemm.backends=openblas --set compute.gemm.dtypes=fp64 \
  --set compute.gemm.cpu_shapes=96x64x200 --out "$TMP/set"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert len(recs) == 1 and recs[0]['status'] == 'ok', recs
r = recs[0]
assert r['params'] == {'backend': 'openblas', 'dtype': 'fp64', 'm': 96, 'n': 64, 'k': 200}, r['params']
assert r['extra']['flop_per_op'] == 2 * 96 * 64 * 200
assert r['extra']['verification']['max_ratio'] <= 1 and r['extra']['verification']['passed']
" "$TMP/set"
ok "--set backends, dtypes and cpu_shapes (MxNxK)"

# 3. A bad shape is an input error (exit 2) naming the setting.
expect_rc 2 "$CB_BIN" run --suite ci --only compute.gemm --set compute.gemm.cpu_shapes=1000..2000 \
  --out "$TMP/bad"
expect_out "compute.gemm.cpu_shapes: GEMM shape range '1000..2000'"
ok "bad shape range: exit 2"

echo "$PASSES passed, 0 failed"
