#!/usr/bin/env bash
# network_p2p_netns: network.p2p on three "nodes" (network namespaces, scripts/netns-cluster.sh),
# every link shaped with tbf so that the shaping, not the 2 cores, sets the rates: 1-2 and 1-3 at
# 200 Mbit/s, 2-3 at 100 Mbit/s (half). Asserts: one link record per pair and mode, each at or
# below its tbf rate; the slow link measures 0.2..0.7 of the others (half the rate, less where
# a loaded host takes the cores from one pair); the report's localisation names exactly that
# link (both directions agreeing) and no other; report.md names it and shows the node x node
# matrix. Then network.tuning's tcp_buffers_2node A/B between the first two nodes'
# leaders: ok, a ratio from >= 5 alternating repeats, both hosts' settings recorded on each side,
# the seed's values on side B, and each namespace's tcp_rmem/tcp_wmem restored afterwards.
# Budget: < 2 minutes (about 60 s here).
# Environment (from ctest): CB_BIN, CB_SOURCE_DIR, CB_HAVE_MPI. Exit 77 = skipped (and why).
set -euo pipefail

skip() {
  echo "SKIP network_p2p_netns: $*"
  exit 77
}
fail() {
  echo "FAIL network_p2p_netns: $*" >&2
  exit 1
}

