# iotrex: `make demo` runs the pipeline on the bundled data; `make test` runs every test.
# Both install missing system packages first and build in release mode.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# MPI runs as root on CI and dev machines, on 2 cores: allow it and allow oversubscription.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1
export CARGO_TERM_COLOR := never

CARGO ?= cargo

.PHONY: help deps build test check lint bench demo clean-demo fuzz

help:
	@echo "make demo   - install deps, build (release), run the pipeline on the bundled data"
	@echo "make test   - install deps, build (release), fmt + clippy + every test"
	@echo "make check  - fmt + clippy + the tests that need no MPI run, root or rig (minutes)"
	@echo "make bench  - criterion benchmarks and size tables (figures printed)"
	@echo "make fuzz   - a short libFuzzer campaign on every reader (scripts/fuzz.sh; not part of make test)"

deps:
	@bash scripts/install-deps.sh

build: deps
	$(CARGO) build --release --workspace

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

# Not `build`: `cargo test` resolves features with the dev-dependencies (serde's `alloc`,
# getrandom's `std` through criterion and proptest), so what `cargo build` made, every crate
# on serde, would be compiled again. This build makes what `cargo test` compiles, with the
# same features, plus the cdylibs the tests load (the preload tracer, the plugin), which
# `cargo test` does not build; the test run then compiles nothing.
test: lint deps
	$(CARGO) build --release --workspace --lib --bins --tests --examples
	$(CARGO) test --release --workspace

# What needs no MPI run, no root and no rig: every package's unit tests, and the integration
# tests of the packages that work on traces in memory or on disk (the format, extrapolation,
# the CODES and Parquet exports, the report). The tracer's, collio's, h5oracle's and the
# replays' integration tests run programs under mpirun: `make test`.
check: lint deps
	$(CARGO) test --release --workspace --lib --bins
	$(CARGO) test --release -p rsd -p extrap -p codes_bridge -p columnar -p report --test '*'

bench: build
	$(CARGO) bench -p rsd
	$(CARGO) bench -p codes_bridge
	$(CARGO) bench -p extrap
	bash scripts/bench-tracer.sh
	bash scripts/bench-extrap.sh
	$(CARGO) run --release -p replay --example accuracy
	bash scripts/bench-replay.sh

# A short campaign, FUZZ_SECONDS per target; long ones: scripts/fuzz.sh TARGET SECONDS.
FUZZ_SECONDS ?= 20
fuzz: deps
	bash scripts/fuzz.sh all $(FUZZ_SECONDS)

demo: build
	@bash scripts/demo.sh

clean-demo:
	rm -rf demo-out
