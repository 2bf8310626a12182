//! Where a trace's bytes go, in format version 1 and version 2: `scripts/trace-bytes.sh`
//! runs it on mini-app traces; by hand: `cargo run --release -p rsd --example trace_bytes --
//! FILE...`. `trace_bytes --write-as v1|v2 IN OUT` rewrites a trace in the given format
//! version (how `data/format/v2/` was made from `data/format/v1/`; `v2.7` for version 2's
//! timing records of minor version 7). `trace_bytes --compare FILE...` prints each trace's
//! bytes with the timing records of minor versions 0-6 and of 7, and checks that the 2.7
//! bytes read back as the same trace.

use rsd::TraceFile;
use rsd::format::{Encoding, PREFIX_LEN, v2::Part};
use std::path::Path;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, version, input, output] = files.as_slice()
        && flag == "--write-as"
    {
        let enc = match version.as_str() {
            "v1" => Encoding::V1,
            "v2" => Encoding::V2,
            "v2.7" => Encoding::V2_7,
            v => {
                eprintln!("--write-as takes v1, v2 or v2.7, not {v}");
                std::process::exit(2);
            }
        };
        let result = TraceFile::read(Path::new(input)).and_then(|mut tf| {
            tf.header.encoding = enc;
            tf.write(Path::new(output))
        });
        match result {
            Ok(n) => println!("{output}: {n} B"),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
        return;
    }
    if files.first().map(String::as_str) == Some("--compare") {
        compare(&files[1..]);
        return;
    }
    if files.is_empty() {
        eprintln!("usage: trace_bytes FILE...");
        std::process::exit(2);
    }
    for f in files {
        let tf = match TraceFile::read(Path::new(&f)) {
            Ok(tf) => tf,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        let on_disk = std::fs::metadata(&f).map_or(0, |m| m.len());
        println!(
            "{f}: {on_disk} B on disk (format version {}), {} ranks",
            tf.header.encoding.name(),
            tf.header.nranks
        );
        let v1 = tf.breakdown(Encoding::V1).expect("encode v1");
        let v2 = tf.breakdown(Encoding::V2_7).expect("encode v2.7");
        println!(
            "  {:<38} {:>9} {:>9} {:>9} {:>9}",
            "part", "v1 app", "v1 nested", "v2 app", "v2 nested"
        );
        println!(
            "  {:<38} {:>9} {:>9} {:>9} {:>9}",
            "prefix (magic, version, length, sum)", PREFIX_LEN, "", PREFIX_LEN, ""
        );
        let get =
            |b: &rsd::format::v2::Breakdown, p: Part, n: bool| b.get(&(p, n)).copied().unwrap_or(0);
        for p in Part::ALL {
            println!(
                "  {:<38} {:>9} {:>9} {:>9} {:>9}",
                p.name(),
                get(&v1, p, false),
                get(&v1, p, true),
                get(&v2, p, false),
                get(&v2, p, true)
            );
        }
        let total = |b: &rsd::format::v2::Breakdown| b.values().sum::<u64>() + PREFIX_LEN as u64;
        let nested = |b: &rsd::format::v2::Breakdown| {
            b.iter().filter(|(k, _)| k.1).map(|(_, v)| v).sum::<u64>()
        };
        println!(
            "  {:<38} {:>9} {:>9} {:>9} {:>9}",
            "total (nested calls)",
            total(&v1),
            nested(&v1),
            total(&v2),
            nested(&v2)
        );
        for enc in [Encoding::V1, Encoding::V2_7] {
            let b = tf.to_bytes_as(enc).expect("encode");
            assert_eq!(
                b.len() as u64,
                total(if enc == Encoding::V1 { &v1 } else { &v2 })
            );
        }
    }
}

/// Each trace's bytes with version 2's timing records of minor versions 0-6 and of 7, the
/// timing records alone, and a check that the 2.7 bytes read back as the same trace.
fn compare(files: &[String]) {
    println!(
        "{:>7} {:>9} {:>9} {:>7} {:>9} {:>9}  file",
        "ranks", "v2.0-2.6", "v2.7", "change", "timing", "timing"
    );
    let (mut a, mut b) = (0u64, 0u64);
    for f in files {
        let tf = match TraceFile::read(Path::new(f)) {
            Ok(tf) => tf,
            Err(e) => {
                eprintln!("{e}");
                continue;
            }
        };
        let old = tf.to_bytes_as(Encoding::V2).expect("encode v2");
        let new = tf.to_bytes_as(Encoding::V2_7).expect("encode v2.7");
        let back = TraceFile::from_bytes(&new, Path::new(f)).expect("v2.7 reads back");
        assert_eq!(back.trace, tf.trace, "{f}: v2.7 changed the trace");
        let timing = |e: Encoding| -> u64 {
            tf.breakdown(e)
                .expect("encode")
                .iter()
                .filter(|(k, _)| k.0 == Part::Timing)
                .map(|(_, v)| v)
                .sum()
        };
        a += old.len() as u64;
        b += new.len() as u64;
        println!(
            "{:>7} {:>9} {:>9} {:>+6.1}% {:>9} {:>9}  {f}",
            tf.header.nranks,
            old.len(),
            new.len(),
            (new.len() as f64 - old.len() as f64) / old.len() as f64 * 100.0,
            timing(Encoding::V2),
            timing(Encoding::V2_7)
        );
    }
    println!(
        "all {} files: {a} -> {b} B ({:+.1}%)",
        files.len(),
        (b as f64 - a as f64) / a.max(1) as f64 * 100.0
    );
}
