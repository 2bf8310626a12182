//! Run values: numbers in a path or parameter that belong to the run, not to the program (a
//! job id, a process id, a time, a random number), such as the job id and rank 0's pid in the
//! name of Open MPI's lock file for a shared file pointer (`f-%u-%d.lock`).
//!
//! A run value is held as [`Val::Run`] with its [`RunKind`]: it is never fitted across scales
//! (it has no law in the rank count), `diff` compares two as equal whatever numbers they were
//! seen with, and the consumers that issue calls (replay, the exports) fill every one in afresh
//! with [`fill`] before reading the trace: a fresh name per replay, the same for every rank
//! and every call of that replay, as the run's own id was for every rank of the run.
//!
//! Who recognises them (a library's named rule, or the values that differ between repeated
//! runs at one scale) is `extrap`'s business (`extrap::runvalues`); this module holds the
//! value and what any consumer does with it.

use crate::trace::{Node, NodeKind, Trace};
use crate::value::{Elastic, Group, RankFn, Val};
use serde::{Deserialize, Serialize};

/// What a run value is, so that a replay fills it with a number of the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RunKind {
    /// The MPI library's id of the job (Open MPI's jobid).
    JobId,
    /// A process id (of rank 0 where the ranks share it).
    Pid,
    /// A time (seconds or finer since the epoch).
    Time,
    /// Anything else that differed between repeated runs at one scale.
    Varies,
}

impl RunKind {
    /// Every kind, in the order of their codes in version 2's bytes.
    pub const ALL: [RunKind; 4] = [RunKind::JobId, RunKind::Pid, RunKind::Time, RunKind::Varies];

    /// The byte version 2 stores it as.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The kind of a code, `None` for a code this build does not know.
    pub fn from_code(c: u8) -> Option<RunKind> {
        RunKind::ALL.get(c as usize).copied()
    }

    /// Its name as `show` and `diff` print it.
    pub fn name(self) -> &'static str {
        match self {
            RunKind::JobId => "job id",
            RunKind::Pid => "pid",
            RunKind::Time => "time",
            RunKind::Varies => "varies",
        }
    }
}

impl std::fmt::Display for RunKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "run value ({})", self.name())
    }
}

/// What a run value evaluates to before it is filled: its kind's marker, a number no program
/// passes (987654320000000000 plus the kind's code). The passes that expand ranks into calls
/// and compress them again as the tracer does (`extrap`'s models) carry a run value through
/// as this constant, and [`restore`] makes it a run value again. In a path it is rendered
/// and parsed again as a field ([`crate::path::PathTemplate`]): so it is positive and of 18
/// digits, the most a field takes. A consumer that issued a call without [`fill`]ing first
/// would name a number no one mistakes for a real one.
pub fn marker(kind: RunKind) -> i64 {
    MARKER_BASE + i64::from(kind.code())
}

const MARKER_BASE: i64 = 987_654_320_000_000_000;

/// The kind whose [`marker`] `x` is.
pub fn of_marker(x: i64) -> Option<RunKind> {
    let code = x.checked_sub(MARKER_BASE)?;
    u8::try_from(code).ok().and_then(RunKind::from_code)
}

/// The run value an elastic value holds, as [`Val::Run`] or as its [`marker`] in some group.
pub fn kind_in(e: &Elastic) -> Option<RunKind> {
    e.groups.iter().find_map(|g| match g.val {
        Val::Run(k) => Some(k),
        Val::Const(RankFn::Const(x)) => of_marker(x),
        _ => None,
    })
}

/// Every value of `nodes` that holds a run value's [`marker`] made that run value again, over
/// the ranks of its groups; how many values.
pub fn restore(nodes: &mut [Node]) -> usize {
    let mut count = 0;
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                for p in &mut e.params {
                    if kind_of(p).is_none()
                        && let Some(k) = kind_in(p)
                    {
                        let mut ranks = crate::RankSet::default();
                        p.groups.iter().for_each(|g| ranks.union_with(&g.ranks));
                        *p = elastic(k, ranks);
                        count += 1;
                    }
                }
                count += restore(&mut e.children);
            }
            NodeKind::Loop(l) => count += restore(&mut l.body),
        }
    }
    count
}

/// The numbers a consumer fills run values with: one per kind, the same for every rank and
/// every call of one replay or export, so that a file rank 0 creates under such a name is the
/// one the other ranks open and rank 0 removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fresh {
    /// For [`RunKind::JobId`].
    pub job: i64,
    /// For [`RunKind::Pid`].
    pub pid: i64,
    /// For [`RunKind::Time`].
    pub time: i64,
    /// For [`RunKind::Varies`].
    pub other: i64,
}

