//! HDF5 hooks: the calls that decide a program's I/O (files, groups, datasets, attributes,
//! dataspace selections, the MPI-IO driver's property lists), recorded as the `HDF5` layer.
//!
//! Found at run time like everything else: the hooks are this library's exported symbols, the
//! real functions are looked up under the same names with `dlsym(RTLD_NEXT)`, or among the
//! libraries loaded privately (`real::lookup_local`: h5py's extension links libhdf5 and Python
//! loads it with `RTLD_LOCAL`). Nothing links against libhdf5: a program without HDF5 never
//! calls these hooks and pays nothing. Written against the 1.10 ABI (`hid_t` 64-bit, the
//! `H5Dcreate2`/`H5Dopen2`/`H5Acreate2`/`H5Gcreate2` names the 1.10, 1.12 and 1.14 headers map
//! the unversioned macros to); tested with Debian's 1.10.8 (`libhdf5-openmpi-103-1`).
//!
//! The layer is recorded by default ([`ENABLED`]); with `IOTREX_HDF5=0` every hook passes
//! straight through and the calls HDF5 makes are recorded at the top level, as they were
//! before the layer existed. Every consumer of traces sees through containers (`extrap` and
//! `diff` lift them, `collio::traced` walks into them), so both forms extrapolate.
//!
//! Every hook only records: under the re-entry guard (`IN_HDF5` while the real call runs, so
//! the MPI, MPI-IO and POSIX calls HDF5 makes become the event's children, and an HDF5 call
//! made by HDF5 itself goes straight through; one NetCDF makes inside a traced NetCDF call is
//! that call's child, see `netcdf`), with the identifiers the program gets as
//! indices in the rank's table of HDF5 identifiers. What a record needs from HDF5 beyond the
//! arguments (the element size, the number of selected elements, a dataspace's rank, the
//! transfer mode) is asked of the real library in `BUSY` mode, outside the state's lock.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use crate::guard::{BUSY, Enter, IDLE, IN_HDF5, IN_NETCDF};
use crate::posix::cpath;
use crate::real::real;
use crate::state::{RECORDING, State, library_call};
use libc::{c_char, c_int, c_uint, c_void, size_t};
use rsd::Op;
use rsd::op::args;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// `hid_t` (64-bit since HDF5 1.10).
pub type Hid = i64;
/// `herr_t`.
pub type Herr = c_int;
/// `hsize_t`.
pub type Hsize = u64;

/// `H5S_ALL` and `H5P_DEFAULT`.
const H5S_ALL: Hid = 0;
const H5P_DEFAULT: Hid = 0;
/// How `H5S_ALL` is recorded where a dataspace identifier goes.
const ALL_SPACES: i64 = -2;
/// The most dimensions an HDF5 dataspace has (`H5S_MAX_RANK`).
const MAX_RANK: usize = 32;

/// Whether the HDF5 layer is recorded (unless `IOTREX_HDF5=0`, read by the constructor: a
/// hook that runs before it passes through).
pub static ENABLED: AtomicBool = AtomicBool::new(false);

/// Runs an HDF5 call: recorded when the application makes it (mode `IDLE`), with the calls
/// HDF5 makes inside as children; `build` gives the parameters from the state and the result.
fn h5_call<T: Copy>(
    op: Op,
    path: Option<String>,
    call: impl FnOnce() -> T,
    build: impl FnOnce(&mut State, T) -> Vec<i64>,
) -> T {
    if !recording() {
        return call();
    }
    note_version();
    // Made by NetCDF inside a traced NetCDF call: that call's child.
    let child = crate::guard::mode() == IN_NETCDF;
    library_call(op, path, IN_HDF5, child, call, build)
}

/// The HDF5 library's version (`H5get_libversion`: major, minor, release, each below 2^16),
/// packed as `major << 32 | minor << 16 | release`; 0 until the first recorded call asks.
static VERSION: AtomicU64 = AtomicU64::new(0);

