//! Collective MPI-IO calls whose nested POSIX calls are derived by a model of the MPI
//! library's collective buffering instead of fitted.
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
//! 3. [`insert`] runs the model on each collective call of the extrapolated trace at the
//!    target scale and puts its calls back as children: in compressed form ([`scaled`]: the
//!    regions laid out from rank intervals where the trace is affine in the rank, only the
//!    ranks with nested calls expanded), or, where the trace is not uniform on intervals
//!    and up to [`DERIVE_LIMIT`] ranks, rank by rank (every rank expanded, re-compressed and
//!    merged, as the tracer does at `MPI_Finalize`).
//!
//! The derived children's timing is the mean the inputs recorded for that op under that call
//! site (gap and duration): timing is fitted or averaged everywhere in an extrapolated trace.

use crate::Explain;
use crate::ranks::{compress_ranks, rank_events};
use collio::Call;
use collio::config::{ConfigError, LibConfig, file_hint};
use collio::mca;
use collio::ompio::{self, Config};
use collio::romio;
use collio::traced::{self, TracedCall};
use rsd::comms::{self, Made};
use rsd::op::{Op, Param, args};
use rsd::trace::{flatten_event, visit};
use rsd::{Header, RawEvent, Trace, TraceFile};
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod scaled;

/// The largest target the per-rank derivation runs at: it expands, models and re-compresses
/// every rank, which is linear in the rank count. The compressed derivation ([`scaled`]) has
/// no such limit and is tried first; the per-rank one stands in for it, up to this many
/// ranks, where the trace is not uniform on rank intervals (strided rank sets, block or
/// periodic functions of the rank).
pub const DERIVE_LIMIT: u32 = 1 << 16;

/// How [`insert`] derives the nested calls at the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Derivation {
    /// The compressed derivation, else (up to [`DERIVE_LIMIT`] ranks) the per-rank one.
    #[default]
    Auto,
    /// Only the compressed derivation (any scale).
    Compressed,
    /// Only the per-rank derivation (up to [`DERIVE_LIMIT`] ranks): the reference the
    /// compressed one is checked against.
    PerRank,
}

pub(crate) use crate::ranks::Site;

/// What the derivation keeps of a recorded nested call to issue the model's calls like it:
/// the call site inside the library and the mean timing.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChildTemplate {
    sig: u64,
    gap_sum: f64,
    dur_sum: f64,
    count: u64,
}

impl Plan {
    /// The template to issue the model's `call` inside a collective call of `site` with: the
    /// recorded one, or, when no input recorded that nested op there (the model issues it only
    /// at the target's scale: OMPIO writing with `pwritev` where every input's aggregators
    /// sieved), one whose call site is made up from the collective call's and the op (the
    /// call site of a call inside the MPI library is an identity only: nothing else reads it)
    /// and whose timing is the mean of the site's recorded nested calls. A made-up call site
    /// is said in `notes`, which go to the output's header.
    ///
    /// `after`: the call issued before `call` in the same collective call. A write right after
    /// a read is a sieved write (read-modify-write), which the library makes from another call
    /// site than a plain write: each has its template, and one stands in for the other only
    /// where no input recorded it.
    pub(crate) fn template(
        &self,
        site: Site,
        route: Route,
        call: &Call,
        after: Option<&Call>,
        made_up: &mut BTreeSet<MadeUp>,
    ) -> Result<ChildTemplate, String> {
        let sieved = is_sieved(call.op, after.map(|c| c.op));
        let found = |s: bool| {
            self.children
                .get(&(site, route, call.op, call.cmd, s))
                .cloned()
                .or_else(|| self.same_call_template(site, route, call, s))
        };
        if let Some(t) = found(sieved) {
            return Ok(t);
        }
        // The other flavour's timing stands in; its call site is another path of the
        // library's, so this call's is made up.
        if let Some(mut t) = found(!sieved) {
            t.sig = made_up_sig(site, call.op, call.cmd) ^ u64::from(sieved) << 62;
            made_up.insert(MadeUp {
                op: call.op,
                site,
                sig: t.sig,
            });
            return Ok(t);
        }
        let mut t = ChildTemplate::default();
        for (_, r) in self.children.iter().filter(|((s, ..), _)| *s == site) {
            t.gap_sum += r.gap_sum;
            t.dur_sum += r.dur_sum;
            t.count += r.count;
        }
        if t.count == 0 {
            return Err(format!(
                "the model issues {} inside {} (call site {:#x}), and no input recorded any \
                 nested call there",
                call.op.name(),
                site.0.name(),
                site.1
            ));
        }
        t.sig = made_up_sig(site, call.op, call.cmd);
        made_up.insert(MadeUp {
            op: call.op,
            site,
            sig: t.sig,
        });
        Ok(t)
    }
}

