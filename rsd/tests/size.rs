//! Invariant 2, constant size: for an SPMD program the file does not grow with the rank count
//! or the iteration count.

use rsd::{Header, TraceFile, synth};

fn size(nranks: u32, iters: u64) -> usize {
    let tf = TraceFile {
        header: Header::new(nranks),
        trace: synth::spmd(nranks, iters),
    };
    tf.to_bytes().unwrap().len()
}

#[test]
fn size_is_flat_in_ranks_and_iterations() {
    let base = size(4, 10) as f64;
    for (n, it) in [(8, 10), (16, 10), (64, 10), (256, 10), (4, 1000), (4, 100_000), (64, 1000)] {
        let s = size(n, it) as f64;
        let growth = (s - base) / base;
        assert!(growth.abs() <= 0.05, "{n} ranks x {it} iterations: {s} B vs {base} B at 4x10 ({:+.1}%)", growth * 100.0);
    }
}

#[test]
fn affine_offsets_stay_one_entry() {
    // Ranks 0..N writing at rank*blocksize: one group per parameter, not N.
    let t = synth::spmd(64, 10);
    let dump = format!("{t:?}");
    let groups = dump.matches("Group {").count();
    let t4 = synth::spmd(4, 10);
    assert_eq!(groups, format!("{t4:?}").matches("Group {").count(), "group count must not depend on ranks");
}
