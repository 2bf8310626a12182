//! PnetCDF hooks: the `ncmpi_*` calls that decide a program's I/O (files, define mode,
//! dimensions, variables, attributes, the blocking and nonblocking transfers and their
//! completion), recorded as the `PnetCDF` layer.
//!
//! Found at run time as HDF5 is ([`crate::hdf5`]): the hooks are this library's exported
//! symbols and the real functions are looked up under the same names (`dlsym(RTLD_NEXT)`, or
//! among privately loaded libraries). Nothing links against libpnetcdf: a program without
//! PnetCDF never calls these hooks and pays nothing. Written against the ABI of PnetCDF 1.12
//! (`MPI_Offset` 64-bit, `nc_type` an `int`, the communicator, info and datatype handles
//! pointer-sized as Open MPI's, which Debian's libpnetcdf is built on); tested with Debian's
//! 1.12.3 (`libpnetcdf0d`, on Open MPI 4.1.4).
//!
//! The layer is recorded by default ([`ENABLED`]), as HDF5's is; with `IOTREX_PNETCDF=0`
//! every hook passes straight through and the MPI, MPI-IO and POSIX calls PnetCDF makes are
//! recorded at the top level, as they were before the layer existed (`extrap` and `diff` lift
//! the children of container calls, so both forms extrapolate).
//!
//! The typed families (`ncmpi_put_vara_int_all`, `ncmpi_iget_vars_double`, ...: twelve memory
//! types for each of twelve transfer kinds) come from one table, [`typed_transfers!`]: each
//! member is the flexible call's op with its memory type (`nc_type`) recorded as `mem_type`.
//!
//! Every hook only records: under the re-entry guard (the container mode while the real call
//! runs, so the calls PnetCDF makes become the event's children, and a PnetCDF call made by
//! PnetCDF itself goes straight through), with file ids and nonblocking requests as indices
//! in the rank's tables ([`Ids`]). What a record needs beyond the arguments (a variable's
//! number of dimensions, its type for the flexible calls) is asked of the real library in
//! `BUSY` mode, outside the state's lock.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

// The guard's container mode: while a traced library call runs, the MPI, MPI-IO and POSIX
// calls made inside it are its children (named after the first library that used it).
use crate::guard::{BUSY, Enter, IDLE};
use crate::posix::cpath;
use crate::real::real;
use crate::state::{RECORDING, State, Table};
use libc::{c_char, c_int, c_void};
use rsd::Op;
use rsd::op::args;
use std::sync::atomic::{AtomicBool, Ordering};

/// `MPI_Offset`.
pub type Offset = i64;
/// An MPI handle argument (`MPI_Comm`, `MPI_Info`, `MPI_Datatype`), pointer-sized as in Open
/// MPI, which the library PnetCDF is built on passes.
type MpiHandle = *mut c_void;
/// A data buffer (const or not: the same in the C ABI).
type Buf = *mut c_void;
/// An array of `MPI_Offset`, one per dimension.
type Dims = *const Offset;

/// `NC_NOERR`.
const NOERR: c_int = 0;
/// What a hook returns when the real function cannot be found. Unreachable in practice: only
/// a program linked against libpnetcdf calls these names. `NC_EINVAL`.
const UNAVAILABLE: c_int = -36;
/// The most dimensions recorded for a variable (`NC_MAX_VAR_DIMS` is larger; no real variable
/// comes near this).
const MAX_DIMS: usize = 64;

/// Whether the PnetCDF layer is recorded (unless `IOTREX_PNETCDF=0`, read by the constructor:
/// a hook that runs before it passes through).
pub static ENABLED: AtomicBool = AtomicBool::new(false);

/// PnetCDF's `nc_type` ids are NetCDF's (pnetcdf.h defines the same values): one table.
use rsd::netcdf::types as nc;

