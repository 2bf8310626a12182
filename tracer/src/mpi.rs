//! MPI wrappers. The application's `MPI_*` calls land here (this library is preloaded before
//! libmpi) and are forwarded to `PMPI_*`, looked up at run time so that the library has no link
//! dependency on MPI and serial programs load it too.
//!
//! Handles follow the ABI of the MPI found at `MPI_Init` (see `abi`): Open MPI, where every
//! handle is a pointer and predefined handles are the addresses of `ompi_mpi_*` globals, or
//! MPICH, where handles are integers with constant predefined values. Any other MPI is
//! reported, and the tracer then only passes calls through, which is safe because forwarding a
//! register-sized argument does not depend on its type.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

pub mod abi;
pub mod fortran;

use crate::callsite::signature;
use crate::guard::{BUSY, Enter, IDLE, IN_MPIIO};
use crate::posix::cpath;
use crate::real::{lookup_global, real};
use crate::state::{CHILDREN, Call, RECORDING, State, now_ns, record_parent, say, with_state};
use abi::{Flavour, hv, in_place, rd, rd_all, rd_h};
use libc::{c_char, c_int, c_void};
use rsd::Op;
use rsd::op::args;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// An Open MPI handle (`MPI_Comm`, `MPI_Datatype`, `MPI_File`, ...): a pointer.
pub type H = *mut c_void;
/// `MPI_Offset`.
pub type Offset = i64;
/// `MPI_Aint`.
pub type Aint = isize;

const MPI_SUCCESS: c_int = 0;
const MPI_ERR_OTHER: c_int = 16;

/// Open MPI's symbols of the predefined datatypes, in `rsd::mpi::DATATYPES` order (whose
/// index is the id in trace files; a test checks the two line up).
const TYPES: &[&str] = &[
    "ompi_mpi_datatype_null\0",
    "ompi_mpi_char\0",
    "ompi_mpi_signed_char\0",
    "ompi_mpi_unsigned_char\0",
    "ompi_mpi_byte\0",
    "ompi_mpi_short\0",
    "ompi_mpi_unsigned_short\0",
    "ompi_mpi_int\0",
    "ompi_mpi_unsigned\0",
    "ompi_mpi_long\0",
    "ompi_mpi_unsigned_long\0",
    "ompi_mpi_long_long_int\0",
    "ompi_mpi_unsigned_long_long\0",
    "ompi_mpi_float\0",
    "ompi_mpi_double\0",
    "ompi_mpi_long_double\0",
    "ompi_mpi_wchar\0",
    "ompi_mpi_packed\0",
    "ompi_mpi_int8_t\0",
    "ompi_mpi_uint8_t\0",
    "ompi_mpi_int16_t\0",
    "ompi_mpi_uint16_t\0",
    "ompi_mpi_int32_t\0",
    "ompi_mpi_uint32_t\0",
    "ompi_mpi_int64_t\0",
    "ompi_mpi_uint64_t\0",
    "ompi_mpi_aint\0",
    "ompi_mpi_offset\0",
    "ompi_mpi_count\0",
    "ompi_mpi_c_bool\0",
    "ompi_mpi_c_float_complex\0",
    "ompi_mpi_c_double_complex\0",
    "ompi_mpi_c_long_double_complex\0",
    "ompi_mpi_float_int\0",
    "ompi_mpi_double_int\0",
    "ompi_mpi_long_int\0",
    "ompi_mpi_2int\0",
    "ompi_mpi_short_int\0",
    "ompi_mpi_longdbl_int\0",
    "ompi_mpi_character\0",
    "ompi_mpi_integer\0",
    "ompi_mpi_real\0",
    "ompi_mpi_dblprec\0",
    "ompi_mpi_lb\0",
    "ompi_mpi_ub\0",
];

/// Predefined reduction operations, in a fixed order that gives their ids (append only).
const OPS: &[&str] = &[
    "ompi_mpi_op_null\0",
    "ompi_mpi_op_max\0",
    "ompi_mpi_op_min\0",
    "ompi_mpi_op_sum\0",
    "ompi_mpi_op_prod\0",
    "ompi_mpi_op_land\0",
    "ompi_mpi_op_band\0",
    "ompi_mpi_op_lor\0",
    "ompi_mpi_op_bor\0",
    "ompi_mpi_op_lxor\0",
    "ompi_mpi_op_bxor\0",
    "ompi_mpi_op_maxloc\0",
    "ompi_mpi_op_minloc\0",
    "ompi_mpi_op_replace\0",
];

/// The predefined handles the tracer itself needs (addresses in Open MPI, constants in MPICH).
#[derive(Debug, Clone, Copy)]
pub struct Globals {
    /// `MPI_COMM_WORLD`.
    pub world: usize,
    /// `MPI_COMM_SELF`.
    pub self_: usize,
    /// `MPI_COMM_NULL`.
    pub comm_null: usize,
    /// `MPI_BYTE`.
    pub byte: usize,
    /// `MPI_DATATYPE_NULL`.
    pub dt_null: usize,
}

static GLOBALS: OnceLock<Globals> = OnceLock::new();
/// The tracer's own communicator, duplicated from `MPI_COMM_WORLD` at init; 0 until then.
pub static TRACER_COMM: AtomicUsize = AtomicUsize::new(0);
/// The loaded MPI is not the one this build understands: pass everything through.
pub static WRONG_MPI: AtomicBool = AtomicBool::new(false);

/// The predefined handles, once MPI is known to be Open MPI.
pub fn globals() -> Option<Globals> {
    GLOBALS.get().copied()
}

/// Checks that the loaded MPI is Open MPI and resolves its predefined handles.
fn check_mpi() -> bool {
    if WRONG_MPI.load(Ordering::Relaxed) {
        return false;
    }
    if GLOBALS.get().is_some() {
        return true;
    }
    let world = lookup_global("ompi_mpi_comm_world\0");
    let g = if world != 0 {
        abi::set(Flavour::OpenMpi);
        Globals {
            world,
            self_: lookup_global("ompi_mpi_comm_self\0"),
            comm_null: lookup_global("ompi_mpi_comm_null\0"),
            byte: lookup_global("ompi_mpi_byte\0"),
            dt_null: lookup_global("ompi_mpi_datatype_null\0"),
        }
    } else if is_mpich() {
        abi::set(Flavour::Mpich);
        Globals {
            world: abi::mpich::COMM_WORLD,
            self_: abi::mpich::COMM_SELF,
            comm_null: abi::mpich::COMM_NULL,
            byte: abi::mpich::BYTE,
            dt_null: abi::mpich::DATATYPE_NULL,
        }
    } else {
        WRONG_MPI.store(true, Ordering::Relaxed);
        say(
            "tracer disabled: the program's MPI is neither Open MPI nor MPICH-compatible (no ompi_mpi_comm_world, no MPIR_* symbols); MPI calls pass through untraced",
        );
        RECORDING.store(false, Ordering::SeqCst);
        with_state(|st| {
            st.incomplete = true;
            st.notes
                .push("the program's MPI has an ABI the tracer does not know".into());
        });
        return false;
    };
    let _ = GLOBALS.set(g);
    true
}

/// MPICH and its derivatives export these internal globals; Open MPI does not.
fn is_mpich() -> bool {
    lookup_global("MPIR_C_MPI_UNWEIGHTED\0") != 0
        || lookup_global("MPIR_F08_MPI_IN_PLACE\0") != 0
        || lookup_global("MPICH_Calc_version\0") != 0
}

type TypeSizeFn = unsafe extern "C" fn(H, *mut c_int) -> c_int;
type CommRankFn = unsafe extern "C" fn(H, *mut c_int) -> c_int;

/// Rank of the caller in `comm` (0 if MPI refuses).
pub(crate) fn comm_rank(comm: H) -> i64 {
    let Some(f) = real!("PMPI_Comm_rank", CommRankFn) else {
        return 0;
    };
    let mut r = 0;
    // SAFETY: `comm` came from the application's own call, which MPI will validate; `r` is a
    // valid out-parameter.
    unsafe { f(comm, &mut r) };
    r as i64
}

