//! `iotrex report` from the command line: synthetic traces, a real traced ior_like run
//! (collective MPI-IO), the titles of a real comm_mix run's parameter plots, and errors that
//! name the input.

use crate::common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};

fn iotrex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .expect("run iotrex")
}

fn ok(args: &[&str]) -> Output {
    let o = iotrex(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn page(path: &Path) -> String {
    let html = std::fs::read_to_string(path).expect("report written");
    let c = report::check(&html).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(c.svgs > 0 && c.min_marks > 0);
    html
}

#[test]
fn report_of_synthetic_traces_with_extrapolation() {
    let dir = tempfile::tempdir().unwrap();
    let d = |s: &str| dir.path().join(s).display().to_string();
    for n in ["4", "8", "16", "64"] {
        ok(&[
            "synth",
            "--ranks",
            n,
            "--iters",
            "6",
            "-o",
            &d(&format!("s.{n}.iotrex")),
        ]);
    }
    let o = ok(&[
        "--json",
        "report",
        &d("s.4.iotrex"),
        &d("s.8.iotrex"),
        &d("s.16.iotrex"),
        "--extrap",
        &d("s.64.iotrex"),
        "-o",
        &d("r.html"),
    ]);
    // Not a terminal: no progress bar, only the JSON result.
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let html = page(Path::new(&d("r.html")));
    assert_eq!(
        v["plots"].as_u64().unwrap() as usize,
        html.matches("<svg").count()
    );
    assert_eq!(v["omitted"].as_array().unwrap().len(), 0);
    assert!(html.contains("Extrapolation to 64 ranks"));
    // Text mode names the file.
    let o = ok(&["report", &d("s.4.iotrex"), "-o", &d("one.html")]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with(&format!("wrote {}", d("one.html"))));
    page(Path::new(&d("one.html")));
}

#[test]
fn report_of_real_collective_ior_like_traces() {
    let dir = scratch();
    let mut traces = Vec::new();
    for np in [4u32, 8] {
        let data = dir
            .path()
            .join(format!("ior{np}.dat"))
            .display()
            .to_string();
        let trace = dir.path().join(format!("ior.{np}.iotrex"));
        let a = args(&[
            "-a", "mpiio", "-c", "-t", "65536", "-b", "131072", "-s", "2", "-o", &data,
        ]);
        mpirun(np, &app("ior_like"), &a, &trace, &Opts::default());
        traces.push(trace.display().to_string());
    }
    let out = dir.path().join("r.html").display().to_string();
    ok(&["report", &traces[0], &traces[1], "-o", &out]);
    let html = page(Path::new(&out));
    // Two traces, each with per-rank bytes and time, the MPI-IO stack and a timeline.
    assert!(
        html.matches("<svg").count() >= 8,
        "{}",
        html.matches("<svg").count()
    );
    assert!(html.contains("MPI_File_write_at_all"));
    // Some but not necessarily all ranks aggregate: the column reads "k of 8", 1 <= k <= 8.
    let agg = (1..=8).any(|k| html.contains(&format!("{k} of 8")));
    assert!(
        agg,
        "aggregator count of the 8-rank collective write missing"
    );
    assert!(html.contains("in nested POSIX calls"));
    assert!(html.contains("rank 7"), "the timeline shows the last rank");
}

#[test]
fn errors_name_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.iotrex");
    let o = iotrex(&["report", missing.to_str().unwrap(), "-o", "/dev/null"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("error: ") && err.contains("nope.iotrex"),
        "{err}"
    );

    let bad = dir.path().join("bad.iotrex");
    std::fs::write(&bad, b"not a trace at all, just text").unwrap();
    let o = iotrex(&["report", bad.to_str().unwrap(), "-o", "/dev/null"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.starts_with("error: ") && err.contains("bad.iotrex"),
        "{err}"
    );

    let t = dir.path().join("t.iotrex");
    ok(&[
        "synth",
        "--ranks",
        "4",
        "--iters",
        "2",
        "-o",
        t.to_str().unwrap(),
    ]);
    let o = iotrex(&[
        "report",
        t.to_str().unwrap(),
        t.to_str().unwrap(),
        "--extrap",
        t.to_str().unwrap(),
        "-o",
        "/dev/null",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("both have 4 ranks") && err.contains("t.iotrex"),
        "{err}"
    );

    let o = iotrex(&[
        "report",
        t.to_str().unwrap(),
        "-o",
        "/nonexistent-dir/r.html",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("error: cannot write the report (/nonexistent-dir/r.html)"),
        "{err}"
    );
}

#[test]
fn report_lists_the_models_of_a_real_extrapolation() {
    let dir = tempfile::tempdir().unwrap();
    let d = |s: &str| dir.path().join(s).display().to_string();
    for n in ["4", "8", "16"] {
        ok(&[
            "synth",
            "--ranks",
            n,
            "--iters",
            "5",
            "-o",
            &d(&format!("s.{n}.iotrex")),
        ]);
    }
    let ins = [d("s.4.iotrex"), d("s.8.iotrex"), d("s.16.iotrex")];
    ok(&[
        "extrap",
        &ins[0],
        &ins[1],
        &ins[2],
        "--ranks",
        "128",
        "-o",
        &d("x.iotrex"),
    ]);
    ok(&[
        "report",
        &ins[0],
        &ins[1],
        &ins[2],
        "--extrap",
        &d("x.iotrex"),
        "-o",
        &d("r.html"),
    ]);
    let html = page(Path::new(&d("r.html")));
    assert!(html.contains("Model source: extrap (built-in models)"));
    assert!(html.contains("<th>event</th><th>parameter</th><th>model</th>"));
    // The collective write's offset is affine in the rank, as extrap explains it.
    assert!(
        html.contains("1048576*rank"),
        "explained offset model missing"
    );
    assert!(!html.contains("No explanation"));
    assert!(html.contains("Extrapolation to 128 ranks"));
}

/// The example plugin, built by `cargo build --workspace` next to the test binaries.
fn even_odd_plugin() -> std::path::PathBuf {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_iotrex"));
    let p = exe.with_file_name("libiotrex_plugin_even_odd.so");
    assert!(
        p.exists(),
        "{} missing: build the workspace first (cargo build --release --workspace)",
        p.display()
    );
    p
}

#[test]
fn report_explains_models_from_a_plugin() {
    // An offset that only the even-odd plugin's model fits: `iotrex extrap --plugin` writes the
    // extrapolation, and the report must load the same plugin to explain it.
    let dir = tempfile::tempdir().unwrap();
    let d = |s: &str| dir.path().join(s).display().to_string();
    let mut ins = Vec::new();
    for n in [4, 8, 12, 16] {
        let p = d(&format!("eo.{n}.iotrex"));
        extrap::patterns::trace_file(extrap::patterns::Pattern::EvenOdd, n)
            .write(Path::new(&p))
            .unwrap();
        ins.push(p);
    }
    let lib = even_odd_plugin().display().to_string();
    let (x, r1, r2) = (d("x.iotrex"), d("r.html"), d("r2.html"));
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(ins.iter().map(String::as_str));
    a.extend(["--ranks", "64", "-o", &x, "--plugin", &lib]);
    ok(&a);
    let mut r: Vec<&str> = vec!["report"];
    r.extend(ins.iter().map(String::as_str));
    r.extend(["--extrap", &x, "-o", &r1, "--plugin", &lib]);
    ok(&r);
    let html = page(Path::new(&r1));
    assert!(
        html.contains("built-in models and plugins"),
        "model source names the plugin"
    );
    assert!(
        html.contains("even-odd("),
        "the plugin's model is explained"
    );
    // A bad plugin path is named, not swallowed.
    let mut bad: Vec<&str> = vec!["report"];
    bad.extend(ins.iter().map(String::as_str));
    bad.extend([
        "--extrap",
        &x,
        "-o",
        &r2,
        "--plugin",
        "/nonexistent/libnothing.so",
    ]);
    let o = iotrex(&bad);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stderr),
        std::fs::read_to_string(&r2).unwrap_or_default()
    );
    assert!(all.contains("/nonexistent/libnothing.so"), "{all}");
}

/// The MPI library's configuration the tracer recorded, on a real run under ROMIO with hints
/// the program passed: library and version, nodes and ranks per node, the io and fcoll
/// components, the control variables and the file's hints.
#[test]
fn report_shows_the_mpi_configuration_of_a_real_run() {
    let dir = scratch();
    let data = dir.path().join("str.dat").display().to_string();
    let trace = dir.path().join("ior.4.iotrex");
    let a = args(&[
        "-a",
        "mpiio",
        "-c",
        "-L",
        "strided",
        "-t",
        "4096",
        "-b",
        "8192",
        "-s",
        "2",
        "-o",
        &data,
        "-H",
        "cb_config_list=*:*",
        "-H",
        "cb_nodes=2",
    ]);
    let opts = Opts {
        io: Some("romio321"),
        ..Opts::default()
    };
    mpirun(4, &app("ior_like"), &a, &trace, &opts);
    let out = dir.path().join("r.html").display().to_string();
    ok(&["report", trace.to_str().unwrap(), "-o", &out]);
    let html = page(Path::new(&out));
    let tf = rsd::TraceFile::read(&trace).unwrap();
    let library = tf.header.mpi_config.unwrap().library;
    assert!(library.contains("Open MPI"), "{library}");
    for want in [
        "<h3>MPI library configuration</h3>".to_string(),
        format!(
            "<tr><th>library</th><td>{}</td></tr>",
            report::html::esc(&library)
        ),
        "<tr><th>nodes</th><td class=\"n\">1</td></tr>".into(),
        "<tr><th>ranks per node</th><td>4 on 1 node</td></tr>".into(),
        "<tr><th>io component</th><td><code>romio321</code></td></tr>".into(),
        "<tr><th>fcoll component</th><td>not set".into(),
        format!(
            "<tr><td><code>{data}</code></td><td><code>cb_config_list=*:*</code> \
             <code>cb_nodes=2</code></td></tr>"
        ),
    ] {
        assert!(html.contains(&want), "the report lacks {want}");
    }
}

/// The report of an extrapolation made with `--drop-inconsistent` re-extrapolates as it was
/// made (dropping the scales the output's provenance names), and gives the same page for an
/// output whose provenance is in its notes only, as one written before the header's field.
#[test]
fn report_of_dropped_scales_reads_the_provenance_or_the_older_notes() {
    use extrap::patterns::{Pattern, trace_file};
    let dir = tempfile::tempdir().unwrap();
    let d = |s: &str| dir.path().join(s).display().to_string();
    let groups = trace_file(Pattern::Groups, 4).header.command;
    for n in [4, 8, 16] {
        (trace_file(Pattern::Groups, n).write(Path::new(&d(&format!("g.{n}.iotrex"))))).unwrap();
    }
    // Another structure at 12 ranks, of the same program.
    let mut other = trace_file(Pattern::Neighbour, 12);
    other.header.command = groups;
    other.write(Path::new(&d("g.12.iotrex"))).unwrap();
    let ins = ["g.4.iotrex", "g.8.iotrex", "g.12.iotrex", "g.16.iotrex"].map(d);
    let x = d("x.iotrex");
    let mut args: Vec<&str> = vec!["extrap"];
    args.extend(ins.iter().map(String::as_str));
    args.extend(["--ranks", "32", "-o", &x, "--drop-inconsistent"]);
    ok(&args);
    let made = rsd::TraceFile::read(Path::new(&x)).unwrap();
    assert_eq!(made.header.provenance.as_ref().unwrap().dropped, [12]);
    let report_of = |out: &str| {
        let mut r: Vec<&str> = vec!["report"];
        r.extend(ins.iter().map(String::as_str));
        r.extend(["--extrap", &x, "-o", out]);
        ok(&r);
        page(Path::new(out))
    };
    let new = report_of(&d("new.html"));
    assert!(!new.contains("extrap refuses these inputs"), "{new}");
    let mut old = made.clone();
    old.header.provenance = None;
    old.write(Path::new(&x)).unwrap();
    let from_notes = report_of(&d("old.html"));
    assert_eq!(from_notes, new);
}

/// The text elements of a page's plots: their titles, axis names and legends.
fn svg_texts(html: &str) -> Vec<String> {
    html.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// A parameter's plot of a real run says which number of its model it draws: comm_mix's ring
/// peers are -1 and +1 except on the ranks that wrap around, whose peer grows as n - 1; that
/// curve was titled `MPI_Irecv: peer` as if it were every rank's peer (as `MPI_Gather:
/// recvcount` showed a rank group's size). Each plotted part is the one `extrap --explain`
/// names in its model.
#[test]
fn report_plots_of_parameters_name_the_number_they_draw() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let ins: Vec<std::path::PathBuf> = [4, 8, 16]
        .iter()
        .map(|&n| {
            let t = dir.path().join(format!("cm.{n}.iotrex"));
            trace_in(&t, &data, n, "comm_mix", &["{d}", "3", "100", "4096"], None);
            t
        })
        .collect();
    let x = dir.path().join("cm.64.iotrex");
    let o = extrap(&ins, 64, &x, &["--json", "--explain"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // (quantity, the part of its model the curve follows) for every parameter with a curve.
    let parts: Vec<(String, String)> = v["explain"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["curve"].is_null())
        .filter_map(|e| {
            let m = e["model"].as_str()?;
            let inner = &m[m.rfind('[')? + 1..m.rfind(']')?];
            let last = inner.rsplit("; ").next()?;
            let part = last[..last.rfind(" = ")?].trim();
            Some((e["quantity"].as_str()?.to_string(), part.to_string()))
        })
        .filter(|(_, part)| part.starts_with("group ") || part.starts_with("ranks "))
        .collect();
    assert!(
        !parts.is_empty(),
        "no parameter of comm_mix follows a group: {v}"
    );
    let html_path = dir.path().join("r.html");
    let mut a: Vec<&str> = vec!["report"];
    a.extend(ins.iter().map(|p| p.to_str().unwrap()));
    a.extend([
        "--extrap",
        x.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    ok(&a);
    let texts = svg_texts(&page(&html_path));
    let mut drawn = 0;
    for (q, part) in &parts {
        assert!(
            !texts.iter().any(|t| t.ends_with(&format!(": {q}"))),
            "a plot of {q} does not say it draws {part}: {texts:?}"
        );
        drawn += texts
            .iter()
            .filter(|t| t.ends_with(&format!(": {q}, {part}")))
            .count();
    }
    assert!(drawn > 0, "no plot of {parts:?} among {texts:?}");
}
