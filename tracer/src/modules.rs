//! Which loaded object holds an address, answered from a map of the objects' loadable
//! segments instead of `dladdr`.
//!
//! `dladdr` also finds the nearest dynamic symbol, which glibc does by scanning the object's
//! whole symbol table: about 26,000 instructions per address under Open MPI, and the first
//! `MPI_File_open` resolves the call sites of every POSIX call Open MPI makes while loading
//! its I/O components (docs/tracer-cost.md). The tracer does not use that symbol (its own
//! tables name the function, [`crate::elf`]). The map is read with `dl_iterate_phdr` at the
//! first lookup, and again whenever the loader's counts of objects loaded and unloaded
//! (`dlpi_adds`, `dlpi_subs`, read at every lookup by stopping the iteration at its first
//! object) have changed: an object `dlopen`ed later is found, and one `dlclose`d is not
//! answered from a stale map. An address the map does not hold (JIT code, an object in
//! another `dlmopen` namespace, which `dl_iterate_phdr` does not list) is asked of `dladdr`.
//!
//! The answers are `dladdr`'s: the object's base is its lowest loadable segment's page
//! (glibc's `l_map_start`, which `dladdr` gives as `dli_fbase`: the load bias plus that
//! page, not the bias alone, which differs for a non-PIE program), its name the loader's
//! (`dli_fname`; the main program, unnamed there, gets `dladdr`'s name for it: `argv[0]`),
//! and an address belongs to an object when it lies in one of its loadable segments.

use std::sync::{Arc, Mutex};

/// One loaded object: where `dladdr` says it starts, and its name.
#[derive(Debug, Clone)]
pub struct Module {
    /// `dladdr`'s `dli_fbase`.
    pub base: usize,
    /// `dladdr`'s `dli_fname` (empty where it gives none).
    pub name: Arc<[u8]>,
}

#[derive(Default)]
struct Map {
    /// The loader's counts when the map was read.
    counts: (u64, u64),
    /// Loadable segments: (start, end, index in `mods`), sorted by start.
    segs: Vec<(usize, usize, usize)>,
    mods: Vec<Module>,
}

static MAP: Mutex<Option<Map>> = Mutex::new(None);
/// Names of unnamed objects (the main program), by base: asked of `dladdr` once each.
static UNNAMED: Mutex<Vec<(usize, Arc<[u8]>)>> = Mutex::new(Vec::new());

/// The object holding `addr`, as `dladdr` would name it; `None` where no object holds it.
/// Takes the loader's lock (through `dl_iterate_phdr`, and `dladdr` on a miss): not to be
/// called with the tracer's state lock held.
pub fn module_at(addr: usize) -> Option<Module> {
    let counts = loader_counts();
    {
        let mut g = MAP.lock().unwrap_or_else(|p| p.into_inner());
        if g.as_ref().is_none_or(|m| m.counts != counts) {
            let m = read_map(g.as_ref());
            *g = Some(m);
        }
        if let Some(m) = g.as_ref().and_then(|m| m.find(addr)) {
            return Some(m.clone());
        }
    }
    dladdr_module(addr)
}

impl Map {
    fn find(&self, addr: usize) -> Option<&Module> {
        let i = self.segs.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let (_, end, m) = self.segs[i];
        (addr < end).then(|| &self.mods[m])
    }
}

/// `dladdr`'s answer, for what the map does not hold.
fn dladdr_module(addr: usize) -> Option<Module> {
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
    let name = if info.dli_fname.is_null() {
        &b""[..]
    } else {
        // SAFETY: a NUL-terminated name owned by the loader, copied now.
        unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes()
    };
    Some(Module {
        base: info.dli_fbase as usize,
        name: name.into(),
    })
}

/// The loader's counts of objects loaded and unloaded so far.
fn loader_counts() -> (u64, u64) {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // The counts are in the structure since glibc 2.4; an older loader passes a smaller
        // one and the map is then read at every lookup (counts (0, 0) never match a read map's
        // sentinel below).
        let have = std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs) + 8;
        // SAFETY: dl_iterate_phdr passes a valid info of `size` bytes and our `data`.
        unsafe {
            let out = &mut *(data as *mut (u64, u64));
            *out = if size >= have {
                ((*info).dlpi_adds, (*info).dlpi_subs)
            } else {
                (u64::MAX, u64::MAX)
            };
        }
        1
    }
    let mut c = (u64::MAX, u64::MAX);
    // SAFETY: the callback matches the prototype and writes only `c`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut c as *mut (u64, u64)).cast()) };
    c
}

