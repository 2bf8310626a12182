//! The plan: which of rank 0's HDF5 calls the oracle replays, in order, as recorded.

use rsd::RawEvent;
use rsd::op::{Layer, Op, Param};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use thiserror::Error;

/// One HDF5 call of rank 0 that the oracle replays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Its index among rank 0's HDF5-layer calls: every event whose op's layer is HDF5,
    /// depth first in call order, nested ones included (NetCDF calls contain HDF5 calls),
    /// counting the ones not replayed too.
    pub at: usize,
    /// The call.
    pub op: Op,
    /// The event's path: a file's name, or an object's name relative to its `loc`.
    pub name: Option<String>,
    /// The parameters as recorded ([`rsd::op`]'s HDF5 section): the fixed ones, then the
    /// arrays (dimensions), with the trace's identifiers (indices in rank 0's table).
    pub params: Vec<i64>,
    /// A NetCDF step's HDF5 calls, as the traced call made them (depth first, in call
    /// order): each one's index among rank 0's HDF5 calls and its op. The replay must make
    /// the same ops; its HDF5 calls then stand for these. Empty for an HDF5 step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inner: Vec<(usize, Op)>,
}

impl Step {
    /// Parameter `p` of this step (0 when its op has none: [`Op::param`]).
    pub fn p(&self, p: Param) -> i64 {
        self.op.get(&self.params, p).unwrap_or(0)
    }

    /// The values after the fixed parameters (the dimension arrays).
    pub fn arrays(&self) -> &[i64] {
        self.params.get(self.op.params().len()..).unwrap_or(&[])
    }

    /// How errors name this step: `HDF5 call 7 (H5Dcreate2 rows)`, `NetCDF call 4 (nc_def_var
    /// rec)`.
    pub fn describe(&self) -> String {
        describe(self.at, self.op, self.name.as_deref())
    }
}

impl Plan {
    /// Whether the plan replays NetCDF calls (the HDF5 calls beneath them are NetCDF's).
    pub fn is_netcdf(&self) -> bool {
        self.steps
            .first()
            .is_some_and(|s| s.op.layer() == Layer::Netcdf)
    }
}

/// The calls the oracle replays, and the HDF5 version the trace was taken with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The version of the HDF5 library the trace's calls ran on (`1.10.8`, from the trace
    /// header's note), which the oracle's library must have: another version may lay the
    /// file out otherwise.
    pub hdf5_version: Option<String>,
    /// The replayed calls, in call order.
    pub steps: Vec<Step>,
}

/// Why rank 0's calls cannot be replayed. Each names the call at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlanError {
    /// An HDF5 call the oracle has no replay for (and does not know to be irrelevant to the
    /// file's layout).
    #[error(
        "{call}: the HDF5 oracle cannot replay {op}: it replays the calls that decide a file's layout (files, groups, dataspaces, datasets, extents, chunking, attributes) and leaves out transfers, selections and queries; {op} is neither"
    )]
    Unsupported {
        /// The call.
        call: String,
        /// Its op's name.
        op: &'static str,
    },
    /// `H5Fopen` of a file the plan did not create.
    #[error(
        "{call} opens a file the trace did not create before: the HDF5 oracle replays only files it creates itself (it would need the file's contents otherwise)"
    )]
    OpenOfUnknownFile {
        /// The call.
        call: String,
    },
    /// A call that names a file or object recorded without a name.
    #[error("{call} has no name in the trace: the HDF5 oracle cannot replay it")]
    NoName {
        /// The call.
        call: String,
    },
    /// A call whose identifier argument the oracle does not have.
    #[error(
        "{call}: its {param} is identifier {id}, which {why}: the HDF5 oracle cannot replay it"
    )]
    Identifier {
        /// The call.
        call: String,
        /// The parameter's name (`loc`, `space`, ...).
        param: &'static str,
        /// The trace's identifier.
        id: i64,
        /// Where it came from.
        why: String,
    },
    /// An HDF5 call outside every NetCDF call, in a program that calls NetCDF.
    #[error(
        "{call} is an HDF5 call of the program's own beside its NetCDF calls: the HDF5 oracle replays a NetCDF program through libnetcdf (NetCDF makes HDF5 calls the trace does not hold), which would not make this one"
    )]
    OutsideNetcdf {
        /// The call.
        call: String,
    },
    /// A NetCDF attribute of a type whose values have no fixed size.
    #[error(
        "{call}: an attribute of nc_type {xtype}, whose values have no fixed size (strings, user-defined types): the trace does not hold their bytes, which decide the attribute's room in the file"
    )]
    AttributeType {
        /// The call.
        call: String,
        /// Its `xtype`.
        xtype: i64,
    },
    /// A call whose dimension arrays do not have the length its `ndims` says.
    #[error("{call}: {got} dimension values recorded where ndims = {ndims} asks for {want}")]
    Dimensions {
        /// The call.
        call: String,
        /// Its `ndims`.
        ndims: i64,
        /// Values expected.
        want: usize,
        /// Values recorded.
        got: usize,
    },
}