/// Asks the library its version at the first recorded call (h5py's wheels bundle another
/// HDF5 than the system's: the trace says which one the hooks ran on).
fn note_version() {
    if VERSION.load(Ordering::Relaxed) != 0 {
        return;
    }
    let _g = Enter::new(BUSY);
    let Some(f) = real!(
        "H5get_libversion",
        unsafe extern "C" fn(*mut c_uint, *mut c_uint, *mut c_uint) -> Herr
    ) else {
        return;
    };
    let (mut a, mut b, mut c) = (0, 0, 0);
    // SAFETY: three pointers to local unsigned ints, as H5get_libversion takes.
    if unsafe { f(&mut a, &mut b, &mut c) } >= 0 {
        let v = (u64::from(a) << 32) | (u64::from(b & 0xffff) << 16) | u64::from(c & 0xffff);
        VERSION.store(v.max(1), Ordering::Relaxed);
    }
}

/// The version of the HDF5 library the layer recorded calls of (`1.14.2`), if any.
pub fn version() -> Option<String> {
    match VERSION.load(Ordering::Relaxed) {
        0 => None,
        v => Some(format!("{}.{}.{}", v >> 32, (v >> 16) & 0xffff, v & 0xffff)),
    }
}

/// Whether the application's call (or NetCDF's, inside a traced NetCDF call) is to be
/// recorded: the helpers that ask HDF5 more run only then (and in `BUSY` mode, where a hooked
/// call they reach passes through).
fn recording() -> bool {
    matches!(crate::guard::mode(), IDLE | IN_NETCDF)
        && RECORDING.load(Ordering::Relaxed)
        && ENABLED.load(Ordering::Relaxed)
}

impl State {
    /// Adds an identifier a call returned (negative: the call failed) to the table: its
    /// index, or -1.
    fn h5_new(&mut self, h: Hid) -> i64 {
        if h < 0 {
            -1
        } else {
            self.h5.insert(h as usize)
        }
    }

    /// The index of an identifier (-1 for one no traced call returned).
    fn h5_id(&self, h: Hid) -> i64 {
        self.h5.get(h as usize).unwrap_or(-1)
    }

    /// The index of a dataspace argument, `H5S_ALL` as -2.
    fn h5_space(&self, h: Hid) -> i64 {
        if h == H5S_ALL {
            ALL_SPACES
        } else {
            self.h5_id(h)
        }
    }

    /// Removes a closed identifier, giving the index it had (-1 for none).
    fn h5_close(&mut self, h: Hid) -> i64 {
        self.h5.remove(h as usize).unwrap_or(-1)
    }
}

/// The element size of datatype `t` in bytes (0 when HDF5 cannot say).
fn type_size(t: Hid) -> i64 {
    let _g = Enter::new(BUSY);
    match real!("H5Tget_size", unsafe extern "C" fn(Hid) -> size_t) {
        // SAFETY: `t` is the identifier the program passed; H5Tget_size returns 0 for one
        // that is not a datatype.
        Some(f) => unsafe { f(t) as i64 },
        None => 0,
    }
}

/// The elements selected in dataspace `s` (0 when HDF5 cannot say).
fn selected(s: Hid) -> i64 {
    let _g = Enter::new(BUSY);
    match real!("H5Sget_select_npoints", unsafe extern "C" fn(Hid) -> i64) {
        // SAFETY: `s` is a dataspace identifier the program passed; errors are negative.
        Some(f) => unsafe { f(s) }.max(0),
        None => 0,
    }
}

/// The rank (number of dimensions) of dataspace `s` (0 when HDF5 cannot say).
fn space_rank(s: Hid) -> usize {
    let _g = Enter::new(BUSY);
    match real!(
        "H5Sget_simple_extent_ndims",
        unsafe extern "C" fn(Hid) -> c_int
    ) {
        // SAFETY: as `selected`.
        Some(f) => (unsafe { f(s) }).clamp(0, MAX_RANK as c_int) as usize,
        None => 0,
    }
}

