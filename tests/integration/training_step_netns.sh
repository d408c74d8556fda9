#!/usr/bin/env bash
# training_step_netns: the CPU proof of compute.training_step (docs/training.md). Two network
# namespaces, one rank each, OpenBLAS on one thread, one loader worker, the veth shaped with tbf
# so that the gradient all_reduce takes a little less than the GEMMs; judged by
# reports/specs/training.json, which holds only the step's row. Four runs:
#   base            the prediction is within 20% of the measured step; bottleneck compute
#   link 4x slower  the prediction still holds; bottleneck network
#   slow loader     (slow_loader: each batch 1.6 x the base step longer, at least 0.6 s, parts
#                   and step alike) bottleneck loader
#   zero2           ZeRO-2 with the optimizer offloaded and 2 accumulation steps (the seed's
#                   DeepSpeed setting): reduce_scatter buckets, D2H, host Adam, H2D, all_gather;
#                   the prediction holds
#   serial_comm     (the fault: no overlap, in the whole step only) the step exceeds 1.2 x the
#                   prediction, training.step_vs_parts FAILs (exit 1) for the cluster and the
#                   node with the longest steps, and the
#                   parts measured in the same case are those of the base or the
#                   slow_loader run (within 25%)
# Every run's predictions (3 rounds of parts, then steps) are recomputed here from the record's
# parts (the formula of docs/metrics.md "Training step", written again in Python), its ratio
# from its rounds and its tokens/s from its steps.
# Environment (from ctest): CB_BIN, CB_SOURCE_DIR, CB_HAVE_MPI. Budget: about 3.5 minutes (one more base run, about 1 minute, on a VM whose GEMMs are slow).
set -euo pipefail

fail() {
  echo "FAIL training_step_netns: $*" >&2
  exit 1
}
: "${CB_BIN:?CB_BIN must name the clusterbench binary}"
SRC=${CB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CLUSTER=$SRC/scripts/netns-cluster.sh
[[ ${CB_HAVE_MPI:-1} =~ ^(1|ON|TRUE|true)$ ]] || fail "clusterbench was built without MPI"
[[ $(id -u) -eq 0 ]] || fail "needs root to create network namespaces (uid $(id -u))"
for tool in ip tc mpirun python3; do
  command -v "$tool" >/dev/null || fail "'$tool' is not installed (scripts/setup.sh --test)"
done

export CB_NETNS_PREFIX=cbts$$n
WORK=$(mktemp -d /tmp/training_step_netns.XXXXXX)
export CB_NETNS_STATE=$WORK/cluster/state
N1=${CB_NETNS_PREFIX}1
N2=${CB_NETNS_PREFIX}2
cleanup() {
  local rc=$?
  "$CLUSTER" down >/dev/null 2>&1 || "$CLUSTER" down || true
  if ip netns list | grep -qE "^${CB_NETNS_PREFIX}[0-9]+( |\$)"; then
    echo "training_step_netns: namespaces left behind" >&2
    rc=1
  fi
  if ((rc == 0)); then rm -rf "$WORK"; else echo "training_step_netns: kept $WORK" >&2; fi
  exit $rc
}
trap cleanup EXIT

"$CLUSTER" up 2 >/dev/null
# The rate at which the 4 bucket all_reduces (3 MiB each) take a little less than the GEMMs of
# the step on this machine; a small burst, so that a bucket never crosses at the veth's speed.
RATE=600mbit
"$CLUSTER" slow "$N1" "$N2" "$RATE"

# step NAME WANT-RC [--set ...]: one run of the step alone, judged by the training table
# (WANT-RC "any": a calibration run, whose verdict is not what is tested). A verdict that misses
# WANT-RC gets one more try (below).
step() {
  local name=$1 want=$2 rc try
  shift 2
  for try in 1 2; do
    rm -rf "${WORK:?}/$name"
    set +e
    timeout 240 "$CLUSTER" mpirun -np 2 --map-by node "$CB_BIN" run --suite quick \
      --only compute.training_step --spec "$SRC/reports/specs/training.json" \
      --set compute.training_step.min_time=0.05 "$@" --out "$WORK/$name" >"$WORK/$name.log" 2>&1
    rc=$?
    set -e
    [[ $want == any || $rc == "$want" ]] && return 0
    # Once more on a verdict (exit 0 or 1) that missed: the step/parts ratio of a run moves by
    # up to about 15% on this VM (a CI run's ZeRO-2 run measured 1.222 against its 1.2 bound; the
    # same test here 1.057), while the faults measure 1.28-1.33. Both tries must miss to fail.
    if ((try == 1)) && [[ $rc == 0 || $rc == 1 ]]; then
      echo "training_step_netns: $name: exit $rc, want $want; once more: $(grep -m1 'step_vs_parts' "$WORK/$name.log" || true)"
      continue
    fi
    tail -30 "$WORK/$name.log" >&2
    fail "$name: exit $rc, want $want"
  done
}

# The proofs need the buckets' all_reduces (fixed by the link) at about 0.8 x the step's GEMMs
# (which scale with the micro-batch): a faster link share would hide the serial fault and the
# slow link, a smaller loader delay the slow loader. This VM's GEMMs have run at 1/6 of their
# usual speed for hours (a CI run of 2026-12-03: 2.45 s of GEMMs a step against 0.29 s of
# buckets, the serial fault only 1.19 x its prediction), so the base run's parts set the
# micro-batch: when the buckets are outside 0.4-0.95 x the GEMMs (above 1 the network, not the
# GEMMs, is the base run's bottleneck), micro_batch = 8 x (their ratio / 0.8), from 1 to 16, and
# the base run is repeated with it.
# The first run only calibrates: at micro_batch 8 on a slow VM its prediction can miss by more
# than 20% (a CI run of 2026-12-03 failed there), so its verdict is not judged; it becomes the
# base run only when it needs no other micro-batch and passed.
# A GEMM's time does not scale linearly with the micro-batch (a CI run of 2026-12-04: 0.119 at
# micro_batch 8, so 1, where the buckets were 1.28 x the GEMMs and the network the bottleneck), so
# the calibration is repeated, up to twice, from the last run until the ratio is inside 0.4-0.95 (micro_batch 2 measured 0.488 and 1 measured 1.096).
next_mb() {  # next_mb DIR: the micro-batch that brings DIR's buckets / GEMMs to about 0.8
  python3 - "$1" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1] + "/records.jsonl") if l.strip()]
