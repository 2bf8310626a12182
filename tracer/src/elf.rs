//! The little of ELF the call sites need: a module's function symbols (`.symtab`, else
//! `.dynsym`), so a return address becomes "function + offset from its start", which a rebuild
//! that changes another function, a string or the link order does not move; and the GNU build
//! id of the executable, for the trace header.
//!
//! Only ELF64 little-endian (x86-64, AArch64). Files are read with positioned reads of the
//! headers and the two tables, never whole (an application with debug information can be
//! hundreds of MB). Runs in the tracer's slow path (a return address seen for the first time)
//! under the re-entry guard, so these reads are not recorded.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Lookups answered by scanning before the table is sorted: a process looks up a handful of
/// return addresses per module (its call sites' frames), and sorting every symbol and hashing
/// every name up front cost ~1.5 M instructions per process for libc and the program alone;
/// a module asked more often gets the sorted table, so a large program with many call sites
/// does not scan its table each time.
const SCANS: usize = 16;

/// The function symbols of one module.
#[derive(Debug)]
pub struct Syms {
    /// `ET_EXEC`: symbol values are addresses; otherwise they are offsets from the load base.
    pub fixed_address: bool,
    /// (start, size, where the name starts in `names`), in table order.
    funcs: Vec<(u64, u64, u32)>,
    /// The string table the names are in.
    names: Vec<u8>,
    hash: fn(&[u8]) -> u64,
    /// Lookups so far, until [`SCANS`].
    asked: AtomicUsize,
    /// (start, size, hash of the name), sorted by start, one per start: built at the
    /// [`SCANS`]-th lookup.
    sorted: OnceLock<Vec<(u64, u64, u64)>>,
}

impl Syms {
    fn new(
        fixed_address: bool,
        funcs: Vec<(u64, u64, u32)>,
        names: Vec<u8>,
        hash: fn(&[u8]) -> u64,
    ) -> Syms {
        Syms {
            fixed_address,
            funcs,
            names,
            hash,
            asked: AtomicUsize::new(0),
            sorted: OnceLock::new(),
        }
    }

    fn name_hash(&self, at: u32) -> u64 {
        let rest = self.names.get(at as usize..).unwrap_or_default();
        let n = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        (self.hash)(&rest[..n])
    }

    /// The function holding `vaddr` (an address as the file's symbol values count them): the
    /// hash of its name and the offset of `vaddr` from its start. Where several names start at
    /// one address (aliases), the smallest (size, name hash) is the function, as in the sorted
    /// table.
    pub fn lookup(&self, vaddr: u64) -> Option<(u64, u64)> {
        if self.sorted.get().is_none() && self.asked.fetch_add(1, Ordering::Relaxed) < SCANS {
            return self.scan(vaddr);
        }
        Self::lookup_sorted(self.sorted.get_or_init(|| self.sort()), vaddr)
    }

    /// [`Syms::lookup`] by one pass over the table, hashing only the names at the answer's start.
    fn scan(&self, vaddr: u64) -> Option<(u64, u64)> {
        // The last start at or before `vaddr`, and the first after it (the end of a symbol of
        // size 0).
        let (mut start, mut next) = (None::<u64>, u64::MAX);
        for &(v, _, _) in &self.funcs {
            if v <= vaddr {
                start = Some(start.map_or(v, |s| s.max(v)));
            } else {
                next = next.min(v);
            }
        }
        let start = start?;
        let (size, name) = self
            .funcs
            .iter()
            .filter(|f| f.0 == start)
            .map(|&(_, size, at)| (size, self.name_hash(at)))
            .min()?;
        let end = if size > 0 { start + size } else { next };
        (vaddr < end).then_some((name, vaddr - start))
    }

    /// (start, size, name hash) sorted, the smallest (size, hash) kept at each start.
    fn sort(&self) -> Vec<(u64, u64, u64)> {
        let mut v: Vec<(u64, u64, u64)> = self
            .funcs
            .iter()
            .map(|&(start, size, at)| (start, size, self.name_hash(at)))
            .collect();
        v.sort_unstable();
        v.dedup_by_key(|f| f.0);
        v
    }

