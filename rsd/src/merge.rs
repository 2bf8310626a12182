//! Merging compressed traces of disjoint rank sets.
//!
//! Node lists with the same structure are merged pairwise in one linear pass. Otherwise they are
//! aligned on their merge keys ([`Node::merge_key`]: the structure without the nested calls of
//! MPI-IO calls, which are aligned in turn) with Myers' O((m+n)·D) diff, so that rank 0 doing extra work
//! costs a few unmatched nodes instead of a quadratic LCS. Matched nodes union their rank sets and
//! merge their values with [`Elastic::merge`], which keeps affine-in-rank values affine.

use crate::error::RsdError;
use crate::trace::{Node, NodeKind, Trace};

/// Above this edit distance the alignment gives up and appends one list after the other, which
/// is still exact (rank sets are disjoint) but less compact. It bounds the diff's memory.
pub const MAX_EDIT_DISTANCE: usize = 4096;

/// Merges two traces whose rank sets are disjoint.
pub fn merge(a: &Trace, b: &Trace) -> Result<Trace, RsdError> {
    let (ra, rb) = (a.ranks(), b.ranks());
    let overlap = if ra.len() + rb.len() > 1 << 20 {
        // Checking every rank of huge sets costs more than the merge; trust the caller's tree.
        None
    } else {
        ra.to_vec().into_iter().find(|&r| rb.contains(r))
    };
    if let Some(rank) = overlap {
        return Err(RsdError::OverlappingRanks { rank });
    }
    let mut out = a.clone();
    merge_lists(&mut out.nodes, &b.nodes);
    Ok(out)
}

/// Merges many traces as a binary radix tree, the way the tracer does at `MPI_Finalize`:
/// in round `k`, trace `i` absorbs trace `i + 2^k` when `i` is a multiple of `2^(k+1)`.
/// Merges happen in place, so the common SPMD case allocates almost nothing per merge.
pub fn merge_tree(mut traces: Vec<Trace>) -> Result<Trace, RsdError> {
    // Disjointness checked once up front: the sizes of the parts must add up to the union.
    let mut all = Vec::new();
    for t in &traces {
        t.ranks().for_each(|r| all.push(r));
    }
    all.sort_unstable();
    if let Some(w) = all.windows(2).find(|w| w[0] == w[1]) {
        return Err(RsdError::OverlappingRanks { rank: w[0] });
    }
    let n = traces.len();
    let mut step = 1;
    while step < n {
        let mut i = 0;
        while i + step < n {
            let other = std::mem::take(&mut traces[i + step]);
            merge_lists(&mut traces[i].nodes, &other.nodes);
            i += 2 * step;
        }
        step *= 2;
    }
    Ok(traces.into_iter().next().unwrap_or_default())
}

fn merge_lists(a: &mut Vec<Node>, b: &[Node]) {
    let ka: Vec<u64> = a.iter().map(Node::merge_key).collect();
    let kb: Vec<u64> = b.iter().map(Node::merge_key).collect();
    if ka == kb {
        for (x, y) in a.iter_mut().zip(b) {
            merge_node(x, y);
        }
        return;
    }
    let mut old: Vec<Option<Node>> = std::mem::take(a).into_iter().map(Some).collect();
    let mut take = |i: usize| old[i].take().expect("each node of a is used once");
    *a = match myers(&ka, &kb, MAX_EDIT_DISTANCE) {
        Some(script) => script
            .into_iter()
            .map(|e| match e {
                Edit::Same(i, j) => {
                    let mut x = take(i);
                    merge_node(&mut x, &b[j]);
                    x
                }
                Edit::OnlyA(i) => take(i),
                Edit::OnlyB(j) => b[j].clone(),
            })
            .collect(),
        None => (0..ka.len())
            .map(&mut take)
            .chain(b.iter().cloned())
            .collect(),
    };
}

/// Merges `y` into `x`; both have equal merge keys ([`Node::merge_key`]).
fn merge_node(x: &mut Node, y: &Node) {
    x.ranks.union_with(&y.ranks);
    match (&mut x.kind, &y.kind) {
        (NodeKind::Event(ex), NodeKind::Event(ey)) => {
            ex.timing.merge(&ey.timing);
            for (p, q) in ex.params.iter_mut().zip(&ey.params) {
                p.merge_with(q);
            }
            // Equal merge keys say nothing of the nested calls: they are aligned as a list.
            merge_lists(&mut ex.children, &ey.children);
        }
        (NodeKind::Loop(lx), NodeKind::Loop(ly)) => {
            lx.iters.merge_with(&ly.iters);
            for (p, q) in lx.body.iter_mut().zip(&ly.body) {
                merge_node(p, q);
            }
        }
        _ => unreachable!("equal merge keys imply equal kinds"),
    }
}

/// One step of an alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// `a[i]` and `b[j]` are the same.
    Same(usize, usize),
    /// `a[i]` has no partner.
    OnlyA(usize),
    /// `b[j]` has no partner.
    OnlyB(usize),
}