/// A nested call whose call site the model made up (`sig`): a call of `op` inside the
/// collective call of `site` on a path of the library no input took there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct MadeUp {
    op: Op,
    site: Site,
    sig: u64,
}

/// Says in `h` that the call sites of `made_up` were made up: the typed provenance and one
/// note each, in the order of their text.
pub(crate) fn record_made_up(h: &mut rsd::Header, made_up: BTreeSet<MadeUp>) {
    if made_up.is_empty() {
        return;
    }
    crate::provenance::of_mut(h).add_made_up_sites(made_up.iter().map(|m| m.sig));
    let notes: BTreeSet<String> = made_up
        .iter()
        .map(|m| made_up_note(m.op, m.site, m.sig))
        .collect();
    h.notes.extend(notes);
}

/// [`record_made_up`] of two call sites, for the tests of other modules.
#[cfg(test)]
pub(crate) fn record_made_up_for_tests(h: &mut rsd::Header) {
    let site = (Op::FileWriteAtAll, 0xb39c);
    let made = |op: Op, sieved: u64| MadeUp {
        op,
        site,
        sig: made_up_sig(site, op, None) ^ sieved << 62,
    };
    record_made_up(h, [made(Op::Pwrite, 0), made(Op::Pread, 1)].into());
}

/// The note of a nested call whose call site the model made up (`sig`): a call of `op` inside
/// the collective call of `site` on a path of the library no input took there.
/// [`made_up_sites`] reads the sites back.
fn made_up_note(op: Op, site: Site, sig: u64) -> String {
    format!(
        "the model issues {} inside {} (call site {:#x}) at this scale, which no input \
         recorded there (not on that path of the library): its call site {sig:#x} is made up",
        op.name(),
        site.0.name(),
        site.1,
    )
}

/// The call sites an extrapolation's `notes` say the model made up ([`made_up_note`]), for
/// traces written before the header's provenance (`provenance::of`).
pub(crate) fn made_up_sites(notes: &[String]) -> std::collections::HashSet<u64> {
    const TAIL: &str = " is made up";
    notes
        .iter()
        .filter_map(|n| {
            let head = n.strip_suffix(TAIL)?;
            let hex = head.rsplit_once("its call site 0x")?.1;
            u64::from_str_radix(hex, 16).ok()
        })
        .collect()
}

impl Plan {
    /// Says which call sites are one call of the library's code under other containers (the
    /// same MPI-IO call HDF5 makes for every flush, lifted out of each flush's `H5Fflush`):
    /// `own` gives a lifted site's own call site. A derived site whose inputs never made some
    /// nested call takes it from such a site, where the inputs made it (one call site).
    pub(crate) fn same_call(&mut self, own: impl Fn(u64) -> Option<u64>) {
        let sites: BTreeSet<Site> = self
            .children
            .keys()
            .map(|k| k.0)
            .chain(self.derived.iter().copied())
            .collect();
        for s in sites {
            if let Some(o) = own(s.1) {
                self.own.insert(s, o);
            }
        }
    }

    /// The template of `call` recorded at the sites of `site`'s own call site
    /// ([`Plan::same_call`]), if they recorded it from one call site.
    fn same_call_template(
        &self,
        site: Site,
        route: Route,
        call: &Call,
        sieved: bool,
    ) -> Option<ChildTemplate> {
        let own = self.own.get(&site)?;
        let mut t = ChildTemplate::default();
        let mut sigs = BTreeSet::new();
        for ((s, r, op, cmd, x), rec) in &self.children {
            if s.0 == site.0
                && self.own.get(s) == Some(own)
                && (*r, *op, *cmd, *x) == (route, call.op, call.cmd, sieved)
            {
                sigs.insert(rec.sig);
                t.gap_sum += rec.gap_sum;
                t.dur_sum += rec.dur_sum;
                t.count += rec.count;
            }
        }
        (sigs.len() == 1).then(|| {
            t.sig = *sigs.iter().next().expect("one");
            t
        })
    }

    /// Derives the collective calls of site `new`, which no input shows, as those of `like`
    /// (a derived site of the same call of the library: HDF5's collective metadata write of a
    /// rank without entries, in a flush where every input rank had some): `new` is derived,
    /// its nested calls issued with `like`'s templates. `false` when `like` is not derived.
    pub(crate) fn alias(&mut self, new: Site, like: Site) -> bool {
        if !self.derived.contains(&like) {
            return false;
        }
        let copies: Vec<_> = self
            .children
            .iter()
            .filter(|((s, ..), _)| *s == like)
            .map(|((_, route, op, cmd, sv), t)| ((new, *route, *op, *cmd, *sv), t.clone()))
            .collect();
        self.children.extend(copies);
        self.derived.insert(new);
        true
    }
}

/// Whether a nested call `op` right after one of `before` is a sieved write (the write of a
/// read-modify-write).
pub(crate) fn is_sieved(op: Op, before: Option<Op>) -> bool {
    matches!(op, Op::Pwrite | Op::Pwritev) && matches!(before, Some(Op::Pread | Op::Preadv))
}

