//! The storage rig (`scripts/storage.sh`) for tests: [`Storage::up`] mounts a file system of a
//! profile on a loop device of the test's own and takes it down again when dropped;
//! [`Storage::stats`] says what the device served, so a test can assert where its reads came
//! from.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// `scripts/storage.sh`.
pub fn script() -> PathBuf {
    super::build::workspace().join("scripts/storage.sh")
}

/// Runs `scripts/storage.sh args`, returning its output whatever its status.
pub fn run_script(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .expect("run bash scripts/storage.sh")
}

/// What a rig's device served since it was set up (mount included), from
/// `/sys/block/loopN/stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DevStats {
    pub read_bytes: u64,
    pub read_ios: u64,
    pub write_bytes: u64,
    pub write_ios: u64,
}

impl std::ops::Sub for DevStats {
    type Output = DevStats;
    fn sub(self, o: DevStats) -> DevStats {
        DevStats {
            read_bytes: self.read_bytes - o.read_bytes,
            read_ios: self.read_ios - o.read_ios,
            write_bytes: self.write_bytes - o.write_bytes,
            write_ios: self.write_ios - o.write_ios,
        }
    }
}

/// A rig that is up; down on drop.
pub struct Storage {
    /// The rig's name (its directory under the script's base).
    pub name: String,
    /// Where it is mounted.
    pub mnt: PathBuf,
}

impl Storage {
    /// A rig of `profile` (`tmpfs`, `ext4`, `throttled[:BPS[:IOPS]]`, `sync`) under a name of
    /// this process's own. Panics with the script's message when it cannot be set up.
    pub fn up(profile: &str) -> Storage {
        Storage::try_up(profile).unwrap_or_else(|e| panic!("{e}"))
    }

    /// As [`Storage::up`], the script's failure as an error.
    pub fn try_up(profile: &str) -> Result<Storage, String> {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let out = run_script(&["up", &name, profile]);
        if !out.status.success() {
            // A half-made rig is taken down too.
            let _ = run_script(&["down", &name]);
            return Err(format!(
                "scripts/storage.sh up {name} {profile} failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let mnt = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(Storage {
            name,
            mnt: mnt.into(),
        })
    }

    /// `storage.sh stats NAME`, parsed.
    pub fn stats(&self) -> DevStats {
        let out = run_script(&["stats", &self.name]);
        assert!(
            out.status.success(),
            "storage.sh stats {} failed:\n{}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let get = |k: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix(' '))
                .unwrap_or_else(|| panic!("no {k} in storage.sh stats:\n{text}"))
                .parse()
                .unwrap_or_else(|e| panic!("{k} in storage.sh stats: {e}"))
        };
        DevStats {
            read_bytes: get("read_bytes"),
            read_ios: get("read_ios"),
            write_bytes: get("write_bytes"),
            write_ios: get("write_ios"),
        }
    }

    /// Writes back the rig's dirty data (`syncfs`), then drops the page cache, dentries and
    /// inodes (`echo 3 > /proc/sys/vm/drop_caches`, every file system's clean pages), so that
    /// the next read of one of the rig's files comes from its device.
    pub fn drop_caches(&self) {
        let dir = std::fs::File::open(&self.mnt)
            .unwrap_or_else(|e| panic!("open {}: {e}", self.mnt.display()));
        // SAFETY: syncfs takes a descriptor, which `dir` keeps open for the call.
        let rc = unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&dir)) };
        assert_eq!(rc, 0, "syncfs {}", self.mnt.display());
        std::fs::write("/proc/sys/vm/drop_caches", "3\n")
            .unwrap_or_else(|e| panic!("echo 3 > /proc/sys/vm/drop_caches (needs root): {e}"));
    }

    /// The loop device (`/dev/loopN`), `None` for tmpfs.
    pub fn device(&self) -> Option<PathBuf> {
        let out = run_script(&["stats", &self.name]);
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines()
            .find_map(|l| l.strip_prefix("device "))
            .map(PathBuf::from)
    }

    /// The device's `major:minor`, as the blkio cgroup's rules name it.
    pub fn major_minor(&self) -> Option<String> {
        let dev = self.device()?;
        let sys = PathBuf::from("/sys/block")
            .join(dev.file_name()?)
            .join("dev");
        Some(std::fs::read_to_string(sys).ok()?.trim().to_string())
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        let out = run_script(&["down", &self.name]);
        if !out.status.success() {
            let msg = format!(
                "scripts/storage.sh down {} failed:\n{}",
                self.name,
                String::from_utf8_lossy(&out.stderr)
            );
            // A second panic while unwinding would abort and hide the first.
            if std::thread::panicking() {
                eprintln!("{msg}");
            } else {
                panic!("{msg}");
            }
        }
    }
}
