//! Handing the trace over: the finalize-time radix-tree merge over PMPI point-to-point, the
//! write by rank 0, the per-rank fallback when a process exits without `MPI_Finalize`, and the
//! `IOTREX_RAW=1` debug log.

use crate::mpi::{self, H};
use crate::real::real;
use crate::state::{RECORDING, STATE, State, now_ns, say};
use libc::c_int;
use rsd::{Header, Trace, TraceFile};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// What one rank sends to its parent in the merge tree.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Payload {
    trace: Trace,
    wall_ns: u64,
    incomplete: bool,
    notes: Vec<String>,
}

/// Tag of the tracer's messages (on its own communicator, so any value would do).
const TAG: libc::c_int = 0x10_7e;

/// The trace path: `IOTREX_OUT`, or `./<exe>.<nranks>.iotrex`.
pub fn out_path(st: &State, nranks: u32) -> String {
    match &st.cfg.out {
        Some(p) if !p.is_empty() => p.clone(),
        _ => format!("{}.{nranks}.iotrex", st.cfg.exe),
    }
}

/// `app.8.iotrex` -> `app.8.rank3.iotrex`: where a rank writes on its own.
pub fn rank_path(out: &str, rank: u32, ext: &str) -> String {
    let stem = out.strip_suffix(".iotrex").unwrap_or(out);
    format!("{stem}.rank{rank}.{ext}")
}

/// Takes the state out of the lock, so nothing below holds it while doing I/O (the `close`
/// hook takes it).
fn take_state() -> Option<State> {
    RECORDING.store(false, Ordering::SeqCst);
    let mut g = match STATE.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let st = g.as_mut()?;
    if st.done {
        return None;
    }
    st.done = true;
    // Keep a husk in place (done = true) so later hooks see a finished tracer.
    let cfg = st.cfg.clone();
    let husk = State::new(cfg, 0);
    let mut st = std::mem::replace(st, husk);
    if let Some(h) = g.as_mut() {
        h.done = true;
    }
    st.done = true;
    Some(st)
}

fn write_raw(st: &State, out: &str) {
    let Some(raw) = &st.raw else { return };
    let path = rank_path(out, st.rank, "jsonl");
    let mut buf = Vec::new();
    for ev in raw {
        if serde_json::to_writer(&mut buf, &ev.flat()).is_err() {
            say(&format!("cannot encode the raw log for rank {}", st.rank));
            return;
        }
        buf.push(b'\n');
    }
    if let Err(e) = std::fs::File::create(&path).and_then(|mut f| f.write_all(&buf)) {
        say(&format!("cannot write {path}: {e}"));
    }
}

fn header(st: &State, nranks: u32, p: &Payload) -> Header {
    let mut h = Header::new(nranks);
    h.command = st.cfg.argv.clone();
    h.wall_ns = p.wall_ns;
    h.incomplete = p.incomplete;
    h.notes = p.notes.clone();
    h.unrecorded_mpi = st.unrecorded_mpi.clone();
    h.mpi_config = st.mpi_config.clone();
    h.build_id = st.cfg.build_id.clone();
    h.node_cores = st.node_cores.clone();
    h
}

fn write_trace(path: &str, tf: &TraceFile) {
    match tf.write(std::path::Path::new(path)) {
        Ok(_) => {}
        Err(e) => say(&format!("cannot write the trace: {e}")),
    }
}

type SendFn = unsafe extern "C" fn(
    *const libc::c_void,
    libc::c_int,
    H,
    libc::c_int,
    libc::c_int,
    H,
) -> libc::c_int;
type RecvFn = unsafe extern "C" fn(
    *mut libc::c_void,
    libc::c_int,
    H,
    libc::c_int,
    libc::c_int,
    H,
    *mut libc::c_void,
) -> libc::c_int;

fn send_bytes(bytes: &[u8], dest: i64, comm: H, byte: H) -> bool {
    let Some(send) = real!("PMPI_Send", SendFn) else {
        return false;
    };
    let len = bytes.len() as u64;
    // Messages above 2 GiB would need chunking; a compressed trace that large means the
    // compression failed anyway, so it is refused here and flagged by the caller.
    let Ok(n) = libc::c_int::try_from(bytes.len()) else {
        return false;
    };
    // SAFETY: the buffers are valid for the counts given in MPI_BYTE; `comm` is the tracer's
    // communicator and `dest` a rank in it.
    unsafe {
        send(
            (&len as *const u64).cast(),
            8,
            byte,
            dest as libc::c_int,
            TAG,
            comm,
        ) == 0
            && send(
                bytes.as_ptr().cast(),
                n,
                byte,
                dest as libc::c_int,
                TAG,
                comm,
            ) == 0
    }
}

