//! Criterion benchmarks for the Foundation targets:
//! - compression throughput on a regular nested-loop stream (target ≤ 100 ns/event);
//! - merging 65,536 one-rank traces of one SPMD pattern through a binary radix tree (≤ 1 s).
//!
//! The size table (ranks × iterations) is printed by the `size_table` bench.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rsd::trace::RawEvent;
use rsd::{Compressor, Op, merge_tree};
use rsd_view::synth;
use std::hint::black_box;
use std::time::Duration;

mod streams;
use streams::nested_stream;

fn compress(c: &mut Criterion) {
    let evs = nested_stream(20_000);
    let mut g = c.benchmark_group("compress");
    g.throughput(Throughput::Elements(evs.len() as u64));
    g.bench_function("nested_loop_stream", |b| {
        b.iter(|| {
            let mut cmp = Compressor::new(0);
            for e in &evs {
                cmp.push(e);
            }
            assert_eq!(cmp.len(), 1);
            black_box(cmp.finish())
        })
    });
    // The steady state of an innermost loop (one call repeated with a strided offset).
    let flat: Vec<RawEvent> = (0..120_000i64)
        .map(|i| RawEvent::new(Op::Pwrite, 1, vec![3, 8, i * 8, 8]))
        .collect();
    g.throughput(Throughput::Elements(flat.len() as u64));
    g.bench_function("single_call_loop", |b| {
        b.iter(|| {
            let mut cmp = Compressor::new(0);
            for e in &flat {
                cmp.push(e);
            }
            assert_eq!(cmp.len(), 1);
            black_box(cmp.finish())
        })
    });
    g.finish();
}

fn merge(c: &mut Criterion) {
    const N: u32 = 65_536;
    let one: Vec<_> = (0..N).map(|r| synth::rank_trace(r, N, 10)).collect();
    let mut g = c.benchmark_group("merge");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("radix_tree_65536_ranks", |b| {
        b.iter_batched(
            || one.clone(),
            |traces| black_box(merge_tree(traces).unwrap()),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, compress, merge);
criterion_main!(benches);
