//! Terminating signals. A rank that mpirun kills (it sends SIGTERM to the other ranks when one
//! fails or aborts) or that a user interrupts (SIGINT, SIGHUP, SIGTERM) never runs its exit
//! handlers, so without these handlers it would leave nothing. The handler writes what the
//! process recorded (per rank, flagged incomplete, as at exit without `MPI_Finalize`), then
//! hands the signal to the application's own handler if it installed one, or else dies of it
//! with the default action so the exit status still says "killed by SIGTERM".
//!
//! The application (or the MPI runtime) may install its handlers after ours, so `sigaction`
//! and `signal` are hooked for these three signals: the new handler is kept as the one to
//! chain to, and ours stays installed; the old action they report is the application's own.
//! A signal the process ignores (`nohup`, or `SIG_IGN` set later) stays ignored: ours is then
//! removed, as the application asked.

#![allow(clippy::missing_safety_doc)]

use crate::guard::{BUSY, Enter};
use crate::real::real;
use libc::{c_int, c_void, sighandler_t, siginfo_t};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

const SIGNALS: [c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// Whether our handler is installed, per signal of [`SIGNALS`].
static OURS: [AtomicBool; 3] = [const { AtomicBool::new(false) }; 3];
/// The application's handler (`SIG_DFL`, or a function address) and its `sa_flags`.
static APP: [AtomicUsize; 3] = [const { AtomicUsize::new(libc::SIG_DFL) }; 3];
static APP_FLAGS: [AtomicI32; 3] = [const { AtomicI32::new(0) }; 3];
/// A signal that arrived while `at_exit` was writing, raised again once it is done.
static HELD: AtomicI32 = AtomicI32::new(0);
/// The terminating signal being handled, for a forked child's record (`crate::procs`).
pub static SIGNALLED: AtomicI32 = AtomicI32::new(0);

pub(crate) type SigactionFn =
    unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;
type SignalFn = unsafe extern "C" fn(c_int, sighandler_t) -> sighandler_t;

fn slot(sig: c_int) -> Option<usize> {
    SIGNALS.iter().position(|&s| s == sig)
}

fn name(sig: c_int) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Installs the handlers (from the constructor), except on signals the process ignores.
pub fn install() {
    let Some(real_sa) = real!("sigaction", SigactionFn) else {
        return;
    };
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // SAFETY: an all-zero sigaction is a valid "no handler, empty mask" value.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying the current action into a valid struct.
        if unsafe { real_sa(sig, std::ptr::null(), &mut old) } != 0 {
            continue;
        }
        if old.sa_sigaction == libc::SIG_IGN {
            continue;
        }
        APP[i].store(old.sa_sigaction, Ordering::SeqCst);
        APP_FLAGS[i].store(old.sa_flags, Ordering::SeqCst);
        // SAFETY: as above.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = handler as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: `act.sa_mask` is a valid sigset; the three signals are blocked while one is
        // handled so the handler never runs twice at once on one thread.
        unsafe {
            libc::sigemptyset(&mut act.sa_mask);
            for &s in &SIGNALS {
                libc::sigaddset(&mut act.sa_mask, s);
            }
        }
        // SAFETY: installing a valid action.
        if unsafe { real_sa(sig, &act, std::ptr::null_mut()) } == 0 {
            OURS[i].store(true, Ordering::SeqCst);
        }
    }
}

extern "C" fn handler(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
    let e = crate::posix::errno();
    let Some(i) = slot(sig) else { return };
    let app = APP[i].load(Ordering::SeqCst);
    let chained = app != libc::SIG_DFL && app != libc::SIG_IGN;
    if !chained && crate::finalize::EXITING.load(Ordering::SeqCst) {
        // `at_exit` is writing the trace on this or another thread: let it finish, it raises
        // the signal again when done.
        HELD.store(sig, Ordering::SeqCst);
        crate::posix::set_errno(e);
        return;
    }
    {
        let _g = Enter::new(BUSY);
        SIGNALLED.store(sig, Ordering::SeqCst);
        let why = format!("killed by signal {sig} ({})", name(sig));
        let r = std::panic::catch_unwind(|| crate::finalize::on_signal(&why, !chained));
        if r.is_err() {
            crate::state::say("internal error writing the trace in a signal handler");
        }
    }
    crate::posix::set_errno(e);
    if chained {
        if APP_FLAGS[i].load(Ordering::SeqCst) & libc::SA_SIGINFO != 0 {
            // SAFETY: the application installed this address as an SA_SIGINFO handler.
            let f: extern "C" fn(c_int, *mut siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(app) };
            f(sig, info, ctx);
        } else {
            // SAFETY: the application installed this address as a plain handler.
            let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(app) };
            f(sig);
        }
        return;
    }
    die(sig);
}

