//! The next iteration of a loop with a longer body, predicted call by call.
//!
//! [`super::Next`] predicts a loop around one call. A timestep loop is more often
//! `for s { for b in 0..4 { pwrite } lseek; fsync }`: the list ends with a loop `L` whose body
//! holds several nodes, some of them inner loops around one call. Without a prediction, each
//! iteration is rebuilt by the general folding (the calls pushed as nodes, the inner loop
//! formed again, the whole tail compared with `L`'s body and folded into it), about 1,400
//! instructions per call.
//!
//! The cursor walks `L`'s body instead: each call is compared with the values the body
//! predicts at its position (one comparison per parameter) and only its timing is kept
//! aside. When a whole iteration has been seen, it is applied to `L` at once (the count
//! plus one, each timing sample added to its node); a call that is not the predicted one
//! replays the calls kept aside through the general folding, then goes there itself. The
//! result is the general folding's, bit for bit, because the cursor is only set up where
//! the general folding is known to do exactly that with such an iteration
//! ([`Compressor::speculate`] lists why).

use super::{Acc, CKind, CNode, Compressor, NEXT_MAX};
use crate::Op;
use crate::value::Val;

/// Body nodes predicted at most (longer bodies take the general folding).
const MAX_BODY: usize = 16;
/// Calls per iteration predicted at most. The cursor saves the general folding's few slow
/// calls per iteration (about 1,400 instructions each) but adds each call's timing only when
/// the iteration is applied (about 60 more instructions per call than `Next`, which adds it
/// at once): beyond this, a long inner loop is cheaper left to `Next`.
const MAX_CALLS: u64 = 64;

/// One node of the loop's body: a call, or an inner loop around one call.
#[derive(Debug, Clone)]
struct Slot {
    op: Op,
    sig: u64,
    len: usize,
    /// Calls at this position per iteration: 1 for a call, the inner loop's count.
    count: u64,
    /// The values at the inner loop's first iteration, in the loop's current iteration.
    base: [i64; NEXT_MAX],
    /// What each value advances by per iteration of the loop (`L`).
    outer: [i64; NEXT_MAX],
    /// What each value advances by per iteration of the inner loop (0 for a call).
    inner: [i64; NEXT_MAX],
    /// The values at the inner loop's first iteration, in the iteration predicted now.
    first: [i64; NEXT_MAX],
    /// The values the next call at this position must have.
    cur: [i64; NEXT_MAX],
    /// Which values may split a loop ([`super::structural`]).
    structural: [bool; NEXT_MAX],
}

/// The prediction through the body of the loop ending the list.
#[derive(Debug, Clone, Default)]
pub(super) struct Cursor {
    /// Whether the list ends with the loop the slots describe.
    pub(super) active: bool,
    slots: Vec<Slot>,
    /// Position of the next call: the slot, and the call within it.
    node: usize,
    j: u64,
    /// The calls of the iteration seen so far: slot, call within it, gap, duration.
    seen: Vec<(usize, u64, u64, u64)>,
    /// A whole iteration is kept aside, waiting for the next call: the body ends with an
    /// inner loop, which the general folding closes only when a call that does not
    /// continue it comes.
    full: bool,
    /// The calls kept aside are being pushed through the general folding: no new prediction
    /// until they all are.
    replaying: bool,
}

impl Slot {
    /// Whether `params`, as the call after this inner loop's last one, breaks one of its
    /// structural values (which closes the loop: `Compressor::closes_last`); computed as
    /// `Val::continues` does, with checked arithmetic.
    fn breaks(&self, params: &[i64]) -> bool {
        (0..self.len).any(|p| {
            let next = self.inner[p]
                .checked_mul(self.count as i64)
                .and_then(|d| self.first[p].checked_add(d));
            self.structural[p] && next != Some(params[p])
        })
    }
}

impl Cursor {
    /// Calls kept aside (pushed, but not in the list yet).
    pub(super) fn pending(&self) -> usize {
        self.seen.len()
    }

    /// The nodes the general folding would hold for the calls kept aside.
    pub(super) fn pending_nodes(&self) -> usize {
        if self.seen.is_empty() {
            0
        } else if self.full {
            self.slots.len()
        } else {
            self.node + usize::from(self.j > 0)
        }
    }

