//! Handing the trace over: the finalize-time radix-tree merge over PMPI point-to-point, the
//! write by rank 0, the per-rank fallback when a process exits without `MPI_Finalize`, and the
//! `IOTREX_RAW=1` debug log.

use crate::mpi::{self, H};
use crate::real::real;
use crate::state::{RECORDING, STATE, State, now_ns, say};
use rsd::{Header, Trace, TraceFile};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::atomic::Ordering;

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
            trace: st.comp.finish(),
            wall_ns: now_ns().saturating_sub(st.start_ns),
            incomplete: st.incomplete,
            notes: st.notes.clone(),
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

/// At process exit: a serial program writes its trace; an MPI rank that never reached
/// `MPI_Finalize` writes what it recorded on its own, flagged incomplete (no communication, so
/// it cannot hang).
pub fn at_exit() {
    if crate::state::FORKED.load(Ordering::SeqCst) || mpi::WRONG_MPI.load(Ordering::SeqCst) {
        return;
    }
    let Some(mut st) = take_state() else { return };
    if st.mpi_initialized {
        let nranks = st.cfg.env_size.unwrap_or(1);
        st.incomplete = true;
        st.notes.push(format!(
            "rank {}: exited without MPI_Finalize; only this rank's calls are in this file",
            st.rank
        ));
        let out = out_path(&st, nranks);
        write_raw(&st, &out);
        let p = Payload {
            trace: st.comp.finish(),
            wall_ns: now_ns().saturating_sub(st.start_ns),
            incomplete: true,
            notes: st.notes.clone(),
        };
        let tf = TraceFile {
            header: header(&st, nranks, &p),
            trace: p.trace,
        };
        write_trace(&rank_path(&out, st.rank, "iotrex"), &tf);
    } else if st.cfg.env_size.is_none() && st.comp.events() > 0 {
        // A process that recorded nothing writes nothing: a preloaded wrapper (`timeout`,
        // `env`) exits after the program it ran and must not overwrite that program's trace.
        let out = out_path(&st, 1);
        write_raw(&st, &out);
        let p = Payload {
            trace: st.comp.finish(),
            wall_ns: now_ns().saturating_sub(st.start_ns),
            incomplete: st.incomplete,
            notes: st.notes.clone(),
        };
        let tf = TraceFile {
            header: header(&st, 1, &p),
            trace: p.trace,
        };
        write_trace(&out, &tf);
    }
    // Launched by mpirun but never called MPI_Init: a helper process (a shell, a script the
    // rank ran); it writes nothing rather than overwrite the ranks' trace.
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
    }
}
