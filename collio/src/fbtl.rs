//! Open MPI 4.1's `posix` fbtl: how one io array (file offset, length entries, sorted as the
//! fcoll built them) becomes POSIX calls (`ompi/mca/fbtl/posix/fbtl_posix_pwritev.c` and
//! `fbtl_posix_preadv.c` at v4.1.4).

use crate::{Call, Dir};
use rsd::op::Op;

/// The `fbtl_posix_*` parameters (`ompi_info --param fbtl posix --level 9`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FbtlConfig {
    /// `fbtl_posix_max_block_size`: a larger average entry disables data sieving.
    pub max_block_size: u64,
    /// `fbtl_posix_max_gap_size`: a larger average offset step disables data sieving.
    pub max_gap_size: u64,
    /// `fbtl_posix_max_tmpbuf_size`: the most one sieving read-modify-write spans.
    pub max_tmpbuf_size: u64,
    /// `fbtl_posix_read_datasieving`.
    pub read_datasieving: bool,
    /// `fbtl_posix_write_datasieving`.
    pub write_datasieving: bool,
    /// The C library's `IOV_MAX`: the most iovecs one `pwritev`/`preadv` carries.
    pub iov_max: u32,
    /// The program runs under `MPI_THREAD_MULTIPLE` (write sieving is off then).
    pub thread_multiple: bool,
}

impl Default for FbtlConfig {
    /// Open MPI 4.1.4's defaults on Linux (glibc's IOV_MAX is 1024).
    fn default() -> FbtlConfig {
        FbtlConfig {
            max_block_size: 1 << 20,
            max_gap_size: 4096,
            max_tmpbuf_size: 64 << 20,
            read_datasieving: true,
            write_datasieving: true,
            iov_max: 1024,
            thread_multiple: false,
        }
    }
}

/// What a read returns at `offset` for `len` bytes of a file of `size` bytes.
fn read_ret(offset: u64, len: u64, size: u64) -> u64 {
    len.min(size.saturating_sub(offset))
}

/// The calls of one `fbtl_pwritev`/`fbtl_preadv` of `entries` (file offset, length).
/// `collective` is the `OMPIO_COLLECTIVE_OP` flag the fcoll sets around its synchronous
/// writes: write sieving is only done for collective calls. `size` is the file's size as
/// this rank knows it, updated by the writes issued here.
///
/// The file-range locks the fbtl takes (`mca_fbtl_posix_lock`) are no-ops on a local file
/// system under the defaults (`fs_ufs_lock_algorithm` 0 locks only on NFS): the `fcntl` calls
/// they make on NFS are not modelled.
pub fn issue(
    cfg: &FbtlConfig,
    dir: Dir,
    entries: &[(u64, u64)],
    collective: bool,
    size: &mut u64,
    out: &mut Vec<Call>,
) {
    match entries {
        [] => {}
        [(offset, len)] => {
            // One entry: a plain pwrite/pread.
            out.push(single(dir, *offset, *len, size));
        }
        _ => {
            // The averages are the fbtl's: the "gap" is the step between consecutive entry
            // offsets (the first step is 0), not the hole between entries.
            let n = entries.len() as u64;
            let avg_block = entries.iter().map(|e| e.1).sum::<u64>() / n;
            let mut prev = entries[0].0;
            let mut steps = 0u64;
            for e in entries {
                steps = steps.wrapping_add(e.0.wrapping_sub(prev));
                prev = e.0;
            }
            let avg_gap = steps / n;
            let enabled = match dir {
                Dir::Write => cfg.write_datasieving && !cfg.thread_multiple && collective,
                Dir::Read => cfg.read_datasieving,
            };
            let sieve = enabled
                && avg_gap != 0
                && avg_block <= cfg.max_block_size
                && avg_gap <= cfg.max_gap_size;
            if sieve {
                datasieving(cfg, dir, entries, size, out);
            } else {
                generic(cfg, dir, entries, size, out);
            }
        }
    }
}

/// `mca_fbtl_posix_ip{write,read}v`: one asynchronous request per entry, neither merged nor
/// sieved, each collected by the request's progress (`aio_return`) in submission order
/// (glibc runs one descriptor's requests in turn). The tracer records a collected request as
/// the `pwrite`/`pread` it did (`rsd::op`), so each entry is one plain call.
pub fn issue_async(dir: Dir, entries: &[(u64, u64)], size: &mut u64, out: &mut Vec<Call>) {
    out.extend(
        entries
            .iter()
            .map(|&(off, len)| single(dir, off, len, size)),
    );
}

fn single(dir: Dir, offset: u64, len: u64, size: &mut u64) -> Call {
    match dir {
        Dir::Write => {
            *size = (*size).max(offset + len);
            Call::data(Op::Pwrite, offset, None, len, len)
        }
        Dir::Read => Call::data(Op::Pread, offset, None, len, read_ret(offset, len, *size)),
    }
}

