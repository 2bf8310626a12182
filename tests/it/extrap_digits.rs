//! Log lines that print the rank count: `tests/apps/log_lines.c` appends
//! `"ckpt: <n> ranks\n"` with fprintf, so its return value is one byte longer per decimal
//! digit of n, and every rank prints `"rank <rank> of <n>: ..."`. Traced at 4, 8, 12 and 16
//! ranks under mpirun, extrapolated to 32 and 128 (one and two digits past the inputs' step)
//! and diffed against real runs; scales that leave the step to a single input are refused
//! with a hint that says the values grow with the decimal width of n.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

fn trace(dir: &Path, data: &Path, np: u32) -> PathBuf {
    let out = dir.join(format!("{np}.iotrex"));
    let run = mpirun(
        np,
        &app("log_lines"),
        &args(&[data.to_str().unwrap(), "3", "4096"]),
        &out,
        &Opts::default(),
    );
    let tf = run.read();
    assert!(!tf.header.incomplete, "{np}: {:?}", tf.header.notes);
    out
}

fn extrap(inputs: &[&Path], target: u32, out: &Path, extra: &[&str]) -> std::process::Output {
    let t = target.to_string();
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", &t, "-o", out.to_str().unwrap()]);
    a.extend(extra);
    iotrex(&a)
}

#[test]
fn log_lines_printing_n_extrapolate_across_a_digit_boundary() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let t: Vec<PathBuf> = [4, 8, 12, 16, 32, 128]
        .iter()
        .map(|&np| trace(dir.path(), &data, np))
        .collect();
    let inputs: Vec<&Path> = t[..4].iter().map(PathBuf::as_path).collect();
    for (target, real) in [(32u32, &t[4]), (128, &t[5])] {
        let out = dir.path().join(format!("{target}.extrap.iotrex"));
        let o = extrap(&inputs, target, &out, &["--explain"]);
        let msg = text(&o);
        assert!(o.status.success(), "extrap to {target} refused:\n{msg}");
        // rank 0's line: "ckpt: 4 ranks\n" is 14 bytes, "ckpt: 12 ranks\n" 15.
        assert!(
            msg.lines().any(|l| l.contains("fprintf")
                && l.contains("ret: ")
                && l.contains("digits(n) + 13")),
            "--explain does not show the digits model of rank 0's log line:\n{msg}"
        );
        // Every rank's line "rank <r> of <n>: 3 steps\n".
        assert!(
            msg.contains("digits(rank) + digits(n) + 19"),
            "--explain does not show the per-rank digits model:\n{msg}"
        );
        let o = iotrex(&["diff", out.to_str().unwrap(), real.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "extrapolated and real {target}-rank traces differ:\n{}",
            text(&o)
        );
        assert!(String::from_utf8_lossy(&o.stdout).starts_with("identical"));
    }
    // At 100 ranks the inputs cannot tell a printed n from a printed n - 1: refused, with
    // the scale that would tell them apart.
    let out = dir.path().join("100.iotrex");
    let o = extrap(&inputs, 100, &out, &[]);
    let msg = text(&o);
    assert_eq!(o.status.code(), Some(1), "{msg}");
    assert!(
        msg.contains("digits(n) + 13 gives 16, digits(n - 1) + 13 gives 15"),
        "{msg}"
    );
    assert!(msg.contains("add a trace at 10 ranks"), "{msg}");
    assert!(!out.exists());
    // `iotrex show` of the extrapolated 128-rank trace reads as the real one: rank 0's line is
    // 16 bytes ("ckpt: 128 ranks\n"), the per-rank lines 23, 24 and 25 bytes by rank width.
    let o = iotrex(&[
        "show",
        dir.path().join("128.extrap.iotrex").to_str().unwrap(),
    ]);
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        shown.lines().any(|l| l
            .trim_start()
            .starts_with("fprintf  stream = 0, ret = 16  |")),
        "{shown}"
    );
    assert!(
        shown.contains("ret = {0-9: 23; 10-99: 24; 100-127: 25}"),
        "{shown}"
    );

    // The step at 10 seen from one input only (8 below it; 12, 16 and 32 above): no model
    // may decide it on one scale, so extrap refuses, and says what the values look like.
    let few: Vec<&Path> = [&t[1], &t[2], &t[3], &t[4]]
        .iter()
        .map(|p| p.as_path())
        .collect();
    let out = dir.path().join("refused.iotrex");
    let o = extrap(&few, 64, &out, &[]);
    let msg = text(&o);
    assert_eq!(o.status.code(), Some(1), "{msg}");
    assert!(msg.contains("fprintf"), "{msg}");
    assert!(
        msg.contains("hint: ") && msg.contains("grows with the decimal width of n"),
        "{msg}"
    );
    assert!(
        !msg.contains("the clock") && !msg.contains("random numbers"),
        "the hint blames the clock or random numbers:\n{msg}"
    );
    assert!(!out.exists(), "a refusal writes nothing");
    // The same through --json: the hint is in the JSON error.
    let mut a: Vec<&str> = vec!["--json", "extrap"];
    a.extend(few.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", "64", "-o", out.to_str().unwrap()]);
    let o = iotrex(&a);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON error on stdout");
    assert!(
        v["hint"]
            .as_str()
            .is_some_and(|h| h.contains("decimal width of n")),
        "{v}"
    );
}