/// What `f` gives for dataset `d`'s dataspace (opened and closed again here), or `none`.
fn with_dataset_space<T>(d: Hid, none: T, f: impl FnOnce(Hid) -> T) -> T {
    let _g = Enter::new(BUSY);
    let (Some(get), Some(close)) = (
        real!("H5Dget_space", unsafe extern "C" fn(Hid) -> Hid),
        real!("H5Sclose", unsafe extern "C" fn(Hid) -> Herr),
    ) else {
        return none;
    };
    // SAFETY: `d` is the dataset identifier the program passed; a negative result is an error.
    let s = unsafe { get(d) };
    if s < 0 {
        return none;
    }
    let v = f(s);
    // SAFETY: `s` is the dataspace opened just above, closed once.
    unsafe { close(s) };
    v
}

/// The transfer mode of dataset transfer property list `dxpl` (H5FD_MPIO_INDEPENDENT 0,
/// COLLECTIVE 1), -1 for the default list or one without the MPI-IO driver's property.
fn xfer_mode(dxpl: Hid) -> i64 {
    if dxpl == H5P_DEFAULT {
        return -1;
    }
    let _g = Enter::new(BUSY);
    let Some(f) = real!(
        "H5Pget_dxpl_mpio",
        unsafe extern "C" fn(Hid, *mut c_int) -> Herr
    ) else {
        return -1;
    };
    let mut m: c_int = -1;
    // SAFETY: `dxpl` is the property list the program passed and `m` a valid out-pointer.
    if unsafe { f(dxpl, &mut m) } < 0 {
        return -1;
    }
    m as i64
}

/// `n` values of a C array of `hsize_t` (`default` for each when it is NULL), as recorded:
/// `H5S_UNLIMITED` (all ones) becomes -1.
fn dims(p: *const Hsize, n: usize, default: i64) -> impl Iterator<Item = i64> {
    (0..n).map(move |i| {
        if p.is_null() {
            default
        } else {
            // SAFETY: HDF5's contract: the array has one entry per dimension of the dataspace
            // (`n`, read from it).
            unsafe { *p.add(i) as i64 }
        }
    })
}

/// The elements an `H5Dwrite`/`H5Dread` moves: those selected in memory, which HDF5 takes
/// from the file selection for `H5S_ALL`, and from the dataset's extent when both are.
fn transfer_count(dset: Hid, mem: Hid, file: Hid) -> i64 {
    if mem != H5S_ALL {
        selected(mem)
    } else if file != H5S_ALL {
        selected(file)
    } else {
        with_dataset_space(dset, 0, selected)
    }
}

/// One data transfer (`H5Dwrite`, `H5Dread`).
fn transfer(
    op: Op,
    dset: Hid,
    mtype: Hid,
    mem: Hid,
    file: Hid,
    dxpl: Hid,
    call: impl FnOnce() -> Herr,
) -> Herr {
    let (size, count, xfer) = if recording() {
        (
            type_size(mtype),
            transfer_count(dset, mem, file),
            xfer_mode(dxpl),
        )
    } else {
        (0, 0, -1)
    };
    h5_call(op, None, call, |st, r| {
        let bytes = if r < 0 { 0 } else { size * count };
        let (d, m, f) = (st.h5_id(dset), st.h5_space(mem), st.h5_space(file));
        if op == Op::H5Dread {
            args::h5_dread(d, m, f, xfer, size, count, bytes)
        } else {
            args::h5_dwrite(d, m, f, xfer, size, count, bytes)
        }
    })
}

// The hooks, one per C function, each stating its C prototype in the real function's type.

/// Hook: `H5Fcreate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Fcreate(
    name: *const c_char,
    flags: c_uint,
    fcpl: Hid,
    fapl: Hid,
) -> Hid {
    let Some(f) = real!(
        "H5Fcreate",
        unsafe extern "C" fn(*const c_char, c_uint, Hid, Hid) -> Hid
    ) else {
        return -1;
    };
    h5_call(
        Op::H5Fcreate,
        cpath(name),
        // SAFETY: forwarding the program's arguments to the real function.
        || unsafe { f(name, flags, fcpl, fapl) },
        |st, r| args::h5_fcreate(flags as i64, st.h5_new(r)),
    )
}