/// The rank's PnetCDF ids: open files and pending nonblocking requests.
#[derive(Debug, Default)]
pub struct Ids {
    /// File ids (`ncid`) traced calls returned.
    files: Table,
    /// Pending requests, by slot: the file's id, PnetCDF's request id, and whether it is a
    /// put. Few are pending at a time, so a scan is enough.
    reqs: Vec<Option<(c_int, c_int, bool)>>,
}

/// The table key of a file id (ids are small non-negative ints).
fn file_key(ncid: c_int) -> usize {
    ncid as u32 as usize
}

impl Ids {
    /// Adds the file a create or open returned (`r` its result): its index, or -1.
    fn open(&mut self, r: c_int, ncid: c_int) -> i64 {
        if r != NOERR {
            -1
        } else {
            self.files.insert(file_key(ncid))
        }
    }

    /// The index of a file id (-1 for one no traced call returned).
    fn file(&self, ncid: c_int) -> i64 {
        self.files.get(file_key(ncid)).unwrap_or(-1)
    }

    /// Removes a closed file and its pending requests, giving the index it had (-1 for none).
    fn close(&mut self, ncid: c_int) -> i64 {
        self.complete_all(ncid, None);
        self.files.remove(file_key(ncid)).unwrap_or(-1)
    }

    /// Adds a posted request: its index (the lowest free slot).
    fn post(&mut self, ncid: c_int, req: c_int, put: bool) -> i64 {
        let i = match self.reqs.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.reqs.push(None);
                self.reqs.len() - 1
            }
        };
        self.reqs[i] = Some((ncid, req, put));
        i as i64
    }

    /// Releases a completed request, giving its index (-1 for one no traced call posted).
    fn complete(&mut self, ncid: c_int, req: c_int) -> i64 {
        match self
            .reqs
            .iter()
            .position(|s| matches!(s, Some((f, q, _)) if *f == ncid && *q == req))
        {
            Some(i) => {
                self.reqs[i] = None;
                i as i64
            }
            None => -1,
        }
    }

    /// Releases every pending request of a file, or only its puts (`Some(true)`) or gets.
    fn complete_all(&mut self, ncid: c_int, put: Option<bool>) {
        for s in &mut self.reqs {
            if matches!(s, Some((f, _, p)) if *f == ncid && put.is_none_or(|w| w == *p)) {
                *s = None;
            }
        }
    }
}

/// `ncmpi_wait`'s and `ncmpi_wait_all`'s counts that name no requests but a kind
/// (`NC_REQ_ALL` -1, `NC_GET_REQ_ALL` -2, `NC_PUT_REQ_ALL` -3): `Some(None)` for all,
/// `Some(Some(put))` for one kind, `None` for a list.
fn all_of_kind(count: c_int) -> Option<Option<bool>> {
    match count {
        -1 => Some(None),
        -2 => Some(Some(false)),
        -3 => Some(Some(true)),
        _ => None,
    }
}

/// Whether the application's call is to be recorded: the helpers that ask PnetCDF more run
/// only then (and in `BUSY` mode, where a hooked call they reach passes through).
fn recording() -> bool {
    crate::guard::mode() == IDLE
        && RECORDING.load(Ordering::Relaxed)
        && ENABLED.load(Ordering::Relaxed)
}

/// Runs a PnetCDF call: recorded when the application makes it (mode `IDLE`), with the calls
/// PnetCDF makes inside as children; `build` gives the parameters from the state and the
/// result.
fn pnc_call(
    op: Op,
    path: Option<String>,
    call: impl FnOnce() -> c_int,
    build: impl FnOnce(&mut State, c_int) -> Vec<i64>,
) -> c_int {
    if !recording() {
        return call();
    }
    // The calls PnetCDF makes run in the library-container mode and become its children.
    crate::state::library_call(op, path, crate::guard::IN_HDF5, false, call, build)
}

