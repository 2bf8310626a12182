//! Scripting the CLI: with `--json` an error is JSON on stdout too; `diff`
//! exits 0 same, 1 different, 2 trouble; `iotrex replay` needs no `--threads`; one spelling of
//! the JSON report option in the help of both replay commands.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn iotrex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn synth(dir: &Path, n: u32, iters: u32) -> PathBuf {
    let p = dir.join(format!("s{n}.{iters}.iotrex"));
    let o = iotrex(&[
        "synth",
        "--ranks",
        &n.to_string(),
        "--iters",
        &iters.to_string(),
        "-o",
        s(&p),
    ]);
    assert!(o.status.success());
    p
}

#[test]
fn json_errors_are_json_on_stdout() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("missing.iotrex");
    for cmd in [
        vec!["--json", "show", s(&missing)],
        vec!["stats", "--json", s(&missing)],
        vec![
            "--json",
            "extrap",
            s(&missing),
            s(&missing),
            s(&missing),
            "--ranks",
            "8",
            "-o",
            "x",
        ],
    ] {
        let o = iotrex(&cmd);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}");
        let out = String::from_utf8_lossy(&o.stdout);
        let v: Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{cmd:?}: stdout is not JSON ({e}): {out:?}"));
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("missing.iotrex")),
            "{v}"
        );
        assert_eq!(v["hint"], "check the path", "{v}");
        // The text form is still on stderr.
        assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: "));
    }
    // Without --json, stdout stays empty.
    let o = iotrex(&["show", s(&missing)]);
    assert!(o.stdout.is_empty());
    // A usage error (clap's) too, with its status 2.
    let o = iotrex(&["--json", "show"]);
    assert_eq!(o.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["error"].as_str().unwrap().contains("required"), "{v}");
    let o = iotrex(&["--json", "--help"]);
    assert!(o.status.success());
    assert!(serde_json::from_slice::<Value>(&o.stdout).is_err());
}

#[test]
fn diff_exits_like_diff() {
    let d = tempfile::tempdir().unwrap();
    let (a, a2, b) = (
        synth(d.path(), 4, 10),
        synth(d.path(), 4, 10),
        synth(d.path(), 4, 11),
    );
    assert_eq!(iotrex(&["diff", s(&a), s(&a2)]).status.code(), Some(0));
    assert_eq!(iotrex(&["diff", s(&a), s(&b)]).status.code(), Some(1));
    let missing = d.path().join("missing.iotrex");
    let o = iotrex(&["diff", s(&a), s(&missing)]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let garbage = d.path().join("garbage.iotrex");
    std::fs::write(&garbage, b"not a trace").unwrap();
    let o = iotrex(&["--json", "diff", s(&garbage), s(&a)]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["error"].as_str().unwrap().contains("garbage.iotrex"),
        "{v}"
    );
}

#[test]
fn replay_runs_threads_without_being_told() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), 4, 3);
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let json = d.path().join("r.json");
    let o = iotrex(&[
        "replay",
        s(&t),
        "--root",
        s(&root),
        "--comm",
        "skip",
        "--compute",
        "none",
        "--json-out",
        s(&json),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["ranks"], 4, "{v}");
    assert!(root.join("out/file_3").is_file());
}

#[test]
fn one_spelling_of_the_report_file_in_both_helps() {
    let h = String::from_utf8_lossy(&iotrex(&["replay", "--help"]).stdout).into_owned();
    assert!(h.contains("--json-out <FILE>"), "{h}");
    assert!(!h.contains("aliases"), "{h}");
}
