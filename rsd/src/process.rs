//! The processes of a trace beyond its ranks' own: forked children, as slots of the rank
//! dimension (`docs/processes.md`).
//!
//! Slot `r < nranks` is rank `r`'s own process; child `k` of rank `r` is slot
//! `nranks + r * stride + k` ([`slot`]), so every rank set, merge, expansion and class of the
//! trace covers the children as it covers the ranks. The header's [`Processes`] says which
//! slots are children, of whom, forked where, and how each ended, grouped by kind as rank
//! sets group ranks.

use crate::ranks::RankSet;
use serde::{Deserialize, Serialize};

/// The default bound on the children traced per rank (`IOTREX_MAX_PROCESSES`), and the slots
/// each rank has for them.
pub const DEFAULT_MAX: u32 = 1024;

/// The variable that bounds the children traced per rank.
pub const MAX_VAR: &str = "IOTREX_MAX_PROCESSES";

/// The variable through which a process that `exec`s hands the image it becomes its place in
/// the process tree (set by the tracer's `exec` hook, read and removed by the new image's
/// tracer at start-up).
pub const PROCESS_VAR: &str = "IOTREX_PROCESS";

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum End {
    /// `exit(status)`, or a return from `main` (`None`: the status is not seen there).
    Exit(Option<i32>),
    /// `_exit(status)` or `_Exit(status)`: no exit handlers ran.
    QuickExit(i32),
    /// A terminating signal the tracer caught (SIGTERM, SIGINT, SIGHUP): its number.
    Signal(i32),
    /// Its image was replaced by `exec`.
    Exec,
    /// No record of it: still running when the trace was written, or killed by a signal
    /// that leaves no chance to write (SIGKILL). Its calls are not in the trace.
    Missing,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::Exit(Some(s)) => write!(f, "exit {s}"),
            End::Exit(None) => write!(f, "return from main"),
            End::QuickExit(s) => write!(f, "_exit {s}"),
            End::Signal(n) => write!(f, "signal {n}"),
            End::Exec => write!(f, "exec"),
            End::Missing => write!(f, "missing"),
        }
    }
}

/// Children of one kind: same parent (relative to their rank), fork site, command and end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// The children's slots.
    pub slots: RankSet,
    /// `None`: forked by the rank's own process; `Some(k)`: by child `k` of the same rank.
    pub parent: Option<u32>,
    /// Call-site signature of the parent's `fork` (as an event's `sig`; 0 when call sites
    /// are off).
    pub site: u64,
    /// The command line, when it differs from the parent's; empty for a forked image.
    pub command: Vec<String>,
    /// How they ended.
    pub end: End,
}

/// What the `exec` and spawn hooks hand the image they start, through [`PROCESS_VAR`]: its
/// place in the process tree of its rank. `pid` is the process that called `exec`, or, when
/// `spawned`, the parent of the process `posix_spawn`, `system` or `popen` made: an image
/// that sees another pid (a process that inherited the variable without being started by a
/// hook) ignores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    /// The process that exec'd, or the spawned image's parent.
    pub pid: i64,
    /// Whether `pid` is the new image's parent (a spawn) rather than its own pid (an `exec`).
    pub spawned: bool,
    /// The new image's number in the tree; `None`: it stays the rank's own process.
    pub k: Option<u32>,
    /// The tree's bound (slots per rank).
    pub max: u32,
    /// The job's rank count as the launcher's environment gives it (0 without one) and the
    /// rank whose tree it is: an image that finds itself another rank (a launcher's child
    /// exec'ing an MPI program) starts a tree of its own.
    pub nranks: u32,
    /// See `nranks`.
    pub rank: u32,
    /// The pid of the rank's own process, which folds the spool.
    pub root_pid: i64,
    /// The spool directory: the children's records and the counter page.
    pub spool: String,
}

impl Handoff {
    /// `pid:k:max:nranks:rank:root_pid:spool`, `k` being `root` for the rank's own process
    /// and `pid` written `s<pid>` for a spawn; the spool last, since a path may hold colons.
    pub fn encode(&self) -> String {
        let k = self.k.map_or("root".to_string(), |k| k.to_string());
        let s = if self.spawned { "s" } else { "" };
        format!(
            "{s}{}:{k}:{}:{}:{}:{}:{}",
            self.pid, self.max, self.nranks, self.rank, self.root_pid, self.spool
        )
    }

    /// Whether the image `pid` (its parent `ppid`) is the one this was handed to.
    pub fn is_for(&self, pid: i64, ppid: i64) -> bool {
        self.pid == if self.spawned { ppid } else { pid }
    }

    /// The inverse of [`Handoff::encode`]; `None` for anything else.
    pub fn decode(s: &str) -> Option<Handoff> {
        let mut it = s.splitn(7, ':');
        let first = it.next()?;
        let (spawned, pid) = match first.strip_prefix('s') {
            Some(p) => (true, p),
            None => (false, first),
        };
        let pid = pid.parse().ok()?;
        let k = match it.next()? {
            "root" => None,
            k => Some(k.parse().ok()?),
        };
        Some(Handoff {
            pid,
            spawned,
            k,
            max: it.next()?.parse().ok()?,
            nranks: it.next()?.parse().ok()?,
            rank: it.next()?.parse().ok()?,
            root_pid: it.next()?.parse().ok()?,
            spool: it.next().filter(|p| !p.is_empty())?.to_string(),
        })
    }
}

impl Group {
    fn same_kind(&self, o: &Group) -> bool {
        self.parent == o.parent
            && self.site == o.site
            && self.command == o.command
            && self.end == o.end
    }
}

