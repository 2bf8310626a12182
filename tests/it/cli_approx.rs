//! Parameters declared irrelevant through the CLI: `iotrex extrap --ignore OP.PARAM` on real runs of
//! tests/apps/timelog.c, whose log line prints a clock reading of varying width. Without
//! `--ignore`, fprintf's return value (the line's length) refuses the whole extrapolation and
//! the hint names the flag; with `--ignore fprintf.ret` it becomes a summary, is fitted by its
//! statistics and the rest of the trace (the checkpoint's pwrite offsets) stays exact, as a
//! real run at the target shows. A misspelt op or parameter is a bad argument naming it.

use crate::common;

use common::{Opts, app, args, iotrex, mpirun, scratch, text};
use rsd::trace::{Node, NodeKind};
use rsd::{Op, TraceFile, Val};
use std::path::{Path, PathBuf};

fn timelog(np: u32, dir: &Path) -> PathBuf {
    let trace = dir.join(format!("timelog.{np}.iotrex"));
    let d = dir.to_str().unwrap().to_string();
    mpirun(
        np,
        &app("timelog"),
        &args(&[&d, "10"]),
        &trace,
        &Opts::default(),
    );
    trace
}

/// Whether every parameter `k` of every `op` event is a summary (and there is one), and no
/// other parameter is.
fn only_summary(nodes: &[Node], op: Op, k: usize, seen: &mut bool) -> bool {
    nodes.iter().all(|n| match &n.kind {
        NodeKind::Event(e) => {
            let ok = e.params.iter().enumerate().all(|(j, p)| {
                let want = e.op == op && j == k;
                if want {
                    *seen = true;
                }
                want == p.groups.iter().all(|g| matches!(g.val, Val::Approx(_)))
            });
            ok && only_summary(&e.children, op, k, seen)
        }
        NodeKind::Loop(l) => only_summary(&l.body, op, k, seen),
    })
}

#[test]
fn ignore_turns_a_log_line_length_into_a_summary_and_the_rest_stays_exact() {
    let d = scratch();
    let ins: Vec<String> = [4u32, 8, 12, 16]
        .iter()
        .map(|&n| timelog(n, d.path()).to_str().unwrap().to_string())
        .collect();
    let real = timelog(32, d.path());
    let out = d.path().join("timelog.32.extrap.iotrex");
    let out_s = out.to_str().unwrap();
    let extrap = |extra: &[&str]| {
        let mut a: Vec<&str> = vec!["extrap"];
        a.extend(ins.iter().map(String::as_str));
        a.extend(["--ranks", "32", "-o", out_s]);
        a.extend(extra);
        iotrex(&a)
    };
    // Without --ignore: refused on fprintf's ret, the hint naming the flag; nothing written.
    let o = extrap(&[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("ret of fprintf"), "{t}");
    assert!(t.contains("--ignore fprintf.ret"), "{t}");
    assert!(!out.exists());
    // With it: written, the parameter approximate and explained, everything else exact.
    let o = extrap(&["--ignore", "fprintf.ret", "--explain"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let line = t
        .lines()
        .find(|l| l.starts_with("fprintf") && l.contains("ret (approximate)"))
        .unwrap_or_else(|| panic!("--explain does not name fprintf ret: {t}"));
    assert!(
        line.contains("mean ") && line.contains("held-out error"),
        "{line}"
    );
    let x = TraceFile::read(&out).unwrap();
    let ret = Op::Fprintf.params().iter().position(|p| p.name() == "ret");
    let mut seen = false;
    assert!(
        only_summary(&x.trace.nodes, Op::Fprintf, ret.unwrap(), &mut seen) && seen,
        "{}",
        rsd_view::show::render_trace_file(&x)
    );
    assert!(x.header.notes.iter().any(|n| n.starts_with("approximate:")));
    // Against the real run at 32 ranks: the exact parts (every pwrite offset, the ranks,
    // the loops) are identical; the log line's length is compared by its statistics (the
    // width of a clock reading is noise, hence the wide tolerance).
    let r = real.to_str().unwrap();
    let o = iotrex(&["--json", "diff", "--tolerance", "100%", out_s, r]);
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["identical"], true, "{v}");
    assert!(v["approx"]["exact_compared"].as_u64().unwrap() > 0, "{v}");
    let parts = v["approx"]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 1, "{v}");
    assert_eq!(parts[0]["param"], "ret");
    assert!(parts[0]["event"].as_str().unwrap().starts_with("fprintf"));
    assert_eq!(parts[0]["count"][0], parts[0]["count"][1], "calls per line");
    // Misspelt op or parameter: a bad argument (2) naming it, before any input is read.
    let o = extrap(&["--ignore", "fprntf.ret"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("fprntf.ret") && t.contains("`fprntf`"), "{t}");
    let o = extrap(&["--ignore", "fprintf.rett"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("`rett`") && t.contains("stream, ret"), "{t}");
    // --exact and --ignore contradict each other.
    let o = extrap(&["--ignore", "fprintf.ret", "--exact"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // --approx-unfit finds the quantity itself, says so, and gives the same trace as
    // --ignore fprintf.ret did (compared exactly, summaries included).
    let named = d.path().join("timelog.32.named.iotrex");
    std::fs::rename(&out, &named).unwrap();
    let o = extrap(&["--approx-unfit"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("--approx-unfit: fprintf.ret fits no exact model; summarised"),
        "{t}"
    );
    assert_eq!(
        t.matches("--approx-unfit:").count(),
        1,
        "only fprintf's ret needs it: {t}"
    );
    let o = iotrex(&["diff", "--tolerance", "0%", out_s, named.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    report_shows_the_models_of(&ins, out_s, d.path());
    let o = extrap(&["--approx-unfit", "--exact"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// The report of inputs that extrapolate with `--approx-unfit` only re-extrapolates them as
/// extrap did: it lists the models (the summarised log line among them), not a refusal.
fn report_shows_the_models_of(ins: &[String], extrapolated: &str, dir: &Path) {
    let page = dir.join("approx-unfit.html");
    let mut a: Vec<&str> = vec!["report"];
    a.extend(ins.iter().map(String::as_str));
    a.extend(["--extrap", extrapolated, "-o", page.to_str().unwrap()]);
    let o = iotrex(&a);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("extrap refuses these inputs"), "{html}");
    assert!(
        html.contains("<th>event</th><th>parameter</th><th>model</th>"),
        "no model table"
    );
    assert!(
        html.contains("ret (approximate)"),
        "the summarised line's model is missing"
    );
}