impl Fresh {
    /// Fresh numbers from `pid` (the process that stands for the run's rank 0) and `nonce`
    /// (anything that differs between replays, e.g. the time): non-negative, and each fits
    /// the field it replaces (Open MPI prints its job id as an unsigned 32-bit number).
    pub fn new(pid: u32, nonce: u64) -> Fresh {
        let mix = |x: u64| {
            let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Fresh {
            job: i64::from(mix(nonce) as u32),
            pid: i64::from(pid),
            time: secs as i64,
            other: i64::from(mix(nonce ^ 0x5eed) as u32),
        }
    }

    /// Fresh numbers for this process: its pid and the clock.
    pub fn here() -> Fresh {
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Fresh::new(
            std::process::id(),
            nonce ^ u64::from(std::process::id()) << 32,
        )
    }

    /// The number for `kind`.
    pub fn value(&self, kind: RunKind) -> i64 {
        match kind {
            RunKind::JobId => self.job,
            RunKind::Pid => self.pid,
            RunKind::Time => self.time,
            RunKind::Varies => self.other,
        }
    }
}

/// An elastic value that is the run value `kind` on `ranks`.
pub fn elastic(kind: RunKind, ranks: crate::RankSet) -> Elastic {
    Elastic {
        groups: vec![Group {
            ranks,
            val: Val::Run(kind),
        }],
    }
}

/// The run value an elastic value is, when every group holds one of the same kind.
pub fn kind_of(e: &Elastic) -> Option<RunKind> {
    let first = match e.groups.first()?.val {
        Val::Run(k) => k,
        _ => return None,
    };
    e.groups
        .iter()
        .all(|g| g.val == Val::Run(first))
        .then_some(first)
}

/// Whether any value of `nodes` (nested calls included) is a run value.
pub fn present(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => e.params.iter().any(has) || present(&e.children),
        NodeKind::Loop(l) => has(&l.iters) || present(&l.body),
    })
}

fn has(e: &Elastic) -> bool {
    e.groups.iter().any(|g| g.val.holds_run())
}

/// Fills every run value of `trace` with `fresh`'s number of its kind: what replay and the
/// exports read is then an exact trace.
pub fn fill(trace: &mut Trace, fresh: &Fresh) {
    fn val(v: &mut Val<RankFn>, fresh: &Fresh) {
        match v {
            Val::Run(k) => *v = Val::Const(RankFn::Const(fresh.value(*k))),
            Val::Seq(items) | Val::Cycle(items) => items.iter_mut().for_each(|i| val(i, fresh)),
            _ => {}
        }
    }
    fn nodes(ns: &mut [Node], fresh: &Fresh) {
        for n in ns {
            match &mut n.kind {
                NodeKind::Event(e) => {
                    for p in &mut e.params {
                        p.groups.iter_mut().for_each(|g| val(&mut g.val, fresh));
                    }
                    nodes(&mut e.children, fresh);
                }
                NodeKind::Loop(l) => {
                    l.iters
                        .groups
                        .iter_mut()
                        .for_each(|g| val(&mut g.val, fresh));
                    nodes(&mut l.body, fresh);
                }
            }
        }
    }
    if present(&trace.nodes) {
        nodes(&mut trace.nodes, fresh);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RankSet;

    #[test]
    fn markers_name_their_kinds_and_restore_run_values() {
        for k in RunKind::ALL {
            assert_eq!(of_marker(marker(k)), Some(k));
            assert_eq!(Val::<i64>::Run(k).eval(&[]), Some(marker(k)));
        }
        assert_eq!(of_marker(0), None);
        // A path field holds it: it is rendered and parsed back as one.
        let p = format!(
            "/d/f-{}-{}.lock",
            marker(RunKind::JobId),
            marker(RunKind::Pid)
        );
        let (t, f) = crate::path::PathTemplate::parse(&p);
        assert_eq!(t.0, "/d/f-%d-%d.lock");
        assert_eq!(f, [marker(RunKind::JobId), marker(RunKind::Pid)]);
        assert_eq!(of_marker(marker(RunKind::Varies) + 1), None);
        let e = Elastic::single(3, &Val::Const(marker(RunKind::Pid)));
        assert_eq!(kind_in(&e), Some(RunKind::Pid));
        let mut nodes = vec![Node {
            ranks: RankSet::single(3),
            kind: NodeKind::Event(crate::trace::Event {
                op: crate::Op::Open,
                sig: 1,
                path: None,
                params: vec![e, Elastic::single(3, &Val::Const(7))],
                timing: Default::default(),
                children: Vec::new(),
            }),
        }];
        assert_eq!(restore(&mut nodes), 1);
        let NodeKind::Event(ev) = &nodes[0].kind else {
            unreachable!()
        };
        assert_eq!(ev.params[0], elastic(RunKind::Pid, RankSet::single(3)));
        assert_eq!(kind_of(&ev.params[1]), None);
    }

    #[test]
    fn kinds_round_trip_their_codes() {
        for k in RunKind::ALL {
            assert_eq!(RunKind::from_code(k.code()), Some(k));
        }
        assert_eq!(RunKind::from_code(4), None);
    }

    #[test]
    fn fresh_numbers_fit_their_fields_and_differ_between_nonces() {
        let (a, b) = (Fresh::new(77, 1), Fresh::new(77, 2));
        assert_ne!(a.job, b.job);
        assert_eq!(a.pid, 77);
        for f in [a, b] {
            assert!((0..=i64::from(u32::MAX)).contains(&f.job));
            assert!((0..=i64::from(u32::MAX)).contains(&f.other));
        }
    }

    #[test]
    fn an_elastic_run_value_is_said_and_only_then() {
        let e = elastic(RunKind::Pid, RankSet::all(4));
        assert_eq!(kind_of(&e), Some(RunKind::Pid));
        assert_eq!(kind_of(&Elastic::single(0, &Val::Const(3))), None);
        let mut two = e.clone();
        two.groups.push(Group {
            ranks: RankSet::single(9),
            val: Val::Run(RunKind::JobId),
        });
        assert_eq!(kind_of(&two), None);
    }
}
