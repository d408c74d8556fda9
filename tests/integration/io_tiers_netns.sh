#!/usr/bin/env bash
# Storage tiers across two "nodes" (network namespaces, scripts/netns-cluster.sh), each rank in a
# mount namespace of its own: a local "hot" tmpfs per node (64 and 96 MiB: node 1's too small for fio, refused and said), a "warm" tmpfs shared
# by both (mounted before the ranks start; the table marks it shared), a "cold" tmpfs mounted on
# node 2 only. Asserts: hot's capacity row is the sum of the two nodes' tmpfs, warm's counts the
# shared one once (not twice), cold's mounted row FAILs naming node 1 and only node 1, and cold's
# capacity is node 2's alone. Budget: about 40 s.
set -uo pipefail
fail() { echo "FAIL io_tiers_netns: $*" >&2; exit 1; }
: "${CB_BIN:?CB_BIN must name the clusterbench binary}"
SRC=${CB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CLUSTER=$SRC/scripts/netns-cluster.sh
[[ ${CB_HAVE_MPI:-1} =~ ^(1|ON|TRUE|true)$ ]] || fail "clusterbench was built without MPI"
[[ $(id -u) -eq 0 ]] || fail "needs root (network and mount namespaces)"
for tool in ip unshare mpirun python3 mount umount fio; do
  command -v "$tool" >/dev/null || fail "'$tool' is not installed (scripts/setup.sh installs it)"
done

export CB_NETNS_PREFIX=cbT$$n
W=$(mktemp -d /var/tmp/io_tiers_netns.XXXXXX)
export CB_NETNS_STATE=$W/cluster/state
N1=${CB_NETNS_PREFIX}1
N2=${CB_NETNS_PREFIX}2
mkdir -p "$W/hot" "$W/warm" "$W/cold"
cleanup() {
  local rc=$?
  "$CLUSTER" down >/dev/null 2>&1 || "$CLUSTER" down || true
  mountpoint -q "$W/warm" && umount "$W/warm"
  if ip netns list | grep -qE "^${CB_NETNS_PREFIX}[0-9]+( |\$)"; then
    echo "io_tiers_netns: namespaces left behind" >&2
    rc=1
  fi
  if ((rc == 0)); then rm -rf "$W"; else echo "io_tiers_netns: kept $W" >&2; fi
  exit $rc
}
trap cleanup EXIT
mount -t tmpfs -o size=128m cbtier-shared "$W/warm" || fail "cannot mount the shared tmpfs"

cat >"$W/table.json" <<EOF
{"schema": "clusterbench.spec/4", "name": "tiers-netns", "extends": "$SRC/reports/specs/cpu-node.json",
 "requirements": [],
 "tiers": {"hot": {"path": "$W/hot"},
           "warm": {"path": "$W/warm", "shared": true},
           "cold": {"path": "$W/cold"}}}
EOF
# Each rank: a private mount namespace with its node's own hot tmpfs; node 2 also mounts cold.
cat >"$W/rank.sh" <<'R'
#!/usr/bin/env bash
w=$1
shift
node=$((OMPI_COMM_WORLD_RANK + 1))
exec unshare --mount --propagation private bash -c '
  w=$1 node=$2; shift 2
  mount -t tmpfs -o size=$((node == 1 ? 64 : 96))m cbtier-hot "$w/hot" || exit 97
  if [ "$node" = 2 ]; then mount -t tmpfs -o size=96m cbtier-cold "$w/cold" || exit 97; fi
  exec "$@"' rank "$w" "$node" "$@"
R
chmod +x "$W/rank.sh"

"$CLUSTER" up 2 >/dev/null || fail "netns-cluster up failed"
timeout 300 "$CLUSTER" mpirun -np 2 --map-by node "$W/rank.sh" "$W" \
  "$CB_BIN" run --suite ci --only io.tiers --spec "$W/table.json" --set io.tiers.profiles=seq_write \
  --set io.tiers.repeat=1 --set io.tiers.size=4M --set io.tiers.runtime=100ms \
  --set io.tiers.ramp=0 --out "$W/run" >"$W/run.log" 2>&1
rc=$?
[[ $rc == 1 ]] || { cat "$W/run.log"; fail "the run exited $rc, expected 1 (FAIL: cold missing on node 1)"; }

python3 - "$W/run" "$N1" "$N2" "$W" <<'P' || fail "tier checks"
import json, sys
out, n1, n2, w = sys.argv[1:5]
MiB = 1 << 20
errors = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: errors.append(what)
rows = {r["id"]: r for r in json.load(open(out + "/report.json"))["rows"]}
recs = [json.loads(l) for l in open(out + "/records.jsonl")]
tiers = {(r["scope"]["host"], r["params"]["tier"]): r for r in recs}
ids = {h: tiers[(h, "warm")]["extra"]["tier"]["filesystem_id"] for h in (n1, n2)}
check(ids[n1] == ids[n2] == "shared:tmpfs:cbtier-shared", f"warm: one filesystem id on both nodes {ids}")
hot_ids = {tiers[(h, "hot")]["extra"]["tier"]["filesystem_id"] for h in (n1, n2)}
check(len(hot_ids) == 2 and all(i.startswith("local:") for i in hot_ids), f"hot: each node its own {hot_ids}")
def row(i):
    return rows[i]["outcome"], rows[i]["value"], rows[i]["message"]
o, v, m = row("storage.tier_hot_capacity")
check(o == "FAIL" and abs(v - (64 + 96) * MiB / 1e12) < 1e-15, f"hot capacity = 64 + 96 MiB summed ({v}, {m})")
o, v, m = row("storage.tier_warm_capacity")
check(o == "FAIL" and abs(v - 128 * MiB / 1e12) < 1e-15 and "1 more record(s) of the same /extra/tier/filesystem_id counted once" in m,
      f"warm capacity = 128 MiB counted once ({v}, {m})")
o, v, m = row("storage.tier_cold_capacity")
check(abs(v - 96 * MiB / 1e12) < 1e-15, f"cold capacity = node 2's 96 MiB ({v}, {m})")
items = {it["item"]: it for it in rows["storage.tier_cold_mounted"]["items"]}
check(items[n1]["outcome"] == "FAIL" and n1 in items[n1]["message"] and "not a mount point of its own" in items[n1]["message"],
      f"cold not mounted on {n1}: FAIL naming it ({items[n1]['message']})")
check(items[n2]["outcome"] == "PASS", f"cold mounted on {n2}: PASS")
for t in ("hot", "warm"):
    check(rows[f"storage.tier_{t}_mounted"]["outcome"] == "PASS", f"{t} mounted on both nodes")
for h in (n1, n2):
    check(any(m["name"] == "seq_write_bw" and m["value"] > 0 for m in tiers[(h, "warm")]["metrics"]),
          f"fio ran on the shared warm tier from {h}")
# Node 1's 64 MiB hot tier cannot hold 4 x 4 MiB plus fio's 64 MiB margin: refused, and said.
why = tiers[(n1, "hot")]["extra"]["unmeasured"].get("seq_write_bw", "")
check("plus a 64 MiB margin" in why, f"hot on {n1}: fio refused for want of space ({why})")
items = {it["item"]: it for it in rows["storage.tier_hot_write"]["items"]}
check(items[n1]["outcome"] == "MISSING" and "plus a 64 MiB margin" in items[n1]["message"],
      f"hot write row on {n1}: MISSING with the refusal ({items[n1]['message']})")
check(items[n2]["outcome"] in ("PASS", "WARN"), f"hot write row on {n2}: judged ({items[n2]['outcome']})")
sys.exit(1 if errors else 0)
P
echo "PASS io_tiers_netns"
