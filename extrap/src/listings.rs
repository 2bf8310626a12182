//! Directory listings, whose lengths follow the directory's contents, not the scale.
//!
//! A program that lists a directory (its inputs, a restart file's presence, Python's import
//! system over the script's own directory) calls `readdir` once per entry. What the directory
//! holds when a run looks is the environment's: files earlier runs, the traces of other
//! scales or other jobs left there. At each scale the listing is as long as it happened to
//! be, and no model of the rank count fits the loop's count. Where an extrapolation is
//! refused on a listing, the listings are set aside in every input (their time goes into
//! the next call's gap, as [`crate::local`] does for MPI's local queries) and the
//! extrapolation tried again; the output's provenance and [`NOTE`] say so, and `diff` sets
//! them aside on both sides. A listing the same at every scale is extrapolated like any
//! loop: nothing is set aside where nothing stops the fit. One whose length follows the scale
//! (a directory of one file per rank) is set aside too: its `ret`, one for each entry and
//! zero at the end, is a list whose length changes, which no value model fits yet.

use crate::error::{ExtrapError, Site};
use crate::{Explain, Extrapolated, Input};
use rsd::Op;
use std::collections::BTreeSet;

/// The note of an extrapolation that set the listings aside.
pub const NOTE: &str = "directory listings set aside (readdir): their lengths follow what each \
                        directory held when the run looked, not the rank count (their time is \
                        in the next call's gap)";

/// Whether `e` refuses a directory listing: a call of one, or a loop that starts with one.
pub(crate) fn refused(e: &ExtrapError) -> bool {
    let ExtrapError::Refused { event, .. } = e else {
        return false;
    };
    lists(event)
}

fn lists(s: &Site) -> bool {
    match s {
        Site::Event { op, .. } => op.lists_directory(),
        Site::Loop { first: Some(f) } => lists(f),
        _ => false,
    }
}

/// `inputs` without their directory listings; `None` where one cannot be re-compressed.
pub(crate) fn without(inputs: &[Input]) -> Option<Vec<Input>> {
    let in_place = crate::ranks::any_summary(inputs.iter().map(|i| &i.file));
    crate::local::all_without(None, inputs, &listing_ops(), in_place)
}

/// Says in `x` that the listings were set aside: provenance, note, `--explain`.
pub(crate) fn mark(x: &mut Extrapolated) {
    crate::local::add_set_aside(&mut x.file.header, &listing_ops());
    x.file.header.notes.push(NOTE.to_string());
    x.explain.insert(
        0,
        Explain {
            event: "directory listings".into(),
            quantity: "calls".into(),
            model: "set aside: readdir (their lengths differ between scales without a \
                    pattern of the rank count: what the directories held; no message or file \
                    data is lost)"
                .into(),
            curve: None,
        },
    );
}

fn listing_ops() -> BTreeSet<Op> {
    Op::ALL
        .iter()
        .copied()
        .filter(|o| o.lists_directory())
        .collect()
}
