#!/usr/bin/env bash
# Storage tiers on one node (io.tiers, docs/fio.md "Storage tiers"), in a mount namespace of the
# test's own: a "hot" tier on a tmpfs mounted at its path, a "warm" tier that is a directory on
# the root disk (the table allows it: mount_point false), a "cold" tier given as an object-storage
# URL. Asserts each record against statvfs and fio's own repetitions, the rows against their
# records (capacity = the statvfs sum, the cold rows WAIVED as not measured), then: a tier path
# that is an empty directory or missing FAILs its mounted row naming the node; the seed table
# alone waives every tier and lists the root disk as a filesystem on no tier, not judged; bad
# tier paths are exit 2 naming the key or the file. Budget: about 40 s.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || fail "needs root (a mount namespace with a tmpfs)"
for tool in unshare mount fio python3; do
  command -v "$tool" >/dev/null || fail "'$tool' is not installed (scripts/setup.sh installs it)"
done
W=$(mktemp -d /var/tmp/io_tiers.XXXXXX)
trap 'rm -rf "$TMP" "$W"' EXIT
mkdir -p "$W/hot" "$W/warm" "$W/empty"
cat >"$W/table.json" <<EOF
{"schema": "clusterbench.spec/4", "name": "tiers-test", "extends": "$SPECS/cpu-node.json",
 "requirements": [],
 "tiers": {"hot": {"path": "$W/hot"},
           "warm": {"path": "$W/warm", "mount_point": false},
           "cold": {"path": "s3://archive/cluster"}}}
EOF
FAST=(--suite ci --only io.tiers --set io.tiers.repeat=2 --set io.tiers.size=8M
  --set io.tiers.runtime=200ms --set io.tiers.ramp=100ms)

# runs clusterbench ARGS in a private mount namespace with the hot tmpfs mounted; exit code in
# $W/NAME.rc, output in $W/NAME.log, statvfs of hot and warm in $W/NAME.statvfs.
run_in_ns() {
  local name=$1
  shift
  unshare --mount --propagation private bash -c '
    w=$1 name=$2; shift 2
    mount -t tmpfs -o size=192m cbtier-hot "$w/hot" || exit 97
    "$@" >"$w/$name.log" 2>&1
    echo $? >"$w/$name.rc"
    python3 -c "import os, sys, json
print(json.dumps({p: [os.statvfs(p).f_blocks * os.statvfs(p).f_frsize,
                      os.stat(p).st_dev] for p in sys.argv[1:]}))" "$w/hot" "$w/warm" >"$w/$name.statvfs"
  ' ns "$W" "$name" "$@" || fail "the mount namespace could not be set up"
  [ -f "$W/$name.rc" ] || fail "$name: no exit code"
}

# 1. The three tiers from the table.
# The run's output lies in the warm tier: its own records writer is no "other writer" there.
run_in_ns tiers "$CB_BIN" run "${FAST[@]}" --spec "$W/table.json" --out "$W/warm/run"
rc=$(cat "$W/tiers.rc")
[[ $rc == 0 || $rc == 1 ]] || { cat "$W/tiers.log"; fail "run with tiers exited $rc"; }
py '
out, w = sys.argv[1], sys.argv[2]
st = json.load(open(w + "/tiers.statvfs"))
recs = {r["params"]["tier"]: r for r in map(json.loads, open(out + "/records.jsonl"))}
host = recs["hot"]["scope"]["host"]
def metric(r, name):
    return {m["name"]: m for m in r["metrics"]}.get(name)
hot = recs["hot"]
assert hot["status"] == "ok", hot
t = hot["extra"]["tier"]
assert metric(hot, "mounted")["value"] == 1, hot["metrics"]
cap = st[w + "/hot"][0] / 1e12
assert abs(metric(hot, "capacity_tb")["value"] - cap) < 1e-12 * max(cap, 1), (metric(hot, "capacity_tb"), cap)
assert t["fs_type"] == "tmpfs" and t["source"] == "cbtier-hot" and t["media"] == "memory (tmpfs)", t
major, minor = os.major(st[w + "/hot"][1]), os.minor(st[w + "/hot"][1])
assert t["filesystem_id"] == f"local:{host}:{major}:{minor}", (t["filesystem_id"], major, minor)
assert t["origin"] == "spec table tiers.hot", t["origin"]
for name in ("seq_read_bw", "seq_write_bw", "checkpoint_write_bw"):
    m = metric(hot, name)
    assert m and m["unit"] == "GB/s" and len(m["reps"]) == 2, (name, m)
    reps = sorted(m["reps"])
    assert abs(m["value"] - (reps[0] + reps[1]) / 2) < 1e-9 and m["value"] > 0, (name, m)
