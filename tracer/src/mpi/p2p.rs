//! Point-to-point, probe and completion wrappers. Peers are recorded relative to the caller
//! ([`Peer::rel`]), requests as ids in the rank's request table (persistent ones stay there
//! until `MPI_Request_free`), matched messages as ids in its message table.

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

// The calls that leave a request for one message: nonblocking sends (every mode) and receive,
// and the persistent inits (whose request stays until `MPI_Request_free`: `persistent_id`).
macro_rules! request_p2p {
    ($($op:ident: $c:ident, $f:tt, $buf:ident, $new:ident;)*) => { paste::paste! { mpi_hooks! {$(
        /// Wrapper: a nonblocking or persistent send or receive.
        $c, $f (
            buf: $buf, count: Count, dt: Datatype, peer: Peer, tag: Tag, comm: Comm,
            req: New<Request>,
        ) => $op
            record |st, r| {
                let b = dt.bytes(st, count);
                let q = req.$new(st, r);
                let (t, p, c) = (dt.id(st), peer.rel(comm), comm.id(st));
                args::[<$op:snake>](count.i(), t, p, tag.i(), c, b, q)
            };
    )*}}};
}
request_p2p! {
    Isend: MPI_Isend, mpi_isend_, Buf, id;
    Irecv: MPI_Irecv, mpi_irecv_, BufMut, id;
    Issend: MPI_Issend, mpi_issend_, Buf, id;
    Irsend: MPI_Irsend, mpi_irsend_, Buf, id;
    Ibsend: MPI_Ibsend, mpi_ibsend_, Buf, id;
    SendInit: MPI_Send_init, mpi_send_init_, Buf, persistent_id;
    BsendInit: MPI_Bsend_init, mpi_bsend_init_, Buf, persistent_id;
    SsendInit: MPI_Ssend_init, mpi_ssend_init_, Buf, persistent_id;
    RsendInit: MPI_Rsend_init, mpi_rsend_init_, Buf, persistent_id;
    RecvInit: MPI_Recv_init, mpi_recv_init_, BufMut, persistent_id;
}

/// What a probe found, as recorded: (matched source relative to the caller, matched tag,
/// bytes), all 0 when it found nothing (`found` false: a nonblocking probe's flag 0).
fn matched(comm: Comm, found: bool, status: Status) -> (i64, i64, i64) {
    if !found {
        return (0, 0, 0);
    }
    let (source, tag) = status.source_tag();
    (
        Peer(source).rel(comm),
        tag.into(),
        status.bytes().unwrap_or(0),
    )
}

