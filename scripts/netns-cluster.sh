#!/usr/bin/env bash
# netns-cluster.sh: a multi-node cluster on one machine, made of Linux network namespaces.
#
#   netns-cluster.sh up N [--rails R]     N namespaces PREFIX1..PREFIXN, one veth pair per pair;
#                                         R rails: R bridges in PREFIX-sw, NIC railK on every node
#   netns-cluster.sh down                 remove them (and anything a failed `up` left); idempotent
#   netns-cluster.sh status               namespaces, links, addresses, byte counters, qdiscs
#   netns-cluster.sh exec NAME CMD...     run CMD in namespace NAME (hostname NAME)
#   netns-cluster.sh link A B             interface inside A of the A<->B link
#   netns-cluster.sh addr A B             address of A on the A<->B link
#   netns-cluster.sh slow A B RATE [BURST]   tbf at RATE on both ends of A<->B ("off" removes it)
#   netns-cluster.sh slownic A railK RATE [BURST]   tbf on A's NIC railK and its switch port
#   netns-cluster.sh mpirun [ARGS...]     mpirun inside PREFIX1, ranks on every namespace
#
# A namespace is named by its full name (cbns2) or its index (2).
# Environment: CB_NETNS_PREFIX (default cbns), CB_NETNS_STATE (state file, default
# /run/clusterbench-netns/PREFIX.state), CB_NETNS_BASE (first two octets, default 10.213),
# CB_NETNS_SLOTS (slots per namespace for mpirun, default 1), CB_NETNS_BTL (default self,tcp),
# CB_MPIRUN (default mpirun), CB_NETNS_RAIL_BASE (first two octets of the rails, default 10.214).
# The layout and the reasons are in docs/netns-cluster.md.
set -euo pipefail

PREFIX=${CB_NETNS_PREFIX:-cbns}
STATE=${CB_NETNS_STATE:-/run/clusterbench-netns/${PREFIX}.state}
CREATED=${STATE}.created # names appended before each `ip netns add`: what `down` removes
# First lines of the two files `up` writes: `down` touches a file only when it starts with its
# header and names this prefix, and removes only names of this prefix (PREFIXn, PREFIX-sw).
STATE_HEADER="# clusterbench network-namespace cluster, written by scripts/netns-cluster.sh up"
CREATED_HEADER="# clusterbench network-namespace cluster: namespaces created by scripts/netns-cluster.sh up"
BASE=${CB_NETNS_BASE:-10.213}
RAIL_BASE=${CB_NETNS_RAIL_BASE:-10.214}
MAX_RAILS=8
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AGENT=$SCRIPTS/netns-agent.sh
MAX_NODES=23 # link numbers L = (j-1)(j-2)/2 + i stay <= 253, one third octet each

die() {
  echo "netns-cluster: $*" >&2
  exit 2
}
say() { echo "netns-cluster: $*" >&2; }

check_config() {
  [[ $PREFIX =~ ^[A-Za-z][A-Za-z0-9-]{0,39}$ ]] ||
    die "CB_NETNS_PREFIX='$PREFIX': use a letter, then letters, digits or '-' (at most 40)"
  [[ $BASE =~ ^(10\.[0-9]{1,3}|192\.168|172\.(1[6-9]|2[0-9]|3[01]))$ ]] ||
    die "CB_NETNS_BASE='$BASE': use the first two octets of a private /16 (e.g. 10.213)"
  [[ $RAIL_BASE =~ ^(10\.[0-9]{1,3}|192\.168|172\.(1[6-9]|2[0-9]|3[01]))$ && $RAIL_BASE != "$BASE" ]] ||
    die "CB_NETNS_RAIL_BASE='$RAIL_BASE': use the first two octets of a private /16 other than $BASE"
}

# Can this process create and enter network namespaces?
check_privileges() {
  [[ $(id -u) -eq 0 ]] || die "needs root (ip netns add); running as uid $(id -u)"
  command -v ip >/dev/null || die "iproute2 'ip' not found"
  ip netns list >/dev/null 2>&1 || die "'ip netns list' fails: no network namespace support"
}

