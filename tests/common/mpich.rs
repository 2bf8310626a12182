//! The private MPICH the tests run under (unpacked by `scripts/install-mpich.sh`, which `make
//! test` runs, into `/opt/iotrex-mpich` or `IOTREX_MPICH_PREFIX`): where it is, and the
//! mini-apps built against it.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

static BUILD: Mutex<()> = Mutex::new(());

/// MPICH's prefix; panics with the command that installs it when it is missing.
pub fn prefix() -> PathBuf {
    let p = PathBuf::from(
        std::env::var_os("IOTREX_MPICH_PREFIX").unwrap_or_else(|| "/opt/iotrex-mpich".into()),
    );
    assert!(
        p.join("usr/bin/mpiexec.hydra").exists(),
        "MPICH not found under {}: run `bash scripts/install-mpich.sh` (make test does)",
        p.display()
    );
    p
}

/// MPICH's libraries.
pub fn libdir() -> PathBuf {
    prefix().join("usr/lib/x86_64-linux-gnu")
}

/// Hydra's `mpiexec`.
pub fn hydra() -> PathBuf {
    prefix().join("usr/bin/mpiexec.hydra")
}

/// The `LD_LIBRARY_PATH` hydra and its proxies need (its slurm plugin's library included).
pub fn ld_library_path() -> String {
    format!("{0}:{0}/slurm", libdir().display())
}

/// Builds `tests/apps/<name>.c` against MPICH into target/iotrex-apps-mpich.
pub fn app(name: &str) -> PathBuf {
    let _g = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let dir = super::target_dir().join("iotrex-apps-mpich");
    std::fs::create_dir_all(&dir).expect("create target/iotrex-apps-mpich");
    let bin = dir.join(name);
    let inc = prefix().join("usr/include/x86_64-linux-gnu/mpich");
    let out = Command::new("cc")
        .args(["-O1", "-g", "-o"])
        .arg(&bin)
        .arg(
            super::build::workspace()
                .join("tests/apps")
                .join(format!("{name}.c")),
        )
        .arg(format!("-I{}", inc.display()))
        .arg(format!("-L{}", libdir().display()))
        .arg(format!("-Wl,-rpath,{}", libdir().display()))
        .arg("-lmpich")
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "building {name} against MPICH failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}
