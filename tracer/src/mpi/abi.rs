//! The two MPI ABIs the tracer speaks, chosen at `MPI_Init` from the symbols the loaded MPI
//! exports, so that one `libiotrex_tracer.so` traces programs built with Open MPI and with
//! MPICH (and its ABI-compatible derivatives, such as Intel MPI) without a rebuild.
//!
//! What differs, and why it matters to the hooks:
//! - Open MPI handles are pointers to `ompi_mpi_*` globals; MPICH handles (communicators,
//!   datatypes, requests, ops, infos) are 32-bit integers with predefined constant values.
//!   A handle passed by value arrives in a 64-bit register whose upper half the C ABI leaves
//!   undefined for an `int`, so MPICH handles are masked before they are used as keys.
//! - Handles returned through pointers (`MPI_Type_vector(..., &new)`, `MPI_Isend(..., &req)`)
//!   and arrays of handles (`MPI_Waitall`) are 4 bytes wide in MPICH: reading 8 would mix two
//!   requests. `MPI_File` is a pointer in both.
//! - `MPI_IN_PLACE` is `(void *)1` in Open MPI and `(void *)-1` in MPICH.
//!
//! Anything the hooks merely forward (statuses, infos, buffers) needs no translation, since
//! forwarding a register-sized argument does not depend on its C type.

use crate::mpi::H;
use std::sync::atomic::{AtomicU8, Ordering};

/// The ABI of the loaded MPI library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// Open MPI: handles are pointers.
    OpenMpi,
    /// MPICH and derivatives: handles are `int`s.
    Mpich,
}

const OMPI: u8 = 0;
const MPICH: u8 = 1;
/// Open MPI until `MPI_Init` finds MPICH: no MPI handle is valid before `MPI_Init` anyway.
static FLAVOUR: AtomicU8 = AtomicU8::new(OMPI);

/// Sets the ABI (once, at `MPI_Init`).
pub fn set(f: Flavour) {
    FLAVOUR.store(
        match f {
            Flavour::OpenMpi => OMPI,
            Flavour::Mpich => MPICH,
        },
        Ordering::Relaxed,
    );
}

/// The ABI in use.
#[inline]
pub fn flavour() -> Flavour {
    if FLAVOUR.load(Ordering::Relaxed) == MPICH {
        Flavour::Mpich
    } else {
        Flavour::OpenMpi
    }
}

/// A handle passed by value, as a table key.
#[inline]
pub fn hv(h: H) -> usize {
    match flavour() {
        Flavour::OpenMpi => h as usize,
        Flavour::Mpich => h as usize & 0xffff_ffff,
    }
}

/// Reads the `i`-th handle of an array (or the one handle behind an out-pointer, `i = 0`).
///
/// # Safety
/// `p` must point to at least `i + 1` handles of the loaded MPI's ABI.
#[inline]
pub unsafe fn rd(p: *const H, i: usize) -> usize {
    match flavour() {
        // SAFETY: the caller guarantees `i + 1` pointer-sized handles.
        Flavour::OpenMpi => unsafe { *p.add(i) as usize },
        // SAFETY: the caller guarantees `i + 1` handles, which are 4-byte ints in MPICH.
        Flavour::Mpich => unsafe { *(p as *const u32).add(i) as usize },
    }
}

/// Reads `n` handles of an array.
///
/// # Safety
/// `p` must be null or point to at least `n` handles of the loaded MPI's ABI.
pub unsafe fn rd_all(p: *const H, n: usize) -> Vec<usize> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: forwarded from the caller.
    (0..n).map(|i| unsafe { rd(p, i) }).collect()
}

/// The handle value behind a handle pointer, as a handle to pass on by value.
///
/// # Safety
/// As for [`rd`] with `i = 0`.
pub unsafe fn rd_h(p: *const H) -> H {
    // SAFETY: forwarded from the caller.
    unsafe { rd(p, 0) as H }
}

