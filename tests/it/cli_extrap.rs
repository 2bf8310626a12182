//! `iotrex extrap` and `iotrex diff` end to end on `iotrex synth` traces: success, --explain,
//! --json, refusals that write nothing, bad plugins, and diff's exit status.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn iotrex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .expect("run iotrex")
}

fn s(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
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
        &s(&p),
    ]);
    assert!(o.status.success());
    p
}

#[test]
fn extrap_then_diff_against_the_direct_trace() {
    let d = tempfile::tempdir().unwrap();
    let ins: Vec<String> = [4, 8, 12, 16]
        .iter()
        .map(|&n| s(&synth(d.path(), n, 10)))
        .collect();
    let out = d.path().join("x64.iotrex");
    let mut args = vec!["extrap"];
    args.extend(ins.iter().map(String::as_str));
    let o_s = s(&out);
    args.extend(["--ranks", "64", "-o", &o_s, "--explain"]);
    let o = iotrex(&args);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("64 ranks, extrapolated from 4, 8, 12, 16 ranks"),
        "{text}"
    );
    assert!(text.contains("path: out/file_%d [rank]"), "{text}");
    assert!(
        text.contains("count: 67108864  [group 0 value = 1048576*n]"),
        "{text}"
    );
    let direct = synth(d.path(), 64, 10);
    let o = iotrex(&["diff", &o_s, &s(&direct)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("identical"));
    // Another loop count differs: exit 1 with the parameter on each side.
    let other = synth(d.path(), 64, 11);
    let o = iotrex(&["diff", &o_s, &s(&other), "--timing"]);
    assert_eq!(o.status.code(), Some(1));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("loop count:") && t.contains("< 10") && t.contains("> 11"),
        "{t}"
    );
    assert!(t.contains("total call+gap time"), "{t}");
    let o = iotrex(&["--json", "diff", &o_s, &s(&other)]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["identical"], false);
    // --json report of an extrapolation.
    let mut args = vec!["--json", "extrap"];
    args.extend(ins.iter().map(String::as_str));
    let o_j = s(&d.path().join("x1m.iotrex"));
    args.extend(["--ranks", "1048576", "-o", &o_j]);
    let o = iotrex(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ranks"], 1048576);
    assert_eq!(v["from"], serde_json::json!([4, 8, 12, 16]));
}

