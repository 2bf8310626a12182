//! The compressed trace of a whole run: nodes (events and loops) with rank sets, and expansion
//! back to one rank's exact call sequence.

use crate::op::{Op, Param};
use crate::path::PathTemplate;
use crate::ranks::RankSet;
use crate::timing::Timing;
use crate::value::Elastic;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use twox_hash::XxHash64;

/// One call as the tracer sees it, before compression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawEvent {
    /// The operation.
    pub op: Op,
    /// Call-site signature (hash of the return-address stack as module/offset pairs).
    pub sig: u64,
    /// The concrete path, for calls that name a file.
    pub path: Option<String>,
    /// Parameters in [`Op::schema`] order, then any array parameters.
    pub params: Vec<i64>,
    /// Compute gap before the call, ns.
    pub gap_ns: u64,
    /// Duration of the call, ns.
    pub dur_ns: u64,
    /// POSIX calls made inside this (MPI-IO) call.
    pub children: Vec<RawEvent>,
}

impl RawEvent {
    /// A call with no path, no children and zero timing.
    pub fn new(op: Op, sig: u64, params: Vec<i64>) -> RawEvent {
        RawEvent {
            op,
            sig,
            path: None,
            params,
            gap_ns: 0,
            dur_ns: 0,
            children: Vec::new(),
        }
    }

    /// This call with its timing, as the raw log writes it.
    pub fn logged(&self) -> LoggedEvent {
        LoggedEvent {
            call: self.flat(),
            gap_ns: self.gap_ns,
            dur_ns: self.dur_ns,
        }
    }

    /// This call without timing, as expansion gives it back.
    pub fn flat(&self) -> FlatEvent {
        FlatEvent {
            op: self.op,
            sig: self.sig,
            path: self.path.clone(),
            params: self.params.clone(),
            children: self.children.iter().map(RawEvent::flat).collect(),
        }
    }
}

/// One top-level call as the tracer's `IOTREX_RAW=1` log writes it: the call and its timing
/// (`iotrex sensitivity` builds each rank's timeline from them; readers of the call alone
/// read a line as a [`FlatEvent`], which ignores the timing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedEvent {
    /// The call.
    #[serde(flatten)]
    pub call: FlatEvent,
    /// Time since the end of the previous top-level call (or the start of tracing), ns.
    pub gap_ns: u64,
    /// The call's duration, ns.
    pub dur_ns: u64,
}

/// One call of one rank as expansion gives it back: everything but timing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlatEvent {
    /// The operation.
    pub op: Op,
    /// Call-site signature.
    pub sig: u64,
    /// The concrete path.
    pub path: Option<String>,
    /// Parameters, path fields excluded.
    pub params: Vec<i64>,
    /// Nested POSIX calls.
    pub children: Vec<FlatEvent>,
}

impl FlatEvent {
    /// Parameter `p`, or `None` when this op has no such parameter ([`Op::get`]).
    pub fn get(&self, p: Param) -> Option<i64> {
        self.op.get(&self.params, p)
    }

    /// Parameter `p`, which this op's schema has (debug builds panic when it has not; see
    /// [`Op::param`]).
    pub fn p(&self, p: Param) -> i64 {
        self.op.param(&self.params, p)
    }
}

/// A traced call with elastic parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The operation.
    pub op: Op,
    /// Call-site signature.
    pub sig: u64,
    /// Path template, for calls that name a file; its fields are the last parameters.
    pub path: Option<PathTemplate>,
    /// Parameters, then path fields.
    pub params: Vec<Elastic>,
    /// Gap and duration statistics over every occurrence on every rank.
    pub timing: Timing,
    /// Nested POSIX calls, as a node list whose values range over the same loops as the event.
    pub children: Vec<Node>,
}

impl Event {
    /// Number of path fields at the end of `params`.
    pub fn nfields(&self) -> usize {
        self.path
            .as_ref()
            .map_or(0, |p| p.nfields())
            .min(self.params.len())
    }

    /// The path's fields: the last [`Event::nfields`] parameters.
    pub fn path_fields(&self) -> &[Elastic] {
        &self.params[self.params.len() - self.nfields()..]
    }
}

/// A loop: `iters` repetitions of `body`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Loop {
    /// Iteration count, elastic over ranks and the enclosing loops.
    pub iters: Elastic,
    /// The repeated nodes.
    pub body: Vec<Node>,
}

/// An event or a loop.
// Events are most nodes and are built once then walked, so boxing them would add an
// allocation per node for no gain.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum NodeKind {
    /// One call.
    Event(Event),
    /// A loop (an RSD; nested loops make a PRSD).
    Loop(Loop),
}

/// A node and the ranks that execute it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Ranks that execute this node.
    pub ranks: RankSet,
    /// What it is.
    pub kind: NodeKind,
}

const TAG_LOOP: u64 = 0x4c4f_4f50;

