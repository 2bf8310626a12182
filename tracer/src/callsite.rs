//! Call-site signatures: the return-address stack as (module, function, offset) triples,
//! hashed.
//!
//! Module-relative offsets are what make a signature equal across ranks and runs despite ASLR;
//! naming the function (from the module's symbol table, [`crate::elf`]) and counting the offset
//! from its start is what keeps it equal across a rebuild that changes other code (a string,
//! another function, the link order). A frame in a module without symbols for it keeps its
//! module offset. Debug information (file:line) is not read.
//! The stack comes from libunwind's `unw_backtrace` when libunwind.so.8 is installed, else
//! from glibc's `backtrace()` (both use unwind tables, so no frame pointers are needed);
//! frames inside this library are skipped. Address-to-module lookups (a map of the loaded
//! objects, [`crate::modules`]) are cached, and neither the unwinder nor the lookups run while
//! the state lock is held.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

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
const OWN_FRAMES: usize = 7;

fn fnv(h: u64, bytes: &[u8]) -> u64 {
    let mut h = h;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Function symbols of the modules seen so far, by load base (`None`: no symbol table).
static SYMS: Mutex<Vec<(usize, Option<std::sync::Arc<crate::elf::Syms>>)>> = Mutex::new(Vec::new());

fn syms_of(base: usize, path: &[u8]) -> Option<std::sync::Arc<crate::elf::Syms>> {
    if let Some((_, s)) = SYMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(b, _)| *b == base)
    {
        return s.clone();
    }
    // The main program is named by its argv[0], which may be relative to another directory
    // or found through PATH: the kernel's link is the file.
    let path = match std::str::from_utf8(path) {
        Ok(p) if p.starts_with('/') => p.to_string(),
        _ => "/proc/self/exe".to_string(),
    };
    // Read outside the lock (file I/O).
    let s = crate::elf::symbols(&path, |b| fnv(SEED, b)).map(std::sync::Arc::new);
    let mut g = SYMS.lock().unwrap_or_else(|p| p.into_inner());
    if !g.iter().any(|(b, _)| *b == base) {
        g.push((base, s.clone()));
    }
    s
}