/// Reads the map of every object `dl_iterate_phdr` lists, with the counts it saw. An object
/// the previous map (`old`) held at the same place under the same name keeps its entry (no
/// copy of its name): objects loaded later are listed after the others.
fn read_map(old: Option<&Map>) -> Map {
    struct Acc<'a> {
        page: usize,
        old: &'a [Module],
        counts: (u64, u64),
        /// (module, its segments)
        objs: Vec<(Module, Vec<(usize, usize)>)>,
    }
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info, whose program headers and name live
        // during the callback, and our `data`.
        unsafe {
            let acc = &mut *(data as *mut Acc);
            let i = &*info;
            acc.counts = (i.dlpi_adds, i.dlpi_subs);
            let bias = i.dlpi_addr as usize;
            let mut segs = Vec::new();
            let mut low = usize::MAX;
            for k in 0..i.dlpi_phnum as usize {
                let ph = &*i.dlpi_phdr.add(k);
                if ph.p_type != libc::PT_LOAD || ph.p_memsz == 0 {
                    continue;
                }
                let start = bias.wrapping_add(ph.p_vaddr as usize);
                segs.push((start, start.wrapping_add(ph.p_memsz as usize)));
                low = low.min(ph.p_vaddr as usize & !(acc.page - 1));
            }
            if low == usize::MAX {
                return 0;
            }
            let base = bias.wrapping_add(low);
            let name = if i.dlpi_name.is_null() {
                &b""[..]
            } else {
                std::ffi::CStr::from_ptr(i.dlpi_name).to_bytes()
            };
            let m = match acc.old.get(acc.objs.len()) {
                Some(m) if m.base == base && (name.is_empty() || *m.name == *name) => m.clone(),
                _ => Module {
                    base,
                    name: if name.is_empty() {
                        unnamed(base)
                    } else {
                        name.into()
                    },
                },
            };
            acc.objs.push((m, segs));
        }
        0
    }
    // SAFETY: sysconf has no preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as usize,
        _ => 4096,
    };
    let mut acc = Acc {
        page,
        old: old.map_or(&[][..], |m| &m.mods),
        counts: (u64::MAX, u64::MAX),
        objs: Vec::new(),
    };
    // SAFETY: the callback matches the prototype and writes only `acc`, which outlives the
    // call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut acc as *mut Acc).cast()) };
    let mut map = Map {
        counts: acc.counts,
        ..Map::default()
    };
    for (m, segs) in acc.objs {
        let k = map.mods.len();
        map.segs.extend(segs.into_iter().map(|(s, e)| (s, e, k)));
        map.mods.push(m);
    }
    map.segs.sort_unstable();
    map
}

/// `dladdr`'s name for an object the loader lists without one (the main program: its
/// `argv[0]`), once per base.
fn unnamed(base: usize) -> Arc<[u8]> {
    let mut g = UNNAMED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, n)) = g.iter().find(|(b, _)| *b == base) {
        return n.clone();
    }
    let n = dladdr_module(base).map_or_else(|| Arc::from(&b""[..]), |m| m.name);
    g.push((base, n.clone()));
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_as_dladdr(addr: usize) {
        let want = dladdr_module(addr).map(|m| (m.base, m.name.to_vec()));
        let got = module_at(addr).map(|m| (m.base, m.name.to_vec()));
        assert_eq!(got, want, "address {addr:#x}");
    }

    #[test]
    fn answers_as_dladdr_does() {
        same_as_dladdr(answers_as_dladdr_does as fn() as usize);
        same_as_dladdr(libc::write as *const () as usize);
        let heap = Box::new(0u64);
        same_as_dladdr(&*heap as *const u64 as usize);
        // Every page of every loadable segment, answered by the map (not by the fallback).
        let map = read_map(None);
        assert!(map.mods.len() >= 3, "{} objects", map.mods.len());
        for &(s, e, _) in &map.segs {
            for a in (s..e).step_by(4096).chain([e - 1]) {
                assert!(map.find(a).is_some(), "{a:#x} in a segment");
                same_as_dladdr(a);
            }
            same_as_dladdr(e);
        }
    }

    #[test]
    fn finds_objects_loaded_later_and_forgets_unloaded_ones() {
        // The map is read first; then an object it does not hold is loaded.
        same_as_dladdr(libc::write as *const () as usize);
        let loaded = [
            (c"libz.so.1", c"zlibVersion"),
            (c"libbz2.so.1", c"BZ2_bzlibVersion"),
        ];
        let mut tried = 0;
        for (lib, sym) in loaded {
            // SAFETY: dlopen of a system library by name, and dlsym on its handle.
            let (h, f) = unsafe {
                let h = libc::dlopen(lib.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
                if h.is_null() {
                    continue;
                }
                (h, libc::dlsym(h, sym.as_ptr()) as usize)
            };
            tried += 1;
            assert_ne!(f, 0);
            let m = module_at(f).expect("a function of a loaded object");
            let lib = lib.to_bytes();
            assert!(
                m.name.ends_with(lib),
                "{:?}",
                String::from_utf8_lossy(&m.name)
            );
            same_as_dladdr(f);
            // SAFETY: the handle came from dlopen above.
            unsafe { libc::dlclose(h) };
            // Unloaded unless something else holds it: either way, dladdr's answer.
            same_as_dladdr(f);
        }
        assert!(tried > 0, "no test library could be loaded");
    }
}
