//! Which files the tracer leaves out, and what the header says of them.
//!
//! A program's environment does I/O of its own: the dynamic loader and Python read their
//! modules under `/usr`, the MPI library and hwloc read `/proc` and `/sys`, the C library
//! reads `/etc`. In a Python program this was 80 MiB of reads against 2 MiB of HDF5 data, and
//! its calls vary with the installation, not with the program. Like Darshan, the tracer
//! records no call on a file under an excluded directory; unlike it, the header still counts
//! them, per directory ([`Excluded`]), so that what was left out is seen.
//!
//! The rules are directory prefixes, each excluded or included; the longest one that holds a
//! path decides ([`Rules::excluding`]). Only absolute paths are matched: a relative path names
//! the program's own files (the working directory is the program's, and resolving it at every
//! call would cost a system call). The defaults are [`DEFAULT_EXCLUDE`] and
//! [`DEFAULT_INCLUDE`]; `IOTREX_EXCLUDE` and `IOTREX_INCLUDE` (`iotrex trace --exclude` and
//! `--include`) add to them, and `IOTREX_EXCLUDE=none` drops the default exclusions.

use serde::{Deserialize, Serialize};

/// Directories whose files are the system's, not the program's: left out by default.
pub const DEFAULT_EXCLUDE: &[&str] = &[
    "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev", "/boot",
];

/// Directories under a default exclusion that hold programs' data: traced by default
/// (`/dev/shm` is a tmpfs that jobs write their files to).
pub const DEFAULT_INCLUDE: &[&str] = &["/dev/shm"];

/// Environment variables naming an interpreter's own installation, whose modules are left
/// out like `/usr`'s (a virtual environment's or a conda environment's `lib`).
pub const INTERPRETER_VARS: &[&str] = &["VIRTUAL_ENV", "CONDA_PREFIX"];

/// The word of `IOTREX_EXCLUDE` that drops the default exclusions.
pub const NONE: &str = "none";

/// At most this many rules: the tracer counts each in a fixed slot, without allocating in
/// a hook.
pub const MAX_RULES: usize = 64;

/// What was left out under one excluded directory, summed over the ranks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Excluded {
    /// The excluded directory, as the rule names it.
    pub prefix: String,
    /// Calls left out: on paths under it and on the descriptors opened there.
    pub calls: u64,
    /// Bytes those calls read or wrote.
    pub bytes: u64,
}

/// Adds `more` into `into`, directory by directory (the merge of the ranks' counts).
pub fn add(into: &mut Vec<Excluded>, more: &[Excluded]) {
    for m in more {
        match into.iter_mut().find(|e| e.prefix == m.prefix) {
            Some(e) => {
                e.calls += m.calls;
                e.bytes += m.bytes;
            }
            None => into.push(m.clone()),
        }
    }
    into.sort_by(|a, b| a.prefix.cmp(&b.prefix));
}

/// A bad rule in `IOTREX_EXCLUDE` or `IOTREX_INCLUDE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// A rule that is not an absolute directory.
    #[error(
        "{var}: `{rule}` is not an absolute directory (rules are prefixes such as /scratch/env)"
    )]
    NotAbsolute {
        /// The variable it came from.
        var: &'static str,
        /// The rule.
        rule: String,
    },
    /// More rules than the tracer has slots for.
    #[error("{var}: more than {MAX_RULES} rules in all")]
    TooMany {
        /// The variable it came from.
        var: &'static str,
    },
}

/// The variable of extra exclusions.
pub const EXCLUDE_VAR: &str = "IOTREX_EXCLUDE";
/// The variable of extra inclusions.
pub const INCLUDE_VAR: &str = "IOTREX_INCLUDE";

/// Directory prefixes, each excluded or included, longest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    rules: Vec<(String, bool)>,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules::parse("", "").unwrap_or(Rules { rules: Vec::new() })
    }
}

impl Rules {
    /// The defaults with `exclude` and `include` (comma- or colon-separated directories, as
    /// the variables hold them) added; `none` among the exclusions drops the defaults.
    pub fn parse(exclude: &str, include: &str) -> Result<Rules, RuleError> {
        let split = |s: &str| -> Vec<String> {
            s.split([',', ':'])
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(String::from)
                .collect()
        };
        let ex = split(exclude);
        let mut rules = Vec::new();
        if !ex.iter().any(|r| r == NONE) {
            rules.extend(DEFAULT_EXCLUDE.iter().map(|d| (d.to_string(), true)));
            rules.extend(DEFAULT_INCLUDE.iter().map(|d| (d.to_string(), false)));
        }
        for (list, var, excluded) in [
            (ex, EXCLUDE_VAR, true),
            (split(include), INCLUDE_VAR, false),
        ] {
            for r in list.into_iter().filter(|r| r != NONE) {
                let dir = normal(&r).ok_or(RuleError::NotAbsolute { var, rule: r })?;
                rules.retain(|(d, _)| *d != dir);
                rules.push((dir, excluded));
            }
        }
        if rules.len() > MAX_RULES {
            return Err(RuleError::TooMany { var: EXCLUDE_VAR });
        }
        rules.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        Ok(Rules { rules })
    }

