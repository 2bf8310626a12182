#!/usr/bin/env bash
# The demo: runs what the pipeline can do so far on bundled and generated data, step by step,
# and ends with a summary table. It grows as the tracer, extrapolation, replay and CODES
# bridge land.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/iotrex
OUT=demo-out
mkdir -p "$OUT"
declare -a SUMMARY=()
step() { printf '\n=== %s ===\n' "$*"; }
record() { SUMMARY+=("$(printf '%-44s %-5s %s' "$1" "$2" "$3")"); }

step "1. the golden v1 trace: show"
if $BIN show data/format/v1/spmd_4x10.iotrex | head -40; then
  record "show golden v1 trace" pass "$(stat -c %s data/format/v1/spmd_4x10.iotrex) B"
else record "show golden v1 trace" FAIL "-"; fi

step "2. generate synthetic SPMD traces at 16 and 4096 ranks"
ok=pass
for n in 16 4096; do
  $BIN synth --ranks "$n" --iters 1000 -o "$OUT/spmd.$n.iotrex" || ok=FAIL
done
s16=$(stat -c %s "$OUT/spmd.16.iotrex" 2>/dev/null || echo 0)
s4k=$(stat -c %s "$OUT/spmd.4096.iotrex" 2>/dev/null || echo 0)
record "synth 16 vs 4096 ranks (size)" "$ok" "$s16 B vs $s4k B"

step "3. stats of the 4096-rank trace"
if $BIN stats "$OUT/spmd.4096.iotrex"; then record "stats 4096 ranks" pass "ok"; else record "stats 4096 ranks" FAIL "-"; fi

step "4. expand rank 4095 (first 12 calls)"
n=$($BIN expand "$OUT/spmd.4096.iotrex" --rank 4095 | tee "$OUT/rank4095.txt" | wc -l)
head -12 "$OUT/rank4095.txt"
if [ "$n" -gt 0 ]; then record "expand rank 4095" pass "$n lines"; else record "expand rank 4095" FAIL "-"; fi

printf '\n=== summary ===\n'
printf '%s\n' "${SUMMARY[@]}"
if printf '%s\n' "${SUMMARY[@]}" | grep -q FAIL; then exit 1; fi
