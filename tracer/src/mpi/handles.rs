//! The predefined handles of the loaded MPI and the rank's handle tables: communicators,
//! datatypes, reduction operations, files and requests as the symbolic ids a trace stores.

use super::*;

/// Open MPI's symbols of the predefined datatypes, in `rsd::mpi::DATATYPES` order (whose
/// index is the id in trace files; a test checks the two line up).
pub(crate) const TYPES: &[&str] = &[
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
pub(crate) const OPS: &[&str] = &[
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

/// Open MPI's symbols of the predefined error handlers, in `rsd::mpi::errhandler::PREDEFINED`
/// order (whose index is the id in trace files). Open MPI 4.1 has no `MPI_ERRORS_ABORT`: its
/// symbol is missing and the handler unnumbered there.
pub(crate) const ERRHANDLERS: &[&str] = &[
    "ompi_mpi_errhandler_null\0",
    "ompi_mpi_errors_are_fatal\0",
    "ompi_mpi_errors_return\0",
    "ompi_mpi_errors_abort\0",
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
pub(crate) fn check_mpi() -> bool {
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
pub(crate) fn is_mpich() -> bool {
    lookup_global("MPIR_C_MPI_UNWEIGHTED\0") != 0
        || lookup_global("MPIR_F08_MPI_IN_PLACE\0") != 0
        || lookup_global("MPICH_Calc_version\0") != 0
}

type TypeSizeFn = unsafe extern "C" fn(H, *mut c_int) -> c_int;
type CommRankFn = unsafe extern "C" fn(H, *mut c_int) -> c_int;

/// Rank of the caller in `comm` (0 if MPI refuses).
pub(crate) fn comm_rank(comm: H) -> i64 {
    comm_query(comm, real!("PMPI_Comm_rank", CommRankFn))
}

/// Size of `comm` (0 if MPI refuses).
pub(crate) fn comm_size(comm: H) -> i64 {
    comm_query(comm, real!("PMPI_Comm_size", CommRankFn))
}

/// What `MPI_Comm_rank` or `MPI_Comm_size` (`f`) says of `comm`, 0 if MPI refuses.
fn comm_query(comm: H, f: Option<CommRankFn>) -> i64 {
    let Some(f) = f else { return 0 };
    let mut r = 0;
    // SAFETY: `comm` came from the application's own call, which MPI will validate; `r` is a
    // valid out-parameter.
    unsafe { f(comm, &mut r) };
    r as i64
}

impl State {
    pub(crate) fn comm_id(&mut self, c: H) -> i64 {
        match globals() {
            Some(g) if hv(c) == g.comm_null => -1,
            _ => self.comms.id(hv(c)),
        }
    }

    /// A datatype's id, numbering types first seen here (built by calls not traced).
    pub(crate) fn type_id(&mut self, t: H) -> i64 {
        self.types.id(hv(t))
    }

    /// The size of a datatype in bytes, cached. Never asks MPI about a null handle, which
    /// would raise an MPI error (fatal by default).
    pub(crate) fn tsize(&mut self, t: H) -> i64 {
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

    pub(crate) fn op_id(&mut self, o: H) -> i64 {
        self.ops.id(hv(o))
    }

    /// The id of request `h`, completed: released, unless it is persistent (-1 if unknown,
    /// `MPI_REQUEST_NULL`).
    pub(crate) fn complete_req(&mut self, h: usize) -> i64 {
        if self.persistent.contains(&h) {
            self.reqs.get(h)
        } else {
            self.reqs.remove(h)
        }
        .unwrap_or(-1)
    }

    /// The id of request `h`, released whatever its kind (`MPI_Request_free`).
    pub(crate) fn free_req(&mut self, h: usize) -> i64 {
        self.persistent.remove(&h);
        self.reqs.remove(h).unwrap_or(-1)
    }

    /// The id of request `h`, which stays (`MPI_Start`, `MPI_Cancel`, a test that did not
    /// complete it); -1 if unknown.
    pub(crate) fn req_id(&self, h: usize) -> i64 {
        self.reqs.get(h).unwrap_or(-1)
    }

    pub(crate) fn file_id(&self, f: H) -> i64 {
        self.files.get(f as usize).unwrap_or(-1)
    }
}

/// `MPI_UNDEFINED`, the same value in Open MPI and MPICH: the trace's own (`rsd::mpi`).
pub(crate) const MPI_UNDEFINED: c_int = rsd::mpi::UNDEFINED as c_int;
