#!/usr/bin/env bash
# Traces tests/apps/meep_weak.ctl (Debian's meep-openmpi: weak-scaled 2D FDTD, one 40 x 40
# chunk per rank, Ez written every time unit to HDF5 files through parallel HDF5) at several
# scales and prints each trace's size. Usage: scripts/meep-scales.sh OUTDIR [SCALES...]
# Extra tracer settings come from the environment (e.g. IOTREX_APPROX=none); MEEP_TMAX sets
# the simulated time (default 4: 80 time steps, 4 field outputs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: $0 OUTDIR [SCALES...]}
shift
scales=${*:-4 8 12 16 32 64}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$out"
for n in $scales; do
  d="$out/run.$n"
  rm -rf "$d" && mkdir -p "$d"
  start=$(date +%s.%N)
  # Meep's string parameters are Scheme strings: the quotes are part of the value.
  timeout 600 "$root/target/release/iotrex" trace -o "$out/meep.$n.iotrex" -- \
    timeout 300 mpirun -np "$n" meep "n=$n" "tmax=${MEEP_TMAX:-4}" "outdir=\"$d/h5\"" \
    "$root/tests/apps/meep_weak.ctl" >"$d/trace.log" 2>&1
  end=$(date +%s.%N)
  printf '%4d ranks: %9d bytes  %.1f s\n' "$n" \
    "$(stat -c %s "$out/meep.$n.iotrex")" "$(echo "$end - $start" | bc)"
done
