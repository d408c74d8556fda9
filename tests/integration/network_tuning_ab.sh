#!/usr/bin/env bash
# network_tuning_ab: network.tuning for real, inside a network namespace of its own so that the
# TCP buffer A/B changes only that namespace's net.ipv4.tcp_[rw]mem. Asserts: thp_madvise and
# tcp_buffers are ok with a `ratio` metric, >= 5 alternating repeats per side and both sides'
# settings recorded (THP really backs side B: AnonHugePages > 0); the namespace's and the host's
# tcp_rmem/tcp_wmem are as before; governor is waived (no cpufreq driver here) with that reason;
# hugetlb with allow_changes reserves a small pool (128 pages: the ci suite's 256 MiB) for the
# case, measures MAP_HUGETLB against 4 KiB pages and restores vm.nr_hugepages (checked below; the
# test holds the sysctl lock); without allow_changes, tcp_buffers is waived naming the knob, and
# hugetlb is waived unless a pool is already reserved. Budget: < 30 s.
set -euo pipefail
skip() {
  echo "SKIP network_tuning_ab: $*"
  exit 77
}
fail() {
  echo "FAIL network_tuning_ab: $*" >&2
  exit 1
}
: "${CB_BIN:?CB_BIN must name the clusterbench binary}"
[[ $(id -u) -eq 0 ]] || skip "needs root for a network namespace"
NS=cbtab$$
ip netns add "$NS" 2>/dev/null || skip "cannot create a network namespace"
WORK=$(mktemp -d /tmp/network_tuning_ab.XXXXXX)
cleanup() {
  local rc=$?
  ip netns del "$NS" 2>/dev/null || true
  if ((rc == 0)); then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
  exit $rc
}
trap cleanup EXIT
ip netns exec "$NS" ip link set lo up
snap() { cat /proc/sys/net/ipv4/tcp_rmem /proc/sys/net/ipv4/tcp_wmem /proc/sys/vm/nr_hugepages; }
host_before=$(snap)
ns_before=$(ip netns exec "$NS" bash -c "$(declare -f snap); snap")

set +e
ip netns exec "$NS" "$CB_BIN" run --suite ci --only network.tuning \
  --set network.tuning.allow_changes=true \
  --set network.tuning.effects=thp_madvise,hugetlb,tcp_buffers,governor --out "$WORK/allow" >"$WORK/allow.log" 2>&1
rc1=$?
"$CB_BIN" run --suite ci --only network.tuning --set network.tuning.effects=tcp_buffers,hugetlb \
  --out "$WORK/deny" >"$WORK/deny.log" 2>&1
rc2=$?
set -e
[[ $rc1 == 0 || $rc1 == 1 || $rc1 == 4 ]] || fail "run with allow_changes exited $rc1: $(tail "$WORK/allow.log")"
[[ $rc2 == 0 || $rc2 == 1 || $rc2 == 4 ]] || fail "run without allow_changes exited $rc2"
[[ $(snap) == "$host_before" ]] || fail "host settings changed"
[[ $(ip netns exec "$NS" bash -c "$(declare -f snap); snap") == "$ns_before" ]] ||
  fail "the namespace's tcp_rmem/tcp_wmem were not restored"

python3 - "$WORK" "$(grep HugePages_Free /proc/meminfo | awk '{print $2}')" <<'PY'
import json, os, statistics, sys
work, free_pages = sys.argv[1], int(sys.argv[2])
errors = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        errors.append(what)
def records(d):
    return {r["params"]["effect"]: r for r in
            (json.loads(l) for l in open(os.path.join(work, d, "records.jsonl")) if l.strip())}
allow = records("allow")
for eff in ("thp_madvise", "hugetlb", "tcp_buffers"):
    r = allow[eff]
    check(r["status"] == "ok", f"{eff}: ok ({r.get('message', '')})")
    if r["status"] != "ok":
        continue
    m = {x["name"]: x for x in r["metrics"]}
    a, b = r["extra"]["a"]["seconds_per_op"], r["extra"]["b"]["seconds_per_op"]
    check(len(a) >= 5 and len(a) == len(b), f"{eff}: {len(a)} alternating repeats per side")
    ratios = [x / y for x, y in zip(a, b)]
    check(abs(m["ratio"]["value"] - statistics.median(ratios)) < 1e-9 and m["ratio"]["unit"] == "ratio",
          f"{eff}: ratio {m['ratio']['value']:.3f} = median of t_A/t_B")
    check(all(abs(x - y) <= 1e-12 * y for x, y in zip(m["ratio"]["reps"], ratios)) and
          len(m["ratio"]["reps"]) == len(ratios), f"{eff}: the ratio's repetitions are t_A/t_B per repeat")
    check(r["extra"]["a"]["setting"] != r["extra"]["b"]["setting"], f"{eff}: both settings recorded")
    print(f"     {eff}: ratio {m['ratio']['value']:.3f}, spread {m['ratio_spread']['value']:.3f}, "
          f"A {r['extra']['a']['setting']}, B {r['extra']['b']['setting']}")
if allow["thp_madvise"]["status"] == "ok":  # gbench.json: one entry per arm and repeat
    names = [b["name"] for b in json.load(open(os.path.join(work, "allow", "gbench.json")))["benchmarks"]
             if '"thp_madvise"' in b["name"]]
    n = len(allow["thp_madvise"]["extra"]["a"]["seconds_per_op"])
    check(len(names) == len(set(names)) == 2 * n and any("/B/repeat:%d/" % n in x for x in names),
          f"gbench.json: {len(names)} distinct thp_madvise entries, A and B per repeat")
hb = allow["hugetlb"]
if hb["status"] == "ok":
    check(hb["extra"]["b"]["setting"]["pages"].startswith("2 MiB"), "hugetlb: side B is MAP_HUGETLB")
if allow["thp_madvise"]["status"] == "ok":
    check(allow["thp_madvise"]["extra"]["b"]["setting"]["anon_huge_bytes"] > 0,
          "thp_madvise: side B is backed by transparent hugepages")
tb = allow["tcp_buffers"]
if tb["status"] == "ok":
    check(tb["extra"]["b"]["setting"]["tcp_rmem"] == "4096 87380 2147483647", "tcp_buffers: B is the seed's")
gov = allow["governor"]
if not os.path.exists("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"):
    check(gov["status"] == "waived" and "no cpufreq driver" in gov["message"], "governor waived: no cpufreq")
deny = records("deny")
check(deny["tcp_buffers"]["status"] == "waived" and "allow_changes=true" in deny["tcp_buffers"]["message"],
      "tcp_buffers without allow_changes: waived naming the knob")
if free_pages == 0:
    check(deny["hugetlb"]["status"] == "waived" and "free 2 MiB hugepages" in deny["hugetlb"]["message"],
          f"hugetlb without a pool: waived ({deny['hugetlb']['message']})")
sys.exit(1 if errors else 0)
PY
echo "PASS network_tuning_ab"
