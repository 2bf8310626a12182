//! The MPI runtime of `iotrex-replay`: MPI-IO and MPI calls issued through rsmpi's raw
//! bindings (`mpi::ffi`), the only `unsafe` code of the replay.
//!
//! Data moves as `MPI_UINT8_T` counts of the recorded byte totals. A recorded file view is
//! re-issued at the recorded displacement with a byte etype and the filetype rebuilt from its
//! recorded constructor chain (vector, hvector, indexed and its h- and _block forms, subarray,
//! darray, struct, resized, dup: each issued as the same MPI constructor, predefined leaves as contiguous bytes of their size), offsets
//! converted from the recorded etype to bytes; so noncontiguous access touches the same file
//! regions as the application's. Vector collectives exchange each rank's recorded byte count
//! first (the trace keeps each rank's own side, not the root's per-rank arrays), then issue
//! the real call with those counts.

#![allow(unsafe_code)]

use filetable::{Effect, FileEnv, FileTable};
use mpi::ffi;
use replay::engine::{Pattern, Runtime};
use replay::types::Types;
use replay::{Mapped, Pinned};
use rsd::op::{Creation, Dir, Op, Param};
use rsd::trace::FlatEvent;
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::os::raw::{c_int, c_void};

use rsd::mpi::{ANY_SOURCE, PROC_NULL, amode};

/// Handles to MPI's predefined objects, read once.
#[derive(Clone, Copy)]
pub struct Predef {
    pub world: ffi::MPI_Comm,
    pub self_: ffi::MPI_Comm,
    pub u8: ffi::MPI_Datatype,
    pub info_null: ffi::MPI_Info,
    pub bor: ffi::MPI_Op,
    pub any_source: c_int,
    pub any_tag: c_int,
    pub proc_null: c_int,
    pub undefined: c_int,
    pub request_null: ffi::MPI_Request,
    pub message_no_proc: ffi::MPI_Message,
    pub status_ignore: *mut ffi::MPI_Status,
    pub statuses_ignore: *mut ffi::MPI_Status,
    pub unweighted: *mut c_int,
}

impl Predef {
    pub fn get() -> Predef {
        // SAFETY: these are constant globals of the rsmpi shim, initialised at load time; they
        // are only read.
        unsafe {
            Predef {
                world: ffi::RSMPI_COMM_WORLD,
                self_: ffi::RSMPI_COMM_SELF,
                u8: ffi::RSMPI_UINT8_T,
                info_null: ffi::RSMPI_INFO_NULL,
                bor: ffi::RSMPI_BOR,
                any_source: ffi::RSMPI_ANY_SOURCE,
                any_tag: ffi::RSMPI_ANY_TAG,
                proc_null: ffi::RSMPI_PROC_NULL,
                undefined: ffi::RSMPI_UNDEFINED,
                request_null: ffi::RSMPI_REQUEST_NULL,
                message_no_proc: ffi::RSMPI_MESSAGE_NO_PROC,
                status_ignore: ffi::RSMPI_STATUS_IGNORE,
                statuses_ignore: ffi::RSMPI_STATUSES_IGNORE,
                unweighted: ffi::RSMPI_UNWEIGHTED(),
            }
        }
    }
}

fn check(rc: c_int, what: &str) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{what} returned MPI error {rc}"))
    }
}

struct MFile {
    fh: ffi::MPI_File,
    /// The file opened inside the root, whose `/proc/self/fd/M` the library was given (see
    /// `Mapped::pin`); kept open as long as the handle, since ROMIO may open the file again
    /// later (deferred open on the ranks that are not aggregators).
    _pinned: Pinned,
    /// Its name in the root, when the traced open asked for `MPI_MODE_DELETE_ON_CLOSE`: the
    /// library's own removal would name `/proc/self/fd/M`, so the replay removes it here.
    delete_on_close: Option<Mapped>,
}

/// A pending nonblocking call and its buffer, kept alive until completion.
struct Pending {
    req: ffi::MPI_Request,
    _buf: Vec<u8>,
    /// The other buffers and arrays a nonblocking collective reads or writes until it
    /// completes (moving a Vec into the box leaves its heap data where MPI was told it is).
    _keep: Vec<Box<dyn Any>>,
    /// A receive posted with MPI_Irecv or MPI_Recv_init: the one kind the replay cancels.
    recv: bool,
}

impl Pending {
    /// A point-to-point request and the one buffer it reads or writes.
    fn with_buf(req: ffi::MPI_Request, buf: Vec<u8>, recv: bool) -> Pending {
        Pending {
            req,
            _buf: buf,
            _keep: Vec::new(),
            recv,
        }
    }
}

/// The MPI runtime of one rank.
pub struct MpiRuntime {
    p: Predef,
    comms: HashMap<i64, ffi::MPI_Comm>,
    files: HashMap<i64, MFile>,
    reqs: HashMap<i64, Pending>,
    rbuf: Vec<u8>,
    /// Datatypes rebuilt from the trace's constructors, by symbolic id (ids are never reused).
    dtypes: HashMap<i64, ffi::MPI_Datatype>,
    /// Persistent requests, by id, and those started and not yet completed.
    persist: HashMap<i64, Pending>,
    active: HashSet<i64>,
    /// Messages matched by MPI_Mprobe/MPI_Improbe and not yet received, by id.
    msgs: HashMap<i64, ffi::MPI_Message>,
    /// The distributed-graph communicator each communicator's neighbourhood collectives run
    /// on, built at the first one from the recorded neighbours (the topology communicators
    /// are recorded as splits and carry no topology).
    graphs: HashMap<i64, ffi::MPI_Comm>,
    /// The buffer attached by MPI_Buffer_attach.
    attached: Option<Vec<u8>>,
    /// The buffer of each file's split collective begun and not yet ended, by file id: MPI
    /// reads or fills it until the end (one split collective at a time per file handle).
    split: HashMap<i64, Vec<u8>>,
}

fn len(n: i64) -> c_int {
    n.clamp(0, c_int::MAX as i64) as c_int
}

impl MpiRuntime {
    pub fn new(p: Predef) -> MpiRuntime {
        let mut comms = HashMap::new();
        comms.insert(0, p.world);
        comms.insert(1, p.self_);
        MpiRuntime {
            p,
            comms,
            files: HashMap::new(),
            reqs: HashMap::new(),
            rbuf: Vec::new(),
            dtypes: HashMap::new(),
            persist: HashMap::new(),
            active: HashSet::new(),
            msgs: HashMap::new(),
            graphs: HashMap::new(),
            attached: None,
            split: HashMap::new(),
        }
    }

