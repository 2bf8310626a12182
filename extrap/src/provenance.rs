//! What an extrapolated trace says about where it came from: the note `iotrex extrap` writes
//! in its header, written and read here only, and the check that a trace can stand as the
//! extrapolation of given inputs (`iotrex report --extrap`).

use rsd::Header;

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

/// The rank counts a trace was extrapolated from, or `None` when its header does not say it
/// was extrapolated (a traced or synthetic trace).
pub fn source_scales(h: &Header) -> Option<Vec<u32>> {
    h.notes.iter().find_map(|n| {
        let list = n.strip_prefix(PREFIX)?.split_once(" ranks to ")?.0;
        list.split(',').map(|s| s.trim().parse().ok()).collect()
    })
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
}