    /// Whether the call is the one predicted at (`node`, `j`).
    #[inline]
    fn matches(&self, node: usize, op: Op, sig: u64, params: &[i64]) -> bool {
        let s = &self.slots[node];
        if s.op != op || s.sig != sig || s.len != params.len() {
            return false;
        }
        let mut same = true;
        for (x, want) in params.iter().zip(&s.cur) {
            same &= *x == *want;
        }
        same
    }

    /// Moves past the call just matched at the cursor.
    #[inline]
    fn advance(&mut self, gap: u64, dur: u64) {
        let (node, j) = (self.node, self.j);
        self.seen.push((node, j, gap, dur));
        let s = &mut self.slots[node];
        for (c, d) in s.cur.iter_mut().zip(&s.inner) {
            *c = c.wrapping_add(*d);
        }
        self.j += 1;
        if self.j == s.count {
            self.j = 0;
            self.node += 1;
        }
    }
}

/// What the cursor did with a call.
pub(super) enum Taken {
    /// Kept (or applied with its iteration).
    Yes,
    /// Not the predicted call: the calls kept aside were replayed, the call goes on.
    No,
}

impl Compressor {
    /// Sets the cursor up when the list ends with a loop whose body it can walk, and where
    /// the general folding is known to take the body's next iteration into the loop and do
    /// nothing else:
    ///
    /// - the loop's count is a constant, its body 2 to [`MAX_BODY`] nodes, each a call
    ///   without path or children, or an inner loop of a constant count (at least 2) around
    ///   one such call; every value a constant or affine (so the predicted calls continue
    ///   each value, and the iteration's nodes fold into the body without changing it);
    /// - the structural keys of the body's nodes and of the inner loops' calls are all
    ///   different, and differ from the loop's: within the iteration the only folds are then
    ///   the inner loops forming (a repeated call), and the tail can extend the loop only once
    ///   it holds a whole iteration;
    /// - no node the folding's look-back can reach before the loop has one of those keys, or
    ///   is a loop whose body holds one: nothing before the loop folds with the iteration's
    ///   nodes or with the loop itself (which also makes closing the loop a no-op).
    ///
    /// Values are computed with checked arithmetic where the general folding does, and the
    /// cursor stops where they could overflow.
    pub(super) fn speculate(&mut self) {
        let cur = &mut self.cursor;
        cur.active = false;
        if cur.replaying {
            return;
        }
        debug_assert!(cur.seen.is_empty());
        let n = self.items.len();
        let Some(CNode {
            skey: lkey,
            kind: CKind::Loop(l),
        }) = self.items.last()
        else {
            return;
        };
        let Val::Const(k) = l.iters else {
            return;
        };
        // A body of one node is predicted when it is an inner loop (`for s { for i {
        // pwrite } }`); a loop around one call is `Next`'s.
        let one_call = matches!(
            l.body.as_slice(),
            [CNode {
                kind: CKind::Event(_),
                ..
            }]
        );
        if l.body.is_empty() || one_call || l.body.len() > MAX_BODY {
            return;
        }
        let mut keys = [0u64; 2 * MAX_BODY + 1];
        let mut nk = 0;
        keys[nk] = *lkey;
        nk += 1;
        cur.slots.clear();
        for node in &l.body {
            keys[nk] = node.skey;
            nk += 1;
            let (e, count) = match &node.kind {
                CKind::Event(e) => (e, 1),
                CKind::Loop(il) => match (&il.iters, il.body.as_slice()) {
                    (
                        Val::Const(c),
                        [
                            CNode {
                                skey,
                                kind: CKind::Event(e),
                            },
                        ],
                    ) if *c >= 2 => {
                        keys[nk] = *skey;
                        nk += 1;
                        (e, *c as u64)
                    }
                    _ => return,
                },
            };
            if e.path.is_some() || !e.children.is_empty() || e.params.len() > NEXT_MAX {
                return;
            }
            let mut s = Slot {
                op: e.op,
                sig: e.sig,
                len: e.params.len(),
                count,
                base: [0; NEXT_MAX],
                outer: [0; NEXT_MAX],
                inner: [0; NEXT_MAX],
                first: [0; NEXT_MAX],
                cur: [0; NEXT_MAX],
                structural: [false; NEXT_MAX],
            };
            for (p, x) in s.structural.iter_mut().enumerate().take(e.params.len()) {
                *x = super::structural(e, p);
            }
            let depth = if count == 1 { 1 } else { 2 };
            for (p, v) in e.params.iter().enumerate() {
                match v {
                    Val::Const(c) => s.base[p] = *c,
                    Val::Lin { base, strides } if strides.len() == depth => {
                        s.base[p] = *base;
                        s.outer[p] = strides[0];
                        s.inner[p] = strides.get(1).copied().unwrap_or(0);
                    }
                    _ => return,
                }
            }
            cur.slots.push(s);
        }
        if cur
            .slots
            .iter()
            .fold(0u64, |a, s| a.saturating_add(s.count))
            > MAX_CALLS
        {
            return;
        }
        let keys = &keys[..nk];
        for (i, a) in keys.iter().enumerate() {
            if keys[i + 1..].contains(a) {
                return;
            }
        }
        let reach = &self.items[(n - 1).saturating_sub(self.window)..n - 1];
        let touches = |c: &CNode| {
            keys.contains(&c.skey)
                || matches!(&c.kind, CKind::Loop(pl) if pl.body.iter().any(|b| keys.contains(&b.skey)))
        };
        if reach.iter().any(touches) {
            return;
        }
        if self.start_iteration(k) {
            cur_reset(&mut self.cursor);
            self.cursor.active = true;
            self.next.valid = false;
        }
    }