/// What the real library says of variable `varid` through `f` (`ncmpi_inq_varndims`,
/// `ncmpi_inq_vartype`), or `none`.
fn inquire(
    f: Option<unsafe extern "C" fn(c_int, c_int, *mut c_int) -> c_int>,
    ncid: c_int,
    varid: c_int,
    none: i64,
) -> i64 {
    let _g = Enter::new(BUSY);
    let Some(f) = f else { return none };
    let mut v: c_int = 0;
    // SAFETY: the ids are the program's own arguments (an invalid one is an error return)
    // and `v` is a valid out-pointer.
    if unsafe { f(ncid, varid, &mut v) } != NOERR {
        return none;
    }
    v as i64
}

/// The number of dimensions of variable `varid` (0 when PnetCDF cannot say).
fn var_ndims(ncid: c_int, varid: c_int) -> usize {
    let f = real!(
        "ncmpi_inq_varndims",
        unsafe extern "C" fn(c_int, c_int, *mut c_int) -> c_int
    );
    inquire(f, ncid, varid, 0).clamp(0, MAX_DIMS as i64) as usize
}

/// The `nc_type` of variable `varid` (NC_NAT when PnetCDF cannot say).
fn var_type(ncid: c_int, varid: c_int) -> i64 {
    let f = real!(
        "ncmpi_inq_vartype",
        unsafe extern "C" fn(c_int, c_int, *mut c_int) -> c_int
    );
    inquire(f, ncid, varid, nc::NAT)
}

/// `n` values of a C array of `MPI_Offset` (`default` for each when it is NULL).
fn dims(p: Dims, n: usize, default: i64) -> Vec<i64> {
    (0..n)
        .map(|i| {
            if p.is_null() {
                default
            } else {
                // SAFETY: PnetCDF's contract: the array has one entry per dimension of the
                // variable (`n`, asked of the library).
                unsafe { *p.add(i) }
            }
        })
        .collect()
}

/// The memory side of a transfer.
#[derive(Clone, Copy)]
enum Mem {
    /// A typed family's member: its `nc_type`.
    Typed(i64),
    /// A flexible call: `bufcount` elements of `buftype` (MPI_DATATYPE_NULL: the buffer holds
    /// the variable's own type, as many as the counts select).
    Flexible(Offset, MpiHandle),
}

/// Where a transfer accesses its variable: the program's arrays, and the request it posts
/// (null for a blocking call).
#[derive(Clone, Copy)]
struct Access {
    ncid: c_int,
    varid: c_int,
    start: Dims,
    count: Dims,
    stride: Dims,
    req: *mut c_int,
}

impl Access {
    fn vara(ncid: c_int, varid: c_int, start: Dims, count: Dims) -> Access {
        Access {
            ncid,
            varid,
            start,
            count,
            stride: std::ptr::null(),
            req: std::ptr::null_mut(),
        }
    }

    fn vars(ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims) -> Access {
        Access {
            stride,
            ..Access::vara(ncid, varid, start, count)
        }
    }

    fn posting(self, req: *mut c_int) -> Access {
        Access { req, ..self }
    }
}