/// Size of `comm` (0 if MPI refuses).
pub(crate) fn comm_size(comm: H) -> i64 {
    let Some(f) = real!("PMPI_Comm_size", CommRankFn) else {
        return 0;
    };
    let mut r = 0;
    // SAFETY: as in `comm_rank`.
    unsafe { f(comm, &mut r) };
    r as i64
}

impl State {
    fn comm_id(&mut self, c: H) -> i64 {
        match globals() {
            Some(g) if hv(c) == g.comm_null => -1,
            _ => self.comms.id(hv(c)),
        }
    }

    /// A datatype's id, numbering types first seen here (built by calls not traced).
    fn type_id(&mut self, t: H) -> i64 {
        self.types.id(hv(t))
    }

    /// The size of a datatype in bytes, cached. Never asks MPI about a null handle, which
    /// would raise an MPI error (fatal by default).
    fn tsize(&mut self, t: H) -> i64 {
        let h = hv(t);
        if h == 0 || globals().is_some_and(|g| h == g.dt_null) {
            return 0;
        }
        if let Some(&s) = self.type_sizes.get(&h) {
            return s;
        }
        let Some(f) = real!("PMPI_Type_size", TypeSizeFn) else {
            return 0;
        };
        let mut s = 0;
        // SAFETY: `t` is a datatype the application passed to a call that succeeded, and `s`
        // is a valid out-parameter.
        let rc = unsafe { f(t, &mut s) };
        let s = if rc == MPI_SUCCESS { s as i64 } else { 0 };
        self.type_sizes.insert(h, s);
        s
    }

    fn new_type(&mut self, r: c_int, t: *mut H) -> i64 {
        if r != MPI_SUCCESS || t.is_null() {
            return -1;
        }
        // SAFETY: MPI wrote the new handle through the application's non-null pointer.
        let h = unsafe { rd(t, 0) };
        self.types.forget(h);
        self.type_sizes.remove(&h);
        self.types.id(h)
    }

    fn new_comm(&mut self, r: c_int, c: *mut H) -> i64 {
        if r != MPI_SUCCESS || c.is_null() {
            return -1;
        }
        // SAFETY: MPI wrote the new handle through the application's non-null pointer.
        let h = unsafe { rd(c, 0) };
        if globals().is_some_and(|g| h == g.comm_null) {
            return -1;
        }
        self.comms.forget(h);
        self.comms.id(h)
    }

    fn op_id(&mut self, o: H) -> i64 {
        self.ops.id(hv(o))
    }

    fn file_id(&self, f: H) -> i64 {
        self.files.get(f as usize).unwrap_or(-1)
    }

    fn new_req(&mut self, r: c_int, q: *mut H) -> i64 {
        if r != MPI_SUCCESS || q.is_null() {
            return -1;
        }
        // SAFETY: MPI wrote the request through the application's non-null pointer.
        self.reqs.insert(unsafe { rd(q, 0) })
    }
}

/// Peers are stored relative to the caller, with the library's `MPI_ANY_SOURCE` and
/// `MPI_PROC_NULL` mapped to `rsd::mpi`'s sentinels.
fn rel_peer(comm: H, peer: c_int) -> i64 {
    let (any, null) = abi::any_source_proc_null();
    // Only a rank needs the caller's rank (one more PMPI call).
    let me = if peer >= 0 { comm_rank(comm) } else { 0 };
    rsd::mpi::encode_peer(peer as i64, me, any, null)
}

fn sum_counts(counts: *const c_int, n: i64) -> i64 {
    if counts.is_null() || n <= 0 {
        return 0;
    }
    // SAFETY: MPI requires `counts` to hold one entry per rank of the communicator (n), and
    // the call has just read them.
    unsafe { std::slice::from_raw_parts(counts, n as usize) }
        .iter()
        .map(|&c| c as i64)
        .sum()
}

fn ints(p: *const c_int, n: c_int) -> Vec<i64> {
    if p.is_null() || n <= 0 {
        return Vec::new();
    }
    // SAFETY: MPI requires the array to hold `n` entries, and the call has just read them.
    unsafe { std::slice::from_raw_parts(p, n as usize) }
        .iter()
        .map(|&c| c as i64)
        .collect()
}

/// Runs an MPI call and records it. In MPI-IO calls (`io`), POSIX calls made by the library
/// become the event's children; in other calls they are not recorded.
fn mpi_call(
    op: Op,
    io: bool,
    call: impl FnOnce() -> c_int,
    build: impl FnOnce(&mut State, c_int) -> Vec<i64>,
) -> c_int {
    mpi_call_path(op, io, None, call, build)
}

fn mpi_call_path(
    op: Op,
    io: bool,
    path: Option<String>,
    call: impl FnOnce() -> c_int,
    build: impl FnOnce(&mut State, c_int) -> Vec<i64>,
) -> c_int {
    if crate::guard::mode() != IDLE || !RECORDING.load(Ordering::Relaxed) {
        return call();
    }
    let g = Enter::new(BUSY);
    let sig = signature();
    let t0 = now_ns();
    if io {
        CHILDREN.with(|c| {
            if let Ok(mut c) = c.try_borrow_mut() {
                c.0.clear();
                c.1 = t0;
            }
        });
        g.switch(IN_MPIIO);
    }
    let r = call();
    let t1 = now_ns();
    g.switch(BUSY);
    let children = if io {
        CHILDREN.with(|c| {
            c.try_borrow_mut()
                .map(|mut c| std::mem::take(&mut c.0))
                .unwrap_or_default()
        })
    } else {
        Vec::new()
    };
    record_parent(Call { op, sig, t0, t1 }, children, |st| {
        Some((build(st, r), path))
    });
    r
}

