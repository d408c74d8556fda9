#!/usr/bin/env bash
# Prints the performance ratios of io.fio and io.dataloader against their peers (a benchmark, not a timed test; docs/fio.md "Ratios"):
#  1. clusterbench-driven fio vs fio by hand with the same job file (seq_read), 5 alternating rounds
#     (the order rotates from round to round, and each run starts after a sync and a pause: a
#     run that follows right after the other's files were deleted was 2-6% slower): medians and
#     their ratio (acceptance: within 2%). Where build/tests/support/mpi_idle exists, a third arm
#     runs fio by hand beside an idle MPI process (MPI_Init and sleep), as clusterbench is one
#     while fio runs: on the development VM that alone made the disk 15-40% faster.
#  2. the dataloader on a cold cache with O_DIRECT vs fio random read of the same files with the
#     same block size (the sample size) at the same concurrency (numjobs x iodepth = workers):
#     ratio of bandwidths (acceptance: >= 0.90). 3 alternating rounds of fio and the dataloader
#     for the same time (the fio runtime), the dataloader in order (the default) and out of
#     order (in_order=false). fio picks a random file for each I/O (file_service_type=random,
#     as the shuffled sampler does; with the default round robin all jobs walk the same files
#     in the same order). fio's buffers are malloc'd 4 KiB pages, the loader's staging slots
#     transparent huge pages: where hugetlb pages are free (vm.nr_hugepages), fio also runs
#     with --iomem=mmaphuge and that like-for-like ratio is printed too.
#  3. the dataloader's worker sweep: the saturation point (smallest worker count with samples/s
#     >= 95% of the best).
# Usage: [PARTS=1|23|123] [SETTLE=10] io/perf_ratios.sh CLUSTERBENCH SCRATCH_DIR [ci|quick|full] [WORKERS]
# PARTS picks the parts to run (default all); SETTLE is the pause in seconds before each fio run
# of part 1.
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

PARTS=${PARTS:-123}
# The previous run's deleted files flushed and, on a filesystem mounted with online discard,
# their blocks discarded before the next run starts.
settle() { sync; sleep "${SETTLE:-10}"; }
by_cb() {
  settle
  cb --only io.fio --set io.fio.profiles=seq_read --set io.fio.scratch="$SCR" --out "$OUT/cb$1"
}
by_hand() {
  settle
  mkdir "$SCR/cb-ratios-hand"
  CB_FIO_DIR=$SCR/cb-ratios-hand CB_FIO_SIZE=$SIZE CB_FIO_RUNTIME=$RT CB_FIO_RAMP=$RAMP \
    CB_FIO_DIRECT=1 fio --output-format=json "$HERE/profiles/seq_read.fio" >"$OUT/hand$1.json"
  rm -rf "$SCR/cb-ratios-hand"
}
IDLE=$(dirname "$BIN")/tests/support/mpi_idle
by_idle() {  # fio by hand while an idle MPI process lives (started 1 s before, outlives fio)
  settle
  "$IDLE" $((RT + 60)) >/dev/null 2>&1 & local pid=$!
  sleep 1
  mkdir "$SCR/cb-ratios-hand"
  CB_FIO_DIR=$SCR/cb-ratios-hand CB_FIO_SIZE=$SIZE CB_FIO_RUNTIME=$RT CB_FIO_RAMP=$RAMP \
    CB_FIO_DIRECT=1 fio --output-format=json "$HERE/profiles/seq_read.fio" >"$OUT/idle$1.json"
  rm -rf "$SCR/cb-ratios-hand"
  kill $pid 2>/dev/null; wait $pid 2>/dev/null || true
}
ARMS=(by_cb by_hand); [ -x "$IDLE" ] && ARMS+=(by_idle)
for i in 1 2 3 4 5; do  # alternating: round i starts with arm i mod #arms, then the others in turn
  [[ $PARTS == *1* ]] || break
  for k in "${!ARMS[@]}"; do "${ARMS[$(((i - 1 + k) % ${#ARMS[@]}))]}" $i; done
done
[[ $PARTS == *[23]* ]] || COUNT=0

[ "$COUNT" = 0 ] || "$BIN" io make-dataset "$SCR/cb-ratios-ds" --count "$COUNT" --size 128K >/dev/null
[ "$COUNT" = 0 ] || cb --only io.dataloader --set io.dataloader.dataset="$SCR/cb-ratios-ds" --set io.dataloader.direct=true \
  --set io.dataloader.cache=cold --set io.dataloader.verify=header --set io.dataloader.workers=1,2,4,8,16 \
  --out "$OUT/dl"
