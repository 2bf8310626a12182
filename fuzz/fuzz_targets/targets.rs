//! The fuzz targets: each is the library side of one command (or reader), as the CLI calls it.

use crate::{NAME, SCRATCH, budget, decode, split, stage};
use rsd::TraceFile;
use std::path::Path;

/// Every target `IOTREX_FUZZ_TARGET` may name.
pub const NAMES: &[&str] = &[
    "read",
    "stats",
    "expand",
    "extrap",
    "diff",
    "export_codes",
    "export_chrome",
    "report",
    "codes",
    "plugin",
    "replay",
];

pub fn run(target: &str, data: &[u8]) {
    match target {
        "read" => read(data),
        "stats" => stats(data),
        "expand" => expand(data),
        "extrap" => extrap(data),
        "diff" => diff(data),
        "export_codes" => export_codes(data),
        "export_chrome" => export_chrome(data),
        "report" => report(data),
        "codes" => codes(data),
        "plugin" => plugin(data),
        "replay" => replay(data),
        _ => unreachable!("checked at start"),
    }
}

/// A decoded trace within the work budget, or nothing.
fn small(body: &[u8]) -> Option<TraceFile> {
    let tf = decode(body)?;
    stage("decoded");
    budget::within(&tf).then(|| {
        stage("within budget");
        tf
    })
}

/// `TraceFile::from_bytes` on raw bytes (magic, version, length, checksum), then the body
/// past the checksum, then `iotrex show` (text and `--json`) and re-encoding.
fn read(data: &[u8]) {
    if let Err(e) = TraceFile::from_bytes(data, Path::new(NAME)) {
        let msg = e.to_string();
        assert!(msg.contains(NAME), "error does not name the input: {msg}");
    }
    let Some(tf) = decode(data) else { return };
    let text = rsd_view::show::render_trace_file(&tf);
    assert!(text.starts_with("iotrex trace"));
    serde_json::to_vec(&rsd_view::show::ShowJson::new(&tf)).expect("show --json serialises");
    let bytes = tf.to_bytes().expect("a decoded trace re-encodes");
    TraceFile::from_bytes(&bytes, Path::new(NAME)).expect("a re-encoded trace reads back");
}

/// `iotrex stats`.
fn stats(data: &[u8]) {
    let Some(tf) = small(data) else { return };
    let view =
        rsd_view::show::StatsView::new(&rsd_view::stats::summarize(&tf.trace), data.len() as u64);
    rsd_view::show::render_stats_view(&view);
    serde_json::to_vec(&view).expect("stats --json serialises");
}

/// `iotrex expand --rank R` for every rank, text and `--json`.
fn expand(data: &[u8]) {
    let Some(tf) = small(data) else { return };
    tf.trace.ranks().for_each(|r| {
        let mut out = Vec::new();
        rsd_view::show::write_expand(&tf.trace, r, &mut out).expect("write to memory");
        tf.trace.expand_with(r, &mut |e| {
            serde_json::to_vec(&rsd_view::show::CallView::new(e))
                .expect("expand --json serialises");
            true
        });
    });
}

/// `iotrex extrap` with three fuzzed inputs (to a target rank count the fourth part names).
fn extrap(data: &[u8]) {
    let parts = split(data);
    if parts.len() < 3 {
        return;
    }
    let Some(inputs) = parts[..3]
        .iter()
        .enumerate()
        .map(|(i, b)| {
            small(b).map(|file| extrap::Input {
                name: format!("{NAME}.{i}"),
                file,
            })
        })
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let target = parts
        .get(3)
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.trim().parse::<u32>().ok())
        .unwrap_or(32);
    let req = extrap::Request::new(target).inconsistent(extrap::Inconsistent::Drop);
    stage("extrap: three inputs");
    if let Ok(x) = extrap::run(&req, &inputs) {
        stage("extrap: extrapolated");
        // What extrap writes must read back.
        let bytes = x.file.to_bytes().expect("an extrapolation encodes");
        TraceFile::from_bytes(&bytes, Path::new(NAME)).expect("an extrapolation reads back");
    }
}

/// `iotrex diff A B`, text and `--json`, with and without call sites and timing.
fn diff(data: &[u8]) {
    let parts = split(data);
    if parts.len() < 2 {
        return;
    }
    let (Some(a), Some(b)) = (small(parts[0]), small(parts[1])) else {
        return;
    };
    for (timing, ignore_call_sites) in [(false, false), (true, true)] {
        let opts = extrap::diff::DiffOptions {
            timing,
            ignore_call_sites,
            ..extrap::diff::DiffOptions::default()
        };
        let r = extrap::diff::diff(&a, &b, &opts);
        extrap::diff::render(&r, "a", "b");
        serde_json::to_vec(&r).expect("diff --json serialises");
    }
}