macro_rules! pmpi {
    ($name:literal, $ty:ty) => {
        match real!($name, $ty) {
            Some(f) => f,
            None => {
                say(concat!("cannot find ", $name, " in the loaded MPI library"));
                return MPI_ERR_OTHER;
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Init and finalize.

fn after_init(r: c_int) {
    if r != MPI_SUCCESS || !check_mpi() {
        return;
    }
    let Some(g) = globals() else { return };
    let rank = comm_rank(g.world as H) as u32;
    // The tracer's own communicator, so the finalize-time merge never matches an application
    // message.
    if let Some(dup) = real!("PMPI_Comm_dup", unsafe extern "C" fn(H, *mut H) -> c_int) {
        let mut c: H = std::ptr::null_mut();
        // SAFETY: MPI is initialised, `world` is MPI_COMM_WORLD and `c` a valid out-parameter.
        if unsafe { dup(g.world as H, &mut c) } == MPI_SUCCESS {
            TRACER_COMM.store(hv(c), Ordering::SeqCst);
            // Every rank starts its clock together: ranks leave MPI_Init milliseconds apart
            // on a crowded node, and the first collective of the application absorbed that
            // skew into the run's wall time, which a replay (started by a barrier) never has.
            if let Some(bar) = real!("PMPI_Barrier", unsafe extern "C" fn(H) -> c_int) {
                // SAFETY: `c` is the communicator just duplicated, valid on every rank.
                unsafe { bar(c) };
            }
        }
    }
    with_state(|st| {
        if st.rank != rank {
            // Only possible when the launcher's environment did not name the rank; the events
            // recorded so far carry the wrong rank, so say so.
            if st.comp.events() > 0 {
                st.incomplete = true;
                st.notes.push(format!(
                    "rank {rank}: {} calls before MPI_Init were recorded as rank {}",
                    st.comp.events(),
                    st.rank
                ));
            }
            st.rank = rank;
            st.comp = rsd::Compressor::new(rank);
            if let Some(raw) = &mut st.raw {
                raw.clear();
            }
        }
        st.comms.fixed(g.world, rsd::mpi::COMM_WORLD);
        if g.self_ != 0 {
            st.comms.fixed(g.self_, rsd::mpi::COMM_SELF);
        }
        let mpich = abi::flavour() == Flavour::Mpich;
        for (i, name) in TYPES.iter().enumerate() {
            let a = if mpich {
                abi::mpich::TYPES[i]
            } else {
                lookup_global(name)
            };
            if a != 0 {
                st.types.fixed(a, i as i64);
            }
        }
        for (i, name) in OPS.iter().enumerate() {
            let a = if mpich {
                abi::mpich::OPS[i]
            } else {
                lookup_global(name)
            };
            if a != 0 {
                st.ops.fixed(a, i as i64);
            }
        }
        st.mpi_initialized = true;
        if rank == 0 {
            st.unrecorded_mpi = crate::unseen::unrecorded_mpi();
        }
        st.start_ns = now_ns();
    });
}

pub(crate) fn init_common(op_call: impl FnOnce() -> c_int) -> c_int {
    // Everything MPI_Init does (sockets, shared memory, the runtime's files and threads) runs
    // in BUSY mode and is not recorded.
    let g = Enter::new(BUSY);
    let t0 = now_ns();
    let r = op_call();
    after_init(r);
    drop(g);
    if RECORDING.load(Ordering::Relaxed) && crate::guard::mode() == IDLE {
        let _g = Enter::new(BUSY);
        let sig = signature();
        // The tracer's own start-up (a collective Comm_dup, symbol lookups, the first stack
        // unwind) ends here and counts as part of MPI_Init: charged to the gap before the
        // application's first call, it made every rank wait it out in a replay (~0.3 ms at one
        // rank, milliseconds on an oversubscribed node). The run's wall time starts here too.
        let t1 = now_ns();
        with_state(|st| st.start_ns = t1);
        record_parent(
            Call {
                op: Op::Init,
                sig,
                t0,
                t1,
            },
            Vec::new(),
            |_| Some((Vec::new(), None)),
        );
    }
    r
}

/// Wrapper: `MPI_Init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let f = pmpi!(
        "PMPI_Init",
        unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int
    );
    // SAFETY: forwarding the application's arguments.
    init_common(|| unsafe { f(argc, argv) })
}

/// Wrapper: `MPI_Init_thread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let f = pmpi!(
        "PMPI_Init_thread",
        unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int
    );
    // SAFETY: forwarding the application's arguments.
    init_common(|| unsafe { f(argc, argv, required, provided) })
}

/// Wrapper: `MPI_Finalize`. Merges every rank's trace and writes it, before `PMPI_Finalize`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    let f = pmpi!("PMPI_Finalize", unsafe extern "C" fn() -> c_int);
    // SAFETY: no arguments; the application asked for it.
    finalize_common(|| unsafe { f() })
}

/// Records `MPI_Finalize`, merges and writes the trace, then runs `finalize` (the C or the
/// Fortran binding's real finalize).
pub(crate) fn finalize_common(finalize: impl FnOnce() -> c_int) -> c_int {
    if crate::guard::mode() == IDLE && RECORDING.load(Ordering::Relaxed) {
        let _g = Enter::new(BUSY);
        let sig = signature();
        let t = now_ns();
        record_parent(
            Call {
                op: Op::Finalize,
                sig,
                t0: t,
                t1: t,
            },
            Vec::new(),
            |_| Some((Vec::new(), None)),
        );
    }
    let comm = TRACER_COMM.swap(0, Ordering::SeqCst);
    {
        let _g = Enter::new(BUSY);
        if comm != 0 && !WRONG_MPI.load(Ordering::Relaxed) {
            crate::finalize::merge_and_write(comm as H);
        }
    }
    let _g = Enter::new(BUSY);
    finalize()
}

// ---------------------------------------------------------------------------------------------
// MPI-IO.

/// Wrapper: `MPI_File_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_open(
    comm: H,
    name: *const c_char,
    amode: c_int,
    info: H,
    fh: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_File_open",
        unsafe extern "C" fn(H, *const c_char, c_int, H, *mut H) -> c_int
    );
    mpi_call_path(
        Op::FileOpen,
        true,
        cpath(name),
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, name, amode, info, fh) },
        |st, r| {
            let c = st.comm_id(comm);
            let id = if r == MPI_SUCCESS && !fh.is_null() {
                // SAFETY: MPI wrote the handle through the application's non-null pointer.
                st.files.insert(unsafe { *fh } as usize)
            } else {
                -1
            };
            vec![c, amode as i64, id]
        },
    )
}

/// Wrapper: `MPI_File_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_close(fh: *mut H) -> c_int {
    let f = pmpi!("PMPI_File_close", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid pointer to an open file handle; read it before it is reset.
    let h = if fh.is_null() {
        0
    } else {
        (unsafe { *fh }) as usize
    };
    mpi_call(
        Op::FileClose,
        true,
        // SAFETY: forwarding the application's argument.
        || unsafe { f(fh) },
        |st, _| vec![st.files.remove(h).unwrap_or(-1)],
    )
}

/// Wrapper: `MPI_File_delete`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_delete(name: *const c_char, info: H) -> c_int {
    let f = pmpi!(
        "PMPI_File_delete",
        unsafe extern "C" fn(*const c_char, H) -> c_int
    );
    mpi_call_path(
        Op::FileDelete,
        true,
        cpath(name),
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(name, info) },
        |_, _| Vec::new(),
    )
}

/// Wrapper: `MPI_File_set_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_set_size(fh: H, size: Offset) -> c_int {
    let f = pmpi!(
        "PMPI_File_set_size",
        unsafe extern "C" fn(H, Offset) -> c_int
    );
    mpi_call(
        Op::FileSetSize,
        true,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(fh, size) },
        |st, _| vec![st.file_id(fh), size],
    )
}

/// Wrapper: `MPI_File_get_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_get_size(fh: H, size: *mut Offset) -> c_int {
    let f = pmpi!(
        "PMPI_File_get_size",
        unsafe extern "C" fn(H, *mut Offset) -> c_int
    );
    mpi_call(
        Op::FileGetSize,
        true,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(fh, size) },
        |st, r| {
            let s = if r == MPI_SUCCESS && !size.is_null() {
                // SAFETY: MPI wrote the size through the application's non-null pointer.
                unsafe { *size }
            } else {
                -1
            };
            vec![st.file_id(fh), s]
        },
    )
}

/// Wrapper: `MPI_File_set_view`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_set_view(
    fh: H,
    disp: Offset,
    etype: H,
    filetype: H,
    datarep: *const c_char,
    info: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_File_set_view",
        unsafe extern "C" fn(H, Offset, H, H, *const c_char, H) -> c_int
    );
    mpi_call(
        Op::FileSetView,
        true,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(fh, disp, etype, filetype, datarep, info) },
        |st, _| {
            vec![
                st.file_id(fh),
                disp,
                st.type_id(etype),
                st.type_id(filetype),
            ]
        },
    )
}

/// Wrapper: `MPI_File_seek`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_seek(fh: H, off: Offset, whence: c_int) -> c_int {
    let f = pmpi!(
        "PMPI_File_seek",
        unsafe extern "C" fn(H, Offset, c_int) -> c_int
    );
    mpi_call(
        Op::FileSeek,
        true,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(fh, off, whence) },
        |st, _| vec![st.file_id(fh), off, whence as i64],
    )
}

/// Wrapper: `MPI_File_sync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_sync(fh: H) -> c_int {
    let f = pmpi!("PMPI_File_sync", unsafe extern "C" fn(H) -> c_int);
    mpi_call(
        Op::FileSync,
        true,
        // SAFETY: forwarding the application's argument.
        || unsafe { f(fh) },
        |st, _| vec![st.file_id(fh)],
    )
}