/// `HDF5 call 7 (H5Dcreate2 rows)`, `NetCDF call 4 (nc_def_var rec)`.
fn describe(at: usize, op: Op, name: Option<&str>) -> String {
    let layer = if op.layer() == Layer::Netcdf {
        "NetCDF"
    } else {
        "HDF5"
    };
    match name {
        Some(n) => format!("{layer} call {at} ({} {n})", op.name()),
        None => format!("{layer} call {at} ({})", op.name()),
    }
}

/// What the oracle does with an HDF5 call.
enum Role {
    /// Replayed.
    Replay,
    /// Left out: it moves data, selects, queries or sets a transfer property, none of which
    /// changes where HDF5 allocates anything (parallel HDF5 allocates a dataset's storage
    /// when it is created or extended, not when it is written).
    Skip,
}

fn role(op: Op) -> Option<Role> {
    Some(match op {
        Op::H5PsetFaplMpio
        | Op::H5Fcreate
        | Op::H5Fopen
        | Op::H5Fclose
        | Op::H5Fflush
        | Op::H5ScreateSimple
        | Op::H5PsetChunk
        | Op::H5Dcreate2
        | Op::H5Dopen2
        | Op::H5Dclose
        | Op::H5DsetExtent
        | Op::H5Acreate2
        | Op::H5Awrite
        | Op::H5Aclose
        | Op::H5Gcreate2
        | Op::H5Gclose => Role::Replay,
        Op::H5Dwrite
        | Op::H5Dread
        | Op::H5SselectHyperslab
        | Op::H5SselectElements
        | Op::H5SselectAll
        | Op::H5SselectNone
        | Op::H5DgetSpace
        | Op::H5Sclose
        | Op::H5PsetDxplMpio => Role::Skip,
        // A query (`H5Sget_simple_extent_dims`, `H5Tget_size`, `H5Pget_*`,
        // `H5get_libversion`) changes nothing, whatever HDF5 call a later tracer records.
        _ if is_query(op.name()) => Role::Skip,
        _ => return None,
    })
}

/// Whether an HDF5 function name is a query: `H5get_libversion`, `H5Xget_*`.
fn is_query(name: &str) -> bool {
    name.strip_prefix("H5")
        .map(|rest| rest.trim_start_matches(|c: char| c.is_ascii_uppercase()))
        .is_some_and(|rest| rest.starts_with("get_"))
}

/// Where an identifier of rank 0's table came from.
#[derive(Clone)]
enum Made {
    /// A replayed call (its `at`): the oracle has it.
    Replayed,
    /// A call the oracle leaves out (`H5Dget_space`): the oracle does not have it.
    Skipped { call: String },
}

/// The identifiers of rank 0's table, as the calls go.
#[derive(Default)]
struct Ids {
    made: HashMap<i64, Made>,
}

impl Ids {
    /// Checks that parameter `param` of `e` names an identifier a replayed call made.
    fn used(&self, e: &RawEvent, call: &str, param: Param) -> Result<(), PlanError> {
        let id = e.op.get(&e.params, param).unwrap_or(-1);
        let why = match self.made.get(&id) {
            Some(Made::Replayed) => return Ok(()),
            Some(Made::Skipped { call }) => {
                format!("{call} made, a call the oracle does not replay")
            }
            None if id < 0 => "no traced call returned".to_string(),
            None => "no call before it made (or it was closed)".to_string(),
        };
        Err(PlanError::Identifier {
            call: call.to_string(),
            param: param.name(),
            id,
            why,
        })
    }

    /// Records the identifier parameter `param` of `e` holds as made by `how`.
    fn make(&mut self, e: &RawEvent, param: Param, how: Made) {
        if let Some(id) = e.op.get(&e.params, param).filter(|&id| id >= 0) {
            self.made.insert(id, how);
        }
    }

    /// Frees the identifier parameter `param` of `e` holds (the lowest free slot is reused).
    fn close(&mut self, e: &RawEvent, param: Param) {
        if let Some(id) = e.op.get(&e.params, param) {
            self.made.remove(&id);
        }
    }
}

/// The identifier a creating op returns, or `None` for ops that create nothing.
fn created(op: Op) -> Option<Param> {
    match op {
        Op::H5Fcreate | Op::H5Fopen => Some(Param::H5File),
        Op::H5ScreateSimple | Op::H5DgetSpace => Some(Param::Space),
        Op::H5Dcreate2 | Op::H5Dopen2 => Some(Param::Dset),
        Op::H5Acreate2 => Some(Param::Attr),
        Op::H5Gcreate2 => Some(Param::Group),
        _ => None,
    }
}

