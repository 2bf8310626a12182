//! Neighbourhood collectives. The topology communicators are recorded as splits and carry no
//! graph, so each call records the caller's neighbours and the bytes it exchanges with each
//! (the layout of `rsd::op`'s neighbourhood ops), and a replay can build a graph of its own.

use super::abi::{self, Topology};
use super::kinds::*;
use super::*;

type Fn2 = unsafe extern "C" fn(H, *mut c_int) -> c_int;

/// The caller's neighbours in `comm`'s topology, (sources, destinations), in the order MPI's
/// neighbourhood collectives use: Cartesian, for each dimension the source then the
/// destination of a shift by 1, the same list both ways; graph, its neighbours both ways;
/// distributed graph, its sources and its destinations. Empty without a topology.
fn neighbours(comm: Comm) -> (Vec<c_int>, Vec<c_int>) {
    type Shift = unsafe extern "C" fn(H, c_int, c_int, *mut c_int, *mut c_int) -> c_int;
    type GraphCount = unsafe extern "C" fn(H, c_int, *mut c_int) -> c_int;
    type GraphGet = unsafe extern "C" fn(H, c_int, c_int, *mut c_int) -> c_int;
    type DistCount = unsafe extern "C" fn(H, *mut c_int, *mut c_int, *mut c_int) -> c_int;
    type DistGet = unsafe extern "C" fn(
        H,
        c_int,
        *mut c_int,
        *mut c_int,
        c_int,
        *mut c_int,
        *mut c_int,
    ) -> c_int;
    let c = comm.0;
    let Some(test) = real!("PMPI_Topo_test", Fn2) else {
        return Default::default();
    };
    let mut kind = 0;
    // SAFETY (here and in each query below): `comm` came from the application's successful
    // call; the out-parameters are valid and the arrays have the length MPI is told.
    unsafe { test(c, &mut kind) };
    match abi::topology(kind) {
        Topology::Cart => {
            let (Some(dim), Some(shift)) = (
                real!("PMPI_Cartdim_get", Fn2),
                real!("PMPI_Cart_shift", Shift),
            ) else {
                return Default::default();
            };
            let mut nd = 0;
            // SAFETY: as above.
            unsafe { dim(c, &mut nd) };
            let mut list = Vec::new();
            for d in 0..nd {
                let (mut s, mut t) = (0, 0);
                // SAFETY: as above.
                unsafe { shift(c, d, 1, &mut s, &mut t) };
                list.extend([s, t]);
            }
            (list.clone(), list)
        }
        Topology::Graph => {
            let (Some(count), Some(get)) = (
                real!("PMPI_Graph_neighbors_count", GraphCount),
                real!("PMPI_Graph_neighbors", GraphGet),
            ) else {
                return Default::default();
            };
            let me = comm.rank() as c_int;
            let mut n = 0;
            // SAFETY: as above.
            unsafe { count(c, me, &mut n) };
            let mut list = vec![0; n.max(0) as usize];
            // SAFETY: as above.
            unsafe { get(c, me, n.max(0), list.as_mut_ptr()) };
            (list.clone(), list)
        }
        Topology::DistGraph => {
            let (Some(count), Some(get)) = (
                real!("PMPI_Dist_graph_neighbors_count", DistCount),
                real!("PMPI_Dist_graph_neighbors", DistGet),
            ) else {
                return Default::default();
            };
            let (mut i, mut o, mut w) = (0, 0, 0);
            // SAFETY: as above.
            unsafe { count(c, &mut i, &mut o, &mut w) };
            let (i, o) = (i.max(0), o.max(0));
            let (mut src, mut dst) = (vec![0; i as usize], vec![0; o as usize]);
            // Weight arrays whether or not the graph is weighted: MPI may write them.
            let (mut sw, mut dw) = (vec![0; i as usize + 1], vec![0; o as usize + 1]);
            let (s, d) = (src.as_mut_ptr(), dst.as_mut_ptr());
            // SAFETY: as above.
            unsafe { get(c, i, s, sw.as_mut_ptr(), o, d, dw.as_mut_ptr()) };
            (src, dst)
        }
        Topology::None => Default::default(),
    }
}

/// A neighbourhood collective's parameters: `fixed(comm, indegree, outdegree, sendbytes,
/// recvbytes)` (the op's constructor, with the request for the nonblocking forms), then the
/// sources and destinations relative to the caller, the bytes sent to each destination
/// (`sent(st, i)`) and received from each source (`received(st, j)`).
fn neighborhood(
    st: &mut State,
    comm: Comm,
    sent: impl Fn(&mut State, usize) -> i64,
    received: impl Fn(&mut State, usize) -> i64,
    fixed: impl FnOnce(i64, i64, i64, i64, i64) -> Vec<i64>,
) -> Vec<i64> {
    let (sources, destinations) = neighbours(comm);
    let s: Vec<i64> = (0..destinations.len()).map(|i| sent(st, i)).collect();
    let r: Vec<i64> = (0..sources.len()).map(|j| received(st, j)).collect();
    let (i, o) = (sources.len() as i64, destinations.len() as i64);
    let mut v = fixed(comm.id(st), i, o, s.iter().sum(), r.iter().sum());
    v.extend(sources.iter().map(|&p| Peer(p).rel(comm)));
    v.extend(destinations.iter().map(|&p| Peer(p).rel(comm)));
    v.extend(s);
    v.extend(r);
    v
}

