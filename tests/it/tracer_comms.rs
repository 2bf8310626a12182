//! Communicators that are not made by `MPI_Comm_split` (IOR makes its test communicator with
//! `MPI_Comm_create` from a group): the tracer records them as the split that builds the same
//! communicator, so a replay can rebuild it and an extrapolation can model it.

use crate::common;
use common::*;
use rsd::Op;

#[test]
fn comm_create_and_split_type_are_recorded_as_splits() {
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    let run = mpirun(
        6,
        &app("comm_create"),
        &args(&[&d, "3", "4096"]),
        &dir.path().join("cc.iotrex"),
        &Opts {
            raw: true,
            ..Opts::default()
        },
    );
    assert_counts_match(&run, 6);
    assert_expand_matches_raw(&run, 3);
    let tf = run.read();
    for r in 0..6u32 {
        let ev = tf.trace.expand(r);
        let find = |op: Op| {
            ev.iter()
                .find(|e| e.op == op)
                .unwrap_or_else(|| panic!("rank {r}: no {}", op.name()))
                .params
                .clone()
        };
        // [comm, color, key, newcomm]: the evens' communicator is led by world rank 0 and
        // keeps world's order, so the key is the world rank; the odd ranks are not members
        // (MPI_UNDEFINED, no communicator).
        let c = find(Op::CommCreate);
        if r % 2 == 0 {
            assert_eq!(&c[..3], &[0, 0, r as i64], "rank {r}: {c:?}");
            assert!(c[3] >= 2, "rank {r}: a new communicator id: {c:?}");
        } else {
            assert_eq!(&c[..4], &[0, -32766, r as i64, -1], "rank {r}: {c:?}");
        }
        // One node: every rank shares world rank 0's node communicator, ranked as in world.
        let s = find(Op::CommSplitType);
        assert_eq!(&s[..3], &[0, 0, r as i64], "rank {r}: {s:?}");
    }
}

#[test]
fn comm_create_extrapolates_exactly() {
    // One data directory for every scale: paths are part of the trace.
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    // No collective writes (ITERS = 0): OMPIO writes a 2-rank communicator's collective
    // buffer differently from a larger one's, which would make the evens' MPI-IO calls differ
    // in structure between scales; the communicators are what this test is about.
    let trace = |np: u32| {
        let t = dir.path().join(format!("cc.{np}.iotrex"));
        mpirun(
            np,
            &app("comm_create"),
            &args(&[&d, "0", "4096"]),
            &t,
            &Opts::default(),
        );
        t.to_string_lossy().to_string()
    };
    let ins: Vec<String> = [4, 8, 12, 16].into_iter().map(trace).collect();
    let real = trace(32);
    let x = dir
        .path()
        .join("cc.32.x.iotrex")
        .to_string_lossy()
        .to_string();
    let bin = env!("CARGO_BIN_EXE_iotrex");
    let o = std::process::Command::new(bin)
        .arg("extrap")
        .args(&ins)
        .args(["--ranks", "32", "-o", &x])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = std::process::Command::new(bin)
        .args(["diff", &x, &real])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("identical"),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
