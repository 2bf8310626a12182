#!/usr/bin/env bash
# Extrapolation to a target machine's shape on the emulated cluster (scripts/cluster.sh), the
# wider matrix than tests/extrap_nodes*.rs (a benchmark that prints figures, not a test):
#  - every program, traced at 2 nodes x 1, 2, 3, 4 ranks and extrapolated to 2 x 8 (more ranks
#    per node, "ppn"), and at 2, 3, 4, 5 nodes x 2 ranks and extrapolated to 8 x 2 (more nodes,
#    "nodes"), then diffed against a real run at the target: one line each, saying identical,
#    within the tolerance, or the first line of the refusal, with extrap's time;
#  - `extrap` to 2^20 ranks as 32,768 nodes x 32 from the IOR-like app's collective MPI-IO
#    under ROMIO (a derived collective layer) and from PnetCDF (`pnc_more`) under OMPIO, each
#    timed with /usr/bin/time (medians of 3), its output's size against the largest input
#    (targets: < 5 s, at most 2x), or extrap's refusal (`--max-memory`).
# Open MPI's defaults throughout; ROMIO (`--mca io romio321`) is a library under test.
# Usage: scripts/bench-nodes.sh [PROGRAM...]   (default: all; names as in the table below;
#   a name of none, such as `big`, runs the 2^20-rank blocks only)
# Needs root (the cluster), lmp for LAMMPS (scripts/install-deps.sh). Leaves the cluster up.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
BIN=$root/target/release/iotrex
LIB=$root/target/release/libiotrex_tracer.so
[ -x "$BIN" ] && [ -e "$LIB" ] || {
  echo "build first: cargo build --release --workspace" >&2
  exit 1
}
W=$(mktemp -d /dev/shm/iotrex-bench-nodes.XXXXXX)
trap 'rm -rf "$W"' EXIT
bash scripts/cluster.sh up 8 >/dev/null

build() { # app: tests/apps/app.c built with its libraries' flags
  local flags=
  grep -q '<hdf5.h>' "tests/apps/$1.c" && flags=$(pkg-config --cflags --libs hdf5-openmpi)
  grep -q '<pnetcdf.h>' "tests/apps/$1.c" && flags=$(pkg-config --cflags --libs pnetcdf)
  # shellcheck disable=SC2086
  mpicc -O1 -o "$W/$1" "tests/apps/$1.c" $flags
}
for a in ior_like md_like h5_coll pnc_more; do build $a; done
lammps_in=$root/tests/apps/lammps_weak.in

# name | iotrex trace options | mpirun options | program and arguments (DATA: the run's data
# directory, NP: the rank count) | extrap options | diff options | the ranks per node of the
# "ppn" series' inputs (default 1 2 3 4)
# LAMMPS runs the small deck of tests/it/extrap_nodes_apps.rs (3 x 3 x 3 cells per rank, 40
# steps) on a line grid; at 2 x 1 it calls differently (one exchange where both neighbours
# are one rank), so it is run from 2 x 1-4 (refused, naming 2 x 5 to trace instead) and from
# 2 x 2-5 ("lammps-from-2x2").
PROGRAMS=(
  "ior-posix-fpp||-|$W/ior_like -N -F -t 4096 -b 8192 -s 2 -o DATA/f||"
  "ior-mpiio-indep||-|$W/ior_like -a mpiio -t 4096 -b 8192 -s 2 -o DATA/f||"
  "ior-coll-ompio||-|$W/ior_like -a mpiio -c -t 4096 -b 8192 -s 2 -o DATA/f||"
  "ior-coll-romio||--mca io romio321|$W/ior_like -a mpiio -c -t 4096 -b 8192 -s 2 -o DATA/f||"
  "md_like||-|$W/md_like -n 4 -d DATA/md||"
  "h5_coll-ompio||-|$W/h5_coll DATA/ckpt.h5 -s 2 -R||"
  "h5_coll-ompio-noR||-|$W/h5_coll DATA/ckpt.h5 -s 2||"
  "h5_coll-romio-i||--mca io romio321|$W/h5_coll DATA/ckpt.h5 -s 2 -i||"
  "pnc_more|--pnetcdf|-|$W/pnc_more DATA/t.nc -k 4096 -s 3||"
  "pnc_more-k2048|--pnetcdf|-|$W/pnc_more DATA/t.nc -k 2048 -s 3||"
  "lammps||-|lmp -in $lammps_in -var d DATA -var px NP -var py 1 -var pz 1 -var c 3 -var steps 40 -log none -screen none|--approx-unfit|--tolerance 10%|"
  "lammps-from-2x2||-|lmp -in $lammps_in -var d DATA -var px NP -var py 1 -var pz 1 -var c 3 -var steps 40 -log none -screen none|--approx-unfit|--tolerance 10%|2 3 4 5"
)

