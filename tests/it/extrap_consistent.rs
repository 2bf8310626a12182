//! Inputs that disagree in structure (consistent scales), on real runs of
//! `tests/apps/decomp.c`: a 2-D torus at square rank counts, a 1-D ring otherwise. extrap must
//! say which scales agree with each other and where the others differ, write nothing, and
//! with `--drop-inconsistent` extrapolate from the largest agreeing group, listing the scales
//! used and dropped; the result matches a real run.

use crate::common;

use common::{Opts, app, mpirun, scratch};
use std::process::{Command, Output};

fn iotrex(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .expect("run iotrex")
}

#[test]
fn scales_that_take_another_path_are_named_and_can_be_dropped() {
    let d = scratch();
    let exe = app("decomp");
    let out = d.path().join("field.dat").display().to_string();
    let trace = |n: u32| {
        let t = d.path().join(format!("decomp.{n}.iotrex"));
        mpirun(n, &exe, std::slice::from_ref(&out), &t, &Opts::default());
        t.display().to_string()
    };
    let inputs: Vec<String> = [6, 8, 9, 12, 16].into_iter().map(trace).collect();
    let x = d.path().join("x24.iotrex").display().to_string();
    let mut args = vec!["extrap".to_string()];
    args.extend(inputs.iter().cloned());
    args.extend(["--ranks".into(), "24".into(), "-o".into(), x.clone()]);

    // Refused: the groups are named, nothing is written.
    let o = iotrex(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("6, 8 and 12 ranks agree with each other; 9 and 16 ranks agree with each other but differ from 6, 8 and 12 ranks at"),
        "{err}"
    );
    assert!(err.contains("MPI_Allreduce"), "{err}");
    assert!(err.contains("--drop-inconsistent"), "{err}");
    assert!(!std::path::Path::new(&x).exists());

    // Dropped: extrapolated from the ring scales, and equal to a real run at 24 ranks.
    args.push("--drop-inconsistent".into());
    args.insert(0, "--json".into());
    let o = iotrex(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["from"], serde_json::json!([6, 8, 12]));
    assert_eq!(j["dropped"], serde_json::json!([9, 16]));
    let shown = iotrex(&["show".into(), x.clone()]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("scales used: 6, 8 and 12; dropped (another structure): 9 and 16"),
        "{shown}"
    );
    let real = trace(24);
    let o = iotrex(&["diff".into(), x, real]);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );

    // No group of three scales: refused with advice, even with --drop-inconsistent.
    let mut args = vec!["extrap".to_string()];
    args.extend([&inputs[0], &inputs[1], &inputs[2], &inputs[4]].map(String::clone));
    args.extend(["--ranks", "24", "-o"].map(String::from));
    args.push(d.path().join("no.iotrex").display().to_string());
    args.push("--drop-inconsistent".into());
    let o = iotrex(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no group of at least 3 scales agrees"),
        "{err}"
    );
}
