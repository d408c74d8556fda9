#!/usr/bin/env bash
# The MPI backend's sweep across the netns 2-node cluster (scripts/netns-cluster.sh): one rank
# per "node", MPI over TCP on the veth pair. Every collective, float, 64 B .. 256 KiB x 64: every
# record ok with #wrong 0, 2 ranks on 2 nodes, busbw = S / t x factor; and the veth counters carry
# at least what the timed out-of-place sendrecv at 256 KiB alone had to send from node 2 to node 1
# (S x batch x iterations). Budget: about 60 s on 2 cores.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
for tool in ip unshare mpirun; do
  command -v "$tool" >/dev/null || { echo "SKIP: '$tool' is not installed"; exit 77; }
done
probe=cbcprobe$$
ip netns add "$probe" 2>/dev/null || { echo "SKIP: cannot create a network namespace"; exit 77; }
ip netns del "$probe"

CLUSTER=$CB_SOURCE_DIR/scripts/netns-cluster.sh
export CB_NETNS_PREFIX=cbc$$n
export CB_NETNS_STATE=$TMP/cluster.state
N1=${CB_NETNS_PREFIX}1
N2=${CB_NETNS_PREFIX}2
trap '"$CLUSTER" down >/dev/null 2>&1; rm -rf "$TMP"' EXIT
"$CLUSTER" up 2 >/dev/null || fail "netns-cluster.sh up 2"
IF2=$("$CLUSTER" link "$N2" "$N1")
tx2_before=$(ip netns exec "$N2" cat "/sys/class/net/$IF2/statistics/tx_bytes")

# A one-row table: all_reduce's #wrong is 0 (the host rows would judge this small machine).
cat >"$TMP/spec.json" <<'J'
{"schema": "clusterbench.spec/1", "name": "coll-netns", "requirements": [
 {"id": "coll.all_reduce_wrong", "title": "all_reduce #wrong", "source": "test",
  "severity": "fail", "select": {"benchmark": "collectives.all_reduce", "params": {},
  "metric": "wrong"}, "scope": "cluster", "aggregate": "max", "op": "==", "value": 0,
  "unit": "count"}]}
J
expect_rc 0 timeout 240 "$CLUSTER" mpirun -np 2 --map-by node "$CB_BIN" run --suite ci \
  --spec "$TMP/spec.json" --only 'collectives.*' \
  --set collectives.minbytes=64 --set collectives.maxbytes=256K --set collectives.stepfactor=64 \
  --set collectives.min_time=0.02 --out "$TMP/run"
tx2=$(( $(ip netns exec "$N2" cat "/sys/class/net/$IF2/statistics/tx_bytes") - tx2_before ))
py "
import math
d, n1, n2, tx2 = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
run = json.load(open(d + '/run.json'))
assert sorted(run['hosts']) == sorted([n1, n2]) and run['world_size'] == 2, run['hosts']
recs = [json.loads(l) for l in open(d + '/records.jsonl')]
assert len(recs) == 21, len(recs)
factor = {'all_reduce': 1.0, 'all_gather': 0.5, 'reduce_scatter': 0.5, 'alltoall': 0.5,
          'broadcast': 1, 'reduce': 1, 'sendrecv': 1}
for r in recs:
    op = r['benchmark'].split('.')[1]
    assert r['status'] == 'ok', r
    m = {x['name']: x['value'] for x in r['metrics']}
    e = r['extra']
    assert e['ranks'] == 2 and e['nodes'] == 2 and e['size_bytes'] == r['params']['bytes'], e
    assert m['wrong'] == 0 and m.get('wrong_inplace', 0) == 0, m
    want = e['size_bytes'] / r['time']['median'] / 1e9 * factor[op]
    assert math.isclose(m['busbw'], want, rel_tol=1e-9), (m['busbw'], want)
sr = [r for r in recs if r['benchmark'] == 'collectives.sendrecv' and r['params']['bytes'] == 262144][0]
need = 262144 * sr['extra']['batch'] * sr['time']['n']
print('node 2 sent %d B over the veth; the timed sendrecv at 256 KiB alone needs %d B' % (tx2, need))
assert tx2 >= need, (tx2, need)
" "$TMP/run" "$N1" "$N2" "$tx2"
ok "2 netns nodes: 21 collective cases ok, #wrong 0, busbw = S/t x factor, traffic on the veth"
echo "$PASSES passed, 0 failed"