/// The header's `processes`: the trace's children.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Processes {
    /// Slots per rank for its children (the bound they were traced under).
    pub stride: u32,
    /// The children, by kind.
    pub groups: Vec<Group>,
    /// Children forked beyond the bound, not traced, over all ranks.
    pub untraced: u64,
}

/// The slot of child `k` of rank `rank` in a trace of `nranks` ranks; `None` past `u32`.
pub fn slot(nranks: u32, stride: u32, rank: u32, k: u32) -> Option<u32> {
    let s = u64::from(nranks) + u64::from(rank) * u64::from(stride) + u64::from(k);
    u32::try_from(s).ok()
}

impl Processes {
    /// Joins `more` into `self` (a rank's children folded in, or another rank's in the
    /// merge): groups of the same kind take each other's slots.
    pub fn add(&mut self, more: &Processes) {
        self.stride = self.stride.max(more.stride);
        self.untraced += more.untraced;
        for g in &more.groups {
            match self.groups.iter_mut().find(|h| h.same_kind(g)) {
                Some(h) => h.slots.union_with(&g.slots),
                None => self.groups.push(g.clone()),
            }
        }
        self.groups
            .sort_by_key(|g| (g.slots.first().unwrap_or(u32::MAX), g.site));
    }

    /// Children in all (traced or missing).
    pub fn children(&self) -> u64 {
        self.groups.iter().map(|g| g.slots.len()).sum()
    }

    /// Children named missing.
    pub fn missing(&self) -> u64 {
        self.groups
            .iter()
            .filter(|g| g.end == End::Missing)
            .map(|g| g.slots.len())
            .sum()
    }

    /// The rank a child's slot belongs to, and its number there; `None` for a rank's own
    /// slot or a slot past the children's.
    pub fn owner(&self, nranks: u32, slot: u32) -> Option<(u32, u32)> {
        let off = slot.checked_sub(nranks)?;
        let stride = self.stride.max(1);
        Some((off / stride, off % stride))
    }

    /// Checks what the decoder cannot: a stride of 0 with children.
    pub fn validate(&self) -> Result<(), String> {
        if self.stride == 0 && !self.groups.is_empty() {
            return Err("processes: a stride of 0 slots per rank with children".into());
        }
        Ok(())
    }
}

/// How readers name slot `slot` of a trace of `nranks` ranks: `rank R`, or `rank R process K`
/// for the rank's K-th other process (a child, or a program it started; `processes` lists
/// them).
pub fn slot_name(processes: Option<&Processes>, nranks: u32, slot: u32) -> String {
    match processes.and_then(|p| p.owner(nranks, slot)) {
        Some((r, k)) => format!("rank {r} process {k}"),
        None => format!("rank {slot}"),
    }
}

/// What the readers say of a trace with children that they cannot handle yet (`extrap`,
/// `replay`): `None` when it has none.
pub fn unsupported(h: &crate::Header, what: &str) -> Option<String> {
    let p = h.processes.as_ref()?;
    let traced = p.children() - p.missing();
    (traced > 0).then(|| {
        format!(
            "the trace holds {traced} forked process{} besides its {} rank{}; {what} of forked processes is not supported yet (docs/processes.md)",
            if traced == 1 { "" } else { "es" },
            h.nranks,
            if h.nranks == 1 { "" } else { "s" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(slots: &[u32], end: End) -> Group {
        Group {
            slots: RankSet::from_sorted(slots),
            parent: None,
            site: 7,
            command: Vec::new(),
            end,
        }
    }

    #[test]
    fn children_of_one_kind_join_over_ranks() {
        let mut a = Processes {
            stride: 4,
            groups: vec![g(&[2, 3], End::Exit(Some(0)))],
            untraced: 1,
        };
        let b = Processes {
            stride: 4,
            groups: vec![g(&[6, 7], End::Exit(Some(0))), g(&[8], End::Missing)],
            untraced: 2,
        };
        a.add(&b);
        assert_eq!(a.groups.len(), 2);
        assert_eq!(a.groups[0].slots.to_vec(), vec![2, 3, 6, 7]);
        assert_eq!((a.children(), a.missing(), a.untraced), (5, 1, 3));
        assert_eq!(a.owner(2, 7), Some((1, 1)));
        assert_eq!(a.owner(2, 1), None);
        assert_eq!(slot_name(Some(&a), 2, 7), "rank 1 process 1");
        assert_eq!(slot_name(Some(&a), 2, 1), "rank 1");
        assert_eq!(slot_name(None, 2, 7), "rank 7");
        assert_eq!(slot(2, 4, 1, 1), Some(7));
        assert_eq!(slot(u32::MAX, 4, 1, 1), None);
    }

    proptest::proptest! {
        #[test]
        fn a_handoff_reads_back_as_written(
            pid in 1i64..1 << 22,
            spawned: bool,
            k in proptest::option::of(0u32..1 << 20),
            max in 0u32..1 << 20,
            nranks in 0u32..1 << 20,
            rank in 0u32..1 << 20,
            root_pid in 1i64..1 << 22,
            spool in "/[a-z:./-]{1,40}",
        ) {
            let h = Handoff { pid, spawned, k, max, nranks, rank, root_pid, spool };
            proptest::prop_assert_eq!(Handoff::decode(&h.encode()), Some(h));
        }
    }

    #[test]
    fn anything_else_is_no_handoff() {
        for s in [
            "",
            "1",
            "1:root:2:3:4:5:",
            "x:1:2:3:4:5:/d",
            "1:-1:2:3:4:5:/d",
            "s:1:2:3:4:5:/d",
            "ss1:1:2:3:4:5:/d",
        ] {
            assert_eq!(Handoff::decode(s), None, "{s:?}");
        }
    }
}