/// A call site for a nested call no input recorded: a mix of the collective call's site, the
/// op and the fcntl command, with the top bit set so that it reads as made up.
fn made_up_sig(site: Site, op: Op, cmd: Option<i64>) -> u64 {
    let mut h = site.1 ^ 0x9e37_79b9_7f4a_7c15;
    for x in [op as u64, cmd.unwrap_or(-1) as u64] {
        h = (h ^ x).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 29;
    }
    h | 1 << 63
}

/// What [`plan`] found.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Call sites whose nested calls the model reproduced at every input scale.
    pub derived: BTreeSet<Site>,
    /// Per derived call site and nested op (and `fcntl` command: a lock and an unlock are
    /// made from different places in the library), how the inputs recorded it.
    /// Keyed also by whether it is a sieved write ([`is_sieved`]).
    children: BTreeMap<(Site, Route, Op, Option<i64>, bool), ChildTemplate>,
    /// Per call site, its own call site where it is a lifted one ([`Plan::same_call`]).
    own: BTreeMap<Site, u64>,
    /// The first nested call the model got wrong, for a refusal.
    pub failure: Option<String>,
    /// Why collective I/O was not modelled at all, for `--explain`.
    pub skipped: Option<String>,
    /// The communicator creations that make one of every rank in the world's order
    /// ([`world_sites`]).
    world: BTreeSet<Site>,
    /// Why the extrapolation must be refused: a file's configuration (its hints, the control
    /// variables) differs between input scales, so no input says what the target's is.
    pub refusal: Option<String>,
}

/// One collective call of one rank: where it is and what its nested calls need.
struct RankColl {
    /// Index of the call in the rank's events.
    event: usize,
    site: Site,
    path: String,
    /// The descriptor the library opened the file with on this rank (the nested `open` of
    /// `MPI_File_open`), which its nested calls use.
    fd: Option<i64>,
    /// The file was opened on `MPI_COMM_WORLD` or a duplicate of it: only then are all ranks
    /// the communicator, in the world's order.
    world: bool,
    /// The first dimension of the file communicator's Cartesian grid, where it has two or more
    /// dimensions (OMPIO then groups its aggregators by the grid's rows).
    cart_rows: Option<u64>,
}

/// One rank's calls with their (mean) timing, and its collective calls.
struct RankCalls {
    events: Vec<RawEvent>,
    colls: Vec<RankColl>,
}

/// The communicator creations (op and call site) that made, on every rank and at every
/// input, a communicator of every rank in the world's order ([`rsd::comms`]: a duplicate of
/// the world, a split of it by one color with keys in rank order, as IOR's `MPI_Comm_create`
/// of all ranks is recorded). A file opened on such a communicator is modelled as one opened
/// on the world; the target's creations count by their call site, as the inputs showed.
pub(crate) fn world_sites(inputs: &[(&str, &TraceFile)]) -> BTreeSet<Site> {
    let (mut yes, mut no) = (BTreeSet::new(), BTreeSet::new());
    for (_, tf) in inputs {
        let np = tf.header.nranks;
        let mut todo: Vec<Vec<Made>> = Vec::with_capacity(np as usize);
        let mut sites: Vec<Vec<Site>> = Vec::with_capacity(np as usize);
        for r in 0..np {
            // Only the creations are flattened: `walk_rank` expands every call after.
            let (mut t, mut s) = (Vec::new(), Vec::new());
            visit(&tf.trace.nodes, r, &mut Vec::new(), &mut |e, idx| {
                // (A communicator's creation holds no offset, so it always flattens.)
                if e.op.creation().is_some()
                    && let Some(f) = flatten_event(e, r, idx)
                    && let Some(m) = Made::of(f.op, &f.params)
                {
                    t.push(m);
                    s.push((f.op, f.sig));
                }
                true
            });
            todo.push(t);
            sites.push(s);
        }
        // Partial: a communicator made inside a call whose calls are not top-level here
        // leaves only the creations on it unknown.
        let b = comms::rebuild_partial(&todo);
        for (r, s) in sites.iter().enumerate() {
            for (k, site) in s.iter().enumerate() {
                let world = b.joined[r][k].is_some_and(|c| b.comms[c].is_world_order(np));
                if world { &mut yes } else { &mut no }.insert(*site);
            }
        }
    }
    yes.difference(&no).copied().collect()
}

