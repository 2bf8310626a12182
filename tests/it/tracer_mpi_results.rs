//! MPI-IO byte counts come from what the call did, not only from what it was asked: a read
//! across the end of the file moves fewer bytes than count times the type size, and the trace
//! must say how many (from the call's status, also when the application passed
//! MPI_STATUS_IGNORE). Under Open MPI here; tests/it/tracer_mpich.rs runs the same app under MPICH
//! with MPI-4's large-count calls.

use crate::common;
use common::*;

#[test]
fn short_mpiio_reads_record_the_bytes_read() {
    let dir = scratch();
    for io in ["ompio", "romio321"] {
        // A fresh file per run: the previous run's file would be longer.
        let sub = dir.path().join(io);
        std::fs::create_dir_all(&sub).unwrap();
        let d = sub.to_string_lossy().to_string();
        let run = mpirun(
            4,
            &app("large_count"),
            &args(&[&d, "3", "8192"]),
            &dir.path().join(format!("lc.{io}.iotrex")),
            &Opts {
                io: Some(io),
                raw: true,
                ..Opts::default()
            },
        );
        // The app counts 3 full reads and two half-block reads per rank.
        let (want, _) = app_counts(&run.stdout());
        assert_eq!(
            want["MPI_File_read_at"],
            (20, 4 * (3 * 8192 + 2 * 4096)),
            "{io}: the app's own count"
        );
        assert_counts_match(&run, 4);
        assert_expand_matches_raw(&run, 1);
    }
}

#[test]
fn hindexed_and_friends_are_recorded_with_their_arrays() {
    // Parallel HDF5 builds its file types with MPI_Type_create_hindexed; a view over a type
    // of unknown origin cannot be rebuilt by a replay.
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    let run = mpirun(
        4,
        &app("hindexed_app"),
        &args(&[&d, "3", "1024"]),
        &dir.path().join("hx.iotrex"),
        &Opts {
            raw: true,
            ..Opts::default()
        },
    );
    assert_counts_match(&run, 4);
    assert_expand_matches_raw(&run, 2);
    let tf = run.read();
    let ev = tf.trace.expand(2);
    let find = |op: rsd::Op| {
        ev.iter()
            .find(|e| e.op == op)
            .unwrap_or_else(|| panic!("no {}", op.name()))
            .params
            .clone()
    };
    // [count, oldtype, newtype, blocklengths.., byte displacements..] for rank 2 of 4.
    let h = find(rsd::Op::TypeCreateHindexed);
    assert_eq!(h[0], 3);
    assert_eq!(&h[3..6], &[1024, 1024, 1024]);
    assert_eq!(&h[6..9], &[2 * 1024, 6 * 1024, 10 * 1024]);
    let hb = find(rsd::Op::TypeCreateHindexedBlock);
    assert_eq!(&hb[..2], &[3, 1024]);
    assert_eq!(&hb[4..7], &[2 * 1024, 6 * 1024, 10 * 1024]);
    let ib = find(rsd::Op::TypeCreateIndexedBlock);
    assert_eq!(&ib[4..7], &[2 * 1024, 6 * 1024, 10 * 1024]);
    let dup = find(rsd::Op::TypeDup);
    assert_eq!(dup[0], h[2], "MPI_Type_dup's old type is the hindexed type");
}
