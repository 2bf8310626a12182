//! What a new user trips on, one test per point: the README's links stay in
//! the repository, the top-level help says what iotrex does, `--raw` names its files as its
//! help says, `export --help` has examples, `report --extrap` checks that its trace can be the
//! extrapolation of the inputs, `codes-stats` recognises an iolang export by itself, an empty
//! file is called empty, a directory given as a trace gets a hint, and `extrap --ranks 1`
//! does not ask for more scales.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn iotrex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .expect("run iotrex")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn synth(dir: &Path, n: u32) -> PathBuf {
    let p = dir.join(format!("s.{n}.iotrex"));
    let o = iotrex(&[
        "synth",
        "--ranks",
        &n.to_string(),
        "--iters",
        "5",
        "-o",
        s(&p),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    p
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every relative link of every Markdown file of the repository names a file inside it
/// (the README pointed to `../shared/ARCHITECTURE.md`, which a clone does not have).
#[test]
fn markdown_links_stay_inside_the_repository() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if name != "target" && name != ".git" {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let root = root().canonicalize().unwrap();
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut checked = 0;
    for f in &files {
        let md = std::fs::read_to_string(f).unwrap();
        for (i, _) in md.match_indices("](") {
            let rest = &md[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let link = rest[..end].split('#').next().unwrap_or_default();
            if link.is_empty() || link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let target = f.parent().unwrap().join(link);
            let resolved = target
                .canonicalize()
                .unwrap_or_else(|e| panic!("{}: link {link} resolves nowhere: {e}", f.display()));
            assert!(
                resolved.starts_with(&root),
                "{}: link {link} leaves the repository",
                f.display()
            );
            checked += 1;
        }
    }
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("](docs/ARCHITECTURE.md)"),
        "README does not link the design"
    );
    assert!(!readme.contains("../shared"));
    assert!(checked >= 1);
}

/// The top-level help says that iotrex traces, extrapolates, diffs, replays and exports, not
/// that it only reads traces, and its examples start with tracing.
#[test]
fn top_level_help_says_what_iotrex_does() {
    let long = text(&iotrex(&["--help"]));
    let short = text(&iotrex(&["-h"]));
    let about = long.split("Usage:").next().unwrap();
    for word in ["traces", "extrapolates", "diff", "replay", "export"] {
        assert!(
            about.contains(word),
            "--help description lacks {word}:\n{about}"
        );
    }
    assert!(!about.contains("reads compressed traces"), "{about}");
    assert!(short.lines().next().unwrap().contains("trace"), "{short}");
    assert!(
        long.contains("iotrex trace -o app.8.iotrex -- mpirun"),
        "{long}"
    );
    assert!(long.contains("iotrex extrap "), "{long}");
}

/// `trace --help` says how the `--raw` logs are named, and a traced run writes them so.
#[test]
fn raw_logs_are_named_as_the_help_says() {
    let help = text(&iotrex(&["trace", "--help"]));
    assert!(
        help.contains("-o app.8.iotrex") && help.contains("app.8.rank0.jsonl"),
        "{help}"
    );
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("in.txt");
    std::fs::write(&src, vec![b'x'; 10_000]).unwrap();
    let out = d.path().join("c2.iotrex");
    let o = iotrex(&["trace", "--raw", "-o", s(&out), "--", "cat", s(&src)]);
    assert!(o.status.success(), "{}", text(&o));
    let raw = d.path().join("c2.rank0.jsonl");
    let log = std::fs::read_to_string(&raw).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; the directory holds {:?}",
            raw.display(),
            ls(d.path())
        )
    });
    assert!(
        log.lines()
            .any(|l| l.contains(r#""op":"Read""#) && l.contains("10000")),
        "{log}"
    );
    assert!(!d.path().join("c2.iotrex.rank0.jsonl").exists());
}

fn ls(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `export --help` shows how to export, to each format.
#[test]
fn export_help_has_examples() {
    let h = text(&iotrex(&["export", "--help"]));
    assert!(h.contains("Example"), "{h}");
    assert!(h.contains("iotrex export codes "), "{h}");
    assert!(h.contains("iotrex export chrome "), "{h}");
}

/// `report --extrap` takes only a trace of the inputs' program, and, when it was extrapolated,
/// one extrapolated from rank counts among the inputs'.
#[test]
fn report_extrap_checks_the_extrapolation() {
    let d = tempfile::tempdir().unwrap();
    let ins: Vec<PathBuf> = [4, 8, 12, 16].iter().map(|&n| synth(d.path(), n)).collect();
    let x = d.path().join("x64.iotrex");
    let o = iotrex(&[
        "extrap",
        s(&ins[0]),
        s(&ins[1]),
        s(&ins[2]),
        "--ranks",
        "64",
        "-o",
        s(&x),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = d.path().join("r.html");
    // The real thing: accepted.
    let o = iotrex(&[
        "report",
        s(&ins[0]),
        s(&ins[1]),
        s(&ins[2]),
        "--extrap",
        s(&x),
        "-o",
        s(&html),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // A trace of another program (`cat`'s).
    let src = d.path().join("in.txt");
    std::fs::write(&src, b"abc").unwrap();
    let other = d.path().join("cat.iotrex");
    let o = iotrex(&["trace", "-o", s(&other), "--", "cat", s(&src)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = iotrex(&[
        "report",
        s(&ins[0]),
        s(&ins[1]),
        s(&ins[2]),
        "--extrap",
        s(&other),
        "-o",
        s(&html),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains(s(&other)) && t.contains("are not of the same program"),
        "{t}"
    );
    assert!(t.contains("hint: "), "{t}");
    // An extrapolation from other scales than the inputs'.
    let o = iotrex(&[
        "report",
        s(&ins[1]),
        s(&ins[2]),
        s(&ins[3]),
        "--extrap",
        s(&x),
        "-o",
        s(&html),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("was extrapolated from 4, 8, 12 ranks, but the inputs given have 8, 12, 16"),
        "{t}"
    );
}

/// `codes-stats` reads an iolang export without `--format`, from its directory or its meta
/// file, and refuses a directory holding both formats.
#[test]
fn codes_stats_recognises_an_iolang_export() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), 4);
    let io = d.path().join("io");
    let o = iotrex(&["export", "codes", s(&t), "-o", s(&io), "--format", "iolang"]);
    assert!(o.status.success(), "{}", text(&o));
    let told = iotrex(&["--json", "codes-stats", "--format", "iolang", s(&io)]);
    assert!(told.status.success(), "{}", text(&told));
    let want: serde_json::Value = serde_json::from_slice(&told.stdout).unwrap();
    assert!(want["ranks"].as_u64().unwrap_or(0) == 4 || want.to_string().contains("4"));
    for p in [io.clone(), io.join("meta.txt")] {
        let o = iotrex(&["--json", "codes-stats", s(&p)]);
        assert!(o.status.success(), "{}: {}", p.display(), text(&o));
        let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(got, want, "{}", p.display());
    }
    // The recorder export still needs no --format.
    let rec = d.path().join("rec");
    let o = iotrex(&["export", "codes", s(&t), "-o", s(&rec)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = iotrex(&["--json", "codes-stats", s(&rec)]);
    assert!(o.status.success(), "{}", text(&o));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got["NUM_WRITES"], want["NUM_WRITES"], "{got} vs {want}");
    // Both formats in one directory: which one is meant is asked, not guessed.
    let o = iotrex(&["export", "codes", s(&t), "-o", s(&io), "--force"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = iotrex(&["codes-stats", s(&io)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("--format"), "{t}");
}

/// An empty file is called empty, not "bad magic bytes []", and the hint fits.
#[test]
fn an_empty_file_is_called_empty() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("app.8.iotrex");
    std::fs::write(&empty, b"").unwrap();
    for cmd in [vec!["show", s(&empty)], vec!["stats", s(&empty)]] {
        let o = iotrex(&cmd);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{t}");
        assert!(
            t.contains(s(&empty)) && t.contains("the file is empty"),
            "{t}"
        );
        assert!(!t.contains("bytes []"), "{t}");
        assert!(t.contains("hint: ") && t.contains("empty file"), "{t}");
    }
}

/// A directory given as a trace gets a hint naming the traces in it.
#[test]
fn a_directory_given_as_a_trace_gets_a_hint() {
    let d = tempfile::tempdir().unwrap();
    let o = iotrex(&["show", s(d.path())]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("hint: this is a directory"), "{t}");
    let inside = synth(d.path(), 4);
    let o = iotrex(&["stats", s(d.path())]);
    let t = text(&o);
    assert!(
        t.contains("hint: this is a directory") && t.contains(s(&inside)),
        "{t}"
    );
    let o = iotrex(&["--json", "show", s(d.path())]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["hint"].as_str().unwrap_or_default().contains(s(&inside)),
        "{v}"
    );
}

/// `extrap --ranks 1` below every input scale: the hint does not ask for one more scale.
/// The inputs' loop count (5, 6, 8, 11 iterations at 4-16 ranks) fits no model, so extrap
/// refuses whatever the target.
#[test]
fn extrap_below_the_inputs_says_so() {
    let d = tempfile::tempdir().unwrap();
    let ins: Vec<PathBuf> = [(4, 5), (8, 6), (12, 8), (16, 11)]
        .iter()
        .map(|&(n, iters)| {
            let p = d.path().join(format!("s.{n}.iotrex"));
            let o = iotrex(&[
                "synth",
                "--ranks",
                &n.to_string(),
                "--iters",
                &iters.to_string(),
                "-o",
                s(&p),
            ]);
            assert!(o.status.success(), "{}", text(&o));
            p
        })
        .collect();
    let out = d.path().join("x1.iotrex");
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(ins.iter().map(|p| s(p)));
    a.extend(["--ranks", "1", "-o", s(&out)]);
    let o = iotrex(&a);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(!t.contains("trace one more scale"), "{t}");
    assert!(t.contains("below every input scale"), "{t}");
    assert!(t.contains("mpirun -np 1"), "{t}");
    assert!(!out.exists());
}

/// `--version` and the report name the same trace format, the one this build writes (the
/// report said "format version 2" while `--version` said 2.7).
#[test]
fn version_and_report_name_the_format_alike() {
    let want = rsd::format::formats_text();
    let v = text(&iotrex(&["--version"]));
    assert!(v.contains(&want), "{v}");
    assert!(
        want.contains(&format!(
            "{}.{}",
            rsd::format::NEWEST_VERSION,
            rsd::format::FORMAT_MINOR
        )),
        "{want}"
    );
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), 4);
    let html = d.path().join("r.html");
    let o = iotrex(&["report", s(&t), "-o", s(&html)]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(&want), "the report does not say {want}");
    assert!(
        !page.contains("trace format version 2)"),
        "the old wording is back"
    );
}

/// The top-level help names every export format `export --help` lists, and `merge`.
#[test]
fn top_level_help_names_every_export_format() {
    let long = text(&iotrex(&["--help"]));
    let about = long.split("Usage:").next().unwrap();
    let export = text(&iotrex(&["export", "--help"]));
    let formats: Vec<&str> = export
        .split("Commands:")
        .nth(1)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .take_while(|w| *w != "Options:")
        .filter(|w| *w != "help")
        .collect();
    assert!(formats.len() >= 4, "{export}");
    for f in formats {
        let name = match f {
            "codes" => "CODES",
            "chrome" => "Chrome",
            "parquet" => "Parquet",
            "otf2" => "OTF2",
            other => panic!("a new export format {other}: name it in the top-level help"),
        };
        assert!(about.contains(name), "--help leaves out {name}:\n{about}");
    }
    assert!(about.contains("`merge`"), "{about}");
}

/// An output that cannot be written is named as the output, with a hint about outputs; a
/// directory given as `-o` does not get the hint about traces (`iotrex trace`) that an input
/// directory gets.
#[test]
fn an_unwritable_output_is_named_as_the_output() {
    let d = tempfile::tempdir().unwrap();
    let ins: Vec<PathBuf> = [4, 8, 16].iter().map(|&n| synth(d.path(), n)).collect();
    let extrap = |out: &str| {
        iotrex(&[
            "extrap",
            s(&ins[0]),
            s(&ins[1]),
            s(&ins[2]),
            "--ranks",
            "32",
            "-o",
            out,
        ])
    };
    let o = extrap("/proc/x.iotrex");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("cannot write the output /proc/x.iotrex (-o)"),
        "{t}"
    );
    assert!(!t.contains("check the path"), "{t}");
    assert!(t.contains("hint: /proc refuses new files"), "{t}");
    let o = extrap(&format!("{}/no/such/dir/x.iotrex", s(d.path())));
    let t = text(&o);
    assert!(t.contains("does not exist: create it"), "{t}");
    let o = extrap(s(d.path()));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("cannot write the output"), "{t}");
    assert!(t.contains("-o names a directory"), "{t}");
    assert!(!t.contains("iotrex trace"), "{t}");
}

/// The exports that write a directory (CODES, OTF2, Parquet) name it as the output when it
/// cannot be made: OTF2's said only the hidden name it writes into first (after the OTF2
/// library's own lines on stderr), CODES' gave the bare OS error, neither gave a hint.
#[test]
fn an_export_directory_that_cannot_be_made_is_named_as_the_output() {
    let d = tempfile::tempdir().unwrap();
    let t = synth(d.path(), 4);
    let missing = d.path().join("no/such");
    for format in ["codes", "otf2", "parquet"] {
        let o = iotrex(&["export", format, s(&t), "-o", "/proc/x"]);
        let t2 = text(&o);
        assert_eq!(o.status.code(), Some(1), "{format}: {t2}");
        assert!(t2.contains("/proc/x (-o): "), "{format}: {t2}");
        assert!(
            t2.contains("hint: /proc refuses new files"),
            "{format}: {t2}"
        );
        assert!(!t2.contains("iotrex-tmp"), "{format}: {t2}");
        assert!(!t2.contains("[OTF2]"), "{format}: {t2}");
    }
    // A file where a directory is needed: the hint says so, not that the file refuses files.
    let blocker = d.path().join("notes.txt");
    std::fs::write(&blocker, b"x").unwrap();
    let under = blocker.join("out");
    for format in ["codes", "otf2", "parquet"] {
        let o = iotrex(&["export", format, s(&t), "-o", s(&under)]);
        let t2 = text(&o);
        assert_eq!(o.status.code(), Some(1), "{format}: {t2}");
        assert!(
            t2.contains(&format!("{} (-o): ", under.display())),
            "{format}: {t2}"
        );
        assert!(
            t2.contains("is a file, not a directory: give -o a path under a directory"),
            "{format}: {t2}"
        );
    }
    // A missing parent: OTF2 makes one directory, so the hint says to create the parent
    // (CODES makes the parents itself).
    let out = missing.join("x");
    let o = iotrex(&["export", "otf2", s(&t), "-o", s(&out)]);
    let t2 = text(&o);
    assert!(
        t2.contains(&format!(
            "cannot write the OTF2 archive {} (-o)",
            out.display()
        )),
        "{t2}"
    );
    assert!(
        t2.contains(&format!(
            "the directory {} does not exist: create it",
            missing.display()
        )),
        "{t2}"
    );
    assert!(!missing.exists());
    let o = iotrex(&["export", "codes", s(&t), "-o", s(&out)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(out.join("log.0").is_file(), "{}", text(&o));
}

/// `replay --help` says what the report's `credited` column counts, and so do the docs.
#[test]
fn the_credited_column_is_explained() {
    let h = text(&iotrex(&["replay", "--help"]));
    assert!(
        h.contains("credited  of those calls, how many were counted without being issued"),
        "{h}"
    );
    let docs = std::fs::read_to_string(root().join("docs/crates.md")).unwrap();
    assert!(
        docs.contains("`credited`"),
        "docs/crates.md does not explain `credited`"
    );
}

/// `MPI_Finalize`'s duration in a trace is not the library's finalisation (the trace is
/// taken before `PMPI_Finalize`): the tracer's documentation says what it is instead.
#[test]
fn the_finalize_duration_is_explained() {
    let doc = std::fs::read_to_string(root().join("tracer/README.md")).unwrap();
    let para = doc
        .split("\n\n")
        .find(|p| p.contains("`MPI_Finalize`'s recorded duration"))
        .expect("tracer/README.md does not say what MPI_Finalize's duration is");
    for what in [
        "`PMPI_Finalize`",
        "the wait for the last rank",
        "time_finalize",
    ] {
        assert!(para.contains(what), "{what} not in:\n{para}");
    }
}

/// `--explain` leaves out the timing fits of what takes under 1 us at every scale (and
/// counts them); `--explain=all` prints every model, as `--json` lists them.
#[test]
fn explain_hides_timing_fits_of_sub_microsecond_calls() {
    let d = tempfile::tempdir().unwrap();
    let ins: Vec<PathBuf> = [4, 8, 16].iter().map(|&n| synth(d.path(), n)).collect();
    let out = d.path().join("x.iotrex");
    let run = |extra: &[&str]| {
        let mut a = vec![
            "extrap",
            s(&ins[0]),
            s(&ins[1]),
            s(&ins[2]),
            "--ranks",
            "32",
            "-o",
            s(&out),
        ];
        a.extend(extra);
        let o = iotrex(&a);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let v: serde_json::Value = serde_json::from_str(&run(&["--json", "--explain"])).unwrap();
    let rows = v["explain"].as_array().unwrap();
    let small: Vec<String> = rows
        .iter()
        .filter(|e| {
            matches!(e["quantity"].as_str(), Some("gap mean" | "duration mean"))
                && e["curve"]["points"]
                    .as_array()
                    .is_some_and(|p| p.iter().all(|xy| xy[1].as_f64().unwrap().abs() < 1000.0))
        })
        .map(|e| {
            format!(
                "{}  {}: {}",
                e["event"].as_str().unwrap(),
                e["quantity"].as_str().unwrap(),
                e["model"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        !small.is_empty(),
        "no sub-microsecond timing fit to hide: {v}"
    );
    let default = run(&["--explain"]);
    let all = run(&["--explain=all"]);
    for line in &small {
        assert!(
            all.contains(line.as_str()),
            "--explain=all lacks {line}:\n{all}"
        );
        assert!(!default.contains(line.as_str()), "--explain shows {line}");
    }
    assert!(
        default.contains(&format!(
            "({} timing fits of calls and gaps under 1000 ns",
            small.len()
        )) || (small.len() == 1 && default.contains("(1 timing fit of")),
        "{default}"
    );
    assert_eq!(
        all.lines().count(),
        default.lines().count() + small.len() - 1,
        "--explain=all adds the hidden lines and drops the count line"
    );
}
