//! Normalising paths the MPI library picks for itself, so that two runs of the same program
//! give identical traces.
//!
//! OMPIO's shared-file-pointer files live in Open MPI's per-job session directory, whose name
//! carries the host, the uid, the job id and the pid (`/tmp/ompi.host.0/pid.1234/...`); the
//! same goes for ROMIO's and PMIx's temporary files. Everything up to and including the
//! session directory becomes `<session>`, and digit runs after it become `N` (OMPIO names its
//! shared-memory file pointer `shared_cid-<cid>-<job>.sm`, and the job id changes every run).
//! The application's own paths are kept as given.

fn digits_to_n(rest: &str) -> String {
    let mut out = String::with_capacity(rest.len());
    let mut in_digits = false;
    for c in rest.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// Returns the normalised form of `path`, or `None` when it is kept as is.
pub fn normalize(path: &str, session_dirs: &[String]) -> Option<String> {
    for d in session_dirs {
        if !d.is_empty()
            && let Some(rest) = path.strip_prefix(d.as_str())
        {
            return Some(format!("<session>{}", digits_to_n(rest)));
        }
    }
    // Open MPI's default layout when the environment does not name the directory:
    // <tmp>/ompi.<host>.<uid>/pid.<pid>/<rest>, or jf.<jobfam>/<rest> in older releases.
    let i = path.find("/ompi.")?;
    let after = &path[i + 1..];
    let mut parts = after.splitn(3, '/');
    let _top = parts.next()?;
    let second = parts.next()?;
    if second.starts_with("pid.") || second.starts_with("jf.") {
        let rest = parts.next().unwrap_or("");
        Some(format!("<session>/{}", digits_to_n(rest)))
    } else {
        // Not a session directory, just a path that happens to contain "/ompi.".
        None
    }
}

/// Session directories named by the environment of an Open MPI or PMIx launch.
pub fn session_dirs_from_env() -> Vec<String> {
    let mut v = Vec::new();
    for k in [
        "OMPI_MCA_orte_top_session_dir",
        "OMPI_MCA_orte_jobfam_session_dir",
        "PMIX_SERVER_TMPDIR",
    ] {
        if let Ok(d) = std::env::var(k) {
            // Only real session directories: a bare /tmp would swallow the application's files.
            if d.contains("/ompi.") && !v.contains(&d) {
                v.push(d);
            }
        }
    }
    // Longest first, so the most specific prefix wins.
    v.sort_by_key(|d| std::cmp::Reverse(d.len()));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_paths_lose_their_run_specific_part() {
        assert_eq!(
            normalize("/tmp/ompi.host7.0/pid.4242/0/sharedfp.x", &[]).as_deref(),
            Some("<session>/N/sharedfp.x")
        );
        assert_eq!(
            normalize("/tmp/ompi.host7.0/jf.13/1/a", &[]).as_deref(),
            Some("<session>/N/a")
        );
        assert_eq!(
            normalize("/tmp/ompi.vm.0/pid.9/1/shared_cid-0-25198.sm", &[]).as_deref(),
            Some("<session>/N/shared_cid-N-N.sm")
        );
        let dirs = vec!["/var/tmp/sess".to_string()];
        assert_eq!(
            normalize("/var/tmp/sess/f.lock", &dirs).as_deref(),
            Some("<session>/f.lock")
        );
        assert_eq!(normalize("/dev/shm/x/file_3", &dirs), None);
        assert_eq!(normalize("/home/u/ompi.build/out_1", &dirs), None);
    }
}
