#!/usr/bin/env bash
# network_p2p_localise: one answer per run, out of the noise, with two CPU hogs running beside
# the ranks. Every link of a netns cluster is shaped with tbf to 200 Mbit/s and one link to 50
# (25% of the others). Five runs: three on 4 nodes, two on 6; in each, network.p2p measures
# both directions (unidirectional and bidirectional), and the report must name exactly that link
# (fleet.localisation: one finding, kind link, no node), net.p2p_bandwidth_typical (fail, 50% of
# the typical link) must FAIL that link and no other, and failing-hosts.txt must hold no host
# whose rows all PASS or WARN: each run is re-judged by a table of the two p2p rows alone (the
# shipped one fails this small machine's host rows) with network.p2p's outlier tolerance at 30%
# (two CPU hogs on 2 cores move a healthy link by up to -27%), and failing-hosts.txt holds exactly
# the link's two ends. A last run on 6
# nodes shapes every link of one node to 50 Mbit/s: the report names that node, none of its
# links alone, and drains that node only (its peers' links FAIL, but the localisation blames
# it). Budget: about 100 s; RUN_SERIAL (the hogs are the only load it allows).
# Environment (from ctest): CB_BIN, CB_SOURCE_DIR, CB_HAVE_MPI. Exit 77 = skipped (and why).
source "$(dirname "$0")/netns_test_lib.sh"
netns_test network_p2p_localise cbl
HOGS=()
netns_extra_cleanup() { ((${#HOGS[@]} == 0)) || kill "${HOGS[@]}" 2>/dev/null || true; }

# Two CPU hogs for the whole test: the loaded machine a link is measured on.
for _ in 1 2; do
  (while :; do :; done) &
  HOGS+=($!)
done

# cluster N SLOW...: N nodes, every link at 200 Mbit/s except the pairs "i-j" named (50 Mbit/s).
# A bucket of 1 ms at the rate (as network_p2p_rails): no full bucket at each batch's start.
cluster() {
  local n=$1
  shift
  "$CLUSTER" down >/dev/null 2>&1 || true
  "$CLUSTER" up "$n" >/dev/null 2>&1 || fail "netns-cluster up $n"
  for ((i = 1; i <= n; i++)); do
    for ((j = i + 1; j <= n; j++)); do
      local rate=200mbit burst=25000
      [[ " $* " == *" $i-$j "* ]] && rate=50mbit burst=6250
      "$CLUSTER" slow "$i" "$j" "$rate" "$burst" 2>/dev/null
    done
  done
}

# run OUT N: network.p2p both ways on N nodes, then the checks of check.py with its arguments.
run() {
  local out=$1 n=$2
  set +e
  timeout 120 "$CLUSTER" mpirun --mca mpi_yield_when_idle 1 -np "$n" --map-by node \
    "$CB_BIN" run --suite ci --only network.p2p \
    --set network.p2p.modes=unidirectional,bidirectional --set network.p2p.bytes=1M \
    --set network.p2p.min_time=0.2 --out "$out" >"$out.log" 2>&1
  local rc=$?
  set -e
  # 1: this small machine fails host rows (cores, memory) besides the link; 4: rows MISSING.
  [[ $rc == 0 || $rc == 1 || $rc == 4 ]] || { tail -20 "$out.log"; fail "run $out exited $rc"; }
}

cat >"$WORK/check.py" <<'PY'
import json, os, sys
out, want_kind, want = sys.argv[1], sys.argv[2], sys.argv[3]
errors = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + os.path.basename(out) + ": " + what)
    if not cond:
        errors.append(what)
rep = json.load(open(os.path.join(out, "report.json")))
loc = [l for l in rep["fleet"]["localisation"] if l["benchmark"] == "network.p2p"]
named = [(l["kind"], "<->".join(l["hosts"]) if l["kind"] == "link" else l["host"]) for l in loc]
check(named == [(want_kind, want)], f"localisation names exactly {want_kind} {want} (got {named}: "
      + "; ".join(l["text"] for l in loc) + ")")
check(not any(o["benchmark"] == "network.p2p" for o in rep["fleet"]["outliers"]),
      "no link outliers beside the localisation: one answer")
rows = {r["id"]: r for r in rep["rows"]}
twin = rows["net.p2p_bandwidth_typical"]
failed = sorted(i["item"] for i in twin["items"] if i["outcome"] == "FAIL")
if want_kind == "link":
    check(failed == [want], f"net.p2p_bandwidth_typical FAILs exactly {want} (got {failed}): "
          + twin["message"])
else:
    check(len(failed) >= 1 and all(want in f.split("<->") for f in failed),
          f"net.p2p_bandwidth_typical FAILs only links of {want} (got {failed})")
fail_items = {}
for r in rep["rows"]:
    for i in r["items"]:
        if i["outcome"] == "FAIL":
            for h in i["item"].split("/")[0].split("<->"):
                fail_items.setdefault(h, []).append(r["id"])
drain = open(os.path.join(out, "failing-hosts.txt")).read().split()
check(all(h in fail_items for h in drain),
      f"failing-hosts.txt {drain}: each host has a FAIL item ({sorted(fail_items)})")
if len(sys.argv) > 4:
    check(drain == sys.argv[4].split(","), f"failing-hosts.txt is exactly {sys.argv[4]} (got {drain})")
sys.exit(1 if errors else 0)
PY
# The p2p rows alone, as the shipped base table has them.
python3 - "$SRC/reports/specs/base.json" "$WORK/p2p.json" <<'PY'
import json, sys
base = json.load(open(sys.argv[1]))
rows = [r for r in base["requirements"] if r["id"] in ("net.p2p_bandwidth", "net.p2p_bandwidth_typical")]
assert len(rows) == 2, rows
# network.p2p's outlier tolerance at 30%, not the shipped 10%: with two CPU hogs on 2 cores a
# healthy link measured -15% one way and -27% both ways in a CI run; the 25% link is far past it.
json.dump({"schema": base["schema"], "name": "p2p", "title": "p2p rows", "requirements": rows,
           "families": [{"benchmark": "network.p2p", "outlier_tolerance": 0.3}]},
          open(sys.argv[2], "w"))
PY
rejudge() { "$CB_BIN" report "$1" --spec "$WORK/p2p.json" >"$1.report.log" 2>&1 || [[ $? == 1 ]] ||
  fail "report $1 --spec p2p.json: $(tail -3 "$1.report.log")"; }

n=0
for size in 4 4 4 6 6; do
  n=$((n + 1))
  cluster "$size" "1-2"
  run "$WORK/link$n" "$size"
  rejudge "$WORK/link$n"
  python3 "$WORK/check.py" "$WORK/link$n" link "${CB_NETNS_PREFIX}1<->${CB_NETNS_PREFIX}2" \
    "${CB_NETNS_PREFIX}1,${CB_NETNS_PREFIX}2" || fail "run $n ($size nodes): p2p rows alone"
done

# Every link of node 3 at 50 Mbit/s: the node, not its five links.
cluster 6 1-3 2-3 3-4 3-5 3-6
run "$WORK/node" 6
rejudge "$WORK/node"
python3 "$WORK/check.py" "$WORK/node" node "${CB_NETNS_PREFIX}3" "${CB_NETNS_PREFIX}3" ||
  fail "p2p rows alone: not exactly the slow node drained"
echo "PASS network_p2p_localise"
