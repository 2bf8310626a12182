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
//! Symbols carry one trailing underscore, the default of gfortran, ifort/ifx, flang and
//! nvfortran on Linux. The `mpi_f08` bindings (`*_f08`) are not hooked.

#![allow(clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::abi::{self, Flavour, StatusBuf};
use super::{H, Offset};
use crate::real::{lookup_global, real};
use libc::{c_char, c_int, c_void};

/// A Fortran `INTEGER` (MPI_Fint).
pub type Fint = c_int;

macro_rules! f2c {
    ($name:ident, $sym:literal) => {
        /// A Fortran handle as a C handle.
        fn $name(f: Fint) -> H {
            if abi::flavour() == Flavour::Mpich {
                // MPICH's handles are the same integers in C and Fortran.
                return f as u32 as usize as H;
            }
            match real!($sym, unsafe extern "C" fn(Fint) -> H) {
                // SAFETY: the conversion accepts any integer (an invalid one gives a null
                // handle, which the call then rejects as the application's error).
                Some(conv) => unsafe { conv(f) },
                None => std::ptr::null_mut(),
            }
        }
    };
}
f2c!(comm_f2c, "PMPI_Comm_f2c");
f2c!(type_f2c, "PMPI_Type_f2c");
f2c!(op_f2c, "PMPI_Op_f2c");
f2c!(info_f2c, "PMPI_Info_f2c");
f2c!(req_f2c, "PMPI_Request_f2c");

macro_rules! c2f {
    ($name:ident, $sym:literal) => {
        /// A C handle as a Fortran handle.
        fn $name(h: H) -> Fint {
            if abi::flavour() == Flavour::Mpich {
                return h as usize as u32 as Fint;
            }
            match real!($sym, unsafe extern "C" fn(H) -> Fint) {
                // SAFETY: `h` is a handle MPI just returned.
                Some(conv) => unsafe { conv(h) },
                None => -1,
            }
        }
    };
}
c2f!(comm_c2f, "PMPI_Comm_c2f");
c2f!(type_c2f, "PMPI_Type_c2f");
c2f!(req_c2f, "PMPI_Request_c2f");

/// `MPI_File` is a pointer in both libraries: always through the library's conversion.
fn file_f2c(f: Fint) -> H {
    match real!("PMPI_File_f2c", unsafe extern "C" fn(Fint) -> H) {
        // SAFETY: as for the other conversions.
        Some(conv) => unsafe { conv(f) },
        None => std::ptr::null_mut(),
    }
}

fn file_c2f(h: H) -> Fint {
    match real!("PMPI_File_c2f", unsafe extern "C" fn(H) -> Fint) {
        // SAFETY: `h` is a file handle MPI just returned (or the null file).
        Some(conv) => unsafe { conv(h) },
        None => -1,
    }
}

