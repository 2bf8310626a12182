//! Datatypes by the tracer's symbolic ids: their sizes, so MPI-IO offsets in etype units and
//! counts of derived types convert to bytes, and their recorded constructors, so file views
//! replay as recorded: the MPI runtime rebuilds the type from the constructor chain
//! ([`Types::ctor`]), the threads runtime flattens it to byte blocks ([`Types::flatten`]) and
//! maps every view-relative access onto the file regions it touches ([`Flat::pieces`]).
//!
//! Predefined types have the ids the tracer gives them (its `TYPES` table, in Open MPI's order
//! of `ompi_mpi_*` globals); derived types are numbered from 1000 at their constructor, whose
//! recorded arguments are kept here. Ids are never reused by the tracer (a freed handle gets a
//! new id when it comes back), so a description never goes stale.
//!
//! The tracer records MPI_Type_contiguous, vector, create_hvector, indexed, create_hindexed,
//! create_indexed_block, create_hindexed_block, create_subarray, create_darray
//! ([`crate::darray`]), create_struct, create_resized and dup. A type built otherwise (the
//! MPI-1 names removed in MPI-3.0, ...) still gets an id when first used, but no constructor:
//! it counts as one byte per element here, so a view with it as filetype replays as
//! contiguous bytes.

use crate::darray::Darray;
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::collections::HashMap;

/// Most byte blocks a flattened filetype may have: a view is flattened once per set_view, and
/// this keeps that below ~64 MiB per open file.
pub const MAX_BLOCKS: usize = 1 << 22;

/// A derived type: its recorded constructor and the layout it implies.
#[derive(Debug, Clone)]
struct Derived {
    op: Op,
    params: Vec<i64>,
    size: i64,
    lb: i64,
    extent: i64,
}

/// Datatypes known to one rank.
#[derive(Debug, Default, Clone)]
pub struct Types {
    derived: HashMap<i64, Derived>,
}

/// A datatype flattened to byte blocks relative to its origin, in type-map order (which, for a
/// filetype, MPI requires to be nondecreasing), adjacent blocks merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flat {
    /// (byte displacement, length) of each block.
    pub blocks: Vec<(i64, i64)>,
    /// Bytes of data in one copy of the type (the sum of the block lengths).
    pub size: i64,
    /// Distance between consecutive copies when the type is tiled.
    pub extent: i64,
    /// Data bytes before each block (prefix sums of the lengths), to find a block by position.
    starts: Vec<i64>,
}

impl Flat {
    fn new(blocks: Vec<(i64, i64)>, extent: i64) -> Flat {
        let mut starts = Vec::with_capacity(blocks.len());
        let mut size = 0;
        for (_, l) in &blocks {
            starts.push(size);
            size += l;
        }
        Flat {
            blocks,
            size,
            extent,
            starts,
        }
    }

    /// Whether the type is one block from its origin to its extent, so tiling it gives a
    /// contiguous stream (a view with it is the same as a byte view at the displacement).
    pub fn is_dense(&self) -> bool {
        self.blocks.len() == 1 && self.blocks[0] == (0, self.extent)
    }

    /// Data bytes a view with displacement `disp` shows before file offset `end` (where
    /// `MPI_SEEK_END` puts the file pointer).
    pub fn data_before(&self, disp: i64, end: i64) -> i64 {
        if end <= disp || self.extent <= 0 {
            return 0;
        }
        let rel = end - disp;
        let (tiles, rem) = (rel / self.extent, rel % self.extent);
        let part: i64 = self
            .blocks
            .iter()
            .map(|(d, l)| (rem - d).clamp(0, *l))
            .sum();
        tiles * self.size + part
    }

    /// The file regions (absolute byte offset, length), in order, that `len` bytes of data at
    /// view-relative data position `pos` (bytes of visible data, i.e. etype offset times etype
    /// size) touch, for a view with displacement `disp` and this filetype tiled from there.
    pub fn pieces(&self, disp: i64, pos: i64, len: i64) -> Vec<(u64, usize)> {
        let mut out: Vec<(u64, usize)> = Vec::new();
        // (A negative position is no data the view can reach: MPI refuses such an offset,
        // and a damaged trace may hold one; a fuzzed trace made the block index below wrap.)
        if self.size <= 0 || len <= 0 || pos < 0 {
            return out;
        }
        let mut tile = pos / self.size;
        let mut within = pos % self.size;
        let mut left = len;
        // The block holding data position `within` of a tile.
        let Some(mut b) = self.starts.partition_point(|s| *s <= within).checked_sub(1) else {
            return out;
        };
        while left > 0 {
            let (d, l) = self.blocks[b];
            let skip = within - self.starts[b];
            let take = (l - skip).min(left);
            let at = disp + tile * self.extent + d + skip;
            match out.last_mut() {
                Some((o, n)) if *o + *n as u64 == at as u64 => *n += take as usize,
                _ => out.push((at.max(0) as u64, take as usize)),
            }
            left -= take;
            within += take;
            b += 1;
            if b == self.blocks.len() {
                b = 0;
                tile += 1;
                within = 0;
            }
        }
        out
    }
}