trace() { # dir nodes ppn tflags mflags cmd
  local d=$1 k=$2 p=$3 tflags=$4 mflags=$5 cmd=$6 np=$(($2 * $3))
  rm -rf "$d/data" && mkdir -p "$d/data"
  cmd=${cmd//DATA/$d/data}
  cmd=${cmd//NP/$np}
  [ "$mflags" = - ] && mflags=
  # shellcheck disable=SC2086,SC2046
  (cd "$d" && timeout -k 5 300 bash "$root/scripts/cluster.sh" exec node1 env LD_PRELOAD= \
    "$BIN" trace $tflags --lib "$LIB" -o "$d/r.${k}x$p.iotrex" -- \
    mpirun $(bash "$root/scripts/cluster.sh" mpirun-args "$p" "$k") --mca btl self,vader,tcp \
    $mflags -np "$np" $cmd >"$d/log.${k}x$p" 2>&1)
}

series() { # name grow tflags mflags cmd xflags dflags ppns
  local name=$1 grow=$2 tflags=$3 mflags=$4 cmd=$5 xflags=$6 dflags=$7 ppns=${8:-1 2 3 4}
  local d=$W/$name.$grow layouts target shape ins=() l p
  mkdir -p "$d"
  if [ "$grow" = nodes ]; then
    layouts="2x2 3x2 4x2 5x2" target=8x2 shape=
  else
    layouts=$(for p in $ppns; do printf '2x%s ' "$p"; done) target=2x8 shape="--ranks-per-node 8"
  fi
  for l in $layouts $target; do
    if ! trace "$d" "${l%x*}" "${l#*x}" "$tflags" "$mflags" "$cmd"; then
      printf '%-18s %-5s trace at %s failed: %s\n' "$name" "$grow" "$l" "$(tail -1 "$d/log.$l")"
      return
    fi
  done
  for l in $layouts; do ins+=("$d/r.$l.iotrex"); done
  local s e said
  s=$(date +%s%N)
  # shellcheck disable=SC2086
  if ! "$BIN" extrap "${ins[@]}" --ranks 16 $shape $xflags -o "$d/x.iotrex" >"$d/extrap.log" 2>&1; then
    said="refused: $(grep -m1 '^error' "$d/extrap.log" | cut -c1-160)"
    grep -q 'in their place' "$d/extrap.log" && said+=" ($(grep -o 'trace [^,]* in their place' "$d/extrap.log"))"
  else
    e=$(date +%s%N)
    # shellcheck disable=SC2086
    if "$BIN" diff $dflags "$d/x.iotrex" "$d/r.$target.iotrex" >"$d/diff.log" 2>&1; then
      said="$(head -1 "$d/diff.log" | cut -d: -f1) ($(( (e - s) / 1000000 )) ms)"
    else
      said="differs: $(head -1 "$d/diff.log" | cut -c1-160)"
    fi
  fi
  printf '%-18s %-5s -> %s: %s\n' "$name" "$grow" "$target" "$said"
}

echo "== real programs: 2 x 1-4 -> 2 x 8 (ppn) and 2-5 x 2 -> 8 x 2 (nodes), diff against real runs"
for p in "${PROGRAMS[@]}"; do
  IFS='|' read -r name tflags mflags cmd xflags dflags ppns <<<"$p"
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  if [[ $name = lammps* ]] && ! command -v lmp >/dev/null; then
    echo "lammps: skipped, lmp not installed (scripts/install-deps.sh)"
    continue
  fi
  grows="ppn nodes"
  [ "$name" = lammps-from-2x2 ] && grows=ppn # its "nodes" series is lammps's
  for grow in $grows; do
    series "$name" "$grow" "$tflags" "$mflags" "$cmd" "$xflags" "$dflags" "$ppns"
  done
done

echo
# One extrapolation to 2^20 ranks as 32,768 nodes x 32 of the traces r.{2,3,4,5}x2.iotrex
# in DIR, 3 times, bounded: the machine is shared; what it takes beyond 8 GiB is said, not
# taken. Prints the median time and peak memory, the output's size against the largest
# input, or extrap's refusal.
big() { # dir
  local d=$1 ins=() k i largest size
  for k in 2 3 4 5; do ins+=("$d/r.${k}x2.iotrex"); done
  largest=$(stat -c %s "${ins[@]}" | sort -n | tail -1)
  : >"$d/times"
  for i in 1 2 3; do
    if ! (ulimit -v $((8 * 1024 * 1024)) && /usr/bin/time -f '%e %M' -o "$d/time" \
      "$BIN" extrap "${ins[@]}" --ranks 1048576 --ranks-per-node 32 -o "$d/x.iotrex" \
      >"$d/extrap.log" 2>&1); then
      echo "refused or failed: $(grep -m1 -v '^$' "$d/extrap.log" | cut -c1-400) ($(tail -1 "$d/time" 2>/dev/null))"
      return
    fi
    cat "$d/time" >>"$d/times"
  done
  size=$(stat -c %s "$d/x.iotrex")
  t=$(cut -d' ' -f1 "$d/times" | sort -n | sed -n 2p)
  kb=$(cut -d' ' -f2 "$d/times" | sort -n | sed -n 2p)
  awk -v t="$t" -v kb="$kb" -v s="$size" -v l="$largest" 'BEGIN { printf "%.2f s, %d MB peak (medians of 3), %d B output (%.2fx the largest input %d B)   targets: < 5 s, <= 2x\n", t, kb/1024, s, s/l, l }'
  grep -q '^note: nested calls of collective MPI-IO calls fitted' "$d/extrap.log" &&
    echo "  (the collective layer was fitted, not derived: $(grep -m1 '^note: nested' "$d/extrap.log" | cut -c1-300))"
  return 0
}

# big_from NAME WHAT TFLAGS MFLAGS CMD: traces CMD at 2-5 x 2 and extrapolates to 2^20.
big_from() {
  echo "== extrap to 2^20 ranks as 32,768 nodes x 32 ($2, 2-5 x 2); load: $(uptime | sed 's/.*load/load/')"
  local d=$W/$1
  mkdir -p "$d"
  for k in 2 3 4 5; do trace "$d" $k 2 "$3" "$4" "$5"; done
  big "$d"
}

big_from big "ior_like -a mpiio -c under ROMIO" "" "--mca io romio321" \
  "$W/ior_like -a mpiio -c -t 4096 -b 8192 -s 2 -o DATA/f"
big_from bigpnc "pnc_more -k 4096 -s 3, PnetCDF under OMPIO" "--pnetcdf" "" \
  "$W/pnc_more DATA/t.nc -k 4096 -s 3"
