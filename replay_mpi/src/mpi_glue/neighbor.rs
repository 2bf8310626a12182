//! The neighbourhood collectives, on distributed graphs built from the recorded neighbours.

use super::{MpiRuntime, check, len};
use mpi::ffi;
use rsd::mpi::PROC_NULL;
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::any::Any;
use std::os::raw::{c_int, c_void};

impl MpiRuntime {
    /// A neighbourhood collective: the real call, on a distributed graph built from the
    /// recorded neighbours (MPI_PROC_NULL ones dropped, with their blocks), with the recorded
    /// bytes per neighbour.
    pub(super) fn neighborhood(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        let p = self.p;
        let cid = e.p(Param::Comm);
        let c = self.comm(cid)?;
        let nb = op
            .neighborhood(&e.params)
            .ok_or_else(|| format!("{} lacks its neighbour lists", op.name()))?;
        let me = self.comm_rank(c);
        let kept = |peers: &[i64], bytes: &[i64]| -> (Vec<c_int>, Vec<c_int>) {
            peers
                .iter()
                .zip(bytes)
                .filter(|(r, _)| **r != PROC_NULL)
                .map(|(r, b)| ((me + r) as c_int, len(*b)))
                .unzip()
        };
        let (srcs, rcounts) = kept(nb.sources, nb.recvbytes);
        let (dsts, scounts) = kept(nb.destinations, nb.sendbytes);
        let g = match self.graphs.get(&cid) {
            Some(g) => *g,
            None => {
                let mut g = p.world;
                // SAFETY: neighbour ranks of `c` (from a consistent topology: the check pairs
                // every destination with a source), unweighted, every member of `c` making
                // this call at its first neighbourhood collective on `c`.
                let rc = unsafe {
                    ffi::MPI_Dist_graph_create_adjacent(
                        c,
                        srcs.len() as c_int,
                        srcs.as_ptr(),
                        p.unweighted,
                        dsts.len() as c_int,
                        dsts.as_ptr(),
                        p.unweighted,
                        p.info_null,
                        0,
                        &mut g,
                    )
                };
                check(rc, "MPI_Dist_graph_create_adjacent")?;
                self.graphs.insert(cid, g);
                g
            }
        };
        let displs = |counts: &[c_int]| -> Vec<c_int> {
            let mut acc = 0;
            counts
                .iter()
                .map(|n| {
                    let d = acc;
                    acc += n;
                    d
                })
                .collect()
        };
        let (sd, rd) = (displs(&scounts), displs(&rcounts));
        let (sda, rda): (Vec<ffi::MPI_Aint>, Vec<ffi::MPI_Aint>) = (
            sd.iter().map(|d| *d as ffi::MPI_Aint).collect(),
            rd.iter().map(|d| *d as ffi::MPI_Aint).collect(),
        );
        let (stys, rtys) = (vec![p.u8; dsts.len()], vec![p.u8; srcs.len()]);
        let base = op.blocking_form();
        // The allgather forms send one block to every destination.
        let sblock = scounts.first().copied().unwrap_or(0);
        let rblock = rcounts.first().copied().unwrap_or(0);
        let stotal = if matches!(base, Op::NeighborAllgather | Op::NeighborAllgatherv) {
            sblock as usize
        } else {
            scounts.iter().map(|n| *n as usize).sum()
        };
        let s = vec![0u8; stotal];
        let mut r = vec![0u8; rcounts.iter().map(|n| *n as usize).sum()];
        let (sp, rp) = (s.as_ptr() as *const c_void, r.as_mut_ptr() as *mut c_void);
        let nonblocking = op.is_nonblocking_collective();
        let mut req = p.request_null;
        let rq: *mut ffi::MPI_Request = &mut req;
        let u8t = p.u8;
        // SAFETY (every arm): buffers holding the counts given with their displacements,
        // byte types, the graph communicator; for the nonblocking forms the buffers and arrays
        // are kept with the request until it completes.
        let rc = unsafe {
            match (base, nonblocking) {
                (Op::NeighborAllgather, false) => {
                    ffi::MPI_Neighbor_allgather(sp, sblock, u8t, rp, rblock, u8t, g)
                }
                (Op::NeighborAllgather, true) => {
                    ffi::MPI_Ineighbor_allgather(sp, sblock, u8t, rp, rblock, u8t, g, rq)
                }
                (Op::NeighborAllgatherv, false) => ffi::MPI_Neighbor_allgatherv(
                    sp,
                    sblock,
                    u8t,
                    rp,
                    rcounts.as_ptr(),
                    rd.as_ptr(),
                    u8t,
                    g,
                ),
                (Op::NeighborAllgatherv, true) => ffi::MPI_Ineighbor_allgatherv(
                    sp,
                    sblock,
                    u8t,
                    rp,
                    rcounts.as_ptr(),
                    rd.as_ptr(),
                    u8t,
                    g,
                    rq,
                ),
                (Op::NeighborAlltoall, false) => {
                    ffi::MPI_Neighbor_alltoall(sp, sblock, u8t, rp, rblock, u8t, g)
                }
                (Op::NeighborAlltoall, true) => {
                    ffi::MPI_Ineighbor_alltoall(sp, sblock, u8t, rp, rblock, u8t, g, rq)
                }
                (Op::NeighborAlltoallv, false) => ffi::MPI_Neighbor_alltoallv(
                    sp,
                    scounts.as_ptr(),
                    sd.as_ptr(),
                    u8t,
                    rp,
                    rcounts.as_ptr(),
                    rd.as_ptr(),
                    u8t,
                    g,
                ),
                (Op::NeighborAlltoallv, true) => ffi::MPI_Ineighbor_alltoallv(
                    sp,
                    scounts.as_ptr(),
                    sd.as_ptr(),
                    u8t,
                    rp,
                    rcounts.as_ptr(),
                    rd.as_ptr(),
                    u8t,
                    g,
                    rq,
                ),
                (_, false) => ffi::MPI_Neighbor_alltoallw(
                    sp,
                    scounts.as_ptr(),
                    sda.as_ptr(),
                    stys.as_ptr(),
                    rp,
                    rcounts.as_ptr(),
                    rda.as_ptr(),
                    rtys.as_ptr(),
                    g,
                ),
                (_, true) => ffi::MPI_Ineighbor_alltoallw(
                    sp,
                    scounts.as_ptr(),
                    sda.as_ptr(),
                    stys.as_ptr(),
                    rp,
                    rcounts.as_ptr(),
                    rda.as_ptr(),
                    rtys.as_ptr(),
                    g,
                    rq,
                ),
            }
        };
        check(rc, op.name())?;
        if nonblocking {
            let keep: Vec<Box<dyn Any>> = vec![
                Box::new(s),
                Box::new(r),
                Box::new(scounts),
                Box::new(rcounts),
                Box::new(sd),
                Box::new(rd),
                Box::new(sda),
                Box::new(rda),
                Box::new(stys),
                Box::new(rtys),
                Box::new(srcs),
                Box::new(dsts),
            ];
            self.keep(e.p(Param::Request), req, keep);
        }
        Ok(())
    }
}
