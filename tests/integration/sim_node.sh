#!/usr/bin/env bash
# The 8-GPU node end to end on the strict simulated GPU node (docs/simulated-gpu.md): the real
# binary under mpirun -np 8 with the simulating plugin (tests/sim_gpu: the real plugin's sources
# over a simulated CUDA runtime, cuBLASLt and NCCL that enforce the contracts the real libraries
# do), the fake NVML and an HGX H100 filesystem root (tests/fixtures/make_sim_node.py), judged by
# h100-sxm-80g-8x.json.
#  1. A healthy node: `run --suite quick` (its GPU benchmarks, the 7b training step included) and
#     `burnin --minutes 0.5`: every GPU row PASSes, no row a value of the simulation feeds is
#     MISSING.
#  2. Faults injected by name (a node with faults on distinct GPUs runs them together): each
#     fault's rows FAIL naming its GPU (by index, PCI address and serial on report.md's first
#     page) or port alone, and no other row FAILs than in the healthy run.
# RUN_SERIAL: 8 ranks on 2 cores. Budget: about 4 minutes.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
SIM=$CB_BINARY_DIR/tests/sim_gpu/libclusterbench_gpu.so
NVML=$CB_BINARY_DIR/tests/fake_nvml/libnvidia-ml.so
[ -f "$SIM" ] && [ -f "$NVML" ] || fail "the simulated GPU plugin or the fake NVML was not built"
MAKE_NODE=$CB_FIXTURES/make_sim_node.py
SPEC=h100-sxm-80g-8x.json

# A DCGM exporter of the simulated node: its metrics page on loopback (gpu.dcgm_exporter).
mkdir -p "$TMP/dcgm"
echo 'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 41' >"$TMP/dcgm/metrics"
python3 -m http.server 0 --bind 127.0.0.1 --directory "$TMP/dcgm" >"$TMP/dcgm.log" 2>&1 &
HTTP=$!
trap 'kill $HTTP 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 1 50); do
  PORT=$(grep -oE 'port [0-9]+' "$TMP/dcgm.log" | head -1 | cut -d' ' -f2)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "$PORT" ] || fail "no DCGM exporter stand-in"

# The node's Python stack as the guide has it (PyTorch cu121, DeepSpeed): a python3 stand-in
# that answers the inventory's two probes and hands anything else to the real one.
mkdir -p "$TMP/bin"
REAL_PY=$(command -v python3)
cat >"$TMP/bin/python3" <<EOF
#!/bin/sh
case "\$2" in
  *"import torch"*) printf '2.1.2+cu121\\n12.1\\n'; exit 0 ;;
  *"version('deepspeed')"*) echo 0.10.0; exit 0 ;;
esac
exec "$REAL_PY" "\$@"
EOF
chmod +x "$TMP/bin/python3"

# node NAME [FAULT...]: a simulated node in $TMP/NAME (fsroot, node.json).
node() {
  local name=$1; shift
  local args=()
  for f in "$@"; do args+=(--fault "$f"); done
  python3 "$MAKE_NODE" "$TMP/$name" "${args[@]}" || fail "make_sim_node $name"
}

# sim NAME NP OUT ARGS...: clusterbench on NP ranks of the simulated node NAME, output in OUT.log
# (`run` against the H100 table; `burnin` chooses burnin-gpu.json itself).
sim() {
  local name=$1 np=$2 out=$3; shift 3
  local spec=(--spec "$SPEC")
  [ "$1" = burnin ] && spec=()
  "${MPIRUN[@]}" -np "$np" -x CLUSTERBENCH_ROUNDS -x "CLUSTERBENCH_GPU_PLUGIN=$SIM" \
    -x "CLUSTERBENCH_NVML_LIB=$NVML" -x "FAKE_NVML_JSON=$TMP/$name/node.json" \
    -x "CLUSTERBENCH_DCGM_EXPORTER_URL=http://127.0.0.1:$PORT/metrics" \
    -x NCCL_IB_DISABLE=0 -x NCCL_SOCKET_IFNAME=ib0 -x "PATH=$TMP/bin:$PATH" \
    "$CB_BIN" "$@" "${spec[@]}" --fs-root "$TMP/$name/fsroot" --out "$TMP/$out" \
    >"$TMP/$out.log" 2>&1
  echo $?
}

