//! MPICH's `use mpi_f08` binding: `mpi_send_f08ts_`, `mpi_barrier_f08_` and friends.
//!
//! MPICH's f08 procedures (in `libmpichfort`) call `PMPI_*` (or its internal C functions)
//! directly, so neither the C hooks nor the mpif.h ones see them: without these hooks an f08
//! program left no trace at all. They are generated from the same table as the C and mpif.h
//! hooks (`f08_hook!` in `record.rs`), each argument converted by its kind's [`F08`]
//! conversion and the C wrapper called, so an f08 program's trace equals the mpif.h and C
//! ones. MPICH's generator names a procedure with a choice buffer `mpi_x_f08ts_` and any
//! other `mpi_x_f08_`; the hooks follow the same rule from the kinds.
//!
//! What MPICH passes (checked against its 4.0 `libmpichfort` by disassembly, and its
//! generator `gen_binding_f08.py`):
//! - a handle (`type(MPI_Comm)`, ...) is a sequence of one integer, passed by reference: its
//!   `MPI_VAL`, the mpif.h integer, which is the C handle in MPICH (`MPI_File` through
//!   `MPI_File_f2c`, as in mpif.h); integers, arrays, strings (hidden lengths after the last
//!   argument) and `LOGICAL`s as in mpif.h, so these kinds convert as [`Fortran`] does;
//! - `ierror` is OPTIONAL: a null pointer when absent ([`set`] checks);
//! - `type(MPI_Status)` is laid out as the C `MPI_Status` (`MPI_F08_status` in `mpi.h`:
//!   "the field order should match"), so a status is passed to C as it is;
//!   `MPI_STATUS_IGNORE` and `MPI_STATUSES_IGNORE` are the objects
//!   `MPIR_F08_MPI_STATUS(ES)_IGNORE_OBJ`, `MPI_IN_PLACE` and `MPI_BOTTOM` the objects
//!   `MPIR_F08_MPI_IN_PLACE` / `MPIR_F08_MPI_BOTTOM`, all exported by `libmpichfort`;
//! - a choice buffer (`type(*), dimension(..)` in a procedure without BIND(C)) arrives as
//!   gfortran's own array descriptor ([`GfcDesc`]), not a C descriptor: MPICH's compiled
//!   procedure builds the `CFI_cdesc_t` itself. A contiguous buffer (rank 0, or strides that
//!   `CFI_is_contiguous` accepts) passes its `base_addr`. For any other, MPICH builds a
//!   derived datatype (`cdesc_create_datatype`): the hook calls MPICH's own procedure inside
//!   the C wrapper's recording, which records the program's count and datatype, as a
//!   contiguous buffer's call is. Classifying a contiguous buffer as non-contiguous would only
//!   take the second path, so the trace never depends on the check being exact.
//!
//! Only gfortran's descriptor (GCC 8 and later, the compiler Debian builds MPICH's module
//! with) is read. The `_large` procedures (MPI-4 `MPI_COUNT_KIND` counts,
//! `mpi_send_f08ts_large_`) are not hooked: the C table has no `_c` wrapper for them but the
//! MPI-IO data calls', which MPICH's f08 binding does not export. Open MPI exports some of the
//! same names (`mpi_barrier_f08_`); its procedures go through the `ompi_*_f` hooks
//! (`fortran.rs`), so under any binding but MPICH's ([`mpich`]) these hooks pass the call on.

use super::abi::{self, StatusBuf};
use super::fortran::{Fint, set};
use super::kinds::*;
use super::{MPI_ERR_OTHER, finalize_common, init_common};
use crate::real::{lookup_global, real};
use libc::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Whether the program's f08 binding is MPICH's: `libmpichfort` exports its f08 constants'
/// objects. Decided once (the binding is linked into the program).
pub fn mpich() -> bool {
    static SEEN: AtomicU8 = AtomicU8::new(0);
    match SEEN.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let yes = lookup_global("MPIR_F08_MPI_STATUS_IGNORE_OBJ\0") != 0;
            SEEN.store(if yes { 1 } else { 2 }, Ordering::Relaxed);
            yes
        }
    }
}

