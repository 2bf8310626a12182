#!/usr/bin/env bash
# Coverage-guided fuzzing of iotrex's readers with libFuzzer (libfuzzer-sys), on stable Rust.
#
#   scripts/fuzz.sh build                 instrumented build of fuzz/ (target/fuzz, < 4 GB)
#   scripts/fuzz.sh corpus                seed corpora from data/ and real traces
#   scripts/fuzz.sh TARGET SECONDS [ARG]  one campaign (builds and seeds first if needed);
#                                         ARGs go to libFuzzer (e.g. -runs=1000000)
#   scripts/fuzz.sh all SECONDS           every target, SECONDS each, one after another
#   scripts/fuzz.sh list                  the targets
#
# Campaigns run at nice 19 (FUZZ_NICE=N to change) under these limits: a panic, an input taking over 1 s of CPU
# time (checked by the harness, IOTREX_FUZZ_CPU_LIMIT; libFuzzer's -timeout is wall time,
# which this shared machine stretches several times over, so it is set to 10 s and catches
# inputs that never end) or memory over 1 GiB (-rss_limit_mb / -malloc_limit_mb) is a crash, saved under
# target/fuzz/artifacts/TARGET/. Corpora grow in target/fuzz/corpus/TARGET (not committed).
# The last line of a campaign is "fuzz TARGET: N executions, E edges (cov), F features, C
# crashes"; a crash exits non-zero. Turn each crash into a regression test under
# rsd/tests/fuzz_regress/ (trace readers) or codes_bridge/tests/fuzz_regress/ (CODES readers).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/fuzz
BIN=$OUT/x86_64-unknown-linux-gnu/release/iotrex-fuzz
TARGETS=(read stats expand extrap diff export_codes export_chrome report codes plugin replay)
# Separates the inputs of multi-input targets (fuzz/fuzz_targets/main.rs, SEP); a function,
# since a shell variable cannot hold its NUL bytes.
sep() { printf '\0IOTREX-FUZZ-NEXT\0'; }
# Scratch files of the export and CODES targets: in memory where the machine has /dev/shm.
SCRATCH=$OUT/scratch
[ -d /dev/shm ] && [ -w /dev/shm ] && SCRATCH=/dev/shm/iotrex-fuzz

build() {
    # Stable rustc accepts the sanitizer-coverage pass and its LLVM options (what cargo-fuzz
    # passes without a sanitizer): 8-bit edge counters, the PC table for libFuzzer's coverage
    # figures, and comparison tracing so it can solve magic numbers and lengths. --target keeps
    # the flags off build scripts and proc macros.
    local flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
    flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
    flags+=" -Cllvm-args=-sanitizer-coverage-pc-table"
    flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
    (cd fuzz && RUSTFLAGS="$flags" CARGO_TARGET_DIR="$OUT" nice -n 19 \
        cargo build --release --target x86_64-unknown-linux-gnu --bin iotrex-fuzz)
}

# The body of a .iotrex file: what the trace targets take (past the 32-byte prefix).
body() { tail -c +33 "$1"; }