/// The identifier arguments a replayed op uses (the closed one included).
fn uses(op: Op) -> &'static [Param] {
    match op {
        Op::H5Fclose => &[Param::H5File],
        Op::H5Fflush | Op::H5Dopen2 | Op::H5Gcreate2 => &[Param::Loc],
        Op::H5Dcreate2 | Op::H5Acreate2 => &[Param::Loc, Param::Space],
        Op::H5Dclose | Op::H5DsetExtent => &[Param::Dset],
        Op::H5Awrite | Op::H5Aclose => &[Param::Attr],
        Op::H5Gclose => &[Param::Group],
        _ => &[],
    }
}

/// The identifier a closing op frees.
fn closed(op: Op) -> Option<Param> {
    match op {
        Op::H5Fclose => Some(Param::H5File),
        Op::H5Dclose => Some(Param::Dset),
        Op::H5Aclose => Some(Param::Attr),
        Op::H5Gclose => Some(Param::Group),
        Op::H5Sclose => Some(Param::Space),
        _ => None,
    }
}

/// How many values follow the fixed parameters of a replayed op with `ndims` dimensions.
fn array_len(op: Op, ndims: i64) -> Option<usize> {
    let n = usize::try_from(ndims).unwrap_or(usize::MAX);
    match op {
        Op::H5ScreateSimple => Some(n.saturating_mul(2)),
        Op::H5DsetExtent | Op::H5PsetChunk => Some(n),
        _ => None,
    }
}

/// The plan of rank 0's calls. `events` are rank 0's calls, nested (each container with its
/// calls as children) or lifted (the children after their container, at the same level):
/// children are walked recursively either way, depth first, in call order.
///
/// Every HDF5-layer call counts towards [`Step::at`]; the ones that decide the file's layout
/// are replayed ([`Role::Replay`]), transfers, selections, queries and `H5Pset_dxpl_mpio` are
/// not. A creation that failed (its new identifier recorded as -1) is not replayed, and
/// neither is a close of an identifier no traced call made (there is nothing to close).
/// Refused, naming the call: an HDF5 op the oracle does not know, `H5Fopen` of a file the
/// plan did not create, a call on an identifier the oracle will not have (a dataspace from
/// `H5Dget_space`, or one no traced call returned), dimension arrays of the wrong length.
///
/// A program that calls NetCDF (rank 0 made a NetCDF-layer call) is replayed at that layer
/// instead ([`netcdf_plan`]): NetCDF makes HDF5 calls the HDF5 layer does not record
/// (`H5Gopen2`, `H5Acreate1`, `H5Screate`, property lists that shape every object header),
/// which only libnetcdf itself makes again.
pub fn plan_of(events: &[RawEvent], hdf5_version: Option<String>) -> Result<Plan, PlanError> {
    if has_netcdf(events) {
        return netcdf_plan(events, hdf5_version);
    }
    plan_with(events, hdf5_version, role)
}

/// Whether any of `events` (or their children) is a NetCDF call.
fn has_netcdf(events: &[RawEvent]) -> bool {
    events
        .iter()
        .any(|e| e.op.layer() == Layer::Netcdf || has_netcdf(&e.children))
}

/// What the oracle does with a NetCDF call: `Some(true)` replays it, `Some(false)` leaves it
/// out (a read moves data and allocates nothing), `None` does not know it.
fn netcdf_role(op: Op) -> Option<bool> {
    match op {
        Op::NcCreate
        | Op::NcCreatePar
        | Op::NcOpen
        | Op::NcOpenPar
        | Op::NcClose
        | Op::NcEnddef
        | Op::NcRedef
        | Op::NcSync
        | Op::NcDefDim
        | Op::NcDefVar
        | Op::NcDefVarChunking
        | Op::NcVarParAccess
        | Op::NcPutAtt
        // A write may extend a record variable (HDF5's `H5Dset_extent` inside it, which
        // allocates the new chunks): replayed with rank 0's region.
        | Op::NcPutVara
        | Op::NcPutVars => Some(true),
        Op::NcGetVara | Op::NcGetVars => Some(false),
        _ => None,
    }
}

