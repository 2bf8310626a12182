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
    /// The calling process's own id, where ranks name something with their own pid (a log
    /// file per process): filled with a number of its own for every rank. Minor version 13
    /// ([`crate::format::OWN_PID_MINOR`]).
    OwnPid,
}

impl RunKind {
    /// Every kind, in the order of their codes in version 2's bytes.
    pub const ALL: [RunKind; 5] = [
        RunKind::JobId,
        RunKind::Pid,
        RunKind::Time,
        RunKind::Varies,
        RunKind::OwnPid,
    ];

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
            RunKind::OwnPid => "own pid",
        }
    }

    /// The minor version a file holding a run value of this kind is written with.
    pub fn minor(self) -> u32 {
        match self {
            RunKind::OwnPid => crate::format::OWN_PID_MINOR,
            _ => crate::format::RUN_VALUE_MINOR,
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
/// Where some ranks hold the run's pid and the others their own, it is each rank's own pid:
/// rank 0's own pid is the run's ([`RunIds::kind`] names it so).
pub fn kind_in(e: &Elastic) -> Option<RunKind> {
    e.groups
        .iter()
        .filter_map(group_kind)
        .reduce(|a, k| match (a, k) {
            (RunKind::Pid, RunKind::OwnPid) | (RunKind::OwnPid, RunKind::Pid) => RunKind::OwnPid,
            _ => a,
        })
}

/// The run value a group holds, as [`Val::Run`] or as [`marker`]s on its ranks. The merge
/// of ranks may fit one function through two markers (rank 0's `Pid` and rank 1's `OwnPid`
/// are `3 * rank + marker(Pid)`), so a function whose first rank gives a marker is asked on
/// every rank, and is `OwnPid` where its ranks give `Pid` and `OwnPid`.
fn group_kind(g: &Group) -> Option<RunKind> {
    let f = match &g.val {
        Val::Run(k) => return Some(*k),
        Val::Const(f) => f,
        _ => return None,
    };
    of_marker(f.eval(g.ranks.first()?))?;
    let mut kinds: Option<Option<RunKind>> = None;
    g.ranks.for_each(|r| {
        let k = of_marker(f.eval(r));
        kinds = Some(match (kinds, k) {
            (None, k) => k,
            (Some(Some(RunKind::Pid)), Some(RunKind::OwnPid))
            | (Some(Some(RunKind::OwnPid)), Some(RunKind::Pid)) => Some(RunKind::OwnPid),
            (Some(Some(a)), Some(b)) if a == b => Some(a),
            _ => None,
        });
    });
    kinds.flatten()
}

/// The run's own ids, as a traced process knows them, against which the numbers in the paths
/// it names are matched ([`RunIds::kind`]): a path field equal to one is a run value from
/// the start, never fitted. The tracer gives them to its compressor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunIds {
    /// This process's pid.
    pub own_pid: i64,
    /// Rank 0's pid, once `MPI_Init` has told it.
    pub root_pid: Option<i64>,
    /// The job ids the launcher and the batch system gave the run (numbers only).
    pub jobs: Vec<i64>,
    /// When the process started, seconds since the epoch.
    pub start_secs: i64,
    /// This process's host name: where a path holds it as a whole token, the template holds
    /// [`crate::path::HOST`] instead ([`crate::path::PathTemplate::parse_on`]).
    pub host: Option<String>,
}

/// Numbers below this are not matched against the run's ids: a short pid or job id is too
/// likely to be one of the program's own numbers (a step, a count).
const MIN_MATCHED_ID: i64 = 1000;

/// How far from the process's start a number of seconds since the epoch is taken for a time
/// in a name: a day before (a stamp the job script made), thirty days after (a long run).
const TIME_BEFORE_SECS: i64 = 86_400;
const TIME_AFTER_SECS: i64 = 30 * 86_400;

/// The environment variables that hold a job id: Open MPI's launcher (also in the name of
/// OMPIO's lock file), PMIx, and the batch systems.
pub const JOB_ID_VARS: [&str; 7] = [
    "OMPI_MCA_ess_base_jobid",
    "PMIX_NAMESPACE",
    "SLURM_JOB_ID",
    "PBS_JOBID",
    "LSB_JOBID",
    "COBALT_JOBID",
    "JOB_ID",
];

impl RunIds {
    /// The ids of this process from its environment (`var` looks a variable up) and clock;
    /// the caller sets [`RunIds::host`] (the tracer with `gethostname`, which reads no file).
    pub fn here(var: impl Fn(&str) -> Option<String>) -> RunIds {
        let jobs = JOB_ID_VARS
            .iter()
            .filter_map(|v| var(v))
            .filter_map(|s| leading_number(&s))
            .collect();
        let start_secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        RunIds {
            own_pid: i64::from(std::process::id()),
            root_pid: None,
            jobs,
            start_secs,
            host: None,
        }
    }

    /// What kind of run value the number `x` in a path is, if it is one of the run's ids. The
    /// run's pid (rank 0's) before the process's own: on rank 0 they are one, and a name every
    /// rank makes with rank 0's pid is then one value on all ranks.
    pub fn kind(&self, x: i64) -> Option<RunKind> {
        if x < MIN_MATCHED_ID {
            return None;
        }
        if self.jobs.contains(&x) {
            Some(RunKind::JobId)
        } else if self.root_pid == Some(x) {
            Some(RunKind::Pid)
        } else if x == self.own_pid {
            Some(RunKind::OwnPid)
        } else if (self.start_secs - TIME_BEFORE_SECS..=self.start_secs + TIME_AFTER_SECS)
            .contains(&x)
        {
            Some(RunKind::Time)
        } else {
            None
        }
    }
}

/// This machine's host name as the kernel gives it to the process (its UTS namespace's, as
/// `gethostname` does), `None` where it cannot be read.
pub fn host_name() -> Option<String> {
    let s = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// The number a job id starts with (`1234.server` -> 1234), when it is one.
fn leading_number(s: &str) -> Option<i64> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Whether some value of `nodes` holds a run value's [`marker`] (or a run value beside other
/// values) that [`restore`] would make one run value.
pub fn marked(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => {
            e.params
                .iter()
                .any(|p| kind_of(p).is_none() && kind_in(p).is_some())
                || marked(&e.children)
        }
        NodeKind::Loop(l) => marked(&l.body),
    })
}

