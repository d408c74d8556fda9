#!/usr/bin/env bash
# allreduce_vs_reference.sh BUILD_DIR [RANKS=2] [MINBYTES=1K] [MAXBYTES=64M] [STEP=4]: the MPI
# backend's float all_reduce busbw (collectives.all_reduce, out-of-place, median) against the plain
# MPI_Allreduce timing loop (allreduce_reference) at the same sizes and ranks, one after the other
# on this machine, and each size's ratio ours / plain (issue 4 "Performance": >= 0.97 on medians).
# A benchmark, not a test: the numbers are only as steady as the machine.
set -euo pipefail
BUILD=${1:?usage: allreduce_vs_reference.sh BUILD_DIR [RANKS] [MINBYTES] [MAXBYTES] [STEP]}
NP=${2:-2} MINB=${3:-1K} MAXB=${4:-64M} STEP=${5:-4}
TMPD=$(mktemp -d /tmp/cbarref.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT
MPIRUN=(mpirun --bind-to none --oversubscribe -np "$NP")
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
minb=$(numfmt --from=iec "$MINB") maxb=$(numfmt --from=iec "$MAXB")
"${MPIRUN[@]}" "$BUILD/collectives/allreduce_reference" "$minb" "$maxb" "$STEP" 21 >"$TMPD/ref.txt"
"${MPIRUN[@]}" "$BUILD/clusterbench" run --suite quick --only collectives.all_reduce \
  --set collectives.backends=mpi --set collectives.dtypes=float --set collectives.minbytes="$MINB" \
  --set collectives.maxbytes="$MAXB" --set collectives.stepfactor="$STEP" \
  --out "$TMPD/run" >"$TMPD/run.log" 2>&1 || true
[ -s "$TMPD/run/records.jsonl" ] || { tail -20 "$TMPD/run.log" >&2; echo "no records" >&2; exit 1; }
python3 - "$TMPD/ref.txt" "$TMPD/run/records.jsonl" "$NP" <<'P'
import json, sys
rows = [l.split() for l in open(sys.argv[1]) if l[0] != "#"]
ref = {int(float(r[0])): float(r[2]) for r in rows}
ref_min = {int(float(r[0])): float(r[3]) for r in rows}
ours, ours_min = {}, {}
for l in open(sys.argv[2]):
    r = json.loads(l)
    if r["status"] != "ok":
        print("%s B: %s: %s" % (r["params"]["bytes"], r["status"], r["message"]), file=sys.stderr)
    else:
        b = r["extra"]["size_bytes"]
        ours[b] = {m["name"]: m["value"] for m in r["metrics"]}["busbw"]
        ours_min[b] = b / r["time"]["min"] / 1e9 * r["extra"]["busbw_factor"]
print("all_reduce float, %s ranks: busbw in GB/s (1e9 B/s), medians" % sys.argv[3])
print("%12s %12s %12s %7s" % ("bytes", "ours", "plain loop", "ratio"))
ratios = []
for b in sorted(ref):
    if b in ours and ref[b] > 0:
        ratios.append(ours[b] / ref[b])
        print("%12d %12.6g %12.6g %7.3f" % (b, ours[b], ref[b], ratios[-1]))
    else:
        print("%12d %12s %12.6g %7s" % (b, "%.6g" % ours[b] if b in ours else "no record", ref[b], "-"))
if ratios:
    s = sorted(ratios)
    print("median ratio %.3f, lowest %.3f (goal >= 0.97)" % (s[len(s) // 2], s[0]))
# The fastest batch of each side: on a shared, loaded machine the medians move 10x from run to
# run (other processes take the cores a busy-polling MPI rank needs); the minimum shows whether
# the harness itself costs anything.
mins = [ours_min[b] / ref_min[b] for b in sorted(ref_min) if b in ours_min and ref_min[b] > 0]
print("at the fastest batch: " + ", ".join("%d B %.3f" % (b, ours_min[b] / ref_min[b])
                                          for b in sorted(ref_min) if b in ours_min and ref_min[b] > 0))
if mins:
    m = sorted(mins)
    print("fastest-batch ratio: median %.3f, lowest %.3f" % (m[len(m) // 2], m[0]))
P
