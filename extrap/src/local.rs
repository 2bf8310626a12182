//! MPI's local queries whose counts follow the program's data.
//!
//! `MPI_Comm_rank`, `MPI_Comm_size` and the other local queries ([`Op::is_local_query`]) send
//! nothing, touch no file and tell no other rank anything. A program may make them a number
//! of times its data decides: Meep asks `MPI_Comm_size` once per operation on its chunks, so
//! between two of its I/O calls a loop of them stands at 12 and 20 ranks where 8 and 16
//! ranks have one call, and the traces disagree in structure there and nowhere else.
//!
//! A program may also make them at times the clock decides: Meep's progress line asks
//! `MPI_Comm_rank` once four seconds of wall time have passed, which cuts its time-step loop
//! at a step the machine's load picks, on some ranks of some runs.
//!
//! Where the inputs disagree in structure and setting aside local queries makes them agree,
//! the extrapolation sets those ops aside in every input and extrapolates the rest; the
//! output's provenance and notes say which ([`NOTE`]), `--explain` says it too, and `diff`
//! sets the same ops aside on both sides before comparing. The time of a call set aside goes
//! into the gap before the next call kept, so wall time keeps it. Only ops the agreement
//! needs are set aside (those found where the structures differ first, else the fewest of
//! all the inputs make): a program whose queries agree between
//! scales keeps every one, and extrapolates them (ranks as returned, sizes as `n`).

use crate::Input;
use crate::consistent::{groups_and_ops, ops_in};
use crate::ranks::{any_summary, compress_ranks};
use rsd::trace::Lifts;
use rsd::trace::{Node, NodeKind, RawEvent};
use rsd::{Op, TraceFile};
use std::collections::BTreeSet;

/// How the note of an extrapolation that set local queries aside starts; the ops' names
/// follow, separated by ", ".
pub const NOTE: &str = "local queries set aside, their counts following the program's data \
                        rather than the scale (their time is in the next call's gap): ";

/// The note naming `ops`.
pub(crate) fn note(ops: &BTreeSet<Op>) -> String {
    let names: Vec<&str> = ops.iter().map(|o| o.name()).collect();
    format!("{NOTE}{}", names.join(", "))
}

/// Says in `h` that `ops` were set aside: the typed provenance and the note.
pub(crate) fn mark_set_aside(h: &mut rsd::Header, ops: &BTreeSet<Op>) {
    add_set_aside(h, ops);
    h.notes.push(note(ops));
}

/// Adds `ops` to the ops the provenance of `h` says were set aside (directory listings are
/// set aside by another pass than the local queries: each adds its own).
pub(crate) fn add_set_aside(h: &mut rsd::Header, ops: &BTreeSet<Op>) {
    let p = crate::provenance::of_mut(h);
    for &op in ops {
        if !p.set_aside.contains(&op) {
            p.set_aside.push(op);
        }
    }
}

/// The ops the notes say were set aside ([`NOTE`]); names no op has are skipped. The
/// header's provenance says it since format minor version 8: read it with
/// [`crate::provenance::of`], which falls back to this for older traces.
pub fn ops_in_notes(notes: &[String]) -> BTreeSet<Op> {
    notes
        .iter()
        .filter_map(|n| n.strip_prefix(NOTE))
        .flat_map(|list| list.split(", "))
        .filter_map(|name| Op::ALL.iter().copied().find(|o| o.name() == name))
        .filter(|o| o.is_local_query())
        .collect()
}