/// Dies of `sig` with its default action, so the exit status is what it would have been.
fn die(sig: c_int) {
    let Some(real_sa) = real!("sigaction", SigactionFn) else {
        return;
    };
    // SAFETY: an all-zero sigaction with SIG_DFL (0) restores the default action; the signal
    // is then raised and unblocked (it is blocked while its handler runs), which delivers it.
    unsafe {
        let act: libc::sigaction = std::mem::zeroed();
        real_sa(sig, &act, std::ptr::null_mut());
        libc::raise(sig);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

/// Blocks the terminating signals in the calling thread (the MPI runtime's threads), so they
/// are delivered to another thread.
pub fn block_in_this_thread() {
    // SAFETY: building a valid sigset and changing this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in &SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// After `at_exit` wrote the trace: dies of a signal that arrived meanwhile.
pub fn raise_held() {
    let sig = HELD.swap(0, Ordering::SeqCst);
    if sig != 0 {
        die(sig);
    }
}

/// Hook: `sigaction`. For SIGTERM, SIGINT and SIGHUP while our handler is installed, the
/// application's new handler is stored for chaining instead of replacing ours.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    let Some(real_sa) = real!("sigaction", SigactionFn) else {
        crate::posix::set_errno(libc::ENOSYS);
        return -1;
    };
    let Some(i) = slot(sig).filter(|&i| OURS[i].load(Ordering::SeqCst)) else {
        // SAFETY: forwarding the caller's arguments.
        return unsafe { real_sa(sig, act, old) };
    };
    // SAFETY: `act` is null or a valid sigaction (the caller's contract).
    let new = unsafe { act.as_ref() };
    if new.is_some_and(|a| a.sa_sigaction == libc::SIG_IGN) {
        // Ignoring is the application's decision: ours goes, and the old action it sees is
        // its own.
        // SAFETY: forwarding the caller's new action.
        let r = unsafe { real_sa(sig, act, std::ptr::null_mut()) };
        if r == 0 {
            OURS[i].store(false, Ordering::SeqCst);
            fill_old(i, old);
            APP[i].store(libc::SIG_IGN, Ordering::SeqCst);
        }
        return r;
    }
    fill_old(i, old);
    if let Some(a) = new {
        APP[i].store(a.sa_sigaction, Ordering::SeqCst);
        APP_FLAGS[i].store(a.sa_flags, Ordering::SeqCst);
    }
    0
}

/// Reports the application's own action for slot `i` as the old one.
fn fill_old(i: usize, old: *mut libc::sigaction) {
    // SAFETY: `old` is null or a writable sigaction (the caller's contract).
    if let Some(o) = unsafe { old.as_mut() } {
        // SAFETY: an all-zero sigaction is valid; the mask is emptied explicitly.
        *o = unsafe { std::mem::zeroed() };
        o.sa_sigaction = APP[i].load(Ordering::SeqCst);
        o.sa_flags = APP_FLAGS[i].load(Ordering::SeqCst);
        // SAFETY: `o.sa_mask` is a valid sigset.
        unsafe { libc::sigemptyset(&mut o.sa_mask) };
    }
}

/// Hook: `signal`, as `sigaction` (glibc's `signal` does not call the `sigaction` symbol).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn signal(sig: c_int, h: sighandler_t) -> sighandler_t {
    let Some(real_signal) = real!("signal", SignalFn) else {
        crate::posix::set_errno(libc::ENOSYS);
        return libc::SIG_ERR;
    };
    let Some(i) = slot(sig).filter(|&i| OURS[i].load(Ordering::SeqCst)) else {
        // SAFETY: forwarding the caller's arguments.
        return unsafe { real_signal(sig, h) };
    };
    let prev = APP[i].load(Ordering::SeqCst);
    if h == libc::SIG_IGN {
        // SAFETY: forwarding the caller's arguments.
        let r = unsafe { real_signal(sig, h) };
        if r != libc::SIG_ERR {
            OURS[i].store(false, Ordering::SeqCst);
            APP[i].store(libc::SIG_IGN, Ordering::SeqCst);
            return prev;
        }
        return r;
    }
    if h == libc::SIG_ERR {
        crate::posix::set_errno(libc::EINVAL);
        return libc::SIG_ERR;
    }
    APP[i].store(h, Ordering::SeqCst);
    // glibc's signal() has BSD semantics: a plain handler, SA_RESTART.
    APP_FLAGS[i].store(libc::SA_RESTART, Ordering::SeqCst);
    prev
}