corpus() {
    local c=$OUT/corpus seeds=$OUT/seeds
    mkdir -p "$seeds"
    cargo build --release -p iotrex >/dev/null
    local iotrex=$ROOT/target/release/iotrex
    # Golden traces of both format versions, and the synthetic program at the scales extrap
    # takes (iotrex synth writes the newest version).
    cp data/format/v1/*.iotrex "$seeds/"
    local g
    for g in data/format/v2/*.iotrex; do cp "$g" "$seeds/$(basename "$g" .iotrex).v2.iotrex"; done
    for g in data/format/v2.7/*.iotrex; do cp "$g" "$seeds/$(basename "$g" .iotrex).v27.iotrex"; done
    # Mini-app seeds from a tracer that wrote version 1 (before format version 2): traced again below,
    # so that both readers see real traces. (The version is the u32 at byte 8 of the prefix.)
    for g in "$seeds"/*.[0-9]*.iotrex; do
        [ "$(od -An -tu4 -j8 -N4 "$g" | tr -d ' ')" = 1 ] || continue
        case $(basename "$g") in synth.*) ;; *) rm -f "$g" ;; esac
    done
    for n in 4 8 12 16; do
        "$iotrex" synth --ranks "$n" --iters 5 -o "$seeds/synth.$n.iotrex" >/dev/null
    done
    # Real mini-app traces when MPI and the tracer are here (as the tests build them).
    if command -v mpicc >/dev/null && [ -f target/release/libiotrex_tracer.so ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            OMPI_MCA_rmaps_base_oversubscribe=1
        local work=$OUT/apps
        mkdir -p "$work"
        # Each app with its arguments (io_sample: output directory, iterations, size).
        local app args flags
        # With the library layers (HDF5, PnetCDF, NetCDF-4 over HDF5) where the libraries are
        # installed: their ops and nested calls are what the version-2 tables hold most of.
        for app in io_sample ior_like h5_coll pnc_more nc4_par; do
            case $app in
                io_sample) args="out 20 4096" flags="" ;;
                h5_coll) args="out/h.h5" flags=$(pkg-config --cflags --libs hdf5-openmpi 2>/dev/null) || continue ;;
                pnc_more) args="out/p.nc" flags=$(pkg-config --cflags --libs pnetcdf 2>/dev/null) || continue ;;
                # (Its pkg-config file leaves out its own include directory: testkit/src/lib.rs.)
                nc4_par) args="out/n.nc" flags="-I$(pkg-config --variable=prefix netcdf-mpi 2>/dev/null)/include $(pkg-config --cflags --libs netcdf-mpi 2>/dev/null)" || continue ;;
                *) args="" flags="" ;;
            esac
            mkdir -p "$work/out"
            # (flags unquoted: pkg-config's words.)
            # shellcheck disable=SC2086
            mpicc -O1 -o "$work/$app" "tests/apps/$app.c" $flags || continue
            for n in 2 4 6; do
                [ -f "$seeds/$app.$n.iotrex" ] && continue
                rm -f "$seeds/$app.$n".rank*
                (cd "$work" && timeout 120 "$iotrex" trace --hdf5 --pnetcdf --netcdf \
                    -o "$seeds/$app.$n.iotrex" -- \
                    timeout 100 mpirun -np "$n" "./$app" $args >/dev/null 2>&1) ||
                    echo "fuzz.sh: tracing $app at $n ranks failed; seeding without it" >&2
            done
        done
    fi
    local t
    for t in "${TARGETS[@]}"; do mkdir -p "$c/$t"; done
    local f name
    for f in "$seeds"/*.iotrex; do
        name=$(basename "$f" .iotrex)
        cp "$f" "$c/read/$name.file"
        for t in read stats expand export_codes export_chrome replay; do
            body "$f" >"$c/$t/$name"
        done
        { body "$f"; sep; body "$f"; } >"$c/diff/$name.self"
        { body "$f"; } >"$c/report/$name"
    done
    # Three scales of one program (and a target) for extrap and diff; four for report --extrap.
    local prog
    for prog in synth io_sample ior_like h5_coll pnc_more nc4_par; do
        local s=()
        for f in "$seeds/$prog".*.iotrex; do
            [[ $(basename "$f") =~ ^$prog\.[0-9]+\.iotrex$ ]] && s+=("$f")
        done
        [ "${#s[@]}" -ge 3 ] || continue
        mapfile -t s < <(printf '%s\n' "${s[@]}" | sort -t. -k2 -n)
        { body "${s[0]}"; sep; body "${s[1]}"; sep; body "${s[2]}"
          sep; printf 32; } >"$c/extrap/$prog"
        { body "${s[0]}"; sep; body "${s[1]}"; } >"$c/diff/$prog.pair"
        local x=$OUT/seeds/$prog.extrap.iotrex
        if "$iotrex" extrap "${s[0]}" "${s[1]}" "${s[2]}" --ranks 32 -o "$x" >/dev/null 2>&1; then
            { body "${s[0]}"; sep; body "${s[1]}"; sep
              body "${s[2]}"; sep; body "$x"; } >"$c/report/$prog.extrap"
        fi
    done
    # CODES exports of the seeds, both formats: first byte 0 recorder, 1 iolang.
    local d=$OUT/codes-export
    # (Kernel names as codes_bridge::iolang::kernel_name writes them.)
    for f in "$seeds"/synth.4.iotrex "$seeds"/io_sample.4.iotrex "$seeds"/spmd_4x10.iotrex; do
        [ -f "$f" ] || continue
        name=$(basename "$f" .iotrex)
        rm -rf "$d"
        if "$iotrex" export codes "$f" -o "$d" --format recorder >/dev/null 2>&1; then
            { printf '\0'; local first=1 r
              for r in $(ls "$d" | sed -n 's/^log\.//p' | sort -n); do
                  [ $first = 1 ] || sep; first=0; cat "$d/log.$r"
              done; } >"$c/codes/$name.recorder"
        fi
        rm -rf "$d"
        if "$iotrex" export codes "$f" -o "$d" --format iolang >/dev/null 2>&1; then
            { printf '\1'; cat "$d/meta.txt"; local r=0
              while [ -f "$d/rank$r.kernel" ]; do
                  sep; cat "$d/rank$r.kernel"; r=$((r + 1))
              done; } >"$c/codes/$name.iolang"
        fi
    done
    rm -rf "$d"
    # Plugin descriptors: a valid one (ABI 1, one model "lin", 2 coefficients of n, fit and
    # eval) followed by points, and the even_odd plugin's shape.
    printf '\1\0\0\0\1\0\0\0\2\1\3lin' >"$c/plugin/valid"
    printf '\1\0\0\0\2\0\0\0\3\2\10even_odd\0\2\1\3lin' >"$c/plugin/two"
    printf '\2\0\0\0\1\0\0' >"$c/plugin/newer"
    echo "fuzz.sh: corpora in $c: $(for t in "${TARGETS[@]}"; do printf '%s %s, ' "$t" "$(ls "$c/$t" | wc -l)"; done)"
}

campaign() {
    local t=$1 secs=$2; shift 2
    [ -x "$BIN" ] || build
    [ -d "$OUT/corpus/$t" ] || corpus
    local art=$OUT/artifacts/$t log=$OUT/logs/$t.log
    mkdir -p "$art" "$OUT/logs" "$SCRATCH"
    local rc=0
    IOTREX_FUZZ_TARGET=$t IOTREX_FUZZ_SCRATCH=$SCRATCH nice -n "${FUZZ_NICE:-19}" "$BIN" \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=1024 \
        -max_len=262144 -dict=fuzz/dict/iotrex.dict -print_final_stats=1 \
        -artifact_prefix="$art/" "$@" "$OUT/corpus/$t" >"$log" 2>&1 || rc=$?
    rm -rf "$SCRATCH"/iotrex-fuzz-*
    local execs cov ft crashes
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
    # (A log without a coverage line, e.g. a crash on a seed, is not an error of the script.)
    cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
    ft=$(grep -ao 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
    # slow-unit-* files are inputs over libFuzzer's wall-time report threshold, not crashes
    # (their CPU time is printed below).
    crashes=$(find "$art" -type f ! -name 'slow-unit-*' | wc -l)
    echo "fuzz $t: ${execs:-0} executions, ${cov:-0} edges (cov), ${ft:-0} features, $crashes crash files in $art (log $log)"
    # libFuzzer's -timeout and slow-unit reports are wall time, which a loaded shared machine
    # stretches: re-run each such input alone and print its CPU time, the figure that says
    # whether the input is slow.
    local f
    for f in "$art"/timeout-* "$art"/slow-unit-*; do
        [ -f "$f" ] || continue
        IOTREX_FUZZ_TARGET=$t IOTREX_FUZZ_SCRATCH=$SCRATCH IOTREX_FUZZ_CPU_LIMIT=1000 \
            /usr/bin/time -f '%U+%S' -o "$OUT/logs/cpu" timeout 60 "$BIN" -runs=1 "$f" \
            >/dev/null 2>&1 || true
        echo "  $(basename "$f"): CPU $(tail -1 "$OUT/logs/cpu") s (user+sys) when re-run alone"
    done
    return "$rc"
}

case "${1:-}" in
    build) build ;;
    corpus) corpus ;;
    list) printf '%s\n' "${TARGETS[@]}" ;;
    all)
        secs=${2:?seconds}; rc=0
        for t in "${TARGETS[@]}"; do campaign "$t" "$secs" || rc=1; done
        exit $rc ;;
    "" | -h | --help) sed -n '2,16p' "$0"; exit 2 ;;
    *)
        t=$1 secs=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
        printf '%s\n' "${TARGETS[@]}" | grep -qx "$t" || { echo "unknown target $t (scripts/fuzz.sh list)" >&2; exit 2; }
        shift 2
        campaign "$t" "$secs" "$@" ;;
esac
