//! `iotrex export codes` and `iotrex codes-stats` from the command line.

use serde_json::Value;
use std::process::{Command, Output};

fn iotrex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .expect("run iotrex")
}

fn json(args: &[&str]) -> Value {
    let o = iotrex(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("valid JSON")
}

#[test]
fn split_keeps_bytes_and_adds_operations() {
    let dir = tempfile::tempdir().unwrap();
    let d = |s: &str| dir.path().join(s).display().to_string();
    let trace = d("s.iotrex");
    assert!(
        iotrex(&["synth", "--ranks", "8", "--iters", "5", "-o", &trace])
            .status
            .success()
    );
    let plain = json(&["--json", "export", "codes", &trace, "-o", &d("plain")]);
    let split = json(&[
        "--json",
        "export",
        "codes",
        &trace,
        "-o",
        &d("split"),
        "--max-blocksize",
        "256KiB",
    ]);
    let a = json(&["--json", "codes-stats", &d("plain")]);
    let b = json(&["--json", "codes-stats", &d("split")]);
    // What synth wrote: 8 ranks x 5 pwrites of 8 KiB, plus rank 0's three aggregated writes of
    // 8 MiB under the collective, plus 64 bytes of stdio.
    let expected =
        8 * 5 * rsd_view::synth::SMALL as u64 + 3 * 8 * rsd_view::synth::BLOCK as u64 + 64;
    assert_eq!(a["WRITE_SIZE"], expected);
    assert_eq!(b["WRITE_SIZE"], expected);
    // Each 8 MiB write becomes 32 pieces of 256 KiB: 31 more operations each.
    let extra = 3 * 31;
    assert_eq!(
        b["NUM_WRITES"].as_u64().unwrap(),
        a["NUM_WRITES"].as_u64().unwrap() + extra
    );
    assert_eq!(split["split_extra"], extra);
    assert_eq!(plain["split_extra"], 0);
    // The same export as iolang reads back with the same counts.
    let _ = json(&[
        "--json",
        "export",
        "codes",
        &trace,
        "-o",
        &d("io"),
        "--format",
        "iolang",
    ]);
    let c = json(&["--json", "codes-stats", "--format", "iolang", &d("io")]);
    assert_eq!(c["WRITE_SIZE"], expected);
    assert_eq!(c["NUM_WRITES"], a["NUM_WRITES"]);
}

#[test]
fn refusals_name_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("s.iotrex").display().to_string();
    assert!(
        iotrex(&["synth", "--ranks", "2", "--iters", "1", "-o", &trace])
            .status
            .success()
    );
    let out = dir.path().join("out").display().to_string();
    assert!(
        iotrex(&["export", "codes", &trace, "-o", &out])
            .status
            .success()
    );
    let o = iotrex(&["export", "codes", &trace, "-o", &out]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&out) && err.contains("--force"), "{err}");
    assert!(
        iotrex(&["export", "codes", &trace, "-o", &out, "--force"])
            .status
            .success()
    );
    let o = iotrex(&[
        "export",
        "codes",
        &trace,
        "-o",
        &out,
        "--max-blocksize",
        "12 parsecs",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--max-blocksize"));
    let bogus = dir.path().join("bogus.iotrex");
    std::fs::write(&bogus, b"not a trace").unwrap();
    let o = iotrex(&[
        "export",
        "codes",
        bogus.to_str().unwrap(),
        "-o",
        &dir.path().join("x").display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bogus.iotrex"));
}

#[test]
fn chrome_export_has_one_span_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("s.iotrex").display().to_string();
    assert!(
        iotrex(&["synth", "--ranks", "8", "--iters", "6", "-o", &trace])
            .status
            .success()
    );
    let out = dir.path().join("c.json").display().to_string();
    let rep = json(&[
        "--json", "export", "chrome", &trace, "-o", &out, "--ranks", "0-2,7",
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let spans: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    // Rank 0: 7 fixed calls + 6 pwrites + 3 collective writes each with a nested pwrite + 3
    // stdio calls; the other ranks the same without the nested pwrites and stdio.
    let per_other = 7 + 6 + 3;
    let rank0 = per_other + 3 + 3;
    assert_eq!(spans.len(), rank0 + 3 * per_other);
    assert_eq!(rep["spans"], spans.len());
    assert_eq!(spans.iter().filter(|e| e["pid"] == 7).count(), per_other);
    assert!(
        spans
            .iter()
            .all(|e| [0, 1, 2, 7].contains(&e["pid"].as_u64().unwrap()))
    );
    let capped = json(&[
        "--json",
        "export",
        "chrome",
        &trace,
        "-o",
        &out,
        "--max-events",
        "10",
    ]);
    assert_eq!(capped["truncated"], true);
    assert_eq!(capped["spans"], 10);
}
