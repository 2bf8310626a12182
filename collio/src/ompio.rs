//! Open MPI 4.1's OMPIO collective I/O, read from the v4.1.4 source:
//!
//! - which fcoll runs (`ompi/mca/fcoll/base/fcoll_base_file_select.c`): `individual` when the
//!   communicator has at most 2 ranks (priority 100), else `vulcan` (50) on anything but
//!   Lustre;
//! - the aggregators (`ompi/mca/common/ompio/common_ompio_file_view.c` and
//!   `common_ompio_aggregators.c`): chosen when the view is set (at `MPI_File_open` with the
//!   default view, and at every `MPI_File_set_view`) by the "simple" grouping's cost model,
//!   capped at one per `max_aggregators_ratio` ranks, as contiguous rank groups whose first
//!   rank aggregates;
//! - `vulcan`'s write (`fcoll_vulcan_file_write_all.c`): the call's byte range split in equal
//!   file domains, aligned to multiples of the domain size and dealt to the aggregators
//!   round-robin, each aggregator writing its domain's data in cycles of half
//!   `bytes_per_agg`;
//! - `vulcan`'s read (`fcoll_vulcan_file_read_all.c`): each group's aggregator reads the data
//!   of its own group in cycles of `bytes_per_agg`;
//! - `individual` (`common_ompio_file_write.c`, `_read.c`): every rank on its own, in cycles
//!   of `cycle_buffer_size`;
//! - and the posix fbtl for each io array ([`crate::fbtl`]).

use crate::fbtl::{self, FbtlConfig};
use crate::{Call, Collective, Dir, ModelError};

/// The size of OMPIO's default file view's filetype (`MCA_IO_DEFAULT_FILE_VIEW_SIZE`): the
/// chunk size the aggregator count is computed with when no view was set.
pub const DEFAULT_FILE_VIEW_SIZE: u64 = 6 * 1024 * 1024;

/// OMPIO's parameters that steer collective I/O, with their Open MPI 4.1.4 defaults
/// (`ompi_info --param io ompio --level 9`, `ompi_info --param fcoll all --level 9`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// OMPIO's num_aggregators parameter (-1: chosen by the grouping).
    pub num_aggregators: i64,
    /// `io_ompio_bytes_per_agg`.
    pub bytes_per_agg: u64,
    /// `io_ompio_cycle_buffer_size` (-1: the whole call in one cycle), for `individual`.
    pub cycle_buffer_size: i64,
    /// `io_ompio_grouping_option`; only 5 (simple) and 7 (simple+) are modelled.
    pub grouping_option: i64,
    /// `io_ompio_max_aggregators_ratio`.
    pub max_aggregators_ratio: i64,
    /// `io_ompio_aggregators_cutoff_threshold` (percent).
    pub aggregators_cutoff_threshold: i64,
    /// `fcoll_vulcan_async_io` (0: asynchronous writes when a call takes more than 2 cycles).
    pub vulcan_async_io: i64,
    /// The `cb_nodes` hint of the file (at open or set_view), which trumps
    /// `num_aggregators`.
    pub cb_nodes: Option<i64>,
    /// The `collective_buffering` hint: `false` selects the `individual` fcoll whatever the
    /// communicator's size.
    pub collective_buffering: bool,
    /// `mpirun --map-by node` was used for `MPI_COMM_WORLD`: groups then take every
    /// `num_groups`-th rank instead of contiguous ranks. A trace does not know this unless
    /// the tracer records it.
    pub map_by_node: bool,
    /// The first dimension of the file communicator's Cartesian topology, where it has two or
    /// more dimensions: OMPIO then groups by it (`mca_common_ompio_cart_based_grouping`)
    /// instead of by the view. Depends on the scale.
    pub cart_rows: Option<u64>,
    /// The posix fbtl's parameters.
    pub fbtl: FbtlConfig,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            num_aggregators: -1,
            bytes_per_agg: 32 << 20,
            cycle_buffer_size: 512 << 20,
            grouping_option: 5,
            max_aggregators_ratio: 8,
            aggregators_cutoff_threshold: 3,
            vulcan_async_io: 0,
            cb_nodes: None,
            collective_buffering: true,
            map_by_node: false,
            cart_rows: None,
            fbtl: FbtlConfig::default(),
        }
    }
}