    /// [`Compressor::speculate`] when the list ends with the loop and one call after it: the
    /// call is taken back from the list into the cursor if it is the first one the loop's
    /// next iteration predicts (the general folding pushed it and did nothing else, which
    /// the conditions of `speculate` guarantee).
    pub(super) fn speculate_after_first(&mut self) {
        if self.cursor.replaying {
            return;
        }
        let Some(CNode {
            kind: CKind::Event(e),
            ..
        }) = self.items.last()
        else {
            return;
        };
        let Acc::One { gap, dur } = e.timing else {
            return;
        };
        // A call whose gap held off-CPU time stays in the list, where the general path folds
        // it into the loop with its waits: the cursor keeps only gaps and durations, and
        // taking it aside lost every waited iteration's waits after the loop's second.
        if e.path.is_some()
            || !e.children.is_empty()
            || e.params.len() > NEXT_MAX
            || !e.waits.is_zero()
        {
            return;
        }
        let mut params = [0i64; NEXT_MAX];
        for (x, v) in params.iter_mut().zip(&e.params) {
            let Val::Const(v) = v else {
                return;
            };
            *x = *v;
        }
        let (op, sig, len) = (e.op, e.sig, e.params.len());
        self.nested = false;
        let last = self.items.pop().expect("checked above");
        let meta = self.meta.pop().expect("one per item");
        self.speculate();
        if self.cursor.active && self.cursor.matches(0, op, sig, &params[..len]) {
            self.cursor.advance(gap, dur);
            // Counted again as kept aside.
            self.events -= 1;
            if let CKind::Event(e) = last.kind
                && self.spare.len() < super::SPARE_MAX
            {
                let mut v = e.params;
                v.clear();
                self.spare.push(v);
            }
        } else {
            self.cursor.active = false;
            self.items.push(last);
            self.meta.push(meta);
        }
    }

    /// Predicts iteration `k` (0-based) of the loop: the values each slot starts with, or
    /// `false` where one of them, or one within its inner loop, would overflow.
    fn start_iteration(&mut self, k: i64) -> bool {
        for s in &mut self.cursor.slots {
            for p in 0..s.len {
                // As `Val::continues` computes it: base + stride * k, checked.
                let Some(b) = s.outer[p]
                    .checked_mul(k)
                    .and_then(|d| s.base[p].checked_add(d))
                else {
                    return false;
                };
                // The inner loop's values, as its folding computes them (checked).
                let last = s.inner[p]
                    .checked_mul(s.count as i64 - 1)
                    .and_then(|d| b.checked_add(d));
                if last.is_none() {
                    return false;
                }
                s.first[p] = b;
                s.cur[p] = b;
            }
        }
        true
    }

