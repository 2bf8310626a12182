//! Offsets held as prefix sums of sizes ([`rsd::prefix`]) where extrapolation needs every
//! rank's values: the model of the MPI library's collective buffering reads each rank's byte
//! regions, and `diff` compares each rank's calls. Fitting itself keeps the model: its start is
//! fitted like any value, and at the target the offsets are the prefix sums of the target's
//! sizes.

use rsd::TraceFile;
use std::borrow::Cow;

/// `tf` with every prefix-sum offset replaced by each rank's exact offsets (borrowed as it is
/// when it holds none).
pub(crate) fn resolved(tf: &TraceFile) -> Cow<'_, TraceFile> {
    if !rsd::prefix::present(&tf.trace) {
        return Cow::Borrowed(tf);
    }
    let mut t = tf.clone();
    rsd::prefix::resolve(&mut t.trace);
    Cow::Owned(t)
}

/// Runs `f` on `tf` with its prefix-sum offsets resolved, then recognises them again (`f`
/// re-compresses every rank, which turns them back into per-rank values), when `tf` held any.
pub(crate) fn keeping_model<T>(tf: &mut TraceFile, f: impl FnOnce(&mut TraceFile) -> T) -> T {
    let had = rsd::prefix::present(&tf.trace);
    // The files whose offsets are at the end of the file so far: at a target their sizes may
    // be summaries, which recognition on the inputs' exact values would not take.
    let at_end = rsd::layout::files(&tf.trace);
    if had {
        rsd::prefix::resolve(&mut tf.trace);
    }
    let out = f(tf);
    if had {
        rsd::prefix::recognise(&mut tf.trace);
        if !at_end.is_empty() {
            rsd::layout::recognise_again(&mut tf.trace, &at_end);
        }
    }
    out
}

/// The inputs with their values that are prefix sums over the ranks recognised
/// ([`rsd::prefix::recognise`]), where the tracer did not (traces of an older tracer, or
/// models it does not look for): a value the ranks compute from the data (an `MPI_Exscan` of
/// particle counts) has no model of n, its prefix-sum model does; borrowed as they are when
/// nothing is recognised.
pub(crate) fn recognised<'a>(inputs: &[&'a crate::Input]) -> Vec<Cow<'a, crate::Input>> {
    inputs
        .iter()
        .map(|i| {
            let mut t = i.file.trace.clone();
            if rsd::prefix::recognise(&mut t).is_empty() {
                Cow::Borrowed(*i)
            } else {
                Cow::Owned(crate::Input {
                    name: i.name.clone(),
                    file: TraceFile {
                        header: i.file.header.clone(),
                        trace: t,
                    },
                })
            }
        })
        .collect()
}