/// Hashes the structure of a per-rank or merged event: what must be equal for two events to
/// be folded into one loop or merged across ranks. Values are not part of it.
pub(crate) fn event_skey(
    op: Op,
    sig: u64,
    path: Option<&str>,
    nparams: usize,
    children: impl Iterator<Item = u64>,
) -> u64 {
    // A multiply-xorshift mix of a few words: this runs once per traced call, where a streaming
    // hasher costs more than the rest of the compressor. Paths go through xxh64 first.
    let mut h = mix(0x10_7e_c5, op as u64);
    h = mix(h, sig);
    h = mix(
        h,
        path.map_or(0, |p| XxHash64::oneshot(1, p.as_bytes()) | 1),
    );
    h = mix(h, nparams as u64);
    for c in children {
        h = mix(h, c);
    }
    mix(h, 0xe7e7)
}

/// Hashes a loop's structure from its body's keys; the iteration count is not part of it.
pub(crate) fn loop_skey(body: impl Iterator<Item = u64>) -> u64 {
    let mut h = TAG_LOOP;
    for c in body {
        h = mix(h, c);
    }
    mix(h, TAG_LOOP)
}

/// A multiply-xorshift step: the structural keys' hash, and [`crate::classes`]'.
#[inline]
pub(crate) fn mix(h: u64, x: u64) -> u64 {
    let v = (h ^ x.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    v ^ (v >> 29)
}

impl Node {
    /// The structural key of this node (see [`event_skey`]).
    pub fn skey(&self) -> u64 {
        match &self.kind {
            NodeKind::Event(e) => event_skey(
                e.op,
                e.sig,
                e.path.as_ref().map(|p| p.0.as_str()),
                e.params.len(),
                e.children.iter().map(Node::skey),
            ),
            NodeKind::Loop(l) => loop_skey(l.body.iter().map(Node::skey)),
        }
    }

    /// The key on which ranks' node lists are aligned and merged: [`Node::skey`] without the
    /// nested calls, at any depth. The calls an MPI library makes inside a collective MPI-IO
    /// call depend on the rank's role in it (OMPIO's and ROMIO's aggregators write, the
    /// others do not, and each aggregator's file domain cuts the blocks at its own place), so
    /// keying on them split every loop around such a call into one copy per role, each with its
    /// own values; merged on this key, the event is one node and its nested calls are nodes of
    /// their own rank sets (the aggregators'), aligned like any node list.
    pub fn merge_key(&self) -> u64 {
        match &self.kind {
            NodeKind::Event(e) => event_skey(
                e.op,
                e.sig,
                e.path.as_ref().map(|p| p.0.as_str()),
                e.params.len(),
                std::iter::empty(),
            ),
            NodeKind::Loop(l) => loop_skey(l.body.iter().map(Node::merge_key)),
        }
    }
}

/// A compressed trace: the node list of all ranks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Trace {
    /// Top-level nodes in program order.
    pub nodes: Vec<Node>,
}

/// Expansion stops at this many events per call of [`Trace::expand`], so a corrupt iteration
/// count cannot exhaust memory. Use [`Trace::expand_with`] to stream larger traces.
pub const EXPAND_LIMIT: usize = 50_000_000;

/// A trace every value of which one rank can evaluate alone: the per-rank view every consumer
/// reads ([`Trace::resolved`]).
///
/// An offset that is a prefix sum over the ranks ([`Val::Exscan`](crate::Val::Exscan)) or the
/// end of the file's data so far ([`Val::FileEnd`](crate::Val::FileEnd)) is a function of
/// every rank's earlier calls, so expanding one rank cannot evaluate it: raw evaluation gives
/// `None` ([`crate::Val::eval`], [`flatten_event`]). This type holds the trace with those
/// values replaced by each rank's offsets (`rsd::prefix::resolve`), and only it flattens
/// events infallibly ([`Resolved::flatten`]); the trace's own per-rank API
/// ([`Trace::expand_with`], [`Trace::expand`], [`Trace::rank_events`]) goes through it. Before,
/// a consumer that walked the nodes without resolving them first (`expand`, the Parquet and
/// OTF2 exports, `diff`) printed each model's start (an offset of 0) where the run wrote at
/// 136, and nothing in the types said so.
#[derive(Debug, Clone)]
pub struct Resolved<'a>(Cow<'a, Trace>);

impl std::ops::Deref for Resolved<'_> {
    type Target = Trace;
    fn deref(&self) -> &Trace {
        &self.0
    }
}