    /// The rules of this environment: [`Rules::parse`] of the variables, plus each set
    /// interpreter installation's `lib` ([`INTERPRETER_VARS`]).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Rules, RuleError> {
        let mut exclude = var(EXCLUDE_VAR).unwrap_or_default();
        for v in INTERPRETER_VARS {
            if let Some(root) = var(v).filter(|r| r.starts_with('/')) {
                exclude.push(',');
                exclude.push_str(&format!("{}/lib", root.trim_end_matches('/')));
            }
        }
        Rules::parse(&exclude, &var(INCLUDE_VAR).unwrap_or_default())
    }

    /// The slot of the excluded directory that decides for `path`, or `None` when the path is
    /// traced (relative, under no rule, or under an inclusion longer than any exclusion).
    pub fn excluding(&self, path: &str) -> Option<usize> {
        if !path.starts_with('/') {
            return None;
        }
        let (i, (_, excluded)) = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, (d, _))| holds(d, path))?;
        excluded.then_some(i)
    }

    /// The directory of slot `i`.
    pub fn dir(&self, i: usize) -> &str {
        self.rules.get(i).map_or("", |(d, _)| d.as_str())
    }

    /// The excluded directories, as `iotrex trace --help` lists them.
    pub fn excluded_dirs(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().filter(|r| r.1).map(|r| r.0.as_str())
    }
}

/// `dir` without trailing slashes, when absolute (`/` itself stays `/`).
fn normal(dir: &str) -> Option<String> {
    if !dir.starts_with('/') {
        return None;
    }
    let t = dir.trim_end_matches('/');
    Some(if t.is_empty() { "/".into() } else { t.into() })
}

/// Whether directory `dir` is `path` or holds it.
fn holds(dir: &str, path: &str) -> bool {
    dir == "/"
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_rule_decides() {
        let r = Rules::default();
        assert_eq!(
            r.dir(r.excluding("/usr/lib/python3/os.py").unwrap()),
            "/usr"
        );
        assert_eq!(r.dir(r.excluding("/dev/null").unwrap()), "/dev");
        assert_eq!(r.excluding("/dev/shm/job/f"), None);
        assert_eq!(r.excluding("/dev/shm"), None);
        assert_eq!(
            r.excluding("/usrdata/f"),
            None,
            "a prefix of a name is not a directory"
        );
        assert_eq!(r.excluding("/tmp/f"), None);
        assert_eq!(
            r.excluding("usr/f"),
            None,
            "relative paths are the program's"
        );
        assert_eq!(r.excluding("/usr"), r.excluding("/usr/"));
    }

    #[test]
    fn variables_add_rules_and_none_drops_the_defaults() {
        let r = Rules::parse("/scratch/env/,/opt/x", "/usr/share/data").unwrap();
        assert!(r.excluding("/scratch/env/a").is_some());
        assert!(r.excluding("/opt/x/y").is_some());
        assert_eq!(r.excluding("/usr/share/data/f"), None);
        assert!(r.excluding("/usr/share/other").is_some());
        let none = Rules::parse("none:/scratch/env", "").unwrap();
        assert_eq!(none.excluding("/usr/lib/x"), None);
        assert!(none.excluding("/scratch/env/x").is_some());
        let incl = Rules::parse("", "/etc").unwrap();
        assert_eq!(
            incl.excluding("/etc/hosts"),
            None,
            "an inclusion of a default wins"
        );
    }

    #[test]
    fn bad_rules_are_named() {
        let e = Rules::parse("scratch", "").unwrap_err();
        assert_eq!(
            e.to_string(),
            "IOTREX_EXCLUDE: `scratch` is not an absolute directory (rules are prefixes such as /scratch/env)"
        );
        let many: Vec<String> = (0..MAX_RULES).map(|i| format!("/d{i}")).collect();
        assert!(matches!(
            Rules::parse(&many.join(","), ""),
            Err(RuleError::TooMany { .. })
        ));
    }

    #[test]
    fn interpreter_installations_are_excluded() {
        let env = |k: &str| (k == "CONDA_PREFIX").then(|| "/opt/conda/".to_string());
        let r = Rules::from_env(env).unwrap();
        assert_eq!(
            r.dir(r.excluding("/opt/conda/lib/python3.11/os.py").unwrap()),
            "/opt/conda/lib"
        );
        assert_eq!(r.excluding("/opt/conda/data.h5"), None);
    }

    #[test]
    fn counts_add_by_directory() {
        let mut a = vec![Excluded {
            prefix: "/usr".into(),
            calls: 2,
            bytes: 10,
        }];
        add(
            &mut a,
            &[
                Excluded {
                    prefix: "/proc".into(),
                    calls: 1,
                    bytes: 0,
                },
                Excluded {
                    prefix: "/usr".into(),
                    calls: 3,
                    bytes: 5,
                },
            ],
        );
        assert_eq!(a.len(), 2);
        assert_eq!(
            (a[0].prefix.as_str(), a[0].calls, a[0].bytes),
            ("/proc", 1, 0)
        );
        assert_eq!(
            (a[1].prefix.as_str(), a[1].calls, a[1].bytes),
            ("/usr", 5, 15)
        );
    }
}
