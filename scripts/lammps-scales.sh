#!/usr/bin/env bash
# Traces tests/apps/lammps_weak.in (weak-scaled LAMMPS, MPI-IO text dumps) at several scales
# and prints each trace's size. Usage: scripts/lammps-scales.sh OUTDIR [SCALES...]
# Extra tracer settings come from the environment (e.g. IOTREX_APPROX=none).
# LAMMPS_GRID chooses the process grids: `cube` (default: 2x2x1, 2x2x2, 3x2x2, 4x2x2, 4x3x2,
# 4x4x2, 4x4x4, the shapes LAMMPS picks itself for these boxes, which change irregularly and
# with them the calls: a dimension of two ranks exchanges once) or `line` (N x 1 x 1: one
# shape at every scale, which extrapolates).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: $0 OUTDIR [SCALES...]}
shift
scales=${*:-4 8 12 16 32 64}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
grid() {
  if [ "${LAMMPS_GRID:-cube}" = line ]; then
    echo "$1 1 1"
    return
  fi
  case $1 in
    4) echo "2 2 1" ;; 8) echo "2 2 2" ;; 12) echo "3 2 2" ;; 16) echo "4 2 2" ;;
    24) echo "4 3 2" ;; 32) echo "4 4 2" ;; 64) echo "4 4 4" ;; *) echo "unknown scale $1" >&2; exit 2 ;;
  esac
}
mkdir -p "$out"
for n in $scales; do
  read -r px py pz <<<"$(grid "$n")"
  d="$out/run.$n"
  rm -rf "$d" && mkdir -p "$d"
  start=$(date +%s.%N)
  timeout 600 "$root/target/release/iotrex" trace -o "$out/lammps.$n.iotrex" -- \
    mpirun -np "$n" lmp -in "$root/tests/apps/lammps_weak.in" -var d "$d" \
    -var px "$px" -var py "$py" -var pz "$pz" -log none -screen none >"$d/trace.log" 2>&1
  end=$(date +%s.%N)
  printf '%4d ranks (%sx%sx%s): %9d bytes  %.1f s\n' "$n" "$px" "$py" "$pz" \
    "$(stat -c %s "$out/lammps.$n.iotrex")" "$(echo "$end - $start" | bc)"
done