impl Resolved<'_> {
    /// The resolved trace, owned.
    pub fn into_trace(self) -> Trace {
        self.0.into_owned()
    }

    /// Evaluates an event of this trace for `rank` at iteration indices `idx`; `rank` must run
    /// the event's node (the events [`visit`] hands out).
    pub fn flatten(&self, e: &Event, rank: u32, idx: &mut Vec<u64>) -> FlatEvent {
        // No value of a resolved trace needs the other ranks: every parameter evaluates.
        flatten_with(e, rank, idx, &|p, rank, idx| p.start_member(rank, idx))
    }

    /// Calls `f` with every event of `rank`, in order, with its iteration indices. Stops early
    /// when `f` returns `false`. Memory stays proportional to the trace, not the event count.
    pub fn expand_with(&self, rank: u32, f: &mut dyn FnMut(&FlatEvent) -> bool) {
        let mut idx = Vec::new();
        visit(&self.nodes, rank, &mut idx, &mut |e, idx| {
            f(&self.flatten(e, rank, idx))
        });
    }

    /// Every call of `rank`, nested calls included, each with its node's mean timing: the
    /// form the compressor takes, to re-compress a rank after editing its calls, and the form
    /// the HDF5 oracle replays.
    pub fn rank_events(&self, rank: u32) -> Vec<RawEvent> {
        fn mean(s: &crate::timing::Stats) -> u64 {
            s.mean.max(0.0).round() as u64
        }
        /// Event `e` of `rank` at loop indices `idx`, children included.
        fn raw_of(t: &Resolved, e: &Event, rank: u32, idx: &mut Vec<u64>) -> RawEvent {
            let mut flat = t.flatten(e, rank, idx);
            let mut children = Vec::new();
            if !e.children.is_empty() {
                visit(&e.children, rank, idx, &mut |c, idx| {
                    children.push(raw_of(t, c, rank, idx));
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
        let mut events = Vec::new();
        let mut idx = Vec::new();
        visit(&self.nodes, rank, &mut idx, &mut |e, idx| {
            events.push(raw_of(self, e, rank, idx));
            true
        });
        events
    }

    /// The exact call sequence of `rank` (timing aside), up to [`EXPAND_LIMIT`] events.
    pub fn expand(&self, rank: u32) -> Vec<FlatEvent> {
        let mut out = Vec::new();
        self.expand_with(rank, &mut |e| {
            out.push(e.clone());
            out.len() < EXPAND_LIMIT
        });
        out
    }
}

impl Trace {
    /// The trace as every rank's calls see it ([`Resolved`]): borrowed when no value needs
    /// the other ranks, else a copy with those values resolved (`O(ranks x writes)` of the
    /// files that hold them). A consumer that expands many ranks takes this once.
    pub fn resolved(&self) -> Resolved<'_> {
        if !crate::prefix::needs_resolving(self) {
            return Resolved(Cow::Borrowed(self));
        }
        let mut t = self.clone();
        crate::prefix::resolve_all(&mut t);
        Resolved(Cow::Owned(t))
    }

    /// [`Trace::resolved`], taking the trace.
    pub fn into_resolved(mut self) -> Resolved<'static> {
        crate::prefix::resolve_all(&mut self);
        Resolved(Cow::Owned(self))
    }

    /// Calls `f` with every event of `rank`, in order, with its iteration indices, its
    /// offsets resolved ([`Resolved::expand_with`]). Stops early when `f` returns `false`.
    pub fn expand_with(&self, rank: u32, f: &mut dyn FnMut(&FlatEvent) -> bool) {
        self.resolved().expand_with(rank, f)
    }

    /// Calls `f` with every event of `rank`, as [`Trace::expand_with`] does, but with the
    /// values that need the other ranks' calls (offsets: [`crate::Val::Exscan`],
    /// [`crate::Val::FileEnd`]) left at their model's start instead of resolved: for readers
    /// of counts, sizes and paths, which would otherwise resolve every rank's offsets of a
    /// large trace to read none of them.
    pub fn expand_unresolved_with(&self, rank: u32, f: &mut dyn FnMut(&FlatEvent) -> bool) {
        let mut idx = Vec::new();
        visit(&self.nodes, rank, &mut idx, &mut |e, idx| {
            f(&flatten_with(e, rank, idx, &|p, rank, idx| {
                p.start_member(rank, idx)
            }))
        });
    }

    /// Every call of `rank`, nested calls included, each with its node's mean timing
    /// ([`Resolved::rank_events`]).
    pub fn rank_events(&self, rank: u32) -> Vec<RawEvent> {
        self.resolved().rank_events(rank)
    }

    /// The exact call sequence of `rank` (timing aside), up to [`EXPAND_LIMIT`] events, its
    /// offsets resolved ([`Resolved::expand`]).
    pub fn expand(&self, rank: u32) -> Vec<FlatEvent> {
        self.resolved().expand(rank)
    }

    /// All ranks that appear in the trace.
    pub fn ranks(&self) -> RankSet {
        self.nodes
            .iter()
            .fold(RankSet::default(), |acc, n| acc.union(&n.ranks))
    }
}

impl Trace {
    /// Whether some call of a container layer ([`Layer::is_container`](crate::op::Layer::is_container),
    /// HDF5) carries children.
    pub fn has_containers(&self) -> bool {
        fn any(nodes: &[Node]) -> bool {
            nodes.iter().any(|n| match &n.kind {
                NodeKind::Event(e) => e.op.layer().is_container() && !e.children.is_empty(),
                NodeKind::Loop(l) => any(&l.body),
            })
        }
        any(&self.nodes)
    }

    /// Lifts the children of every container call out of it: the call is followed, in its
    /// node list, by the nodes of the calls it made (whose values range over the same loops,
    /// so the sequence every rank executes is unchanged), and keeps no children. The
    /// libraries below (MPI-IO collective calls with their nested POSIX calls, HDF5's dealt
    /// metadata writes) are then where the extrapolation's models of them look, at the top
    /// level. The container keeps its inclusive timing.
    ///
    /// A lifted call's call-site signature is mixed with its container's: inside a library the
    /// return addresses of a few frames say which of the library's paths made the call, not
    /// for which of the program's calls. HDF5 writes a dataset's data and its metadata cache's
    /// entries through one `MPI_File_write_at` call site; mixed with the `H5Dwrite` or the
    /// `H5Fclose` that made them, they are two sites, and a model of one (the dealt metadata
    /// flush) does not see the other's calls.
    pub fn lift_containers(&mut self) {
        self.lift_containers_into(&mut Lifts::default());
    }

    /// [`Trace::lift_containers`], recording in `lifts` every call site it made, so that
    /// [`Trace::nest_lifted`] can put a trace built from the lifted form (an extrapolation)
    /// back in nested form.
    pub fn lift_containers_into(&mut self, lifts: &mut Lifts) {
        fn resign(nodes: &mut [Node], container: u64, lifts: &mut Lifts) {
            for n in nodes {
                match &mut n.kind {
                    NodeKind::Event(e) => {
                        let own = e.sig;
                        e.sig = lifted_site(e.sig, container);
                        lifts.sites.insert(e.sig, (own, container));
                    }
                    NodeKind::Loop(l) => resign(&mut l.body, container, lifts),
                }
            }
        }
        fn lift(nodes: Vec<Node>, lifts: &mut Lifts) -> Vec<Node> {
            let mut out = Vec::with_capacity(nodes.len());
            for mut n in nodes {
                let lifted = match &mut n.kind {
                    NodeKind::Event(e) if e.op.layer().is_container() => {
                        let mut c = std::mem::take(&mut e.children);
                        resign(&mut c, e.sig, lifts);
                        lift(c, lifts)
                    }
                    NodeKind::Event(_) => Vec::new(),
                    NodeKind::Loop(l) => {
                        l.body = lift(std::mem::take(&mut l.body), lifts);
                        Vec::new()
                    }
                };
                out.push(n);
                out.extend(lifted);
            }
            out
        }
        self.nodes = lift(std::mem::take(&mut self.nodes), lifts);
    }

    /// The inverse of [`Trace::lift_containers_into`] on a trace whose call sites come from
    /// lifted traces (an extrapolation of them): every run of nodes after a container call
    /// whose call sites lifting made for that container's site (directly, or below a container
    /// lifted with it) becomes the container's children again, with their own call sites.
    /// Each rank executes the same calls in the same order before and after.
    ///
    /// A lifted node goes to the latest container node before it, in its node list, whose
    /// site made it, whose ranks hold all of its ranks, and for whose ranks nothing else ran in
    /// between. A lifted node no such container takes, or a loop whose body mixes lifted
    /// calls with others (or with another container's), is an error naming it, and the trace
    /// is left as it was. Returns the number of container nodes given children.
    pub fn nest_lifted(&mut self, lifts: &Lifts) -> Result<usize, String> {
        if lifts.sites.is_empty() {
            return Ok(0);
        }
        let mut count = 0;
        let nodes = nest(self.nodes.clone(), None, lifts, &mut count)?;
        self.nodes = nodes;
        Ok(count)
    }
}

/// The call sites [`Trace::lift_containers_into`] made: each lifted call's site, with its own
/// site and its container's (as the container was lifted itself: a container inside a
/// container has a lifted site too).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lifts {
    sites: std::collections::HashMap<u64, (u64, u64)>,
}

