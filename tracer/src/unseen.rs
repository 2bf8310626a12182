//! Which MPI functions the program uses that the tracer does not record, so a trace can say
//! what it cannot show (a receive whose matching send went through an unrecorded `MPI_Rsend`).
//!
//! At `MPI_Init` every loaded object's dynamic symbol table (`dl_iterate_phdr`, then the
//! `.dynsym`/`.dynstr` its `PT_DYNAMIC` segment points to) is read:
//! - the MPI functions this library defines are its hooks, the functions it records: the list
//!   is the exported symbols themselves, never a copy that could drift from them;
//! - the objects that define MPI functions are the MPI library and its bindings, skipped;
//! - every other object's undefined `MPI_*`/`mpi_*` symbols are what the program imports.
//!
//! Names compare case-insensitively without trailing underscores and `mpi_f08`'s `_f08`/`_f08ts`
//! suffixes, so the Fortran spellings (`mpi_send_`, `MPI_SEND`, `mpi_send_f08ts_`) meet their
//! C function; a name is reported in the program's own
//! spelling, the C one when both are imported. Objects loaded after `MPI_Init` (`dlopen`) are
//! not seen.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CStr, c_int, c_void};

/// An ELF64 dynamic symbol (`Elf64_Sym`).
#[repr(C)]
struct Sym {
    st_name: u32,
    st_info: u8,
    st_other: u8,
    st_shndx: u16,
    st_value: u64,
    st_size: u64,
}

/// An ELF64 dynamic-section entry (`Elf64_Dyn`).
#[repr(C)]
struct Dyn {
    d_tag: i64,
    d_val: u64,
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: i64 = 0;
const DT_HASH: i64 = 4;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_STRSZ: i64 = 10;
const DT_GNU_HASH: i64 = 0x6fff_fef5;
/// A symbol table larger than this is not a real one: stop rather than read on.
const MAX_SYMS: usize = 1 << 22;

/// One loaded object's MPI symbols.
#[derive(Default)]
struct Object {
    /// Whether this library (the tracer) is the object.
    is_self: bool,
    defined: Vec<String>,
    imported: Vec<String>,
}

/// What a name means, whatever the binding's spelling: `use mpi_f08` procedures too
/// (`mpi_send_f08ts_`, `mpi_barrier_f08_`; the `_large` ones take counts the recorded calls do
/// not, and keep their name).
fn key(name: &str) -> String {
    let k = name.trim_end_matches('_').to_ascii_lowercase();
    match k.strip_suffix("_f08ts").or_else(|| k.strip_suffix("_f08")) {
        Some(base) => base.to_string(),
        None => k,
    }
}

fn is_mpi(name: &str) -> bool {
    name.len() > 4 && name[..4].eq_ignore_ascii_case("mpi_")
}

/// The MPI functions imported by the program and its libraries that this library does not
/// define (does not record), sorted by name.
pub fn unrecorded_mpi() -> Vec<String> {
    let objects = objects();
    let hooks: BTreeSet<String> = objects
        .iter()
        .filter(|o| o.is_self)
        .flat_map(|o| o.defined.iter().map(|n| key(n)))
        .collect();
    if hooks.is_empty() {
        // Our own table was not found: every import would look unrecorded.
        return Vec::new();
    }
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for o in objects
        .iter()
        .filter(|o| !o.is_self && o.defined.is_empty())
    {
        for n in &o.imported {
            let k = key(n);
            if hooks.contains(&k) {
                continue;
            }
            // The C spelling (mixed case, no trailing underscore) wins over a Fortran one.
            let c_style = |s: &str| !s.ends_with('_') && s[4..].chars().any(|c| c.is_lowercase());
            match out.get(&k) {
                Some(have) if c_style(have) || !c_style(n) => {}
                _ => {
                    out.insert(k, n.clone());
                }
            }
        }
    }
    let mut v: Vec<String> = out.into_values().collect();
    v.sort();
    v
}

fn objects() -> Vec<Object> {
    let mut out: Vec<Object> = Vec::new();
    // SAFETY: dl_iterate_phdr calls `each` with valid info records while it holds the loader's
    // lock; `each` only reads them and the mapped memory they describe.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut Vec<Object> as *mut c_void) };
    out
}

unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the vector `objects` passed; `info` is valid for this call.
    let (out, info) = unsafe { (&mut *(data as *mut Vec<Object>), &*info) };
    // SAFETY: the loader's record of a mapped object: its program headers and segments are
    // mapped for as long as the object is, which the loader's lock guarantees here.
    if let Some(o) = unsafe { read_object(info) } {
        out.push(o);
    }
    0
}

