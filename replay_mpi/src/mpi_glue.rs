//! The MPI runtime of `iotrex-replay`: MPI-IO and MPI calls issued through rsmpi's raw
//! bindings (`mpi::ffi`), the only `unsafe` code of the replay.
//!
//! Data moves as `MPI_UINT8_T` counts of the recorded byte totals. A recorded file view is
//! re-issued at the recorded displacement with a byte etype and the filetype rebuilt from its
//! recorded constructor chain (vector, hvector, indexed and its h- and _block forms, subarray,
//! struct, resized, dup: each issued as the same MPI constructor, predefined leaves as contiguous bytes of their size), offsets
//! converted from the recorded etype to bytes; so noncontiguous access touches the same file
//! regions as the application's. Vector collectives exchange each rank's recorded byte count
//! first (the trace keeps each rank's own side, not the root's per-rank arrays), then issue
//! the real call with those counts.

#![allow(unsafe_code)]

use filetable::{Effect, FileEnv, FileTable};
use mpi::ffi;
use replay::engine::{Pattern, Runtime};
use replay::types::Types;
use rsd::op::{Dir, Op, Param};
use rsd::trace::FlatEvent;
use std::collections::HashMap;
use std::ffi::CString;
use std::os::raw::{c_int, c_void};
use std::path::Path;

use rsd::mpi::{ANY_SOURCE, PROC_NULL};

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
}

/// A pending nonblocking send or receive and its buffer, kept alive until completion.
struct Pending {
    req: ffi::MPI_Request,
    _buf: Vec<u8>,
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