/// The plan of rank 0's NetCDF calls: each replayed call with the HDF5 calls it made
/// ([`Step::inner`]), numbered among all of rank 0's HDF5 calls as [`plan_of`] numbers them.
///
/// Refused, naming the call: an HDF5 call outside every NetCDF call (a program mixing both
/// layers on its own: the replay of one would miss the other's objects), a NetCDF op the
/// oracle does not know, a call on a file no traced call opened (ncid -1), an open of a file
/// the plan did not create, a create, open, dimension, variable or attribute without a
/// name, an attribute of a type without a fixed size (strings, user types: their bytes are
/// not recorded).
///
/// Rank 0's region stands for every rank's: a record variable grows to the largest end any
/// rank writes (NetCDF agrees on it over the ranks before it extends), which rank 0's end
/// is where every rank writes the same records (checked by the extrapolator, which compares
/// the replay with every input).
fn netcdf_plan(events: &[RawEvent], hdf5_version: Option<String>) -> Result<Plan, PlanError> {
    // Each NetCDF call with the HDF5 calls it made: its children (nested form), then the
    // HDF5 calls that follow it at the top level (lifted form: lifting puts a container's
    // calls right after it; a program's own HDF5 call there would be counted as NetCDF's,
    // and the replay, whose NetCDF call does not make it, says so).
    let mut calls: Vec<(&RawEvent, Vec<&RawEvent>)> = Vec::new();
    for e in events {
        // HDF5 calls so far, to name the one at fault.
        let before: usize = calls.iter().map(|(_, m)| m.len()).sum();
        match e.op.layer() {
            Layer::Netcdf => {
                let mut made = Vec::new();
                collect(&e.children, &mut made);
                calls.push((e, made));
            }
            Layer::Hdf5 => {
                let Some((_, made)) = calls.last_mut() else {
                    return Err(PlanError::OutsideNetcdf {
                        call: describe(before, e.op, e.path.as_deref()),
                    });
                };
                made.push(e);
                collect(&e.children, made);
            }
            _ => {
                let mut inside = Vec::new();
                collect(&e.children, &mut inside);
                if let Some(c) = inside.first() {
                    return Err(PlanError::OutsideNetcdf {
                        call: describe(before, c.op, c.path.as_deref()),
                    });
                }
            }
        }
    }
    let mut steps = Vec::new();
    let mut files: HashSet<&str> = HashSet::new();
    let mut first = 0usize;
    for (at, (e, made)) in calls.iter().enumerate() {
        let inner: Vec<(usize, Op)> = made
            .iter()
            .enumerate()
            .map(|(k, c)| (first + k, c.op))
            .collect();
        first += made.len();
        let call = describe(at, e.op, e.path.as_deref());
        match netcdf_role(e.op) {
            None => {
                return Err(PlanError::Unsupported {
                    call,
                    op: e.op.name(),
                });
            }
            Some(false) => continue,
            Some(true) => {}
        }
        if e.op.get(&e.params, Param::Ncid).is_some_and(|id| id < 0) {
            return Err(PlanError::Identifier {
                call,
                param: Param::Ncid.name(),
                id: -1,
                why: "no traced call returned".into(),
            });
        }
        let named = matches!(
            e.op,
            Op::NcCreate
                | Op::NcCreatePar
                | Op::NcOpen
                | Op::NcOpenPar
                | Op::NcDefDim
                | Op::NcDefVar
                | Op::NcPutAtt
        );
        let name = e.path.as_deref().unwrap_or_default();
        if named && e.path.is_none() {
            return Err(PlanError::NoName { call });
        }
        match e.op {
            Op::NcCreate | Op::NcCreatePar => {
                files.insert(name);
            }
            Op::NcOpen | Op::NcOpenPar if !files.contains(name) => {
                return Err(PlanError::OpenOfUnknownFile { call });
            }
            Op::NcPutAtt => {
                let xtype = e.op.param(&e.params, Param::Xtype);
                if rsd::netcdf::types::size(xtype) == 0 {
                    return Err(PlanError::AttributeType { call, xtype });
                }
            }
            _ => {}
        }
        steps.push(netcdf_step(at, e, inner));
    }
    Ok(Plan {
        hdf5_version,
        steps,
    })
}

fn netcdf_step(at: usize, e: &RawEvent, inner: Vec<(usize, Op)>) -> Step {
    Step {
        at,
        op: e.op,
        name: e.path.clone(),
        params: e.params.clone(),
        inner,
    }
}