/// Hook: `H5Fopen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Fopen(name: *const c_char, flags: c_uint, fapl: Hid) -> Hid {
    let Some(f) = real!(
        "H5Fopen",
        unsafe extern "C" fn(*const c_char, c_uint, Hid) -> Hid
    ) else {
        return -1;
    };
    h5_call(
        Op::H5Fopen,
        cpath(name),
        // SAFETY: as above.
        || unsafe { f(name, flags, fapl) },
        |st, r| args::h5_fopen(flags as i64, st.h5_new(r)),
    )
}

/// Hook: `H5Fclose`. HDF5 flushes the file's metadata here (the dealt writes of its cache).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Fclose(file: Hid) -> Herr {
    let Some(f) = real!("H5Fclose", unsafe extern "C" fn(Hid) -> Herr) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5Fclose,
        None,
        || unsafe { f(file) },
        |st, _| args::h5_fclose(st.h5_close(file)),
    )
}

/// Hook: `H5Fflush`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Fflush(obj: Hid, scope: c_int) -> Herr {
    let Some(f) = real!("H5Fflush", unsafe extern "C" fn(Hid, c_int) -> Herr) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5Fflush,
        None,
        || unsafe { f(obj, scope) },
        |st, _| args::h5_fflush(st.h5_id(obj), scope as i64),
    )
}

/// Hook: `H5Dcreate2` (what `H5Dcreate` means since 1.8).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Dcreate2(
    loc: Hid,
    name: *const c_char,
    dtype: Hid,
    space: Hid,
    lcpl: Hid,
    dcpl: Hid,
    dapl: Hid,
) -> Hid {
    let Some(f) = real!(
        "H5Dcreate2",
        unsafe extern "C" fn(Hid, *const c_char, Hid, Hid, Hid, Hid, Hid) -> Hid
    ) else {
        return -1;
    };
    let size = if recording() { type_size(dtype) } else { 0 };
    h5_call(
        Op::H5Dcreate2,
        cpath(name),
        // SAFETY: as above.
        || unsafe { f(loc, name, dtype, space, lcpl, dcpl, dapl) },
        |st, r| {
            let (l, s) = (st.h5_id(loc), st.h5_id(space));
            args::h5_dcreate2(l, size, s, st.h5_new(r))
        },
    )
}

/// Hook: `H5Dopen2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Dopen2(loc: Hid, name: *const c_char, dapl: Hid) -> Hid {
    let Some(f) = real!(
        "H5Dopen2",
        unsafe extern "C" fn(Hid, *const c_char, Hid) -> Hid
    ) else {
        return -1;
    };
    h5_call(
        Op::H5Dopen2,
        cpath(name),
        // SAFETY: as above.
        || unsafe { f(loc, name, dapl) },
        |st, r| {
            let l = st.h5_id(loc);
            args::h5_dopen2(l, st.h5_new(r))
        },
    )
}

/// Hook: `H5Dcreate1`, the 1.6 API that older codes still call (Meep 1.25 does; without
/// this hook its datasets were unknown identifiers, `dset = -1`): recorded as `H5Dcreate2`,
/// which is what it means (default link creation and access lists).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Dcreate1(
    loc: Hid,
    name: *const c_char,
    dtype: Hid,
    space: Hid,
    dcpl: Hid,
) -> Hid {
    let Some(f) = real!(
        "H5Dcreate1",
        unsafe extern "C" fn(Hid, *const c_char, Hid, Hid, Hid) -> Hid
    ) else {
        return -1;
    };
    let size = if recording() { type_size(dtype) } else { 0 };
    h5_call(
        Op::H5Dcreate2,
        cpath(name),
        // SAFETY: as above.
        || unsafe { f(loc, name, dtype, space, dcpl) },
        |st, r| {
            let (l, s) = (st.h5_id(loc), st.h5_id(space));
            args::h5_dcreate2(l, size, s, st.h5_new(r))
        },
    )
}

/// Hook: `H5Dopen1` (the 1.6 API, as `H5Dcreate1`): recorded as `H5Dopen2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Dopen1(loc: Hid, name: *const c_char) -> Hid {
    let Some(f) = real!("H5Dopen1", unsafe extern "C" fn(Hid, *const c_char) -> Hid) else {
        return -1;
    };
    h5_call(
        Op::H5Dopen2,
        cpath(name),
        // SAFETY: as above.
        || unsafe { f(loc, name) },
        |st, r| {
            let l = st.h5_id(loc);
            args::h5_dopen2(l, st.h5_new(r))
        },
    )
}

