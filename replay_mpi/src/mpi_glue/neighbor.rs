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
        let g = self.graph(cid, c, &srcs, &dsts)?;
        let base = op.blocking_form();
        let mut blocks = Blocks::new(base, p.u8, srcs, rcounts, dsts, scounts);
        let nonblocking = op.is_nonblocking_collective();
        let mut req = p.request_null;
        let rq = nonblocking.then_some(&mut req as *mut ffi::MPI_Request);
        check(blocks.issue(base, g, p.u8, rq), op.name())?;
        if nonblocking {
            self.keep(e.p(Param::Request), req, blocks.kept());
        }
        Ok(())
    }

    /// The distributed graph of communicator `cid` (`c`) with these sources and destinations
    /// (ranks of `c`), made at its first neighbourhood collective and kept for the others.
    fn graph(
        &mut self,
        cid: i64,
        c: ffi::MPI_Comm,
        srcs: &[c_int],
        dsts: &[c_int],
    ) -> Result<ffi::MPI_Comm, String> {
        if let Some(g) = self.graphs.get(&cid) {
            return Ok(*g);
        }
        let p = self.p;
        let mut g = p.world;
        // SAFETY: neighbour ranks of `c` (from a consistent topology: the check pairs every
        // destination with a source), unweighted, every member of `c` making this call at its
        // first neighbourhood collective on `c`.
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
        Ok(g)
    }
}

/// The buffers and per-neighbour arrays of one neighbourhood collective: the byte blocks
/// laid end to end in neighbour order, in the forms every flavour of the call takes. A
/// nonblocking call reads and writes them until it completes, so they move whole into the
/// request's keep (their heap memory does not move with them).
struct Blocks {
    srcs: Vec<c_int>,
    dsts: Vec<c_int>,
    scounts: Vec<c_int>,
    rcounts: Vec<c_int>,
    sd: Vec<c_int>,
    rd: Vec<c_int>,
    /// The displacements as addresses, for the `w` forms.
    sda: Vec<ffi::MPI_Aint>,
    rda: Vec<ffi::MPI_Aint>,
    /// The `w` forms' per-neighbour types: bytes everywhere.
    stys: Vec<ffi::MPI_Datatype>,
    rtys: Vec<ffi::MPI_Datatype>,
    s: Vec<u8>,
    r: Vec<u8>,
}

impl Blocks {
    /// The blocks of a call of blocking form `base` receiving `rcounts` bytes from `srcs`
    /// and sending `scounts` to `dsts`.
    fn new(
        base: Op,
        u8t: ffi::MPI_Datatype,
        srcs: Vec<c_int>,
        rcounts: Vec<c_int>,
        dsts: Vec<c_int>,
        scounts: Vec<c_int>,
    ) -> Blocks {
        let (sd, rd) = (displs(&scounts), displs(&rcounts));
        let (sda, rda): (Vec<ffi::MPI_Aint>, Vec<ffi::MPI_Aint>) = (
            sd.iter().map(|d| *d as ffi::MPI_Aint).collect(),
            rd.iter().map(|d| *d as ffi::MPI_Aint).collect(),
        );
        let (stys, rtys) = (vec![u8t; dsts.len()], vec![u8t; srcs.len()]);
        // The allgather forms send one block to every destination.
        let stotal = if matches!(base, Op::NeighborAllgather | Op::NeighborAllgatherv) {
            scounts.first().copied().unwrap_or(0) as usize
        } else {
            scounts.iter().map(|n| *n as usize).sum()
        };
        let s = vec![0u8; stotal];
        let r = vec![0u8; rcounts.iter().map(|n| *n as usize).sum()];
        Blocks {
            srcs,
            dsts,
            scounts,
            rcounts,
            sd,
            rd,
            sda,
            rda,
            stys,
            rtys,
            s,
            r,
        }
    }

