//! Prints figures: time to extrapolate each synthetic pattern from 4, 8, 12 and 16 ranks to 64
//! and to 1,048,576 ranks, and the input and output sizes. Run with
//! `cargo bench -p extrap --bench extrap`; `ONLY=Groups` runs the patterns whose name holds
//! `Groups`, and `TARGET=64` one target, to profile one.

use extrap::patterns::{Pattern, trace_file};
use extrap::{Inconsistent, Input, ModelSet, Request};
use std::time::Instant;

fn main() {
    let ms = ModelSet::builtin();
    println!(
        "{:<10} {:>9} {:>12} {:>12} {:>10} {:>8}",
        "pattern", "target", "time", "largest in", "out bytes", "out/in"
    );
    let only = std::env::var("ONLY").unwrap_or_default();
    for p in Pattern::EXACT
        .into_iter()
        .filter(|p| format!("{p:?}").contains(&only))
    {
        let inputs: Vec<Input> = [4, 8, 12, 16]
            .iter()
            .map(|&n| Input {
                name: format!("{p:?}.{n}"),
                file: trace_file(p, n),
            })
            .collect();
        let largest = inputs
            .iter()
            .map(|i| i.file.to_bytes().expect("encode").len())
            .max()
            .unwrap_or(1);
        let targets: Vec<u32> = match std::env::var("TARGET").ok().and_then(|t| t.parse().ok()) {
            Some(t) => vec![t],
            None => vec![64, 1 << 20],
        };
        for target in targets {
            // Best of 5, after one warm-up run.
            let mut best = f64::MAX;
            let mut out = None;
            for _ in 0..6 {
                let t = Instant::now();
                let r = extrap::run(
                    &Request::new(target)
                        .models(ms.clone())
                        .inconsistent(Inconsistent::AsGiven),
                    &inputs,
                );
                let dt = t.elapsed().as_secs_f64();
                best = best.min(dt);
                out = Some(r);
            }
            match out.expect("ran") {
                Ok(x) => {
                    let bytes = x.file.to_bytes().expect("encode").len();
                    println!(
                        "{:<10} {:>9} {:>10.3}ms {:>12} {:>10} {:>8.2}",
                        format!("{p:?}"),
                        target,
                        best * 1e3,
                        largest,
                        bytes,
                        bytes as f64 / largest as f64
                    );
                }
                Err(e) => println!("{p:?} {target}: refused: {e}"),
            }
        }
    }
}
