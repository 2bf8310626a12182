//! Ranks a reader cannot tell apart: the trace's ranks partitioned into classes whose calls
//! agree in everything the reader reads, so that a sum over the ranks is a sum over the
//! classes, each one rank's expansion times the class's size.
//!
//! A trace of 2^20 ranks is a few kilobytes: most of its nodes run on every rank with the same
//! counts and sizes, and what differs (rank 0's extra calls, an aggregator's nested I/O, a
//! last rank's remainder) is a handful of rank sets. Expanding every rank to add up its calls
//! took `stats` 33 s there; the classes take one pass over the ranks of each set that does not
//! hold every rank, and one expansion per class.
//!
//! What the reader reads is given as a predicate on parameters (the data sizes for `stats`,
//! nothing for a count of calls); iteration counts and which ranks run a node are always read.
//! Values that need the other ranks' calls ([`Val::Exscan`], [`Val::FileEnd`]: offsets) and
//! values that vary along a rank function make their ranks distinct when they are read.

use crate::ranks::RankSet;
use crate::trace::{Event, Node, NodeKind, Trace, mix};
use crate::value::{Elastic, RankFn, Val};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// Ranks whose calls agree in what the reader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    /// The smallest rank of the class: the one to expand.
    pub first: u32,
    /// How many ranks it holds.
    pub size: u64,
}

/// The classes of `trace`'s ranks for a reader of the parameters `reads(e, k)` says
/// (parameter `k` of event `e`, its path fields included, which come last), in order of their
/// first rank.
pub fn classes(trace: &Trace, reads: &dyn Fn(&Event, usize) -> bool) -> Vec<Class> {
    let ranks = trace.ranks();
    let mut end = 0u32;
    ranks.for_each(|r| end = end.max(r + 1));
    let mut sig = Signatures {
        sig: vec![0; end as usize],
        all: ranks.len(),
        next: 0,
    };
    sig.nodes(&trace.nodes, reads);
    let mut by_sig: HashMap<u64, usize> = HashMap::new();
    let mut out: Vec<Class> = Vec::new();
    ranks.for_each(|r| {
        let at = *by_sig.entry(sig.sig[r as usize]).or_insert_with(|| {
            out.push(Class { first: r, size: 0 });
            out.len() - 1
        });
        out[at].size += 1;
    });
    out
}

/// Each rank's running hash of what sets it apart.
struct Signatures {
    sig: Vec<u64>,
    /// The trace's rank count: a set of that many ranks sets none apart.
    all: u64,
    /// A fresh id per distinction, so that equal values at different places stay apart.
    next: u64,
}

impl Signatures {
    fn nodes(&mut self, nodes: &[Node], reads: &dyn Fn(&Event, usize) -> bool) {
        for n in nodes {
            self.members(&n.ranks);
            match &n.kind {
                NodeKind::Event(e) => {
                    for (k, p) in e.params.iter().enumerate() {
                        if reads(e, k) {
                            self.value(p);
                        }
                    }
                    self.nodes(&e.children, reads);
                }
                NodeKind::Loop(l) => {
                    self.value(&l.iters);
                    self.nodes(&l.body, reads);
                }
            }
        }
    }

    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Which ranks run a node, unless all do.
    fn members(&mut self, set: &RankSet) {
        if set.len() == self.all {
            return;
        }
        let id = self.fresh();
        let sig = &mut self.sig;
        set.for_each(|r| mix_into(&mut sig[r as usize], id));
    }

    /// A value: its groups' values where they are the same for all their ranks, else the
    /// value each rank evaluates to.
    fn value(&mut self, v: &Elastic) {
        if let [g] = v.groups.as_slice()
            && g.ranks.len() == self.all
            && uniform(&g.val)
        {
            return;
        }
        let id = self.fresh();
        for g in &v.groups {
            let sig = &mut self.sig;
            if uniform(&g.val) {
                let h = mix(id, structural(&g.val));
                g.ranks.for_each(|r| mix_into(&mut sig[r as usize], h));
            } else if matches!(g.val, Val::Exscan(_) | Val::FileEnd(_)) {
                // Each rank's offset follows the other ranks' calls: every rank is its own.
                g.ranks
                    .for_each(|r| mix_into(&mut sig[r as usize], mix(id, r as u64)));
            } else {
                let mut leaves = Vec::new();
                g.val.leaves(&mut leaves);
                let h = mix(id, structural(&g.val));
                g.ranks.for_each(|r| {
                    let at = leaves.iter().fold(h, |h, f| mix(h, f.eval(r) as u64));
                    mix_into(&mut sig[r as usize], at);
                });
            }
        }
    }
}

/// Whether parameter `k` of `e` is one of the data sizes ([`crate::Op::data_params`]): what a
/// reader of calls and bytes tells ranks apart by.
pub fn data_size(e: &Event, k: usize) -> bool {
    e.op.params()
        .get(k)
        .is_some_and(|p| e.op.data_params().contains(p))
}

/// Whether each group of a value holds the same value on all its ranks (groups may differ):
/// ranks of one class then agree on it.
pub fn uniform_in_groups(v: &Elastic) -> bool {
    v.groups.iter().all(|g| uniform(&g.val))
}

/// Whether a value is the same on every rank of its group.
fn uniform(v: &Val<RankFn>) -> bool {
    if matches!(v, Val::Exscan(_) | Val::FileEnd(_)) {
        return false;
    }
    let mut leaves = Vec::new();
    v.leaves(&mut leaves);
    leaves.iter().all(|f| matches!(f, RankFn::Const(_)))
}

fn structural(v: &Val<RankFn>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

fn mix_into(at: &mut u64, x: u64) {
    *at = mix(*at, x);
}