/// `inputs`, which disagree in structure, with the local queries set aside that make them
/// agree, and those ops; `None` where the local queries are not what differs. `found`: the
/// local queries where the inputs' groups differ ([`groups_and_ops`], which the caller ran).
///
/// The ops found where the structures differ are tried first, growing by those found where
/// they still differ. A query can split a loop away from that place (Meep's progress line,
/// which asks `MPI_Comm_rank` when four seconds of wall time have passed, cuts its time-step
/// loop at a step the machine's load decides), so then every local query the inputs make is
/// tried, and those the agreement does not need are kept.
pub(crate) fn set_aside(
    lifts: Option<&Lifts>,
    inputs: &[Input],
    found: BTreeSet<Op>,
) -> Option<(Vec<Input>, BTreeSet<Op>)> {
    let in_place = any_summary(inputs.iter().map(|i| &i.file));
    let mut ops = found;
    // Each round sets aside at least one more op: there are only so many.
    for _ in 0..=Op::ALL.len() {
        if ops.is_empty() {
            break;
        }
        let more = match without_ops(lifts, inputs, &ops, in_place)? {
            Ok(kept) => return Some((kept, ops)),
            Err(more) => more,
        };
        let before = ops.len();
        ops.extend(more);
        if ops.len() == before {
            break;
        }
    }
    fewest_that_agree(lifts, inputs, in_place)
}

/// Every local query `inputs` make set aside, if that makes them agree, then each op put back
/// whose calls the agreement does not need; `None` where setting all aside is not enough.
fn fewest_that_agree(
    lifts: Option<&Lifts>,
    inputs: &[Input],
    in_place: bool,
) -> Option<(Vec<Input>, BTreeSet<Op>)> {
    let mut ops = local_queries_in(inputs);
    if ops.is_empty() {
        return None;
    }
    let mut kept = without_ops(lifts, inputs, &ops, in_place)?.ok()?;
    for op in ops.clone() {
        let mut fewer = ops.clone();
        fewer.remove(&op);
        if fewer.is_empty() {
            continue;
        }
        if let Some(Ok(k)) = without_ops(lifts, inputs, &fewer, in_place) {
            (kept, ops) = (k, fewer);
        }
    }
    Some((kept, ops))
}

/// `inputs` without their calls of `ops`: `Ok` where that makes them agree in structure,
/// else the local queries where they still differ; `None` where one cannot be re-compressed.
fn without_ops(
    lifts: Option<&Lifts>,
    inputs: &[Input],
    ops: &BTreeSet<Op>,
    in_place: bool,
) -> Option<Result<Vec<Input>, BTreeSet<Op>>> {
    let kept = all_without(lifts, inputs, ops, in_place)?;
    let (groups, more) = groups_and_ops(lifts, &kept, Op::is_local_query);
    Some(if groups.len() <= 1 {
        Ok(kept)
    } else {
        Err(more)
    })
}

/// Every one of `inputs` without its calls of `ops` ([`without`]); `None` where one cannot be
/// re-compressed.
pub(crate) fn all_without(
    lifts: Option<&Lifts>,
    inputs: &[Input],
    ops: &BTreeSet<Op>,
    in_place: bool,
) -> Option<Vec<Input>> {
    inputs
        .iter()
        .map(|i| {
            Some(Input {
                name: i.name.clone(),
                file: without(lifts, &i.file, ops, in_place).ok()?.0,
            })
        })
        .collect()
}

/// The local queries any of `inputs` makes, at any depth.
fn local_queries_in(inputs: &[Input]) -> BTreeSet<Op> {
    let mut out = BTreeSet::new();
    for n in inputs.iter().flat_map(|i| &i.file.trace.nodes) {
        ops_in(n, &Op::is_local_query, &mut out);
    }
    out
}

/// `tf` without its calls of `ops`, and how many calls that took out (over every rank). Each
/// call's time (gap and duration) is added to the gap of the next call kept in its list.
/// `in_place`: on the compressed trace (where it holds summaries, which cannot be expanded
/// rank by rank exactly; loops left empty go, and the time moves as means); otherwise every
/// rank's calls are re-compressed (`lifts`: the containers' lifting, where `tf` is lifted).
pub(crate) fn without(
    lifts: Option<&Lifts>,
    tf: &TraceFile,
    ops: &BTreeSet<Op>,
    in_place: bool,
) -> Result<(TraceFile, u64), String> {
    let mut removed = 0;
    if in_place {
        let mut out = tf.clone();
        let mut carry = 0.0;
        drop_nodes(&mut out.trace.nodes, ops, &mut carry, &mut removed);
        return Ok((out, removed));
    }
    let trace = compress_ranks(lifts, tf.header.nranks, |r| {
        Ok(drop_events(tf.trace.rank_events(r), ops, &mut removed))
    })?;
    Ok((
        TraceFile {
            header: tf.header.clone(),
            trace,
        },
        removed,
    ))
}

