//! Export time and output size for generated 64- and 4096-rank traces, in both formats.

use codes_bridge::{ExportOptions, Format, export};
use criterion::{Criterion, criterion_group, criterion_main};
use rsd::{Header, TraceFile};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("export");
    g.sample_size(10);
    for nranks in [64u32, 4096] {
        let tf = TraceFile {
            header: Header::new(nranks),
            trace: rsd::synth::spmd(nranks, 16),
        };
        for format in [Format::Recorder, Format::Iolang] {
            let opts = ExportOptions {
                format,
                max_blocksize: Some(256 << 10),
                force: true,
                nranks_check: false,
            };
            let dir = tempfile::tempdir().expect("tempdir");
            let rep = export(&tf, dir.path(), &opts).expect("export");
            eprintln!(
                "{nranks} ranks, {format}: {} files, {} bytes, {} ops",
                rep.files,
                rep.bytes,
                rep.counts.ops()
            );
            g.bench_function(format!("{format}/{nranks}"), |b| {
                b.iter(|| export(&tf, dir.path(), &opts).expect("export"))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