fn recv_bytes(src: i64, comm: H, byte: H) -> Option<Vec<u8>> {
    let recv = real!("PMPI_Recv", RecvFn)?;
    let mut len = 0u64;
    // A real status buffer rather than MPI_STATUS_IGNORE, whose value differs between Open MPI
    // (null) and MPICH ((MPI_Status *)1); 64 bytes hold either library's MPI_Status.
    let mut status = [0u64; 8];
    // SAFETY: `len` holds 8 bytes and `status` a whole MPI_Status.
    let rc = unsafe {
        recv(
            (&mut len as *mut u64).cast(),
            8,
            byte,
            src as libc::c_int,
            TAG,
            comm,
            status.as_mut_ptr().cast(),
        )
    };
    if rc != 0 {
        return None;
    }
    let n = libc::c_int::try_from(len).ok()?;
    let mut buf = vec![0u8; len as usize];
    // SAFETY: `buf` holds `len` bytes, which is what the sender announced; `status` as above.
    let rc = unsafe {
        recv(
            buf.as_mut_ptr().cast(),
            n,
            byte,
            src as libc::c_int,
            TAG,
            comm,
            status.as_mut_ptr().cast(),
        )
    };
    (rc == 0).then_some(buf)
}

/// `trace` with its over-budget parameters summarised as the configuration allows
/// ([`rsd::approx::bound`]); on each rank before the merge, so what travels stays bounded,
/// and at rank 0 after it.
fn bounded(mut trace: rsd::Trace, cfg: &crate::state::Config) -> rsd::Trace {
    rsd::approx::bound(&mut trace, &cfg.approx);
    trace
}

/// Inside `MPI_Finalize`: merges every rank's trace over a binary radix tree (in round k, rank
/// r receives from r + 2^k when r is a multiple of 2^(k+1), otherwise sends to r - 2^k and is
/// done) and rank 0 writes the file. Every rank takes part whatever happened before (a rank
/// whose tracer was disabled sends an empty, flagged trace), so the merge never hangs.
pub fn merge_and_write(comm: H) {
    let Some(g) = mpi::globals() else { return };
    let t_start = now_ns();
    let byte = g.byte as H;
    let rank = mpi::comm_rank(comm);
    let size = mpi::comm_size(comm);
    let st = std::panic::catch_unwind(take_state).ok().flatten();
    let mut payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &st {
        Some(st) => Payload {
            trace: bounded(st.comp.finish(), &st.cfg),
            wall_ns: now_ns().saturating_sub(st.start_ns),
            incomplete: st.incomplete,
            notes: st
                .notes
                .iter()
                .cloned()
                .chain(crate::posix_more::unrecorded_note(st.rank))
                .collect(),
        },
        None => Payload {
            incomplete: true,
            notes: vec![format!("rank {rank}: no trace (tracer state lost)")],
            ..Payload::default()
        },
    }))
    .unwrap_or_else(|_| Payload {
        incomplete: true,
        notes: vec![format!("rank {rank}: internal error building the trace")],
        ..Payload::default()
    });
    let out = st.as_ref().map(|s| out_path(s, size as u32));
    if let (Some(st), Some(out)) = (&st, &out) {
        write_raw(st, out);
    }
    let mut step = 1i64;
    while step < size {
        if rank % (2 * step) == 0 {
            let src = rank + step;
            if src < size {
                let got = recv_bytes(src, comm, byte)
                    .and_then(|b| rmp_serde::from_slice::<Payload>(&b).ok());
                match got {
                    Some(p) => {
                        let merged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            rsd::merge(&payload.trace, &p.trace)
                        }));
                        match merged {
                            Ok(Ok(t)) => payload.trace = t,
                            Ok(Err(e)) => {
                                payload.incomplete = true;
                                payload.notes.push(format!("merge with rank {src}: {e}"));
                            }
                            Err(_) => {
                                payload.incomplete = true;
                                payload
                                    .notes
                                    .push(format!("merge with rank {src}: internal error"));
                            }
                        }
                        payload.wall_ns = payload.wall_ns.max(p.wall_ns);
                        payload.incomplete |= p.incomplete;
                        payload.notes.extend(p.notes);
                    }
                    None => {
                        payload.incomplete = true;
                        payload
                            .notes
                            .push(format!("ranks from {src}: trace not received"));
                    }
                }
            }
        } else {
            let bytes = rmp_serde::to_vec(&payload).unwrap_or_default();
            if !send_bytes(&bytes, rank - step, comm, byte) {
                // The parent still waits for two messages; send an empty flagged payload.
                let empty = Payload {
                    incomplete: true,
                    notes: vec![format!("rank {rank}: trace too large to send")],
                    ..Payload::default()
                };
                let b = rmp_serde::to_vec(&empty).unwrap_or_default();
                send_bytes(&b, rank - step, comm, byte);
            }
            break;
        }
        step *= 2;
    }
    if rank == 0
        && let (Some(st), Some(out)) = (&st, &out)
    {
        // Offsets that are prefix sums of the ranks' sizes (a shared-file dump) become that
        // model while every rank's exact values are here, before any size is summarised.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rsd::prefix::recognise(&mut payload.trace)
        }));
        // The ranks' summaries joined in the merge; a parameter that some ranks summarised and
        // others kept exact becomes one summary here.
        payload.trace = bounded(std::mem::take(&mut payload.trace), &st.cfg);
        if let Some(e) = &st.cfg.approx_error {
            payload
                .notes
                .push(format!("{e}; the default approximation was used"));
        }
        // Non-rank processes of the job that wrote before any rank existed (a helper the job
        // script ran first) hand the output over to the ranks.
        let taken = crate::job::take_back();
        if st.cfg.verbose {
            for t in &taken {
                say(&format!("trace of a non-rank process of this job: {t}"));
            }
        }
        let tf = TraceFile {
            header: header(st, size as u32, &payload),
            trace: payload.trace,
        };
        write_trace(out, &tf);
        if st.cfg.verbose {
            let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
            say(&format!(
                "{size} ranks merged in {:.1} ms; trace {out} ({bytes} bytes)",
                now_ns().saturating_sub(t_start) as f64 / 1e6
            ));
        }
    }
}