/// [`plan_of`] with the roles `role` gives (the tests take one away to see the refusal of an
/// op the oracle does not know, since every HDF5 op of today's table has one).
fn plan_with(
    events: &[RawEvent],
    hdf5_version: Option<String>,
    role: fn(Op) -> Option<Role>,
) -> Result<Plan, PlanError> {
    let mut hdf5 = Vec::new();
    collect(events, &mut hdf5);
    let mut ids = Ids::default();
    let mut files: HashSet<&str> = HashSet::new();
    let mut steps = Vec::new();
    for (at, e) in hdf5.into_iter().enumerate() {
        let call = describe(at, e.op, e.path.as_deref());
        let Some(role) = role(e.op) else {
            return Err(PlanError::Unsupported {
                call,
                op: e.op.name(),
            });
        };
        let new = created(e.op);
        if matches!(role, Role::Skip) {
            if let Some(p) = closed(e.op) {
                ids.close(e, p);
            }
            if let Some(p) = new {
                ids.make(e, p, Made::Skipped { call });
            }
            continue;
        }
        // A failed creation made nothing; a close of what no traced call made has nothing
        // to close.
        if let Some(p) = new.or(closed(e.op))
            && e.op.get(&e.params, p).is_none_or(|id| id < 0)
        {
            continue;
        }
        if let Some(want) = array_len(e.op, e.op.get(&e.params, Param::Ndims).unwrap_or(0)) {
            let got = e.params.len().saturating_sub(e.op.params().len());
            if got != want {
                return Err(PlanError::Dimensions {
                    call,
                    ndims: e.op.get(&e.params, Param::Ndims).unwrap_or(0),
                    want,
                    got,
                });
            }
        }
        for &p in uses(e.op) {
            ids.used(e, &call, p)?;
        }
        let named = matches!(
            e.op,
            Op::H5Fcreate
                | Op::H5Fopen
                | Op::H5Dcreate2
                | Op::H5Dopen2
                | Op::H5Acreate2
                | Op::H5Gcreate2
        );
        if named && e.path.is_none() {
            return Err(PlanError::NoName { call });
        }
        match e.op {
            Op::H5Fcreate => {
                files.insert(e.path.as_deref().unwrap_or_default());
            }
            Op::H5Fopen if !files.contains(e.path.as_deref().unwrap_or_default()) => {
                return Err(PlanError::OpenOfUnknownFile { call });
            }
            _ => {}
        }
        if let Some(p) = closed(e.op) {
            ids.close(e, p);
        }
        if let Some(p) = new {
            ids.make(e, p, Made::Replayed);
        }
        steps.push(Step {
            at,
            op: e.op,
            name: e.path.clone(),
            params: e.params.clone(),
            inner: Vec::new(),
        });
    }
    Ok(Plan {
        hdf5_version,
        steps,
    })
}

/// Every HDF5-layer call of `events`, depth first in call order.
pub(crate) fn collect<'a>(events: &'a [RawEvent], out: &mut Vec<&'a RawEvent>) {
    for e in events {
        if e.op.layer() == Layer::Hdf5 {
            out.push(e);
        }
        collect(&e.children, out);
    }
}

