//! The recording core every MPI wrapper goes through.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::*;

/// Runs an MPI call and records it. In MPI-IO calls (`io`), POSIX calls made by the library
/// become the event's children; in other calls they are not recorded.
pub(crate) fn mpi_call(
    op: Op,
    io: bool,
    call: impl FnOnce() -> c_int,
    build: impl FnOnce(&mut State, c_int) -> Vec<i64>,
) -> c_int {
    mpi_call_path(op, io, None, call, build)
}

pub(crate) fn mpi_call_path(
    op: Op,
    io: bool,
    path: Option<String>,
    call: impl FnOnce() -> c_int,
    build: impl FnOnce(&mut State, c_int) -> Vec<i64>,
) -> c_int {
    if crate::guard::mode() != IDLE || !RECORDING.load(Ordering::Relaxed) {
        return call();
    }
    let g = Enter::new(BUSY);
    let sig = signature();
    let t0 = now_ns();
    if io {
        CHILDREN.with(|c| {
            if let Ok(mut c) = c.try_borrow_mut() {
                c.0.clear();
                c.1 = t0;
            }
        });
        g.switch(IN_MPIIO);
    }
    let r = call();
    let t1 = now_ns();
    g.switch(BUSY);
    let children = if io {
        CHILDREN.with(|c| {
            c.try_borrow_mut()
                .map(|mut c| std::mem::take(&mut c.0))
                .unwrap_or_default()
        })
    } else {
        Vec::new()
    };
    record_parent(Call { op, sig, t0, t1 }, children, |st| {
        Some((build(st, r), path))
    });
    r
}