/// Hook: `H5Dwrite`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Dwrite(
    dset: Hid,
    mtype: Hid,
    mem: Hid,
    file: Hid,
    dxpl: Hid,
    buf: *const c_void,
) -> Herr {
    let Some(f) = real!(
        "H5Dwrite",
        unsafe extern "C" fn(Hid, Hid, Hid, Hid, Hid, *const c_void) -> Herr
    ) else {
        return -1;
    };
    // SAFETY: as above.
    transfer(Op::H5Dwrite, dset, mtype, mem, file, dxpl, || unsafe {
        f(dset, mtype, mem, file, dxpl, buf)
    })
}

/// Hook: `H5Dread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Dread(
    dset: Hid,
    mtype: Hid,
    mem: Hid,
    file: Hid,
    dxpl: Hid,
    buf: *mut c_void,
) -> Herr {
    let Some(f) = real!(
        "H5Dread",
        unsafe extern "C" fn(Hid, Hid, Hid, Hid, Hid, *mut c_void) -> Herr
    ) else {
        return -1;
    };
    // SAFETY: as above.
    transfer(Op::H5Dread, dset, mtype, mem, file, dxpl, || unsafe {
        f(dset, mtype, mem, file, dxpl, buf)
    })
}

/// Hook: `H5Dclose`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Dclose(dset: Hid) -> Herr {
    let Some(f) = real!("H5Dclose", unsafe extern "C" fn(Hid) -> Herr) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5Dclose,
        None,
        || unsafe { f(dset) },
        |st, _| args::h5_dclose(st.h5_close(dset)),
    )
}

/// Hook: `H5Dset_extent`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Dset_extent(dset: Hid, size: *const Hsize) -> Herr {
    let Some(f) = real!(
        "H5Dset_extent",
        unsafe extern "C" fn(Hid, *const Hsize) -> Herr
    ) else {
        return -1;
    };
    // The rank is the dataset's (before the call: it does not change).
    let n = if recording() {
        with_dataset_space(dset, 0, space_rank)
    } else {
        0
    };
    // SAFETY: as above.
    h5_call(
        Op::H5DsetExtent,
        None,
        || unsafe { f(dset, size) },
        |st, _| {
            let mut p = args::h5_dset_extent(st.h5_id(dset), n as i64);
            p.extend(dims(size, n, 0));
            p
        },
    )
}

/// Hook: `H5Dget_space`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Dget_space(dset: Hid) -> Hid {
    let Some(f) = real!("H5Dget_space", unsafe extern "C" fn(Hid) -> Hid) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5DgetSpace,
        None,
        || unsafe { f(dset) },
        |st, r| {
            let d = st.h5_id(dset);
            args::h5_dget_space(d, st.h5_new(r))
        },
    )
}

/// Hook: `H5Screate_simple`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Screate_simple(
    rank: c_int,
    cur: *const Hsize,
    max: *const Hsize,
) -> Hid {
    let Some(f) = real!(
        "H5Screate_simple",
        unsafe extern "C" fn(c_int, *const Hsize, *const Hsize) -> Hid
    ) else {
        return -1;
    };
    let n = rank.clamp(0, MAX_RANK as c_int) as usize;
    h5_call(
        Op::H5ScreateSimple,
        None,
        // SAFETY: as above.
        || unsafe { f(rank, cur, max) },
        |st, r| {
            let mut p = args::h5_screate_simple(rank as i64, st.h5_new(r));
            p.extend(dims(cur, n, 0));
            // No maximum dimensions: the current ones.
            let m = if max.is_null() { cur } else { max };
            p.extend(dims(m, n, 0));
            p
        },
    )
}

/// Hook: `H5Sclose`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Sclose(space: Hid) -> Herr {
    let Some(f) = real!("H5Sclose", unsafe extern "C" fn(Hid) -> Herr) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5Sclose,
        None,
        || unsafe { f(space) },
        |st, _| args::h5_sclose(st.h5_close(space)),
    )
}