/// What every rank's view contributes to the aggregator count, computed when the view is set
/// (`get_contiguous_chunk_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewStats {
    /// `f_cc_size`: the ranks' average of their filetype's average block length.
    pub cc_size: u64,
    /// `f_avg_view_size`: the ranks' average filetype size.
    pub avg_view_size: u64,
}

impl ViewStats {
    /// The stats of OMPIO's default view (and of any view whose filetype is its etype, a
    /// predefined type): one block of [`DEFAULT_FILE_VIEW_SIZE`] bytes on every rank.
    pub fn default_view() -> ViewStats {
        ViewStats {
            cc_size: DEFAULT_FILE_VIEW_SIZE,
            avg_view_size: DEFAULT_FILE_VIEW_SIZE,
        }
    }

    /// The stats from each rank's filetype blocks (lengths of the decoded filetype, one copy).
    /// Integer divisions as OMPIO's (per rank, then over the ranks).
    pub fn from_ranks<'a>(ranks: impl IntoIterator<Item = &'a [u64]>) -> ViewStats {
        let (mut avg, mut size, mut n) = (0u64, 0u64, 0u64);
        for blocks in ranks {
            let sum: u64 = blocks.iter().sum();
            if !blocks.is_empty() {
                avg += sum / blocks.len() as u64;
            }
            size += sum;
            n += 1;
        }
        let n = n.max(1);
        ViewStats {
            cc_size: avg / n,
            avg_view_size: size / n,
        }
    }
}

/// The block lengths OMPIO decodes from a rank's view (the filetype, one copy), for
/// [`ViewStats::from_ranks`]: the default view's one 6 MiB block when the filetype is the
/// etype and predefined, else the filetype's blocks.
pub fn view_blocks(view: &filetable::View, types: &filetable::Types) -> Vec<u64> {
    match &view.flat {
        Some(flat) => flat.blocks.iter().map(|b| b.1.max(0) as u64).collect(),
        None if view.filetype == view.etype && rsd::mpi::predefined(view.filetype).is_some() => {
            vec![DEFAULT_FILE_VIEW_SIZE]
        }
        // A dense derived filetype: one block of its size.
        None => vec![types.size(view.filetype).max(0) as u64],
    }
}

/// The fcoll component OMPIO selects for the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fcoll {
    /// Every rank does its own I/O (communicators of at most 2 ranks, or the
    /// `collective_buffering` hint false).
    Individual,
    /// Two-phase with even file partitioning.
    Vulcan,
}

/// The model's answer for one collective call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The fcoll component.
    pub fcoll: Fcoll,
    /// The aggregator ranks (empty for `individual`), in aggregator-index order.
    pub aggregators: Vec<u32>,
    /// `vulcan` write's file domain size (0 when no rank moves data); `None` otherwise.
    pub domain_size: Option<u64>,
    /// The number of cycles of the call (the most any aggregator or rank needs).
    pub cycles: u64,
    /// The aggregators wrote asynchronously (`aio_write`, more than 2 cycles): one `pwrite`
    /// per io array entry ([`fbtl::issue_async`]), as the tracer records requests.
    pub async_writes: bool,
    /// Per rank, the POSIX calls it issues, in order.
    pub calls: Vec<Vec<Call>>,
}

fn param(name: &'static str, value: i64, ok: bool) -> Result<(), ModelError> {
    if ok {
        Ok(())
    } else {
        Err(ModelError::BadParameter { name, value })
    }
}

