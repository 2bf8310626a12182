//! The trace says what it could not see: the MPI functions the program imports that the tracer
//! does not record are listed in the header (read from the loaded objects' dynamic symbol
//! tables at MPI_Init, against the tracer's own exported hooks) and shown by `iotrex show`.

use crate::common;
use common::*;

#[test]
fn unrecorded_mpi_functions_are_listed_in_the_header_and_shown() {
    let dir = scratch();
    let trace = dir.path().join("u.iotrex");
    let run = mpirun(2, &app("unrecorded"), &[], &trace, &Opts::default());
    let tf = run.read();
    let u = &tf.header.unrecorded_mpi;
    assert!(u.iter().any(|f| f == "MPI_Get_version"), "{u:?}");
    assert!(u.iter().any(|f| f == "MPI_Wtick"), "{u:?}");
    // Recorded calls are not listed.
    for f in [
        "MPI_Init",
        "MPI_Barrier",
        "MPI_Get_processor_name",
        "MPI_Finalize",
    ] {
        assert!(!u.iter().any(|x| x == f), "{f} in {u:?}");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .arg("show")
        .arg(&trace)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("MPI functions the program imports are not recorded:")
            && text.contains("MPI_Get_version"),
        "{text}"
    );
}