/// One data transfer: blocking or nonblocking, subarray or strided, typed or flexible.
fn transfer(op: Op, a: Access, mem: Mem, call: impl FnOnce() -> c_int) -> c_int {
    let strided = op.pnetcdf_access() == Some(rsd::op::PnetcdfAccess::Strided);
    let (nd, vtype) = if recording() {
        let t = match mem {
            Mem::Flexible(..) => var_type(a.ncid, a.varid),
            Mem::Typed(t) => t,
        };
        (var_ndims(a.ncid, a.varid), t)
    } else {
        (0, nc::NAT)
    };
    pnc_call(op, None, call, |st, r| {
        let start = dims(a.start, nd, 0);
        let count = dims(a.count, nd, 0);
        let elements: i64 = count.iter().product();
        let (mem_type, bytes) = match mem {
            Mem::Typed(t) => (t, elements * nc::size(t)),
            Mem::Flexible(bufcount, buftype) => match st.tsize(buftype) {
                // MPI_DATATYPE_NULL: the variable's own type.
                0 => (vtype, elements * nc::size(vtype)),
                size => {
                    let id = st.type_id(buftype);
                    let t = rsd::mpi::predefined(id).map_or(nc::NAT, |p| nc::of_mpi(p.name));
                    (t, bufcount * size)
                }
            },
        };
        let bytes = if r == NOERR { bytes } else { 0 };
        let (f, v, nd64) = (st.pnc.file(a.ncid), a.varid as i64, nd as i64);
        let mut request = || {
            if r != NOERR || a.req.is_null() {
                return -1;
            }
            // SAFETY: the program's out-pointer, which PnetCDF has just written.
            let q = unsafe { *a.req };
            let put = op.dir() == rsd::op::Dir::Write;
            st.pnc.post(a.ncid, q, put)
        };
        let mut p = match op {
            Op::NcmpiPutVara => args::ncmpi_put_vara(f, v, mem_type, nd64, elements, bytes),
            Op::NcmpiPutVaraAll => args::ncmpi_put_vara_all(f, v, mem_type, nd64, elements, bytes),
            Op::NcmpiGetVara => args::ncmpi_get_vara(f, v, mem_type, nd64, elements, bytes),
            Op::NcmpiGetVaraAll => args::ncmpi_get_vara_all(f, v, mem_type, nd64, elements, bytes),
            Op::NcmpiPutVars => args::ncmpi_put_vars(f, v, mem_type, nd64, elements, bytes),
            Op::NcmpiPutVarsAll => args::ncmpi_put_vars_all(f, v, mem_type, nd64, elements, bytes),
            Op::NcmpiGetVars => args::ncmpi_get_vars(f, v, mem_type, nd64, elements, bytes),
            Op::NcmpiGetVarsAll => args::ncmpi_get_vars_all(f, v, mem_type, nd64, elements, bytes),
            Op::NcmpiIputVara => {
                args::ncmpi_iput_vara(f, v, mem_type, nd64, elements, bytes, request())
            }
            Op::NcmpiIgetVara => {
                args::ncmpi_iget_vara(f, v, mem_type, nd64, elements, bytes, request())
            }
            Op::NcmpiIputVars => {
                args::ncmpi_iput_vars(f, v, mem_type, nd64, elements, bytes, request())
            }
            Op::NcmpiIgetVars => {
                args::ncmpi_iget_vars(f, v, mem_type, nd64, elements, bytes, request())
            }
            _ => unreachable!("{} is no PnetCDF transfer", op.name()),
        };
        p.extend(start);
        p.extend(count);
        if strided {
            p.extend(dims(a.stride, nd, 1));
        }
        p
    })
}

/// One attribute write (every `ncmpi_put_att_<type>` and `ncmpi_put_att`).
fn put_att(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    xtype: c_int,
    mem: i64,
    len: Offset,
    call: impl FnOnce() -> c_int,
) -> c_int {
    pnc_call(Op::NcmpiPutAtt, cpath(name), call, |st, r| {
        let bytes = if r == NOERR { len * nc::size(mem) } else { 0 };
        let f = st.pnc.file(ncid);
        args::ncmpi_put_att(f, varid as i64, xtype as i64, mem, len, bytes)
    })
}

/// A completion (`ncmpi_wait`, `ncmpi_wait_all`).
fn wait(
    op: Op,
    ncid: c_int,
    count: c_int,
    reqs: *mut c_int,
    call: impl FnOnce() -> c_int,
) -> c_int {
    // Read before the call, which may reset them.
    let ids: Vec<c_int> = if recording() && !reqs.is_null() && count > 0 {
        // SAFETY: PnetCDF's contract: `reqs` holds `count` request ids.
        unsafe { std::slice::from_raw_parts(reqs, count as usize) }.to_vec()
    } else {
        Vec::new()
    };
    pnc_call(op, None, call, |st, _| {
        let f = st.pnc.file(ncid);
        let mut p = if op == Op::NcmpiWait {
            args::ncmpi_wait(f, count as i64)
        } else {
            args::ncmpi_wait_all(f, count as i64)
        };
        match all_of_kind(count) {
            Some(kind) => st.pnc.complete_all(ncid, kind),
            None => p.extend(ids.iter().map(|&q| st.pnc.complete(ncid, q))),
        }
        p
    })
}