/// `events` without the calls of `ops`, at every depth.
fn drop_events(events: Vec<RawEvent>, ops: &BTreeSet<Op>, removed: &mut u64) -> Vec<RawEvent> {
    let mut carry = 0;
    let mut out = Vec::with_capacity(events.len());
    for mut e in events {
        if ops.contains(&e.op) {
            carry += e.gap_ns + e.dur_ns;
            *removed += 1;
            continue;
        }
        e.gap_ns += std::mem::take(&mut carry);
        e.children = drop_events(std::mem::take(&mut e.children), ops, removed);
        out.push(e);
    }
    out
}

/// [`drop_events`] on compressed nodes: `carry` is the time (ns, summed over every
/// occurrence) of the calls taken out since the last call kept. It goes into the next
/// call's gap as a shift of its mean, minimum and maximum (the histogram stays: it is only
/// shown); what is left at the end of a call's nested calls is inside that call's duration.
fn drop_nodes(nodes: &mut Vec<Node>, ops: &BTreeSet<Op>, carry: &mut f64, removed: &mut u64) {
    let mut out = Vec::with_capacity(nodes.len());
    for mut n in std::mem::take(nodes) {
        match &mut n.kind {
            NodeKind::Event(e) if ops.contains(&e.op) => {
                let t = &e.timing;
                *carry += t.gap.count as f64 * (t.gap.mean + t.dur.mean);
                *removed += t.gap.count;
            }
            NodeKind::Event(e) => {
                let g = &mut e.timing.gap;
                if *carry > 0.0 && g.count > 0 {
                    let add = *carry / g.count as f64;
                    g.mean += add;
                    g.min += add.round() as u64;
                    g.max += add.round() as u64;
                    *carry = 0.0;
                }
                drop_nodes(&mut e.children, ops, &mut 0.0, removed);
                out.push(n);
            }
            NodeKind::Loop(l) => {
                drop_nodes(&mut l.body, ops, carry, removed);
                if !l.body.is_empty() {
                    out.push(n);
                }
            }
        }
    }
    *nodes = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: Op, gap: u64) -> RawEvent {
        let mut e = RawEvent::new(op, 7, vec![0; op.params().len()]);
        e.gap_ns = gap;
        e.dur_ns = 10;
        e
    }

    #[test]
    fn notes_name_the_ops_set_aside() {
        let ops: BTreeSet<Op> = [Op::CommSize, Op::CartShift].into();
        let notes = vec!["something else".to_string(), note(&ops)];
        assert_eq!(ops_in_notes(&notes), ops);
        // Only local queries can be set aside, whatever a note says.
        let forged = vec![format!("{NOTE}MPI_Comm_size, write, nonsense")];
        assert_eq!(ops_in_notes(&forged), [Op::CommSize].into());
    }

    #[test]
    fn time_moves_to_the_next_call_kept() {
        let ops: BTreeSet<Op> = [Op::CommSize].into();
        let mut removed = 0;
        let mut outer = call(Op::Barrier, 5);
        outer.children = vec![call(Op::CommSize, 1), call(Op::CommSize, 2)];
        let kept = drop_events(
            vec![
                call(Op::CommSize, 100),
                call(Op::CommSize, 200),
                call(Op::Barrier, 1000),
                outer,
                call(Op::CommSize, 3),
            ],
            &ops,
            &mut removed,
        );
        assert_eq!(removed, 5);
        assert_eq!(kept.len(), 2);
        // 100 + 10 + 200 + 10 before the first barrier's own 1000.
        assert_eq!(kept[0].gap_ns, 1320);
        assert_eq!(kept[1].gap_ns, 5);
        assert!(kept[1].children.is_empty());
    }
}