/// Expands `rank` of `trace` and finds its collective calls and the file each is on (the
/// path of the `MPI_File_open` that made its handle, as `collio::traced` resolves it).
/// `world`: the creations that make a communicator of every rank in the world's order
/// ([`world_sites`]).
fn walk_rank(trace: &Trace, rank: u32, world: &BTreeSet<Site>) -> RankCalls {
    let events = rank_events(trace, rank);
    // Per open MPI file handle: its path, the library's descriptor, whether on the world.
    let mut open: HashMap<i64, (String, Option<i64>, bool, Option<u64>)> = HashMap::new();
    // The communicators with the world's ranks in the world's order, as long as they live
    // (parallel HDF5 opens its files on a duplicate of the communicator it is given).
    let mut world_like: BTreeSet<i64> = BTreeSet::from([rsd::mpi::COMM_WORLD]);
    // The Cartesian communicators of 2+ dimensions, with their grid's first dimension (the
    // grid follows `MPI_Cart_create`'s fixed parameters; older traces have none).
    let mut carts: HashMap<i64, u64> = HashMap::new();
    let mut colls = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if let (Some(_), Some(new)) = (e.op.creation(), e.op.get(&e.params, Param::Newcomm)) {
            if world.contains(&(e.op, e.sig)) {
                world_like.insert(new);
            } else if new != rsd::mpi::COMM_WORLD {
                world_like.remove(&new);
            }
        }
        match e.op {
            Op::CartCreate => {
                let dims = e.op.array_values(&e.params, "dims").unwrap_or_default();
                let new = e.op.param(&e.params, Param::Newcomm);
                match (dims.len() >= 2, dims.first()) {
                    (true, Some(&rows)) if rows > 0 => carts.insert(new, rows as u64),
                    _ => carts.remove(&new),
                };
            }
            Op::CommFree => {
                let c = e.op.param(&e.params, Param::Comm);
                if c != rsd::mpi::COMM_WORLD {
                    world_like.remove(&c);
                }
                carts.remove(&c);
            }
            Op::FileOpen => {
                let Some(path) = &e.path else { continue };
                let fd = e
                    .children
                    .iter()
                    .rev()
                    .find(|c| matches!(c.op, Op::Open | Op::Openat) && c.path == e.path)
                    .map(|c| c.op.param(&c.params, Param::Fd));
                let comm = e.op.param(&e.params, Param::Comm);
                let world = world_like.contains(&comm);
                open.insert(
                    e.op.param(&e.params, Param::Fh),
                    (path.clone(), fd, world, carts.get(&comm).copied()),
                );
            }
            Op::FileClose => {
                open.remove(&e.op.param(&e.params, Param::Fh));
            }
            op if traced::collective_dir(op).is_some() => {
                if let Some((path, fd, world, cart_rows)) =
                    open.get(&e.op.param(&e.params, Param::Fh))
                {
                    colls.push(RankColl {
                        event: i,
                        site: (e.op, e.sig),
                        path: path.clone(),
                        fd: *fd,
                        world: *world,
                        cart_rows: *cart_rows,
                    });
                }
            }
            _ => {}
        }
    }
    RankCalls { events, colls }
}

/// One collective call: the model's input from `collio::traced`, and each of its ranks'
/// (rank, index into that rank's `colls`).
struct Group {
    call: TracedCall,
    members: Vec<(u32, usize)>,
    /// The first dimension of the file communicator's Cartesian grid ([`RankColl::cart_rows`]).
    cart_rows: Option<u64>,
}

/// The collective calls of a run of `np` ranks (`trace`, whose ranks `ranks` are), each
/// matched with the ranks' events. Calls on files opened on a communicator that is not of
/// every rank in the world's order are left out (the model takes the world's ranks), with a
/// note, as are all when the ranks do not agree on them; `covered` says which ranks' calls
/// were kept.
fn groups(
    trace: &Trace,
    ranks: &[RankCalls],
    notes: &mut Vec<String>,
) -> (Vec<Group>, Vec<Vec<bool>>) {
    let np = ranks.len() as u32;
    let mut covered: Vec<Vec<bool>> = ranks.iter().map(|r| vec![false; r.colls.len()]).collect();
    let calls = match traced::collective_calls(trace, np) {
        Ok(c) => c,
        Err(e) => {
            notes.push(format!("the collective calls cannot be put together: {e}"));
            return (Vec::new(), covered);
        }
    };
    // Per rank and path, the rank's collective calls on it in order.
    let by_path: Vec<HashMap<&str, Vec<usize>>> = ranks
        .iter()
        .map(|rc| {
            let mut m: HashMap<&str, Vec<usize>> = HashMap::new();
            for (j, c) in rc.colls.iter().enumerate() {
                m.entry(c.path.as_str()).or_default().push(j);
            }
            m
        })
        .collect();
    let mut out = Vec::new();
    // Per path, the calls left out (by index), said once per path.
    let mut unmodelled: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for call in calls {
        let members: Option<Vec<(u32, usize)>> = call
            .ranks
            .iter()
            .map(|&r| {
                let j = *by_path[r as usize]
                    .get(call.path.as_str())?
                    .get(call.index)?;
                ranks[r as usize].colls[j].world.then_some((r, j))
            })
            .collect();
        match members {
            Some(m) if m.len() == np as usize => {
                for &(r, j) in &m {
                    covered[r as usize][j] = true;
                }
                let (r0, j0) = m[0];
                let cart_rows = ranks[r0 as usize].colls[j0].cart_rows;
                out.push(Group {
                    call,
                    members: m,
                    cart_rows,
                });
            }
            _ => unmodelled
                .entry(call.path.clone())
                .or_default()
                .push(call.index as u32),
        }
    }
    for (path, calls) in unmodelled {
        notes.push(format!(
            "{path}: collective call{} {} {} not made by every rank on a communicator of every \
             rank in the world's order: not modelled",
            if calls.len() == 1 { "" } else { "s" },
            rsd::notes::rank_ranges(&calls),
            if calls.len() == 1 { "is" } else { "are" },
        ));
    }
    (out, covered)
}

