//! Runs shared by the tests of one binary. Several tests of a binary often trace the same
//! program with the same arguments at the same scales (one checks the trace's size, another
//! extrapolates from it, a third counts its calls); a traced `mpirun` is what costs, so each
//! such run is made once, by the first test that needs it, and the others read the same
//! trace. A test still checks what it checked before, on a real run of the same program.
//!
//! A series is a key (the program and its arguments, written out) with its own directory,
//! which lives as long as the test binary; its runs are made one at a time under the series'
//! lock, since the scales of one program share a data directory (paths must be the same
//! template at every scale) that each run empties first.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// One value per key for the life of the test binary, behind a lock of its own: the series'
/// runs so far, which the holder of the lock adds to.
pub struct Series<V: 'static> {
    all: Mutex<BTreeMap<String, &'static Mutex<V>>>,
}

impl<V: Default + Send + 'static> Series<V> {
    pub const fn new() -> Self {
        Series {
            all: Mutex::new(BTreeMap::new()),
        }
    }

    /// The value of `key`, locked: another test asking for the same key waits until this
    /// one has made what it needs. A test that panicked while holding it leaves what it
    /// finished (a run is recorded only once it passed its checks).
    pub fn lock(&self, key: &str) -> MutexGuard<'static, V> {
        let cell: &'static Mutex<V> = self
            .all
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key.to_string())
            .or_insert_with(|| Box::leak(Box::new(Mutex::new(V::default()))));
        cell.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Traces by scale, for [`Series`].
pub type Scales<T> = BTreeMap<u32, T>;

/// The root of the binary's shared directories, in /dev/shm (tmpfs, as [`super::scratch`]),
/// removed when the binary exits (a `TempDir` in a static would never be dropped).
static ROOT: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn remove_root() {
    if let Some(root) = ROOT.get() {
        let _ = std::fs::remove_dir_all(root);
    }
}

/// A directory for the series `key`, the same for every test of the binary that asks.
/// `key` may be any text: the directory's name is made of its safe characters and a hash.
pub fn dir(key: &str) -> PathBuf {
    let root = ROOT.get_or_init(|| {
        let d = super::build::scratch_with("iotrex-shared-").keep();
        // SAFETY: registers a plain function without arguments, run at exit.
        unsafe { libc::atexit(remove_root) };
        d
    });
    let safe: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let d = root.join(format!("{safe}-{hash:016x}"));
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("create {}: {e}", d.display()));
    d
}

/// The trace of `np` in `series` made by `make` (given the series' directory) unless an
/// earlier test made it.
pub fn trace<T: Clone + Send + 'static>(
    series: &'static Series<Scales<T>>,
    key: &str,
    np: u32,
    make: impl FnOnce(&Path) -> T,
) -> T {
    let mut done = series.lock(key);
    if let Some(t) = done.get(&np) {
        return t.clone();
    }
    let t = make(&dir(key));
    done.insert(np, t.clone());
    t
}