/// Myers' greedy diff: a shortest edit script from `a` to `b`, or `None` if more than `max_d`
/// edits are needed. Time O((m+n)·D), memory O(D²).
pub fn myers<T: PartialEq>(a: &[T], b: &[T], max_d: usize) -> Option<Vec<Edit>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    let limit = max.min(max_d);
    let off = limit as isize + 1;
    let mut v = vec![0isize; 2 * limit + 3];
    let mut history: Vec<Vec<isize>> = Vec::new();
    let mut found = None;
    'outer: for d in 0..=limit as isize {
        history.push(v.clone());
        let mut k = -d;
        while k <= d {
            let x0 = if k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize])
            {
                v[(off + k + 1) as usize]
            } else {
                v[(off + k - 1) as usize] + 1
            };
            let mut x = x0;
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(off + k) as usize] = x;
            if x >= n && y >= m {
                found = Some(d);
                break 'outer;
            }
            k += 2;
        }
    }
    let dmax = found?;
    // Backtrack through the saved frontiers (history[d] is the frontier before round d).
    let mut script = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (0..=dmax).rev() {
        let v = &history[d as usize];
        let k = x - y;
        let prev_k = if k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize])
        {
            k + 1
        } else {
            k - 1
        };
        let prev_x = v[(off + prev_k) as usize];
        let prev_y = prev_x - prev_k;
        while x > prev_x.max(0) && y > prev_y.max(0) {
            x -= 1;
            y -= 1;
            script.push(Edit::Same(x as usize, y as usize));
        }
        if d > 0 {
            if x == prev_x {
                script.push(Edit::OnlyB(prev_y as usize));
            } else {
                script.push(Edit::OnlyA(prev_x as usize));
            }
            x = prev_x;
            y = prev_y;
        }
    }
    script.reverse();
    Some(script)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn apply(a: &[u8], b: &[u8], s: &[Edit]) -> (Vec<u8>, Vec<u8>, usize) {
        let (mut ra, mut rb, mut edits) = (Vec::new(), Vec::new(), 0);
        for e in s {
            match *e {
                Edit::Same(i, j) => {
                    assert_eq!(a[i], b[j]);
                    ra.push(a[i]);
                    rb.push(b[j]);
                }
                Edit::OnlyA(i) => {
                    ra.push(a[i]);
                    edits += 1
                }
                Edit::OnlyB(j) => {
                    rb.push(b[j]);
                    edits += 1
                }
            }
        }
        (ra, rb, edits)
    }

    #[test]
    fn small_diffs() {
        let a = b"ABCABBA";
        let b = b"CBABAC";
        let s = myers(a, b, 100).unwrap();
        let (ra, rb, d) = apply(a, b, &s);
        assert_eq!((ra.as_slice(), rb.as_slice()), (&a[..], &b[..]));
        assert_eq!(d, 5);
        assert!(myers(b"AAAA", b"BBBB", 3).is_none());
    }

    /// One rank's program: three collective writes in a loop; `agg` ranks' library writes
    /// one block inside each (an aggregator's nested call), the others' writes nothing.
    fn collective_rank(rank: u32, agg: bool) -> Trace {
        use crate::op::Op;
        use crate::trace::RawEvent;
        let evs: Vec<RawEvent> = (0..3i64)
            .map(|i| {
                let mut w = RawEvent::new(Op::FileWriteAtAll, 6, vec![0, 8 * i, 8, 1, 8]);
                if agg {
                    w.children
                        .push(RawEvent::new(Op::Pwrite, 9, vec![4, 64, 64 * i, 64]));
                }
                w
            })
            .collect();
        crate::compress::compress(rank, &evs)
    }

    #[test]
    fn nested_calls_of_some_ranks_do_not_split_their_callers() {
        let ts: Vec<Trace> = (0..8u32).map(|r| collective_rank(r, r % 4 == 0)).collect();
        let m = merge_tree(ts.clone()).unwrap();
        // One loop for every rank; the nested pwrite is a node of the aggregators alone.
        assert_eq!(m.nodes.len(), 1, "{m:?}");
        assert_eq!(m.nodes[0].ranks.to_string(), "0-7");
        let NodeKind::Loop(l) = &m.nodes[0].kind else {
            panic!("{m:?}")
        };
        let NodeKind::Event(e) = &l.body[0].kind else {
            panic!("{m:?}")
        };
        assert_eq!(e.children.len(), 1);
        assert_eq!(e.children[0].ranks.to_string(), "0-4:4");
        // Every rank expands to exactly its own calls.
        for (r, t) in ts.iter().enumerate() {
            assert_eq!(m.expand(r as u32), t.expand(r as u32), "rank {r}");
        }
    }

    proptest! {
        #[test]
        fn script_rebuilds_both(a in proptest::collection::vec(0u8..4, 0..40), b in proptest::collection::vec(0u8..4, 0..40)) {
            let s = myers(&a, &b, 1000).unwrap();
            let (ra, rb, _) = apply(&a, &b, &s);
            prop_assert_eq!(ra, a);
            prop_assert_eq!(rb, b);
        }
    }
}
