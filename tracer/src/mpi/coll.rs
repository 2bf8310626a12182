//! Collective communication wrappers.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::*;

// ---------------------------------------------------------------------------------------------
// Collectives and point-to-point. `bytes` is what this rank sends (count times the size of the
// send type), or receives for the receive-only side of a call.

/// Wrapper: `MPI_Barrier`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Barrier(comm: H) -> c_int {
    let f = pmpi!("PMPI_Barrier", unsafe extern "C" fn(H) -> c_int);
    // SAFETY: forwarding the application's argument.
    mpi_call(
        Op::Barrier,
        false,
        || unsafe { f(comm) },
        |st, _| vec![st.comm_id(comm)],
    )
}

/// Wrapper: `MPI_Bcast`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    count: c_int,
    dt: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Bcast",
        unsafe extern "C" fn(*mut c_void, c_int, H, c_int, H) -> c_int
    );
    mpi_call(
        Op::Bcast,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(buf, count, dt, root, comm) },
        |st, _| {
            let b = count as i64 * st.tsize(dt);
            vec![
                count as i64,
                st.type_id(dt),
                root as i64,
                st.comm_id(comm),
                b,
            ]
        },
    )
}

/// Wrapper: `MPI_Reduce`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Reduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: c_int,
    dt: H,
    op: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Reduce",
        unsafe extern "C" fn(*const c_void, *mut c_void, c_int, H, H, c_int, H) -> c_int
    );
    mpi_call(
        Op::Reduce,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, rbuf, count, dt, op, root, comm) },
        |st, _| {
            let b = count as i64 * st.tsize(dt);
            vec![
                count as i64,
                st.type_id(dt),
                st.op_id(op),
                root as i64,
                st.comm_id(comm),
                b,
            ]
        },
    )
}

macro_rules! allreduce_like {
    ($name:ident, $sym:literal, $op:expr, $args:path) => {
        /// Wrapper: `MPI_Allreduce`, `MPI_Scan`, `MPI_Exscan` (the same arguments).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            rbuf: *mut c_void,
            count: c_int,
            dt: H,
            op: H,
            comm: H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(*const c_void, *mut c_void, c_int, H, H, H) -> c_int
            );
            mpi_call(
                $op,
                false,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(sbuf, rbuf, count, dt, op, comm) },
                |st, _| {
                    let b = count as i64 * st.tsize(dt);
                    $args(
                        count as i64,
                        st.type_id(dt),
                        st.op_id(op),
                        st.comm_id(comm),
                        b,
                    )
                },
            )
        }
    };
}
allreduce_like!(
    MPI_Allreduce,
    "PMPI_Allreduce",
    Op::Allreduce,
    args::allreduce
);
allreduce_like!(MPI_Scan, "PMPI_Scan", Op::Scan, args::scan);
allreduce_like!(MPI_Exscan, "PMPI_Exscan", Op::Exscan, args::exscan);

/// Wrapper: `MPI_Reduce_scatter_block`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Reduce_scatter_block(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: c_int,
    dt: H,
    op: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Reduce_scatter_block",
        unsafe extern "C" fn(*const c_void, *mut c_void, c_int, H, H, H) -> c_int
    );
    mpi_call(
        Op::ReduceScatterBlock,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, rbuf, count, dt, op, comm) },
        |st, _| {
            let b = count as i64 * st.tsize(dt);
            vec![
                count as i64,
                st.type_id(dt),
                st.op_id(op),
                st.comm_id(comm),
                b,
            ]
        },
    )
}

/// Wrapper: `MPI_Reduce_scatter`, recorded with the caller's own block (`recvcounts[rank]`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Reduce_scatter(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: *const c_int,
    dt: H,
    op: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Reduce_scatter",
        unsafe extern "C" fn(*const c_void, *mut c_void, *const c_int, H, H, H) -> c_int
    );
    mpi_call(
        Op::ReduceScatter,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, rbuf, counts, dt, op, comm) },
        |st, _| {
            let me = comm_rank(comm);
            let count = if counts.is_null() || me < 0 {
                0
            } else {
                // SAFETY: MPI requires recvcounts to hold one count per member; `me` is one.
                unsafe { *counts.add(me as usize) as i64 }
            };
            vec![
                count,
                st.type_id(dt),
                st.op_id(op),
                st.comm_id(comm),
                count * st.tsize(dt),
            ]
        },
    )
}

/// Send arguments as recorded: with `MPI_IN_PLACE` the count and type are ignored by MPI (and
/// may be garbage), so they are recorded as 0 and -1.
pub(crate) fn send_args(
    st: &mut State,
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
) -> (i64, i64, i64) {
    if in_place(sbuf.cast()) {
        (0, -1, 0)
    } else {
        let b = scount as i64 * st.tsize(stype);
        (scount as i64, st.type_id(stype), b)
    }
}