/// The collective-I/O communication cost `cost_calc` of the simple grouping (a LogGP model
/// with DDR InfiniBand values), computed with the C code's integer and float steps.
fn cost_calc(p: u64, p_a: u64, d_p: u64, b_c: u64, dim: u32) -> f64 {
    let (l, o, big_g) = (0.00000184, 0.00000149, 0.00000000067);
    let mut g = 0.0000119;
    let file_domain = (p * d_p) / p_a;
    let n_r = file_domain as f64 / b_c as f64;
    let (n_as, n_ar, m_s);
    if dim == 1 {
        if d_p > b_c {
            n_ar = 1.0;
            n_as = 1.0;
            m_s = b_c as f64;
        } else {
            n_ar = b_c as f64 / d_p as f64;
            n_as = 1.0;
            m_s = d_p as f64;
        }
    } else {
        let p_x = (p as f64).sqrt() as i64;
        let p_y = p_x;
        n_as = p_a as f64 / p_x as f64;
        n_ar = p_y as f64;
        if d_p > (p_a * b_c / p) {
            m_s = (b_c as f64 / p_y as f64).min(d_p as f64);
        } else {
            m_s = ((d_p * p_x as u64) as f64 / p_a as f64).min(d_p as f64);
        }
    }
    let n_s = d_p as f64 / (n_as * m_s);
    if m_s < 33554432.0 {
        g = 0.00000108;
    }
    let t_send = n_s * (l + 2.0 * o + (n_as - 1.0) * g + (m_s - 1.0) * n_as * big_g);
    let t_recv = n_r * (l + 2.0 * o + (n_ar - 1.0) * g + (m_s - 1.0) * n_ar * big_g);
    t_send + t_recv
}

/// `mca_common_ompio_simple_grouping`'s number of groups (aggregators).
fn simple_groups(cfg: &Config, size: u64, view: ViewStats) -> u64 {
    let dtime_threshold = cfg.aggregators_cutoff_threshold as f64 / 100.0;
    let time_threshold = 0.001;
    let mode = if view.cc_size == view.avg_view_size {
        1
    } else {
        2
    };
    let incr = match size {
        0..16 => 2,
        16..128 => 4,
        128..4096 => 16,
        _ => 32,
    };
    let (d_p, b_c) = (view.cc_size, cfg.bytes_per_agg);
    let mut time_prev = cost_calc(size, 1, d_p, b_c, mode);
    let mut p_a_prev = 1;
    let mut dtime_prev = 0.0;
    let mut p_a = incr;
    while p_a <= size {
        let time = cost_calc(size, p_a, d_p, b_c, mode);
        let dtime_abs = time_prev - time;
        let dtime = dtime_abs / time_prev;
        let dtime_diff = if p_a == incr {
            dtime
        } else {
            dtime_prev - dtime
        };
        if dtime_diff < dtime_threshold || dtime_abs < time_threshold {
            break;
        }
        time_prev = time;
        dtime_prev = dtime;
        p_a_prev = p_a;
        p_a += incr;
    }
    let mut n = p_a_prev;
    let cap = size / cfg.max_aggregators_ratio as u64;
    if n > cap {
        n = cap;
    }
    n.max(1)
}

/// The rank groups of the initial grouping (`mca_common_ompio_forced_grouping`): group `p`
/// holds `size / n` ranks, one more for the first `size % n` groups; its first rank is its
/// aggregator.
fn groups(cfg: &Config, size: u64, n: u64) -> Vec<Vec<u32>> {
    let (group_size, rest) = (size / n, size % n);
    let mut k = 0u64;
    (0..n)
        .map(|p| {
            let len = group_size + u64::from(p < rest);
            (0..len)
                .map(|g| {
                    if cfg.map_by_node {
                        (g * n + p) as u32
                    } else {
                        k += 1;
                        (k - 1) as u32
                    }
                })
                .collect()
        })
        .collect()
}