/// Traces of a program whose collective writes have nested `pwrite`s on one rank per 8 (as
/// OMPIO's aggregators), each writing 8 blocks of 4 KiB per member at an offset the program
/// does not determine alone, without the library's configuration in the header (as a trace
/// from before iotrex recorded it), so extrap fits the nested calls instead of deriving them.
fn collective_traces(dir: &Path) -> Vec<PathBuf> {
    use rsd::op::{Op, args};
    use rsd::{RawEvent, mpi};
    [4u32, 8, 12, 16]
        .iter()
        .map(|&n| {
            let ranks = (0..n)
                .map(|r| {
                    let mut c = rsd::Compressor::new(r);
                    let amode = mpi::amode::CREATE | mpi::amode::WRONLY;
                    let mut open =
                        RawEvent::new(Op::FileOpen, 1, args::file_open(mpi::COMM_WORLD, amode, 0));
                    open.path = Some("out/shared".into());
                    c.push(&open);
                    let (r, nn) = (i64::from(r), i64::from(n));
                    let mut w = RawEvent::new(
                        Op::FileWriteAtAll,
                        2,
                        args::file_write_at_all(0, r * 4096, 4096, mpi::BYTE, 4096),
                    );
                    if r % 8 == 0 {
                        // The aggregator's file domain: its members' blocks, at an offset that
                        // depends on the aggregator count ((n + 7) / 8) as well as on n.
                        let members = (nn - r).min(8);
                        let off = r * 4096 + (nn + 7) / 8 * 512;
                        w.children.push(RawEvent::new(
                            Op::Pwrite,
                            3,
                            args::pwrite(7, members * 4096, off, members * 4096),
                        ));
                    }
                    c.push(&w);
                    c.push(&RawEvent::new(Op::FileClose, 4, args::file_close(0)));
                    c.finish()
                })
                .collect();
            let mut header = rsd::Header::new(n);
            header.command = vec!["coll_app".into()];
            let tf = rsd::TraceFile {
                header,
                trace: rsd::merge_tree(ranks).unwrap(),
            };
            let p = dir.join(format!("coll.{n}.iotrex"));
            tf.write(&p).unwrap();
            p
        })
        .collect()
}

#[test]
fn nested_collective_values_hint_at_the_aggregator_count() {
    let dir = tempfile::tempdir().unwrap();
    let ins = collective_traces(dir.path());
    let out = dir.path().join("x.iotrex");
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(ins.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", "64", "-o", out.to_str().unwrap()]);
    let o = iotrex(&a);
    let msg = text(&o);
    assert_eq!(o.status.code(), Some(1), "{msg}");
    // The ranks making the collective call's nested calls are where the shapes part (the
    // nested calls merge as a list of their own, so the refusal names the nested pwrite).
    assert!(msg.contains("of pwrite"), "{msg}");
    assert!(
        msg.contains("hint: this value changes with the aggregator count")
            && msg.contains("1 at 4 ranks, 1 at 8, 2 at 12, 2 at 16"),
        "{msg}"
    );
    assert!(
        !msg.contains("the clock") && !msg.contains("decimal width"),
        "{msg}"
    );
    assert!(!out.exists());
}