/// Every value of `nodes` that holds a run value's [`marker`] made that run value again
/// ([`restored`]); how many values.
pub fn restore(nodes: &mut [Node]) -> usize {
    let mut count = 0;
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                for p in &mut e.params {
                    if kind_of(p).is_none()
                        && let Some(k) = kind_in(p)
                    {
                        *p = restored(p, k);
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

/// The value `p`, which holds run values' [`marker`]s of kind `k` ([`kind_in`]), with them
/// made run values. Each rank matched the numbers in its paths against its own ids, so a
/// marker says only that the number was an id *on the ranks of its group*:
/// - where every group holds a marker, the value is the run value over all its ranks;
/// - where the other groups share one value, that value is the program's and the marked
///   ranks' number only happened to equal their id (one rank's pid equal to a number every
///   rank names): they take the shared value, so every rank keeps naming one file;
/// - otherwise only the marked groups are run values, each on its own ranks.
fn restored(p: &Elastic, k: RunKind) -> Elastic {
    let marks = |g: &Group| group_kind(g).is_some();
    let mut ranks = crate::RankSet::default();
    p.groups.iter().for_each(|g| ranks.union_with(&g.ranks));
    let mut plain = p.groups.iter().filter(|g| !marks(g));
    let Some(first) = plain.next() else {
        return elastic(k, ranks);
    };
    if plain.all(|g| g.val == first.val) {
        return Elastic {
            groups: vec![Group {
                ranks,
                val: first.val.clone(),
            }],
        };
    }
    let mut out = p.clone();
    for g in out.groups.iter_mut().filter(|g| marks(g)) {
        g.val = Val::Run(k);
    }
    out
}

/// The numbers a consumer fills run values with: one per kind, the same for every rank and
/// every call of one replay or export, so that a file rank 0 creates under such a name is the
/// one the other ranks open and rank 0 removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fresh {
    /// For [`RunKind::JobId`].
    pub job: i64,
    /// For [`RunKind::Pid`].
    pub pid: i64,
    /// For [`RunKind::Time`].
    pub time: i64,
    /// For [`RunKind::Varies`].
    pub other: i64,
    /// For the host name in a path ([`crate::path::HOST`]): the host of the rank that fills
    /// it, unlike the numbers (each rank its own; a replay's ranks on one node share it).
    pub host: String,
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
            host: host_name().unwrap_or_else(|| "localhost".to_string()),
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
            RunKind::OwnPid => self.pid,
        }
    }

    /// What `kind` is filled with on each rank: one number for every rank, but a number of
    /// its own per rank for [`RunKind::OwnPid`] (the run's pid plus the rank).
    pub fn rank_fn(&self, kind: RunKind) -> RankFn {
        match kind {
            RunKind::OwnPid => RankFn::Affine { a: 1, b: self.pid },
            k => RankFn::Const(self.value(k)),
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

/// Whether any value of `nodes` (nested calls included) is a run value, or a path holds the
/// host name ([`crate::path::HOST`]).
pub fn present(nodes: &[Node]) -> bool {
    minor_needed(nodes) > 0
}

/// The minor version the run values of `nodes` need ([`RunKind::minor`], the most of any
/// kind present; [`crate::format::HOST_MINOR`] for a path holding the host name), 0 where
/// there is none.
pub fn minor_needed(nodes: &[Node]) -> u32 {
    let elastic = |e: &Elastic| {
        e.groups
            .iter()
            .map(|g| g.val.run_minor())
            .max()
            .unwrap_or(0)
    };
    nodes
        .iter()
        .map(|n| match &n.kind {
            NodeKind::Event(e) => e
                .params
                .iter()
                .map(elastic)
                .max()
                .unwrap_or(0)
                .max(minor_needed(&e.children))
                .max(if e.path.as_ref().is_some_and(|t| t.holds_host()) {
                    crate::format::HOST_MINOR
                } else {
                    0
                }),
            NodeKind::Loop(l) => elastic(&l.iters).max(minor_needed(&l.body)),
        })
        .max()
        .unwrap_or(0)
}

/// Fills every run value of `trace` with `fresh`'s number of its kind, and the host name in
/// its paths with `fresh`'s host: what replay and the exports read is then an exact trace.
pub fn fill(trace: &mut Trace, fresh: &Fresh) {
    fn val(v: &mut Val<RankFn>, fresh: &Fresh) {
        match v {
            Val::Run(k) => *v = Val::Const(fresh.rank_fn(*k)),
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
                    if let Some(t) = e.path.as_mut().filter(|t| t.holds_host()) {
                        *t = t.on_host(&fresh.host);
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
        assert_eq!(of_marker(marker(RunKind::OwnPid) + 1), None);
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

    /// Rank 3's pid happens to be 12345, a number every rank names: rank 3 recorded it as its
    /// own pid's marker, the others as the number. The merged value stays the number on every
    /// rank (one file), never a run value that would give rank 3 a file of its own.
    #[test]
    fn a_shared_number_equal_to_one_ranks_pid_stays_a_number() {
        let group = |ranks: &[u32], x: i64| Group {
            ranks: RankSet::from_sorted(ranks),
            val: Val::Const(RankFn::Const(x)),
        };
        let own = marker(RunKind::OwnPid);
        let p = Elastic {
            groups: vec![group(&[0, 1, 2, 4, 5, 6, 7], 12345), group(&[3], own)],
        };
        assert_eq!(kind_in(&p), Some(RunKind::OwnPid));
        let mut nodes = vec![open_with(p)];
        assert_eq!(restore(&mut nodes), 1);
        let shared = Elastic {
            groups: vec![Group {
                ranks: RankSet::all(8),
                val: Val::Const(RankFn::Const(12345)),
            }],
        };
        assert_eq!(param(&nodes), shared);
        assert!(!marked(&nodes));
        // Every rank matched its own id (rank 0 the run's pid): a run value on all of them.
        let p = Elastic {
            groups: vec![group(&[0], marker(RunKind::Pid)), group(&[1, 2, 3], own)],
        };
        let mut nodes = vec![open_with(p)];
        restore(&mut nodes);
        assert_eq!(param(&nodes), elastic(RunKind::OwnPid, RankSet::all(4)));
        // The merge fitted one function through rank 0's and rank 1's markers: still markers.
        let p = Elastic {
            groups: vec![
                Group {
                    ranks: RankSet::from_sorted(&[0, 1]),
                    val: Val::Const(RankFn::Affine {
                        a: 3,
                        b: marker(RunKind::Pid),
                    }),
                },
                group(&[2, 3, 4, 5], own),
            ],
        };
        let mut nodes = vec![open_with(p)];
        restore(&mut nodes);
        assert_eq!(param(&nodes), elastic(RunKind::OwnPid, RankSet::all(6)));
        // The others differ among themselves: the match holds only on the marked rank.
        let p = Elastic {
            groups: vec![group(&[0], 5), group(&[1], 6), group(&[2], own)],
        };
        let mut nodes = vec![open_with(p)];
        restore(&mut nodes);
        let g = param(&nodes).groups;
        assert_eq!(g[2].val, Val::Run(RunKind::OwnPid));
        assert_eq!(
            (&g[0].val, &g[1].val),
            (&Val::Const(RankFn::Const(5)), &Val::Const(RankFn::Const(6)))
        );
    }

    fn open_with(p: Elastic) -> Node {
        let mut ranks = RankSet::default();
        p.groups.iter().for_each(|g| ranks.union_with(&g.ranks));
        Node {
            ranks,
            kind: NodeKind::Event(crate::trace::Event {
                op: crate::Op::Open,
                sig: 1,
                path: None,
                params: vec![p],
                timing: Default::default(),
                children: Vec::new(),
            }),
        }
    }

    fn param(nodes: &[Node]) -> Elastic {
        let NodeKind::Event(ev) = &nodes[0].kind else {
            unreachable!()
        };
        ev.params[0].clone()
    }

    #[test]
    fn kinds_round_trip_their_codes() {
        for k in RunKind::ALL {
            assert_eq!(RunKind::from_code(k.code()), Some(k));
        }
        assert_eq!(RunKind::from_code(5), None);
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
