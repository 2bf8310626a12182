//! The collectives: blocking, vector (their counts exchanged first) and nonblocking.

use super::{MpiRuntime, check, len};
use mpi::ffi;
use replay::types::Types;
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::any::Any;
use std::os::raw::{c_int, c_void};

impl MpiRuntime {
    /// The blocking collectives on buffers of the recorded sizes (the vector forms through
    /// [`MpiRuntime::vcoll`]).
    pub(super) fn collective(&mut self, e: &FlatEvent, types: &Types) -> Result<(), String> {
        let op = e.op;
        let p = self.p;
        let tsize = |q: Param| types.size(e.p(q));
        match op {
            Op::Barrier => {
                let c = self.comm(e.p(Param::Comm))?;
                // SAFETY: a valid communicator.
                check(unsafe { ffi::MPI_Barrier(c) }, "MPI_Barrier")
            }
            Op::Bcast => {
                let c = self.comm(e.p(Param::Comm))?;
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                self.rbuf.resize(n as usize, 0);
                // SAFETY: a buffer of `n` bytes, the byte type, the recorded root, a valid comm.
                let rc = unsafe {
                    ffi::MPI_Bcast(
                        self.rbuf.as_mut_ptr() as *mut c_void,
                        n,
                        p.u8,
                        e.p(Param::Root) as c_int,
                        c,
                    )
                };
                check(rc, "MPI_Bcast")
            }
            Op::Reduce | Op::Allreduce | Op::Scan | Op::Exscan => {
                let c = self.comm(e.p(Param::Comm))?;
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                let send = vec![0u8; n as usize];
                self.rbuf.resize(n as usize, 0);
                let (s, r) = (
                    send.as_ptr() as *const c_void,
                    self.rbuf.as_mut_ptr() as *mut c_void,
                );
                // SAFETY: send and receive buffers of `n` bytes, the byte type with a bitwise
                // reduction, a valid communicator.
                let rc = unsafe {
                    match op {
                        Op::Reduce => {
                            ffi::MPI_Reduce(s, r, n, p.u8, p.bor, e.p(Param::Root) as c_int, c)
                        }
                        Op::Scan => ffi::MPI_Scan(s, r, n, p.u8, p.bor, c),
                        Op::Exscan => ffi::MPI_Exscan(s, r, n, p.u8, p.bor, c),
                        _ => ffi::MPI_Allreduce(s, r, n, p.u8, p.bor, c),
                    }
                };
                check(rc, op.name())
            }
            Op::ReduceScatter | Op::ReduceScatterBlock => {
                let c = self.comm(e.p(Param::Comm))?;
                let mine = e.p(Param::Count) * tsize(Param::Datatype);
                // Each rank's block: all equal for the block form; the vector form's are
                // exchanged first (the trace keeps each rank's own).
                let counts: Vec<c_int> = if op == Op::ReduceScatterBlock {
                    vec![len(mine); self.comm_size(c).max(0) as usize]
                } else {
                    self.exchange(c, &[mine], None)?
                        .iter()
                        .map(|v| len(*v))
                        .collect()
                };
                let total: usize = counts.iter().map(|n| *n as usize).sum();
                let send = vec![0u8; total];
                self.rbuf.resize(len(mine) as usize, 0);
                let (s, r) = (
                    send.as_ptr() as *const c_void,
                    self.rbuf.as_mut_ptr() as *mut c_void,
                );
                // SAFETY: a send buffer holding every block, a receive buffer of this rank's
                // block, the byte type with a bitwise reduction, a valid communicator.
                let rc = unsafe {
                    if op == Op::ReduceScatterBlock {
                        ffi::MPI_Reduce_scatter_block(s, r, len(mine), p.u8, p.bor, c)
                    } else {
                        ffi::MPI_Reduce_scatter(s, r, counts.as_ptr(), p.u8, p.bor, c)
                    }
                };
                check(rc, op.name())
            }
            Op::Gather | Op::Allgather | Op::Scatter | Op::Alltoall => {
                let c = self.comm(e.p(Param::Comm))?;
                let size = self.comm_size(c);
                // Per-rank block: the send side for gathers, the receive side for scatters,
                // which every rank knows (the root's other side is the block times the size).
                let block = if op == Op::Scatter {
                    e.p(Param::Recvcount) * tsize(Param::Recvtype)
                } else {
                    e.p(Param::Sendcount) * tsize(Param::Sendtype)
                };
                let b = len(block);
                let send = vec![0u8; (block * size).max(0) as usize];
                self.rbuf.resize((block * size).max(0) as usize, 0);
                let (s, r) = (
                    send.as_ptr() as *const c_void,
                    self.rbuf.as_mut_ptr() as *mut c_void,
                );
                let root = e.p(Param::Root) as c_int;
                // SAFETY: buffers of `block * size` bytes on both sides, byte types, a valid
                // communicator and the recorded root.
                let rc = unsafe {
                    match op {
                        Op::Gather => ffi::MPI_Gather(s, b, p.u8, r, b, p.u8, root, c),
                        Op::Allgather => ffi::MPI_Allgather(s, b, p.u8, r, b, p.u8, c),
                        Op::Scatter => ffi::MPI_Scatter(s, b, p.u8, r, b, p.u8, root, c),
                        _ => ffi::MPI_Alltoall(s, b, p.u8, r, b, p.u8, c),
                    }
                };
                check(rc, op.name())
            }
            Op::Gatherv | Op::Scatterv | Op::Allgatherv | Op::Alltoallv | Op::Alltoallw => {
                self.vcoll(e, types, None)
            }
            _ => Ok(()),
        }
    }