    /// The MPI datatype for symbolic type `id`, rebuilt from its recorded constructor chain and
    /// committed. Predefined and unknown types become contiguous bytes of their size, so every
    /// rebuilt type is made of bytes and agrees with the byte etype and buffers of the replay.
    fn dtype(&mut self, types: &Types, id: i64, depth: u32) -> Result<ffi::MPI_Datatype, String> {
        if let Some(t) = self.dtypes.get(&id) {
            return Ok(*t);
        }
        if depth > 64 {
            return Err(format!(
                "datatype {id} nests more than 64 constructors deep"
            ));
        }
        let u8t = self.p.u8;
        let mut nt: ffi::MPI_Datatype = u8t;
        let cint = |v: i64| v.clamp(c_int::MIN as i64, c_int::MAX as i64) as c_int;
        let Some((op, prm)) = types.ctor(id) else {
            let s = types.size(id);
            if s == 1 {
                return Ok(u8t);
            }
            // SAFETY: a predefined type and a valid out-parameter.
            check(
                unsafe { ffi::MPI_Type_contiguous(cint(s), u8t, &mut nt) },
                "MPI_Type_contiguous",
            )?;
            return self.commit(id, nt);
        };
        let prm = prm.to_vec();
        let at = |i: usize| prm.get(i).copied().unwrap_or(0);
        let arr =
            |from: usize, n: usize| -> Vec<c_int> { (0..n).map(|i| cint(at(from + i))).collect() };
        let rc = match op {
            Op::TypeContiguous => {
                let old = self.dtype(types, at(1), depth + 1)?;
                // SAFETY: a committed or predefined old type and a valid out-parameter.
                unsafe { ffi::MPI_Type_contiguous(cint(at(0)), old, &mut nt) }
            }
            Op::TypeVector => {
                let old = self.dtype(types, at(3), depth + 1)?;
                // SAFETY: as above.
                unsafe { ffi::MPI_Type_vector(cint(at(0)), cint(at(1)), cint(at(2)), old, &mut nt) }
            }
            Op::TypeHvector => {
                let old = self.dtype(types, at(3), depth + 1)?;
                // SAFETY: as above.
                unsafe {
                    ffi::MPI_Type_create_hvector(
                        cint(at(0)),
                        cint(at(1)),
                        at(2) as ffi::MPI_Aint,
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeIndexed => {
                let n = at(0).max(0) as usize;
                let old = self.dtype(types, at(1), depth + 1)?;
                let (bl, ds) = (arr(3, n), arr(3 + n, n));
                // SAFETY: two arrays of `n` ints that outlive the call, an old type and a
                // valid out-parameter.
                unsafe { ffi::MPI_Type_indexed(n as c_int, bl.as_ptr(), ds.as_ptr(), old, &mut nt) }
            }
            Op::TypeCreateHindexed => {
                let n = at(0).max(0) as usize;
                let old = self.dtype(types, at(1), depth + 1)?;
                let bl = arr(3, n);
                let ds: Vec<ffi::MPI_Aint> =
                    (0..n).map(|i| at(3 + n + i) as ffi::MPI_Aint).collect();
                // SAFETY: two arrays of `n` entries that outlive the call, an old type and a
                // valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_hindexed(
                        n as c_int,
                        bl.as_ptr(),
                        ds.as_ptr(),
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateIndexedBlock => {
                let n = at(0).max(0) as usize;
                let old = self.dtype(types, at(2), depth + 1)?;
                let ds = arr(4, n);
                // SAFETY: an array of `n` ints that outlives the call, an old type and a valid
                // out-parameter.
                unsafe {
                    ffi::MPI_Type_create_indexed_block(
                        n as c_int,
                        cint(at(1)),
                        ds.as_ptr(),
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateHindexedBlock => {
                let n = at(0).max(0) as usize;
                let old = self.dtype(types, at(2), depth + 1)?;
                let ds: Vec<ffi::MPI_Aint> = (0..n).map(|i| at(4 + i) as ffi::MPI_Aint).collect();
                // SAFETY: as above, with byte displacements.
                unsafe {
                    ffi::MPI_Type_create_hindexed_block(
                        n as c_int,
                        cint(at(1)),
                        ds.as_ptr(),
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeDup => {
                let old = self.dtype(types, at(0), depth + 1)?;
                // SAFETY: an old type and a valid out-parameter.
                unsafe { ffi::MPI_Type_dup(old, &mut nt) }
            }
            Op::TypeCreateSubarray => {
                let nd = at(0).max(0) as usize;
                let old = self.dtype(types, at(2), depth + 1)?;
                // Issue this MPI's own constant for the stored order.
                let order = if rsd::mpi::order_is_fortran(at(1)) {
                    ffi::MPI_ORDER_FORTRAN as c_int
                } else {
                    ffi::MPI_ORDER_C as c_int
                };
                let (sz, sub, st) = (arr(4, nd), arr(4 + nd, nd), arr(4 + 2 * nd, nd));
                // SAFETY: three arrays of `nd` ints that outlive the call, an old type and a
                // valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_subarray(
                        nd as c_int,
                        sz.as_ptr(),
                        sub.as_ptr(),
                        st.as_ptr(),
                        order,
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateDarray => {
                // Refused here as the file table refuses it (MPI would abort the job), then
                // issued with the recorded size and rank, whatever the replay's rank count.
                let d = filetable::darray::Darray::parse(&prm)
                    .map_err(|e| format!("rebuilding datatype {id}: {e}"))?;
                let nd = d.dims.len();
                let old = self.dtype(types, d.oldtype, depth + 1)?;
                let order = if d.fortran {
                    ffi::MPI_ORDER_FORTRAN as c_int
                } else {
                    ffi::MPI_ORDER_C as c_int
                };
                // This MPI's own constants for the stored distributions.
                let fixed = op.params().len();
                let distribs: Vec<c_int> = d
                    .dims
                    .iter()
                    .map(|dim| match dim.distrib {
                        filetable::darray::Distrib::Block(_) => ffi::MPI_DISTRIBUTE_BLOCK as c_int,
                        filetable::darray::Distrib::Cyclic(_) => {
                            ffi::MPI_DISTRIBUTE_CYCLIC as c_int
                        }
                        filetable::darray::Distrib::None => ffi::MPI_DISTRIBUTE_NONE as c_int,
                    })
                    .collect();
                let dargs: Vec<c_int> = (0..nd)
                    .map(|k| match at(fixed + 2 * nd + k) {
                        rsd::mpi::distribute::DFLT_DARG => ffi::MPI_DISTRIBUTE_DFLT_DARG as c_int,
                        v => cint(v),
                    })
                    .collect();
                let (gs, ps) = (arr(fixed, nd), arr(fixed + 3 * nd, nd));
                // SAFETY: four arrays of `nd` ints that outlive the call, an old type and a
                // valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_darray(
                        cint(op.param(&prm, Param::Size)),
                        cint(op.param(&prm, Param::Rank)),
                        nd as c_int,
                        gs.as_ptr(),
                        distribs.as_ptr(),
                        dargs.as_ptr(),
                        ps.as_ptr(),
                        order,
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateStruct => {
                let n = at(0).max(0) as usize;
                let bl = arr(2, n);
                let ds: Vec<ffi::MPI_Aint> =
                    (0..n).map(|i| at(2 + n + i) as ffi::MPI_Aint).collect();
                let mut ts = Vec::with_capacity(n);
                for i in 0..n {
                    ts.push(self.dtype(types, at(2 + 2 * n + i), depth + 1)?);
                }
                // SAFETY: three arrays of `n` entries that outlive the call and a valid
                // out-parameter.
                unsafe {
                    ffi::MPI_Type_create_struct(
                        n as c_int,
                        bl.as_ptr(),
                        ds.as_ptr(),
                        ts.as_ptr(),
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateResized => {
                let old = self.dtype(types, at(0), depth + 1)?;
                // SAFETY: an old type and a valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_resized(
                        old,
                        at(1) as ffi::MPI_Aint,
                        at(2) as ffi::MPI_Aint,
                        &mut nt,
                    )
                }
            }
            _ => return Ok(u8t),
        };
        check(rc, &format!("{} rebuilding datatype {id}", op.name()))?;
        self.commit(id, nt)
    }

    fn commit(&mut self, id: i64, mut nt: ffi::MPI_Datatype) -> Result<ffi::MPI_Datatype, String> {
        // SAFETY: a datatype this runtime just created.
        check(unsafe { ffi::MPI_Type_commit(&mut nt) }, "MPI_Type_commit")?;
        self.dtypes.insert(id, nt);
        Ok(nt)
    }

    /// Every member's `mine` (k values each), at the root only (`root` Some) or at all ranks.
    fn exchange(
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
    fn vcoll(&mut self, e: &FlatEvent, types: &Types, nb: Option<i64>) -> Result<(), String> {
        let op = e.op.blocking_form();
        let p = self.p;
        let c = self.comm(e.p(Param::Comm))?;
        let me = self.comm_rank(c) as usize;
        let size = self.comm_size(c) as usize;
        // Bytes of one side of the call; the tracer records type -1 for MPI_IN_PLACE.
        let side = |count: Param, ty: Param| {
            let t = e.p(ty);
            if t < 0 {
                0
            } else {
                e.p(count).max(0) * types.size(t)
            }
        };
        let displs = |counts: &[c_int]| -> Vec<c_int> {
            let mut acc = 0i64;
            counts
                .iter()
                .map(|n| {
                    let d = acc;
                    acc += *n as i64;
                    len(d)
                })
                .collect()
        };
        let mut req: ffi::MPI_Request = p.request_null;
        let rq: *mut ffi::MPI_Request = &mut req;
        let rc;
        // What a nonblocking call reads or writes until it completes.
        let keep: Vec<Box<dyn Any>>;
        match op {
            Op::Gatherv | Op::Scatterv => {
                // Allgather and Alltoall have no root.
                let root = e.get(Param::Root).unwrap_or(0) as c_int;
                let mine = if op == Op::Gatherv {
                    side(Param::Sendcount, Param::Sendtype)
                } else {
                    side(Param::Recvcount, Param::Recvtype)
                };
                let all = self.exchange(c, &[mine], Some(root))?;
                let counts: Vec<c_int> = if me as c_int == root {
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
                // SAFETY: this rank's buffer of `mine` bytes, the root's buffer of the sum of
                // the counts with matching displacements, byte types, a valid communicator;
                // for the nonblocking forms every buffer and array is kept until completion.
                rc = unsafe {
                    match (op == Op::Gatherv, nb.is_some()) {
                        (true, false) => ffi::MPI_Gatherv(
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
                        (true, true) => ffi::MPI_Igatherv(
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
                        (false, false) => ffi::MPI_Scatterv(
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
                        (false, true) => ffi::MPI_Iscatterv(
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
                keep = vec![
                    Box::new(one),
                    Box::new(many),
                    Box::new(counts),
                    Box::new(ds),
                ];
            }
            Op::Allgatherv => {
                let mine = side(Param::Sendcount, Param::Sendtype);
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
                rc = unsafe {
                    if nb.is_some() {
                        ffi::MPI_Iallgatherv(
                            sp,
                            len(mine),
                            p.u8,
                            rp,
                            counts.as_ptr(),
                            ds.as_ptr(),
                            p.u8,
                            c,
                            rq,
                        )
                    } else {
                        ffi::MPI_Allgatherv(
                            sp,
                            len(mine),
                            p.u8,
                            rp,
                            counts.as_ptr(),
                            ds.as_ptr(),
                            p.u8,
                            c,
                        )
                    }
                };
                keep = vec![
                    Box::new(send),
                    Box::new(recv),
                    Box::new(counts),
                    Box::new(ds),
                ];
            }
            _ => {
                // Alltoallv and Alltoallw: the trace keeps each rank's send and receive
                // totals, not who sent what to whom. A matrix with those row and column sums
                // (north-west corner rule) moves the recorded bytes per rank; the pairing is
                // an approximation. MPI_IN_PLACE (type -1) sends nothing of its own.
                let sb = if e.get(Param::Sendtype).is_some_and(|t| t < 0) {
                    0
                } else {
                    e.p(Param::Sendbytes).max(0)
                };
                let rb = e.p(Param::Recvbytes).max(0);
                let all = self.exchange(c, &[sb, rb], None)?;
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
                let (sd, rd) = (displs(&scounts), displs(&rcounts));
                let send = vec![0u8; scounts.iter().map(|n| *n as usize).sum()];
                let mut recv = vec![0u8; rcounts.iter().map(|n| *n as usize).sum()];
                let (sp, rp) = (
                    send.as_ptr() as *const c_void,
                    recv.as_mut_ptr() as *mut c_void,
                );
                // Alltoallw's per-peer types: bytes everywhere (displacements are in bytes).
                let tys = vec![p.u8; size];
                // SAFETY: buffers of the sums of the counts with matching displacements, byte
                // types, a valid communicator; every pair's counts agree by construction.
                rc = unsafe {
                    match (op == Op::Alltoallw, nb.is_some()) {
                        (false, false) => ffi::MPI_Alltoallv(
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
                        (false, true) => ffi::MPI_Ialltoallv(
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
                        (true, false) => ffi::MPI_Alltoallw(
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
                        (true, true) => ffi::MPI_Ialltoallw(
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
                keep = vec![
                    Box::new(send),
                    Box::new(recv),
                    Box::new(scounts),
                    Box::new(rcounts),
                    Box::new(sd),
                    Box::new(rd),
                    Box::new(tys),
                ];
            }
        }
        check(rc, e.op.name())?;
        if let Some(q) = nb {
            self.keep(q, req, keep);
        }
        Ok(())
    }

    /// The probes. One that found its message waits for it (MPI_Probe, or MPI_Mprobe for
    /// the matched forms): the message had been sent when the traced probe returned, so its
    /// sender does not wait on this rank for it. One that found none is issued as MPI_Iprobe,
    /// which takes nothing (an MPI_Improbe could take a message the trace's later receive
    /// expects).
    fn probe(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        let c = self.comm(e.p(Param::Comm))?;
        let peer = self.peer(c, e.p(Param::Peer));
        let tag = self.tag(e.p(Param::Tag));
        let found = e.get(Param::Flag).is_none_or(|f| f == 1);
        let matched = matches!(op, Op::Mprobe | Op::Improbe);
        // SAFETY (every arm): a valid communicator, MPI's own source and tag values, valid
        // out-parameters, the status ignored.
        unsafe {
            if !found {
                let mut flag: c_int = 0;
                let rc = ffi::MPI_Iprobe(peer, tag, c, &mut flag, self.p.status_ignore);
                return check(rc, "MPI_Iprobe");
            }
            if !matched {
                return check(
                    ffi::MPI_Probe(peer, tag, c, self.p.status_ignore),
                    "MPI_Probe",
                );
            }
            let mut m = self.p.message_no_proc;
            check(
                ffi::MPI_Mprobe(peer, tag, c, &mut m, self.p.status_ignore),
                "MPI_Mprobe",
            )?;
            let id = e.p(Param::Message);
            if id >= 0 {
                self.msgs.insert(id, m);
            }
        }
        Ok(())
    }

    /// The nonblocking collectives: the real call on buffers of the recorded sizes, kept
    /// until the request completes. The vector forms go through [`MpiRuntime::vcoll`].
    fn icoll(&mut self, e: &FlatEvent, types: &Types) -> Result<(), String> {
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

    /// A neighbourhood collective: the real call, on a distributed graph built from the
    /// recorded neighbours (MPI_PROC_NULL ones dropped, with their blocks), with the recorded
    /// bytes per neighbour.
    fn neighborhood(&mut self, e: &FlatEvent) -> Result<(), String> {
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

    /// The creations whose members are listed, and intercommunicators, issued as the real
    /// call: MPI_Comm_create_group with the group of the listed MPI_COMM_WORLD ranks,
    /// MPI_Intercomm_merge, MPI_Intercomm_create with the recorded leaders.
    fn create_listed(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        let p = self.p;
        let c = self.comm(e.p(Param::Comm))?;
        let mut nc = p.self_;
        // SAFETY (every arm): valid communicators and groups, arrays of the lengths given,
        // valid out-parameters; every process the call involves makes it in trace order.
        let rc = unsafe {
            match op {
                Op::CommCreateGroup => {
                    let ranks: Vec<c_int> =
                        op.list(&e.params).iter().map(|r| *r as c_int).collect();
                    let mut wg = std::mem::zeroed();
                    check(ffi::MPI_Comm_group(p.world, &mut wg), "MPI_Comm_group")?;
                    let mut g = std::mem::zeroed();
                    let rc = ffi::MPI_Group_incl(wg, ranks.len() as c_int, ranks.as_ptr(), &mut g);
                    ffi::MPI_Group_free(&mut wg);
                    check(rc, "MPI_Group_incl")?;
                    let rc = ffi::MPI_Comm_create_group(c, g, e.p(Param::Tag) as c_int, &mut nc);
                    ffi::MPI_Group_free(&mut g);
                    rc
                }
                Op::IntercommMerge => {
                    ffi::MPI_Intercomm_merge(c, e.p(Param::High) as c_int, &mut nc)
                }
                _ => {
                    // The peer communicator and remote leader matter at the local leader
                    // only, where the tracer recorded them.
                    let peer = match e.p(Param::PeerComm) {
                        id if id >= 0 => self.comm(id)?,
                        _ => p.world,
                    };
                    ffi::MPI_Intercomm_create(
                        c,
                        e.p(Param::LocalLeader) as c_int,
                        peer,
                        e.p(Param::RemoteLeader).max(0) as c_int,
                        e.p(Param::Tag) as c_int,
                        &mut nc,
                    )
                }
            }
        };
        check(rc, op.name())?;
        let id = e.p(Param::Newcomm);
        if id >= 0 {
            self.comms.insert(id, nc);
        }
        Ok(())
    }

    fn comm(&self, id: i64) -> Result<ffi::MPI_Comm, String> {
        self.comms
            .get(&id)
            .copied()
            .ok_or_else(|| format!("communicator {id} was not created by a replayed call"))
    }

    fn comm_rank(&self, c: ffi::MPI_Comm) -> i64 {
        let mut r = 0;
        // SAFETY: `c` is a valid communicator and `r` a valid out-parameter.
        unsafe { ffi::MPI_Comm_rank(c, &mut r) };
        r as i64
    }

    fn comm_size(&self, c: ffi::MPI_Comm) -> i64 {
        let mut r = 0;
        // SAFETY: as in `comm_rank`.
        unsafe { ffi::MPI_Comm_size(c, &mut r) };
        r as i64
    }

    fn peer(&self, c: ffi::MPI_Comm, rel: i64) -> c_int {
        match rel {
            ANY_SOURCE => self.p.any_source,
            PROC_NULL => self.p.proc_null,
            _ => (self.comm_rank(c) + rel) as c_int,
        }
    }

    fn tag(&self, t: i64) -> c_int {
        if t < 0 { self.p.any_tag } else { t as c_int }
    }

    fn wait(&mut self, id: Option<i64>) -> Result<(), String> {
        let ids: Vec<i64> = match id {
            Some(i) => vec![i],
            None => self.reqs.keys().chain(&self.active).copied().collect(),
        };
        for i in ids {
            if let Some(mut p) = self.reqs.remove(&i) {
                // SAFETY: `p.req` is an active request whose buffer `p._buf` is still alive;
                // the status is ignored.
                let rc = unsafe { ffi::MPI_Wait(&mut p.req, self.p.status_ignore) };
                check(rc, "MPI_Wait")?;
            } else if self.active.remove(&i)
                && let Some(p) = self.persist.get_mut(&i)
            {
                // SAFETY: a started persistent request, its buffer alive in `persist`; it
                // becomes inactive and stays allocated.
                let rc = unsafe { ffi::MPI_Wait(&mut p.req, self.p.status_ignore) };
                check(rc, "MPI_Wait")?;
            }
        }
        Ok(())
    }

    /// Keeps a nonblocking call's request and what it reads or writes until it completes.
    fn keep(&mut self, id: i64, req: ffi::MPI_Request, keep: Vec<Box<dyn Any>>) {
        self.reqs.insert(
            id,
            Pending {
                req,
                _buf: Vec::new(),
                _keep: keep,
                recv: false,
            },
        );
    }

    /// MPI_Testall on the listed requests still active: when it finds them all complete
    /// they are completed here too (a test that found nothing in the trace may find its
    /// request complete in the replay, which the later wait then skips).
    fn test_all(&mut self, ids: &[i64]) -> Result<(), String> {
        let live: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|i| self.reqs.contains_key(i) || self.active.contains(i))
            .collect();
        let mut hs: Vec<ffi::MPI_Request> = live
            .iter()
            .filter_map(|i| self.reqs.get(i).or(self.persist.get(i)).map(|p| p.req))
            .collect();
        let mut flag: c_int = 0;
        // SAFETY: active requests whose buffers are alive, as copies of the handles: MPI
        // changes none when it finds them not all complete; when it does, the completed
        // non-persistent ones are dropped below and the persistent ones keep their handle.
        let rc = unsafe {
            ffi::MPI_Testall(
                hs.len() as c_int,
                hs.as_mut_ptr(),
                &mut flag,
                self.p.statuses_ignore,
            )
        };
        check(rc, "MPI_Testall")?;
        if flag != 0 {
            for i in live {
                self.reqs.remove(&i);
                self.active.remove(&i);
            }
        }
        Ok(())
    }

    /// Detaches the buffer MPI_Buffer_attach attached, if any.
    fn detach(&mut self) -> Result<(), String> {
        if self.attached.take().is_some() {
            let mut at: *mut c_void = std::ptr::null_mut();
            let mut n: c_int = 0;
            // SAFETY: a buffer is attached; MPI writes its address and size to valid
            // out-parameters (the address parameter is a pointer to a pointer).
            let rc = unsafe {
                ffi::MPI_Buffer_detach(&mut at as *mut *mut c_void as *mut c_void, &mut n)
            };
            check(rc, "MPI_Buffer_detach")?;
        }
        Ok(())
    }

    /// Frees what the replay opened and MPI still holds, before `MPI_Finalize`.
    pub fn finish(&mut self) {
        let _ = self.wait(None);
        let _ = self.detach();
        for (_, mut r) in self.persist.drain() {
            // SAFETY: inactive persistent requests (all were completed above), freed once.
            unsafe { ffi::MPI_Request_free(&mut r.req) };
        }
        for (_, mut g) in self.graphs.drain() {
            // SAFETY: communicators this runtime created, freed once.
            unsafe { ffi::MPI_Comm_free(&mut g) };
        }
        for (_, mut f) in self.files.drain() {
            // SAFETY: `f.fh` is a file this runtime opened and did not close.
            unsafe { ffi::MPI_File_close(&mut f.fh) };
        }
        for (_, mut t) in self.dtypes.drain() {
            if t != self.p.u8 {
                // SAFETY: a datatype this runtime created and committed, freed once.
                unsafe { ffi::MPI_Type_free(&mut t) };
            }
        }
    }
}

type RwFn = unsafe extern "C" fn(
    ffi::MPI_File,
    *mut c_void,
    c_int,
    ffi::MPI_Datatype,
    *mut ffi::MPI_Status,
) -> c_int;
type RwAtFn = unsafe extern "C" fn(
    ffi::MPI_File,
    ffi::MPI_Offset,
    *mut c_void,
    c_int,
    ffi::MPI_Datatype,
    *mut ffi::MPI_Status,
) -> c_int;

/// The MPI library shares file sizes and shared file pointers between ranks itself: the file
/// table's own knowledge is never asked for more than the etype of a view.
impl FileEnv for MpiRuntime {}

impl MpiRuntime {
    /// The begin of a split collective, issued as recorded with a buffer of the recorded bytes
    /// (the pattern's for a write) that lives until its end; the trace's calls in between run
    /// while the transfer is under way, as they did.
    fn split_begin(
        &mut self,
        e: &FlatEvent,
        id: i64,
        fh: ffi::MPI_File,
        es: i64,
        bytes: i64,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        let op = e.op;
        if self.split.contains_key(&id) {
            return Err(format!(
                "{} on file handle {id} before the split collective it began last ended",
                op.name()
            ));
        }
        let n = len(bytes);
        let mut buf = if op.dir() == Dir::Write {
            data.get(n as usize).to_vec()
        } else {
            vec![0; n as usize]
        };
        let (ptr, cptr) = (
            buf.as_mut_ptr() as *mut c_void,
            buf.as_ptr() as *const c_void,
        );
        let off = e.get(Param::Offset).unwrap_or(0) * es;
        let u8t = self.p.u8;
        // SAFETY (every arm): an open file handle, a buffer of `n` bytes kept in `self.split`
        // until the end call, and the byte type.
        let rc = unsafe {
            match op {
                Op::FileReadAllBegin => ffi::MPI_File_read_all_begin(fh, ptr, n, u8t),
                Op::FileWriteAllBegin => ffi::MPI_File_write_all_begin(fh, cptr, n, u8t),
                Op::FileReadAtAllBegin => ffi::MPI_File_read_at_all_begin(fh, off, ptr, n, u8t),
                Op::FileWriteAtAllBegin => ffi::MPI_File_write_at_all_begin(fh, off, cptr, n, u8t),
                Op::FileReadOrderedBegin => ffi::MPI_File_read_ordered_begin(fh, ptr, n, u8t),
                Op::FileWriteOrderedBegin => ffi::MPI_File_write_ordered_begin(fh, cptr, n, u8t),
                _ => return Ok(0),
            }
        };
        check(rc, op.name())?;
        // Moving the vector into the map keeps its heap buffer where MPI was given it.
        self.split.insert(id, buf);
        Ok(n as u64)
    }

    /// The end of a split collective: completes the transfer its begin started on `fh` and
    /// frees the begin's buffer.
    fn split_end(&mut self, op: Op, id: i64, fh: ffi::MPI_File) -> Result<u64, String> {
        let Some(mut buf) = self.split.remove(&id) else {
            return Err(format!(
                "{} on file handle {id} without its begin (not recorded or not replayed)",
                op.name()
            ));
        };
        let (ptr, cptr) = (
            buf.as_mut_ptr() as *mut c_void,
            buf.as_ptr() as *const c_void,
        );
        let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
        let st = status.as_mut_ptr();
        // SAFETY (every arm): an open file handle with a split collective under way, the
        // buffer its begin was given, and a status slot.
        let rc = unsafe {
            match op {
                Op::FileReadAllEnd => ffi::MPI_File_read_all_end(fh, ptr, st),
                Op::FileWriteAllEnd => ffi::MPI_File_write_all_end(fh, cptr, st),
                Op::FileReadAtAllEnd => ffi::MPI_File_read_at_all_end(fh, ptr, st),
                Op::FileWriteAtAllEnd => ffi::MPI_File_write_at_all_end(fh, cptr, st),
                Op::FileReadOrderedEnd => ffi::MPI_File_read_ordered_end(fh, ptr, st),
                Op::FileWriteOrderedEnd => ffi::MPI_File_write_ordered_end(fh, cptr, st),
                _ => return Ok(0),
            }
        };
        drop(buf);
        check(rc, op.name())?;
        Ok(0)
    }
}

impl Runtime for MpiRuntime {
    fn mpiio(
        &mut self,
        e: &FlatEvent,
        path: Option<&Mapped>,
        files: &FileTable,
        _fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        let op = e.op;
        let types = files.types();
        // MPI_File_delete names no handle.
        let id = e.get(Param::Fh).unwrap_or(0);
        let p = self.p;
        let cpath = |path: Option<&Mapped>| -> Result<CString, String> {
            CString::new(
                path.ok_or("no path")?
                    .kernel_path()
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .map_err(|_| "path holds a NUL byte".to_string())
        };
        match op {
            // The traced open failed (IOR probes for its file this way): nothing to replay,
            // as for a failed POSIX open and under --threads. A failed collective open fails on
            // every rank of its communicator, so all of them skip it alike.
            Op::FileOpen if id < 0 => return Ok(0),
            Op::FileOpen => {
                let c = self.comm(e.p(Param::Comm)).unwrap_or(p.self_);
                let mapped = path.ok_or("no path")?;
                let am = e.p(Param::Amode);
                // The file is opened here first, confined, and the library opens that open
                // file (`Mapped::pin`): it never resolves the last component by name, where a
                // symlink swapped in would be followed. The file exists by then, so
                // MPI_MODE_EXCL (every rank would race to create it) is not passed on: the
                // traced open succeeded, so the file did not exist then either.
                let pinned = mapped
                    .pin(am & amode::CREATE != 0, am & amode::RDONLY != 0)
                    .map_err(|err| {
                        format!(
                            "{}: {err}; refusing to touch it (a symbolic link or special file there)",
                            mapped.path().display()
                        )
                    })?;
                let name = CString::new(pinned.kernel_path().as_os_str().as_encoded_bytes())
                    .map_err(|_| "path holds a NUL byte".to_string())?;
                let passed = am & !(amode::EXCL | amode::DELETE_ON_CLOSE);
                let mut fh: ffi::MPI_File = std::ptr::null_mut();
                // SAFETY: valid communicator, NUL-terminated path, predefined info, and a valid
                // out-parameter for the handle.
                let rc = unsafe {
                    ffi::MPI_File_open(c, name.as_ptr(), passed as c_int, p.info_null, &mut fh)
                };
                check(rc, "MPI_File_open")?;
                self.files.insert(
                    id,
                    MFile {
                        fh,
                        _pinned: pinned,
                        delete_on_close: (am & amode::DELETE_ON_CLOSE != 0).then(|| mapped.clone()),
                    },
                );
                return Ok(0);
            }
            Op::FileDelete => {
                let name = cpath(path)?;
                // SAFETY: NUL-terminated path and predefined info; a missing file is an error
                // code (files default to MPI_ERRORS_RETURN), which is the file system's answer.
                unsafe { ffi::MPI_File_delete(name.as_ptr(), p.info_null) };
                return Ok(0);
            }
            _ => {}
        }
        let f = self.files.get_mut(&id).ok_or_else(|| {
            format!("file handle {id} is not open (its MPI_File_open was not replayed)")
        })?;
        // Views are set with a byte etype (the filetype rebuilt is made of bytes), so offsets
        // and seeks in the trace's etypes convert to bytes with the recorded view's etype.
        let es = files.mpi_file(id).map_or(1, |m| m.view.etype_size);
        // Data calls carry `bytes`; the others (close, sync, ...) move none.
        let bytes = e.get(Param::Bytes).unwrap_or(0).max(0);
        let fh = f.fh;
        match op {
            Op::FileClose => {
                // A split collective the trace never ended dies with its file (the id may be
                // opened again), its buffer only after the close, which may still touch it.
                let pending = self.split.remove(&id);
                let mut f = self.files.remove(&id).expect("present");
                // SAFETY: an open file handle, closed once.
                let rc = unsafe { ffi::MPI_File_close(&mut f.fh) };
                drop(pending);
                check(rc, "MPI_File_close")?;
                if let Some(m) = f.delete_on_close {
                    // Every rank of a collective open gets here; one removes the file.
                    let _ = m.unlink();
                }
                return Ok(0);
            }
            Op::FileSetSize => {
                // SAFETY: an open file handle.
                check(
                    unsafe { ffi::MPI_File_set_size(fh, e.p(Param::Size)) },
                    "MPI_File_set_size",
                )?;
                return Ok(0);
            }
            Op::FileGetSize => {
                let mut s = 0;
                // SAFETY: an open file handle and a valid out-parameter.
                check(
                    unsafe { ffi::MPI_File_get_size(fh, &mut s) },
                    "MPI_File_get_size",
                )?;
                return Ok(0);
            }
            Op::FileSetView => {
                let ft = e.p(Param::Filetype);
                // A filetype built on a type the trace never built is replaced by bytes from
                // the displacement (as an unknown filetype is): the accesses stay as large as
                // recorded and near where they were, collectives still meet on every rank, and
                // the view is reported as not replayed.
                let mut unbuilt = replay::types::unbuilt_view(types, ft);
                let filetype = if unbuilt.is_some() {
                    p.u8
                } else if types.ctor(ft).is_some() {
                    // A type the trace describes but MPI would refuse (a darray whose grid is
                    // not its size, ...) is refused here, the view taken as bytes the same way,
                    // so that the collective call still meets on every rank.
                    match self.dtype(types, ft, 0) {
                        Ok(t) => t,
                        Err(why) => {
                            unbuilt = Some(format!("MPI_File_set_view: filetype {ft}: {why}"));
                            p.u8
                        }
                    }
                } else {
                    // A predefined filetype is contiguous: a byte view is the same.
                    p.u8
                };
                let native = c"native";
                // SAFETY: an open file handle, predefined byte types and info, and a
                // NUL-terminated data representation name.
                let rc = unsafe {
                    ffi::MPI_File_set_view(
                        fh,
                        e.p(Param::Disp),
                        p.u8,
                        filetype,
                        native.as_ptr(),
                        p.info_null,
                    )
                };
                check(rc, "MPI_File_set_view")?;
                return unbuilt.map_or(Ok(0), Err);
            }
            Op::FileSeek => {
                // SAFETY: an open file handle; whence is the recorded MPI_SEEK_* value.
                let rc = unsafe {
                    ffi::MPI_File_seek(fh, e.p(Param::Offset) * es, e.p(Param::Whence) as c_int)
                };
                check(rc, "MPI_File_seek")?;
                return Ok(0);
            }
            Op::FileSync => {
                // SAFETY: an open file handle.
                check(unsafe { ffi::MPI_File_sync(fh) }, "MPI_File_sync")?;
                return Ok(0);
            }
            Op::FileSeekShared => {
                // SAFETY: an open file handle; whence is the recorded MPI_SEEK_* value (the
                // call is collective: every rank recorded the same place).
                let rc = unsafe {
                    ffi::MPI_File_seek_shared(
                        fh,
                        e.p(Param::Offset) * es,
                        e.p(Param::Whence) as c_int,
                    )
                };
                check(rc, "MPI_File_seek_shared")?;
                return Ok(0);
            }
            _ if op.split_collective().is_some() => {
                return self.split_begin(e, id, fh, es, bytes, data);
            }
            _ if op.is_split_end() => return self.split_end(op, id, fh),
            _ => {}
        }
        let n = len(bytes);
        let write = op.dir() == Dir::Write;
        let buf: *mut c_void = if write {
            data.get(n as usize).as_ptr() as *mut c_void
        } else {
            self.rbuf.resize(n as usize, 0);
            self.rbuf.as_mut_ptr() as *mut c_void
        };
        // Only the explicit-offset calls have one; the others use the file pointer.
        let off = e.get(Param::Offset).unwrap_or(0) * es;
        let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
        let st = status.as_mut_ptr();
        // MPI's write functions take `const void*`; the pointer is cast to share one signature
        // with the reads, and MPI never writes through it.
        let plain: Option<RwFn> = match op {
            Op::FileRead => Some(ffi::MPI_File_read as RwFn),
            Op::FileReadAll => Some(ffi::MPI_File_read_all as RwFn),
            Op::FileReadShared => Some(ffi::MPI_File_read_shared as RwFn),
            Op::FileReadOrdered => Some(ffi::MPI_File_read_ordered as RwFn),
            _ => None,
        };
        let rc = if let Some(fun) = plain {
            // SAFETY: an open file, a buffer of `n` bytes, the byte type and a status slot.
            unsafe { fun(fh, buf, n, p.u8, st) }
        } else if matches!(op, Op::FileReadAt | Op::FileReadAtAll) {
            let fun: RwAtFn = if op == Op::FileReadAt {
                ffi::MPI_File_read_at
            } else {
                ffi::MPI_File_read_at_all
            };
            // SAFETY: as above, with the recorded offset in bytes.
            unsafe { fun(fh, off, buf, n, p.u8, st) }
        } else {
            let cbuf = buf as *const c_void;
            // SAFETY (every arm): an open file handle, a pattern buffer of `n` bytes that
            // outlives the call (nonblocking calls are waited for at once, below), the byte
            // type and a status or request slot.
            unsafe {
                match op {
                    Op::FileWrite => ffi::MPI_File_write(fh, cbuf, n, p.u8, st),
                    Op::FileWriteAll => ffi::MPI_File_write_all(fh, cbuf, n, p.u8, st),
                    Op::FileWriteShared => ffi::MPI_File_write_shared(fh, cbuf, n, p.u8, st),
                    Op::FileWriteOrdered => ffi::MPI_File_write_ordered(fh, cbuf, n, p.u8, st),
                    Op::FileWriteAt => ffi::MPI_File_write_at(fh, off, cbuf, n, p.u8, st),
                    Op::FileWriteAtAll => ffi::MPI_File_write_at_all(fh, off, cbuf, n, p.u8, st),
                    _ => {
                        // Nonblocking: issued, then completed at once so the buffer stays
                        // valid; the trace's Wait then finds nothing pending.
                        let mut req: ffi::MPI_Request = std::mem::zeroed();
                        let rc = match op {
                            Op::FileIread => ffi::MPI_File_iread(fh, buf, n, p.u8, &mut req),
                            Op::FileIreadAt => {
                                ffi::MPI_File_iread_at(fh, off, buf, n, p.u8, &mut req)
                            }
                            Op::FileIreadAll => ffi::MPI_File_iread_all(fh, buf, n, p.u8, &mut req),
                            Op::FileIreadShared => {
                                ffi::MPI_File_iread_shared(fh, buf, n, p.u8, &mut req)
                            }
                            Op::FileIwrite => ffi::MPI_File_iwrite(fh, cbuf, n, p.u8, &mut req),
                            Op::FileIwriteAt => {
                                ffi::MPI_File_iwrite_at(fh, off, cbuf, n, p.u8, &mut req)
                            }
                            Op::FileIwriteAll => {
                                ffi::MPI_File_iwrite_all(fh, cbuf, n, p.u8, &mut req)
                            }
                            Op::FileIwriteShared => {
                                ffi::MPI_File_iwrite_shared(fh, cbuf, n, p.u8, &mut req)
                            }
                            _ => return Ok(0),
                        };
                        if rc == 0 {
                            ffi::MPI_Wait(&mut req, st)
                        } else {
                            rc
                        }
                    }
                }
            }
        };
        check(rc, op.name())?;
        let mut got: c_int = n;
        if !write {
            // SAFETY: the call succeeded, so MPI filled the status.
            unsafe { ffi::MPI_Get_count(st, p.u8, &mut got) };
        }
        Ok(got.max(0) as u64)
    }

    fn mpi(&mut self, e: &FlatEvent, types: &Types, bookkeeping_only: bool) -> Result<(), String> {
        let op = e.op;
        let p = self.p;
        match op {
            _ if matches!(op.creation(), Some(Creation::Members | Creation::Intercomm)) => {
                return self.create_listed(e);
            }
            // The tracer records MPI_Comm_create, MPI_Comm_split_type and the topology
            // creations as the split that builds the same communicator, so they replay as
            // MPI_Comm_split.
            _ if op.creates_comm() => {
                let c = self.comm(e.p(Param::Comm))?;
                let mut nc = p.self_;
                let rc = if op == Op::CommDup {
                    // SAFETY: a valid communicator and out-parameter.
                    unsafe { ffi::MPI_Comm_dup(c, &mut nc) }
                } else {
                    let color = e.p(Param::Color);
                    let color = if color < 0 {
                        p.undefined
                    } else {
                        color as c_int
                    };
                    // SAFETY: as above; every member of `c` makes this call in trace order.
                    unsafe { ffi::MPI_Comm_split(c, color, e.p(Param::Key) as c_int, &mut nc) }
                };
                check(rc, op.name())?;
                let id = e.p(Param::Newcomm);
                if id >= 0 {
                    self.comms.insert(id, nc);
                }
                return Ok(());
            }
            _ if bookkeeping_only => return Ok(()),
            _ => {}
        }
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
            _ if op.is_neighborhood() => self.neighborhood(e),
            _ if op.is_nonblocking_collective() => self.icoll(e, types),
            _ if op.persistent().is_some() => {
                let c = self.comm(e.p(Param::Comm))?;
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                let peer = self.peer(c, e.p(Param::Peer));
                let tag = self.tag(e.p(Param::Tag));
                let mut buf = vec![0u8; n as usize];
                let ptr = buf.as_mut_ptr() as *mut c_void;
                let mut req = p.request_null;
                // SAFETY: a buffer of `n` bytes kept in `persist` until the request is freed,
                // the byte type, a valid communicator. Ready and buffered persistent sends are
                // made standard, as their single-shot forms are.
                let rc = unsafe {
                    match op {
                        Op::RecvInit => ffi::MPI_Recv_init(ptr, n, p.u8, peer, tag, c, &mut req),
                        Op::SsendInit => ffi::MPI_Ssend_init(ptr, n, p.u8, peer, tag, c, &mut req),
                        _ => ffi::MPI_Send_init(ptr, n, p.u8, peer, tag, c, &mut req),
                    }
                };
                check(rc, op.name())?;
                self.persist.insert(
                    e.p(Param::Request),
                    Pending::with_buf(req, buf, op == Op::RecvInit),
                );
                Ok(())
            }
            Op::Start | Op::Startall => {
                let ids: Vec<i64> = if op == Op::Start {
                    vec![e.p(Param::Request)]
                } else {
                    op.list(&e.params).to_vec()
                };
                let mut hs = Vec::with_capacity(ids.len());
                for i in &ids {
                    let q = self.persist.get(i).ok_or_else(|| {
                        format!("request {i} was not made by a replayed persistent init")
                    })?;
                    hs.push(q.req);
                }
                // SAFETY: inactive persistent requests whose buffers live in `persist`; MPI
                // does not change their handles when it starts them.
                let rc = unsafe {
                    if op == Op::Start {
                        ffi::MPI_Start(&mut hs[0])
                    } else {
                        ffi::MPI_Startall(hs.len() as c_int, hs.as_mut_ptr())
                    }
                };
                check(rc, op.name())?;
                self.active.extend(ids);
                Ok(())
            }
            Op::Probe | Op::Iprobe | Op::Mprobe | Op::Improbe => self.probe(e),
            Op::Mrecv | Op::Imrecv => {
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                let id = e.p(Param::Message);
                let mut m = if id < 0 {
                    p.message_no_proc
                } else {
                    self.msgs.remove(&id).ok_or_else(|| {
                        format!("message {id} was not matched by a replayed probe")
                    })?
                };
                let mut buf = vec![0u8; n as usize];
                let ptr = buf.as_mut_ptr() as *mut c_void;
                // SAFETY: a matched message, a buffer of `n` bytes (kept until completion for
                // the nonblocking form), the byte type.
                unsafe {
                    if op == Op::Mrecv {
                        let rc = ffi::MPI_Mrecv(ptr, n, p.u8, &mut m, p.status_ignore);
                        check(rc, "MPI_Mrecv")
                    } else {
                        let mut req = p.request_null;
                        check(
                            ffi::MPI_Imrecv(ptr, n, p.u8, &mut m, &mut req),
                            "MPI_Imrecv",
                        )?;
                        self.reqs
                            .insert(e.p(Param::Request), Pending::with_buf(req, buf, false));
                        Ok(())
                    }
                }
            }
            _ if op.p2p().is_some() => {
                let c = self.comm(e.p(Param::Comm))?;
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                let peer = self.peer(c, e.p(Param::Peer));
                let tag = self.tag(e.p(Param::Tag));
                let mut buf = vec![0u8; n as usize];
                let ptr = buf.as_mut_ptr() as *mut c_void;
                // SAFETY (every arm): a buffer of `n` bytes kept alive until completion (held
                // in `reqs` for the nonblocking calls), the byte type, a valid communicator.
                // A ready send is issued as a standard one (the replay cannot promise the
                // receive is already posted, which MPI_Rsend requires), and so is a buffered one
                // (no buffer is attached); synchronous sends stay synchronous.
                unsafe {
                    match op {
                        Op::Send | Op::Rsend | Op::Bsend => {
                            check(ffi::MPI_Send(ptr, n, p.u8, peer, tag, c), op.name())
                        }
                        Op::Ssend => check(ffi::MPI_Ssend(ptr, n, p.u8, peer, tag, c), op.name()),
                        Op::Recv => check(
                            ffi::MPI_Recv(ptr, n, p.u8, peer, tag, c, p.status_ignore),
                            "MPI_Recv",
                        ),
                        _ => {
                            let mut req: ffi::MPI_Request = std::mem::zeroed();
                            let rc = match op {
                                Op::Irecv => ffi::MPI_Irecv(ptr, n, p.u8, peer, tag, c, &mut req),
                                Op::Issend => ffi::MPI_Issend(ptr, n, p.u8, peer, tag, c, &mut req),
                                _ => ffi::MPI_Isend(ptr, n, p.u8, peer, tag, c, &mut req),
                            };
                            check(rc, op.name())?;
                            self.reqs.insert(
                                e.p(Param::Request),
                                Pending::with_buf(req, buf, op == Op::Irecv),
                            );
                            Ok(())
                        }
                    }
                }
            }
            Op::SendrecvReplace => {
                let c = self.comm(e.p(Param::Comm))?;
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                self.rbuf.resize(n as usize, 0);
                let (dest, src) = (
                    self.peer(c, e.p(Param::Dest)),
                    self.peer(c, e.p(Param::Source)),
                );
                let (st, rt) = (self.tag(e.p(Param::Sendtag)), self.tag(e.p(Param::Recvtag)));
                // SAFETY: a buffer of `n` bytes, the byte type, a valid communicator.
                let rc = unsafe {
                    ffi::MPI_Sendrecv_replace(
                        self.rbuf.as_mut_ptr() as *mut c_void,
                        n,
                        p.u8,
                        dest,
                        st,
                        src,
                        rt,
                        c,
                        p.status_ignore,
                    )
                };
                check(rc, "MPI_Sendrecv_replace")
            }
            Op::Sendrecv => {
                let c = self.comm(e.p(Param::Comm))?;
                let sn = len(e.p(Param::Sendcount) * tsize(Param::Sendtype));
                let rn = len(e.p(Param::Recvcount) * tsize(Param::Recvtype));
                let send = vec![0u8; sn as usize];
                self.rbuf.resize(rn as usize, 0);
                let (dest, src) = (
                    self.peer(c, e.p(Param::Dest)),
                    self.peer(c, e.p(Param::Source)),
                );
                let (st, rt) = (self.tag(e.p(Param::Sendtag)), self.tag(e.p(Param::Recvtag)));
                // SAFETY: buffers of the given sizes, byte types, a valid communicator.
                let rc = unsafe {
                    ffi::MPI_Sendrecv(
                        send.as_ptr() as *const c_void,
                        sn,
                        p.u8,
                        dest,
                        st,
                        self.rbuf.as_mut_ptr() as *mut c_void,
                        rn,
                        p.u8,
                        src,
                        rt,
                        c,
                        p.status_ignore,
                    )
                };
                check(rc, "MPI_Sendrecv")
            }
            Op::Wait => self.wait(Some(e.p(Param::Request))),
            // The request that completed, as recorded (-1: none was active).
            Op::Waitany => match e.p(Param::Request) {
                -1 => Ok(()),
                q => self.wait(Some(q)),
            },
            // Completed rather than freed: MPI_Request_free would leave the operation reading
            // or writing a buffer the replay is about to drop. Its message is matched (checked
            // before the replay), so the wait ends. A persistent request is completed if
            // started, then freed for real (inactive, nothing reads its buffer any more).
            Op::RequestFree => {
                let q = e.p(Param::Request);
                self.wait(Some(q))?;
                if let Some(mut r) = self.persist.remove(&q) {
                    // SAFETY: an inactive persistent request, freed once.
                    check(unsafe { ffi::MPI_Request_free(&mut r.req) }, op.name())?;
                }
                Ok(())
            }
            // A test that found its requests complete completes them; one that did not is
            // issued as MPI_Test(all) on the same requests.
            Op::Test => {
                let q = e.p(Param::Request);
                match e.p(Param::Flag) {
                    1 => self.wait(Some(q)),
                    _ => self.test_all(&[q]),
                }
            }
            Op::Testany => match (e.p(Param::Flag), e.p(Param::Request)) {
                (1, q) if q >= 0 => self.wait(Some(q)),
                // Which requests it tested is not recorded: nothing to issue.
                _ => Ok(()),
            },
            Op::Testall => match e.p(Param::Flag) {
                1 => op
                    .list(&e.params)
                    .iter()
                    .try_for_each(|q| self.wait(Some(*q))),
                _ => self.test_all(op.list(&e.params)),
            },
            // The requests that completed, as recorded.
            Op::Waitsome | Op::Testsome => op
                .list(&e.params)
                .iter()
                .try_for_each(|q| self.wait(Some(*q))),
            // Receives only: the matching check counts a cancelled send as sent (whether the
            // traced cancel succeeded is not recorded, and MPI rarely cancels a send), so the
            // replay lets it go; a cancelled receive was taken back by the check.
            Op::Cancel => {
                let q = e.p(Param::Request);
                let r = match self.reqs.get_mut(&q) {
                    Some(r) => Some(r),
                    None if self.active.contains(&q) => self.persist.get_mut(&q),
                    None => None,
                };
                match r {
                    // SAFETY: an active receive; its completion call follows in the trace.
                    Some(r) if r.recv => {
                        check(unsafe { ffi::MPI_Cancel(&mut r.req) }, "MPI_Cancel")
                    }
                    _ => Ok(()),
                }
            }
            Op::BufferAttach => {
                self.detach()?;
                let mut b = vec![0u8; e.p(Param::Size).max(0) as usize];
                // SAFETY: a buffer kept in `attached` until it is detached.
                let rc = unsafe {
                    ffi::MPI_Buffer_attach(b.as_mut_ptr() as *mut c_void, len(b.len() as i64))
                };
                check(rc, "MPI_Buffer_attach")?;
                self.attached = Some(b);
                Ok(())
            }
            Op::BufferDetach => self.detach(),
            Op::CommFree => {
                let id = e.p(Param::Comm);
                if let Some(mut g) = self.graphs.remove(&id) {
                    // SAFETY: the graph communicator this runtime built on `id`, freed once.
                    check(unsafe { ffi::MPI_Comm_free(&mut g) }, "MPI_Comm_free")?;
                }
                if id != rsd::mpi::COMM_WORLD
                    && id != rsd::mpi::COMM_SELF
                    && let Some(mut c) = self.comms.remove(&id)
                {
                    // SAFETY: a communicator this runtime created, freed once.
                    check(unsafe { ffi::MPI_Comm_free(&mut c) }, "MPI_Comm_free")?;
                }
                Ok(())
            }
            // The local queries, asked again of the replayed communicator: they cost what the
            // program's did and move nothing.
            Op::CommRank => {
                let c = self.comm(e.p(Param::Comm))?;
                let mut r = 0;
                // SAFETY: a communicator this runtime holds and a valid out-parameter.
                check(unsafe { ffi::MPI_Comm_rank(c, &mut r) }, "MPI_Comm_rank")
            }
            Op::CommSize => {
                let c = self.comm(e.p(Param::Comm))?;
                let mut n = 0;
                // SAFETY: as for MPI_Comm_rank.
                check(unsafe { ffi::MPI_Comm_size(c, &mut n) }, "MPI_Comm_size")
            }
            // No call: the topology communicators are replayed as the splits they are recorded
            // as, without a topology to ask (a Cartesian query there is an MPI error), and
            // their neighbourhood collectives bring their own graph. The queries are local, so
            // nothing any other rank waits for is lost.
            Op::CartGet | Op::CartRank | Op::CartShift => Ok(()),
            // Asked again with the entries as given (a failed call recorded none: nothing to
            // ask). The grid is the replayed library's, which the program's traced calls
            // already carry in their values.
            Op::DimsCreate => {
                let nd = e.p(Param::Ndims);
                let given = Op::DimsCreate
                    .array_values(&e.params, "given")
                    .unwrap_or_default();
                if nd <= 0 || given.len() != nd as usize {
                    return Ok(());
                }
                let mut dims: Vec<c_int> = given.iter().map(|&d| d as c_int).collect();
                // SAFETY: `dims` holds `ndims` entries.
                let rc = unsafe {
                    ffi::MPI_Dims_create(e.p(Param::Size) as c_int, nd as c_int, dims.as_mut_ptr())
                };
                check(rc, "MPI_Dims_create")
            }
            Op::GetProcessorName => {
                // Larger than either library's MPI_MAX_PROCESSOR_NAME (256, 128).
                let mut name = vec![0 as std::os::raw::c_char; 1024];
                let mut len = 0;
                // SAFETY: a buffer longer than MPI_MAX_PROCESSOR_NAME, a valid out-parameter.
                let rc = unsafe { ffi::MPI_Get_processor_name(name.as_mut_ptr(), &mut len) };
                check(rc, "MPI_Get_processor_name")
            }
            Op::Finalized => {
                let mut flag = 0;
                // SAFETY: a valid out-parameter.
                check(unsafe { ffi::MPI_Finalized(&mut flag) }, "MPI_Finalized")
            }
            // The predefined handlers are set as traced (an error on the communicator then
            // returns to the replay, which reports it, or aborts it, as it did the program);
            // a program's own handler is a function of the program, which the replay does not
            // have, and MPI_ERRORS_ABORT is MPI-4's (the replay's bindings lack it): those
            // leave the communicator's handler as it was.
            Op::CommSetErrhandler => {
                use rsd::mpi::errhandler::{ERRORS_ARE_FATAL, ERRORS_RETURN};
                let c = self.comm(e.p(Param::Comm))?;
                // SAFETY: constant globals of the rsmpi shim, only read.
                let h = match e.p(Param::Errhandler) {
                    ERRORS_ARE_FATAL => unsafe { ffi::RSMPI_ERRORS_ARE_FATAL },
                    ERRORS_RETURN => unsafe { ffi::RSMPI_ERRORS_RETURN },
                    _ => return Ok(()),
                };
                // SAFETY: a communicator this runtime holds and a predefined handler.
                check(
                    unsafe { ffi::MPI_Comm_set_errhandler(c, h) },
                    "MPI_Comm_set_errhandler",
                )
            }
            // The trace keeps only a Waitall's count: it completes every pending request.
            Op::Waitall => self.wait(None),
            _ => Ok(()),
        }
    }
}