/// The aggregator groups OMPIO sets up when the view is set, for a communicator of `size`
/// ranks. Depends on the view (`view`), the `cb_nodes` hint and the parameters.
pub fn initial_groups(
    cfg: &Config,
    size: u32,
    view: ViewStats,
) -> Result<Vec<Vec<u32>>, ModelError> {
    param(
        "io_ompio_max_aggregators_ratio",
        cfg.max_aggregators_ratio,
        cfg.max_aggregators_ratio > 0,
    )?;
    param(
        "io_ompio_grouping_option",
        cfg.grouping_option,
        cfg.grouping_option == 5 || cfg.grouping_option == 7,
    )?;
    param(
        "io_ompio_bytes_per_agg",
        cfg.bytes_per_agg as i64,
        cfg.bytes_per_agg > 1,
    )?;
    let size = u64::from(size);
    let n = if cfg.num_aggregators != -1 || cfg.cb_nodes.is_some() {
        // A requested count: the hint trumps the parameter; at most one per rank.
        let n = cfg.cb_nodes.unwrap_or(cfg.num_aggregators);
        param(
            "the cb_nodes hint or OMPIO's num_aggregators parameter",
            n,
            n > 0,
        )?;
        (n as u64).min(size)
    } else if let Some(rows) = cfg.cart_rows {
        // A Cartesian communicator of 2+ dimensions (grouping options 5 and 7): one group per
        // row of the grid, `size / rows` ranks each, in the grid's row-major order (the
        // communicator's, without reordering), its first rank the aggregator; no cap by
        // io_ompio_max_aggregators_ratio (only the simple grouping applies it).
        param(
            "the first dimension of the file communicator's Cartesian grid",
            rows as i64,
            rows > 0 && size % rows == 0,
        )?;
        let per = (size / rows) as u32;
        return Ok((0..rows as u32)
            .map(|k| (k * per..(k + 1) * per).collect())
            .collect());
    } else {
        // Grouping option 7 (simple+) takes the chunk size as the default view's.
        let view = if cfg.grouping_option == 7 {
            ViewStats {
                cc_size: DEFAULT_FILE_VIEW_SIZE,
                avg_view_size: view.avg_view_size,
            }
        } else {
            view
        };
        simple_groups(cfg, size, view)
    };
    Ok(groups(cfg, size, n))
}

/// The POSIX calls of one collective call on a file whose communicator has
/// `coll.regions.len()` ranks and whose view gave `view`.
pub fn model(cfg: &Config, view: ViewStats, coll: &Collective) -> Result<Outcome, ModelError> {
    let size = coll.regions.len();
    if size == 0 {
        return Err(ModelError::NoRanks);
    }
    // The grouping happens at set_view time whatever fcoll then runs (it is what vulcan
    // uses); individual ignores it.
    let groups = initial_groups(cfg, size as u32, view)?;
    if size <= 2 || !cfg.collective_buffering {
        return individual(cfg, coll);
    }
    match coll.dir {
        Dir::Write => vulcan_write(cfg, &groups, coll),
        Dir::Read => vulcan_read(cfg, &groups, coll),
    }
}

/// `individual`: each rank alone (`mca_common_ompio_file_write`/`_read`), its regions in
/// cycles of `cycle_buffer_size` bytes, each cycle one fbtl call, not flagged collective.
/// The memory side is taken as contiguous (an io array entry also breaks where the user's
/// memory datatype does; a trace records the datatype but this model does not decode it).
fn individual(cfg: &Config, coll: &Collective) -> Result<Outcome, ModelError> {
    let mut calls = Vec::with_capacity(coll.regions.len());
    let mut max_cycles = 0;
    for regions in &coll.regions {
        let total: u64 = regions.iter().map(|r| r.1).sum();
        let per_cycle = if cfg.cycle_buffer_size == -1 {
            total
        } else {
            param(
                "io_ompio_cycle_buffer_size",
                cfg.cycle_buffer_size,
                cfg.cycle_buffer_size > 0,
            )?;
            cfg.cycle_buffer_size as u64
        };
        let mut out = Vec::new();
        // Each rank sees the size as it was plus its own writes (the other rank's writes
        // race with its reads).
        let mut size = coll.file_size;
        let mut cycles = 0;
        for chunk in chunks(regions, per_cycle.max(1)) {
            cycles += 1;
            fbtl::issue(&cfg.fbtl, coll.dir, &chunk, false, &mut size, &mut out);
        }
        max_cycles = max_cycles.max(cycles);
        calls.push(out);
    }
    Ok(Outcome {
        fcoll: Fcoll::Individual,
        aggregators: Vec::new(),
        domain_size: None,
        cycles: max_cycles,
        async_writes: false,
        calls,
    })
}

