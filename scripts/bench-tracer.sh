#!/usr/bin/env bash
# Tracer benchmarks (issue "Tracer"), printed as figures and ratios against untraced runs:
#  1. per-call overhead: 10^6 pwrite of 8 B to /dev/shm, median of 5 runs, with and without
#     the preload (call-site depth 0 and the default 4); when valgrind is installed, also the
#     user-space instructions per call (callgrind, 2*10^5 minus 10^5 calls), which a busy
#     machine does not blur;
#  2. wall-time overhead on ior_like at 16 ranks and io_sample at 8 ranks, and on the
#     loop-heavy pattern (ior_like POSIX, 4 KiB transfers, 16 ranks: median of 7
#     alternating runs, with the CPU time of all ranks, which a loaded machine blurs less);
#  3. finalize merge time and trace size at 4..64 ranks (IOTREX_VERBOSE reports the merge);
#  4. fixed costs at 4 and 16 ranks: MPI_Init, the first MPI_File_open (with a barrier after
#     it) and MPI_Finalize (the merge included), rank 0's wall times, median of 5 alternating
#     runs (tracer/bench/fixed_cost.c);
#  5. per-call instructions of MPI_File_write_at, MPI_File_write_at_all and of the pwrite the
#     aggregator makes inside the collective (callgrind on one rank, tracer/bench/mpiio_loop.c),
#     in the nested loop's steady state and within its first inner loop.
# PARTS="2b" (any of 1 2 2b 3 4 5, default all) runs only those parts. Run it under
# `nice -n -15` on a machine shared with builds.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
LIB=${CARGO_TARGET_DIR:-$PWD/target}/release/libiotrex_tracer.so
[ -f "$LIB" ] || { echo "build first: cargo build --release --workspace --lib --bins --tests --examples" >&2; exit 1; }
PARTS=" ${PARTS:-1 2 2b 3 4 5} "
want() { [[ "$PARTS" == *" $1 "* ]]; }
W=$(mktemp -d /dev/shm/iotrex-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
cc -O2 -o "$W/pwrite_loop" tracer/bench/pwrite_loop.c
cc -O2 -o "$W/rank_rusage" tracer/bench/rank_rusage.c
for a in ior_like io_sample; do mpicc -O2 -o "$W/$a" tests/apps/$a.c; done
for a in fixed_cost mpiio_loop; do mpicc -O2 -g -o "$W/$a" tracer/bench/$a.c; done

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
per_call() { for _ in 1 2 3 4 5; do env "$@" "$W/pwrite_loop" 1000000 | awk '{print $1}'; done | median; }

if want 1; then
echo "== 1. per-call overhead (10^6 pwrite of 8 B, median of 5)"
base=$(per_call IOTREX_UNUSED=1)
d0=$(per_call LD_PRELOAD="$LIB" IOTREX_OUT="$W/p0.iotrex" IOTREX_STACK_DEPTH=0)
d4=$(per_call LD_PRELOAD="$LIB" IOTREX_OUT="$W/p4.iotrex")
awk -v b="$base" -v d0="$d0" -v d4="$d4" 'BEGIN {
  printf "untraced            %7.1f ns/call\n", b
  printf "traced, depth 0     %7.1f ns/call  (+%.1f ns, x%.2f)\n", d0, d0-b, d0/b
  printf "traced, depth 4     %7.1f ns/call  (+%.1f ns, x%.2f)   target: +60 ns\n", d4, d4-b, d4/b }'
if command -v valgrind >/dev/null; then
  instr() { # env... -> user-space instructions per call
    local a b
    a=$(env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$W/pwrite_loop" 100000 2>&1 | awk '/Collected/ {print $4}')
    b=$(env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$W/pwrite_loop" 200000 2>&1 | awk '/Collected/ {print $4}')
    echo $(( (b - a) / 100000 ))
  }
  ib=$(instr IOTREX_UNUSED=1)
  i0=$(instr LD_PRELOAD="$LIB" IOTREX_OUT="$W/p0.iotrex" IOTREX_STACK_DEPTH=0)
  i4=$(instr LD_PRELOAD="$LIB" IOTREX_OUT="$W/p4.iotrex")
  echo "instructions/call (callgrind): untraced $ib, depth 0 $i0 (+$((i0 - ib))), depth 4 $i4 (+$((i4 - ib)))   target: +300 at depth 4"
  echo "  (where they go, per function: docs/tracer-cost.md)"
fi
fi

wall() { # runs "$@" 3 times, prints the median wall time in ms
  for _ in 1 2 3; do
    s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000000 ))
  done | median
}
run() { # np traced(0/1) app args...
  local np=$1 traced=$2 app=$3; shift 3
  if [ "$traced" = 1 ]; then
    timeout 120 mpirun -np "$np" --mca btl self,vader -x LD_PRELOAD="$LIB" -x IOTREX_OUT="$W/t.iotrex" "$W/$app" "$@"
  else
    timeout 120 mpirun -np "$np" --mca btl self,vader "$W/$app" "$@"
  fi
}
if want 2; then
echo
echo "== 2. wall-time overhead (median of 3, includes mpirun start-up)"
for spec in "16 ior_like -a mpiio -c -t 65536 -b 262144 -s 4 -o $W/ior.dat" "8 io_sample $W 100 8192 3 1048576"; do
  set -- $spec
  u=$(wall run "$1" 0 "${@:2}"); t=$(wall run "$1" 1 "${@:2}")
  awk -v u="$u" -v t="$t" -v n="$2 at $1 ranks" 'BEGIN { printf "%-22s untraced %6d ms, traced %6d ms  (%+.1f%%)   target: 5%%\n", n, u, t, (t-u)/u*100 }'
