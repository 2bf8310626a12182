//! Fortran bindings (`mpif.h` and `use mpi`): `mpi_file_write_at_all_` and friends.
//!
//! Open MPI's Fortran bindings call `PMPI_*` directly, so a Fortran program's MPI calls never
//! reach the C wrappers: without these hooks its trace had no MPI events and, since
//! `MPI_Finalize` was never seen, no merged file at all. Each hook here converts the Fortran
//! arguments the way the MPI standard defines (handles with `*_f2c`, `MPI_IN_PLACE`, status
//! arrays, blank-padded strings with their hidden length) and calls the C wrapper, which
//! records the call and forwards it to `PMPI_*`, so C and Fortran programs give the same
//! trace. `MPI_Init` and `MPI_Finalize` call the binding's own function instead, which may
//! set up or tear down Fortran-specific state.
//!
//! Hooks carry one trailing underscore, the default of gfortran, ifort/ifx, flang and
//! nvfortran on Linux; the upper-case and two-underscore spellings jump to them
//! (`fortran_spellings!`).
//!
//! `use mpi_f08`: Open MPI 4.1's procedures (`mpi_send_f08_` in `libmpi_usempif08`) pass each
//! handle's integer (`comm%MPI_VAL`), a status as its integer array, `MPI_IN_PLACE` as the
//! same common block, and a string with its hidden length on to the C functions behind the
//! mpif.h binding (`ompi_send_f` in `libmpi_mpifh`, of which `mpi_send_` is an alias), called
//! through the PLT; those call `PMPI_*`. The procedures with a LOGICAL argument (`MPI_Test`,
//! `MPI_Iprobe`, `MPI_Cart_create`, `MPI_Intercomm_merge`, ...) call the mpif.h binding's
//! profiling name instead (`pmpi_test_`, of which `ompi_test_f` is the body): without that
//! spelling those calls were missing from an f08 program's trace. So the hooks here are also
//! exported as `ompi_x_f` and `pmpi_x_`, and an f08 program is recorded as a mpif.h one is. MPICH's f08 procedures
//! (`mpi_send_f08ts_`, `mpi_barrier_f08_`) call `PMPI_*` themselves: they have hooks of their
//! own, generated from the same table, in `fortran_f08.rs`.

#![allow(clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::H;
use super::abi::{self, Flavour, StatusBuf};
use super::kinds::{Comm, Datatype, File, Fortran, Info, Int, IntOut, New, Offset, Str, StrOut};
use crate::real::{lookup_global, real};
use libc::{c_char, c_int, c_void};

/// A Fortran `INTEGER` (MPI_Fint).
pub type Fint = c_int;

/// A Fortran handle as a C handle, through the library's `*_f2c` (`conv`).
pub(super) fn f2c(f: Fint, conv: Option<unsafe extern "C" fn(Fint) -> H>) -> H {
    if abi::flavour() == Flavour::Mpich {
        // MPICH's handles are the same integers in C and Fortran.
        return f as u32 as usize as H;
    }
    match conv {
        // SAFETY: the conversion accepts any integer (an invalid one gives a null handle,
        // which the call then rejects as the application's error).
        Some(conv) => unsafe { conv(f) },
        None => std::ptr::null_mut(),
    }
}

/// A C handle as a Fortran handle, through the library's `*_c2f` (`conv`).
pub(super) fn c2f(h: H, conv: Option<unsafe extern "C" fn(H) -> Fint>) -> Fint {
    if abi::flavour() == Flavour::Mpich {
        return h as usize as u32 as Fint;
    }
    match conv {
        // SAFETY: `h` is a handle MPI just returned.
        Some(conv) => unsafe { conv(h) },
        None => -1,
    }
}

/// The value of a C global `MPI_Fint *` such as `MPI_F_STATUS_IGNORE`, or 0.
pub(super) fn global_ptr(name: &'static str) -> usize {
    let a = lookup_global(name);
    if a == 0 {
        return 0;
    }
    // SAFETY: the symbol is a pointer-sized variable the MPI library defines and never frees.
    unsafe { *(a as *const usize) }
}

