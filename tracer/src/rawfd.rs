//! Files the tracer reads for itself (`/proc` counters), opened and closed by the raw system
//! calls: the tracer's own `open`/`read`/`close` hooks are not to see them, and no lock is
//! taken.

use std::ffi::CStr;

/// Opens `path` read-only (close-on-exec); `None` where it cannot be.
pub(crate) fn open_read(path: &CStr) -> Option<libc::c_long> {
    // SAFETY: a NUL-terminated path and flags; openat has no other precondition.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    (fd >= 0).then_some(fd)
}

/// Closes a descriptor [`open_read`] gave.
pub(crate) fn close(fd: libc::c_long) {
    // SAFETY: the caller's own descriptor, which nothing else holds.
    unsafe { libc::syscall(libc::SYS_close, fd) };
}