/// Whether a buffer argument is `MPI_IN_PLACE`.
#[inline]
pub fn in_place(p: *const libc::c_void) -> bool {
    match flavour() {
        Flavour::OpenMpi => p as usize == 1,
        Flavour::Mpich => p as usize == usize::MAX,
    }
}

/// Whether a status argument is `MPI_STATUS_IGNORE` (null in Open MPI, 1 in MPICH).
#[inline]
pub fn status_ignored(p: H) -> bool {
    match flavour() {
        Flavour::OpenMpi => p.is_null(),
        Flavour::Mpich => p as usize == 1,
    }
}

/// The library's `MPI_ANY_SOURCE` and `MPI_PROC_NULL`: -1 and -2 in Open MPI, -2 and -1 in
/// MPICH (traces from MPICH stored them swapped before they went through `rsd::mpi`).
pub fn any_source_proc_null() -> (i64, i64) {
    match flavour() {
        Flavour::OpenMpi => (-1, -2),
        Flavour::Mpich => (-2, -1),
    }
}

/// The library's `MPI_ORDER_FORTRAN` (1 in Open MPI, 57 in MPICH; C order is 0 and 56), which
/// the trace stores normalised (`rsd::mpi::encode_order`).
pub fn order_fortran() -> i64 {
    match flavour() {
        Flavour::OpenMpi => 1,
        Flavour::Mpich => 57,
    }
}

/// The library's `MPI_DISTRIBUTE_*` constants (Open MPI's 0, 1, 2 and -1; MPICH's 121, 122,
/// 123 and -49767), which the trace stores normalised (`rsd::mpi::encode_distrib`).
pub fn distribute() -> rsd::mpi::distribute::Library {
    match flavour() {
        Flavour::OpenMpi => rsd::mpi::distribute::OPEN_MPI,
        Flavour::Mpich => rsd::mpi::distribute::MPICH,
    }
}

/// The C `MPI_IN_PLACE`.
pub fn in_place_value() -> *mut libc::c_void {
    match flavour() {
        Flavour::OpenMpi => std::ptr::without_provenance_mut(1),
        Flavour::Mpich => std::ptr::without_provenance_mut(usize::MAX),
    }
}

/// The C `MPI_STATUS_IGNORE` (also `MPI_STATUSES_IGNORE`, the same value in both).
pub fn status_ignore_value() -> H {
    match flavour() {
        Flavour::OpenMpi => std::ptr::null_mut(),
        Flavour::Mpich => std::ptr::without_provenance_mut(1),
    }
}

/// Fortran's `MPI_STATUS_SIZE`: the integers in a Fortran status.
pub fn f_status_size() -> usize {
    match flavour() {
        Flavour::OpenMpi => 6,
        Flavour::Mpich => 5,
    }
}

/// The `MPI_SOURCE` and `MPI_TAG` of a C status: its first two `int`s in Open MPI, its third and
/// fourth in MPICH (after the count).
///
/// # Safety
/// `p` must point to a status of the loaded MPI's ABI.
pub unsafe fn status_source_tag(p: H) -> (libc::c_int, libc::c_int) {
    let p = p as *const libc::c_int;
    let at = match flavour() {
        Flavour::OpenMpi => 0,
        Flavour::Mpich => 2,
    };
    // SAFETY: forwarded from the caller; both layouts hold these two ints.
    unsafe { (*p.add(at), *p.add(at + 1)) }
}

/// A communicator's topology, from `MPI_Topo_test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// `MPI_CART`.
    Cart,
    /// `MPI_GRAPH`.
    Graph,
    /// `MPI_DIST_GRAPH`.
    DistGraph,
    /// `MPI_UNDEFINED`: none.
    None,
}

