//! Direct I/O and the page-cache calls, as the replay issues them: the alignment a file's
//! O_DIRECT transfers need on this file system, the aligned buffer they go through, and the
//! advice values of `posix_fadvise` and `madvise`.
//!
//! A traced O_DIRECT transfer is replayed with O_DIRECT when its offset and size are
//! multiples of the replay file system's alignment (`statx`'s `STATX_DIOALIGN`, Linux 6.1;
//! 4096 bytes where the kernel does not say). One that is not (a trace taken where the
//! alignment was smaller: 512-byte sectors against 4096, or tmpfs, which takes any) cannot be
//! issued aligned without changing its bytes: it is issued through the page cache with
//! O_DIRECT cleared for the call, and the replay's report counts it.

use std::fs::File;
use std::os::fd::AsFd;

/// What a descriptor's direct transfers must be aligned to, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Align {
    /// The buffer's address.
    pub(crate) memory: usize,
    /// The file offset and the size.
    pub(crate) offset: usize,
}

/// Where the kernel does not say (before Linux 6.1): every sector size up to a page.
const FALLBACK: usize = 4096;

/// The alignment of `f`'s direct transfers, or `None` when its open file does not have
/// O_DIRECT set.
pub(crate) fn of(f: &File) -> Option<Align> {
    let fl = rustix::fs::fcntl_getfl(f).ok()?;
    if !fl.contains(rustix::fs::OFlags::DIRECT) {
        return None;
    }
    let st = rustix::fs::statx(
        f.as_fd(),
        "",
        rustix::fs::AtFlags::EMPTY_PATH,
        rustix::fs::StatxFlags::DIOALIGN,
    )
    .ok()
    .filter(|st| {
        st.stx_mask & rustix::fs::StatxFlags::DIOALIGN.bits() != 0 && st.stx_dio_offset_align > 0
    });
    Some(match st {
        Some(st) => Align {
            memory: (st.stx_dio_mem_align as usize).max(1),
            offset: st.stx_dio_offset_align as usize,
        },
        None => Align {
            memory: FALLBACK,
            offset: FALLBACK,
        },
    })
}

/// `n` bytes of `buf` starting at an address aligned to `align`, `buf` grown to hold them.
pub(crate) fn aligned(buf: &mut Vec<u8>, n: usize, align: usize) -> &mut [u8] {
    if buf.len() < n + align {
        buf.resize(n + align, 0);
    }
    let at = buf.as_ptr().align_offset(align);
    &mut buf[at..at + n]
}

/// The `posix_fadvise` advice of a recorded value (Linux's numbering).
pub(crate) fn advice(v: i64) -> Option<rustix::fs::Advice> {
    use rustix::fs::Advice::*;
    Some(match v {
        0 => Normal,
        1 => Random,
        2 => Sequential,
        3 => WillNeed,
        4 => DontNeed,
        5 => NoReuse,
        _ => return None,
    })
}

/// The fadvise of a mapping's file range that does to the page cache what `madvise` advice
/// `v` did (the replay maps no files, so it advises the file). `MADV_RANDOM`,
/// `MADV_SEQUENTIAL` and `MADV_WILLNEED` set or start the same readahead as their fadvise;
/// `MADV_COLD` and `MADV_PAGEOUT` (Linux 5.4) evict the range's clean pages, which
/// `POSIX_FADV_DONTNEED` does. The others (`MADV_DONTNEED`, `MADV_FREE`, ...) drop the
/// process's page tables, not the file's cache: nothing to issue.
pub(crate) fn madvise_as_fadvise(v: i64) -> Option<rustix::fs::Advice> {
    use rustix::fs::Advice::*;
    match v {
        0 => Some(Normal),
        1 => Some(Random),
        2 => Some(Sequential),
        3 => Some(WillNeed),
        20 | 21 => Some(DontNeed),
        _ => None,
    }
}

/// `sync_file_range(2)` with the recorded flags (rustix does not have it).
#[allow(unsafe_code)]
pub(crate) fn sync_file_range(f: &File, off: u64, len: u64, flags: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: the call takes a descriptor, which `f` keeps open for it, and integers; it
    // touches no memory of ours.
    let r = unsafe {
        libc::sync_file_range(
            f.as_raw_fd(),
            off as libc::off64_t,
            len as libc::off64_t,
            flags,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_slices_start_aligned_and_hold_n_bytes() {
        let mut b = Vec::new();
        for (n, a) in [(4096, 4096), (512, 512), (1, 4096), (8192, 512)] {
            let s = aligned(&mut b, n, a);
            assert_eq!(s.len(), n);
            assert_eq!(s.as_ptr() as usize % a, 0);
        }
    }

    #[test]
    fn advice_values_are_linuxs() {
        assert_eq!(
            advice(libc::POSIX_FADV_DONTNEED as i64),
            Some(rustix::fs::Advice::DontNeed)
        );
        assert_eq!(
            advice(libc::POSIX_FADV_NOREUSE as i64),
            Some(rustix::fs::Advice::NoReuse)
        );
        assert_eq!(advice(9), None);
        assert_eq!(
            madvise_as_fadvise(libc::MADV_WILLNEED as i64),
            Some(rustix::fs::Advice::WillNeed)
        );
        assert_eq!(
            madvise_as_fadvise(libc::MADV_PAGEOUT as i64),
            Some(rustix::fs::Advice::DontNeed)
        );
        assert_eq!(madvise_as_fadvise(libc::MADV_DONTNEED as i64), None);
    }

    #[test]
    fn a_descriptor_without_o_direct_has_no_alignment() {
        let f = tempfile::tempfile().unwrap();
        assert_eq!(of(&f), None);
    }
}
