#!/usr/bin/env bash
# No shared filesystem needed: two "nodes" (network namespaces, scripts/netns-cluster.sh), one rank
# each. Each node has its own private temporary directory (TMPDIR and working directory), and
# node 2's rank runs in a mount namespace of its own where the results path is an empty tmpfs:
# whatever it wrote there would stay invisible to node 1. Asserts: node 1's run directory is
# complete (run.json finished, EnvRecords and records of both nodes, the report) and `report`
# works on it; node 2's results path, TMPDIR and working directory hold nothing afterwards, while
# its records show it used its private TMPDIR for fio scratch. Budget: ~60 s; skips without root.
set -uo pipefail
skip() { echo "SKIP ops_netns_private: $*"; exit 77; }
fail() { echo "FAIL ops_netns_private: $*" >&2; exit 1; }
: "${CB_BIN:?CB_BIN must name the clusterbench binary}"
SRC=${CB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CLUSTER=$SRC/scripts/netns-cluster.sh
[[ ${CB_HAVE_MPI:-1} =~ ^(1|ON|TRUE|true)$ ]] || skip "clusterbench was built without MPI"
[[ $(id -u) -eq 0 ]] || skip "needs root (network and mount namespaces)"
for tool in ip unshare mpirun python3 mount; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed"
done
probe=cbOprobe$$
err=$(ip netns add "$probe" 2>&1) || skip "cannot create a network namespace: $err"
ip netns del "$probe"
unshare --mount --propagation private mount -t tmpfs cbprobe /mnt 2>/dev/null ||
  skip "cannot mount a tmpfs in a private mount namespace"

export CB_NETNS_PREFIX=cbO$$n
WORK=$(mktemp -d /var/tmp/ops_netns_private.XXXXXX)
export CB_NETNS_STATE=$WORK/cluster/state
N1=${CB_NETNS_PREFIX}1
N2=${CB_NETNS_PREFIX}2
RESULTS=$WORK/results   # node 1's results filesystem; node 2 sees an empty tmpfs here
mkdir -p "$RESULTS" "$WORK/node1/tmp" "$WORK/node1/cwd" "$WORK/node2/tmp" "$WORK/node2/cwd"
cleanup() {
  local rc=$?
  "$CLUSTER" down >/dev/null 2>&1 || "$CLUSTER" down || true
  if ip netns list | grep -qE "^${CB_NETNS_PREFIX}[0-9]+( |\$)"; then
    echo "ops_netns_private: namespaces left behind" >&2
    rc=1
  fi
  if ((rc == 0)); then rm -rf "$WORK"; else echo "ops_netns_private: kept $WORK" >&2; fi
  exit $rc
}
trap cleanup EXIT

# Each rank: its node's private TMPDIR and working directory; rank 1 also a private results path.
cat >"$WORK/rank.sh" <<'R'
#!/usr/bin/env bash
work=$1 results=$2
shift 2
node=node$((OMPI_COMM_WORLD_RANK + 1))
export TMPDIR=$work/$node/tmp
cd "$work/$node/cwd" || exit 96
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec "$@"; fi
exec unshare --mount --propagation private bash -c '
  work=$1 results=$2; shift 2
  mount -t tmpfs -o size=64m cbprivate "$results" || exit 97
  stat -f -c %T "$results" >"$work/rank1.fstype"
  "$@"
  rc=$?
  find "$results" "$TMPDIR" "$PWD" -mindepth 1 >"$work/rank1.left" 2>&1
  exit $rc' rank1 "$work" "$results" "$@"
R
chmod +x "$WORK/rank.sh"

"$CLUSTER" up 2 >/dev/null || fail "netns-cluster up failed"
timeout 300 "$CLUSTER" mpirun -np 2 --map-by node "$WORK/rank.sh" "$WORK" "$RESULTS" \
  "$CB_BIN" run --suite ci --only compute.memory_bandwidth --only io.fio --only collectives.all_reduce \
  --set compute.memory_bandwidth.array_bytes=8M --set io.fio.profiles=seq_read \
  --set collectives.all_reduce.maxbytes=4K --out "$RESULTS/run" >"$WORK/run.log" 2>&1
rc=$?
echo "ops_netns_private: clusterbench exited $rc"
[[ $rc == 0 || $rc == 1 || $rc == 4 ]] || { cat "$WORK/run.log"; fail "run across namespaces exited $rc"; }
[ -f "$WORK/rank1.left" ] || { cat "$WORK/run.log"; fail "rank 1's wrapper did not finish"; }

"$CB_BIN" report "$RESULTS/run" >"$WORK/report.log" 2>&1
rrc=$?
[[ $rrc == "$rc" ]] || { cat "$WORK/report.log"; fail "report exited $rrc, the run $rc"; }

python3 - "$RESULTS/run" "$N1" "$N2" "$WORK" "$rc" <<'P' || fail "result directory checks"
import json, os, sys
out, n1, n2, work, rc = sys.argv[1:6]
errors = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: errors.append(what)
run = json.load(open(os.path.join(out, "run.json")))
check(run["world_size"] == 2 and sorted(run["hosts"]) == sorted([n1, n2]), f"run.json: 2 ranks on {n1}, {n2}")
check(sorted(e["host"] for e in run["env"]) == sorted([n1, n2]), "one EnvRecord per node")
check(bool(run["finished_at"]) and run["exit_code"] == int(rc) and not run["aborted"], "run.json completed with the exit code")
recs = [json.loads(l) for l in open(os.path.join(out, "records.jsonl"))]
planned = {k for pc in run["plan"] for k in pc["case_keys"]}
got = {r["case_key"] for r in recs}
check(planned <= got, f"every planned case has a record ({len(got & planned)}/{len(planned)})")
mb = sorted(r["scope"]["host"] for r in recs if r["benchmark"] == "compute.memory_bandwidth" and r["status"] == "ok")
check(mb.count(n1) == 4 and mb.count(n2) == 4, f"STREAM ok records per node: {mb.count(n1)}, {mb.count(n2)}")
fio = {r["scope"]["host"]: r for r in recs if r["benchmark"] == "io.fio"}
for host, node in ((n1, "node1"), (n2, "node2")):
    r = fio.get(host, {})
    check(r.get("status") == "ok" and r["extra"].get("scratch") == os.path.join(work, node, "tmp"),
          f"{host} ran fio in its private TMPDIR {work}/{node}/tmp (got {r.get('status')}, {r.get('extra', {}).get('scratch')})")
for f in ("report.md", "report.json", "gbench.json"):
    check(os.path.isfile(os.path.join(out, f)), f"{f} in the run directory")
fstype = open(os.path.join(work, "rank1.fstype")).read().strip()
check(fstype == "tmpfs", f"node 2 saw its own tmpfs at the results path (got {fstype})")
left = open(os.path.join(work, "rank1.left")).read().split()
check(left == [], f"node 2 left nothing in its results path, TMPDIR or working directory ({left[:5]})")
for node in ("node1", "node2"):
    for d in ("tmp", "cwd"):
        content = os.listdir(os.path.join(work, node, d))
        check(content == [], f"{node}/{d} empty after the run ({content[:5]})")
check(sorted(os.listdir(os.path.join(work, "results"))) == ["run"], "only the run directory in the results path")
sys.exit(1 if errors else 0)
P
echo "PASS ops_netns_private"