/// Set by the launcher (`IOTREX_ONE_WRITER=1`, read at start-up) for a plain command: every
/// process of the command inherits the same `IOTREX_OUT`, so a shell running `a; b` would have
/// each program overwrite the last one's trace. With it set, the first process to write claims
/// the path (an exclusive create, after the launcher removed any stale file); later ones write
/// `<stem>.pid<PID>.iotrex` beside it.
pub static ONE_WRITER: AtomicBool = AtomicBool::new(false);

/// Set while `at_exit` writes: a terminating signal that arrives then is held back until the
/// file is written (see [`crate::signals`]).
pub static EXITING: AtomicBool = AtomicBool::new(false);

/// `app.iotrex` -> `app.pid1234.iotrex`: where a process that lost the claim on the path writes.
pub fn pid_path(out: &str, pid: u32) -> String {
    let stem = out.strip_suffix(".iotrex").unwrap_or(out);
    format!("{stem}.pid{pid}.iotrex")
}

/// What one process writes on its own, outside the finalize merge: the path and the file.
struct Alone {
    path: String,
    /// `IOTREX_OUT` (or the default), for the raw log's name.
    out: String,
    /// A serial program's trace, whose path may be claimed (see [`ONE_WRITER`]) and which the
    /// job's ranks, if any start later, take back (see [`crate::job`]).
    serial: bool,
    tf: TraceFile,
}

