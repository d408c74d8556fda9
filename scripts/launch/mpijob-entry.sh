#!/usr/bin/env bash
# The entry point of the MPIJob's pods (scripts/launch/mpijob.yaml, docs/launch.md), installed
# with clusterbench (/usr/share/clusterbench/scripts/launch/) and run in its container image.
#
#   mpijob-entry.sh worker            makes this pod's SSH host keys (never baked into the image,
#                                     where every pod would share them), then runs sshd in the
#                                     foreground (-D), logging to the pod's log (-e)
#   mpijob-entry.sh launcher CMD...   waits until every host of the MPI Operator's hostfile
#                                     answers over SSH, then runs CMD (mpirun ...)
#
# The MPI Operator (kubeflow.org/v2beta1) starts the ranks with OpenMPI over SSH: it mounts a key
# pair and authorized_keys at /root/.ssh of every pod, writes the hostfile (/etc/mpi/hostfile,
# OMPI_MCA_orte_default_hostfile) and sets OMPI_MCA_plm_rsh_args. The image's sshd and ssh use
# port 2222, as the operator's own base images do, so that a worker on the host network does not
# collide with the node's sshd on 22.
# Knobs: CB_SSH_PORT (another port, given to both: the worker's sshd -p and the launcher's ssh),
# CB_WAIT_WORKERS_S (default 600: how long the launcher waits for the workers; past it, exit 3
# naming those that did not answer).
set -uo pipefail

role=${1:-}
shift || true
case $role in
  worker)
    ssh-keygen -A >/dev/null || { echo "mpijob-entry: ssh-keygen -A failed" >&2; exit 2; }
    mkdir -p /run/sshd && chmod 0755 /run/sshd
    port=()
    [ -n "${CB_SSH_PORT:-}" ] && port=(-p "$CB_SSH_PORT")
    exec /usr/sbin/sshd -D -e "${port[@]}"
    ;;
  launcher)
    [ $# -gt 0 ] || { echo "usage: mpijob-entry.sh launcher CMD [ARG...]" >&2; exit 2; }
    hostfile=${OMPI_MCA_orte_default_hostfile:-/etc/mpi/hostfile}
    [ -r "$hostfile" ] || { echo "mpijob-entry: no hostfile $hostfile (is this an MPIJob's launcher?)" >&2; exit 2; }
    ssh_args=(-o BatchMode=yes -o ConnectTimeout=5)
    if [ -n "${CB_SSH_PORT:-}" ]; then
      ssh_args+=(-p "$CB_SSH_PORT")
      export OMPI_MCA_plm_rsh_args="${OMPI_MCA_plm_rsh_args:-} -p $CB_SSH_PORT"
    fi
    # Host names: the first field of each line ("host slots=8"; Intel MPI's "host:8").
    mapfile -t waiting < <(sed -E 's/[[:space:]:].*//' "$hostfile" | grep -v '^$')
    total=${#waiting[@]}
    deadline=$((SECONDS + ${CB_WAIT_WORKERS_S:-600}))
    echo "mpijob-entry: waiting for $total host(s) of $hostfile to answer over SSH"
    while [ ${#waiting[@]} -gt 0 ]; do
      still=()
      for h in "${waiting[@]}"; do
        ssh "${ssh_args[@]}" "$h" true </dev/null >/dev/null 2>&1 || still+=("$h")
      done
      waiting=("${still[@]}")
      [ ${#waiting[@]} -eq 0 ] && break
      if [ "$SECONDS" -ge "$deadline" ]; then
        echo "mpijob-entry: ${#waiting[@]} of $total host(s) did not answer over SSH within" \
             "${CB_WAIT_WORKERS_S:-600} s: ${waiting[*]}" >&2
        exit 3
      fi
      sleep 2
    done
    echo "mpijob-entry: all $total host(s) answer; running $*"
    exec "$@"
    ;;
  *)
    echo "usage: mpijob-entry.sh worker | launcher CMD [ARG...]" >&2
    exit 2
    ;;
esac
