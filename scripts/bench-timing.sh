#!/usr/bin/env bash
# Timing extrapolation accuracy. For each mini-app configuration: traces at 4, 8,
# 12 and 16 ranks (REPEAT runs each, default 3), `iotrex extrap` of all of them together to 32
# and 64 ranks, and REPEAT real (traced) runs at 32 and 64 ranks. Printed per app and target:
# the predicted wall time with its interval, the real runs' median [min-max], the error of the
# prediction against the median and whether the median falls inside the interval; then the
# same per kind of time (per rank: I/O, communication, collective, compute gaps,
# compensation). Last, the two target figures: the share of cases whose
# real median is inside the interval (target >= 80%) and the median absolute wall-time error
# (target < 15%).
#
# Open MPI runs under its defaults (nothing pinned). On a 2-core machine 32 and 64 ranks are
# oversubscribed: the figures are ratios of one machine's runs, noisy by nature, so candidate
# models are compared on the SAME runs: BENCH_DIR=/tmp/x keeps every trace (inputs and real
# runs) there, and REUSE=1 with the same BENCH_DIR traces nothing again, only re-extrapolates
# the kept traces and compares with the kept real runs. APPS="name ..." limits the configs.
# Traces record the CPUs each node had (extrap reads from them whether the ranks shared cores);
# traces kept from before they did need CORES=<CPUs per node of that machine> under REUSE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
REPEAT=${REPEAT:-3}
BIN=$PWD/target/release/iotrex
cargo build --release -q -p iotrex -p tracer
REUSE=${REUSE:-0}
# The apps' files always go to memory (D, removed at the end), whatever keeps the traces (W);
# with BENCH_DIR, D's name follows from it, so the kept traces' paths agree between runs.
if [ -n "${BENCH_DIR:-}" ]; then
  W=$(realpath -m "$BENCH_DIR")
  mkdir -p "$W"
  D=/dev/shm/iotrex-bench-timing.$(printf '%s' "$W" | cksum | cut -d' ' -f1)
  mkdir -p "$D"
  trap 'rm -rf "$D"' EXIT
else
  [ "$REUSE" = 1 ] && { echo "REUSE=1 needs BENCH_DIR (the directory of the kept traces)"; exit 2; }
  D=$(mktemp -d /dev/shm/iotrex-bench-timing.XXXXXX)
  W=$D
  trap 'rm -rf "$D"' EXIT
fi
[ "$REUSE" = 1 ] || for a in ior_like io_sample comm_mix ckpt_strong; do mpicc -O2 -o "$D/$a" tests/apps/$a.c; done

# name | app | arguments ({d} is an empty data directory, fresh for every run)
CONFIGS=(
  "ckpt_strong|ckpt_strong|{d}/ck.dat 16777216 -R"
  "ior_posix_fpp|ior_like|-a posix -F -t 65536 -b 524288 -s 4 -o {d}/f"
  "ior_posix_strong|ior_like|-a posix -F -S -t 4096 -b 3145728 -s 1 -o {d}/f"
  "ior_mpiio_coll|ior_like|-a mpiio -c -t 65536 -b 262144 -s 2 -o {d}/f"
  "io_sample|io_sample|{d} 20 8192 3 65536"
  "comm_mix|comm_mix|{d} 5 20000 4096"
)

run() { # out np app args...: one traced run in a fresh data directory (kept one under REUSE=1)
  local out=$1 np=$2 app=$3; shift 3
  if [ "$REUSE" = 1 ]; then
    [ -s "$out" ] && return 0
    echo "REUSE=1: $out was not kept"; return 1
  fi
  rm -rf "$D/d" && mkdir -p "$D/d"
  local args=()
  for x in "$@"; do args+=("${x//\{d\}/$D/d}"); done
  timeout 600 "$BIN" trace -o "$out" -- mpirun -np "$np" "$D/$app" "${args[@]}" \
    >"$W/run.log" 2>&1 || { echo "$app at $np ranks failed: $(tail -c 300 "$W/run.log")"; return 1; }
}

