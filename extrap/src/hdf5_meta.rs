//! What the dealt model ([`crate::dealt`]) assumes of parallel HDF5's metadata, checked on the
//! inputs before its result is trusted (issue 17):
//!
//! - **The flush's entry count C is the program's, not n's.** That holds while every metadata
//!   object keeps its size and number of nodes. A chunked dataset's chunk index does not: with
//!   HDF5's default (earliest) file format it is a version-1 B-tree whose nodes hold at most
//!   2K = 64 chunks (`H5Pset_istore_k`'s default K = 32), and a dataset whose extent grows with
//!   n gets more chunks, so past 64 the tree splits and the flush writes more entries (and the
//!   file-space allocator places the new nodes, moving what follows). `h5py_lowlevel.py`'s
//!   `rows` holds 3n chunks: 48 at 16 ranks, 96 at 32, where the final flush writes 12 entries
//!   against 10 at every input. [`chunk_index_grows`] finds such a dataset from the trace's
//!   HDF5 calls (`H5Pset_chunk`, `H5Screate_simple`, `H5Dcreate2`, `H5Dset_extent`) and says
//!   why the target is out of the model's reach. Predicting the split B-tree (its node count,
//!   addresses and sizes) is not done.
//! - **The flush is independent.** With `H5Pset_coll_metadata_write` (NetCDF 4.9 sets it on
//!   every parallel file) each rank writes its block of the dealt entries as one
//!   `MPI_File_write_at_all` through an `MPI_Type_create_hindexed` file type of one block per
//!   entry (and a memory type whose displacements are the entries' heap addresses), so the
//!   block counts change with n. [`crate::collflush`] models that form; [`collective_flush`]
//!   names it in a refusal.

use crate::Input;
use crate::derive::rank_events;
use models::ModelSet;
use models::exact::{Agreement, Point, Vars, agree, fit_exact};
use rsd::RawEvent;
use rsd::op::{Op, Param};
use std::collections::HashMap;

/// The most chunks one node of HDF5's version-1 B-tree chunk index holds: 2K, K = 32 being
/// `H5Pset_istore_k`'s default (`HDF5_BTREE_CHUNK_IK_DEF`). A dataset of at most this many
/// chunks has a one-node index whatever its count.
pub(crate) const CHUNK_NODE_CAPACITY: i64 = 64;

/// `e` and its nested calls, depth first, in call order.
fn walk<'a>(events: &'a [RawEvent], f: &mut impl FnMut(&'a RawEvent)) {
    for e in events {
        f(e);
        walk(&e.children, f);
    }
}

/// Array `k` (0 the first) of `e`, `len` values long, after its fixed parameters.
fn array(e: &RawEvent, k: usize, len: usize) -> Vec<i64> {
    let at = e.op.params().len() + k * len;
    e.params.get(at..at + len).unwrap_or(&[]).to_vec()
}

/// Chunks of a dataset of `dims` in chunks of `chunk` (the partial chunks at the edges count).
fn chunks(dims: &[i64], chunk: &[i64]) -> i64 {
    dims.iter()
        .zip(chunk)
        .map(|(&d, &c)| if c > 0 { (d.max(0) + c - 1) / c } else { 0 })
        .product()
}