#[test]
fn refusals_write_nothing_and_say_why() {
    let d = tempfile::tempdir().unwrap();
    // Loop counts 10, 10, 13, 10: no exact model.
    let ins = [
        synth(d.path(), 4, 10),
        synth(d.path(), 8, 10),
        synth(d.path(), 12, 13),
        synth(d.path(), 16, 10),
    ];
    let out = d.path().join("x.iotrex");
    let mut args: Vec<String> = vec!["extrap".into()];
    args.extend(ins.iter().map(|p| s(p)));
    args.extend(["--ranks".into(), "64".into(), "-o".into(), s(&out)]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = iotrex(&a);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error: cannot extrapolate loop count of loop around pwrite"),
        "{err}"
    );
    assert!(
        err.contains("10 at 4, 10 at 8, 13 at 12, 10 at 16"),
        "{err}"
    );
    assert!(
        err.contains("\nhint: ") && err.contains("--plugin"),
        "{err}"
    );
    assert!(!out.exists());
    // A missing plugin.
    let mut a2 = a.clone();
    a2.extend(["--plugin", "/nonexistent/libx.so"]);
    let o = iotrex(&a2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("error: cannot load model plugin /nonexistent/libx.so: no such file"),
        "{err}"
    );
    // Too few inputs is a usage error from clap.
    let o = iotrex(&[
        "extrap",
        &s(&ins[0]),
        &s(&ins[1]),
        "--ranks",
        "8",
        "-o",
        &s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_refusal_under_json_gives_its_fields() {
    let d = tempfile::tempdir().unwrap();
    // Loop counts 10, 10, 13, 10: no exact model.
    let ins = [
        synth(d.path(), 4, 10),
        synth(d.path(), 8, 10),
        synth(d.path(), 12, 13),
        synth(d.path(), 16, 10),
    ];
    let out = d.path().join("x.iotrex");
    let mut args: Vec<String> = vec!["--json".into(), "extrap".into()];
    args.extend(ins.iter().map(|p| s(p)));
    args.extend(["--ranks".into(), "64".into(), "-o".into(), s(&out)]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = iotrex(&a);
    assert_eq!(o.status.code(), Some(1));
    assert!(!out.exists());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The message and hint, as for any error; the refusal's fields beside them.
    let msg = v["error"].as_str().unwrap();
    assert!(msg.starts_with("cannot extrapolate loop count of loop around pwrite"));
    let r = &v["refusal"];
    assert_eq!(r["kind"], "refused", "{r}");
    assert_eq!(r["param"]["kind"], "loop_count", "{r}");
    assert_eq!(r["event"]["kind"], "loop", "{r}");
    let call = &r["event"]["first"];
    assert_eq!(call["kind"], "event", "{r}");
    assert_eq!(call["op"], "pwrite", "{r}");
    let sig = call["sig"].as_str().unwrap();
    assert!(msg.contains(&format!("pwrite (call site {sig}")), "{msg}");
    let reasons = r["detail"].as_array().unwrap();
    assert_eq!(reasons[0]["kind"], "fits_no_model", "{r}");
    assert_eq!(r["values"], "10 at 4, 10 at 8, 13 at 12, 10 at 16", "{r}");
    let tried = r["tried"].as_str().unwrap();
    assert!(
        !tried.is_empty() && msg.ends_with(&format!("models tried: {tried}")),
        "{r}"
    );
    assert_eq!(r["hint"], v["hint"], "{r}");
    // The text form stays on stderr.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("error: cannot extrapolate"), "{err}");
}

/// The written extrapolation carries its provenance in the header (format 2.8): `show` prints
/// it and `show --json` gives its fields; the notes still say it for people.
#[test]
fn the_output_says_how_it_was_made() {
    let d = tempfile::tempdir().unwrap();
    let ins: Vec<String> = [4, 8, 16]
        .iter()
        .map(|&n| s(&synth(d.path(), n, 4)))
        .collect();
    let out = s(&d.path().join("x32.iotrex"));
    let mut args = vec!["extrap"];
    args.extend(ins.iter().map(String::as_str));
    args.extend(["--ranks", "32", "-o", &out]);
    let o = iotrex(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = iotrex(&["show", &out]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("format version 2.8,"), "{text}");
    assert!(
        text.contains("extrap     from 4, 8, 16 ranks to 32\n"),
        "{text}"
    );
    assert!(
        text.contains("note       extrapolated from 4,8,16 ranks to 32 by iotrex extrap"),
        "{text}"
    );
    let o = iotrex(&["--json", "show", &out]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let p = &j["header"]["provenance"];
    assert_eq!(p["scales"], serde_json::json!([4, 8, 16]), "{j}");
    assert_eq!(p["target"], 32);
    assert_eq!(p["dropped"], serde_json::json!([]));
    // A traced (here synthetic) trace has none.
    let o = iotrex(&["--json", "show", &ins[0]]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(j["header"].get("provenance").is_none(), "{j}");
}

/// A synth trace at `n` ranks whose header says it ran on `nodes` nodes of `n / nodes` ranks
/// each, placed by block, as the tracer records a run on a cluster.
fn synth_on_nodes(dir: &Path, n: u32, nodes: u32) -> PathBuf {
    let p = synth(dir, n, 10);
    let mut tf = rsd::TraceFile::read(&p).unwrap();
    tf.header.mpi_config = Some(rsd::MpiConfig {
        library: "Open MPI v4.1.4".into(),
        node_ranks: vec![(n / nodes, nodes)],
        nodes_contiguous: true,
        ..Default::default()
    });
    tf.write(&p).unwrap();
    p
}

#[test]
fn the_targets_shape_bad_or_missing_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    // 2 nodes of 2, 4, 6 and 8 ranks: the ranks per node differ between the inputs.
    let ins: Vec<String> = [4, 8, 12, 16]
        .iter()
        .map(|&n| s(&synth_on_nodes(d.path(), n, 2)))
        .collect();
    let out = d.path().join("x.iotrex");
    let o_s = s(&out);
    let run = |extra: &[&str]| {
        let mut args = vec!["extrap"];
        args.extend(ins.iter().map(String::as_str));
        args.extend(["-o", &o_s]);
        args.extend(extra);
        iotrex(&args)
    };
    let refused = |o: &Output, says: &str| {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.exists(), "a refusal wrote {}", out.display());
    };
    // No shape given: asked for, naming each input's layout.
    refused(
        &run(&["--ranks", "64"]),
        "the inputs have different ranks per node (",
    );
    refused(
        &run(&["--ranks", "64"]),
        "s12.10.iotrex (2 nodes x 6 ranks)",
    );
    refused(&run(&["--ranks", "64"]), "--ranks-per-node P or --nodes K");
    // A shape that does not divide the target.
    refused(
        &run(&["--ranks", "64", "--ranks-per-node", "5"]),
        "--ranks-per-node 5 does not divide 64 ranks",
    );
    refused(
        &run(&["--ranks", "64", "--nodes", "3"]),
        "--nodes 3 does not divide 64 ranks",
    );
    // Both at once is a usage error.
    let o = run(&["--ranks", "64", "--nodes", "2", "--ranks-per-node", "32"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Given, the output's header says the target's layout.
    for extra in [["--ranks-per-node", "32"], ["--nodes", "2"]] {
        let mut args = vec!["--ranks", "64"];
        args.extend(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let tf = rsd::TraceFile::read(&out).unwrap();
        let mc = tf.header.mpi_config.unwrap();
        assert_eq!(mc.node_ranks, [(32, 2)], "{extra:?}");
        std::fs::remove_file(&out).unwrap();
    }
}
