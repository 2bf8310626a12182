//! Descriptor duplication: `dup`, `dup2`, `dup3` and `fcntl(F_DUPFD / F_DUPFD_CLOEXEC)`.
//!
//! A copy of a traced descriptor is traced too, with its own symbolic id, so that writes through
//! it (`dup2(fd, 1)` then `write(1, ...)`) are recorded against the same file; the duplication
//! is recorded as `dup` (old id, new id, and the id `dup2` closed implicitly). Reusing the number
//! of a traced descriptor closes it: the table drops it, and if the source is not traced the
//! implicit close is recorded as a `close` of that id, which is what it is for the trace.

#![allow(clippy::missing_safety_doc)]

use crate::guard::BUSY;
use crate::posix::set_errno;
use crate::real::real;
use crate::state::{fd_traced, run_recorded, traceable, with_state};
use libc::{c_int, c_long};
use rsd::Op;
use rsd::op::args;

/// Runs a duplication of `old` (onto `target` for `dup2`/`dup3`) and keeps the table right.
pub(crate) fn dup_op(old: c_int, target: Option<c_int>, call: impl FnOnce() -> c_int) -> c_int {
    let src = fd_traced(old);
    // dup2(fd, fd) returns fd and changes nothing.
    let tgt = target.filter(|&t| t != old && fd_traced(t));
    if !src && tgt.is_none() {
        return call();
    }
    let Some(child) = traceable() else {
        let r = call();
        // Not recording this call (the tracer's own work, or inside an MPI call): still keep
        // the table right, as `close` does, since the numbers stay in use.
        if r >= 0 && crate::guard::mode() == BUSY {
            with_state(|st| {
                if let Some(t) = tgt.filter(|&t| t == r) {
                    st.fd_close(t);
                }
                if src && st.fd(old).is_some() {
                    st.fd_open(r);
                }
            });
        }
        return r;
    };
    let op = if src { Op::Dup } else { Op::Close };
    run_recorded(op, child, call, |st, r| {
        if r < 0 {
            // A failed duplication changed nothing; only one from a traced source is a call
            // on a traced file.
            return src
                .then(|| Some((args::dup(st.fd(old)?, -1, -1), None)))
                .flatten();
        }
        let closed = tgt.filter(|&t| t == r).and_then(|t| st.fd_close(t));
        if src {
            let id = st.fd(old)?;
            let new = st.fd_open(r);
            Some((args::dup(id, new, closed.unwrap_or(-1)), None))
        } else {
            Some((args::close(closed?), None))
        }
    })
}

/// Hook: `dup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    let Some(f) = real!("dup", unsafe extern "C" fn(c_int) -> c_int) else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    // SAFETY: forwarding the caller's argument to the real function.
    dup_op(fd, None, || unsafe { f(fd) })
}

/// Hook: `dup2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup2(fd: c_int, newfd: c_int) -> c_int {
    let Some(f) = real!("dup2", unsafe extern "C" fn(c_int, c_int) -> c_int) else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    dup_op(fd, Some(newfd), || unsafe { f(fd, newfd) })
}

/// Hook: `dup3`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup3(fd: c_int, newfd: c_int, flags: c_int) -> c_int {
    let Some(f) = real!("dup3", unsafe extern "C" fn(c_int, c_int, c_int) -> c_int) else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    dup_op(fd, Some(newfd), || unsafe { f(fd, newfd, flags) })
}

/// `fcntl(fd, F_DUPFD[_CLOEXEC], min)` through the real `fcntl` (`f`), as a duplication.
pub(crate) fn fcntl_dup(
    f: unsafe extern "C" fn(c_int, c_int, c_long) -> c_int,
    fd: c_int,
    cmd: c_int,
    arg: c_long,
) -> c_int {
    // SAFETY: forwarding the caller's arguments to the real function.
    dup_op(fd, None, || unsafe { f(fd, cmd, arg) })
}