/// The library's configuration for `path` at `np` ranks from a trace header
/// ([`collio::config::config`]), or why there is none to model with, as the extrapolation
/// says it: a header without a configuration leaves the nested calls to the fit.
fn config(h: &Header, path: &str, np: u32) -> Result<LibConfig, String> {
    collio::config::config(h, path, np).map_err(|e| match e {
        ConfigError::NotRecorded => "the traces record no MPI library configuration (traced \
                                     before iotrex recorded it), so collective I/O is not \
                                     modelled and its nested calls are fitted"
            .into(),
        e => e.to_string(),
    })
}

/// The model's calls for one collective call, and how it got them.
struct Modelled {
    /// Per rank, the nested calls.
    calls: Vec<Vec<Call>>,
    /// Which of the library's paths made them.
    route: Route,
    /// The model and its choices, for `--explain` and mismatch messages.
    how: String,
}

/// The library's path through a collective call. Its nested calls come from other functions
/// on each path (ROMIO's two-phase writes and its independent ones, say), so a recorded call
/// site stands for one op on one path: two files at one call site can take different paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Route {
    /// OMPIO's vulcan two-phase collective buffering.
    Vulcan,
    /// OMPIO's individual fcoll: every rank on its own.
    Individual,
    /// ROMIO's two-phase collective buffering.
    TwoPhase,
    /// ROMIO's independent accesses (collective buffering off or not worth it).
    Independent,
}

