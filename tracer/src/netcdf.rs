//! NetCDF hooks: the `nc_*` calls that decide a program's I/O (files created and opened, in
//! parallel or not, define mode, dimensions, variables with their chunking and parallel
//! access, attributes, and the region reads and writes), recorded as the `NetCDF` layer.
//!
//! Found at run time as HDF5's are (`hdf5`): the hooks are this library's exported symbols,
//! the real functions are looked up under the same names with `dlsym(RTLD_NEXT)`, or among the
//! privately loaded libraries (`real::lookup_local`); nothing links against libnetcdf, and a
//! program without NetCDF never calls these hooks. libnetcdf's symbols are versioned
//! (`nc_put_vara_int@@NETCDF_MPI_3.6.1` in Debian's MPI build); an unversioned definition
//! that comes first satisfies a versioned reference, so the hooks interpose all the same.
//! Written against the NetCDF 4 C API (unchanged since 4.0); tested with Debian's 4.9.0
//! (`libnetcdf-mpi-19`, on HDF5 1.10.8 and Open MPI).
//!
//! The layer is recorded by default ([`ENABLED`]), as the HDF5 layer is; `IOTREX_NETCDF=0`
//! turns it off (the library's calls are then recorded at the top level). A NetCDF-4 file goes through HDF5:
//! with both layers on, the HDF5 calls NetCDF makes are the NetCDF call's children, each with
//! its MPI, MPI-IO and POSIX children (NetCDF -> HDF5 -> MPI-IO -> POSIX); with NetCDF's alone,
//! HDF5's MPI, MPI-IO and POSIX calls are its children directly.
//!
//! Every hook only records: under the re-entry guard (`IN_NETCDF` while the real call runs;
//! a NetCDF call made by NetCDF itself goes straight through), with file ids as indices in the
//! rank's table of NetCDF ids. What a record needs beyond the arguments (a variable's rank and
//! type, a type's size, a new id) is asked of the real library in `BUSY` mode, outside the
//! state's lock. The typed families (`nc_put_vara_int`, `_double`, ...) are one op each, the
//! member's memory type a parameter (`rsd::netcdf::FAMILY`).

#![allow(clippy::missing_safety_doc)]

use crate::guard::{BUSY, Enter, IDLE, IN_NETCDF};
use crate::posix::cpath;
use crate::real::real;
use crate::state::{RECORDING, State, library_call};
use libc::{c_char, c_int, c_void, ptrdiff_t, size_t};
use rsd::Op;
use rsd::op::args;
use std::sync::atomic::{AtomicBool, Ordering};

/// `nc_type`.
pub type NcType = c_int;

/// What a hook returns when the real function cannot be found (`NC_ENOTBUILT`: "attempt to
/// use a feature that was not turned on when netCDF was built"); never reached by a program
/// that calls NetCDF, which loaded it.
const NC_ENOTBUILT: c_int = -128;
/// `NC_NOERR`.
const NC_NOERR: c_int = 0;
/// The most dimensions a NetCDF variable has (`NC_MAX_VAR_DIMS`).
const MAX_VAR_DIMS: usize = 1024;

/// Whether the NetCDF layer is recorded (unless `IOTREX_NETCDF=0`, read by the constructor: a
/// hook that runs before it passes through).
pub static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether the application's call is to be recorded: the helpers that ask NetCDF more run only
/// then (and in `BUSY` mode, where a hooked call they reach passes through).
fn recording() -> bool {
    crate::guard::mode() == IDLE
        && RECORDING.load(Ordering::Relaxed)
        && ENABLED.load(Ordering::Relaxed)
}

/// Runs a NetCDF call: recorded when the application makes it, with the calls NetCDF makes
/// inside as children; `build` gives the parameters from the state and the result.
fn nc_call(
    op: Op,
    path: Option<String>,
    call: impl FnOnce() -> c_int,
    build: impl FnOnce(&mut State, c_int) -> Vec<i64>,
) -> c_int {
    if !recording() {
        return call();
    }
    library_call(op, path, IN_NETCDF, false, call, build)
}

impl State {
    /// Adds the file id a create or open returned (`rc` its status) to the table: its index,
    /// or -1 for a failed call.
    fn nc_new(&mut self, rc: c_int, ncid: c_int) -> i64 {
        if rc != NC_NOERR || ncid < 0 {
            -1
        } else {
            self.nc.insert(ncid as usize)
        }
    }

    /// The index of a file id (-1 for one no traced call returned, such as a group's).
    fn nc_id(&self, ncid: c_int) -> i64 {
        if ncid < 0 {
            return -1;
        }
        self.nc.get(ncid as usize).unwrap_or(-1)
    }

