//! A program's loads and stores through a file mapping are page faults between its calls: the
//! tracer records at `munmap` how many bytes of the mapping it had faulted in (`touched`,
//! after `munmap`'s fixed parameters). The replay faults as many in through a mapping of its
//! own, so that its storage serves them as the program's served its page faults (readahead
//! included), rather than the replay missing the time they took.

use std::fs::File;
use std::os::fd::AsRawFd;

/// Faults in `len` bytes of `f` from file offset `off` through a shared read-only mapping,
/// reading one byte a page in order (which pages the program touched is not recorded: the
/// first `len` bytes of the range stand for them). Past the file's end nothing is touched.
/// Unsafe code of its own: a mapping and loads through it are what is replayed.
#[allow(unsafe_code)]
pub fn fault_in(f: &File, off: u64, len: u64) -> std::io::Result<()> {
    let size = f.metadata()?.len();
    let len = len.min(size.saturating_sub(off));
    if len == 0 {
        return Ok(());
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let start = off - off % page;
    let span = (off + len - start) as usize;
    // SAFETY: a fresh shared read-only mapping of an open file, unmapped below; the kernel
    // picks the address.
    let m = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            start as libc::off_t,
        )
    };
    if m == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let mut sum = 0u8;
    for p in (0..span).step_by(page as usize) {
        // SAFETY: `p` is inside the mapping and before the file's end (`len` was cut there),
        // so the load faults the page in rather than raising SIGBUS.
        sum = sum.wrapping_add(unsafe { std::ptr::read_volatile((m as *const u8).add(p)) });
    }
    std::hint::black_box(sum);
    // SAFETY: the mapping made above, of `span` bytes.
    unsafe { libc::munmap(m, span) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn faults_in_the_range_and_stops_at_the_files_end() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let mut f = File::create(&p).unwrap();
        f.write_all(&vec![7u8; 3 * 4096 + 100]).unwrap();
        drop(f);
        let f = File::open(&p).unwrap();
        fault_in(&f, 0, 4096).unwrap();
        // Beyond the end: cut, not a SIGBUS.
        fault_in(&f, 4096, 1 << 20).unwrap();
        fault_in(&f, 1 << 20, 4096).unwrap();
        fault_in(&f, 100, 0).unwrap();
    }
}
