#!/usr/bin/env bash
# Side-by-side run-time overhead of the tracer on the IOR-like mini-app (tests/apps/ior_like.c),
# in the four configurations of the tracer-cost comparison (IOR's -t 64k -b 1m -s 16, write
# then read back):
#   a: POSIX, file per process          c: MPI-IO collective, one shared file
#   b: MPI-IO independent, shared file  d: POSIX, 4 KiB transfers (loop-heavy), file per process
# Each configuration runs untraced and traced, alternating run by run (and under Darshan and
# Recorder when pointed at them), RUNS times; the median wall time of mpirun is compared and
# the median trace size printed.
#   usage: scripts/bench-overhead.sh            (NP=16 RUNS=5 CONFIGS="a b c d" by default)
#   DARSHAN_LIB=/path/libdarshan.so   also run under Darshan (DXT on), built by hand, never
#                                     committed; its logs go to a scratch directory
#   RECORDER_LIB=/path/librecorder.so also run under Recorder
# Run it under `nice -n -15` on a machine shared with builds, and quote the load.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
LIB=${CARGO_TARGET_DIR:-$PWD/target}/release/libiotrex_tracer.so
[ -f "$LIB" ] || { echo "build first: cargo build --release --workspace --lib --bins --tests --examples" >&2; exit 1; }
NP=${NP:-16} RUNS=${RUNS:-5} CONFIGS=${CONFIGS:-a b c d}
W=$(mktemp -d /dev/shm/iotrex-overhead.XXXXXX)
trap 'rm -rf "$W"' EXIT
mpicc -O2 -o "$W/ior_like" tests/apps/ior_like.c

declare -A ARGS=(
  [a]="-a posix -F -t 65536 -b 1048576 -s 16 -R"
  [b]="-a mpiio -t 65536 -b 1048576 -s 16 -R"
  [c]="-a mpiio -c -t 65536 -b 1048576 -s 16 -R"
  [d]="-a posix -F -t 4096 -b 1048576 -s 16 -R"
)
tools="none iotrex"
[ -n "${DARSHAN_LIB:-}" ] && tools="$tools darshan"
[ -n "${RECORDER_LIB:-}" ] && tools="$tools recorder"

one() { # tool config -> "wall_ms trace_bytes"
  local tool=$1 cfg=$2 out="$W/out.$1" s e
  rm -rf "$out" "$W"/data*; mkdir -p "$out"
  local env=()
  case $tool in
    iotrex) env=(-x LD_PRELOAD="$LIB" -x IOTREX_OUT="$out/t.iotrex") ;;
    darshan) env=(-x LD_PRELOAD="$DARSHAN_LIB" -x DARSHAN_LOGFILE="$out/d.darshan" -x DXT_ENABLE_IO_TRACE=1) ;;
    recorder) env=(-x LD_PRELOAD="$RECORDER_LIB" -x RECORDER_TRACES_DIR="$out/r") ;;
  esac
  s=$(date +%s%N)
  (cd "$out" && timeout 300 mpirun -np "$NP" --mca btl self,vader "${env[@]}" "$W/ior_like" ${ARGS[$cfg]} -o "$W/data") >/dev/null 2>&1 ||
    { echo "$tool config $cfg failed" >&2; return 1; }
  e=$(date +%s%N)
  echo "$(( (e - s) / 1000000 )) $(du -sb "$out" | awk '{print $1}')"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "ior_like at $NP ranks, median of $RUNS alternating runs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-6s %10s" config "untraced"; for t in ${tools#none }; do printf " %24s" "$t"; done; echo
for cfg in $CONFIGS; do
  for t in $tools; do : >"$W/r.$t"; done
  for _ in $(seq "$RUNS"); do for t in $tools; do one "$t" "$cfg" >>"$W/r.$t"; done; done
  base=$(awk '{print $1}' "$W/r.none" | median)
  printf "%-6s %7d ms" "$cfg" "$base"
  for t in ${tools#none }; do
    w=$(awk '{print $1}' "$W/r.$t" | median); b=$(awk '{print $2}' "$W/r.$t" | median)
    awk -v w="$w" -v u="$base" -v b="$b" 'BEGIN { printf " %6d ms %+6.1f%% %7.1f KB", w, (w-u)/u*100, b/1000 }'
  done
  echo
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
