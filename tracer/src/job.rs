//! Which processes of a job own the trace.
//!
//! Under a job script or `iotrex trace -- timeout 120 mpirun ...` every process inherits
//! `LD_PRELOAD`: the launcher (`mpirun`, `orted`), wrappers (`timeout`, `env`) and helpers
//! (`cp` run by the script) are traced as well as the ranks. Only the ranks' trace is wanted
//! when the job has ranks; without MPI the first traced process owns the output as before.
//!
//! The processes of one job share an id, `IOTREX_JOB` (set by `iotrex trace`, or by the
//! first traced process for its descendants when the variable is missing), naming a small
//! directory `$TMPDIR/iotrex-job-<id>` (the ranks of a node share it; the non-rank
//! processes of interest, launcher and script helpers, run beside a rank):
//! - every rank creates `mpi` in it when `MPI_Init` returns;
//! - a process that is not a rank, at exit, writes nothing when `mpi` exists (or, with
//!   `IOTREX_ALL_PROCESSES=1`, writes `<stem>.nonrank-<exe>-<pid>.iotrex`); otherwise it
//!   writes as a serial program and leaves `written.<pid>` in the directory, the path it wrote
//!   and the name it would have as a non-rank trace;
//! - rank 0, before writing the merged trace at `MPI_Finalize`, removes (or, with
//!   `IOTREX_ALL_PROCESSES=1`, renames) those earlier traces: a helper run before the MPI
//!   program thought it was alone.
//!
//! Everything here uses raw system calls: it runs at exit, in signal handlers and inside
//! `MPI_Init`, where the hooks must not see it.

use std::ffi::CString;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The job's directory, fixed at start-up.
static DIR: OnceLock<String> = OnceLock::new();
/// This process made up the job id (it is the job's first traced process) and removes the
/// directory at exit.
static ROOT: AtomicBool = AtomicBool::new(false);
/// `IOTREX_ALL_PROCESSES=1`: non-rank processes of an MPI job keep their traces, named as such.
pub static ALL_PROCESSES: AtomicBool = AtomicBool::new(false);

/// The marker a rank leaves.
const MPI_MARK: &str = "mpi";
/// Prefix of the notes of non-rank processes that wrote a trace.
const WRITTEN: &str = "written.";

fn pid() -> u32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::syscall(libc::SYS_getpid) as u32 }
}

/// At start-up (the constructor, single-threaded): reads or makes up the job id.
pub fn init(now_ns: u64) {
    ALL_PROCESSES.store(
        std::env::var("IOTREX_ALL_PROCESSES").is_ok_and(|v| v == "1"),
        Ordering::SeqCst,
    );
    let tmp = rsd::job::tmp_dir(std::env::var("TMPDIR").ok().as_deref());
    let id = match std::env::var(rsd::job::JOB_VAR) {
        // An id this process made up in an image it exec'd from (`<pid>-<time>`): it is still
        // the job's first process, and removes the directory at exit.
        Ok(id) if id.split('-').next() == Some(pid().to_string().as_str()) => {
            ROOT.store(true, Ordering::SeqCst);
            id
        }
        Ok(id) if !id.is_empty() => id,
        _ => {
            let id = format!("{}-{now_ns}", pid());
            // SAFETY: the constructor runs before the program's own threads; the variable is
            // inherited by the processes this one starts, which makes them one job.
            unsafe { std::env::set_var(rsd::job::JOB_VAR, &id) };
            ROOT.store(true, Ordering::SeqCst);
            id
        }
    };
    let _ = DIR.set(rsd::job::job_dir(&tmp, &id));
}

fn c(p: &str) -> Option<CString> {
    CString::new(p).ok()
}

fn mkdir(dir: &str) {
    if let Some(d) = c(dir) {
        // SAFETY: NUL-terminated path; EEXIST is the usual outcome and fine.
        unsafe { libc::syscall(libc::SYS_mkdirat, libc::AT_FDCWD, d.as_ptr(), 0o755) };
    }
}

fn exists(p: &str) -> bool {
    let Some(p) = c(p) else { return false };
    // SAFETY: NUL-terminated path.
    unsafe {
        libc::syscall(
            libc::SYS_faccessat,
            libc::AT_FDCWD,
            p.as_ptr(),
            libc::F_OK,
            0,
        ) == 0
    }
}

/// Writes `text` to `path` (created or truncated).
fn put(path: &str, text: &str) {
    let Some(p) = c(path) else { return };
    // SAFETY: NUL-terminated path; openat with O_CREAT takes a mode.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            p.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return;
    }
    // SAFETY: the buffer is valid for its length; `fd` is ours.
    unsafe {
        libc::syscall(libc::SYS_write, fd, text.as_ptr(), text.len());
        libc::syscall(libc::SYS_close, fd);
    }
}

fn unlink(path: &str) {
    if let Some(p) = c(path) {
        // SAFETY: NUL-terminated path.
        unsafe { libc::syscall(libc::SYS_unlinkat, libc::AT_FDCWD, p.as_ptr(), 0) };
    }
}