    fn lookup_sorted(funcs: &[(u64, u64, u64)], vaddr: u64) -> Option<(u64, u64)> {
        let i = funcs.partition_point(|f| f.0 <= vaddr);
        let (start, size, name) = *funcs.get(i.checked_sub(1)?)?;
        // A size of 0 (hand-written assembly) covers up to the next symbol.
        let end = if size > 0 {
            start + size
        } else {
            funcs.get(i).map_or(u64::MAX, |f| f.0)
        };
        (vaddr < end).then_some((name, vaddr - start))
    }
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

fn read(f: &File, off: u64, len: u64) -> Option<Vec<u8>> {
    // Tables beyond 256 MiB are not read: the call sites then keep module offsets.
    if len > 256 << 20 {
        return None;
    }
    let mut b = vec![0u8; len as usize];
    f.read_exact_at(&mut b, off).ok()?;
    Some(b)
}

/// The ELF header's fields we use: (e_type, phoff, phnum, shoff, shnum).
fn header(f: &File) -> Option<(u16, u64, u16, u64, u16)> {
    let h = read(f, 0, 64)?;
    // Magic, ELFCLASS64, ELFDATA2LSB.
    if h[..4] != *b"\x7fELF" || h[4] != 2 || h[5] != 1 {
        return None;
    }
    Some((
        u16_at(&h, 16)?,
        u64_at(&h, 32)?,
        u16_at(&h, 56)?,
        u64_at(&h, 40)?,
        u16_at(&h, 60)?,
    ))
}

const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const STT_FUNC: u8 = 2;
const ET_EXEC: u16 = 2;
const PT_NOTE: u32 = 4;
const NT_GNU_BUILD_ID: u32 = 3;

/// The function symbols of the ELF file at `path`; names are hashed with `hash` when looked up.
pub fn symbols(path: &str, hash: fn(&[u8]) -> u64) -> Option<Syms> {
    let f = File::open(path).ok()?;
    let (etype, _, _, shoff, shnum) = header(&f)?;
    let sh = read(&f, shoff, u64::from(shnum) * 64)?;
    let sec = |i: usize| -> Option<(u32, u64, u64, u32)> {
        let o = i * 64;
        // sh_type, sh_offset, sh_size, sh_link
        Some((
            u32_at(&sh, o + 4)?,
            u64_at(&sh, o + 24)?,
            u64_at(&sh, o + 32)?,
            u32_at(&sh, o + 40)?,
        ))
    };
    let table = (0..shnum as usize)
        .filter_map(&sec)
        .find(|s| s.0 == SHT_SYMTAB)
        .or_else(|| {
            (0..shnum as usize)
                .filter_map(&sec)
                .find(|s| s.0 == SHT_DYNSYM)
        })?;
    let (_, off, size, link) = table;
    let (_, stroff, strsize, _) = sec(link as usize)?;
    let syms = read(&f, off, size)?;
    let strs = read(&f, stroff, strsize)?;
    let mut funcs = Vec::new();
    for e in syms.chunks_exact(24) {
        let (Some(name), Some(value), Some(sz)) = (u32_at(e, 0), u64_at(e, 8), u64_at(e, 16))
        else {
            continue;
        };
        // A name outside the string table: no symbol (as before the names were hashed late).
        if e[4] & 0xf != STT_FUNC || value == 0 || name as usize > strs.len() {
            continue;
        }
        funcs.push((value, sz, name));
    }
    Some(Syms::new(etype == ET_EXEC, funcs, strs, hash))
}

/// The GNU build id of the ELF file at `path`, in hex.
pub fn build_id(path: &str) -> Option<String> {
    let f = File::open(path).ok()?;
    let (_, phoff, phnum, _, _) = header(&f)?;
    let ph = read(&f, phoff, u64::from(phnum) * 56)?;
    for p in ph.chunks_exact(56) {
        if u32_at(p, 0)? != PT_NOTE {
            continue;
        }
        let notes = read(&f, u64_at(p, 8)?, u64_at(p, 32)?)?;
        let mut o = 0;
        while o + 12 <= notes.len() {
            let namesz = u32_at(&notes, o)? as usize;
            let descsz = u32_at(&notes, o + 4)? as usize;
            let typ = u32_at(&notes, o + 8)?;
            let name_at = o + 12;
            let desc_at = name_at + namesz.div_ceil(4) * 4;
            let next = desc_at + descsz.div_ceil(4) * 4;
            if typ == NT_GNU_BUILD_ID && notes.get(name_at..name_at + namesz) == Some(b"GNU\0") {
                let d = notes.get(desc_at..desc_at + descsz)?;
                return Some(d.iter().map(|b| format!("{b:02x}")).collect());
            }
            o = next;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::Syms;

    fn fnv(b: &[u8]) -> u64 {
        b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| {
            (h ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    /// A table of the given (start, size, name) symbols, names in one string table.
    fn table(syms: &[(u64, u64, &str)]) -> Syms {
        let mut names = vec![0u8];
        let funcs = syms
            .iter()
            .map(|&(start, size, name)| {
                let at = names.len() as u32;
                names.extend_from_slice(name.as_bytes());
                names.push(0);
                (start, size, at)
            })
            .collect();
        Syms::new(false, funcs, names, fnv)
    }

    #[test]
    fn lookup_finds_the_enclosing_function() {
        let s = table(&[(300, 10, "c"), (100, 50, "a"), (200, 0, "b")]);
        let h = |n: &str| fnv(n.as_bytes());
        for _ in 0..2 * super::SCANS {
            assert_eq!(s.lookup(120), Some((h("a"), 20)));
            assert_eq!(s.lookup(160), None);
            assert_eq!(s.lookup(250), Some((h("b"), 50)));
            assert_eq!(s.lookup(305), Some((h("c"), 5)));
            assert_eq!(s.lookup(99), None);
        }
        assert!(
            s.sorted.get().is_some(),
            "the table is sorted after {} lookups",
            super::SCANS
        );
    }

    /// The scan answers what the sorted table answers, aliases and sizes of 0 included, on
    /// 3,000 random tables (a fixed generator: the same tables every run).
    #[test]
    fn scan_equals_sorted() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let names = ["a", "b", "c", "ab", "ba", "cd"];
        for _ in 0..3000 {
            let n = 1 + next(24) as usize;
            let syms: Vec<(u64, u64, &str)> = (0..n)
                .map(|_| (next(64), next(8), names[next(6) as usize]))
                .collect();
            let s = table(&syms);
            let sorted = s.sort();
            for p in 0..80 {
                assert_eq!(
                    s.scan(p),
                    Syms::lookup_sorted(&sorted, p),
                    "at {p} in {syms:?}"
                );
            }
        }
    }

    #[test]
    fn reads_its_own_test_binary() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let s = super::symbols(exe.to_str().unwrap(), |b| b.len() as u64).unwrap();
        assert!(!s.funcs.is_empty());
    }
}
