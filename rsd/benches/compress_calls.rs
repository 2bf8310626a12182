//! One pass of the compression benchmarks' streams, timed, for instruction counts under
//! callgrind (a criterion run repeats and warms up, which a count per call cannot take apart):
//!
//! ```sh
//! B=$(ls target/release/deps/compress_calls-* | grep -v '\.d$' | head -1)
//! for n in 10000 20000; do
//!   valgrind --tool=callgrind --toggle-collect='compress_calls::run' --callgrind-out-file=/dev/null $B nested $n
//! done
//! ```
//!
//! The difference of the two counts over 6 * 10,000 calls is the instructions per call
//! (`--toggle-collect` leaves out building the stream). Under
//! `cargo bench -p rsd` it prints the time per call of one pass of each stream.

use rsd::trace::RawEvent;
use rsd::{Compressor, Op};
use std::hint::black_box;
use std::time::Instant;

mod streams;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let (which, n) = match args.as_slice() {
        [w, n] => (w.as_str(), n.parse().expect("a step count")),
        // `cargo bench` passes its own arguments: one pass of each.
        _ => ("all", 20_000i64),
    };
    if which == "nested" || which == "all" {
        run("nested_loop_stream", &streams::nested_stream(n));
    }
    if which == "single" || which == "all" {
        let flat: Vec<RawEvent> = (0..n * 6)
            .map(|i| RawEvent::new(Op::Pwrite, 1, vec![3, 8, i * 8, 8]))
            .collect();
        run("single_call_loop", &flat);
    }
}

#[inline(never)]
fn run(name: &str, evs: &[RawEvent]) {
    let t = Instant::now();
    let mut c = Compressor::new(0);
    for e in evs {
        c.push(e);
    }
    let tr = black_box(c.finish());
    let ns = t.elapsed().as_nanos() as f64 / evs.len() as f64;
    assert_eq!(tr.nodes.len(), 1);
    println!("{name}: {ns:.1} ns/call (one pass of {} calls)", evs.len());
}
