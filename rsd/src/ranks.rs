//! Rank sets as PRSDs: a start and (count, stride) per dimension, innermost first.
//!
//! All ranks, the even ranks, or the interior of a 2-D grid each take constant space. A
//! [`RankSet`] is a list of PRSD runs in a canonical form that depends only on the set of ranks,
//! which is what makes merging associative: however a radix tree groups the merges, the same set
//! is written the same way.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One PRSD run: `start + Σ i_d * stride_d` for `i_d` in `0..count_d`; `dims[0]` is innermost.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Prsd {
    /// First rank of the run.
    pub start: u32,
    /// (count, stride) per dimension, innermost first. A single rank has `[(1, 0)]`.
    pub dims: Vec<(u32, u32)>,
}

impl Prsd {
    fn single(r: u32) -> Prsd {
        Prsd {
            start: r,
            dims: vec![(1, 0)],
        }
    }

    /// Number of ranks in the run (saturating, so a corrupt run cannot overflow).
    pub fn len(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |acc, &(c, _)| acc.saturating_mul(c as u64))
    }

    /// Whether the run holds no rank (only possible in a corrupt file).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn last(&self) -> u64 {
        self.dims.iter().fold(self.start as u64, |acc, &(c, s)| {
            acc + (c.saturating_sub(1) as u64) * s as u64
        })
    }

    fn contains_from(&self, r: u64, base: u64, d: usize) -> bool {
        if r < base {
            return false;
        }
        let (c, s) = self.dims[d];
        if d == 0 {
            let off = r - base;
            if s == 0 {
                return off == 0 && c > 0;
            }
            // Contiguous runs are the common case; they need no division (expanding a trace
            // asks this for every parameter of every event).
            if s == 1 {
                return off < c as u64;
            }
            return off.is_multiple_of(s as u64) && off / (s as u64) < (c as u64);
        }
        (0..c as u64).any(|i| self.contains_from(r, base + i * s as u64, d - 1))
    }

    /// Whether `r` is in the run.
    pub fn contains(&self, r: u32) -> bool {
        !self.dims.is_empty()
            && self.contains_from(r as u64, self.start as u64, self.dims.len() - 1)
    }

    fn for_each(&self, f: &mut impl FnMut(u32)) {
        fn rec(p: &Prsd, base: u64, d: usize, f: &mut impl FnMut(u32)) {
            let (c, s) = p.dims[d];
            for i in 0..c as u64 {
                let v = base + i * s as u64;
                if d == 0 {
                    if let Ok(v) = u32::try_from(v) {
                        f(v)
                    }
                } else {
                    rec(p, v, d - 1, f);
                }
            }
        }
        if !self.dims.is_empty() {
            rec(self, self.start as u64, self.dims.len() - 1, f)
        }
    }
}

/// A set of ranks, as canonical PRSD runs in increasing rank order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct RankSet {
    /// The runs; each run's ranks are all smaller than the next run's.
    pub runs: Vec<Prsd>,
}

impl RankSet {
    /// The set `{r}`.
    pub fn single(r: u32) -> RankSet {
        RankSet {
            runs: vec![Prsd::single(r)],
        }
    }

    /// The set `0..n`.
    pub fn all(n: u32) -> RankSet {
        if n == 0 {
            return RankSet::default();
        }
        RankSet {
            runs: vec![Prsd {
                start: 0,
                dims: vec![(n, if n == 1 { 0 } else { 1 })],
            }],
        }
    }

