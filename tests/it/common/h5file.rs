//! What an HDF5 file's bytes say of its chunk indexes, for the tests that check the
//! extrapolation's account of HDF5's metadata against real files.

use std::path::Path;

/// The version-1 B-tree nodes of the one chunk index of the HDF5 file at `path` (every
/// `TREE` signature followed by node type 1, found by scanning the bytes: the test programs'
/// data are numbers that do not spell it), as (level, children used) per level, leaves first,
/// each level in sibling order (left to right along the nodes' sibling addresses; a file of
/// two chunked datasets fails the check that every node is linked). The format:
/// signature, type (u8), level (u8), entries used (u16), left and right siblings (u64 each,
/// all ones for none), little-endian.
pub fn chunk_btree_levels(path: &Path) -> Vec<Vec<u16>> {
    const NONE: u64 = u64::MAX;
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let u64_at = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().unwrap());
    // (address, level, used, left, right)
    let mut nodes: Vec<(u64, u8, u16, u64, u64)> = Vec::new();
    let mut i = 0;
    while let Some(k) = data[i..].windows(4).position(|w| w == b"TREE") {
        let at = i + k;
        if at + 24 <= data.len() && data[at + 4] == 1 {
            let used = u16::from_le_bytes([data[at + 6], data[at + 7]]);
            nodes.push((
                at as u64,
                data[at + 5],
                used,
                u64_at(at + 8),
                u64_at(at + 16),
            ));
        }
        i = at + 4;
    }
    let top = nodes
        .iter()
        .map(|n| n.1)
        .max()
        .map_or(0, |l| l as usize + 1);
    (0..top)
        .map(|level| {
            let of: Vec<_> = nodes.iter().filter(|n| n.1 as usize == level).collect();
            let mut row = Vec::new();
            let mut at = of.iter().find(|n| n.3 == NONE).copied();
            while let Some(n) = at {
                row.push(n.2);
                assert!(
                    row.len() <= of.len(),
                    "a sibling loop in {}",
                    path.display()
                );
                at = of.iter().find(|m| m.0 == n.4 && n.4 != NONE).copied();
            }
            assert_eq!(row.len(), of.len(), "unlinked nodes in {}", path.display());
            row
        })
        .collect()
}
