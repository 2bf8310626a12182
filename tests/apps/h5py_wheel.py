"""Serial HDF5 through h5py's low-level API, one file per rank, for PyPI's h5py wheel (which
bundles its own HDF5 1.14, serial) under mpirun with Debian's mpi4py for the rank.

Every HDF5 call the script makes is one it names and counts; rank 0 prints, for every rank,
`COUNT <rank> <H5 function> <calls> <bytes>` (bytes: what a transfer moved) and
`VERSION <HDF5 version h5py was built with and runs on>`, which `tests/it/trace_hdf5_wheel.rs`
compares with the trace. The transfers are 128 KiB, more than HDF5's 64 KiB sieve buffer, so
each goes to the file inside its own `H5Dwrite`/`H5Dread` (a smaller one may wait in the
buffer for a later call).

Usage: mpirun -np N /usr/bin/python3 h5py_wheel.py OUTDIR [STEPS]
(with the wheel first on PYTHONPATH)
"""
import sys
from collections import Counter

import numpy as np
from mpi4py import MPI
import h5py
from h5py import h5d, h5f, h5s, h5t

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
outdir = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
HALF = 16384  # float64: 128 KiB

calls = Counter()
moved = Counter()


def did(name, nbytes=0):
    calls[name] += 1
    moved[name] += nbytes


fid = h5f.create(f"{outdir}/r{rank}.h5".encode(), h5f.ACC_TRUNC)
did("H5Fcreate")
for step in range(steps):
    fspace = h5s.create_simple((2 * HALF,))
    did("H5Screate_simple")
    dset = h5d.create(fid, f"step{step}".encode(), h5t.NATIVE_DOUBLE, fspace)
    did("H5Dcreate2")
    mspace = h5s.create_simple((HALF,))
    did("H5Screate_simple")
    for half in range(2):
        fspace.select_hyperslab((half * HALF,), (HALF,))
        did("H5Sselect_hyperslab")
        data = np.full(HALF, rank * 10 + step + half, dtype="f8")
        dset.write(mspace, fspace, data)
        did("H5Dwrite", data.nbytes)
    # Read the first half back.
    fspace.select_hyperslab((0,), (HALF,))
    did("H5Sselect_hyperslab")
    back = np.empty(HALF, dtype="f8")
    dset.read(mspace, fspace, back)
    did("H5Dread", back.nbytes)
    assert back[0] == rank * 10 + step, back[0]
    del dset, fspace, mspace

h5f.flush(fid, h5f.SCOPE_GLOBAL)
did("H5Fflush")
fid.close()

mine = [f"COUNT {rank} {name} {calls[name]} {moved[name]}" for name in sorted(calls)]
every = comm.gather(mine, root=0)
if rank == 0:
    print("\n".join(line for lines in every for line in lines), flush=True)
    print(f"VERSION {h5py.version.hdf5_version}", flush=True)
