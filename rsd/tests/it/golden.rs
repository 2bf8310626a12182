//! Invariant 3, one format: the version 1 golden file in `data/format/v1/` still reads, means
//! the same calls, and encodes to the same bytes. See `data/README.md` for where it came from.

use rsd::format::{FORMAT_VERSION, MAGIC};
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

/// What the golden file expands to, stored next to it when it was made (the calls of
/// `rsd_view::synth` at that time). Stored rather than regenerated, so the synthetic program can
/// change without touching the fixture.
fn expected_calls() -> Vec<Vec<FlatEvent>> {
    let p = golden_path().with_file_name("spmd_4x10.expand.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).expect("expand.json holds one list of calls per rank")
}

#[test]
fn expands_to_the_recorded_calls_of_every_rank() {
    let (_, tf) = golden();
    let expected = expected_calls();
    assert_eq!(expected.len(), RANKS as usize);
    for (r, want) in expected.iter().enumerate() {
        let got = tf.trace.expand(r as u32);
        assert_eq!(got.len(), want.len(), "rank {r}: number of calls");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g, w, "rank {r}, call {i}");
        }
        // Sanity of the fixture itself: the pwrite loop of ITERS iterations is there.
        assert_eq!(
            got.iter()
                .filter(|e| e.op == rsd::Op::Pwrite && e.children.is_empty())
                .count() as u64,
            ITERS
        );
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

/// The header's list of unrecorded MPI functions, added after version 1 was fixed: a file
/// that has it (the golden file above with the list added) reads it and keeps its bytes, and
/// a file without it (the golden file above) reads as an empty list.
#[test]
fn unrecorded_mpi_functions_read_and_default() {
    let path = golden_path().with_file_name("spmd_4x10_unrecorded.iotrex");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let tf = TraceFile::read(&path).unwrap();
    assert_eq!(
        tf.header.unrecorded_mpi,
        ["MPI_Rsend", "MPI_Scan", "mpi_waitany_"]
    );
    let (old_bytes, old) = golden();
    assert!(old.header.unrecorded_mpi.is_empty());
    // Everything else is the older file's.
    assert_eq!(tf.trace, old.trace);
    assert_eq!(tf.header.notes, old.header.notes);
    assert_eq!(tf.to_bytes().unwrap(), bytes);
    assert!(bytes.len() > old_bytes.len());
}

/// The MPI library's configuration, added after version 1 was fixed as the header's last
/// optional field: a file with it (the golden file above with a configuration and no
/// unrecorded list, so the list is written empty before it) reads it back and keeps its bytes.
#[test]
fn mpi_config_reads_and_defaults() {
    let path = golden_path().with_file_name("spmd_4x10_mpiconfig.iotrex");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let tf = TraceFile::read(&path).unwrap();
    let c = tf.header.mpi_config.as_ref().expect("a configuration");
    assert!(c.library.starts_with("Open MPI v4.1.4"), "{}", c.library);
    assert_eq!(c.node_ranks, [(4, 1)]);
    assert_eq!((c.ranks(), c.nodes()), (4, 1));
    assert_eq!(c.cvar("io_ompio_max_aggregators_ratio"), Some("8"));
    assert_eq!(
        c.file_hints[0].1[0],
        ("cb_nodes".to_string(), "1".to_string())
    );
    assert!(tf.header.unrecorded_mpi.is_empty());
    let (_, old) = golden();
    assert!(old.header.mpi_config.is_none());
    assert_eq!(tf.trace, old.trace);
    assert_eq!(tf.to_bytes().unwrap(), bytes);
}
