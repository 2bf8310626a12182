//! Collective MPI-IO calls whose nested POSIX calls are derived by a model of the MPI
//! library's collective buffering instead of fitted (issue 13).
//!
//! The POSIX calls nested in `MPI_File_write_at_all` and its kin are made by the library's
//! aggregators, chosen from the rank count, so their shape changes with the scale and no
//! per-event model of `n` fits them. Instead:
//! 1. [`plan`] walks every rank of every input through a file table, assembles each
//!    collective call from all ranks' regions, runs `collio`'s model with the configuration
//!    the trace header records, and compares the model's calls with the recorded children.
//!    A call site whose every call is reproduced at every scale is *derived*.
//! 2. [`strip`] removes the derived call sites' children from the inputs, which are then
//!    fitted as usual.
//! 3. [`insert`] expands every rank of the extrapolated trace, runs the model on each
//!    collective call at the target scale and puts its calls back as children, then
//!    re-compresses the ranks and merges them, as the tracer does at `MPI_Finalize`.
//!
//! The derived children's timing is the mean the inputs recorded for that op under that call
//! site (gap and duration): timing is fitted or averaged everywhere in an extrapolated trace.

use crate::Explain;
use collio::ompio::{self, Config, ViewStats};
use collio::romio;
use collio::{Call, Collective, Dir};
use filetable::{Effect, FileTable, Offline};
use rsd::op::{Op, Param, args};
use rsd::trace::{Event, flatten_event, visit};
use rsd::{Compressor, Header, RawEvent, Trace, TraceFile};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The largest target this module derives at: every rank is expanded, modelled and
/// re-compressed, which is linear in the rank count. Beyond it extrap falls back to fitting
/// the nested calls (the symbolic derivation for 2^20 ranks is issue 13's item 4, not done).
pub const DERIVE_LIMIT: u32 = 1 << 16;

/// A collective call site: the MPI-IO op and its call-site signature.
pub(crate) type Site = (Op, u64);

/// The collective data calls of the MPI-IO layer and their direction.
fn collective_dir(op: Op) -> Option<Dir> {
    match op {
        Op::FileWriteAll | Op::FileWriteAtAll => Some(Dir::Write),
        Op::FileReadAll | Op::FileReadAtAll => Some(Dir::Read),
        _ => None,
    }
}

/// What the derivation keeps of a recorded nested call to issue the model's calls like it:
/// the call site inside the library and the mean timing.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChildTemplate {
    sig: u64,
    gap_sum: f64,
    dur_sum: f64,
    count: u64,
}

/// What [`plan`] found.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Call sites whose nested calls the model reproduced at every input scale.
    pub derived: BTreeSet<Site>,
    /// Per derived call site and nested op, how the inputs recorded it.
    children: BTreeMap<(Site, Op), ChildTemplate>,
    /// The first nested call the model got wrong, for a refusal.
    pub failure: Option<String>,
    /// Why collective I/O was not modelled at all, for `--explain`.
    pub skipped: Option<String>,
}

/// One collective call of one rank.
struct RankColl {
    /// Index of the call in the rank's events.
    event: usize,
    site: Site,
    path: String,
    dir: Dir,
    regions: Vec<(u64, u64)>,
    /// Where the access starts in the file (for a rank without data: where its offset or
    /// file pointer points through the view).
    start: u64,
    view_blocks: Vec<u64>,
    /// The file size this rank knows when it enters the call.
    size_before: u64,
    /// The descriptor the library opened the file with on this rank (the nested `open` of
    /// `MPI_File_open`), which its nested calls use.
    fd: Option<i64>,
    /// The file was opened on `MPI_COMM_WORLD`: only then are all ranks the communicator.
    world: bool,
}

/// One rank's calls with their (mean) timing, and its collective calls.
struct RankCalls {
    events: Vec<RawEvent>,
    colls: Vec<RankColl>,
}

fn mean(s: &rsd::timing::Stats) -> u64 {
    s.mean.max(0.0).round() as u64
}

