#!/usr/bin/env bash
# netns-agent.sh: an ssh stand-in for OpenMPI's rsh launcher (--mca plm_rsh_agent), which starts
# the remote command in a network namespace of scripts/netns-cluster.sh instead of on a host.
#
#   netns-agent.sh [ssh options] [USER@]HOST COMMAND...
#
# HOST is a namespace name of the cluster (cbns2), its index (2) or one of its link addresses.
# As with ssh, the COMMAND words are joined with spaces and run by the login shell ($SHELL, which
# OpenMPI assumes the remote side shares), here as:
#   ip netns exec NS unshare --uts -- env CLUSTERBENCH_HOSTNAME=NS  (hostname NS) $SHELL -c "..."
# so the orted and the ranks it starts see the host name NS both from gethostname() and from
# $CLUSTERBENCH_HOSTNAME. The cluster is found through $CB_NETNS_STATE, which
# `netns-cluster.sh mpirun` exports (else /run/clusterbench-netns/${CB_NETNS_PREFIX:-cbns}.state).
set -euo pipefail

die() {
  echo "netns-agent: $*" >&2
  exit 255 # what ssh returns when it cannot connect
}

STATE=${CB_NETNS_STATE:-/run/clusterbench-netns/${CB_NETNS_PREFIX:-cbns}.state}

# ssh options: those that take a value, and flags (which may be bundled, as in -xq).
while (($#)); do
  case $1 in
    --) shift && break ;;
    -[BbcDEeFIiJLlmOoPpQRSWw])
      (($# >= 2)) || die "option $1 needs a value"
      shift 2
      ;;
    -[BbcDEeFIiJLlmOoPpQRSWw]?*) shift ;; # value attached, as in -oBatchMode=yes or -p22
    -[46AaCfGgKkMNnqsTtVvXxYy]*) shift ;;
    -*) die "unknown ssh option $1" ;;
    *) break ;;
  esac
done
(($# >= 2)) || die "usage: netns-agent.sh [ssh options] HOST COMMAND... (no interactive shells)"
host=${1##*@}
shift
command=$*

[[ -r $STATE ]] || die "no cluster state at $STATE (is the cluster up? CB_NETNS_STATE?)"
ns=$(awk -v h="$host" '
  $1 == "node" && ($2 == h || $3 == h) {print $3; exit}
  $1 == "link" && $5 == h {print $3; exit}
  $1 == "link" && $8 == h {print $6; exit}' "$STATE")
[[ -n $ns ]] || die "host '$host' is not a node of the cluster in $STATE"

# shellcheck disable=SC2016 # the inner bash expands its own variables
exec ip netns exec "$ns" unshare --uts -- env CLUSTERBENCH_HOSTNAME="$ns" \
  bash -c 'hostname "$CLUSTERBENCH_HOSTNAME" && exec "${SHELL:-/bin/sh}" -c "$1"' netns-agent \
  "$command"
