//! Export time and output size for generated 64- and 4096-rank traces, in both formats.

use codes_bridge::{ExportOptions, Format, export};
use criterion::{Criterion, criterion_group, criterion_main};
use rsd::{Header, TraceFile};

/// Peak resident set of this process (Linux), to show export memory stays flat.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l[6..].trim().to_string())
        })
        .unwrap_or_else(|| "n/a".into())
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("export");
    g.sample_size(10);
    for nranks in [64u32, 4096] {
        let tf = TraceFile {
            header: Header::new(nranks),
            trace: rsd_view::synth::spmd(nranks, 16),
        };
        for format in [Format::Recorder, Format::Iolang] {
            // Rank 0 aggregates 3 x nranks MiB; split at 256 KiB that is far over the recorder
            // loader's 2048 operations, so only iolang is split.
            let opts = ExportOptions {
                format,
                max_blocksize: (format == Format::Iolang).then_some(256 << 10),
                force: true,
                nranks_check: false,
            };
            let dir = tempfile::tempdir().expect("tempdir");
            let rep = export(&tf, dir.path(), &opts).expect("export");
            eprintln!(
                "{nranks} ranks, {format}: {} files, {} bytes, {} ops, peak RSS so far {}",
                rep.files,
                rep.bytes,
                rep.counts.ops(),
                peak_rss()
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