    /// Removes a closed file id, giving the index it had (-1 for none).
    fn nc_close(&mut self, ncid: c_int) -> i64 {
        if ncid < 0 {
            return -1;
        }
        self.nc.remove(ncid as usize).unwrap_or(-1)
    }
}

/// The number of dimensions of variable `varid` (0 when NetCDF cannot say).
fn var_ndims(ncid: c_int, varid: c_int) -> usize {
    let _g = Enter::new(BUSY);
    let Some(f) = real!(
        "nc_inq_varndims",
        unsafe extern "C" fn(c_int, c_int, *mut c_int) -> c_int
    ) else {
        return 0;
    };
    let mut n: c_int = 0;
    // SAFETY: the ids are the program's; `n` is a valid out-pointer.
    if unsafe { f(ncid, varid, &mut n) } != NC_NOERR {
        return 0;
    }
    n.clamp(0, MAX_VAR_DIMS as c_int) as usize
}

/// The type of variable `varid` (0, no type, when NetCDF cannot say).
fn var_type(ncid: c_int, varid: c_int) -> i64 {
    let _g = Enter::new(BUSY);
    let Some(f) = real!(
        "nc_inq_vartype",
        unsafe extern "C" fn(c_int, c_int, *mut NcType) -> c_int
    ) else {
        return 0;
    };
    let mut t: NcType = 0;
    // SAFETY: as `var_ndims`.
    if unsafe { f(ncid, varid, &mut t) } != NC_NOERR {
        return 0;
    }
    t as i64
}

/// The size in bytes of one element of type `t` in memory (what `nc_inq_type` says: 8 for
/// `NC_STRING`'s `char *`), 0 when NetCDF cannot say.
fn type_size(ncid: c_int, t: i64) -> i64 {
    let _g = Enter::new(BUSY);
    let Some(f) = real!(
        "nc_inq_type",
        unsafe extern "C" fn(c_int, NcType, *mut c_char, *mut size_t) -> c_int
    ) else {
        return 0;
    };
    let mut size: size_t = 0;
    // SAFETY: the name is optional (NULL); `size` is a valid out-pointer.
    if unsafe { f(ncid, t as NcType, std::ptr::null_mut(), &mut size) } != NC_NOERR {
        return 0;
    }
    size as i64
}

/// The memory type of a typed family's member `suffix` (`int`, `double`, ...).
fn family(suffix: &str) -> i64 {
    rsd::netcdf::FAMILY
        .iter()
        .find(|(s, _)| *s == suffix)
        .map_or(0, |(_, t)| *t)
}

/// `n` values of a C array (`default` for each when it is NULL).
fn array<T: Copy + TryInto<i64>>(p: *const T, n: usize, default: i64) -> impl Iterator<Item = i64> {
    (0..n).map(move |i| {
        if p.is_null() {
            default
        } else {
            // SAFETY: NetCDF's contract: the array has one entry per dimension of the
            // variable (`n`, read from the library).
            unsafe { *p.add(i) }.try_into().unwrap_or(-1)
        }
    })
}

/// A region read or write (`nc_put_vara*`, `nc_get_vara*`, `nc_put_vars*`, `nc_get_vars*`).
/// `mem` the family member's memory type (`None` for the untyped call: the variable's);
/// `stride` for the strided calls.
#[allow(clippy::too_many_arguments)]
fn region(
    op: Op,
    ncid: c_int,
    varid: c_int,
    mem: Option<i64>,
    start: *const size_t,
    count: *const size_t,
    stride: Option<*const ptrdiff_t>,
    call: impl FnOnce() -> c_int,
) -> c_int {
    if !recording() {
        return call();
    }
    let n = var_ndims(ncid, varid);
    let mem = mem.unwrap_or_else(|| var_type(ncid, varid));
    let size = type_size(ncid, mem);
    let elements: i64 = array(count, n, 0).product();
    nc_call(op, None, call, |st, r| {
        let bytes = if r == NC_NOERR { size * elements } else { 0 };
        let (id, v, nd) = (st.nc_id(ncid), varid as i64, n as i64);
        let mut p = match op {
            Op::NcPutVara => args::nc_put_vara(id, v, mem, nd, elements, bytes),
            Op::NcGetVara => args::nc_get_vara(id, v, mem, nd, elements, bytes),
            Op::NcPutVars => args::nc_put_vars(id, v, mem, nd, elements, bytes),
            _ => args::nc_get_vars(id, v, mem, nd, elements, bytes),
        };
        p.extend(array(start, n, 0));
        p.extend(array(count, n, 0));
        if let Some(s) = stride {
            p.extend(array(s, n, 1));
        }
        p
    })
}

