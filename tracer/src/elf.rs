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

/// The function symbols of one module.
#[derive(Debug, Default)]
pub struct Syms {
    /// `ET_EXEC`: symbol values are addresses; otherwise they are offsets from the load base.
    pub fixed_address: bool,
    /// (start, size, hash of the name), sorted by start.
    funcs: Vec<(u64, u64, u64)>,
}

impl Syms {
    /// The function holding `vaddr` (an address as the file's symbol values count them): the
    /// hash of its name and the offset of `vaddr` from its start.
    pub fn lookup(&self, vaddr: u64) -> Option<(u64, u64)> {
        let i = self.funcs.partition_point(|f| f.0 <= vaddr);
        let (start, size, name) = *self.funcs.get(i.checked_sub(1)?)?;
        // A size of 0 (hand-written assembly) covers up to the next symbol.
        let end = if size > 0 {
            start + size
        } else {
            self.funcs.get(i).map_or(u64::MAX, |f| f.0)
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

/// The function symbols of the ELF file at `path`.
pub fn symbols(path: &str, hash: impl Fn(&[u8]) -> u64) -> Option<Syms> {
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
        if e[4] & 0xf != STT_FUNC || value == 0 {
            continue;
        }
        let start = name as usize;
        let Some(rest) = strs.get(start..) else {
            continue;
        };
        let n = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        funcs.push((value, sz, hash(&rest[..n])));
    }
    funcs.sort_unstable();
    // Aliases (one function under two names) keep the first name in table order.
    funcs.dedup_by_key(|f| f.0);
    Some(Syms {
        fixed_address: etype == ET_EXEC,
        funcs,
    })
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
    #[test]
    fn lookup_finds_the_enclosing_function() {
        let s = super::Syms {
            fixed_address: false,
            funcs: vec![(100, 50, 1), (200, 0, 2), (300, 10, 3)],
        };
        assert_eq!(s.lookup(120), Some((1, 20)));
        assert_eq!(s.lookup(160), None);
        assert_eq!(s.lookup(250), Some((2, 50)));
        assert_eq!(s.lookup(305), Some((3, 5)));
        assert_eq!(s.lookup(99), None);
    }

    #[test]
    fn reads_its_own_test_binary() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let s = super::symbols(exe.to_str().unwrap(), |b| b.len() as u64).unwrap();
        assert!(!s.funcs.is_empty());
    }
}
