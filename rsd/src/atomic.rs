//! Writing an output file so that its name only ever holds a whole file: every file iotrex
//! writes (traces, CODES exports, Chrome traces, reports, JSON reports) goes to a temporary
//! name in the same directory, is flushed to disk, and is renamed into place. An interrupted
//! run (killed, out of space, a failed conversion) leaves the previous file or none under the
//! name, never a truncated one that a later run would read as whole.
//!
//! The temporary name is hidden and unique (`.NAME.PID.N.iotrex-tmp`): two writers of the same
//! output do not share it, and a run killed with SIGKILL (which no code of ours outlives)
//! leaves only such a name behind.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes the temporary files of one process.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// An output file being written under a temporary name; [`AtomicFile::commit`] renames it
/// into place. Dropped without a commit (an error, a panic), the temporary file is removed.
#[derive(Debug)]
pub struct AtomicFile {
    w: Option<BufWriter<File>>,
    tmp: PathBuf,
    path: PathBuf,
}

/// The temporary name for `path`, in its directory.
fn tmp_name(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let mut t = std::ffi::OsString::from(".");
    t.push(name);
    t.push(format!(
        ".{}.{}.iotrex-tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    Ok(path.with_file_name(t))
}

impl AtomicFile {
    /// Starts writing `path` (created at its temporary name, which must not exist).
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let tmp = tmp_name(path)?;
        let f = File::options().write(true).create_new(true).open(&tmp)?;
        Ok(AtomicFile {
            w: Some(BufWriter::with_capacity(1 << 16, f)),
            tmp,
            path: path.to_path_buf(),
        })
    }

    /// The name the file will have.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn w(&mut self) -> &mut BufWriter<File> {
        self.w.as_mut().expect("present until commit or drop")
    }

    /// Flushes, syncs (so the data is on disk before the name is: a crash of the machine
    /// leaves the old file or the new one, not an empty one) and renames into place.
    pub fn commit(mut self) -> io::Result<()> {
        let f = self
            .w
            .take()
            .expect("present until commit")
            .into_inner()
            .map_err(|e| e.into_error())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&self.tmp, &self.path)?;
        // Renamed: nothing left for Drop to remove.
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w().flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            drop(self.w.take());
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `path` through an [`AtomicFile`].
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes.as_ref())?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory of this test's own (rsd has no tempfile), removed at the end.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let d = std::env::temp_dir().join(format!("rsd-atomic-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Scratch(d)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn whole_or_previous() {
        let d = Scratch::new("whole");
        let p = d.path().join("out.bin");
        write(&p, b"first").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        // A writer that fails half-way (dropped without commit): the previous file stays,
        // and no temporary file is left.
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(&[7u8; 1 << 20]).unwrap();
            f.flush().unwrap();
            assert_eq!(
                names(d.path()).len(),
                2,
                "the temporary file exists while writing"
            );
        }
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        assert_eq!(names(d.path()), ["out.bin"]);
        write(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert_eq!(names(d.path()), ["out.bin"]);
    }

    #[test]
    fn missing_directory_names_the_problem() {
        let d = Scratch::new("missing");
        let e = write(&d.path().join("no/such/out"), b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(write(Path::new("/"), b"x").is_err());
    }
}
