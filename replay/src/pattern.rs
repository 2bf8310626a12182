//! The replay's write data and read buffers, shared by every rank of a process.

/// Deterministic write data: byte `i` of every write buffer is a fixed function of `i`, so the
/// files a replay leaves are reproducible and compressible patterns do not flatter the storage.
///
/// Every rank writes the same bytes, so the process keeps one read-only buffer for all of
/// them (one per rank was 1 GiB at 1,024 ranks writing MiBs); a rank holds a reference to
/// the buffer that was large enough for its largest write so far.
#[derive(Debug, Default)]
pub struct Pattern {
    buf: std::sync::Arc<Vec<u8>>,
}

impl Pattern {
    /// A rank keeps a read buffer up to this size between calls; larger ones go back to the
    /// process's free list after their call ([`Pattern::trim_read_buf`]): 1,024 ranks each
    /// keeping a buffer of their largest read held 1 GiB at 1 MiB reads, though only the
    /// ranks inside a read at the same moment need one.
    pub const READ_BUF_OWN: usize = 16 << 10;
    /// Buffers larger than this are freed rather than kept on the free list.
    pub const READ_BUF_KEEP: usize = 4 << 20;
    /// Buffers on the free list at most (at most 256 MiB, however many ranks).
    const READ_BUFS_FREE: usize = 64;

    /// The pattern byte at position `i`.
    pub fn byte(i: usize) -> u8 {
        let x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (x >> 56) as u8 ^ (i as u8)
    }

    /// A buffer of at least `n` pattern bytes.
    pub fn get(&mut self, n: usize) -> &[u8] {
        if self.buf.len() < n {
            self.buf = Pattern::shared(n);
        }
        &self.buf[..n]
    }

    /// The process's pattern buffer, made at least `n` bytes long. A poisoned lock still
    /// holds a valid buffer (it is only replaced whole), so it is used as is.
    fn shared(n: usize) -> std::sync::Arc<Vec<u8>> {
        static SHARED_PATTERN: std::sync::RwLock<Option<std::sync::Arc<Vec<u8>>>> =
            std::sync::RwLock::new(None);
        if let Some(b) = &*SHARED_PATTERN.read().unwrap_or_else(|e| e.into_inner())
            && b.len() >= n
        {
            return b.clone();
        }
        let mut w = SHARED_PATTERN.write().unwrap_or_else(|e| e.into_inner());
        let old = w.as_ref().map_or(0, |b| b.len());
        if old >= n {
            return w.as_ref().map(|b| b.clone()).unwrap_or_default();
        }
        // Doubling: a replay whose writes grow step by step rebuilds the buffer a logarithmic
        // number of times; ranks still holding an older, smaller one keep at most as much again.
        let len = n.max(old.saturating_mul(2)).max(64 << 10);
        let b = std::sync::Arc::new((0..len).map(Pattern::byte).collect::<Vec<u8>>());
        *w = Some(b.clone());
        b
    }

    /// The process's free read buffers.
    fn free_read_bufs() -> std::sync::MutexGuard<'static, Vec<Vec<u8>>> {
        static FREE: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
        // A poisoned list still holds valid buffers.
        FREE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A buffer for a read of `n` bytes: the rank's own `own` when it has one, else one from
    /// the free list, else a new one; resized to `n`.
    pub fn take_read_buf(own: &mut Vec<u8>, n: usize) -> Vec<u8> {
        let mut buf = std::mem::take(own);
        if buf.capacity() < n
            && let Some(b) = Pattern::free_read_bufs().pop()
        {
            buf = b;
        }
        buf.resize(n, 0);
        buf
    }

    /// Runs `f` on a read buffer of `n` bytes taken as [`Pattern::take_read_buf`] does, then
    /// gives it back to `own` and trims it ([`Pattern::trim_read_buf`]).
    pub fn with_read_buf<T>(own: &mut Vec<u8>, n: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
        let mut buf = Pattern::take_read_buf(own, n);
        let r = f(&mut buf);
        *own = buf;
        Pattern::trim_read_buf(own);
        r
    }

    /// After a read: a buffer above [`Pattern::READ_BUF_OWN`] leaves the rank, onto the free
    /// list (or freed, above [`Pattern::READ_BUF_KEEP`] or when the list is full).
    pub fn trim_read_buf(buf: &mut Vec<u8>) {
        if buf.capacity() <= Pattern::READ_BUF_OWN {
            return;
        }
        let b = std::mem::take(buf);
        if b.capacity() <= Pattern::READ_BUF_KEEP {
            let mut free = Pattern::free_read_bufs();
            if free.len() < Pattern::READ_BUFS_FREE {
                free.push(b);
            }
        }
    }
}