/// The library's topology constant as a [`Topology`]: `MPI_CART` is 1 and `MPI_GRAPH` 2 in
/// Open MPI, the other way round in MPICH; `MPI_DIST_GRAPH` is 3 in both.
pub fn topology(kind: libc::c_int) -> Topology {
    match (flavour(), kind) {
        (Flavour::OpenMpi, 1) | (Flavour::Mpich, 2) => Topology::Cart,
        (Flavour::OpenMpi, 2) | (Flavour::Mpich, 1) => Topology::Graph,
        (_, 3) => Topology::DistGraph,
        _ => Topology::None,
    }
}

/// `MPI_COMM_TYPE_SHARED`: the first of Open MPI's split types, 1 in MPICH.
pub fn comm_type_shared() -> libc::c_int {
    match flavour() {
        Flavour::Mpich => 1,
        _ => 0,
    }
}

/// `MPI_INFO_NULL`: a constant in MPICH, the address of a global in Open MPI.
pub fn info_null() -> usize {
    match flavour() {
        Flavour::Mpich => mpich::INFO_NULL,
        _ => crate::real::lookup_global("ompi_mpi_info_null\0"),
    }
}

/// `MPI_THREAD_SINGLE` (0 in both).
pub const THREAD_SINGLE: libc::c_int = 0;
/// The thread levels' constants by value: `MPI_THREAD_SINGLE` (0) to `MPI_THREAD_MULTIPLE`
/// (3), the same in both.
pub const THREAD_LEVELS: [&str; 4] = [
    "MPI_THREAD_SINGLE",
    "MPI_THREAD_FUNNELED",
    "MPI_THREAD_SERIALIZED",
    "MPI_THREAD_MULTIPLE",
];
/// `MPI_T_BIND_NO_OBJECT` (0 in both).
pub const T_BIND_NO_OBJECT: libc::c_int = 0;
/// `MPI_MAX_LIBRARY_VERSION_STRING` of the larger library (MPICH's 8192; Open MPI's is 256).
pub const MAX_LIBRARY_VERSION_STRING: usize = 8192;
/// `MPI_MAX_PROCESSOR_NAME` of the larger library (Open MPI's 256; MPICH's is 128).
pub const MAX_PROCESSOR_NAME: usize = 256;

/// Room for either library's `MPI_Status` (Open MPI: 24 bytes, MPICH: 20).
pub type StatusBuf = [u64; 8];

/// MPICH's predefined handles (from its `mpi.h`; part of the ABI MPICH and Intel MPI share).
pub mod mpich {
    /// `MPI_COMM_WORLD`.
    pub const COMM_WORLD: usize = 0x4400_0000;
    /// `MPI_COMM_SELF`.
    pub const COMM_SELF: usize = 0x4400_0001;
    /// `MPI_COMM_NULL`.
    pub const COMM_NULL: usize = 0x0400_0000;
    /// `MPI_BYTE`.
    pub const BYTE: usize = 0x4c00_010d;
    /// `MPI_DATATYPE_NULL`.
    pub const DATATYPE_NULL: usize = 0x0c00_0000;
    /// `MPI_INFO_NULL`.
    pub const INFO_NULL: usize = 0x1c00_0000;

    /// Predefined datatypes in the order of `mpi::TYPES` (same names, MPICH values).
    pub const TYPES: &[usize] = &[
        DATATYPE_NULL,
        0x4c00_0101, // char
        0x4c00_0118, // signed char
        0x4c00_0102, // unsigned char
        BYTE,
        0x4c00_0203, // short
        0x4c00_0204, // unsigned short
        0x4c00_0405, // int
        0x4c00_0406, // unsigned
        0x4c00_0807, // long
        0x4c00_0808, // unsigned long
        0x4c00_0809, // long long int
        0x4c00_0819, // unsigned long long
        0x4c00_040a, // float
        0x4c00_080b, // double
        0x4c00_100c, // long double
        0x4c00_040e, // wchar
        0x4c00_010f, // packed
        0x4c00_0137, // int8_t
        0x4c00_013b, // uint8_t
        0x4c00_0238, // int16_t
        0x4c00_023c, // uint16_t
        0x4c00_0439, // int32_t
        0x4c00_043d, // uint32_t
        0x4c00_083a, // int64_t
        0x4c00_083e, // uint64_t
        0x4c00_0843, // aint
        0x4c00_0844, // offset
        0x4c00_0845, // count
        0x4c00_013f, // c_bool
        0x4c00_0840, // c_float_complex
        0x4c00_1041, // c_double_complex
        0x4c00_2042, // c_long_double_complex
        0x8c00_0000, // float_int
        0x8c00_0001, // double_int
        0x8c00_0002, // long_int
        0x4c00_0816, // 2int
        0x8c00_0003, // short_int
        0x8c00_0004, // long_double_int
        0x4c00_011a, // character
        0x4c00_041b, // integer
        0x4c00_041c, // real
        0x4c00_081f, // double precision
        0x4c00_0010, // lb
        0x4c00_0011, // ub
    ];