impl Lifts {
    /// Whether lifting made no call site (no container had children).
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }

    /// The own call site and the container's of `site`, a site lifting made (`None` for a
    /// site it did not make).
    pub fn parts(&self, site: u64) -> Option<(u64, u64)> {
        self.sites.get(&site).copied()
    }

    /// The site lifting gives a call of site `own` out of a container of site `container`
    /// (what [`Lifts::parts`] inverts): for a call a model puts into a container no input
    /// saw it in.
    pub fn lifted_site(own: u64, container: u64) -> u64 {
        mix(own, container)
    }

    /// Records the site lifting gives a call of site `own` out of a container of site
    /// `container` ([`Lifts::lifted_site`]), for a call a model made in the lifted form, and
    /// returns it.
    pub fn add(&mut self, own: u64, container: u64) -> u64 {
        let site = lifted_site(own, container);
        self.sites.insert(site, (own, container));
        site
    }

    /// One rank's calls in the lifted form (`events`, in call order, as a lifted trace
    /// expands: a container call followed by the calls lifting took out of it) nested again:
    /// each call whose site lifting made for the latest open container's site becomes its
    /// child, with its own site back. A call no open container made stays where it is. The
    /// per-rank inverse of [`Trace::lift_containers_into`], for a model that takes calls out
    /// of every rank's lifted calls and compresses them again: compressed flat, the calls of
    /// a loop of containers may fold into a loop that starts inside a container, which
    /// nothing nests again.
    pub fn nest_events(&self, events: Vec<RawEvent>) -> Vec<RawEvent> {
        // The open containers: the event, with its site as the lifted calls name it.
        let mut open: Vec<(RawEvent, u64)> = Vec::new();
        let mut out: Vec<RawEvent> = Vec::with_capacity(events.len());
        let close = |open: &mut Vec<(RawEvent, u64)>, out: &mut Vec<RawEvent>| {
            if let Some((e, _)) = open.pop() {
                match open.last_mut() {
                    Some((parent, _)) => parent.children.push(e),
                    None => out.push(e),
                }
            }
        };
        for mut e in events {
            let lifted = e.sig;
            match self.parts(lifted) {
                Some((own, container)) if open.iter().any(|(_, s)| *s == container) => {
                    while open.last().is_some_and(|(_, s)| *s != container) {
                        close(&mut open, &mut out);
                    }
                    e.sig = own;
                }
                _ => {
                    while !open.is_empty() {
                        close(&mut open, &mut out);
                    }
                }
            }
            if e.op.layer().is_container() {
                open.push((e, lifted));
            } else {
                match open.last_mut() {
                    Some((parent, _)) => parent.children.push(e),
                    None => out.push(e),
                }
            }
        }
        while !open.is_empty() {
            close(&mut open, &mut out);
        }
        out
    }

    /// Whether `site` was made by lifting a call out of a container of site `container`,
    /// directly or through containers lifted with it.
    fn made_for(&self, mut site: u64, container: u64) -> bool {
        // A chain is as long as the containers' nesting; the bound only guards against a
        // cycle of colliding hashes.
        for _ in 0..64 {
            match self.sites.get(&site) {
                Some(&(_, c)) if c == container => return true,
                Some(&(_, c)) => site = c,
                None => return false,
            }
        }
        false
    }
}