fn io_bytes(st: &mut State, r: c_int, count: i64, dt: H) -> i64 {
    if r == MPI_SUCCESS {
        count * st.tsize(dt)
    } else {
        0
    }
}

/// The status a blocking MPI-IO call writes: the application's, or ours when it passed
/// `MPI_STATUS_IGNORE`, so that the bytes really moved can be read back (a read past the end
/// of the file moves fewer than count times the type size).
fn status_for(app: H, own: &mut abi::StatusBuf) -> H {
    if abi::status_ignored(app) {
        own.as_mut_ptr().cast()
    } else {
        app
    }
}

/// Bytes a blocking MPI-IO call moved: its status's count in bytes, else (MPI could not say)
/// count times the type size.
fn io_bytes_done(st: &mut State, r: c_int, count: i64, dt: H, status: H) -> i64 {
    if r != MPI_SUCCESS {
        return 0;
    }
    let byte = globals().map_or(0, |g| g.byte);
    if let Some(f) = real!(
        "PMPI_Get_count",
        unsafe extern "C" fn(H, H, *mut c_int) -> c_int
    ) && byte != 0
    {
        let mut n: c_int = 0;
        // SAFETY: `status` is the status the call just filled (ours or the application's) and
        // MPI_BYTE a predefined type; `n` is a valid out-parameter.
        if unsafe { f(status, byte as H, &mut n) } == MPI_SUCCESS && n != MPI_UNDEFINED && n >= 0 {
            return n as i64;
        }
    }
    io_bytes(st, r, count, dt)
}

/// `MPI_Count`, the count of MPI-4's large-count (`_c`) calls. MPICH 4 has them and codes such
/// as IOR call them when they exist, so they are recorded as the same operations as their
/// `int` versions (the trace stores counts as i64 either way).
pub type Count = i64;

// Each macro below takes the count's C type (`c_int`, or `Count` for the `_c` variants), then
// the wrappers to define as `name, PMPI symbol, op, buffer type;`.

macro_rules! file_data {
    ($cnt:ty; $($name:ident, $sym:literal, $op:expr, $buf:ty;)*) => {$(
        /// Wrapper: an MPI-IO data call with the individual or shared file pointer.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fh: H, buf: $buf, count: $cnt, dt: H, status: H) -> c_int {
            let f = pmpi!($sym, unsafe extern "C" fn(H, $buf, $cnt, H, H) -> c_int);
            let mut own: abi::StatusBuf = [0; 8];
            let used = status_for(status, &mut own);
            mpi_call(
                $op,
                true,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(fh, buf, count, dt, used) },
                |st, r| {
                    let b = io_bytes_done(st, r, count as i64, dt, used);
                    vec![st.file_id(fh), count as i64, st.type_id(dt), b]
                },
            )
        }
    )*};
}
file_data!(c_int;
    MPI_File_read, "PMPI_File_read", Op::FileRead, *mut c_void;
    MPI_File_read_all, "PMPI_File_read_all", Op::FileReadAll, *mut c_void;
    MPI_File_read_shared, "PMPI_File_read_shared", Op::FileReadShared, *mut c_void;
    MPI_File_read_ordered, "PMPI_File_read_ordered", Op::FileReadOrdered, *mut c_void;
    MPI_File_write, "PMPI_File_write", Op::FileWrite, *const c_void;
    MPI_File_write_all, "PMPI_File_write_all", Op::FileWriteAll, *const c_void;
    MPI_File_write_shared, "PMPI_File_write_shared", Op::FileWriteShared, *const c_void;
    MPI_File_write_ordered, "PMPI_File_write_ordered", Op::FileWriteOrdered, *const c_void;
);
file_data!(Count;
    MPI_File_read_c, "PMPI_File_read_c", Op::FileRead, *mut c_void;
    MPI_File_read_all_c, "PMPI_File_read_all_c", Op::FileReadAll, *mut c_void;
    MPI_File_read_shared_c, "PMPI_File_read_shared_c", Op::FileReadShared, *mut c_void;
    MPI_File_read_ordered_c, "PMPI_File_read_ordered_c", Op::FileReadOrdered, *mut c_void;
    MPI_File_write_c, "PMPI_File_write_c", Op::FileWrite, *const c_void;
    MPI_File_write_all_c, "PMPI_File_write_all_c", Op::FileWriteAll, *const c_void;
    MPI_File_write_shared_c, "PMPI_File_write_shared_c", Op::FileWriteShared, *const c_void;
    MPI_File_write_ordered_c, "PMPI_File_write_ordered_c", Op::FileWriteOrdered, *const c_void;
);

macro_rules! file_data_at {
    ($cnt:ty; $($name:ident, $sym:literal, $op:expr, $buf:ty;)*) => {$(
        /// Wrapper: an MPI-IO data call at an explicit offset.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fh: H,
            off: Offset,
            buf: $buf,
            count: $cnt,
            dt: H,
            status: H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(H, Offset, $buf, $cnt, H, H) -> c_int
            );
            let mut own: abi::StatusBuf = [0; 8];
            let used = status_for(status, &mut own);
            mpi_call(
                $op,
                true,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(fh, off, buf, count, dt, used) },
                |st, r| {
                    let b = io_bytes_done(st, r, count as i64, dt, used);
                    vec![st.file_id(fh), off, count as i64, st.type_id(dt), b]
                },
            )
        }
    )*};
}
file_data_at!(c_int;
    MPI_File_read_at, "PMPI_File_read_at", Op::FileReadAt, *mut c_void;
    MPI_File_read_at_all, "PMPI_File_read_at_all", Op::FileReadAtAll, *mut c_void;
    MPI_File_write_at, "PMPI_File_write_at", Op::FileWriteAt, *const c_void;
    MPI_File_write_at_all, "PMPI_File_write_at_all", Op::FileWriteAtAll, *const c_void;
);
file_data_at!(Count;
    MPI_File_read_at_c, "PMPI_File_read_at_c", Op::FileReadAt, *mut c_void;
    MPI_File_read_at_all_c, "PMPI_File_read_at_all_c", Op::FileReadAtAll, *mut c_void;
    MPI_File_write_at_c, "PMPI_File_write_at_c", Op::FileWriteAt, *const c_void;
    MPI_File_write_at_all_c, "PMPI_File_write_at_all_c", Op::FileWriteAtAll, *const c_void;
);

macro_rules! file_idata {
    ($cnt:ty; $($name:ident, $sym:literal, $op:expr, $buf:ty;)*) => {$(
        /// Wrapper: a nonblocking MPI-IO data call.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fh: H,
            buf: $buf,
            count: $cnt,
            dt: H,
            req: *mut H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(H, $buf, $cnt, H, *mut H) -> c_int
            );
            mpi_call(
                $op,
                true,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(fh, buf, count, dt, req) },
                |st, r| {
                    let b = io_bytes(st, r, count as i64, dt);
                    let q = st.new_req(r, req);
                    vec![st.file_id(fh), count as i64, st.type_id(dt), b, q]
                },
            )
        }
    )*};
}
file_idata!(c_int;
    MPI_File_iread, "PMPI_File_iread", Op::FileIread, *mut c_void;
    MPI_File_iread_all, "PMPI_File_iread_all", Op::FileIreadAll, *mut c_void;
    MPI_File_iread_shared, "PMPI_File_iread_shared", Op::FileIreadShared, *mut c_void;
    MPI_File_iwrite, "PMPI_File_iwrite", Op::FileIwrite, *const c_void;
    MPI_File_iwrite_all, "PMPI_File_iwrite_all", Op::FileIwriteAll, *const c_void;
    MPI_File_iwrite_shared, "PMPI_File_iwrite_shared", Op::FileIwriteShared, *const c_void;
);
file_idata!(Count;
    MPI_File_iread_c, "PMPI_File_iread_c", Op::FileIread, *mut c_void;
    MPI_File_iread_all_c, "PMPI_File_iread_all_c", Op::FileIreadAll, *mut c_void;
    MPI_File_iread_shared_c, "PMPI_File_iread_shared_c", Op::FileIreadShared, *mut c_void;
    MPI_File_iwrite_c, "PMPI_File_iwrite_c", Op::FileIwrite, *const c_void;
    MPI_File_iwrite_all_c, "PMPI_File_iwrite_all_c", Op::FileIwriteAll, *const c_void;
    MPI_File_iwrite_shared_c, "PMPI_File_iwrite_shared_c", Op::FileIwriteShared, *const c_void;
);

