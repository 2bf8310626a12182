//! `exec` and `_exit` hooks. A successful `exec` replaces the process image, and `_exit` ends
//! it, without running exit handlers, so a process that recorded calls and then execs (a shell
//! running its last command in place) or leaves through `_exit` (dash does) would lose them.
//! The trace is written just before the call, as at exit.
//! The variadic `execl*` forms are hooked through the C shim (`shim.c`), which builds their
//! argument vector and calls the vector hooks here: glibc's own `execl*` call `execve`
//! through an internal entry point, not the symbol.

#![allow(clippy::missing_safety_doc)]

use crate::guard::{BUSY, Enter};
use crate::posix::set_errno;
use crate::real::real;
use libc::{c_char, c_int};
use std::sync::atomic::{AtomicI64, Ordering};

type Argv = *const *const c_char;

/// The pid the constructor ran in.
static PID: AtomicI64 = AtomicI64::new(0);

/// This process's pid, by the raw call: glibc's may not see a vfork child.
pub(crate) fn getpid() -> i64 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::syscall(libc::SYS_getpid) }
}

/// Remembers this process's pid (from the constructor).
pub fn remember_pid() {
    PID.store(getpid(), Ordering::SeqCst);
}

fn write_before_exec() {
    if crate::procs::is_child() {
        // A traced child's record: its image ends here (the new one traces on its own).
        if getpid() == PID.load(Ordering::SeqCst) {
            let e = crate::posix::errno();
            crate::procs::write_record(rsd::process::End::Exec);
            set_errno(e);
        }
        return;
    }
    if crate::state::traceable().is_none() {
        return;
    }
    // A `vfork` child (shells start commands that way) shares the parent's memory and runs no
    // fork handlers, so it still looks like the parent here; its exec must not write, and
    // end, the parent's trace.
    if getpid() != PID.load(Ordering::SeqCst) {
        return;
    }
    let _g = Enter::new(BUSY);
    let e = crate::posix::errno();
    if std::panic::catch_unwind(crate::finalize::before_exec).is_err() {
        crate::state::say("internal error writing the trace before exec");
    }
    set_errno(e);
}

// The exec calls: the trace is written, then the real call replaces the process.
macro_rules! exec_hooks {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[doc = concat!("Hook: `", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            let Some(f) = real!(stringify!($name), unsafe extern "C" fn($($ty),*) -> c_int) else {
                return crate::posix::enosys();
            };
            write_before_exec();
            // SAFETY: forwarding the caller's arguments to the real function.
            unsafe { f($($arg),*) }
        }
    )*};
}
exec_hooks! {
    execve(path: *const c_char, argv: Argv, envp: Argv);
    execv(path: *const c_char, argv: Argv);
    execvp(file: *const c_char, argv: Argv);
    execvpe(file: *const c_char, argv: Argv, envp: Argv);
    fexecve(fd: c_int, argv: Argv, envp: Argv);
}

shim_targets! {
    iotrex_execv_hook => execv(path: *const c_char, argv: Argv);
    iotrex_execvp_hook => execvp(file: *const c_char, argv: Argv);
    iotrex_execve_hook => execve(path: *const c_char, argv: Argv, envp: Argv);
}

naked_jumps! {
    /// Hook: `execl`.
    execl => iotrex_c_execl;
    /// Hook: `execlp`.
    execlp => iotrex_c_execlp;
    /// Hook: `execle`.
    execle => iotrex_c_execle;
}

/// `_exit` ends the process without running exit handlers, and shells (dash) end that way, so
/// the trace is written here as at exit; a traced forked child writes its record. Untraced
/// children (vfork'd, past the bound) write nothing.
fn write_before_exit(status: c_int) {
    if crate::state::FORKED.load(Ordering::SeqCst) || getpid() != PID.load(Ordering::SeqCst) {
        return;
    }
    if crate::procs::is_child() {
        crate::procs::write_record(rsd::process::End::QuickExit(status));
        return;
    }
    let _g = Enter::new(BUSY);
    if std::panic::catch_unwind(crate::finalize::at_exit).is_err() {
        crate::state::say("internal error writing the trace at _exit");
    }
}

macro_rules! exit_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `_exit`/`_Exit`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(status: c_int) -> ! {
            write_before_exit(status);
            match real!($sym, unsafe extern "C" fn(c_int) -> !) {
                // SAFETY: forwarding the caller's argument to the real function.
                Some(f) => unsafe { f(status) },
                // SAFETY: the exit_group system call ends the process and never returns.
                None => unsafe {
                    libc::syscall(libc::SYS_exit_group, status);
                    std::hint::unreachable_unchecked()
                },
            }
        }
    };
}
exit_hook!(_exit, "_exit");
exit_hook!(_Exit, "_Exit");

/// Hook: `exit`. Only notes the status, for the record a traced child writes from the
/// destructor (the exit handlers run inside the real call).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn exit(status: c_int) -> ! {
    crate::procs::EXIT_STATUS.store(status, Ordering::SeqCst);
    match real!("exit", unsafe extern "C" fn(c_int) -> !) {
        // SAFETY: forwarding the caller's argument to the real function.
        Some(f) => unsafe { f(status) },
        // SAFETY: the exit_group system call ends the process and never returns.
        None => unsafe {
            libc::syscall(libc::SYS_exit_group, status);
            std::hint::unreachable_unchecked()
        },
    }
}

/// Hook: `vfork`, served by `fork`. A vfork child shares the parent's memory and runs no fork
/// handlers, so every hook it passes through (a shell sets up a command's redirections with
/// open, dup2 and close there) would record into the parent's trace and change its descriptor
/// table. A fork child is a valid vfork child (it may do anything a vfork child may), and its
/// fork handler stops tracing in it. A wrapper cannot forward to the real vfork: the child
/// would return through this function's frame, which the parent then reuses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vfork() -> libc::pid_t {
    let Some(f) = real!("fork", unsafe extern "C" fn() -> libc::pid_t) else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    // SAFETY: fork has no preconditions; both processes return from here normally.
    unsafe { f() }
}