/// The file a process writes on its own, or `None` when it must write nothing. `why` says
/// what ended the process early (a signal); `None` for a normal exit.
fn alone(st: &State, why: Option<&str>) -> Option<Alone> {
    let mut notes = st.notes.clone();
    notes.extend(crate::posix_more::unrecorded_note(st.rank));
    if st.mpi_initialized {
        let nranks = st.cfg.env_size.unwrap_or(1);
        notes.push(format!(
            "rank {}: {} without MPI_Finalize; only this rank's calls are in this file",
            st.rank,
            why.unwrap_or("exited")
        ));
        let out = out_path(st, nranks);
        let p = Payload {
            trace: st.comp.finish(),
            wall_ns: now_ns().saturating_sub(st.start_ns),
            incomplete: true,
            notes,
        };
        Some(Alone {
            path: rank_path(&out, st.rank, "iotrex"),
            out,
            serial: false,
            tf: TraceFile {
                header: header(st, nranks, &p),
                trace: p.trace,
            },
        })
    } else if st.cfg.env_size.is_none() && st.comp.events() > 0 {
        // A process that recorded nothing writes nothing: a preloaded wrapper (`timeout`,
        // `env`) exits after the program it ran and must not overwrite that program's trace.
        // Nor does a process of a job whose ranks own the trace (a launcher, a helper of the
        // job script), unless asked to keep it under a name that says what it is.
        let of_mpi_job = crate::job::has_ranks();
        if of_mpi_job && !crate::job::ALL_PROCESSES.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(w) = why {
            notes.push(format!("{w}; the calls up to then are in this file"));
        }
        let out = if of_mpi_job {
            notes.push(format!(
                "not an MPI rank: a process ({}) of an MPI job, kept by IOTREX_ALL_PROCESSES=1",
                st.cfg.exe
            ));
            crate::job::own_nonrank_path(st.cfg.out.as_deref(), &st.cfg.exe)
        } else {
            out_path(st, 1)
        };
        let p = Payload {
            trace: st.comp.finish(),
            wall_ns: now_ns().saturating_sub(st.start_ns),
            incomplete: st.incomplete || why.is_some(),
            notes,
        };
        Some(Alone {
            path: out.clone(),
            out,
            serial: !of_mpi_job,
            tf: TraceFile {
                header: header(st, 1, &p),
                trace: p.trace,
            },
        })
    } else {
        // Launched by mpirun but never called MPI_Init: a helper process (a shell, a script
        // the rank ran); it writes nothing rather than overwrite the ranks' trace.
        None
    }
}

/// Opens `path` for writing, created with mode 0644 and `flags` (`O_EXCL`, `O_TRUNC`), by the
/// raw system call (no hook, no lock: the signal handler uses it). `Err(errno)` on failure.
fn create_raw(path: &std::ffi::CStr, flags: c_int) -> Result<libc::c_long, c_int> {
    // SAFETY: `path` is a NUL-terminated path; openat with O_CREAT takes a mode argument.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC | flags,
            0o644,
        )
    };
    if fd < 0 {
        Err(crate::posix::errno())
    } else {
        Ok(fd)
    }
}

/// Creates `path` if it does not exist (raw syscalls: the signal handler uses this too).
/// `Err(errno)` otherwise.
fn create_excl(path: &str) -> Result<(), c_int> {
    let c = std::ffi::CString::new(path).map_err(|_| libc::EINVAL)?;
    let fd = create_raw(&c, libc::O_EXCL)?;
    // SAFETY: closing the descriptor just opened.
    unsafe { libc::syscall(libc::SYS_close, fd) };
    Ok(())
}

/// The path a serial program writes: `out`, unless [`ONE_WRITER`] is set and another process
/// of the same command claimed it first; then `<stem>.pid<PID>.iotrex`, or `-2`, `-3`, ...
/// after the pid when that is taken too (a process that wrote before `exec` and the program
/// it became share the pid).
fn claim(out: &str) -> String {
    if !ONE_WRITER.load(Ordering::SeqCst) {
        return out.to_string();
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::syscall(libc::SYS_getpid) } as u32;
    let first = pid_path(out, pid);
    let candidate = |k: u32| match k {
        0 => out.to_string(),
        1 => first.clone(),
        _ => {
            let stem = first.strip_suffix(".iotrex").unwrap_or(&first);
            format!("{stem}-{k}.iotrex")
        }
    };
    // This process already claimed a path (a snapshot written from a signal handler the
    // application then survived): it writes there again.
    let mine = CLAIMED.load(Ordering::SeqCst);
    if mine > 0 {
        return candidate(mine - 1);
    }
    for k in 0..100 {
        let p = candidate(k);
        match create_excl(&p) {
            Ok(()) => {
                CLAIMED.store(k + 1, Ordering::SeqCst);
                return p;
            }
            Err(e) if e == libc::EEXIST => continue,
            // Any other error: the write fails on the same path and says why.
            Err(_) => return p,
        }
    }
    first
}

/// Which path of [`claim`] this process holds: 0 none, k + 1 for candidate k.
static CLAIMED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// At process exit: a serial program writes its trace; an MPI rank that never reached
/// `MPI_Finalize` writes what it recorded on its own, flagged incomplete (no communication, so
/// it cannot hang).
pub fn at_exit() {
    if crate::state::FORKED.load(Ordering::SeqCst) || mpi::WRONG_MPI.load(Ordering::SeqCst) {
        return;
    }
    EXITING.store(true, Ordering::SeqCst);
    if let Some(st) = take_state()
        && let Some(a) = alone(&st, None)
    {
        write_raw(&st, &a.out);
        let path = if a.serial { claim(&a.path) } else { a.path };
        write_trace(&path, &a.tf);
        if a.serial {
            crate::job::note_written(&path, st.cfg.out.as_deref(), &st.cfg.exe);
        }
    }
    crate::job::cleanup_if_root();
    EXITING.store(false, Ordering::SeqCst);
    crate::signals::raise_held();
}

