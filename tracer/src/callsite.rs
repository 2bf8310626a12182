//! Call-site signatures: the return-address stack as (module, offset) pairs, hashed.
//!
//! Module-relative offsets are what make a signature equal across ranks and runs despite ASLR.
//! The stack comes from glibc's `backtrace()` (unwind tables, so no frame pointers needed);
//! frames inside this library are skipped. Address-to-module lookups (`dladdr`) are cached,
//! and neither the unwinder nor `dladdr` runs while the state lock is held.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

unsafe extern "C" {
    // glibc <execinfo.h>; the libc crate does not declare it.
    fn backtrace(buffer: *mut *mut libc::c_void, size: libc::c_int) -> libc::c_int;
}

/// Frames hashed (`IOTREX_STACK_DEPTH`), set once at start-up.
pub static DEPTH: AtomicUsize = AtomicUsize::new(4);
/// Base address of this library, to skip its own frames.
static SELF_BASE: AtomicUsize = AtomicUsize::new(0);
/// Return address -> (hash of the module's file name, offset in the module).
static CACHE: Mutex<Option<HashMap<usize, (u64, u64)>>> = Mutex::new(None);

const MAX_FRAMES: usize = 48;
/// Upper bound on this library's frames above the application's call (with inlining, usually
/// three or four).
const OWN_FRAMES: usize = 6;

fn fnv(h: u64, bytes: &[u8]) -> u64 {
    let mut h = h;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn module_of(addr: usize) -> Option<(usize, u64, u64)> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `info` is a valid out-parameter; dladdr accepts any address and returns 0 when
    // it is not inside a loaded object.
    if unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } == 0 {
        return None;
    }
    let base = info.dli_fbase as usize;
    let name = if info.dli_fname.is_null() {
        &b""[..]
    } else {
        // SAFETY: dladdr gave a NUL-terminated name owned by the loader, live while the
        // object is loaded, and we copy what we need from it now.
        unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes()
    };
    // The file name only: the same binary launched as `./app` or `/abs/app` is one module.
    let base_name = name.rsplit(|&c| c == b'/').next().unwrap_or(name);
    Some((
        base,
        fnv(0xcbf2_9ce4_8422_2325, base_name),
        (addr - base) as u64,
    ))
}

/// Records where this library is loaded and warms the unwinder (its first call loads
/// libgcc_s, which must not happen inside a hook).
pub fn init(depth: usize) {
    DEPTH.store(depth, Ordering::Relaxed);
    if let Some((base, _, _)) = module_of(init as *const () as usize) {
        SELF_BASE.store(base, Ordering::Relaxed);
    }
    let mut buf = [std::ptr::null_mut(); 4];
    // SAFETY: the buffer holds 4 entries and we pass 4.
    unsafe { backtrace(buf.as_mut_ptr(), 4) };
}

/// The signature of the current call stack, 0 when signatures are off.
pub fn signature() -> u64 {
    let depth = DEPTH.load(Ordering::Relaxed);
    if depth == 0 {
        return 0;
    }
    let mut buf = [std::ptr::null_mut(); MAX_FRAMES];
    // Unwinding costs a few hundred ns per frame, so only ask for this library's own frames
    // (at most OWN_FRAMES: signature, the hook helper, the hook) plus the frames hashed.
    let want = (depth + OWN_FRAMES).min(MAX_FRAMES);
    // SAFETY: the buffer holds MAX_FRAMES >= want entries.
    let n = unsafe { backtrace(buf.as_mut_ptr(), want as libc::c_int) }.max(0) as usize;
    let me = SELF_BASE.load(Ordering::Relaxed);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut taken = 0;
    let mut misses: Vec<usize> = Vec::new();
    let mut resolved: [(u64, u64); MAX_FRAMES] = [(0, 0); MAX_FRAMES];
    let mut own: [bool; MAX_FRAMES] = [false; MAX_FRAMES];
    {
        let g = CACHE.lock().unwrap_or_else(|p| p.into_inner());
        for i in 0..n {
            match g.as_ref().and_then(|m| m.get(&(buf[i] as usize))) {
                Some(&v) => resolved[i] = v,
                None => misses.push(i),
            }
        }
    }
    if !misses.is_empty() {
        let mut found = Vec::with_capacity(misses.len());
        for &i in &misses {
            let a = buf[i] as usize;
            let v = match module_of(a) {
                // Own frames are marked with a module hash of 0.
                Some((base, _, _)) if base == me => (0, 0),
                Some((_, m, off)) => (m, off),
                // Not in any object (JIT code): a fixed marker, as a raw address would
                // differ between runs.
                None => (1, 0),
            };
            resolved[i] = v;
            found.push((a, v));
        }
        let mut g = CACHE.lock().unwrap_or_else(|p| p.into_inner());
        let m = g.get_or_insert_with(HashMap::new);
        if m.len() < 1 << 16 {
            m.extend(found);
        }
    }
    for i in 0..n {
        own[i] = resolved[i].0 == 0;
    }
    for i in 0..n {
        if own[i] {
            continue;
        }
        let (m, off) = resolved[i];
        h = fnv(h, &m.to_le_bytes());
        h = fnv(h, &off.to_le_bytes());
        taken += 1;
        if taken == depth {
            break;
        }
    }
    h
}