/// [`plan_of`] rank 0 of a trace, with the HDF5 version its header notes.
pub fn plan_of_trace(tf: &rsd::TraceFile) -> Result<Plan, PlanError> {
    plan_of(&tf.trace.rank_events(0), tf.header.hdf5_version())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::op::args;

    fn ev(op: Op, path: Option<&str>, params: Vec<i64>) -> RawEvent {
        RawEvent {
            path: path.map(str::to_string),
            ..RawEvent::new(op, 1, params)
        }
    }

    fn with(mut p: Vec<i64>, arrays: &[i64]) -> Vec<i64> {
        p.extend_from_slice(arrays);
        p
    }

    /// h5py_lowlevel.py's first steps at 8 ranks, as rank 0 recorded them (`iotrex expand`):
    /// ids 0 file, 1 the extendible space, 2 `rows`, 3 the row space, ...
    fn lowlevel() -> Vec<RawEvent> {
        let mut v = vec![
            ev(Op::H5PsetFaplMpio, None, args::h5_pset_fapl_mpio(0)),
            ev(Op::H5Fcreate, Some("d8/ll.h5"), args::h5_fcreate(2, 0)),
            ev(Op::H5PsetDxplMpio, None, args::h5_pset_dxpl_mpio(1)),
            ev(
                Op::H5ScreateSimple,
                None,
                with(args::h5_screate_simple(2, 1), &[0, 16, -1, 16]),
            ),
            ev(
                Op::H5PsetChunk,
                None,
                with(args::h5_pset_chunk(2), &[1, 16]),
            ),
            ev(Op::H5Dcreate2, Some("rows"), args::h5_dcreate2(0, 4, 1, 2)),
            ev(
                Op::H5ScreateSimple,
                None,
                with(args::h5_screate_simple(1, 3), &[8000, 8000]),
            ),
            ev(Op::H5Dcreate2, Some("step0"), args::h5_dcreate2(0, 8, 3, 4)),
            ev(
                Op::H5SselectHyperslab,
                None,
                with(args::h5_sselect_hyperslab(3, 0, 1), &[0, 1, 1000, 1]),
            ),
            ev(
                Op::H5Dwrite,
                None,
                args::h5_dwrite(4, -2, 3, 1, 8, 1000, 8000),
            ),
            ev(Op::H5DgetSpace, None, args::h5_dget_space(2, 5)),
            ev(
                Op::H5DsetExtent,
                None,
                with(args::h5_dset_extent(2, 2), &[8, 16]),
            ),
            ev(Op::H5Sclose, None, args::h5_sclose(5)),
            ev(Op::H5Fflush, None, args::h5_fflush(0, 1)),
        ];
        // The flush's metadata write, a child the walk passes over.
        v.last_mut().unwrap().children = vec![ev(
            Op::FileWriteAt,
            None,
            args::file_write_at(0, 0, 96, 4, 96),
        )];
        v
    }

    #[test]
    fn replays_the_layout_calls_with_their_indices_among_all_hdf5_calls() {
        let plan = plan_of(&lowlevel(), Some("1.10.8".into())).unwrap();
        let got: Vec<(usize, Op)> = plan.steps.iter().map(|s| (s.at, s.op)).collect();
        assert_eq!(
            got,
            vec![
                (0, Op::H5PsetFaplMpio),
                (1, Op::H5Fcreate),
                (3, Op::H5ScreateSimple),
                (4, Op::H5PsetChunk),
                (5, Op::H5Dcreate2),
                (6, Op::H5ScreateSimple),
                (7, Op::H5Dcreate2),
                (11, Op::H5DsetExtent),
                (13, Op::H5Fflush),
            ]
        );
        let extent = &plan.steps[7];
        assert_eq!(extent.arrays(), &[8, 16]);
        assert_eq!(extent.p(Param::Dset), 2);
        assert_eq!(plan.steps[4].name.as_deref(), Some("rows"));
        assert_eq!(
            plan.steps[3].arrays(),
            &[1, 16],
            "the chunk dims as recorded"
        );
        assert_eq!(plan.hdf5_version.as_deref(), Some("1.10.8"));
        // Through JSON, as the binary reads it.
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(serde_json::from_str::<Plan>(&json).unwrap(), plan);
    }

    #[test]
    fn nested_and_lifted_forms_give_the_same_plan() {
        // A call holding HDF5's (the walk goes through any call's children): nest the whole
        // list under one call...
        let mut nc = ev(Op::FileOpen, None, vec![0; Op::FileOpen.params().len()]);
        nc.children = lowlevel();
        let nested = plan_of(&[nc.clone()], None).unwrap();
        // ... or lift the children after it.
        let mut lifted = vec![RawEvent {
            children: Vec::new(),
            ..nc
        }];
        for mut e in lowlevel() {
            let kids = std::mem::take(&mut e.children);
            lifted.push(e);
            lifted.extend(kids);
        }
        let flat = plan_of(&lifted, None).unwrap();
        assert_eq!(nested, flat);
        assert_eq!(nested, plan_of(&lowlevel(), None).unwrap());
    }

    #[test]
    fn handles_follow_the_table_slots_as_they_are_reused() {
        let mut v = lowlevel();
        // step0 closed, its slot (4) taken by a group, then a dataset in the group.
        v.push(ev(Op::H5Dclose, None, args::h5_dclose(4)));
        v.push(ev(Op::H5Gcreate2, Some("g"), args::h5_gcreate2(0, 4)));
        v.push(ev(
            Op::H5Dcreate2,
            Some("inner"),
            args::h5_dcreate2(4, 8, 3, 5),
        ));
        let plan = plan_of(&v, None).unwrap();
        let tail: Vec<Op> = plan.steps.iter().rev().take(3).map(|s| s.op).collect();
        assert_eq!(tail, vec![Op::H5Dcreate2, Op::H5Gcreate2, Op::H5Dclose]);

        // The space H5Dget_space made (slot 5, not replayed) cannot make a dataset.
        let mut v = lowlevel();
        v.insert(
            12,
            ev(Op::H5Dcreate2, Some("copy"), args::h5_dcreate2(0, 4, 5, 6)),
        );
        let err = plan_of(&v, None).unwrap_err();
        assert_eq!(
            err,
            PlanError::Identifier {
                call: "HDF5 call 12 (H5Dcreate2 copy)".into(),
                param: "space",
                id: 5,
                why: "HDF5 call 10 (H5Dget_space) made, a call the oracle does not replay".into(),
            }
        );
        assert!(err.to_string().contains("H5Dcreate2 copy"), "{err}");

        // After its H5Sclose the slot is free: a use of it is refused.
        let mut v = lowlevel();
        v.push(ev(Op::H5Dclose, None, args::h5_dclose(5)));
        assert!(matches!(
            plan_of(&v, None),
            Err(PlanError::Identifier { id: 5, .. })
        ));
    }

    #[test]
    fn failed_creations_and_closes_of_unknown_ids_are_skipped() {
        let mut v = lowlevel();
        v.push(ev(
            Op::H5Dcreate2,
            Some("rows"),
            args::h5_dcreate2(0, 4, 1, -1),
        ));
        v.push(ev(Op::H5Dclose, None, args::h5_dclose(-1)));
        let plan = plan_of(&v, None).unwrap();
        assert_eq!(
            plan.steps.len(),
            plan_of(&lowlevel(), None).unwrap().steps.len()
        );
    }

    /// The chunk rule is the trace's convention, applied by the oracle: the plan keeps each
    /// H5Pset_chunk where it was, right before the H5Dcreate2 it applies to.
    #[test]
    fn the_chunk_dims_stay_before_their_create() {
        let plan = plan_of(&lowlevel(), None).unwrap();
        let chunk = plan
            .steps
            .iter()
            .position(|s| s.op == Op::H5PsetChunk)
            .unwrap();
        assert_eq!(plan.steps[chunk + 1].op, Op::H5Dcreate2);
        assert_eq!(plan.steps[chunk + 1].name.as_deref(), Some("rows"));
    }

    #[test]
    fn an_unknown_hdf5_op_is_refused_by_name_and_place() {
        // Every HDF5 op of today's table has a role; one the oracle would not know is
        // played by H5Dset_extent taken out of the roles.
        for op in Op::ALL.iter().filter(|o| o.layer() == Layer::Hdf5) {
            assert!(role(*op).is_some(), "{} has no role", op.name());
        }
        fn without_extent(op: Op) -> Option<Role> {
            if op == Op::H5DsetExtent {
                None
            } else {
                role(op)
            }
        }
        let err = plan_with(&lowlevel(), None, without_extent).unwrap_err();
        assert_eq!(
            err,
            PlanError::Unsupported {
                call: "HDF5 call 11 (H5Dset_extent)".into(),
                op: "H5Dset_extent"
            }
        );
        assert!(
            err.to_string().starts_with(
                "HDF5 call 11 (H5Dset_extent): the HDF5 oracle cannot replay H5Dset_extent"
            ),
            "{err}"
        );
        // Queries of any later HDF5 op are known to change nothing.
        assert!(is_query("H5get_libversion"));
        assert!(is_query("H5Sget_simple_extent_dims"));
        assert!(is_query("H5Tget_size"));
        assert!(is_query("H5Pget_chunk"));
        assert!(!is_query("H5Dset_extent"));
        assert!(!is_query("H5Ocopy"));
    }

    #[test]
    fn opening_a_file_the_plan_did_not_create_is_refused() {
        let mut v = lowlevel();
        v.push(ev(Op::H5Fopen, Some("d8/ll.h5"), args::h5_fopen(1, 6)));
        assert!(plan_of(&v, None).is_ok());
        v.push(ev(Op::H5Fopen, Some("input.h5"), args::h5_fopen(0, 7)));
        let err = plan_of(&v, None).unwrap_err();
        assert_eq!(
            err,
            PlanError::OpenOfUnknownFile {
                call: "HDF5 call 15 (H5Fopen input.h5)".into()
            }
        );
    }

    /// nc4_par's first calls as rank 0 recorded them: each NetCDF call with the HDF5 calls
    /// NetCDF made beneath it (some with identifiers no recorded call made).
    fn netcdf() -> Vec<RawEvent> {
        let with_kids = |mut e: RawEvent, kids: Vec<RawEvent>| {
            e.children = kids;
            e
        };
        vec![
            with_kids(
                ev(
                    Op::NcCreatePar,
                    Some("d4/p.nc"),
                    args::nc_create_par(4096, 0, 0),
                ),
                vec![
                    ev(Op::H5PsetFaplMpio, None, args::h5_pset_fapl_mpio(0)),
                    ev(Op::H5Fcreate, Some("d4/p.nc"), args::h5_fcreate(2, 0)),
                ],
            ),
            ev(Op::NcDefDim, Some("x"), args::nc_def_dim(0, 4000, 0)),
            ev(
                Op::NcPutAtt,
                Some("title"),
                args::nc_put_att(0, -1, 2, 2, 14, 14),
            ),
            with_kids(
                ev(Op::NcEnddef, None, args::nc_enddef(0)),
                vec![
                    ev(Op::H5Awrite, None, args::h5_awrite(-1, 14, 14)),
                    ev(Op::H5Aclose, None, args::h5_aclose(-1)),
                ],
            ),
            with_kids(
                ev(
                    Op::NcGetVara,
                    None,
                    with(args::nc_get_vara(0, 0, 4, 1, 1000, 4000), &[0, 1000]),
                ),
                vec![ev(
                    Op::H5Dread,
                    None,
                    args::h5_dread(2, -2, 1, 1, 4, 1000, 4000),
                )],
            ),
            with_kids(
                ev(Op::NcClose, None, args::nc_close(0)),
                vec![ev(Op::H5Fclose, None, args::h5_fclose(0))],
            ),
        ]
    }

    #[test]
    fn a_netcdf_program_is_replayed_through_its_netcdf_calls() {
        let plan = plan_of(&netcdf(), Some("1.10.8".into())).unwrap();
        assert!(plan.is_netcdf());
        let got: Vec<(usize, Op)> = plan.steps.iter().map(|s| (s.at, s.op)).collect();
        // The read is left out; the ordinals count it.
        assert_eq!(
            got,
            vec![
                (0, Op::NcCreatePar),
                (1, Op::NcDefDim),
                (2, Op::NcPutAtt),
                (3, Op::NcEnddef),
                (5, Op::NcClose),
            ]
        );
        // The HDF5 calls beneath, numbered among all of rank 0's HDF5 calls (the read's
        // H5Dread is number 4).
        assert_eq!(
            plan.steps[0].inner,
            vec![(0, Op::H5PsetFaplMpio), (1, Op::H5Fcreate)]
        );
        assert_eq!(
            plan.steps[3].inner,
            vec![(2, Op::H5Awrite), (3, Op::H5Aclose)]
        );
        assert_eq!(plan.steps[4].inner, vec![(5, Op::H5Fclose)]);
        assert_eq!(
            plan.steps[3].describe(),
            "NetCDF call 3 (nc_enddef)".to_string()
        );
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(serde_json::from_str::<Plan>(&json).unwrap(), plan);
        // The lifted form (a call's HDF5 calls after it at the top level) gives the same plan.
        let mut lifted = Vec::new();
        for mut e in netcdf() {
            let kids = std::mem::take(&mut e.children);
            lifted.push(e);
            lifted.extend(kids);
        }
        assert_eq!(plan_of(&lifted, Some("1.10.8".into())).unwrap(), plan);
        // An HDF5-only plan serializes without `inner`, as before.
        let h5 = serde_json::to_string(&plan_of(&lowlevel(), None).unwrap()).unwrap();
        assert!(!h5.contains("inner"), "{h5}");
    }

    #[test]
    fn netcdf_plans_refuse_what_libnetcdf_would_not_make_again() {
        // An HDF5 call of the program's own before its NetCDF calls, or inside another call.
        let mut v = netcdf();
        v.insert(0, ev(Op::H5Fflush, None, args::h5_fflush(0, 1)));
        let err = plan_of(&v, None).unwrap_err();
        assert_eq!(
            err,
            PlanError::OutsideNetcdf {
                call: "HDF5 call 0 (H5Fflush)".into()
            }
        );
        let mut v = netcdf();
        let mut fin = ev(Op::FileOpen, None, vec![0; Op::FileOpen.params().len()]);
        fin.children = vec![ev(Op::H5Fflush, None, args::h5_fflush(0, 1))];
        v.insert(2, fin);
        let err = plan_of(&v, None).unwrap_err();
        assert_eq!(
            err,
            PlanError::OutsideNetcdf {
                call: "HDF5 call 2 (H5Fflush)".into()
            }
        );
        // A string attribute: its bytes are not recorded.
        let mut v = netcdf();
        v[2] = ev(
            Op::NcPutAtt,
            Some("s"),
            args::nc_put_att(0, -1, 12, 12, 1, 8),
        );
        assert!(matches!(
            plan_of(&v, None),
            Err(PlanError::AttributeType { xtype: 12, .. })
        ));
        // An open of a file the plan did not create.
        let mut v = netcdf();
        v.push(ev(Op::NcOpenPar, Some("in.nc"), args::nc_open_par(0, 0, 0)));
        let err = plan_of(&v, None).unwrap_err();
        assert_eq!(
            err,
            PlanError::OpenOfUnknownFile {
                call: "NetCDF call 6 (nc_open_par in.nc)".into()
            }
        );
        // A call on a file no traced call opened.
        let mut v = netcdf();
        v.push(ev(Op::NcSync, None, args::nc_sync(-1)));
        assert!(matches!(
            plan_of(&v, None),
            Err(PlanError::Identifier { id: -1, .. })
        ));
    }

    #[test]
    fn wrong_dimension_counts_are_refused() {
        let mut v = lowlevel();
        v.push(ev(
            Op::H5DsetExtent,
            None,
            with(args::h5_dset_extent(2, 2), &[16]),
        ));
        assert!(matches!(
            plan_of(&v, None),
            Err(PlanError::Dimensions {
                ndims: 2,
                want: 2,
                got: 1,
                ..
            })
        ));
    }
}
