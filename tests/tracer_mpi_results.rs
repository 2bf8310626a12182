//! MPI-IO byte counts come from what the call did, not only from what it was asked: a read
//! across the end of the file moves fewer bytes than count times the type size, and the trace
//! must say how many (from the call's status, also when the application passed
//! MPI_STATUS_IGNORE). Under Open MPI here; tests/tracer_mpich.rs runs the same app under MPICH
//! with MPI-4's large-count calls.

mod common;
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
