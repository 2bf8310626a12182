//! The trace's MPI vocabulary: how MPI values are encoded in a trace's integer parameters.
//!
//! These encodings are part of the file format: the tracer encodes into them, replay and the
//! CODES export decode from them, and no other code writes these numbers.

/// Communicator id of `MPI_COMM_WORLD`.
pub const COMM_WORLD: i64 = 0;
/// Communicator id of `MPI_COMM_SELF`.
pub const COMM_SELF: i64 = 1;

/// The stored (relative) peer of `MPI_ANY_SOURCE`: `i32::MIN - 1`, out of the range of any
/// relative rank.
pub const ANY_SOURCE: i64 = i32::MIN as i64 - 1;
/// The stored (relative) peer of `MPI_PROC_NULL`: `i32::MIN - 2`.
pub const PROC_NULL: i64 = i32::MIN as i64 - 2;
/// `MPI_ANY_TAG` as stored (the application's value, -1 in Open MPI and MPICH alike): any
/// negative tag of a receive matches every tag.
pub const ANY_TAG: i64 = -1;
/// `MPI_UNDEFINED` (-32766 in Open MPI and MPICH alike): the color of a split, or of a
/// communicator creation recorded as one, whose caller joins no new communicator.
pub const UNDEFINED: i64 = -32766;

/// A predefined datatype: its id in traces is its index in [`DATATYPES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predefined {
    /// The C name.
    pub name: &'static str,
    /// Its size in bytes on x86_64 Linux (what `MPI_Type_size` gives with Open MPI and MPICH).
    pub size: i64,
}

const fn t(name: &'static str, size: i64) -> Predefined {
    Predefined { name, size }
}

/// The predefined datatypes, in the order that gives their ids (append only: the ids are in
/// trace files). Types the application builds get ids from 1000 up, in the order it builds
/// them. The tracer's ABI tables list each library's handle of these, in this order.
pub const DATATYPES: &[Predefined] = &[
    t("MPI_DATATYPE_NULL", 0),
    t("MPI_CHAR", 1),
    t("MPI_SIGNED_CHAR", 1),
    t("MPI_UNSIGNED_CHAR", 1),
    t("MPI_BYTE", 1),
    t("MPI_SHORT", 2),
    t("MPI_UNSIGNED_SHORT", 2),
    t("MPI_INT", 4),
    t("MPI_UNSIGNED", 4),
    t("MPI_LONG", 8),
    t("MPI_UNSIGNED_LONG", 8),
    t("MPI_LONG_LONG_INT", 8),
    t("MPI_UNSIGNED_LONG_LONG", 8),
    t("MPI_FLOAT", 4),
    t("MPI_DOUBLE", 8),
    t("MPI_LONG_DOUBLE", 16),
    t("MPI_WCHAR", 4),
    t("MPI_PACKED", 1),
    t("MPI_INT8_T", 1),
    t("MPI_UINT8_T", 1),
    t("MPI_INT16_T", 2),
    t("MPI_UINT16_T", 2),
    t("MPI_INT32_T", 4),
    t("MPI_UINT32_T", 4),
    t("MPI_INT64_T", 8),
    t("MPI_UINT64_T", 8),
    t("MPI_AINT", 8),
    t("MPI_OFFSET", 8),
    t("MPI_COUNT", 8),
    t("MPI_C_BOOL", 1),
    t("MPI_C_FLOAT_COMPLEX", 8),
    t("MPI_C_DOUBLE_COMPLEX", 16),
    t("MPI_C_LONG_DOUBLE_COMPLEX", 32),
    t("MPI_FLOAT_INT", 8),
    t("MPI_DOUBLE_INT", 12),
    t("MPI_LONG_INT", 12),
    t("MPI_2INT", 8),
    t("MPI_SHORT_INT", 6),
    t("MPI_LONG_DOUBLE_INT", 20),
    t("MPI_CHARACTER", 1),
    t("MPI_INTEGER", 4),
    t("MPI_REAL", 4),
    t("MPI_DOUBLE_PRECISION", 8),
    t("MPI_LB", 0),
    t("MPI_UB", 0),
];

/// The id of `MPI_BYTE`.
pub const BYTE: i64 = 4;
/// Ids of types the application builds start here.
pub const FIRST_DERIVED_TYPE: i64 = 1000;

