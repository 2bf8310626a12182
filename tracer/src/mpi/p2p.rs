//! Point-to-point and completion wrappers.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::*;

macro_rules! blocking_send {
    ($name:ident, $sym:literal, $op:expr, $args:path) => {
        /// Wrapper: `MPI_Send` and the other blocking send modes.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            dt: H,
            dest: c_int,
            tag: c_int,
            comm: H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(*const c_void, c_int, H, c_int, c_int, H) -> c_int
            );
            mpi_call(
                $op,
                false,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(buf, count, dt, dest, tag, comm) },
                |st, _| {
                    let b = count as i64 * st.tsize(dt);
                    $args(
                        count as i64,
                        st.type_id(dt),
                        rel_peer(comm, dest),
                        tag as i64,
                        st.comm_id(comm),
                        b,
                    )
                },
            )
        }
    };
}
blocking_send!(MPI_Send, "PMPI_Send", Op::Send, args::send);
blocking_send!(MPI_Ssend, "PMPI_Ssend", Op::Ssend, args::ssend);
blocking_send!(MPI_Rsend, "PMPI_Rsend", Op::Rsend, args::rsend);
blocking_send!(MPI_Bsend, "PMPI_Bsend", Op::Bsend, args::bsend);

/// Wrapper: `MPI_Recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    dt: H,
    src: c_int,
    tag: c_int,
    comm: H,
    status: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Recv",
        unsafe extern "C" fn(*mut c_void, c_int, H, c_int, c_int, H, H) -> c_int
    );
    mpi_call(
        Op::Recv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(buf, count, dt, src, tag, comm, status) },
        |st, _| {
            let b = count as i64 * st.tsize(dt);
            args::recv(
                count as i64,
                st.type_id(dt),
                rel_peer(comm, src),
                tag as i64,
                st.comm_id(comm),
                b,
            )
        },
    )
}

macro_rules! nonblocking_p2p {
    ($name:ident, $sym:literal, $op:expr, $args:path, $buf:ty) => {
        /// Wrapper: `MPI_Isend` / `MPI_Irecv`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            buf: $buf,
            count: c_int,
            dt: H,
            peer: c_int,
            tag: c_int,
            comm: H,
            req: *mut H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn($buf, c_int, H, c_int, c_int, H, *mut H) -> c_int
            );
            mpi_call(
                $op,
                false,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(buf, count, dt, peer, tag, comm, req) },
                |st, r| {
                    let b = count as i64 * st.tsize(dt);
                    let q = st.new_req(r, req);
                    $args(
                        count as i64,
                        st.type_id(dt),
                        rel_peer(comm, peer),
                        tag as i64,
                        st.comm_id(comm),
                        b,
                        q,
                    )
                },
            )
        }
    };
}
nonblocking_p2p!(
    MPI_Isend,
    "PMPI_Isend",
    Op::Isend,
    args::isend,
    *const c_void
);
nonblocking_p2p!(MPI_Irecv, "PMPI_Irecv", Op::Irecv, args::irecv, *mut c_void);
nonblocking_p2p!(
    MPI_Issend,
    "PMPI_Issend",
    Op::Issend,
    args::issend,
    *const c_void
);
nonblocking_p2p!(
    MPI_Irsend,
    "PMPI_Irsend",
    Op::Irsend,
    args::irsend,
    *const c_void
);
nonblocking_p2p!(
    MPI_Ibsend,
    "PMPI_Ibsend",
    Op::Ibsend,
    args::ibsend,
    *const c_void
);

/// Wrapper: `MPI_Waitany`. Records which request completed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    reqs: *mut H,
    index: *mut c_int,
    status: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Waitany",
        unsafe extern "C" fn(c_int, *mut H, *mut c_int, H) -> c_int
    );
    let hs: Vec<usize> = if reqs.is_null() || count <= 0 {
        Vec::new()
    } else {
        // SAFETY: MPI requires `reqs` to hold `count` requests; read them before MPI resets
        // the one that completes.
        unsafe { rd_all(reqs, count as usize) }
    };
    mpi_call(
        Op::Waitany,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, reqs, index, status) },
        |st, _| {
            // SAFETY: `index` is the application's out-parameter, which the call just set.
            let i = if index.is_null() {
                -1
            } else {
                unsafe { *index }
            };
            let done = usize::try_from(i)
                .ok()
                .and_then(|i| hs.get(i))
                .and_then(|h| st.reqs.remove(*h))
                .unwrap_or(-1);
            args::waitany(count as i64, done)
        },
    )
}

/// Wrapper: `MPI_Request_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Request_free(req: *mut H) -> c_int {
    let f = pmpi!("PMPI_Request_free", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid request pointer; read the handle before MPI resets it.
    let h = if req.is_null() {
        0
    } else {
        unsafe { rd(req, 0) }
    };
    mpi_call(
        Op::RequestFree,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(req) },
        |st, _| args::request_free(st.reqs.remove(h).unwrap_or(-1)),
    )
}

/// Wrapper: `MPI_Wait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Wait(req: *mut H, status: H) -> c_int {
    let f = pmpi!("PMPI_Wait", unsafe extern "C" fn(*mut H, H) -> c_int);
    // SAFETY: MPI requires a valid request pointer; read the handle before MPI resets it.
    let h = if req.is_null() {
        0
    } else {
        unsafe { rd(req, 0) }
    };
    mpi_call(
        Op::Wait,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(req, status) },
        |st, _| args::wait(st.reqs.remove(h).unwrap_or(-1)),
    )
}

/// Wrapper: `MPI_Waitall`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Waitall(count: c_int, reqs: *mut H, statuses: H) -> c_int {
    let f = pmpi!(
        "PMPI_Waitall",
        unsafe extern "C" fn(c_int, *mut H, H) -> c_int
    );
    let hs: Vec<usize> = if reqs.is_null() || count <= 0 {
        Vec::new()
    } else {
        // SAFETY: MPI requires `reqs` to hold `count` requests; read them before MPI resets them.
        unsafe { rd_all(reqs, count as usize) }
    };
    mpi_call(
        Op::Waitall,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, reqs, statuses) },
        |st, _| {
            for h in hs {
                st.reqs.remove(h);
            }
            vec![count as i64]
        },
    )
}

/// Wrapper: `MPI_Sendrecv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Sendrecv(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    src: c_int,
    rtag: c_int,
    comm: H,
    status: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Sendrecv",
        unsafe extern "C" fn(
            *const c_void,
            c_int,
            H,
            c_int,
            c_int,
            *mut c_void,
            c_int,
            H,
            c_int,
            c_int,
            H,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Sendrecv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe {
            f(
                sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm, status,
            )
        },
        |st, _| {
            let b = scount as i64 * st.tsize(stype);
            vec![
                scount as i64,
                st.type_id(stype),
                rel_peer(comm, dest),
                stag as i64,
                rcount as i64,
                st.type_id(rtype),
                rel_peer(comm, src),
                rtag as i64,
                st.comm_id(comm),
                b,
            ]
        },
    )
}
