#!/usr/bin/env bash
# Unpacks Debian's MPICH into a private prefix (default /opt/iotrex-mpich) for the tracer's
# MPICH tests, WITHOUT installing it system-wide: installing the mpich package beside Open MPI
# would move the mpicc/mpirun alternatives, and every other test expects Open MPI there.
# apt resolves and downloads MPICH and whatever it needs that the machine lacks; dpkg -x
# unpacks them. Idempotent: does nothing when the prefix already has a working mpiexec.
set -euo pipefail
PREFIX=${IOTREX_MPICH_PREFIX:-/opt/iotrex-mpich}
if [ -x "$PREFIX/usr/bin/mpiexec.hydra" ] && [ -f "$PREFIX/usr/include/x86_64-linux-gnu/mpich/mpi.h" ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-mpich: need root (or sudo) to download packages with apt-get" >&2
    exit 1
  fi
fi
echo "install-mpich: unpacking MPICH into $PREFIX (private copy, not registered with dpkg)"
cache=$(mktemp -d /tmp/iotrex-mpich-debs.XXXXXX)
trap 'rm -rf "$cache"' EXIT
mkdir -p "$cache/partial"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --download-only resolves the dependencies the machine lacks; nothing is installed.
$SUDO apt-get install -y -qq --download-only --no-install-recommends \
  -o APT::Sandbox::User=root -o Dir::Cache::archives="$cache" mpich libmpich-dev >/dev/null
$SUDO mkdir -p "$PREFIX"
for deb in "$cache"/*.deb; do $SUDO dpkg -x "$deb" "$PREFIX"; done
[ -x "$PREFIX/usr/bin/mpiexec.hydra" ] || { echo "install-mpich: no mpiexec.hydra after unpacking" >&2; exit 1; }
echo "install-mpich: done"