HUGE=0
[ "$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo)" -ge "$W" ] && HUGE=1
for i in 1 2 3; do
  [ "$COUNT" != 0 ] || break
  for mem in malloc mmaphuge; do
    [ $mem = malloc ] || [ $HUGE = 1 ] || continue
    fio --output-format=json --name=samples --opendir="$SCR/cb-ratios-ds" --rw=randread --bs=128k \
      --ioengine=libaio --iodepth=1 --numjobs="$W" --direct=1 --readonly --invalidate=1 \
      --file_service_type=random --iomem=$mem --time_based --runtime="$RT" --group_reporting \
      >"$OUT/fio_$mem$i.json"
  done
  for order in true false; do
    cb --only io.dataloader --set io.dataloader.dataset="$SCR/cb-ratios-ds" \
      --set io.dataloader.direct=true --set io.dataloader.cache=cold \
      --set io.dataloader.verify=header --set io.dataloader.workers="$W" \
      --set io.dataloader.in_order=$order --set io.dataloader.min_time="$RT" --out "$OUT/dl$order.$i"
  done
done

python3 - "$OUT" "$W" "$HUGE" <<'PY'
import json, os, statistics, sys
out, w, huge = sys.argv[1], int(sys.argv[2]), sys.argv[3] == '1'
def recs(d): return [json.loads(l) for l in open(f'{out}/{d}/records.jsonl')]
def metric(r, n):
    if r['status'] != 'ok':
        sys.exit(f"{r['benchmark']} {r['params']}: {r['status']}: {r.get('message')}")
    return next(m['value'] for m in r['metrics'] if m['name'] == n)
def fio(path):
    t = open(path).read(); return json.loads(t[t.index('{'):])
if os.path.exists(f'{out}/cb1'):
    cb = [metric(recs(f'cb{i}')[0], 'read_bw') for i in range(1, 6)]
    hand = [fio(f'{out}/hand{i}.json')['jobs'][0]['read']['bw_bytes'] / 1e9 for i in range(1, 6)]
    mc, mh = statistics.median(cb), statistics.median(hand)
    print(f'1. seq_read GB/s, clusterbench {[round(x, 3) for x in cb]} median {mc:.3f}; by hand '
          f'{[round(x, 3) for x in hand]} median {mh:.3f}; ratio {mc / mh:.4f} (|1 - ratio| <= 0.02: '
          f'{abs(1 - mc / mh) <= 0.02})')
    if os.path.exists(f'{out}/idle1.json'):
        idle = [fio(f'{out}/idle{i}.json')['jobs'][0]['read']['bw_bytes'] / 1e9 for i in range(1, 6)]
        mi = statistics.median(idle)
        print(f'   by hand beside an idle MPI process {[round(x, 3) for x in idle]} median {mi:.3f}; '
              f'clusterbench / that {mc / mi:.4f} (|1 - ratio| <= 0.02: {abs(1 - mc / mi) <= 0.02}); '
              f'idle MPI / by hand {mi / mh:.4f}')
if os.path.exists(f'{out}/dl'):
    dl = {r['params']['workers']: r for r in recs('dl') if r['status'] == 'ok'}
    def fio_bw(mem): return [fio(f'{out}/fio_{mem}{i}.json')['jobs'][0]['read']['bw_bytes'] / 1e9
                             for i in range(1, 4)]
    fbw = fio_bw('malloc')
    mf = statistics.median(fbw)
    print(f'2. {w} workers, cold cache, O_DIRECT, 128 KiB samples, 3 alternating rounds: fio randread '
          f'bs=128k numjobs={w} iodepth=1 file_service_type=random on the same files '
          f'{[round(x, 3) for x in fbw]} GB/s, median {mf:.3f}')
    hbw = fio_bw('mmaphuge') if huge else []
    if hbw:
        print(f'   fio with --iomem=mmaphuge (huge-page buffers, like the loader\'s staging): '
              f'{[round(x, 3) for x in hbw]} GB/s, median {statistics.median(hbw):.3f}')
    else:
        print('   fio with --iomem=mmaphuge: not run (HugePages_Free < workers; vm.nr_hugepages)')
    for order in ('true', 'false'):
        dbw = [metric(recs(f'dl{order}.{i}')[0], 'bandwidth') for i in range(1, 4)]
        md = statistics.median(dbw)
        like = f'; vs fio mmaphuge {md / statistics.median(hbw):.3f}' if hbw else ''
        print(f'   dataloader in_order={order}: {[round(x, 3) for x in dbw]} GB/s, median {md:.3f}; '
              f'ratio {md / mf:.3f} (>= 0.90: {md / mf >= 0.90}){like}')
    sps = {k: metric(r, 'samples_per_s') for k, r in sorted(dl.items())}
    best = max(sps.values())
    sat = min(k for k, v in sps.items() if v >= 0.95 * best)
    print(f'3. sweep samples/s {dict((k, round(v)) for k, v in sps.items())}; saturation point '
          f'{sat} workers (>= 95% of the best, {best:.0f})')
PY