/// The positions in `params` (an event of `op`, arrays included) that hold datatype ids: the
/// fixed parameters that name a type, and the `types` array of `MPI_Type_create_struct`. A
/// model that takes a type-creating call out of a trace, or puts one in, renumbers the types
/// after it (the tracer numbers types in order of first sight, from [`FIRST_DERIVED_TYPE`]).
pub fn datatype_positions(op: crate::op::Op, params: &[i64]) -> Vec<usize> {
    use crate::op::{Op, Param};
    let fixed = op.params();
    let mut out: Vec<usize> = fixed
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            matches!(
                p,
                Param::Etype
                    | Param::Filetype
                    | Param::Datatype
                    | Param::Sendtype
                    | Param::Recvtype
                    | Param::Oldtype
                    | Param::Newtype
            )
        })
        .map(|(i, _)| i)
        .collect();
    if op == Op::TypeCreateStruct {
        let n = op.param(params, Param::Count).max(0) as usize;
        let types = fixed.len() + 2 * n;
        out.extend((types..types + n).filter(|&i| i < params.len()));
    }
    out
}

/// The predefined datatype with id `id`, if it is one.
pub fn predefined(id: i64) -> Option<&'static Predefined> {
    usize::try_from(id).ok().and_then(|i| DATATYPES.get(i))
}

/// `MPI_Comm_set_errhandler`'s handler as stored: the predefined handlers by their index in
/// [`errhandler::PREDEFINED`] (Open MPI and MPICH alike); a program's own handlers (made by
/// `MPI_Comm_create_errhandler`, which is not recorded) from [`errhandler::FIRST_USER`], in
/// the order the rank first names them.
pub mod errhandler {
    /// The predefined handlers, in the order that gives their ids (append only: the ids are
    /// in trace files). The tracer's tables list each library's handle of these, in this
    /// order.
    pub const PREDEFINED: &[&str] = &[
        "MPI_ERRHANDLER_NULL",
        "MPI_ERRORS_ARE_FATAL",
        "MPI_ERRORS_RETURN",
        "MPI_ERRORS_ABORT",
    ];
    /// `MPI_ERRORS_ARE_FATAL`.
    pub const ERRORS_ARE_FATAL: i64 = 1;
    /// `MPI_ERRORS_RETURN`.
    pub const ERRORS_RETURN: i64 = 2;
    /// `MPI_ERRORS_ABORT` (MPI-4; MPICH 4 has it, Open MPI 4.1 does not).
    pub const ERRORS_ABORT: i64 = 3;
    /// Ids of the program's own handlers start here.
    pub const FIRST_USER: i64 = 100;
}

/// `MPI_File_seek`'s `whence` (`MPI_SEEK_SET`, `_CUR`, `_END`: 600, 602, 604 in Open MPI and
/// MPICH alike), stored as the application passed it.
pub mod seek {
    /// `MPI_SEEK_SET`.
    pub const SET: i64 = 600;
    /// `MPI_SEEK_CUR`.
    pub const CUR: i64 = 602;
    /// `MPI_SEEK_END`.
    pub const END: i64 = 604;
}

/// Where a seek counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whence {
    /// The start of the file (or view).
    Set,
    /// The current position.
    Cur,
    /// The end.
    End,
}

/// The `whence` of any seek in a trace: POSIX `lseek`/`fseek` (0, 1, 2) or `MPI_File_seek`.
pub fn whence(stored: i64) -> Option<Whence> {
    match stored {
        0 | seek::SET => Some(Whence::Set),
        1 | seek::CUR => Some(Whence::Cur),
        2 | seek::END => Some(Whence::End),
        _ => None,
    }
}

/// `MPI_File_open`'s `amode` bits (`MPI_MODE_*`, the same in Open MPI and MPICH), stored as
/// the application passed them.
pub mod amode {
    /// `MPI_MODE_CREATE`.
    pub const CREATE: i64 = 1;
    /// `MPI_MODE_RDONLY`.
    pub const RDONLY: i64 = 2;
    /// `MPI_MODE_WRONLY`.
    pub const WRONLY: i64 = 4;
    /// `MPI_MODE_RDWR`.
    pub const RDWR: i64 = 8;
    /// `MPI_MODE_DELETE_ON_CLOSE`.
    pub const DELETE_ON_CLOSE: i64 = 16;
    /// `MPI_MODE_UNIQUE_OPEN`.
    pub const UNIQUE_OPEN: i64 = 32;
    /// `MPI_MODE_EXCL`.
    pub const EXCL: i64 = 64;
    /// `MPI_MODE_APPEND`.
    pub const APPEND: i64 = 128;
    /// `MPI_MODE_SEQUENTIAL`.
    pub const SEQUENTIAL: i64 = 256;
}

/// The file-system prefixes ROMIO accepts before an MPI-IO file name (`ufs:/scratch/f`
/// selects its UFS driver for `/scratch/f`); a prefix it does not know is part of the name.
pub const FS_PREFIXES: &[&str] = &[
    "ufs",
    "nfs",
    "lustre",
    "gpfs",
    "pvfs2",
    "panfs",
    "xfs",
    "testfs",
    "daos",
    "ime",
    "quobytefs",
    "bg",
    "bglockless",
    "pfs",
    "piofs",
    "pvfs",
    "ftp",
    "gsiftp",
    "zoidfs",
];

