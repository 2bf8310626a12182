//! Values that degenerate at the smallest scales: one function of the rank count and the rank
//! that, at 2 ranks (or on one node), the trace's rank groups write in another form. Rank
//! `r`'s neighbour `(r+1) % n` times a part of `floor(T/n)` elements is a line through the
//! ranks but the last plus a group of the last at 4 ranks and more, yet at 2 ranks both ranks
//! lie on one line (`-T/2*rank + T/2`), and a value on one rank alone, or a rank function
//! with one point per group, is as ambiguous there. No per-rank model need fit such a
//! product, and the groups' shapes differ, so the fit over every scale fails.
//!
//! This is the one place such values are taken: the fit is made over the larger scales,
//! where the value keeps one form, and the smaller scales set aside are held out as its
//! check. The fitted value, evaluated at each set-aside scale, must give every rank of that
//! input exactly its traced value; only then is it evaluated at the target. The held-out
//! scales test the fit more than the leave-one-scale-out guard does: they are predicted, not
//! fitted. At least [`MIN_FITTED`] scales stay in the fit; a value that still fails is
//! refused as before, and the refusal names the scales of the other form
//! ([`DegenerateScales`]).

use crate::fit::{Failure, Fitter};
use rsd::RankSet;
use rsd::value::{Elastic, Val};

/// The fewest scales a value held out at smaller scales is fitted over.
pub(crate) const MIN_FITTED: usize = 3;

/// The most ranks a held-out scale has: the degenerate form is that of 2 ranks (both
/// neighbours one rank, one line through two points). A larger scale that fits no model with
/// the others is not held out: three larger scales fit too many models for a fourth to be set
/// aside on their word (loop counts 10, 10, 13, 10 at 4-16 ranks are irregular, not 10).
const MAX_HELD_OUT_RANKS: i64 = 2;

/// Largest held-out scale compared rank by rank (the smallest inputs are held out).
const HELD_OUT_LIMIT: u64 = 1 << 16;

/// What holding out the smallest scales gave.
pub(crate) enum HeldOut {
    /// The fit over the larger scales at the target, which reproduces the held-out scales
    /// (listed) rank by rank.
    Fitted(Elastic, Vec<i64>),
    /// The larger scales fit one value, which the smallest does not follow: the hint of the
    /// refusal, naming that scale, what the fit gives there and the scales to trace instead.
    Missed(String),
    /// No fit over the larger scales either.
    Unfitted,
}

impl Fitter<'_> {
    /// `els` fitted over its larger scales with the smallest `k` (1 and up, keeping at least
    /// [`MIN_FITTED`]) held out and reproduced exactly, evaluated at `target_ranks`.
    pub(crate) fn elastic_held_out(&self, els: &[&Elastic], target_ranks: &RankSet) -> HeldOut {
        let Some(most) = els.len().checked_sub(MIN_FITTED) else {
            return HeldOut::Unfitted;
        };
        let most = most.min(
            self.scales
                .iter()
                .take_while(|&&n| n <= MAX_HELD_OUT_RANKS)
                .count(),
        );
        let mut missed = None;
        for k in 1..=most {
            let fitted = self.on(k, self.target, self.target_ppn);
            let Ok(at_target) = fitted.fitted(&els[k..], target_ranks) else {
                continue;
            };
            match (0..k).find_map(|i| self.miss(els, k, i)) {
                None => return HeldOut::Fitted(at_target, self.scales[..k].to_vec()),
                Some(m) => {
                    missed.get_or_insert(m);
                }
            }
        }
        missed.map_or(HeldOut::Unfitted, HeldOut::Missed)
    }

    /// Why the fit over the scales from the `k`-th on does not give the held-out scale `i`
    /// its traced values, as a refusal's hint; `None` where it does, rank by rank.
    fn miss(&self, els: &[&Elastic], k: usize, i: usize) -> Option<String> {
        let (n, ppn) = (self.scales[i], self.ppns.get(i).copied().unwrap_or(0));
        let traced = els[i];
        let ranks = ranks_of(traced);
        let fitted_on = scales_text(&self.scales[k..]);
        let instead = |why: String| {
            let last = self.scales[self.scales.len() - 1];
            let step = last - self.scales[self.scales.len() - 2];
            format!(
                "{why}: at {n} ranks this value takes another form than at {fitted_on} ranks, \
                 which no model of the rank count joins; trace scales above {n} ranks instead \
                 of it (for example add {} ranks and leave out {n})",
                last + step.max(1)
            )
        };
        if ranks.len() > HELD_OUT_LIMIT {
            return Some(instead(format!(
                "{n} ranks are too many to compare rank by rank"
            )));
        }
        let there = match self.on(k, n, ppn).fitted(&els[k..], &ranks) {
            Ok(there) => there,
            Err(_) => {
                return Some(instead(format!(
                    "the values at {fitted_on} ranks fit, but their model gives nothing at {n}"
                )));
            }
        };
        let differs = ranks.to_vec().into_iter().find_map(|r| {
            let (x, y) = (there.for_rank(r), traced.for_rank(r));
            (x.is_none() || x != y).then_some((r, x, y))
        })?;
        let (r, x, y) = differs;
        let show = |v: Option<Val<i64>>| match v {
            None => "nothing".to_string(),
            Some(Val::Const(x)) => x.to_string(),
            Some(v) => format!("{v:?}"),
        };
        // A size of data smaller than the model gives: a read that reached the end of a
        // file that is smaller at this scale (its size is no quantity the fit sees).
        let short = match (&x, &y) {
            (Some(Val::Const(want)), Some(Val::Const(got))) => self.scope.data_size() && got < want,
            _ => false,
        };
        let end = if short {
            " (a call that moved less data than at the larger scales, as a read does that \
             reaches the end of a file smaller at this scale: min(request, file size), and \
             extrap does not model the file's size)"
        } else {
            ""
        };
        Some(instead(format!(
            "the values at {fitted_on} ranks fit one model, which gives rank {r} {} at {n} \
             ranks where the trace holds {}{end}",
            show(x),
            show(y)
        )))
    }

    /// A fitter over the scales from the `k`-th on, evaluating at `target` ranks of `ppn` per
    /// node; at a held-out scale, with the models of `n` chosen at the real target.
    fn on(&self, k: usize, target: i64, ppn: i64) -> Fitter<'_> {
        let held_out = target != self.target || ppn != self.target_ppn;
        Fitter {
            chosen_at: held_out.then_some((self.target, self.target_ppn)),
            ms: self.ms,
            scales: self.scales[k..].to_vec(),
            ppns: self.ppns.get(k..).map(<[i64]>::to_vec).unwrap_or_default(),
            target,
            target_ppn: ppn,
            explain: Vec::new(),
            pending: Default::default(),
            repeats: Vec::new(),
            cursor: 0,
            scope: self.scope.clone(),
        }
    }

    /// The fit by groups, else per rank, at this fitter's target.
    fn fitted(&self, els: &[&Elastic], target_ranks: &RankSet) -> Result<Elastic, Failure> {
        let mut notes = Vec::new();
        self.elastic_groups(els, &mut notes)
            .or_else(|_| self.elastic_per_rank(els, target_ranks).map(|(e, _)| e))
    }
}