/// Event `e` of `rank` at loop indices `idx`, children included, each with its node's mean
/// timing.
fn raw_of(e: &Event, rank: u32, idx: &mut Vec<u64>) -> RawEvent {
    let mut flat = flatten_event(e, rank, idx);
    let mut children = Vec::new();
    if !e.children.is_empty() {
        visit(&e.children, rank, idx, &mut |c, idx| {
            children.push(raw_of(c, rank, idx));
            true
        });
    }
    RawEvent {
        op: flat.op,
        sig: flat.sig,
        path: flat.path.take(),
        params: std::mem::take(&mut flat.params),
        gap_ns: mean(&e.timing.gap),
        dur_ns: mean(&e.timing.dur),
        children,
    }
}

/// Expands `rank` of `trace` and finds its collective calls.
fn walk_rank(trace: &Trace, rank: u32) -> RankCalls {
    let mut events = Vec::new();
    let mut idx = Vec::new();
    visit(&trace.nodes, rank, &mut idx, &mut |e, idx| {
        events.push(raw_of(e, rank, idx));
        true
    });
    let mut table = FileTable::new();
    let mut sizes: HashMap<String, u64> = HashMap::new();
    // Per MPI file handle: the library's descriptor and whether it was opened on the world.
    let mut opened: HashMap<i64, (Option<i64>, bool)> = HashMap::new();
    let mut colls = Vec::new();
    for (i, e) in events.iter().enumerate() {
        // The data position (etypes) a collective call starts at, before the call moves the
        // file pointer: a rank without data still has a start (see `Collective::starts`).
        let etypes = match e.op.get(&e.params, Param::Offset) {
            Some(o) if collective_dir(e.op).is_some() => Some(o),
            _ if collective_dir(e.op).is_some() => {
                e.op.get(&e.params, Param::Fh)
                    .and_then(|fh| table.mpi_file(fh))
                    .map(|f| f.pos)
            }
            _ => None,
        };
        let (effect, _) = table.apply(e.op, &e.params, e.path.as_deref(), None, &mut Offline);
        let path_of = |t: &FileTable, id| t.file(id).and_then(|f| f.path.clone());
        match effect {
            Effect::Open(_) if e.op == Op::FileOpen => {
                let fd = e
                    .children
                    .iter()
                    .rev()
                    .find(|c| matches!(c.op, Op::Open | Op::Openat) && c.path == e.path)
                    .map(|c| c.op.param(&c.params, Param::Fd));
                let world = e.op.param(&e.params, Param::Comm) == rsd::mpi::COMM_WORLD;
                opened.insert(e.op.param(&e.params, Param::Fh), (fd, world));
            }
            Effect::Access(a) => {
                let Some(path) = path_of(&table, a.file) else {
                    continue;
                };
                let before = sizes.get(&path).copied().unwrap_or(0);
                if a.dir == rsd::op::Dir::Write {
                    let end = a.regions.iter().map(|r| r.0 + r.1).max().unwrap_or(0);
                    sizes.insert(path.clone(), before.max(end));
                }
                let Some(dir) = collective_dir(e.op) else {
                    continue;
                };
                let Some(f) = table.file(a.file) else {
                    continue;
                };
                let view_blocks = ompio::view_blocks(&f.view, table.types());
                let start = match a.regions.first() {
                    Some(r) => r.0,
                    None => {
                        let pos = etypes.unwrap_or(0) * f.view.etype_size;
                        match &f.view.flat {
                            None => (f.view.disp + pos).max(0) as u64,
                            Some(_) => f.view.regions(pos, 1).first().map_or(0, |r| r.0),
                        }
                    }
                };
                let (fd, world) = opened
                    .get(&e.op.param(&e.params, Param::Fh))
                    .copied()
                    .unwrap_or((None, false));
                colls.push(RankColl {
                    event: i,
                    site: (e.op, e.sig),
                    path,
                    dir,
                    regions: a.regions,
                    start,
                    view_blocks,
                    size_before: before,
                    fd,
                    world,
                });
            }
            Effect::Resize { file, size } => {
                if let Some(p) = path_of(&table, file) {
                    sizes.insert(p, size);
                }
            }
            _ => {}
        }
    }
    RankCalls { events, colls }
}