/// A Fortran buffer argument as a C one: Fortran's `MPI_IN_PLACE` and `MPI_BOTTOM` are
/// addresses of the library's common blocks, not the C constants.
///
/// Open MPI exports the common blocks (`mpi_fortran_in_place_`); MPICH keeps their addresses in
/// `MPIR_F_MPI_IN_PLACE` / `MPIR_F_MPI_BOTTOM`, which its Fortran `MPI_Init` fills in.
pub(super) fn fbuf(p: *const c_void) -> *mut c_void {
    let a = p as usize;
    if a == 0 {
        return std::ptr::null_mut();
    }
    let is = |names: &[&'static str], holder: &'static str| {
        names.iter().any(|n| lookup_global(n) == a) || global_ptr(holder) == a
    };
    if is(
        &[
            "mpi_fortran_in_place_\0",
            "mpi_fortran_in_place\0",
            "mpi_fortran_in_place__\0",
        ],
        "MPIR_F_MPI_IN_PLACE\0",
    ) {
        return abi::in_place_value();
    }
    if is(
        &[
            "mpi_fortran_bottom_\0",
            "mpi_fortran_bottom\0",
            "mpi_fortran_bottom__\0",
        ],
        "MPIR_F_MPI_BOTTOM\0",
    ) {
        return std::ptr::null_mut();
    }
    p as *mut c_void
}

/// Copies a C status into the program's Fortran status.
pub(super) fn status_c2f(c: &StatusBuf, f: *mut Fint) {
    if let Some(c2f) = real!(
        "PMPI_Status_c2f",
        unsafe extern "C" fn(*const c_void, *mut Fint) -> c_int
    ) {
        // SAFETY: `c` holds a status MPI wrote; `f` is the program's status array.
        unsafe { c2f(c.as_ptr().cast(), f) };
    }
}

/// A blank-padded Fortran string (with its hidden length) as a C string.
fn fstring(p: *const c_char, len: usize) -> std::ffi::CString {
    if p.is_null() {
        return std::ffi::CString::default();
    }
    // SAFETY: Fortran passes `len` characters at `p`.
    let s = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    let end = s.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    let s = &s[..end];
    let s = &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())];
    std::ffi::CString::new(s).unwrap_or_default()
}

pub(crate) fn set(ierr: *mut Fint, rc: c_int) {
    if !ierr.is_null() {
        // SAFETY: the program's ierr argument.
        unsafe { *ierr = rc };
    }
}

/// Reads a Fortran integer argument.
pub(super) fn v(p: *const Fint) -> Fint {
    if p.is_null() {
        0
    } else {
        // SAFETY: Fortran passes every argument by reference.
        unsafe { *p }
    }
}

pub(super) fn v64(p: *const i64) -> i64 {
    if p.is_null() {
        0
    } else {
        // SAFETY: as in `v`.
        unsafe { *p }
    }
}

// ---------------------------------------------------------------------------------------------
// Init and finalize: the binding's own functions, inside the tracer's bracket.

macro_rules! bracketed {
    ($($name:ident($($arg:ident: $ty:ty),*) => $common:ident;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty,)* ierr: *mut Fint) {
            let Some(f) = real!(stringify!($name), unsafe extern "C" fn($($ty,)* *mut Fint)) else {
                return set(ierr, super::MPI_ERR_OTHER);
            };
            super::$common(|| {
                // SAFETY: forwarding the program's arguments.
                unsafe { f($($arg,)* ierr) };
                v(ierr)
            });
        }
    )*};
}
bracketed! {
    mpi_init_() => init_common;
    mpi_init_thread_(required: *const Fint, provided: *mut Fint) => init_common;
    mpi_finalize_() => finalize_common;
}