: "${CB_BIN:?CB_BIN must name the clusterbench binary}"
SRC=${CB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CLUSTER=$SRC/scripts/netns-cluster.sh

[[ ${CB_HAVE_MPI:-1} =~ ^(1|ON|TRUE|true)$ ]] || skip "clusterbench was built without MPI"
[[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces (running as uid $(id -u))"
for tool in ip tc unshare mpirun python3; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed"
done
probe=cbpprobe$$
if ! err=$(ip netns add "$probe" 2>&1); then
  skip "cannot create a network namespace: $err"
fi
ip netns del "$probe"

export CB_NETNS_PREFIX=cbp$$n
WORK=$(mktemp -d /tmp/network_p2p_netns.XXXXXX)
export CB_NETNS_STATE=$WORK/cluster/state
N1=${CB_NETNS_PREFIX}1
N2=${CB_NETNS_PREFIX}2
N3=${CB_NETNS_PREFIX}3
cleanup() {
  local rc=$?
  "$CLUSTER" down >/dev/null 2>&1 || "$CLUSTER" down || true
  if ((rc == 0)); then rm -rf "$WORK"; else echo "network_p2p_netns: kept $WORK" >&2; fi
  exit $rc
}
trap cleanup EXIT

"$CLUSTER" up 3
# Buckets of 1 ms at the rate: with the default 10 ms, each batch after the pause between the
# loop's iterations starts with a full bucket (+20% on 2 MiB batches), which no real link gives.
# 200/100 Mbit/s, not 400/200: three ranks on 2 cores, the idle one spinning in MPI, held the
# fast links to 52-64% of 400 Mbit/s both ways in a CI run (slow/fast 0.75).
"$CLUSTER" slow "$N1" "$N2" 200mbit 25000
"$CLUSTER" slow "$N1" "$N3" 200mbit 25000
"$CLUSTER" slow "$N2" "$N3" 100mbit 12500

OUT=$WORK/run
set +e
timeout 100 "$CLUSTER" mpirun -np 3 --map-by node \
  "$CB_BIN" run --suite ci --only network.p2p \
  --set network.p2p.modes=unidirectional,bidirectional --set network.p2p.bytes=1M \
  --set network.p2p.min_time=0.3 --out "$OUT"
rc=$?
set -e
echo "network_p2p_netns: clusterbench exited $rc"
# 1: this small machine fails host rows (cores, memory, ports); the links are judged below.
[[ $rc == 0 || $rc == 1 || $rc == 4 ]] || fail "clusterbench across namespaces exited $rc"

python3 - "$OUT" "$N1" "$N2" "$N3" <<'PY'
import json, os, sys
out, n1, n2, n3 = sys.argv[1:5]
errors = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        errors.append(what)

recs = [json.loads(l) for l in open(os.path.join(out, "records.jsonl")) if l.strip()]
rate = {frozenset((n1, n2)): 200e6 / 8 / 1e9, frozenset((n1, n3)): 200e6 / 8 / 1e9,
        frozenset((n2, n3)): 100e6 / 8 / 1e9}  # GB/s per direction
slow = frozenset((n2, n3))
for mode, dirs in (("unidirectional", 1), ("bidirectional", 2)):
    links = {frozenset(r["scope"]["hosts"]): r for r in recs
             if r["params"]["mode"] == mode and r["scope"]["kind"] == "link"}
    check(set(links) == set(rate), f"{mode}: one link record per pair ({len(links)})")
    if set(links) != set(rate):
        continue
    bw = {k: [m["value"] for m in r["metrics"] if m["name"] == "bandwidth"][0]
          for k, r in links.items()}
    print(f"{mode}: " + ", ".join(f"{'<->'.join(sorted(k))} {v:.4f} GB/s" for k, v in bw.items()))
    for k, v in bw.items():
        # tbf lets a burst through first: allow 15% over the shaped rate.
        check(0 < v <= 1.15 * dirs * rate[k], f"{mode} {sorted(k)}: {v:.4f} <= tbf {dirs * rate[k]:.4f}")
    fast = [v for k, v in bw.items() if k != slow]
    ratio = bw[slow] / (sum(fast) / len(fast))
    # Half the rate. Both directions at once share the 2 cores, and a loaded host can take them
    # from one pair (a clean-clone run measured 0.334 unidirectional); both ways, each link's
    # ACKs wait behind its data in the tbf queue, and the slow link measured 0.26-0.63 in five
    # runs at 200/100 Mbit/s: allow more below there.
    low = 0.2 if mode == "unidirectional" else 0.15
    check(low <= ratio <= 0.7, f"{mode}: slow link / fast links = {ratio:.3f} in {low}..0.70")
    cl = [r for r in recs if r["params"]["mode"] == mode and r["scope"]["kind"] == "cluster"][0]
    m = cl["extra"]["matrix"]
    i, j = m["hosts"].index(n2), m["hosts"].index(n3)
    check(abs(m["values"][i][j] - bw[slow]) < 1e-12, f"{mode}: cluster record matrix[{n2}][{n3}]")

rep = json.load(open(os.path.join(out, "report.json")))
loc = [l for l in rep["fleet"]["localisation"] if l["benchmark"] == "network.p2p"]
named = [(l["kind"], sorted(l["hosts"])) for l in loc]
check(named == [("link", sorted([n2, n3]))], f"localisation names exactly link {n2}<->{n3} (got {named})")
check(all(l["worst_deviation"] < -0.1 for l in loc),
      f"its deviation below -10%: {[round(l['worst_deviation'], 3) for l in loc]}")
check(not any(o["benchmark"] == "network.p2p" for o in rep["fleet"]["outliers"]),
      "no link outliers besides the localisation (one answer)")
md = open(os.path.join(out, "report.md")).read()
check(f"{n2}<->{n3}" in md.split("## Fleet")[1], "report.md Fleet section names the slow link")
check("## Links" in md and f"| {n1} |" in md, "report.md has the node x node matrix")
sys.exit(1 if errors else 0)
PY

nsnap() { ip netns exec "$1" cat /proc/sys/net/ipv4/tcp_rmem /proc/sys/net/ipv4/tcp_wmem; }
before1=$(nsnap "$N1") before2=$(nsnap "$N2")
TCP=$WORK/tcp
set +e
timeout 100 "$CLUSTER" mpirun -np 3 --map-by node \
  "$CB_BIN" run --suite ci --only network.tuning --set network.tuning.effects=tcp_buffers_2node \
  --set network.tuning.allow_changes=true --set network.tuning.tcp_bytes=1M \
  --set network.tuning.min_time=0.05 --out "$TCP"
rc=$?
set -e
[[ $rc == 0 || $rc == 1 || $rc == 4 ]] || fail "tcp_buffers_2node across namespaces exited $rc"
[[ $(nsnap "$N1") == "$before1" && $(nsnap "$N2") == "$before2" ]] ||
  fail "tcp_rmem/tcp_wmem of $N1/$N2 not restored"
python3 - "$TCP" "$N1" "$N2" <<'PY'
import json, os, statistics, sys
out, n1, n2 = sys.argv[1:4]
recs = [json.loads(l) for l in open(os.path.join(out, "records.jsonl")) if l.strip()]
r = [x for x in recs if x["params"].get("effect") == "tcp_buffers_2node"]
assert len(r) == 1, f"one tcp_buffers_2node record, got {len(r)}"
r = r[0]
assert r["status"] == "ok", f"tcp_buffers_2node: {r['status']}: {r.get('message')}"
a, b = r["extra"]["a"]["seconds_per_op"], r["extra"]["b"]["seconds_per_op"]
assert len(a) >= 5 and len(a) == len(b), f"{len(a)}/{len(b)} repeats"
ratio = {m["name"]: m for m in r["metrics"]}["ratio"]["value"]
want = statistics.median(x / y for x, y in zip(a, b))
assert abs(ratio - want) < 1e-9, f"ratio {ratio} != median t_A/t_B {want}"
for side in ("a", "b"):
    st = r["extra"][side]["setting"]
    assert st["hosts"] == [n1, n2], st
    assert len(st["tcp_rmem"]) == 2 and len(st["tcp_wmem"]) == 2, st
assert r["extra"]["b"]["setting"]["tcp_rmem"] == ["4096 87380 2147483647"] * 2
assert r["extra"]["address"].startswith("10."), r["extra"]["address"]
print(f"ok   tcp_buffers_2node {n1}->{n2} via {r['extra']['address']}: ratio {ratio:.3f}, "
      f"A {r['extra']['a']['setting']['tcp_rmem']}, B seed; {r['extra'].get('effect', 'effect measured')}")
PY
echo "PASS network_p2p_netns"