/// One collective call of all ranks: (rank, index into that rank's `colls`) per rank.
struct Group {
    path: String,
    k: usize,
    members: Vec<(u32, usize)>,
}

/// The collective calls of a run: the k-th collective call on a file of every rank, together.
/// Files opened on another communicator than the world are left out (their communicator's
/// members are not known here); so are files whose ranks make different numbers of calls.
fn groups(ranks: &[RankCalls], notes: &mut Vec<String>) -> Vec<Group> {
    let mut per_path: BTreeMap<&str, Vec<Vec<usize>>> = BTreeMap::new();
    for (r, rc) in ranks.iter().enumerate() {
        for (j, c) in rc.colls.iter().enumerate() {
            per_path
                .entry(c.path.as_str())
                .or_insert_with(|| vec![Vec::new(); ranks.len()])[r]
                .push(j);
        }
    }
    let mut out = Vec::new();
    for (path, per_rank) in per_path {
        let k = per_rank[0].len();
        if let Some(r) = per_rank.iter().position(|v| v.len() != k) {
            notes.push(format!(
                "{path}: rank 0 makes {k} collective calls, rank {r} {}: not modelled",
                per_rank[r].len()
            ));
            continue;
        }
        for i in 0..k {
            if per_rank
                .iter()
                .enumerate()
                .any(|(r, v)| !ranks[r].colls[v[i]].world)
            {
                notes.push(format!(
                    "{path}: opened on a communicator other than MPI_COMM_WORLD: not modelled"
                ));
                break;
            }
            out.push(Group {
                path: path.to_string(),
                k: i,
                members: per_rank
                    .iter()
                    .enumerate()
                    .map(|(r, v)| (r as u32, v[i]))
                    .collect(),
            });
        }
    }
    out
}

/// The library's configuration a model runs with.
#[derive(Debug, Clone, PartialEq)]
enum LibConfig {
    /// Open MPI's OMPIO.
    Ompio(Config),
    /// ROMIO as Open MPI ships it (`--mca io romio321`).
    Romio(romio::Config),
}

impl LibConfig {
    /// The configuration without what depends on the scale (ROMIO's node of each rank): what
    /// must be the same at every input scale.
    fn scale_free(&self) -> LibConfig {
        match self {
            LibConfig::Romio(c) => LibConfig::Romio(romio::Config {
                nodes: Vec::new(),
                ..c.clone()
            }),
            c => c.clone(),
        }
    }
}

/// The hint `key` of file `path` as `MPI_File_get_info` gave it.
fn file_hint<'a>(mc: &'a rsd::MpiConfig, path: &str, key: &str) -> Option<&'a str> {
    mc.file_hints
        .iter()
        .find(|(p, _)| p == path)
        .and_then(|(_, hints)| hints.iter().find(|(k, _)| k == key))
        .map(|(_, v)| v.as_str())
}

