//! The checks of `MPI_Type_create_darray` shared by the Open MPI and MPICH test binaries:
//! iotrex's type maps against what the library makes of the same darrays
//! (`tests/apps/darray_typemap.c`), and the file table's placement of every rank's bytes of
//! `tests/apps/darray.c` against where the bytes really are in its files.

use super::Run;
use filetable::{Effect, FileTable, Offline};
use rsd::mpi::distribute::{BLOCK, CYCLIC, DFLT_DARG, NONE};
use rsd::op::{Dir, Op};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `MPI_INT`'s id in traces.
const INT: i64 = 7;

/// One darray: over `MPI_INT` (`old` 0) or `MPI_Type_vector(2, 1, 2, MPI_INT)` (1), its order
/// and dimensions (gsize, distribution, darg, psize) in the stored encoding.
#[derive(Debug, Clone)]
pub struct Case {
    pub old: u8,
    pub fortran: bool,
    pub dims: Vec<(i64, i64, i64, i64)>,
}

impl Case {
    pub fn size(&self) -> i64 {
        self.dims.iter().map(|d| d.3).product()
    }

    /// Its line of `darray_typemap`'s input.
    fn line(&self) -> String {
        let mut v = vec![
            self.old as i64,
            self.dims.len() as i64,
            self.fortran as i64,
            self.size(),
        ];
        for k in 0..4 {
            v.extend(self.dims.iter().map(|d| [d.0, d.1, d.2, d.3][k]));
        }
        v.iter().map(i64::to_string).collect::<Vec<_>>().join(" ")
    }
}

/// Many valid darrays, uneven divisions included: every one-dimensional distribution of 1,
/// 5, 7 and 12 elements over 1 to 4 processes, then two- and three-dimensional ones drawn
/// from the same choices (a fixed generator: the same cases every run), in both orders, over
/// both old types.
pub fn cases() -> Vec<Case> {
    let dim_choices = |g: i64, p: i64| -> Vec<(i64, i64, i64, i64)> {
        let mut v = vec![
            (g, BLOCK, DFLT_DARG, p),
            // An explicit block, one more than needed: the last processes get less, or none.
            (g, BLOCK, (g + p - 1) / p + 1, p),
            (g, CYCLIC, DFLT_DARG, p),
            (g, CYCLIC, 2, p),
            (g, CYCLIC, 3, p),
        ];
        if p == 1 {
            v.push((g, NONE, DFLT_DARG, 1));
        }
        v
    };
    let mut all_dims = Vec::new();
    for g in [1, 5, 7, 12] {
        for p in 1..=4 {
            all_dims.extend(dim_choices(g, p));
        }
    }
    let mut out: Vec<Case> = Vec::new();
    for d in &all_dims {
        for fortran in [false, true] {
            out.push(Case {
                old: 0,
                fortran,
                dims: vec![*d],
            });
        }
    }
    // A 64-bit linear congruential generator: deterministic, independent of any crate.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 33) as usize) % n
    };
    for nd in [2usize, 3] {
        for i in 0..120 {
            let dims: Vec<_> = (0..nd).map(|_| all_dims[next(all_dims.len())]).collect();
            // Keep the grids small: at most 24 processes.
            if dims.iter().map(|d| d.3).product::<i64>() > 24 {
                continue;
            }
            out.push(Case {
                old: (i % 3 == 0) as u8,
                fortran: i % 2 == 1,
                dims,
            });
        }
    }
    out
}

/// `darray_typemap`'s input for `cases`.
pub fn typemap_input(cases: &[Case]) -> String {
    cases.iter().map(|c| c.line() + "\n").collect()
}

/// How a library's `MPI_Type_get_true_extent` of a darray relates to its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrueExtent {
    /// The span of the data, exactly (Open MPI).
    Exact,
    /// A span that holds the data, possibly more: MPICH 4's can start before the data (seen:
    /// a CYCLIC(2) x CYCLIC(2) darray whose data starts at column 2 of a row, its true lower
    /// bound at column 0 of that row), though the type map it packs is exactly the data.
    Covers,
}

/// Asserts that `darray_typemap`'s output (under `library`) for `cases` is, for every rank of
/// every case, the file table's type: size, lower bound and extent, every element of the type
/// map in order, and the true extent as `true_extent` says. Returns how many types were
/// compared.
pub fn assert_typemaps_agree(
    output: &str,
    cases: &[Case],
    library: &str,
    true_extent: TrueExtent,
) -> usize {
    let mut rows: BTreeMap<(usize, i64), Vec<i64>> = BTreeMap::new();
    for l in output.lines().filter(|l| l.starts_with("T ")) {
        let v: Vec<i64> = l[2..]
            .split_whitespace()
            .map(|x| x.parse().expect("an integer"))
            .collect();
        rows.insert((v[0] as usize, v[1]), v[2..].to_vec());
    }
    let mut compared = 0;
    for (i, c) in cases.iter().enumerate() {
        for rank in 0..c.size() {
            let mpi = rows
                .get(&(i, rank))
                .unwrap_or_else(|| panic!("{library}: no type map for case {i} rank {rank}"));
            let (tsize, lb, ext, tlb, text) = (mpi[0], mpi[1], mpi[2], mpi[3], mpi[4]);
            let elems = &mpi[5..];
            let mut types = filetable::Types::default();
            let mut old = INT;
            if c.old == 1 {
                types.track_call(Op::TypeVector, &[2, 1, 2, INT, 1000]);
                old = 1000;
            }
            let mut p = rsd::op::args::type_create_darray(
                c.size(),
                rank,
                c.dims.len() as i64,
                c.fortran as i64,
                old,
                1001,
            );
            for k in 0..4 {
                p.extend(c.dims.iter().map(|d| [d.0, d.1, d.2, d.3][k]));
            }
            types.track_call(Op::TypeCreateDarray, &p);
            let flat = types.flatten(1001).unwrap();
            let ours: Vec<i64> = flat
                .blocks
                .iter()
                .flat_map(|(d, l)| (d / 4)..(d + l) / 4)
                .collect();
            let what = format!("{library}: case {i} {c:?} rank {rank}");
            assert_eq!(ours, elems, "{what}: type map");
            assert_eq!(flat.size, tsize, "{what}: size");
            assert_eq!(types.bounds(1001), (lb, ext), "{what}: lb, extent");
            if tsize > 0 {
                let first = flat.blocks[0].0;
                let (d, l) = flat.blocks[flat.blocks.len() - 1];
                match true_extent {
                    TrueExtent::Exact => {
                        assert_eq!((first, d + l - first), (tlb, text), "{what}: true extent")
                    }
                    TrueExtent::Covers => assert!(
                        tlb <= first && d + l <= tlb + text,
                        "{what}: true extent {:?} does not hold the data {:?}",
                        (tlb, text),
                        (first, d + l - first)
                    ),
                }
            }
            compared += 1;
        }
    }
    compared
}