fortran_spellings! {
    mpi_init_ => MPI_INIT, mpi_init__, ompi_init_f;
    mpi_init_thread_ => MPI_INIT_THREAD, mpi_init_thread__, ompi_init_thread_f;
    mpi_finalize_ => MPI_FINALIZE, mpi_finalize__, ompi_finalize_f;
    mpi_file_open_ => MPI_FILE_OPEN, mpi_file_open__, ompi_file_open_f;
    mpi_file_delete_ => MPI_FILE_DELETE, mpi_file_delete__, ompi_file_delete_f;
    mpi_file_set_view_ => MPI_FILE_SET_VIEW, mpi_file_set_view__, ompi_file_set_view_f;
    mpi_get_processor_name_ => MPI_GET_PROCESSOR_NAME, mpi_get_processor_name__,
        ompi_get_processor_name_f;
}

// ---------------------------------------------------------------------------------------------
// MPI-IO calls that take a string: its hidden length argument comes after `ierr`. The other
// Fortran hooks are generated from the table (`mpi_hooks!`).

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_file_open_(
    comm: *const Fint,
    name: *const c_char,
    amode: *const Fint,
    info: *const Fint,
    fh: *mut Fint,
    ierr: *mut Fint,
    name_len: usize,
) {
    let path = fstring(name, name_len);
    let mut out = New::<File>::from_f(fh);
    // SAFETY: converted arguments of the program's call.
    let rc = unsafe {
        super::MPI_File_open(
            Comm::from_f(comm),
            Str(path.as_ptr()),
            Int::from_f(amode),
            Info::from_f(info),
            New::c(&mut out),
        )
    };
    New::<File>::back(&out);
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_file_delete_(
    name: *const c_char,
    info: *const Fint,
    ierr: *mut Fint,
    name_len: usize,
) {
    let path = fstring(name, name_len);
    // SAFETY: converted arguments.
    set(ierr, unsafe {
        super::MPI_File_delete(Str(path.as_ptr()), Info::from_f(info))
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_file_set_view_(
    fh: *const Fint,
    disp: *const i64,
    etype: *const Fint,
    filetype: *const Fint,
    datarep: *const c_char,
    info: *const Fint,
    ierr: *mut Fint,
    datarep_len: usize,
) {
    let rep = fstring(datarep, datarep_len);
    // SAFETY: converted arguments.
    set(ierr, unsafe {
        super::MPI_File_set_view(
            File::from_f(fh),
            Offset::from_f(disp),
            Datatype::from_f(etype),
            Datatype::from_f(filetype),
            Str(rep.as_ptr()),
            Info::from_f(info),
        )
    });
}

/// `MPI_Get_processor_name`: the C wrapper fills a buffer of ours, which goes into the
/// program's blank-padded string (its hidden length last), as the bindings copy it; `resultlen`
/// is the C name's length, as both bindings give it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_get_processor_name_(
    name: *mut c_char,
    resultlen: *mut Fint,
    ierr: *mut Fint,
    name_len: usize,
) {
    // Open MPI's mpi_f08 procedure passes the length as a by-value default INTEGER (32 bits,
    // the register's upper half unspecified), gfortran's hidden length is a size_t: a name
    // buffer's length fits 32 bits either way, and blank padding must not run past it.
    let name_len = name_len as u32 as usize;
    let mut buf = [0 as c_char; abi::MAX_PROCESSOR_NAME + 1];
    let mut len: c_int = 0;
    // SAFETY: a buffer of the larger library's MPI_MAX_PROCESSOR_NAME and a valid
    // out-parameter.
    let rc = unsafe { super::MPI_Get_processor_name(StrOut(buf.as_mut_ptr()), IntOut(&mut len)) };
    if rc == super::MPI_SUCCESS {
        if !name.is_null() {
            let n = (len.max(0) as usize)
                .min(abi::MAX_PROCESSOR_NAME)
                .min(name_len);
            // SAFETY: the program's string has `name_len` characters; `buf` holds `n` of the
            // name.
            unsafe {
                std::ptr::copy_nonoverlapping(buf.as_ptr(), name, n);
                std::ptr::write_bytes(name.add(n), b' ', name_len - n);
            }
        }
        if !resultlen.is_null() {
            // SAFETY: the program's output argument.
            unsafe { *resultlen = len };
        }
    }
    set(ierr, rc);
}
