//! Prints figures for the derivation of collective calls' nested I/O at 2^20 ranks (
//! item 4): time to extrapolate real traces from 4, 8, 12 and 16 ranks to 1,048,576 ranks
//! and the output's size against the largest input (targets: under 1 s, under 2x).
//!
//! Real traces are needed (the library's configuration and its nested calls come from a run
//! under `mpirun`): set `IOTREX_DERIVE_TRACES` to directories, separated by `:`, each holding
//! `4.iotrex`, `8.iotrex`, `12.iotrex` and `16.iotrex` (`scripts/bench-extrap.sh` traces
//! ior_like so), then `cargo bench -p extrap --bench derive`.

use extrap::{Inconsistent, Input, ModelSet, Request};
use std::path::Path;
use std::time::Instant;

fn main() {
    let Some(dirs) = std::env::var_os("IOTREX_DERIVE_TRACES") else {
        println!(
            "derive: skipped, set IOTREX_DERIVE_TRACES to directories of 4/8/12/16.iotrex \
             traced under Open MPI's defaults"
        );
        return;
    };
    let ms = ModelSet::builtin();
    println!(
        "{:<28} {:>9} {:>10} {:>12} {:>10} {:>8}",
        "traces", "target", "time", "largest in", "out bytes", "out/in"
    );
    for dir in std::env::split_paths(&dirs) {
        let inputs: Vec<Input> = [4, 8, 12, 16]
            .iter()
            .map(|n| {
                let p = dir.join(format!("{n}.iotrex"));
                Input {
                    name: p.display().to_string(),
                    file: rsd::TraceFile::read(&p).expect("read an input trace"),
                }
            })
            .collect();
        let largest = inputs
            .iter()
            .map(|i| std::fs::metadata(Path::new(&i.name)).map_or(0, |m| m.len()))
            .max()
            .unwrap_or(1);
        let target = 1u32 << 20;
        // Best of 3, after one warm-up run.
        let mut best = f64::MAX;
        let mut out = None;
        for _ in 0..4 {
            let t = Instant::now();
            let r = extrap::run(
                &Request::new(target)
                    .models(ms.clone())
                    .inconsistent(Inconsistent::AsGiven),
                &inputs,
            );
            best = best.min(t.elapsed().as_secs_f64());
            out = Some(r);
        }
        let name = dir.display().to_string();
        match out.expect("ran") {
            Ok(x) => {
                let bytes = x.file.to_bytes().expect("encode").len();
                let derived = x
                    .explain
                    .iter()
                    .any(|e| e.model.contains("in compressed form"));
                println!(
                    "{:<28} {:>9} {:>8.3}ms {:>12} {:>10} {:>8.2}{}",
                    name,
                    target,
                    best * 1e3,
                    largest,
                    bytes,
                    bytes as f64 / largest as f64,
                    if derived { "" } else { "  (not derived)" }
                );
            }
            Err(e) => println!("{name} {target}: refused: {e}"),
        }
    }
}
