//! ROMIO 3.2.1 as Open MPI 4.1.4 ships it (`--mca io romio321`), on a UFS (POSIX) file
//! system, read from `ompi/mca/io/romio321/romio/adio/common/` at v4.1.4: the generic
//! two-phase collective write (`ad_write_coll.c`) and read (`ad_read_coll.c`), the file
//! domains (`ad_aggregate.c`), the hints' defaults (`ad_hints.c`, `cb_config_list.c`) and the
//! contiguous calls (`ad_write.c`, `ad_read.c`).
//!
//! - The aggregators: `cb_config_list` `*:1` (one process per host: the first rank of each
//!   node), at most `cb_nodes` of them.
//! - `romio_cb_write`/`romio_cb_read` `automatic`: two-phase only when the ranks' accesses
//!   interleave (a rank's first byte before the previous rank's last), else every rank
//!   accesses independently.
//! - Two-phase: the call's byte range `[min start, max end]` cut in `cb_nodes` equal file
//!   domains from the lowest offset; each aggregator goes through the span its domain's
//!   requests cover in windows of `cb_buffer_size` bytes, and for each window holding data
//!   writes the whole window (`pwrite`), read first (`pread`) when the requests leave a hole
//!   in it (read-modify-write); a read reads each window whole.
//! - A contiguous `pread` loops until it has all its bytes or reads 0 (end of file): a read
//!   past the end of the file is one short `pread` and one that returns 0.

use crate::{Call, Collective, Dir, ModelError};
use rsd::op::Op;

/// A ROMIO `enable`/`disable`/`automatic` hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// `enable`.
    Enable,
    /// `disable`.
    Disable,
    /// `automatic`.
    Automatic,
}

/// The `cb_config_list` hint: which processes may aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigList {
    /// `*:1` (the default): the first process of each node.
    OnePerNode,
    /// `*:*`: any process, ranks 0 to `cb_nodes - 1`.
    Any,
}

/// ROMIO's hints that steer collective I/O, with their defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `cb_buffer_size`.
    pub cb_buffer_size: u64,
    /// The `cb_nodes` hint, if the program passed one (the default is the process count,
    /// which `*:1` then caps at one per node: a hint of 2 on one node still gives one
    /// aggregator, seen with `ROMIO_HINTS` at 4 ranks).
    pub cb_nodes: Option<u32>,
    /// `cb_config_list`.
    pub cb_config_list: ConfigList,
    /// `romio_cb_write`.
    pub cb_write: Switch,
    /// `romio_cb_read`.
    pub cb_read: Switch,
    /// `romio_min_fdomain_size` (0).
    pub min_fdomain_size: u64,
    /// `ind_wr_buffer_size`: the data-sieving window of an independent noncontiguous write.
    pub ind_wr_buffer_size: u64,
    /// `ind_rd_buffer_size`: the data-sieving window of an independent noncontiguous read.
    pub ind_rd_buffer_size: u64,
    /// `romio_ds_write`.
    pub ds_write: Switch,
    /// `romio_ds_read`.
    pub ds_read: Switch,
    /// The node of each rank of the communicator, in rank order (node ids in any form); an
    /// empty list means every rank on one node.
    pub nodes: Vec<u64>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            cb_buffer_size: 16 << 20,
            cb_nodes: None,
            cb_config_list: ConfigList::OnePerNode,
            cb_write: Switch::Automatic,
            cb_read: Switch::Automatic,
            min_fdomain_size: 0,
            ind_wr_buffer_size: 512 << 10,
            ind_rd_buffer_size: 4 << 20,
            ds_write: Switch::Automatic,
            ds_read: Switch::Automatic,
            nodes: Vec::new(),
        }
    }
}

/// The model's answer for one collective call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Two-phase collective buffering ran (else every rank accessed independently).
    pub two_phase: bool,
    /// The aggregator ranks (`ranklist`).
    pub aggregators: Vec<u32>,
    /// The file domain size (two-phase only).
    pub domain_size: Option<u64>,
    /// Per rank, the POSIX calls it issues, in order.
    pub calls: Vec<Vec<Call>>,
}

/// The aggregators (`ranklist`): for `*:1` the first rank of each node, in rank order, for
/// `*:*` the first ranks; at most `cb_nodes`.
pub fn aggregators(cfg: &Config, size: u32) -> Vec<u32> {
    if cfg.cb_config_list == ConfigList::Any {
        return (0..cfg.cb_nodes.unwrap_or(size).clamp(1, size.max(1))).collect();
    }
    // A set, not a list: at 2^20 ranks on 32,768 nodes a scan of the nodes seen so far for
    // every rank took most of an extrapolation's time.
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for r in 0..size {
        let node = cfg.nodes.get(r as usize).copied().unwrap_or(0);
        if seen.insert(node) {
            out.push(r);
        }
    }
    if let Some(n) = cfg.cb_nodes {
        out.truncate(n.max(1) as usize);
    }
    out
}