/// Hook: `H5Sselect_hyperslab`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Sselect_hyperslab(
    space: Hid,
    op: c_int,
    start: *const Hsize,
    stride: *const Hsize,
    count: *const Hsize,
    block: *const Hsize,
) -> Herr {
    let Some(f) = real!(
        "H5Sselect_hyperslab",
        unsafe extern "C" fn(
            Hid,
            c_int,
            *const Hsize,
            *const Hsize,
            *const Hsize,
            *const Hsize,
        ) -> Herr
    ) else {
        return -1;
    };
    let n = if recording() { space_rank(space) } else { 0 };
    h5_call(
        Op::H5SselectHyperslab,
        None,
        // SAFETY: as above.
        || unsafe { f(space, op, start, stride, count, block) },
        |st, _| {
            let mut p = args::h5_sselect_hyperslab(st.h5_id(space), op as i64, n as i64);
            p.extend(dims(start, n, 0));
            p.extend(dims(stride, n, 1));
            p.extend(dims(count, n, 0));
            p.extend(dims(block, n, 1));
            p
        },
    )
}

/// Hook: `H5Sselect_elements`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Sselect_elements(
    space: Hid,
    op: c_int,
    num: size_t,
    coord: *const Hsize,
) -> Herr {
    let Some(f) = real!(
        "H5Sselect_elements",
        unsafe extern "C" fn(Hid, c_int, size_t, *const Hsize) -> Herr
    ) else {
        return -1;
    };
    h5_call(
        Op::H5SselectElements,
        None,
        // SAFETY: as above.
        || unsafe { f(space, op, num, coord) },
        |st, _| args::h5_sselect_elements(st.h5_id(space), op as i64, num as i64),
    )
}

/// Hook: `H5Sselect_all`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Sselect_all(space: Hid) -> Herr {
    let Some(f) = real!("H5Sselect_all", unsafe extern "C" fn(Hid) -> Herr) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5SselectAll,
        None,
        || unsafe { f(space) },
        |st, _| args::h5_sselect_all(st.h5_id(space)),
    )
}

/// Hook: `H5Sselect_none`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Sselect_none(space: Hid) -> Herr {
    let Some(f) = real!("H5Sselect_none", unsafe extern "C" fn(Hid) -> Herr) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5SselectNone,
        None,
        || unsafe { f(space) },
        |st, _| args::h5_sselect_none(st.h5_id(space)),
    )
}

/// Hook: `H5Pset_dxpl_mpio`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Pset_dxpl_mpio(dxpl: Hid, mode: c_int) -> Herr {
    let Some(f) = real!("H5Pset_dxpl_mpio", unsafe extern "C" fn(Hid, c_int) -> Herr) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5PsetDxplMpio,
        None,
        || unsafe { f(dxpl, mode) },
        |_, _| args::h5_pset_dxpl_mpio(mode as i64),
    )
}

/// Hook: `H5Pset_fapl_mpio`. The communicator is recorded as MPI calls record one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Pset_fapl_mpio(fapl: Hid, comm: *mut c_void, info: *mut c_void) -> Herr {
    let Some(f) = real!(
        "H5Pset_fapl_mpio",
        unsafe extern "C" fn(Hid, *mut c_void, *mut c_void) -> Herr
    ) else {
        return -1;
    };
    h5_call(
        Op::H5PsetFaplMpio,
        None,
        // SAFETY: as above (MPI handles are pointer-sized in both ABIs the tracer knows).
        || unsafe { f(fapl, comm, info) },
        |st, _| args::h5_pset_fapl_mpio(st.comm_id(comm)),
    )
}

/// Hook: `H5Pset_chunk`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Pset_chunk(dcpl: Hid, ndims: c_int, dim: *const Hsize) -> Herr {
    let Some(f) = real!(
        "H5Pset_chunk",
        unsafe extern "C" fn(Hid, c_int, *const Hsize) -> Herr
    ) else {
        return -1;
    };
    let n = ndims.clamp(0, MAX_RANK as c_int) as usize;
    // SAFETY: as above.
    h5_call(
        Op::H5PsetChunk,
        None,
        || unsafe { f(dcpl, ndims, dim) },
        |_, _| {
            let mut p = args::h5_pset_chunk(ndims as i64);
            p.extend(dims(dim, n, 0));
            p
        },
    )
}