    /// Offers a call to the cursor.
    #[inline]
    pub(super) fn cursor_push(
        &mut self,
        op: Op,
        sig: u64,
        params: &[i64],
        gap: u64,
        dur: u64,
    ) -> Taken {
        let c = &mut self.cursor;
        if c.full {
            // A call that may continue the body's last inner loop: the general folding
            // decides. Any other closes that loop, which takes the iteration into the loop.
            let last = &c.slots[c.slots.len() - 1];
            if last.op == op && last.sig == sig && last.len == params.len() && !last.breaks(params)
            {
                self.cursor_replay();
                return Taken::No;
            }
            if !self.commit() {
                // The next iteration's values would overflow: the cursor is off.
                return Taken::No;
            }
        }
        let c = &mut self.cursor;
        if !c.matches(c.node, op, sig, params) {
            self.cursor_replay();
            return Taken::No;
        }
        let c = &mut self.cursor;
        c.advance(gap, dur);
        if c.node == c.slots.len() {
            let last = c.slots.last().map_or(1, |s| s.count);
            // A body ending with a call, or with an inner loop of two (which strict folding
            // matches at once), is taken into the loop now; a longer inner loop only when
            // the next call shows it closed.
            if last <= 2 {
                if !self.commit() {
                    self.cursor.active = false;
                }
            } else {
                c.full = true;
            }
        }
        Taken::Yes
    }

    /// Applies the iteration kept aside to the loop ending the list, and predicts the next
    /// one; `false` (the cursor is then off) where that one would overflow.
    fn commit(&mut self) -> bool {
        let Some(CNode {
            kind: CKind::Loop(l),
            ..
        }) = self.items.last_mut()
        else {
            unreachable!("the cursor walks the loop ending the list")
        };
        for &(node, _, gap, dur) in &self.cursor.seen {
            let e = match &mut l.body[node].kind {
                CKind::Event(e) => e,
                CKind::Loop(il) => match &mut il.body[0].kind {
                    CKind::Event(e) => e,
                    CKind::Loop(_) => unreachable!("the cursor walks inner loops of one call"),
                },
            };
            e.timing.add(gap, dur);
        }
        let Val::Const(cnt) = &mut l.iters else {
            unreachable!("the cursor walks a loop of constant count")
        };
        // In place: assigning a new `Val` would run the old one's destructor.
        *cnt += 1;
        let k = *cnt;
        self.events += self.cursor.seen.len() as u64;
        self.cursor.seen.clear();
        cur_reset(&mut self.cursor);
        if self.start_iteration(k) {
            true
        } else {
            self.cursor.active = false;
            false
        }
    }

    /// Turns the cursor off and pushes the calls it kept aside through the general folding,
    /// as they came.
    pub(super) fn cursor_replay(&mut self) {
        self.cursor.active = false;
        let seen = std::mem::take(&mut self.cursor.seen);
        cur_reset(&mut self.cursor);
        let mut params = [0i64; NEXT_MAX];
        self.cursor.replaying = true;
        for &(node, j, gap, dur) in &seen {
            let s = &self.cursor.slots[node];
            let len = s.len;
            for ((x, f), d) in params[..len].iter_mut().zip(&s.first).zip(&s.inner) {
                // Checked when the iteration was predicted: no overflow.
                *x = f.wrapping_add(d.wrapping_mul(j as i64));
            }
            let op = s.op;
            let sig = s.sig;
            self.push_plain(op, sig, &params[..len], gap, dur);
        }
        self.cursor.replaying = false;
        // Keep the allocation.
        let mut seen = seen;
        seen.clear();
        self.cursor.seen = seen;
    }

    /// Pushes what the cursor holds into the list (before the list is read as a whole).
    pub(super) fn settle(&mut self) {
        if self.cursor.active {
            self.cursor_replay();
        }
    }
}

/// Back to the body's first call (the slots' values are set by `start_iteration`).
fn cur_reset(c: &mut Cursor) {
    c.node = 0;
    c.j = 0;
    c.full = false;
}