/// `ADIOI_GEN_WriteContig`: one `pwrite` (the loop on short writes never runs on a local
/// file system).
fn write_contig(offset: u64, len: u64, size: &mut u64, out: &mut Vec<Call>) {
    if len == 0 {
        return;
    }
    *size = (*size).max(offset + len);
    out.push(Call::data(Op::Pwrite, offset, None, len, len));
}

/// `ADIOI_GEN_ReadContig`: `pread` until all bytes are read or one returns 0.
fn read_contig(offset: u64, len: u64, size: u64, out: &mut Vec<Call>) {
    let mut done = 0;
    while done < len {
        let at = offset + done;
        let got = (len - done).min(size.saturating_sub(at));
        out.push(Call::data(Op::Pread, at, None, len - done, got));
        if got == 0 {
            break;
        }
        done += got;
    }
}

/// `ADIOI_GEN_WriteStrided` for a contiguous buffer and a noncontiguous view, with data
/// sieving (`romio_ds_write` automatic): the whole range locked (`F_SETLKW`), each window of
/// `ind_wr_buffer_size` bytes from the first request not yet covered read (`pread`) and
/// written back whole (`pwrite`), the range unlocked (`F_SETLK`).
fn write_strided(
    cfg: &Config,
    regions: &[(u64, u64)],
    file_size: u64,
    out: &mut Vec<Call>,
) -> Result<(), ModelError> {
    if cfg.ds_write == Switch::Disable {
        return Err(ModelError::Unmodelled(
            "ROMIO's independent noncontiguous write without data sieving".into(),
        ));
    }
    let max = cfg.ind_wr_buffer_size.max(1) as i64;
    let end_offset = regions.last().map_or(0, |l| (l.0 + l.1) as i64 - 1);
    let mut size = file_size;
    out.push(Call::fcntl(i64::from(libc::F_SETLKW)));
    let (mut wb_off, mut wb_len) = (0i64, 0i64);
    for &(off, len) in regions {
        let (req_off, mut req_len) = (off as i64, len as i64);
        if req_off >= wb_off + wb_len {
            if wb_len > 0 {
                write_contig(wb_off as u64, wb_len as u64, &mut size, out);
            }
            wb_off = req_off;
            wb_len = max.min(end_offset - wb_off + 1);
            read_contig(wb_off as u64, wb_len as u64, size, out);
        }
        let mut write_sz = req_len.min(wb_off + wb_len - req_off);
        while write_sz != req_len {
            write_contig(wb_off as u64, wb_len as u64, &mut size, out);
            req_len -= write_sz;
            wb_off += wb_len;
            wb_len = max.min(end_offset - wb_off + 1);
            read_contig(wb_off as u64, wb_len as u64, size, out);
            write_sz = req_len.min(wb_len);
        }
    }
    if wb_len > 0 {
        write_contig(wb_off as u64, wb_len as u64, &mut size, out);
    }
    out.push(Call::fcntl(i64::from(libc::F_SETLK)));
    Ok(())
}

/// `ADIOI_GEN_ReadStrided` for a contiguous buffer and a noncontiguous view, with data
/// sieving (`romio_ds_read` automatic; no lock unless atomic mode): windows of
/// `ind_rd_buffer_size` bytes from the first request not yet covered, a request crossing a
/// window's end reading on from there.
fn read_strided(
    cfg: &Config,
    regions: &[(u64, u64)],
    file_size: u64,
    out: &mut Vec<Call>,
) -> Result<(), ModelError> {
    if cfg.ds_read == Switch::Disable {
        return Err(ModelError::Unmodelled(
            "ROMIO's independent noncontiguous read without data sieving".into(),
        ));
    }
    let max = cfg.ind_rd_buffer_size.max(1) as i64;
    let end_offset = regions.last().map_or(0, |l| (l.0 + l.1) as i64 - 1);
    let (mut rb_off, mut rb_len) = (0i64, 0i64);
    for &(off, len) in regions {
        let (req_off, req_len) = (off as i64, len as i64);
        if req_off >= rb_off + rb_len {
            rb_off = req_off;
            rb_len = max.min(end_offset - rb_off + 1);
            read_contig(rb_off as u64, rb_len as u64, file_size, out);
        }
        while req_len > rb_off + rb_len - req_off {
            let partial = rb_off + rb_len - req_off;
            rb_off += rb_len - partial;
            rb_len = partial + max.min(end_offset - rb_off + 1);
            read_contig(
                (rb_off + partial) as u64,
                (rb_len - partial) as u64,
                file_size,
                out,
            );
        }
    }
    Ok(())
}

