//! Library calls above MPI-IO (HDF5, PnetCDF) are containers: their children are the MPI, MPI-IO and
//! POSIX calls the library made. The models of the libraries below (the collective
//! buffering's nested calls, HDF5's dealt metadata writes) and the structure's alignment work
//! on the calls themselves, so extrapolation and diff see each container followed by what it
//! made ([`rsd::Trace::lift_containers`]); the container's own parameters (dataset
//! dimensions, hyperslabs, element counts) are fitted as any call's.
//!
//! The extrapolated trace is then nested again ([`rsd::Trace::nest_lifted`]): the calls
//! lifting took out of a container follow it in the output too (their call sites say which
//! container site made them), so they are put back beneath it, with their own call sites, and
//! the output has the layer as a real trace has it (per-layer exclusive time, the HDF5 call
//! that made each MPI-IO call). Re-nesting the lifted form, rather than extrapolating the
//! nested form in place, leaves every model below (collio's derivation, the dealt flush, the
//! structure's alignment and grouping) one form to work on: the one traces without the layer
//! have. Where a call cannot be given back to its container (a loop of the output mixing a
//! container's calls with others), the output keeps the lifted form and its notes say why.
//!
//! A container's duration includes its calls'; lifted, both would be counted (the wall
//! time's parts are the top-level calls' times), and fitted apart, the container's inclusive
//! time minus its fitted calls' is no exclusive time at all. So the lifted container's
//! duration is its own time (its duration minus its calls' durations and the gaps between
//! them: HDF5's own work), fitted as such, and the calls' times at the target are added back
//! once they are nested again ([`own_time`], [`with_calls_time`]).

use crate::Input;
use rsd::TraceFile;
use rsd::timing::{BINS, Stats, bin_of};
use rsd::trace::{Lifts, Node, NodeKind};

/// The note an extrapolation from traces with containers carries when it keeps the lifted
/// form.
pub const NOTE: &str = "Library calls (HDF5 calls, PnetCDF calls, NetCDF calls: the layers above \
     MPI-IO) are followed by the MPI, MPI-IO and POSIX calls they made (lifted out of them for \
     the extrapolation): their durations are their own, without those calls'";

/// The note of an extrapolation whose containers were nested again.
pub const NESTED: &str = "Library calls (HDF5 calls, PnetCDF calls, NetCDF calls) were extrapolated with the MPI, MPI-IO and POSIX calls \
     they made lifted out of them, then given those calls back as children";

/// `inputs` with their containers lifted and the call sites lifting made, or `None` when no
/// input has one.
pub fn lifted(inputs: &[Input]) -> Option<(Vec<Input>, Lifts)> {
    if !inputs.iter().any(|i| i.file.trace.has_containers()) {
        return None;
    }
    let mut lifts = Lifts::default();
    let lifted = inputs
        .iter()
        .map(|i| {
            let mut file = i.file.clone();
            own_time(&mut file.trace.nodes);
            file.trace.lift_containers_into(&mut lifts);
            Input {
                name: i.name.clone(),
                file,
            }
        })
        .collect();
    Some((lifted, lifts))
}

/// `f` with its containers lifted.
pub fn lifted_file(f: &TraceFile) -> TraceFile {
    let mut f = f.clone();
    f.trace.lift_containers();
    f
}

/// Nests the lifted calls of an extrapolated trace beneath their containers again, and says
/// so in its notes; where that cannot be done the trace stays lifted and the notes say why.
pub fn nest_again(f: &mut TraceFile, lifts: &Lifts) -> bool {
    let (nested, note) = match f.trace.nest_lifted(lifts) {
        Ok(_) => {
            with_calls_time(&mut f.trace.nodes);
            (true, NESTED.to_string())
        }
        Err(why) => (false, format!("{NOTE} (not nested again: {why})")),
    };
    if !f.header.notes.contains(&note) {
        f.header.notes.push(note);
    }
    nested
}

/// The first pass: the inputs' containers lifted around the rest, the output's nested again,
/// then what the library models settle once it is nested (`library::settle`).
pub(crate) struct Lifting;

impl crate::pipeline::Pass for Lifting {
    fn around(
        &self,
        cx: crate::request::Cx,
        inputs: &[Input],
        stage: crate::library::Stage<'_>,
        inner: crate::library::Inner<'_>,
    ) -> Result<crate::Extrapolated, crate::ExtrapError> {
        let Some((lifted_inputs, lifts)) = lifted(inputs) else {
            let mut out = inner(cx, inputs, stage)?;
            crate::library::settle(cx, inputs, None, &mut out)?;
            return Ok(out);
        };
        // Every model inside that compresses ranks again compresses the containers whole.
        let cx = cx.lifted(Some(&lifts));
        let mut out = inner(cx, &lifted_inputs, stage)?;
        // Where the output keeps the lifted form, the calls each HDF5 call made follow it.
        let kept = (!nest_again(&mut out.file, &lifts)).then_some(&lifts);
        crate::library::settle(cx, inputs, kept, &mut out)?;
        out.acted(crate::PassId::Containers);
        Ok(out)
    }
}

