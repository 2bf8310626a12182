//! The libraries a C mini-app links besides MPI, for both app builders (the workspace's
//! `tests/common` and collio's, which includes this file by path): an app that includes
//! `<hdf5.h>` links Open MPI's parallel HDF5 with the flags of `pkg-config hdf5-openmpi`
//! (Debian's `libhdf5-openmpi-dev`, installed by `scripts/install-deps.sh`). The other apps
//! get nothing and run no pkg-config.

use std::path::Path;
use std::process::Command;

/// The pkg-config package of parallel HDF5 built on Open MPI.
const HDF5: &str = "hdf5-openmpi";

/// Extra compiler and linker arguments for the app whose source is `src` (after the source
/// on mpicc's command line).
pub fn flags(src: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(src)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", src.display()));
    if !text.contains("#include <hdf5.h>") {
        return Vec::new();
    }
    let out = Command::new("pkg-config")
        .args(["--cflags", "--libs", HDF5])
        .output()
        .expect("run pkg-config (is pkg-config installed? scripts/install-deps.sh)");
    assert!(
        out.status.success(),
        "pkg-config {HDF5} failed for {} (scripts/install-deps.sh installs libhdf5-openmpi-dev):\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}