/// How a node relates to a container site: every call in it (loops looked into, not the
/// calls' own children) was lifted out of it, none was, or some were.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Made {
    All,
    None,
    Some,
}

fn made_for(n: &Node, container: u64, lifts: &Lifts) -> Made {
    match &n.kind {
        NodeKind::Event(e) => {
            if lifts.made_for(e.sig, container) {
                Made::All
            } else {
                Made::None
            }
        }
        NodeKind::Loop(l) => {
            let mut seen = (false, false);
            for b in &l.body {
                match made_for(b, container, lifts) {
                    Made::All => seen.0 = true,
                    Made::None => seen.1 = true,
                    Made::Some => return Made::Some,
                }
            }
            match seen {
                (true, true) => Made::Some,
                (true, false) => Made::All,
                _ => Made::None,
            }
        }
    }
}

fn subset(a: &RankSet, b: &RankSet) -> bool {
    if a == b {
        return true;
    }
    let mut all = true;
    a.for_each(|r| all &= b.contains(r));
    all
}

fn intersects(a: &RankSet, b: &RankSet) -> bool {
    let (small, big) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut any = false;
    small.for_each(|r| any |= big.contains(r));
    any
}

/// The sites of the calls at the top of `nodes` (loops looked into) given back.
fn unsign(nodes: &mut [Node], lifts: &Lifts) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                if let Some(&(own, _)) = lifts.sites.get(&e.sig) {
                    e.sig = own;
                }
            }
            NodeKind::Loop(l) => unsign(&mut l.body, lifts),
        }
    }
}