    /// Predefined error handlers in the order of `mpi::ERRHANDLERS` (`mpi.h`:
    /// MPI_ERRHANDLER_NULL, MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN, MPI_ERRORS_ABORT).
    pub const ERRHANDLERS: &[usize] = &[0x1400_0000, 0x5400_0000, 0x5400_0001, 0x5400_0003];

    /// Predefined reduction operations in the order of `mpi::OPS`.
    pub const OPS: &[usize] = &[
        0x1800_0000, // op_null
        0x5800_0001, // max
        0x5800_0002, // min
        0x5800_0003, // sum
        0x5800_0004, // prod
        0x5800_0005, // land
        0x5800_0006, // band
        0x5800_0007, // lor
        0x5800_0008, // bor
        0x5800_0009, // lxor
        0x5800_000a, // bxor
        0x5800_000c, // maxloc
        0x5800_000b, // minloc
        0x5800_000d, // replace
    ];
}

#[cfg(test)]
mod tests {
    #[test]
    fn mpich_tables_follow_the_predefined_name_lists() {
        // Ids are positions in mpi::TYPES and mpi::OPS; the MPICH tables must line up, and
        // both with the trace's own table of predefined types.
        assert_eq!(super::mpich::TYPES.len(), super::super::TYPES.len());
        assert_eq!(rsd::mpi::DATATYPES.len(), super::super::TYPES.len());
        for (sym, t) in super::super::TYPES.iter().zip(rsd::mpi::DATATYPES) {
            // ompi_mpi_int -> MPI_INT, where Open MPI's symbol follows the C name.
            let plain = format!(
                "MPI_{}",
                sym.trim_end_matches('\0')["ompi_mpi_".len()..].to_uppercase()
            );
            let renamed = ["MPI_DBLPREC", "MPI_LONGDBL_INT"];
            assert!(
                plain == t.name || renamed.contains(&plain.as_str()),
                "{sym} vs {}",
                t.name
            );
        }
        assert!(super::super::TYPES[rsd::mpi::BYTE as usize].starts_with("ompi_mpi_byte"));
        assert_eq!(super::mpich::OPS.len(), super::super::OPS.len());
        assert_eq!(
            super::mpich::ERRHANDLERS.len(),
            super::super::ERRHANDLERS.len()
        );
        assert_eq!(
            rsd::mpi::errhandler::PREDEFINED.len(),
            super::super::ERRHANDLERS.len()
        );
        for (sym, name) in super::super::ERRHANDLERS
            .iter()
            .zip(rsd::mpi::errhandler::PREDEFINED)
        {
            // ompi_mpi_errors_return -> MPI_ERRORS_RETURN.
            let plain = format!(
                "MPI_{}",
                sym.trim_end_matches('\0')["ompi_mpi_".len()..].to_uppercase()
            );
            assert_eq!(&plain, name);
        }
        assert_eq!(super::mpich::TYPES[4], super::mpich::BYTE);
        assert!(super::super::TYPES[4].starts_with("ompi_mpi_byte"));
    }
}
