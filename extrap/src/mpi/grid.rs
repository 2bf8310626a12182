//! Process grids in the extrapolation: the grid models (`models::grid`: Open MPI's
//! `MPI_Dims_create` factorisation, row-major coordinates, periodic shifts) take only the
//! dimension counts the program asked `MPI_Dims_create` for ([`grid_ndims`]), and an output
//! whose grid at the target is not the library's is refused ([`check_grids`]).

use crate::error::ExtrapError;
use crate::library::{Handoff, Inner, LibraryModel, Stage};
use crate::pipeline::PassId;
use crate::request::Cx;
use crate::{Extrapolated, Input};
use rsd::trace::{Node, NodeKind};

/// The MPI library's process grids as a library model: the models everything inside is
/// fitted with take the program's grids ([`grid_ndims`]), and the output's grids are checked
/// at the target ([`check_grids`]).
pub(crate) struct ProcessGrids;

/// What [`ProcessGrids`] hands on: only that it acted, so that a second pass of the library
/// models (on the group `consistent` keeps) does not narrow and check again.
struct Narrowed;

impl Handoff for Narrowed {
    fn by(&self) -> PassId {
        PassId::Grids
    }
}

impl LibraryModel for ProcessGrids {
    fn id(&self) -> Option<PassId> {
        Some(PassId::Grids)
    }

    fn around(
        &self,
        cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        // The grid models take the dimension counts the program asked MPI_Dims_create for.
        let ndims = grid_ndims(inputs);
        let models = cx.models.for_grids(&ndims);
        let cx = Cx {
            models: &models,
            ..cx
        };
        let mut out = stage.with(&Narrowed, |stage| inner(cx, inputs, stage))?;
        if !ndims.is_empty() {
            check_grids(inputs, &out)?;
            out.acted(PassId::Grids);
        }
        Ok(out)
    }
}

/// The dimension counts the inputs' programs asked `MPI_Dims_create` for (any rank, any
/// depth): the only grids the grid models may take ([`models::ModelSet::for_grids`]).
pub(crate) fn grid_ndims(inputs: &[Input]) -> Vec<usize> {
    // The grid models are Open MPI's factorisation (`models::grid`); MPICH balances by
    // another search.
    let open_mpi = |i: &Input| {
        i.file
            .header
            .mpi_config
            .as_ref()
            .is_some_and(|c| c.library.starts_with("Open MPI"))
    };
    let mut out = Vec::new();
    if !inputs.iter().all(open_mpi) {
        return out;
    }
    let mut calls = Vec::new();
    for i in inputs {
        dims_calls(&i.file.trace.nodes, false, &mut calls);
    }
    let at = rsd::Op::DimsCreate
        .params()
        .iter()
        .position(|p| *p == rsd::Param::Ndims);
    for (e, _) in calls {
        let Some(p) = at.and_then(|k| e.params.get(k)) else {
            continue;
        };
        for g in &p.groups {
            let d = g.ranks.first().and_then(|r| p.eval(r, &[]));
            if let Some(d) = d.and_then(|d| usize::try_from(d).ok())
                && !out.contains(&d)
            {
                out.push(d);
            }
        }
    }
    out
}

/// The first rank of a node's first value group (who makes the call), and the values of the
/// event's parameters there, outside any loop.
fn values_at_first_rank(e: &rsd::trace::Event) -> Option<Vec<i64>> {
    let r = e.params.first()?.groups.first()?.ranks.first()?;
    e.params.iter().map(|p| p.eval(r, &[])).collect()
}

/// Each `MPI_Dims_create` call of `nodes` (at any depth), and whether it is inside a loop
/// (`in_loop`: the enclosing nodes are).
fn dims_calls<'a>(nodes: &'a [Node], in_loop: bool, out: &mut Vec<(&'a rsd::trace::Event, bool)>) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) if e.op == rsd::Op::DimsCreate => out.push((e, in_loop)),
            NodeKind::Event(e) => dims_calls(&e.children, in_loop, out),
            NodeKind::Loop(l) => dims_calls(&l.body, true, out),
        }
    }
}