/// The time the calls of `nodes` take, over every rank and occurrence: their durations and
/// the gaps before them (loops looked into; nested calls are inside their parent's duration).
fn calls_time(nodes: &[Node]) -> f64 {
    nodes
        .iter()
        .map(|n| match &n.kind {
            NodeKind::Event(e) => e.timing.dur.total() + e.timing.gap.total(),
            NodeKind::Loop(l) => calls_time(&l.body),
        })
        .sum()
}

/// Every container's duration made its own time: its calls' time (taken while its children
/// hold their inclusive durations) shared over its occurrences and taken off each.
fn own_time(nodes: &mut [Node]) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                if e.op.layer().is_container() && !e.children.is_empty() {
                    let per = calls_time(&e.children) / e.timing.dur.count.max(1) as f64;
                    shift(&mut e.timing.dur, -per);
                }
                own_time(&mut e.children);
            }
            NodeKind::Loop(l) => own_time(&mut l.body),
        }
    }
}

/// The inverse of [`own_time`] on a nested trace: the calls' time added back to every
/// container's duration (inner containers first, whose durations their parent's includes),
/// and to its prediction interval.
fn with_calls_time(nodes: &mut [Node]) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                with_calls_time(&mut e.children);
                if e.op.layer().is_container() && !e.children.is_empty() {
                    let per = calls_time(&e.children) / e.timing.dur.count.max(1) as f64;
                    shift(&mut e.timing.dur, per);
                    if let Some(i) = &mut e.timing.interval {
                        i.dur.lo += per;
                        i.dur.hi += per;
                    }
                }
            }
            NodeKind::Loop(l) => with_calls_time(&mut l.body),
        }
    }
}

/// Every sample of `s` moved by `by` ns (none below 0): the mean, the extremes and the
/// histogram (each bin's samples taken at its middle) move; the spread stays.
fn shift(s: &mut Stats, by: f64) {
    if s.count == 0 {
        return;
    }
    let moved = |x: f64| (x + by).max(0.0);
    s.mean = moved(s.mean);
    s.min = moved(s.min as f64).round() as u64;
    s.max = moved(s.max as f64).round() as u64;
    let mut bins = [0u64; BINS];
    for (b, &c) in s.bins.iter().enumerate() {
        // Bin b holds [4^b, 4^(b+1)): its middle is 2.5 * 4^b (bin 0 also holds 0).
        let mid = if b == 0 {
            2.0
        } else {
            2.5 * 4f64.powi(b as i32)
        };
        bins[bin_of(moved(mid).round() as u64)] += c;
    }
    s.bins = bins;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::op::Op;
    use rsd::trace::RawEvent;

    fn call(op: Op, gap: u64, dur: u64, children: Vec<RawEvent>) -> RawEvent {
        RawEvent {
            gap_ns: gap,
            dur_ns: dur,
            children,
            ..RawEvent::new(op, op as u64, vec![0; op.schema().len()])
        }
    }

    /// An H5Fclose of 1000 ns whose two writes take 300 and 200 ns after gaps of 50 and
    /// 100: 350 ns of its own, and 1000 again once its calls' times are added back.
    #[test]
    fn own_time_and_back() {
        let mut c = rsd::Compressor::new(0);
        c.push(&call(
            Op::H5Fclose,
            7,
            1000,
            vec![
                call(Op::FileWriteAt, 50, 300, vec![]),
                call(Op::FileClose, 100, 200, vec![]),
            ],
        ));
        let t = c.finish();
        let mut own = t.clone();
        own_time(&mut own.nodes);
        let dur = |t: &rsd::Trace| match &t.nodes[0].kind {
            NodeKind::Event(e) => e.timing.dur.clone(),
            NodeKind::Loop(_) => unreachable!(),
        };
        assert_eq!(dur(&own).mean, 350.0);
        assert_eq!((dur(&own).min, dur(&own).max), (350, 350));
        assert_eq!(dur(&own).bins.iter().sum::<u64>(), 1);
        with_calls_time(&mut own.nodes);
        assert_eq!(dur(&own).mean, 1000.0);
        assert_eq!((dur(&own).min, dur(&own).max), (1000, 1000));
        // The parts of the wall time count each nanosecond once, lifted.
        let mut lifted = t.clone();
        own_time(&mut lifted.nodes);
        lifted.lift_containers();
        let traced: f64 = rsd::timing::time_parts(&lifted.nodes, 1)
            .iter()
            .map(|p| p.1)
            .sum();
        assert_eq!(traced, 7.0 + 1000.0);
    }
}
