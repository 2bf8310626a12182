//! The directory the processes of one traced job share (`IOTREX_JOB`), named in one place for
//! the tracer, which marks it, and `iotrex trace`, which removes it after the command.

/// The variable holding the job id.
pub const JOB_VAR: &str = "IOTREX_JOB";

/// The job directory of `id` under `tmp` (`$TMPDIR`, else `/tmp`): `<tmp>/iotrex-job-<id>`,
/// with every character of the id that is not safe in a file name replaced by `_`.
pub fn job_dir(tmp: &str, id: &str) -> String {
    let id: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}/iotrex-job-{id}", tmp.trim_end_matches('/'))
}

/// The temporary directory job directories go in: `$TMPDIR` when absolute, else `/tmp`.
pub fn tmp_dir(tmpdir: Option<&str>) -> String {
    tmpdir
        .filter(|t| t.starts_with('/'))
        .unwrap_or("/tmp")
        .to_string()
}

/// Where the tracer of process `pid` writes a file meant for `path` when `path` refuses it (a
/// read-only or full directory): `<tmp>/iotrex-<pid>-<file name>`, `tmp` from [`tmp_dir`].
pub fn fallback_path(tmp: &str, pid: i64, path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    format!("{}/iotrex-{pid}-{name}", tmp.trim_end_matches('/'))
}

/// Whether the file name `found` (in the temporary directory) is a [`fallback_path`] of a
/// file named `name`.
pub fn is_fallback_of(found: &str, name: &str) -> bool {
    found
        .strip_prefix("iotrex-")
        .and_then(|r| r.strip_suffix(name))
        .and_then(|r| r.strip_suffix('-'))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// `app.8.iotrex` -> `app.8.rank3.<ext>`: where rank `rank` of a run whose trace goes to
/// `out` writes on its own (its calls when the merged trace could not hold them, or its raw
/// log with `ext` `jsonl`).
pub fn rank_path(out: &str, rank: u32, ext: &str) -> String {
    let stem = out.strip_suffix(".iotrex").unwrap_or(out);
    format!("{stem}.rank{rank}.{ext}")
}

/// The per-rank trace files beside `out` ([`rank_path`] with `ext` `iotrex`), by rank.
pub fn rank_files(out: &std::path::Path) -> Vec<(u32, std::path::PathBuf)> {
    let Some(name) = out.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let stem = name.strip_suffix(".iotrex").unwrap_or(&name);
    let prefix = format!("{stem}.rank");
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(u32, std::path::PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let r = n.strip_prefix(&prefix)?.strip_suffix(".iotrex")?;
            let rank = r
                .parse()
                .ok()
                .filter(|_| r.bytes().all(|b| b.is_ascii_digit()))?;
            Some((rank, e.path()))
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn fallback_paths_are_recognised() {
        let p = super::fallback_path("/tmp/", 42, "/ro/app.8.iotrex");
        assert_eq!(p, "/tmp/iotrex-42-app.8.iotrex");
        assert!(super::is_fallback_of(
            "iotrex-42-app.8.iotrex",
            "app.8.iotrex"
        ));
        assert!(!super::is_fallback_of(
            "iotrex--app.8.iotrex",
            "app.8.iotrex"
        ));
        assert!(!super::is_fallback_of(
            "iotrex-42-xapp.8.iotrex",
            "app.8.iotrex"
        ));
    }

    #[test]
    fn rank_files_are_found_by_name() {
        let dir = std::env::temp_dir().join(format!("iotrex-rankfiles-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for n in [
            "a.4.rank2.iotrex",
            "a.4.rank10.iotrex",
            "a.4.rank0.jsonl",
            "a.4.rankx.iotrex",
            "a.4.rank1.iotrex.5.tmp",
            "b.4.rank1.iotrex",
        ] {
            std::fs::write(dir.join(n), b"").unwrap();
        }
        let got: Vec<u32> = super::rank_files(&dir.join("a.4.iotrex"))
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(got, vec![2, 10]);
        assert_eq!(
            super::rank_path("d/a.4.iotrex", 3, "jsonl"),
            "d/a.4.rank3.jsonl"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names() {
        assert_eq!(super::job_dir("/tmp/", "a b/c"), "/tmp/iotrex-job-a_b_c");
        assert_eq!(super::tmp_dir(Some("rel")), "/tmp");
        assert_eq!(super::tmp_dir(Some("/x")), "/x");
    }
}