/// The value of a C global `MPI_Fint *` such as `MPI_F_STATUS_IGNORE`, or 0.
fn global_ptr(name: &'static str) -> usize {
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
fn fbuf(p: *const c_void) -> *mut c_void {
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

/// Runs `call` with a C status and copies it into the Fortran status, unless the program
/// passed `MPI_STATUS_IGNORE`.
fn with_status(fstatus: *mut Fint, call: impl FnOnce(H) -> c_int) -> c_int {
    if fstatus.is_null() || fstatus as usize == global_ptr("MPI_F_STATUS_IGNORE\0") {
        return call(abi::status_ignore_value());
    }
    let mut cs: StatusBuf = [0; 8];
    let rc = call(cs.as_mut_ptr().cast());
    if let Some(c2f) = real!(
        "PMPI_Status_c2f",
        unsafe extern "C" fn(*const c_void, *mut Fint) -> c_int
    ) {
        // SAFETY: `cs` holds the status MPI just wrote; `fstatus` is the program's status array.
        unsafe { c2f(cs.as_ptr().cast(), fstatus) };
    }
    rc
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

fn set(ierr: *mut Fint, rc: c_int) {
    if !ierr.is_null() {
        // SAFETY: the program's ierr argument.
        unsafe { *ierr = rc };
    }
}

/// Reads a Fortran integer argument.
fn v(p: *const Fint) -> Fint {
    if p.is_null() {
        0
    } else {
        // SAFETY: Fortran passes every argument by reference.
        unsafe { *p }
    }
}

fn v64(p: *const Offset) -> Offset {
    if p.is_null() {
        0
    } else {
        // SAFETY: as in `v`.
        unsafe { *p }
    }
}

// ---------------------------------------------------------------------------------------------
// Init and finalize: the binding's own functions, inside the tracer's bracket.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_init_(ierr: *mut Fint) {
    let Some(f) = real!("mpi_init_", unsafe extern "C" fn(*mut Fint)) else {
        return set(ierr, 16);
    };
    super::init_common(|| {
        // SAFETY: forwarding the program's argument.
        unsafe { f(ierr) };
        v(ierr)
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_init_thread_(
    required: *const Fint,
    provided: *mut Fint,
    ierr: *mut Fint,
) {
    let Some(f) = real!(
        "mpi_init_thread_",
        unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint)
    ) else {
        return set(ierr, 16);
    };
    super::init_common(|| {
        // SAFETY: forwarding the program's arguments.
        unsafe { f(required, provided, ierr) };
        v(ierr)
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_finalize_(ierr: *mut Fint) {
    let Some(f) = real!("mpi_finalize_", unsafe extern "C" fn(*mut Fint)) else {
        return set(ierr, 16);
    };
    super::finalize_common(|| {
        // SAFETY: forwarding the program's argument.
        unsafe { f(ierr) };
        v(ierr)
    });
}

// ---------------------------------------------------------------------------------------------
// MPI-IO.

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
    let mut c: H = std::ptr::null_mut();
    // SAFETY: converted arguments of the program's call.
    let rc = unsafe {
        super::MPI_File_open(
            comm_f2c(v(comm)),
            path.as_ptr(),
            v(amode),
            info_f2c(v(info)),
            &mut c,
        )
    };
    if !fh.is_null() {
        // SAFETY: the program's output argument.
        unsafe { *fh = file_c2f(c) };
    }
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_file_close_(fh: *mut Fint, ierr: *mut Fint) {
    let mut c = file_f2c(v(fh));
    // SAFETY: a converted file handle.
    let rc = unsafe { super::MPI_File_close(&mut c) };
    if !fh.is_null() {
        // SAFETY: the program's in-out argument (MPI_FILE_NULL after a close).
        unsafe { *fh = file_c2f(c) };
    }
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
        super::MPI_File_delete(path.as_ptr(), info_f2c(v(info)))
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_file_set_size_(fh: *const Fint, size: *const Offset, ierr: *mut Fint) {
    // SAFETY: converted arguments.
    set(ierr, unsafe {
        super::MPI_File_set_size(file_f2c(v(fh)), v64(size))
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_file_get_size_(fh: *const Fint, size: *mut Offset, ierr: *mut Fint) {
    // SAFETY: converted arguments; `size` is the program's output.
    set(ierr, unsafe {
        super::MPI_File_get_size(file_f2c(v(fh)), size)
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_file_set_view_(
    fh: *const Fint,
    disp: *const Offset,
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
            file_f2c(v(fh)),
            v64(disp),
            type_f2c(v(etype)),
            type_f2c(v(filetype)),
            rep.as_ptr(),
            info_f2c(v(info)),
        )
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_file_seek_(
    fh: *const Fint,
    off: *const Offset,
    whence: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: converted arguments.
    set(ierr, unsafe {
        super::MPI_File_seek(file_f2c(v(fh)), v64(off), v(whence))
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_file_sync_(fh: *const Fint, ierr: *mut Fint) {
    // SAFETY: a converted file handle.
    set(ierr, unsafe { super::MPI_File_sync(file_f2c(v(fh))) });
}

macro_rules! f_file_data {
    ($($name:ident => $c:ident, $buf:ty;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fh: *const Fint,
            buf: $buf,
            count: *const Fint,
            dt: *const Fint,
            status: *mut Fint,
            ierr: *mut Fint,
        ) {
            let rc = with_status(status, |st| {
                // SAFETY: converted arguments; the buffer is the program's.
                unsafe { super::$c(file_f2c(v(fh)), buf, v(count), type_f2c(v(dt)), st) }
            });
            set(ierr, rc);
        }
    )*};
}
f_file_data! {
    mpi_file_read_ => MPI_File_read, *mut c_void;
    mpi_file_read_all_ => MPI_File_read_all, *mut c_void;
    mpi_file_read_shared_ => MPI_File_read_shared, *mut c_void;
    mpi_file_read_ordered_ => MPI_File_read_ordered, *mut c_void;
    mpi_file_write_ => MPI_File_write, *const c_void;
    mpi_file_write_all_ => MPI_File_write_all, *const c_void;
    mpi_file_write_shared_ => MPI_File_write_shared, *const c_void;
    mpi_file_write_ordered_ => MPI_File_write_ordered, *const c_void;
}

macro_rules! f_file_data_at {
    ($($name:ident => $c:ident, $buf:ty;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fh: *const Fint,
            off: *const Offset,
            buf: $buf,
            count: *const Fint,
            dt: *const Fint,
            status: *mut Fint,
            ierr: *mut Fint,
        ) {
            let rc = with_status(status, |st| {
                // SAFETY: converted arguments; the buffer is the program's.
                unsafe {
                    super::$c(file_f2c(v(fh)), v64(off), buf, v(count), type_f2c(v(dt)), st)
                }
            });
            set(ierr, rc);
        }
    )*};
}
f_file_data_at! {
    mpi_file_read_at_ => MPI_File_read_at, *mut c_void;
    mpi_file_read_at_all_ => MPI_File_read_at_all, *mut c_void;
    mpi_file_write_at_ => MPI_File_write_at, *const c_void;
    mpi_file_write_at_all_ => MPI_File_write_at_all, *const c_void;
}

// ---------------------------------------------------------------------------------------------
// Communication.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_barrier_(comm: *const Fint, ierr: *mut Fint) {
    // SAFETY: a converted communicator.
    set(ierr, unsafe { super::MPI_Barrier(comm_f2c(v(comm))) });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_bcast_(
    buf: *mut c_void,
    count: *const Fint,
    dt: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: converted arguments.
    set(ierr, unsafe {
        super::MPI_Bcast(
            fbuf(buf),
            v(count),
            type_f2c(v(dt)),
            v(root),
            comm_f2c(v(comm)),
        )
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_reduce_(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: *const Fint,
    dt: *const Fint,
    op: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: converted arguments.
    set(ierr, unsafe {
        super::MPI_Reduce(
            fbuf(sbuf),
            fbuf(rbuf),
            v(count),
            type_f2c(v(dt)),
            op_f2c(v(op)),
            v(root),
            comm_f2c(v(comm)),
        )
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_allreduce_(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: *const Fint,
    dt: *const Fint,
    op: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: converted arguments.
    set(ierr, unsafe {
        super::MPI_Allreduce(
            fbuf(sbuf),
            fbuf(rbuf),
            v(count),
            type_f2c(v(dt)),
            op_f2c(v(op)),
            comm_f2c(v(comm)),
        )
    });
}

macro_rules! f_rooted {
    ($($name:ident => $c:ident;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            scount: *const Fint,
            stype: *const Fint,
            rbuf: *mut c_void,
            rcount: *const Fint,
            rtype: *const Fint,
            root: *const Fint,
            comm: *const Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: converted arguments.
            set(ierr, unsafe {
                super::$c(
                    fbuf(sbuf),
                    v(scount),
                    type_f2c(v(stype)),
                    fbuf(rbuf),
                    v(rcount),
                    type_f2c(v(rtype)),
                    v(root),
                    comm_f2c(v(comm)),
                )
            });
        }
    )*};
}
f_rooted! {
    mpi_gather_ => MPI_Gather;
    mpi_scatter_ => MPI_Scatter;
}

macro_rules! f_all {
    ($($name:ident => $c:ident;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            scount: *const Fint,
            stype: *const Fint,
            rbuf: *mut c_void,
            rcount: *const Fint,
            rtype: *const Fint,
            comm: *const Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: converted arguments.
            set(ierr, unsafe {
                super::$c(
                    fbuf(sbuf),
                    v(scount),
                    type_f2c(v(stype)),
                    fbuf(rbuf),
                    v(rcount),
                    type_f2c(v(rtype)),
                    comm_f2c(v(comm)),
                )
            });
        }
    )*};
}
f_all! {
    mpi_allgather_ => MPI_Allgather;
    mpi_alltoall_ => MPI_Alltoall;
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_send_(
    buf: *const c_void,
    count: *const Fint,
    dt: *const Fint,
    dest: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: converted arguments.
    set(ierr, unsafe {
        super::MPI_Send(
            fbuf(buf),
            v(count),
            type_f2c(v(dt)),
            v(dest),
            v(tag),
            comm_f2c(v(comm)),
        )
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_recv_(
    buf: *mut c_void,
    count: *const Fint,
    dt: *const Fint,
    src: *const Fint,
    tag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    let rc = with_status(status, |st| {
        // SAFETY: converted arguments.
        unsafe {
            super::MPI_Recv(
                fbuf(buf),
                v(count),
                type_f2c(v(dt)),
                v(src),
                v(tag),
                comm_f2c(v(comm)),
                st,
            )
        }
    });
    set(ierr, rc);
}

macro_rules! f_nonblocking {
    ($($name:ident => $c:ident, $buf:ty;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            buf: $buf,
            count: *const Fint,
            dt: *const Fint,
            peer: *const Fint,
            tag: *const Fint,
            comm: *const Fint,
            req: *mut Fint,
            ierr: *mut Fint,
        ) {
            let mut c: H = std::ptr::null_mut();
            // SAFETY: converted arguments; `c` receives the request.
            let rc = unsafe {
                super::$c(
                    fbuf(buf as *const c_void) as $buf,
                    v(count),
                    type_f2c(v(dt)),
                    v(peer),
                    v(tag),
                    comm_f2c(v(comm)),
                    &mut c,
                )
            };
            if !req.is_null() {
                // SAFETY: the program's output argument; `c` holds a request of this ABI.
                unsafe { *req = req_c2f(abi::rd(&c, 0) as H) };
            }
            set(ierr, rc);
        }
    )*};
}
f_nonblocking! {
    mpi_isend_ => MPI_Isend, *const c_void;
    mpi_irecv_ => MPI_Irecv, *mut c_void;
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_wait_(req: *mut Fint, status: *mut Fint, ierr: *mut Fint) {
    let mut c = req_f2c(v(req));
    let rc = with_status(status, |st| {
        // SAFETY: a converted request, updated in place.
        unsafe { super::MPI_Wait(&mut c, st) }
    });
    if !req.is_null() {
        // SAFETY: the program's in-out argument (MPI_REQUEST_NULL once complete).
        unsafe { *req = req_c2f(abi::rd(&c, 0) as H) };
    }
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_waitall_(
    count: *const Fint,
    reqs: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    let n = v(count).max(0) as usize;
    if reqs.is_null() {
        return set(ierr, 0);
    }
    // SAFETY: MPI requires `count` requests in the array.
    let freqs = unsafe { std::slice::from_raw_parts_mut(reqs, n) };
    // C requests in this ABI's width: pointers in Open MPI, 4-byte ints in MPICH.
    let mut wide: Vec<H> = freqs.iter().map(|&f| req_f2c(f)).collect();
    let mut narrow: Vec<u32> = wide.iter().map(|&h| h as usize as u32).collect();
    let mpich = abi::flavour() == Flavour::Mpich;
    let creqs: *mut H = if mpich {
        narrow.as_mut_ptr().cast()
    } else {
        wide.as_mut_ptr()
    };
    let ignore = statuses.is_null() || statuses as usize == global_ptr("MPI_F_STATUSES_IGNORE\0");
    let mut cst: Vec<StatusBuf> = vec![[0; 8]; if ignore { 0 } else { n }];
    // The C statuses are an array of MPI_Status, whose size differs by library.
    let csize = if mpich { 20 } else { 24 };
    let mut packed: Vec<u8> = vec![0; if ignore { 0 } else { n * csize }];
    let cstat: H = if ignore {
        abi::status_ignore_value()
    } else {
        packed.as_mut_ptr().cast()
    };
    // SAFETY: `creqs` holds `n` requests of this ABI and `cstat` room for `n` statuses.
    let rc = unsafe { super::MPI_Waitall(n as c_int, creqs, cstat) };
    for (i, f) in freqs.iter_mut().enumerate() {
        // SAFETY: `creqs` holds `n` requests.
        *f = req_c2f(unsafe { abi::rd(creqs, i) } as H);
    }
    if !ignore
        && let Some(c2f) = real!(
            "PMPI_Status_c2f",
            unsafe extern "C" fn(*const c_void, *mut Fint) -> c_int
        )
    {
        let fsize = abi::f_status_size();
        for (i, one) in cst.iter_mut().enumerate() {
            let src = &packed[i * csize..(i + 1) * csize];
            // Copy into an aligned buffer: the C status has 8-byte members in Open MPI.
            // SAFETY: `one` has 64 bytes, more than `csize`.
            unsafe {
                std::ptr::copy_nonoverlapping(src.as_ptr(), one.as_mut_ptr().cast(), csize);
                c2f(one.as_ptr().cast(), statuses.add(i * fsize));
            }
        }
    }
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_comm_dup_(comm: *const Fint, newcomm: *mut Fint, ierr: *mut Fint) {
    let mut c: H = std::ptr::null_mut();
    // SAFETY: converted arguments; `c` receives the new communicator.
    let rc = unsafe { super::MPI_Comm_dup(comm_f2c(v(comm)), &mut c) };
    if !newcomm.is_null() {
        // SAFETY: the program's output argument.
        unsafe { *newcomm = comm_c2f(abi::rd(&c, 0) as H) };
    }
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_comm_split_(
    comm: *const Fint,
    color: *const Fint,
    key: *const Fint,
    newcomm: *mut Fint,
    ierr: *mut Fint,
) {
    let mut c: H = std::ptr::null_mut();
    // SAFETY: converted arguments; `c` receives the new communicator.
    let rc = unsafe { super::MPI_Comm_split(comm_f2c(v(comm)), v(color), v(key), &mut c) };
    if !newcomm.is_null() {
        // SAFETY: the program's output argument.
        unsafe { *newcomm = comm_c2f(abi::rd(&c, 0) as H) };
    }
    set(ierr, rc);
}

// ---------------------------------------------------------------------------------------------
// Datatypes used for file views.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_type_contiguous_(
    count: *const Fint,
    old: *const Fint,
    new: *mut Fint,
    ierr: *mut Fint,
) {
    let mut c: H = std::ptr::null_mut();
    // SAFETY: converted arguments; `c` receives the new type.
    let rc = unsafe { super::MPI_Type_contiguous(v(count), type_f2c(v(old)), &mut c) };
    if !new.is_null() {
        // SAFETY: the program's output argument.
        unsafe { *new = type_c2f(abi::rd(&c, 0) as H) };
    }
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_type_vector_(
    count: *const Fint,
    bl: *const Fint,
    stride: *const Fint,
    old: *const Fint,
    new: *mut Fint,
    ierr: *mut Fint,
) {
    let mut c: H = std::ptr::null_mut();
    // SAFETY: converted arguments; `c` receives the new type.
    let rc =
        unsafe { super::MPI_Type_vector(v(count), v(bl), v(stride), type_f2c(v(old)), &mut c) };
    if !new.is_null() {
        // SAFETY: the program's output argument.
        unsafe { *new = type_c2f(abi::rd(&c, 0) as H) };
    }
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_type_commit_(dt: *mut Fint, ierr: *mut Fint) {
    let mut c = type_f2c(v(dt));
    // SAFETY: a converted type, committed in place (its handle does not change).
    set(ierr, unsafe { super::MPI_Type_commit(&mut c) });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_type_free_(dt: *mut Fint, ierr: *mut Fint) {
    let mut c = type_f2c(v(dt));
    // SAFETY: a converted type, freed (the handle becomes MPI_DATATYPE_NULL).
    let rc = unsafe { super::MPI_Type_free(&mut c) };
    if !dt.is_null() {
        // SAFETY: the program's in-out argument.
        unsafe { *dt = type_c2f(abi::rd(&c, 0) as H) };
    }
    set(ierr, rc);
}

/// A new datatype handle back to Fortran.
fn set_type(new: *mut Fint, c: &H) {
    if !new.is_null() {
        // SAFETY: the program's output argument; `c` holds a handle of this ABI.
        unsafe { *new = type_c2f(abi::rd(c, 0) as H) };
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_type_create_subarray_(
    ndims: *const Fint,
    sizes: *const Fint,
    subsizes: *const Fint,
    starts: *const Fint,
    order: *const Fint,
    old: *const Fint,
    new: *mut Fint,
    ierr: *mut Fint,
) {
    let mut c: H = std::ptr::null_mut();
    // SAFETY: converted arguments; the arrays are the program's (Fortran INTEGER = C int).
    let rc = unsafe {
        super::MPI_Type_create_subarray(
            v(ndims),
            sizes,
            subsizes,
            starts,
            v(order),
            type_f2c(v(old)),
            &mut c,
        )
    };
    set_type(new, &c);
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_type_create_resized_(
    old: *const Fint,
    lb: *const super::Aint,
    extent: *const super::Aint,
    new: *mut Fint,
    ierr: *mut Fint,
) {
    let mut c: H = std::ptr::null_mut();
    // SAFETY: converted arguments (MPI_ADDRESS_KIND integers are C MPI_Aint).
    let rc = unsafe {
        super::MPI_Type_create_resized(
            type_f2c(v(old)),
            if lb.is_null() { 0 } else { *lb },
            if extent.is_null() { 0 } else { *extent },
            &mut c,
        )
    };
    set_type(new, &c);
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_type_indexed_(
    count: *const Fint,
    bls: *const Fint,
    displs: *const Fint,
    old: *const Fint,
    new: *mut Fint,
    ierr: *mut Fint,
) {
    let mut c: H = std::ptr::null_mut();
    // SAFETY: converted arguments; the arrays are the program's.
    let rc = unsafe { super::MPI_Type_indexed(v(count), bls, displs, type_f2c(v(old)), &mut c) };
    set_type(new, &c);
    set(ierr, rc);
}

macro_rules! f_file_idata_at {
    ($($name:ident => $c:ident, $buf:ty;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fh: *const Fint,
            off: *const Offset,
            buf: $buf,
            count: *const Fint,
            dt: *const Fint,
            req: *mut Fint,
            ierr: *mut Fint,
        ) {
            let mut c: H = std::ptr::null_mut();
            // SAFETY: converted arguments; `c` receives the request.
            let rc = unsafe {
                super::$c(file_f2c(v(fh)), v64(off), buf, v(count), type_f2c(v(dt)), &mut c)
            };
            if !req.is_null() {
                // SAFETY: the program's output argument; `c` holds a request of this ABI.
                unsafe { *req = req_c2f(abi::rd(&c, 0) as H) };
            }
            set(ierr, rc);
        }
    )*};
}
f_file_idata_at! {
    mpi_file_iread_at_ => MPI_File_iread_at, *mut c_void;
    mpi_file_iwrite_at_ => MPI_File_iwrite_at, *const c_void;
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_sendrecv_(
    sbuf: *const c_void,
    scount: *const Fint,
    stype: *const Fint,
    dest: *const Fint,
    stag: *const Fint,
    rbuf: *mut c_void,
    rcount: *const Fint,
    rtype: *const Fint,
    src: *const Fint,
    rtag: *const Fint,
    comm: *const Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    let rc = with_status(status, |st| {
        // SAFETY: converted arguments.
        unsafe {
            super::MPI_Sendrecv(
                fbuf(sbuf),
                v(scount),
                type_f2c(v(stype)),
                v(dest),
                v(stag),
                fbuf(rbuf),
                v(rcount),
                type_f2c(v(rtype)),
                v(src),
                v(rtag),
                comm_f2c(v(comm)),
                st,
            )
        }
    });
    set(ierr, rc);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_allgatherv_(
    sbuf: *const c_void,
    scount: *const Fint,
    stype: *const Fint,
    rbuf: *mut c_void,
    rcounts: *const Fint,
    displs: *const Fint,
    rtype: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: converted arguments; the count arrays are the program's.
    set(ierr, unsafe {
        super::MPI_Allgatherv(
            fbuf(sbuf),
            v(scount),
            type_f2c(v(stype)),
            fbuf(rbuf),
            rcounts,
            displs,
            type_f2c(v(rtype)),
            comm_f2c(v(comm)),
        )
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_gatherv_(
    sbuf: *const c_void,
    scount: *const Fint,
    stype: *const Fint,
    rbuf: *mut c_void,
    rcounts: *const Fint,
    displs: *const Fint,
    rtype: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    ierr: *mut Fint,
) {
    // SAFETY: converted arguments; the count arrays are the program's.
    set(ierr, unsafe {
        super::MPI_Gatherv(
            fbuf(sbuf),
            v(scount),
            type_f2c(v(stype)),
            fbuf(rbuf),
            rcounts,
            displs,
            type_f2c(v(rtype)),
            v(root),
            comm_f2c(v(comm)),
        )
    });
}