/// The files of `tests/apps/darray.c`.
pub const FILES: [&str; 5] = [
    "darray_block_block_c",
    "darray_cyclic_block_f",
    "darray_none_cyclic_c",
    "darray_block_cyclic_none_c",
    "darray_cyclic_block_block_f",
];

/// Where each rank's k-th written byte of each file of `run` really is, from the files in
/// `dir`: element k/4 of rank r holds `((r + 1) << 24) | k/4` (darray.c), so the file says
/// who wrote each byte and which of its bytes it is. file name -> rank -> offsets, in the
/// order of the rank's bytes.
fn truth(dir: &Path) -> BTreeMap<String, BTreeMap<i64, Vec<u64>>> {
    let mut out: BTreeMap<String, BTreeMap<i64, Vec<u64>>> = BTreeMap::new();
    for name in FILES {
        let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut per: BTreeMap<i64, BTreeMap<u64, u64>> = BTreeMap::new();
        for (at, w) in bytes.chunks_exact(4).enumerate() {
            let v = u32::from_le_bytes(w.try_into().unwrap());
            if v == 0 {
                continue; // the header before the displacement
            }
            let (rank, k) = ((v >> 24) as i64 - 1, (v & 0xff_ffff) as u64);
            for b in 0..4 {
                per.entry(rank)
                    .or_default()
                    .insert(k * 4 + b, at as u64 * 4 + b);
            }
        }
        let m = per
            .into_iter()
            .map(|(r, by_k)| {
                // Every byte of the rank, none missing: k runs 0, 1, 2, ...
                assert!(
                    by_k.keys().copied().eq(0..by_k.len() as u64),
                    "{name}: rank {r}'s bytes are not all in the file"
                );
                (r, by_k.into_values().collect())
            })
            .collect();
        out.insert(name.to_string(), m);
    }
    out
}

/// Asserts that the file table, walking each rank's expanded trace of `run` (darray.c writing
/// into `dir`), puts every byte of every rank's `MPI_File_write_all` where the file says that
/// rank's byte is, and that the darray views were taken as recorded (no view refused).
pub fn assert_placement_matches_files(run: &Run, dir: &Path) {
    let tf = run.read();
    let want = truth(dir);
    let mut placed: BTreeMap<String, BTreeMap<i64, Vec<u64>>> = BTreeMap::new();
    let mut darrays = 0;
    for rank in 0..tf.header.nranks {
        let mut table = FileTable::new();
        for e in tf.trace.expand(rank) {
            darrays += (e.op == Op::TypeCreateDarray) as usize;
            let (effect, _) = table.apply(e.op, &e.params, e.path.as_deref(), None, &mut Offline);
            match effect {
                Effect::SetView { unbuilt, .. } => {
                    assert!(unbuilt.is_none(), "rank {rank}: view refused: {unbuilt:?}")
                }
                Effect::Access(a) if a.dir == Dir::Write && e.op == Op::FileWriteAll => {
                    let path = table.file(a.file).and_then(|f| f.path.clone()).unwrap();
                    let name = Path::new(&path).file_name().unwrap().to_string_lossy();
                    let offs = placed
                        .entry(name.to_string())
                        .or_default()
                        .entry(rank as i64)
                        .or_default();
                    for (o, l) in a.regions {
                        offs.extend(o..o + l);
                    }
                }
                _ => {}
            }
        }
    }
    assert_eq!(
        darrays,
        FILES.len() * tf.header.nranks as usize,
        "every rank's darrays are in the trace"
    );
    for name in FILES {
        let (w, p) = (&want[name], &placed[name]);
        for (r, offs) in w {
            assert_eq!(
                p.get(r),
                Some(offs),
                "{name}: rank {r}'s bytes, placed by the file table (left) and in the file"
            );
        }
        // Ranks that own nothing write nothing.
        for (r, offs) in p {
            assert!(w.contains_key(r) || offs.is_empty(), "{name}: rank {r}");
        }
        let all: BTreeSet<u64> = p.values().flatten().copied().collect();
        assert_eq!(
            all.len(),
            p.values().map(Vec::len).sum::<usize>(),
            "{name}: two ranks placed at one byte"
        );
    }
}
