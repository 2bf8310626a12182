#!/usr/bin/env bash
# Traces the mini-apps at 4 ranks with two builds of the tracer and checks that the traces
# hold the same calls: `iotrex expand` of every rank (op, call site, parameters, no timing) and
# `iotrex show` with its timing columns cut must be byte-identical. Timings differ between any
# two runs, so they are the one thing not compared.
#   usage: scripts/trace-identity.sh OLD.so NEW.so [WORKDIR]
# Prints one line per app and exits 1 if any differs.
set -uo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
A=$(realpath "$1"); B=$(realpath "$2"); W=${3:-$(mktemp -d /tmp/iotrex-identity.XXXXXX)}
IOTREX=${IOTREX:-target/release/iotrex}
APPS=target/iotrex-apps
mkdir -p "$W"
# app | arguments ({d}: a scratch directory)
cases=(
  "ior_like|-a posix -L seg -t 4096 -b 16384 -s 3 -e -R -o {d}/f"
  "ior_like|-a mpiio -L strided -c -t 4096 -b 16384 -s 2 -R -e -o {d}/f"
  "ior_like|-a mpiio -F -t 8192 -b 16384 -s 2 -i 2 -R -o {d}/f"
  "io_sample|{d} 100 8192 3 1048576"
  "stdio_app|{d} 6 16384 30"
  "comm_mix|{d} 3 1000 4096"
  "comm_create|{d} 3 4096"
  "large_count|{d} 4 8192"
  "groups|{d} 4 3 8192"
)
# Not compared: mpi_more and p2p_modes, whose MPI_Waitsome/Testall results (completion order,
# polling counts) differ between two runs of one tracer build.
fail=0
n=0
for c in "${cases[@]}"; do
  app=${c%%|*}; args=${c#*|}; n=$((n + 1))
  for v in a b; do
    lib=$A; [ $v = b ] && lib=$B
    # Both runs in the same directory: paths are part of the trace.
    d="$W/run"; o="$W/$n.$v"; rm -rf "$d" "$o"; mkdir -p "$d" "$o"
    timeout -k 5 120 mpirun -np 4 --mca btl self,vader -x LD_PRELOAD="$lib" -x IOTREX_OUT="$o/t.iotrex" \
      "$APPS/$app" ${args//\{d\}/$d} >/dev/null 2>"$o/err" || { echo "$app: run failed ($v)"; fail=1; }
    d=$o
    for r in 0 1 2 3; do "$IOTREX" expand "$d/t.iotrex" --rank $r > "$d/expand.$r" 2>&1; done
    # `show` without its timing (each event's statistics after `|`, the wall time).
    "$IOTREX" show "$d/t.iotrex" 2>&1 | sed -E 's/ *\|.*//; /^  wall time/d' > "$d/show"
  done
  if cmp -s <(cat "$W/$n.a"/expand.*) <(cat "$W/$n.b"/expand.*) && cmp -s "$W/$n.a/show" "$W/$n.b/show"; then
    echo "identical  $app $args ($(cat "$W/$n.a"/expand.* | wc -l) calls)"
  else
    echo "DIFFERENT  $app $args (see $W/$n.a and $W/$n.b)"; fail=1
  fi
done
exit $fail
