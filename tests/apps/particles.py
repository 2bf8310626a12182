"""A weak-scaled particle code in Python (Debian's python3-mpi4py and python3-h5py-mpi), the
second real application of the tests: ranks on a periodic 1-D ring exchange the particles
that leave their slab (data-dependent message sizes), and every other step all ranks write
their particles to one HDF5 dataset collectively (offsets are the exclusive prefix sum of the
data-dependent counts, by MPI_Exscan), and rank 0 appends a text line to a log.

Usage: mpirun -np N /usr/bin/python3 particles.py OUT.h5 [STEPS]

Write OUT.h5 outside the script's directory: Python re-lists a directory on its import path
when its mtime changes, so files created beside the script change the import calls between
runs. The collectives take NumPy buffers (Exscan, Allreduce): mpi4py's object collectives
(`comm.exscan(n)`) run their own point-to-point algorithms whose loop counts depend on the
rank count in ways extrapolation does not model yet."""
import sys
import numpy as np
from mpi4py import MPI
import h5py

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
out = sys.argv[1] if len(sys.argv) > 1 else "particles.h5"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
per_rank = 2000
rng = np.random.default_rng(1234 + rank)
x = rng.uniform(rank, rank + 1, per_rank)
v = rng.normal(0.0, 0.05, per_rank)

log = open(out + ".log", "w") if rank == 0 else None
with h5py.File(out, "w", driver="mpio", comm=comm) as f:
    for step in range(steps):
        x = (x + v) % size
        owner = np.floor(x).astype(int)
        left, right = (rank - 1) % size, (rank + 1) % size
        go_l = owner == left
        go_r = owner == right
        stay = ~(go_l | go_r)
        # Counts first, then the particles (data-dependent message sizes).
        cnt = np.zeros(1, dtype="i8")
        comm.Sendrecv(np.array([go_l.sum()], dtype="i8"), dest=left, recvbuf=cnt, source=right)
        nl = int(cnt[0])
        comm.Sendrecv(np.array([go_r.sum()], dtype="i8"), dest=right, recvbuf=cnt, source=left)
        nr = int(cnt[0])
        from_r = np.empty(nl * 2)
        from_l = np.empty(nr * 2)
        comm.Sendrecv(np.concatenate([x[go_l], v[go_l]]), dest=left, recvbuf=from_r, source=right)
        comm.Sendrecv(np.concatenate([x[go_r], v[go_r]]), dest=right, recvbuf=from_l, source=left)
        x = np.concatenate([x[stay], from_r[:nl], from_l[:nr]])
        v = np.concatenate([v[stay], from_r[nl:], from_l[nr:]])
        if step % 2 == 1:
            n = len(x)
            mine = np.array([n], dtype="i8")
            start_a = np.zeros(1, dtype="i8")
            total_a = np.zeros(1, dtype="i8")
            comm.Exscan(mine, start_a)
            comm.Allreduce(mine, total_a)
            start = int(start_a[0]) if rank > 0 else 0
            total = int(total_a[0])
            g = f.create_group(f"step{step}")
            dx = g.create_dataset("x", (total,), dtype="f8")
            dv = g.create_dataset("v", (total,), dtype="f8")
            with dx.collective:
                dx[start:start + n] = x
            with dv.collective:
                dv[start:start + n] = v
            if log:
                log.write(f"step {step}: {total} particles, mean v {v.mean():.6f}\n")
                log.flush()
if log:
    log.close()