/// Hook: `H5Acreate2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Acreate2(
    loc: Hid,
    name: *const c_char,
    dtype: Hid,
    space: Hid,
    acpl: Hid,
    aapl: Hid,
) -> Hid {
    let Some(f) = real!(
        "H5Acreate2",
        unsafe extern "C" fn(Hid, *const c_char, Hid, Hid, Hid, Hid) -> Hid
    ) else {
        return -1;
    };
    let size = if recording() { type_size(dtype) } else { 0 };
    h5_call(
        Op::H5Acreate2,
        cpath(name),
        // SAFETY: as above.
        || unsafe { f(loc, name, dtype, space, acpl, aapl) },
        |st, r| {
            let (l, s) = (st.h5_id(loc), st.h5_id(space));
            args::h5_acreate2(l, size, s, st.h5_new(r))
        },
    )
}

/// Hook: `H5Awrite`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Awrite(attr: Hid, mtype: Hid, buf: *const c_void) -> Herr {
    let Some(f) = real!(
        "H5Awrite",
        unsafe extern "C" fn(Hid, Hid, *const c_void) -> Herr
    ) else {
        return -1;
    };
    let (size, count) = if recording() {
        (type_size(mtype), attribute_elements(attr))
    } else {
        (0, 0)
    };
    // SAFETY: as above.
    h5_call(
        Op::H5Awrite,
        None,
        || unsafe { f(attr, mtype, buf) },
        |st, r| {
            let bytes = if r < 0 { 0 } else { size * count };
            args::h5_awrite(st.h5_id(attr), size, bytes)
        },
    )
}

/// The elements of attribute `a` (0 when HDF5 cannot say).
fn attribute_elements(a: Hid) -> i64 {
    let _g = Enter::new(BUSY);
    let (Some(get), Some(npoints), Some(close)) = (
        real!("H5Aget_space", unsafe extern "C" fn(Hid) -> Hid),
        real!(
            "H5Sget_simple_extent_npoints",
            unsafe extern "C" fn(Hid) -> i64
        ),
        real!("H5Sclose", unsafe extern "C" fn(Hid) -> Herr),
    ) else {
        return 0;
    };
    // SAFETY: `a` is the attribute the program passed; negative results are errors; the
    // dataspace opened here is closed once.
    unsafe {
        let s = get(a);
        if s < 0 {
            return 0;
        }
        let n = npoints(s).max(0);
        close(s);
        n
    }
}

/// Hook: `H5Aclose`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Aclose(attr: Hid) -> Herr {
    let Some(f) = real!("H5Aclose", unsafe extern "C" fn(Hid) -> Herr) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5Aclose,
        None,
        || unsafe { f(attr) },
        |st, _| args::h5_aclose(st.h5_close(attr)),
    )
}

/// Hook: `H5Gcreate2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Gcreate2(
    loc: Hid,
    name: *const c_char,
    lcpl: Hid,
    gcpl: Hid,
    gapl: Hid,
) -> Hid {
    let Some(f) = real!(
        "H5Gcreate2",
        unsafe extern "C" fn(Hid, *const c_char, Hid, Hid, Hid) -> Hid
    ) else {
        return -1;
    };
    h5_call(
        Op::H5Gcreate2,
        cpath(name),
        // SAFETY: as above.
        || unsafe { f(loc, name, lcpl, gcpl, gapl) },
        |st, r| {
            let l = st.h5_id(loc);
            args::h5_gcreate2(l, st.h5_new(r))
        },
    )
}

/// Hook: `H5Gclose`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn H5Gclose(group: Hid) -> Herr {
    let Some(f) = real!("H5Gclose", unsafe extern "C" fn(Hid) -> Herr) else {
        return -1;
    };
    // SAFETY: as above.
    h5_call(
        Op::H5Gclose,
        None,
        || unsafe { f(group) },
        |st, _| args::h5_gclose(st.h5_close(group)),
    )
}
