#!/usr/bin/env bash
# p2p_vs_reference.sh BUILD_DIR [BYTES]: network.p2p's unidirectional bandwidth against the plain
# MPI_Send/MPI_Recv streaming loop (p2p_reference), both on a 2-node netns cluster (unshaped veth),
# and prints their ratio (the goal: >= 0.97 on medians). A benchmark, not a test.
set -euo pipefail
BUILD=${1:?usage: p2p_vs_reference.sh BUILD_DIR [BYTES]}
BYTES=${2:-4M}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export CB_NETNS_PREFIX=cbref$$n CB_NETNS_STATE=/tmp/cbref$$/state
trap '"$SRC/scripts/netns-cluster.sh" down >/dev/null 2>&1; rm -rf /tmp/cbref$$' EXIT
"$SRC/scripts/netns-cluster.sh" up 2 >/dev/null
bytes=$(numfmt --from=iec "$BYTES")
ref=$("$SRC/scripts/netns-cluster.sh" mpirun -np 2 --map-by node "$BUILD/network/p2p_reference" "$bytes" 64 11 |
  awk '/p2p_reference/ {print $(NF-1)}')
"$SRC/scripts/netns-cluster.sh" mpirun -np 2 --map-by node "$BUILD/clusterbench" run --suite quick \
  --only network.p2p --set network.p2p.modes=unidirectional --set network.p2p.bytes="$BYTES" \
  --out /tmp/cbref$$/run >/dev/null 2>&1 || true
ours=$(python3 -c "import json,sys
for l in open('/tmp/cbref$$/run/records.jsonl'):
    r=json.loads(l)
    if r['scope']['kind']=='link': print(r['metrics'][0]['value'])")
python3 -c "print(f'network.p2p {float($ours):.4f} GB/s, plain loop {float($ref):.4f} GB/s, ratio {float($ours)/float($ref):.3f}')"