# The GPU benchmarks of the quick suite on the node, at sizes the 2-core CI machine holds for 8
# ranks: every collective at 8 B, 512 B, 32 KiB and 2 MiB, all_reduce at the 1 GiB its rows
# judge; host copies of 64 MiB, pinned, h2d and d2h (the rows judge those at any size; pageable
# and bidir copies are real memcpy of 8 ranks on 2 cores, three quarters of the copies' minute);
# the 7b training step with 1 of its 32 layers (its host Adam, real CPU work, scales with the
# layers) at micro-batch 8 (the preset's 32 is 4x the simulated GEMMs and 2 minutes more here),
# fp16 with its loss scale. Timed loops short: a simulated NCCL operation of a few microseconds
# costs the 8 processes a real rendezvous (docs/simulated-gpu.md), so loops of 0.5 s would be thousands.
QUICK=(run --suite quick
       --only 'compute.gemm,compute.gpu_memory_bandwidth,compute.host_device_copy,collectives.*,compute.training_step'
       --set compute.gemm.backends=cublaslt --set collectives.backends=nccl
       --set collectives.stepfactor=64 --set collectives.maxbytes=2M
       --set collectives.all_reduce.minbytes=1G --set collectives.all_reduce.maxbytes=1G
       --set collectives.min_time=0.0005
       --set compute.host_device_copy.bytes=64M --set compute.host_device_copy.memory=pinned
       --set compute.host_device_copy.directions=h2d,d2h
       --set compute.training_step.layers=1 --set compute.training_step.micro_batch=8
       --set compute.training_step.min_time=0.05
       --set compute.training_step.rounds=1)

# rows OUT: "ID OUTCOME" for every row of OUT's report.json.
rows() {
  python3 -c "
import json, sys
for r in json.load(open(sys.argv[1]))['rows']:
    print(r['id'], r['outcome'])" "$TMP/$1/report.json"
}

node healthy
rc=$(sim healthy 8 q "${QUICK[@]}")
[ -s "$TMP/q/report.json" ] || { cat "$TMP/q.log" >&2; fail "healthy quick: no report.json (exit $rc)"; }
py "
rep = json.load(open(sys.argv[1]))
gpu = [r for r in rep['rows'] if r['id'].startswith(('gpu.', 'collectives.nvlink', 'health.gpu', 'training.'))]
# PASS, or WAIVED where the row does not apply (the device plugin's version without Kubernetes).
bad = [(r['id'], r['outcome'], r.get('message', '')[:200]) for r in gpu if r['outcome'] != 'PASS'
       and not (r['outcome'] == 'WAIVED' and 'not applicable' in r.get('message', ''))]
assert not bad, bad
assert len(gpu) >= 30, len(gpu)
versions = {r['id']: r['outcome'] for r in gpu
            if r['id'].endswith(('_version', 'pytorch_cuda', 'deepspeed'))}
assert versions == {'gpu.cuda_version': 'PASS', 'gpu.cudnn_version': 'PASS', 'gpu.nccl_version': 'PASS',
                    'gpu.pytorch_cuda': 'PASS', 'gpu.deepspeed': 'PASS',
                    'gpu.device_plugin_version': 'WAIVED', 'gpu.feature_discovery_version': 'WAIVED',
                    'gpu.dcgm_exporter_version': 'PASS'}, versions
recs = [json.loads(l) for l in open(sys.argv[2])]
steps = [r for r in recs if r['benchmark'] == 'compute.training_step' and r['scope']['kind'] == 'cluster']
assert steps and all(r['status'] == 'ok' for r in steps), [(r['status'], r.get('message')) for r in steps]
p = steps[0]['params']
assert p['preset'] == '7b' and p['offload'] and p['zero'] == 2, p
assert p['dtype'] == 'fp16' and p['loss_scale'] == 'dynamic' and p['accum'] == 4, p
failed = [(r['benchmark'], r['params'], r.get('message', '')[:200]) for r in recs if r['status'] == 'failed']
assert not failed, failed
# MFU: the cluster step's model TFLOP/s over the table's dense peak for its dtype.
mt = [m['value'] for m in steps[0]['metrics'] if m['name'] == 'model_tflops'][0]
peak = {'bf16': 989.4, 'fp16': 989.4}[p['dtype']]
mfu = [x for x in rep['mfu']['items'] if x['item'] == 'cluster']
assert len(mfu) == 1 and mfu[0]['dtype'] == p['dtype'] and mfu[0]['peak_tflops'] == peak, rep['mfu']
assert abs(mfu[0]['percent'] - 100 * mt / peak) < 1e-9 * max(1, mfu[0]['percent']), (mfu, mt)
assert not rep['mfu']['unknown'], rep['mfu']['unknown']
" "$TMP/q/report.json" "$TMP/q/records.jsonl"
rows q | awk '$2 == "FAIL" {print $1}' | sort >"$TMP/healthy.fail"
ok "healthy node, quick (exit $rc): every GPU row PASS, the 7b step (ZeRO-2, offload) ok with its MFU against the dense peak, no case failed"

