//! An interrupted command never leaves a half file under its output name:
//! `iotrex export chrome` and `iotrex export codes` of a large trace are killed with SIGKILL
//! at several points of their run; whatever is then under the output names must be whole
//! (the Chrome JSON parses and has every span; every CODES kernel ends with its `exit 0;`
//! and the meta file lists every rank), or absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn iotrex() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/iotrex");
    assert!(p.exists(), "cargo build --release -p iotrex first");
    p
}

const RANKS: u32 = 256;

/// A trace whose exports are tens of MB (a couple of seconds to write).
fn big(dir: &Path) -> PathBuf {
    let t = dir.join("big.iotrex");
    let o = Command::new(iotrex())
        .args([
            "synth",
            "--ranks",
            &RANKS.to_string(),
            "--iters",
            "2000",
            "-o",
        ])
        .arg(&t)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    t
}

/// Runs `args`, kills it with SIGKILL after `after` (unless it ended first); true if it was
/// killed before it ended.
fn kill_after(args: &[&std::ffi::OsStr], after: Duration) -> bool {
    let mut c = Command::new(iotrex())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < after {
        if c.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let killed = c.try_wait().unwrap().is_none();
    c.kill().unwrap_or(());
    let _ = c.wait();
    killed
}

const DELAYS_MS: [u64; 6] = [100, 300, 600, 1000, 1500, 2200];

#[test]
fn killed_chrome_export_leaves_no_half_file() {
    let d = tempfile::tempdir().unwrap();
    let t = big(d.path());
    let out = d.path().join("out.json");
    let mut killed = 0;
    for ms in DELAYS_MS {
        let _ = std::fs::remove_file(&out);
        let args = [
            "export".as_ref(),
            "chrome".as_ref(),
            t.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
            "--max-events".as_ref(),
            "100000000".as_ref(),
        ];
        killed += kill_after(&args, Duration::from_millis(ms)) as u32;
        if let Ok(text) = std::fs::read(&out) {
            let v: serde_json::Value = serde_json::from_slice(&text).unwrap_or_else(|e| {
                panic!(
                    "killed after {ms} ms: {} holds {} bytes that are not whole JSON: {e}",
                    out.display(),
                    text.len()
                )
            });
            assert!(
                v["traceEvents"]
                    .as_array()
                    .is_some_and(|a| a.len() > 500_000)
            );
        }
    }
    assert!(
        killed > 0,
        "no run was killed before it ended: nothing was tested"
    );
}

#[test]
fn killed_codes_export_leaves_no_half_file() {
    let d = tempfile::tempdir().unwrap();
    let t = big(d.path());
    let out = d.path().join("codes");
    let mut killed = 0;
    for ms in DELAYS_MS {
        let _ = std::fs::remove_dir_all(&out);
        let args = [
            "export".as_ref(),
            "codes".as_ref(),
            t.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
            "--format".as_ref(),
            "iolang".as_ref(),
        ];
        killed += kill_after(&args, Duration::from_millis(ms)) as u32;
        let Ok(entries) = std::fs::read_dir(&out) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                // A temporary name (a SIGKILL leaves it): never read as output.
                continue;
            }
            let text = std::fs::read_to_string(e.path()).unwrap();
            if name == "meta.txt" {
                assert_eq!(
                    text.lines().count(),
                    RANKS as usize,
                    "killed after {ms} ms: meta.txt is partial"
                );
            } else {
                assert!(
                    text.ends_with("exit 0;\n") || text.ends_with("exit 0;"),
                    "killed after {ms} ms: {name} is partial ({} bytes, ends {:?})",
                    text.len(),
                    &text[text.len().saturating_sub(30)..]
                );
            }
        }
    }
    assert!(
        killed > 0,
        "no run was killed before it ended: nothing was tested"
    );
}
