//! Library calls above MPI-IO (HDF5) are containers: their children are the MPI, MPI-IO and
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

use crate::Input;
use rsd::TraceFile;
use rsd::trace::Lifts;

/// The note an extrapolation from traces with containers carries when it keeps the lifted
/// form.
pub const NOTE: &str = "HDF5 calls are followed by the MPI, MPI-IO and POSIX calls they made \
     (lifted out of them for the extrapolation): their durations include those calls'";

/// The note of an extrapolation whose containers were nested again.
pub const NESTED: &str = "HDF5 calls were extrapolated with the MPI, MPI-IO and POSIX calls \
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
pub fn nest_again(f: &mut TraceFile, lifts: &Lifts) {
    let note = match f.trace.nest_lifted(lifts) {
        Ok(_) => NESTED.to_string(),
        Err(why) => format!("{NOTE} (not nested again: {why})"),
    };
    if !f.header.notes.contains(&note) {
        f.header.notes.push(note);
    }
}