/// One node list of [`Trace::nest_lifted`]: the top level (`parent` `None`) or the children of
/// a container of site `parent`, whose own calls stay where they are.
fn nest(
    nodes: Vec<Node>,
    parent: Option<u64>,
    lifts: &Lifts,
    count: &mut usize,
) -> Result<Vec<Node>, String> {
    // A container whose children may still follow: where it is in `out`, its site, the ranks
    // for which nothing else ran since, and the nodes taken so far.
    struct Open {
        at: usize,
        sig: u64,
        ranks: RankSet,
        children: Vec<Node>,
    }
    let finish = |out: &mut [Node], o: Open, count: &mut usize| -> Result<(), String> {
        if o.children.is_empty() {
            return Ok(());
        }
        let mut c = nest(o.children, Some(o.sig), lifts, count)?;
        unsign(&mut c, lifts);
        if let NodeKind::Event(e) = &mut out[o.at].kind {
            e.children = c;
            *count += 1;
        }
        Ok(())
    };
    let mut out: Vec<Node> = Vec::with_capacity(nodes.len());
    let mut open: Vec<Open> = Vec::new();
    for mut n in nodes {
        let owner = open
            .iter()
            .rposition(|o| made_for(&n, o.sig, lifts) == Made::All && subset(&n.ranks, &o.ranks));
        if let Some(i) = owner {
            open[i].children.push(n);
            continue;
        }
        match &mut n.kind {
            NodeKind::Event(e) => {
                if let Some(&(_, c)) = lifts.sites.get(&e.sig)
                    && Some(c) != parent
                {
                    return Err(format!(
                        "{} (ranks {}) follows no call of the container that made it on all \
                         of its ranks",
                        describe(&n),
                        n.ranks
                    ));
                }
            }
            // A loop that is no container's child: its body is a node list of its own.
            NodeKind::Loop(l) => l.body = nest(std::mem::take(&mut l.body), parent, lifts, count)?,
        }
        // Not a child: the open containers of its ranks are closed for them. One left open for
        // only some of its ranks is closed whole: a later lifted call of theirs is then an
        // error, never nested wrongly.
        let mut k = 0;
        while k < open.len() {
            if intersects(&n.ranks, &open[k].ranks) {
                let o = open.remove(k);
                finish(&mut out, o, count)?;
            } else {
                k += 1;
            }
        }
        if let NodeKind::Event(e) = &n.kind
            && e.op.layer().is_container()
        {
            open.push(Open {
                at: out.len(),
                sig: e.sig,
                ranks: n.ranks.clone(),
                children: Vec::new(),
            });
        }
        out.push(n);
    }
    for o in open {
        finish(&mut out, o, count)?;
    }
    Ok(out)
}

fn describe(n: &Node) -> String {
    match &n.kind {
        NodeKind::Event(e) => format!("{} (call site {:#x})", e.op.name(), e.sig),
        NodeKind::Loop(l) => match l.body.first() {
            Some(b) => format!("a loop around {}", describe(b)),
            None => "an empty loop".into(),
        },
    }
}

/// Evaluates an event for `rank` at iteration indices `idx`; `rank` must run the event's node
/// (the events [`visit`] hands out). `None` when a value of the event or of a call nested in
/// it needs the other ranks' calls ([`crate::Val::eval`]): flatten through
/// [`Trace::resolved`] ([`Resolved::flatten`]) instead.
pub fn flatten_event(e: &Event, rank: u32, idx: &mut Vec<u64>) -> Option<FlatEvent> {
    fn resolvable(nodes: &[Node]) -> bool {
        nodes.iter().all(|n| match &n.kind {
            NodeKind::Event(e) => {
                !e.params.iter().any(|p| p.is_exscan() || p.is_file_end())
                    && resolvable(&e.children)
            }
            NodeKind::Loop(l) => resolvable(&l.body),
        })
    }
    let own = !e.params.iter().any(|p| p.is_exscan() || p.is_file_end());
    (own && resolvable(&e.children))
        .then(|| flatten_with(e, rank, idx, &|p, rank, idx| p.start_member(rank, idx)))
}

/// A parameter's value for a rank at loop indices.
type Eval<'a> = &'a dyn Fn(&Elastic, u32, &[u64]) -> i64;

fn flatten_with(e: &Event, rank: u32, idx: &mut Vec<u64>, eval: Eval<'_>) -> FlatEvent {
    let mut params: Vec<i64> = e.params.iter().map(|p| eval(p, rank, idx)).collect();
    // The path's fields come last; splitting them off leaves the schema parameters in place
    // (no second vector for them, and none at all for the fields of a path-less call).
    let fields = params.split_off(params.len() - e.nfields());
    let mut children = Vec::new();
    if !e.children.is_empty() {
        visit(&e.children, rank, idx, &mut |c, idx| {
            children.push(flatten_with(c, rank, idx, eval));
            true
        });
    }
    FlatEvent {
        op: e.op,
        sig: e.sig,
        path: e.path.as_ref().map(|p| p.render(&fields)),
        params,
        children,
    }
}

/// As [`visit`], with containers opened as [`Trace::lift_containers`] lifts them: an event of
/// a container layer ([`Layer::is_container`](crate::op::Layer::is_container), HDF5) is
/// handed out, then its children, with the same indices (recursively). The calls a replay
/// issues are those the libraries below made; the container only groups them (its children
/// are still attached to the event handed out: a consumer leaves them alone).
pub fn visit_calls(
    nodes: &[Node],
    rank: u32,
    idx: &mut Vec<u64>,
    f: &mut dyn FnMut(&Event, &mut Vec<u64>) -> bool,
) -> bool {
    visit_lifted(nodes, rank, idx, &mut |e, _, idx| f(e, idx))
}

