//! The CODES export of real mini-app traces: `codes-stats` of the export must equal what the
//! trace itself says under the documented mapping (POSIX view: POSIX and stdio calls, with
//! MPI-IO calls replaced by the POSIX calls nested in them).

use crate::common;
use common::*;
use rsd::op::{Dir, Layer};

fn posix_view_totals(tf: &rsd::TraceFile) -> (u64, u64, u64, u64) {
    // (reads, read bytes, writes, write bytes) over POSIX and stdio calls, nested ones included.
    let s = rsd_view::stats::summarize(&tf.trace);
    let (mut r, mut rb, mut w, mut wb) = (0, 0, 0, 0);
    for ((layer, op), t) in &s.ops {
        if !matches!(layer, Layer::Posix | Layer::Stdio) {
            continue;
        }
        match op.dir() {
            Dir::Read => {
                r += t.count;
                rb += t.bytes;
            }
            Dir::Write => {
                w += t.count;
                wb += t.bytes;
            }
            Dir::None => {}
        }
    }
    (r, rb, w, wb)
}

fn export_and_count(
    tf_path: &std::path::Path,
    dir: &std::path::Path,
    extra: &[&str],
) -> serde_json::Value {
    let out = dir.join(format!("codes{}", extra.len()));
    let mut args = vec![
        "--json",
        "export",
        "codes",
        tf_path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--format",
        "iolang",
    ];
    args.extend_from_slice(extra);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(&args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args([
            "--json",
            "codes-stats",
            "--format",
            "iolang",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn collective_and_posix_mini_apps_export_what_they_did() {
    for (np, app_args) in [
        (
            8u32,
            vec![
                "-a", "mpiio", "-c", "-t", "65536", "-b", "262144", "-s", "2", "-R",
            ],
        ),
        (
            4,
            vec![
                "-a", "posix", "-F", "-t", "8192", "-b", "65536", "-s", "3", "-R",
            ],
        ),
    ] {
        let dir = scratch();
        let data = dir.path().join("ior.dat").display().to_string();
        let mut a: Vec<String> = app_args.iter().map(|s| s.to_string()).collect();
        a.extend(["-o".to_string(), data]);
        let run = mpirun(
            np,
            &app("ior_like"),
            &a,
            &dir.path().join("t.iotrex"),
            &Opts::default(),
        );
        let tf = run.read();
        let (r, rb, w, wb) = posix_view_totals(&tf);
        assert!(w > 0 && r > 0, "{app_args:?}: the app wrote and read");
        let plain = export_and_count(&run.trace, dir.path(), &[]);
        assert_eq!(plain["NUM_WRITES"], w, "{app_args:?}");
        assert_eq!(plain["WRITE_SIZE"], wb, "{app_args:?}");
        assert_eq!(plain["NUM_READS"], r, "{app_args:?}");
        assert_eq!(plain["READ_SIZE"], rb, "{app_args:?}");
        // Splitting at 4 KiB (below every transfer size here) keeps the bytes and adds operations.
        let split = export_and_count(&run.trace, dir.path(), &["--max-blocksize", "4KiB"]);
        assert_eq!(split["WRITE_SIZE"], wb);
        assert_eq!(split["READ_SIZE"], rb);
        assert!(split["NUM_WRITES"].as_u64() > plain["NUM_WRITES"].as_u64());
    }
}
