//! Where an extrapolated trace came from, as data ([`Provenance`], the header's `provenance`):
//! what its consumers (`diff`, the report, the extrapolation's own last passes) need to know
//! about how it was made. The header's notes say the same for people; before minor version
//! 8 they were all there was, and `extrap::provenance::of` reads them for such traces.

use crate::op::Op;
use serde::{Deserialize, Serialize};

/// How `iotrex extrap` made a trace. Stored as the header's last field (minor version 8);
/// `None` in a traced or synthetic trace and in an extrapolation written before the field.
///
/// Stored as a MessagePack array in field order, like the header: a field added later goes
/// at the end with `#[serde(default)]` and a new minor version, so that files without it
/// keep their bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The rank counts the trace was extrapolated from, increasing (one per scale: repeated
    /// runs of a scale count once).
    pub scales: Vec<u32>,
    /// The rank count it was extrapolated to.
    pub target: u32,
    /// Rank counts given as inputs but left out because their structure differed from the
    /// scales used (`--drop-inconsistent`), increasing.
    pub dropped: Vec<u32>,
    /// MPI local queries set aside in every input, their counts following the program's data
    /// rather than the scale: `diff` sets them aside on both sides.
    pub set_aside: Vec<Op>,
    /// Call sites of nested calls the model of the MPI library's collective buffering made up
    /// (a path of the library no input took there), increasing: `diff` compares the calls
    /// without them.
    pub made_up_sites: Vec<u64>,
    /// Whether HDF5's file space (its metadata entries and the file's layout values its calls
    /// see) was taken from the HDF5 oracle's replay at the target rather than fitted.
    pub oracle_layout: bool,
}

impl Provenance {
    /// The provenance of a trace extrapolated from `scales` to `target` ranks, nothing else
    /// said yet.
    pub fn new(scales: &[u32], target: u32) -> Provenance {
        Provenance {
            scales: scales.to_vec(),
            target,
            ..Provenance::default()
        }
    }

    /// Adds `sites` to the made-up call sites, keeping them increasing and distinct.
    pub fn add_made_up_sites(&mut self, sites: impl IntoIterator<Item = u64>) {
        self.made_up_sites.extend(sites);
        self.made_up_sites.sort_unstable();
        self.made_up_sites.dedup();
    }
}