/// The address of one of MPICH's f08 constant objects, looked up once.
macro_rules! object {
    ($name:literal) => {{
        static A: AtomicUsize = AtomicUsize::new(0);
        let mut a = A.load(Ordering::Relaxed);
        if a == 0 {
            a = lookup_global(concat!($name, "\0"));
            A.store(a, Ordering::Relaxed);
        }
        a
    }};
}

fn status_ignore_obj() -> usize {
    object!("MPIR_F08_MPI_STATUS_IGNORE_OBJ")
}

fn statuses_ignore_obj() -> usize {
    object!("MPIR_F08_MPI_STATUSES_IGNORE_OBJ")
}

/// How a kind crosses MPICH's f08 binding (see the module doc).
pub trait F08: Sized {
    /// The f08 argument.
    type F: Copy;
    /// The C argument and whatever must live until the call returns.
    type Tmp;
    /// Converts the f08 argument.
    fn from_f08(f: Self::F) -> Self::Tmp;
    /// Sizes an array kind (`[n]` in the table), once every argument is converted.
    fn set_len(_t: &mut Self::Tmp, _n: usize) {}
    /// The C argument.
    fn c(t: &mut Self::Tmp) -> Self;
    /// Copies outputs back to the f08 argument.
    fn back(_t: &Self::Tmp) {}
    /// Whether the C function can make the call: false for a buffer only MPICH's own
    /// procedure can describe (non-contiguous).
    fn direct(_t: &Self::Tmp) -> bool {
        true
    }
}

/// A kind in a call MPICH's own procedure makes (a non-contiguous buffer somewhere): the
/// argument to give that procedure and the C view the recording reads, both pointing at the
/// same memory, so that what MPICH writes is what is recorded and what `back` copies. Only
/// the kinds the choice-buffer calls take implement it, so a table entry that needs another
/// does not compile.
pub trait F08Fwd: F08 {
    /// The f08 argument for MPICH's procedure and the C argument for the recording.
    fn fwd(f: Self::F, t: &mut Self::Tmp) -> (Self::F, Self);
}

// Kinds that cross the f08 binding as they cross mpif.h (see the module doc).
macro_rules! as_mpifh {
    ($($kind:ty),* $(,)?) => {$(
        impl F08 for $kind {
            type F = <$kind as Fortran>::F;
            type Tmp = <$kind as Fortran>::Tmp;
            fn from_f08(f: Self::F) -> Self::Tmp {
                <$kind as Fortran>::from_f(f)
            }
            fn set_len(t: &mut Self::Tmp, n: usize) {
                <$kind as Fortran>::set_len(t, n)
            }
            fn c(t: &mut Self::Tmp) -> Self {
                <$kind as Fortran>::c(t)
            }
            fn back(t: &Self::Tmp) {
                <$kind as Fortran>::back(t)
            }
        }
    )*};
}
as_mpifh!(
    Comm, Datatype, ReduceOp, Info, Group, Request, Message, File, Count, BigCount, Peer, Tag, Int,
    Offset, Aint, Ints, Aints, OffsetOut, Requests, Index, IntOut, Indices, Errhandler, IntsOut,
);

// Inputs read by value (and `OffsetOut`, which points at the program's own variable): MPICH's
// procedure reads the program's argument, the C view holds the same value.
macro_rules! fwd_as_is {
    ($($kind:ty),* $(,)?) => {$(
        impl F08Fwd for $kind {
            fn fwd(f: Self::F, t: &mut Self::Tmp) -> (Self::F, Self) {
                (f, <$kind as F08>::c(t))
            }
        }
    )*};
}
fwd_as_is!(
    Comm, Datatype, ReduceOp, Info, Group, File, Count, BigCount, Peer, Tag, Int, Offset, Aint,
    Ints, Aints, OffsetOut,
);

