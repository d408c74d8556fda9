#!/usr/bin/env bash
# network_tune: scripts/tune.sh check|apply|revert. Part 1 on a fake /proc + /sys tree (--root):
# governor, hugepages (a small count) and net sysctls change as asked, only the named ones, and
# revert leaves every file byte-identical. Part 2 for real inside a network namespace of its own
# (tcp_*mem are per namespace; net.core.*mem_max are read-only there on this kernel): applied there, the host's
# values are untouched, and revert restores the namespace's exact values. Never touches the host's
# global settings. Budget: < 10 s.
set -euo pipefail
fail() {
  echo "FAIL network_tune: $*" >&2
  exit 1
}
SRC=${CB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TUNE=$SRC/scripts/tune.sh
WORK=$(mktemp -d /tmp/network_tune.XXXXXX)
NS=cbtune$$
cleanup() {
  local rc=$?
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT

# --- Part 1: fake tree -------------------------------------------------------------------------
R=$WORK/root
mkdir -p "$R/proc/sys/vm" "$R/proc/sys/net/core" "$R/proc/sys/net/ipv4"
for c in 0 1; do
  mkdir -p "$R/sys/devices/system/cpu/cpu$c/cpufreq"
  echo powersave >"$R/sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor"
done
echo 0 >"$R/proc/sys/vm/nr_hugepages"
echo 212992 >"$R/proc/sys/net/core/rmem_max"
echo 212992 >"$R/proc/sys/net/core/wmem_max"
printf '4096\t131072\t6291456\n' >"$R/proc/sys/net/ipv4/tcp_rmem"
printf '4096\t16384\t4194304\n' >"$R/proc/sys/net/ipv4/tcp_wmem"
cp -a "$R" "$WORK/before"
B=$WORK/backup

out=$("$TUNE" check --root "$R") && fail "check of an untuned tree exited 0"
echo "$out"
[[ $(grep -c ' no$' <<<"$out") == 7 ]] || fail "check: expected 7 non-complying lines (2 CPUs + 5)"
grep -q '^vm.nr_hugepages *0 *8192 *no$' <<<"$out" || fail "check: hugepages line"

"$TUNE" apply --root "$R" --backup "$B" && fail "apply without --yes must refuse"
diff -r "$WORK/before" "$R" >/dev/null || fail "a refused apply changed something"
[[ ! -e $B ]] || fail "a refused apply wrote a backup"

"$TUNE" apply --yes --root "$R" --backup "$B" --only vm.nr_hugepages --hugepages 4
[[ $(cat "$R/proc/sys/vm/nr_hugepages") == 4 ]] || fail "hugepages not set to 4"
[[ $(grep -vc '^#' "$B") == 1 ]] || fail "backup should hold one setting: $(cat "$B")"
[[ $(cat "$R/proc/sys/net/core/rmem_max") == 212992 ]] || fail "--only changed rmem_max"
"$TUNE" apply --yes --root "$R" --backup "$B" && fail "a second apply over a backup must refuse"
"$TUNE" revert --root "$R" --backup "$B"
diff -r "$WORK/before" "$R" || fail "revert did not restore the tree exactly"

"$TUNE" apply --yes --root "$R" --backup "$B" --hugepages 4
out=$("$TUNE" check --root "$R" --hugepages 4) || fail "check after apply should comply: $out"
[[ $(cat "$R/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor") == performance ]] ||
  fail "governor not applied"
[[ $(cat "$R/proc/sys/net/ipv4/tcp_wmem") == "4096 65536 2147483647" ]] || fail "tcp_wmem"
[[ $(grep -vc '^#' "$B") == 7 ]] || fail "backup should hold 7 values"
"$TUNE" revert --root "$R" --backup "$B"
diff -r "$WORK/before" "$R" || fail "full revert did not restore the tree exactly"
[[ ! -e $B ]] || fail "revert should remove the backup"
echo "ok   fake tree: check, refused apply, --only, apply, revert byte-identical"

# --- Part 2: a real network namespace ----------------------------------------------------------
if [[ $(id -u) -ne 0 ]] || ! ip netns add "$NS" 2>/dev/null; then
  echo "SKIP network_tune part 2: cannot create a network namespace"
  exit 0
fi
# tcp_[rw]mem are per namespace; net.core.[rw]mem_max are global here (read-only inside one).
NET="net.ipv4.tcp_rmem,net.ipv4.tcp_wmem"
snap() { for f in core/rmem_max core/wmem_max ipv4/tcp_rmem ipv4/tcp_wmem; do
  printf '%s=%s\n' "$f" "$(cat /proc/sys/net/$f)"
done; }
host_before=$(snap)
ns_before=$(ip netns exec "$NS" bash -c "$(declare -f snap); snap")
ip netns exec "$NS" "$TUNE" apply --yes --only "$NET" --backup "$B"
ns_applied=$(ip netns exec "$NS" bash -c "$(declare -f snap); snap")
[[ $(snap) == "$host_before" ]] || fail "applying in $NS changed the host's values"
grep -qP '^ipv4/tcp_rmem=4096\t87380\t2147483647$' <<<"$ns_applied" || fail "tcp_rmem in $NS"
grep -qP '^ipv4/tcp_wmem=4096\t65536\t2147483647$' <<<"$ns_applied" || fail "tcp_wmem in $NS"
# Revert outside the namespace apply ran in: refused (exit 2), the backup kept, nothing written.
set +e
err=$("$TUNE" revert --backup "$B" 2>&1)
rc=$?
set -e
[[ $rc == 2 ]] || fail "revert in another namespace: expected exit 2, got $rc: $err"
grep -q 'refused: .* was written by apply on host=.* netns=net:\[' <<<"$err" || fail "text: $err"
[[ -e $B ]] || fail "a refused revert removed the backup"
[[ $(snap) == "$host_before" ]] || fail "a refused revert changed the host's values"
[[ $(ip netns exec "$NS" bash -c "$(declare -f snap); snap") == "$ns_applied" ]] ||
  fail "a refused revert changed $NS's values"
ip netns exec "$NS" "$TUNE" revert --backup "$B"
[[ $(ip netns exec "$NS" bash -c "$(declare -f snap); snap") == "$ns_before" ]] ||
  fail "revert in $NS did not restore its values"
# rmem_max inside the namespace: apply reports it cannot write (exit 2); revert has nothing to do.
set +e
err=$(ip netns exec "$NS" "$TUNE" apply --yes --only net.core.rmem_max --backup "$B" 2>&1)
rc=$?
set -e
if [[ $rc == 2 ]]; then
  grep -q 'cannot write /proc/sys/net/core/rmem_max' <<<"$err" || fail "apply error text: $err"
fi
ip netns exec "$NS" "$TUNE" revert --backup "$B"
[[ $(ip netns exec "$NS" bash -c "$(declare -f snap); snap") == "$ns_before" ]] ||
  fail "revert of rmem_max in $NS did not restore its value"
[[ $(snap) == "$host_before" ]] || fail "the host's values changed"
echo "ok   namespace $NS: applied there only, revert elsewhere refused, reverted exactly"
echo "PASS network_tune"
