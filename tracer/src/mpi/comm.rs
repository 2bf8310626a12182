//! Communicator creation and release.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::*;

/// Wrapper: `MPI_Comm_free`. The handle is forgotten: MPI may give its address to a later
/// communicator, which must get an id of its own.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut H) -> c_int {
    let f = pmpi!("PMPI_Comm_free", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid communicator pointer; read the handle before MPI resets it.
    let h: H = if comm.is_null() {
        std::ptr::null_mut()
    } else {
        unsafe { rd_h(comm) }
    };
    mpi_call(
        Op::CommFree,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm) },
        |st, _| {
            let id = st.comm_id(h);
            st.comms.forget(hv(h));
            args::comm_free(id)
        },
    )
}

/// Wrapper: `MPI_Comm_dup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_dup(comm: H, newcomm: *mut H) -> c_int {
    let f = pmpi!("PMPI_Comm_dup", unsafe extern "C" fn(H, *mut H) -> c_int);
    mpi_call(
        Op::CommDup,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            vec![c, st.new_comm(r, newcomm)]
        },
    )
}

/// Wrapper: `MPI_Comm_split`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_split(
    comm: H,
    color: c_int,
    key: c_int,
    newcomm: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Comm_split",
        unsafe extern "C" fn(H, c_int, c_int, *mut H) -> c_int
    );
    mpi_call(
        Op::CommSplit,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, color, key, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            vec![c, color as i64, key as i64, st.new_comm(r, newcomm)]
        },
    )
}

/// The `MPI_Comm_split` that builds the same communicator as a call that is not a split
/// (`MPI_Comm_create`, `MPI_Comm_split_type`). Color: the parent-comm rank of the new
/// communicator's rank 0, or MPI_UNDEFINED where the caller got `MPI_COMM_NULL`. Key: the
/// caller's parent rank when the new communicator keeps the parent's order (the usual case,
/// and the one extrapolation models best: non-members get the same kind of key), else the
/// caller's new rank, which reproduces any order. Replaying it as a split rebuilds the
/// communicator without the groups.
pub(crate) fn split_equivalent(parent: H, r: c_int, newcomm: *mut H) -> (i64, i64) {
    type CommGroupFn = unsafe extern "C" fn(H, *mut H) -> c_int;
    type TranslateFn = unsafe extern "C" fn(H, c_int, *const c_int, H, *mut c_int) -> c_int;
    type GroupFreeFn = unsafe extern "C" fn(*mut H) -> c_int;
    let undefined = (rsd::mpi::UNDEFINED, comm_rank(parent));
    if r != MPI_SUCCESS || newcomm.is_null() {
        return undefined;
    }
    // SAFETY: MPI wrote the new handle through the application's non-null pointer.
    let nc = unsafe { rd(newcomm, 0) };
    if globals().is_none_or(|g| nc == g.comm_null) {
        return undefined;
    }
    let (Some(group), Some(translate), Some(free)) = (
        real!("PMPI_Comm_group", CommGroupFn),
        real!("PMPI_Group_translate_ranks", TranslateFn),
        real!("PMPI_Group_free", GroupFreeFn),
    ) else {
        return undefined;
    };
    let n = comm_size(nc as H).max(0) as usize;
    let new_ranks: Vec<c_int> = (0..n as c_int).collect();
    let mut in_parent: Vec<c_int> = vec![MPI_UNDEFINED; n];
    // Zeroed buffers: MPICH writes 4-byte group handles into them.
    let (mut gn, mut gp): (H, H) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: both communicators are valid (the parent came from the application's successful
    // call, the new one from MPI); the rank arrays hold `n` entries, the out-parameters are
    // valid, and the groups are freed below.
    unsafe {
        if n > 0 && group(nc as H, &mut gn) == MPI_SUCCESS && group(parent, &mut gp) == MPI_SUCCESS
        {
            translate(
                gn,
                n as c_int,
                new_ranks.as_ptr(),
                gp,
                in_parent.as_mut_ptr(),
            );
        }
        if !gn.is_null() {
            free(&mut gn);
        }
        if !gp.is_null() {
            free(&mut gp);
        }
    }
    let leader = in_parent.first().copied().unwrap_or(MPI_UNDEFINED);
    let ordered = in_parent.windows(2).all(|w| w[0] < w[1]);
    let key = if ordered {
        comm_rank(parent)
    } else {
        comm_rank(nc as H)
    };
    (leader as i64, key)
}

/// Wrapper: `MPI_Comm_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_create(comm: H, group: H, newcomm: *mut H) -> c_int {
    let f = pmpi!(
        "PMPI_Comm_create",
        unsafe extern "C" fn(H, H, *mut H) -> c_int
    );
    mpi_call(
        Op::CommCreate,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, group, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            let (color, key) = split_equivalent(comm, r, newcomm);
            vec![c, color, key, st.new_comm(r, newcomm)]
        },
    )
}

/// Wrapper: `MPI_Comm_split_type`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_split_type(
    comm: H,
    split_type: c_int,
    key: c_int,
    info: H,
    newcomm: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Comm_split_type",
        unsafe extern "C" fn(H, c_int, c_int, H, *mut H) -> c_int
    );
    mpi_call(
        Op::CommSplitType,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, split_type, key, info, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            let (color, key) = split_equivalent(comm, r, newcomm);
            vec![c, color, key, st.new_comm(r, newcomm)]
        },
    )
}

/// Wrapper: `MPI_Cart_create`, recorded as the split that builds the same communicator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Cart_create(
    comm: H,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    reorder: c_int,
    newcomm: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Cart_create",
        unsafe extern "C" fn(H, c_int, *const c_int, *const c_int, c_int, *mut H) -> c_int
    );
    mpi_call(
        Op::CartCreate,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, ndims, dims, periods, reorder, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            let (color, key) = split_equivalent(comm, r, newcomm);
            vec![c, color, key, st.new_comm(r, newcomm)]
        },
    )
}
