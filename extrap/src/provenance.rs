//! What an extrapolated trace says about where it came from: the header's typed
//! [`Provenance`], which `iotrex extrap` fills, and [`of`], the one place that reads it back,
//! from the notes for traces written before the field (format minor version 8); also the
//! check that a trace can stand as the extrapolation of given inputs (`iotrex report
//! --extrap`). The notes say the same for people and keep their text.

use rsd::{Header, Op, Provenance};
use std::collections::BTreeSet;

/// The start of the header note of an extrapolated trace; the note goes on
/// `"<scales> ranks to <target> by iotrex extrap; ..."` ([`note`]).
const PREFIX: &str = "extrapolated from ";

/// The header note of a trace extrapolated from `scales` to `target` ranks.
pub fn note(scales: &[u32], target: u32) -> String {
    let list = scales
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    format!("{PREFIX}{list} ranks to {target} by iotrex extrap; timing is predicted, not measured")
}

/// Says in `h` that its trace was extrapolated from `scales` to `target` ranks: the typed
/// field, replacing whatever the input it was copied from said, and the note.
pub(crate) fn start(h: &mut Header, scales: &[u32], target: u32) {
    h.provenance = Some(Provenance::new(scales, target));
    h.notes.push(note(scales, target));
}

/// The provenance an extrapolation's passes add to: the one [`start`] put in `h`.
pub(crate) fn of_mut(h: &mut Header) -> &mut Provenance {
    h.provenance.get_or_insert_with(Provenance::default)
}

/// How the trace of `h` was extrapolated, or `None` when it says it was not (a traced or
/// synthetic trace). The header's field where it has one; for a trace written before the
/// field existed, what its notes say ([`from_notes`]). Only the ops extrapolation sets aside
/// (MPI's local queries, directory listings) are taken as set aside, whatever the file says:
/// `diff` would otherwise leave real calls out.
pub fn of(h: &Header) -> Option<Provenance> {
    let mut p = h.provenance.clone().or_else(|| from_notes(&h.notes))?;
    p.set_aside.retain(|o| o.may_be_set_aside());
    Some(p)
}

/// The provenance the notes of an extrapolation written before the header's field say, or
/// `None` when no note says any. Kept for those older files only: every other reader takes
/// [`of`].
fn from_notes(notes: &[String]) -> Option<Provenance> {
    let (scales, target) = notes.iter().find_map(|n| scales_in_note(n)).unzip();
    let set_aside: BTreeSet<Op> = crate::local::ops_in_notes(notes);
    let made_up = crate::mpi::derive::made_up_sites(notes);
    let dropped = notes
        .iter()
        .find_map(|n| crate::consistent::dropped_in_note(n));
    let oracle_layout = notes.iter().any(|n| n == crate::hdf5::space::NOTE);
    let said = scales.is_some() || dropped.is_some() || oracle_layout;
    if !said && set_aside.is_empty() && made_up.is_empty() {
        return None;
    }
    let mut p = Provenance::new(&scales.unwrap_or_default(), target.unwrap_or(0));
    p.dropped = dropped.unwrap_or_default();
    p.set_aside = set_aside.into_iter().collect();
    p.add_made_up_sites(made_up);
    p.oracle_layout = oracle_layout;
    Some(p)
}

/// The scales and the target the note [`note`] names.
fn scales_in_note(n: &str) -> Option<(Vec<u32>, u32)> {
    let (list, rest) = n.strip_prefix(PREFIX)?.split_once(" ranks to ")?;
    let target = rest.split_once(' ')?.0.parse().ok()?;
    let scales: Option<Vec<u32>> = list.split(',').map(|s| s.trim().parse().ok()).collect();
    Some((scales?, target))
}

/// The rank counts a trace was extrapolated from, or `None` when its header does not say it
/// was extrapolated (a traced or synthetic trace).
pub fn source_scales(h: &Header) -> Option<Vec<u32>> {
    of(h).map(|p| p.scales).filter(|s| !s.is_empty())
}

/// Why a trace given as the extrapolation of some inputs cannot be one.
#[derive(Debug, thiserror::Error)]
pub enum ProvenanceError {
    /// It was extrapolated from rank counts the inputs do not have.
    #[error("{output} was extrapolated from {made} ranks, but the inputs given have {given} ranks")]
    OtherScales {
        /// The trace.
        output: String,
        /// The scales it was made from.
        made: String,
        /// The inputs' scales.
        given: String,
    },
    /// It is of another program or build than an input.
    #[error("{output} and {input} are not of the same program: {why}")]
    OtherProgram {
        /// The trace.
        output: String,
        /// The input.
        input: String,
        /// What differs.
        why: String,
    },
}

/// Checks that `output` can stand as the extrapolation of `inputs` (by name and file): no
/// input is of another program or build, and when its header says it was extrapolated, every
/// rank count it was made from is one of the inputs' (inputs left out by
/// `--drop-inconsistent` may be given too). A traced run of the same program at another scale
/// passes: the report then draws the inputs' models through to a real run.
pub fn check_made_from(
    output: (&str, &rsd::TraceFile),
    inputs: &[(&str, &rsd::TraceFile)],
) -> Result<(), ProvenanceError> {
    let (name, out) = output;
    for (input, f) in inputs {
        if let Some(why) = out.header.origin_differs(&f.header) {
            return Err(ProvenanceError::OtherProgram {
                output: name.to_string(),
                input: input.to_string(),
                why,
            });
        }
    }
    let Some(made) = source_scales(&out.header) else {
        return Ok(());
    };
    let mut given: Vec<u32> = inputs.iter().map(|(_, f)| f.header.nranks).collect();
    given.sort_unstable();
    given.dedup();
    if !made.iter().all(|n| given.contains(n)) {
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        return Err(ProvenanceError::OtherScales {
            output: name.to_string(),
            made: list(&made),
            given: list(&given),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_reads_back() {
        let mut h = Header::new(1024);
        assert_eq!(source_scales(&h), None);
        h.notes.push("something else".into());
        h.notes.push(note(&[4, 8, 12, 16], 1024));
        assert_eq!(source_scales(&h), Some(vec![4, 8, 12, 16]));
    }

    /// What each pass writes, read back from the typed field and, for a trace of the older
    /// minor version (no field), from the notes alone: the same.
    #[test]
    fn the_field_and_the_notes_say_the_same() {
        let mut h = Header::new(64);
        h.notes.push("HDF5 library 1.14.2".into());
        start(&mut h, &[4, 8, 16], 64);
        let ops: BTreeSet<Op> = [Op::CommSize, Op::CartShift].into();
        crate::local::mark_set_aside(&mut h, &ops);
        crate::consistent::mark_dropped(&mut h, &[4, 8, 16], &[12, 20], "they differ at node 3");
        crate::mpi::derive::record_made_up_for_tests(&mut h);
        crate::hdf5::space::mark_from_oracle(&mut h);
        let p = of(&h).expect("extrapolated");
        assert_eq!(p.scales, [4, 8, 16]);
        assert_eq!(p.target, 64);
        assert_eq!(p.dropped, [12, 20]);
        assert_eq!(p.set_aside, ops.into_iter().collect::<Vec<_>>());
        assert_eq!(p.made_up_sites.len(), 2);
        assert!(p.oracle_layout);
        let mut old = h.clone();
        old.provenance = None;
        assert_eq!(of(&old), Some(p));
        // A traced trace says nothing; a forged op is not taken as set aside.
        assert_eq!(of(&Header::new(4)), None);
        let mut forged = h.clone();
        of_mut(&mut forged).set_aside.push(Op::Pwrite);
        assert_eq!(of(&forged), of(&h));
    }
}
