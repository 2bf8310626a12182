//! Library calls above MPI-IO (HDF5, PnetCDF) are containers: their children are the MPI, MPI-IO and
//! POSIX calls the library made. The models of the libraries below (the collective
//! buffering's nested calls, HDF5's dealt metadata writes) and the structure's alignment work
//! on the calls themselves, so extrapolation and diff see each container followed by what it
//! made ([`rsd::Trace::lift_containers`]); the container's own parameters (dataset
//! dimensions, hyperslabs, element counts) are fitted as any call's. The output keeps that
//! lifted form and says so in its notes.

use crate::Input;
use rsd::TraceFile;

/// The note an extrapolation from traces with containers carries.
pub const NOTE: &str = "HDF5 calls and PnetCDF calls (the libraries above MPI-IO) are followed \
     by the MPI, MPI-IO and POSIX calls they made (lifted out of them for the extrapolation): \
     their durations include those calls'";

/// `inputs` with their containers lifted, or `None` when no input has one.
pub fn lifted(inputs: &[Input]) -> Option<Vec<Input>> {
    if !inputs.iter().any(|i| i.file.trace.has_containers()) {
        return None;
    }
    Some(
        inputs
            .iter()
            .map(|i| Input {
                name: i.name.clone(),
                file: lifted_file(&i.file),
            })
            .collect(),
    )
}

/// `f` with its containers lifted.
pub fn lifted_file(f: &TraceFile) -> TraceFile {
    let mut f = f.clone();
    f.trace.lift_containers();
    f
}

/// Adds [`NOTE`] to an extrapolated trace once.
pub fn note(f: &mut TraceFile) {
    if !f.header.notes.iter().any(|n| n == NOTE) {
        f.header.notes.push(NOTE.to_string());
    }
}
