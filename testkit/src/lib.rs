//! Building and finding what the end-to-end tests run, for the test harnesses of every package
//! (the workspace's `tests/it`, collio's and h5oracle's, each a dev-dependency on this crate):
//! the preload library, the C mini-apps of `tests/apps` (built with mpicc, linking parallel
//! HDF5 for the apps that include `<hdf5.h>`, parallel NetCDF-4 for those that include
//! `<netcdf.h>`), and scratch directories.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The pkg-config package of parallel HDF5 built on Open MPI (Debian's
/// `libhdf5-openmpi-dev`, installed by `scripts/install-deps.sh`).
const HDF5: &str = "hdf5-openmpi";

/// The pkg-config package of PnetCDF (Debian's `libpnetcdf-dev`, built on Open MPI, installed
/// by `scripts/install-deps.sh`).
const PNETCDF: &str = "pnetcdf";

/// The pkg-config package of parallel NetCDF-4 (Debian's `libnetcdf-mpi-dev`, on the
/// parallel HDF5 above). Its `Cflags` name `/usr/include`, where Debian's MPI build has no
/// headers: they are under the package's `prefix` variable, `<prefix>/include`.
const NETCDF: &str = "netcdf-mpi";

/// One mpicc at a time within a test binary.
static BUILD: Mutex<()> = Mutex::new(());

/// The workspace root: the first ancestor of this crate that holds `tests/apps`.
pub fn workspace() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    dir.ancestors()
        .find(|d| d.join("tests/apps").is_dir())
        .unwrap_or_else(|| panic!("no tests/apps above {}", dir.display()))
        .to_path_buf()
}

/// Cargo's target directory.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// The preload library: target/release first, then target/debug.
pub fn tracer_lib() -> PathBuf {
    let t = target_dir();
    for p in [
        t.join("release/libiotrex_tracer.so"),
        t.join("debug/libiotrex_tracer.so"),
    ] {
        if p.exists() {
            return p;
        }
    }
    panic!(
        "libiotrex_tracer.so not found under {}/{{release,debug}}: run `cargo build --release -p tracer` first",
        t.display()
    );
}

/// Builds `tests/apps/<name>.c` with mpicc into `target/iotrex-apps/<sub>` (rebuilt when the
/// source or a header of the apps is newer), linking what [`flags`] says.
pub fn app_in(sub: &str, name: &str) -> PathBuf {
    let _g = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let dir = target_dir().join("iotrex-apps").join(sub);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let apps = workspace().join("tests/apps");
    let src = apps.join(format!("{name}.c"));
    let bin = dir.join(name);
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    // The app's own source and every header of the apps (count.h, node_queries.h).
    let headers = std::fs::read_dir(&apps)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "h"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let fresh = match mtime(&bin) {
        Some(b) => std::iter::once(&src)
            .chain(&headers)
            .all(|p| mtime(p).is_some_and(|t| b > t)),
        None => false,
    };
    if !fresh {
        // A name of this process's own: another test binary may be building the same app
        // into the same directory.
        let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
        let out = Command::new("mpicc")
            .args(["-O1", "-g", "-o"])
            .arg(&tmp)
            .arg(&src)
            .args(flags(&src))
            .output()
            .expect("run mpicc (is Open MPI installed?)");
        assert!(
            out.status.success(),
            "mpicc {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::rename(&tmp, &bin).expect("rename built app");
    }
    bin
}

/// Builds `tests/apps/<name>.c` with mpicc into the shared object
/// `target/iotrex-apps/<name>.so` (rebuilt when the source is newer): a library a test
/// preloads, such as the fault injector `fault_shim`.
pub fn shared_lib(name: &str) -> PathBuf {
    let _g = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let dir = target_dir().join("iotrex-apps");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let src = workspace().join("tests/apps").join(format!("{name}.c"));
    let lib = dir.join(format!("{name}.so"));
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if matches!((mtime(&lib), mtime(&src)), (Some(l), Some(s)) if l > s) {
        return lib;
    }
    let tmp = dir.join(format!("{name}.{}.so.tmp", std::process::id()));
    let out = Command::new("mpicc")
        .args(["-O1", "-g", "-shared", "-fPIC", "-o"])
        .arg(&tmp)
        .arg(&src)
        .arg("-ldl")
        .output()
        .expect("run mpicc (is Open MPI installed?)");
    assert!(
        out.status.success(),
        "mpicc -shared {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, &lib).expect("rename built library");
    lib
}

/// A scratch directory in /dev/shm (tmpfs: fast, small runs only).
///
/// Its random suffix holds no digit: the tracer matches the numbers in paths against the
/// run's own ids (a rank's pid), and a suffix such as `b2284bsLK` made `2284` a run value on
/// the ranks whose pid it was, so that extrap refused the path. Only the suffix is checked: a
/// prefix's digits (`h5` of `iotrex-h5oracle-`) are the same in every run, and checking them
/// would never end.
pub fn scratch_with(prefix: &str) -> tempfile::TempDir {
    loop {
        let d = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in("/dev/shm")
            .expect("create a scratch dir in /dev/shm");
        let name = d
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let suffix = name.strip_prefix(prefix).unwrap_or(&name);
        if !suffix.bytes().any(|b| b.is_ascii_digit()) {
            return d;
        }
    }
}

/// Extra compiler and linker arguments for the app whose source is `src` (after the source
/// on mpicc's command line): an app that includes `<hdf5.h>` links Open MPI's parallel HDF5
/// with the flags of `pkg-config hdf5-openmpi`, one that includes `<pnetcdf.h>` PnetCDF with
/// those of `pkg-config pnetcdf`, one that includes `<netcdf.h>` parallel NetCDF-4 with those of
/// `pkg-config netcdf-mpi`. The other apps get nothing and run no pkg-config.
pub fn flags(src: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(src)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", src.display()));
    if text.contains("#include <netcdf.h>") {
        let prefix = pkg_config(src, NETCDF, &["--variable=prefix"]);
        let mut f = vec![format!("-I{}/include", prefix.join(""))];
        f.extend(pkg_config(src, NETCDF, &["--cflags", "--libs"]));
        return f;
    }
    if text.contains("#include <hdf5.h>") {
        return pkg_config(src, HDF5, &["--cflags", "--libs"]);
    }
    if text.contains("#include <pnetcdf.h>") {
        return pkg_config(src, PNETCDF, &["--cflags", "--libs"]);
    }
    Vec::new()
}

/// What `pkg-config ARGS PACKAGE` prints, split into words, for the app `src`.
fn pkg_config(src: &Path, package: &str, args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .args(args)
        .arg(package)
        .output()
        .expect("run pkg-config (is pkg-config installed? scripts/install-deps.sh)");
    assert!(
        out.status.success(),
        "pkg-config {package} failed for {} (scripts/install-deps.sh installs it):\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}