/// The file-level calls that take only the file id.
fn file_call(op: Op, ncid: c_int, call: impl FnOnce() -> c_int) -> c_int {
    pnc_call(op, None, call, |st, _| {
        let f = st.pnc.file(ncid);
        match op {
            Op::NcmpiEnddef => args::ncmpi_enddef(f),
            Op::NcmpiRedef => args::ncmpi_redef(f),
            Op::NcmpiSync => args::ncmpi_sync(f),
            Op::NcmpiBeginIndepData => args::ncmpi_begin_indep_data(f),
            Op::NcmpiEndIndepData => args::ncmpi_end_indep_data(f),
            _ => unreachable!("{} takes more than a file id", op.name()),
        }
    })
}

/// The hooks. Each entry states the C prototype once (the hook's and the real function's) and
/// names the closure that runs the real call with the program's arguments.
macro_rules! hooks {
    ($(
        $(#[$doc:meta])*
        $hook:ident ($($arg:ident: $ty:ty),* $(,)?) |$call:ident| $body:expr;
    )*) => {$(
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $hook($($arg: $ty),*) -> c_int {
            let Some(real) = real!(stringify!($hook), unsafe extern "C" fn($($ty),*) -> c_int)
            else {
                return UNAVAILABLE;
            };
            // SAFETY: forwarding the program's arguments to the real function, whose C
            // prototype is the hook's.
            let $call = || unsafe { real($($arg),*) };
            $body
        }
    )*};
}

hooks! {
    /// Hook: `ncmpi_create`.
    ncmpi_create(comm: MpiHandle, path: *const c_char, cmode: c_int, info: MpiHandle, ncidp: *mut c_int)
    |call| pnc_call(Op::NcmpiCreate, cpath(path), call, |st, r| {
        // SAFETY: the program's out-pointer, written by a successful call.
        let id = if r == NOERR && !ncidp.is_null() { unsafe { *ncidp } } else { -1 };
        let c = st.comm_id(comm);
        args::ncmpi_create(cmode as i64, c, st.pnc.open(r, id))
    });
    /// Hook: `ncmpi_open`.
    ncmpi_open(comm: MpiHandle, path: *const c_char, omode: c_int, info: MpiHandle, ncidp: *mut c_int)
    |call| pnc_call(Op::NcmpiOpen, cpath(path), call, |st, r| {
        // SAFETY: as in `ncmpi_create`.
        let id = if r == NOERR && !ncidp.is_null() { unsafe { *ncidp } } else { -1 };
        let c = st.comm_id(comm);
        args::ncmpi_open(omode as i64, c, st.pnc.open(r, id))
    });
    /// Hook: `ncmpi_close`. PnetCDF writes the header's record count and closes its MPI files
    /// here.
    ncmpi_close(ncid: c_int)
    |call| pnc_call(Op::NcmpiClose, None, call, |st, _| args::ncmpi_close(st.pnc.close(ncid)));
    /// Hook: `ncmpi_enddef`. Rank 0 writes the header.
    ncmpi_enddef(ncid: c_int) |call| file_call(Op::NcmpiEnddef, ncid, call);
    /// Hook: `ncmpi_redef`.
    ncmpi_redef(ncid: c_int) |call| file_call(Op::NcmpiRedef, ncid, call);
    /// Hook: `ncmpi_sync`.
    ncmpi_sync(ncid: c_int) |call| file_call(Op::NcmpiSync, ncid, call);
    /// Hook: `ncmpi_begin_indep_data`.
    ncmpi_begin_indep_data(ncid: c_int) |call| file_call(Op::NcmpiBeginIndepData, ncid, call);
    /// Hook: `ncmpi_end_indep_data`.
    ncmpi_end_indep_data(ncid: c_int) |call| file_call(Op::NcmpiEndIndepData, ncid, call);
    /// Hook: `ncmpi_def_dim`.
    ncmpi_def_dim(ncid: c_int, name: *const c_char, len: Offset, idp: *mut c_int)
    |call| pnc_call(Op::NcmpiDefDim, cpath(name), call, |st, r| {
        // SAFETY: the program's out-pointer, written by a successful call.
        let d = if r == NOERR && !idp.is_null() { unsafe { *idp as i64 } } else { -1 };
        args::ncmpi_def_dim(st.pnc.file(ncid), len, d)
    });
    /// Hook: `ncmpi_def_var`.
    ncmpi_def_var(ncid: c_int, name: *const c_char, xtype: c_int, ndims: c_int, dimids: *const c_int, varidp: *mut c_int)
    |call| pnc_call(Op::NcmpiDefVar, cpath(name), call, |st, r| {
        // SAFETY: the program's out-pointer, written by a successful call.
        let v = if r == NOERR && !varidp.is_null() { unsafe { *varidp as i64 } } else { -1 };
        let n = ndims.clamp(0, MAX_DIMS as c_int) as usize;
        let mut p = args::ncmpi_def_var(st.pnc.file(ncid), xtype as i64, ndims as i64, v);
        if !dimids.is_null() {
            // SAFETY: PnetCDF's contract: `ndims` dimension ids.
            p.extend((0..n).map(|i| unsafe { *dimids.add(i) } as i64));
        }
        p
    });
    /// Hook: `ncmpi_put_att_text` (no type argument: NC_CHAR).
    ncmpi_put_att_text(ncid: c_int, varid: c_int, name: *const c_char, len: Offset, buf: Buf)
    |call| put_att(ncid, varid, name, nc::CHAR as c_int, nc::CHAR, len, call);
    /// Hook: `ncmpi_put_att` (the buffer holds `xtype` elements).
    ncmpi_put_att(ncid: c_int, varid: c_int, name: *const c_char, xtype: c_int, len: Offset, buf: Buf)
    |call| put_att(ncid, varid, name, xtype, xtype as i64, len, call);
    /// Hook: `ncmpi_wait` (independent).
    ncmpi_wait(ncid: c_int, count: c_int, reqs: *mut c_int, statuses: *mut c_int)
    |call| wait(Op::NcmpiWait, ncid, count, reqs, call);
    /// Hook: `ncmpi_wait_all` (collective).
    ncmpi_wait_all(ncid: c_int, count: c_int, reqs: *mut c_int, statuses: *mut c_int)
    |call| wait(Op::NcmpiWaitAll, ncid, count, reqs, call);
    // The flexible transfers: the memory side is `bufcount` elements of the MPI `buftype`.
    /// Hook: `ncmpi_put_vara`.
    ncmpi_put_vara(ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle)
    |call| transfer(Op::NcmpiPutVara, Access::vara(ncid, varid, start, count), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_put_vara_all`.
    ncmpi_put_vara_all(ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle)
    |call| transfer(Op::NcmpiPutVaraAll, Access::vara(ncid, varid, start, count), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_get_vara`.
    ncmpi_get_vara(ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle)
    |call| transfer(Op::NcmpiGetVara, Access::vara(ncid, varid, start, count), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_get_vara_all`.
    ncmpi_get_vara_all(ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle)
    |call| transfer(Op::NcmpiGetVaraAll, Access::vara(ncid, varid, start, count), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_put_vars`.
    ncmpi_put_vars(ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle)
    |call| transfer(Op::NcmpiPutVars, Access::vars(ncid, varid, start, count, stride), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_put_vars_all`.
    ncmpi_put_vars_all(ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle)
    |call| transfer(Op::NcmpiPutVarsAll, Access::vars(ncid, varid, start, count, stride), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_get_vars`.
    ncmpi_get_vars(ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle)
    |call| transfer(Op::NcmpiGetVars, Access::vars(ncid, varid, start, count, stride), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_get_vars_all`.
    ncmpi_get_vars_all(ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle)
    |call| transfer(Op::NcmpiGetVarsAll, Access::vars(ncid, varid, start, count, stride), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_iput_vara`.
    ncmpi_iput_vara(ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle, req: *mut c_int)
    |call| transfer(Op::NcmpiIputVara, Access::vara(ncid, varid, start, count).posting(req), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_iget_vara`.
    ncmpi_iget_vara(ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle, req: *mut c_int)
    |call| transfer(Op::NcmpiIgetVara, Access::vara(ncid, varid, start, count).posting(req), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_iput_vars`.
    ncmpi_iput_vars(ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle, req: *mut c_int)
    |call| transfer(Op::NcmpiIputVars, Access::vars(ncid, varid, start, count, stride).posting(req), Mem::Flexible(bufcount, buftype), call);
    /// Hook: `ncmpi_iget_vars`.
    ncmpi_iget_vars(ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf, bufcount: Offset, buftype: MpiHandle, req: *mut c_int)
    |call| transfer(Op::NcmpiIgetVars, Access::vars(ncid, varid, start, count, stride).posting(req), Mem::Flexible(bufcount, buftype), call);
}

/// The typed families: for each memory type (the suffix of the C names) and its `nc_type`,
/// every typed transfer and attribute write, each recorded as its flexible call's op with the
/// type as `mem_type`.
macro_rules! typed_transfers {
    ($($t:ident => $nc:expr),* $(,)?) => { paste::paste! { hooks! { $(
        [<ncmpi_put_vara_ $t>](ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf)
        |call| transfer(Op::NcmpiPutVara, Access::vara(ncid, varid, start, count), Mem::Typed($nc), call);
        [<ncmpi_put_vara_ $t _all>](ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf)
        |call| transfer(Op::NcmpiPutVaraAll, Access::vara(ncid, varid, start, count), Mem::Typed($nc), call);
        [<ncmpi_get_vara_ $t>](ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf)
        |call| transfer(Op::NcmpiGetVara, Access::vara(ncid, varid, start, count), Mem::Typed($nc), call);
        [<ncmpi_get_vara_ $t _all>](ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf)
        |call| transfer(Op::NcmpiGetVaraAll, Access::vara(ncid, varid, start, count), Mem::Typed($nc), call);
        [<ncmpi_put_vars_ $t>](ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf)
        |call| transfer(Op::NcmpiPutVars, Access::vars(ncid, varid, start, count, stride), Mem::Typed($nc), call);
        [<ncmpi_put_vars_ $t _all>](ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf)
        |call| transfer(Op::NcmpiPutVarsAll, Access::vars(ncid, varid, start, count, stride), Mem::Typed($nc), call);
        [<ncmpi_get_vars_ $t>](ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf)
        |call| transfer(Op::NcmpiGetVars, Access::vars(ncid, varid, start, count, stride), Mem::Typed($nc), call);
        [<ncmpi_get_vars_ $t _all>](ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf)
        |call| transfer(Op::NcmpiGetVarsAll, Access::vars(ncid, varid, start, count, stride), Mem::Typed($nc), call);
        [<ncmpi_iput_vara_ $t>](ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf, req: *mut c_int)
        |call| transfer(Op::NcmpiIputVara, Access::vara(ncid, varid, start, count).posting(req), Mem::Typed($nc), call);
        [<ncmpi_iget_vara_ $t>](ncid: c_int, varid: c_int, start: Dims, count: Dims, buf: Buf, req: *mut c_int)
        |call| transfer(Op::NcmpiIgetVara, Access::vara(ncid, varid, start, count).posting(req), Mem::Typed($nc), call);
        [<ncmpi_iput_vars_ $t>](ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf, req: *mut c_int)
        |call| transfer(Op::NcmpiIputVars, Access::vars(ncid, varid, start, count, stride).posting(req), Mem::Typed($nc), call);
        [<ncmpi_iget_vars_ $t>](ncid: c_int, varid: c_int, start: Dims, count: Dims, stride: Dims, buf: Buf, req: *mut c_int)
        |call| transfer(Op::NcmpiIgetVars, Access::vars(ncid, varid, start, count, stride).posting(req), Mem::Typed($nc), call);
    )* } } };
}

typed_transfers! {
    text => nc::CHAR,
    schar => nc::BYTE,
    uchar => nc::UBYTE,
    short => nc::SHORT,
    ushort => nc::USHORT,
    int => nc::INT,
    uint => nc::UINT,
    long => nc::INT64,
    float => nc::FLOAT,
    double => nc::DOUBLE,
    longlong => nc::INT64,
    ulonglong => nc::UINT64,
}

/// The typed attribute writes but `_text` (which has no type argument): the buffer holds
/// elements of the suffix's type, written as `xtype`.
macro_rules! typed_atts {
    ($($t:ident => $nc:expr),* $(,)?) => { paste::paste! { hooks! { $(
        [<ncmpi_put_att_ $t>](ncid: c_int, varid: c_int, name: *const c_char, xtype: c_int, len: Offset, buf: Buf)
        |call| put_att(ncid, varid, name, xtype, $nc, len, call);
    )* } } };
}

typed_atts! {
    schar => nc::BYTE,
    uchar => nc::UBYTE,
    short => nc::SHORT,
    ushort => nc::USHORT,
    int => nc::INT,
    uint => nc::UINT,
    long => nc::INT64,
    float => nc::FLOAT,
    double => nc::DOUBLE,
    longlong => nc::INT64,
    ulonglong => nc::UINT64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpi_names_are_predefined_types() {
        let names: Vec<&str> = rsd::mpi::DATATYPES.iter().map(|t| t.name).collect();
        for n in [
            "MPI_SIGNED_CHAR",
            "MPI_BYTE",
            "MPI_CHAR",
            "MPI_UNSIGNED_CHAR",
            "MPI_SHORT",
            "MPI_UNSIGNED_SHORT",
            "MPI_INT",
            "MPI_UNSIGNED",
            "MPI_FLOAT",
            "MPI_DOUBLE",
            "MPI_LONG",
            "MPI_LONG_LONG_INT",
            "MPI_UNSIGNED_LONG_LONG",
        ] {
            assert!(names.contains(&n), "{n}");
            let t = nc::of_mpi(n);
            // The MPI type and the nc_type PnetCDF converts it to have one size.
            let p = rsd::mpi::DATATYPES.iter().find(|t| t.name == n).unwrap();
            assert_eq!(nc::size(t), p.size, "{n}");
        }
        assert_eq!(nc::of_mpi("MPI_2INT"), nc::NAT);
    }

    #[test]
    fn requests_take_the_lowest_free_slot() {
        let mut ids = Ids::default();
        assert_eq!(ids.open(NOERR, 5), 0);
        assert_eq!(ids.open(-33, 6), -1);
        assert_eq!(ids.file(5), 0);
        assert_eq!(ids.post(5, 100, true), 0);
        assert_eq!(ids.post(5, 101, false), 1);
        assert_eq!(ids.complete(5, 100), 0);
        assert_eq!(ids.complete(5, 100), -1);
        assert_eq!(ids.post(5, 102, true), 0);
        ids.complete_all(5, Some(true));
        assert_eq!(ids.post(5, 103, true), 0);
        assert_eq!(ids.complete(5, 101), 1);
        assert_eq!(ids.close(5), 0);
        assert_eq!(ids.file(5), -1);
        assert_eq!(
            ids.post(7, 1, true),
            0,
            "closing the file released its requests"
        );
    }
}
