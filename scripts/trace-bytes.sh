#!/usr/bin/env bash
# Where a trace's bytes go (trace format v2): traces the IOR-like mini-app
# (tests/apps/ior_like.c) POSIX, MPI-IO independent and MPI-IO collective, each at 4, 16 and 64
# ranks, and prints per trace the bytes of each part (header, tables, structure, parameters,
# loop counts, timing; the application's calls and the nested calls apart) as format version 1
# and version 2 would store them (rsd/examples/trace_bytes.rs, which `rsd::format` measures).
#   bash scripts/trace-bytes.sh                 # all nine traces
#   RANKS="4 16" MODES="coll" bash scripts/trace-bytes.sh
#   bash scripts/trace-bytes.sh FILE.iotrex...  # existing traces only
#   KEEP=/tmp/traces bash scripts/trace-bytes.sh   # also keeps the traces there
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p rsd --example trace_bytes
BYTES=${CARGO_TARGET_DIR:-$PWD/target}/release/examples/trace_bytes
if [ $# -gt 0 ]; then exec "$BYTES" "$@"; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
LIB=${CARGO_TARGET_DIR:-$PWD/target}/release/libiotrex_tracer.so
[ -f "$LIB" ] || { echo "build first: cargo build --release -p tracer" >&2; exit 1; }
W=$(mktemp -d /dev/shm/iotrex-bytes.XXXXXX)
trap 'rm -rf "$W"' EXIT
mpicc -O2 -o "$W/ior_like" tests/apps/ior_like.c
declare -A ARGS=([posix]="-a posix" [indep]="-a mpiio" [coll]="-a mpiio -c")
printf "%-6s %5s %9s %9s %9s %9s\n" mode ranks "v1 B" "v1 nested" "v2 B" "v2 nested" > "$W/summary"
for mode in ${MODES:-posix indep coll}; do
  for np in ${RANKS:-4 16 64}; do
    t="$W/ior_$mode.$np.iotrex"
    # shellcheck disable=SC2086
    timeout 300 mpirun -np "$np" --mca btl self,vader -x LD_PRELOAD="$LIB" -x IOTREX_OUT="$t" \
      "$W/ior_like" ${ARGS[$mode]} -t 65536 -b 262144 -s 4 -o "$W/ior.dat" >/dev/null
    "$BYTES" "$t" | tee "$W/one"
    if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$t" "$KEEP/"; fi
    awk -v m="$mode" -v n="$np" '/total \(nested calls\)/ {printf "%-6s %5d %9d %9d %9d %9d\n", m, n, $(NF-3), $(NF-2), $(NF-1), $NF}' "$W/one" >> "$W/summary"
    rm -f "$W/ior.dat"*
  done
done
echo
cat "$W/summary"
