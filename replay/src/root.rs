//! Maps traced paths inside the replay root.
//!
//! Absolute and relative paths both land under the root (`/data/x` and `data/x` become
//! `ROOT/data/x`). `..` is resolved lexically and cannot climb above the root. Symlinks that
//! already exist inside the root are followed only when they resolve inside it; otherwise the
//! path is refused, so a replay never writes outside its root.

use crate::error::ReplayError;
use std::path::{Component, Path, PathBuf};

/// The replay root, canonicalised once.
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// Checks that `dir` exists, is a directory and is writable, and canonicalises it.
    pub fn new(dir: &Path) -> Result<Root, ReplayError> {
        let err = |why: String| ReplayError::Root {
            path: dir.to_path_buf(),
            why,
        };
        let meta = std::fs::metadata(dir).map_err(|e| err(format!("{e} (create it first)")))?;
        if !meta.is_dir() {
            return Err(err("not a directory".into()));
        }
        let canon = dir
            .canonicalize()
            .map_err(|e| err(format!("cannot resolve: {e}")))?;
        // Probe by creating a file: permission bits do not tell the whole story (root, ACLs,
        // read-only mounts).
        let probe = canon.join(format!(".iotrex-replay-probe-{}", std::process::id()));
        std::fs::write(&probe, b"")
            .map_err(|e| err(format!("not writable: {e}")))
            .and_then(|()| std::fs::remove_file(&probe).map_err(|e| err(e.to_string())))?;
        Ok(Root { dir: canon })
    }

    /// The canonical root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The lexical mapping of a traced path under the root: leading `/` dropped, `.` removed,
    /// `..` popping a component but never above the root.
    pub fn lexical(&self, traced: &str) -> PathBuf {
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for c in Path::new(traced).components() {
            match c {
                Component::Normal(p) => parts.push(p),
                Component::ParentDir => {
                    parts.pop();
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        let mut p = self.dir.clone();
        p.extend(parts);
        p
    }

    /// Maps a traced path for use: lexical mapping, then every existing component is checked
    /// to resolve inside the root (symlinks included). With `create_parents`, missing parent
    /// directories are created (inside the root, checked after creation).
    pub fn map(&self, traced: &str, create_parents: bool) -> Result<PathBuf, ReplayError> {
        let p = self.lexical(traced);
        let rel: Vec<std::ffi::OsString> = p
            .strip_prefix(&self.dir)
            .unwrap_or(Path::new(""))
            .iter()
            .map(|c| c.to_os_string())
            .collect();
        // Walk down from the root, checking each existing component before going further and
        // creating missing parents one level at a time, so that nothing (not even a
        // directory) is created through a symlink that leads out.
        let mut cur = self.dir.clone();
        for (i, c) in rel.iter().enumerate() {
            cur.push(c);
            let last = i + 1 == rel.len();
            if std::fs::symlink_metadata(&cur).is_ok() {
                match cur.canonicalize() {
                    Ok(real) if real.starts_with(&self.dir) => {}
                    Ok(real) => return Err(self.escape(traced, real)),
                    // A dangling symlink: its target is unknown, maybe outside.
                    Err(_) => {
                        let target = std::fs::read_link(&cur).unwrap_or_else(|_| cur.clone());
                        return Err(self.escape(traced, target));
                    }
                }
            } else if last || !create_parents {
                break;
            } else {
                // Another rank may create it at the same time: an error here shows up when
                // the file itself is opened.
                let _ = std::fs::create_dir(&cur);
            }
        }
        Ok(p)
    }

    fn escape(&self, traced: &str, resolved: PathBuf) -> ReplayError {
        ReplayError::Escape {
            root: self.dir.clone(),
            traced: traced.to_string(),
            resolved,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_mapping_stays_inside() {
        let d = tempfile::tempdir().unwrap();
        let r = Root::new(d.path()).unwrap();
        let base = r.dir().to_path_buf();
        assert_eq!(r.lexical("/etc/passwd"), base.join("etc/passwd"));
        assert_eq!(r.lexical("out/f"), base.join("out/f"));
        assert_eq!(r.lexical("../../../etc/x"), base.join("etc/x"));
        assert_eq!(r.lexical("/a/../../b/./c"), base.join("b/c"));
        assert_eq!(r.lexical("a/b/../../.."), base);
    }

    #[test]
    fn symlink_out_of_root_is_refused_and_inside_is_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let r = Root::new(d.path()).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("evil")).unwrap();
        let e = r.map("evil/x", true).unwrap_err();
        assert!(matches!(e, ReplayError::Escape { .. }), "{e}");
        let e = r.map("/evil/deeper/x", true).unwrap_err();
        assert!(matches!(e, ReplayError::Escape { .. }), "{e}");
        assert!(!outside.path().join("deeper").exists());
        std::fs::create_dir(d.path().join("real")).unwrap();
        std::os::unix::fs::symlink(d.path().join("real"), d.path().join("good")).unwrap();
        assert!(r.map("good/x", true).is_ok());
        std::os::unix::fs::symlink("/nonexistent/target", d.path().join("dangling")).unwrap();
        assert!(r.map("dangling", true).is_err());
    }

    #[test]
    fn bad_roots() {
        let d = tempfile::tempdir().unwrap();
        let e = Root::new(&d.path().join("missing")).unwrap_err();
        assert!(e.to_string().starts_with("--root "), "{e}");
        let f = d.path().join("file");
        std::fs::write(&f, b"x").unwrap();
        assert!(
            Root::new(&f)
                .unwrap_err()
                .to_string()
                .contains("not a directory")
        );
    }
}