    /// Issues the call of blocking form `base` on graph `g`: its nonblocking form when `rq`
    /// is where to put the request. Returns MPI's return code.
    fn issue(
        &mut self,
        base: Op,
        g: ffi::MPI_Comm,
        u8t: ffi::MPI_Datatype,
        rq: Option<*mut ffi::MPI_Request>,
    ) -> c_int {
        let (sp, rp) = (
            self.s.as_ptr() as *const c_void,
            self.r.as_mut_ptr() as *mut c_void,
        );
        // The one-block forms (allgather, alltoall) send and receive the first block's size.
        let sblock = self.scounts.first().copied().unwrap_or(0);
        let rblock = self.rcounts.first().copied().unwrap_or(0);
        let (scounts, rcounts) = (self.scounts.as_ptr(), self.rcounts.as_ptr());
        let (sd, rd, sda, rda) = (
            self.sd.as_ptr(),
            self.rd.as_ptr(),
            self.sda.as_ptr(),
            self.rda.as_ptr(),
        );
        let (stys, rtys) = (self.stys.as_ptr(), self.rtys.as_ptr());
        // SAFETY (every arm): buffers holding the counts given with their displacements,
        // byte types, the graph communicator; for the nonblocking forms the buffers and arrays
        // are kept with the request until it completes.
        unsafe {
            match (base, rq) {
                (Op::NeighborAllgather, None) => {
                    ffi::MPI_Neighbor_allgather(sp, sblock, u8t, rp, rblock, u8t, g)
                }
                (Op::NeighborAllgather, Some(rq)) => {
                    ffi::MPI_Ineighbor_allgather(sp, sblock, u8t, rp, rblock, u8t, g, rq)
                }
                (Op::NeighborAllgatherv, None) => {
                    ffi::MPI_Neighbor_allgatherv(sp, sblock, u8t, rp, rcounts, rd, u8t, g)
                }
                (Op::NeighborAllgatherv, Some(rq)) => {
                    ffi::MPI_Ineighbor_allgatherv(sp, sblock, u8t, rp, rcounts, rd, u8t, g, rq)
                }
                (Op::NeighborAlltoall, None) => {
                    ffi::MPI_Neighbor_alltoall(sp, sblock, u8t, rp, rblock, u8t, g)
                }
                (Op::NeighborAlltoall, Some(rq)) => {
                    ffi::MPI_Ineighbor_alltoall(sp, sblock, u8t, rp, rblock, u8t, g, rq)
                }
                (Op::NeighborAlltoallv, None) => {
                    ffi::MPI_Neighbor_alltoallv(sp, scounts, sd, u8t, rp, rcounts, rd, u8t, g)
                }
                (Op::NeighborAlltoallv, Some(rq)) => {
                    ffi::MPI_Ineighbor_alltoallv(sp, scounts, sd, u8t, rp, rcounts, rd, u8t, g, rq)
                }
                (_, None) => {
                    ffi::MPI_Neighbor_alltoallw(sp, scounts, sda, stys, rp, rcounts, rda, rtys, g)
                }
                (_, Some(rq)) => ffi::MPI_Ineighbor_alltoallw(
                    sp, scounts, sda, stys, rp, rcounts, rda, rtys, g, rq,
                ),
            }
        }
    }

    /// What a nonblocking call reads or writes until it completes.
    fn kept(self) -> Vec<Box<dyn Any>> {
        vec![
            Box::new(self.s),
            Box::new(self.r),
            Box::new(self.scounts),
            Box::new(self.rcounts),
            Box::new(self.sd),
            Box::new(self.rd),
            Box::new(self.sda),
            Box::new(self.rda),
            Box::new(self.stys),
            Box::new(self.rtys),
            Box::new(self.srcs),
            Box::new(self.dsts),
        ]
    }
}

/// The displacements of blocks of `counts` bytes laid end to end.
fn displs(counts: &[c_int]) -> Vec<c_int> {
    let mut acc = 0;
    counts
        .iter()
        .map(|n| {
            let d = acc;
            acc += n;
            d
        })
        .collect()
}
