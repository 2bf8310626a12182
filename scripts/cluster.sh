#!/usr/bin/env bash
# An emulated cluster on one machine: N "nodes", each a network namespace and a UTS namespace
# of its own (node1..nodeN, hostname nodeK, address $NET.K on a bridge through a veth pair).
# MPI launchers start their daemons in them through scripts/cluster-agent.sh, as they would
# through ssh on a real cluster, so every rank sees its node's hostname and node-local
# communicators split by node.
#
#   cluster.sh up N            create node1..nodeN (what exists already is reused)
#   cluster.sh down            remove every node, the bridge and the /etc/hosts lines
#   cluster.sh status          one line per node; non-zero exit when none is up
#   cluster.sh hostfile [P [K]]    write an Open MPI hostfile (P slots on each of the first K
#                                  nodes, all by default), print its path
#   cluster.sh hosts [P [K]]       print hydra's host list: node1:P,node2:P,...
#   cluster.sh mpirun-args [P [K]] print the Open MPI arguments that launch through the nodes
#   cluster.sh exec NODE CMD   run CMD inside NODE's namespaces (mpirun must run in node1)
#
# Only private addresses are used, and only inside the namespaces made here: the bridge in
# the root namespace carries no address, so the root namespace's routing is untouched.
set -euo pipefail

# Where the UTS namespaces are kept (bind-mounted files) and the hostfiles written.
STATE=${IOTREX_CLUSTER_DIR:-/run/iotrex-cluster}
# The nodes' /24. 10.250.77.0/24 is private and unlikely to be routed on a build machine.
NET=${IOTREX_CLUSTER_NET:-10.250.77}
BRIDGE=iotrex-br
MARK="# iotrex-cluster"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
AGENT=$HERE/cluster-agent.sh