    /// A vector collective with the recorded per-rank byte counts.
    fn vcoll(&mut self, e: &FlatEvent, types: &Types) -> Result<(), String> {
        let op = e.op;
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
                let one = vec![0u8; mine as usize];
                let mut many = vec![0u8; total];
                let (op1, opn) = (
                    one.as_ptr() as *mut c_void,
                    many.as_mut_ptr() as *mut c_void,
                );
                // SAFETY: this rank's buffer of `mine` bytes, the root's buffer of the sum of
                // the counts with matching displacements, byte types, a valid communicator.
                let rc = unsafe {
                    if op == Op::Gatherv {
                        ffi::MPI_Gatherv(
                            op1,
                            len(mine),
                            p.u8,
                            opn,
                            counts.as_ptr(),
                            ds.as_ptr(),
                            p.u8,
                            root,
                            c,
                        )
                    } else {
                        ffi::MPI_Scatterv(
                            opn,
                            counts.as_ptr(),
                            ds.as_ptr(),
                            p.u8,
                            op1,
                            len(mine),
                            p.u8,
                            root,
                            c,
                        )
                    }
                };
                check(rc, op.name())
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
                // SAFETY: as for Gatherv, at every rank.
                let rc = unsafe {
                    ffi::MPI_Allgatherv(
                        send.as_ptr() as *const c_void,
                        len(mine),
                        p.u8,
                        recv.as_mut_ptr() as *mut c_void,
                        counts.as_ptr(),
                        ds.as_ptr(),
                        p.u8,
                        c,
                    )
                };
                check(rc, "MPI_Allgatherv")
            }
            _ => {
                // Alltoallv: the trace keeps each rank's send and receive totals, not who sent
                // what to whom. A matrix with those row and column sums (north-west corner
                // rule) moves the recorded bytes per rank; the pairing is an approximation.
                let sb = if e.p(Param::Sendtype) < 0 {
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
                // SAFETY: buffers of the sums of the counts with matching displacements, byte
                // types, a valid communicator; every pair's counts agree by construction.
                let rc = unsafe {
                    ffi::MPI_Alltoallv(
                        send.as_ptr() as *const c_void,
                        scounts.as_ptr(),
                        sd.as_ptr(),
                        p.u8,
                        recv.as_mut_ptr() as *mut c_void,
                        rcounts.as_ptr(),
                        rd.as_ptr(),
                        p.u8,
                        c,
                    )
                };
                check(rc, "MPI_Alltoallv")
            }
        }
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
            None => self.reqs.keys().copied().collect(),
        };
        for i in ids {
            if let Some(mut p) = self.reqs.remove(&i) {
                // SAFETY: `p.req` is an active request whose buffer `p._buf` is still alive;
                // the status is ignored.
                let rc = unsafe { ffi::MPI_Wait(&mut p.req, std::ptr::null_mut()) };
                check(rc, "MPI_Wait")?;
            }
        }
        Ok(())
    }

    /// Frees what the replay opened and MPI still holds, before `MPI_Finalize`.
    pub fn finish(&mut self) {
        let _ = self.wait(None);
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

impl Runtime for MpiRuntime {
    fn mpiio(
        &mut self,
        e: &FlatEvent,
        path: Option<&Path>,
        files: &FileTable,
        _fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        let op = e.op;
        let types = files.types();
        // MPI_File_delete names no handle.
        let id = e.get(Param::Fh).unwrap_or(0);
        let p = self.p;
        let cpath = |path: Option<&Path>| -> Result<CString, String> {
            CString::new(path.ok_or("no path")?.as_os_str().as_encoded_bytes())
                .map_err(|_| "path holds a NUL byte".to_string())
        };
        match op {
            // The traced open failed (IOR probes for its file this way): nothing to replay,
            // as for a failed POSIX open and under --threads. A failed collective open fails on
            // every rank of its communicator, so all of them skip it alike.
            Op::FileOpen if id < 0 => return Ok(0),
            Op::FileOpen => {
                let c = self.comm(e.p(Param::Comm)).unwrap_or(p.self_);
                let name = cpath(path)?;
                let mut fh: ffi::MPI_File = std::ptr::null_mut();
                // SAFETY: valid communicator, NUL-terminated path, predefined info, and a valid
                // out-parameter for the handle.
                let rc = unsafe {
                    ffi::MPI_File_open(
                        c,
                        name.as_ptr(),
                        e.p(Param::Amode) as c_int,
                        p.info_null,
                        &mut fh,
                    )
                };
                check(rc, "MPI_File_open")?;
                self.files.insert(id, MFile { fh });
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
                let mut f = self.files.remove(&id).expect("present");
                // SAFETY: an open file handle, closed once.
                check(unsafe { ffi::MPI_File_close(&mut f.fh) }, "MPI_File_close")?;
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
                let unbuilt = replay::types::unbuilt_view(types, ft);
                let filetype = if unbuilt.is_some() {
                    p.u8
                } else if types.ctor(ft).is_some() {
                    self.dtype(types, ft, 0)?
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
            // The tracer records MPI_Comm_create and MPI_Comm_split_type as the split that
            // builds the same communicator, so all three replay as MPI_Comm_split.
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
            Op::Gatherv | Op::Scatterv | Op::Allgatherv | Op::Alltoallv => self.vcoll(e, types),
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
                            ffi::MPI_Recv(ptr, n, p.u8, peer, tag, c, std::ptr::null_mut()),
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
                            self.reqs
                                .insert(e.p(Param::Request), Pending { req, _buf: buf });
                            Ok(())
                        }
                    }
                }
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
                        std::ptr::null_mut(),
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
            // before the replay), so the wait ends.
            Op::RequestFree => self.wait(Some(e.p(Param::Request))),
            Op::CommFree => {
                let id = e.p(Param::Comm);
                if id != rsd::mpi::COMM_WORLD
                    && id != rsd::mpi::COMM_SELF
                    && let Some(mut c) = self.comms.remove(&id)
                {
                    // SAFETY: a communicator this runtime created, freed once.
                    check(unsafe { ffi::MPI_Comm_free(&mut c) }, "MPI_Comm_free")?;
                }
                Ok(())
            }
            // The trace keeps only a Waitall's count: it completes every pending request.
            Op::Waitall => self.wait(None),
            _ => Ok(()),
        }
    }
}