/// The library's configuration for `path` at `np` ranks from a trace header, or why there is
/// none to model with. Control variables and the file's hints override Open MPI 4.1.4's
/// defaults; a header without a configuration is not modelled (the defaults are not
/// assumed).
fn config(h: &Header, path: &str, np: u32) -> Result<LibConfig, String> {
    let Some(mc) = &h.mpi_config else {
        return Err(
            "the traces record no MPI library configuration (traced before iotrex \
                    recorded it), so collective I/O is not modelled and its nested calls are \
                    fitted"
                .into(),
        );
    };
    if !mc.library.contains("Open MPI") {
        return Err(format!(
            "the MPI library {:?} has no collective-I/O model here (modelled: Open MPI 4.1's \
             OMPIO and ROMIO 3.2.1)",
            mc.library
        ));
    }
    let hint = |key: &str| file_hint(mc, path, key);
    match mc.cvar("io").map(str::trim) {
        None | Some("") | Some("ompio") => {}
        Some("romio321") => return romio_config(mc, path, np).map(LibConfig::Romio),
        Some(io) => {
            return Err(format!(
                "Open MPI's io component {io:?} has no collective-I/O model here (modelled: \
                 ompio, romio321)"
            ));
        }
    }
    let mut cfg = Config::default();
    let int = |name: &str| -> Result<Option<i64>, String> {
        mc.cvar(name)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("control variable {name} = {v:?} is not an integer"))
            })
            .transpose()
    };
    if let Some(v) = int("io_ompio_num_aggregators")? {
        cfg.num_aggregators = v;
    }
    if let Some(v) = int("io_ompio_bytes_per_agg")? {
        cfg.bytes_per_agg = v.max(0) as u64;
    }
    if let Some(v) = int("io_ompio_cycle_buffer_size")? {
        cfg.cycle_buffer_size = v;
    }
    if let Some(v) = int("io_ompio_grouping_option")? {
        cfg.grouping_option = v;
    }
    if let Some(v) = int("io_ompio_max_aggregators_ratio")? {
        cfg.max_aggregators_ratio = v;
    }
    if let Some(v) = int("io_ompio_aggregators_cutoff_threshold")? {
        cfg.aggregators_cutoff_threshold = v;
    }
    if let Some(v) = int("fcoll_vulcan_async_io")? {
        cfg.vulcan_async_io = v;
    }
    if let Some(v) = int("fbtl_posix_max_block_size")? {
        cfg.fbtl.max_block_size = v.max(0) as u64;
    }
    if let Some(v) = int("fbtl_posix_max_gap_size")? {
        cfg.fbtl.max_gap_size = v.max(0) as u64;
    }
    if let Some(v) = int("fbtl_posix_max_tmpbuf_size")? {
        cfg.fbtl.max_tmpbuf_size = v.max(0) as u64;
    }
    // MPI_T gives booleans as `true`/`false`.
    let boolean = |name: &str| -> Result<Option<bool>, String> {
        mc.cvar(name)
            .map(|v| match v.trim() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(format!("control variable {name} = {v:?} is not a boolean")),
            })
            .transpose()
    };
    if let Some(v) = boolean("fbtl_posix_read_datasieving")? {
        cfg.fbtl.read_datasieving = v;
    }
    if let Some(v) = boolean("fbtl_posix_write_datasieving")? {
        cfg.fbtl.write_datasieving = v;
    }
    cfg.map_by_node = !mc.nodes_contiguous && mc.nodes() > 1;
    if let Some(v) = hint("cb_nodes") {
        cfg.cb_nodes = Some(
            v.trim()
                .parse()
                .map_err(|_| format!("{path}: hint cb_nodes = {v:?} is not an integer"))?,
        );
    }
    Ok(LibConfig::Ompio(cfg))
}

