#!/usr/bin/env bash
# Replay benchmarks (issue "Replay"), printed as figures and ratios:
#  1. fidelity: each mini-app (ior_like collective MPI-IO and POSIX file-per-process,
#     io_sample, comm_mix) is traced TRACES times (default 5) at 8 and 16 ranks; the trace
#     whose wall time is the median is replayed REPEAT times (default 5) with
#     `mpirun -np N iotrex-replay` under --comm delay and --comm real, and once with --threads
#     under each. Printed: the traced wall time (the trace header's: end of MPI_Init to
#     MPI_Finalize, slowest rank) with the spread of the TRACES runs, the replay's wall time
#     (its --json report: barrier, replay, barrier; reading the trace and MPI start-up are not
#     in it), and replay vs traced. Target: within 10%. The spread of the traced runs is the
#     noise floor: on a machine with fewer cores than ranks it is often wider than 10%.
#  2. overhead: a plain C loop of 100,000 pwrites of 8 KiB to /dev/shm
#     (replay/bench/pwrite_loop.c) against `iotrex-replay --threads --compute none` of that
#     loop's own trace. Median of 5.
# Issue accuracy (1,000 and 10,000 ops/s) is `cargo run --release -p replay --example accuracy`.
# Binaries come from $CARGO_TARGET_DIR/release (default target/release).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
T=${CARGO_TARGET_DIR:-$PWD/target}
case "$T" in /*) ;; *) T=$PWD/$T ;; esac
BIN=$T/release
LIB=$BIN/libiotrex_tracer.so
for f in "$LIB" "$BIN/iotrex" "$BIN/iotrex-replay"; do
  [ -f "$f" ] || { echo "build first: cargo build --release (missing $f)" >&2; exit 1; }
done
REPEAT=${REPEAT:-5}
TRACES=${TRACES:-5}
NPS=${NPS:-"8 16"}
W=$(mktemp -d /dev/shm/iotrex-bench-replay.XXXXXX)
trap 'rm -rf "$W"' EXIT
for a in ior_like io_sample comm_mix; do mpicc -O2 -o "$W/$a" tests/apps/$a.c; done
cc -O2 -o "$W/pwrite_loop" replay/bench/pwrite_loop.c

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The median and the range of the numbers read: "median min max".
median_range() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)], a[1], a[NR]}'; }
# Open MPI's defaults (OMPIO: one collective-buffering aggregator per 8 ranks), as in demo.sh.
MPIRUN=(mpirun --mca btl self,vader)

# name|command (DIR is replaced by a scratch directory). Each run lasts 60-250 ms at 8 ranks:
# runs of 7-20 ms (the sizes before) were dominated by start-up jitter, and their traced wall
# times alone spread by 20-50%.
APPS=(
  "ior_like-coll|ior_like -a mpiio -c -t 65536 -b 262144 -s 8 -i 2 -o DIR/ior.dat"
  "ior_like-posix|ior_like -a posix -F -t 65536 -b 524288 -s 8 -i 8 -o DIR/ior.dat"
  "io_sample|io_sample DIR 400 8192 6 262144"
  "comm_mix|comm_mix DIR 10 2000 4096"
)

# replay TRACE NP MODE COMM COMPUTE: prints the median wall time (ns) of REPEAT replays, or
# nothing.
replay() {
  local tr=$1 np=$2 mode=$3 comm=$4 compute=$5 r="$W/replay-root" n=$REPEAT
  local -a cmd
  [ "$mode" = threads ] && n=1
  for _ in $(seq "$n"); do
    rm -rf "$r"; mkdir -p "$r"
    if [ "$mode" = threads ]; then
      cmd=("$BIN/iotrex-replay" "$tr" --threads)
    else
      cmd=(timeout -k 5 120 "${MPIRUN[@]}" -np "$np" "$BIN/iotrex-replay" "$tr")
    fi
    if "${cmd[@]}" --root "$r" --prep --comm "$comm" --compute "$compute" --json "$W/r.json" > "$W/replay.log" 2>&1; then
      jq '.wall_ns' "$W/r.json"
    else
      echo "replay of $tr ($mode, --comm $comm) failed:" >&2; tail -5 "$W/replay.log" >&2
    fi
  done | median_range
}

echo "== 1. fidelity: replay vs traced wall time ($(nproc) cores; traced: median [min-max] of $TRACES runs; mpi: median of $REPEAT replays)   target: within 10%"
printf '%-15s %3s %24s   %-7s %-5s %-7s %11s %9s   %s\n' app ranks "traced" mode comm compute replay "vs traced" "replays' range vs traced"
for np in $NPS; do
  for spec in "${APPS[@]}"; do
    name=${spec%%|*}; cmd=${spec#*|}
    d="$W/app"
    : > "$W/walls"
    for t in $(seq "$TRACES"); do
      rm -rf "$d"; mkdir -p "$d"
      set -- ${cmd//DIR/$d}
      app=$1; shift
      if timeout -k 5 120 "${MPIRUN[@]}" -np "$np" -x LD_PRELOAD="$LIB" -x IOTREX_OUT="$W/t$t.iotrex" \
          "$W/$app" "$@" > "$W/trace.log" 2>&1; then
        echo "$("$BIN/iotrex" show --json "$W/t$t.iotrex" | jq '.header.wall_ns') $t" >> "$W/walls"
      else
        echo "$name at $np ranks: tracing failed:" >&2; tail -5 "$W/trace.log" >&2
      fi
    done
    [ -s "$W/walls" ] || continue
    # The replayed trace is the run with the median wall time.
    read -r traced t < <(sort -g "$W/walls" | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
    spread=$(sort -g "$W/walls" | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.1f-%.1f", lo/1e6, hi/1e6}')
    tr="$W/$name.$np.iotrex"; cp "$W/t$t.iotrex" "$tr"
    # --comm real also with --compute work: the traced gaps are wall time and, with more
    # ranks than cores, include waits for a core that a real replay meets again.
    for run in "mpi delay mean" "mpi real mean" "mpi real work" "threads delay mean" "threads real mean"; do
      set -- $run
      read -r rep lo hi < <(replay "$tr" "$np" "$1" "$2" "$3"; echo)
      awk -v n="$name" -v np="$np" -v t="$traced" -v sp="$spread" -v m="$1" -v c="$2" -v k="$3" -v r="$rep" -v lo="$lo" -v hi="$hi" 'BEGIN {
        tt = sprintf("%.1fms [%s]", t/1e6, sp)
        if (r == "") { printf "%-15s %3d %24s   %-7s %-5s %-7s %11s\n", n, np, tt, m, c, k, "failed"; exit }
        printf "%-15s %3d %24s   %-7s %-5s %-7s %9.1fms %+8.1f%%   [%+.0f%%, %+.0f%%]\n", n, np, tt, m, c, k, r/1e6, (r-t)/t*100, (lo-t)/t*100, (hi-t)/t*100 }'
    done
  done
done

echo
echo "== 2. replay overhead at --compute none: 100,000 pwrites of 8 KiB to /dev/shm (median of 5)"
N=100000
"$W/pwrite_loop" "$W/pw.dat" 1000 8192 > /dev/null
LD_PRELOAD="$LIB" IOTREX_OUT="$W/pw.iotrex" "$W/pwrite_loop" "$W/pw.dat" "$N" 8192 > /dev/null
c=$(for _ in 1 2 3 4 5; do "$W/pwrite_loop" "$W/pw.dat" "$N" 8192 | awk '{print $1}'; done | median)
rp=$(for _ in 1 2 3 4 5; do
  r="$W/replay-root"; rm -rf "$r"; mkdir -p "$r"
  "$BIN/iotrex-replay" "$W/pw.iotrex" --threads --compute none --root "$r" --json "$W/o.json" > /dev/null
  jq '.wall_ns' "$W/o.json"
done | median)
awk -v c="$c" -v r="$rp" -v n="$N" 'BEGIN {
  printf "plain C loop        %8.1f ms  %7.0f ns/call  %8.0f MB/s\n", c/1e6, c/n, n*8192/c*1e3
  printf "iotrex-replay       %8.1f ms  %7.0f ns/call  %8.0f MB/s\n", r/1e6, r/n, n*8192/r*1e3
  printf "replay / C time     x%.2f  (+%.0f ns per call)\n", r/c, (r-c)/n }'