/// Accumulates blocks, merging one that starts where the previous one ends.
struct Blocks {
    v: Vec<(i64, i64)>,
    what: i64,
}

impl Blocks {
    fn push(&mut self, d: i64, l: i64) -> Result<(), String> {
        if l <= 0 {
            return Ok(());
        }
        if let Some((pd, pl)) = self.v.last_mut()
            && *pd + *pl == d
        {
            *pl += l;
            return Ok(());
        }
        if self.v.len() >= MAX_BLOCKS {
            return Err(format!(
                "datatype {} has more than {MAX_BLOCKS} noncontiguous blocks; the threads replay does not flatten it",
                self.what
            ));
        }
        self.v.push((d, l));
        Ok(())
    }

    fn extend(&mut self, base: i64, inner: &[(i64, i64)]) -> Result<(), String> {
        for (d, l) in inner {
            self.push(base + d, *l)?;
        }
        Ok(())
    }
}

/// The (min, max) of `k * step` over `k` in `0..n` (n >= 1).
fn span(n: i64, step: i64) -> (i64, i64) {
    let last = (n - 1).saturating_mul(step);
    (last.min(0), last.max(0))
}

/// An extra-parameter array of a constructor: `n` values from `at`, missing ones 0.
fn arr(p: &[i64], at: usize, n: usize) -> Vec<i64> {
    (0..n)
        .map(|i| p.get(at + i).copied().unwrap_or(0))
        .collect()
}

/// Why a view over `filetype` cannot be replayed as recorded, if it cannot.
pub fn unbuilt_view(types: &Types, filetype: i64) -> Option<String> {
    types.unbuilt_inside(filetype).map(|u| {
        format!(
            "MPI_File_set_view: filetype {filetype} is built on datatype {u}, whose constructor \
             the trace does not record (e.g. MPI_Type_hvector): replayed as bytes from the \
             displacement"
        )
    })
}

impl Types {
    /// Size in bytes of datatype `id`, 1 when unknown (a byte stream).
    pub fn size(&self, id: i64) -> i64 {
        if let Some(d) = self.derived.get(&id) {
            return d.size;
        }
        match rsd::mpi::predefined(id) {
            Some(t) if t.size > 0 => t.size,
            _ => 1,
        }
    }

    /// (lower bound, extent) of datatype `id`; a predefined or unknown type is its size from 0.
    pub fn bounds(&self, id: i64) -> (i64, i64) {
        match self.derived.get(&id) {
            Some(d) => (d.lb, d.extent),
            None => (0, self.size(id)),
        }
    }

    /// A type the constructor chain of derived type `id` builds on but the trace never
    /// built (its constructor is not recorded, e.g. `MPI_Type_hvector`), if any. Such a
    /// type counts as one byte per element, which inside a recorded constructor (a resized
    /// extent, a vector stride) spreads the accesses far from where they were: a view over it
    /// is refused rather than replayed that way.
    pub fn unbuilt_inside(&self, id: i64) -> Option<i64> {
        let d = self.derived.get(&id)?;
        let mut inner: Vec<i64> = d.op.get(&d.params, Param::Oldtype).into_iter().collect();
        if d.op == Op::TypeCreateStruct {
            // [count, newtype, count block lengths, count displacements, count types]
            let n = d.params.first().copied().unwrap_or(0).max(0) as usize;
            inner.extend(d.params.iter().skip(2 + 2 * n).take(n));
        }
        inner.into_iter().find_map(|t| {
            if self.derived.contains_key(&t) {
                self.unbuilt_inside(t)
            } else if rsd::mpi::predefined(t).is_some_and(|p| p.size > 0) {
                None
            } else {
                Some(t)
            }
        })
    }

    /// The recorded constructor of derived type `id` (its op and parameters), or None for a
    /// predefined type or one built by a call the tracer does not record.
    pub fn ctor(&self, id: i64) -> Option<(Op, &[i64])> {
        self.derived.get(&id).map(|d| (d.op, d.params.as_slice()))
    }

    /// Records the datatype built by `e`, if `e` builds one.
    pub fn track(&mut self, e: &FlatEvent) {
        self.track_call(e.op, &e.params)
    }