// Each neighbourhood collective and its nonblocking form. `comm` is the last argument of all.
macro_rules! neighborhood_collectives {
    ($(
        $(#[$doc:meta])*
        $op:ident / $iop:ident: $c:ident, $f:tt / $ic:ident, $if:tt (
            $($arg:ident: $kind:ident $(<$g:ident>)?),*
        )
            sent |$s:ident, $i:ident| $sent:expr;
            received |$r:ident, $j:ident| $received:expr;
    )*) => { paste::paste! { mpi_hooks! {$(
        $(#[$doc])*
        $c, $f ($($arg: $kind $(<$g>)?,)* comm: Comm) => $op
            record |st, _| {
                neighborhood(st, comm, |$s, $i| $sent, |$r, $j| $received, args::[<$op:snake>])
            };

        $(#[$doc])*
        /// The nonblocking form.
        $ic, $if ($($arg: $kind $(<$g>)?,)* comm: Comm, req: New<Request>) => $iop
            record |st, r| {
                let q = req.id(st, r);
                let fixed = |c, i, o, s, r| args::[<$iop:snake>](c, i, o, s, r, q);
                neighborhood(st, comm, |$s, $i| $sent, |$r, $j| $received, fixed)
            };
    )*}}};
}

neighborhood_collectives! {
    /// Wrapper: `MPI_Neighbor_allgather`.
    NeighborAllgather / IneighborAllgather: MPI_Neighbor_allgather, mpi_neighbor_allgather_
        / MPI_Ineighbor_allgather, mpi_ineighbor_allgather_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype
    )
        sent |st, _i| stype.bytes(st, scount);
        received |st, _j| rtype.bytes(st, rcount);

    /// Wrapper: `MPI_Neighbor_allgatherv`.
    NeighborAllgatherv / IneighborAllgatherv: MPI_Neighbor_allgatherv, mpi_neighbor_allgatherv_
        / MPI_Ineighbor_allgatherv, mpi_ineighbor_allgatherv_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcounts: Ints, displs: Ints,
        rtype: Datatype
    )
        sent |st, _i| stype.bytes(st, scount);
        received |st, j| rtype.bytes(st, rcounts.at(j as i64));

    /// Wrapper: `MPI_Neighbor_alltoall`.
    NeighborAlltoall / IneighborAlltoall: MPI_Neighbor_alltoall, mpi_neighbor_alltoall_
        / MPI_Ineighbor_alltoall, mpi_ineighbor_alltoall_ (
        sbuf: Buf, scount: Count, stype: Datatype, rbuf: BufMut, rcount: Count, rtype: Datatype
    )
        sent |st, _i| stype.bytes(st, scount);
        received |st, _j| rtype.bytes(st, rcount);

    /// Wrapper: `MPI_Neighbor_alltoallv`.
    NeighborAlltoallv / IneighborAlltoallv: MPI_Neighbor_alltoallv, mpi_neighbor_alltoallv_
        / MPI_Ineighbor_alltoallv, mpi_ineighbor_alltoallv_ (
        sbuf: Buf, scounts: Ints, sdispls: Ints, stype: Datatype, rbuf: BufMut, rcounts: Ints,
        rdispls: Ints, rtype: Datatype
    )
        sent |st, i| stype.bytes(st, scounts.at(i as i64));
        received |st, j| rtype.bytes(st, rcounts.at(j as i64));

    /// Wrapper: `MPI_Neighbor_alltoallw`, a type per neighbour. No Fortran hook: its type
    /// arrays are as long as the degrees, which the Fortran conversion cannot know.
    NeighborAlltoallw / IneighborAlltoallw: MPI_Neighbor_alltoallw, _
        / MPI_Ineighbor_alltoallw, _ (
        sbuf: Buf, scounts: Ints, sdispls: Aints, stypes: Handles<Datatype>, rbuf: BufMut,
        rcounts: Ints, rdispls: Aints, rtypes: Handles<Datatype>
    )
        sent |st, i| Datatype(stypes.at(i) as H).bytes(st, scounts.at(i as i64));
        received |st, j| Datatype(rtypes.at(j) as H).bytes(st, rcounts.at(j as i64));
}