macro_rules! file_idata_at {
    ($cnt:ty; $($name:ident, $sym:literal, $op:expr, $buf:ty;)*) => {$(
        /// Wrapper: a nonblocking MPI-IO data call at an explicit offset.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fh: H,
            off: Offset,
            buf: $buf,
            count: $cnt,
            dt: H,
            req: *mut H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(H, Offset, $buf, $cnt, H, *mut H) -> c_int
            );
            mpi_call(
                $op,
                true,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(fh, off, buf, count, dt, req) },
                |st, r| {
                    let b = io_bytes(st, r, count as i64, dt);
                    let q = st.new_req(r, req);
                    vec![st.file_id(fh), off, count as i64, st.type_id(dt), b, q]
                },
            )
        }
    )*};
}
file_idata_at!(c_int;
    MPI_File_iread_at, "PMPI_File_iread_at", Op::FileIreadAt, *mut c_void;
    MPI_File_iwrite_at, "PMPI_File_iwrite_at", Op::FileIwriteAt, *const c_void;
);
file_idata_at!(Count;
    MPI_File_iread_at_c, "PMPI_File_iread_at_c", Op::FileIreadAt, *mut c_void;
    MPI_File_iwrite_at_c, "PMPI_File_iwrite_at_c", Op::FileIwriteAt, *const c_void;
);

// ---------------------------------------------------------------------------------------------
// Collectives and point-to-point. `bytes` is what this rank sends (count times the size of the
// send type), or receives for the receive-only side of a call.

/// Wrapper: `MPI_Barrier`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Barrier(comm: H) -> c_int {
    let f = pmpi!("PMPI_Barrier", unsafe extern "C" fn(H) -> c_int);
    // SAFETY: forwarding the application's argument.
    mpi_call(
        Op::Barrier,
        false,
        || unsafe { f(comm) },
        |st, _| vec![st.comm_id(comm)],
    )
}

/// Wrapper: `MPI_Bcast`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    count: c_int,
    dt: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Bcast",
        unsafe extern "C" fn(*mut c_void, c_int, H, c_int, H) -> c_int
    );
    mpi_call(
        Op::Bcast,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(buf, count, dt, root, comm) },
        |st, _| {
            let b = count as i64 * st.tsize(dt);
            vec![
                count as i64,
                st.type_id(dt),
                root as i64,
                st.comm_id(comm),
                b,
            ]
        },
    )
}

/// Wrapper: `MPI_Reduce`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Reduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: c_int,
    dt: H,
    op: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Reduce",
        unsafe extern "C" fn(*const c_void, *mut c_void, c_int, H, H, c_int, H) -> c_int
    );
    mpi_call(
        Op::Reduce,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, rbuf, count, dt, op, root, comm) },
        |st, _| {
            let b = count as i64 * st.tsize(dt);
            vec![
                count as i64,
                st.type_id(dt),
                st.op_id(op),
                root as i64,
                st.comm_id(comm),
                b,
            ]
        },
    )
}

macro_rules! allreduce_like {
    ($name:ident, $sym:literal, $op:expr, $args:path) => {
        /// Wrapper: `MPI_Allreduce`, `MPI_Scan`, `MPI_Exscan` (the same arguments).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            rbuf: *mut c_void,
            count: c_int,
            dt: H,
            op: H,
            comm: H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(*const c_void, *mut c_void, c_int, H, H, H) -> c_int
            );
            mpi_call(
                $op,
                false,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(sbuf, rbuf, count, dt, op, comm) },
                |st, _| {
                    let b = count as i64 * st.tsize(dt);
                    $args(
                        count as i64,
                        st.type_id(dt),
                        st.op_id(op),
                        st.comm_id(comm),
                        b,
                    )
                },
            )
        }
    };
}
allreduce_like!(
    MPI_Allreduce,
    "PMPI_Allreduce",
    Op::Allreduce,
    args::allreduce
);
allreduce_like!(MPI_Scan, "PMPI_Scan", Op::Scan, args::scan);
allreduce_like!(MPI_Exscan, "PMPI_Exscan", Op::Exscan, args::exscan);

/// Wrapper: `MPI_Reduce_scatter_block`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Reduce_scatter_block(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: c_int,
    dt: H,
    op: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Reduce_scatter_block",
        unsafe extern "C" fn(*const c_void, *mut c_void, c_int, H, H, H) -> c_int
    );
    mpi_call(
        Op::ReduceScatterBlock,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, rbuf, count, dt, op, comm) },
        |st, _| {
            let b = count as i64 * st.tsize(dt);
            vec![
                count as i64,
                st.type_id(dt),
                st.op_id(op),
                st.comm_id(comm),
                b,
            ]
        },
    )
}

/// Wrapper: `MPI_Reduce_scatter`, recorded with the caller's own block (`recvcounts[rank]`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Reduce_scatter(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: *const c_int,
    dt: H,
    op: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Reduce_scatter",
        unsafe extern "C" fn(*const c_void, *mut c_void, *const c_int, H, H, H) -> c_int
    );
    mpi_call(
        Op::ReduceScatter,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, rbuf, counts, dt, op, comm) },
        |st, _| {
            let me = comm_rank(comm);
            let count = if counts.is_null() || me < 0 {
                0
            } else {
                // SAFETY: MPI requires recvcounts to hold one count per member; `me` is one.
                unsafe { *counts.add(me as usize) as i64 }
            };
            vec![
                count,
                st.type_id(dt),
                st.op_id(op),
                st.comm_id(comm),
                count * st.tsize(dt),
            ]
        },
    )
}

/// Send arguments as recorded: with `MPI_IN_PLACE` the count and type are ignored by MPI (and
/// may be garbage), so they are recorded as 0 and -1.
fn send_args(st: &mut State, sbuf: *const c_void, scount: c_int, stype: H) -> (i64, i64, i64) {
    if in_place(sbuf.cast()) {
        (0, -1, 0)
    } else {
        let b = scount as i64 * st.tsize(stype);
        (scount as i64, st.type_id(stype), b)
    }
}