/// Handle kinds whose C handle is the f08 `MPI_VAL` itself in MPICH (all but `MPI_File`, a
/// pointer in C): MPICH's procedure can write such a handle where the C view reads it.
pub trait IntHandle: Handle {}
impl IntHandle for Comm {}
impl IntHandle for Datatype {}
impl IntHandle for ReduceOp {}
impl IntHandle for Info {}
impl IntHandle for Group {}
impl IntHandle for Request {}
impl IntHandle for Message {}

macro_rules! handle_ptr_f08 {
    ($($kind:ident),*) => {$(
        impl<K: Handle> F08 for $kind<K> {
            type F = *mut Fint;
            type Tmp = HandleOut;
            fn from_f08(f: *mut Fint) -> HandleOut {
                <$kind<K> as Fortran>::from_f(f)
            }
            fn c(t: &mut HandleOut) -> Self {
                <$kind<K> as Fortran>::c(t)
            }
            fn back(t: &HandleOut) {
                <$kind<K> as Fortran>::back(t)
            }
        }

        impl<K: IntHandle> F08Fwd for $kind<K> {
            fn fwd(_f: *mut Fint, t: &mut HandleOut) -> (*mut Fint, Self) {
                // MPICH writes (and reads) the 4-byte handle at the start of the C slot, where
                // `Handle::load` reads an MPICH handle; `back` copies it to the program.
                let c = <$kind<K> as Fortran>::c(t);
                (c.0.cast(), c)
            }
        }
    )*};
}
handle_ptr_f08!(New, Ref);

impl<K: Handle> F08 for Handles<K> {
    type F = *mut Fint;
    type Tmp = <Handles<K> as Fortran>::Tmp;
    fn from_f08(f: *mut Fint) -> Self::Tmp {
        <Handles<K> as Fortran>::from_f(f)
    }
    fn set_len(t: &mut Self::Tmp, n: usize) {
        <Handles<K> as Fortran>::set_len(t, n)
    }
    fn c(t: &mut Self::Tmp) -> Self {
        <Handles<K> as Fortran>::c(t)
    }
}

impl<K: Handle> F08Fwd for Handles<K> {
    fn fwd(f: *mut Fint, t: &mut Self::Tmp) -> (*mut Fint, Self) {
        // Read only: MPICH reads the program's array, the C view a copy of it.
        (f, <Handles<K> as F08>::c(t))
    }
}

/// gfortran's array descriptor header (GCC 8 and later; `libgfortran.h`), followed by one
/// [`GfcDim`] per dimension.
#[repr(C)]
pub struct GfcDesc {
    base_addr: *mut c_void,
    offset: isize,
    elem_len: usize,
    version: c_int,
    rank: i8,
    ty: i8,
    attribute: i16,
    /// Bytes between two elements (the element length but for sections of components).
    span: isize,
}

/// One dimension of a [`GfcDesc`]: the stride in `span`s and the bounds.
#[repr(C)]
struct GfcDim {
    stride: isize,
    lbound: isize,
    ubound: isize,
}

/// A choice buffer: its address (MPI_IN_PLACE and MPI_BOTTOM translated) and whether the C
/// function can take it.
pub struct Choice<K> {
    c: K,
    contiguous: bool,
}