/// Before `exec`: the process image is replaced without running exit handlers, so what this
/// process recorded is written now, as at exit, and recording stops (a failed `exec` leaves
/// the rest of the process untraced). Used for shells that `exec` their last command.
pub fn before_exec() {
    at_exit();
}

/// Writes `bytes` to `path` through a temporary file and a rename, with raw syscalls (no std
/// I/O, no hook, no lock: this runs in a signal handler). Returns the errno on failure.
fn write_file_raw(path: &str, bytes: &[u8]) -> Result<(), c_int> {
    let tmp = std::ffi::CString::new(format!("{path}.tmp")).map_err(|_| libc::EINVAL)?;
    let dst = std::ffi::CString::new(path).map_err(|_| libc::EINVAL)?;
    let fd = create_raw(&tmp, libc::O_TRUNC)?;
    let mut done = 0;
    while done < bytes.len() {
        // SAFETY: the slice is valid for its length; `fd` is ours.
        let n = unsafe {
            libc::syscall(
                libc::SYS_write,
                fd,
                bytes[done..].as_ptr(),
                bytes.len() - done,
            )
        };
        if n < 0 && crate::posix::errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            let e = crate::posix::errno();
            // SAFETY: closing our own descriptor.
            unsafe { libc::syscall(libc::SYS_close, fd) };
            return Err(e);
        }
        done += n as usize;
    }
    // SAFETY: closing our own descriptor.
    unsafe { libc::syscall(libc::SYS_close, fd) };
    // SAFETY: both paths are NUL-terminated; renameat2 with flags 0 is rename.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            tmp.as_ptr(),
            libc::AT_FDCWD,
            dst.as_ptr(),
            0,
        )
    };
    if r < 0 {
        return Err(crate::posix::errno());
    }
    Ok(())
}

/// In the handler of a terminating signal: writes what this process recorded, the way
/// [`at_exit`] would, flagged incomplete with `why`. `last`: the process is about to die, so
/// recording stops; otherwise (the application handles the signal and may go on) it is a
/// snapshot, and a later exit or finalize writes again.
///
/// It never blocks: if the state lock is held (the signal interrupted a hook on this thread,
/// or another thread is recording), it says so in one line and writes nothing. The file is
/// encoded under the lock and written after releasing it, with raw syscalls.
pub fn on_signal(why: &str, last: bool) {
    if crate::state::FORKED.load(Ordering::SeqCst) || mpi::WRONG_MPI.load(Ordering::SeqCst) {
        return;
    }
    let encoded = {
        let mut g = match STATE.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                say(&format!(
                    "{why}: the tracer state was in use, so this process's trace is not written"
                ));
                return;
            }
        };
        let Some(st) = g.as_mut() else { return };
        if st.done {
            return;
        }
        if last {
            RECORDING.store(false, Ordering::SeqCst);
            st.done = true;
        }
        let Some(a) = alone(st, Some(why)) else {
            return;
        };
        let who = Some((st.cfg.out.clone(), st.cfg.exe.clone()));
        match a.tf.to_bytes() {
            Ok(b) => (a.path, a.serial, b, who),
            Err(e) => {
                say(&format!("{why}: cannot encode the trace: {e}"));
                return;
            }
        }
    };
    let (path, serial, bytes, who) = encoded;
    let path = if serial { claim(&path) } else { path };
    if let Err(e) = write_file_raw(&path, &bytes) {
        say(&format!("{why}: cannot write {path} (errno {e})"));
    } else if serial && let Some((out, exe)) = who {
        crate::job::note_written(&path, out.as_deref(), &exe);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rank_paths() {
        assert_eq!(
            super::rank_path("a/app.8.iotrex", 3, "jsonl"),
            "a/app.8.rank3.jsonl"
        );
        assert_eq!(super::rank_path("out", 0, "iotrex"), "out.rank0.iotrex");
        assert_eq!(super::pid_path("d/ls.iotrex", 42), "d/ls.pid42.iotrex");
    }
}