assert [f["profile"] for f in hot["extra"]["fio"]] == ["seq_read", "seq_write", "checkpoint_write"]
assert all(len(f["fio_exit_code"]) == 2 for f in hot["extra"]["fio"]), hot["extra"]["fio"]
assert os.listdir(w + "/warm") == ["run"], ("fio left files in the warm tier", os.listdir(w + "/warm"))
warm = recs["warm"]
tw = warm["extra"]["tier"]
assert metric(warm, "mounted")["value"] == 1 and tw["mount_point"] != w + "/warm", tw
wcap = st[w + "/warm"][0] / 1e12
assert abs(metric(warm, "capacity_tb")["value"] - wcap) < 1e-9 * wcap, (metric(warm, "capacity_tb"), wcap)
assert metric(warm, "seq_write_bw") and metric(warm, "seq_write_bw")["value"] > 0, warm["extra"]["unmeasured"]
cold = recs["cold"]
assert cold["status"] == "waived" and "object storage (s3://archive/cluster): not measured" in cold["message"], cold
un = recs["unlabelled"]
points = [f["mount_point"] for f in un["extra"]["filesystems"]]
assert tw["mount_point"] not in points, ("the warm tier s filesystem listed as unlabelled", points)
rows = {r["id"]: r for r in json.load(open(out + "/report.json"))["rows"]}
def row(i): return rows[i]["outcome"], rows[i]["value"], rows[i]["message"]
assert row("storage.tier_hot_mounted")[0] == "PASS", row("storage.tier_hot_mounted")
o, v, msg = row("storage.tier_hot_capacity")
assert o == "FAIL" and abs(v - cap) < 1e-12 and "tmpfs from cbtier-hot, memory (tmpfs), local: summed over nodes" in msg, (o, v, msg)
o, v, msg = row("storage.tier_warm_capacity")
assert o == "FAIL" and abs(v - wcap) < 1e-9 * wcap, (o, v, msg)
o, v, msg = row("storage.tier_hot_read")
assert o in ("PASS", "WARN") and abs(v - metric(hot, "seq_read_bw")["value"]) < 1e-9, (o, v, msg)
for r in ("storage.tier_cold_mounted", "storage.tier_cold_capacity", "storage.tier_cold_read"):
    assert row(r)[0] == "WAIVED" and "object storage" in row(r)[2], row(r)
md = open(out + "/report.md").read()
assert "hot " + w + "/hot on " + host + ": tmpfs on " + w + "/hot from cbtier-hot" in md
' "$W/warm/run" "$W"
ok "hot, warm and cold tiers: records against statvfs and fio, rows against records"

# 2. A tier path that is an empty directory on / or does not exist: its mounted row FAILs.
run_in_ns gone "$CB_BIN" run "${FAST[@]}" --spec "$W/table.json" --set io.tiers.profiles=seq_read \
  --set io.tiers.hot="$W/empty" --set io.tiers.warm="$W/nowhere" --out "$W/gone"
[ "$(cat "$W/gone.rc")" = 1 ] || { cat "$W/gone.log"; fail "missing tiers: exit $(cat "$W/gone.rc")"; }
py '
out, w = sys.argv[1], sys.argv[2]
rows = {r["id"]: r for r in json.load(open(out + "/report.json"))["rows"]}
host = json.load(open(out + "/run.json"))["hosts"][0]
r = rows["storage.tier_hot_mounted"]
assert r["outcome"] == "FAIL" and r["message"].startswith("0 on " + host + " (expected 1); hot " + w + "/empty on " + host + ": not mounted: " + w + "/empty is a directory on "), r["message"]
assert "not a mount point of its own" in r["message"], r["message"]
r = rows["storage.tier_warm_mounted"]
assert r["outcome"] == "FAIL" and (w + "/nowhere does not exist") in r["message"] and host in r["message"], r["message"]
r = rows["storage.tier_hot_read"]
assert r["outcome"] == "MISSING" and "has no metric" in r["message"] and "not mounted" in r["message"], r
assert os.listdir(w + "/empty") == [], "fio wrote into a tier that is not mounted"
' "$W/gone" "$W"
ok "an unmounted or missing tier FAILs its mounted row, naming the node"