/// The module holding `addr`: its base, the hash of its file name, and where in it `addr`
/// lies. With `symbolize`, where is the function's name and the offset from its start,
/// hashed, when the module has a symbol for it (a rebuild that changes other functions, data
/// or the link order leaves it alone); otherwise the offset from the module's base.
fn module_of(addr: usize, symbolize: bool) -> Option<(usize, u64, u64)> {
    let m = crate::modules::module_at(addr)?;
    let (base, name) = (m.base, &m.name[..]);
    // The file name only: the same binary launched as `./app` or `/abs/app` is one module.
    let base_name = name.rsplit(|&c| c == b'/').next().unwrap_or(name);
    let offset = (addr - base) as u64;
    // This library's own frames are skipped by every signature: reading its symbol table
    // (800 KB, 10,000 names hashed) for them cost each process ~7 M instructions and 200 page
    // faults at its first call site (docs/tracer-cost.md, "the loop-heavy run").
    let own = base == SELF_BASE.load(Ordering::Relaxed);
    let at = (symbolize && !own)
        .then(|| syms_of(base, name))
        .flatten()
        .and_then(|s| s.lookup(if s.fixed_address { addr as u64 } else { offset }))
        // Marked so that "function hash + offset" never equals a plain module offset.
        .map_or(offset, |(func, off)| {
            fnv(fnv(SEED ^ 1, &func.to_le_bytes()), &off.to_le_bytes())
        });
    Some((base, fnv(SEED, base_name), at))
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
            slots::init(h);
        }
    }
    if let Some((base, _, _)) = module_of(init as *const () as usize, false) {
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

/// Frames asked of the unwinder first, on top of the hashed ones: `miss`, `signature_in` and
/// the hook itself are this library's frames above the application's call, and one more
/// covers a hook helper that was not inlined. Only when fewer than `depth` of them lie outside
/// this library (a deeper chain of own frames) is the stack unwound again with
/// [`OWN_FRAMES`] spare.
const OWN_FAST: usize = 4;
/// Stacks of at most this many frames are kept in the per-thread cache.
const TL_FRAMES: usize = 10;
/// Entries of the per-thread cache (direct-mapped): more than the call sites of a hot loop.
const TL_SLOTS: usize = 32;

/// One per-thread cache entry: the raw return addresses of a stack and its signature.
#[derive(Clone, Copy)]
struct TlEntry {
    n: usize,
    addrs: [usize; TL_FRAMES],
    sig: u64,
}

const TL_EMPTY: TlEntry = TlEntry {
    n: usize::MAX,
    addrs: [0; TL_FRAMES],
    sig: 0,
};

thread_local! {
    /// Raw return-address stack -> signature. Within one process an address always lies in the
    /// same module at the same offset, so the signature is a function of the raw addresses and
    /// a steady call site costs one unwind and one compare, without the shared cache's lock
    /// and one hash lookup per frame. `const` and without destructor: static TLS, usable in
    /// any hook.
    static TL_CACHE: std::cell::RefCell<[TlEntry; TL_SLOTS]> =
        const { std::cell::RefCell::new([TL_EMPTY; TL_SLOTS]) };
}

fn tl_slot(addrs: &[usize]) -> usize {
    let mut h = addrs.len() as u64;
    for &a in addrs {
        h = (h ^ a as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(31);
    }
    (h >> 32) as usize % TL_SLOTS
}

/// This thread's cache of call stacks recognised by their stack slots ([`slots`]), kept in
/// the thread's one block of tracer state ([`crate::guard::Thread`]).
pub struct Sites {
    sets: [slots::Set; slots::SETS],
}

impl Sites {
    /// No stack seen yet.
    pub const EMPTY: Sites = Sites {
        sets: [slots::EMPTY_SET; slots::SETS],
    };
}

/// The signature of the current call stack, 0 when signatures are off.
pub fn signature() -> u64 {
    crate::guard::with_thread(signature_in)
}

/// [`signature`] with this thread's block in hand (the hot path: a hook that already holds it
/// makes no second thread-local access). Only the check of a stack seen before is here; its
/// frame is small, so entering and leaving it costs few instructions. Not inlined: the stack
/// pointer it reads must be that of one function whose frame layout is fixed ([`slots`]).
#[inline(never)]
pub fn signature_in(t: &crate::guard::Thread) -> u64 {
    let depth = DEPTH.load(Ordering::Relaxed);
    if depth == 0 {
        return 0;
    }
    // Cheapest first: a stack seen before, recognised by reading its return-address slots.
    let sp = slots::stack_pointer();
    // SAFETY: the block's call-site cache is used only here and in `miss`, on this thread, in
    // mode BUSY: nothing re-enters them (`crate::guard::Thread::sites`).
    let sites = unsafe { &mut *t.sites.get() };
    if let Some(sig) = slots::lookup(sites, sp) {
        return sig;
    }
    miss(sites, sp, depth)
}

/// How many stacks this process unwound to identify a call site (the cache missed): what
/// `IOTREX_VERBOSE=1` reports, so that a cache that stops recognising stacks shows.
static UNWOUND: AtomicU64 = AtomicU64::new(0);

/// How many stacks this process unwound to identify call sites.
pub fn unwound() -> u64 {
    UNWOUND.load(Ordering::Relaxed)
}

/// The stack was not recognised: unwind it (and remember its slots, or its return addresses).
/// Its time is the tracer's own, left out of the gap before a top-level call ([`crate::own`]).
#[cold]
#[inline(never)]
fn miss(sites: &mut Sites, sp: usize, depth: usize) -> u64 {
    UNWOUND.fetch_add(1, Ordering::Relaxed);
    let t = crate::state::now_ns();
    let sig = unwind_site(sites, sp, depth);
    crate::own::charge_site_since(t);
    sig
}

/// The signature of a stack not seen before, from the cheapest unwind that decides it.
fn unwind_site(sites: &mut Sites, sp: usize, depth: usize) -> u64 {
    let want = depth + OWN_FAST;
    if want > TL_FRAMES {
        return signature_slow(depth);
    }
    if let Some(sig) = slots::unwind_and_remember(sites, sp, depth, want) {
        return sig;
    }
    // Unwinding costs per frame (about 75 instructions each), so ask for the hashed frames and
    // this library's usual frames above them only. The buffer is small: zeroing a full one
    // would cost as much as the cache lookup.
    let mut buf = [0usize; TL_FRAMES];
    // SAFETY: the buffer holds TL_FRAMES >= want pointer-sized entries (usize and pointers
    // have the same layout).
    let n =
        unsafe { stack(buf.as_mut_ptr().cast(), want as libc::c_int) }.clamp(0, want as _) as usize;
    let addrs = &buf[..n];
    let slot = tl_slot(addrs);
    if let Some(sig) = TL_CACHE.with(|c| {
        let c = c.try_borrow().ok()?;
        let e = &c[slot];
        (e.n == n && e.addrs[..n] == *addrs).then_some(e.sig)
    }) {
        return sig;
    }
    // The short stack decides the signature when it holds `depth` frames outside this library,
    // or is the whole stack (the unwinder gave fewer than asked): hashing the first `depth`
    // outside frames of a longer unwind would give the same value.
    let (sig, outside) = signature_of(addrs, depth);
    if outside >= depth || n < want {
        TL_CACHE.with(|c| {
            if let Ok(mut c) = c.try_borrow_mut() {
                let e = &mut c[slot];
                e.n = n;
                e.addrs[..n].copy_from_slice(addrs);
                e.sig = sig;
            }
        });
        return sig;
    }
    signature_slow(depth)
}

/// The signature from a full unwind, with room for all of this library's frames.
#[cold]
fn signature_slow(depth: usize) -> u64 {
    // More of this library's frames than usual sit above the application (a hook called
    // through helpers), or more frames are hashed than the per-thread cache holds.
    let want = (depth + OWN_FRAMES).min(MAX_FRAMES);
    let mut buf = [0usize; MAX_FRAMES];
    // SAFETY: the buffer holds MAX_FRAMES >= want pointer-sized entries.
    let n =
        unsafe { stack(buf.as_mut_ptr().cast(), want as libc::c_int) }.clamp(0, want as _) as usize;
    signature_of(&buf[..n], depth).0
}

/// Hashes the first `depth` frames of `addrs` outside this library, through the shared
/// address cache; also returns how many outside frames were hashed.
fn signature_of(addrs: &[usize], depth: usize) -> (u64, usize) {
    let me = SELF_BASE.load(Ordering::Relaxed);
    // Fast path: every needed frame is in the cache.
    let mut misses: Vec<usize> = Vec::new();
    if let Some(h) = hash_cached(addrs, depth, &mut misses) {
        return h;
    }
    // Slow path: resolve the missing frames without holding the cache lock (the module map
    // takes the loader's lock), then hash again.
    let found: Vec<(usize, (u64, u64))> = misses
        .iter()
        .map(|&a| {
            let v = match module_of(a, true) {
                // Own frames are marked with a module hash of 0.
                Some((base, _, _)) if base == me => (0, 0),
                Some((_, m, at)) => (m, at),
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
            let v = found.iter().find(|x| x.0 == *a).map_or((1, 0), |x| x.1);
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
        (h, taken)
    })
}

const SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// Hashes the first `depth` frames outside this library (and counts them), or lists the frames
/// missing from the cache and returns `None`.
fn hash_cached(addrs: &[usize], depth: usize, misses: &mut Vec<usize>) -> Option<(u64, usize)> {
    let g = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let m = g.as_ref();
    let mut h = SEED;
    let mut taken = 0;
    for &a in addrs {
        match m.and_then(|m| m.get(&a)) {
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
            None => misses.push(a),
        }
    }
    misses.is_empty().then_some((h, taken))
}

/// How many of `addrs` (a stack whose frames [`signature_of`] resolved) reach the `depth`-th
/// frame outside this library: the frames a cached stack must still hold for its signature
/// to be the same. All of them when some frame is not in the address cache.
fn frames_deciding(addrs: &[usize], depth: usize) -> usize {
    let g = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(m) = g.as_ref() else {
        return addrs.len();
    };
    let mut taken = 0;
    for (i, a) in addrs.iter().enumerate() {
        match m.get(a) {
            Some(&(0, _)) => {}
            Some(_) => {
                taken += 1;
                if taken == depth {
                    return i + 1;
                }
            }
            None => return addrs.len(),
        }
    }
    addrs.len()
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

/// Stacks recognised without unwinding (x86-64 with libunwind).
///
/// A loop calls the same hook from the same call chain again and again, with the same stack
/// pointer. When a stack is first unwound (with libunwind's stepping API, which also gives
/// each frame's stack pointer), the address of every return-address slot is remembered with
/// the address found there; next time the stack pointer is the same, reading those slots and
/// finding the same return addresses proves the chain is the same (each return address fixes
/// its caller's frame layout, hence where the next slot lies), so the signature is reused
/// without unwinding. Libunwind's backtrace was half of a traced call's cost at depth 4.
mod slots {
    use super::{Sites, TL_FRAMES};
    use std::sync::atomic::{AtomicUsize, Ordering};

    static GETCONTEXT: AtomicUsize = AtomicUsize::new(0);
    static INIT_LOCAL: AtomicUsize = AtomicUsize::new(0);
    static STEP: AtomicUsize = AtomicUsize::new(0);
    static GET_REG: AtomicUsize = AtomicUsize::new(0);

    /// libunwind's register numbers on x86-64.
    const UNW_X86_64_RSP: libc::c_int = 7;
    const UNW_X86_64_RIP: libc::c_int = 16;
    /// Sets of the per-thread cache (indexed by stack pointer), of [`WAYS`] entries each.
    pub(super) const SETS: usize = 16;
    /// Entries per set: the calls one function makes from one loop (a write of a header,
    /// then of the data) share a stack pointer, and each needs an entry of its own.
    const WAYS: usize = 4;
    /// Slots every lookup reads (a call at depth 4 from `main`'s loop has 5 to check).
    const FIXED: usize = 6;
    const _: () = assert!(FIXED <= TL_FRAMES);
    /// What unused slots of an entry read: this, holding 0.
    static PAD: usize = 0;

    #[derive(Clone, Copy)]
    pub(super) struct Entry {
        sp: usize,
        n: usize,
        /// (slot address, return address found there), the caller's first.
        slots: [(usize, usize); TL_FRAMES],
        sig: u64,
    }

    const EMPTY: Entry = Entry {
        sp: 0,
        n: 0,
        slots: [(0, 0); TL_FRAMES],
        sig: 0,
    };

    /// Entries whose stack pointers share an index, and the way the next new chain replaces.
    /// Several ways: a call nested in another (the aggregator's `pwrite` inside
    /// `MPI_File_write_at_all`) alternates with it at every call, and wherever address-space
    /// randomisation put the stack, the two can share an index; direct-mapped, each then
    /// evicted the other and every call unwound (about 17,000 instructions). Calls made from
    /// one function share its stack pointer itself: with one entry per stack pointer, two
    /// `pwrite`s in one loop evicted each other and both unwound at every call (12 us each).
    #[derive(Clone, Copy)]
    pub(super) struct Set {
        ways: [Entry; WAYS],
        next: usize,
    }

    pub(super) const EMPTY_SET: Set = Set {
        ways: [EMPTY; WAYS],
        next: 0,
    };

    /// Resolves libunwind's stepping API from its handle (only where the slot layout is known).
    pub fn init(h: *mut libc::c_void) {
        if !cfg!(target_arch = "x86_64") || std::env::var_os("IOTREX_NO_SLOT_CACHE").is_some() {
            return;
        }
        let sym = |n: &std::ffi::CStr| {
            // SAFETY: `h` is a live dlopen handle and the name is NUL-terminated.
            unsafe { libc::dlsym(h, n.as_ptr()) as usize }
        };
        let f = [
            sym(c"_Ux86_64_getcontext"),
            sym(c"_ULx86_64_init_local"),
            sym(c"_ULx86_64_step"),
            sym(c"_ULx86_64_get_reg"),
        ];
        if f.iter().all(|&a| a != 0) {
            GETCONTEXT.store(f[0], Ordering::Relaxed);
            INIT_LOCAL.store(f[1], Ordering::Relaxed);
            STEP.store(f[2], Ordering::Relaxed);
            GET_REG.store(f[3], Ordering::Relaxed);
        }
    }

    /// The stack pointer of the calling function (which must not be inlined into callers
    /// whose frames vary), 0 where unsupported.
    #[inline(always)]
    pub fn stack_pointer() -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            let sp: usize;
            // SAFETY: reads a register, touches no memory.
            unsafe { std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack)) };
            sp
        }
        #[cfg(not(target_arch = "x86_64"))]
        0
    }

    /// Stack pointers of calls in one loop nest differ by multiples of 16 (the ABI's
    /// alignment): indexed by those bits, nearby ones never collide. The bits above them are
    /// folded in, so that two stack pointers a multiple of 512 bytes apart (a call nested some
    /// frames deeper in another) rarely share a set.
    #[inline(always)]
    fn index(sp: usize) -> usize {
        ((sp >> 4) ^ (sp >> 9)) % SETS
    }

    /// The signature of a stack seen before at this stack pointer, if its slots still hold the
    /// same return addresses.
    #[inline(always)]
    pub(super) fn lookup(sites: &Sites, sp: usize) -> Option<u64> {
        // An empty entry has sp 0, which no stack pointer is (0 is returned where unsupported).
        if sp == 0 {
            return None;
        }
        let set = &sites.sets[index(sp)];
        set.ways
            .iter()
            .find(|e| e.sp == sp && holds(e))
            .map(|e| e.sig)
    }

    /// Whether the stack's slots hold the entry's return addresses.
    #[inline(always)]
    fn holds(e: &Entry) -> bool {
        // The first FIXED slots without a branch each (unused ones read `PAD`), the rest of a
        // deeper stack in a loop.
        let mut diff = 0;
        for &(slot, ra) in &e.slots[..FIXED] {
            // SAFETY: `slot` lies between this thread's stack pointer and the base of its
            // stack (it held a return address of a caller of this very frame position
            // when recorded, with the same stack pointer), so it is mapped and ours; or it is
            // `PAD`. Every slot is such an address whether or not the ones before it match.
            diff |= unsafe { std::ptr::read_volatile(slot as *const usize) } ^ ra;
        }
        if e.n > FIXED {
            for &(slot, ra) in &e.slots[FIXED..e.n] {
                // SAFETY: as above.
                diff |= unsafe { std::ptr::read_volatile(slot as *const usize) } ^ ra;
            }
        }
        diff == 0
    }

    type GetContextFn = unsafe extern "C" fn(*mut u64) -> libc::c_int;
    type InitLocalFn = unsafe extern "C" fn(*mut u64, *mut u64) -> libc::c_int;
    type StepFn = unsafe extern "C" fn(*mut u64) -> libc::c_int;
    type GetRegFn = unsafe extern "C" fn(*mut u64, libc::c_int, *mut usize) -> libc::c_int;

    /// Unwinds with libunwind's stepping API, computes the signature from the same return
    /// addresses `unw_backtrace` gives, and remembers the slots. `None`: not available, or the
    /// stack did not decide the signature (the caller falls back to the usual path).
    #[inline(never)]
    pub(super) fn unwind_and_remember(
        sites: &mut Sites,
        sp: usize,
        depth: usize,
        want: usize,
    ) -> Option<u64> {
        let gc = GETCONTEXT.load(Ordering::Relaxed);
        if sp == 0 || gc == 0 {
            return None;
        }
        // SAFETY: the four pointers were resolved from libunwind.so.8 with these prototypes.
        let (gc, il, st, gr) = unsafe {
            (
                std::mem::transmute::<usize, GetContextFn>(gc),
                std::mem::transmute::<usize, InitLocalFn>(INIT_LOCAL.load(Ordering::Relaxed)),
                std::mem::transmute::<usize, StepFn>(STEP.load(Ordering::Relaxed)),
                std::mem::transmute::<usize, GetRegFn>(GET_REG.load(Ordering::Relaxed)),
            )
        };
        // unw_context_t is a ucontext_t (968 bytes), unw_cursor_t 127 words: room for both.
        let mut ctx = [0u64; 160];
        let mut cur = [0u64; 160];
        let mut ips = [0usize; TL_FRAMES];
        // Per slot: (its address, the return address there), and which of `ips` it holds.
        let mut slots = [(0usize, 0usize); TL_FRAMES];
        let mut slot_of = [0usize; TL_FRAMES];
        let (mut n, mut ns, mut ended) = (0, 0, false);
        // SAFETY: the buffers are larger than libunwind's context and cursor; the cursor is
        // stepped only within this function, whose frame stays live.
        unsafe {
            if gc(ctx.as_mut_ptr()) != 0 || il(cur.as_mut_ptr(), ctx.as_mut_ptr()) != 0 {
                return None;
            }
            // Frame 0 is this function; the signature covers its callers, as unw_backtrace
            // called from `miss` would report them (this library's frames are skipped
            // when hashing, so one more of them changes nothing).
            while n < want + 1 && n < TL_FRAMES {
                match st(cur.as_mut_ptr()) {
                    0 => {
                        ended = true;
                        break;
                    }
                    r if r < 0 => return None,
                    _ => {}
                }
                let (mut ip, mut fsp) = (0usize, 0usize);
                if gr(cur.as_mut_ptr(), UNW_X86_64_RIP, &mut ip) != 0
                    || gr(cur.as_mut_ptr(), UNW_X86_64_RSP, &mut fsp) != 0
                {
                    return None;
                }
                // The call that made this frame's callee pushed the return address just below
                // this frame's stack pointer. Anything else (a signal frame) is not cached.
                let slot = fsp.checked_sub(8)?;
                if std::ptr::read_volatile(slot as *const usize) != ip {
                    return None;
                }
                ips[n] = ip;
                n += 1;
                // The first frames are `miss` and `signature_in` (whose return slots, into them
                // from the function below, lie under `signature_in`'s stack pointer and are
                // reused by every call they make): this library's frames on the miss path,
                // skipped by the hash, so they are not checked. The chain that is checked
                // starts at `signature_in`'s own return slot, at or above its stack pointer,
                // whose place the stack pointer and that function's fixed frame decide.
                if slot >= sp {
                    slots[ns] = (slot, ip);
                    slot_of[ns] = n - 1;
                    ns += 1;
                } else if ns > 0 {
                    return None;
                }
            }
        }
        let (sig, outside) = super::signature_of(&ips[..n], depth);
        if (outside < depth && !ended) || ns == 0 {
            return None;
        }
        // Only the frames that decided the signature need checking next time: up to the
        // `depth`-th frame outside this library (and every frame before it, which fixes
        // where the next slot lies).
        let decided = super::frames_deciding(&ips[..n], depth);
        let ns = slot_of[..ns].iter().take_while(|&&i| i < decided).count();
        if ns == 0 {
            return None;
        }
        for s in &mut slots[ns..] {
            *s = (&PAD as *const usize as usize, 0);
        }
        let set = &mut sites.sets[index(sp)];
        // In turn: the entries of this set are replaced oldest first.
        let way = set.next;
        set.next = (way + 1) % WAYS;
        set.ways[way] = Entry {
            sp,
            n: ns,
            slots,
            sig,
        };
        Some(sig)
    }
}
