//! Real runs for the oracle's tests: the workspace's `tests/apps`, the release `iotrex` (whose
//! `trace` preloads the tracer next to it) and scratch directories, found as the workspace's
//! own tests find them (the `testkit` dev-dependency).

#![allow(dead_code)]

use testkit as build;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

pub use build::{target_dir, workspace};

/// mpirun runs one at a time: the machine's cores are shared.
pub static MPIRUN: Mutex<()> = Mutex::new(());

/// The release `iotrex` binary, with the tracer next to it (`cargo build --release
/// --workspace` builds both).
pub fn iotrex() -> PathBuf {
    let release = target_dir().join("release");
    let exe = release.join("iotrex");
    let lib = release.join("libiotrex_tracer.so");
    assert!(
        exe.exists() && lib.exists(),
        "{} and {} are needed: run `cargo build --release --workspace` first",
        exe.display(),
        lib.display()
    );
    exe
}

/// A scratch directory in /dev/shm.
pub fn scratch() -> tempfile::TempDir {
    build::scratch_with("iotrex-h5oracle-")
}

/// `iotrex trace --hdf5 -o TRACE -- mpirun -np NP PROGRAM ARGS`, timeout-wrapped, under Open
/// MPI's defaults. Panics when the run fails.
pub fn trace(np: u32, program: &Path, args: &[String], trace: &Path) {
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let out = Command::new("timeout")
        .args(["-k", "5", "300"])
        .arg(iotrex())
        .args(["trace", "--hdf5", "-o"])
        .arg(trace)
        .args(["--", "mpirun", "-np", &np.to_string()])
        .arg(program)
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("LD_PRELOAD", "")
        .stdin(Stdio::null())
        .output()
        .expect("run timeout/iotrex trace");
    assert!(
        out.status.success(),
        "iotrex trace -- mpirun -np {np} {} {args:?} failed ({}):\n{}\n{}",
        program.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
