//! Spawn hooks: `posix_spawn`, `posix_spawnp`, `system` and `popen` start a program without
//! passing through the `fork` or `exec` hooks (glibc clones and execs inside, by internal
//! calls), so the program would start a trace of its own beside the job's. Here the image
//! they start is given its place in the process tree, as a child of the caller, through
//! [`rsd::process::PROCESS_VAR`] in its environment ([`crate::procs::before_spawn`]).
//! Nothing is recorded: a spawn is where a process starts, as a fork is.

#![allow(clippy::missing_safety_doc)]

use crate::exec::{Argv, with_entry};
use crate::procs::Spawn;
use crate::real::real;
use crate::signals::SigactionFn;
use libc::{FILE, c_char, c_int, pid_t, posix_spawn_file_actions_t, posix_spawnattr_t};
use std::sync::Mutex;

unsafe extern "C" {
    static mut environ: Argv;
}

/// The spawn's place in the tree, when the caller is traced.
fn before_spawn() -> Option<Spawn> {
    crate::state::traceable()?;
    let site = crate::callsite::signature();
    crate::posix::keeping_errno(|| crate::procs::before_spawn(site))
}

/// `posix_spawn`'s and `posix_spawnp`'s signature.
type SpawnFn = unsafe extern "C" fn(
    *mut pid_t,
    *const c_char,
    *const posix_spawn_file_actions_t,
    *const posix_spawnattr_t,
    Argv,
    Argv,
) -> c_int;

macro_rules! spawn_hooks {
    ($($name:ident($what:ident);)*) => {$(
        #[doc = concat!("Hook: `", stringify!($name), "`, its environment given the image's place.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            pid: *mut pid_t,
            $what: *const c_char,
            actions: *const posix_spawn_file_actions_t,
            attr: *const posix_spawnattr_t,
            argv: Argv,
            envp: Argv,
        ) -> c_int {
            let Some(f) = real!(stringify!($name), SpawnFn) else {
                return libc::ENOSYS;
            };
            let Some(s) = before_spawn() else {
                // SAFETY: forwarding the caller's arguments.
                return unsafe { f(pid, $what, actions, attr, argv, envp) };
            };
            // SAFETY: the caller's environment vector, with the entry added.
            let env = unsafe { with_entry(envp, &s.entry) };
            // SAFETY: forwarding the caller's arguments, its environment with the entry added.
            let r = unsafe { f(pid, $what, actions, attr, argv, env.as_ptr()) };
            if r != 0 {
                crate::procs::spawn_failed(s);
            }
            r
        }
    )*};
}
spawn_hooks! {
    posix_spawn(path);
    posix_spawnp(file);
}

/// `popen` spawns with the process's `environ`, which has no argument to give it another;
/// while it starts the shell, `environ` points at a copy with the entry. One at a time: a
/// second thread's swap must not restore the first's copy. A `setenv` by another thread in
/// that window is lost when the pointer is put back.
static ENVIRON_SWAP: Mutex<()> = Mutex::new(());

/// Calls `f` with `environ` holding `s`'s entry; `ok` says whether `f`'s result started one.
fn with_environ<R>(s: Spawn, f: impl FnOnce() -> R, ok: impl Fn(&R) -> bool) -> R {
    let _one = ENVIRON_SWAP.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: `environ` is the process's NULL-terminated environment; the copy outlives the
    // window in which it is `environ`, and the original pointer is put back after it.
    let r = unsafe {
        let old = environ;
        let env = with_entry(old, &s.entry);
        environ = env.as_ptr();
        let r = f();
        if environ == env.as_ptr() {
            environ = old;
        }
        r
    };
    if !ok(&r) {
        crate::procs::spawn_failed(s);
    }
    r
}

/// Hook: `system`. glibc's spawns `/bin/sh` with `environ` and waits for the command, so
/// swapping `environ` would hold every other thread's spawn for the command's whole run:
/// the shell is spawned here instead, as glibc does it ([`shell`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn system(command: *const c_char) -> c_int {
    let Some(f) = real!("system", unsafe extern "C" fn(*const c_char) -> c_int) else {
        crate::posix::set_errno(libc::ENOSYS);
        return -1;
    };
    // A NULL command only asks whether a shell exists.
    match (!command.is_null()).then(before_spawn).flatten() {
        Some(s) => shell(command, s),
        // SAFETY: forwarding the caller's argument.
        None => unsafe { f(command) },
    }
}

/// Hook: `popen`, the shell it starts given its place.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn popen(command: *const c_char, mode: *const c_char) -> *mut FILE {
    type F = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE;
    let Some(f) = real!("popen", F) else {
        crate::posix::set_errno(libc::ENOSYS);
        return std::ptr::null_mut();
    };
    let Some(s) = before_spawn() else {
        // SAFETY: forwarding the caller's arguments.
        return unsafe { f(command, mode) };
    };
    // SAFETY: forwarding the caller's arguments.
    with_environ(s, || unsafe { f(command, mode) }, |r| !r.is_null())
}