/// Wrapper: `MPI_Gather`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Gather(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Gather",
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, c_int, H) -> c_int
    );
    mpi_call(
        Op::Gather,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcount, rtype, root, comm) },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            // Receive arguments matter only at the root.
            let (rc, rty) = if comm_rank(comm) == root as i64 {
                (rcount as i64, st.type_id(rtype))
            } else {
                (0, -1)
            };
            vec![sc, sty, rc, rty, root as i64, st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Gatherv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Gatherv(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rtype: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Gatherv",
        unsafe extern "C" fn(
            *const c_void,
            c_int,
            H,
            *mut c_void,
            *const c_int,
            *const c_int,
            H,
            c_int,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Gatherv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe {
            f(
                sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm,
            )
        },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let (rb, rty) = if comm_rank(comm) == root as i64 {
                let n = comm_size(comm);
                (sum_counts(rcounts, n) * st.tsize(rtype), st.type_id(rtype))
            } else {
                (0, -1)
            };
            vec![sc, sty, rb, rty, root as i64, st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Scatter`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Scatter(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Scatter",
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, c_int, H) -> c_int
    );
    mpi_call(
        Op::Scatter,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcount, rtype, root, comm) },
        |st, _| {
            let (sc, sty) = if comm_rank(comm) == root as i64 {
                (scount as i64, st.type_id(stype))
            } else {
                (0, -1)
            };
            let (rc, rty, b) = if in_place(rbuf.cast()) {
                (0, -1, 0)
            } else {
                (
                    rcount as i64,
                    st.type_id(rtype),
                    rcount as i64 * st.tsize(rtype),
                )
            };
            vec![sc, sty, rc, rty, root as i64, st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Scatterv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Scatterv(
    sbuf: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    root: c_int,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Scatterv",
        unsafe extern "C" fn(
            *const c_void,
            *const c_int,
            *const c_int,
            H,
            *mut c_void,
            c_int,
            H,
            c_int,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Scatterv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe {
            f(
                sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm,
            )
        },
        |st, _| {
            let (sb, sty) = if comm_rank(comm) == root as i64 {
                let n = comm_size(comm);
                (sum_counts(scounts, n) * st.tsize(stype), st.type_id(stype))
            } else {
                (0, -1)
            };
            let (rc, rty, b) = if in_place(rbuf.cast()) {
                (0, -1, 0)
            } else {
                (
                    rcount as i64,
                    st.type_id(rtype),
                    rcount as i64 * st.tsize(rtype),
                )
            };
            vec![sb, sty, rc, rty, root as i64, st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Allgather`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Allgather(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Allgather",
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, H) -> c_int
    );
    mpi_call(
        Op::Allgather,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcount, rtype, comm) },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            vec![
                sc,
                sty,
                rcount as i64,
                st.type_id(rtype),
                st.comm_id(comm),
                b,
            ]
        },
    )
}

/// Wrapper: `MPI_Allgatherv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Allgatherv(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rtype: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Allgatherv",
        unsafe extern "C" fn(
            *const c_void,
            c_int,
            H,
            *mut c_void,
            *const c_int,
            *const c_int,
            H,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Allgatherv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm) },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let n = comm_size(comm);
            let rb = sum_counts(rcounts, n) * st.tsize(rtype);
            vec![sc, sty, rb, st.type_id(rtype), st.comm_id(comm), b]
        },
    )
}

/// Wrapper: `MPI_Alltoall`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Alltoall(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Alltoall",
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, H) -> c_int
    );
    mpi_call(
        Op::Alltoall,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(sbuf, scount, stype, rbuf, rcount, rtype, comm) },
        |st, _| {
            let (sc, sty, b) = send_args(st, sbuf, scount, stype);
            let n = comm_size(comm);
            vec![
                sc,
                sty,
                rcount as i64,
                st.type_id(rtype),
                st.comm_id(comm),
                b * n,
            ]
        },
    )
}

/// Wrapper: `MPI_Alltoallv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Alltoallv(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stype: H,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtype: H,
    comm: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Alltoallv",
        unsafe extern "C" fn(
            *const c_void,
            *const c_int,
            *const c_int,
            H,
            *mut c_void,
            *const c_int,
            *const c_int,
            H,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Alltoallv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe {
            f(
                sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm,
            )
        },
        |st, _| {
            let n = comm_size(comm);
            let (sb, sty) = if in_place(sbuf.cast()) {
                (0, -1)
            } else {
                (sum_counts(scounts, n) * st.tsize(stype), st.type_id(stype))
            };
            let rb = sum_counts(rcounts, n) * st.tsize(rtype);
            vec![sb, sty, rb, st.type_id(rtype), st.comm_id(comm), sb]
        },
    )
}

macro_rules! blocking_send {
    ($name:ident, $sym:literal, $op:expr, $args:path) => {
        /// Wrapper: `MPI_Send` and the other blocking send modes.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            dt: H,
            dest: c_int,
            tag: c_int,
            comm: H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(*const c_void, c_int, H, c_int, c_int, H) -> c_int
            );
            mpi_call(
                $op,
                false,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(buf, count, dt, dest, tag, comm) },
                |st, _| {
                    let b = count as i64 * st.tsize(dt);
                    $args(
                        count as i64,
                        st.type_id(dt),
                        rel_peer(comm, dest),
                        tag as i64,
                        st.comm_id(comm),
                        b,
                    )
                },
            )
        }
    };
}
blocking_send!(MPI_Send, "PMPI_Send", Op::Send, args::send);
blocking_send!(MPI_Ssend, "PMPI_Ssend", Op::Ssend, args::ssend);
blocking_send!(MPI_Rsend, "PMPI_Rsend", Op::Rsend, args::rsend);
blocking_send!(MPI_Bsend, "PMPI_Bsend", Op::Bsend, args::bsend);

/// Wrapper: `MPI_Recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    dt: H,
    src: c_int,
    tag: c_int,
    comm: H,
    status: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Recv",
        unsafe extern "C" fn(*mut c_void, c_int, H, c_int, c_int, H, H) -> c_int
    );
    mpi_call(
        Op::Recv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(buf, count, dt, src, tag, comm, status) },
        |st, _| {
            let b = count as i64 * st.tsize(dt);
            args::recv(
                count as i64,
                st.type_id(dt),
                rel_peer(comm, src),
                tag as i64,
                st.comm_id(comm),
                b,
            )
        },
    )
}

macro_rules! nonblocking_p2p {
    ($name:ident, $sym:literal, $op:expr, $args:path, $buf:ty) => {
        /// Wrapper: `MPI_Isend` / `MPI_Irecv`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            buf: $buf,
            count: c_int,
            dt: H,
            peer: c_int,
            tag: c_int,
            comm: H,
            req: *mut H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn($buf, c_int, H, c_int, c_int, H, *mut H) -> c_int
            );
            mpi_call(
                $op,
                false,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(buf, count, dt, peer, tag, comm, req) },
                |st, r| {
                    let b = count as i64 * st.tsize(dt);
                    let q = st.new_req(r, req);
                    $args(
                        count as i64,
                        st.type_id(dt),
                        rel_peer(comm, peer),
                        tag as i64,
                        st.comm_id(comm),
                        b,
                        q,
                    )
                },
            )
        }
    };
}
nonblocking_p2p!(
    MPI_Isend,
    "PMPI_Isend",
    Op::Isend,
    args::isend,
    *const c_void
);
nonblocking_p2p!(MPI_Irecv, "PMPI_Irecv", Op::Irecv, args::irecv, *mut c_void);
nonblocking_p2p!(
    MPI_Issend,
    "PMPI_Issend",
    Op::Issend,
    args::issend,
    *const c_void
);
nonblocking_p2p!(
    MPI_Irsend,
    "PMPI_Irsend",
    Op::Irsend,
    args::irsend,
    *const c_void
);
nonblocking_p2p!(
    MPI_Ibsend,
    "PMPI_Ibsend",
    Op::Ibsend,
    args::ibsend,
    *const c_void
);

/// Wrapper: `MPI_Waitany`. Records which request completed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    reqs: *mut H,
    index: *mut c_int,
    status: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Waitany",
        unsafe extern "C" fn(c_int, *mut H, *mut c_int, H) -> c_int
    );
    let hs: Vec<usize> = if reqs.is_null() || count <= 0 {
        Vec::new()
    } else {
        // SAFETY: MPI requires `reqs` to hold `count` requests; read them before MPI resets
        // the one that completes.
        unsafe { rd_all(reqs, count as usize) }
    };
    mpi_call(
        Op::Waitany,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, reqs, index, status) },
        |st, _| {
            // SAFETY: `index` is the application's out-parameter, which the call just set.
            let i = if index.is_null() {
                -1
            } else {
                unsafe { *index }
            };
            let done = usize::try_from(i)
                .ok()
                .and_then(|i| hs.get(i))
                .and_then(|h| st.reqs.remove(*h))
                .unwrap_or(-1);
            args::waitany(count as i64, done)
        },
    )
}

