#!/usr/bin/env bash
# allreduce_vs_reference.sh BUILD_DIR [RANKS=2] [MINBYTES=1K] [MAXBYTES=64M] [STEP=4] [ROUNDS=3]:
# the goal: the MPI backend's float all_reduce busbw (collectives.all_reduce,
# out-of-place, median) against a plain MPI_Allreduce timing loop at the same sizes and ranks, in
# one run: `--set collectives.all_reduce.reference=true` makes each case run one batch of the
# plain loop on the same buffers after each timed batch of the harness, with the same count
# (docs/collectives.md "Performance"), so both see the same process, threading level
# (MPI_THREAD_SINGLE: no case of this run calls MPI from a second thread) and slow spells of a
# shared machine. Printed per size: the medians over ROUNDS runs of our busbw, the plain loop's,
# and of each run's ratio (goal >= 0.97). Each round also runs the standalone plain loop under
# MPI_Init (allreduce_reference): our process against a bare one. A benchmark, not a test: the
# numbers are only as steady as the machine.
#
# Peers: OSU_SRC=DIR (OSU Micro-Benchmarks 5.x source) and IMB_SRC=DIR (Intel MPI
# Benchmarks source), public repositories the user fetches (never committed here), are built into
# BUILD_DIR/peers/ and run in the same rounds, interleaved: `osu_allreduce -m MIN:MAX -i 200`
# and `IMB-MPI1 Allreduce -msglog a:b -iter_policy off -iter 200`. Printed per size: our time per
# operation (median of the loop, the slowest rank's), OSU's average latency, IMB's t_avg, and
# the medians over rounds of peer time / our time (>= 0.97: at peer speed). Each peer launch runs
# one size between two readings of the core-to-core round trip (BUILD_DIR/collectives/
# core_to_core; our records carry theirs around each case), and a third table sets each tool's
# times beside the others' in the same mode of the machine (C2C_FAST_NS, 200 ns: both readings
# below is fast, both at or above slow; docs/collectives.md "Against OSU and IMB").
set -euo pipefail
BUILD=${1:?usage: allreduce_vs_reference.sh BUILD_DIR [RANKS] [MINBYTES] [MAXBYTES] [STEP] [ROUNDS]}
NP=${2:-2} MINB=${3:-1K} MAXB=${4:-64M} STEP=${5:-4} ROUNDS=${6:-3}
TMPD=$(mktemp -d /tmp/cbarref.XXXXXX)
# KEEP=1 keeps the raw files (records, peer outputs, c2c brackets) and prints where.
if [ -n "${KEEP:-}" ]; then trap 'echo "raw files kept in $TMPD" >&2' EXIT; else trap 'rm -rf "$TMPD"' EXIT; fi
MPIRUN=(mpirun --bind-to "${BIND:-core}" --oversubscribe -np "$NP")
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
minb=$(numfmt --from=iec "$MINB") maxb=$(numfmt --from=iec "$MAXB")
mkdir -p "$BUILD/peers"
OSU=$BUILD/peers/osu_allreduce IMB=$BUILD/peers/IMB-MPI1
if [ -n "${OSU_SRC:-}" ] && [ ! -x "$OSU" ]; then
  d=$OSU_SRC/mpi/collective
  mpicc -O2 -DPACKAGE_VERSION='"peer"' -I"$d" "$d/osu_allreduce.c" "$d/osu_coll.c" -lm -o "$OSU"
fi
if [ -n "${IMB_SRC:-}" ] && [ ! -x "$IMB" ]; then
  rm -rf "$BUILD/peers/imb" && cp -r "$IMB_SRC" "$BUILD/peers/imb"
  # OpenMPI's C++ bindings header fails IMB's -Werror: IMB does not use them.
  make -s -C "$BUILD/peers/imb" IMB-MPI1 CC=mpicc CXX="mpicxx -DOMPI_SKIP_MPICXX=1" >/dev/null
  cp "$BUILD/peers/imb/IMB-MPI1" "$IMB"
