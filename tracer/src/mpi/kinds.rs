//! The argument kinds of the MPI wrappers. Each is a `#[repr(transparent)]` newtype of the C
//! type MPI declares, so a wrapper's argument list is its C signature and the type of the
//! `PMPI_*` it forwards to. Each kind states, once: its C type, its Fortran conversion
//! ([`Fortran`]), what it records (its methods) and why reading it is sound.
//!
//! Handles are `H` (pointer-sized): Open MPI's handles are pointers; MPICH's are 4-byte ints,
//! passed in the same register, and read through pointers with `abi::rd`.

use super::abi::{self, Flavour, StatusBuf, rd, rd_all, rd_h};
use super::fortran::{self as f, Fint, fbuf, global_ptr, v, v64};
use super::handles::comm_rank;
use super::{H, comm_size, globals};
use crate::real::real;
use crate::state::State;
use libc::{c_char, c_int, c_void};
use std::marker::PhantomData;

/// How a kind crosses the Fortran binding (`mpif.h`, `use mpi`): every argument by reference,
/// handles as `INTEGER`s converted with the library's `*_f2c`/`*_c2f`.
pub trait Fortran: Sized {
    /// The Fortran argument.
    type F: Copy;
    /// The C argument and whatever must live until the call returns.
    type Tmp;
    /// Converts the Fortran argument.
    fn from_f(f: Self::F) -> Self::Tmp;
    /// Sizes an array kind (`[n]` in the table), once every argument is converted.
    fn set_len(_t: &mut Self::Tmp, _n: usize) {}
    /// The C argument.
    fn c(t: &mut Self::Tmp) -> Self;
    /// Copies outputs back to the Fortran argument.
    fn back(_t: &Self::Tmp) {}
}

/// An integer argument that gives an array argument's length (`[count]` in the table).
pub trait Len {
    /// The length (0 for a negative value).
    fn array_len(&self) -> usize;
}

/// A handle type: its Fortran conversions and how the tracer numbers a new one.
pub trait Handle {
    /// A Fortran handle as a C handle.
    fn f2c(f: Fint) -> H;
    /// A C handle as a Fortran handle.
    fn c2f(h: H) -> Fint;
    /// Reads a handle of this type through a pointer the application passed.
    ///
    /// # Safety
    /// `p` must point to a handle of this type, in the loaded MPI's ABI.
    unsafe fn load(p: *const H) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { rd(p, 0) }
    }
}

macro_rules! by_value {
    ($($(#[$doc:meta])* $kind:ident($cty:ty), $fty:ty, |$f:ident| $conv:expr;)*) => {$(
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy)]
        pub struct $kind(pub $cty);

        impl Fortran for $kind {
            type F = $fty;
            type Tmp = $kind;
            fn from_f($f: $fty) -> $kind {
                $kind($conv)
            }
            fn c(t: &mut $kind) -> $kind {
                *t
            }
        }
    )*};
}