/// An attribute written (`nc_put_att*`): `xtype` its type in the file, `mem` the memory type
/// the values are given in, `len` its length.
fn attribute(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    xtype: i64,
    mem: i64,
    len: size_t,
    call: impl FnOnce() -> c_int,
) -> c_int {
    if !recording() {
        return call();
    }
    let size = type_size(ncid, mem);
    nc_call(Op::NcPutAtt, cpath(name), call, |st, r| {
        let bytes = if r == NC_NOERR { size * len as i64 } else { 0 };
        args::nc_put_att(st.nc_id(ncid), varid as i64, xtype, mem, len as i64, bytes)
    })
}

/// Reads the id a successful call stored at `p`.
fn out_id(rc: c_int, p: *const c_int) -> c_int {
    if rc != NC_NOERR || p.is_null() {
        return -1;
    }
    // SAFETY: the call succeeded and stored the id at the program's out-pointer.
    unsafe { *p }
}

// The hooks, one per C function, each stating its C prototype in the real function's type.

/// Hook: `nc_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_create(path: *const c_char, cmode: c_int, ncidp: *mut c_int) -> c_int {
    let Some(f) = real!(
        "nc_create",
        unsafe extern "C" fn(*const c_char, c_int, *mut c_int) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    nc_call(
        Op::NcCreate,
        cpath(path),
        // SAFETY: forwarding the program's arguments to the real function.
        || unsafe { f(path, cmode, ncidp) },
        |st, r| args::nc_create(cmode as i64, st.nc_new(r, out_id(r, ncidp))),
    )
}