    /// Builds the canonical form from strictly increasing ranks.
    ///
    /// Greedy 1-D arithmetic runs, except that a two-element run is not formed when its second
    /// element starts a longer run of another stride (`{0, 5, 6, 7}` is `0` and `5-7`, not `0,5`
    /// and `6-7`). Consecutive runs with the same count and stride whose starts advance evenly are
    /// then folded into one 2-D run (the interior of a grid).
    pub fn from_sorted(ranks: &[u32]) -> RankSet {
        debug_assert!(ranks.windows(2).all(|w| w[0] < w[1]));
        let mut one_d: Vec<(u32, u32, u32)> = Vec::new(); // (start, count, stride)
        let mut i = 0;
        while i < ranks.len() {
            if i + 1 == ranks.len() {
                one_d.push((ranks[i], 1, 0));
                break;
            }
            let d = ranks[i + 1] - ranks[i];
            let mut j = i + 1;
            while j + 1 < ranks.len() && ranks[j + 1] - ranks[j] == d {
                j += 1;
            }
            if j == i + 1
                && j + 2 < ranks.len()
                && ranks[j + 1] - ranks[j] == ranks[j + 2] - ranks[j + 1]
            {
                one_d.push((ranks[i], 1, 0));
                i += 1;
                continue;
            }
            one_d.push((ranks[i], (j - i + 1) as u32, d));
            i = j + 1;
        }
        // Fold runs of equal shape with evenly spaced starts into 2-D runs.
        let mut runs = Vec::new();
        let mut k = 0;
        while k < one_d.len() {
            let (s, c, t) = one_d[k];
            let mut m = k + 1;
            if c > 1 && m < one_d.len() && one_d[m].1 == c && one_d[m].2 == t {
                let step = one_d[m].0 - s;
                while m + 1 < one_d.len()
                    && one_d[m + 1].1 == c
                    && one_d[m + 1].2 == t
                    && one_d[m + 1].0 - one_d[m].0 == step
                {
                    m += 1;
                }
                runs.push(Prsd {
                    start: s,
                    dims: vec![(c, t), ((m - k + 1) as u32, step)],
                });
                k = m + 1;
            } else {
                runs.push(Prsd {
                    start: s,
                    dims: vec![(c, t)],
                });
                k += 1;
            }
        }
        RankSet { runs }
    }

    /// Parses a user's rank list: `0-7`, `3`, `0-62:2`, or several joined by commas.
    pub fn parse(spec: &str) -> Result<RankSet, String> {
        let mut ranks = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("bad rank list `{part}`: use forms like 0-7, 3 or 0-62:2");
            let (range, step) = match part.split_once(':') {
                Some((r, s)) => (r, s.parse::<u32>().map_err(|_| bad())?),
                None => (part, 1),
            };
            let (a, b) = match range.split_once('-') {
                Some((a, b)) => (
                    a.parse::<u32>().map_err(|_| bad())?,
                    b.parse::<u32>().map_err(|_| bad())?,
                ),
                None => {
                    let a = range.parse::<u32>().map_err(|_| bad())?;
                    (a, a)
                }
            };
            if step == 0 || b < a || (b - a) / step > 1 << 24 {
                return Err(bad());
            }
            ranks.extend((a..=b).step_by(step as usize));
        }
        if ranks.is_empty() {
            return Err("empty rank list".into());
        }
        ranks.sort_unstable();
        ranks.dedup();
        Ok(RankSet::from_sorted(&ranks))
    }

    /// Number of ranks.
    pub fn len(&self) -> u64 {
        self.runs.iter().map(Prsd::len).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.runs.iter().all(Prsd::is_empty)
    }

    /// Whether `r` is in the set.
    pub fn contains(&self, r: u32) -> bool {
        self.runs.iter().any(|p| p.contains(r))
    }

    /// The smallest rank.
    pub fn first(&self) -> Option<u32> {
        self.runs.first().map(|p| p.start)
    }

    /// The ranks in increasing order.
    pub fn to_vec(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.len().min(1 << 24) as usize);
        for p in &self.runs {
            p.for_each(&mut |r| v.push(r));
        }
        v
    }

    /// Calls `f` for each rank in increasing order without allocating.
    pub fn for_each(&self, mut f: impl FnMut(u32)) {
        for p in &self.runs {
            p.for_each(&mut f);
        }
    }

    /// `self = self ∪ other`, in place when `other` continues a 1-D run of `self` (the radix
    /// tree's common case), so no allocation happens.
    pub fn union_with(&mut self, other: &RankSet) {
        if self == other {
            return;
        }
        if let Some((_, c, s)) = join_1d(self, other) {
            self.runs[0].dims[0] = (c, s);
            return;
        }
        *self = self.union(other);
    }

    /// The union of two sets. Adjacent 1-D runs of the same stride join in O(1), which is the
    /// common case of a radix-tree merge; anything else is re-encoded from the sorted ranks.
    pub fn union(&self, other: &RankSet) -> RankSet {
        if self.runs.is_empty() {
            return other.clone();
        }
        if other.runs.is_empty() || self == other {
            return self.clone();
        }
        if let Some((start, c, s)) = join_1d(self, other).or_else(|| join_1d(other, self)) {
            return RankSet {
                runs: vec![Prsd {
                    start,
                    dims: vec![(c, s)],
                }],
            };
        }
        let a = self.to_vec();
        let b = other.to_vec();
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let next = match (a.get(i), b.get(j)) {
                (Some(&x), Some(&y)) if x == y => {
                    i += 1;
                    j += 1;
                    x
                }
                (Some(&x), Some(&y)) if x < y => {
                    i += 1;
                    x
                }
                (Some(&x), None) => {
                    i += 1;
                    x
                }
                (_, Some(&y)) => {
                    j += 1;
                    y
                }
                (None, None) => unreachable!(),
            };
            out.push(next);
        }
        RankSet::from_sorted(&out)
    }
}

