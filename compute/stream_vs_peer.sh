#!/usr/bin/env bash
# stream_vs_peer.sh STREAM_SRC BUILD_DIR [ROUNDS=6] [ARRAY=640M] [THREADS=2]: compute.memory_bandwidth
# side by side with McCalpin's STREAM (stream.c 5.10, a public repository the user fetches, e.g.
# https://github.com/jeffhammond/STREAM; never committed here). stream.c is built into
# BUILD_DIR/peers/ with -O3 -march=native -fopenmp -DSTREAM_ARRAY_SIZE=<ARRAY / 8>, the way its
# users build it. ROUNDS rounds, each running STREAM then clusterbench (--suite quick --only
# compute.memory_bandwidth, same array bytes and threads), so a slow spell of a shared machine
# falls on both. Per kernel: the best rate of each (STREAM's "Best Rate MB/s"; our
# bandwidth_best, both from the fastest repetition, same bytes counted), the median over rounds,
# and the median of the per-round ratios ours / STREAM (goal >= 0.97). A benchmark, not a test.
# STORES=regular|nontemporal|auto (default auto) is passed as compute.memory_bandwidth.stores.
set -euo pipefail
SRC=${1:?usage: stream_vs_peer.sh STREAM_SRC BUILD_DIR [ROUNDS] [ARRAY] [THREADS]}
BUILD=${2:?usage: stream_vs_peer.sh STREAM_SRC BUILD_DIR [ROUNDS] [ARRAY] [THREADS]}
ROUNDS=${3:-6} ARRAY=${4:-640M} THREADS=${5:-2}
[ -r "$SRC/stream.c" ] || { echo "stream_vs_peer: no stream.c in $SRC" >&2; exit 2; }
bytes=$(numfmt --from=iec "$ARRAY")
n=$((bytes / 8))
mkdir -p "$BUILD/peers"
PEER=$BUILD/peers/stream.$n
[ -x "$PEER" ] || gcc -O3 -march=native -fopenmp -DSTREAM_ARRAY_SIZE="$n" -DNTIMES=10 \
  "$SRC/stream.c" -o "$PEER"
TMPD=$(mktemp -d /tmp/cbstream.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT
for round in $(seq "$ROUNDS"); do
  OMP_NUM_THREADS=$THREADS OMP_PROC_BIND=spread OMP_PLACES=cores "$PEER" >"$TMPD/peer.$round.txt"
  "$BUILD/clusterbench" run --suite quick --only compute.memory_bandwidth \
    --set compute.memory_bandwidth.array_bytes="$bytes" \
    --set compute.memory_bandwidth.threads="$THREADS" \
    --set compute.memory_bandwidth.stores="${STORES:-auto}" --out "$TMPD/run.$round" \
    >"$TMPD/run.$round.log" 2>&1 || true
  [ -s "$TMPD/run.$round/records.jsonl" ] ||
    { tail -20 "$TMPD/run.$round.log" >&2; echo "round $round: no records" >&2; exit 1; }
done
python3 - "$TMPD" "$ROUNDS" "$ARRAY" "$THREADS" <<'P'
import json, statistics, sys
tmpd, rounds, array, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ours, peer = {}, {}  # kernel -> best GB/s per round
for k in range(1, rounds + 1):
    for line in open("%s/peer.%d.txt" % (tmpd, k)):
        f = line.split()
        if f and f[0].rstrip(":").lower() in ("copy", "scale", "add", "triad") and len(f) >= 2:
            peer.setdefault(f[0].rstrip(":").lower(), []).append(float(f[1]) / 1e3)  # MB/s -> GB/s
    for line in open("%s/run.%d/records.jsonl" % (tmpd, k)):
        r = json.loads(line)
        if r["benchmark"] != "compute.memory_bandwidth" or r["status"] != "ok":
            continue
        m = {x["name"]: x["value"] for x in r["metrics"]}
        ours.setdefault(r["params"]["kernel"], []).append(m["bandwidth_best"])
med = statistics.median
isa = stores = "?"
for line in open("%s/run.1/records.jsonl" % tmpd):
    r = json.loads(line)
    if r["benchmark"] == "compute.memory_bandwidth" and r["status"] == "ok":
        isa, stores = r["extra"].get("isa", "?"), r["extra"].get("stores", "?")
print("STREAM kernels, %s threads, %s arrays, %d interleaved rounds: best rate in GB/s (1e9 B/s), "
      "medians over rounds; ours: %s, %s stores" % (threads, array, rounds, isa, stores))
print("%-6s %10s %10s %7s   %s" % ("kernel", "ours", "STREAM", "ratio", "per-round ratios"))
for k in ("copy", "scale", "add", "triad"):
    if k in ours and k in peer and len(ours[k]) == len(peer[k]):
        rs = [o / p for o, p in zip(ours[k], peer[k])]
        print("%-6s %10.2f %10.2f %7.3f   %s" % (k, med(ours[k]), med(peer[k]), med(rs),
              " ".join("%.3f" % x for x in rs)))
P