/// Hook: `nc_create_par`. The communicator is recorded as MPI calls record one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_create_par(
    path: *const c_char,
    cmode: c_int,
    comm: *mut c_void,
    info: *mut c_void,
    ncidp: *mut c_int,
) -> c_int {
    let Some(f) = real!(
        "nc_create_par",
        unsafe extern "C" fn(*const c_char, c_int, *mut c_void, *mut c_void, *mut c_int) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    nc_call(
        Op::NcCreatePar,
        cpath(path),
        // SAFETY: as above (MPI handles are pointer-sized in both ABIs the tracer knows).
        || unsafe { f(path, cmode, comm, info, ncidp) },
        |st, r| {
            let c = st.comm_id(comm);
            args::nc_create_par(cmode as i64, c, st.nc_new(r, out_id(r, ncidp)))
        },
    )
}

/// Hook: `nc_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_open(path: *const c_char, mode: c_int, ncidp: *mut c_int) -> c_int {
    let Some(f) = real!(
        "nc_open",
        unsafe extern "C" fn(*const c_char, c_int, *mut c_int) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    nc_call(
        Op::NcOpen,
        cpath(path),
        // SAFETY: as above.
        || unsafe { f(path, mode, ncidp) },
        |st, r| args::nc_open(mode as i64, st.nc_new(r, out_id(r, ncidp))),
    )
}

/// Hook: `nc_open_par`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_open_par(
    path: *const c_char,
    mode: c_int,
    comm: *mut c_void,
    info: *mut c_void,
    ncidp: *mut c_int,
) -> c_int {
    let Some(f) = real!(
        "nc_open_par",
        unsafe extern "C" fn(*const c_char, c_int, *mut c_void, *mut c_void, *mut c_int) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    nc_call(
        Op::NcOpenPar,
        cpath(path),
        // SAFETY: as above.
        || unsafe { f(path, mode, comm, info, ncidp) },
        |st, r| {
            let c = st.comm_id(comm);
            args::nc_open_par(mode as i64, c, st.nc_new(r, out_id(r, ncidp)))
        },
    )
}

/// The hooks of the calls that take a file id alone.
macro_rules! by_ncid {
    ($($(#[$doc:meta])* $name:ident => $op:ident, $build:expr;)*) => {$(
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(ncid: c_int) -> c_int {
            let Some(f) = real!(stringify!($name), unsafe extern "C" fn(c_int) -> c_int) else {
                return NC_ENOTBUILT;
            };
            // SAFETY: as above.
            nc_call(Op::$op, None, || unsafe { f(ncid) }, |st, _| {
                let build: fn(&mut State, c_int) -> Vec<i64> = $build;
                build(st, ncid)
            })
        }
    )*};
}

by_ncid! {
    /// Hook: `nc_close`. A NetCDF-4 file's metadata is written here (HDF5's metadata flush).
    nc_close => NcClose, |st, id| args::nc_close(st.nc_close(id));
    /// Hook: `nc_enddef`. A NetCDF-4 file's definitions reach HDF5 here.
    nc_enddef => NcEnddef, |st, id| args::nc_enddef(st.nc_id(id));
    /// Hook: `nc_redef`.
    nc_redef => NcRedef, |st, id| args::nc_redef(st.nc_id(id));
    /// Hook: `nc_sync`.
    nc_sync => NcSync, |st, id| args::nc_sync(st.nc_id(id));
}

/// Hook: `nc_def_dim`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_def_dim(
    ncid: c_int,
    name: *const c_char,
    len: size_t,
    idp: *mut c_int,
) -> c_int {
    let Some(f) = real!(
        "nc_def_dim",
        unsafe extern "C" fn(c_int, *const c_char, size_t, *mut c_int) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    nc_call(
        Op::NcDefDim,
        cpath(name),
        // SAFETY: as above.
        || unsafe { f(ncid, name, len, idp) },
        |st, r| args::nc_def_dim(st.nc_id(ncid), len as i64, out_id(r, idp) as i64),
    )
}

/// Hook: `nc_def_var`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_def_var(
    ncid: c_int,
    name: *const c_char,
    xtype: NcType,
    ndims: c_int,
    dimids: *const c_int,
    varidp: *mut c_int,
) -> c_int {
    let Some(f) = real!(
        "nc_def_var",
        unsafe extern "C" fn(
            c_int,
            *const c_char,
            NcType,
            c_int,
            *const c_int,
            *mut c_int,
        ) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    let n = ndims.clamp(0, MAX_VAR_DIMS as c_int) as usize;
    nc_call(
        Op::NcDefVar,
        cpath(name),
        // SAFETY: as above.
        || unsafe { f(ncid, name, xtype, ndims, dimids, varidp) },
        |st, r| {
            let v = out_id(r, varidp) as i64;
            let mut p = args::nc_def_var(st.nc_id(ncid), xtype as i64, ndims as i64, v);
            p.extend(array(dimids, n, -1));
            p
        },
    )
}

/// Hook: `nc_def_var_chunking`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_def_var_chunking(
    ncid: c_int,
    varid: c_int,
    storage: c_int,
    chunks: *const size_t,
) -> c_int {
    let Some(f) = real!(
        "nc_def_var_chunking",
        unsafe extern "C" fn(c_int, c_int, c_int, *const size_t) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    let n = if recording() {
        var_ndims(ncid, varid)
    } else {
        0
    };
    nc_call(
        Op::NcDefVarChunking,
        None,
        // SAFETY: as above.
        || unsafe { f(ncid, varid, storage, chunks) },
        |st, _| {
            let id = st.nc_id(ncid);
            let mut p = args::nc_def_var_chunking(id, varid as i64, storage as i64, n as i64);
            p.extend(array(chunks, n, 0));
            p
        },
    )
}

/// Hook: `nc_var_par_access`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_var_par_access(ncid: c_int, varid: c_int, access: c_int) -> c_int {
    let Some(f) = real!(
        "nc_var_par_access",
        unsafe extern "C" fn(c_int, c_int, c_int) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    nc_call(
        Op::NcVarParAccess,
        None,
        // SAFETY: as above.
        || unsafe { f(ncid, varid, access) },
        |st, _| args::nc_var_par_access(st.nc_id(ncid), varid as i64, access as i64),
    )
}

/// Hook: `nc_put_att` (untyped: the values are in the attribute's type).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_put_att(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    xtype: NcType,
    len: size_t,
    op: *const c_void,
) -> c_int {
    let Some(f) = real!(
        "nc_put_att",
        unsafe extern "C" fn(c_int, c_int, *const c_char, NcType, size_t, *const c_void) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    let t = xtype as i64;
    // SAFETY: as above.
    attribute(ncid, varid, name, t, t, len, || unsafe {
        f(ncid, varid, name, xtype, len, op)
    })
}

/// Hook: `nc_put_att_text` (no type argument: the attribute is `NC_CHAR`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_put_att_text(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    len: size_t,
    op: *const c_char,
) -> c_int {
    let Some(f) = real!(
        "nc_put_att_text",
        unsafe extern "C" fn(c_int, c_int, *const c_char, size_t, *const c_char) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    let t = family("text");
    // SAFETY: as above.
    attribute(ncid, varid, name, t, t, len, || unsafe {
        f(ncid, varid, name, len, op)
    })
}

/// Hook: `nc_put_att_string` (no type argument: the attribute is `NC_STRING`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_put_att_string(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    len: size_t,
    op: *const *const c_char,
) -> c_int {
    let Some(f) = real!(
        "nc_put_att_string",
        unsafe extern "C" fn(c_int, c_int, *const c_char, size_t, *const *const c_char) -> c_int
    ) else {
        return NC_ENOTBUILT;
    };
    let t = family("string");
    // SAFETY: as above.
    attribute(ncid, varid, name, t, t, len, || unsafe {
        f(ncid, varid, name, len, op)
    })
}

/// The typed `nc_put_att_<suffix>` hooks that take the attribute's file type (all but text
/// and string).
macro_rules! put_att_typed {
    ($($suffix:ident),*) => {paste::paste! {$(
        #[doc = concat!("Hook: `nc_put_att_", stringify!($suffix), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<nc_put_att_ $suffix>](
            ncid: c_int,
            varid: c_int,
            name: *const c_char,
            xtype: NcType,
            len: size_t,
            op: *const c_void,
        ) -> c_int {
            let Some(f) = real!(
                concat!("nc_put_att_", stringify!($suffix)),
                unsafe extern "C" fn(c_int, c_int, *const c_char, NcType, size_t, *const c_void) -> c_int
            ) else {
                return NC_ENOTBUILT;
            };
            let mem = family(stringify!($suffix));
            // SAFETY: as above.
            attribute(ncid, varid, name, xtype as i64, mem, len, || unsafe {
                f(ncid, varid, name, xtype, len, op)
            })
        }
    )*}};
}