die() {
  echo "cluster.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '8,16p' "${BASH_SOURCE[0]:-$0}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Every failure to set up is an error naming what is missing, never a silent skip: a test
# that "passes" on a machine that cannot run it proves nothing.
require() {
  [ "$(id -u)" -eq 0 ] ||
    die "needs root: it creates network and UTS namespaces, a bridge and veth pairs, and edits /etc/hosts"
  local t
  for t in ip nsenter unshare flock mountpoint; do
    command -v "$t" >/dev/null || die "needs '$t' (iproute2 / util-linux), not found on PATH"
  done
  [ -e /proc/self/ns/net ] && [ -e /proc/self/ns/uts ] ||
    die "this kernel has no network or UTS namespaces (/proc/self/ns/{net,uts} missing)"
  unshare --net --uts true 2>/dev/null ||
    die "cannot create network and UTS namespaces here (unshare --net --uts failed: a container without CAP_SYS_ADMIN?)"
}

# The nodes this script made: one UTS file each.
nodes() {
  [ -d "$STATE/uts" ] || return 0
  local f
  for f in "$STATE"/uts/node*; do
    [ -e "$f" ] && basename "$f"
  done | sort -V
}

# Runs with the state lock held: two `up`s at once (two test binaries) would race on the
# same names.
locked() {
  mkdir -p "$STATE"
  exec 9>"$STATE/lock"
  flock 9
}

up_node() {
  local k=$1 n=node$1 uts=$STATE/uts/node$1
  [ -e "/run/netns/$n" ] || ip netns add "$n" || die "ip netns add $n failed"
  # The veth's root end sits on the bridge; its other end is eth0 inside the node.
  if ! ip link show "iotrex-v$k" >/dev/null 2>&1; then
    ip -n "$n" link del eth0 2>/dev/null || true
    ip link add "iotrex-v$k" type veth peer name eth0 netns "$n" ||
      die "cannot create the veth pair for $n (veth support missing?)"
  fi
  ip link set "iotrex-v$k" master "$BRIDGE" up
  ip -n "$n" link set lo up
  ip -n "$n" link set eth0 up
  ip -n "$n" -4 addr show dev eth0 | grep -q "inet $NET.$k/" ||
    ip -n "$n" addr add "$NET.$k/24" dev eth0
  # The UTS namespace lives as long as the bind mount on its file does.
  if ! mountpoint -q "$uts"; then
    touch "$uts"
    unshare --uts="$uts" hostname "$n" ||
      die "cannot keep a UTS namespace on $uts (unshare --uts=FILE failed)"
  fi
  # hydra's proxies and mpirun resolve node names: one line per node, marked for removal.
  grep -q " $n $MARK\$" /etc/hosts || echo "$NET.$k $n $MARK" >>/etc/hosts
}

cmd_up() {
  local n=${1:-}
  [[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 250 ] || die "up: N must be a node count 1..250, got '${1:-}'"
  require
  locked
  mkdir -p "$STATE/uts"
  # `ip netns add` makes /run/netns a mount of its own the first time; note that it was us,
  # so that down removes it again.
  if ! mountpoint -q /run/netns 2>/dev/null; then touch "$STATE/netns-mount"; fi
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge || die "cannot create the bridge $BRIDGE (bridge support missing?)"
  fi
  ip link set "$BRIDGE" up
  local k
  for k in $(seq 1 "$n"); do up_node "$k"; done
  cmd_status
}

cmd_down() {
  require
  locked
  local n k
  for n in $(nodes); do
    k=${n#node}
    umount "$STATE/uts/$n" 2>/dev/null || true
    rm -f "$STATE/uts/$n"
    # Deleting the namespace deletes its veth end, which deletes the pair.
    [ -e "/run/netns/$n" ] && ip netns del "$n"
    ip link del "iotrex-v$k" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  # Rewritten in place, not replaced (sed -i): /etc/hosts may be a bind mount.
  if grep -q " $MARK\$" /etc/hosts; then
    local keep
    keep=$(grep -v " $MARK\$" /etc/hosts || true)
    printf '%s\n' "$keep" >/etc/hosts
  fi
  if [ -e "$STATE/netns-mount" ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null || true
    rmdir /run/netns 2>/dev/null || true
  fi
  rm -f "$STATE"/hostfile.* "$STATE/netns-mount"
  rmdir "$STATE/uts" 2>/dev/null || true
  rm -f "$STATE/lock"
  rmdir "$STATE" 2>/dev/null || true
}

# A node is up when its namespaces exist, it has its address and its hostname.
node_ok() {
  local n=$1 k=${1#node}
  [ -e "/run/netns/$n" ] && mountpoint -q "$STATE/uts/$n" &&
    ip -n "$n" -4 addr show dev eth0 2>/dev/null | grep -q "inet $NET.$k/" &&
    [ "$(nsenter --uts="$STATE/uts/$n" hostname)" = "$n" ]
}

cmd_status() {
  local n any=0 bad=0
  for n in $(nodes); do
    any=1
    if node_ok "$n"; then
      echo "$n up $NET.${n#node}"
    else
      echo "$n broken (run: cluster.sh up N again, or down)"
      bad=1
    fi
  done
  [ $any -eq 1 ] || die "no node is up (run: cluster.sh up N)"
  [ $bad -eq 0 ]
}

up_nodes() {
  local n
  for n in $(nodes); do node_ok "$n" && echo "$n"; done
  return 0
}

# The first K nodes that are up (all when K is empty), one per line; an error when fewer are.
pick() {
  local p=$1 k=$2 up
  [[ $p =~ ^[1-9][0-9]*$ ]] || die "P must be a slot count, got '$p'"
  up=$(up_nodes)
  [ -n "$up" ] || die "no node is up (run: cluster.sh up N)"
  [ -z "$k" ] && { echo "$up"; return; }
  [[ $k =~ ^[1-9][0-9]*$ ]] || die "K must be a node count, got '$k'"
  [ "$(echo "$up" | wc -l)" -ge "$k" ] || die "$k nodes asked for, only $(echo "$up" | wc -l) up (run: cluster.sh up $k)"
  echo "$up" | head -n "$k"
}

cmd_hostfile() {
  local p=${1:-1} k=${2:-} f list tmp
  list=$(pick "$p" "$k")
  f=$STATE/hostfile.$p${k:+.$k}
  # A temporary file of its own: launches made at once write the same hostfile.
  tmp=$(mktemp "$f.XXXXXX") && chmod 644 "$tmp"
  echo "$list" | sed "s/\$/ slots=$p/" >"$tmp"
  mv "$tmp" "$f"
  echo "$f"
}

cmd_hosts() {
  local p=${1:-1} list
  list=$(pick "$p" "${2:-}")
  echo "$list" | sed "s/\$/:$p/" | paste -sd,
}

cmd_mpirun_args() {
  local hf
  hf=$(cmd_hostfile "${1:-1}" "${2:-}")
  echo "--mca plm_rsh_agent $AGENT --hostfile $hf" \
    "--mca oob_tcp_if_include $NET.0/24 --mca btl_tcp_if_include $NET.0/24"
}

cmd_exec() {
  local n=${1:-}
  [ -n "$n" ] && [ $# -ge 2 ] || die "exec: usage: cluster.sh exec NODE CMD..."
  shift
  node_ok "$n" || die "$n is not up (run: cluster.sh up N)"
  # exec keeps the pid, so a `timeout` around this script signals the command itself.
  exec nsenter --net="/run/netns/$n" --uts="$STATE/uts/$n" -- "$@"
}

case ${1:-} in
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
status) cmd_status ;;
hostfile) shift; cmd_hostfile "$@" ;;
hosts) shift; cmd_hosts "$@" ;;
mpirun-args) shift; cmd_mpirun_args "$@" ;;
exec) shift; cmd_exec "$@" ;;
*) usage ;;
esac