    /// Every member's `mine` (k values each), at the root only (`root` Some) or at all ranks.
    pub(super) fn exchange(
        &mut self,
        c: ffi::MPI_Comm,
        mine: &[i64],
        root: Option<c_int>,
    ) -> Result<Vec<i64>, String> {
        let size = self.comm_size(c) as usize;
        let k = mine.len();
        let send: Vec<u8> = mine.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut recv = vec![0u8; 8 * k * size];
        let n = (8 * k) as c_int;
        let (s, r) = (
            send.as_ptr() as *const c_void,
            recv.as_mut_ptr() as *mut c_void,
        );
        // SAFETY: a send buffer of 8k bytes and a receive buffer of 8k bytes per member, the
        // byte type, a valid communicator that every member enters in trace order.
        let rc = unsafe {
            match root {
                Some(rt) => ffi::MPI_Gather(s, n, self.p.u8, r, n, self.p.u8, rt, c),
                None => ffi::MPI_Allgather(s, n, self.p.u8, r, n, self.p.u8, c),
            }
        };
        check(rc, "exchanging the vector collective's counts")?;
        Ok(recv
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect())
    }

    /// A vector collective with the recorded per-rank byte counts: the blocking call, or its
    /// nonblocking form completed by request `nb`. The counts are exchanged first with a
    /// blocking collective, even for the nonblocking forms (the trace keeps each rank's own
    /// side only), so those synchronise their communicator at the start.
    pub(super) fn vcoll(
        &mut self,
        e: &FlatEvent,
        types: &Types,
        nb: Option<i64>,
    ) -> Result<(), String> {
        let c = self.comm(e.p(Param::Comm))?;
        let mut req: ffi::MPI_Request = self.p.request_null;
        // Where the nonblocking form puts its request; `None` issues the blocking form.
        let rq = nb.map(|_| &mut req as *mut ffi::MPI_Request);
        let out = match e.op.blocking_form() {
            op @ (Op::Gatherv | Op::Scatterv) => self.rooted_v(e, types, op, c, rq)?,
            Op::Allgatherv => self.allgatherv(e, types, c, rq)?,
            op => self.alltoall_vw(e, op, c, rq)?,
        };
        check(out.rc, e.op.name())?;
        if let Some(q) = nb {
            self.keep(q, req, out.keep);
        }
        Ok(())
    }

