#!/usr/bin/env bash
# netns_two_node: `clusterbench run --suite ci` on two "nodes" that are network namespaces joined
# by one veth pair (scripts/netns-cluster.sh), one rank each, MPI over TCP on the veth only.
# Asserts: two EnvRecords whose hosts are the two namespace names; ok records from both hosts;
# each rank ran in its own namespace (its /proc/self/ns/net is that namespace's); and the veth
# counters grew by at least the bytes node 2 must have sent to rank 0 (its EnvRecord and its
# record lines, which rank 0 gathers as JSON text); the veth is in each EnvRecord as a virtual
# interface and report.json's net.nccl_socket_ifname_up PASSes on both nodes over it; and every
# row that FAILs on the cluster also FAILs in a `run --suite ci` of this machine as one node.
# Environment (from ctest): CB_BIN, CB_SOURCE_DIR, CB_HAVE_MPI. Exit 77 = skipped (and why).
set -euo pipefail

skip() {
  echo "SKIP netns_two_node: $*"
  exit 77
}
fail() {
  echo "FAIL netns_two_node: $*" >&2
  exit 1
}

: "${CB_BIN:?CB_BIN must name the clusterbench binary}"
SRC=${CB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CLUSTER=$SRC/scripts/netns-cluster.sh

[[ ${CB_HAVE_MPI:-1} =~ ^(1|ON|TRUE|true)$ ]] || skip "clusterbench was built without MPI"
[[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces (running as uid $(id -u))"
for tool in ip unshare mpirun python3; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed"
done
probe=cbtprobe$$
if ! err=$(ip netns add "$probe" 2>&1); then
  skip "cannot create a network namespace: $err"
fi
ip netns del "$probe"

# A prefix of our own, so a developer's cluster (cbns*) is never touched.
export CB_NETNS_PREFIX=cbt$$n
WORK=$(mktemp -d /tmp/netns_two_node.XXXXXX)
export CB_NETNS_STATE=$WORK/cluster/state
N1=${CB_NETNS_PREFIX}1
N2=${CB_NETNS_PREFIX}2
cleanup() {
  local rc=$?
  "$CLUSTER" down >/dev/null 2>&1 || "$CLUSTER" down || true
  if ip netns list | grep -qE "^${CB_NETNS_PREFIX}[0-9]+( |\$)"; then
    echo "netns_two_node: namespaces left behind: $(ip netns list | grep "^$CB_NETNS_PREFIX")" >&2
    rc=1
  fi
  if ((rc == 0)); then rm -rf "$WORK"; else echo "netns_two_node: kept $WORK" >&2; fi
  exit $rc
}
trap cleanup EXIT

"$CLUSTER" up 2
IF1=$("$CLUSTER" link "$N1" "$N2")
IF2=$("$CLUSTER" link "$N2" "$N1")
counter() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }
tx2_before=$(counter "$N2" "$IF2" tx_bytes)
rx1_before=$(counter "$N1" "$IF1" rx_bytes)
tx1_before=$(counter "$N1" "$IF1" tx_bytes)

# Each rank notes its host name and network namespace, then becomes clusterbench.
mkdir -p "$WORK/ranks"
OUT=$WORK/run
set +e
# shellcheck disable=SC2016 # the rank's bash expands its own variables
timeout 540 "$CLUSTER" mpirun -np 2 --map-by node \
  bash -c 'printf "%s %s\n" "$CLUSTERBENCH_HOSTNAME" "$(readlink /proc/self/ns/net)" \
             >"$0/rank.$OMPI_COMM_WORLD_RANK" && exec "$@"' "$WORK/ranks" \
  "$CB_BIN" run --suite ci --out "$OUT"
rc=$?
set -e
echo "netns_two_node: clusterbench exited $rc"
# 0 pass, 1 a row fails, 4 incomplete: verdicts about this small machine, not about the launch.
[[ $rc == 0 || $rc == 1 || $rc == 4 ]] || fail "clusterbench across namespaces exited $rc"

tx2_after=$(counter "$N2" "$IF2" tx_bytes)
rx1_after=$(counter "$N1" "$IF1" rx_bytes)
tx1_after=$(counter "$N1" "$IF1" tx_bytes)

# The same suite on this machine as one node (two ranks, no namespaces): the netns cluster must
# not FAIL a row that one node passes (an artefact of the namespaces), issue 19.
set +e
timeout 540 mpirun --allow-run-as-root --bind-to none --oversubscribe -np 2 \
  "$CB_BIN" run --suite ci --out "$WORK/single" >"$WORK/single.log" 2>&1
rc_single=$?
set -e
echo "netns_two_node: the single-node run exited $rc_single"
[[ $rc_single == 0 || $rc_single == 1 || $rc_single == 4 ]] ||
  { tail -20 "$WORK/single.log" >&2; fail "the single-node run exited $rc_single"; }

python3 - "$OUT" "$N1" "$N2" "$WORK/ranks" \
  "$(ip netns exec "$N1" readlink /proc/self/ns/net)" \
  "$(ip netns exec "$N2" readlink /proc/self/ns/net)" "$(readlink /proc/self/ns/net)" \
  "$((tx2_after - tx2_before))" "$((rx1_after - rx1_before))" "$((tx1_after - tx1_before))" <<'EOF'
import json, os, sys

out, n1, n2, ranks_dir, ns1, ns2, host_ns = sys.argv[1:8]
tx2, rx1, tx1 = (int(x) for x in sys.argv[8:11])
errors = []

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        errors.append(what)

run = json.load(open(os.path.join(out, "run.json")))
env_hosts = [e["host"] for e in run["env"]]
check(run["world_size"] == 2, f"run.json world_size == 2 (got {run['world_size']})")
check(sorted(env_hosts) == sorted([n1, n2]), f"run.json env hosts == {{{n1}, {n2}}} (got {env_hosts})")
check(sorted(run["hosts"]) == sorted([n1, n2]), f"run.json hosts == {{{n1}, {n2}}} (got {run['hosts']})")

lines = [l for l in open(os.path.join(out, "records.jsonl"), "rb").read().split(b"\n") if l]
records = [json.loads(l) for l in lines]
ok_hosts = {r["scope"].get("host") for r in records if r["status"] == "ok"}
check({n1, n2} <= ok_hosts, f"ok records from both hosts (ok hosts: {sorted(h for h in ok_hosts if h)})")
mb = [r["scope"].get("host") for r in records
      if r["benchmark"] == "compute.memory_bandwidth" and r["status"] == "ok"]
check(mb.count(n1) > 0 and mb.count(n1) == mb.count(n2),
      f"compute.memory_bandwidth ok records per node: {n1} {mb.count(n1)}, {n2} {mb.count(n2)}")

# Each rank's namespace, as the rank itself saw it before exec'ing clusterbench.
seen = {}
for name in sorted(os.listdir(ranks_dir)):
    host, ns = open(os.path.join(ranks_dir, name)).read().split()
    seen[host] = ns
check(seen.get(n1) == ns1 and seen.get(n2) == ns2,
      f"rank on {n1} in {ns1}, rank on {n2} in {ns2} (ranks saw {seen})")
check(len({ns1, ns2, host_ns}) == 3, f"namespaces differ from each other and the host's {host_ns}")

# Bytes node 2 had to send to rank 0: its EnvRecord (compact JSON, as gathered) and each record
# line of its own (gathered as JSON text and written as received).
env2 = [e for e in run["env"] if e["host"] == n2][0]
env2_bytes = len(json.dumps(env2, separators=(",", ":"), ensure_ascii=False).encode())
rec2 = [l for l, r in zip(lines, records) if r["scope"].get("host") == n2]
rec2_bytes = sum(len(l) for l in rec2)
need = env2_bytes + rec2_bytes
print(f"{n2} EnvRecord {env2_bytes} B + {len(rec2)} record lines {rec2_bytes} B = {need} B")
print(f"veth counters during the run: {n2} tx {tx2} B, {n1} rx {rx1} B, {n1} tx {tx1} B")
check(tx2 >= need, f"{n2} tx bytes {tx2} >= {need}")
check(rx1 >= need, f"{n1} rx bytes {rx1} >= {need}")

# The veth that carried the run is in each EnvRecord as a virtual interface (no link rate), and
# the NCCL interface row counts it; it is no physical NIC for the rate row.
for e in run["env"]:
    veths = [n for n in e["nics"] if n["kind"] == "veth"]
    check(len(veths) == 1 and veths[0]["virtual"] is True and veths[0]["rate_gbps"] is None
          and veths[0]["state"] == "up",
          f"{e['host']}: one veth, virtual, rate null, up (nics: {[(n['name'], n['kind']) for n in e['nics']]})")
rep = json.load(open(os.path.join(out, "report.json")))
rows = {r["id"]: r for r in rep["rows"]}
nccl = rows["net.nccl_socket_ifname_up"]
check(nccl["outcome"] == "PASS", f"net.nccl_socket_ifname_up PASS (got {nccl['outcome']}: {nccl['message']})")
check(sorted(i["item"] for i in nccl["items"]) == sorted([n1, n2])
      and all(i["outcome"] == "PASS" and i["value"] >= 1 for i in nccl["items"]),
      f"net.nccl_socket_ifname_up: both nodes PASS with >= 1 interface up ({nccl['items']})")
rate = rows["host.network_rate"]
check(rate["outcome"] == "MISSING" and "no physical NIC is visible here, only to" in rate["message"],
      f"host.network_rate does not judge the veth, and says the NICs are hidden (got {rate['outcome']}: {rate['message']})")
ports = rows["net.ports_active_at_rate"]
check(ports["outcome"] == "MISSING" and "no physical NIC is visible here" in ports["message"],
      f"net.ports_active_at_rate MISSING, not FAIL at 0 (got {ports['outcome']}: {ports['message']})")

# Every FAIL of the netns cluster also FAILs on one node (the rows judged on both).
single = {r["id"]: r for r in json.load(open(os.path.join(out, "..", "single", "report.json")))["rows"]}
fails = sorted(i for i, r in rows.items() if r["outcome"] == "FAIL")
print("FAIL rows, netns cluster:", fails)
print("FAIL rows, one node:", sorted(i for i, r in single.items() if r["outcome"] == "FAIL"))
only_netns = [f"{i} ({rows[i]['message'][:120]})" for i in fails
              if i in single and single[i]["outcome"] != "FAIL"]
check(not only_netns, f"no row FAILs on the netns cluster that passes on one node: {only_netns}")
sys.exit(1 if errors else 0)
EOF
echo "PASS netns_two_node"
