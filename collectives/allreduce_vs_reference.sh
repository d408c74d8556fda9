#!/usr/bin/env bash
# allreduce_vs_reference.sh BUILD_DIR [RANKS=2] [MINBYTES=1K] [MAXBYTES=64M] [STEP=4] [ROUNDS=3]:
# issue 4 "Performance": the MPI backend's float all_reduce busbw (collectives.all_reduce,
# out-of-place, median) against a plain MPI_Allreduce timing loop at the same sizes and ranks, in
# one run: `--set collectives.all_reduce.reference=true` makes each case run one batch of the
# plain loop on the same buffers after each timed batch of the harness, with the same count
# (docs/collectives.md "Performance"), so both see the same process, threading level
# (MPI_THREAD_MULTIPLE, which the watchdog needs) and slow spells of a shared machine. Printed per
# size: the medians over ROUNDS runs of our busbw, the plain loop's, and of each run's ratio
# (goal >= 0.97). Each round also runs the standalone plain loop under MPI_Init
# (allreduce_reference, MPI_THREAD_SINGLE): what the threading level itself costs. A benchmark,
# not a test: the numbers are only as steady as the machine.
set -euo pipefail
BUILD=${1:?usage: allreduce_vs_reference.sh BUILD_DIR [RANKS] [MINBYTES] [MAXBYTES] [STEP] [ROUNDS]}
NP=${2:-2} MINB=${3:-1K} MAXB=${4:-64M} STEP=${5:-4} ROUNDS=${6:-3}
TMPD=$(mktemp -d /tmp/cbarref.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT
MPIRUN=(mpirun --bind-to "${BIND:-core}" --oversubscribe -np "$NP")
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
minb=$(numfmt --from=iec "$MINB") maxb=$(numfmt --from=iec "$MAXB")
for round in $(seq "$ROUNDS"); do
  "${MPIRUN[@]}" "$BUILD/clusterbench" run --suite quick --only collectives.all_reduce \
    --set collectives.backends=mpi --set collectives.dtypes=float --set collectives.minbytes="$MINB" \
    --set collectives.maxbytes="$MAXB" --set collectives.stepfactor="$STEP" \
    --set collectives.all_reduce.reference=true --out "$TMPD/run.$round" >"$TMPD/run.$round.log" 2>&1 || true
  [ -s "$TMPD/run.$round/records.jsonl" ] ||
    { tail -20 "$TMPD/run.$round.log" >&2; echo "round $round: no records" >&2; exit 1; }
  ALLREDUCE_REFERENCE_THREADS=single "${MPIRUN[@]}" -x ALLREDUCE_REFERENCE_THREADS \
    "$BUILD/collectives/allreduce_reference" "$minb" "$maxb" "$STEP" 0.5 >"$TMPD/single.$round.txt"
done
python3 - "$TMPD" "$ROUNDS" "$NP" <<'P'
import json, statistics, sys
tmpd, rounds, np_ = sys.argv[1], int(sys.argv[2]), sys.argv[3]
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
      "plain loop in the same run (MPI_THREAD_MULTIPLE) and standalone under MPI_Init" % (np_, rounds))
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
        print("ours / standalone plain loop under MPI_Init: median %.3f, lowest %.3f (the threading "
              "level's cost and run-to-run drift)" % (med(c), c[0]))
P
