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

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert_eq!(super::job_dir("/tmp/", "a b/c"), "/tmp/iotrex-job-a_b_c");
        assert_eq!(super::tmp_dir(Some("rel")), "/tmp");
        assert_eq!(super::tmp_dir(Some("/x")), "/x");
    }
}