// The completions that report some of their requests (`outcount`, then `indices`).
macro_rules! some {
    ($($op:ident: $c:ident, $f:tt;)*) => { paste::paste! { mpi_hooks! {$(
        /// Wrapper: `MPI_Waitsome` / `MPI_Testsome`, with the ids of the requests completed.
        $c, $f (
            incount: Count, reqs: Requests [incount], outcount: IntOut, indices: Indices [incount],
            statuses: Statuses [incount],
        ) => $op
            let hs = reqs.peek(incount);
            record |st, _| {
                let out = Some(outcount.get()).filter(|&n| n != i64::from(MPI_UNDEFINED)).unwrap_or(0);
                let ids = indices.read(out).into_iter().map(|i| {
                    hs.get(i as usize).map_or(-1, |&h| st.complete_req(h))
                });
                let mut v = args::[<$op:snake>](incount.i(), out);
                v.extend(ids.collect::<Vec<_>>());
                v
            };
    )*}}};
}
some! {
    Waitsome: MPI_Waitsome, mpi_waitsome_;
    Testsome: MPI_Testsome, mpi_testsome_;
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

    /// Wrapper: `MPI_Sendrecv_replace`.
    MPI_Sendrecv_replace, mpi_sendrecv_replace_ (
        buf: BufMut, count: Count, dt: Datatype, dest: Peer, stag: Tag, src: Peer, rtag: Tag,
        comm: Comm, status: Status,
    ) => SendrecvReplace
        record |st, _| {
            let b = dt.bytes(st, count);
            let (d, s) = (dest.rel(comm), src.rel(comm));
            args::sendrecv_replace(count.i(), dt.id(st), d, stag.i(), s, rtag.i(), comm.id(st), b)
        };

    /// Wrapper: `MPI_Probe`.
    MPI_Probe, mpi_probe_ (src: Peer, tag: Tag, comm: Comm, status: Status) => Probe
        let mut own = [0; 8];
        let status = status.or_own(&mut own);
        record |st, r| {
            let (ms, mt, b) = matched(comm, r == MPI_SUCCESS, status);
            args::probe(src.rel(comm), tag.i(), comm.id(st), ms, mt, b)
        };

    /// Wrapper: `MPI_Iprobe`.
    MPI_Iprobe, mpi_iprobe_ (src: Peer, tag: Tag, comm: Comm, flag: IntOut, status: Status)
        => Iprobe
        let mut own = [0; 8];
        let status = status.or_own(&mut own);
        record |st, r| {
            let found = r == MPI_SUCCESS && flag.get() != 0;
            let (ms, mt, b) = matched(comm, found, status);
            args::iprobe(src.rel(comm), tag.i(), comm.id(st), found.into(), ms, mt, b)
        };

    /// Wrapper: `MPI_Mprobe`: the receive of the message it takes off the queue.
    MPI_Mprobe, mpi_mprobe_ (
        src: Peer, tag: Tag, comm: Comm, msg: New<Message>, status: Status,
    ) => Mprobe
        let mut own = [0; 8];
        let status = status.or_own(&mut own);
        record |st, r| {
            let (ms, mt, b) = matched(comm, r == MPI_SUCCESS, status);
            let m = msg.id(st, r, true, status);
            args::mprobe(src.rel(comm), tag.i(), comm.id(st), ms, mt, b, m)
        };

    /// Wrapper: `MPI_Improbe`.
    MPI_Improbe, mpi_improbe_ (
        src: Peer, tag: Tag, comm: Comm, flag: IntOut, msg: New<Message>, status: Status,
    ) => Improbe
        let mut own = [0; 8];
        let status = status.or_own(&mut own);
        record |st, r| {
            let found = r == MPI_SUCCESS && flag.get() != 0;
            let (ms, mt, b) = matched(comm, found, status);
            let m = msg.id(st, r, found, status);
            args::improbe(src.rel(comm), tag.i(), comm.id(st), found.into(), ms, mt, b, m)
        };

    /// Wrapper: `MPI_Mrecv`: completes the receive its `MPI_Mprobe` made.
    MPI_Mrecv, mpi_mrecv_ (
        buf: BufMut, count: Count, dt: Datatype, msg: Ref<Message>, status: Status,
    ) => Mrecv
        // Read before the call, which resets it to MPI_MESSAGE_NULL.
        let h = msg.peek();
        record |st, _| {
            let m = st.msgs.remove(h).unwrap_or(-1);
            args::mrecv(count.i(), dt.id(st), m, dt.bytes(st, count))
        };

    /// Wrapper: `MPI_Imrecv`.
    MPI_Imrecv, mpi_imrecv_ (
        buf: BufMut, count: Count, dt: Datatype, msg: Ref<Message>, req: New<Request>,
    ) => Imrecv
        let h = msg.peek();
        record |st, r| {
            let m = st.msgs.remove(h).unwrap_or(-1);
            let (t, b) = (dt.id(st), dt.bytes(st, count));
            args::imrecv(count.i(), t, m, b, req.id(st, r))
        };

    /// Wrapper: `MPI_Start`.
    MPI_Start, mpi_start_ (req: Ref<Request>) => Start
        let h = req.peek();
        record |st, _| args::start(st.req_id(h));

    /// Wrapper: `MPI_Startall`, with the ids of the requests started.
    MPI_Startall, mpi_startall_ (count: Count, reqs: Requests [count]) => Startall
        let hs = reqs.peek(count);
        record |st, _| {
            let mut v = args::startall(count.i());
            v.extend(hs.iter().map(|&h| st.req_id(h)).collect::<Vec<_>>());
            v
        };

    /// Wrapper: `MPI_Wait`.
    MPI_Wait, mpi_wait_ (req: Ref<Request>, status: Status) => Wait
        // Read before the call, which resets a completed request to MPI_REQUEST_NULL.
        let h = req.peek();
        record |st, _| args::wait(st.complete_req(h));

    /// Wrapper: `MPI_Waitall`.
    MPI_Waitall, mpi_waitall_ (count: Count, reqs: Requests [count], statuses: Statuses [count])
        => Waitall
        let hs = reqs.peek(count);
        record |st, _| {
            for h in hs {
                st.complete_req(h);
            }
            args::waitall(count.i())
        };

    /// Wrapper: `MPI_Waitany`. Records which request completed.
    MPI_Waitany, mpi_waitany_ (count: Count, reqs: Requests [count], index: Index, status: Status)
        => Waitany
        let hs = reqs.peek(count);
        record |st, _| {
            let done = usize::try_from(index.get()).ok().and_then(|i| hs.get(i));
            args::waitany(count.i(), done.map_or(-1, |&h| st.complete_req(h)))
        };

    /// Wrapper: `MPI_Test`.
    MPI_Test, mpi_test_ (req: Ref<Request>, flag: IntOut, status: Status) => Test
        let h = req.peek();
        record |st, _| {
            let done = flag.get() != 0;
            let id = if done { st.complete_req(h) } else { st.req_id(h) };
            args::test(id, done.into())
        };

    /// Wrapper: `MPI_Testall`, with the ids of the requests passed.
    MPI_Testall, mpi_testall_ (
        count: Count, reqs: Requests [count], flag: IntOut, statuses: Statuses [count],
    ) => Testall
        let hs = reqs.peek(count);
        record |st, _| {
            let done = flag.get() != 0;
            let ids = hs.iter().map(|&h| if done { st.complete_req(h) } else { st.req_id(h) });
            let mut v = args::testall(count.i(), done.into());
            v.extend(ids.collect::<Vec<_>>());
            v
        };

    /// Wrapper: `MPI_Testany`.
    MPI_Testany, mpi_testany_ (
        count: Count, reqs: Requests [count], index: Index, flag: IntOut, status: Status,
    ) => Testany
        let hs = reqs.peek(count);
        record |st, _| {
            let done = usize::try_from(index.get()).ok().and_then(|i| hs.get(i));
            let id = done.filter(|_| flag.get() != 0).map_or(-1, |&h| st.complete_req(h));
            args::testany(count.i(), id, flag.get())
        };

    /// Wrapper: `MPI_Cancel` (not a completion: the request is waited for or tested later).
    MPI_Cancel, mpi_cancel_ (req: Ref<Request>) => Cancel
        let h = req.peek();
        record |st, _| args::cancel(st.req_id(h));

    /// Wrapper: `MPI_Request_free`.
    MPI_Request_free, mpi_request_free_ (req: Ref<Request>) => RequestFree
        let h = req.peek();
        record |st, _| args::request_free(st.free_req(h));

    /// Wrapper: `MPI_Buffer_attach`.
    MPI_Buffer_attach, mpi_buffer_attach_ (buf: IoBufMut, size: Int) => BufferAttach
        record |_, _| args::buffer_attach(size.i());

    /// Wrapper: `MPI_Buffer_detach`.
    MPI_Buffer_detach, mpi_buffer_detach_ (addr: AddrOut, size: IntOut) => BufferDetach
        record |_, _| args::buffer_detach(size.get());
}
