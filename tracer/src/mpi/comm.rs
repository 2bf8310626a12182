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

    /// Wrapper: `MPI_Comm_dup_with_info`, recorded as the dup it is (its hints only tune the
    /// copy, which sends the same messages to the same ranks).
    MPI_Comm_dup_with_info, mpi_comm_dup_with_info_ (comm: Comm, info: Info, newcomm: New<Comm>)
        => CommDup
        record |st, r| {
            let c = comm.id(st);
            args::comm_dup(c, newcomm.id(st, r))
        };

    /// Wrapper: `MPI_Comm_idup`, recorded as a dup: every member makes it in the same order as
    /// a dup, and the copy is the same. Its request gets an id, so the wait that completes it
    /// is recorded as waiting on something, which a replay (having duplicated already) finds
    /// nothing left to do for.
    MPI_Comm_idup, mpi_comm_idup_ (comm: Comm, newcomm: New<Comm>, request: New<Request>)
        => CommDup
        record |st, r| {
            let c = comm.id(st);
            let _ = request.id(st, r);
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
        record |st, r| as_split(st, r, comm, newcomm, args::comm_create);

    /// Wrapper: `MPI_Comm_split_type`.
    MPI_Comm_split_type, mpi_comm_split_type_ (
        comm: Comm, split_type: Int, key: Int, info: Info, newcomm: New<Comm>,
    ) => CommSplitType
        record |st, r| as_split(st, r, comm, newcomm, args::comm_split_type);

    /// Wrapper: `MPI_Cart_sub`, recorded as the split that builds the same communicator.
    MPI_Cart_sub, mpi_cart_sub_ (comm: Comm, remain_dims: Ints, newcomm: New<Comm>) => CartSub
        record |st, r| as_split(st, r, comm, newcomm, args::cart_sub);

    /// Wrapper: `MPI_Graph_create`, recorded as the split that builds the same communicator.
    MPI_Graph_create, mpi_graph_create_ (
        comm: Comm, nnodes: Int, index: Ints, edges: Ints, reorder: Int, newcomm: New<Comm>,
    ) => GraphCreate
        record |st, r| as_split(st, r, comm, newcomm, args::graph_create);

    /// Wrapper: `MPI_Dist_graph_create`, recorded as the split that builds the same
    /// communicator. No Fortran hook: Fortran's `MPI_UNWEIGHTED` would need translating.
    MPI_Dist_graph_create, _ (
        comm: Comm, n: Int, sources: Ints, degrees: Ints, destinations: Ints, weights: Ints,
        info: Info, reorder: Int, newcomm: New<Comm>,
    ) => DistGraphCreate
        record |st, r| as_split(st, r, comm, newcomm, args::dist_graph_create);

    /// Wrapper: `MPI_Dist_graph_create_adjacent`, as `MPI_Dist_graph_create`.
    MPI_Dist_graph_create_adjacent, _ (
        comm: Comm, indegree: Int, sources: Ints, sourceweights: Ints, outdegree: Int,
        destinations: Ints, destweights: Ints, info: Info, reorder: Int, newcomm: New<Comm>,
    ) => DistGraphCreateAdjacent
        record |st, r| as_split(st, r, comm, newcomm, args::dist_graph_create_adjacent);

    /// Wrapper: `MPI_Comm_create_group` (only the members call it): its members' world ranks.
    MPI_Comm_create_group, mpi_comm_create_group_ (
        comm: Comm, group: Group, tag: Tag, newcomm: New<Comm>,
    ) => CommCreateGroup
        record |st, r| {
            let c = comm.id(st);
            let members = world_members(r, newcomm, false);
            let mut v = args::comm_create_group(c, tag.i(), members.len() as i64, newcomm.id(st, r));
            v.extend(members);
            v
        };

    /// Wrapper: `MPI_Intercomm_create`: the remote group's world ranks. The peer communicator
    /// and the remote leader are read at the local leader only, as MPI does.
    MPI_Intercomm_create, mpi_intercomm_create_ (
        comm: Comm, local_leader: Int, peer_comm: Comm, remote_leader: Int, tag: Tag,
        newcomm: New<Comm>,
    ) => IntercommCreate
        record |st, r| {
            let c = comm.id(st);
            let leader = comm.rank() == local_leader.i();
            let (p, rl) = if leader { (peer_comm.id(st), remote_leader.i()) } else { (-1, -1) };
            let remote = world_members(r, newcomm, true);
            let n = newcomm.id(st, r);
            let mut v = args::intercomm_create(c, local_leader.i(), p, rl, tag.i(), n, remote.len() as i64);
            v.extend(remote);
            v
        };

    /// Wrapper: `MPI_Intercomm_merge`: the merged communicator's world ranks.
    MPI_Intercomm_merge, mpi_intercomm_merge_ (comm: Comm, high: Int, newcomm: New<Comm>)
        => IntercommMerge
        record |st, r| {
            let c = comm.id(st);
            let members = world_members(r, newcomm, false);
            let mut v = args::intercomm_merge(c, high.i(), newcomm.id(st, r), members.len() as i64);
            v.extend(members);
            v
        };

    /// Wrapper: `MPI_Cart_create`, recorded as the split that builds the same communicator.
    MPI_Cart_create, mpi_cart_create_ (
        comm: Comm, ndims: Int, dims: Ints, periods: Ints, reorder: Int, newcomm: New<Comm>,
    ) => CartCreate
        record |st, r| {
            let mut v = as_split(st, r, comm, newcomm, args::cart_create);
            if r == MPI_SUCCESS {
                let n = ndims.i().clamp(0, 64);
                v.extend(dims.read(n));
                v.extend(periods.read(n).into_iter().map(|p| i64::from(p != 0)));
            }
            v
        };
}

