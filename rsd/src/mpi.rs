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
    fn a_negative_tag_is_any() {
        assert!(is_any_tag(ANY_TAG));
        assert!(!is_any_tag(0));
    }
}