    /// Records the datatype built by a call of `op` with parameters `p`, if it builds one.
    pub fn track_call(&mut self, op: Op, p: &[i64]) {
        // Only some constructors have a count; the others never read it.
        let n = op.get(p, Param::Count).unwrap_or(0).max(0);
        // Placements of the old type(s): ranges of (displacement min, max) and the data size.
        let (size, lb, ub) = match op {
            Op::TypeContiguous | Op::TypeVector | Op::TypeHvector => {
                let old = op.param(p, Param::Oldtype);
                let (olb, oext) = self.bounds(old);
                let (bl, stride) = match op {
                    Op::TypeContiguous => (1, oext),
                    Op::TypeVector => (
                        op.param(p, Param::Blocklength),
                        op.param(p, Param::Stride) * oext,
                    ),
                    _ => (
                        op.param(p, Param::Blocklength),
                        op.param(p, Param::StrideBytes),
                    ),
                };
                if n == 0 || bl <= 0 {
                    (0, 0, 0)
                } else {
                    let (a0, a1) = span(n, stride);
                    let (b0, b1) = span(bl, oext);
                    (n * bl * self.size(old), olb + a0 + b0, olb + oext + a1 + b1)
                }
            }
            Op::TypeIndexed
            | Op::TypeCreateHindexed
            | Op::TypeCreateIndexedBlock
            | Op::TypeCreateHindexedBlock => {
                let Some((old, blocks)) = self.indexed(op, p) else {
                    return;
                };
                let (olb, oext) = self.bounds(old);
                let mut r = (0, i64::MAX, i64::MIN);
                for (b, d) in blocks {
                    if b > 0 {
                        let (b0, b1) = span(b, oext);
                        r.0 += b * self.size(old);
                        r.1 = r.1.min(d + b0 + olb);
                        r.2 = r.2.max(d + b1 + olb + oext);
                    }
                }
                if r.1 > r.2 { (0, 0, 0) } else { r }
            }
            Op::TypeDup => {
                let old = op.param(p, Param::Oldtype);
                let (lb, ext) = self.bounds(old);
                (self.size(old), lb, lb + ext)
            }
            Op::TypeCreateSubarray => {
                let old = op.param(p, Param::Oldtype);
                let nd = op.param(p, Param::Ndims).max(0) as usize;
                let sizes = arr(p, 4, nd);
                let sub: i64 = arr(p, 4 + nd, nd).iter().product();
                // MPI gives a subarray the extent of the whole array, from 0.
                let (_, oext) = self.bounds(old);
                let whole: i64 = sizes.iter().product();
                (sub * self.size(old), 0, whole * oext)
            }
            Op::TypeCreateDarray => match Darray::parse(p) {
                Ok(d) => {
                    // The extent of the whole global array, from 0, whatever the old type's
                    // bounds (the standard's resized type).
                    let (_, oext) = self.bounds(d.oldtype);
                    let size = d.local_len().saturating_mul(self.size(d.oldtype));
                    (size, 0, d.global_len().saturating_mul(oext))
                }
                // Kept, empty, so that a view over it is refused with the reason
                // ([`Types::flatten`]) rather than taken as bytes.
                Err(_) => (0, 0, 0),
            },
            Op::TypeCreateStruct => {
                let n = n as usize;
                let bls = arr(p, 2, n);
                let ds = arr(p, 2 + n, n);
                let ts = arr(p, 2 + 2 * n, n);
                let mut r = (0, i64::MAX, i64::MIN);
                for ((b, d), t) in bls.iter().zip(&ds).zip(&ts) {
                    if *b > 0 {
                        let (tlb, text) = self.bounds(*t);
                        let (b0, b1) = span(*b, text);
                        r.0 += b * self.size(*t);
                        r.1 = r.1.min(d + b0 + tlb);
                        r.2 = r.2.max(d + b1 + tlb + text);
                    }
                }
                if r.1 > r.2 { (0, 0, 0) } else { r }
            }
            Op::TypeCreateResized => {
                let lb = op.param(p, Param::Lb);
                (
                    self.size(op.param(p, Param::Oldtype)),
                    lb,
                    lb + op.param(p, Param::Extent),
                )
            }
            _ => return,
        };
        let id = op.param(p, Param::Newtype);
        if id < 0 {
            // The traced constructor failed: there is no type to describe.
            return;
        }
        self.derived.insert(
            id,
            Derived {
                op,
                params: p.to_vec(),
                size,
                lb,
                extent: ub - lb,
            },
        );
    }

    /// The old type and the (block length in old types, byte displacement) of each block of an
    /// indexed-family constructor with parameters `p`: indexed and indexed_block displace in
    /// extents of the old type, the h- forms in bytes; the _block forms share one length.
    pub fn indexed(&self, op: Op, p: &[i64]) -> Option<(i64, Vec<(i64, i64)>)> {
        let n = p.first().copied().unwrap_or(0).max(0) as usize;
        let (old, bls, ds) = match op {
            Op::TypeIndexed | Op::TypeCreateHindexed => {
                (p.get(1).copied()?, arr(p, 3, n), arr(p, 3 + n, n))
            }
            Op::TypeCreateIndexedBlock | Op::TypeCreateHindexedBlock => {
                let bl = p.get(1).copied()?;
                (p.get(2).copied()?, vec![bl; n], arr(p, 4, n))
            }
            _ => return None,
        };
        let unit = if matches!(op, Op::TypeIndexed | Op::TypeCreateIndexedBlock) {
            self.bounds(old).1
        } else {
            1
        };
        Some((
            old,
            bls.into_iter().zip(ds.iter().map(|d| d * unit)).collect(),
        ))
    }

