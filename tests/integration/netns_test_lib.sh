# Shared start of the netns cluster tests (sourced): `netns_test NAME PREFIX` checks what they
# need (MPI build, root, ip, tc, unshare, mpirun, python3), then sets CLUSTER (the script),
# CB_NETNS_PREFIX=PREFIX$$n, WORK (a temp dir, kept on failure) and CB_NETNS_STATE inside it, and
# an EXIT trap that runs `netns_extra_cleanup` when the test defines it, brings the cluster down
# and removes WORK when the test passed. fail MESSAGE ends the test naming it.
set -euo pipefail
: "${CB_BIN:?CB_BIN must name the clusterbench binary}"
SRC=${CB_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CLUSTER=$SRC/scripts/netns-cluster.sh

netns_test() {
  NETNS_TEST=$1
  fail() {
    echo "FAIL $NETNS_TEST: $*" >&2
    exit 1
  }
  [[ ${CB_HAVE_MPI:-1} =~ ^(1|ON|TRUE|true)$ ]] || { echo "SKIP: built without MPI"; exit 77; }
  [[ $(id -u) -eq 0 ]] || fail "needs root to create network namespaces"
  for tool in ip tc unshare mpirun python3; do
    command -v "$tool" >/dev/null || fail "'$tool' is not installed"
  done
  export CB_NETNS_PREFIX=$2$$n
  WORK=$(mktemp -d "/tmp/$NETNS_TEST.XXXXXX")
  export CB_NETNS_STATE=$WORK/cluster/state
  trap netns_cleanup EXIT
}

netns_cleanup() {
  local rc=$?
  declare -F netns_extra_cleanup >/dev/null && netns_extra_cleanup
  "$CLUSTER" down >/dev/null 2>&1 || "$CLUSTER" down || true
  if ((rc == 0)); then rm -rf "$WORK"; else echo "$NETNS_TEST: kept $WORK" >&2; fi
  exit $rc
}