/// `a ∪ b` as (start, count, stride) when both are one 1-D run and `b` continues `a` with the
/// same stride. Allocation-free: it runs at every node of every merge.
fn join_1d(a: &RankSet, b: &RankSet) -> Option<(u32, u32, u32)> {
    let ([pa], [pb]) = (a.runs.as_slice(), b.runs.as_slice()) else {
        return None;
    };
    let (&[(ca, sa)], &[(cb, sb)]) = (pa.dims.as_slice(), pb.dims.as_slice()) else {
        return None;
    };
    let last_a = pa.last();
    if (pb.start as u64) <= last_a {
        return None;
    }
    let gap = pb.start as u64 - last_a;
    let stride = match (ca > 1, cb > 1) {
        (true, true) if sa == sb && gap == sa as u64 => sa,
        (true, false) if gap == sa as u64 => sa,
        (false, true) if gap == sb as u64 => sb,
        // Two singles make a two-element run, as from_sorted gives too.
        (false, false) => u32::try_from(gap).ok()?,
        _ => return None,
    };
    Some((pa.start, ca.checked_add(cb)?, stride))
}

impl fmt::Display for Prsd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (c, s) = self.dims.first().copied().unwrap_or((0, 0));
        let end = self.start as u64 + (c.saturating_sub(1) as u64) * s as u64;
        if c <= 1 {
            write!(f, "{}", self.start)?;
        } else if s == 1 {
            write!(f, "{}-{}", self.start, end)?;
        } else {
            write!(f, "{}-{}:{}", self.start, end, s)?;
        }
        for &(c, s) in self.dims.iter().skip(1) {
            write!(f, " x{c}+{s}")?;
        }
        Ok(())
    }
}

impl fmt::Display for RankSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.runs.is_empty() {
            return write!(f, "none");
        }
        for (i, p) in self.runs.iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn display_forms() {
        assert_eq!(RankSet::all(64).to_string(), "0-63");
        let even: Vec<u32> = (0..64).step_by(2).collect();
        assert_eq!(RankSet::from_sorted(&even).to_string(), "0-62:2");
        assert_eq!(RankSet::from_sorted(&[0, 5, 6, 7]).to_string(), "0,5-7");
        // Interior of an 8x8 grid is one 2-D run.
        let interior: Vec<u32> = (1..7)
            .flat_map(|y| (1..7).map(move |x| y * 8 + x))
            .collect();
        let s = RankSet::from_sorted(&interior);
        assert_eq!(s.runs.len(), 1);
        assert_eq!(s.to_string(), "9-14 x6+8");
        assert_eq!(s.to_vec(), interior);
    }

    #[test]
    fn parse_rank_lists() {
        assert_eq!(RankSet::parse("0-7").unwrap(), RankSet::all(8));
        assert_eq!(
            RankSet::parse("0-6:2, 3").unwrap().to_vec(),
            vec![0, 2, 3, 4, 6]
        );
        assert!(RankSet::parse("7-0").is_err());
        assert!(RankSet::parse("a").unwrap_err().contains("`a`"));
        assert!(RankSet::parse("").is_err());
    }

    #[test]
    fn union_fast_path_matches_canonical() {
        let a = RankSet::all(4);
        let b = RankSet::from_sorted(&[4, 5, 6, 7]);
        assert_eq!(a.union(&b), RankSet::all(8));
        assert_eq!(
            RankSet::single(0).union(&RankSet::single(1)),
            RankSet::all(2)
        );
    }

    proptest! {
        #[test]
        fn roundtrip_and_union(mut a in proptest::collection::vec(0u32..200, 0..60), mut b in proptest::collection::vec(0u32..200, 0..60)) {
            a.sort(); a.dedup(); b.sort(); b.dedup();
            let sa = RankSet::from_sorted(&a);
            prop_assert_eq!(sa.to_vec(), a.clone());
            for r in 0..200 { prop_assert_eq!(sa.contains(r), a.contains(&r)); }
            let sb = RankSet::from_sorted(&b);
            let mut u: Vec<u32> = a.iter().chain(b.iter()).copied().collect();
            u.sort(); u.dedup();
            prop_assert_eq!(sa.union(&sb), RankSet::from_sorted(&u));
            prop_assert_eq!(sb.union(&sa), RankSet::from_sorted(&u));
        }
    }
}
