//! One number per input scale, fitted exactly against the rank count and evaluated at the
//! target: the library models (HDF5's dealt writes and flushes, its chunk index) size what
//! they put back at the target this way. Apart from the fitter's walk over the trace, which
//! fits rank sets and rank functions.

use crate::Explain;
use crate::error::{ExtrapError, Guess, Quantity, Reason, Site};
use models::ModelSet;
use models::exact::{Agreement, Point, Vars, agree, fit_exact};

/// The exact models of n that fit one number per scale (`ys` at `ns` ranks), evaluated at
/// `target`, and whether they agree there.
pub(crate) fn agree_at<'m>(
    ns: &[i64],
    ys: &[i64],
    target: u32,
    models: &'m ModelSet,
) -> Agreement<'m, i64> {
    let pts: Vec<Point> = ns
        .iter()
        .zip(ys)
        .map(|(&n, &y)| Point {
            n,
            ppn: 0,
            rank: 0,
            y,
        })
        .collect();
    agree(fit_exact(&models.models, Vars::N, &pts), |f| {
        f.eval(i64::from(target), 0)
    })
}

/// One number per scale fitted exactly against n and evaluated at `target` (a constant when
/// it does not vary); a varying one is explained.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_number(
    ns: &[i64],
    ys: &[i64],
    target: u32,
    models: &ModelSet,
    event: &Site,
    what: &str,
    param: Quantity,
    explain: &mut Vec<Explain>,
) -> Result<i64, ExtrapError> {
    if ys.iter().all(|&y| y == ys[0]) {
        return Ok(ys[0]);
    }
    let part = format!("{param} of {what}");
    let refuse = |reason: Reason| {
        let values = ns
            .iter()
            .zip(ys)
            .map(|(n, y)| format!("{y} at {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let tried = models.names(Vars::N).join(", ");
        let hint = "trace one more scale so fewer models fit, or load a model plugin (--plugin \
                    lib.so) that expresses this pattern"
            .into();
        ExtrapError::refused(event.clone(), param.clone(), reason, (values, tried, hint))
    };
    match agree_at(ns, ys, target, models) {
        Agreement::Agree(f, v) => {
            explain.push(Explain {
                event: event.to_string(),
                quantity: part,
                model: f.describe(),
                curve: None,
            });
            Ok(v)
        }
        Agreement::Disagree { first, second } => Err(refuse(Reason::ModelsDisagree {
            part,
            target: i64::from(target),
            first: Guess::of(&first),
            second: Guess::of(&second),
        })),
        Agreement::None => Err(refuse(Reason::FitsNoModel { part })),
    }
}
