//! A real MPI application from a Debian package: LAMMPS (`lmp`, package `lammps`), whose
//! restart writer has rank 0 post `MPI_Irecv`s for data the others send with `MPI_Rsend`, and
//! which also uses `MPI_Cart_create`, `MPI_Scan` and `MPI_Comm_free`. Its trace replays with
//! `--comm real` to completion in both runtimes, with the trace's op counts and bytes.
//! Skipped (saying so) where `lmp` is not installed (`scripts/install-deps.sh` installs it).

use crate::common;

use common::{have_mpirun, ops_of, trace_app, tracer_lib};
use std::path::Path;
use std::process::Command;

fn have_lmp() -> bool {
    Command::new("lmp").arg("-h").output().is_ok()
}

#[test]
fn lammps_replays_with_real_communication_in_both_runtimes() {
    let (Some(tracer), true, true) = (tracer_lib(), have_mpirun(), have_lmp()) else {
        eprintln!("skipped: needs the tracer library, mpirun and lmp (apt-get install lammps)");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/apps/lammps_melt.in");
    let trace = t.path().join("melt.4.iotrex");
    let d = t.path().to_str().unwrap();
    trace_app(
        4,
        &tracer,
        Path::new("lmp"),
        &[
            "-in",
            input.to_str().unwrap(),
            "-var",
            "d",
            d,
            "-log",
            "none",
            "-screen",
            "none",
        ],
        &trace,
    );
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
            .args(["--comm", "real", "--prep", "--root"])
            .arg(&root)
            .arg("--json")
            .arg(&json)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .output()
            .unwrap();
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "mpi={mpi}: {out}\n{err}");
        assert!(
            out.contains("op counts and bytes equal the trace's"),
            "mpi={mpi}: {out}"
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let ops = ops_of(&j);
        for op in [
            "MPI_Rsend",
            "MPI_Irecv",
            "MPI_Cart_create",
            "MPI_Scan",
            "MPI_Comm_free",
        ] {
            assert!(
                ops.iter().any(|(name, n, _)| name == op && *n > 0),
                "mpi={mpi}: no {op} replayed: {ops:?}"
            );
        }
    }
}