/// Refuses an extrapolation whose `MPI_Dims_create` calls do not return, at the target, the
/// grid the library's factorisation gives (`models::grid::dims_create`): a dimension that is
/// the same at every input scale (`dims(n, 3)[1]` is 2 from 4 to 16 ranks, 4 at 32) is fitted
/// as a constant, and so is every value that follows it (a global extent `L * dims[1]`),
/// which no model can tell from a real constant. Only calls outside loops where the program
/// asked for a free grid (every entry 0), and only where the grid models are on (Open MPI:
/// [`grid_ndims`]).
pub(crate) fn check_grids(inputs: &[Input], out: &Extrapolated) -> Result<(), ExtrapError> {
    let target = out.file.header.nranks;
    let mut calls = Vec::new();
    dims_calls(&out.file.trace.nodes, false, &mut calls);
    let op = rsd::Op::DimsCreate;
    for (e, in_loop) in calls {
        let Some(v) = values_at_first_rank(e).filter(|_| !in_loop) else {
            continue;
        };
        let sig = e.sig;
        let (Ok(nd), Some(given), Some(got)) = (
            usize::try_from(op.param(&v, rsd::Param::Ndims)),
            op.array_values(&v, "given"),
            op.array_values(&v, "dims"),
        ) else {
            continue;
        };
        if got.len() != nd || given.iter().any(|&g| g != 0) {
            continue;
        }
        let Some(want) = models::grid::dims_create(i64::from(target), nd) else {
            continue;
        };
        let Some(i) = (0..nd).find(|&i| got[i] != want[i]) else {
            continue;
        };
        // Scales at which that dimension moves from the inputs' value towards the target's:
        // tracing some of them lets the models see it change.
        let seen: Vec<u32> = inputs.iter().map(|i| i.file.header.nranks).collect();
        let least = seen.iter().copied().min().unwrap_or(2);
        let helpful: Vec<String> = (least..=target.min(4096))
            .filter(|n| !seen.contains(n))
            .filter(|&n| {
                // On the way to the target's value, not a degenerate grid (a prime's).
                models::grid::dims_create(i64::from(n), nd)
                    .is_some_and(|d| (d[i] > got[i]) == (want[i] > got[i]) && d[i] != got[i])
            })
            .take(4)
            .map(|n| n.to_string())
            .collect();
        let mut scales: Vec<u32> = seen.clone();
        scales.sort_unstable();
        scales.dedup();
        return Err(ExtrapError::GridUnseen {
            event: crate::error::Site::call(op, sig),
            ndims: nd,
            dimension: i,
            seen: got[i],
            at_target: want[i],
            target,
            grid: want,
            scales,
            hint: format!(
                "trace scales at which dimension {i} of the grid changes, such as {} ranks",
                helpful.join(", ")
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{Input, PassId, Request, run};
    use rsd::op::Op;
    use rsd::trace::RawEvent;

    /// Every rank asks `MPI_Dims_create` for a free 2-D grid of the world at 4, 8, 12 and 16
    /// ranks, and gets the library's answer (Open MPI's factorisation), under `library`.
    fn inputs(library: &str) -> Vec<Input> {
        [4u32, 8, 12, 16]
            .iter()
            .map(|&n| {
                let d = models::grid::dims_create(i64::from(n), 2).unwrap();
                let call = vec![i64::from(n), 2, 0, 0, d[0], d[1]];
                let ranks = (0..n)
                    .map(|r| {
                        let mut c = rsd::Compressor::new(r);
                        c.push(&RawEvent::new(Op::DimsCreate, 1, call.clone()));
                        c.finish()
                    })
                    .collect();
                let mut header = rsd::Header::new(n);
                header.command = vec!["grid".into()];
                header.mpi_config = Some(rsd::MpiConfig {
                    library: library.into(),
                    ..Default::default()
                });
                Input {
                    name: format!("grid.{n}.iotrex"),
                    file: rsd::TraceFile {
                        header,
                        trace: rsd::merge_tree(ranks).unwrap(),
                    },
                }
            })
            .collect()
    }

    /// Under Open MPI the grid models take the program's 2-D grid: the target's grid is the
    /// library's (8 x 8 at 64 ranks, where the inputs' first dimension stopped at 4), and the
    /// pass says it acted.
    #[test]
    fn open_mpis_grids_are_modelled_at_the_target() {
        let x = run(&Request::new(64), &inputs("Open MPI v4.1.4")).unwrap();
        assert!(x.passes.contains(&PassId::Grids), "{:?}", x.passes);
        let events = x.file.trace.rank_events(0);
        let dims = Op::DimsCreate.array_values(&events[0].params, "dims");
        assert_eq!(dims, Some(&[8, 8][..]), "{events:?}");
    }

    /// Another library factorises by its own search: the grid models stay off.
    #[test]
    fn another_librarys_grids_get_no_grid_model() {
        match run(&Request::new(64), &inputs("MPICH Version: 4.0.2")) {
            Ok(x) => assert!(!x.passes.contains(&PassId::Grids), "{:?}", x.passes),
            Err(e) => assert!(e.to_string().contains("MPI_Dims_create"), "{e}"),
        }
    }
}