/// An MPI-IO file name without its file-system prefix (see [`FS_PREFIXES`]): the path the
/// library opens.
pub fn strip_fs_prefix(name: &str) -> &str {
    match name.split_once(':') {
        Some((prefix, rest)) if FS_PREFIXES.contains(&prefix) => rest,
        _ => name,
    }
}

/// `MPI_Type_create_subarray`'s array order as stored: C order 0, Fortran order 1 (Open MPI's
/// values). Traces written before the order was normalised hold the producing library's
/// value, and MPICH's are 56 and 57: [`order_is_fortran`] reads both.
pub mod order {
    /// `MPI_ORDER_C`.
    pub const C: i64 = 0;
    /// `MPI_ORDER_FORTRAN`.
    pub const FORTRAN: i64 = 1;
    /// MPICH's `MPI_ORDER_C` and `MPI_ORDER_FORTRAN`.
    pub const MPICH: (i64, i64) = (56, 57);
}

/// The stored order of a library's `order` value, given its `MPI_ORDER_FORTRAN`.
pub fn encode_order(value: i64, library_fortran: i64) -> i64 {
    if value == library_fortran {
        order::FORTRAN
    } else {
        order::C
    }
}

/// Whether a stored order (normalised, or an older trace's library value) is Fortran order.
pub fn order_is_fortran(stored: i64) -> bool {
    stored == order::FORTRAN || stored == order::MPICH.1
}

/// `MPI_Type_create_darray`'s distributions and default distribution argument as stored
/// (Open MPI's values, as [`order`]'s are). MPICH's differ (121, 122, 123 and -49767): the
/// tracer maps the library's own through [`encode_distrib`] and [`encode_darg`], and a replay
/// issues its library's constants for these.
pub mod distribute {
    /// `MPI_DISTRIBUTE_BLOCK`.
    pub const BLOCK: i64 = 0;
    /// `MPI_DISTRIBUTE_CYCLIC`.
    pub const CYCLIC: i64 = 1;
    /// `MPI_DISTRIBUTE_NONE`.
    pub const NONE: i64 = 2;
    /// `MPI_DISTRIBUTE_DFLT_DARG`.
    pub const DFLT_DARG: i64 = -1;
    /// MPICH's `MPI_DISTRIBUTE_BLOCK`, `_CYCLIC`, `_NONE` and `_DFLT_DARG`.
    pub const MPICH: Library = Library {
        block: 121,
        cyclic: 122,
        none: 123,
        dflt_darg: -49767,
    };
    /// Open MPI's, which are the stored values.
    pub const OPEN_MPI: Library = Library {
        block: BLOCK,
        cyclic: CYCLIC,
        none: NONE,
        dflt_darg: DFLT_DARG,
    };

    /// One library's values of the distribution constants.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Library {
        /// `MPI_DISTRIBUTE_BLOCK`.
        pub block: i64,
        /// `MPI_DISTRIBUTE_CYCLIC`.
        pub cyclic: i64,
        /// `MPI_DISTRIBUTE_NONE`.
        pub none: i64,
        /// `MPI_DISTRIBUTE_DFLT_DARG`.
        pub dflt_darg: i64,
    }
}

/// The stored distribution of a library's value (`lib` its constants). A value that is none of
/// them (the application's error, which MPI refuses) is kept as it is, out of the stored range
/// unless it collides, so the consumers can refuse it too.
pub fn encode_distrib(value: i64, lib: distribute::Library) -> i64 {
    match value {
        v if v == lib.block => distribute::BLOCK,
        v if v == lib.cyclic => distribute::CYCLIC,
        v if v == lib.none => distribute::NONE,
        v => v,
    }
}

/// The stored distribution argument of a library's value: its `MPI_DISTRIBUTE_DFLT_DARG` as
/// [`distribute::DFLT_DARG`], a block size as it is.
pub fn encode_darg(value: i64, lib: distribute::Library) -> i64 {
    if value == lib.dflt_darg {
        distribute::DFLT_DARG
    } else {
        value
    }
}

/// A peer as the application named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// A rank of the communicator.
    Rank(i64),
    /// `MPI_ANY_SOURCE`.
    Any,
    /// `MPI_PROC_NULL`.
    Null,
}

/// How the tracer stores peer `peer` (the library's value) of a caller of rank `me` in the
/// call's communicator, given the library's `MPI_ANY_SOURCE` and `MPI_PROC_NULL` values: ranks
/// relative to the caller, so that SPMD neighbours compress to one value.
pub fn encode_peer(peer: i64, me: i64, any_source: i64, proc_null: i64) -> i64 {
    if peer == any_source {
        ANY_SOURCE
    } else if peer == proc_null {
        PROC_NULL
    } else {
        peer - me
    }
}

