#!/usr/bin/env bash
# The real binary on the simulated GPU node (docs/simulated-gpu.md): the real plugin's sources
# linked with the simulated CUDA runtime, cuBLASLt and NCCL (tests/sim_gpu/libclusterbench_gpu.so),
# the fake libnvidia-ml.so, a healthy 8x H100 node (tests/fixtures/nvml/h100x8-healthy.json).
#  (a) one rank: compute.gemm (cuBLASLt), compute.gpu_memory_bandwidth, compute.host_device_copy:
#      every GPU case ok, verified, at the model's rates; the simulation's statistics at exit;
#  (c) the "wrong_product" fault: the GEMM's verification fails the case;
#  (b) mpirun -np 2: NCCL all_reduce, all_gather, alltoall: every case ok, #wrong 0, busbw the
#      model's, NCCL's own logging read back (version, transport, NVLS, algorithm); no directory
#      left in /dev/shm;
#  (d) (root) two ranks on two hosts: NCCL over the IB fabric.
# Budget: < 90 s on 2 cores.
source "$(dirname "$0")/lib.sh"
SIM_PLUGIN=${CB_SIM_PLUGIN:-${CB_BINARY_DIR:-}/tests/sim_gpu/libclusterbench_gpu.so}
FAKE_NVML=${CB_BINARY_DIR:-}/tests/fake_nvml/libnvidia-ml.so
NODE=$CB_FIXTURES/nvml/h100x8-healthy.json
ROOT=$CB_FIXTURES/fsroot/two-socket
if [ ! -f "$SIM_PLUGIN" ] || [ ! -f "$FAKE_NVML" ] || [ "${CB_HAVE_NVML:-1}" != "1" ]; then
  echo "SKIP: no simulated GPU plugin or fake NVML in this build"; exit 77
fi
export CLUSTERBENCH_GPU_PLUGIN=$SIM_PLUGIN CLUSTERBENCH_NVML_LIB=$FAKE_NVML FAKE_NVML_JSON=$NODE
export CBSIM_STATS=$TMP/stats.jsonl

# peak_rss OUT CMD...: runs CMD, writing its peak resident memory (KiB) to OUT.
peak_rss() {
  python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc)' "$@"
}

# (a) The GPU benchmarks of one rank against the performance model; device memory is lazy: a
#     1 GiB device copy and 8192^3 GEMMs (verified) take no GiBs of host memory.
expect_rc 1 peak_rss "$TMP/rss" "$CB_BIN" run --suite ci --fs-root "$ROOT" --out "$TMP/a" \
  --only 'compute.gemm,compute.gpu_memory_bandwidth,compute.host_device_copy' \
  --set compute.gemm.backends=cublaslt --set compute.host_device_copy.bytes=16M
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
m = lambda r: {x['name']: x['value'] for x in r['metrics']}
close = lambda got, want: abs(got - want) <= 0.005 * want
rate = {'fp16': 795, 'bf16': 795, 'tf32': 397, 'fp32': 51}
gemm = [r for r in recs if r['benchmark'] == 'compute.gemm']
assert len(gemm) == 6, len(gemm)
for r in gemm:
    p = r['params']
    assert r['status'] == 'ok', (p, r['message'])
    t = rate.get(p['dtype']) or (1520 if p['fast_accum'] == 'on' else 1300)
    flop = 2.0 * p['m'] * p['n'] * p['k']
    want = flop / (5e-6 + flop / (t * 1e12)) / 1e12  # a 5 us fixed cost per product
    assert close(m(r)['tflops'], want), (p, m(r)['tflops'], want)
    v = r['extra']['verification']
    assert v['passed'] and v['samples'] == 64 and v['checksum']['rows'] == 8192, v
    assert r['extra']['launch']['mode'] == 'cuda_graph', r['extra']['launch']
    assert r['extra']['algorithm']['heuristic_returned'] == 8, r['extra']['algorithm']
hbm = {r['params']['method']: r for r in recs if r['benchmark'] == 'compute.gpu_memory_bandwidth'}
for method, gbs in (('kernel', 3000), ('memcpy', 3050)):
    r = hbm[method]
    b = r['extra']['buffer_bytes']
    assert r['status'] == 'ok' and b == 1 << 30, (method, r['message'], b)
    assert close(m(r)['bandwidth'], 2 * b / (2e-6 + 2 * b / (gbs * 1e9)) / 1e9), (method, m(r))
    assert r['extra']['verification']['mismatches'] == 0, r['extra']['verification']
