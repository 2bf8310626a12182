//! Under mpirun, an error every rank hits at once is printed once, by the first rank that
//! has it, not once per rank.

use std::process::Command;

#[test]
fn an_error_of_every_rank_is_printed_once() {
    let t = tempfile::tempdir().unwrap();
    let trace = t.path().join("s4.iotrex");
    let mut header = rsd::Header::new(4);
    header.clock = "synthetic".into();
    rsd::TraceFile {
        header,
        trace: rsd_view::synth::spmd(4, 3),
    }
    .write(&trace)
    .unwrap();
    // Every rank's first file, out/file_<rank>, would resolve outside the root through a
    // symlink inside it: each rank refuses its own open.
    let root = t.path().join("root");
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("out")).unwrap();
    let o = Command::new("timeout")
        .args(["120", "mpirun", "-np", "4"])
        .arg(env!("CARGO_BIN_EXE_iotrex-replay"))
        .arg(&trace)
        .arg("--root")
        .arg(&root)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert_eq!(err.matches("error: ").count(), 1, "{err}");
    assert!(err.contains("outside the root"), "{err}");
    assert!(!err.contains("error: error"), "{err}");
    // Nothing was written outside the root.
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// `iotrex-replay` shows the one spelling `iotrex replay` has (`--json-out`); its older
/// `--json FILE` still works, unlisted.
#[test]
fn the_report_file_has_one_spelling_in_the_help() {
    let bin = env!("CARGO_BIN_EXE_iotrex-replay");
    let h = Command::new(bin).arg("--help").output().unwrap();
    let h = String::from_utf8_lossy(&h.stdout);
    assert!(h.contains("--json-out <FILE>"), "{h}");
    assert!(!h.contains("aliases"), "{h}");
    let t = tempfile::tempdir().unwrap();
    let trace = t.path().join("s2.iotrex");
    rsd::TraceFile {
        header: rsd::Header::new(2),
        trace: rsd_view::synth::spmd(2, 2),
    }
    .write(&trace)
    .unwrap();
    let root = t.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let json = t.path().join("r.json");
    let o = Command::new(bin)
        .arg(&trace)
        .args(["--threads", "--comm", "skip", "--compute", "none", "--root"])
        .arg(&root)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(json.is_file());
}