/// Reads a descriptor: its base address and whether its elements are contiguous, as
/// `CFI_is_contiguous` decides on the C descriptor MPICH makes of it (`sm = stride * span`,
/// `extent = ubound - lbound + 1`; an assumed-size array, extent -1 in its last dimension, is
/// contiguous).
fn choice(d: *const GfcDesc) -> (*mut c_void, bool) {
    if d.is_null() {
        return (std::ptr::null_mut(), true);
    }
    // SAFETY: gfortran passes a descriptor for every choice buffer; its header is read, then
    // as many dimensions as its rank says it has.
    let h = unsafe { &*d };
    let rank = h.rank.max(0) as usize;
    // SAFETY: the dimensions follow the header.
    let dims = unsafe { d.add(1) }.cast::<GfcDim>();
    // SAFETY: `rank` dimensions are present.
    let dim = |i: usize| unsafe { &*dims.add(i) };
    if rank == 0 {
        return (h.base_addr, true);
    }
    let last = dim(rank - 1);
    if last.ubound - last.lbound + 1 == -1 {
        return (h.base_addr, true);
    }
    let mut want = h.elem_len as isize;
    for i in 0..rank {
        let d = dim(i);
        let sm = d.stride.wrapping_mul(h.span);
        if sm != want {
            return (h.base_addr, false);
        }
        want = sm.wrapping_mul(d.ubound - d.lbound + 1);
    }
    (h.base_addr, true)
}

/// A buffer's address as C takes it: MPICH's f08 `MPI_BOTTOM` object is C's `MPI_BOTTOM`
/// (null), its `MPI_IN_PLACE` object C's `MPI_IN_PLACE` where the call accepts it.
fn base(p: *mut c_void, in_place: bool) -> *mut c_void {
    let a = p as usize;
    if a != 0 && a == object!("MPIR_F08_MPI_BOTTOM") {
        return std::ptr::null_mut();
    }
    if in_place && a != 0 && a == object!("MPIR_F08_MPI_IN_PLACE") {
        return abi::in_place_value();
    }
    p
}

macro_rules! choice_buffer {
    ($($kind:ident, $in_place:literal, $cast:ident;)*) => {$(
        impl F08 for $kind {
            type F = *const GfcDesc;
            type Tmp = Choice<$kind>;
            fn from_f08(f: *const GfcDesc) -> Choice<$kind> {
                let (p, contiguous) = choice(f);
                Choice {
                    c: $kind(base(p, $in_place).$cast()),
                    contiguous,
                }
            }
            fn c(t: &mut Choice<$kind>) -> $kind {
                t.c
            }
            fn direct(t: &Choice<$kind>) -> bool {
                t.contiguous
            }
        }

        impl F08Fwd for $kind {
            fn fwd(f: *const GfcDesc, t: &mut Choice<$kind>) -> (*const GfcDesc, $kind) {
                (f, t.c)
            }
        }
    )*};
}
choice_buffer! {
    Buf, true, cast_const;
    BufMut, true, cast;
    IoBuf, false, cast_const;
    IoBufMut, false, cast;
}

/// A status the call writes: the program's `type(MPI_Status)`, which is a C status in MPICH.
pub struct StatusF08 {
    f: *mut Fint,
    ignore: bool,
    own: StatusBuf,
}

impl F08 for Status {
    type F = *mut Fint;
    type Tmp = StatusF08;
    fn from_f08(f: *mut Fint) -> StatusF08 {
        StatusF08 {
            f,
            ignore: f.is_null() || f as usize == status_ignore_obj(),
            own: [0; 8],
        }
    }
    fn c(t: &mut StatusF08) -> Status {
        if t.ignore {
            Status(abi::status_ignore_value())
        } else {
            Status(t.f.cast())
        }
    }
}

impl F08Fwd for Status {
    fn fwd(f: *mut Fint, t: &mut StatusF08) -> (*mut Fint, Status) {
        if t.ignore {
            // A status of ours for MPICH to fill, so that the recording can read what the call
            // moved (the C wrapper substitutes its own for MPI_STATUS_IGNORE, which MPICH's
            // procedure would not fill).
            let p = t.own.as_mut_ptr();
            (p.cast(), Status(p.cast()))
        } else {
            (f, Status(f.cast()))
        }
    }
}

