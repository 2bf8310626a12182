//! MPI_Reduce_scatter (a block per rank, each rank recording its own) and
//! MPI_Reduce_scatter_block are recorded and replay with `--comm real` in both runtimes, with
//! the trace's counts.

use crate::common;

use common::{app_setup, ops_of, trace_app};
use std::process::Command;

#[test]
fn reduce_scatter_is_traced_and_replays_with_real_communication() {
    let t = tempfile::tempdir().unwrap();
    let Some((tracer, app)) = app_setup("reduce_scatter", t.path()) else {
        return;
    };
    let trace = t.path().join("rs.4.iotrex");
    trace_app(4, &tracer, &app, &["3"], &trace);
    let tf = rsd::TraceFile::read(&trace).unwrap();
    for r in 0..4u32 {
        let ev = tf.trace.expand(r);
        let rs: Vec<_> = ev
            .iter()
            .filter(|e| e.op == rsd::Op::ReduceScatter)
            .collect();
        assert_eq!(rs.len(), 3, "rank {r}");
        // The rank's own block: rank + 1 ints.
        assert_eq!(rs[0].p(rsd::Param::Count), i64::from(r) + 1, "rank {r}");
        assert_eq!(
            rs[0].p(rsd::Param::Bytes),
            4 * (i64::from(r) + 1),
            "rank {r}"
        );
        let blocks = ev
            .iter()
            .filter(|e| e.op == rsd::Op::ReduceScatterBlock)
            .count();
        assert_eq!(blocks, 3, "rank {r}");
    }
    for mpi in [false, true] {
        let root = t.path().join(format!("root{mpi}"));
        std::fs::create_dir_all(&root).unwrap();
        let json = t.path().join(format!("r{mpi}.json"));
        let bin = env!("CARGO_BIN_EXE_iotrex-replay");
        let mut c = Command::new("timeout");
        c.arg("120");
        if mpi {
            c.args(["mpirun", "-np", "4", bin]);
        } else {
            c.args([bin, "--threads"]);
        }
        let o = c
            .arg(&trace)
            .args(["--comm", "real", "--root"])
            .arg(&root)
            .arg("--json")
            .arg(&json)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "mpi={mpi}: {out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            out.contains("op counts and bytes equal the trace's"),
            "mpi={mpi}: {out}"
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        for op in ["MPI_Reduce_scatter", "MPI_Reduce_scatter_block"] {
            assert!(
                ops_of(&j).iter().any(|(name, n, _)| name == op && *n == 12),
                "mpi={mpi}: {op} x 12 not replayed: {:?}",
                ops_of(&j)
            );
        }
    }
}
