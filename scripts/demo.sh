#!/usr/bin/env bash
# `make demo`: the whole job on the bundled mini-apps, step by step, ending with a summary
# table (one line per step: pass/fail/skip and the key figure). Steps whose subcommand is not
# built yet are reported as "skip", never as passed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/target/release/iotrex
LIB=$ROOT/target/release/libiotrex_tracer.so
OUT=$ROOT/demo-out
SCRATCH=$(mktemp -d /dev/shm/iotrex-demo.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$OUT" && mkdir -p "$OUT/bin"
declare -a SUMMARY=()
T0=$(date +%s)
step() { printf '\n\033[1m=== %s ===\033[0m\n' "$*"; }
record() { SUMMARY+=("$(printf '%-46s %-5s %s' "$1" "$2" "$3")"); }
have() { "$BIN" "$1" --help >/dev/null 2>&1; }
size_of() { stat -c %s "$1" 2>/dev/null || echo 0; }

step "0. build the mini-apps with mpicc"
ok=pass
for app in ior_like io_sample; do
  mpicc -O2 -o "$OUT/bin/$app" "tests/apps/$app.c" || ok=FAIL
done
record "build mini-apps (mpicc)" "$ok" "ior_like, io_sample"

# ior_like in collective shared-file mode; io_sample with small sizes so 64 ranks stay quick.
IOR_ARGS=(-a mpiio -c -t 65536 -b 131072 -s 2)
run_traced() { # name np out args...
  local name=$1 np=$2 out=$3; shift 3
  # Open MPI's defaults: OMPIO takes one collective-buffering aggregator per 8 ranks, so the
  # nested I/O of a collective call changes shape between 4 and 16 ranks; extrap derives it at
  # the target from its model of the library (collio) and the configuration the trace records.
  timeout -k 5 120 "$BIN" trace -o "$out" -- mpirun -np "$np" --mca btl self,vader \
    "$OUT/bin/$name" "$@" > "$OUT/$name.$np.log" 2>&1
}

step "1. trace ior_like (collective, shared file) and io_sample at 4, 8, 12, 16 ranks"
ok=pass; sizes=""
for np in 4 8 12 16; do
  run_traced ior_like $np "$OUT/ior_like.$np.iotrex" "${IOR_ARGS[@]}" -o "$SCRATCH/ior.dat" || ok=FAIL
  run_traced io_sample $np "$OUT/io_sample.$np.iotrex" "$SCRATCH" 20 8192 3 65536 || ok=FAIL
  sizes="$sizes $(size_of "$OUT/ior_like.$np.iotrex")"
done
record "trace at 4/8/12/16 ranks" "$ok" "ior_like sizes:$sizes B"
"$BIN" stats "$OUT/ior_like.16.iotrex" > "$OUT/ior_like.16.stats.txt" && head -30 "$OUT/ior_like.16.stats.txt"

step "2. extrapolate to 64 ranks (--explain)"
if have extrap; then
  ok=pass
  for app in ior_like io_sample; do
    # Into a file first: a pipe into `head` would end extrap with SIGPIPE once --explain runs
    # longer than the lines shown, and pipefail would call that a failure.
    "$BIN" extrap "$OUT"/$app.{4,8,12,16}.iotrex --ranks 64 -o "$OUT/$app.64.extrap.iotrex" --explain \
      > "$OUT/$app.explain.txt" || ok=FAIL
    head -25 "$OUT/$app.explain.txt"
  done
  record "extrapolate to 64 ranks" "$ok" "$(size_of "$OUT/ior_like.64.extrap.iotrex") B"
else
  record "extrapolate to 64 ranks" skip "iotrex extrap not built yet"
fi

step "3. trace a real 64-rank run and diff it with the extrapolation"
run_traced ior_like 64 "$OUT/ior_like.64.real.iotrex" "${IOR_ARGS[@]}" -o "$SCRATCH/ior.dat"
run_traced io_sample 64 "$OUT/io_sample.64.real.iotrex" "$SCRATCH" 20 8192 3 65536
if have diff && [ -f "$OUT/ior_like.64.extrap.iotrex" ]; then
  ok=pass
  for app in ior_like io_sample; do
    "$BIN" diff "$OUT/$app.64.extrap.iotrex" "$OUT/$app.64.real.iotrex" || ok=FAIL
  done
  record "diff extrapolated vs real 64 ranks" "$ok" "identical: $ok"
else
  record "diff extrapolated vs real 64 ranks" skip "iotrex diff / extrap not built yet"
fi

step "4. replay"
if have replay && [ -x target/release/iotrex-replay ]; then
  ok=pass
  src="$OUT/ior_like.64.extrap.iotrex"; [ -f "$src" ] || src="$OUT/ior_like.64.real.iotrex"
  mkdir -p "$SCRATCH/replay-threads" "$SCRATCH/replay-mpi"
  "$BIN" replay "$src" --threads --root "$SCRATCH/replay-threads" | tail -8 || ok=FAIL
  timeout -k 5 120 mpirun -np 16 --mca btl self,vader target/release/iotrex-replay \
    "$OUT/ior_like.16.iotrex" --root "$SCRATCH/replay-mpi" | tail -8 || ok=FAIL
  record "replay (--threads 64, mpirun 16)" "$ok" "see above"
else
  record "replay" skip "iotrex-replay not built yet"
fi

step "5. export to CODES (--max-blocksize 256KiB) and codes-stats"
src="$OUT/ior_like.64.extrap.iotrex"; [ -f "$src" ] || src="$OUT/ior_like.64.real.iotrex"
if "$BIN" export codes "$src" -o "$OUT/codes" --max-blocksize 256KiB --force; then
  "$BIN" codes-stats "$OUT/codes"
  record "export codes + codes-stats" pass "$(ls "$OUT/codes" | wc -l) rank logs"
else
  record "export codes + codes-stats" FAIL "-"
fi

step "6. report"
if have report; then
  "$BIN" report "$OUT"/ior_like.{4,8,12,16}.iotrex --extrap "$OUT/ior_like.64.extrap.iotrex" -o "$OUT/report.html" \
    && record "report.html" pass "$(size_of "$OUT/report.html") B" || record "report.html" FAIL "-"
else
  record "report.html" skip "iotrex report not built yet"
fi

step "7. many nodes: trace on 2, 3 and 4 emulated nodes (2 ranks each), extrapolate to 8 nodes"
# The emulated cluster (docs/rigs.md): each node a network and UTS namespace on one bridge,
# Open MPI's daemons started through scripts/cluster-agent.sh. Across nodes Open MPI picks
# other components than on one (the shared file pointer's lockedfile, whose lock-file name
# holds the job id and a pid: run values), and the target's shape is given as nodes x ranks.
CLUSTER=scripts/cluster.sh
was_up=$(bash $CLUSTER status 2>/dev/null | grep -c '^node[0-9]* up' || true)
if bash $CLUSTER up 8 > "$OUT/cluster.log" 2>&1; then
  ok=pass
  on_cluster() { # nodes out
    timeout -k 5 120 bash $CLUSTER exec node1 "$BIN" trace -o "$2" -- \
      mpirun $(bash $CLUSTER mpirun-args 2 "$1") --mca btl self,vader,tcp -np $(( $1 * 2 )) \
      "$OUT/bin/ior_like" "${IOR_ARGS[@]}" -o "$SCRATCH/nodes.dat" > "$OUT/nodes.$1.log" 2>&1
  }
  for n in 2 3 4 8; do on_cluster $n "$OUT/nodes.${n}x2.iotrex" || ok=FAIL; done
  "$BIN" show "$OUT/nodes.4x2.iotrex" | grep -m1 -i 'layout'
  "$BIN" extrap "$OUT"/nodes.{2,3,4}x2.iotrex --ranks 16 --ranks-per-node 2 \
    -o "$OUT/nodes.8x2.extrap.iotrex" || ok=FAIL
  "$BIN" diff "$OUT/nodes.8x2.extrap.iotrex" "$OUT/nodes.8x2.iotrex" || ok=FAIL
  record "8 emulated nodes from 2/3/4 (diff vs real)" "$ok" "$(size_of "$OUT/nodes.8x2.extrap.iotrex") B"
  # Taken down only when this step brought it up: a cluster that was up is someone's.
  [ "$was_up" -gt 0 ] || bash $CLUSTER down >> "$OUT/cluster.log" 2>&1
else
  cat "$OUT/cluster.log"
  record "8 emulated nodes from 2/3/4 (diff vs real)" FAIL "cluster.sh up failed (root and namespaces needed)"
fi

printf '\n\033[1m=== summary (%ss) ===\033[0m\n' "$(( $(date +%s) - T0 ))"
printf '%s\n' "${SUMMARY[@]}"
if printf '%s\n' "${SUMMARY[@]}" | grep -q ' FAIL '; then exit 1; fi