/// SIGINT's and SIGQUIT's dispositions while `system` commands run: how many run, and what
/// to put back when the last ends. Concurrent calls share them, as in glibc.
static IGNORED: Mutex<(u32, Option<[libc::sigaction; 2]>)> = Mutex::new((0, None));

/// glibc's `system` (`sysdeps/posix/system.c`), with the image's place in the environment:
/// SIGINT and SIGQUIT ignored and SIGCHLD blocked in the caller while the command runs,
/// `/bin/sh -c COMMAND` spawned with them back at their defaults, waited for; status 127 when
/// no shell could start. The real `sigaction` and `posix_spawn` are called, not the hooks.
fn shell(command: *const c_char, s: Spawn) -> c_int {
    let (Some(sa), Some(spawn)) = (
        real!("sigaction", SigactionFn),
        real!("posix_spawn", SpawnFn),
    ) else {
        crate::procs::spawn_failed(s);
        crate::posix::set_errno(libc::ENOSYS);
        return -1;
    };
    let before = ignore_interrupts(sa);
    // SAFETY: plain signal-set and spawn-attribute calls on local values; the argument and
    // environment vectors are NULL-terminated and outlive the spawn.
    unsafe {
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        let mut omask: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &chld, &mut omask);
        let mut reset: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut reset);
        for (sig, old) in [(libc::SIGINT, &before[0]), (libc::SIGQUIT, &before[1])] {
            if old.sa_sigaction != libc::SIG_IGN {
                libc::sigaddset(&mut reset, sig);
            }
        }
        let mut attr: posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawnattr_init(&mut attr);
        libc::posix_spawnattr_setsigmask(&mut attr, &omask);
        libc::posix_spawnattr_setsigdefault(&mut attr, &reset);
        libc::posix_spawnattr_setflags(
            &mut attr,
            (libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK) as libc::c_short,
        );
        let argv = [c"sh".as_ptr(), c"-c".as_ptr(), command, std::ptr::null()];
        let env = with_entry(environ, &s.entry);
        let mut pid: pid_t = 0;
        let ret = spawn(
            &mut pid,
            c"/bin/sh".as_ptr(),
            std::ptr::null(),
            &attr,
            argv.as_ptr(),
            env.as_ptr(),
        );
        libc::posix_spawnattr_destroy(&mut attr);
        let status = if ret == 0 {
            wait_for(pid)
        } else {
            crate::procs::spawn_failed(s);
            127 << 8
        };
        restore_interrupts(sa);
        libc::pthread_sigmask(libc::SIG_SETMASK, &omask, std::ptr::null_mut());
        if ret != 0 {
            crate::posix::set_errno(ret);
        }
        status
    }
}

/// The first of concurrent `system` calls sets SIGINT and SIGQUIT to be ignored; each gets
/// the dispositions as they were before the first.
fn ignore_interrupts(sa: SigactionFn) -> [libc::sigaction; 2] {
    let mut g = IGNORED.lock().unwrap_or_else(|e| e.into_inner());
    if g.0 == 0 {
        // SAFETY: an all-zero sigaction with an empty mask is valid; the real sigaction
        // writes the old dispositions into valid locations.
        let old = unsafe {
            let mut ign: libc::sigaction = std::mem::zeroed();
            ign.sa_sigaction = libc::SIG_IGN;
            libc::sigemptyset(&mut ign.sa_mask);
            let mut old: [libc::sigaction; 2] = std::mem::zeroed();
            sa(libc::SIGINT, &ign, &mut old[0]);
            sa(libc::SIGQUIT, &ign, &mut old[1]);
            old
        };
        g.1 = Some(old);
    }
    g.0 += 1;
    // SAFETY: an all-zero sigaction is valid (never reached: set above).
    g.1.unwrap_or_else(|| unsafe { std::mem::zeroed() })
}

/// The last of concurrent `system` calls puts SIGINT and SIGQUIT back.
fn restore_interrupts(sa: SigactionFn) {
    let mut g = IGNORED.lock().unwrap_or_else(|e| e.into_inner());
    g.0 = g.0.saturating_sub(1);
    if g.0 == 0
        && let Some(old) = g.1.take()
    {
        // SAFETY: putting back the dispositions the real sigaction returned.
        unsafe {
            sa(libc::SIGINT, &old[0], std::ptr::null_mut());
            sa(libc::SIGQUIT, &old[1], std::ptr::null_mut());
        }
    }
}

/// The shell's status, as `system` returns it: -1 when it cannot be waited for.
fn wait_for(pid: pid_t) -> c_int {
    let mut status: c_int = 0;
    loop {
        // SAFETY: waiting for our own child into a local.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return status;
        }
        if r == -1 && crate::posix::errno() == libc::EINTR {
            continue;
        }
        return -1;
    }
}
