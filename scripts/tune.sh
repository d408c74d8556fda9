#!/usr/bin/env bash
# tune.sh: the seed guide's host tuning (docs/design.md "Host tuning"), checked, applied and reverted.
#
#   tune.sh check  [--root DIR]                       each setting: current, recommended, complies
#   tune.sh apply  --yes [--only NAMES] [--hugepages N] [--backup FILE] [--root DIR]
#   tune.sh revert [--backup FILE] [--root DIR]
#
# Settings (NAMES is a comma list of these):
#   governor          /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor = performance
#   vm.nr_hugepages   /proc/sys/vm/nr_hugepages >= 8192 (--hugepages N recommends N instead)
#   net.core.rmem_max, net.core.wmem_max                >= 2147483647
#   net.ipv4.tcp_rmem = 4096 87380 2147483647;  net.ipv4.tcp_wmem = 4096 65536 2147483647
# `apply` needs --yes, writes the backup file (every named setting's current value) before it
# changes anything, refuses when a backup already exists (revert first), and changes only the
# named settings. `revert` writes back exactly what the backup holds, then removes it.
# The backup's first line records where apply ran (host and network namespace, the inode of
# /proc/self/ns/net): revert elsewhere is refused (exit 2) and the backup kept, since the values
# it would find there are another namespace's.
# net.ipv4.tcp_[rw]mem live per network namespace: run under `ip netns exec NS` to change only
# that namespace's. net.core.[rw]mem_max are global on this kernel (6.18): read-only inside a
# namespace, so apply there fails for them (exit 2) and revert finds them unchanged. --root DIR reads and writes DIR/proc, DIR/sys (tests).
# Exit: 0 ok (check: every setting complies or does not exist here), 1 check finds a setting
# that does not comply, 2 usage or a refused/failed change.
set -euo pipefail

ROOT=""
BACKUP=${CB_TUNE_BACKUP:-/var/lib/clusterbench/tune.backup}
ONLY=""
YES=0
HUGEPAGES=8192
ALL="governor vm.nr_hugepages net.core.rmem_max net.core.wmem_max net.ipv4.tcp_rmem net.ipv4.tcp_wmem"

die() {
  echo "tune.sh: $*" >&2
  exit 2
}

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }

# Paths of a setting (several for the governor: one per CPU).
paths() {
  case $1 in
    governor) compgen -G "$ROOT/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor" || true ;;
    vm.* | net.*) echo "$ROOT/proc/sys/${1//.//}" ;;
    *) die "unknown setting '$1' (known: ${ALL// /, })" ;;
  esac
}

recommended() {
  case $1 in
    governor) echo performance ;;
    vm.nr_hugepages) echo "$HUGEPAGES" ;;
    net.core.rmem_max | net.core.wmem_max) echo 2147483647 ;;
    net.ipv4.tcp_rmem) echo "4096 87380 2147483647" ;;
    net.ipv4.tcp_wmem) echo "4096 65536 2147483647" ;;
  esac
}

# Whether VALUE complies with the recommendation: numbers at least it, others equal it
# (whitespace-normalised: /proc writes tabs).
complies() {
  local name=$1 value rec
  value=$(echo "$2" | tr -s ' \t' '  ')
  rec=$(recommended "$name")
  case $name in
    vm.nr_hugepages | net.core.*) [[ $value =~ ^[0-9]+$ ]] && ((value >= rec)) ;;
    *) [[ $value == "$rec" ]] ;;
  esac
}

# Where this runs: "host=NAME netns=net:[INODE]" (net.ipv4.* live per network namespace).
origin() { echo "host=$(uname -n) netns=$(readlink /proc/self/ns/net 2>/dev/null || echo unknown)"; }

read_value() { tr -s ' \t' '  ' <"$1" | sed 's/ *$//'; }

cmd_check() {
  local name p bad=0 value
  printf '%-18s %-28s %-28s %s\n' SETTING CURRENT RECOMMENDED COMPLIES
  for name in $ALL; do
    local any=0
    for p in $(paths "$name"); do
      [[ -r $p ]] || continue
      any=1
      value=$(read_value "$p")
      local ok=yes
      complies "$name" "$value" || ok=no bad=1
      local label=$name
      [[ $name == governor ]] && label="governor[$(basename "$(dirname "$(dirname "$p")")")]"
      printf '%-18s %-28s %-28s %s\n' "$label" "$value" "$(recommended "$name")" "$ok"
    done
    ((any)) || printf '%-18s %-28s %-28s %s\n' "$name" "-" "$(recommended "$name")" \
      "n/a (not on this system)"
  done
  return $bad
}

