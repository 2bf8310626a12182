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

// Each collective and its nonblocking form (`MPI_Ibcast`, ...), which records the same
// parameters and then its request (rsd's tests check the two layouts agree).
macro_rules! collectives {
    ($(
        $(#[$doc:meta])*
        $op:ident / $iop:ident: $c:ident, $f:tt / $ic:ident, $if:tt
            ($($arg:ident: $kind:ident $(<$g:ident>)? $([$n:ident])?),* $(,)?)
            record |$st:ident| $body:expr;
    )*) => { mpi_hooks! {$(
        $(#[$doc])*
        $c, $f ($($arg: $kind $(<$g>)? $([$n])?),*) => $op
            record |$st, _| $body;

        $(#[$doc])*
        /// The nonblocking form: the same parameters, then the request.
        $ic, $if ($($arg: $kind $(<$g>)? $([$n])?,)* req: New<Request>) => $iop
            record |$st, r| {
                let mut v = $body;
                v.push(req.id($st, r));
                v
            };
    )*}};
}

collectives! {
    /// Wrapper: `MPI_Barrier`.
    Barrier / Ibarrier: MPI_Barrier, mpi_barrier_ / MPI_Ibarrier, mpi_ibarrier_ (comm: Comm)
        record |st| args::barrier(comm.id(st));

    /// Wrapper: `MPI_Bcast`.
    Bcast / Ibcast: MPI_Bcast, mpi_bcast_ / MPI_Ibcast, mpi_ibcast_
        (buf: BufMut, count: Count, dt: Datatype, root: Int, comm: Comm)
        record |st| {
            let b = dt.bytes(st, count);
            args::bcast(count.i(), dt.id(st), root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Reduce`.
    Reduce / Ireduce: MPI_Reduce, mpi_reduce_ / MPI_Ireduce, mpi_ireduce_ (
        sbuf: Buf, rbuf: BufMut, count: Count, dt: Datatype, op: ReduceOp, root: Int, comm: Comm,
    )
        record |st| {
            let b = dt.bytes(st, count);
            args::reduce(count.i(), dt.id(st), op.id(st), root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Reduce_scatter`, recorded with the caller's own block (`recvcounts[rank]`).
    ReduceScatter / IreduceScatter: MPI_Reduce_scatter, mpi_reduce_scatter_
        / MPI_Ireduce_scatter, mpi_ireduce_scatter_ (
        sbuf: Buf, rbuf: BufMut, counts: Ints, dt: Datatype, op: ReduceOp, comm: Comm,
    )
        record |st| {
            let count = counts.at(comm.rank());
            let (t, o, c) = (dt.id(st), op.id(st), comm.id(st));
            args::reduce_scatter(count, t, o, c, dt.bytes(st, count))
        };

    /// Wrapper: `MPI_Gather`.
    Gather / Igather: MPI_Gather, mpi_gather_ / MPI_Igather, mpi_igather_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype,
        root: Int, comm: Comm,
    )
        record |st| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let (rc, rty) = at_root(st, comm, root, rtype, |_| rcount.i());
            args::gather(sc, sty, rc, rty, root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Gatherv`.
    Gatherv / Igatherv: MPI_Gatherv, mpi_gatherv_ / MPI_Igatherv, mpi_igatherv_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcounts: Ints, displs: Ints,
        rtype: Datatype, root: Int, comm: Comm,
    )
        record |st| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let (rb, rty) = at_root(st, comm, root, rtype, |st| {
                rtype.bytes(st, rcounts.sum(comm.size()))
            });
            args::gatherv(sc, sty, rb, rty, root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Scatter`.
    Scatter / Iscatter: MPI_Scatter, mpi_scatter_ / MPI_Iscatter, mpi_iscatter_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype,
        root: Int, comm: Comm,
    )
        record |st| {
            let (sc, sty) = at_root(st, comm, root, stype, |_| scount.i());
            let (rc, rty, b) = recv_args(st, rbuf, rcount, rtype);
            args::scatter(sc, sty, rc, rty, root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Scatterv`.
    Scatterv / Iscatterv: MPI_Scatterv, mpi_scatterv_ / MPI_Iscatterv, mpi_iscatterv_ (
        sbuf: Buf, scounts: Ints, displs: Ints, stype: Datatype, rbuf: BufMut, rcount: Count,
        rtype: Datatype, root: Int, comm: Comm,
    )
        record |st| {
            let (sb, sty) = at_root(st, comm, root, stype, |st| {
                stype.bytes(st, scounts.sum(comm.size()))
            });
            let (rc, rty, b) = recv_args(st, rbuf, rcount, rtype);
            args::scatterv(sb, sty, rc, rty, root.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Allgather`.
    Allgather / Iallgather: MPI_Allgather, mpi_allgather_ / MPI_Iallgather, mpi_iallgather_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype,
        comm: Comm,
    )
        record |st| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            args::allgather(sc, sty, rcount.i(), rtype.id(st), comm.id(st), b)
        };

    /// Wrapper: `MPI_Allgatherv`.
    Allgatherv / Iallgatherv: MPI_Allgatherv, mpi_allgatherv_ / MPI_Iallgatherv, mpi_iallgatherv_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcounts: Ints, displs: Ints,
        rtype: Datatype, comm: Comm,
    )
        record |st| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let rb = rtype.bytes(st, rcounts.sum(comm.size()));
            args::allgatherv(sc, sty, rb, rtype.id(st), comm.id(st), b)
        };

    /// Wrapper: `MPI_Alltoall`; `bytes` is everything this rank sends.
    Alltoall / Ialltoall: MPI_Alltoall, mpi_alltoall_ / MPI_Ialltoall, mpi_ialltoall_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype,
        comm: Comm,
    )
        record |st| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let n = comm.size();
            args::alltoall(sc, sty, rcount.i(), rtype.id(st), comm.id(st), b * n)
        };

    /// Wrapper: `MPI_Alltoallv`.
    Alltoallv / Ialltoallv: MPI_Alltoallv, mpi_alltoallv_ / MPI_Ialltoallv, mpi_ialltoallv_ (
        sbuf: Buf, scounts: Ints, sdispls: Ints, stype: Datatype, rbuf: BufMut, rcounts: Ints,
        rdispls: Ints, rtype: Datatype, comm: Comm,
    )
        record |st| {
            let n = comm.size();
            let (sb, sty) = if sbuf.in_place() {
                (0, -1)
            } else {
                (stype.bytes(st, scounts.sum(n)), stype.id(st))
            };
            let rb = rtype.bytes(st, rcounts.sum(n));
            args::alltoallv(sb, sty, rb, rtype.id(st), comm.id(st), sb)
        };

    /// Wrapper: `MPI_Alltoallw`: byte totals over the peers, each with its own type.
    Alltoallw / Ialltoallw: MPI_Alltoallw, mpi_alltoallw_ / MPI_Ialltoallw, mpi_ialltoallw_ (
        sbuf: Buf, scounts: Ints, sdispls: Ints, stypes: Handles<Datatype> [comm], rbuf: BufMut,
        rcounts: Ints, rdispls: Ints, rtypes: Handles<Datatype> [comm], comm: Comm,
    )
        record |st| {
            let n = comm.size();
            let sb = if sbuf.in_place() { 0 } else { typed_bytes(st, scounts, stypes, n) };
            let rb = typed_bytes(st, rcounts, rtypes, n);
            args::alltoallw(sb, rb, comm.id(st), sb)
        };

    /// Wrapper: `MPI_Allreduce`.
    Allreduce / Iallreduce: MPI_Allreduce, mpi_allreduce_ / MPI_Iallreduce, mpi_iallreduce_
        (sbuf: Buf, rbuf: BufMut, count: Count, dt: Datatype, op: ReduceOp, comm: Comm)
        record |st| reduction(st, count, dt, op, comm, args::allreduce);

    /// Wrapper: `MPI_Scan`.
    Scan / Iscan: MPI_Scan, mpi_scan_ / MPI_Iscan, mpi_iscan_
        (sbuf: Buf, rbuf: BufMut, count: Count, dt: Datatype, op: ReduceOp, comm: Comm)
        record |st| reduction(st, count, dt, op, comm, args::scan);

    /// Wrapper: `MPI_Exscan`.
    Exscan / Iexscan: MPI_Exscan, mpi_exscan_ / MPI_Iexscan, mpi_iexscan_
        (sbuf: Buf, rbuf: BufMut, count: Count, dt: Datatype, op: ReduceOp, comm: Comm)
        record |st| reduction(st, count, dt, op, comm, args::exscan);

    /// Wrapper: `MPI_Reduce_scatter_block`.
    ReduceScatterBlock / IreduceScatterBlock: MPI_Reduce_scatter_block, mpi_reduce_scatter_block_
        / MPI_Ireduce_scatter_block, mpi_ireduce_scatter_block_
        (sbuf: Buf, rbuf: BufMut, count: Count, dt: Datatype, op: ReduceOp, comm: Comm)
        record |st| reduction(st, count, dt, op, comm, args::reduce_scatter_block);
}

/// The parameters of a reduction with `MPI_Allreduce`'s arguments (`args`: the op's
/// constructor).
#[inline]
fn reduction(
    st: &mut State,
    count: Count,
    dt: Datatype,
    op: ReduceOp,
    comm: Comm,
    args: impl FnOnce(i64, i64, i64, i64, i64) -> Vec<i64>,
) -> Vec<i64> {
    let b = dt.bytes(st, count);
    args(count.i(), dt.id(st), op.id(st), comm.id(st), b)
}

/// The bytes of `n` blocks of `counts[i]` elements of `types[i]`.
fn typed_bytes(st: &mut State, counts: Ints, types: Handles<Datatype>, n: i64) -> i64 {
    let counts = counts.read(n);
    let types = types.read(n);
    counts
        .iter()
        .zip(types)
        .map(|(&c, t)| Datatype(t as H).bytes(st, c))
        .sum()
}
