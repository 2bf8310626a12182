//! The private MPICH the tests run under (unpacked by `scripts/install-mpich.sh`, which `make
//! test` runs, into `/opt/iotrex-mpich` or `IOTREX_MPICH_PREFIX`): where it is, and the
//! mini-apps built against it.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// The apps this process built, by name: each is built once, so that no test rewrites a
/// binary another test is running (exec then fails with "Permission denied").
static BUILD: Mutex<Vec<String>> = Mutex::new(Vec::new());

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

/// Builds `tests/apps/<name>.c` against MPICH into target/iotrex-apps-mpich, once per
/// process; under a temporary name renamed into place, so that another test binary running
/// the app meanwhile keeps its copy.
pub fn app(name: &str) -> PathBuf {
    let mut built = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let dir = super::target_dir().join("iotrex-apps-mpich");
    let bin = dir.join(name);
    if built.iter().any(|b| b == name) {
        return bin;
    }
    std::fs::create_dir_all(&dir).expect("create target/iotrex-apps-mpich");
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    let inc = prefix().join("usr/include/x86_64-linux-gnu/mpich");
    let out = Command::new("cc")
        .args(["-O1", "-g", "-o"])
        .arg(&tmp)
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
    std::fs::rename(&tmp, &bin).expect("rename the MPICH app into place");
    built.push(name.to_string());
    bin
}