cmd_apply() {
  ((YES)) || die "apply changes host settings: pass --yes to confirm (see: tune.sh check)"
  [[ ! -e $BACKUP ]] || die "a backup already exists at $BACKUP: run 'tune.sh revert' first"
  local names=${ONLY//,/ } name p
  [[ -n $names ]] || names=$ALL
  for name in $names; do paths "$name" >/dev/null; done # unknown names fail before any change
  mkdir -p "$(dirname "$BACKUP")"
  local tmp=$BACKUP.tmp.$$
  printf '# clusterbench tune.sh backup: %s\n' "$(origin)" >"$tmp"
  for name in $names; do
    for p in $(paths "$name"); do
      [[ -r $p ]] || continue
      printf '%s\t%s\t%s\n' "$name" "$p" "$(cat "$p")" >>"$tmp" # exactly as read
    done
  done
  sync "$tmp" 2>/dev/null || true
  mv "$tmp" "$BACKUP"
  local failed=0
  while IFS=$'\t' read -r name p _; do
    if ! printf '%s\n' "$(recommended "$name")" >"$p" 2>/dev/null; then
      echo "tune.sh: cannot write $p (setting $name); 'tune.sh revert' restores what changed" >&2
      failed=1
      continue
    fi
    echo "tune.sh: $name: $p = $(read_value "$p")"
  done < <(grep -v '^#' "$BACKUP")
  echo "tune.sh: old values saved in $BACKUP"
  ((failed == 0)) || exit 2
}

# Refuses (exit 2, backup kept) when the backup was written on another host or in another
# network namespace. A backup without the origin line (an older tune.sh) is accepted.
check_origin() {
  local saved here
  saved=$(sed -n 's/^# clusterbench tune.sh backup: //p' "$BACKUP" | head -n 1)
  here=$(origin)
  [[ -z $saved || $saved == "$here" ]] ||
    die "refused: $BACKUP was written by apply on $saved, this is $here; run revert where apply ran (e.g. ip netns exec NS); the backup is kept"
}

cmd_revert() {
  [[ -r $BACKUP ]] || die "no backup at $BACKUP: nothing to revert"
  check_origin
  local name p value failed=0
  while IFS=$'\t' read -r name p value; do
    if [[ $(read_value "$p") == "$(echo "$value" | tr -s ' \t' '  ' | sed 's/ *$//')" ]]; then
      echo "tune.sh: $name: $p already $value"  # apply could not change it, or it came back
    elif printf '%s\n' "$value" >"$p" 2>/dev/null; then
      echo "tune.sh: $name: $p restored to $value"
    else
      echo "tune.sh: cannot restore $p to '$value'" >&2
      failed=1
    fi
  done < <(grep -v '^#' "$BACKUP")
  ((failed == 0)) || die "some settings were not restored; $BACKUP is kept"
  rm -f "$BACKUP"
}

[[ $# -ge 1 ]] || {
  usage
  exit 2
}
CMD=$1
shift
while [[ $# -gt 0 ]]; do
  case $1 in
    --root) ROOT=${2:?--root needs a directory} && shift ;;
    --backup) BACKUP=${2:?--backup needs a file} && shift ;;
    --only) ONLY=${2:?--only needs names} && shift ;;
    --hugepages) HUGEPAGES=${2:?--hugepages needs a count} && shift ;;
    --yes) YES=1 ;;
    -h | --help) usage && exit 0 ;;
    *) die "unknown option '$1'" ;;
  esac
  shift
done
[[ $HUGEPAGES =~ ^[0-9]+$ ]] || die "--hugepages '$HUGEPAGES' is not a count"
case $CMD in
  check | status) cmd_check ;;
  apply) cmd_apply ;;
  revert) cmd_revert ;;
  *) die "unknown command '$CMD' (check, apply, revert)" ;;
esac