/// Wrapper: `MPI_Request_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Request_free(req: *mut H) -> c_int {
    let f = pmpi!("PMPI_Request_free", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid request pointer; read the handle before MPI resets it.
    let h = if req.is_null() {
        0
    } else {
        unsafe { rd(req, 0) }
    };
    mpi_call(
        Op::RequestFree,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(req) },
        |st, _| args::request_free(st.reqs.remove(h).unwrap_or(-1)),
    )
}

/// Wrapper: `MPI_Comm_free`. The handle is forgotten: MPI may give its address to a later
/// communicator, which must get an id of its own.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut H) -> c_int {
    let f = pmpi!("PMPI_Comm_free", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid communicator pointer; read the handle before MPI resets it.
    let h: H = if comm.is_null() {
        std::ptr::null_mut()
    } else {
        unsafe { rd_h(comm) }
    };
    mpi_call(
        Op::CommFree,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm) },
        |st, _| {
            let id = st.comm_id(h);
            st.comms.forget(hv(h));
            args::comm_free(id)
        },
    )
}

/// Wrapper: `MPI_Wait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Wait(req: *mut H, status: H) -> c_int {
    let f = pmpi!("PMPI_Wait", unsafe extern "C" fn(*mut H, H) -> c_int);
    // SAFETY: MPI requires a valid request pointer; read the handle before MPI resets it.
    let h = if req.is_null() {
        0
    } else {
        unsafe { rd(req, 0) }
    };
    mpi_call(
        Op::Wait,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(req, status) },
        |st, _| args::wait(st.reqs.remove(h).unwrap_or(-1)),
    )
}

/// Wrapper: `MPI_Waitall`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Waitall(count: c_int, reqs: *mut H, statuses: H) -> c_int {
    let f = pmpi!(
        "PMPI_Waitall",
        unsafe extern "C" fn(c_int, *mut H, H) -> c_int
    );
    let hs: Vec<usize> = if reqs.is_null() || count <= 0 {
        Vec::new()
    } else {
        // SAFETY: MPI requires `reqs` to hold `count` requests; read them before MPI resets them.
        unsafe { rd_all(reqs, count as usize) }
    };
    mpi_call(
        Op::Waitall,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, reqs, statuses) },
        |st, _| {
            for h in hs {
                st.reqs.remove(h);
            }
            vec![count as i64]
        },
    )
}

/// Wrapper: `MPI_Sendrecv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Sendrecv(
    sbuf: *const c_void,
    scount: c_int,
    stype: H,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: H,
    src: c_int,
    rtag: c_int,
    comm: H,
    status: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Sendrecv",
        unsafe extern "C" fn(
            *const c_void,
            c_int,
            H,
            c_int,
            c_int,
            *mut c_void,
            c_int,
            H,
            c_int,
            c_int,
            H,
            H,
        ) -> c_int
    );
    mpi_call(
        Op::Sendrecv,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe {
            f(
                sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm, status,
            )
        },
        |st, _| {
            let b = scount as i64 * st.tsize(stype);
            vec![
                scount as i64,
                st.type_id(stype),
                rel_peer(comm, dest),
                stag as i64,
                rcount as i64,
                st.type_id(rtype),
                rel_peer(comm, src),
                rtag as i64,
                st.comm_id(comm),
                b,
            ]
        },
    )
}

/// Wrapper: `MPI_Comm_dup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_dup(comm: H, newcomm: *mut H) -> c_int {
    let f = pmpi!("PMPI_Comm_dup", unsafe extern "C" fn(H, *mut H) -> c_int);
    mpi_call(
        Op::CommDup,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            vec![c, st.new_comm(r, newcomm)]
        },
    )
}

/// Wrapper: `MPI_Comm_split`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_split(
    comm: H,
    color: c_int,
    key: c_int,
    newcomm: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Comm_split",
        unsafe extern "C" fn(H, c_int, c_int, *mut H) -> c_int
    );
    mpi_call(
        Op::CommSplit,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, color, key, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            vec![c, color as i64, key as i64, st.new_comm(r, newcomm)]
        },
    )
}

/// `MPI_UNDEFINED`, the same value in Open MPI and MPICH.
const MPI_UNDEFINED: c_int = -32766;

/// The `MPI_Comm_split` that builds the same communicator as a call that is not a split
/// (`MPI_Comm_create`, `MPI_Comm_split_type`). Color: the parent-comm rank of the new
/// communicator's rank 0, or MPI_UNDEFINED where the caller got `MPI_COMM_NULL`. Key: the
/// caller's parent rank when the new communicator keeps the parent's order (the usual case,
/// and the one extrapolation models best: non-members get the same kind of key), else the
/// caller's new rank, which reproduces any order. Replaying it as a split rebuilds the
/// communicator without the groups.
fn split_equivalent(parent: H, r: c_int, newcomm: *mut H) -> (i64, i64) {
    type CommGroupFn = unsafe extern "C" fn(H, *mut H) -> c_int;
    type TranslateFn = unsafe extern "C" fn(H, c_int, *const c_int, H, *mut c_int) -> c_int;
    type GroupFreeFn = unsafe extern "C" fn(*mut H) -> c_int;
    let undefined = (rsd::mpi::UNDEFINED, comm_rank(parent));
    if r != MPI_SUCCESS || newcomm.is_null() {
        return undefined;
    }
    // SAFETY: MPI wrote the new handle through the application's non-null pointer.
    let nc = unsafe { rd(newcomm, 0) };
    if globals().is_none_or(|g| nc == g.comm_null) {
        return undefined;
    }
    let (Some(group), Some(translate), Some(free)) = (
        real!("PMPI_Comm_group", CommGroupFn),
        real!("PMPI_Group_translate_ranks", TranslateFn),
        real!("PMPI_Group_free", GroupFreeFn),
    ) else {
        return undefined;
    };
    let n = comm_size(nc as H).max(0) as usize;
    let new_ranks: Vec<c_int> = (0..n as c_int).collect();
    let mut in_parent: Vec<c_int> = vec![MPI_UNDEFINED; n];
    // Zeroed buffers: MPICH writes 4-byte group handles into them.
    let (mut gn, mut gp): (H, H) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: both communicators are valid (the parent came from the application's successful
    // call, the new one from MPI); the rank arrays hold `n` entries, the out-parameters are
    // valid, and the groups are freed below.
    unsafe {
        if n > 0 && group(nc as H, &mut gn) == MPI_SUCCESS && group(parent, &mut gp) == MPI_SUCCESS
        {
            translate(
                gn,
                n as c_int,
                new_ranks.as_ptr(),
                gp,
                in_parent.as_mut_ptr(),
            );
        }
        if !gn.is_null() {
            free(&mut gn);
        }
        if !gp.is_null() {
            free(&mut gp);
        }
    }
    let leader = in_parent.first().copied().unwrap_or(MPI_UNDEFINED);
    let ordered = in_parent.windows(2).all(|w| w[0] < w[1]);
    let key = if ordered {
        comm_rank(parent)
    } else {
        comm_rank(nc as H)
    };
    (leader as i64, key)
}

/// Wrapper: `MPI_Comm_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_create(comm: H, group: H, newcomm: *mut H) -> c_int {
    let f = pmpi!(
        "PMPI_Comm_create",
        unsafe extern "C" fn(H, H, *mut H) -> c_int
    );
    mpi_call(
        Op::CommCreate,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, group, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            let (color, key) = split_equivalent(comm, r, newcomm);
            vec![c, color, key, st.new_comm(r, newcomm)]
        },
    )
}

/// Wrapper: `MPI_Comm_split_type`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_split_type(
    comm: H,
    split_type: c_int,
    key: c_int,
    info: H,
    newcomm: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Comm_split_type",
        unsafe extern "C" fn(H, c_int, c_int, H, *mut H) -> c_int
    );
    mpi_call(
        Op::CommSplitType,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, split_type, key, info, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            let (color, key) = split_equivalent(comm, r, newcomm);
            vec![c, color, key, st.new_comm(r, newcomm)]
        },
    )
}

