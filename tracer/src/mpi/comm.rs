//! Communicator creation and release. Calls that build a communicator other than by a split
//! are recorded as the split that builds the same one ([`split_equivalent`]).

use super::kinds::*;
use super::*;

mpi_hooks! {
    /// Wrapper: `MPI_Comm_free`. The handle is forgotten: MPI may give its address to a later
    /// communicator, which must get an id of its own.
    MPI_Comm_free, mpi_comm_free_ (comm: Ref<Comm>) => CommFree
        // Read before the call, which resets it to MPI_COMM_NULL.
        let h = comm.peek_h();
        record |st, _| {
            let id = st.comm_id(h);
            st.comms.forget(hv(h));
            args::comm_free(id)
        };

    /// Wrapper: `MPI_Comm_dup`.
    MPI_Comm_dup, mpi_comm_dup_ (comm: Comm, newcomm: New<Comm>) => CommDup
        record |st, r| {
            let c = comm.id(st);
            args::comm_dup(c, newcomm.id(st, r))
        };

    /// Wrapper: `MPI_Comm_split`.
    MPI_Comm_split, mpi_comm_split_ (comm: Comm, color: Int, key: Int, newcomm: New<Comm>)
        => CommSplit
        record |st, r| {
            let c = comm.id(st);
            args::comm_split(c, color.i(), key.i(), newcomm.id(st, r))
        };

    /// Wrapper: `MPI_Comm_create`.
    MPI_Comm_create, mpi_comm_create_ (comm: Comm, group: Group, newcomm: New<Comm>) => CommCreate
        record |st, r| {
            let c = comm.id(st);
            let (color, key) = split_equivalent(comm, r, newcomm);
            args::comm_create(c, color, key, newcomm.id(st, r))
        };

    /// Wrapper: `MPI_Comm_split_type`.
    MPI_Comm_split_type, mpi_comm_split_type_ (
        comm: Comm, split_type: Int, key: Int, info: Info, newcomm: New<Comm>,
    ) => CommSplitType
        record |st, r| {
            let c = comm.id(st);
            let (color, key) = split_equivalent(comm, r, newcomm);
            args::comm_split_type(c, color, key, newcomm.id(st, r))
        };

    /// Wrapper: `MPI_Cart_create`, recorded as the split that builds the same communicator.
    MPI_Cart_create, mpi_cart_create_ (
        comm: Comm, ndims: Int, dims: Ints, periods: Ints, reorder: Int, newcomm: New<Comm>,
    ) => CartCreate
        record |st, r| {
            let c = comm.id(st);
            let (color, key) = split_equivalent(comm, r, newcomm);
            args::cart_create(c, color, key, newcomm.id(st, r))
        };
}

/// The `MPI_Comm_split` that builds the same communicator as a call that is not a split
/// (`MPI_Comm_create`, `MPI_Comm_split_type`). Color: the parent-comm rank of the new
/// communicator's rank 0, or MPI_UNDEFINED where the caller got `MPI_COMM_NULL`. Key: the
/// caller's parent rank when the new communicator keeps the parent's order (the usual case,
/// and the one extrapolation models best: non-members get the same kind of key), else the
/// caller's new rank, which reproduces any order. Replaying it as a split rebuilds the
/// communicator without the groups.
fn split_equivalent(parent: Comm, r: c_int, newcomm: New<Comm>) -> (i64, i64) {
    type CommGroupFn = unsafe extern "C" fn(H, *mut H) -> c_int;
    type TranslateFn = unsafe extern "C" fn(H, c_int, *const c_int, H, *mut c_int) -> c_int;
    type GroupFreeFn = unsafe extern "C" fn(*mut H) -> c_int;
    let undefined = (rsd::mpi::UNDEFINED, parent.rank());
    let Some(nc) = newcomm.get(r) else {
        return undefined;
    };
    if globals().is_none_or(|g| nc == g.comm_null) {
        return undefined;
    }
    let parent = parent.0;
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