    /// `MPI_(I)gatherv` or `MPI_(I)scatterv` (`op`) on `c`: this rank's side as recorded, the
    /// root's counts gathered from every rank.
    fn rooted_v(
        &mut self,
        e: &FlatEvent,
        types: &Types,
        op: Op,
        c: ffi::MPI_Comm,
        rq: Option<*mut ffi::MPI_Request>,
    ) -> Result<Issued, String> {
        let p = self.p;
        let me = self.comm_rank(c) as c_int;
        let size = self.comm_size(c) as usize;
        // Allgather and Alltoall have no root.
        let root = e.get(Param::Root).unwrap_or(0) as c_int;
        let mine = if op == Op::Gatherv {
            side(e, types, Param::Sendcount, Param::Sendtype)
        } else {
            side(e, types, Param::Recvcount, Param::Recvtype)
        };
        let all = self.exchange(c, &[mine], Some(root))?;
        let counts: Vec<c_int> = if me == root {
            all.iter().map(|v| len(*v)).collect()
        } else {
            vec![0; size]
        };
        let ds = displs(&counts);
        let total: usize = counts.iter().map(|n| *n as usize).sum();
        let mut one = vec![0u8; mine as usize];
        let mut many = vec![0u8; total];
        let (op1, opn) = (
            one.as_mut_ptr() as *mut c_void,
            many.as_mut_ptr() as *mut c_void,
        );
        // SAFETY: this rank's buffer of `mine` bytes, the root's buffer of the sum of the
        // counts with matching displacements, byte types, a valid communicator; for the
        // nonblocking forms every buffer and array is kept until completion.
        let rc = unsafe {
            match (op == Op::Gatherv, rq) {
                (true, None) => ffi::MPI_Gatherv(
                    op1,
                    len(mine),
                    p.u8,
                    opn,
                    counts.as_ptr(),
                    ds.as_ptr(),
                    p.u8,
                    root,
                    c,
                ),
                (true, Some(rq)) => ffi::MPI_Igatherv(
                    op1,
                    len(mine),
                    p.u8,
                    opn,
                    counts.as_ptr(),
                    ds.as_ptr(),
                    p.u8,
                    root,
                    c,
                    rq,
                ),
                (false, None) => ffi::MPI_Scatterv(
                    opn,
                    counts.as_ptr(),
                    ds.as_ptr(),
                    p.u8,
                    op1,
                    len(mine),
                    p.u8,
                    root,
                    c,
                ),
                (false, Some(rq)) => ffi::MPI_Iscatterv(
                    opn,
                    counts.as_ptr(),
                    ds.as_ptr(),
                    p.u8,
                    op1,
                    len(mine),
                    p.u8,
                    root,
                    c,
                    rq,
                ),
            }
        };
        Ok(Issued {
            rc,
            keep: vec![
                Box::new(one),
                Box::new(many),
                Box::new(counts),
                Box::new(ds),
            ],
        })
    }

    /// `MPI_(I)allgatherv` on `c`: every rank's count gathered by every rank.
    fn allgatherv(
        &mut self,
        e: &FlatEvent,
        types: &Types,
        c: ffi::MPI_Comm,
        rq: Option<*mut ffi::MPI_Request>,
    ) -> Result<Issued, String> {
        let p = self.p;
        let mine = side(e, types, Param::Sendcount, Param::Sendtype);
        let counts: Vec<c_int> = self
            .exchange(c, &[mine], None)?
            .iter()
            .map(|v| len(*v))
            .collect();
        let ds = displs(&counts);
        let total: usize = counts.iter().map(|n| *n as usize).sum();
        let send = vec![0u8; mine as usize];
        let mut recv = vec![0u8; total];
        let (sp, rp) = (
            send.as_ptr() as *const c_void,
            recv.as_mut_ptr() as *mut c_void,
        );
        // SAFETY: as for Gatherv, at every rank.
        let rc = unsafe {
            match rq {
                Some(rq) => ffi::MPI_Iallgatherv(
                    sp,
                    len(mine),
                    p.u8,
                    rp,
                    counts.as_ptr(),
                    ds.as_ptr(),
                    p.u8,
                    c,
                    rq,
                ),
                None => ffi::MPI_Allgatherv(
                    sp,
                    len(mine),
                    p.u8,
                    rp,
                    counts.as_ptr(),
                    ds.as_ptr(),
                    p.u8,
                    c,
                ),
            }
        };
        Ok(Issued {
            rc,
            keep: vec![
                Box::new(send),
                Box::new(recv),
                Box::new(counts),
                Box::new(ds),
            ],
        })
    }