/// Wrapper: `MPI_Cart_create`, recorded as the split that builds the same communicator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Cart_create(
    comm: H,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    reorder: c_int,
    newcomm: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Cart_create",
        unsafe extern "C" fn(H, c_int, *const c_int, *const c_int, c_int, *mut H) -> c_int
    );
    mpi_call(
        Op::CartCreate,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, ndims, dims, periods, reorder, newcomm) },
        |st, r| {
            let c = st.comm_id(comm);
            let (color, key) = split_equivalent(comm, r, newcomm);
            vec![c, color, key, st.new_comm(r, newcomm)]
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Datatypes.

/// Wrapper: `MPI_Type_contiguous`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_contiguous(count: c_int, old: H, new: *mut H) -> c_int {
    let f = pmpi!(
        "PMPI_Type_contiguous",
        unsafe extern "C" fn(c_int, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeContiguous,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, old, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![count as i64, o, st.new_type(r, new)]
        },
    )
}

/// Wrapper: `MPI_Type_vector`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_vector(
    count: c_int,
    bl: c_int,
    stride: c_int,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_vector",
        unsafe extern "C" fn(c_int, c_int, c_int, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeVector,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bl, stride, old, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![
                count as i64,
                bl as i64,
                stride as i64,
                o,
                st.new_type(r, new),
            ]
        },
    )
}

/// Wrapper: `MPI_Type_create_hvector`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_hvector(
    count: c_int,
    bl: c_int,
    stride: Aint,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_hvector",
        unsafe extern "C" fn(c_int, c_int, Aint, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeHvector,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bl, stride, old, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![
                count as i64,
                bl as i64,
                stride as i64,
                o,
                st.new_type(r, new),
            ]
        },
    )
}

/// Wrapper: `MPI_Type_indexed`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_indexed(
    count: c_int,
    bls: *const c_int,
    displs: *const c_int,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_indexed",
        unsafe extern "C" fn(c_int, *const c_int, *const c_int, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeIndexed,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bls, displs, old, new) },
        |st, r| {
            let o = st.type_id(old);
            let mut v = vec![count as i64, o, st.new_type(r, new)];
            v.extend(ints(bls, count));
            v.extend(ints(displs, count));
            v
        },
    )
}

/// Wrapper: `MPI_Type_create_subarray`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    order: c_int,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_subarray",
        unsafe extern "C" fn(
            c_int,
            *const c_int,
            *const c_int,
            *const c_int,
            c_int,
            H,
            *mut H,
        ) -> c_int
    );
    mpi_call(
        Op::TypeCreateSubarray,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(ndims, sizes, subsizes, starts, order, old, new) },
        |st, r| {
            let o = st.type_id(old);
            let order = rsd::mpi::encode_order(order as i64, abi::order_fortran());
            let mut v = vec![ndims as i64, order, o, st.new_type(r, new)];
            v.extend(ints(sizes, ndims));
            v.extend(ints(subsizes, ndims));
            v.extend(ints(starts, ndims));
            v
        },
    )
}

/// Wrapper: `MPI_Type_create_struct`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_struct(
    count: c_int,
    bls: *const c_int,
    displs: *const Aint,
    types: *const H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_struct",
        unsafe extern "C" fn(c_int, *const c_int, *const Aint, *const H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeCreateStruct,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bls, displs, types, new) },
        |st, r| {
            let n = count.max(0) as usize;
            let d: Vec<i64> = if displs.is_null() {
                Vec::new()
            } else {
                // SAFETY: MPI requires `count` displacements, which the call has just read.
                unsafe { std::slice::from_raw_parts(displs, n) }
                    .iter()
                    .map(|&x| x as i64)
                    .collect()
            };
            // SAFETY: MPI requires `count` types, which the call has just read.
            let t = unsafe { rd_all(types, n) };
            let t: Vec<i64> = t.into_iter().map(|h| st.type_id(h as H)).collect();
            let mut v = vec![count as i64, st.new_type(r, new)];
            v.extend(ints(bls, count));
            v.extend(d);
            v.extend(t);
            v
        },
    )
}

fn aints(p: *const Aint, n: c_int) -> Vec<i64> {
    if p.is_null() || n <= 0 {
        return Vec::new();
    }
    // SAFETY: MPI requires the array to hold `n` entries, and the call has just read them.
    unsafe { std::slice::from_raw_parts(p, n as usize) }
        .iter()
        .map(|&c| c as i64)
        .collect()
}

/// Wrapper: `MPI_Type_create_hindexed` (HDF5 builds its hyperslab file types with it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_hindexed(
    count: c_int,
    bls: *const c_int,
    displs: *const Aint,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_hindexed",
        unsafe extern "C" fn(c_int, *const c_int, *const Aint, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeCreateHindexed,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bls, displs, old, new) },
        |st, r| {
            let o = st.type_id(old);
            let mut v = vec![count as i64, o, st.new_type(r, new)];
            v.extend(ints(bls, count));
            v.extend(aints(displs, count));
            v
        },
    )
}

/// `MPI_Type_create_indexed_block` and `_hindexed_block`: the same call with element or byte
/// displacements.
macro_rules! indexed_block {
    ($name:ident, $sym:literal, $op:expr, $disp:ty, $read:ident) => {
        /// Wrapper: an indexed-block type constructor.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            count: c_int,
            bl: c_int,
            displs: *const $disp,
            old: H,
            new: *mut H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(c_int, c_int, *const $disp, H, *mut H) -> c_int
            );
            mpi_call(
                $op,
                false,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(count, bl, displs, old, new) },
                |st, r| {
                    let o = st.type_id(old);
                    let mut v = vec![count as i64, bl as i64, o, st.new_type(r, new)];
                    v.extend($read(displs, count));
                    v
                },
            )
        }
    };
}
indexed_block!(
    MPI_Type_create_hindexed_block,
    "PMPI_Type_create_hindexed_block",
    Op::TypeCreateHindexedBlock,
    Aint,
    aints
);
indexed_block!(
    MPI_Type_create_indexed_block,
    "PMPI_Type_create_indexed_block",
    Op::TypeCreateIndexedBlock,
    c_int,
    ints
);

/// Wrapper: `MPI_Type_dup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_dup(old: H, new: *mut H) -> c_int {
    let f = pmpi!("PMPI_Type_dup", unsafe extern "C" fn(H, *mut H) -> c_int);
    mpi_call(
        Op::TypeDup,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(old, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![o, st.new_type(r, new)]
        },
    )
}

/// Wrapper: `MPI_Type_create_resized`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_resized(
    old: H,
    lb: Aint,
    extent: Aint,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_resized",
        unsafe extern "C" fn(H, Aint, Aint, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeCreateResized,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(old, lb, extent, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![o, lb as i64, extent as i64, st.new_type(r, new)]
        },
    )
}

/// Wrapper: `MPI_Type_commit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_commit(dt: *mut H) -> c_int {
    let f = pmpi!("PMPI_Type_commit", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid pointer to a datatype handle.
    let h = if dt.is_null() {
        std::ptr::null_mut()
    } else {
        unsafe { rd_h(dt) }
    };
    mpi_call(
        Op::TypeCommit,
        false,
        // SAFETY: forwarding the application's argument.
        || unsafe { f(dt) },
        |st, _| vec![st.type_id(h)],
    )
}

/// Wrapper: `MPI_Type_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_free(dt: *mut H) -> c_int {
    let f = pmpi!("PMPI_Type_free", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid pointer to a datatype handle; read it before MPI resets it.
    let h = if dt.is_null() {
        std::ptr::null_mut()
    } else {
        unsafe { rd_h(dt) }
    };
    mpi_call(
        Op::TypeFree,
        false,
        // SAFETY: forwarding the application's argument.
        || unsafe { f(dt) },
        |st, _| {
            let id = st.type_id(h);
            st.types.forget(hv(h));
            st.type_sizes.remove(&hv(h));
            vec![id]
        },
    )
}