/// The call site a call has once lifted out of a container whose (lifted) site is
/// `container` ([`Trace::lift_containers`]: inside a library the call site says which of the
/// library's paths made the call, the container's for which of the program's calls).
pub fn lifted_site(own: u64, container: u64) -> u64 {
    mix(own, container)
}

/// As [`visit_calls`], with each call's site as [`Trace::lift_containers`] would make it
/// ([`lifted_site`]): a model read on the nested form through this sees the calls, in order
/// and with their sites, as it would on the lifted form, so recognising and resolving it agree
/// whichever form a trace is in.
pub fn visit_lifted(
    nodes: &[Node],
    rank: u32,
    idx: &mut Vec<u64>,
    f: &mut dyn FnMut(&Event, u64, &mut Vec<u64>) -> bool,
) -> bool {
    fn go(
        nodes: &[Node],
        container: Option<u64>,
        rank: u32,
        idx: &mut Vec<u64>,
        f: &mut dyn FnMut(&Event, u64, &mut Vec<u64>) -> bool,
    ) -> bool {
        visit(nodes, rank, idx, &mut |e, idx| {
            let site = container.map_or(e.sig, |c| lifted_site(e.sig, c));
            if !f(e, site, idx) {
                return false;
            }
            !e.op.layer().is_container() || go(&e.children, Some(site), rank, idx, f)
        })
    }
    go(nodes, None, rank, idx, f)
}