done

fi

if want 2b; then
echo
echo "== 2b. loop-heavy (ior_like POSIX, 4 KiB transfers, 16 ranks, median of 7 alternating runs)"
# Each run prints "wall_ms cpu_ms rank0_cpu_ms minor_faults rank0_rss_kb": wall of mpirun; CPU
# (user + system) summed over the ranks, from each rank's wait4 rusage (tracer/bench/rank_rusage.c:
# to the microsecond, and not blurred by a loaded machine the way wall time is); rank 0 apart,
# since it alone merges and writes the trace at MPI_Finalize; minor faults of all ranks.
loop_heavy() { # traced(0/1)
  local s e lib=""
  [ "$1" = 1 ] && lib=$LIB
  rm -f "$W"/ru.*
  s=$(date +%s%N)
  IOTREX_BENCH_LIB=$lib timeout 120 mpirun -np 16 --mca btl self,vader -x IOTREX_BENCH_LIB -x IOTREX_OUT="$W/t.iotrex" \
    "$W/rank_rusage" "$W/ru" "$W/ior_like" -a posix -F -t 4096 -b 1048576 -s 16 -i 4 -o "$W/lh" >/dev/null 2>&1
  e=$(date +%s%N)
  cat "$W"/ru.* | awk -v w=$(( (e - s) / 1000000 )) -v r0="$(cat "$W/ru.0")" '{c += $1 + $2; f += $6}
    END {split(r0, z, " "); printf "%d %.1f %.1f %d %d\n", w, c / 1000, (z[1] + z[2]) / 1000, f, z[7]}'
}
: >"$W/lh.u"; : >"$W/lh.t"
for _ in 1 2 3 4 5 6 7; do loop_heavy 0 >>"$W/lh.u"; loop_heavy 1 >>"$W/lh.t"; done
col() { awk -v k="$1" '{print $k}' "$2" | median; }
awk -v uw="$(col 1 "$W/lh.u")" -v tw="$(col 1 "$W/lh.t")" -v uc="$(col 2 "$W/lh.u")" -v tc="$(col 2 "$W/lh.t")" \
    -v u0="$(col 3 "$W/lh.u")" -v t0="$(col 3 "$W/lh.t")" -v uf="$(col 4 "$W/lh.u")" -v tf="$(col 4 "$W/lh.t")" \
    -v ur="$(col 5 "$W/lh.u")" -v tr="$(col 5 "$W/lh.t")" 'BEGIN {
  printf "wall:            untraced %7d ms, traced %7d ms  (%+.1f%%)   target: 3%%\n", uw, tw, (tw-uw)/uw*100
  printf "cpu, all ranks:  untraced %7.1f ms, traced %7.1f ms  (%+.1f%%)\n", uc, tc, (tc-uc)/uc*100
  printf "cpu, rank 0:     untraced %7.1f ms, traced %7.1f ms\n", u0, t0
  printf "minor faults:    untraced %7d,    traced %7d\n", uf, tf
  printf "rank 0 peak RSS: untraced %7d KB, traced %7d KB\n", ur, tr }'
fi

