//! The pages of a mapping this process has in its page tables, from `/proc/self/pagemap`: at
//! `munmap` of a traced file mapping, what the program read or wrote through it. Its loads and
//! stores are page faults between traced calls, which no hook sees; a replay on other storage
//! has to fault the same bytes in to wait for that storage as the program did.
//!
//! A page is counted when the entry's "present" bit (63) is set: faulted in by the program, or
//! mapped with a neighbour's fault from the page cache (the kernel's fault-around, up to 64 KiB
//! around a fault), so the count is what the program touched or at most that window more.

/// Mappings larger than this are not read (a 16 GiB mapping is 32 MiB of pagemap entries).
const MAX_LEN: usize = 16 << 30;

/// Entries read per system call.
const CHUNK: usize = 512;

/// Bytes of `[addr, addr + len)` present in this process's page tables, or `None` where the
/// pagemap cannot be read. Raw system calls: the tracer's own `open`/`pread` hooks are not to
/// see it ([`crate::rawfd`]).
pub fn present_bytes(addr: usize, len: usize) -> Option<u64> {
    if len == 0 || len > MAX_LEN {
        return None;
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = usize::try_from(page).ok().filter(|p| *p > 0)?;
    let first = addr / page;
    let pages = (addr + len).div_ceil(page) - first;
    let fd = crate::rawfd::open_read(c"/proc/self/pagemap")?;
    let counted = count_present(fd, first, pages);
    crate::rawfd::close(fd);
    counted.map(|n| n * page as u64)
}

/// Pages with the present bit among `pages` entries from entry `first` of the pagemap `fd`.
fn count_present(fd: libc::c_long, first: usize, pages: usize) -> Option<u64> {
    let mut buf = [0u64; CHUNK];
    let mut present = 0u64;
    let mut done = 0usize;
    while done < pages {
        let want = (pages - done).min(CHUNK);
        let at = ((first + done) * 8) as libc::off_t;
        // SAFETY: `buf` is writable for `want` entries; `fd` is open.
        let n = unsafe { libc::syscall(libc::SYS_pread64, fd, buf.as_mut_ptr(), want * 8, at) };
        if n <= 0 || n % 8 != 0 {
            return None;
        }
        let got = n as usize / 8;
        present += buf[..got].iter().filter(|e| *e >> 63 == 1).count() as u64;
        done += got;
    }
    Some(present)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_touched_pages_of_a_fresh_mapping_are_present() {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = 64 * page;
        // SAFETY: an anonymous private mapping of `len` bytes, unmapped below.
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(m, libc::MAP_FAILED);
        let a = m as usize;
        assert_eq!(present_bytes(a, len), Some(0));
        for k in [0, 5, 63] {
            // SAFETY: inside the mapping, writable.
            unsafe { *((a + k * page) as *mut u8) = 1 };
        }
        assert_eq!(present_bytes(a, len), Some(3 * page as u64));
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(m, len) };
    }
}
