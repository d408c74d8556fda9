#!/usr/bin/env bash
# netns_cluster_down: `scripts/netns-cluster.sh down` touches only what `up` wrote (issue 46,
# defect 2). A CB_NETNS_STATE naming a file the script did not write (no header) is refused with
# exit 2 and left as it was, its folder too; a state file with the header but listing a
# namespace outside its prefix removes only the prefix's own; a names file of an earlier version
# (our names only, no header) still comes down; and up/down of a real 2-node cluster leaves no
# file and no namespace. Budget: < 15 s.
source "$(dirname "$0")/lib.sh"
CLUSTER=$CB_SOURCE_DIR/scripts/netns-cluster.sh
[[ $(id -u) -eq 0 ]] || fail "needs root (ip netns)"
command -v ip >/dev/null || fail "iproute2 'ip' is not installed"
export CB_NETNS_PREFIX=cbd$$n
victim=cbdvictim$$

# 1. Somebody's file: refused, kept, and its folder kept.
mkdir -p "$TMP/data"
echo "precious" >"$TMP/data/notes.txt"
CB_NETNS_STATE=$TMP/data/notes.txt expect_rc 2 "$CLUSTER" down
expect_out "is not a state file of this script for cluster '$CB_NETNS_PREFIX'"
[[ $(cat "$TMP/data/notes.txt") == precious ]] || fail "down changed a file it did not write"
ok "a foreign CB_NETNS_STATE is refused (exit 2) and left as it was"
# A folder of the user's that holds our state file: the file goes, the folder stays.
mkdir -p "$TMP/userdir"
ip netns add "${CB_NETNS_PREFIX}5"
printf '%s\n%s\n%s\n' "# clusterbench network-namespace cluster: namespaces created by scripts/netns-cluster.sh up" \
  "prefix $CB_NETNS_PREFIX" "${CB_NETNS_PREFIX}5" >"$TMP/userdir/s.created"
CB_NETNS_STATE=$TMP/userdir/s expect_rc 0 "$CLUSTER" down
[[ -d $TMP/userdir && ! -e $TMP/userdir/s.created ]] || fail "down removed the user's folder, or kept its own file"
ok "a CB_NETNS_STATE folder of the user's is kept"

# 2. Our header, but a namespace of someone else listed: only ours are removed.
ip netns add "$victim"
trap 'ip netns del "$victim" 2>/dev/null; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/st"
ip netns add "${CB_NETNS_PREFIX}1"
printf '%s\n%s\n%s\n%s\n%s\n' "# clusterbench network-namespace cluster, written by scripts/netns-cluster.sh up" \
  "prefix $CB_NETNS_PREFIX" "count 2" "node 1 ${CB_NETNS_PREFIX}1" "node 2 $victim" >"$TMP/st/state"
CB_NETNS_STATE=$TMP/st/state expect_rc 0 "$CLUSTER" down
ip netns list | awk '{print $1}' | grep -qx "$victim" || fail "down removed $victim, outside its prefix"
! ip netns list | awk '{print $1}' | grep -qx "${CB_NETNS_PREFIX}1" || fail "${CB_NETNS_PREFIX}1 left up"
[[ ! -e $TMP/st/state ]] || fail "our own state file was not removed"
ok "a state file listing $victim removes only ${CB_NETNS_PREFIX}1"

# 3. A names file of an earlier version (no header, our names only) still comes down.
ip netns add "${CB_NETNS_PREFIX}2"
mkdir -p "$TMP/old"
printf '%s\n' "${CB_NETNS_PREFIX}2" >"$TMP/old/state.created"
CB_NETNS_STATE=$TMP/old/state expect_rc 0 "$CLUSTER" down
! ip netns list | awk '{print $1}' | grep -qx "${CB_NETNS_PREFIX}2" || fail "the old names file was not followed"
ok "an earlier version's names file is followed"

# 4. A real cluster: up, down, nothing left.
export CB_NETNS_STATE=$TMP/real/state
expect_rc 0 "$CLUSTER" up 2
expect_rc 0 "$CLUSTER" down
[[ -z $(ls -A "$TMP/real") ]] || fail "down left $(ls -A "$TMP/real")"  # the folder is the user's
! ip netns list | awk '{print $1}' | grep -qE "^${CB_NETNS_PREFIX}[0-9]+$" || fail "namespaces left"
ok "up 2 then down leaves no file and no namespace"
echo "PASS netns_cluster_down ($PASSES checks)"