copies = [r for r in recs if r['benchmark'] == 'compute.host_device_copy' and r['status'] == 'ok']
assert len(copies) >= 12, len(copies)
for r in copies:
    p, b = r['params'], 16 << 20
    link = 55e9 * (1 if p['memory'] == 'pinned' else 0.45)  # Gen5 x16
    want = b / (2e-6 + b / link) / 1e9 * (2 if p['direction'] == 'bidir' else 1)
    assert close(m(r)['bandwidth'], want), (p, m(r)['bandwidth'], want)
    assert r['extra']['verification']['mismatches'] == 0, r['extra']['verification']
assert all(r['status'] in ('ok', 'waived') for r in recs), [r['message'] for r in recs if r['status'] == 'failed']
stats = [json.loads(l) for l in open(sys.argv[2])]
assert len(stats) == 1 and stats[0]['device'] == 0, stats
s = stats[0]
assert s['matmuls'] > 100 and s['graph_launches'] > 10 and s['kernel_launches'] > 10, s
assert s['memcpys'] > 100 and s['nccl_ops'] == 0 and s['peak_device_bytes'] >= 2 << 30, s
" "$TMP/a" "$CBSIM_STATS"
rss=$(cat "$TMP/rss")
[ "$rss" -lt $((400 * 1024)) ] || fail "peak resident memory of one rank: $rss KiB (>= 400 MiB)"
ok "one rank: GEMM, HBM copy and host copies ok, verified, at the model's rates; statistics at exit; peak RSS $((rss / 1024)) MiB"
unset CBSIM_STATS

# (c) A GPU that gets products wrong from its first one on: the GEMM's verification fails it.
python3 - "$NODE" "$TMP/wrong.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
d["gpus"][0]["sim"] = {"wrong_product": {"after_s": 0, "count": 1000000000}}
json.dump(d, open(sys.argv[2], "w"))
P
FAKE_NVML_JSON=$TMP/wrong.json expect_rc 1 "$CB_BIN" run --suite ci --fs-root "$ROOT" \
  --out "$TMP/c" --only compute.gemm --set compute.gemm.backends=cublaslt \
  --set compute.gemm.dtypes=bf16
py "
r = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')][0]
assert r['status'] == 'failed', r['status']
assert 'row checksum' in r['message'] and 'at row 4096' in r['message'] and 'the product is wrong' in r['message'], r['message']
" "$TMP/c"
ok "wrong_product: the case fails with the verification's message (row 4096)"

# (b) NCCL across two processes.
if [ "${CB_HAVE_MPI:-1}" != "1" ] || ! command -v mpirun >/dev/null; then
  echo "SKIP (b), (d): no MPI"
  echo "$PASSES passed, 0 failed"
  exit 0
fi
# Timed loops short (collectives.min_time): each simulated NCCL operation is a real rendezvous of
# the two processes, and on a loaded 2-core machine ci's 0.05 s loops of them (thousands, each a
# scheduler round trip) once ran past the test's 300 s.
touch "$TMP/mark"
expect_rc 1 "${MPIRUN[@]}" -np 2 "$CB_BIN" run --suite ci --fs-root "$ROOT" --out "$TMP/b" \
  --only 'collectives.all_reduce,collectives.all_gather,collectives.alltoall' \
  --set collectives.backends=nccl --set collectives.min_time=0.0005
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert len(recs) == 21, len(recs)
ok = 0
for r in recs:
    p, op = r['params'], r['benchmark'].split('.')[1]
    if r['status'] == 'waived':
        assert op == 'alltoall' and p['bytes'] < 16, r  # less than 16 bytes a peer
        continue
    assert r['status'] == 'ok', (r['benchmark'], p, r['message'])
    m = {x['name']: x['value'] for x in r['metrics']}
    assert m['wrong'] == 0 and m.get('wrong_inplace', 0) == 0, m
    e = r['extra']
    assert e['backend_version'] == '2.27.3+cuda13.0', e['backend_version']
    nccl = e['nccl']
    assert nccl['transports'] == ['P2P/IPC/read'] and nccl['nvls'] is True, nccl
    assert 'all rings' in nccl['connected'], nccl
    # busbw = S x factor / (8 us + S x factor / rate): NVLS all_reduce 475 GB/s from 1 MiB
    # (ring 365 below), all_gather 370, alltoall (point-to-point) 360; factor 1/2 or 1.
    s, f = e['size_bytes'], e['busbw_factor']
    if op == 'all_reduce':
        rate = 475 if s >= 1 << 20 else 365
        assert e['nccl_algorithm'] == ('NVLS' if s >= 1 << 20 else 'RING'), e['nccl_algorithm']
    else:
        rate = 370 if op == 'all_gather' else 360
    if op == 'alltoall':
        assert e['nccl_algorithm'] == 'P2P', e
    want = s * f / (8e-6 + s * f / (rate * 1e9)) / 1e9
    assert abs(m['busbw'] - want) <= 0.01 * want, (op, s, m['busbw'], want)
    ok += 1