# Link number of the pair (i, j), i < j: 1-2 -> 1, 1-3 -> 2, 2-3 -> 3, 1-4 -> 4, ...
# It does not depend on N, so a link keeps its subnet when the cluster grows.
link_number() {
  local i=$1 j=$2
  ((i < j)) || { local t=$i && i=$j && j=$t; }
  echo $(((j - 1) * (j - 2) / 2 + i))
}

ns_exists() { [[ -e /run/netns/$1 ]] || ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$1"; }

# ---------------------------------------------------------------------------------------------
# State file. Whitespace-separated lines:
#   prefix P | count N | base B
#   node INDEX NAME
#   link L NAME_A IF_A ADDR_A NAME_B IF_B ADDR_B SUBNET      (A has the lower index)
#   rails R | switch NAME
#   rail K NAME IF ADDR PORT       (node NAME's NIC IF on rail K; PORT: its switch port in NAME_sw)

require_state() {
  [[ -r $STATE ]] || die "no cluster '$PREFIX' is up (no $STATE); run: $0 up N"
}
state_nodes() { awk '$1 == "node" {print $3}' "$STATE"; }
state_rails() { awk '$1 == "rail"' "$STATE"; }
state_switch() { awk '$1 == "switch" {print $2}' "$STATE"; }
state_links() { awk '$1 == "link"' "$STATE"; }
# The range that holds every link subnet: OpenMPI warns about list entries absent on a node.
state_range() { awk '$1 == "base" {print $2 ".0.0/16"}' "$STATE"; }

# NAME or INDEX -> namespace name of this cluster.
resolve_node() {
  local n
  n=$(awk -v q="$1" '$1 == "node" && ($2 == q || $3 == q) {print $3}' "$STATE")
  [[ -n $n ]] || die "'$1' is not a node of cluster '$PREFIX' ($(state_nodes | paste -sd' ' -))"
  echo "$n"
}

# Prints "IF ADDR" of node A on the A<->B link.
link_end() {
  local a b
  a=$(resolve_node "$1")
  b=$(resolve_node "$2")
  [[ $a != "$b" ]] || die "a link needs two different nodes"
  awk -v a="$a" -v b="$b" '$1 == "link" {
      if ($3 == a && $6 == b) print $4, $5;
      if ($6 == a && $3 == b) print $7, $8 }' "$STATE"
}

# ---------------------------------------------------------------------------------------------
# down