# The healthy node's burn-in: every row PASS (exit 0), every product and all_reduce compared.
rc=$(sim healthy 8 b burnin --minutes 0.5)
[ "$rc" -eq 0 ] || { tail -30 "$TMP/b.log" >&2; rows b >&2; fail "healthy burn-in exited $rc"; }
py "
recs = [json.loads(l) for l in open(sys.argv[1])]
last = {r['scope']['gpu_index']: r for r in recs if r['benchmark'] == 'burnin.soak'}  # snapshots
assert len(last) == 8 and all(r['status'] == 'ok' for r in last.values()), last.keys()
for r in last.values():
    ivs = r['extra']['series']
    assert len(ivs) >= 6, len(ivs)
    assert all(iv['verification']['products']['checked'] >= 1 and iv['verification']['products']['wrong'] == 0 for iv in ivs), ivs[0]['verification']
    assert sum(iv['allreduce']['compared'] for iv in ivs) >= 6 and all(iv['allreduce']['wrong_ops'] == 0 for iv in ivs), ivs[0]['allreduce']
" "$TMP/b/records.jsonl"
rows b | awk '$2 == "FAIL" {print $1}' | sort >"$TMP/healthy-burnin.fail"
ok "healthy node, burn-in 0.5 min: exit 0, 8 GPUs, every product and all_reduce compared"

GEMM=(run --suite quick --only compute.gemm --set compute.gemm.backends=cublaslt
      --set compute.gemm.dtypes=bf16 --set compute.gemm.shapes=8192)

# faulty NAME OUT BASELINE ROW...: run OUT's FAIL rows are BASELINE's (the healthy node's) and
# exactly the fault's ROWs; each ROW's worst item is the faulty one (ITEM after '@' if given).
faulty() {
  local name=$1 out=$2 base=$3; shift 3
  python3 - "$TMP/$out/report.json" "$TMP/$base" "$@" <<'P' || { tail -20 "$TMP/$out.log" >&2; fail "$name: rows"; }
import json, sys
rep = json.load(open(sys.argv[1]))
base = set(open(sys.argv[2]).read().split())
want = dict(a.split("@", 1) if "@" in a else (a, "") for a in sys.argv[3:])
fails = {r["id"]: r for r in rep["rows"] if r["outcome"] == "FAIL"}
extra = sorted(set(fails) - base - set(want))
assert not extra, ("other rows FAIL", [(i, fails[i]["message"][:160]) for i in extra])
for rid, item in want.items():
    assert rid in fails, ("%s does not FAIL" % rid, [r for r in rep["rows"] if r["id"] == rid])
    bad = [i["item"] for i in fails[rid]["items"] if i["outcome"] == "FAIL"]
    assert not item or (len(bad) == 1 and item in bad[0]), (rid, "FAIL items", bad, "wanted", item)
    print("%s FAIL: %s" % (rid, fails[rid]["message"][:200]))
P
}

# named OUT GPU: report.md's first page names GPU GPU by index, PCI address and serial.
named() {
  local bus serial
  bus=$(python3 -c "import sys; print(['0000:18:00.0','0000:2a:00.0','0000:3a:00.0','0000:5d:00.0','0000:9a:00.0','0000:ab:00.0','0000:ba:00.0','0000:db:00.0'][int(sys.argv[1])])" "$2")
  serial=$(printf '165492200%04d' $(($2 + 1)))
  grep -q "GPU$2 ($bus, serial $serial)" "$TMP/$1/report.md" ||
    { sed -n 1,60p "$TMP/$1/report.md" >&2; fail "$1: report.md does not name GPU$2 ($bus, serial $serial)"; }
}

# 1. A GPU off the bus: 7 GPUs, 7 ranks; gpu.count FAILs "count 7 (expected 8)".
node offbus gpu_off_bus:3
sim offbus 7 f1 "${GEMM[@]}" >/dev/null
faulty offbus f1 healthy.fail gpu.count
grep -q "count 7 on .* (expected 8)" "$TMP/f1/report.md" || fail "f1: no 'count 7 (expected 8)'"
ok "a GPU off the bus: gpu.count FAILs (7 of 8), nothing else"

# 2-5. Four faults on four GPUs and a port of one node, in one run (GEMMs and host copies): a GPU
#      trained to PCIe Gen4 x8 (its width row, its link during the copy and its copies), one
#      NVLink link down, an uncorrectable ECC error during the run, a thermal slowdown during the
#      GEMMs, and 7 of 8 IB ports ACTIVE. Each row FAILs on its own GPU or port alone.
node many pcie_gen4_x8:2 nvlink_down:5 ecc_dbe:1 thermal:0 ib_port_down:7
sim many 8 f2 run --suite quick --only compute.gemm,compute.host_device_copy \
  --set compute.gemm.backends=cublaslt --set compute.gemm.dtypes=bf16 \
  --set compute.gemm.shapes=8192 --set compute.host_device_copy.bytes=64M \
  --set compute.host_device_copy.memory=pinned --set compute.host_device_copy.directions=h2d,d2h \
  >/dev/null