macro_rules! handle {
    ($($(#[$doc:meta])* $kind:ident, $f2c:literal, $c2f:literal;)*) => {$(
        by_value! { $(#[$doc])* $kind(H), *const Fint, |f| <$kind as Handle>::f2c(v(f)); }

        impl Handle for $kind {
            fn f2c(f: Fint) -> H {
                f::f2c(f, real!($f2c, unsafe extern "C" fn(Fint) -> H))
            }
            fn c2f(h: H) -> Fint {
                f::c2f(h, real!($c2f, unsafe extern "C" fn(H) -> Fint))
            }
        }
    )*};
}

handle! {
    /// `MPI_Comm`.
    Comm, "PMPI_Comm_f2c", "PMPI_Comm_c2f";
    /// `MPI_Datatype`.
    Datatype, "PMPI_Type_f2c", "PMPI_Type_c2f";
    /// `MPI_Op`.
    ReduceOp, "PMPI_Op_f2c", "PMPI_Op_c2f";
    /// `MPI_Info`.
    Info, "PMPI_Info_f2c", "PMPI_Info_c2f";
    /// `MPI_Group`.
    Group, "PMPI_Group_f2c", "PMPI_Group_c2f";
    /// `MPI_Request`, by value (as a marker for [`New`], [`Ref`] and [`Requests`]).
    Request, "PMPI_Request_f2c", "PMPI_Request_c2f";
    /// `MPI_Message` (as a marker for [`New`] and [`Ref`]).
    Message, "PMPI_Message_f2c", "PMPI_Message_c2f";
    /// `MPI_Errhandler`.
    Errhandler, "PMPI_Errhandler_f2c", "PMPI_Errhandler_c2f";
}

by_value! {
    /// `MPI_File`: a pointer in both libraries, so always through the library's conversion.
    File(H), *const Fint, |f| <File as Handle>::f2c(v(f));
    /// An `int` count.
    Count(c_int), *const Fint, |f| v(f);
    /// An `MPI_Count` count (MPI-4's `_c` calls; no Fortran binding here).
    BigCount(i64), *const i64, |f| v64(f);
    /// A peer rank in a communicator, or `MPI_ANY_SOURCE` / `MPI_PROC_NULL`.
    Peer(c_int), *const Fint, |f| v(f);
    /// A message tag.
    Tag(c_int), *const Fint, |f| v(f);
    /// Any other `int` argument recorded as it is (root, color, key, amode, whence, ...).
    Int(c_int), *const Fint, |f| v(f);
    /// `MPI_Offset`.
    Offset(i64), *const i64, |f| v64(f);
    /// `MPI_Aint` (an `INTEGER(KIND=MPI_ADDRESS_KIND)` in Fortran).
    Aint(isize), *const isize, |f| va(f);
    /// A communication send buffer (Fortran's `MPI_IN_PLACE` and `MPI_BOTTOM` translated).
    Buf(*const c_void), *const c_void, |f| fbuf(f);
    /// A communication receive buffer, as [`Buf`].
    BufMut(*mut c_void), *mut c_void, |f| fbuf(f);
    /// An MPI-IO buffer to write (never `MPI_IN_PLACE`: passed as it is).
    IoBuf(*const c_void), *const c_void, |f| f;
    /// An MPI-IO buffer to read into.
    IoBufMut(*mut c_void), *mut c_void, |f| f;
    /// An `int` array the call reads (counts, displacements, sizes): Fortran `INTEGER` arrays
    /// are C `int` arrays.
    Ints(*const c_int), *const Fint, |f| f;
    /// An `MPI_Aint` array the call reads.
    Aints(*const isize), *const isize, |f| f;
    /// An `MPI_Offset` the call writes.
    OffsetOut(*mut i64), *mut i64, |f| f;
    /// An `int` array the call writes (`MPI_Cart_get`'s dims, periods, coords): Fortran
    /// `INTEGER` arrays are C `int` arrays, and a `LOGICAL` one gets C's 0 and 1, gfortran's
    /// `.false.` and `.true.`.
    IntsOut(*mut c_int), *mut Fint, |f| f;
}

impl Handle for File {
    fn f2c(f: Fint) -> H {
        file_f2c(f)
    }
    fn c2f(h: H) -> Fint {
        file_c2f(h)
    }
    unsafe fn load(p: *const H) -> usize {
        // SAFETY: forwarded from the caller; `MPI_File` is a pointer in MPICH too.
        unsafe { *p as usize }
    }
}

/// `MPI_File` is a pointer in both libraries: always through the library's conversion.
fn file_f2c(f: Fint) -> H {
    match real!("PMPI_File_f2c", unsafe extern "C" fn(Fint) -> H) {
        // SAFETY: the conversion accepts any integer (an invalid one gives a null handle,
        // which the call then rejects as the application's error).
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

/// Reads a Fortran `INTEGER(KIND=MPI_ADDRESS_KIND)` argument.
fn va(p: *const isize) -> isize {
    if p.is_null() {
        0
    } else {
        // SAFETY: Fortran passes every argument by reference.
        unsafe { *p }
    }
}

/// A C string (`MPI_File_open`'s name): the Fortran hooks of such calls are written by hand,
/// for the string's hidden length argument.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Str(pub *const c_char);

/// A C string the call writes (`MPI_Get_processor_name`'s name): its Fortran hook is written
/// by hand, as [`Str`]'s.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct StrOut(pub *mut c_char);

impl Len for Count {
    fn array_len(&self) -> usize {
        self.0.max(0) as usize
    }
}

impl Len for Comm {
    /// Arrays with one entry per member (`MPI_Alltoallw`'s types).
    fn array_len(&self) -> usize {
        self.size().max(0) as usize
    }
}

impl Len for Int {
    fn array_len(&self) -> usize {
        self.0.max(0) as usize
    }
}

impl Comm {
    /// The communicator's symbolic id (-1 for `MPI_COMM_NULL`).
    pub fn id(self, st: &mut State) -> i64 {
        st.comm_id(self.0)
    }
    /// The caller's rank in it.
    pub fn rank(self) -> i64 {
        comm_rank(self.0)
    }
    /// Its size.
    pub fn size(self) -> i64 {
        comm_size(self.0)
    }
}

impl Errhandler {
    /// The handler's id (`rsd::mpi::errhandler`).
    pub fn id(self, st: &mut State) -> i64 {
        st.errhandlers.id(abi::hv(self.0))
    }
}

impl Datatype {
    /// The datatype's symbolic id.
    pub fn id(self, st: &mut State) -> i64 {
        st.type_id(self.0)
    }
    /// Its size in bytes.
    pub fn size(self, st: &mut State) -> i64 {
        st.tsize(self.0)
    }
    /// `count` elements of it in bytes.
    pub fn bytes(self, st: &mut State, count: impl Into<i64>) -> i64 {
        count.into() * st.tsize(self.0)
    }
}

impl ReduceOp {
    /// The operation's symbolic id.
    pub fn id(self, st: &mut State) -> i64 {
        st.op_id(self.0)
    }
}

impl File {
    /// The file's index in the rank's open-file table (-1 if not open through a traced call).
    pub fn id(self, st: &mut State) -> i64 {
        st.file_id(self.0)
    }
}

// The kinds recorded as passed.
macro_rules! as_is {
    ($($kind:ident),*) => {$(
        impl $kind {
            /// As recorded: the value passed.
            #[allow(clippy::unnecessary_cast)]
            pub fn i(self) -> i64 {
                self.0 as i64
            }
        }

        impl From<$kind> for i64 {
            fn from(k: $kind) -> i64 {
                k.i()
            }
        }
    )*};
}
as_is!(Count, BigCount, Tag, Int, Offset, Aint);

impl Peer {
    /// Relative to the caller, with the library's `MPI_ANY_SOURCE` and `MPI_PROC_NULL` mapped
    /// to `rsd::mpi`'s sentinels.
    pub fn rel(self, comm: Comm) -> i64 {
        let (any, null) = abi::any_source_proc_null();
        // Only a rank needs the caller's rank (one more PMPI call).
        let me = if self.0 >= 0 { comm.rank() } else { 0 };
        rsd::mpi::encode_peer(self.0 as i64, me, any, null)
    }
}

impl Buf {
    /// `MPI_IN_PLACE`.
    pub fn in_place(self) -> bool {
        abi::in_place(self.0)
    }
}

impl BufMut {
    /// `MPI_IN_PLACE`.
    pub fn in_place(self) -> bool {
        abi::in_place(self.0.cast_const())
    }
}

/// The first `n` entries of an array the application passed (none for a null array).
fn read_array<T: Copy>(p: *const T, n: i64, conv: fn(T) -> i64) -> Vec<i64> {
    if p.is_null() || n <= 0 {
        return Vec::new();
    }
    // SAFETY: MPI requires the array to hold `n` entries, and the call has just read them.
    unsafe { std::slice::from_raw_parts(p, n as usize) }
        .iter()
        .map(|&c| conv(c))
        .collect()
}

impl Ints {
    /// The first `n` entries (none for a null array).
    pub fn read(self, n: impl Into<i64>) -> Vec<i64> {
        read_array(self.0, n.into(), i64::from)
    }
    /// The sum of the first `n` entries, one per member of a communicator of size `n`.
    pub fn sum(self, n: i64) -> i64 {
        self.read(n).iter().sum()
    }
    /// Entry `i` (0 for a null array or a negative index).
    pub fn at(self, i: i64) -> i64 {
        if self.0.is_null() || i < 0 {
            return 0;
        }
        // SAFETY: MPI requires one entry per member of the communicator, and `i` is one.
        unsafe { *self.0.add(i as usize) as i64 }
    }
}

impl Aints {
    /// The first `n` entries (none for a null array).
    pub fn read(self, n: impl Into<i64>) -> Vec<i64> {
        read_array(self.0, n.into(), |a| a as i64)
    }
}

impl IntsOut {
    /// The first `n` entries the call wrote (none for a null array).
    pub fn read(self, n: impl Into<i64>) -> Vec<i64> {
        read_array(self.0.cast_const(), n.into(), i64::from)
    }
}

impl OffsetOut {
    /// The value the call wrote (-1 if it failed).
    pub fn get(self, r: c_int) -> i64 {
        if r != super::MPI_SUCCESS || self.0.is_null() {
            return -1;
        }
        // SAFETY: MPI wrote the value through the application's non-null pointer.
        unsafe { *self.0 }
    }
}

/// A handle the call creates (`MPI_Comm *newcomm`, `MPI_Request *request`, ...).
#[repr(transparent)]
pub struct New<K>(pub *mut H, PhantomData<K>);

/// A handle the call reads and may reset (`MPI_Request *request` of `MPI_Wait`, the handle
/// `MPI_Comm_free` or `MPI_Type_free` nulls, ...).
#[repr(transparent)]
pub struct Ref<K>(pub *mut H, PhantomData<K>);

impl<K> Clone for New<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for New<K> {}
impl<K> Clone for Ref<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for Ref<K> {}

/// A C handle and the Fortran handle it goes back to.
pub struct HandleOut {
    f: *mut Fint,
    h: H,
}

// `New` starts from no handle, `Ref` from the program's; both go back after the call.
macro_rules! handle_ptr_fortran {
    ($($kind:ident, |$f:ident| $init:expr;)*) => {$(
        impl<K: Handle> Fortran for $kind<K> {
            type F = *mut Fint;
            type Tmp = HandleOut;
            fn from_f($f: *mut Fint) -> HandleOut {
                HandleOut { f: $f, h: $init }
            }
            fn c(t: &mut HandleOut) -> Self {
                $kind(&mut t.h, PhantomData)
            }
            fn back(t: &HandleOut) {
                if !t.f.is_null() {
                    // SAFETY: the program's output argument; `h` holds a handle of this type.
                    unsafe { *t.f = K::c2f(K::load(&t.h) as H) };
                }
            }
        }
    )*};
}
handle_ptr_fortran! {
    New, |f| std::ptr::null_mut();
    Ref, |f| K::f2c(v(f));
}

impl<K: Handle> Ref<K> {
    /// The handle's value, read before the call (which may reset it); 0 for a null pointer.
    pub fn peek(self) -> usize {
        if self.0.is_null() {
            0
        } else {
            // SAFETY: MPI requires a valid pointer to a handle.
            unsafe { K::load(self.0) }
        }
    }
    /// The handle, as a handle to pass on by value.
    pub fn peek_h(self) -> H {
        if self.0.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: MPI requires a valid pointer to a handle.
            unsafe { rd_h(self.0) }
        }
    }
}

impl<K: Handle> New<K> {
    /// The handle MPI wrote, if the call succeeded.
    pub fn get(self, r: c_int) -> Option<usize> {
        if r != super::MPI_SUCCESS || self.0.is_null() {
            return None;
        }
        // SAFETY: MPI wrote the new handle through the application's non-null pointer.
        Some(unsafe { K::load(self.0) })
    }
    /// The pointer, for calls that read the new handle back (`split_equivalent`).
    pub fn ptr(self) -> *mut H {
        self.0
    }
}

impl New<Comm> {
    /// The new communicator's id (-1 if the call failed or gave `MPI_COMM_NULL`).
    pub fn id(self, st: &mut State, r: c_int) -> i64 {
        match self.get(r) {
            Some(h) if globals().is_none_or(|g| h != g.comm_null) => {
                st.comms.forget(h);
                st.comms.id(h)
            }
            _ => -1,
        }
    }
}

impl New<Datatype> {
    /// The new datatype's id (-1 if the call failed).
    pub fn id(self, st: &mut State, r: c_int) -> i64 {
        match self.get(r) {
            Some(h) => {
                st.types.forget(h);
                st.type_sizes.remove(&h);
                st.types.id(h)
            }
            None => -1,
        }
    }
}

impl New<Request> {
    /// The new request's id (-1 if the call failed).
    pub fn id(self, st: &mut State, r: c_int) -> i64 {
        self.get(r).map_or(-1, |h| st.reqs.insert(h))
    }
    /// The new persistent request's id: completions leave it in the table.
    pub fn persistent_id(self, st: &mut State, r: c_int) -> i64 {
        self.get(r).map_or(-1, |h| {
            st.persistent.insert(h);
            st.reqs.insert(h)
        })
    }
}

impl New<Message> {
    /// The matched message's id, -1 for none: the call failed, found no message
    /// (`MPI_Improbe` with flag 0) or matched `MPI_PROC_NULL` (`MPI_MESSAGE_NO_PROC`, which
    /// `status` shows).
    pub fn id(self, st: &mut State, r: c_int, found: bool, status: Status) -> i64 {
        let (source, _) = status.source_tag();
        let (_, proc_null) = abi::any_source_proc_null();
        match self.get(r) {
            Some(h) if found && i64::from(source) != proc_null => st.msgs.insert(h),
            _ => -1,
        }
    }
}

/// A status the call writes (`MPI_STATUS_IGNORE` allowed).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Status(pub H);

impl Status {
    /// The application's status, or `own` when it passed `MPI_STATUS_IGNORE`, so that what
    /// the call did can be read back (a read past the end of the file moves fewer than count
    /// times the type size).
    pub fn or_own(self, own: &mut StatusBuf) -> Status {
        if abi::status_ignored(self.0) {
            Status(own.as_mut_ptr().cast())
        } else {
            self
        }
    }
    /// The source and tag the status holds (its `MPI_SOURCE` and `MPI_TAG`).
    pub fn source_tag(self) -> (c_int, c_int) {
        if abi::status_ignored(self.0) {
            return (0, 0);
        }
        // SAFETY: a status the call just filled (ours when the application ignored its own).
        unsafe { abi::status_source_tag(self.0) }
    }

    /// The count in bytes the status holds, if MPI can say.
    pub fn bytes(self) -> Option<i64> {
        let byte = globals().map_or(0, |g| g.byte);
        let f = real!(
            "PMPI_Get_count",
            unsafe extern "C" fn(H, H, *mut c_int) -> c_int
        )?;
        if byte == 0 {
            return None;
        }
        let mut n: c_int = 0;
        // SAFETY: the status the call just filled (ours or the application's) and MPI_BYTE, a
        // predefined type; `n` is a valid out-parameter.
        let ok = unsafe { f(self.0, byte as H, &mut n) } == super::MPI_SUCCESS;
        (ok && n != super::MPI_UNDEFINED && n >= 0).then_some(n as i64)
    }
}

/// A Fortran status and the C status the call fills.
pub struct StatusOut {
    f: *mut Fint,
    c: StatusBuf,
    ignore: bool,
}

impl Fortran for Status {
    type F = *mut Fint;
    type Tmp = StatusOut;
    fn from_f(f: *mut Fint) -> StatusOut {
        let ignore = f.is_null() || f as usize == global_ptr("MPI_F_STATUS_IGNORE\0");
        StatusOut {
            f,
            c: [0; 8],
            ignore,
        }
    }
    fn c(t: &mut StatusOut) -> Status {
        if t.ignore {
            Status(abi::status_ignore_value())
        } else {
            Status(t.c.as_mut_ptr().cast())
        }
    }
    fn back(t: &StatusOut) {
        if !t.ignore {
            f::status_c2f(&t.c, t.f);
        }
    }
}

/// An array of statuses the call writes (`MPI_STATUSES_IGNORE` allowed).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Statuses(pub H);

/// Fortran statuses and the packed C statuses the call fills.
pub struct StatusesOut {
    f: *mut Fint,
    packed: Vec<u8>,
    n: usize,
    ignore: bool,
}

/// The size of a C `MPI_Status`, which differs by library.
fn c_status_size() -> usize {
    if abi::flavour() == Flavour::Mpich {
        20
    } else {
        24
    }
}

impl Fortran for Statuses {
    type F = *mut Fint;
    type Tmp = StatusesOut;
    fn from_f(f: *mut Fint) -> StatusesOut {
        let ignore = f.is_null() || f as usize == global_ptr("MPI_F_STATUSES_IGNORE\0");
        StatusesOut {
            f,
            packed: Vec::new(),
            n: 0,
            ignore,
        }
    }
    fn set_len(t: &mut StatusesOut, n: usize) {
        if !t.ignore {
            t.packed = vec![0; n * c_status_size()];
            t.n = n;
        }
    }
    fn c(t: &mut StatusesOut) -> Statuses {
        if t.ignore {
            Statuses(abi::status_ignore_value())
        } else {
            Statuses(t.packed.as_mut_ptr().cast())
        }
    }
    fn back(t: &StatusesOut) {
        if t.ignore {
            return;
        }
        let (csize, fsize) = (c_status_size(), abi::f_status_size());
        for i in 0..t.n {
            // Copy into an aligned buffer: the C status has 8-byte members in Open MPI.
            let mut one: StatusBuf = [0; 8];
            let src = &t.packed[i * csize..(i + 1) * csize];
            // SAFETY: `one` has 64 bytes, more than `csize`.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), one.as_mut_ptr().cast(), csize) };
            // SAFETY: the program's array holds `n` statuses of `fsize` integers.
            f::status_c2f(&one, unsafe { t.f.add(i * fsize) });
        }
    }
}

/// An array of requests the call reads and may reset (`MPI_Waitall`).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Requests(pub *mut H);

impl Requests {
    /// The first `n` handles, read before the call (which resets the completed ones).
    pub fn peek(self, n: impl Into<i64>) -> Vec<usize> {
        let n = n.into();
        if n <= 0 {
            return Vec::new();
        }
        // SAFETY: MPI requires `n` requests in the array (`rd_all` takes a null array).
        unsafe { rd_all(self.0, n as usize) }
    }
}

/// Fortran handles and the same handles in C, in this ABI's width: pointers in Open MPI,
/// 4-byte ints in MPICH.
pub struct HandlesOut<K> {
    f: *mut Fint,
    wide: Vec<H>,
    narrow: Vec<u32>,
    k: PhantomData<K>,
}

impl<K: Handle> HandlesOut<K> {
    fn new(f: *mut Fint) -> Self {
        HandlesOut {
            f,
            wide: Vec::new(),
            narrow: Vec::new(),
            k: PhantomData,
        }
    }
    fn fill(&mut self, n: usize) {
        let fs: &[Fint] = if self.f.is_null() {
            &[]
        } else {
            // SAFETY: MPI requires `n` handles in the array.
            unsafe { std::slice::from_raw_parts(self.f, n) }
        };
        self.wide = fs.iter().map(|&x| K::f2c(x)).collect();
        self.narrow = self.wide.iter().map(|&h| h as usize as u32).collect();
    }
    fn ptr(&mut self) -> *mut H {
        if self.f.is_null() {
            std::ptr::null_mut()
        } else if abi::flavour() == Flavour::Mpich {
            self.narrow.as_mut_ptr().cast()
        } else {
            self.wide.as_mut_ptr()
        }
    }
}

impl Fortran for Requests {
    type F = *mut Fint;
    type Tmp = HandlesOut<Request>;
    fn from_f(f: *mut Fint) -> Self::Tmp {
        HandlesOut::new(f)
    }
    fn set_len(t: &mut Self::Tmp, n: usize) {
        t.fill(n);
    }
    fn c(t: &mut Self::Tmp) -> Requests {
        Requests(t.ptr())
    }
    fn back(t: &Self::Tmp) {
        let n = t.wide.len();
        let p = if abi::flavour() == Flavour::Mpich {
            t.narrow.as_ptr().cast::<H>()
        } else {
            t.wide.as_ptr()
        };
        for i in 0..n {
            // SAFETY: `p` holds `n` requests of this ABI, and the program's array `n` integers.
            unsafe { *t.f.add(i) = Request::c2f(rd(p, i) as H) };
        }
    }
}

/// An array of handles the call reads (`MPI_Type_create_struct`'s types).
#[repr(transparent)]
pub struct Handles<K>(pub *const H, PhantomData<K>);

impl<K> Clone for Handles<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for Handles<K> {}

impl<K> Handles<K> {
    /// Handle `i` (0 for a null array).
    pub fn at(self, i: usize) -> usize {
        if self.0.is_null() {
            return 0;
        }
        // SAFETY: MPI requires an entry per peer, and `i` is one.
        unsafe { rd(self.0, i) }
    }
    /// The first `n` handles.
    pub fn read(self, n: impl Into<i64>) -> Vec<usize> {
        let n = n.into();
        if n <= 0 {
            return Vec::new();
        }
        // SAFETY: MPI requires `n` handles in the array (`rd_all` takes a null array).
        unsafe { rd_all(self.0, n as usize) }
    }
}

impl<K: Handle> Fortran for Handles<K> {
    type F = *mut Fint;
    type Tmp = HandlesOut<K>;
    fn from_f(f: *mut Fint) -> Self::Tmp {
        HandlesOut::new(f)
    }
    fn set_len(t: &mut Self::Tmp, n: usize) {
        t.fill(n);
    }
    fn c(t: &mut Self::Tmp) -> Self {
        Handles(t.ptr().cast_const(), PhantomData)
    }
}

/// The index of the request that completed (`MPI_Waitany`): 0-based in C, 1-based in Fortran,
/// `MPI_UNDEFINED` in both.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Index(pub *mut c_int);

impl Index {
    /// The index the call wrote (-1 for a null pointer).
    pub fn get(self) -> i64 {
        if self.0.is_null() {
            return -1;
        }
        // SAFETY: the application's out-parameter, which the call just set.
        unsafe { *self.0 as i64 }
    }
}

/// A C index and the Fortran index it goes back to.
pub struct IndexOut {
    f: *mut Fint,
    c: c_int,
}

impl Fortran for Index {
    type F = *mut Fint;
    type Tmp = IndexOut;
    fn from_f(f: *mut Fint) -> IndexOut {
        IndexOut { f, c: 0 }
    }
    fn c(t: &mut IndexOut) -> Index {
        Index(&mut t.c)
    }
    fn back(t: &IndexOut) {
        if !t.f.is_null() {
            let i = if t.c >= 0 { t.c + 1 } else { t.c };
            // SAFETY: the program's output argument.
            unsafe { *t.f = i };
        }
    }
}

/// An `int` the call writes (`flag`, `outcount`, a size).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct IntOut(pub *mut c_int);

impl IntOut {
    /// The value the call wrote (0 for a null pointer).
    pub fn get(self) -> i64 {
        if self.0.is_null() {
            return 0;
        }
        // SAFETY: the application's out-parameter, which the call just set.
        unsafe { *self.0 as i64 }
    }
    /// The value a call that returned `r` wrote, -1 when it failed (and wrote nothing).
    pub fn got(self, r: c_int) -> i64 {
        if r == super::MPI_SUCCESS {
            self.get()
        } else {
            -1
        }
    }
}

/// A C `int` and the Fortran `INTEGER` (or `LOGICAL`) it goes back to.
pub struct IntBack {
    f: *mut Fint,
    c: c_int,
}

impl Fortran for IntOut {
    type F = *mut Fint;
    type Tmp = IntBack;
    fn from_f(f: *mut Fint) -> IntBack {
        IntBack { f, c: 0 }
    }
    fn c(t: &mut IntBack) -> IntOut {
        IntOut(&mut t.c)
    }
    fn back(t: &IntBack) {
        if !t.f.is_null() {
            // SAFETY: the program's output argument.
            unsafe { *t.f = t.c };
        }
    }
}

/// The indices of the requests that completed (`MPI_Waitsome`): 0-based in C, 1-based in
/// Fortran.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Indices(pub *mut c_int);

impl Indices {
    /// The first `n` indices the call wrote.
    pub fn read(self, n: i64) -> Vec<i64> {
        read_array(self.0.cast_const(), n, i64::from)
    }
}

/// C indices and the Fortran array they go back to.
pub struct IndicesBack {
    f: *mut Fint,
    c: Vec<c_int>,
}

impl Fortran for Indices {
    type F = *mut Fint;
    type Tmp = IndicesBack;
    fn from_f(f: *mut Fint) -> IndicesBack {
        IndicesBack { f, c: Vec::new() }
    }
    fn set_len(t: &mut IndicesBack, n: usize) {
        t.c = vec![0; n];
    }
    fn c(t: &mut IndicesBack) -> Indices {
        Indices(t.c.as_mut_ptr())
    }
    fn back(t: &IndicesBack) {
        if t.f.is_null() {
            return;
        }
        // Every entry: those past `outcount` are unspecified in both bindings.
        for (i, &c) in t.c.iter().enumerate() {
            // SAFETY: the program's array holds `incount` integers, the length of `c`.
            unsafe { *t.f.add(i) = c + 1 };
        }
    }
}

/// Where `MPI_Buffer_detach` writes the buffer's address.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct AddrOut(pub *mut c_void);

impl Fortran for AddrOut {
    /// Fortran's buffer argument, which the binding does not write (it cannot hold a C
    /// address): the C call writes into a pointer of ours.
    type F = *mut c_void;
    type Tmp = *mut c_void;
    fn from_f(_: *mut c_void) -> *mut c_void {
        std::ptr::null_mut()
    }
    fn c(t: &mut *mut c_void) -> AddrOut {
        AddrOut((t as *mut *mut c_void).cast())
    }
}