/// Per chunked dataset rank 0 created (in creation order, named by the `H5Dcreate2` path),
/// the most chunks its extent held. The dataset's chunk dimensions are those of the last
/// `H5Pset_chunk` before its `H5Dcreate2` (the property list itself is not recorded), its
/// dimensions those of the dataspace the create names, then of each `H5Dset_extent`.
fn chunk_counts(tf: &rsd::TraceFile) -> Vec<(String, i64)> {
    let events = rank_events(&tf.trace, 0);
    let mut spaces: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut pending: Option<Vec<i64>> = None;
    // Open dataset handle -> (index in `out`, chunk dims).
    let mut open: HashMap<i64, (usize, Vec<i64>)> = HashMap::new();
    let mut out: Vec<(String, i64)> = Vec::new();
    walk(&events, &mut |e| match e.op {
        Op::H5ScreateSimple => {
            let nd = e.op.param(&e.params, Param::Ndims).max(0) as usize;
            spaces.insert(e.op.param(&e.params, Param::Space), array(e, 0, nd));
        }
        Op::H5PsetChunk => {
            let nd = e.op.param(&e.params, Param::Ndims).max(0) as usize;
            pending = Some(array(e, 0, nd));
        }
        Op::H5Dcreate2 => {
            let dset = e.op.param(&e.params, Param::Dset);
            open.remove(&dset);
            let space = e.op.param(&e.params, Param::Space);
            if let (Some(chunk), Some(dims)) = (pending.take(), spaces.get(&space))
                && chunk.len() == dims.len()
                && dset >= 0
            {
                out.push((
                    e.path
                        .clone()
                        .unwrap_or_else(|| format!("dataset {}", out.len())),
                    chunks(dims, &chunk),
                ));
                open.insert(dset, (out.len() - 1, chunk));
            }
        }
        Op::H5Dopen2 => {
            open.remove(&e.op.param(&e.params, Param::Dset));
        }
        Op::H5DsetExtent => {
            if let Some((k, chunk)) = open.get(&e.op.param(&e.params, Param::Dset)) {
                let dims = array(e, 0, chunk.len());
                if dims.len() == chunk.len() {
                    out[*k].1 = out[*k].1.max(chunks(&dims, chunk));
                }
            }
        }
        _ => {}
    });
    out
}

/// The refusal of a flush model (`tried`, of the flush at `event`, `param`) whose entry count,
/// taken from the inputs, does not hold at `target` ([`chunk_index_grows`]'s `why`, then
/// `more`): dealt and collective flushes alike.
pub(crate) fn index_split_refusal(
    event: String,
    param: &str,
    target: u32,
    why: &str,
    more: &str,
    tried: &str,
) -> crate::ExtrapError {
    crate::ExtrapError::Refused {
        event,
        param: param.into(),
        detail: format!("the number of metadata entries at {target} ranks: {why}{more}"),
        values: "the chunk counts above".into(),
        tried: tried.into(),
        hint: format!(
            "extrapolate to a rank count at which every chunked dataset has at most \
             {CHUNK_NODE_CAPACITY} chunks, or trace the target scale"
        ),
    }
}

/// Why the dealt model's entry count does not hold at `target`: some chunked dataset's chunk
/// count varies with n and, at an input or at the target, exceeds what one node of its
/// chunk index holds (so the index's node count, and with it the flush's entries, differ
/// between the inputs and the target). `None` when every chunked dataset has a one-node
/// index at every input scale and at the target, or the same chunk count everywhere.
/// `sorted`: one input per scale, increasing rank counts.
pub(crate) fn chunk_index_grows(
    sorted: &[&Input],
    target: u32,
    models: &ModelSet,
) -> Option<String> {
    let per: Vec<Vec<(String, i64)>> = sorted.iter().map(|i| chunk_counts(&i.file)).collect();
    let ns: Vec<i64> = sorted
        .iter()
        .map(|i| i64::from(i.file.header.nranks))
        .collect();
    if per.iter().any(|p| p.len() != per[0].len()) {
        let said: Vec<String> = per
            .iter()
            .zip(&ns)
            .map(|(p, n)| format!("{} at {n}", p.len()))
            .collect();
        return Some(format!(
            "the inputs create another number of chunked datasets ({}), so their chunk indexes \
             cannot be followed across the scales",
            said.join(", ")
        ));
    }
    for k in 0..per[0].len() {
        let name = &per[0][k].0;
        let ys: Vec<i64> = per.iter().map(|p| p[k].1).collect();
        if ys.iter().all(|&y| y == ys[0]) {
            continue;
        }
        let pts: Vec<Point> = ns
            .iter()
            .zip(&ys)
            .map(|(&n, &y)| Point { n, rank: 0, y })
            .collect();
        let at_target = match agree(fit_exact(&models.models, Vars::N, &pts), |f| {
            f.eval(i64::from(target), 0)
        }) {
            Agreement::Agree(_, v) => Some(v),
            _ => None,
        };
        let seen: Vec<String> = ns
            .iter()
            .zip(&ys)
            .map(|(n, y)| format!("{y} at {n}"))
            .collect();
        let over = |y: i64| y > CHUNK_NODE_CAPACITY;
        match at_target {
            Some(t) if !over(t) && !ys.iter().any(|&y| over(y)) => {}
            Some(t) => {
                return Some(format!(
                    "HDF5's chunk index of {name} grows with n ({} chunks, {t} at {target} \
                     ranks): past {CHUNK_NODE_CAPACITY} chunks (a node of its version-1 B-tree) \
                     the tree splits and the metadata flush writes more entries than the \
                     inputs' (HDF5's file-space allocator places the new nodes); the split \
                     tree is not modelled",
                    seen.join(", ")
                ));
            }
            None => {
                return Some(format!(
                    "HDF5's chunk index of {name} varies with n ({} chunks) by no one exact \
                     model, so whether its B-tree splits at {target} ranks is not known",
                    seen.join(", ")
                ));
            }
        }
    }
    None
}

