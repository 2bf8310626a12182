//! What the dealt model ([`crate::hdf5::dealt`]) assumes of parallel HDF5's metadata, checked on the
//! inputs before its result is trusted:
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
//!   why the target is out of the model's reach: with [`crate::hdf5::chunk_btree`], the split tree's
//!   node count, leaves and node size (the entries the flush adds); not its nodes' addresses,
//!   which HDF5's file-space allocator chooses, so the refusal stays.
//! - **The flush is independent.** With `H5Pset_coll_metadata_write` (NetCDF 4.9 sets it on
//!   every parallel file) each rank writes its block of the dealt entries as one
//!   `MPI_File_write_at_all` through an `MPI_Type_create_hindexed` file type of one block per
//!   entry (and a memory type whose displacements are the entries' heap addresses), so the
//!   block counts change with n. [`crate::hdf5::collflush`] models that form; [`collective_flush`]
//!   names it in a refusal.

use crate::Input;
use crate::error::{Quantity, Reason, Site};
use crate::hdf5::chunk_btree;
use crate::ranks::rank_events;
use models::ModelSet;
use models::exact::Agreement;
use rsd::RawEvent;
use rsd::op::{Op, Param};
use std::collections::HashMap;

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

/// A chunked dataset rank 0 created, as the trace's HDF5 calls describe it.
struct Chunked {
    /// The `H5Dcreate2` path (or "dataset k").
    name: String,
    /// The most chunks its extent held.
    chunks: i64,
    /// Its dimensions.
    ndims: usize,
    /// Whether every extent it had differs from the created one in the first dimension
    /// only, growing: its new chunks are then appended in increasing order (row-major
    /// allocation), the growth [`chunk_btree::append`] models.
    appends: bool,
}