/// ROMIO's configuration from the file's hints (Open MPI 4.1.4 reports none of its own: the
/// defaults stand unless the program passed some) and the node layout.
fn romio_config(mc: &rsd::MpiConfig, path: &str, np: u32) -> Result<romio::Config, String> {
    let hint = |key: &str| file_hint(mc, path, key);
    let mut cfg = romio::Config::default();
    let num = |key: &str| -> Result<Option<u64>, String> {
        hint(key)
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("{path}: hint {key} = {v:?} is not a number"))
            })
            .transpose()
    };
    let switch = |key: &str| -> Result<Option<romio::Switch>, String> {
        hint(key)
            .map(|v| match v.trim() {
                "enable" => Ok(romio::Switch::Enable),
                "disable" => Ok(romio::Switch::Disable),
                "automatic" => Ok(romio::Switch::Automatic),
                _ => Err(format!("{path}: hint {key} = {v:?} is not a ROMIO switch")),
            })
            .transpose()
    };
    if let Some(v) = num("cb_buffer_size")? {
        cfg.cb_buffer_size = v;
    }
    if let Some(v) = num("cb_nodes")? {
        cfg.cb_nodes = Some(v as u32);
    }
    if let Some(v) = num("ind_wr_buffer_size")? {
        cfg.ind_wr_buffer_size = v;
    }
    if let Some(v) = num("ind_rd_buffer_size")? {
        cfg.ind_rd_buffer_size = v;
    }
    if let Some(v) = num("romio_min_fdomain_size")? {
        cfg.min_fdomain_size = v;
    }
    if let Some(v) = switch("romio_cb_write")? {
        cfg.cb_write = v;
    }
    if let Some(v) = switch("romio_cb_read")? {
        cfg.cb_read = v;
    }
    if let Some(v) = switch("romio_ds_write")? {
        cfg.ds_write = v;
    }
    if let Some(v) = switch("romio_ds_read")? {
        cfg.ds_read = v;
    }
    match hint("cb_config_list").map(str::trim) {
        None | Some("*:1") => {}
        Some("*:*") => cfg.cb_config_list = romio::ConfigList::Any,
        Some(v) => {
            return Err(format!(
                "{path}: hint cb_config_list = {v:?} is not modelled"
            ));
        }
    }
    // The aggregators are the first rank of each node: the layout matters on several nodes.
    if mc.nodes() > 1 {
        if mc.ranks() != u64::from(np) {
            return Err(format!(
                "ROMIO's aggregators depend on the node layout, which is not known at {np} \
                 ranks (the traces ran on {} nodes)",
                mc.nodes()
            ));
        }
        if !mc.nodes_contiguous {
            return Err(
                "ROMIO's aggregators depend on which ranks share a node, and the trace \
                        does not place them (nodes hold non-consecutive ranks)"
                    .into(),
            );
        }
        cfg.nodes = mc
            .node_ranks
            .iter()
            .flat_map(|&(per, count)| std::iter::repeat_n(per, count as usize))
            .enumerate()
            .flat_map(|(node, per)| std::iter::repeat_n(node as u64, per as usize))
            .collect();
    }
    Ok(cfg)
}

/// The model's calls for one collective call, and how it got them.
struct Modelled {
    /// Per rank, the nested calls.
    calls: Vec<Vec<Call>>,
    /// The model and its choices, for `--explain` and mismatch messages.
    how: String,
}

/// Runs the model on one collective call of `np` ranks.
fn model(ranks: &[RankCalls], g: &Group, cfg: &LibConfig) -> Result<Modelled, String> {
    let colls: Vec<&RankColl> = g
        .members
        .iter()
        .map(|&(r, j)| &ranks[r as usize].colls[j])
        .collect();
    let np = colls.len() as u32;
    let coll = Collective {
        dir: colls[0].dir,
        regions: colls.iter().map(|c| c.regions.clone()).collect(),
        file_size: colls.iter().map(|c| c.size_before).max().unwrap_or(0),
        starts: colls.iter().map(|c| c.start).collect(),
    };
    let err = |e: collio::ModelError| {
        format!(
            "{}: collective call {} ({}): {e}",
            g.path,
            g.k,
            colls[0].site.0.name()
        )
    };
    match cfg {
        LibConfig::Ompio(cfg) => {
            let view = ViewStats::from_ranks(colls.iter().map(|c| c.view_blocks.as_slice()));
            let out = ompio::model(cfg, view, &coll).map_err(err)?;
            Ok(Modelled {
                how: format!(
                    "Open MPI 4.1's OMPIO collective buffering: {}",
                    why_aggregators(cfg, np, &out)
                ),
                calls: out.calls,
            })
        }
        LibConfig::Romio(cfg) => {
            let out = romio::model(cfg, &coll).map_err(err)?;
            let list = rsd::RankSet::from_sorted(&out.aggregators);
            let why = match cfg.cb_nodes {
                Some(n) => format!("the file's cb_nodes hint {n}"),
                None => "cb_config_list *:1 (the first rank of each node)".into(),
            };
            let how = if out.two_phase {
                format!(
                    "ROMIO 3.2.1's two-phase collective buffering: {} aggregators (ranks \
                     {list}) at {np} ranks from {why}",
                    out.aggregators.len()
                )
            } else {
                format!(
                    "ROMIO 3.2.1: the accesses do not interleave, so every rank accesses \
                     independently at {np} ranks (romio_cb_write/read automatic)"
                )
            };
            Ok(Modelled {
                how,
                calls: out.calls,
            })
        }
    }
}

