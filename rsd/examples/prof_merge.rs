//! Profiling aid: times the radix-tree merge of N synthetic one-rank traces.
//! `cargo run --release -p rsd --example prof_merge -- 65536`
fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4096);
    let traces: Vec<_> = (0..n).map(|r| rsd::synth::rank_trace(r, n, 10)).collect();
    let t = std::time::Instant::now();
    let merged = rsd::merge_tree(traces).expect("disjoint");
    println!(
        "{n} ranks: merge {:.3} s, {} top-level nodes",
        t.elapsed().as_secs_f64(),
        merged.nodes.len()
    );
}