/// The ranks an elastic value covers.
fn ranks_of(e: &Elastic) -> RankSet {
    let mut v: Vec<u32> = e.groups.iter().flat_map(|g| g.ranks.to_vec()).collect();
    v.sort_unstable();
    v.dedup();
    RankSet::from_sorted(&v)
}

/// `4, 6 and 8`.
fn scales_text(scales: &[i64]) -> String {
    match scales {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => {
            let rest: Vec<String> = rest.iter().map(i64::to_string).collect();
            format!("{} and {last}", rest.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::request::as_given as extrapolate;
    use crate::{ExtrapError, Input, ModelSet};
    use rsd::op::{Op, args};
    use rsd::trace::RawEvent;

    /// At 2, 4, 6 and 8 ranks, every rank reads `ret(n, rank)` of 262144 bytes at
    /// `offset(n, rank)`.
    fn inputs(offset: fn(i64, i64) -> i64, ret: fn(i64, i64) -> i64) -> Vec<Input> {
        [2u32, 4, 6, 8]
            .iter()
            .map(|&n| {
                let ranks = (0..n)
                    .map(|r| {
                        let (n, r64) = (i64::from(n), i64::from(r));
                        let mut c = rsd::Compressor::new(r);
                        let a = args::pread(3, 262144, offset(n, r64), ret(n, r64));
                        c.push(&RawEvent::new(Op::Pread, 1, a));
                        c.finish()
                    })
                    .collect();
                let mut header = rsd::Header::new(n);
                header.command = vec!["neighbour".into()];
                Input {
                    name: format!("nb.{n}.iotrex"),
                    file: rsd::TraceFile {
                        header,
                        trace: rsd::merge_tree(ranks).unwrap(),
                    },
                }
            })
            .collect()
    }

    /// The neighbour's part, `((rank+1)%n)*floor(T/n)`: one line through both ranks at 2 ranks,
    /// two rank groups at more. Fitted over 4-8 ranks, the 2-rank input reproduced, every rank
    /// at 16 as the program would read.
    #[test]
    fn a_neighbours_part_in_one_line_at_2_ranks_is_held_out_and_reproduced() {
        let ms = ModelSet::builtin();
        let part = |n: i64, r: i64| (r + 1) % n * (1_000_002 / n);
        let x =
            extrapolate(&inputs(part, |_, _| 262144), 16, &ms).unwrap_or_else(|e| panic!("{e}"));
        for r in 0..16 {
            let got = x.file.trace.expand(r);
            let want = args::pread(3, 262144, part(16, i64::from(r)), 262144);
            assert_eq!(got[0].params, want, "rank {r}");
        }
        assert!(
            x.explain
                .iter()
                .any(|e| e.model.contains("at 2 ranks, where the rank groups")),
            "{:?}",
            x.explain
        );
    }

    /// A read that returned less at 2 ranks only (the end of a smaller file) follows no model
    /// of the larger scales: refused, naming the scale and the scales to trace instead.
    #[test]
    fn a_value_the_smallest_scale_does_not_follow_is_refused_naming_it() {
        let ms = ModelSet::builtin();
        let ret = |n: i64, _| if n == 2 { 214016 } else { 262144 };
        let e = extrapolate(&inputs(|_, _| 0, ret), 16, &ms).unwrap_err();
        let ExtrapError::Refused { hint, .. } = &e else {
            panic!("expected a refusal, got {e}");
        };
        for want in [
            "gives rank 0 262144 at 2 ranks where the trace holds 214016",
            "min(request, file size)",
            "trace scales above 2 ranks instead of it (for example add 10 ranks and leave out 2)",
        ] {
            assert!(hint.contains(want), "{want}: {hint}");
        }
    }
}