/// Runs the model on one collective call.
fn model(g: &Group, cfg: &LibConfig) -> Result<Modelled, String> {
    let t = &g.call;
    let np = t.ranks.len() as u32;
    let err = |e: collio::ModelError| {
        format!(
            "{}: collective call {} ({}): {e}",
            t.path,
            t.index,
            t.op.name()
        )
    };
    match cfg {
        LibConfig::Ompio(cfg) => {
            // The file's communicator is part of the configuration OMPIO groups by.
            let cfg = &Config {
                cart_rows: g.cart_rows,
                ..cfg.clone()
            };
            let out = ompio::model(cfg, t.view, &t.input).map_err(err)?;
            Ok(Modelled {
                how: format!(
                    "Open MPI 4.1's OMPIO collective buffering: {}",
                    why_aggregators(cfg, np, &out)
                ),
                route: if out.fcoll == ompio::Fcoll::Individual {
                    Route::Individual
                } else {
                    Route::Vulcan
                },
                calls: out.calls,
            })
        }
        LibConfig::Romio(cfg) => {
            let out = romio::model(cfg, &t.input).map_err(err)?;
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
                route: if out.two_phase {
                    Route::TwoPhase
                } else {
                    Route::Independent
                },
                calls: out.calls,
            })
        }
    }
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
    let mut p = Plan {
        world: world_sites(inputs),
        ..Plan::default()
    };
    let mut seen: BTreeSet<Site> = BTreeSet::new();
    let mut wrong: BTreeSet<Site> = BTreeSet::new();
    let mut notes = Vec::new();
    // Configurations per path must agree between scales: a model fitted to one library
    // setting cannot say what another does.
    let mut configs: BTreeMap<String, (u32, LibConfig)> = BTreeMap::new();
    for (name, tf) in inputs {
        let np = tf.header.nranks;
        let ranks: Vec<RankCalls> = (0..np).map(|r| walk_rank(&tf.trace, r, &p.world)).collect();
        let (groups, covered) = groups(&tf.trace, &ranks, &mut notes);
        // A call site with a call the model did not see is not derived.
        for (rc, cov) in ranks.iter().zip(&covered) {
            for (c, &ok) in rc.colls.iter().zip(cov) {
                seen.insert(c.site);
                if !ok {
                    wrong.insert(c.site);
                }
            }
        }
        for g in groups {
            let sites: BTreeSet<Site> = g
                .members
                .iter()
                .map(|&(r, j)| ranks[r as usize].colls[j].site)
                .collect();
            let path = &g.call.path;
            let cfg = match config(&tf.header, path, np) {
                Ok(c) => c,
                Err(why) => {
                    p.skipped = Some(why);
                    return p;
                }
            };
            match configs.get(path) {
                Some((n0, c0)) if c0.scale_free() != cfg.scale_free() => {
                    p.refusal = Some(config_differs(inputs, path, *n0, np));
                    return p;
                }
                Some(_) => {}
                None => {
                    configs.insert(path.clone(), (np, cfg.clone()));
                }
            }
            let out = match model(&g, &cfg) {
                Ok(o) => o,
                Err(why) => {
                    p.failure.get_or_insert(format!("{name}: {why}"));
                    wrong.extend(sites.iter().copied());
                    continue;
                }
            };
            if let Some(diff) = compare(&g, &out) {
                p.failure.get_or_insert(format!("{name}: {diff}"));
                wrong.extend(sites.iter().copied());
                continue;
            }
            for &(r, j) in &g.members {
                let c = &ranks[r as usize].colls[j];
                let nested = &ranks[r as usize].events[c.event].children;
                for (k, child) in nested.iter().enumerate() {
                    let sieved = is_sieved(child.op, k.checked_sub(1).map(|b| nested[b].op));
                    let cmd = match child.op {
                        Op::Fcntl => child.op.get(&child.params, Param::Cmd),
                        _ => None,
                    };
                    let t = p
                        .children
                        .entry((c.site, out.route, child.op, cmd, sieved))
                        .or_default();
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
        p.failure = Some(first_notes(&notes));
    }
    p
}

/// How many of the notes on calls left out of the model a refusal or the output's notes
/// quote: a file per process makes one per file and scale (40 for four inputs of 4-16 ranks,
/// 20 KB in the extrapolated trace's header).
const NOTES_QUOTED: usize = 3;

/// The first [`NOTES_QUOTED`] notes, then how many more there are.
fn first_notes(notes: &[String]) -> String {
    let mut text = notes[..notes.len().min(NOTES_QUOTED)].join("; ");
    if notes.len() > NOTES_QUOTED {
        text.push_str(&format!(
            "; and {} more like {}",
            notes.len() - NOTES_QUOTED,
            if notes.len() - NOTES_QUOTED == 1 {
                "it"
            } else {
                "them"
            }
        ));
    }
    text
}

/// Why the configuration the model runs with differs between scales for `path`: each hint
/// of the file and each control variable whose value is not the same at every input scale,
/// with its values and the scales of each (first seen at `n0` and `np` ranks).
fn config_differs(inputs: &[(&str, &TraceFile)], path: &str, n0: u32, np: u32) -> String {
    // Per setting, its value at each scale (None: not given there).
    let mut settings: BTreeMap<String, Vec<(u32, Option<String>)>> = BTreeMap::new();
    let mut seen = |setting: String, n: u32, v: Option<&str>| {
        let e = settings.entry(setting).or_default();
        if !e.iter().any(|(m, _)| *m == n) {
            e.push((n, v.map(str::to_string)));
        }
    };
    let configs: Vec<(u32, &rsd::MpiConfig)> = inputs
        .iter()
        .filter_map(|(_, tf)| Some((tf.header.nranks, tf.header.mpi_config.as_ref()?)))
        .collect();
    for &(_, mc) in &configs {
        let hints = mc.file_hints.iter().filter(|(p, _)| p == path);
        for (k, _) in hints.flat_map(|(_, h)| h) {
            for &(n, other) in &configs {
                seen(format!("hint {k}"), n, file_hint(other, path, k));
            }
        }
        for (k, _) in &mc.cvars {
            for &(n, other) in &configs {
                seen(format!("control variable {k}"), n, other.cvar(k));
            }
        }
    }
    let differing: Vec<String> = settings
        .into_iter()
        .filter(|(_, vals)| vals.iter().any(|(_, v)| *v != vals[0].1))
        .map(|(setting, vals)| {
            // The scales of each value, in the order the values first appear.
            let mut by_value: Vec<(Option<String>, Vec<u32>)> = Vec::new();
            for (n, v) in vals {
                match by_value.iter_mut().find(|(w, _)| *w == v) {
                    Some((_, ns)) => ns.push(n),
                    None => by_value.push((v, vec![n])),
                }
            }
            let parts: Vec<String> = by_value
                .iter()
                .map(|(v, ns)| {
                    let ns: Vec<String> = ns.iter().map(u32::to_string).collect();
                    let v = v.as_ref().map_or("not given".into(), |v| format!("{v:?}"));
                    format!("{v} at {} ranks", ns.join(", "))
                })
                .collect();
            format!("{setting} is {}", parts.join(", "))
        })
        .collect();
    let what = if differing.is_empty() {
        format!(
            "the MPI library's configuration differs between {n0} and {np} ranks (the node \
             placement of the ranks)"
        )
    } else {
        differing.join("; ")
    };
    format!(
        "{path}: {what}. The library's collective buffering depends on it, so no input says \
         what it is at the target"
    )
}

/// The first nested call where the model and the recording differ, as text.
fn compare(g: &Group, out: &Modelled) -> Option<String> {
    let t = &g.call;
    let d = traced::first_difference(&t.recorded, &out.calls)?;
    Some(format!(
        "{} #{} on {} at {} ranks, rank {} (model: {}): {d}",
        t.op.name(),
        t.index,
        t.path,
        t.ranks.len(),
        t.ranks[d.rank_index],
        out.how
    ))
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
        format!("OMPIO's num_aggregators parameter {}", cfg.num_aggregators)
    } else if let Some(rows) = cfg.cart_rows {
        format!(
            "the Cartesian grouping of the file's communicator (one group per row of its grid, \
             {rows} rows)"
        )
    } else {
        format!(
            "the simple grouping's cost model ({} {}), capped at one per {} = {} ranks \
             ({np}/{} = {})",
            mca::GROUPING_OPTION,
            cfg.grouping_option,
            mca::MAX_AGGREGATORS_RATIO,
            cfg.max_aggregators_ratio,
            cfg.max_aggregators_ratio,
            u64::from(np) / cfg.max_aggregators_ratio.max(1) as u64
        )
    };
    let list = rsd::RankSet::from_sorted(&out.aggregators);
    let aio = if out.async_writes {
        ", writing asynchronously (more than 2 cycles: a pwrite per request, as collected)"
    } else {
        ""
    };
    format!(
        "fcoll vulcan: {} aggregators (ranks {list}) at {np} ranks from {why}{aio}",
        out.aggregators.len()
    )
}

/// Why [`insert`] did not derive the nested calls at the target.
#[derive(Debug)]
pub(crate) enum Underived {
    /// The model cannot say what happens there (the nested calls may be fitted instead).
    Why(String),
    /// A part that does not stay compressed would take more memory than the bound: the part
    /// and the bytes it would take (an estimate). Refused, never fitted instead.
    OverMemory { part: String, needs: u64 },
}

impl From<String> for Underived {
    fn from(why: String) -> Underived {
        Underived::Why(why)
    }
}

/// Puts the model's nested calls into every derived collective call of the extrapolated
/// trace `tf` (at `tf.header.nranks` ranks), as `how` says, in at most about `max_memory`
/// bytes for the parts that do not stay compressed. Returns an `--explain` entry per derived
/// call site, or why the calls cannot be derived at the target.
pub(crate) fn insert(
    lifts: Option<&rsd::trace::Lifts>,
    tf: &mut TraceFile,
    p: &Plan,
    how: Derivation,
    max_memory: u64,
) -> Result<Vec<Explain>, Underived> {
    let np = tf.header.nranks;
    let per_rank = |tf: &mut TraceFile, why: Option<String>| {
        if np > DERIVE_LIMIT {
            let why = why.map_or(String::new(), |w| format!("{w}; "));
            return Err(Underived::Why(format!(
                "{why}the per-rank derivation expands every rank and runs up to \
                 {DERIVE_LIMIT} ranks only (target {np})"
            )));
        }
        insert_per_rank(lifts, tf, p).map_err(Underived::Why)
    };
    match how {
        Derivation::PerRank => per_rank(tf, None),
        Derivation::Compressed => scaled::insert(tf, p, max_memory),
        Derivation::Auto => {
            let mut work = tf.clone();
            match scaled::insert(&mut work, p, max_memory) {
                Ok(ex) => {
                    *tf = work;
                    Ok(ex)
                }
                Err(Underived::Why(why)) => {
                    per_rank(tf, Some(format!("the compressed derivation: {why}")))
                }
                Err(e) => Err(e),
            }
        }
    }
}

/// [`insert`] rank by rank: every rank is expanded twice (once for the collective calls'
/// regions, once to re-compress it with its derived calls) so that only the regions, not
/// every rank's calls, are held at once; the ranks are then merged as the tracer does.
fn insert_per_rank(
    lifts: Option<&rsd::trace::Lifts>,
    tf: &mut TraceFile,
    p: &Plan,
) -> Result<Vec<Explain>, String> {
    let np = tf.header.nranks;
    let ranks: Vec<RankCalls> = (0..np)
        .map(|r| {
            let mut rc = walk_rank(&tf.trace, r, &p.world);
            // The events are walked again below; the collective calls are what is needed.
            rc.events.clear();
            rc
        })
        .collect();
    let mut notes = Vec::new();
    let mut made_up = BTreeSet::new();
    let mut explain: BTreeMap<Site, Explain> = BTreeMap::new();
    // Per rank, the derived children of its collective calls, by event index.
    let mut derived: Vec<HashMap<usize, Vec<RawEvent>>> = vec![HashMap::new(); np as usize];
    let (groups, covered) = groups(&tf.trace, &ranks, &mut notes);
    // A derived call site must be derived wherever it runs: its nested calls were stripped.
    for (r, (rc, cov)) in ranks.iter().zip(&covered).enumerate() {
        if let Some(c) = rc
            .colls
            .iter()
            .zip(cov)
            .find(|(c, ok)| !**ok && p.derived.contains(&c.site))
        {
            return Err(format!(
                "at {np} ranks, rank {r}'s {} on {} cannot be modelled: {}",
                c.0.site.0.name(),
                c.0.path,
                notes.join("; ")
            ));
        }
    }
    for g in groups {
        let (r0, j0) = g.members[0];
        let site = ranks[r0 as usize].colls[j0].site;
        if !p.derived.contains(&site) {
            continue;
        }
        let cfg = config(&tf.header, &g.call.path, np)?;
        let out = model(&g, &cfg)?;
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
            let mut after = None;
            for call in &out.calls[r as usize] {
                let t = p
                    .template(c.site, out.route, call, after, &mut made_up)
                    .map_err(|e| format!("at {np} ranks, rank {r}: {e}"))?;
                let Some(fd) = c.fd else {
                    return Err(format!(
                        "{}: rank {r} has no traced descriptor for the file",
                        g.call.path
                    ));
                };
                children.push(issued(call, fd, &t));
                after = Some(call);
            }
            derived[r as usize].insert(c.event, children);
        }
    }
    drop(ranks);
    let trace = compress_ranks(lifts, np, |r| {
        let mut events = rank_events(&tf.trace, r);
        for (i, children) in std::mem::take(&mut derived[r as usize]) {
            events[i].children = children;
        }
        Ok(events)
    })?;
    tf.trace = trace;
    record_made_up(&mut tf.header, made_up);
    Ok(explain.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_up_sites_are_read_back_from_their_notes() {
        let site = (Op::FileWriteAtAll, 0xb39c);
        let sig = made_up_sig(site, Op::Pwrite, None);
        let notes = vec![
            "HDF5 library 1.10.8".to_string(),
            made_up_note(Op::Pwrite, site, sig),
            made_up_note(Op::Pread, site, 0x1234),
        ];
        let got = made_up_sites(&notes);
        assert_eq!(got, [sig, 0x1234].into_iter().collect());
        assert!(sig >> 63 == 1, "a made-up site reads as one");
    }

    fn header(cvars: &[(&str, &str)], hints: &[(&str, &str)]) -> Header {
        let mut h = Header::new(16);
        h.mpi_config = Some(rsd::MpiConfig {
            library: "Open MPI v4.1.4, package: Debian OpenMPI".into(),
            node_ranks: vec![(16, 1)],
            nodes_contiguous: true,
            cvars: cvars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            file_hints: vec![(
                "/f".into(),
                hints
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )],
        });
        h
    }

    #[test]
    fn a_configuration_that_differs_names_each_setting_its_values_and_scales() {
        let at = |n: u32, hints: &[(&str, &str)], cvars: &[(&str, &str)]| {
            let mut h = header(cvars, hints);
            h.nranks = n;
            TraceFile {
                header: h,
                trace: Trace::default(),
            }
        };
        let io = [("io", "romio321")];
        let (a, b, c) = (
            at(4, &[("cb_nodes", "2")], &io),
            at(8, &[("cb_nodes", "3")], &io),
            at(12, &[], &[("io", "ompio")]),
        );
        let inputs = [("a", &a), ("b", &b), ("c", &c)];
        let why = config_differs(&inputs, "/f", 4, 8);
        assert!(why.starts_with("/f: "), "{why}");
        assert!(
            why.contains(
                r#"hint cb_nodes is "2" at 4 ranks, "3" at 8 ranks, not given at 12 ranks"#
            ),
            "{why}"
        );
        assert!(
            why.contains(r#"control variable io is "romio321" at 4, 8 ranks, "ompio" at 12 ranks"#),
            "{why}"
        );
        // The same hints everywhere: only the node placement is left to blame.
        let inputs = [("a", &a), ("a", &a)];
        assert!(config_differs(&inputs, "/f", 4, 8).contains("node placement"));
    }

    #[test]
    fn no_configuration_or_another_library_is_not_modelled() {
        let mut h = header(&[], &[]);
        h.mpi_config = None;
        assert!(
            config(&h, "/f", 16)
                .unwrap_err()
                .contains("no MPI library configuration")
        );
        let mut h = header(&[], &[]);
        h.mpi_config.as_mut().unwrap().library = "MPICH Version: 4.1".into();
        assert!(config(&h, "/f", 16).unwrap_err().contains("MPICH"));
        let h = header(&[("io_ompio_bytes_per_agg", "lots")], &[]);
        assert!(config(&h, "/f", 16).unwrap_err().contains("not an integer"));
    }
}
