//! The shape of HDF5's chunk index when it passes one node: a chunked dataset of
//! HDF5's default (earliest) file format indexes its chunks with a version-1 B-tree
//! (`H5B.c`, `H5Dbtree.c` in HDF5 1.10), and once it holds more than one node's worth of
//! chunks the tree splits and the metadata flush writes the new nodes as more entries.
//!
//! What this module predicts, and only for the growth the programs of the tests have (chunks
//! appended in increasing order: a dataset that grows along its first dimension only, its
//! chunks allocated early, as parallel HDF5 always does, in row-major order):
//!
//! - **The split rule** (`H5B__split`, `H5B__insert_helper`): a node holds at most 2K
//!   children (K = 32, `H5Pset_istore_k`'s default). An insert into a full node splits it;
//!   the left part keeps `floor(2K * ratio)` children, the ratio being the default
//!   transfer property list's (`H5Pset_btree_ratios`: 0.1 for a left-most node, 0.5 in the
//!   middle, 0.9 for a right-most or lone one). An append always lands in the right-most
//!   node of each level, so 57 stay left and 7 go right with the new child. The parent gets
//!   the new node as a child (and splits likewise when full); a root that splits stays where
//!   it is (the object header points to it) and becomes the parent of two nodes: its old
//!   content moved to a new node and the split-off one.
//! - **The node size**: every node is allocated at its full size (`sizeof_rnode`): a header
//!   of 24 bytes, 2K child addresses and 2K + 1 keys of `8 + 8 * (ndims + 1)` bytes (chunk
//!   size, filter mask, and the chunk's offset in each dimension plus the element's),
//!   2,616 bytes for a 2-D dataset (8-byte addresses and lengths, HDF5's defaults).
//!
//! Checked against the real files (every `TREE` node of type 1 read back from the bytes) of
//! `tests/apps/h5py_lowlevel.py` at 16, 20, 24, 32, 48 and 64 ranks and `tests/apps/nc4_par.c`
//! at 16, 32 and 64 (`docs/hdf5.md`, "The split chunk index"): the node counts and the
//! leaves' chunk counts are the ones [`append`] gives (57 + 39 under a root at 96 chunks,
//! 57 + 57 + 57 + 21 at 192), and the final flush of h5py_lowlevel writes one entry more per
//! new node (12 at 32 ranks, 13 at 48, 14 at 64, against 10).
//!
//! Not predicted: the new nodes' **addresses** (HDF5's file-space allocator places them
//! through its metadata aggregator, taking the end of the file when its block cannot hold
//! 2,616 bytes, and what is allocated after them moves), so the flush models refuse a target
//! at which the index has another shape than at the inputs ([`crate::hdf5::meta`]).

/// Children of one node of the chunk index at most: 2K, K = 32 being `H5Pset_istore_k`'s
/// default (`HDF5_BTREE_CHUNK_IK_DEF`).
pub(crate) const NODE_CHILDREN: i64 = 64;

/// The share of a full right-most node's children that stays in it when it splits
/// (`H5Pset_btree_ratios`' right ratio, 0.9 by default), in tenths: the appended chunks of
/// the programs modelled here always split the right-most node of a level.
const RIGHT_RATIO_TENTHS: i64 = 9;

/// The chunk index of a dataset: per level (leaves first), the number of children of each
/// node from left to right. One node holding every chunk while they fit in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    pub levels: Vec<Vec<i64>>,
}

impl Shape {
    /// Its nodes: each is one metadata entry of the flush that writes them all.
    pub fn nodes(&self) -> usize {
        self.levels.iter().map(Vec::len).sum()
    }

    /// E.g. "3 nodes (a root of 2 over leaves of 57, 39 chunks)", or "1 node".
    pub fn describe(&self) -> String {
        let n = self.nodes();
        if n == 1 {
            return "1 node".into();
        }
        let list = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let mut parts = Vec::new();
        for (l, v) in self.levels.iter().enumerate().rev() {
            parts.push(match l {
                0 => format!("leaves of {} chunks", list(v)),
                _ if l + 1 == self.levels.len() => format!("a root of {}", list(v)),
                _ => format!("level-{l} nodes of {}", list(v)),
            });
        }
        format!("{n} nodes ({})", parts.join(" over "))
    }
}

/// The index after `chunks` chunks were appended one by one in increasing order (the
/// empty index is one empty leaf: HDF5 creates the root with the dataset's first chunk).
pub(crate) fn append(chunks: i64) -> Shape {
    let mut levels: Vec<Vec<i64>> = vec![vec![0]];
    for _ in 0..chunks.max(0) {
        add_child(&mut levels, 0);
    }
    Shape { levels }
}

/// One more child in the right-most node of `level`, splitting full nodes upwards.
fn add_child(levels: &mut Vec<Vec<i64>>, level: usize) {
    let last = levels[level].len() - 1;
    if levels[level][last] < NODE_CHILDREN {
        levels[level][last] += 1;
        return;
    }
    // `H5B__split`: the full node keeps floor(2K * ratio) children, the new right sibling
    // the rest and the inserted child (it goes right of every key).
    let keep = NODE_CHILDREN * RIGHT_RATIO_TENTHS / 10;
    levels[level][last] = keep;
    levels[level].push(NODE_CHILDREN - keep + 1);
    if level + 1 == levels.len() {
        // The root split: a new root (at the old root's address) over the two.
        levels.push(vec![2]);
    } else {
        add_child(levels, level + 1);
    }
}

/// Bytes of one node of the chunk index of a dataset of `ndims` dimensions (HDF5's default
/// 8-byte addresses and lengths): the `TREE` header (signature, type, level, entries used,
/// left and right siblings), 2K child addresses, 2K + 1 keys.
pub(crate) fn node_bytes(ndims: usize) -> i64 {
    const HEADER: i64 = 4 + 1 + 1 + 2 + 8 + 8;
    let key = 4 + 4 + 8 * (ndims as i64 + 1);
    HEADER + NODE_CHILDREN * 8 + (NODE_CHILDREN + 1) * key
}

#[cfg(test)]
mod tests {
    use super::*;

    // The shapes read back from real files (h5py_lowlevel.py and nc4_par.c at 16 to 64
    // ranks: 3n chunks of one row each, appended n per step).
    #[test]
    fn shapes_of_the_real_files() {
        assert_eq!(append(48).levels, vec![vec![48]]);
        assert_eq!(append(64).levels, vec![vec![64]]);
        assert_eq!(append(72).levels, vec![vec![57, 15], vec![2]]);
        assert_eq!(append(96).levels, vec![vec![57, 39], vec![2]]);
        assert_eq!(append(144).levels, vec![vec![57, 57, 30], vec![3]]);
        assert_eq!(append(192).levels, vec![vec![57, 57, 57, 21], vec![4]]);
        assert_eq!(append(192).nodes(), 5);
        assert_eq!(
            append(96).describe(),
            "3 nodes (a root of 2 over leaves of 57, 39 chunks)"
        );
        assert_eq!(append(10).describe(), "1 node");
        assert_eq!(node_bytes(2), 2616);
    }

    #[test]
    fn a_full_root_of_roots_splits_again() {
        // 64 leaves under one root, then one more leaf: the root splits, a level-2 root.
        let s = append(57 * 63 + 64 + 7);
        assert_eq!(s.levels.len(), 3, "{s:?}");
        assert_eq!(s.levels[2], vec![2]);
        assert_eq!(s.levels[1], vec![57, 8]);
        assert_eq!(s.levels[0].iter().sum::<i64>(), 57 * 63 + 64 + 7);
    }
}