assert ok == 20, ok
" "$TMP/b"
# A directory made since (by this run or another) whose creator is gone was left behind.
for d in /dev/shm/cbsim-nccl-*; do
  [ -d "$d" ] && [ "$d" -nt "$TMP/mark" ] || continue
  kill -0 "$(cat "$d/owner" 2>/dev/null || echo 0)" 2>/dev/null || fail "$d was left in /dev/shm"
done
ok "mpirun -np 2: NCCL all_reduce, all_gather, alltoall ok, #wrong 0, busbw the model's, NCCL's log read back"

# The user's NCCL_DEBUG=INFO (the cluster architecture guide's setting) no longer turns the
# probe off (issue 44, item 7): NCCL's choices are read back all the same.
NCCL_DEBUG=INFO expect_rc 1 "${MPIRUN[@]}" -np 2 -x NCCL_DEBUG "$CB_BIN" run --suite ci --fs-root "$ROOT" \
  --out "$TMP/bi" --only collectives.all_reduce --set collectives.backends=nccl \
  --set collectives.min_time=0.0005 --set collectives.minbytes=1M --set collectives.maxbytes=1M
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
ok = [r for r in recs if r['status'] == 'ok' and r['params'].get('backend') == 'nccl']
assert ok, [(r['status'], r.get('message')) for r in recs]
for r in ok:
    assert r['extra']['nccl']['transports'] == ['P2P/IPC/read'], r['extra'].get('nccl')
    assert r['extra']['nccl_algorithm'] == 'NVLS', r['extra'].get('nccl_algorithm')
" "$TMP/bi"
ok "with the user's NCCL_DEBUG=INFO: NCCL's log still read back (transport, algorithm)"

# (d) Ranks on two hosts (each in a UTS namespace of its own name, as scripts/netns-cluster.sh
#     names its nodes): NCCL goes through the IB fabric, its log says so, busbw the network's.
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  cat >"$TMP/host.sh" <<'W'
#!/usr/bin/env bash
exec unshare --uts -- bash -c 'hostname "simnode$OMPI_COMM_WORLD_RANK" && exec "$@"' host "$@"
W
  chmod +x "$TMP/host.sh"
  expect_rc 1 "${MPIRUN[@]}" -np 2 "$TMP/host.sh" "$CB_BIN" run --suite ci --fs-root "$ROOT" \
    --out "$TMP/d" --only collectives.all_reduce --set collectives.backends=nccl \
    --set collectives.minbytes=2M --set collectives.min_time=0.0005
  py "
r = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')][0]
assert r['status'] == 'ok' and r['params']['span'] == 'inter-node' and r['params']['algo'] == 'ring', r['params']
n = r['extra']['nccl']
assert n['network'] == 'IB' and len(n['nics']) == 8 and n['transports'] == ['NET/IB/GDRDMA'], n
assert n['nvls'] is False and n['env'] == {'NCCL_ALGO': 'Ring'}, n
s = 2 << 20  # 190 GB/s busbw over 8 NDR rails, factor 1 on two ranks
busbw = [x['value'] for x in r['metrics'] if x['name'] == 'busbw'][0]
want = s / (8e-6 + s / 190e9) / 1e9
assert abs(busbw - want) <= 0.01 * want, (busbw, want)
" "$TMP/d"
  ok "ranks on two hosts: NCCL over IB (NET/IB/GDRDMA, ring), busbw the network's"
fi
echo "$PASSES passed, 0 failed"
