#!/usr/bin/env bash
# Prints the performance ratios of issue 5 (a benchmark, not a timed test; docs/fio.md "Ratios"):
#  1. clusterbench-driven fio vs fio by hand with the same job file (seq_read), 5 alternating runs:
#     medians and their ratio (acceptance: within 2%).
#  2. the dataloader on a cold cache with O_DIRECT vs fio random read of the same files with the
#     same block size (the sample size) at the same concurrency (numjobs x iodepth = workers):
#     ratio of bandwidths (acceptance: >= 0.90). 3 alternating rounds of fio and the dataloader
#     for the same time (the fio runtime), at prefetch 2 (the default) and 8: with in-order
#     delivery, a worker whose batch is done waits while a slower batch ahead of it is still
#     loading, and a deeper prefetch lets it go on reading.
#  3. the dataloader's worker sweep: the saturation point (smallest worker count with samples/s
#     >= 95% of the best).
# Usage: io/perf_ratios.sh CLUSTERBENCH SCRATCH_DIR [ci|quick|full] [WORKERS]
set -euo pipefail
BIN=$(readlink -f "$1"); SCR=$(readlink -f "$2"); SUITE=${3:-quick}; W=${4:-8}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d); trap 'rm -rf "$OUT" "$SCR/cb-ratios-hand" "$SCR/cb-ratios-ds"' EXIT
case $SUITE in
  ci) SIZE=$((16 << 20)) RT=1 RAMP=500ms COUNT=512 ;;
  quick) SIZE=$((1 << 30)) RT=10 RAMP=2 COUNT=20000 ;;
  *) SIZE=$((4 << 30)) RT=60 RAMP=5 COUNT=100000 ;;
esac
cb() { "$BIN" run --suite "$SUITE" "$@" >"$OUT/log" 2>&1 || [ $? -le 4 ] || { cat "$OUT/log"; exit 1; }; }

for i in 1 2 3 4 5; do
  cb --only io.fio --set io.fio.profiles=seq_read --set io.fio.scratch="$SCR" --out "$OUT/cb$i"
  mkdir "$SCR/cb-ratios-hand"
  CB_FIO_DIR=$SCR/cb-ratios-hand CB_FIO_SIZE=$SIZE CB_FIO_RUNTIME=$RT CB_FIO_RAMP=$RAMP \
    CB_FIO_DIRECT=1 fio --output-format=json "$HERE/profiles/seq_read.fio" >"$OUT/hand$i.json"
  rm -rf "$SCR/cb-ratios-hand"
done

"$BIN" io make-dataset "$SCR/cb-ratios-ds" --count "$COUNT" --size 128K >/dev/null
cb --only io.dataloader --set io.dataloader.dataset="$SCR/cb-ratios-ds" --set io.dataloader.direct=true \
  --set io.dataloader.cache=cold --set io.dataloader.verify=header --set io.dataloader.workers=1,2,4,8,16 \
  --out "$OUT/dl"
for i in 1 2 3; do
  fio --output-format=json --name=samples --opendir="$SCR/cb-ratios-ds" --rw=randread --bs=128k \
    --ioengine=libaio --iodepth=1 --numjobs="$W" --direct=1 --readonly --invalidate=1 \
    --time_based --runtime="$RT" --group_reporting >"$OUT/fio_ds$i.json"
  for pf in 2 8; do
    cb --only io.dataloader --set io.dataloader.dataset="$SCR/cb-ratios-ds" \
      --set io.dataloader.direct=true --set io.dataloader.cache=cold \
      --set io.dataloader.verify=header --set io.dataloader.workers="$W" \
      --set io.dataloader.prefetch=$pf --set io.dataloader.min_time="$RT" --out "$OUT/dl$pf.$i"
  done
done

python3 - "$OUT" "$W" <<'PY'
import json, statistics, sys
out, w = sys.argv[1], int(sys.argv[2])
def recs(d): return [json.loads(l) for l in open(f'{out}/{d}/records.jsonl')]
def metric(r, n): return next(m['value'] for m in r['metrics'] if m['name'] == n)
def fio(path):
    t = open(path).read(); return json.loads(t[t.index('{'):])
cb = [metric(recs(f'cb{i}')[0], 'read_bw') for i in range(1, 6)]
hand = [fio(f'{out}/hand{i}.json')['jobs'][0]['read']['bw_bytes'] / 1e9 for i in range(1, 6)]
mc, mh = statistics.median(cb), statistics.median(hand)
print(f'1. seq_read GB/s, clusterbench {[round(x, 3) for x in cb]} median {mc:.3f}; by hand '
      f'{[round(x, 3) for x in hand]} median {mh:.3f}; ratio {mc / mh:.4f} (|1 - ratio| <= 0.02: '
      f'{abs(1 - mc / mh) <= 0.02})')
dl = {r['params']['workers']: r for r in recs('dl') if r['status'] == 'ok'}
fbw = [fio(f'{out}/fio_ds{i}.json')['jobs'][0]['read']['bw_bytes'] / 1e9 for i in range(1, 4)]
mf = statistics.median(fbw)
print(f'2. {w} workers, cold cache, O_DIRECT, 128 KiB samples, 3 alternating rounds: fio randread '
      f'bs=128k numjobs={w} iodepth=1 on the same files {[round(x, 3) for x in fbw]} GB/s, '
      f'median {mf:.3f}')
for pf in (2, 8):
    dbw = [metric(recs(f'dl{pf}.{i}')[0], 'bandwidth') for i in range(1, 4)]
    md = statistics.median(dbw)
    print(f'   dataloader prefetch {pf}: {[round(x, 3) for x in dbw]} GB/s, median {md:.3f}; '
          f'ratio {md / mf:.3f} (>= 0.90: {md / mf >= 0.90})')
sps = {k: metric(r, 'samples_per_s') for k, r in sorted(dl.items())}
best = max(sps.values())
sat = min(k for k, v in sps.items() if v >= 0.95 * best)
print(f'3. sweep samples/s {dict((k, round(v)) for k, v in sps.items())}; saturation point '
      f'{sat} workers (>= 95% of the best, {best:.0f})')
PY
