#!/usr/bin/env bash
# The "ssh" of the emulated cluster (scripts/cluster.sh): MPI launchers call it as they would
# call ssh, `AGENT [options] HOST CMD...`, and it runs CMD in HOST's network and UTS
# namespaces. Open MPI: `--mca plm_rsh_agent AGENT`; MPICH's hydra: `-launcher ssh
# -launcher-exec AGENT`, which passes `-x` first.
set -euo pipefail
STATE=${IOTREX_CLUSTER_DIR:-/run/iotrex-cluster}
# ssh's options come before the host; the launchers pass only flags without values (-x).
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
[ $# -ge 2 ] || { echo "cluster-agent: usage: cluster-agent.sh [-x] HOST CMD..." >&2; exit 255; }
host=$1
shift
# ssh's status for "could not connect" is 255: the launcher then reports the host as
# unreachable instead of blaming the command.
if [ ! -e "/run/netns/$host" ] || [ ! -e "$STATE/uts/$host" ]; then
  echo "cluster-agent: node '$host' is not up (scripts/cluster.sh up N; status lists the nodes)" >&2
  # Open MPI gives up when its agent fails; MPICH's hydra waits for the proxy forever (its
  # ranks on the other nodes wait in MPI_Init). Interrupting it, as Ctrl-C would, makes it
  # stop its proxies and exit non-zero.
  case "$*" in *hydra_pmi_proxy*) kill -INT "$PPID" 2>/dev/null || true ;; esac
  exit 255
fi
# The launcher quotes CMD for a remote shell, as ssh would hand it to one.
exec nsenter --net="/run/netns/$host" --uts="$STATE/uts/$host" -- sh -c "$*"