# 3. The seed table names no path: every tier is waived, the root disk is listed, not judged.
expect_rc 1 "$CB_BIN" run "${FAST[@]}" --out "$W/seed"
py '
out = sys.argv[1]
recs = {r["params"]["tier"]: r for r in map(json.loads, open(out + "/records.jsonl"))}
for t in ("hot", "warm", "cold"):
    assert recs[t]["status"] == "waived" and "no path for storage tier " + t in recs[t]["message"], recs[t]
un = recs["unlabelled"]
assert un["status"] == "ok" and "/" in [f["mount_point"] for f in un["extra"]["filesystems"]], un
assert "filesystems on no declared tier (listed, not judged): / (" in un["message"], un["message"]
rows = {r["id"]: r for r in json.load(open(out + "/report.json"))["rows"]}
assert rows["storage.tier_hot_capacity"]["outcome"] == "WAIVED", rows["storage.tier_hot_capacity"]
' "$W/seed"
ok "the seed table alone: tiers waived, the root disk listed and not judged"

# 4. Bad tier paths.
expect_rc 2 "$CB_BIN" run "${FAST[@]}" --set io.tiers.hot=mnt/hot --out "$W/bad1"
expect_out "set io.tiers.hot: 'mnt/hot' is neither an absolute path nor an object-storage URL"
sed 's/"cold"/"lukewarm"/' "$W/table.json" >"$W/bad.json"
expect_rc 2 "$CB_BIN" run "${FAST[@]}" --spec "$W/bad.json" --out "$W/bad2"
expect_out "bad.json: tiers: 'lukewarm' is not a tier \(hot, warm or cold\)"
ok "bad tier paths and names are exit 2 naming the key or file"
# 5. A frozen tier (fsfreeze on a loop-mounted ext4): the probe does not answer, the run goes on
# and ends in time, the tier is unknown (MISSING with the reason), never "not mounted".
for t in fsfreeze mkfs.ext4 losetup; do
  command -v $t >/dev/null || fail "$t not installed (scripts/setup.sh installs it)"
done
mkdir -p "$W/frz"
truncate -s 32M "$W/frz.img"
mkfs.ext4 -q -F "$W/frz.img" || fail "mkfs.ext4"
mount -o loop "$W/frz.img" "$W/frz" || fail "cannot loop-mount an image"
trap 'fsfreeze -u "$W/frz" 2>/dev/null; sleep 0.3; umount "$W/frz" 2>/dev/null; rm -rf "$TMP" "$W"' EXIT
fsfreeze -f "$W/frz" || fail "fsfreeze"
start=$(date +%s)
timeout 120 "$CB_BIN" run "${FAST[@]}" --set io.tiers.hot="$W/frz" --set io.tiers.profiles=seq_read \
  --out "$W/frozen" >"$W/frozen.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
fsfreeze -u "$W/frz"
[ "$rc" = 1 ] || { cat "$W/frozen.log"; fail "frozen tier: exit $rc after $took s"; }
((took < 60)) || fail "frozen tier: the run took $took s"
py '
out, w = sys.argv[1], sys.argv[2]
recs = {r["params"]["tier"]: r for r in map(json.loads, open(out + "/records.jsonl"))}
hot = recs["hot"]
assert hot["status"] == "ok" and hot["metrics"] == [], hot["metrics"]
why = hot["extra"]["unmeasured"]
assert "did not answer within 10 s" in why["mounted"] and why["capacity_tb"] == why["mounted"], why
rows = {r["id"]: r for r in json.load(open(out + "/report.json"))["rows"]}
r = rows["storage.tier_hot_mounted"]
assert r["outcome"] == "MISSING" and "did not answer within 10 s" in r["message"], r["message"]
assert [d for d in os.listdir(w + "/frz") if d.startswith("cb-") or d.startswith(".cb-")] == [], os.listdir(w + "/frz")
' "$W/frozen" "$W"
ok "a frozen tier: the run ends in $took s, the tier unknown with the reason"
echo "PASS io_tiers ($PASSES checks)"
