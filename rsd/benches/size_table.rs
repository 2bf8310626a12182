//! Prints the trace size of the synthetic SPMD program against ranks and iterations.
//! Target: every size within 5% of the 1-rank, 10-iteration size.

use rsd::{Header, TraceFile};
use rsd_view::synth;
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
    // The same traces in format version 1, for comparison.
    let mut v1 = Vec::new();
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
            let sz1 = tf
                .to_bytes_as(rsd::format::Encoding::V1)
                .expect("encode")
                .len();
            let sz26 = tf
                .to_bytes_as(rsd::format::Encoding::V2)
                .expect("encode")
                .len();
            v1.push((n, it, sz1, sz, sz26));
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
    // Where the growth is: bytes per part of the v2 encoding at both ends.
    let parts = |n: u32| {
        TraceFile {
            header: Header::new(n),
            trace: synth::spmd(n, 10),
        }
        .breakdown(rsd::format::Encoding::V2_7)
        .expect("encode")
    };
    let (small, large) = (parts(16), parts(65_536));
    println!("v2.7 bytes per part at 10 iterations:   16 ranks  65,536 ranks");
    for part in rsd::format::v2::Part::ALL {
        for nested in [false, true] {
            let (a, b) = (
                small.get(&(part, nested)).copied().unwrap_or(0),
                large.get(&(part, nested)).copied().unwrap_or(0),
            );
            if a + b > 0 {
                let name = format!("{}{}", part.name(), if nested { " (nested)" } else { "" });
                println!("  {name:<38}{a:>9}{b:>14}");
            }
        }
    }
    let at = |n: u32| v1.iter().find(|c| c.0 == n && c.1 == 10).copied();
    if let (Some(a), Some(b)) = (at(16), at(65_536)) {
        let g = |x: usize, y: usize| (y as f64 - x as f64) / x as f64 * 100.0;
        println!(
            "16 -> 65,536 ranks at 10 iterations: format v2.7 {} -> {} B ({:+.1}%), v2.0-2.6 {} -> {} B ({:+.1}%), v1 {} -> {} B ({:+.1}%)",
            a.3,
            b.3,
            g(a.3, b.3),
            a.4,
            b.4,
            g(a.4, b.4),
            a.2,
            b.2,
            g(a.2, b.2)
        );
    }
}
