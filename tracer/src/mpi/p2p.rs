//! Point-to-point and completion wrappers. Peers are recorded relative to the caller
//! ([`Peer::rel`]), requests as ids in the rank's request table.

use super::kinds::*;
use super::*;

// The blocking sends, every mode.
macro_rules! blocking_send {
    ($($op:ident: $c:ident, $f:tt;)*) => { paste::paste! { mpi_hooks! {$(
        /// Wrapper: a blocking send.
        $c, $f (buf: Buf, count: Count, dt: Datatype, dest: Peer, tag: Tag, comm: Comm) => $op
            record |st, _| {
                let b = dt.bytes(st, count);
                args::[<$op:snake>](count.i(), dt.id(st), dest.rel(comm), tag.i(), comm.id(st), b)
            };
    )*}}};
}
blocking_send! {
    Send: MPI_Send, mpi_send_;
    Ssend: MPI_Ssend, mpi_ssend_;
    Rsend: MPI_Rsend, mpi_rsend_;
    Bsend: MPI_Bsend, mpi_bsend_;
}

// The nonblocking sends (every mode) and receive.
macro_rules! nonblocking_p2p {
    ($($op:ident: $c:ident, $f:tt, $buf:ident;)*) => { paste::paste! { mpi_hooks! {$(
        /// Wrapper: a nonblocking send or receive.
        $c, $f (
            buf: $buf, count: Count, dt: Datatype, peer: Peer, tag: Tag, comm: Comm,
            req: New<Request>,
        ) => $op
            record |st, r| {
                let b = dt.bytes(st, count);
                let q = req.id(st, r);
                let (t, p, c) = (dt.id(st), peer.rel(comm), comm.id(st));
                args::[<$op:snake>](count.i(), t, p, tag.i(), c, b, q)
            };
    )*}}};
}
nonblocking_p2p! {
    Isend: MPI_Isend, mpi_isend_, Buf;
    Irecv: MPI_Irecv, mpi_irecv_, BufMut;
    Issend: MPI_Issend, mpi_issend_, Buf;
    Irsend: MPI_Irsend, mpi_irsend_, Buf;
    Ibsend: MPI_Ibsend, mpi_ibsend_, Buf;
}

mpi_hooks! {
    /// Wrapper: `MPI_Recv`.
    MPI_Recv, mpi_recv_ (
        buf: BufMut, count: Count, dt: Datatype, src: Peer, tag: Tag, comm: Comm, status: Status,
    ) => Recv
        record |st, _| {
            let b = dt.bytes(st, count);
            args::recv(count.i(), dt.id(st), src.rel(comm), tag.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Sendrecv`.
    MPI_Sendrecv, mpi_sendrecv_ (
        sbuf: Buf, scount: Count, stype: Datatype, dest: Peer, stag: Tag,
        rbuf: BufMut, rcount: Count, rtype: Datatype, src: Peer, rtag: Tag,
        comm: Comm, status: Status,
    ) => Sendrecv
        record |st, _| {
            let b = stype.bytes(st, scount);
            let (sty, d) = (stype.id(st), dest.rel(comm));
            let (rty, s) = (rtype.id(st), src.rel(comm));
            args::sendrecv(scount.i(), sty, d, stag.i(), rcount.i(), rty, s, rtag.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Wait`.
    MPI_Wait, mpi_wait_ (req: Ref<Request>, status: Status) => Wait
        // Read before the call, which resets a completed request to MPI_REQUEST_NULL.
        let h = req.peek();
        record |st, _| args::wait(st.reqs.remove(h).unwrap_or(-1));

    /// Wrapper: `MPI_Waitall`.
    MPI_Waitall, mpi_waitall_ (count: Count, reqs: Requests [count], statuses: Statuses [count])
        => Waitall
        let hs = reqs.peek(count);
        record |st, _| {
            for h in hs {
                st.reqs.remove(h);
            }
            args::waitall(count.i())
        };

    /// Wrapper: `MPI_Waitany`. Records which request completed.
    MPI_Waitany, mpi_waitany_ (count: Count, reqs: Requests [count], index: Index, status: Status)
        => Waitany
        let hs = reqs.peek(count);
        record |st, _| {
            let done = usize::try_from(index.get())
                .ok()
                .and_then(|i| hs.get(i))
                .and_then(|h| st.reqs.remove(*h))
                .unwrap_or(-1);
            args::waitany(count.i(), done)
        };

    /// Wrapper: `MPI_Request_free`.
    MPI_Request_free, mpi_request_free_ (req: Ref<Request>) => RequestFree
        let h = req.peek();
        record |st, _| args::request_free(st.reqs.remove(h).unwrap_or(-1));
}