/// A recorded nested call as the model's [`Call`].
fn recorded(e: &RawEvent) -> Call {
    let get = |p| e.op.get(&e.params, p).unwrap_or(-1);
    let ret = get(Param::Ret);
    if e.op == Op::Fcntl {
        let mut c = Call::fcntl(get(Param::Cmd));
        c.ret = ret as u64;
        return c;
    }
    let iovcnt = match e.op {
        Op::Pwritev | Op::Preadv => Some(get(Param::Iovcnt) as u32),
        _ => None,
    };
    // pwritev/preadv record no byte count: what they asked for is what they returned unless
    // a read hit the end of the file (the model says the same of its own calls).
    let bytes = if iovcnt.is_some() {
        ret
    } else {
        get(Param::Count)
    };
    Call::data(
        e.op,
        get(Param::Offset) as u64,
        iovcnt,
        bytes as u64,
        ret as u64,
    )
}

/// The model's call as a nested event of descriptor `fd`.
fn issued(c: &Call, fd: i64, t: &ChildTemplate) -> RawEvent {
    let (off, ret) = (c.offset as i64, c.ret as i64);
    let params = match c.op {
        Op::Pwrite => args::pwrite(fd, c.bytes as i64, off, ret),
        Op::Pread => args::pread(fd, c.bytes as i64, off, ret),
        Op::Pwritev => args::pwritev(fd, i64::from(c.iovcnt.unwrap_or(1)), off, ret),
        Op::Preadv => args::preadv(fd, i64::from(c.iovcnt.unwrap_or(1)), off, ret),
        _ => args::fcntl(fd, c.cmd.unwrap_or(0), ret),
    };
    let n = t.count.max(1) as f64;
    RawEvent {
        op: c.op,
        sig: t.sig,
        path: None,
        params,
        gap_ns: (t.gap_sum / n).round() as u64,
        dur_ns: (t.dur_sum / n).round() as u64,
        children: Vec::new(),
    }
}

/// Runs the model on every collective call of every input and finds the call sites it
/// reproduces at every scale. `inputs` are sorted by rank count.
pub(crate) fn plan(inputs: &[(&str, &TraceFile)]) -> Plan {
    let mut p = Plan::default();
    let mut seen: BTreeSet<Site> = BTreeSet::new();
    let mut wrong: BTreeSet<Site> = BTreeSet::new();
    let mut notes = Vec::new();
    // Configurations per path must agree between scales: a model fitted to one library
    // setting cannot say what another does.
    let mut configs: BTreeMap<String, (u32, LibConfig)> = BTreeMap::new();
    for (name, tf) in inputs {
        let np = tf.header.nranks;
        let ranks: Vec<RankCalls> = (0..np).map(|r| walk_rank(&tf.trace, r)).collect();
        for g in groups(&ranks, &mut notes) {
            let sites: BTreeSet<Site> = g
                .members
                .iter()
                .map(|&(r, j)| ranks[r as usize].colls[j].site)
                .collect();
            seen.extend(sites.iter().copied());
            let cfg = match config(&tf.header, &g.path, np) {
                Ok(c) => c,
                Err(why) => {
                    p.skipped = Some(why);
                    return p;
                }
            };
            match configs.get(&g.path) {
                Some((n0, c0)) if c0.scale_free() != cfg.scale_free() => {
                    p.failure.get_or_insert(format!(
                        "{}: the MPI library's configuration (control variables or the file's \
                         hints, such as cb_nodes) differs between {n0} and {np} ranks",
                        g.path
                    ));
                    wrong.extend(sites.iter().copied());
                    continue;
                }
                Some(_) => {}
                None => {
                    configs.insert(g.path.clone(), (np, cfg.clone()));
                }
            }
            let out = match model(&ranks, &g, &cfg) {
                Ok(o) => o,
                Err(why) => {
                    p.failure.get_or_insert(format!("{name}: {why}"));
                    wrong.extend(sites.iter().copied());
                    continue;
                }
            };
            if let Some(diff) = compare(&ranks, &g, &out, np) {
                p.failure.get_or_insert(format!("{name}: {diff}"));
                wrong.extend(sites.iter().copied());
                continue;
            }
            for &(r, j) in &g.members {
                let c = &ranks[r as usize].colls[j];
                for child in &ranks[r as usize].events[c.event].children {
                    let t = p.children.entry((c.site, child.op)).or_default();
                    t.sig = child.sig;
                    t.gap_sum += child.gap_ns as f64;
                    t.dur_sum += child.dur_ns as f64;
                    t.count += 1;
                }
            }
        }
    }
    p.derived = seen.difference(&wrong).copied().collect();
    if p.failure.is_none() && !notes.is_empty() {
        p.failure = Some(notes.join("; "));
    }
    p
}

