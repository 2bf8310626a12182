//! Call sites survive a rebuild: a mini-app built twice with a
//! one-character change (a string literal one character longer, copied by code that lies
//! before `main`, so `main` and every call site after it move) has the same call sites in
//! both builds: `diff` finds the traces identical and names the two builds, `extrap` fits
//! traces of both builds together; `--ignore-call-sites` compares traces whose call sites
//! differ (here: one traced with `--stack-depth 0`).

use crate::common;
use common::status_text as text;

use std::path::{Path, PathBuf};
use std::process::Command;

/// `iotrex ARGS` as a user runs `iotrex trace` ([`common::iotrex_traced`]).
fn iotrex(args: &[&str]) -> std::process::Output {
    common::iotrex_traced(args, &[])
}

/// Builds `tests/apps/rebuild_app.c` with its tag replaced by `tag` into `dir/rebuild_app`.
fn build(dir: &Path, tag: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps/rebuild_app.c"),
    )
    .unwrap();
    assert!(src.contains("\"TAG\""));
    let c = dir.join("rebuild_app.c");
    std::fs::write(&c, src.replace("\"TAG\"", &format!("\"{tag}\""))).unwrap();
    let bin = dir.join("rebuild_app");
    let o = Command::new("mpicc")
        .args(["-O1", "-g", "-o"])
        .arg(&bin)
        .arg(&c)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    bin
}

/// The address of `main` in `bin`'s symbol table.
fn main_at(bin: &Path) -> u64 {
    let o = Command::new("nm").arg(bin).output().unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    let l = s
        .lines()
        .find(|l| l.ends_with(" T main"))
        .unwrap_or_else(|| panic!("no main in nm output:\n{s}"));
    u64::from_str_radix(l.split(' ').next().unwrap(), 16).unwrap()
}

fn trace(bin: &Path, np: u32, out: &Path, work: &Path, extra: &[&str]) {
    let np = np.to_string();
    let mut args = vec!["trace", "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend([
        "--",
        "mpirun",
        "-np",
        &np,
        "--mca",
        "btl",
        "self,vader",
        bin.to_str().unwrap(),
        work.to_str().unwrap(),
    ]);
    let o = iotrex(&args);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn call_sites_survive_a_one_character_rebuild() {
    let d = common::scratch();
    let work = d.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let a = build(&d.path().join("a"), "TAG");
    let b = build(&d.path().join("b"), "TAGS");
    // The change moves main (where the module-offset call sites of before changed).
    assert_ne!(main_at(&a), main_at(&b), "the rebuild must move main");
    let t = |name: &str| d.path().join(name);
    trace(&a, 4, &t("a4.iotrex"), &work, &[]);
    trace(&b, 4, &t("b4.iotrex"), &work, &[]);
    let s = |p: PathBuf| p.to_str().unwrap().to_string();
    let o = iotrex(&["diff", &s(t("a4.iotrex")), &s(t("b4.iotrex"))]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("different builds of rebuild_app"), "{out}");
    // extrap fits scales traced from both builds.
    trace(&a, 8, &t("a8.iotrex"), &work, &[]);
    trace(&b, 12, &t("b12.iotrex"), &work, &[]);
    trace(&b, 16, &t("b16.iotrex"), &work, &[]);
    let o = iotrex(&[
        "extrap",
        &s(t("a4.iotrex")),
        &s(t("a8.iotrex")),
        &s(t("b12.iotrex")),
        &s(t("b16.iotrex")),
        "--ranks",
        "32",
        "-o",
        &s(t("x32.iotrex")),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("different builds of rebuild_app"),
        "{}",
        text(&o)
    );
    // Call sites that do differ (none recorded at depth 0): different, unless ignored.
    trace(
        &a,
        4,
        &t("a4.nosite.iotrex"),
        &work,
        &["--stack-depth", "0"],
    );
    let o = iotrex(&["diff", &s(t("a4.iotrex")), &s(t("a4.nosite.iotrex"))]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let o = iotrex(&[
        "diff",
        "--ignore-call-sites",
        &s(t("a4.iotrex")),
        &s(t("a4.nosite.iotrex")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