kill_namespace_processes() {
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
  [[ -n ${pids// /} ]] || return 0
  say "stopping processes left in $ns: $pids"
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    [[ -n ${pids// /} ]] || return 0
    sleep 0.2
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}

# Whether FILE is a plain file this script wrote for this prefix: HEADER first, "prefix PREFIX".
# A names file of an earlier version (no header) is ours when every line is one of our names.
ours() {
  [[ -f $1 && ! -L $1 ]] || return 1
  if [[ $2 == "$CREATED_HEADER" && $(head -n 1 "$1") != "#"* ]]; then
    ! grep -qvE "^(${PREFIX}([0-9]+|-sw))?\$" "$1"
    return
  fi
  [[ $(head -n 1 "$1") == "$2" ]] || return 1
  grep -qxF "prefix $PREFIX" "$1"
}

# Refuses a STATE or CREATED path that holds something this script did not write.
check_ours() {
  local f=$1 header=$2
  [[ -e $f || -L $f ]] || return 0
  ours "$f" "$header" ||
    die "$f is not a state file of this script for cluster '$PREFIX' (its first line is not the header, or no 'prefix $PREFIX'): left alone; check CB_NETNS_STATE"
}

cmd_down() {
  local names=() n
  check_ours "$STATE" "$STATE_HEADER"
  check_ours "$CREATED" "$CREATED_HEADER"
  [[ -r $CREATED ]] && mapfile -t names < <(awk 'NF && !/^#/ && $1 != "prefix"' "$CREATED")
  [[ -r $STATE ]] && mapfile -t -O "${#names[@]}" names < <(state_nodes; state_switch)
  # Only this prefix's names, whatever a file lists.
  mapfile -t names < <(printf '%s\n' "${names[@]}" | awk 'NF && !seen[$0]++' |
    grep -E "^${PREFIX}([0-9]+|-sw)\$" || true)
  for n in "${names[@]}"; do
    if ns_exists "$n"; then
      kill_namespace_processes "$n"
      # Deleting a namespace deletes its veth ends, and with them their peers.
      ip netns del "$n" 2>/dev/null || ip netns del "$n"
    fi
    # Only what `up` wrote: the hosts file, then the folder if nothing else is in it.
    rm -f "/etc/netns/$n/hosts"
    rmdir "/etc/netns/$n" 2>/dev/null || true
  done
  rmdir /etc/netns 2>/dev/null || true
  local had_files=0
  [[ -e $STATE || -e $CREATED ]] && had_files=1
  rm -f "$STATE" "$CREATED"
  ! ours "$STATE.tmp" "$STATE_HEADER" || rm -f "$STATE.tmp"  # an `up` cut off while writing
  # The folder only where it is ours (the default one), and only when empty.
  [[ $had_files == 0 || -n ${CB_NETNS_STATE:-} ]] || rmdir "$(dirname "$STATE")" 2>/dev/null || true
  if ((${#names[@]})); then
    say "removed ${names[*]}"
  else
    say "cluster '$PREFIX': nothing to remove"
  fi
  # Namespaces that look like ours but that no `up` of ours recorded are left alone.
  local stray
  stray=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}[0-9]+\$" || true)
  [[ -z $stray ]] || say "left alone (not created by this script): ${stray//$'\n'/ }"
}

# ---------------------------------------------------------------------------------------------
# up

# EXIT trap of `up`: a failed `up` leaves nothing behind.
up_failed() {
  local rc=$1
  trap - EXIT
  if ((rc)); then
    say "up failed: cleaning up"
    cmd_down || true
  fi
  exit "$rc"
}

# Is TCP to ADDR answered from inside NS (a refusal counts: it proves the link carries packets)?
probe_link() {
  local ns=$1 addr=$2 out
  out=$(ip netns exec "$ns" timeout 3 bash -c "exec 3<>/dev/tcp/$addr/9" 2>&1) && return 0
  [[ $out == *"Connection refused"* ]]
}

# Waits up to 10 s for interface $2 in namespace $1 to have operstate UP. The kernel sets the
# operstate (RFC 2863; what /sys/class/net/IF/operstate and `ip link` show) after the carrier, in
# deferred work: a veth can carry packets while it still reads "down" for a second or more.
wait_operstate_up() {
  local _
  for _ in $(seq 100); do
    ip -n "$1" -o link show dev "$2" 2>/dev/null | grep -q ' state UP ' && return 0
    sleep 0.1
  done
  return 1
}

healthy_cluster() {
  [[ -r $STATE ]] || return 1
  [[ $(awk '$1 == "count" {print $2}' "$STATE") == "$1" ]] || return 1
  [[ $(awk '$1 == "rails" {print $2}' "$STATE") == "${2:-0}" ]] || return 1
  local n
  for n in $(state_nodes); do ns_exists "$n" || return 1; done
}

# Rails: namespace PREFIX-sw holds one bridge per rail ("switch" railK); node i gets NIC railK
# (RAIL_BASE.(K+1).i/24) whose peer n<i>r<K> is a port of that bridge. Prints the state lines.
make_rails() {
  local count=$1 rails=$2 sw=$PREFIX-sw i r
  echo "$sw" >>"$CREATED"
  ip netns add "$sw"
  ip netns exec "$sw" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
    >/dev/null 2>&1 || true
  for ((r = 0; r < rails; r++)); do
    ip -n "$sw" link add "rail$r" type bridge
    ip -n "$sw" link set "rail$r" up
    for ((i = 1; i <= count; i++)); do
      ip link add "rail$r" netns "$PREFIX$i" type veth peer name "n${i}r$r" netns "$sw"
      ip -n "$sw" link set "n${i}r$r" master "rail$r" up
      ip -n "$PREFIX$i" addr add "$RAIL_BASE.$((r + 1)).$i/24" dev "rail$r"
      ip -n "$PREFIX$i" link set "rail$r" up
      echo "rail $r $PREFIX$i rail$r $RAIL_BASE.$((r + 1)).$i n${i}r$r"
    done
  done
}

cmd_up() {
  local count=${1:-} rails=0
  if ! [[ $count =~ ^[0-9]+$ ]] || ((count < 2 || count > MAX_NODES)); then
    die "usage: $0 up N [--rails R]   (2 <= N <= $MAX_NODES, 0 <= R <= $MAX_RAILS)"
  fi
  if (($# > 1)); then
    [[ $2 == --rails && $# == 3 && $3 =~ ^[0-9]+$ ]] && (($3 <= MAX_RAILS)) ||
      die "usage: $0 up N [--rails R]   (2 <= N <= $MAX_NODES, 0 <= R <= $MAX_RAILS)"
    rails=$3
  fi
  check_privileges
  if healthy_cluster "$count" "$rails"; then
    say "cluster '$PREFIX' with $count nodes and $rails rail(s) is already up ($STATE)"
    return 0
  fi
  [[ ! -e $STATE && ! -e $CREATED ]] || {
    say "cluster '$PREFIX' is incomplete or of another size: removing it first"
    cmd_down
  }
  local i j n
  for ((i = 1; i <= count; i++)); do
    ! ns_exists "$PREFIX$i" ||
      die "namespace $PREFIX$i exists but is not ours; remove it or set CB_NETNS_PREFIX"
  done

  mkdir -p "$(dirname "$STATE")"
  printf '%s\nprefix %s\n' "$CREATED_HEADER" "$PREFIX" >"$CREATED"
  trap 'up_failed $?' EXIT
  trap 'exit 130' INT TERM HUP

  for ((i = 1; i <= count; i++)); do
    n=$PREFIX$i
    echo "$n" >>"$CREATED"
    ip netns add "$n"
    # IPv4 only: no IPv6 autoconfiguration chatter on the links, no IPv6 candidates for MPI.
    ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
      >/dev/null 2>&1 || true
    ip -n "$n" link set lo up
  done

  local links=() l sa sb
  for ((j = 2; j <= count; j++)); do
    for ((i = 1; i < j; i++)); do
      l=$(link_number "$i" "$j")
      sa=$BASE.$l.1
      sb=$BASE.$l.2
      # Both ends are created directly inside their namespaces: nothing appears on the host.
      ip link add "to$j" netns "$PREFIX$i" type veth peer name "to$i" netns "$PREFIX$j"
      ip -n "$PREFIX$i" addr add "$sa/30" dev "to$j"
      ip -n "$PREFIX$j" addr add "$sb/30" dev "to$i"
      ip -n "$PREFIX$i" link set "to$j" up
      ip -n "$PREFIX$j" link set "to$i" up
      links+=("link $l $PREFIX$i to$j $sa $PREFIX$j to$i $sb $BASE.$l.0/30")
    done
  done

  # Every address of a node is reachable from every other node over their direct link: a node
  # answers for all its addresses on any interface, so a host route through the direct link is
  # enough, and no packet ever crosses a third node (MPI tries every address a peer publishes).
  local k
  for ((k = 1; k <= count; k++)); do
    for ((j = 2; j <= count; j++)); do
      for ((i = 1; i < j; i++)); do
        ((k != i && k != j)) || continue
        l=$(link_number "$i" "$j")
        ip -n "$PREFIX$k" route add "$BASE.$l.1/32" dev "to$i"
        ip -n "$PREFIX$k" route add "$BASE.$l.2/32" dev "to$j"
      done
    done
  done

  # Per-namespace hosts files: `ip netns exec NS` bind-mounts /etc/netns/NS/hosts on /etc/hosts.
  # Inside NS, every other node's name is its address on the direct link to NS.
  local own peer
  for ((i = 1; i <= count; i++)); do
    mkdir -p "/etc/netns/$PREFIX$i"
    {
      echo "# written by clusterbench scripts/netns-cluster.sh up for namespace $PREFIX$i"
      echo "127.0.0.1 localhost"
      peer=$((i == 1 ? 2 : 1))
      own=$BASE.$(link_number "$i" "$peer").$((i < peer ? 1 : 2))
      echo "$own $PREFIX$i"
      for ((j = 1; j <= count; j++)); do
        ((j != i)) || continue
        echo "$BASE.$(link_number "$i" "$j").$((j < i ? 1 : 2)) $PREFIX$j"
      done
    } >"/etc/netns/$PREFIX$i/hosts"
  done

  local rail_lines=()
  if ((rails > 0)); then
    local rails_out
    rails_out=$(make_rails "$count" "$rails")
    mapfile -t rail_lines <<<"$rails_out"
  fi

  {
    echo "$STATE_HEADER"
    echo "# link L NAME_A IF_A ADDR_A NAME_B IF_B ADDR_B SUBNET (IF_x is the interface inside x)"
    echo "prefix $PREFIX"
    echo "count $count"
    echo "base $BASE"
    for ((i = 1; i <= count; i++)); do echo "node $i $PREFIX$i"; done
    printf '%s\n' "${links[@]}"
    echo "rails $rails"
    ((rails == 0)) || echo "switch $PREFIX-sw"
    ((rails == 0)) || printf '%s\n' "${rail_lines[@]}"
  } >"$STATE.tmp"
  mv "$STATE.tmp" "$STATE"

  # Every link must carry packets both ways before the cluster counts as up, and both ends must
  # read up (a node's inventory reads the operstate; the NCCL interface row judges it).
  while read -r _ _ na ia aa nb ib ab _; do
    probe_link "$na" "$ab" || die "$na cannot reach $nb at $ab"
    probe_link "$nb" "$aa" || die "$nb cannot reach $na at $aa"
    wait_operstate_up "$na" "$ia" || die "$na/$ia: operstate is not up after 10 s"
    wait_operstate_up "$nb" "$ib" || die "$nb/$ib: operstate is not up after 10 s"
  done < <(state_links)
  # Every NIC of a rail reaches the next node's NIC of the same rail through the switch.
  local r k_next a_if a_addr
  while read -r _ r n a_if a_addr _; do
    k_next=$(awk -v r="$r" -v n="$n" '$1 == "rail" && $2 == r {a[c++] = $5; if ($3 == n) me = c - 1}
      END {print a[(me + 1) % c]}' "$STATE")
    probe_link "$n" "$k_next" || die "$n/$a_if cannot reach $k_next on rail $r"
    wait_operstate_up "$n" "$a_if" || die "$n/$a_if: operstate is not up after 10 s"
  done < <(state_rails)
  trap - EXIT INT TERM HUP
  say "cluster '$PREFIX' is up: $count nodes, ${#links[@]} links, $rails rail(s), state in $STATE"
}

# ---------------------------------------------------------------------------------------------
# status, link, addr, slow, exec

counter() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3" </dev/null; }

cmd_status() {
  require_state
  local n up=0 total=0
  echo "cluster $PREFIX (state $STATE)"
  for n in $(state_nodes); do
    total=$((total + 1))
    if ns_exists "$n"; then
      up=$((up + 1))
      echo "node $n: up"
    else
      echo "node $n: MISSING"
    fi
  done
  local l na ia aa nb ib ab sub q end i
  while read -r _ l na ia aa nb ib ab sub; do
    echo "link $l $sub: $na/$ia $aa <-> $nb/$ib $ab"
    for end in "$na $ia" "$nb $ib"; do
      read -r n i <<<"$end"
      ns_exists "$n" || continue
      q=$(ip -n "$n" -o link show "$i" 2>/dev/null | grep -o 'qdisc [a-z_]*' || true)
      printf '  %s/%s: tx_bytes %s rx_bytes %s %s' "$n" "$i" "$(counter "$n" "$i" tx_bytes)" \
        "$(counter "$n" "$i" rx_bytes)" "$q"
      tc -n "$n" qdisc show dev "$i" </dev/null | awk '$2 == "tbf" {printf " (%s)", $0}'
      echo
    done
  done < <(state_links)
  local r n i a p sw
  sw=$(state_switch)
  while read -r _ r n i a p; do
    printf 'rail %s: %s/%s %s (switch port %s/%s): tx_bytes %s rx_bytes %s' "$r" "$n" "$i" "$a" "$sw" \
      "$p" "$(counter "$n" "$i" tx_bytes)" "$(counter "$n" "$i" rx_bytes)"
    tc -n "$n" qdisc show dev "$i" </dev/null | awk '$2 == "tbf" {printf " (%s)", $0}'
    echo
  done < <(state_rails)
  ((up == total))
}

cmd_link() {
  (($# == 2)) || die "usage: $0 link A B"
  require_state
  local e
  e=$(link_end "$1" "$2")
  [[ -n $e ]] || die "no link between $1 and $2"
  echo "${e%% *}"
}

cmd_addr() {
  (($# == 2)) || die "usage: $0 addr A B"
  require_state
  local e
  e=$(link_end "$1" "$2")
  [[ -n $e ]] || die "no link between $1 and $2"
  echo "${e##* }"
}

# Bits per second of a tc rate (10mbit, 1gbit, 500kbit, 1.5gbit, 125mbps = bytes/s).
rate_bits() {
  echo "$1" | awk '{
    r = tolower($0)
    if (!match(r, /^[0-9]+(\.[0-9]+)?/)) exit 1
    v = substr(r, 1, RLENGTH); u = substr(r, RLENGTH + 1)
    m["bit"]=1; m["kbit"]=1e3; m["mbit"]=1e6; m["gbit"]=1e9; m["tbit"]=1e12
    m["kibit"]=1024; m["mibit"]=1048576; m["gibit"]=1073741824
    m["bps"]=8; m["kbps"]=8e3; m["mbps"]=8e6; m["gbps"]=8e9
    if (u == "") u = "bit"
    if (!(u in m)) exit 1
    printf "%.0f\n", v * m[u] }'
}

cmd_slow() {
  (($# == 3 || $# == 4)) || die "usage: $0 slow A B RATE|off [BURST]"
  require_state
  local ea eb rate=$3 burst=${4:-}
  ea=$(link_end "$1" "$2")
  eb=$(link_end "$2" "$1")
  [[ -n $ea ]] || die "no link between $1 and $2"
  local na nb
  na=$(resolve_node "$1")
  nb=$(resolve_node "$2")
  shape_ends "$na ${ea%% *}" "$nb ${eb%% *}" "$rate" "$burst" "link $na/${ea%% *}<->$nb/${eb%% *}"
}

# Shapes the interfaces "NS DEV" $1 and $2 (each one's egress) with tbf at RATE $3, or removes
# it ("off"); BURST $4 (bytes, empty: the default); $5 names them in the message.
shape_ends() {
  local rate=$3 burst=$4 bits end
  if [[ $rate == off ]]; then
    for end in "$1" "$2"; do tc -n "${end%% *}" qdisc del dev "${end##* }" root 2>/dev/null || true; done
    say "$5: rate limit removed"
    return 0
  fi
  bits=$(rate_bits "$rate") || die "rate '$rate': use tc units (bit kbit mbit gbit, bps kbps mbps gbps)"
  [[ -z $burst || ${burst,,} =~ ^[0-9]+(b|k|kb|kbit|m|mb|mbit)?$ ]] ||
    die "burst '$burst': bytes, or a tc size (32kb, 1mb)"
  # Default bucket: 10 ms at RATE, at least two 1500-byte frames. GSO packets larger than the
  # bucket are segmented by tbf itself.
  [[ -n $burst ]] || burst=$(awk -v b="$bits" 'BEGIN {x = b / 8 / 100; if (x < 3028) x = 3028; printf "%.0f", x}')
  for end in "$1" "$2"; do
    tc -n "${end%% *}" qdisc replace dev "${end##* }" root tbf rate "$rate" burst "$burst" latency 50ms
  done
  say "$5: tbf rate $rate burst $burst latency 50ms"
}

cmd_slownic() {
  (($# == 3 || $# == 4)) || die "usage: $0 slownic A railK RATE|off [BURST]"
  require_state
  local n line port sw rate=$3 burst=${4:-}
  n=$(resolve_node "$1")
  line=$(state_rails | awk -v n="$n" -v i="$2" '$3 == n && $4 == i')
  [[ -n $line ]] || die "$n has no rail NIC '$2' (rails: $(state_rails | awk -v n="$n" '$3 == n {print $4}' | paste -sd' ' -))"
  port=$(awk '{print $6}' <<<"$line")
  sw=$(state_switch)
  # Both directions: the node's egress on its NIC, and the switch port's egress toward the node.
  shape_ends "$n $2" "$sw $port" "$rate" "$burst" "NIC $n/$2 (switch port $sw/$port)"
}

# shellcheck disable=SC2016 # the inner bash expands its own variables
# Runs "$@" in namespace $1 with the UTS host name and CLUSTERBENCH_HOSTNAME set to $1.
exec_in() {
  local ns=$1
  shift
  exec ip netns exec "$ns" unshare --uts -- env CLUSTERBENCH_HOSTNAME="$ns" \
    bash -c 'hostname "$CLUSTERBENCH_HOSTNAME" && exec "$@"' netns-exec "$@"
}

cmd_exec() {
  (($# >= 2)) || die "usage: $0 exec NAME CMD..."
  require_state
  local ns
  ns=$(resolve_node "$1")
  shift
  exec_in "$ns" "$@"
}

# ---------------------------------------------------------------------------------------------
# mpirun

cmd_mpirun() {
  require_state
  local nodes first slots=${CB_NETNS_SLOTS:-1} subnets hosts a
  mapfile -t nodes < <(state_nodes)
  first=${nodes[0]}
  for n in "${nodes[@]}"; do ns_exists "$n" || die "namespace $n is missing; run: $0 up N"; done
  subnets=$(state_range)

  # Options the caller gave win over ours (OpenMPI refuses an MCA parameter given twice).
  local user_mca=" " user_hosts=0 user_bind=0 user_root=0
  local -a args=("$@")
  for ((a = 0; a < ${#args[@]}; a++)); do
    case ${args[a]} in
      --mca | -mca | --gmca | -gmca) user_mca+="${args[a + 1]:-} " ;;
      -H | -host | --host | -hostfile | --hostfile | -machinefile | --machinefile | \
        --default-hostfile | -default-hostfile) user_hosts=1 ;;
      --bind-to | -bind-to) user_bind=1 ;;
      --allow-run-as-root | -allow-run-as-root) user_root=1 ;;
    esac
  done

  local -a opts=()
  mca() { [[ $user_mca == *" $1 "* ]] || opts+=(--mca "$1" "$2"); }
  ((user_root)) || [[ $(id -u) -ne 0 ]] || opts+=(--allow-run-as-root)
  ((user_bind)) || opts+=(--bind-to none)
  # Ranks in other namespaces start through the agent (ssh semantics, `ip netns exec` inside).
  mca plm rsh
  mca plm_rsh_agent "$AGENT"
  mca plm_rsh_no_tree_spawn 1
  # Only TCP over the veth links crosses namespaces: no shared memory, no UCX, no verbs.
  mca pml ob1
  mca btl "${CB_NETNS_BTL:-self,tcp}"
  mca btl_tcp_if_include "$subnets"
  mca oob_tcp_if_include "$subnets"
  if ((!user_hosts)); then
    hosts=$(printf "%s:$slots," "${nodes[@]}")
    opts+=(-H "${hosts%,}")
  fi
  export CB_NETNS_STATE=$STATE CB_NETNS_PREFIX=$PREFIX
  [[ -n ${CB_NETNS_VERBOSE:-} ]] && say "in $first: ${CB_MPIRUN:-mpirun} ${opts[*]} $*"
  exec_in "$first" "${CB_MPIRUN:-mpirun}" "${opts[@]}" "$@"
}

# ---------------------------------------------------------------------------------------------

main() {
  check_config
  local cmd=${1:-}
  (($#)) && shift
  case $cmd in
    up) cmd_up "$@" ;;
    down) check_privileges && cmd_down ;;
    status) cmd_status ;;
    exec) cmd_exec "$@" ;;
    link) cmd_link "$@" ;;
    addr) cmd_addr "$@" ;;
    slow) cmd_slow "$@" ;;
    slownic) cmd_slownic "$@" ;;
    mpirun) cmd_mpirun "$@" ;;
    -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) die "usage: $0 up N [--rails R] | down | status | exec NAME CMD... | link A B | addr A B | slow A B RATE|off [BURST] | slownic A railK RATE|off [BURST] | mpirun [ARGS...]" ;;
  esac
}

main "$@"