/// The first nested call where the model and the recording differ, as text.
fn compare(ranks: &[RankCalls], g: &Group, out: &Modelled, np: u32) -> Option<String> {
    for &(r, j) in &g.members {
        let c = &ranks[r as usize].colls[j];
        let rec: Vec<Call> = ranks[r as usize].events[c.event]
            .children
            .iter()
            .map(recorded)
            .collect();
        let got = &out.calls[r as usize];
        let what = || {
            format!(
                "{} #{} on {} at {np} ranks, rank {r} (model: {})",
                c.site.0.name(),
                g.k,
                g.path,
                out.how
            )
        };
        for (k, (a, b)) in rec.iter().zip(got).enumerate() {
            if a != b {
                return Some(format!(
                    "{}: nested call {k}: recorded {a}, modelled {b}",
                    what()
                ));
            }
        }
        if rec.len() != got.len() {
            let k = rec.len().min(got.len());
            let show = |v: &[Call]| v.get(k).map_or("nothing".into(), |c| c.to_string());
            return Some(format!(
                "{}: {} nested calls recorded, {} modelled; call {k}: recorded {}, modelled {}",
                what(),
                rec.len(),
                got.len(),
                show(&rec),
                show(got)
            ));
        }
    }
    None
}

/// Ranks re-compressed and merged at a time: a power of two, so merging the chunks' traces
/// pairs ranks exactly as one merge tree over all ranks does (the tracer's order), while only
/// one chunk's expanded calls are in memory.
const CHUNK: u32 = 256;

/// Compresses every rank's calls, as `calls(rank)` gives them (one compressor per rank, as
/// the tracer does), and merges the ranks as the tracer merges them at `MPI_Finalize`.
fn compress_ranks(
    np: u32,
    mut calls: impl FnMut(u32) -> Result<Vec<RawEvent>, String>,
) -> Result<Trace, String> {
    let merge = |t: Vec<Trace>| {
        rsd::merge_tree(t).map_err(|e| format!("merging the re-compressed ranks: {e}"))
    };
    let mut chunks = Vec::new();
    for lo in (0..np).step_by(CHUNK as usize) {
        let mut traces = Vec::with_capacity(CHUNK as usize);
        for r in lo..np.min(lo + CHUNK) {
            let mut c = Compressor::new(r);
            for e in &calls(r)? {
                c.push(e);
            }
            traces.push(c.finish());
        }
        chunks.push(merge(traces)?);
    }
    merge(chunks)
}

/// `tf` with the nested calls of the derived call sites removed.
pub(crate) fn strip(tf: &TraceFile, derived: &BTreeSet<Site>) -> Result<TraceFile, String> {
    let trace = compress_ranks(tf.header.nranks, |r| {
        let mut events = walk_rank(&tf.trace, r).events;
        for e in &mut events {
            if derived.contains(&(e.op, e.sig)) {
                e.children.clear();
            }
        }
        Ok(events)
    })?;
    Ok(TraceFile {
        header: tf.header.clone(),
        trace,
    })
}