faulty many f2 healthy.fail gpu.pcie_width@gpu2 gpu.pcie_link_during_copy@gpu2 \
  gpu.h2d_pinned@gpu2 gpu.d2h_pinned@gpu2 gpu.nvlink_links@gpu5 \
  health.gpu_ecc_uncorrected@gpu1 gpu.gemm_slowdown@gpu0 \
  net.ports_active_at_rate net.ib_port_state@mlx5_7
for g in 2 5 1 0; do named f2 "$g"; done
grep -q "count 7 on .* (below 8)" "$TMP/f2/report.md" || fail "f2: no 'count 7 (below 8)'"
ok "PCIe Gen4 x8 (GPU2), NVLink down (GPU5), ECC DBE (GPU1), thermal slowdown (GPU0), mlx5_7 DOWN: each row FAILs on its GPU or port alone"

# 6-7. XID 79 on one GPU and one silently wrong product on another during one burn-in: the XID
#      FAILs health.gpu_xid; the wrong product (the next one is right again) is found by the
#      per-product comparison in interval 3 of 6, whose own last product checks right (what the
#      burn-in checked before).
node burn xid79:6 wrong_product:4:11  # 11 s into a soak of 5 s intervals: interval 3
sim burn 8 f5 burnin --minutes 0.5 >/dev/null
faulty burn f5 healthy-burnin.fail health.gpu_xid@gpu6 burnin.verification@gpu4
named f5 6
named f5 4
py "
recs = [json.loads(l) for l in open(sys.argv[1])]
r = [r for r in recs if r['benchmark'] == 'burnin.soak' and r['scope'].get('gpu_index') == 4][-1]
ivs = r['extra']['series']
bad = [iv['index'] for iv in ivs if iv['verification']['products']['wrong'] > 0]
assert bad == [2] and ivs[-1]['index'] == 5, (bad, len(ivs))
iv = ivs[bad[0]]
assert iv['verification']['products']['wrong'] == 1 and iv['verification']['max_ratio'] <= 1, iv['verification']
print('wrong product caught in interval %d of %d' % (bad[0] + 1, len(ivs)))
" "$TMP/f5/records.jsonl"
ok "XID 79 (GPU6) and one wrong GEMM product mid-soak (GPU4): health.gpu_xid and burnin.verification FAIL on their GPU alone"

# 8. A GPU 20% slow on a two-node cluster (network namespaces, scripts/netns-cluster.sh, 8 ranks a
#    node): its bf16 row FAILs for that GPU alone, and the fleet view names it as an outlier.
CLUSTER=$CB_SOURCE_DIR/scripts/netns-cluster.sh
export CB_NETNS_PREFIX=cbs$$n CB_NETNS_STATE=$TMP/cluster/state CB_NETNS_SLOTS=8
trap '"$CLUSTER" down >/dev/null 2>&1; kill $HTTP 2>/dev/null; rm -rf "$TMP"' EXIT
"$CLUSTER" up 2 >"$TMP/netns.log" 2>&1 || { cat "$TMP/netns.log" >&2; fail "netns cluster"; }
N1=${CB_NETNS_PREFIX}1 N2=${CB_NETNS_PREFIX}2
node "$N1"
node "$N2" slow:2:0.8
# shellcheck disable=SC2016 # each rank picks its own node's description by its host name
timeout 400 "$CLUSTER" mpirun -np 16 -x CLUSTERBENCH_ROUNDS -x "CLUSTERBENCH_GPU_PLUGIN=$SIM" \
  -x "CLUSTERBENCH_NVML_LIB=$NVML" \
  bash -c 'export FAKE_NVML_JSON=$0/$CLUSTERBENCH_HOSTNAME/node.json
           exec "$@" --fs-root "$0/$CLUSTERBENCH_HOSTNAME/fsroot"' "$TMP" \
  "$CB_BIN" "${GEMM[@]}" --spec "$SPEC" --out "$TMP/f8" >"$TMP/f8.log" 2>&1
faulty slow f8 healthy.fail "gpu.gemm_bf16@$N2/gpu2"
py "
rep = json.load(open(sys.argv[1]))
rate = [o['item'] for o in rep['fleet']['outliers'] if o['unit'] == 'TFLOP/s']
assert rate and all(i.startswith(sys.argv[2] + '/gpu2[') for i in rate), rate
" "$TMP/f8/report.json" "$N2"
named f8 2
ok "a GPU 20% slow on a 2-node cluster: gpu.gemm_bf16 FAILs on $N2 GPU2 alone, a fleet outlier"
