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
use std::ffi::CStr;
use std::sync::atomic::{AtomicI64, Ordering};

pub(crate) type Argv = *const *const c_char;

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

/// Before an `exec`: what this image recorded is written (a traced child's record, or the
/// rank's own process's trace, or its record when it hands its place over), and the
/// `IOTREX_PROCESS=...` entry for the new image's environment is returned, if any
/// ([`crate::procs::before_exec`]).
fn before_exec() -> Option<&'static CStr> {
    let site = crate::callsite::signature();
    crate::posix::keeping_errno(|| handoff_and_write(site))
}

fn handoff_and_write(site: u64) -> Option<&'static CStr> {
    if crate::procs::is_child() {
        // A traced child's record: its image ends here, and the new one is its child.
        if getpid() != PID.load(Ordering::SeqCst) {
            return None;
        }
        let h = crate::procs::before_exec(site);
        crate::procs::write_record(rsd::process::End::Exec);
        return h;
    }
    if crate::procs::is_vfork_child() {
        return crate::procs::before_exec(site);
    }
    if crate::procs::exec_own_record() {
        // A later attempt of the same `exec` (a shell trying each directory of PATH).
        return crate::procs::before_exec(site);
    }
    // Only the process the constructor ran in writes its trace (a child that is no traced
    // process, forked before the tracer knew, writes nothing).
    if crate::state::traceable().is_none() || getpid() != PID.load(Ordering::SeqCst) {
        return None;
    }
    let h = crate::procs::before_exec(site);
    if !crate::procs::exec_own_record() {
        let _g = Enter::new(BUSY);
        if std::panic::catch_unwind(crate::finalize::before_exec).is_err() {
            crate::state::say("internal error writing the trace before exec");
        }
    }
    h
}

unsafe extern "C" {
    static environ: Argv;
}

/// `envp` with `entry` in place of any `IOTREX_PROCESS=` it holds, NULL-terminated.
///
/// # Safety
/// `envp` is NULL or a NULL-terminated vector of C strings.
pub(crate) unsafe fn with_entry(envp: Argv, entry: &CStr) -> Vec<*const c_char> {
    let key = rsd::process::PROCESS_VAR.as_bytes();
    let mut v = Vec::new();
    let mut p = envp;
    // SAFETY: the caller's vector, read up to its NULL.
    unsafe {
        while !p.is_null() && !(*p).is_null() {
            let s = CStr::from_ptr(*p).to_bytes();
            if !(s.starts_with(key) && s.get(key.len()) == Some(&b'=')) {
                v.push(*p);
            }
            p = p.add(1);
        }
    }
    v.push(entry.as_ptr());
    v.push(std::ptr::null());
    v
}

/// Calls `f` with the environment `envp`, or with it and `entry` when there is one.
///
/// # Safety
/// As [`with_entry`].
unsafe fn with_env(envp: Argv, entry: Option<&CStr>, f: impl FnOnce(Argv) -> c_int) -> c_int {
    match entry {
        None => f(envp),
        Some(e) => {
            // SAFETY: the caller's contract.
            let v = unsafe { with_entry(envp, e) };
            f(v.as_ptr())
        }
    }
}

// The exec calls: the trace is written, then the real call replaces the process, with the new
// image's place in the process tree in its environment. `execv` and `execvp` are the `execve`
// and `execvpe` of `environ`, so that the entry can be added without touching `environ`.
macro_rules! exec_hooks {
    ($($name:ident($first:ident: $fty:ty);)*) => {$(
        #[doc = concat!("Hook: `", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($first: $fty, argv: Argv, envp: Argv) -> c_int {
            let Some(f) = real!(stringify!($name), unsafe extern "C" fn($fty, Argv, Argv) -> c_int)
            else {
                return crate::posix::enosys();
            };
            let h = before_exec();
            // SAFETY: forwarding the caller's arguments, its environment with the entry added.
            unsafe { with_env(envp, h, |env| f($first, argv, env)) }
        }
    )*};
}
exec_hooks! {
    execve(path: *const c_char);
    execvpe(file: *const c_char);
    fexecve(fd: c_int);
}

/// Hook: `execv`, as `execve` of `environ`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execv(path: *const c_char, argv: Argv) -> c_int {
    // SAFETY: `environ` is the process's environment, read once here.
    unsafe { execve(path, argv, environ) }
}

/// Hook: `execvp`, as `execvpe` of `environ`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: Argv) -> c_int {
    // SAFETY: as in `execv`.
    unsafe { execvpe(file, argv, environ) }
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
    // The image the child execs joins the tree, as a child of this process.
    let parent = crate::state::traceable()
        .is_some()
        .then(|| (crate::callsite::signature(), crate::procs::before_vfork()))
        .and_then(|(site, p)| Some((site, p?)));
    // SAFETY: fork has no preconditions; both processes return from here normally.
    let pid = unsafe { f() };
    if pid == 0
        && let Some((site, parent)) = parent
    {
        crate::procs::mark_vfork_child(parent, site);
    }
    pid
}
