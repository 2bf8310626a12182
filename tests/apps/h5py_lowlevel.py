"""Parallel HDF5 through h5py's low-level API (Debian's python3-h5py-mpi and python3-mpi4py),
so that every HDF5 call the program makes is one this script names: it counts them itself
and rank 0 prints, for every rank, `COUNT <rank> <H5 function> <calls> <bytes>` (bytes: the elements a
transfer moved), which `tests/it/trace_hdf5.rs` compares with the trace's HDF5 layer.

Each step creates a 1-D dataset of `PER` float64 per rank, selects the rank's block and
writes it collectively, then an extendible chunked dataset grows by a block of rows per step
and each rank writes its row independently. h5py's objects are released with `H5Idec_ref`
(not an HDF5 call the layer records; neither is the file's close), so the file's metadata
flush at the end happens in `H5Fflush`, called here.

With `read` after STEPS, the file is opened again and each rank reads its rows back
independently: HDF5 then reads its metadata (superblock, object headers, the chunk index on
the way to each chunk) on every rank.

Usage: mpirun -np N /usr/bin/python3 h5py_lowlevel.py OUT.h5 [STEPS [read]]
"""
import sys
from collections import Counter

import numpy as np
from mpi4py import MPI
import h5py
from h5py import h5d, h5f, h5fd, h5p, h5s, h5t

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
read_back = len(sys.argv) > 3 and sys.argv[3] == "read"
PER = 1000
COLS = 16

calls = Counter()
moved = Counter()


def did(name, nbytes=0):
    calls[name] += 1
    moved[name] += nbytes


fapl = h5p.create(h5p.FILE_ACCESS)
fapl.set_fapl_mpio(comm, MPI.INFO_NULL)
did("H5Pset_fapl_mpio")
fid = h5f.create(out.encode(), h5f.ACC_TRUNC, fapl=fapl)
did("H5Fcreate")
coll = h5p.create(h5p.DATASET_XFER)
coll.set_dxpl_mpio(h5fd.MPIO_COLLECTIVE)
did("H5Pset_dxpl_mpio")
indep = h5p.create(h5p.DATASET_XFER)
indep.set_dxpl_mpio(h5fd.MPIO_INDEPENDENT)
did("H5Pset_dxpl_mpio")

# The extendible dataset: rows of COLS ints, chunked by one row.
space = h5s.create_simple((0, COLS), (h5s.UNLIMITED, COLS))
did("H5Screate_simple")
dcpl = h5p.create(h5p.DATASET_CREATE)
dcpl.set_chunk((1, COLS))
did("H5Pset_chunk")
ext = h5d.create(fid, b"rows", h5t.NATIVE_INT32, space, dcpl=dcpl)
did("H5Dcreate2")
row = h5s.create_simple((1, COLS))
did("H5Screate_simple")

for step in range(steps):
    # A block of PER doubles per rank, written collectively.
    fspace = h5s.create_simple((PER * size,))
    did("H5Screate_simple")
    dset = h5d.create(fid, f"step{step}".encode(), h5t.NATIVE_DOUBLE, fspace)
    did("H5Dcreate2")
    fspace.select_hyperslab((rank * PER,), (PER,))
    did("H5Sselect_hyperslab")
    mspace = h5s.create_simple((PER,))
    did("H5Screate_simple")
    data = np.full(PER, rank + step, dtype="f8")
    dset.write(mspace, fspace, data, dxpl=coll)
    did("H5Dwrite", data.nbytes)

    # One more row per rank in the extendible dataset, written independently. h5py's
    # DatasetID.set_extent asks the dataset's space for its rank first (H5Dget_space, then
    # H5Sclose after H5Dset_extent).
    ext.set_extent(((step + 1) * size, COLS))
    did("H5Dget_space")
    did("H5Dset_extent")
    did("H5Sclose")
    grown = ext.get_space()
    did("H5Dget_space")
    grown.select_hyperslab((step * size + rank, 0), (1, COLS))
    did("H5Sselect_hyperslab")
    vals = np.arange(COLS, dtype="i4") + rank
    ext.write(row, grown, vals, dxpl=indep)
    did("H5Dwrite", vals.nbytes)

h5f.flush(fid, h5f.SCOPE_GLOBAL)
did("H5Fflush")
# Every object of the file released before the file (each by H5Idec_ref), so that the file
# closes at its last reference.
del dset, ext, fspace, mspace, grown, row, space
fid.close()

if read_back:
    fid = h5f.open(out.encode(), h5f.ACC_RDONLY, fapl=fapl)
    did("H5Fopen")
    ext = h5d.open(fid, b"rows")
    did("H5Dopen2")
    row = h5s.create_simple((1, COLS))
    did("H5Screate_simple")
    for step in range(steps):
        grown = ext.get_space()
        did("H5Dget_space")
        grown.select_hyperslab((step * size + rank, 0), (1, COLS))
        did("H5Sselect_hyperslab")
        vals = np.empty(COLS, dtype="i4")
        ext.read(row, grown, vals, dxpl=indep)
        did("H5Dread", vals.nbytes)
        assert (vals == np.arange(COLS, dtype="i4") + rank).all()
    del ext, row, grown
    fid.close()

# Rank 0 prints every rank's counts (the ranks' own prints would interleave mid-line).
mine = [f"COUNT {rank} {name} {calls[name]} {moved[name]}" for name in sorted(calls)]
every = comm.gather(mine, root=0)
if rank == 0:
    print("\n".join(line for lines in every for line in lines), flush=True)
