#!/usr/bin/env bash
# Installs the system packages iotrex needs, only if they are missing: Open MPI (mpicc,
# mpirun, headers), libclang + clang (bindgen for mpi-sys), pkg-config, parallel HDF5 and
# PnetCDF for Open MPI, Chromium (the report's rendering test); then a private MPICH
# for the tracer's MPICH tests (scripts/install-mpich.sh). Idempotent and quiet when
# everything is there, so `make test` and `make demo` can call it every time.
set -euo pipefail
here=$(dirname "$0")

missing=()
command -v mpicc >/dev/null 2>&1 || missing+=(openmpi-bin libopenmpi-dev)
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
# libopenmpi-dev pulls gfortran in; named too, for the Fortran mini-app (tests/apps/*.f90).
command -v gfortran >/dev/null 2>&1 || missing+=(gfortran)
command -v clang >/dev/null 2>&1 || missing+=(clang)
# The tracer unwinds call sites with libunwind when it is there (~70 ns for four frames);
# without it, glibc's backtrace() costs 1-2 us per traced call.
ldconfig -p 2>/dev/null | grep -q 'libunwind\.so\.8' || missing+=(libunwind8)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
# Parallel HDF5 built on Open MPI, for the HDF5 mini-app (tests/apps/h5_coll.c); the tests
# link it with the flags of `pkg-config hdf5-openmpi` (no pkg-config yet: install both).
pkg-config --exists hdf5-openmpi 2>/dev/null || missing+=(libhdf5-openmpi-dev)
# PnetCDF (built on Open MPI) for the PnetCDF layer's mini-app (tests/apps/pnc_more.c), linked
# with the flags of `pkg-config pnetcdf`; pnetcdf-bin's ncmpidump reads its files back.
pkg-config --exists pnetcdf 2>/dev/null || missing+=(libpnetcdf-dev)
command -v ncmpidump >/dev/null 2>&1 || missing+=(pnetcdf-bin)
# Parallel NetCDF-4 on that HDF5, for tests/apps/nc4_*.c (`pkg-config netcdf-mpi`), and
# ncdump, to look at what they wrote.
pkg-config --exists netcdf-mpi 2>/dev/null || missing+=(libnetcdf-mpi-dev)
command -v ncdump >/dev/null 2>&1 || missing+=(netcdf-bin)
# A real MPI application for replay's end-to-end test (replay_mpi/tests/it/lammps.rs).
command -v lmp >/dev/null 2>&1 || missing+=(lammps)
# The second real application (tests/it/real_python.rs): a Python program on Debian's
# mpi4py and parallel h5py, under Debian's own interpreter.
/usr/bin/python3 -c 'import mpi4py' >/dev/null 2>&1 || missing+=(python3-mpi4py)
ls /usr/lib/python3/dist-packages/h5py._debian_h5py_mpi* >/dev/null 2>&1 || missing+=(python3-h5py-mpi)
# Meep (FDTD, parallel HDF5 output) for tests/it/real_meep.rs and scripts/meep-scales.sh.
command -v meep >/dev/null 2>&1 || missing+=(meep-openmpi)
# Headless Chromium renders `iotrex report` pages for tests/it/report_screens.rs (layout, text
# overlap, screenshots) and scripts/check-report.sh.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# OTF2 (loaded at run time by `iotrex export otf2`) and otf2-print, which reads the
# exports back in tests/it/export_otf2.rs.
ldconfig -p 2>/dev/null | grep -q 'libopen-trace-format2\.so' || missing+=(libotf2-trace-dev)
command -v otf2-print >/dev/null 2>&1 || missing+=(otf2-tools)
# The emulated cluster (scripts/cluster.sh: namespaces, veths, a bridge) and the storage rig
# (scripts/storage.sh: loop devices, ext4); nsenter, unshare and setpriv are util-linux's.
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v losetup >/dev/null 2>&1 || missing+=(mount)
command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
# pip, for the test dependencies Debian does not package (duckdb, h5py's wheel: pydeps below).
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || ls /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)

# DuckDB (from PyPI: Debian has no package) reads `iotrex export parquet` back in
# tests/it/export_parquet.rs, into target/pydeps so Debian's own Python stays untouched.
pydeps() {
  local dir
  dir="$(cd "$here/.." && pwd)/target/pydeps"
  if ! PYTHONPATH="$dir" /usr/bin/python3 -c 'import duckdb' >/dev/null 2>&1; then
    echo "install-deps: installing duckdb (PyPI) into $dir"
    /usr/bin/python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --target "$dir" duckdb
  fi
  # PyPI's h5py wheel, which bundles a private serial HDF5 1.14 (Debian's is 1.10), for
  # tests/it/trace_hdf5_wheel.rs; apart from duckdb and without dependencies, so Debian's NumPy
  # (1.24) and mpi4py serve. 3.11.0 bundles HDF5 1.14.2 and is built for NumPy 1.x.
  if ! PYTHONPATH="$dir/h5py-1.14" /usr/bin/python3 -c 'import h5py, sys; sys.exit(not h5py.version.hdf5_version.startswith("1.14."))' >/dev/null 2>&1; then
    echo "install-deps: installing h5py 3.11.0 (PyPI wheel, HDF5 1.14) into $dir/h5py-1.14"
    /usr/bin/python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --target "$dir/h5py-1.14" 'h5py==3.11.0'
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  bash "$here/install-mpich.sh"
  pydeps
  exit 0
fi

# De-duplicate while keeping order.
pkgs=$(printf '%s\n' "${missing[@]}" | awk '!seen[$0]++' | tr '\n' ' ')
echo "install-deps: installing missing packages: $pkgs"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to apt-get install: $pkgs" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
echo "install-deps: done"
bash "$here/install-mpich.sh"
pydeps