fi
lg() { python3 -c "import math,sys; print(int(math.log2(int(sys.argv[1]))))" "$1"; }
c2c() { "$BUILD/collectives/core_to_core" 0.02; }
# iterations SIZE FILE COL: PEER_SECONDS over the time per operation (us) that FILE holds for SIZE.
iterations() {
  awk -v b="$1" -v c="$3" -v s="$PEER_SECONDS" '$1 == b && $c + 0 > 0 {n = int(s * 1e6 / $c)}
    END {print (n > 200 ? n : 200)}' "$2"
}
# long_peers SIZE ROUND C2C: PEER_SECONDS=S runs each peer once more at SIZE for about S seconds
# of operations (from its short launch's time), as long as our case keeps both cores busy:
# this VM slows under load that lasts (docs/collectives.md "Against OSU and IMB").
long_peers() {
  local c3 c4
  [ -z "${OSU_SRC:-}" ] || "${MPIRUN[@]}" "$OSU" -m "$1:$1" \
    -i "$(iterations "$1" "$TMPD/osu.$2.txt" 2)" >>"$TMPD/osul.$2.txt"
  c3=$(c2c)
  [ -z "${IMB_SRC:-}" ] || "${MPIRUN[@]}" "$IMB" Allreduce -msglog "$(lg "$1"):$(lg "$1")" \
    -iter_policy off -iter "$(iterations "$1" "$TMPD/imb.$2.txt" 5)" -npmin "$NP" >>"$TMPD/imbl.$2.txt"
  c4=$(c2c)
  echo "osul $1 $3 $c3" >>"$TMPD/c2c.$2.txt"
  echo "imbl $1 $c3 $c4" >>"$TMPD/c2c.$2.txt"
}
mapfile -t SIZES < <(python3 -c "
import sys
s, hi, f = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
while s <= hi:
    print(int(s)); s *= f" "$minb" "$maxb" "$STEP")
for round in $(seq "$ROUNDS"); do
  "${MPIRUN[@]}" "$BUILD/clusterbench" run --suite quick --only collectives.all_reduce \
    --set collectives.backends=mpi --set collectives.dtypes=float --set collectives.minbytes="$MINB" \
    --set collectives.maxbytes="$MAXB" --set collectives.stepfactor="$STEP" \
    --set collectives.all_reduce.reference=true --out "$TMPD/run.$round" >"$TMPD/run.$round.log" 2>&1 || true
  [ -s "$TMPD/run.$round/records.jsonl" ] ||
    { tail -20 "$TMPD/run.$round.log" >&2; echo "round $round: no records" >&2; exit 1; }
  ALLREDUCE_REFERENCE_THREADS=single "${MPIRUN[@]}" -x ALLREDUCE_REFERENCE_THREADS \
    "$BUILD/collectives/allreduce_reference" "$minb" "$maxb" "$STEP" 0.5 >"$TMPD/single.$round.txt"
  # Each peer runs one size per launch, bracketed by the core-to-core round trip, so that its
  # time can be set beside ours in the same mode of the machine (our records carry theirs).
  for size in "${SIZES[@]}"; do
    c0=$(c2c)
    [ -z "${OSU_SRC:-}" ] || "${MPIRUN[@]}" "$OSU" -m "$size:$size" -i 200 >>"$TMPD/osu.$round.txt"
    c1=$(c2c)
    [ -z "${IMB_SRC:-}" ] || "${MPIRUN[@]}" "$IMB" Allreduce -msglog "$(lg "$size"):$(lg "$size")" \
      -iter_policy off -iter 200 -npmin "$NP" >>"$TMPD/imb.$round.txt"
    c2=$(c2c)
    echo "osu $size $c0 $c1" >>"$TMPD/c2c.$round.txt"
    echo "imb $size $c1 $c2" >>"$TMPD/c2c.$round.txt"
    [ -n "${PEER_SECONDS:-}" ] && long_peers "$size" "$round" "$c2"
  done
done
python3 - "$TMPD" "$ROUNDS" "$NP" <<'P'
import json, os, statistics, sys
tmpd, rounds, np_ = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def peer_times(path, size_col, time_col):
    """bytes -> us from a peer's table (lines of numbers; '#' and text lines skipped)."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        f = line.split()
        try:
            out[int(f[size_col])] = float(f[time_col])
        except (ValueError, IndexError):
            continue
    return out

FAST_NS = float(os.environ.get("C2C_FAST_NS", "200"))


def mode(c2c):
    """fast / slow: both round trips around the launch below / at or above FAST_NS; else mixed
    (the machine switched during it) or unknown (a probe did not answer)."""
    if not c2c or None in c2c or min(c2c) < 0:
        return "unknown"
    return "fast" if max(c2c) < FAST_NS else "slow" if min(c2c) >= FAST_NS else "mixed"


def samples(tmpd, rounds):
    """tool -> size -> [(round, us per operation, mode)]: ours from the records (their own c2c_ns
    around the case), OSU's avg latency and IMB's t_avg with the round trips around their launch."""
    out = {"ours": {}, "OSU": {}, "IMB": {}, "OSU-long": {}, "IMB-long": {}}
    for k in range(1, rounds + 1):
        for line in open("%s/run.%d/records.jsonl" % (tmpd, k)):
            r = json.loads(line)
            if r["status"] == "ok":
                c2c = r["extra"].get("host_probe", {}).get("c2c_ns")
                out["ours"].setdefault(r["extra"]["size_bytes"], []).append(
                    (k, r["time"]["median"] * 1e6, mode(c2c)))
        brackets = {}
        if os.path.exists("%s/c2c.%d.txt" % (tmpd, k)):
            for line in open("%s/c2c.%d.txt" % (tmpd, k)):
                f = line.split()
                brackets[(f[0], int(f[1]))] = [float(f[2] or -1), float(f[3] or -1)]
        # OSU: size avg; IMB: #bytes reps min max avg
        for tool, tag, col in (("OSU", "osu", 1), ("IMB", "imb", 4), ("OSU-long", "osul", 1),
                               ("IMB-long", "imbl", 4)):
            for size, t in peer_times("%s/%s.%d.txt" % (tmpd, tag, k), 0, col).items():
                c2c = brackets.get((tag, size))
                if c2c:  # IMB's 0-byte line has no bracket of its own
                    out[tool].setdefault(size, []).append((k, t, mode(c2c)))
    return out


def peers_table(tmpd, rounds, np_):
    """Our time per operation against OSU's avg latency and IMB's t_avg, per size: over all
    rounds (the median of the per-round ratios), best against best, and within each mode of the
    machine (the medians of the launches that ran wholly in it)."""
    s = samples(tmpd, rounds)
    if not s["OSU"] and not s["IMB"]:
        return
    med, nan = statistics.median, float("nan")
    print("\nall_reduce float, %s ranks: time per operation in us, medians over %d interleaved "
          "rounds; ratio = peer time / our time (goal >= 0.97)" % (np_, rounds))
    def paired(tools):
        print("%12s %9s %9s %9s %8s %8s" % ("bytes", "ours", tools[0][:3], tools[1][:3], "OSU/us",
                                            "IMB/us"))
        for b in sorted(s["ours"]):
            o = {k: t for k, t, _ in s["ours"][b]}
            row = [med(o.values())]
            for tool in tools:
                p = {k: t for k, t, _ in s[tool].get(b, []) if k in o}
                row += [med(p.values()), med(p[k] / o[k] for k in p)] if p else [nan, nan]
            print("%12d %9.3f %9.3f %9.3f %8.3f %8.3f" % (b, row[0], row[1], row[3], row[2],
                                                           row[4]))
    paired(("OSU", "IMB"))
    if s["OSU-long"] or s["IMB-long"]:
        print("peers run for PEER_SECONDS=%s s of operations at each size, as long as our case "
              "keeps both cores busy; same columns" % os.environ.get("PEER_SECONDS", "?"))
        paired(("OSU-long", "IMB-long"))
    # Best against best (the fastest round of each tool, as STREAM reports its best rate).
    print("best round of each tool (us); ratio = peer best / our best")
    for b in sorted(s["ours"]):
        o = min(t for _, t, _ in s["ours"][b])
        cells = [min((t for _, t, _ in s[tool].get(b, [])), default=nan) for tool in ("OSU", "IMB")]
        print("%12d %9.3f %9.3f %9.3f %8.3f %8.3f" % (b, o, cells[0], cells[1], cells[0] / o,
                                                       cells[1] / o))
    # The lower quartile of each tool's launches: the machine's faster state, which every tool
    # draws in about as many launches, without the all-or-nothing of the best one.
    def q1(v):
        v = sorted(v)
        return statistics.quantiles(v, n=4)[0] if len(v) >= 4 else nan
    print("lower quartile of each tool's rounds (us); ratio = peer / ours")
    for b in sorted(s["ours"]):
        o = q1(t for _, t, _ in s["ours"][b])
        cells = [q1(t for _, t, _ in s[tool].get(b, [])) for tool in ("OSU", "IMB")]
        print("%12d %9.3f %9.3f %9.3f %8.3f %8.3f" % (b, o, cells[0], cells[1], cells[0] / o,
                                                       cells[1] / o))
    # By mode: this VM's two cores pass cache lines at one of two speeds, switching every few
    # seconds (docs/collectives.md), and every tool's time moves with it; each launch is set
    # beside the others that ran in the same mode (n: launches; ratio of the medians).
    for m in ("fast", "slow"):
        print("%s mode (core-to-core round trip %s %.0f ns before and after): median us (n); "
              "ratio = peer / ours" % (m, "<" if m == "fast" else ">=", FAST_NS))
        for b in sorted(s["ours"]):
            cells = []
            for tool in ("ours", "OSU", "IMB"):
                v = [t for _, t, md in s[tool].get(b, []) if md == m]
                cells.append((med(v) if v else nan, len(v)))
            print("%12d %9.3f (%d) %9.3f (%d) %9.3f (%d) %8.3f %8.3f" % (
                b, cells[0][0], cells[0][1], cells[1][0], cells[1][1], cells[2][0], cells[2][1],
                cells[1][0] / cells[0][0], cells[2][0] / cells[0][0]))
    counts = {}
    for tool in s:
        for v in s[tool].values():
            for _, _, md in v:
                counts[md] = counts.get(md, 0) + 1
    print("launches and cases by mode: %s" % ", ".join("%s %d" % kv for kv in sorted(counts.items())))

ours, plain, ratio, single = {}, {}, {}, {}  # size -> one value per round
for k in range(1, rounds + 1):
    for line in open("%s/single.%d.txt" % (tmpd, k)):
        if line[0] != "#":
            f = line.split()
            single.setdefault(int(float(f[0])), []).append(float(f[2]))
    for line in open("%s/run.%d/records.jsonl" % (tmpd, k)):
        r = json.loads(line)
        if r["status"] != "ok" or not isinstance(r["extra"].get("reference"), dict):
            print("round %d, %s B: %s: %s" % (k, r["params"]["bytes"], r["status"],
                  r.get("message") or r["extra"].get("reference")), file=sys.stderr)
            continue
        b, ref = r["extra"]["size_bytes"], r["extra"]["reference"]
        ours.setdefault(b, []).append({m["name"]: m["value"] for m in r["metrics"]}["busbw"])
        plain.setdefault(b, []).append(ref["busbw"])
        ratio.setdefault(b, []).append(ref["ratio"])
med = statistics.median
print("all_reduce float, %s ranks, %d rounds: busbw in GB/s (1e9 B/s), medians over the rounds; "
      "plain loop in the same run and standalone under MPI_Init" % (np_, rounds))
print("%12s %10s %10s %7s %14s %s" % ("bytes", "ours", "plain", "ratio", "plain MPI_Init",
                                      "  per-round ratios"))
for b in sorted(ours):
    print("%12d %10.4g %10.4g %7.3f %14.4g   %s" % (b, med(ours[b]), med(plain[b]), med(ratio[b]),
          med(single.get(b, [float("nan")])), " ".join("%.3f" % x for x in ratio[b])))
if ratio:
    m = sorted(med(v) for v in ratio.values())
    print("ratio ours / plain loop in the same run: median over sizes %.3f, lowest %.3f (goal >= "
          "0.97: %s)" % (med(m), m[0], m[0] >= 0.97))
    c = sorted(med(ours[b]) / med(single[b]) for b in ours if b in single)
    if c:
        print("ours / standalone plain loop under MPI_Init: median %.3f, lowest %.3f (our process "
              "against a bare one, and run-to-run drift)" % (med(c), c[0]))
peers_table(tmpd, rounds, np_)
P