/// Per chunked dataset rank 0 created (in creation order, named by the `H5Dcreate2` path),
/// its chunk count and growth. The dataset's chunk dimensions are those of the last
/// `H5Pset_chunk` before its `H5Dcreate2` (the property list itself is not recorded), its
/// dimensions those of the dataspace the create names, then of each `H5Dset_extent`.
fn chunk_counts(tf: &rsd::TraceFile) -> Vec<Chunked> {
    let events = rank_events(&tf.trace, 0);
    let mut spaces: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut pending: Option<Vec<i64>> = None;
    // Open dataset handle -> (index in `out`, chunk dims, last dims).
    let mut open: HashMap<i64, (usize, Vec<i64>, Vec<i64>)> = HashMap::new();
    let mut out: Vec<Chunked> = Vec::new();
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
                out.push(Chunked {
                    name: e
                        .path
                        .clone()
                        .unwrap_or_else(|| format!("dataset {}", out.len())),
                    chunks: chunks(dims, &chunk),
                    ndims: dims.len(),
                    appends: true,
                });
                open.insert(dset, (out.len() - 1, chunk, dims.clone()));
            }
        }
        Op::H5Dopen2 => {
            open.remove(&e.op.param(&e.params, Param::Dset));
        }
        Op::H5DsetExtent => {
            if let Some((k, chunk, last)) = open.get_mut(&e.op.param(&e.params, Param::Dset)) {
                let dims = array(e, 0, chunk.len());
                if dims.len() == chunk.len() {
                    let d = &mut out[*k];
                    d.chunks = d.chunks.max(chunks(&dims, chunk));
                    d.appends &= dims[0] >= last[0] && dims[1..] == last[1..];
                    *last = dims;
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
    by: crate::pipeline::PassId,
    event: Site,
    param: Quantity,
    target: u32,
    why: &str,
    more: &str,
    tried: &str,
) -> crate::ExtrapError {
    let values = "the chunk counts above".into();
    let hint = format!(
        "extrapolate to a rank count at which every chunked dataset has at most {} chunks, or \
         trace the target scale",
        chunk_btree::NODE_CHILDREN
    );
    let why = Reason::IndexSplits {
        target,
        why: why.into(),
    };
    let e = crate::ExtrapError::refused(event, param, why, (values, tried.into(), hint));
    // `more` is said after the split, as further sentences.
    match more.strip_prefix("; ") {
        Some(more) if !more.is_empty() => e.also_library(by, more),
        _ => e,
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
    let per: Vec<Vec<Chunked>> = sorted.iter().map(|i| chunk_counts(&i.file)).collect();
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
    let cap = chunk_btree::NODE_CHILDREN;
    for k in 0..per[0].len() {
        let name = &per[0][k].name;
        let ys: Vec<i64> = per.iter().map(|p| p[k].chunks).collect();
        if ys.iter().all(|&y| y == ys[0]) {
            continue;
        }
        let at_target = match crate::numbers::agree_at(&ns, &ys, target, models) {
            Agreement::Agree(_, v) => Some(v),
            _ => None,
        };
        let seen: Vec<String> = ns
            .iter()
            .zip(&ys)
            .map(|(n, y)| format!("{y} at {n}"))
            .collect();
        let over = |y: i64| y > cap;
        match at_target {
            Some(t) if !over(t) && !ys.iter().any(|&y| over(y)) => {}
            Some(t) => {
                return Some(format!(
                    "HDF5's chunk index of {name} grows with n ({} chunks, {t} at {target} \
                     ranks): past {cap} chunks (a node of its version-1 B-tree) the tree \
                     splits and the metadata flush writes more entries than the inputs'{}",
                    seen.join(", "),
                    split_shape(&per, k, &ns, t, target)
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

/// What is known of dataset `k`'s split index (`per`: its description at the inputs, of `ns`
/// ranks; `t` chunks at `target`): the node counts and the entries they add, when its chunks
/// are appended ([`chunk_btree`]); then what is not modelled, the addresses.
fn split_shape(per: &[Vec<Chunked>], k: usize, ns: &[i64], t: i64, target: u32) -> String {
    let not_modelled = "the file-space allocator places the new nodes (its metadata \
                        aggregator, or the end of the file when the aggregator's block cannot \
                        hold one) and what it allocates after them moves: those addresses are \
                        not modelled";
    if !per.iter().all(|p| p[k].appends) {
        return format!(
            "; it grows in another dimension than its first, so chunks are inserted inside \
             the tree, whose shape is not predicted either; {not_modelled}"
        );
    }
    let at: Vec<String> = per
        .iter()
        .zip(ns)
        .map(|(p, n)| format!("{} at {n}", chunk_btree::append(p[k].chunks).nodes()))
        .collect();
    let there = chunk_btree::append(t);
    let most = per
        .iter()
        .map(|p| chunk_btree::append(p[k].chunks).nodes())
        .max()
        .unwrap_or(1);
    format!(
        ": appended in order, its chunks make {} at {target} ranks (nodes: {}), so a flush \
         writing the whole index writes {} more entries of {} bytes than the inputs' largest; \
         {not_modelled}",
        there.describe(),
        at.join(", "),
        there.nodes().saturating_sub(most),
        chunk_btree::node_bytes(per[0][k].ndims)
    )
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
/// of that form ([`crate::hdf5::collflush`]) was not used, if it was not.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(chunks: i64, appends: bool) -> Vec<Chunked> {
        vec![Chunked {
            name: "rows".into(),
            chunks,
            ndims: 2,
            appends,
        }]
    }

    #[test]
    fn the_split_shape_is_said_for_appended_chunks_only() {
        let ns = [4, 8, 12, 16];
        let per: Vec<Vec<Chunked>> = ns.iter().map(|&n| at(3 * n, true)).collect();
        let said = split_shape(&per, 0, &ns, 96, 32);
        assert!(
            said.contains("3 nodes (a root of 2 over leaves of 57, 39 chunks) at 32 ranks"),
            "{said}"
        );
        assert!(
            said.contains("nodes: 1 at 4, 1 at 8, 1 at 12, 1 at 16"),
            "{said}"
        );
        assert!(said.contains("2 more entries of 2616 bytes"), "{said}");
        assert!(said.contains("addresses are not modelled"), "{said}");
        // An input already split: the entries added are counted from the inputs' largest.
        let per: Vec<Vec<Chunked>> = [24, 48, 72, 96].iter().map(|&c| at(c, true)).collect();
        let said = split_shape(&per, 0, &ns, 192, 32);
        assert!(
            said.contains("nodes: 1 at 4, 1 at 8, 3 at 12, 3 at 16"),
            "{said}"
        );
        assert!(said.contains("2 more entries"), "{said}");
        // Grown in another dimension: chunks inserted inside the tree, no shape said.
        let mut per: Vec<Vec<Chunked>> = ns.iter().map(|&n| at(3 * n, true)).collect();
        per[2] = at(36, false);
        let said = split_shape(&per, 0, &ns, 96, 32);
        assert!(said.contains("shape is not predicted"), "{said}");
        assert!(!said.contains("leaves of"), "{said}");
    }
}
