//! Invariant 3, one format: the version 1 golden file in `data/format/v1/` still reads, means
//! the same calls, and encodes to the same bytes. See `data/README.md` for where it came from.

use rsd::format::{FORMAT_VERSION, MAGIC};
use rsd::synth;
use rsd::{FlatEvent, Layer, RankSet, TraceFile};
use std::path::PathBuf;

const RANKS: u32 = 4;
const ITERS: u64 = 10;

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/format/v1/spmd_4x10.iotrex")
}

fn golden() -> (Vec<u8>, TraceFile) {
    let path = golden_path();
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let tf =
        TraceFile::read(&path).unwrap_or_else(|e| panic!("golden v1 file no longer reads: {e}"));
    (bytes, tf)
}

#[test]
fn header_is_what_synth_wrote() {
    let (bytes, tf) = golden();
    assert_eq!(&bytes[..8], &MAGIC, "magic");
    assert_eq!(
        u32::from_le_bytes(bytes[8..12].try_into().unwrap()),
        1,
        "file says version 1"
    );
    let h = &tf.header;
    assert_eq!(h.nranks, RANKS);
    assert_eq!(h.tool_version, "0.1.0");
    assert_eq!(
        h.command,
        ["iotrex", "synth", "--ranks", "4", "--iters", "10"]
    );
    assert_eq!(h.layers, Layer::ALL.to_vec());
    assert_eq!(h.clock, "synthetic");
    assert_eq!(h.wall_ns, 0);
    assert!(!h.incomplete);
    assert_eq!(h.notes.len(), 1);
    assert_eq!(tf.trace.ranks(), RankSet::all(RANKS));
}

#[test]
fn expands_to_the_synthetic_calls_of_every_rank() {
    let (_, tf) = golden();
    for r in 0..RANKS {
        let want: Vec<FlatEvent> = synth::events(r, RANKS, ITERS)
            .iter()
            .map(|e| e.flat())
            .collect();
        let got = tf.trace.expand(r);
        assert_eq!(got.len(), want.len(), "rank {r}: number of calls");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "rank {r}, call {i}");
        }
    }
    // A rank outside the trace has no calls.
    assert!(tf.trace.expand(RANKS).is_empty());
}

#[test]
fn reencodes_to_identical_bytes() {
    let (bytes, tf) = golden();
    let again = tf.to_bytes().expect("encode");
    assert!(
        again == bytes,
        "re-encoding the v1 golden file changed its bytes ({} -> {} bytes). If the format changed \
         on purpose, bump FORMAT_VERSION (now {FORMAT_VERSION}), add data/format/v{} with a new \
         fixture, and keep reading v1.",
        bytes.len(),
        again.len(),
        FORMAT_VERSION + 1
    );
}