r = [x for x in recs if x["scope"]["kind"] == "cluster"][-1]
c, p = r["extra"]["config"], r["extra"]["parts"]
x = sum(p["bucket_comm_s"]) / (c["layers"] * (p["forward_layer_s"] + p["backward_layer_s"]))
mb = c["micro_batch"] if 0.4 <= x <= 0.95 else max(1, min(16, round(c["micro_batch"] * x / 0.8)))
print("micro_batch", c["micro_batch"], "buckets / GEMMs", round(x, 3), "->", mb, file=sys.stderr)
print(mb)
PY
}
MB=()
mb=8
step calib any
for try in 1 2 3; do
  next=$(next_mb "$WORK/calib")
  [[ $next == "$mb" ]] && break
  ((try < 3)) || break
  echo "training_step_netns: buckets / GEMMs off 0.4-0.95 at micro_batch $mb: micro_batch $next"
  mb=$next
  MB=(--set compute.training_step.micro_batch="$mb")
  step calib any "${MB[@]}"
done
calib_rc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_code"])' "$WORK/calib/run.json" 2>/dev/null || echo 1)
if [[ $calib_rc == 0 && $(next_mb "$WORK/calib" 2>/dev/null) == "$mb" ]]; then
  mv "$WORK/calib" "$WORK/base"
else
  step base 0 "${MB[@]}"
fi
# The fault right after the base run: its parts are held to the base run's within 25%, and this
# VM's GEMM speed moves by more over minutes (1.75 x once with three runs between them).
step serial 1 "${MB[@]}" --set compute.training_step.serial_comm=true
"$CLUSTER" slow "$N1" "$N2" 150mbit
step slow_link 0 "${MB[@]}"
"$CLUSTER" slow "$N1" "$N2" "$RATE"
# The loader's delay: 1.6 x the base run's measured step (at least 0.6 s), so that the loader,
# not the GEMMs, sets the step even when this VM's GEMMs slow down between runs (a CI run of
# 2026-12-04: a fixed 0.6 s against a 566 ms base step, and the GEMMs 25% slower in the
# slow_loader run, left compute the bottleneck at 687 ms).
DELAY=$(python3 - "$WORK/base" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1] + "/records.jsonl") if l.strip()]
r = [x for x in recs if x["scope"]["kind"] == "cluster"][-1]
step = {m["name"]: m["value"] for m in r["metrics"]}["step_time"] / 1e3
print(f"{min(60.0, max(0.6, 1.6 * step)):.2f}")
PY
)
echo "training_step_netns: slow_loader delay $DELAY s a batch"
step slow_loader 0 "${MB[@]}" --set compute.training_step.slow_loader="$DELAY"
step zero2 0 "${MB[@]}" --set compute.training_step.zero=2 --set compute.training_step.offload=true \
  --set compute.training_step.accum=2