/// The POSIX calls of one collective call.
pub fn model(cfg: &Config, coll: &Collective) -> Result<Outcome, ModelError> {
    let n = coll.regions.len();
    if n == 0 {
        return Err(ModelError::NoRanks);
    }
    if cfg.cb_buffer_size == 0 {
        return Err(ModelError::BadParameter {
            name: "cb_buffer_size",
            value: 0,
        });
    }
    let aggs = aggregators(cfg, n as u32);
    // ADIOI_Calc_my_off_len: the first byte of the first region and the last byte of the
    // last; a rank without data starts where its offset points and ends one byte before.
    let ends: Vec<(i64, i64)> = coll
        .regions
        .iter()
        .enumerate()
        .map(|(r, regions)| match (regions.first(), regions.last()) {
            (Some(f), Some(l)) => (f.0 as i64, (l.0 + l.1) as i64 - 1),
            _ => {
                let st = coll.starts.get(r).copied().unwrap_or(0) as i64;
                (st, st - 1)
            }
        })
        .collect();
    let interleaved = ends.windows(2).any(|w| w[1].0 < w[0].1 && w[1].0 <= w[1].1);
    let switch = match coll.dir {
        Dir::Write => cfg.cb_write,
        Dir::Read => cfg.cb_read,
    };
    let mut calls = vec![Vec::new(); n];
    if switch == Switch::Disable || (!interleaved && switch == Switch::Automatic) {
        // Independent accesses: through a contiguous filetype one ADIO_WriteContig/
        // ReadContig; through a noncontiguous one ADIOI_GEN_WriteStrided/ReadStrided, whose
        // access within one block of the filetype is one contiguous call (a write locked
        // around it: ADIOI_WRITE_LOCK, then ADIOI_UNLOCK, even for no byte) and otherwise
        // data sieving. The user's buffer is taken as contiguous (the memory datatype is not
        // decoded).
        for (r, regions) in coll.regions.iter().enumerate() {
            let contig = coll.contig_filetype.get(r).copied().unwrap_or(true);
            let out = &mut calls[r];
            match regions.as_slice() {
                [] if contig || coll.dir == Dir::Read => {}
                [] => {
                    out.push(Call::fcntl(i64::from(libc::F_SETLKW)));
                    out.push(Call::fcntl(i64::from(libc::F_SETLK)));
                }
                [(off, len)] => match coll.dir {
                    Dir::Write => {
                        let mut size = coll.file_size;
                        if !contig {
                            out.push(Call::fcntl(i64::from(libc::F_SETLKW)));
                        }
                        write_contig(*off, *len, &mut size, out);
                        if !contig {
                            out.push(Call::fcntl(i64::from(libc::F_SETLK)));
                        }
                    }
                    Dir::Read => read_contig(*off, *len, coll.file_size, out),
                },
                _ => match coll.dir {
                    Dir::Write => write_strided(cfg, regions, coll.file_size, out)?,
                    Dir::Read => read_strided(cfg, regions, coll.file_size, out)?,
                },
            }
        }
        return Ok(Outcome {
            two_phase: false,
            aggregators: aggs,
            domain_size: None,
            calls,
        });
    }
    if coll.regions.iter().all(|r| r.is_empty()) {
        return Ok(Outcome {
            two_phase: true,
            aggregators: aggs,
            domain_size: None,
            calls,
        });
    }
    // ADIOI_Calc_file_domains (no striping_unit hint: the "old way").
    let min_st = ends.iter().map(|e| e.0).min().expect("ranks");
    let max_end = ends.iter().map(|e| e.1).max().expect("ranks");
    let na = aggs.len() as i64;
    let fd_size = ((max_end - min_st + 1 + na - 1) / na).max(cfg.min_fdomain_size as i64);
    let fd_end = |i: i64| (min_st + (i + 1) * fd_size - 1).min(max_end);
    // ADIOI_Calc_my_req / ADIOI_Calc_aggregator: each region cut at the domain ends; the
    // pieces of every rank for each aggregator, in rank order then data order.
    let mut others: Vec<Vec<Vec<(i64, i64)>>> = vec![vec![Vec::new(); n]; aggs.len()];
    for (r, regions) in coll.regions.iter().enumerate() {
        for &(off, len) in regions {
            let (mut off, mut len) = (off as i64, len as i64);
            while len > 0 {
                let idx = ((off - min_st + fd_size) / fd_size - 1).clamp(0, na - 1);
                let avail = fd_end(idx) - off + 1;
                let take = len.min(avail).max(1);
                others[idx as usize][r].push((off, take));
                off += take;
                len -= take;
            }
        }
    }
    let cb = cfg.cb_buffer_size as i64;
    for (a, reqs) in others.iter().enumerate() {
        let all: Vec<(i64, i64)> = reqs.iter().flatten().copied().collect();
        if all.is_empty() {
            continue;
        }
        let st_loc = all.iter().map(|p| p.0).min().expect("nonempty");
        let end_loc = all.iter().map(|p| p.0 + p.1 - 1).max().expect("nonempty");
        let out = &mut calls[aggs[a] as usize];
        let mut size = coll.file_size;
        let mut off = st_loc;
        while off <= end_loc {
            let win = cb.min(end_loc - off + 1);
            // The requests' parts in [off, off + win).
            let mut parts: Vec<(i64, i64)> = all
                .iter()
                .filter_map(|&(o, l)| {
                    let s = o.max(off);
                    let e = (o + l).min(off + win);
                    (s < e).then_some((s, e - s))
                })
                .collect();
            if !parts.is_empty() {
                match coll.dir {
                    Dir::Read => read_contig(off as u64, win as u64, size, out),
                    Dir::Write => {
                        // ADIOI_W_Exchange_data's hole check on the heap-merged parts.
                        parts.sort_by_key(|p| p.0);
                        let mut hole = parts[0].0 != off;
                        if !hole {
                            let mut covered = parts[0].1;
                            let mut i = 1;
                            while i < parts.len() && parts[i].0 <= parts[0].0 + covered {
                                covered = covered.max(parts[i].0 + parts[i].1 - parts[0].0);
                                i += 1;
                            }
                            hole = i < parts.len() || covered != win;
                        }
                        if hole {
                            read_contig(off as u64, win as u64, size, out);
                        }
                        write_contig(off as u64, win as u64, &mut size, out);
                    }
                }
            }
            off += win;
        }
    }
    Ok(Outcome {
        two_phase: true,
        aggregators: aggs,
        domain_size: Some(fd_size as u64),
        calls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_read_back_is_one_window_read_by_rank_0() {
        // 4 ranks read the neighbour's 64 KiB: rank 3 reads rank 0's part, below rank 2's.
        let regions = (0..4u64)
            .map(|r| vec![(((r + 1) % 4) * 131072, 65536)])
            .collect();
        let o = model(
            &Config::default(),
            &Collective::new(Dir::Read, regions, 1 << 20),
        )
        .unwrap();
        assert!(o.two_phase);
        assert_eq!(o.aggregators, vec![0]);
        assert_eq!(
            o.calls[0],
            vec![Call::data(Op::Pread, 0, None, 458752, 458752)]
        );
    }

    #[test]
    fn cb_nodes_is_capped_by_the_config_list() {
        // Seen at 4 ranks on one node with ROMIO_HINTS: cb_nodes 2 alone gives one
        // aggregator, with cb_config_list *:* ranks 0 and 1.
        let mut cfg = Config {
            cb_nodes: Some(2),
            ..Config::default()
        };
        assert_eq!(aggregators(&cfg, 4), vec![0]);
        cfg.cb_config_list = ConfigList::Any;
        assert_eq!(aggregators(&cfg, 4), vec![0, 1]);
        // The read-back of a 1000000-byte checkpoint then is two 500000-byte windows.
        let regions = (0..4u64)
            .map(|r| vec![(((r + 1) % 4) * 250000, 250000)])
            .collect();
        let o = model(&cfg, &Collective::new(Dir::Read, regions, 1000000)).unwrap();
        assert_eq!(
            o.calls[0],
            vec![Call::data(Op::Pread, 0, None, 500000, 500000)]
        );
        assert_eq!(
            o.calls[1],
            vec![Call::data(Op::Pread, 500000, None, 500000, 500000)]
        );
    }

    #[test]
    fn ordered_writes_are_independent() {
        let regions = (0..4u64).map(|r| vec![(r * 100, 100)]).collect();
        let o = model(&Config::default(), &Collective::new(Dir::Write, regions, 0)).unwrap();
        assert!(!o.two_phase);
        assert!(
            o.calls
                .iter()
                .all(|c| c.len() == 1 && c[0].op == Op::Pwrite)
        );
    }
}