impl F08 for Statuses {
    type F = *mut Fint;
    type Tmp = Statuses;
    fn from_f08(f: *mut Fint) -> Statuses {
        if f.is_null() || f as usize == statuses_ignore_obj() {
            Statuses(abi::status_ignore_value())
        } else {
            // C statuses, one after the other, as the program's array holds them.
            Statuses(f.cast())
        }
    }
    fn c(t: &mut Statuses) -> Statuses {
        *t
    }
}

impl F08 for AddrOut {
    /// `type(c_ptr), intent(out) :: buffer_addr`: unlike mpif.h, f08 gets the address back.
    type F = *mut c_void;
    type Tmp = *mut c_void;
    fn from_f08(f: *mut c_void) -> *mut c_void {
        f
    }
    fn c(t: &mut *mut c_void) -> AddrOut {
        AddrOut(*t)
    }
}

// ---------------------------------------------------------------------------------------------
// Init and finalize (MPICH's call `PMPI_Init`/`PMPI_Finalize`): inside the tracer's bracket,
// as the mpif.h ones. Under Open MPI they call its `ompi_init_f`, whose hook brackets them.

macro_rules! bracketed_f08 {
    ($($name:ident($($arg:ident: $ty:ty),*) => $common:ident;)*) => {$(
        #[doc = concat!("MPICH's `", stringify!($name), "`, in the tracer's bracket.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty,)* ierr: *mut Fint) {
            let Some(f) = real!(stringify!($name), unsafe extern "C" fn($($ty,)* *mut Fint)) else {
                return set(ierr, MPI_ERR_OTHER);
            };
            if !mpich() {
                // SAFETY: forwarding the program's arguments.
                return unsafe { f($($arg,)* ierr) };
            }
            $common(|| {
                let mut e: Fint = 0;
                // SAFETY: forwarding the program's arguments (ierror may be absent: ours).
                unsafe { f($($arg,)* &mut e) };
                set(ierr, e);
                e
            });
        }
    )*};
}
bracketed_f08! {
    mpi_init_f08_() => init_common;
    mpi_init_thread_f08_(required: *const Fint, provided: *mut Fint) => init_common;
    mpi_finalize_f08_() => finalize_common;
}

// ---------------------------------------------------------------------------------------------
// The calls with a string: MPICH's f08 procedures take what its mpif.h ones take (handle
// integers, the name and its hidden length last), so the mpif.h hooks serve.

macro_rules! as_mpifh_hook {
    ($($name:ident => $hook:ident ($($arg:ident: $ty:ty),*);)*) => {$(
        #[doc = concat!("MPICH's `", stringify!($name), "`: as `", stringify!($hook), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            if mpich() {
                // SAFETY: the same arguments as the mpif.h procedure's.
                return unsafe { super::fortran::$hook($($arg),*) };
            }
            if let Some(f) = real!(stringify!($name), unsafe extern "C" fn($($ty),*)) {
                // SAFETY: forwarding the program's arguments.
                unsafe { f($($arg),*) }
            }
        }
    )*};
}
as_mpifh_hook! {
    mpi_file_open_f08_ => mpi_file_open_ (
        comm: *const Fint, name: *const c_char, amode: *const Fint, info: *const Fint,
        fh: *mut Fint, ierr: *mut Fint, name_len: usize
    );
    mpi_file_delete_f08_ => mpi_file_delete_ (
        name: *const c_char, info: *const Fint, ierr: *mut Fint, name_len: usize
    );
    mpi_file_set_view_f08_ => mpi_file_set_view_ (
        fh: *const Fint, disp: *const i64, etype: *const Fint, filetype: *const Fint,
        datarep: *const c_char, info: *const Fint, ierr: *mut Fint, datarep_len: usize
    );
    mpi_get_processor_name_f08_ => mpi_get_processor_name_ (
        name: *mut c_char, resultlen: *mut Fint, ierr: *mut Fint, name_len: usize
    );
}