/// The MPI symbols of one loaded object, from its dynamic section.
unsafe fn read_object(info: &libc::dl_phdr_info) -> Option<Object> {
    if info.dlpi_phdr.is_null() {
        return None;
    }
    let base = info.dlpi_addr;
    // SAFETY: the loader's program headers of this object, dlpi_phnum of them.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let me = unrecorded_mpi as *const () as usize as u64;
    let is_self = phdrs.iter().any(|p| {
        p.p_type == PT_LOAD && (base + p.p_vaddr..base + p.p_vaddr + p.p_memsz).contains(&me)
    });
    let dynamic = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC)?;
    // The loader rewrites most of these addresses in place; the vDSO's (and those of
    // architectures with a read-only dynamic section) stay offsets from the load address.
    let addr = |v: u64| if v < base { v + base } else { v };
    let (mut strtab, mut symtab, mut strsz, mut hash, mut gnu) = (0, 0, 0, 0, 0);
    let mut d = (base + dynamic.p_vaddr) as *const Dyn;
    loop {
        // SAFETY: the dynamic section is an array ended by DT_NULL.
        let e = unsafe { &*d };
        match e.d_tag {
            DT_NULL => break,
            DT_STRTAB => strtab = addr(e.d_val),
            DT_SYMTAB => symtab = addr(e.d_val),
            DT_STRSZ => strsz = e.d_val,
            DT_HASH => hash = addr(e.d_val),
            DT_GNU_HASH => gnu = addr(e.d_val),
            _ => {}
        }
        // SAFETY: not past DT_NULL.
        d = unsafe { d.add(1) };
    }
    if strtab == 0 || symtab == 0 {
        return None;
    }
    // SAFETY: the hash tables of a mapped object, as the loader itself reads them.
    let nsyms = unsafe {
        if hash != 0 {
            *(hash as *const u32).add(1) as usize
        } else if gnu != 0 {
            gnu_nsyms(gnu as *const u32)
        } else {
            return None;
        }
    }
    .min(MAX_SYMS);
    let mut o = Object {
        is_self,
        ..Object::default()
    };
    for i in 1..nsyms {
        // SAFETY: index below the table's symbol count.
        let s = unsafe { &*(symtab as *const Sym).add(i) };
        if u64::from(s.st_name) >= strsz {
            continue;
        }
        let at = (strtab + u64::from(s.st_name)) as *const u8;
        // SAFETY: a NUL-terminated name inside the string table: its first 4 bytes are read
        // only up to its NUL. Most names are not MPI's: checked before measuring and
        // validating the whole name (a process's tables hold some 16,000 names).
        if !unsafe { mpi_prefix(at) } {
            continue;
        }
        // SAFETY: a NUL-terminated name inside the string table.
        let name = unsafe { CStr::from_ptr(at as *const libc::c_char) };
        let Ok(name) = name.to_str() else { continue };
        if !is_mpi(name) {
            continue;
        }
        if s.st_shndx == 0 {
            o.imported.push(name.to_string());
        } else if s.st_info & 0xf == 2 {
            // STT_FUNC defined here.
            o.defined.push(name.to_string());
        }
    }
    Some(o)
}

/// Whether the NUL-terminated name at `at` starts with `mpi_` in any case ([`is_mpi`]'s
/// prefix; [`is_mpi`] still decides).
///
/// # Safety
/// `at` points to a NUL-terminated string.
unsafe fn mpi_prefix(at: *const u8) -> bool {
    for (i, want) in b"mpi_".iter().enumerate() {
        // SAFETY: bytes before the string's NUL, or the NUL itself, which stops the loop.
        let c = unsafe { *at.add(i) };
        if c.to_ascii_lowercase() != *want {
            return false;
        }
    }
    true
}

/// The number of symbols a `DT_GNU_HASH` table covers: past the last bucket's chain.
///
/// # Safety
/// `h` points to a mapped GNU hash table.
unsafe fn gnu_nsyms(h: *const u32) -> usize {
    // SAFETY: the table's header, buckets and chains, as laid out by the linker.
    unsafe {
        let nbuckets = *h as usize;
        let symoffset = *h.add(1) as usize;
        let bloom = *h.add(2) as usize;
        let buckets = (h as *const u8).add(16 + bloom * 8) as *const u32;
        let chains = buckets.add(nbuckets);
        let last = (0..nbuckets)
            .map(|i| *buckets.add(i) as usize)
            .max()
            .unwrap_or(0);
        if last < symoffset {
            return symoffset;
        }
        let mut i = last;
        while i < MAX_SYMS && *chains.add(i - symoffset) & 1 == 0 {
            i += 1;
        }
        i + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_spellings_meet_their_c_function() {
        assert_eq!(key("mpi_send_"), key("MPI_Send"));
        assert_eq!(key("MPI_SEND"), key("MPI_Send"));
        assert_eq!(key("mpi_send__"), key("MPI_Send"));
        assert_eq!(key("mpi_send_f08ts_"), key("MPI_Send"));
        assert_eq!(key("mpi_barrier_f08_"), key("MPI_Barrier"));
        assert_ne!(key("mpi_send_f08ts_large_"), key("MPI_Send"));
        assert!(is_mpi("MPI_Rsend") && is_mpi("mpi_rsend_") && !is_mpi("PMPI_Rsend"));
    }
}
