#!/usr/bin/env bash
# Cross-storage replay benchmark: trace on one storage system, replay on another, compare with
# the application's own run on that other one (//TRACE's test). Prints a markdown table.
#
#   storage A  tmpfs                                (scripts/storage.sh up ... tmpfs)
#   storage B  ext4 on a loop device throttled to 40 MiB/s and 400 IOPS, read and write
#              (scripts/storage.sh up ... throttled:40M:400)
#
# For each program and rank count: the application is run REPEAT times untraced on A and on B,
# caches dropped before each run: its own time (the reference) is the median of what it
# prints (`app_time S`, column "ref" = app) or, for a program that prints none, of its MPI
# wall time (ref = wall): from a barrier after MPI_Init to one before MPI_Finalize, measured by
# a PMPI shim that wraps those two calls and nothing else (mpi_wall.so, built below), so MPI
# start-up is left out as the replay's report leaves it out. Untraced, because a traced run's
# time holds the tracer's own costs. Then it is run traced REPEAT times on each storage; the
# trace of the median traced run (by its wall time) on A is replayed on B and the one from B
# on A,
# REPEAT times each, under MPI (`mpirun -np N iotrex-replay`) and once with `--threads`,
# caches dropped before each. A replay's time is its own report's wall time (barrier, replay,
# barrier: MPI start-up and reading the trace left out). Each cell is the replay's error
# against the application's own time on the target storage, in %.
# Besides the default replay (MPI calls issued for real: --comm real unless the trace's messages
# do not match; --compute chosen from the trace and the node: work where ranks share cores, in
# the traced run or here, else mean; on a machine with fewer cores than ranks, work) two
# columns show what the other pacings cost, A->B under
# MPI: as fast as possible (--compute none) and open-loop (--open-loop: every call issued at
# its traced start, whatever the replayed calls took); "B->A delay" is B->A under MPI with
# --comm delay (the default before: the traced waits on other ranks slept); two more give both
# directions under MPI with --comm real --compute mean (the gaps' wall time slept: the default
# before the compute mode was chosen).
# "traced B / A": the median traced run's own time against the untraced reference, on each
# storage (the tracer's cost as the application sees it; a replay reproduces a traced run).
# The last column is the application's own run-to-run spread on B and on A ((slowest -
# fastest) / median of its REPEAT runs): the noise floor of the row's cells.
# Closing lines: the rows whose worse direction (default replay) is within the application's
# own spread (the larger of B's and A's); the worse direction of each program (the larger
# |error| of A->B and B->A, MPI, default replay), and the median of those; the same for
# --comm real --compute mean.
#   Target: every program's worse direction within 6%, their median within 3%.
# Then the whole prediction (EXTRAP, default "pseudo fitness"; EXTRAP= skips it): each program
# traced once on A at each of EXTRAP_FROM (default "4 8 12 16") ranks, `iotrex extrap` to
# EXTRAP_TO (default 32), the extrapolation replayed on B under MPI (default replay and --comm
# real --compute mean, REPEAT times each), against the application's own time at EXTRAP_TO on
# B (median of REPEAT).   Target: within 10%.
# Environment: REPEAT (default 3), NPS (default "4 8"; NPS= runs no rows), PROGS (names to run, default all that
# can run here: LAMMPS needs lmp, particles needs python3-h5py-mpi), IOTREX_REPLAY_ARGS (extra
# replay arguments for every replay), IOTREX_GAP_WAITS=0 (trace without the
# off-CPU time of the gaps: as before format minor 11), FPP_SEGMENTS, COLL_SEGMENTS,
# LAMMPS_STEPS, PARTICLES_STEPS (the sizes of the short runs, below).
# NICE (default -15): the niceness of every measured command (applications, traces, replays)
# and of this session's autogroup, so that builds at nice 0 on the same machine, in this
# session or another, barely take CPU from them; NICE=0 turns it off.
# Needs root (the storage rig). Binaries come from $CARGO_TARGET_DIR/release (default
# target/release).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
T=${CARGO_TARGET_DIR:-$PWD/target}
case "$T" in /*) ;; *) T=$PWD/$T ;; esac
BIN=$T/release
LIB=$BIN/libiotrex_tracer.so
for f in "$LIB" "$BIN/iotrex" "$BIN/iotrex-replay"; do
  [ -f "$f" ] || { echo "build first: cargo build --release --workspace (missing $f)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "bench-xstorage.sh: needs root (the storage rig, drop_caches)" >&2; exit 1; }
REPEAT=${REPEAT:-3}
NICE=${NICE:--15}
RUN=(nice -n "$NICE")
# With the scheduler's autogroups (kernel.sched_autogroup_enabled=1) a process's niceness only
# counts against its own session's: builds in other sessions take an equal share whatever the
# measured commands' nice. The session's own autogroup is given the same niceness.
if [ "$NICE" != 0 ] && [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
  echo "$NICE" > /proc/self/autogroup 2>/dev/null || echo "bench-xstorage.sh: could not renice this session's autogroup" >&2
fi
NPS=${NPS-"4 8"}
EXTRA=(${IOTREX_REPLAY_ARGS:-})
# IOTREX_GAP_WAITS=0 traces without the off-CPU gap time (docs/xstorage.md): the "before".
TRACE_ENV=()
[ -n "${IOTREX_GAP_WAITS:-}" ] && TRACE_ENV=(-x IOTREX_GAP_WAITS)
W=$(mktemp -d /dev/shm/iotrex-bench-xstorage.XXXXXX)
RA=xs-a-$$ RB=xs-b-$$
cleanup() {
  scripts/storage.sh down "$RA" >/dev/null 2>&1 || true
  scripts/storage.sh down "$RB" >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
# The sizes of the runs that are short by default (10-300 ms at 4 ranks on this machine, where
# a few ms of the replay's own start are whole percent): IOR-like segments of 1 MiB per rank,
# LAMMPS steps, particles.py steps: FPP_SEGMENTS=16 COLL_SEGMENTS=32 LAMMPS_STEPS=300
# PARTICLES_STEPS=30 runs them for 0.15-3.4 s.
FPP_SEGMENTS=${FPP_SEGMENTS:-4}
COLL_SEGMENTS=${COLL_SEGMENTS:-4}
LAMMPS_STEPS=${LAMMPS_STEPS:-60}
PARTICLES_STEPS=${PARTICLES_STEPS:-6}
# The rig: at least 256 MiB, and four times what ior_like writes at the most ranks (1 MiB per
# segment and rank) and 128 MiB more when that is larger.
max_np=$(printf '%s\n' $NPS 8 | sort -n | tail -1)
max_seg=$(printf '%s\n' "$FPP_SEGMENTS" "$COLL_SEGMENTS" | sort -n | tail -1)
rig_mib=$((max_np * max_seg * 4 + 128))
export IOTREX_STORAGE_SIZE=${IOTREX_STORAGE_SIZE:-$((rig_mib > 256 ? rig_mib : 256))M}
MNT_A=$(scripts/storage.sh up "$RA" tmpfs)
MNT_B=$(scripts/storage.sh up "$RB" throttled:40M:400)
for a in xstorage ior_like; do mpicc -O2 -o "$W/$a" tests/apps/$a.c; done
# The reference's clock for programs that print no time of their own: rank 0 writes the time
# from a barrier after MPI_Init(_thread) to a barrier in MPI_Finalize to $IOTREX_BENCH_WALL.
cat > "$W/mpi_wall.c" <<'SHIM'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double t0;
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static void start(void) { PMPI_Barrier(MPI_COMM_WORLD); t0 = now(); }
int MPI_Init(int *c, char ***v) { int r = PMPI_Init(c, v); start(); return r; }
int MPI_Init_thread(int *c, char ***v, int q, int *p) {
  int r = PMPI_Init_thread(c, v, q, p); start(); return r;
}
int MPI_Finalize(void) {
  int rank;
  PMPI_Barrier(MPI_COMM_WORLD);
  double t = now() - t0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *f = getenv("IOTREX_BENCH_WALL");
  FILE *o = rank == 0 && f ? fopen(f, "w") : NULL;
  if (o) { fprintf(o, "%.6f\n", t); fclose(o); }
  return PMPI_Finalize();
}
SHIM
mpicc -O2 -shared -fPIC -o "$W/mpi_wall.so" "$W/mpi_wall.c"

# Open MPI's defaults, as in bench-replay.sh.
MPIRUN=(mpirun --mca btl self,vader)
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }

# name|command; DIR is the program's directory on the storage, W the scratch directory.
PROGRAMS=(
  "pseudo|$W/xstorage pseudo DIR"
  "sync|$W/xstorage sync DIR"
  "fitness|$W/xstorage fitness DIR"
  "mapped|$W/xstorage mapped DIR"
  "ior-fpp-fsync|$W/ior_like -a posix -F -e -t 65536 -b 1048576 -s $FPP_SEGMENTS -i 1 -o DIR/ior.dat"
  "ior-coll|$W/ior_like -a mpiio -c -t 65536 -b 1048576 -s $COLL_SEGMENTS -i 1 -o DIR/ior.dat"
)
if command -v lmp >/dev/null; then
  # Weak-scaled (864 atoms a rank), its MPI-IO dumps every 20 steps and a restart file; the
  # process grid PX x PY x PZ is filled in from the rank count by grid().
  PROGRAMS+=("lammps|lmp -in $PWD/tests/apps/lammps_weak.in -log none -screen none -var d DIR -var px PX -var py PY -var pz PZ -var steps $LAMMPS_STEPS")
fi
if /usr/bin/python3 -c 'import h5py, mpi4py' 2>/dev/null; then
  PROGRAMS+=("particles|/usr/bin/python3 $PWD/tests/apps/particles.py DIR/particles.h5 $PARTICLES_STEPS")
fi
if [ -n "${PROGS:-}" ]; then
  sel=()
  for spec in "${PROGRAMS[@]}"; do
    for p in $PROGS; do [ "${spec%%|*}" = "$p" ] && sel+=("$spec"); done
  done
  PROGRAMS=("${sel[@]}")
fi

drop_caches() {
  sync
  echo 3 > /proc/sys/vm/drop_caches
}

# grid NP: a process grid "PX PY PZ" for NP ranks, factors as even as the powers of 2 allow
# (4: 2 2 1, 8: 2 2 2, 12: 3 2 2, 32: 4 4 2).
grid() {
  awk -v n="$1" 'BEGIN { d[1] = d[2] = d[3] = 1; m = n
    for (f = 2; m > 1; ) { if (m % f) { f++; continue } ; i = 1; for (j = 2; j <= 3; j++) if (d[j] < d[i]) i = j
      d[i] *= f; m /= f }
    # largest first
    for (a = 1; a <= 3; a++) for (b = a + 1; b <= 3; b++) if (d[b] > d[a]) { t = d[a]; d[a] = d[b]; d[b] = t }
    print d[1], d[2], d[3] }'
}

# run_app NP CMD MNT [TRACE]: runs CMD on the storage at MNT (DIR -> MNT/app), traced into
# TRACE when given, else untraced under the mpi_wall.so shim; prints its own time in seconds
# and where it comes from: "S app" (what it printed) or "S wall" (the shim's, or the trace's
# wall time, for a program that prints none).
run_app() {
  local np=$1 cmd=$2 mnt=$3 tr=${4:-} d=$3/app t px py pz
  local -a env=(-x LD_PRELOAD="$W/mpi_wall.so" -x IOTREX_BENCH_WALL="$W/wall")
  [ -n "$tr" ] && env=(-x LD_PRELOAD="$LIB" -x IOTREX_OUT="$tr" "${TRACE_ENV[@]}")
  read -r px py pz < <(grid "$np")
  cmd=${cmd//PX/$px}; cmd=${cmd//PY/$py}; cmd=${cmd//PZ/$pz}
  rm -rf "$d" "$W/wall"; mkdir -p "$d"
  drop_caches
  (cd "$d" && "${RUN[@]}" timeout -k 5 300 "${MPIRUN[@]}" -np "$np" "${env[@]}" \
    ${cmd//DIR/$d} > "$W/app.log" 2>&1) || { echo "run failed: $cmd" >&2; tail -5 "$W/app.log" >&2; return 1; }
  t=$(awk '/^app_time/ {print $2}' "$W/app.log")
  if [ -n "$t" ]; then echo "$t app"; return; fi
  if [ -n "$tr" ]; then t=$("$BIN/iotrex" show --json "$tr" | jq '.header.wall_ns / 1e9'); else t=$(cat "$W/wall" 2>/dev/null || true); fi
  [ -n "$t" ] || { echo "no time from: $cmd" >&2; return 1; }
  echo "$t wall"
}

# replay MODE TRACE NP MNT [ARGS...]: the median of the replay's own wall time (s) on the
# storage at MNT, REPEAT times under MPI, once with --threads.
replay() {
  local mode=$1 tr=$2 np=$3 mnt=$4 r=$4/replay n=$REPEAT
  shift 4
  local -a cmd
  if [ "$mode" = threads ]; then
    n=1; cmd=("${RUN[@]}" timeout -k 5 300 "$BIN/iotrex-replay" "$tr" --threads)
  else
    cmd=("${RUN[@]}" timeout -k 5 300 "${MPIRUN[@]}" -np "$np" "$BIN/iotrex-replay" "$tr")
  fi
  for _ in $(seq "$n"); do
    rm -rf "$r"; mkdir -p "$r"
    drop_caches
    if "${cmd[@]}" --root "$r" --prep "${EXTRA[@]}" "$@" --json "$W/r.json" > "$W/replay.log" 2>&1; then
      # The compute mode the default chose (no arguments of the column's own).
      [ $# -eq 0 ] && jq -r '.compute' "$W/r.json" >> "$W/modes"
      jq '.wall_ns / 1e9' "$W/r.json"
    else
      echo "replay of $tr ($mode $*) failed:" >&2; tail -5 "$W/replay.log" >&2
    fi
  done | median
}

# err REPLAY APP: the replay's error against the application's time, in %.
err() { awk -v r="$1" -v a="$2" 'BEGIN { if (r == "" || a == "") print "-"; else printf "%+.1f", (r - a) / a * 100 }'; }
# worse_of E1 E2: the larger |error| of two directions.
worse_of() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") { print "-"; exit }
    x = a < 0 ? -a : a; y = b < 0 ? -b : b; printf "%.1f", (x > y ? x : y) }'
}

echo "## Cross-storage replay: A = tmpfs, B = ext4 throttled to 40 MiB/s, 400 IOPS"
echo
echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at start; medians of $REPEAT (--threads: 1 run);" \
  "cells: replay's wall time vs the app's own time on the target storage; measured commands under nice -n $NICE${EXTRA[*]:+; replay args: ${EXTRA[*]}}${IOTREX_GAP_WAITS:+; IOTREX_GAP_WAITS=$IOTREX_GAP_WAITS}"
echo
echo "| program | ranks | ref | app on B | app on A | traced B / A | A→B MPI | A→B threads | B→A MPI | B→A threads | A→B fast | A→B open-loop | worse | B→A delay | A→B real+mean | B→A real+mean | worse real+mean | app spread B / A |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
: > "$W/worse"
: > "$W/worse_rw"
: > "$W/noise"
: > "$W/modes"
for np in $NPS; do
  for spec in "${PROGRAMS[@]}"; do
    name=${spec%%|*}; cmd=${spec#*|}
    declare -A app=() spread=() ref=() traced=()
    for s in A B; do
      mnt=$MNT_A; [ $s = B ] && mnt=$MNT_B
      # The reference: untraced runs.
      : > "$W/times"
      for _ in $(seq "$REPEAT"); do
        run_app "$np" "$cmd" "$mnt" >> "$W/times" || true
      done
      # The traces: traced runs, the median one (by its own time) replayed.
      : > "$W/ttimes"
      for i in $(seq "$REPEAT"); do
        t=$(run_app "$np" "$cmd" "$mnt" "$W/$s.$i.iotrex") && echo "${t%% *} $i" >> "$W/ttimes"
      done
      rm -rf "$mnt/app"
      [ -s "$W/times" ] && [ -s "$W/ttimes" ] || continue
      read -r t ref[$s] < <(sort -g "$W/times" | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
      app[$s]=$t
      # The application's own run-to-run spread: (slowest - fastest) / median, in %: the
      # noise floor of every cell of the row (a replay reproduces one run of it).
      spread[$s]=$(awk -v m="$t" 'NR == 1 || $1 < lo { lo = $1 } $1 > hi { hi = $1 }
        END { printf "%.0f", (hi - lo) / m * 100 }' "$W/times")
      read -r t i < <(sort -g "$W/ttimes" | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
      traced[$s]=$t
      cp "$W/$s.$i.iotrex" "$W/$name.$np.$s.iotrex"
    done
    if [ -z "${app[A]:-}" ] || [ -z "${app[B]:-}" ]; then
      echo "| $name | $np | failed | | | | | | | | | | | | | | | |"; continue
    fi
    ta=$W/$name.$np.A.iotrex tb=$W/$name.$np.B.iotrex
    ab=$(err "$(replay mpi "$ta" "$np" "$MNT_B")" "${app[B]}")
    abt=$(err "$(replay threads "$ta" "$np" "$MNT_B")" "${app[B]}")
    ba=$(err "$(replay mpi "$tb" "$np" "$MNT_A")" "${app[A]}")
    bat=$(err "$(replay threads "$tb" "$np" "$MNT_A")" "${app[A]}")
    fast=$(err "$(replay mpi "$ta" "$np" "$MNT_B" --compute none)" "${app[B]}")
    open=$(err "$(replay mpi "$ta" "$np" "$MNT_B" --open-loop)" "${app[B]}")
    badelay=$(err "$(replay mpi "$tb" "$np" "$MNT_A" --comm delay)" "${app[A]}")
    abrw=$(err "$(replay mpi "$ta" "$np" "$MNT_B" --comm real --compute mean)" "${app[B]}")
    barw=$(err "$(replay mpi "$tb" "$np" "$MNT_A" --comm real --compute mean)" "${app[A]}")
    worse=$(worse_of "$ab" "$ba")
    worse_rw=$(worse_of "$abrw" "$barw")
    [ "$worse" != "-" ] && echo "$worse" >> "$W/worse"
    [ "$worse_rw" != "-" ] && echo "$worse_rw" >> "$W/worse_rw"
    # Within noise: the worse direction no larger than the larger of the application's own
    # spreads on B and A.
    [ "$worse" != "-" ] && awk -v w="$worse" -v b="${spread[B]}" -v a="${spread[A]}" -v n="$name/$np" \
      'BEGIN { s = a > b ? a : b; print (w <= s ? "noise" : "beyond"), n }' >> "$W/noise"
    printf '| %s | %d | %s | %.2f s | %.2f s | %s / %s | %s%% | %s%% | %s%% | %s%% | %s%% | %s%% | %s%% | %s%% | %s%% | %s%% | %s%% | %s%% / %s%% |\n' \
      "$name" "$np" "${ref[B]}" "${app[B]}" "${app[A]}" "$(err "${traced[B]}" "${app[B]}")%" "$(err "${traced[A]}" "${app[A]}")%" \
      "$ab" "$abt" "$ba" "$bat" "$fast" "$open" "$worse" "$badelay" \
      "$abrw" "$barw" "$worse_rw" "${spread[B]}" "${spread[A]}"
    rm -rf "$MNT_A/replay" "$MNT_B/replay"
  done
done
echo
[ -s "$W/noise" ] && awk '$1 == "noise" { k++; l = l " " $2 } END {
  printf "within noise (default replay, worse direction <= the larger of the app spreads B / A): %d of %d rows:%s\n", k, NR, l }' "$W/noise"
[ -s "$W/modes" ] && echo "compute mode of the default replays: $(sort "$W/modes" | uniq -c | awk '{printf "%s%s %d", (NR > 1 ? ", " : ""), $2, $1}')"
for f in worse worse_rw; do
  [ -s "$W/$f" ] || continue
  what="default replay"; [ $f = worse_rw ] && what="--comm real --compute mean"
  awk -v m="$(median < "$W/$f")" -v what="$what" '{ if ($1 > max) max = $1 } END {
    printf "worse direction (MPI, %s): largest %.1f%%, median %.1f%% over %d program/rank rows   target: each <= 6%%, median <= 3%%\n", what, max, m, NR }' "$W/$f"
done

# The whole prediction: traced on A at EXTRAP_FROM ranks, extrapolated to EXTRAP_TO, replayed
# on B, against the application at EXTRAP_TO on B.
EXTRAP=${EXTRAP-"pseudo fitness"}
EXTRAP_FROM=${EXTRAP_FROM:-"4 8 12 16"}
EXTRAP_TO=${EXTRAP_TO:-32}
[ -n "$EXTRAP" ] || exit 0
echo
echo "### Traced on A at $EXTRAP_FROM ranks, extrapolated to $EXTRAP_TO, replayed on B"
echo
echo "load $(cut -d' ' -f1-3 /proc/loadavg); medians of $REPEAT; cells: the replay's wall time on B vs the app's own time at $EXTRAP_TO on B"
echo
echo "| program | app on B at $EXTRAP_TO | extrapolation's predicted time | replay on B, default | replay on B, real+mean |"
echo "|---|---|---|---|---|"
for spec in "${PROGRAMS[@]}"; do
  name=${spec%%|*}; cmd=${spec#*|}
  case " $EXTRAP " in *" $name "*) ;; *) continue ;; esac
  ins=()
  for np in $EXTRAP_FROM; do
    run_app "$np" "$cmd" "$MNT_A" "$W/$name.x$np.iotrex" > /dev/null && ins+=("$W/$name.x$np.iotrex")
  done
  out=$W/$name.x$EXTRAP_TO.iotrex
  if ! "$BIN/iotrex" extrap --ranks "$EXTRAP_TO" -o "$out" "${ins[@]}" > "$W/extrap.log" 2>&1; then
    echo "| $name | extrap failed: $(tail -1 "$W/extrap.log") | | | |"; continue
  fi
  pred=$("$BIN/iotrex" show --json "$out" | jq '.header.wall_ns / 1e9')
  appb=$(for i in $(seq "$REPEAT"); do run_app "$EXTRAP_TO" "$cmd" "$MNT_B"; done | median)
  rm -rf "$MNT_A/app" "$MNT_B/app"
  def=$(err "$(replay mpi "$out" "$EXTRAP_TO" "$MNT_B")" "$appb")
  rw=$(err "$(replay mpi "$out" "$EXTRAP_TO" "$MNT_B" --comm real --compute mean)" "$appb")
  printf '| %s | %.2f s | %.2f s | %s%% | %s%% |\n' "$name" "$appb" "$pred" "$def" "$rw"
  rm -rf "$MNT_B/replay"
done
