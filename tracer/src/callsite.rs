//! Call-site signatures: the return-address stack as (module, offset) pairs, hashed.
//!
//! Module-relative offsets are what make a signature equal across ranks and runs despite ASLR.
//! The stack comes from libunwind's `unw_backtrace` when libunwind.so.8 is installed, else
//! from glibc's `backtrace()` (both use unwind tables, so no frame pointers are needed);
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
/// libunwind's `unw_backtrace`, when libunwind is installed: about 70 ns for four frames where
/// glibc's `backtrace()` takes 1-2 us (it re-initialises the unwind context on every call).
static FAST_BT: AtomicUsize = AtomicUsize::new(0);
/// Base address of this library, to skip its own frames.
static SELF_BASE: AtomicUsize = AtomicUsize::new(0);
/// Return address -> (hash of the module's file name, offset in the module).
static CACHE: Mutex<Option<AddrMap>> = Mutex::new(None);

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
    Some((base, fnv(SEED, base_name), (addr - base) as u64))
}

/// Records where this library is loaded and warms the unwinder (its first call loads
/// libgcc_s, which must not happen inside a hook).
pub fn init(depth: usize) {
    DEPTH.store(depth, Ordering::Relaxed);
    if depth > 0 && std::env::var("IOTREX_UNWINDER").map_or(true, |v| v != "glibc") {
        // SAFETY: dlopen with a NUL-terminated name; RTLD_LOCAL keeps libunwind's own
        // `backtrace`/`_Unwind_Backtrace` symbols from interposing anything.
        let h = unsafe {
            libc::dlopen(
                c"libunwind.so.8".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_LOCAL,
            )
        };
        if !h.is_null() {
            // SAFETY: `h` is a live handle and the name is NUL-terminated.
            let f = unsafe { libc::dlsym(h, c"unw_backtrace".as_ptr()) };
            FAST_BT.store(f as usize, Ordering::Relaxed);
        }
    }
    if let Some((base, _, _)) = module_of(init as *const () as usize) {
        SELF_BASE.store(base, Ordering::Relaxed);
    }
    let mut buf = [std::ptr::null_mut(); 4];
    // SAFETY: the buffer holds 4 entries and we pass 4.
    unsafe { stack(buf.as_mut_ptr(), 4) };
}

type BacktraceFn = unsafe extern "C" fn(*mut *mut libc::c_void, libc::c_int) -> libc::c_int;

/// Fills `buf` with up to `n` return addresses, the caller's first.
///
/// # Safety
/// `buf` must hold at least `n` entries.
unsafe fn stack(buf: *mut *mut libc::c_void, n: libc::c_int) -> libc::c_int {
    let f = FAST_BT.load(Ordering::Relaxed);
    if f != 0 {
        // SAFETY: `f` is libunwind's unw_backtrace, whose prototype is BacktraceFn; the
        // caller guarantees the buffer size.
        unsafe { std::mem::transmute::<usize, BacktraceFn>(f)(buf, n) }
    } else {
        // SAFETY: the caller guarantees the buffer size.
        unsafe { backtrace(buf, n) }
    }
}

/// The signature of the current call stack, 0 when signatures are off.
pub fn signature() -> u64 {
    let depth = DEPTH.load(Ordering::Relaxed);
    if depth == 0 {
        return 0;
    }
    let mut buf = [std::ptr::null_mut(); MAX_FRAMES];
    // Unwinding costs per frame, so only ask for this library's own frames (at most
    // OWN_FRAMES: signature, the hook helper, the hook) plus the frames hashed.
    let want = (depth + OWN_FRAMES).min(MAX_FRAMES);
    // SAFETY: the buffer holds MAX_FRAMES >= want entries.
    let n = unsafe { stack(buf.as_mut_ptr(), want as libc::c_int) }.max(0) as usize;
    let addrs = &buf[..n];
    let me = SELF_BASE.load(Ordering::Relaxed);
    // Fast path: every needed frame is in the cache.
    let mut misses: Vec<usize> = Vec::new();
    if let Some(h) = hash_cached(addrs, depth, &mut misses) {
        return h;
    }
    // Slow path: resolve the missing frames without holding the cache lock (dladdr takes the
    // loader's lock), then hash again.
    let found: Vec<(usize, (u64, u64))> = misses
        .iter()
        .map(|&a| {
            let v = match module_of(a) {
                // Own frames are marked with a module hash of 0.
                Some((base, _, _)) if base == me => (0, 0),
                Some((_, m, off)) => (m, off),
                // Not in any object (JIT code): a fixed marker, as a raw address would
                // differ between runs.
                None => (1, 0),
            };
            (a, v)
        })
        .collect();
    {
        let mut g = CACHE.lock().unwrap_or_else(|p| p.into_inner());
        let m = g.get_or_insert_with(HashMap::default);
        if m.len() < 1 << 16 {
            m.extend(found.iter().copied());
        }
    }
    misses.clear();
    hash_cached(addrs, depth, &mut misses).unwrap_or_else(|| {
        // The cache is full: hash with what was just resolved.
        let mut h = SEED;
        let mut taken = 0;
        for a in addrs {
            let v = found
                .iter()
                .find(|x| x.0 == *a as usize)
                .map_or((1, 0), |x| x.1);
            if v.0 == 0 {
                continue;
            }
            h = fnv(h, &v.0.to_le_bytes());
            h = fnv(h, &v.1.to_le_bytes());
            taken += 1;
            if taken == depth {
                break;
            }
        }
        h
    })
}

const SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// Hashes the first `depth` frames outside this library, or lists the frames missing from the
/// cache and returns `None`.
fn hash_cached(addrs: &[*mut libc::c_void], depth: usize, misses: &mut Vec<usize>) -> Option<u64> {
    let g = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let m = g.as_ref();
    let mut h = SEED;
    let mut taken = 0;
    for &a in addrs {
        match m.and_then(|m| m.get(&(a as usize))) {
            Some(&(0, _)) => {}
            Some(&(module, off)) => {
                if misses.is_empty() {
                    h = fnv(h, &module.to_le_bytes());
                    h = fnv(h, &off.to_le_bytes());
                }
                taken += 1;
                if taken == depth {
                    break;
                }
            }
            None => misses.push(a as usize),
        }
    }
    misses.is_empty().then_some(h)
}

/// A multiplicative hasher for address keys: SipHash would cost more than the unwinding.
#[derive(Default, Clone, Copy)]
pub struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_usize(&mut self, i: usize) {
        self.0 = (self.0 ^ i as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
}

type AddrMap = HashMap<usize, (u64, u64), std::hash::BuildHasherDefault<AddrHasher>>;