    /// `MPI_(I)alltoallv` or `MPI_(I)alltoallw` (`op`) on `c`. The trace keeps each rank's
    /// send and receive totals, not who sent what to whom: the counts are a matrix with those
    /// row and column sums ([`northwest_corner`]), which moves the recorded bytes per rank;
    /// the pairing is an approximation.
    fn alltoall_vw(
        &mut self,
        e: &FlatEvent,
        op: Op,
        c: ffi::MPI_Comm,
        rq: Option<*mut ffi::MPI_Request>,
    ) -> Result<Issued, String> {
        let p = self.p;
        let me = self.comm_rank(c) as usize;
        let size = self.comm_size(c) as usize;
        // MPI_IN_PLACE (type -1) sends nothing of its own.
        let sb = if e.get(Param::Sendtype).is_some_and(|t| t < 0) {
            0
        } else {
            e.p(Param::Sendbytes).max(0)
        };
        let rb = e.p(Param::Recvbytes).max(0);
        let all = self.exchange(c, &[sb, rb], None)?;
        let (scounts, rcounts) = northwest_corner(&all, me, size);
        let (sd, rd) = (displs(&scounts), displs(&rcounts));
        let send = vec![0u8; scounts.iter().map(|n| *n as usize).sum()];
        let mut recv = vec![0u8; rcounts.iter().map(|n| *n as usize).sum()];
        let (sp, rp) = (
            send.as_ptr() as *const c_void,
            recv.as_mut_ptr() as *mut c_void,
        );
        // Alltoallw's per-peer types: bytes everywhere (displacements are in bytes).
        let tys = vec![p.u8; size];
        // SAFETY: buffers of the sums of the counts with matching displacements, byte types,
        // a valid communicator; every pair's counts agree by construction.
        let rc = unsafe {
            match (op == Op::Alltoallw, rq) {
                (false, None) => ffi::MPI_Alltoallv(
                    sp,
                    scounts.as_ptr(),
                    sd.as_ptr(),
                    p.u8,
                    rp,
                    rcounts.as_ptr(),
                    rd.as_ptr(),
                    p.u8,
                    c,
                ),
                (false, Some(rq)) => ffi::MPI_Ialltoallv(
                    sp,
                    scounts.as_ptr(),
                    sd.as_ptr(),
                    p.u8,
                    rp,
                    rcounts.as_ptr(),
                    rd.as_ptr(),
                    p.u8,
                    c,
                    rq,
                ),
                (true, None) => ffi::MPI_Alltoallw(
                    sp,
                    scounts.as_ptr(),
                    sd.as_ptr(),
                    tys.as_ptr(),
                    rp,
                    rcounts.as_ptr(),
                    rd.as_ptr(),
                    tys.as_ptr(),
                    c,
                ),
                (true, Some(rq)) => ffi::MPI_Ialltoallw(
                    sp,
                    scounts.as_ptr(),
                    sd.as_ptr(),
                    tys.as_ptr(),
                    rp,
                    rcounts.as_ptr(),
                    rd.as_ptr(),
                    tys.as_ptr(),
                    c,
                    rq,
                ),
            }
        };
        Ok(Issued {
            rc,
            keep: vec![
                Box::new(send),
                Box::new(recv),
                Box::new(scounts),
                Box::new(rcounts),
                Box::new(sd),
                Box::new(rd),
                Box::new(tys),
            ],
        })
    }