/// Why OMPIO took the aggregators it took, for `--explain`.
fn why_aggregators(cfg: &Config, np: u32, out: &ompio::Outcome) -> String {
    if out.fcoll == ompio::Fcoll::Individual {
        return format!(
            "fcoll individual (a communicator of {np} ranks, at most 2): every rank does its own I/O"
        );
    }
    let why = if let Some(n) = cfg.cb_nodes {
        format!("the file's cb_nodes hint {n}")
    } else if cfg.num_aggregators != -1 {
        format!("io_ompio_num_aggregators {}", cfg.num_aggregators)
    } else {
        format!(
            "the simple grouping's cost model (io_ompio_grouping_option {}), capped at one per \
             io_ompio_max_aggregators_ratio = {} ranks ({np}/{} = {})",
            cfg.grouping_option,
            cfg.max_aggregators_ratio,
            cfg.max_aggregators_ratio,
            u64::from(np) / cfg.max_aggregators_ratio.max(1) as u64
        )
    };
    let list = rsd::RankSet::from_sorted(&out.aggregators);
    // Asynchronous writes (aio_write) are not calls the tracer records, in the inputs as in
    // the model's output.
    let aio = if out.async_writes {
        ", writing asynchronously (more than 2 cycles: no nested write is recorded)"
    } else {
        ""
    };
    format!(
        "fcoll vulcan: {} aggregators (ranks {list}) at {np} ranks from {why}{aio}",
        out.aggregators.len()
    )
}

/// Puts the model's nested calls into every derived collective call of the extrapolated
/// trace `tf` (at `tf.header.nranks` ranks) and re-compresses it. Returns an `--explain`
/// entry per derived call site. Every rank is expanded twice (once for the collective calls'
/// regions, once to re-compress it with its derived calls) so that only the regions, not
/// every rank's calls, are held at once.
pub(crate) fn insert(tf: &mut TraceFile, p: &Plan) -> Result<Vec<Explain>, String> {
    let np = tf.header.nranks;
    let ranks: Vec<RankCalls> = (0..np)
        .map(|r| {
            let mut rc = walk_rank(&tf.trace, r);
            // The events are walked again below; the collective calls are what is needed.
            rc.events.clear();
            rc
        })
        .collect();
    let mut notes = Vec::new();
    let mut explain: BTreeMap<Site, Explain> = BTreeMap::new();
    // Per rank, the derived children of its collective calls, by event index.
    let mut derived: Vec<HashMap<usize, Vec<RawEvent>>> = vec![HashMap::new(); np as usize];
    for g in groups(&ranks, &mut notes) {
        let (r0, j0) = g.members[0];
        let site = ranks[r0 as usize].colls[j0].site;
        if !p.derived.contains(&site) {
            continue;
        }
        let cfg = config(&tf.header, &g.path, np)?;
        let out = model(&ranks, &g, &cfg)?;
        explain.entry(site).or_insert_with(|| Explain {
            event: format!("{} (call site {:#x})", site.0.name(), site.1),
            quantity: "nested POSIX calls".into(),
            model: format!(
                "derived by the model of {} (the model reproduced every input scale exactly); \
                 timing: the inputs' mean per nested op",
                out.how
            ),
            curve: None,
        });
        for &(r, j) in &g.members {
            let c = &ranks[r as usize].colls[j];
            if !p.derived.contains(&c.site) {
                continue;
            }
            let mut children = Vec::with_capacity(out.calls[r as usize].len());
            for call in &out.calls[r as usize] {
                let Some(t) = p.children.get(&(c.site, call.op)) else {
                    return Err(format!(
                        "at {np} ranks the model has rank {r} issue {} inside {} (call site \
                         {:#x}), which no input recorded there: its call site is unknown",
                        call.op.name(),
                        c.site.0.name(),
                        c.site.1
                    ));
                };
                let Some(fd) = c.fd else {
                    return Err(format!(
                        "{}: rank {r} has no traced descriptor for the file",
                        g.path
                    ));
                };
                children.push(issued(call, fd, t));
            }
            derived[r as usize].insert(c.event, children);
        }
    }
    drop(ranks);
    let trace = compress_ranks(np, |r| {
        let mut events = walk_rank(&tf.trace, r).events;
        for (i, children) in std::mem::take(&mut derived[r as usize]) {
            events[i].children = children;
        }
        Ok(events)
    })?;
    tf.trace = trace;
    Ok(explain.into_values().collect())
}