/// `iotrex export codes` in both formats, then the export read back (`codes-stats`).
fn export_codes(data: &[u8]) {
    let Some(tf) = small(data) else { return };
    for format in [codes_bridge::Format::Recorder, codes_bridge::Format::Iolang] {
        let dir = SCRATCH.join("export");
        let opts = codes_bridge::ExportOptions {
            format,
            max_blocksize: Some(1 << 20),
            force: true,
            nranks_check: false,
        };
        if codes_bridge::export_seeded(&tf, &dir, &opts, rsd::draw::DEFAULT_SEED, &mut |_, _| {})
            .is_ok()
        {
            // What iotrex exports, its own CODES reader must accept.
            codes_bridge::codes_stats(&dir, format).expect("an export reads back");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `iotrex export chrome`.
fn export_chrome(data: &[u8]) {
    let Some(tf) = small(data) else { return };
    let mut out = Vec::new();
    rsd_view::chrome::write_chrome(&tf.trace, None, 100_000, &mut out).expect("write to memory");
    serde_json::from_slice::<serde_json::Value>(&out).expect("the export is JSON");
}

/// `iotrex report IN... [--extrap OUT]`: the inputs, and the last one as the extrapolation
/// when there are four or more parts (its provenance check first, as the CLI does).
fn report(data: &[u8]) {
    let parts = split(data);
    let Some(mut inputs) = parts
        .iter()
        .take(4)
        .enumerate()
        .map(|(i, b)| {
            small(b).map(|file| report::Input {
                label: format!("{NAME}.{i}"),
                file,
            })
        })
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let out = (inputs.len() == 4).then(|| inputs.pop().expect("four"));
    if let Some(o) = &out {
        let named: Vec<(&str, &TraceFile)> =
            inputs.iter().map(|i| (i.label.as_str(), &i.file)).collect();
        if extrap::provenance::check_made_from((&o.label, &o.file), &named).is_err() {
            return;
        }
    }
    let models = report::ExtrapModels::new(
        inputs
            .iter()
            .map(|i| (i.label.clone(), i.file.clone()))
            .collect(),
    );
    let limits = report::Limits::default();
    stage(if out.is_some() {
        "report: with --extrap"
    } else {
        "report: inputs"
    });
    let _ = report::render(&inputs, out.as_ref(), &models, &limits, &mut |_| {});
}

/// The CODES readers behind `codes-stats`: the first byte picks the format; the rest is
/// `log.0`, `log.1`, ... (recorder) or `meta.txt` and the kernels it may name (iolang).
fn codes(data: &[u8]) {
    let Some((&fmt, rest)) = data.split_first() else {
        return;
    };
    let dir = SCRATCH.join("codes");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch");
    let parts = split(rest);
    let format = if fmt % 2 == 0 {
        for (i, p) in parts.iter().take(16).enumerate() {
            std::fs::write(dir.join(format!("log.{i}")), p).expect("scratch");
        }
        codes_bridge::Format::Recorder
    } else {
        std::fs::write(dir.join(codes_bridge::iolang::META), parts[0]).expect("scratch");
        for (i, p) in parts.iter().skip(1).take(16).enumerate() {
            let name = codes_bridge::iolang::kernel_name(i as u32);
            std::fs::write(dir.join(name), p).expect("scratch");
        }
        codes_bridge::Format::Iolang
    };
    let r = codes_bridge::codes_stats(&dir, format);
    stage(if r.is_ok() {
        "codes: read"
    } else {
        "codes: refused"
    });
    if let Err(e) = r {
        let msg = e.to_string();
        assert!(
            msg.contains(dir.to_str().expect("utf-8 scratch")),
            "error does not name the input: {msg}"
        );
    }
}

/// The plugin loader's checks on a fuzzed descriptor, then models' verification of a plugin's
/// proposals (coefficients it claims fit, on fuzzed points): never trusted, never a panic.
fn plugin(data: &[u8]) {
    crate::plugin::run(data);
}

/// `iotrex replay`'s planning, never its I/O: drawing summarised values, the rank count and
/// thread plan, the `--comm real` matching check, `--prep`'s list of files to create, and the
/// mapping of every traced path under a root.
fn replay(data: &[u8]) {
    let Some(mut tf) = small(data) else { return };
    if rsd::draw::realize(&mut tf.trace, rsd::draw::DEFAULT_SEED).is_err() {
        return;
    }
    let n = replay::nranks(&tf);
    let _ = replay::plan(n, replay::Cap::default(), replay::max_map_count());
    let _ = replay::matching::check(&tf.trace, n);
    let need = replay::prep::needed(&tf.trace);
    let root = replay::Root::new(&SCRATCH).expect("scratch root");
    for traced in need.keys() {
        assert!(root.lexical(traced).starts_with(root.dir()));
    }
}