/// Cuts a stream of (offset, length) pieces into consecutive chunks of `per` bytes (the last
/// one shorter), splitting pieces at the cuts.
fn chunks(pieces: &[(u64, u64)], per: u64) -> Vec<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut room = per;
    for &(mut off, mut len) in pieces {
        while len > 0 {
            let take = len.min(room);
            cur.push((off, take));
            off += take;
            len -= take;
            room -= take;
            if room == 0 {
                out.push(std::mem::take(&mut cur));
                room = per;
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Sorts pieces by file offset and merges file-contiguous neighbours: the io array the fcoll
/// hands the fbtl for one cycle (steps 7d-7f). Sorted stably: OMPIO's heap sorts are not
/// stable, so overlapping accesses of several ranks at one offset may come out in another
/// order (not modelled; the calls' offsets and sizes are the same unless lengths differ).
fn io_array(mut pieces: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    pieces.sort_by_key(|p| p.0);
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(pieces.len());
    for (off, len) in pieces {
        match out.last_mut() {
            Some(last) if last.0 + last.1 == off => last.1 += len,
            _ => out.push((off, len)),
        }
    }
    out
}

/// `vulcan`'s write: even file partitioning over the initial aggregators.
fn vulcan_write(
    cfg: &Config,
    groups: &[Vec<u32>],
    coll: &Collective,
) -> Result<Outcome, ModelError> {
    let aggregators: Vec<u32> = groups.iter().map(|g| g[0]).collect();
    let n_aggr = aggregators.len() as u64;
    // mca_fcoll_vulcan_minmax: each rank's first region's offset and last region's end (in
    // data order, not sorted), 0 and 0 for a rank without data, reduced over all ranks.
    let ends = |r: &Vec<(u64, u64)>| match (r.first(), r.last()) {
        (Some(f), Some(l)) => (f.0, l.0 + l.1),
        _ => (0, 0),
    };
    let gmin = coll.regions.iter().map(|r| ends(r).0).min().unwrap_or(0);
    let gmax = coll.regions.iter().map(|r| ends(r).1).max().unwrap_or(0);
    let span = gmax.saturating_sub(gmin);
    let domain = span.div_ceil(n_aggr);
    // mca_fcoll_vulcan_break_file_view: each region cut at multiples of the domain size
    // (from offset 0, not from the lowest offset), the piece going to aggregator
    // (offset / domain) % n. Per aggregator, the pieces of all ranks, in rank order.
    let mut per_aggr: Vec<Vec<(u64, u64)>> = vec![Vec::new(); aggregators.len()];
    for regions in &coll.regions {
        for &(mut off, mut len) in regions {
            while len > 0 {
                // No domain (0) only when no rank moves data.
                let Some(d) = off.checked_div(domain) else {
                    break;
                };
                let owner = (d % n_aggr) as usize;
                let take = len.min((d + 1) * domain - off);
                per_aggr[owner].push((off, take));
                off += take;
                len -= take;
            }
        }
    }
    // Half the buffer per cycle: vulcan overlaps the exchange of one cycle with the write of
    // the previous one.
    let per_cycle = cfg.bytes_per_agg / 2;
    let cycles = per_aggr
        .iter()
        .map(|p| p.iter().map(|x| x.1).sum::<u64>().div_ceil(per_cycle))
        .max()
        .unwrap_or(0);
    // fcoll_vulcan_async_io 0 (automatic) writes with ipwritev (aio_write) when the call
    // takes more than 2 cycles; 1 always; 2 never.
    let async_writes = match cfg.vulcan_async_io {
        1 => true,
        0 => cycles > 2,
        _ => false,
    };
    let mut calls = vec![Vec::new(); coll.regions.len()];
    for (i, pieces) in per_aggr.into_iter().enumerate() {
        // The global list is sorted by offset (ompi_fcoll_base_sort_iovec) before the
        // cycles cut it.
        let mut sorted = pieces;
        sorted.sort_by_key(|p| p.0);
        let out = &mut calls[aggregators[i] as usize];
        let mut size = coll.file_size;
        for chunk in chunks(&sorted, per_cycle) {
            // write_init's split_iov_array takes at most write_chunksize (= the cycle size)
            // bytes: the whole cycle.
            let entries = io_array(chunk);
            if async_writes {
                fbtl::issue_async(Dir::Write, &entries, &mut size, out);
            } else {
                fbtl::issue(&cfg.fbtl, Dir::Write, &entries, true, &mut size, out);
            }
        }
    }
    Ok(Outcome {
        fcoll: Fcoll::Vulcan,
        aggregators,
        domain_size: Some(domain),
        cycles,
        async_writes,
        calls,
    })
}

/// `vulcan`'s read: each group's aggregator reads the data of its group's ranks (sorted by
/// offset) in cycles of `bytes_per_agg` bytes.
fn vulcan_read(
    cfg: &Config,
    groups: &[Vec<u32>],
    coll: &Collective,
) -> Result<Outcome, ModelError> {
    let mut calls = vec![Vec::new(); coll.regions.len()];
    let mut cycles = 0;
    for g in groups {
        let mut pieces: Vec<(u64, u64)> = g
            .iter()
            .flat_map(|&r| coll.regions[r as usize].iter().copied())
            .collect();
        pieces.sort_by_key(|p| p.0);
        let out = &mut calls[g[0] as usize];
        let mut size = coll.file_size;
        let parts = chunks(&pieces, cfg.bytes_per_agg);
        cycles = cycles.max(parts.len() as u64);
        for chunk in parts {
            fbtl::issue(
                &cfg.fbtl,
                Dir::Read,
                &io_array(chunk),
                false,
                &mut size,
                out,
            );
        }
    }
    Ok(Outcome {
        fcoll: Fcoll::Vulcan,
        aggregators: groups.iter().map(|g| g[0]).collect(),
        domain_size: None,
        cycles,
        async_writes: false,
        calls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cartesian_communicator_takes_one_aggregator_per_row() {
        // 12 ranks on a 3x2x2 grid: three rows of four, whatever the view and the ratio cap
        // (the simple grouping would take one for 12 ranks).
        let cfg = Config {
            cart_rows: Some(3),
            ..Config::default()
        };
        let g = initial_groups(&cfg, 12, ViewStats::default_view()).unwrap();
        assert_eq!(
            g,
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9, 10, 11]]
        );
        // A requested count still trumps it, as in OMPIO's set_view.
        let forced = Config {
            cb_nodes: Some(2),
            ..cfg.clone()
        };
        assert_eq!(
            initial_groups(&forced, 12, ViewStats::default_view())
                .unwrap()
                .len(),
            2
        );
        // A grid whose rows do not divide the communicator is not one MPI would have built.
        let bad = Config {
            cart_rows: Some(5),
            ..Config::default()
        };
        assert!(initial_groups(&bad, 12, ViewStats::default_view()).is_err());
    }

    #[test]
    fn default_view_takes_one_aggregator_per_8_ranks_at_most() {
        let cfg = Config::default();
        let v = ViewStats::default_view();
        for size in [1u32, 3, 8, 15] {
            assert_eq!(initial_groups(&cfg, size, v).unwrap().len(), 1, "{size}");
        }
        let g = initial_groups(&cfg, 16, v).unwrap();
        assert_eq!(g.iter().map(|g| g[0]).collect::<Vec<_>>(), vec![0, 8]);
        let g = initial_groups(&cfg, 17, v).unwrap();
        assert_eq!(g.iter().map(|g| g[0]).collect::<Vec<_>>(), vec![0, 9]);
    }

    #[test]
    fn segmented_write_at_16_ranks_splits_the_range_in_two_domains() {
        // 16 ranks each write 64 KiB at r * 256 KiB: the range [0, 15*256K + 64K) in two
        // domains, aggregators 0 and 8.
        let regions: Vec<Vec<(u64, u64)>> = (0..16).map(|r| vec![(r * 262144, 65536)]).collect();
        let coll = Collective::new(Dir::Write, regions, 0);
        let o = model(&Config::default(), ViewStats::default_view(), &coll).unwrap();
        assert_eq!(o.aggregators, vec![0, 8]);
        assert_eq!(o.domain_size, Some((15 * 262144 + 65536) / 2));
        assert_eq!(o.calls[0].len(), 8);
        assert_eq!(o.calls[8].len(), 8);
        assert!(o.calls[1].is_empty());
    }
}