/// The peer a stored value names, for a caller of rank `me` in the call's communicator.
pub fn decode_peer(stored: i64, me: i64) -> Peer {
    match stored {
        ANY_SOURCE => Peer::Any,
        PROC_NULL => Peer::Null,
        rel => Peer::Rank(me + rel),
    }
}

/// Whether a receive's stored tag accepts every tag.
pub fn is_any_tag(tag: i64) -> bool {
    tag < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errhandler_ids_name_their_handlers() {
        use errhandler::*;
        assert_eq!(
            PREDEFINED[ERRORS_ARE_FATAL as usize],
            "MPI_ERRORS_ARE_FATAL"
        );
        assert_eq!(PREDEFINED[ERRORS_RETURN as usize], "MPI_ERRORS_RETURN");
        assert_eq!(PREDEFINED[ERRORS_ABORT as usize], "MPI_ERRORS_ABORT");
        assert!(FIRST_USER as usize > PREDEFINED.len());
    }

    #[test]
    fn fs_prefix_is_dropped_only_when_known() {
        assert_eq!(strip_fs_prefix("ufs:/scratch/f"), "/scratch/f");
        assert_eq!(strip_fs_prefix("lustre:out/f"), "out/f");
        assert_eq!(strip_fs_prefix("ufs:../../etc/x"), "../../etc/x");
        assert_eq!(strip_fs_prefix("/a/b:c"), "/a/b:c");
        assert_eq!(strip_fs_prefix("notafs:x"), "notafs:x");
    }

    use proptest::prelude::*;

    // Open MPI's and MPICH's MPI_ANY_SOURCE and MPI_PROC_NULL.
    const OMPI: (i64, i64) = (-1, -2);
    const MPICH: (i64, i64) = (-2, -1);

    proptest! {
        #[test]
        fn peers_round_trip(peer in 0i64..1 << 31, me in 0i64..1 << 31) {
            for (any, null) in [OMPI, MPICH] {
                prop_assert_eq!(decode_peer(encode_peer(peer, me, any, null), me), Peer::Rank(peer));
            }
        }
    }

    #[test]
    fn sentinels_decode_whatever_the_library() {
        for (any, null) in [OMPI, MPICH] {
            assert_eq!(decode_peer(encode_peer(any, 5, any, null), 5), Peer::Any);
            assert_eq!(decode_peer(encode_peer(null, 5, any, null), 5), Peer::Null);
        }
        // The sentinels are out of reach of any relative rank of a 32-bit rank space.
        assert!(decode_peer(-(i32::MAX as i64), i32::MAX as i64) == Peer::Rank(0));
        assert!(PROC_NULL < ANY_SOURCE && ANY_SOURCE < -(i32::MAX as i64));
    }

    #[test]
    fn vocabulary() {
        assert_eq!(
            predefined(BYTE).map(|t| (t.name, t.size)),
            Some(("MPI_BYTE", 1))
        );
        assert_eq!(predefined(7).map(|t| t.name), Some("MPI_INT"));
        assert!(predefined(-1).is_none() && predefined(FIRST_DERIVED_TYPE).is_none());
        assert_eq!(whence(602), Some(Whence::Cur));
        assert_eq!(whence(2), Some(Whence::End));
        assert_eq!(whence(3), None);
        for (lib_c, lib_f) in [(0, 1), order::MPICH] {
            assert!(!order_is_fortran(encode_order(lib_c, lib_f)));
            assert!(order_is_fortran(encode_order(lib_f, lib_f)));
            // Older traces stored the library's own value.
            assert!(order_is_fortran(lib_f));
            assert!(!order_is_fortran(lib_c));
        }
    }

    #[test]
    fn distributions_are_stored_in_one_encoding_whatever_the_library() {
        use distribute::*;
        for lib in [OPEN_MPI, MPICH] {
            assert_eq!(encode_distrib(lib.block, lib), BLOCK);
            assert_eq!(encode_distrib(lib.cyclic, lib), CYCLIC);
            assert_eq!(encode_distrib(lib.none, lib), NONE);
            assert_eq!(encode_darg(lib.dflt_darg, lib), DFLT_DARG);
            assert_eq!(encode_darg(3, lib), 3);
        }
        // An invalid distribution stays invalid.
        assert_eq!(encode_distrib(77, MPICH), 77);
    }

    #[test]
    fn a_negative_tag_is_any() {
        assert!(is_any_tag(ANY_TAG));
        assert!(!is_any_tag(0));
    }
}