/// Wrapper: `MPI_Gather`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Gather(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Gather",
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, c_int, H) -> c_int
    );
    mpi_call(
        Op::Gather,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcount, rtype, root, comm) },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            // Receive arguments matter only at the root.
            let (rc, rty) = if comm_rank(comm) == root as i64 {
                (rcount as i64, st.type_id(rtype))
            } else {
                (0, -1)
            };
            vec![sc, sty, rc, rty, root as i64, st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Gatherv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Gatherv(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rtype: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Gatherv",
        unsafe extern "C" fn(
            *const c_void,
            c_int,
            H,
            *mut c_void,
            *const c_int,
            *const c_int,
            H,
            c_int,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Gatherv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe {
            f(
                sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm,
            )
        },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let (rb, rty) = if comm_rank(comm) == root as i64 {
                let n = comm_size(comm);
                (sum_counts(rcounts, n) * st.tsize(rtype), st.type_id(rtype))
            } else {
                (0, -1)
            };
            vec![sc, sty, rb, rty, root as i64, st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Scatter`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Scatter(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Scatter",
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, c_int, H) -> c_int
    );
    mpi_call(
        Op::Scatter,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcount, rtype, root, comm) },
        |st, _| {
            let (sc, sty) = if comm_rank(comm) == root as i64 {
                (scount as i64, st.type_id(stype))
            } else {
                (0, -1)
            };
            let (rc, rty, b) = if in_place(rbuf.cast()) {
                (0, -1, 0)
            } else {
                (
                    rcount as i64,
                    st.type_id(rtype),
                    rcount as i64 * st.tsize(rtype),
                )
            };
            vec![sc, sty, rc, rty, root as i64, st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Scatterv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Scatterv(
    sbuf: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Scatterv",
        unsafe extern "C" fn(
            *const c_void,
            *const c_int,
            *const c_int,
            H,
            *mut c_void,
            c_int,
            H,
            c_int,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Scatterv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe {
            f(
                sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm,
            )
        },
        |st, _| {
            let (sb, sty) = if comm_rank(comm) == root as i64 {
                let n = comm_size(comm);
                (sum_counts(scounts, n) * st.tsize(stype), st.type_id(stype))
            } else {
                (0, -1)
            };
            let (rc, rty, b) = if in_place(rbuf.cast()) {
                (0, -1, 0)
            } else {
                (
                    rcount as i64,
                    st.type_id(rtype),
                    rcount as i64 * st.tsize(rtype),
                )
            };
            vec![sb, sty, rc, rty, root as i64, st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Allgather`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Allgather(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Allgather",
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, H) -> c_int
    );
    mpi_call(
        Op::Allgather,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcount, rtype, comm) },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            vec![
                sc,
                sty,
                rcount as i64,
                st.type_id(rtype),
                st.comm_id(comm),
                b,
            ]
        },
    )
}

/// Wrapper: `MPI_Allgatherv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Allgatherv(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rtype: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Allgatherv",
        unsafe extern "C" fn(
            *const c_void,
            c_int,
            H,
            *mut c_void,
            *const c_int,
            *const c_int,
            H,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Allgatherv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm) },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let n = comm_size(comm);
            let rb = sum_counts(rcounts, n) * st.tsize(rtype);
            vec![sc, sty, rb, st.type_id(rtype), st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Alltoall`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Alltoall(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Alltoall",
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, H) -> c_int
    );
    mpi_call(
        Op::Alltoall,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcount, rtype, comm) },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let n = comm_size(comm);
            vec![
                sc,
                sty,
                rcount as i64,
                st.type_id(rtype),
                st.comm_id(comm),
                b * n,
            ]
        },
    )
}

/// Wrapper: `MPI_Alltoallv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Alltoallv(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stype: H,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtype: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Alltoallv",
        unsafe extern "C" fn(
            *const c_void,
            *const c_int,
            *const c_int,
            H,
            *mut c_void,
            *const c_int,
            *const c_int,
            H,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Alltoallv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe {
            f(
                sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm,
            )
        },
        |st, _| {
            let n = comm_size(comm);
            let (sb, sty) = if in_place(sbuf.cast()) {
                (0, -1)
            } else {
                (sum_counts(scounts, n) * st.tsize(stype), st.type_id(stype))
            };
            let rb = sum_counts(rcounts, n) * st.tsize(rtype);
            vec![sb, sty, rb, st.type_id(rtype), st.comm_id(comm), sb]
        },
    )
}