if want 4; then
echo
echo "== 4. fixed costs (rank 0's wall ms, median of 5 alternating runs)"
fixed() { # np traced(0/1) -> "init_ms open_ms finalize_ms"
  local env=()
  [ "$2" = 1 ] && env=(-x LD_PRELOAD="$LIB" -x IOTREX_OUT="$W/f.iotrex")
  rm -f "$W/fixed.dat"
  timeout 120 mpirun -np "$1" --mca btl self,vader "${env[@]}" "$W/fixed_cost" "$W/fixed.dat" 2>/dev/null | tail -1
}
for np in 4 16; do
  : >"$W/fx.u"; : >"$W/fx.t"
  for _ in 1 2 3 4 5; do fixed "$np" 0 >>"$W/fx.u"; fixed "$np" 1 >>"$W/fx.t"; done
  for k in 1 2 3; do
    name=$(echo "MPI_Init first_MPI_File_open MPI_Finalize" | cut -d' ' -f$k)
    u=$(awk -v k=$k '{print $k}' "$W/fx.u" | median); t=$(awk -v k=$k '{print $k}' "$W/fx.t" | median)
    awk -v n="$name" -v np="$np" -v u="$u" -v t="$t" 'BEGIN {
      printf "%2d ranks  %-20s untraced %8.2f ms, traced %8.2f ms  (%+.2f ms)\n", np, n, u, t, t-u }'
  done
done
echo "  target: the first MPI_File_open adds under 1 ms at 16 ranks"
fi

if want 5 && command -v valgrind >/dev/null; then
echo
echo "== 5. MPI-IO per-call instructions (callgrind, one rank, 8 B writes, (2N - N calls) / N)"
cg() { # mode n traced(0/1) -> callgrind output file
  local env=() f="$W/cg.$1.$2.$3"
  [ "$3" = 1 ] && env=(-x LD_PRELOAD="$LIB" -x IOTREX_OUT="$W/c.iotrex")
  rm -f "$W/cg.dat"
  timeout 600 mpirun -np 1 "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$f" \
    "$W/mpiio_loop" "$1" "$2" "$W/cg.dat" >/dev/null 2>&1
  echo "$f"
}
total() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'; }
# Inclusive instructions of the tracer's `pwrite` hook (libc's call and the system call's
# user-space part included); every function listed, as in a short run the hook falls under
# callgrind_annotate's default 99% threshold.
incl() { fn_incl "$1" "tracer/src/hook.rs:pwrite"; }
fn_incl() { # callgrind file, function name -> its inclusive instructions (first listing)
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null | awk -v f="$2" '!d && index($0, f) {gsub(",", "", $1); print $1; d = 1}'
}
# Two windows: calls 2,001-4,000 (the steady state of the nested loop: the inner loop of
# 1,024 writes repeated) and calls 501-1,000 (within the first inner loop, the case the
# compressor extends in place: docs/tracer-cost.md, "A loop around a call with children").
for N in 2000 500; do
for mode in at at_all; do
  u1=$(cg $mode $N 0); u2=$(cg $mode $((2 * N)) 0); t1=$(cg $mode $N 1); t2=$(cg $mode $((2 * N)) 1)
  u=$(( ($(total "$u2") - $(total "$u1")) / N )); t=$(( ($(total "$t2") - $(total "$t1")) / N ))
  echo "MPI_File_write_$mode, calls $((N + 1))-$((2 * N)): untraced $u, traced $t instructions/call (+$((t - u)))   target: +400"
  # The same from the call alone: the tracer's hook against the library's function, inclusive.
  # The totals above also take in whatever a one-off step (the open, the finalize) costs more
  # in one run than in the other, which moved them by up to thousands per call between runs.
  lu=$(( ($(fn_incl "$u2" ":PMPI_File_write_$mode ") - $(fn_incl "$u1" ":PMPI_File_write_$mode ")) / N ))
  lt=$(( ($(fn_incl "$t2" "record.rs:MPI_File_write_$mode ") - $(fn_incl "$t1" "record.rs:MPI_File_write_$mode ")) / N ))
  echo "  the call alone (inclusive): untraced $lu, traced $lt instructions/call (+$((lt - lu)))"
  if [ $mode = at_all ]; then
    h=$(( ($(incl "$t2") - $(incl "$t1")) / N ))
    echo "  nested pwrite (the aggregator's, inside the collective): $h instructions/call, the hook with libc's call   (a plain pwrite: part 1)"
  fi
done
done
fi

want 3 || exit 0
echo
echo "== 3. finalize merge time and trace size (ior_like collective)"
for np in 4 8 16 32 64; do
  out=$(IOTREX_VERBOSE=1 timeout 120 mpirun -np $np --mca btl self,vader -x LD_PRELOAD="$LIB" -x IOTREX_OUT="$W/m$np.iotrex" -x IOTREX_VERBOSE \
        "$W/ior_like" -a mpiio -c -t 65536 -b 131072 -s 2 -o "$W/ior.dat" 2>&1 | grep -i "merge" | head -1 || true)
  printf "%3d ranks: %8d B   %s\n" "$np" "$(stat -c %s "$W/m$np.iotrex")" "$out"
done