/// Rank 0's block counts of the `MPI_Type_create_hindexed` file types it writes through with
/// `MPI_File_write_at_all` (the set view's file type, then the write), in call order.
fn hindexed_blocks(tf: &rsd::TraceFile) -> Vec<i64> {
    let events = rank_events(&tf.trace, 0);
    let mut flat: Vec<&RawEvent> = Vec::new();
    walk(&events, &mut |e| flat.push(e));
    let mut blocks: HashMap<i64, i64> = HashMap::new();
    let mut out = Vec::new();
    for (i, e) in flat.iter().enumerate() {
        match e.op {
            Op::TypeCreateHindexed => {
                blocks.insert(
                    e.op.param(&e.params, Param::Newtype),
                    e.op.param(&e.params, Param::Count),
                );
            }
            Op::FileSetView => {
                let ft = e.op.param(&e.params, Param::Filetype);
                if let Some(&c) = blocks.get(&ft)
                    && flat.get(i + 1).is_some_and(|w| w.op == Op::FileWriteAtAll)
                {
                    out.push(c);
                }
            }
            _ => {}
        }
    }
    out
}

/// Why the inputs' structure differs with n when HDF5 writes its metadata collectively: the
/// hindexed file types rank 0 writes through have other block counts at other scales. `None`
/// when they are the same at every input (or there are none). `not_modelled`: why the model
/// of that form ([`crate::collflush`]) was not used, if it was not.
pub(crate) fn collective_flush(sorted: &[&Input], not_modelled: Option<&str>) -> Option<String> {
    let per: Vec<Vec<i64>> = sorted.iter().map(|i| hindexed_blocks(&i.file)).collect();
    if per.iter().all(|p| p == &per[0]) {
        return None;
    }
    let seen: Vec<String> = per
        .iter()
        .zip(sorted)
        .map(|(p, i)| {
            let head: Vec<String> = p.iter().take(6).map(i64::to_string).collect();
            format!("{} at {}", head.join(" "), i.file.header.nranks)
        })
        .collect();
    Some(format!(
        "HDF5 writes its metadata collectively (H5Pset_coll_metadata_write; NetCDF-4 sets it \
         on every parallel file): at each flush a rank writes its block of the dealt entries \
         as one MPI_File_write_at_all through an MPI_Type_create_hindexed file type of one \
         block per entry, so the block counts change with n (rank 0's first: {}){}",
        seen.join(", "),
        not_modelled.map_or_else(String::new, |why| format!(
            "; that form is modelled (dealt entries, collective I/O derived), but not here: \
             {why}"
        ))
    ))
}