python3 - "$WORK" "$N1" "$N2" <<'PY'
import json, os, sys
work, n1, n2 = sys.argv[1:4]
errors = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        errors.append(what)

def predict(c, p):
    """docs/metrics.md "Training step", written again: the step from its parts."""
    L, f, b = c["layers"], p["forward_layer_s"], p["backward_layer_s"]
    ready = end = comm = 0.0
    per = max(1, c["bucket"] // (4 * (4 * c["hidden"] ** 2 + 2 * c["hidden"] * c["ffn"])))
    left, k = L, 0
    while left > 0:
        n = min(per, left)
        ready += n * b
        end = max(end, ready) + p["bucket_comm_s"][k]
        comm += p["bucket_comm_s"][k]
        left, k = left - n, k + 1
    opt = p["d2h_s"] + p["optimizer_s"] + p["h2d_s"] + p["all_gather_s"]
    path = c["accum"] * L * (f + b) - L * b + max(L * b, end) + opt
    return max(path, c["accum"] * p["loader_batch_s"])

runs = {}
for name in ("base", "slow_link", "slow_loader", "zero2", "serial"):
    recs = [json.loads(l) for l in open(os.path.join(work, name, "records.jsonl")) if l.strip()]
    cl = [r for r in recs if r["scope"]["kind"] == "cluster"]
    nodes = {r["scope"]["host"]: r for r in recs if r["scope"]["kind"] == "node"}
    check(len(cl) == 1 and cl[0]["status"] == "ok", f"{name}: one ok cluster record")
    check(set(nodes) == {n1, n2}, f"{name}: one node record per namespace ({sorted(nodes)})")
    r = cl[0]
    m = {x["name"]: x for x in r["metrics"]}
    c, p = r["extra"]["config"], r["extra"]["parts"]
    pred = predict(c, p)
    check(abs(m["predicted_step_time"]["value"] - pred * 1e3) < 1e-6 * pred * 1e3,
          f"{name}: predicted {m['predicted_step_time']['value']:.1f} ms = the formula from the "
          f"record's median parts ({pred * 1e3:.1f} ms)")
    rounds = r["extra"]["rounds"]
    check(len(rounds) == 3 and all(abs(x["predicted_step_s"] - predict(c, x["parts"])) < 1e-9
                                   for x in rounds), f"{name}: each of 3 rounds predicted by the formula")
    ratios = sorted(s_ / x["predicted_step_s"] for x in rounds for s_ in x["steps_s"])
    ratio = m["step_over_prediction"]["value"]
    mid = (ratios[(len(ratios) - 1) // 2] + ratios[len(ratios) // 2]) / 2
    check(abs(ratio - mid) < 1e-9, f"{name}: ratio {ratio:.3f} = the median of step / its round's prediction")
    steps = sorted(s_ for x in rounds for s_ in x["steps_s"])
    step = (steps[(len(steps) - 1) // 2] + steps[len(steps) // 2]) / 2 * 1e3
    check(abs(m["step_time"]["value"] - step) < 1e-6, f"{name}: step_time = the median step")
    tokens = c["accum"] * c["micro_batch"] * c["seq"]
    tps = sorted(tokens / s_ for s_ in steps)
    tmid = (tps[(len(tps) - 1) // 2] + tps[len(tps) // 2]) / 2
    check(abs(m["tokens_per_s_per_gpu"]["value"] - tmid) < 1e-6 * tmid,
          f"{name}: tokens/s per GPU = median of {tokens} tokens / each step")
    check(len(m["step_time"]["reps"]) >= 15, f"{name}: the step has {len(m['step_time']['reps'])} reps")
    # A node waits at each collective for the slowest rank: its prediction, round by round, is
    # the formula over its own parts, never below the cluster's (docs/metrics.md).
    for host, rec in nodes.items():
        nrounds = rec["extra"]["rounds"]
        check(len(nrounds) == len(rounds) and all(
            abs(x["predicted_step_s"] - max(predict(c, x["parts"]), y["predicted_step_s"])) < 1e-9
            for x, y in zip(nrounds, rounds)),
            f"{name}: {host}'s prediction each round = max(its own parts', the cluster's)")
    rep = json.load(open(os.path.join(work, name, "report.json")))
    row = [x for x in rep["rows"] if x["id"] == "training.step_vs_parts"][0]
    runs[name] = (r, m, ratio, row, nodes)
    print(f"{name}: measured {step:.1f} ms, predicted {pred * 1e3:.1f} ms, ratio {ratio:.3f}, "
          f"{r['extra']['bottleneck_text']}; row {row['outcome']}")

for name, want in (("base", "compute"), ("slow_link", "network"), ("slow_loader", "loader")):
    r, m, ratio, row, nodes = runs[name]
    # The gradient thread calls MPI: the run chose MPI_THREAD_SERIALIZED for it.
    check(r["extra"]["mpi_thread_level"] == "serialized", f"{name}: MPI at THREAD_SERIALIZED")
    check(0.8 <= ratio <= 1.2, f"{name}: measured / predicted {ratio:.3f} within 20%")
    check(r["extra"]["bottleneck"] == want, f"{name}: bottleneck {r['extra']['bottleneck']} = {want}")
    check(r["extra"]["bottleneck_text"].startswith(want + ":"), f"{name}: the text names {want}")
    check(row["outcome"] == "PASS", f"{name}: training.step_vs_parts PASS")
    for host, rec in nodes.items():
        nr = {x["name"]: x["value"] for x in rec["metrics"]}["step_over_prediction"]
        check(0.8 <= nr <= 1.2, f"{name}: {host} measured / its prediction {nr:.3f} within 20%")
r, m, ratio, row, nodes = runs["zero2"]
c, p = r["extra"]["config"], r["extra"]["parts"]
check(c["zero"] == 2 and c["offload"] is True and c["accum"] == 2, "zero2: ZeRO-2, offload, accum 2")
check(all(p[k] > 0 for k in ("d2h_s", "h2d_s", "all_gather_s")), "zero2: D2H, H2D, all_gather measured")
want = (sum(p["bucket_comm_s"]) + p["all_gather_s"]) * 1e3
check(abs(m["predicted_comm"]["value"] - want) < 1e-6 * want,
      f"zero2: predicted comm {want:.1f} ms = the buckets' reduce_scatter + the all_gather")
check(0.8 <= ratio <= 1.2, f"zero2: measured / predicted {ratio:.3f} within 20%")
check(row["outcome"] == "PASS", "zero2: training.step_vs_parts PASS")
check("all_reduce at" in runs["slow_link"][0]["extra"]["bottleneck_text"],
      "slow link: the text names the all_reduce and its busbw")

r, m, ratio, row, nodes = runs["serial"]
check(ratio > 1.2, f"serial comm: measured / predicted {ratio:.3f} > 1.2")
check(row["outcome"] == "FAIL", "serial comm: training.step_vs_parts FAILs")
bad = sorted(i["item"] for i in row["items"] if i["outcome"] == "FAIL")
# Every node's step is held to the cluster's prediction (each waits for the slowest rank), so
# the node whose steps are the longest FAILs beside the cluster; the other's margin is noise.
slowest = max(nodes, key=lambda h: {x["name"]: x["value"] for x in nodes[h]["metrics"]}["step_time"])
check({"cluster", slowest} <= set(bad), f"serial comm: the cluster and the slowest node {slowest} FAIL ({bad})")
check(r["extra"]["overlap"] is False and runs["base"][0]["extra"]["overlap"] is True,
      "the fault is recorded (overlap false) and the base run overlapped")
# The fault must not change how the parts are measured: each of the serial run's parts lies
# within 25% of the same part in one of the runs with the same model and link (base, right
# before it, and slow_loader), since this VM's GEMM speed moves between runs (a CI run of
# 2026-12-04: forward 0.68 x the base run's, backward 1.11 x). A part that took the comm into
# it would be about twice any of them.
peers = [runs[n][0]["extra"]["parts"] for n in ("base", "slow_loader")]
ser_p = r["extra"]["parts"]
def near(key, get):
    qs = [get(ser_p) / get(p) for p in peers]
    check(any(0.75 <= q <= 1.33 for q in qs),
          f"serial comm: part {key} unchanged ({', '.join(f'{q:.2f}' for q in qs)} x base's, slow_loader's)")
for key in ("forward_layer_s", "backward_layer_s", "optimizer_s"):
    near(key, lambda p, k=key: p[k])
near("bucket_comm", lambda p: p["bucket_comm_s"][0])
sys.exit(1 if errors else 0)
PY
echo "training_step_netns: passed"