put_att_typed!(
    schar, uchar, short, int, long, float, double, ubyte, ushort, uint, longlong, ulonglong
);

/// The region hooks of one family (`nc_put_vara`, ...): the untyped call and one per member
/// of `rsd::netcdf::FAMILY`, whose suffixes are listed here.
macro_rules! region_family {
    ($base:ident, $op:ident, $buf:ty, strided: $strided:tt, [$($suffix:ident),*]) => {paste::paste! {
        region_family!(@one $base, $base, $op, $buf, None, $strided);
        $(region_family!(@one [<$base _ $suffix>], $base, $op, $buf,
            Some(family(stringify!($suffix))), $strided);)*
    }};
    (@one $name:ident, $base:ident, $op:ident, $buf:ty, $mem:expr, false) => {
        #[doc = concat!("Hook: `", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            ncid: c_int,
            varid: c_int,
            start: *const size_t,
            count: *const size_t,
            buf: $buf,
        ) -> c_int {
            let Some(f) = real!(
                stringify!($name),
                unsafe extern "C" fn(c_int, c_int, *const size_t, *const size_t, $buf) -> c_int
            ) else {
                return NC_ENOTBUILT;
            };
            // SAFETY: as above.
            region(Op::$op, ncid, varid, $mem, start, count, None, || unsafe {
                f(ncid, varid, start, count, buf)
            })
        }
    };
    (@one $name:ident, $base:ident, $op:ident, $buf:ty, $mem:expr, true) => {
        #[doc = concat!("Hook: `", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            ncid: c_int,
            varid: c_int,
            start: *const size_t,
            count: *const size_t,
            stride: *const ptrdiff_t,
            buf: $buf,
        ) -> c_int {
            let Some(f) = real!(
                stringify!($name),
                unsafe extern "C" fn(
                    c_int,
                    c_int,
                    *const size_t,
                    *const size_t,
                    *const ptrdiff_t,
                    $buf,
                ) -> c_int
            ) else {
                return NC_ENOTBUILT;
            };
            // SAFETY: as above.
            region(Op::$op, ncid, varid, $mem, start, count, Some(stride), || unsafe {
                f(ncid, varid, start, count, stride, buf)
            })
        }
    };
}

region_family!(nc_put_vara, NcPutVara, *const c_void, strided: false, [
    text, schar, uchar, short, int, long, float, double, ubyte, ushort, uint, longlong,
    ulonglong, string
]);
region_family!(nc_get_vara, NcGetVara, *mut c_void, strided: false, [
    text, schar, uchar, short, int, long, float, double, ubyte, ushort, uint, longlong,
    ulonglong, string
]);
region_family!(nc_put_vars, NcPutVars, *const c_void, strided: true, [
    text, schar, uchar, short, int, long, float, double, ubyte, ushort, uint, longlong,
    ulonglong, string
]);
region_family!(nc_get_vars, NcGetVars, *mut c_void, strided: true, [
    text, schar, uchar, short, int, long, float, double, ubyte, ushort, uint, longlong,
    ulonglong, string
]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_member_has_a_memory_type() {
        for (suffix, t) in rsd::netcdf::FAMILY {
            assert_eq!(family(suffix), *t);
        }
        assert_eq!(family("int"), rsd::netcdf::types::INT);
        assert_eq!(family("nosuch"), 0);
    }
}
