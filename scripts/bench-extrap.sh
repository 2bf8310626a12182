#!/usr/bin/env bash
# Extrapolation benchmarks on real traces (issue "Extrapolation"):
#  - time and output size of extrapolating ior_like (collective) and io_sample from 4, 8, 12,
#    16 ranks to 64 and to 1,048,576 ranks;
#  - timing accuracy: comm_mix's wall time predicted at 32 ranks from 4-16 against a real
#    32-rank run, as a % error.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
BIN=$PWD/target/release/iotrex
W=$(mktemp -d /dev/shm/iotrex-bench-extrap.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/data"
for a in ior_like io_sample comm_mix; do mpicc -O2 -o "$W/$a" tests/apps/$a.c; done
trace() { # app np args...
  local app=$1 np=$2; shift 2
  # Under the MPI library's defaults: extrap derives the collective calls' nested I/O with its
  # model of the library, at 2^20 ranks too.
  timeout 120 "$BIN" trace -o "$W/$app.$np.iotrex" -- mpirun -np "$np" --mca btl self,vader \
    "$W/$app" "$@" >/dev/null 2>&1
}
for np in 4 8 12 16; do
  trace ior_like $np -a mpiio -c -t 65536 -b 131072 -s 2 -o "$W/data/ior.dat"
  trace io_sample $np "$W/data" 20 8192 3 65536
  trace comm_mix $np "$W/data" 5 20000 4096
done
echo "== extrapolation time and size (real traces from 4, 8, 12, 16 ranks)"
for app in ior_like io_sample; do
  largest=$(stat -c %s "$W/$app.16.iotrex")
  for target in 64 1048576; do
    s=$(date +%s%N)
    "$BIN" extrap "$W"/$app.{4,8,12,16}.iotrex --ranks $target -o "$W/$app.x$target.iotrex" >/dev/null
    e=$(date +%s%N)
    size=$(stat -c %s "$W/$app.x$target.iotrex")
    awk -v a=$app -v t=$target -v ms=$(( (e - s) / 1000000 )) -v sz=$size -v l=$largest \
      'BEGIN { printf "%-10s -> %8d ranks: %5d ms, %6d B (%.2fx the largest input)   target: < 1 s, <= 2x\n", a, t, ms, sz, sz/l }'
  done
done
echo
echo "== timing accuracy: comm_mix wall time at 32 ranks"
trace comm_mix 32 "$W/data" 5 20000 4096
"$BIN" extrap "$W"/comm_mix.{4,8,12,16}.iotrex --ranks 32 -o "$W/comm_mix.x32.iotrex" >/dev/null
pred=$("$BIN" --json show "$W/comm_mix.x32.iotrex" | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["wall_ns"])')
real=$("$BIN" --json show "$W/comm_mix.32.iotrex" | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["wall_ns"])')
awk -v p="$pred" -v r="$real" 'BEGIN { printf "predicted %.1f ms, measured %.1f ms: %+.1f%% error\n", p/1e6, r/1e6, (p-r)/r*100 }'