/// `mca_fbtl_posix_p{write,read}v_datasieving`: the entries in spans of at most
/// `max_tmpbuf_size` bytes, each read whole (`pread`) and, for a write, written back whole
/// (`pwrite`) with the entries copied in.
fn datasieving(
    cfg: &FbtlConfig,
    dir: Dir,
    entries: &[(u64, u64)],
    size: &mut u64,
    out: &mut Vec<Call>,
) {
    let mut end_index = 0;
    while end_index < entries.len() {
        let start_index = end_index;
        let sstart = entries[start_index].0;
        // As the C loop: the last entry whose end keeps the span within the buffer; an entry
        // larger than the buffer on its own still goes (endindex = j - 1 + 1 = j).
        let mut j = start_index;
        let mut last = start_index;
        while j < entries.len() {
            last = j;
            let slen = (entries[j].0 + entries[j].1).wrapping_sub(sstart);
            if slen > cfg.max_tmpbuf_size {
                last = j.wrapping_sub(1);
                break;
            }
            j += 1;
        }
        end_index = last.wrapping_add(1);
        if end_index <= start_index {
            // The first entry alone exceeds the buffer: the C code's endindex equals
            // startindex and it would loop forever; not reachable with cycle buffers smaller
            // than max_tmpbuf_size.
            end_index = start_index + 1;
        }
        let start = entries[start_index].0;
        let end = entries[end_index - 1].0 + entries[end_index - 1].1;
        let len = end - start;
        out.push(Call::data(
            Op::Pread,
            start,
            None,
            len,
            read_ret(start, len, *size),
        ));
        if dir == Dir::Write {
            *size = (*size).max(end);
            out.push(Call::data(Op::Pwrite, start, None, len, len));
        }
    }
}

/// `mca_fbtl_posix_p{write,read}v_generic`: runs of file-contiguous entries, at most
/// `IOV_MAX` each, one `pwritev`/`preadv` per run.
fn generic(
    cfg: &FbtlConfig,
    dir: Dir,
    entries: &[(u64, u64)],
    size: &mut u64,
    out: &mut Vec<Call>,
) {
    let mut i = 0;
    while i < entries.len() {
        let offset = entries[i].0;
        let mut bytes = entries[i].1;
        let mut count = 1u32;
        while i + 1 < entries.len()
            && entries[i].0 + entries[i].1 == entries[i + 1].0
            && count < cfg.iov_max
        {
            i += 1;
            bytes += entries[i].1;
            count += 1;
        }
        i += 1;
        let (op, ret) = match dir {
            Dir::Write => {
                *size = (*size).max(offset + bytes);
                (Op::Pwritev, bytes)
            }
            Dir::Read => (Op::Preadv, read_ret(offset, bytes, *size)),
        };
        out.push(Call::data(op, offset, Some(count), bytes, ret));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: Dir, e: &[(u64, u64)], coll: bool) -> Vec<Call> {
        let mut out = Vec::new();
        let mut size = 1 << 30;
        issue(&FbtlConfig::default(), dir, e, coll, &mut size, &mut out);
        out
    }

    #[test]
    fn one_entry_is_pwrite_and_separate_entries_are_pwritev_each() {
        let c = run(Dir::Write, &[(100, 10)], true);
        assert_eq!((c[0].op, c[0].iovcnt), (Op::Pwrite, None));
        let c = run(Dir::Write, &[(0, 10), (1 << 20, 10)], true);
        assert_eq!(c.len(), 2);
        assert!(c.iter().all(|c| c.op == Op::Pwritev && c.iovcnt == Some(1)));
        let c = run(Dir::Write, &[(0, 10), (10, 10), (1 << 20, 10)], false);
        assert_eq!(c[0].iovcnt, Some(2));
        assert_eq!(c[0].bytes, 20);
    }

    #[test]
    fn small_close_entries_are_sieved_only_when_collective_for_writes() {
        let e = [(0, 8), (100, 8), (200, 8)];
        let c = run(Dir::Write, &e, true);
        assert_eq!(
            c.iter()
                .map(|c| (c.op, c.offset, c.bytes))
                .collect::<Vec<_>>(),
            vec![(Op::Pread, 0, 208), (Op::Pwrite, 0, 208)]
        );
        let c = run(Dir::Write, &e, false);
        assert_eq!(c.len(), 3);
        let c = run(Dir::Read, &e, false);
        assert_eq!(c.len(), 1);
    }

    /// h5py's chunk fill at 64 ranks (rank 0's io array: its chunk, then 57 and 6 ranks'
    /// chunks across the chunk index's holes): sieved under a single thread, one `pwritev` per
    /// piece under `MPI_THREAD_MULTIPLE` (mpi4py's default), as real runs under each did.
    #[test]
    fn writes_are_not_sieved_under_thread_multiple() {
        let e = [(1032760, 64), (1038056, 3648), (1044320, 384)];
        let calls = |thread_multiple: bool| {
            let cfg = FbtlConfig {
                thread_multiple,
                ..FbtlConfig::default()
            };
            let (mut out, mut size) = (Vec::new(), 1032760);
            issue(&cfg, Dir::Write, &e, true, &mut size, &mut out);
            let ops = out.iter().map(|c| (c.op, c.offset, c.bytes, c.ret));
            (ops.collect::<Vec<_>>(), size)
        };
        assert_eq!(
            calls(false),
            (
                vec![
                    (Op::Pread, 1032760, 11944, 0),
                    (Op::Pwrite, 1032760, 11944, 11944)
                ],
                1044704
            )
        );
        assert_eq!(
            calls(true),
            (
                vec![
                    (Op::Pwritev, 1032760, 64, 64),
                    (Op::Pwritev, 1038056, 3648, 3648),
                    (Op::Pwritev, 1044320, 384, 384)
                ],
                1044704
            )
        );
    }
}