/// Calls `f` with every event node `rank` executes, in order, with the iteration indices of
/// its enclosing loops (outermost first). Nested children are not visited: call `visit` on
/// `e.children` with the same indices for them. Consumers that need timing (the event's
/// [`Timing`](crate::timing::Timing)) or lazy evaluation use this; [`flatten_event`] gives
/// the call's values. Stops early when `f` returns `false`, and returns `false` then.
pub fn visit(
    nodes: &[Node],
    rank: u32,
    idx: &mut Vec<u64>,
    f: &mut dyn FnMut(&Event, &mut Vec<u64>) -> bool,
) -> bool {
    for n in nodes {
        if !n.ranks.contains(rank) {
            continue;
        }
        match &n.kind {
            NodeKind::Event(e) => {
                if !f(e, idx) {
                    return false;
                }
            }
            NodeKind::Loop(l) => {
                if idx.len() >= crate::value::MAX_DEPTH {
                    return false;
                }
                let iters = l.iters.start_member(rank, idx).max(0) as u64;
                idx.push(0);
                for i in 0..iters {
                    *idx.last_mut().expect("pushed") = i;
                    if !visit(&l.body, rank, idx, f) {
                        idx.pop();
                        return false;
                    }
                }
                idx.pop();
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compressor, Op};

    fn call(op: Op, sig: u64, params: Vec<i64>, children: Vec<RawEvent>) -> RawEvent {
        RawEvent {
            children,
            ..RawEvent::new(op, sig, params)
        }
    }

    /// Three iterations of an `H5Dwrite` whose collective write has a `pwrite` below it,
    /// then an `H5Fclose` that wrote metadata with the same `MPI_File_write_at` site as the
    /// data of an independent `H5Dwrite`.
    fn nested() -> Trace {
        let mut c = Compressor::new(0);
        for i in 0..3 {
            let pw = call(Op::Pwrite, 9, vec![0, 64, 64 * i, 64], vec![]);
            let wr = call(Op::FileWriteAtAll, 8, vec![0, 64 * i, 16, 4, 64], vec![pw]);
            c.push(&call(
                Op::H5Dwrite,
                7,
                vec![1, 2, 3, 1, 4, 16, 64],
                vec![wr],
            ));
        }
        let data = call(Op::FileWriteAt, 5, vec![0, 192, 1, 4, 4], vec![]);
        c.push(&call(
            Op::H5Dwrite,
            6,
            vec![1, 2, 3, 0, 4, 1, 4],
            vec![data],
        ));
        let meta = call(Op::FileWriteAt, 5, vec![0, 0, 96, 4, 96], vec![]);
        c.push(&call(Op::H5Fclose, 4, vec![0], vec![meta]));
        c.finish()
    }

    #[test]
    fn lifting_keeps_every_call_in_order() {
        let t = nested();
        assert!(t.has_containers());
        let mut l = t.clone();
        l.lift_containers();
        assert!(!l.has_containers());
        // The nested sequence, flattened one level for the containers only.
        let mut want = Vec::new();
        for e in t.expand(0) {
            let mut e2 = e.clone();
            e2.children.clear();
            want.push((e2.op, e2.params.clone(), 0));
            for c in e.children {
                want.push((c.op, c.params.clone(), c.children.len()));
            }
        }
        let got: Vec<_> = l
            .expand(0)
            .into_iter()
            .map(|e| (e.op, e.params, e.children.len()))
            .collect();
        assert_eq!(got, want);
        // The MPI-IO call keeps its POSIX child.
        assert_eq!(got[1], (Op::FileWriteAtAll, vec![0, 0, 16, 4, 64], 1));
        // One MPI_File_write_at site inside the library, two sites once lifted: the data's
        // under H5Dwrite, the metadata's under H5Fclose.
        let sites: Vec<u64> = l
            .expand(0)
            .into_iter()
            .filter(|e| e.op == Op::FileWriteAt)
            .map(|e| e.sig)
            .collect();
        assert_eq!(sites.len(), 2);
        assert_ne!(sites[0], sites[1]);
    }

    #[test]
    fn visit_calls_hands_out_containers_then_children() {
        let t = nested();
        let mut ops = Vec::new();
        visit_calls(&t.nodes, 0, &mut Vec::new(), &mut |e, _| {
            ops.push(e.op);
            true
        });
        let mut l = t.clone();
        l.lift_containers();
        let lifted: Vec<Op> = l.expand(0).into_iter().map(|e| e.op).collect();
        assert_eq!(ops, lifted);
        assert_eq!(ops[..2], [Op::H5Dwrite, Op::FileWriteAtAll]);
    }

    /// A NetCDF call holding an HDF5 call holding an MPI-IO call, twice, then a program call.
    fn three_levels() -> Trace {
        let mut c = Compressor::new(0);
        for i in 0..2 {
            let pw = call(Op::Pwrite, 9, vec![0, 64, 64 * i, 64], vec![]);
            let wr = call(Op::FileWriteAtAll, 8, vec![0, 64 * i, 16, 4, 64], vec![pw]);
            let h5 = call(Op::H5Dwrite, 7, vec![1, 2, 3, 1, 4, 16, 64], vec![wr]);
            let get = call(Op::FileGetSize, 6, vec![0, 64], vec![]);
            c.push(&call(
                Op::NcPutVara,
                5,
                vec![0, 3, 5, 1, 16, 64, 64 * i, 16],
                vec![get, h5],
            ));
        }
        c.push(&call(Op::Barrier, 4, vec![0], vec![]));
        c.finish()
    }

    #[test]
    fn one_ranks_lifted_calls_nest_again() {
        for t in [nested(), three_levels()] {
            let mut l = t.clone();
            let mut lifts = Lifts::default();
            l.lift_containers_into(&mut lifts);
            let flat = l.rank_events(0);
            assert!(
                flat.iter()
                    .all(|e| !e.op.layer().is_container() || e.children.is_empty())
            );
            assert_eq!(lifts.nest_events(flat), t.rank_events(0));
            // Calls that are not lifted ones stay as they are.
            let plain = t.rank_events(0);
            assert_eq!(Lifts::default().nest_events(plain.clone()), plain);
        }
    }

    #[test]
    fn nesting_the_lifted_form_gives_the_trace_back() {
        let t = nested();
        let mut l = t.clone();
        let mut lifts = Lifts::default();
        l.lift_containers_into(&mut lifts);
        assert!(!lifts.is_empty());
        let lifted = l.clone();
        // The three H5Dwrites with their write_at_all, the fourth H5Dwrite's write_at and the
        // H5Fclose's.
        assert_eq!(l.nest_lifted(&lifts), Ok(3));
        assert_eq!(l, t);
        // A trace without lifted calls is left alone.
        let mut plain = t.clone();
        assert_eq!(plain.nest_lifted(&Lifts::default()), Ok(0));
        assert_eq!(plain, t);
        // A lifted call moved before its container is refused, and the trace left lifted.
        let mut moved = lifted.clone();
        let last = moved.nodes.len() - 1;
        moved.nodes.swap(last - 1, last);
        let before = moved.clone();
        let err = moved.nest_lifted(&lifts).unwrap_err();
        assert!(err.contains("MPI_File_write_at"), "{err}");
        assert_eq!(moved, before);
    }

    /// Ranks 0-1's H5Fclose writes, rank 2's does not, and rank 2 runs another call first:
    /// the merged container node gets the writes back as children of ranks 0-1 only.
    #[test]
    fn nesting_follows_each_rank() {
        let mut ranks = Vec::new();
        for r in 0..3u32 {
            let mut c = Compressor::new(r);
            if r == 2 {
                c.push(&call(Op::Write, 3, vec![1, 8, 8], vec![]));
            }
            let w = call(
                Op::FileWriteAt,
                5,
                vec![0, i64::from(r) * 8, 8, 4, 8],
                vec![],
            );
            let kids = if r < 2 { vec![w] } else { vec![] };
            c.push(&call(Op::H5Fclose, 4, vec![0], kids));
            ranks.push(c.finish());
        }
        let t = crate::merge::merge_tree(ranks).unwrap();
        let mut l = t.clone();
        let mut lifts = Lifts::default();
        l.lift_containers_into(&mut lifts);
        assert_eq!(l.nest_lifted(&lifts), Ok(1));
        for r in 0..3 {
            assert_eq!(l.expand(r), t.expand(r), "rank {r}");
        }
    }
}