/// The parameters of a creation recorded as the split that builds the same communicator
/// (`args`: the op's constructor, [`Op::creation`](rsd::Op::creation) `Split`).
fn as_split(
    st: &mut State,
    r: c_int,
    comm: Comm,
    newcomm: New<Comm>,
    args: fn(i64, i64, i64, i64) -> Vec<i64>,
) -> Vec<i64> {
    let c = comm.id(st);
    let (color, key) = split_equivalent(comm, r, newcomm);
    args(c, color, key, newcomm.id(st, r))
}

/// The `MPI_Comm_split` that builds the same communicator as a call that is not a split
/// (`MPI_Comm_create`, `MPI_Comm_split_type`). Color: the parent-comm rank of the new
/// communicator's rank 0, or MPI_UNDEFINED where the caller got `MPI_COMM_NULL`. Key: the
/// caller's parent rank when the new communicator keeps the parent's order (the usual case,
/// and the one extrapolation models best: non-members get the same kind of key), else the
/// caller's new rank, which reproduces any order. Replaying it as a split rebuilds the
/// communicator without the groups.
fn split_equivalent(parent: Comm, r: c_int, newcomm: New<Comm>) -> (i64, i64) {
    let undefined = (rsd::mpi::UNDEFINED, parent.rank());
    let Some(nc) = new_comm(r, newcomm) else {
        return undefined;
    };
    let parent = parent.0;
    let in_parent = ranks_in(nc, false, parent);
    let leader = in_parent.first().copied().unwrap_or(MPI_UNDEFINED);
    let ordered = in_parent.windows(2).all(|w| w[0] < w[1]);
    let key = if ordered {
        comm_rank(parent)
    } else {
        comm_rank(nc as H)
    };
    (leader as i64, key)
}

/// The communicator a creation returned, unless it failed or gave `MPI_COMM_NULL`.
fn new_comm(r: c_int, newcomm: New<Comm>) -> Option<H> {
    let nc = newcomm.get(r)?;
    globals()
        .is_some_and(|g| nc != g.comm_null)
        .then_some(nc as H)
}

/// The ranks in `to` of the members of `comm`'s group (its remote group for an
/// intercommunicator when `remote`), in their order there; `MPI_UNDEFINED` for one not in `to`.
fn ranks_in(comm: H, remote: bool, to: H) -> Vec<c_int> {
    type CommGroupFn = unsafe extern "C" fn(H, *mut H) -> c_int;
    type TranslateFn = unsafe extern "C" fn(H, c_int, *const c_int, H, *mut c_int) -> c_int;
    type GroupFreeFn = unsafe extern "C" fn(*mut H) -> c_int;
    type SizeFn = unsafe extern "C" fn(H, *mut c_int) -> c_int;
    let (get, remote_size) = if remote {
        (
            real!("PMPI_Comm_remote_group", CommGroupFn),
            real!("PMPI_Comm_remote_size", SizeFn),
        )
    } else {
        (real!("PMPI_Comm_group", CommGroupFn), None)
    };
    let (Some(get), Some(group), Some(translate), Some(free)) = (
        get,
        real!("PMPI_Comm_group", CommGroupFn),
        real!("PMPI_Group_translate_ranks", TranslateFn),
        real!("PMPI_Group_free", GroupFreeFn),
    ) else {
        return Vec::new();
    };
    let n = match remote_size {
        Some(f) => {
            let mut n = 0;
            // SAFETY: `comm` is an intercommunicator MPI just returned; `n` a valid out-parameter.
            unsafe { f(comm, &mut n) };
            n.max(0) as usize
        }
        None => comm_size(comm).max(0) as usize,
    };
    let ranks: Vec<c_int> = (0..n as c_int).collect();
    let mut out: Vec<c_int> = vec![MPI_UNDEFINED; n];
    // Zeroed buffers: MPICH writes 4-byte group handles into them.
    let (mut gn, mut gt): (H, H) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: both communicators are valid (MPI returned `comm`, `to` came from the
    // application's successful call or is MPI_COMM_WORLD); the rank arrays hold `n` entries,
    // the out-parameters are valid, and the groups are freed below.
    unsafe {
        if n > 0 && get(comm, &mut gn) == MPI_SUCCESS && group(to, &mut gt) == MPI_SUCCESS {
            translate(gn, n as c_int, ranks.as_ptr(), gt, out.as_mut_ptr());
        }
        if !gn.is_null() {
            free(&mut gn);
        }
        if !gt.is_null() {
            free(&mut gt);
        }
    }
    out
}

/// The `MPI_COMM_WORLD` ranks of the members of the communicator a creation returned (of its
/// remote group when `remote`), in its rank order: the members the trace lists.
fn world_members(r: c_int, newcomm: New<Comm>, remote: bool) -> Vec<i64> {
    let (Some(nc), Some(g)) = (new_comm(r, newcomm), globals()) else {
        return Vec::new();
    };
    ranks_in(nc, remote, g.world as H)
        .into_iter()
        .map(i64::from)
        .collect()
}