    /// Flattens datatype `id` to its byte blocks (a predefined or unknown type is one block of
    /// its size). Errors name the type when it has more than [`MAX_BLOCKS`] blocks.
    pub fn flatten(&self, id: i64) -> Result<Flat, String> {
        let mut out = Blocks {
            v: Vec::new(),
            what: id,
        };
        self.flat_into(id, 0, &mut out, 0)?;
        let (_, extent) = self.bounds(id);
        Ok(Flat::new(out.v, extent))
    }

    fn flat_into(&self, id: i64, base: i64, out: &mut Blocks, depth: u32) -> Result<(), String> {
        // Type ids only ever refer to older types, so chains are finite; the bound guards a
        // corrupt or hand-made trace against unbounded recursion.
        if depth > 64 {
            return Err(format!(
                "datatype {id} nests more than 64 constructors deep"
            ));
        }
        let Some(d) = self.derived.get(&id) else {
            return out.push(base, self.size(id));
        };
        let p = &d.params;
        let what = out.what;
        let inner = |old: i64| -> Result<Vec<(i64, i64)>, String> {
            let mut b = Blocks {
                v: Vec::new(),
                what,
            };
            self.flat_into(old, 0, &mut b, depth + 1)?;
            Ok(b.v)
        };
        // Constructors without a parameter (struct has no `oldtype`) read it as 0.
        let get = |q: Param| d.op.get(p, q).unwrap_or(0);
        let n = get(Param::Count).max(0);
        match d.op {
            Op::TypeContiguous | Op::TypeVector | Op::TypeHvector => {
                let old = get(Param::Oldtype);
                let (_, oext) = self.bounds(old);
                let ib = inner(old)?;
                let (bl, stride) = match d.op {
                    Op::TypeContiguous => (1, oext),
                    Op::TypeVector => (get(Param::Blocklength), get(Param::Stride) * oext),
                    _ => (get(Param::Blocklength), get(Param::StrideBytes)),
                };
                let dense = ib.len() == 1 && ib[0] == (0, oext);
                for i in 0..n {
                    let at = base + i * stride;
                    if dense {
                        out.push(at, bl.max(0) * oext)?;
                    } else {
                        for j in 0..bl.max(0) {
                            out.extend(at + j * oext, &ib)?;
                        }
                    }
                }
            }
            Op::TypeIndexed
            | Op::TypeCreateHindexed
            | Op::TypeCreateIndexedBlock
            | Op::TypeCreateHindexedBlock => {
                let Some((old, blocks)) = self.indexed(d.op, p) else {
                    return Ok(());
                };
                let (_, oext) = self.bounds(old);
                let ib = inner(old)?;
                let dense = ib.len() == 1 && ib[0] == (0, oext);
                for (b, dd) in blocks {
                    let at = base + dd;
                    if dense {
                        out.push(at, b.max(0) * oext)?;
                    } else {
                        for j in 0..b {
                            out.extend(at + j * oext, &ib)?;
                        }
                    }
                }
            }
            Op::TypeDup => {
                self.flat_into(get(Param::Oldtype), base, out, depth + 1)?;
            }
            Op::TypeCreateSubarray => {
                let old = get(Param::Oldtype);
                let (_, oext) = self.bounds(old);
                let ib = inner(old)?;
                let dense = ib.len() == 1 && ib[0] == (0, oext);
                let nd = get(Param::Ndims).max(0) as usize;
                let (mut sizes, mut subs, mut starts) =
                    (arr(p, 4, nd), arr(p, 4 + nd, nd), arr(p, 4 + 2 * nd, nd));
                if nd == 0 || subs.iter().any(|s| *s <= 0) {
                    return Ok(());
                }
                // Work in C order: the last dimension varies fastest.
                if rsd::mpi::order_is_fortran(get(Param::Order)) {
                    sizes.reverse();
                    subs.reverse();
                    starts.reverse();
                }
                let mut stride = vec![oext; nd];
                for k in (0..nd - 1).rev() {
                    stride[k] = stride[k + 1] * sizes[k + 1];
                }
                // Odometer over every dimension but the last, whose run is contiguous.
                let mut idx = vec![0i64; nd - 1];
                loop {
                    let mut at = base + starts[nd - 1] * oext;
                    for k in 0..nd - 1 {
                        at += (starts[k] + idx[k]) * stride[k];
                    }
                    if dense {
                        out.push(at, subs[nd - 1] * oext)?;
                    } else {
                        for j in 0..subs[nd - 1] {
                            out.extend(at + j * oext, &ib)?;
                        }
                    }
                    let mut k = nd - 1;
                    loop {
                        if k == 0 {
                            return Ok(());
                        }
                        k -= 1;
                        idx[k] += 1;
                        if idx[k] < subs[k] {
                            break;
                        }
                        idx[k] = 0;
                    }
                }
            }
            Op::TypeCreateDarray => {
                let d = Darray::parse(p).map_err(|e| format!("datatype {id}: {e}"))?;
                let (_, oext) = self.bounds(d.oldtype);
                let ib = inner(d.oldtype)?;
                let dense = ib.len() == 1 && ib[0] == (0, oext);
                let dims = d.c_order();
                let nd = dims.len();
                if d.local_len() == 0 {
                    return Ok(());
                }
                let mut stride = vec![oext; nd];
                for k in (0..nd - 1).rev() {
                    stride[k] = stride[k + 1] * dims[k + 1].gsize;
                }
                let too_many = || {
                    format!(
                        "datatype {what} has more than {MAX_BLOCKS} noncontiguous blocks; the \
                         threads replay does not flatten it"
                    )
                };
                // Each dimension's owned indices as runs.
                let runs: Vec<Vec<(i64, i64)>> = dims
                    .iter()
                    .map(|dim| dim.runs(MAX_BLOCKS).ok_or_else(too_many))
                    .collect::<Result<_, _>>()?;
                // The trailing dimensions this process owns whole are one contiguous chunk of
                // the dimension before them: walked as that dimension's runs, so that every
                // pass of the odometer below starts a new block (the limit on blocks then
                // bounds the work; a whole array on one process is one pass).
                let mut m = nd;
                while m > 1 && runs[m - 1] == [(0, dims[m - 1].gsize)] {
                    m -= 1;
                }
                let unit = stride[m - 1];
                let chunk = unit / oext.max(1);
                let indices = |k: usize| runs[k].iter().flat_map(|(s, l)| *s..*s + *l);
                let mut outer: Vec<Vec<i64>> = Vec::with_capacity(m - 1);
                for (k, r) in runs[..m - 1].iter().enumerate() {
                    if r.iter().map(|r| r.1).sum::<i64>() > MAX_BLOCKS as i64 {
                        return Err(too_many());
                    }
                    outer.push(indices(k).collect());
                }
                // Odometer over the outer dimensions, slowest first.
                let mut idx = vec![0usize; m - 1];
                loop {
                    let mut at = base;
                    for k in 0..m - 1 {
                        at += outer[k][idx[k]] * stride[k];
                    }
                    for (s, l) in &runs[m - 1] {
                        let run = at + s * unit;
                        if dense {
                            out.push(run, l * unit)?;
                        } else {
                            for j in 0..l * chunk {
                                out.extend(run + j * oext, &ib)?;
                            }
                        }
                    }
                    let mut k = m - 1;
                    loop {
                        if k == 0 {
                            return Ok(());
                        }
                        k -= 1;
                        idx[k] += 1;
                        if idx[k] < outer[k].len() {
                            break;
                        }
                        idx[k] = 0;
                    }
                }
            }
            Op::TypeCreateStruct => {
                let n = n as usize;
                let bls = arr(p, 2, n);
                let ds = arr(p, 2 + n, n);
                let ts = arr(p, 2 + 2 * n, n);
                for ((b, dd), t) in bls.iter().zip(&ds).zip(&ts) {
                    let (_, text) = self.bounds(*t);
                    let ib = inner(*t)?;
                    for j in 0..*b {
                        out.extend(base + dd + j * text, &ib)?;
                    }
                }
            }
            Op::TypeCreateResized => {
                self.flat_into(get(Param::Oldtype), base, out, depth + 1)?;
            }
            _ => return out.push(base, d.size),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::trace::FlatEvent;

    fn ev(op: Op, params: Vec<i64>) -> FlatEvent {
        FlatEvent {
            op,
            sig: 0,
            path: None,
            params,
            children: Vec::new(),
        }
    }

    const INT: i64 = 7;
    const DOUBLE: i64 = 14;

    #[test]
    fn vector_of_ints_flattens_to_strided_blocks() {
        let mut t = Types::default();
        // 3 blocks of 2 ints, every 5 ints.
        t.track(&ev(Op::TypeVector, vec![3, 2, 5, INT, 1000]));
        assert_eq!(t.size(1000), 24);
        assert_eq!(t.bounds(1000), (0, (2 * 5 + 2) * 4));
        let f = t.flatten(1000).unwrap();
        assert_eq!(f.blocks, vec![(0, 8), (20, 8), (40, 8)]);
        // Data bytes 4..20 of a view at 100: the second half of block 0, all of block 1, the
        // first half of block 2.
        assert_eq!(f.pieces(100, 4, 16), vec![(104, 4), (120, 8), (140, 4)]);
        // Tiling: the next copy starts one extent (48 bytes) later.
        assert_eq!(f.pieces(0, 24, 8), vec![(48, 8)]);
        // End of file at 100 + 48 + 24: one whole copy and the first block of the next, plus
        // 4 bytes of its second.
        assert_eq!(f.data_before(100, 100 + 48 + 24), 24 + 8 + 4);
        assert_eq!(f.data_before(100, 50), 0);
        // Found by fuzzing (target export_codes): a negative data position, which a damaged
        // trace can hold, wrapped the block index; it touches no file region.
        assert_eq!(f.pieces(100, -4, 16), vec![]);
    }

    #[test]
    fn resized_vector_tiles_at_its_new_extent() {
        let mut t = Types::default();
        t.track(&ev(Op::TypeVector, vec![2, 1, 4, INT, 1000]));
        t.track(&ev(Op::TypeCreateResized, vec![1000, 0, 64, 1001]));
        let f = t.flatten(1001).unwrap();
        assert_eq!((f.size, f.extent), (8, 64));
        assert_eq!(f.pieces(0, 0, 16), vec![(0, 4), (16, 4), (64, 4), (80, 4)]);
    }

    #[test]
    fn subarray_in_both_orders() {
        let mut t = Types::default();
        // A 2x3 block at (1, 2) of a 4x6 array of doubles, C order (Open MPI's 0).
        t.track(&ev(
            Op::TypeCreateSubarray,
            vec![2, 0, DOUBLE, 1000, 4, 6, 2, 3, 1, 2],
        ));
        let f = t.flatten(1000).unwrap();
        assert_eq!(f.blocks, vec![(64, 24), (112, 24)]);
        assert_eq!((f.size, f.extent), (48, 192));
        // The same in Fortran order (MPICH's 57): dimensions listed fastest first.
        t.track(&ev(
            Op::TypeCreateSubarray,
            vec![2, 57, DOUBLE, 1001, 6, 4, 3, 2, 2, 1],
        ));
        assert_eq!(t.flatten(1001).unwrap().blocks, f.blocks);
    }

    #[test]
    fn indexed_struct_and_contiguous_nest() {
        let mut t = Types::default();
        t.track(&ev(Op::TypeIndexed, vec![2, INT, 1000, 1, 2, 0, 3]));
        assert_eq!(t.flatten(1000).unwrap().blocks, vec![(0, 4), (12, 8)]);
        t.track(&ev(Op::TypeContiguous, vec![2, 1000, 1001]));
        // The indexed type's extent is 20 bytes, so the second copy starts at 20.
        assert_eq!(
            t.flatten(1001).unwrap().blocks,
            vec![(0, 4), (12, 12), (32, 8)]
        );
        t.track(&ev(
            Op::TypeCreateStruct,
            vec![2, 1002, 1, 1, 0, 16, INT, DOUBLE],
        ));
        let f = t.flatten(1002).unwrap();
        assert_eq!(f.blocks, vec![(0, 4), (16, 8)]);
        assert_eq!(t.size(1002), 12);
    }

    #[test]
    fn hindexed_and_block_forms_and_dup() {
        let mut t = Types::default();
        // hindexed: 1 int at byte 2, 2 ints at byte 20.
        t.track(&ev(Op::TypeCreateHindexed, vec![2, INT, 1000, 1, 2, 2, 20]));
        assert_eq!(t.flatten(1000).unwrap().blocks, vec![(2, 4), (20, 8)]);
        assert_eq!(t.bounds(1000), (2, 26));
        // indexed_block: blocks of 2 ints at elements 0 and 5.
        t.track(&ev(Op::TypeCreateIndexedBlock, vec![2, 2, INT, 1001, 0, 5]));
        assert_eq!(t.flatten(1001).unwrap().blocks, vec![(0, 8), (20, 8)]);
        // hindexed_block of the indexed_block type (extent 28) at bytes 0 and 100.
        t.track(&ev(
            Op::TypeCreateHindexedBlock,
            vec![2, 1, 1001, 1002, 0, 100],
        ));
        assert_eq!(
            t.flatten(1002).unwrap().blocks,
            vec![(0, 8), (20, 8), (100, 8), (120, 8)]
        );
        t.track(&ev(Op::TypeDup, vec![1002, 1003]));
        assert_eq!(t.flatten(1003).unwrap(), t.flatten(1002).unwrap());
        assert_eq!(t.size(1003), 32);
    }

    #[test]
    fn unknown_type_is_one_byte_block_and_failed_ctor_is_ignored() {
        let mut t = Types::default();
        t.track(&ev(Op::TypeVector, vec![3, 2, 5, INT, -1]));
        assert!(t.ctor(-1).is_none());
        let f = t.flatten(4321).unwrap();
        assert!(f.is_dense());
        assert_eq!(f.pieces(10, 5, 3), vec![(15, 3)]);
    }

    /// A darray event's parameters: dims as (gsize, distrib, darg, psize).
    fn darray(
        size: i64,
        rank: i64,
        fortran: bool,
        old: i64,
        dims: &[(i64, i64, i64, i64)],
    ) -> Vec<i64> {
        let nd = dims.len() as i64;
        let mut v =
            rsd::op::args::type_create_darray(size, rank, nd, i64::from(fortran), old, 1000);
        for k in 0..4 {
            v.extend(dims.iter().map(|d| [d.0, d.1, d.2, d.3][k]));
        }
        v
    }

    /// The elements rank `rank` owns, by brute force: every element of the global array, its
    /// owner along each dimension computed from its index alone, in linear (file) order.
    fn owned(rank: i64, fortran: bool, dims: &[(i64, i64, i64, i64)]) -> Vec<i64> {
        use rsd::mpi::distribute::{BLOCK, CYCLIC, DFLT_DARG};
        let nd = dims.len();
        let mut coords = vec![0; nd];
        let mut left = rank;
        for k in (0..nd).rev() {
            coords[k] = left % dims[k].3;
            left /= dims[k].3;
        }
        let total: i64 = dims.iter().map(|d| d.0).product();
        let mut out = Vec::new();
        for lin in 0..total {
            // The index along each dimension: the last varies fastest in C order, the first
            // in Fortran order.
            let mut rest = lin;
            let mut idx = vec![0; nd];
            let order: Vec<usize> = if fortran {
                (0..nd).collect()
            } else {
                (0..nd).rev().collect()
            };
            for k in order {
                idx[k] = rest % dims[k].0;
                rest /= dims[k].0;
            }
            let mine = (0..nd).all(|k| {
                let (g, dist, darg, p) = dims[k];
                let owner = match dist {
                    BLOCK => {
                        let b = if darg == DFLT_DARG {
                            (g + p - 1) / p
                        } else {
                            darg
                        };
                        idx[k] / b
                    }
                    CYCLIC => {
                        let b = if darg == DFLT_DARG { 1 } else { darg };
                        (idx[k] / b) % p
                    }
                    _ => 0,
                };
                owner == coords[k]
            });
            if mine {
                out.push(lin);
            }
        }
        out
    }

    /// The element indices of a type flattened over elements of `elem` bytes.
    fn elements(f: &Flat, elem: i64) -> Vec<i64> {
        f.blocks
            .iter()
            .flat_map(|(d, l)| (d / elem)..(d + l) / elem)
            .collect()
    }

    #[test]
    fn darray_block_cyclic_none_in_both_orders() {
        use rsd::mpi::distribute::{BLOCK, CYCLIC, DFLT_DARG, NONE};
        let mut t = Types::default();
        // A 5x7 array of ints over a 2x2 grid: rows BLOCK (3 then 2), columns CYCLIC(2).
        // Rank 3 is at (1, 1): rows 3-4, columns 2-3 and 6 (the wrap).
        let dims = [(5, BLOCK, DFLT_DARG, 2), (7, CYCLIC, 2, 2)];
        t.track(&ev(Op::TypeCreateDarray, darray(4, 3, false, INT, &dims)));
        let f = t.flatten(1000).unwrap();
        assert_eq!(elements(&f, 4), vec![23, 24, 27, 30, 31, 34]);
        assert_eq!(f.blocks, vec![(92, 8), (108, 4), (120, 8), (136, 4)]);
        assert_eq!((f.size, f.extent), (24, 5 * 7 * 4));
        assert_eq!(t.bounds(1000), (0, 140));
        assert_eq!(elements(&f, 4), owned(3, false, &dims));
        // Fortran order: the first dimension fastest.
        t.track(&ev(Op::TypeCreateDarray, darray(4, 3, true, INT, &dims)));
        let f = t.flatten(1000).unwrap();
        assert_eq!(elements(&f, 4), owned(3, true, &dims));
        assert_eq!(elements(&f, 4), vec![13, 14, 18, 19, 33, 34]);
        // NONE: a whole dimension; over a derived (non-dense) old type.
        t.track(&ev(Op::TypeVector, vec![2, 1, 2, INT, 1001]));
        t.track(&ev(
            Op::TypeCreateDarray,
            darray(
                2,
                1,
                false,
                1001,
                &[(2, NONE, DFLT_DARG, 1), (3, BLOCK, 2, 2)],
            ),
        ));
        let f = t.flatten(1000).unwrap();
        // The vector's extent is 12 bytes; rank 1 owns column 2 of both rows.
        assert_eq!(f.blocks, vec![(24, 4), (32, 4), (60, 4), (68, 4)]);
        assert_eq!((f.size, f.extent), (16, 6 * 12));
    }

    #[test]
    fn darray_owned_whole_is_walked_as_one_chunk() {
        use rsd::mpi::distribute::{BLOCK, CYCLIC, DFLT_DARG, NONE};
        let mut t = Types::default();
        // A 5,000,000 x 3 array on one process: one block, not 5,000,000 rows (more rows than
        // the flattening walks: it was refused).
        let whole = [(5_000_000, NONE, DFLT_DARG, 1), (3, BLOCK, DFLT_DARG, 1)];
        t.track(&ev(Op::TypeCreateDarray, darray(1, 0, false, INT, &whole)));
        assert_eq!(t.flatten(1000).unwrap().blocks, vec![(0, 60_000_000)]);
        // Cyclic rows of whole 2 x 3 planes: each row a chunk of 6 ints.
        let planes = [
            (4, CYCLIC, DFLT_DARG, 2),
            (2, NONE, DFLT_DARG, 1),
            (3, BLOCK, DFLT_DARG, 1),
        ];
        t.track(&ev(Op::TypeCreateDarray, darray(2, 1, false, INT, &planes)));
        assert_eq!(t.flatten(1000).unwrap().blocks, vec![(24, 24), (72, 24)]);
        assert_eq!(
            elements(&t.flatten(1000).unwrap(), 4),
            owned(1, false, &planes)
        );
        // The same over a non-dense old type, element by element.
        t.track(&ev(Op::TypeVector, vec![2, 1, 2, INT, 1001]));
        t.track(&ev(
            Op::TypeCreateDarray,
            darray(2, 1, false, 1001, &planes),
        ));
        let mut want = Blocks {
            v: Vec::new(),
            what: 1000,
        };
        for e in owned(1, false, &planes) {
            want.extend(e * 12, &[(0, 4), (8, 4)]).unwrap();
        }
        assert_eq!(t.flatten(1000).unwrap().blocks, want.v);
    }

    #[test]
    fn bad_darray_is_refused_by_name_and_a_view_over_it_says_why() {
        let mut t = Types::default();
        // psizes 3 for size 4.
        t.track(&ev(
            Op::TypeCreateDarray,
            darray(4, 0, false, INT, &[(8, 0, -1, 3)]),
        ));
        let e = t.flatten(1000).unwrap_err();
        assert!(
            e.contains("datatype 1000") && e.contains("size is 4"),
            "{e}"
        );
        assert_eq!(t.size(1000), 0);
    }

    use proptest::prelude::*;

    /// A darray's dimensions (gsize, distrib, darg, psize), a rank of its grid, Fortran order.
    type DarrayCase = (Vec<(i64, i64, i64, i64)>, i64, bool);

    /// A valid darray: 1 to 3 dimensions, any rank of its grid, either order.
    fn valid_darray() -> impl Strategy<Value = DarrayCase> {
        let dim =
            (1i64..13, 0i64..3, 0i64..4, 1i64..5, 0i64..3).prop_map(|(g, dist, a, p, more)| {
                use rsd::mpi::distribute::{BLOCK, DFLT_DARG, NONE};
                match dist {
                    NONE => (g, NONE, DFLT_DARG, 1),
                    // An explicit block must cover the dimension: ceil(g/p) and up.
                    BLOCK if a > 0 => (g, BLOCK, (g + p - 1) / p + more, p),
                    _ => (g, dist, if a == 0 { DFLT_DARG } else { a }, p),
                }
            });
        (
            prop::collection::vec(dim, 1..4),
            any::<u32>(),
            any::<bool>(),
        )
            .prop_map(|(dims, r, fortran)| {
                let size: i64 = dims.iter().map(|d| d.3).product();
                (dims, r as i64 % size, fortran)
            })
    }

    proptest! {
        #[test]
        fn darray_typemap_is_the_elements_the_rank_owns((dims, rank, fortran) in valid_darray()) {
            let size: i64 = dims.iter().map(|d| d.3).product();
            let mut t = Types::default();
            t.track(&ev(Op::TypeCreateDarray, darray(size, rank, fortran, DOUBLE, &dims)));
            let f = t.flatten(1000).unwrap();
            let want = owned(rank, fortran, &dims);
            prop_assert_eq!(elements(&f, 8), want.clone());
            prop_assert_eq!(f.size, want.len() as i64 * 8);
            prop_assert_eq!(t.size(1000), f.size);
            prop_assert_eq!(t.bounds(1000), (0, dims.iter().map(|d| d.0).product::<i64>() * 8));
        }

        #[test]
        fn darrays_of_all_ranks_partition_the_array((dims, _, fortran) in valid_darray()) {
            let size: i64 = dims.iter().map(|d| d.3).product();
            let mut t = Types::default();
            let mut seen = Vec::new();
            for rank in 0..size {
                t.track(&ev(Op::TypeCreateDarray, darray(size, rank, fortran, INT, &dims)));
                seen.extend(elements(&t.flatten(1000).unwrap(), 4));
            }
            seen.sort();
            let total: i64 = dims.iter().map(|d| d.0).product();
            prop_assert_eq!(seen, (0..total).collect::<Vec<_>>());
        }
    }

    #[test]
    fn huge_filetype_is_refused_not_flattened() {
        let mut t = Types::default();
        t.track(&ev(Op::TypeVector, vec![1 << 23, 1, 2, INT, 1000]));
        let e = t.flatten(1000).unwrap_err();
        assert!(e.contains("datatype 1000"), "{e}");
    }
}
