//! Prints the trace size of the synthetic SPMD program against ranks and iterations.
//! Target: every size within 5% of the 1-rank, 10-iteration size.

use rsd::{Header, TraceFile, synth};
use std::time::Instant;

fn main() {
    // `cargo bench` passes `--bench`; a filter argument that is not ours just skips the table.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && a != "size_table")
    {
        return;
    }
    let ranks = [1u32, 16, 256, 4096, 65_536];
    let iters = [10u64, 1_000, 100_000, 1_000_000];
    let mut base = None;
    println!("trace size in bytes (synthetic SPMD program), ranks x iterations");
    print!("{:>8}", "ranks");
    for it in iters {
        print!("{:>14}", format!("{it} it"));
    }
    println!();
    let (mut lo, mut hi) = (usize::MAX, 0);
    let t0 = Instant::now();
    for n in ranks {
        print!("{n:>8}");
        for it in iters {
            // Every rank really compresses its whole stream, so rank-count x iteration cells
            // above ~10^8 calls are left out (they would take minutes on 2 cores).
            if n as u64 * it > 100_000_000 {
                print!("{:>14}", "-");
                continue;
            }
            let tf = TraceFile {
                header: Header::new(n),
                trace: synth::spmd(n, it),
            };
            let sz = tf.to_bytes().expect("encode").len();
            base.get_or_insert(sz);
            lo = lo.min(sz);
            hi = hi.max(sz);
            print!("{sz:>14}");
        }
        println!();
    }
    let b = base.unwrap_or(1) as f64;
    println!(
        "spread: min {lo} B, max {hi} B, {:+.1}% .. {:+.1}% of the 1x10 size ({:.1} s)",
        (lo as f64 - b) / b * 100.0,
        (hi as f64 - b) / b * 100.0,
        t0.elapsed().as_secs_f64()
    );
}