    /// The nonblocking collectives: the real call on buffers of the recorded sizes, kept
    /// until the request completes. The vector forms go through [`MpiRuntime::vcoll`].
    pub(super) fn icoll(&mut self, e: &FlatEvent, types: &Types) -> Result<(), String> {
        let base = e.op.blocking_form();
        let q = e.p(Param::Request);
        if matches!(
            base,
            Op::Gatherv | Op::Scatterv | Op::Allgatherv | Op::Alltoallv | Op::Alltoallw
        ) {
            return self.vcoll(e, types, Some(q));
        }
        let p = self.p;
        let c = self.comm(e.p(Param::Comm))?;
        let size = self.comm_size(c).max(0);
        let tsize = |t: Param| types.size(e.p(t));
        let mut req = p.request_null;
        let rq: *mut ffi::MPI_Request = &mut req;
        let mut keep: Vec<Box<dyn Any>> = Vec::new();
        // SAFETY (every arm): send and receive buffers of the sizes given to MPI, moved into
        // `keep` and held with the request until it completes, byte types, a bitwise
        // reduction, a valid communicator and the recorded root.
        let rc = unsafe {
            match base {
                Op::Barrier => ffi::MPI_Ibarrier(c, rq),
                Op::Bcast => {
                    let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                    let mut b = vec![0u8; n as usize];
                    let rc = ffi::MPI_Ibcast(
                        b.as_mut_ptr() as *mut c_void,
                        n,
                        p.u8,
                        e.p(Param::Root) as c_int,
                        c,
                        rq,
                    );
                    keep.push(Box::new(b));
                    rc
                }
                Op::Reduce
                | Op::Allreduce
                | Op::Scan
                | Op::Exscan
                | Op::ReduceScatter
                | Op::ReduceScatterBlock => {
                    let mine = e.p(Param::Count) * tsize(Param::Datatype);
                    let counts: Vec<c_int> = match base {
                        Op::ReduceScatterBlock => vec![len(mine); size as usize],
                        // The vector form's blocks are exchanged first (see vcoll).
                        Op::ReduceScatter => self
                            .exchange(c, &[mine], None)?
                            .iter()
                            .map(|v| len(*v))
                            .collect(),
                        _ => vec![len(mine)],
                    };
                    let total: usize = counts.iter().map(|n| *n as usize).sum();
                    let s = vec![0u8; total];
                    let mut r = vec![0u8; len(mine) as usize];
                    let (sp, rp) = (s.as_ptr() as *const c_void, r.as_mut_ptr() as *mut c_void);
                    let n = len(mine);
                    let rc = match base {
                        Op::Reduce => ffi::MPI_Ireduce(
                            sp,
                            rp,
                            n,
                            p.u8,
                            p.bor,
                            e.p(Param::Root) as c_int,
                            c,
                            rq,
                        ),
                        Op::Allreduce => ffi::MPI_Iallreduce(sp, rp, n, p.u8, p.bor, c, rq),
                        Op::Scan => ffi::MPI_Iscan(sp, rp, n, p.u8, p.bor, c, rq),
                        Op::Exscan => ffi::MPI_Iexscan(sp, rp, n, p.u8, p.bor, c, rq),
                        Op::ReduceScatterBlock => {
                            ffi::MPI_Ireduce_scatter_block(sp, rp, n, p.u8, p.bor, c, rq)
                        }
                        _ => ffi::MPI_Ireduce_scatter(sp, rp, counts.as_ptr(), p.u8, p.bor, c, rq),
                    };
                    keep.push(Box::new(s));
                    keep.push(Box::new(r));
                    keep.push(Box::new(counts));
                    rc
                }
                _ => {
                    // Gather, Allgather, Scatter, Alltoall: as the blocking forms.
                    let block = if base == Op::Scatter {
                        e.p(Param::Recvcount) * tsize(Param::Recvtype)
                    } else {
                        e.p(Param::Sendcount) * tsize(Param::Sendtype)
                    };
                    let b = len(block);
                    let whole = (block * size).max(0) as usize;
                    let s = vec![0u8; whole];
                    let mut r = vec![0u8; whole];
                    let (sp, rp) = (s.as_ptr() as *const c_void, r.as_mut_ptr() as *mut c_void);
                    let rc = match base {
                        Op::Gather => {
                            let root = e.p(Param::Root) as c_int;
                            ffi::MPI_Igather(sp, b, p.u8, rp, b, p.u8, root, c, rq)
                        }
                        Op::Scatter => {
                            let root = e.p(Param::Root) as c_int;
                            ffi::MPI_Iscatter(sp, b, p.u8, rp, b, p.u8, root, c, rq)
                        }
                        Op::Allgather => ffi::MPI_Iallgather(sp, b, p.u8, rp, b, p.u8, c, rq),
                        _ => ffi::MPI_Ialltoall(sp, b, p.u8, rp, b, p.u8, c, rq),
                    };
                    keep.push(Box::new(s));
                    keep.push(Box::new(r));
                    rc
                }
            }
        };
        check(rc, e.op.name())?;
        self.keep(q, req, keep);
        Ok(())
    }
}

/// A vector collective's real call: its return code and what it reads or writes until it
/// completes (kept with the request of a nonblocking form).
struct Issued {
    rc: c_int,
    keep: Vec<Box<dyn Any>>,
}

/// Bytes of one side (`count` elements of type `ty`) of a vector collective at this rank; the
/// tracer records type -1 for MPI_IN_PLACE, which moves none of this rank's own.
fn side(e: &FlatEvent, types: &Types, count: Param, ty: Param) -> i64 {
    let t = e.p(ty);
    if t < 0 {
        0
    } else {
        e.p(count).max(0) * types.size(t)
    }
}

/// The displacements of blocks of `counts` bytes laid end to end.
fn displs(counts: &[c_int]) -> Vec<c_int> {
    let mut acc = 0i64;
    counts
        .iter()
        .map(|n| {
            let d = acc;
            acc += *n as i64;
            len(d)
        })
        .collect()
}

/// This rank's (`me` of `size`) send and receive counts per peer in a matrix whose row sums
/// are every rank's send total and whose column sums its receive total (`all`: send, receive
/// per rank), filled by the north-west corner rule: every rank computes the same matrix from
/// the exchanged totals, so every pair's counts agree.
fn northwest_corner(all: &[i64], me: usize, size: usize) -> (Vec<c_int>, Vec<c_int>) {
    let mut rows: Vec<i64> = all.iter().step_by(2).copied().collect();
    let mut cols: Vec<i64> = all.iter().skip(1).step_by(2).copied().collect();
    let mut scounts = vec![0 as c_int; size];
    let mut rcounts = vec![0 as c_int; size];
    let (mut i, mut j) = (0, 0);
    while i < size && j < size {
        let m = rows[i].min(cols[j]);
        if i == me {
            scounts[j] = len(m);
        }
        if j == me {
            rcounts[i] = len(m);
        }
        rows[i] -= m;
        cols[j] -= m;
        if rows[i] == 0 {
            i += 1;
        } else {
            j += 1;
        }
    }
    (scounts, rcounts)
}