fn rename(from: &str, to: &str) -> bool {
    let (Some(f), Some(t)) = (c(from), c(to)) else {
        return false;
    };
    // SAFETY: NUL-terminated paths; renameat2 with flags 0 is rename.
    unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            0,
        ) == 0
    }
}

/// Called by every rank when `MPI_Init` succeeded: the job has ranks. A rank that made up
/// the job id itself (launched with `-x LD_PRELOAD` and no `IOTREX_JOB`) shares it with no one
/// who needs the mark (the helpers it starts are told apart by the launcher's rank variables),
/// so it leaves no directory behind, even when it is killed.
pub fn mark_rank() {
    if ROOT.load(Ordering::SeqCst) {
        return;
    }
    let Some(dir) = DIR.get() else { return };
    let mark = format!("{dir}/{MPI_MARK}");
    if !exists(&mark) {
        mkdir(dir);
        put(&mark, "");
    }
}

/// Whether a rank of this job has called `MPI_Init` (on this node).
pub fn has_ranks() -> bool {
    DIR.get()
        .is_some_and(|d| exists(&format!("{d}/{MPI_MARK}")))
}

/// `app.iotrex` (or none: `<exe>`) -> `app.nonrank-mpirun-1234.iotrex`: the clearly named
/// file of a process that is not a rank of an MPI job, with `IOTREX_ALL_PROCESSES=1`.
pub fn nonrank_path(out: Option<&str>, exe: &str, pid: u32) -> String {
    match out.filter(|o| !o.is_empty()) {
        Some(o) => {
            let stem = o.strip_suffix(".iotrex").unwrap_or(o);
            format!("{stem}.nonrank-{exe}-{pid}.iotrex")
        }
        None => format!("{exe}.nonrank-{pid}.iotrex"),
    }
}

/// Where this non-rank process's trace goes when the job has ranks (`IOTREX_ALL_PROCESSES=1`).
pub fn own_nonrank_path(out: Option<&str>, exe: &str) -> String {
    nonrank_path(out, exe, pid())
}

/// A non-rank process wrote `path` believing it was alone: rank 0 may take it back.
pub fn note_written(path: &str, out: Option<&str>, exe: &str) {
    let Some(dir) = DIR.get() else { return };
    mkdir(dir);
    let abs = absolute(path);
    let alt = absolute(&own_nonrank_path(out, exe));
    put(
        &format!("{dir}/{WRITTEN}{}", pid()),
        &format!("{abs}\n{alt}\n"),
    );
}

/// `path` made absolute against the current directory (raw `getcwd`).
fn absolute(path: &str) -> String {
    if path.starts_with('/') {
        return path.to_string();
    }
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` is writable for its length.
    let n = unsafe { libc::syscall(libc::SYS_getcwd, buf.as_mut_ptr(), buf.len()) };
    if n <= 0 {
        return path.to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(0);
    format!("{}/{path}", String::from_utf8_lossy(&buf[..end]))
}

/// Rank 0, before writing the merged trace: the traces that non-rank processes of this job
/// wrote before any rank existed are removed, or renamed to their non-rank names with
/// `IOTREX_ALL_PROCESSES=1`. Returns what was done, one line each, for the verbose output.
pub fn take_back() -> Vec<String> {
    let Some(dir) = DIR.get() else {
        return Vec::new();
    };
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let keep = ALL_PROCESSES.load(Ordering::SeqCst);
    let mut done = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(WRITTEN) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let mut lines = text.lines();
        let (Some(path), Some(alt)) = (lines.next(), lines.next()) else {
            continue;
        };
        if keep {
            if rename(path, alt) {
                done.push(format!("{path} -> {alt}"));
            }
        } else if exists(path) {
            unlink(path);
            done.push(format!("removed {path}"));
        }
        unlink(&e.path().to_string_lossy());
    }
    done
}

/// At exit of the job's first process (the one that made up the id): the directory goes.
pub fn cleanup_if_root() {
    if ROOT.load(Ordering::SeqCst)
        && let Some(dir) = DIR.get()
    {
        remove_dir(dir);
    }
}

/// Removes a job directory and its few files.
pub fn remove_dir(dir: &str) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            unlink(&e.path().to_string_lossy());
        }
    }
    if let Some(d) = c(dir) {
        // SAFETY: NUL-terminated path.
        unsafe {
            libc::syscall(
                libc::SYS_unlinkat,
                libc::AT_FDCWD,
                d.as_ptr(),
                libc::AT_REMOVEDIR,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert_eq!(
            super::nonrank_path(Some("d/app.8.iotrex"), "mpirun", 42),
            "d/app.8.nonrank-mpirun-42.iotrex"
        );
        assert_eq!(super::nonrank_path(None, "cp", 7), "cp.nonrank-7.iotrex");
    }
}