rows="$W/rows.jsonl"
: > "$rows"
for c in "${CONFIGS[@]}"; do
  IFS='|' read -r name app args <<< "$c"
  if [ -n "${APPS:-}" ] && [[ " $APPS " != *" $name "* ]]; then continue; fi
  read -r -a argv <<< "$args"
  ins=()
  for np in 4 8 12 16; do
    for r in $(seq "$REPEAT"); do
      run "$W/$name.$np.$r.iotrex" "$np" "$app" "${argv[@]}" || continue 3
      ins+=("$W/$name.$np.$r.iotrex")
    done
  done
  cores=()
  [ -n "${CORES:-}" ] && cores=(--cores-per-node "$CORES")
  for target in 32 64; do
    if ! "$BIN" extrap "${ins[@]}" "${cores[@]}" --ranks "$target" -o "$W/$name.x$target.iotrex" \
        > "$W/$name.x$target.txt" 2>&1; then
      echo "$name -> $target: extrap refused: $(head -c 400 "$W/$name.x$target.txt")"
      continue
    fi
    real=()
    for r in $(seq "$REPEAT"); do
      run "$W/$name.$target.real$r.iotrex" "$target" "$app" "${argv[@]}" || continue 3
      real+=("$W/$name.$target.real$r.iotrex")
    done
    {
      printf '{"name":"%s","target":%d,"pred":' "$name" "$target"
      "$BIN" --json show "$W/$name.x$target.iotrex" | python3 -c \
        'import json,sys; h=json.load(sys.stdin)["header"]; print(json.dumps(h["prediction"]), end="")'
      printf ',"real":['
      sep=""
      for f in "${real[@]}"; do
        printf '%s' "$sep"
        "$BIN" --json show "$f" | python3 -c \
          'import json,sys; j=json.load(sys.stdin); print(json.dumps({"wall": j["header"]["wall_ns"], "parts": j["time_per_rank"]}), end="")'
        sep=","
      done
      printf ']}\n'
    } >> "$rows"
  done
done

python3 - "$rows" "$REPEAT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rep = sys.argv[2]
def t(ns):
    return f"{ns/1e9:.3f}s" if ns >= 1e8 else f"{ns/1e6:.2f}ms"
print(f"== wall time: predicted [interval] vs real median [min-max] of {rep} runs; in = median inside the interval")
print(f"{'app':18} {'n':>3}  {'predicted':>9} {'interval':>21}  {'real median':>11} {'range':>19}  {'error':>7}  in")
errs, inside = [], []
for r in rows:
    p = r["pred"]["wall"]; walls = [x["wall"] for x in r["real"]]
    med = statistics.median(walls)
    e = (p["value"] - med) / med * 100
    ok = p["interval"]["lo"] <= med <= p["interval"]["hi"]
    errs.append(abs(e)); inside.append(ok)
    print(f"{r['name']:18} {r['target']:>3}  {t(p['value']):>9} [{t(p['interval']['lo']):>9}, {t(p['interval']['hi']):>9}]"
          f"  {t(med):>11} [{t(min(walls)):>8}-{t(max(walls)):>8}]  {e:+6.1f}%  {'yes' if ok else 'NO'}")
print()
print("== per rank, by kind: predicted [interval] vs real median (error); in = inside")
kinds = ["Io", "Communication", "Collective", "Compute", "Compensation"]
kin = {k: [] for k in kinds}
for r in rows:
    cells = []
    for k, v in r["pred"]["parts"]:
        reals = [dict(x["parts"]).get(k) for x in r["real"]]
        reals = [x for x in reals if x is not None]
        if not reals:
            continue
        med = statistics.median(reals)
        ok = v["interval"]["lo"] <= med <= v["interval"]["hi"]
        kin[k].append(ok)
        err = f"{(v['value'] - med) / med * 100:+.0f}%" if med > 0 else "n/a"
        cells.append(f"{k} {t(v['value'])} [{t(v['interval']['lo'])}, {t(v['interval']['hi'])}] vs {t(med)} ({err}) {'in' if ok else 'OUT'}")
    print(f"{r['name']} {r['target']}:")
    for c in cells:
        print("    " + c)
print()
for k in kinds:
    if kin[k]:
        print(f"  {k:14} real median inside the interval in {sum(kin[k])} of {len(kin[k])}")
print()
if rows:
    print(f"DONE-WHEN wall time: real median inside the interval in {sum(inside)} of {len(inside)} cases "
          f"({100*sum(inside)/len(inside):.0f}%, target >= 80%); median absolute error "
          f"{statistics.median(errs):.1f}% (target < 15%)")
EOF
