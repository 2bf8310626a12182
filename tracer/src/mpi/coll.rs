//! Collective communication wrappers. `bytes` is what this rank sends (count times the size of
//! the send type), or receives for the receive-only side of a call.

use super::kinds::*;
use super::*;

/// Send arguments as recorded: with `MPI_IN_PLACE` the count and type are ignored by MPI (and
/// may be garbage), so they are recorded as 0 and -1. Gives (count, type, bytes).
fn send_args(st: &mut State, buf: Buf, count: Count, dt: Datatype) -> (i64, i64, i64) {
    if buf.in_place() {
        (0, -1, 0)
    } else {
        let b = dt.bytes(st, count);
        (count.i(), dt.id(st), b)
    }
}

/// Receive arguments as recorded, as [`send_args`] (the receive side of `MPI_Scatter(v)` may
/// be `MPI_IN_PLACE` at the root).
fn recv_args(st: &mut State, buf: BufMut, count: Count, dt: Datatype) -> (i64, i64, i64) {
    if buf.in_place() {
        (0, -1, 0)
    } else {
        (count.i(), dt.id(st), dt.bytes(st, count))
    }
}

/// The arguments only the root uses: (count or bytes, type) at the root, (0, -1) elsewhere.
fn at_root(
    st: &mut State,
    comm: Comm,
    root: Int,
    dt: Datatype,
    value: impl FnOnce(&mut State) -> i64,
) -> (i64, i64) {
    if comm.rank() == root.i() {
        (value(st), dt.id(st))
    } else {
        (0, -1)
    }
}

mpi_hooks! {
    /// Wrapper: `MPI_Barrier`.
    MPI_Barrier, mpi_barrier_ (comm: Comm) => Barrier
        record |st, _| args::barrier(comm.id(st));

    /// Wrapper: `MPI_Bcast`.
    MPI_Bcast, mpi_bcast_ (buf: BufMut, count: Count, dt: Datatype, root: Int, comm: Comm) => Bcast
        record |st, _| {
            let b = dt.bytes(st, count);
            args::bcast(count.i(), dt.id(st), root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Reduce`.
    MPI_Reduce, mpi_reduce_ (
        sbuf: Buf, rbuf: BufMut, count: Count, dt: Datatype, op: ReduceOp, root: Int, comm: Comm,
    ) => Reduce
        record |st, _| {
            let b = dt.bytes(st, count);
            args::reduce(count.i(), dt.id(st), op.id(st), root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Reduce_scatter`, recorded with the caller's own block (`recvcounts[rank]`).
    MPI_Reduce_scatter, mpi_reduce_scatter_ (
        sbuf: Buf, rbuf: BufMut, counts: Ints, dt: Datatype, op: ReduceOp, comm: Comm,
    ) => ReduceScatter
        record |st, _| {
            let count = counts.at(comm.rank());
            let (t, o, c) = (dt.id(st), op.id(st), comm.id(st));
            args::reduce_scatter(count, t, o, c, dt.bytes(st, count))
        };

    /// Wrapper: `MPI_Gather`.
    MPI_Gather, mpi_gather_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype,
        root: Int, comm: Comm,
    ) => Gather
        record |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let (rc, rty) = at_root(st, comm, root, rtype, |_| rcount.i());
            args::gather(sc, sty, rc, rty, root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Gatherv`.
    MPI_Gatherv, mpi_gatherv_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcounts: Ints, displs: Ints,
        rtype: Datatype, root: Int, comm: Comm,
    ) => Gatherv
        record |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let (rb, rty) = at_root(st, comm, root, rtype, |st| {
                rtype.bytes(st, rcounts.sum(comm.size()))
            });
            args::gatherv(sc, sty, rb, rty, root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Scatter`.
    MPI_Scatter, mpi_scatter_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype,
        root: Int, comm: Comm,
    ) => Scatter
        record |st, _| {
            let (sc, sty) = at_root(st, comm, root, stype, |_| scount.i());
            let (rc, rty, b) = recv_args(st, rbuf, rcount, rtype);
            args::scatter(sc, sty, rc, rty, root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Scatterv`.
    MPI_Scatterv, mpi_scatterv_ (
        sbuf: Buf, scounts: Ints, displs: Ints, stype: Datatype, rbuf: BufMut, rcount: Count,
        rtype: Datatype, root: Int, comm: Comm,
    ) => Scatterv
        record |st, _| {
            let (sb, sty) = at_root(st, comm, root, stype, |st| {
                stype.bytes(st, scounts.sum(comm.size()))
            });
            let (rc, rty, b) = recv_args(st, rbuf, rcount, rtype);
            args::scatterv(sb, sty, rc, rty, root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Allgather`.
    MPI_Allgather, mpi_allgather_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype,
        comm: Comm,
    ) => Allgather
        record |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            args::allgather(sc, sty, rcount.i(), rtype.id(st), comm.id(st), b)
        };

    /// Wrapper: `MPI_Allgatherv`.
    MPI_Allgatherv, mpi_allgatherv_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcounts: Ints, displs: Ints,
        rtype: Datatype, comm: Comm,
    ) => Allgatherv
        record |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let rb = rtype.bytes(st, rcounts.sum(comm.size()));
            args::allgatherv(sc, sty, rb, rtype.id(st), comm.id(st), b)
        };

    /// Wrapper: `MPI_Alltoall`; `bytes` is everything this rank sends.
    MPI_Alltoall, mpi_alltoall_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype,
        comm: Comm,
    ) => Alltoall
        record |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let n = comm.size();
            args::alltoall(sc, sty, rcount.i(), rtype.id(st), comm.id(st), b * n)
        };

    /// Wrapper: `MPI_Alltoallv`.
    MPI_Alltoallv, mpi_alltoallv_ (
        sbuf: Buf, scounts: Ints, sdispls: Ints, stype: Datatype, rbuf: BufMut, rcounts: Ints,
        rdispls: Ints, rtype: Datatype, comm: Comm,
    ) => Alltoallv
        record |st, _| {
            let n = comm.size();
            let (sb, sty) = if sbuf.in_place() {
                (0, -1)
            } else {
                (stype.bytes(st, scounts.sum(n)), stype.id(st))
            };
            let rb = rtype.bytes(st, rcounts.sum(n));
            args::alltoallv(sb, sty, rb, rtype.id(st), comm.id(st), sb)
        };
}

// The reductions with `MPI_Allreduce`'s arguments.
macro_rules! reduce_like {
    ($($op:ident: $c:ident, $f:tt;)*) => { paste::paste! { mpi_hooks! {$(
        /// Wrapper: a reduction with `MPI_Allreduce`'s arguments.
        $c, $f (sbuf: Buf, rbuf: BufMut, count: Count, dt: Datatype, op: ReduceOp, comm: Comm)
            => $op
            record |st, _| {
                let b = dt.bytes(st, count);
                args::[<$op:snake>](count.i(), dt.id(st), op.id(st), comm.id(st), b)
            };
    )*}}};
}
reduce_like! {
    Allreduce: MPI_Allreduce, mpi_allreduce_;
    Scan: MPI_Scan, mpi_scan_;
    Exscan: MPI_Exscan, mpi_exscan_;
    ReduceScatterBlock: MPI_Reduce_scatter_block, mpi_reduce_scatter_block_;
}
