//! `MPI_Type_create_darray`: which elements of a distributed global array one process owns,
//! exactly as the MPI standard defines it (MPI-3.1 §4.1.4), from the recorded constructor.
//!
//! The processes form a grid of `psizes` in row-major order (whatever the array's order), the
//! caller at `rank`. In each dimension a process owns, in increasing global index:
//! - `MPI_DISTRIBUTE_BLOCK`: one block of `darg` elements (default: `ceil(gsize / psize)`),
//!   the `c`-th for grid coordinate `c`, cut at the array's end (possibly empty);
//! - `MPI_DISTRIBUTE_CYCLIC`: blocks of `darg` elements (default 1), the `c`-th, then every
//!   `psize`-th after it, the last one cut at the array's end;
//! - `MPI_DISTRIBUTE_NONE`: the whole dimension (its `psize` must be 1).
//!
//! The type map lists the owned elements dimension by dimension, the slowest dimension
//! outermost (the first in C order, the last in Fortran order): that is increasing file order,
//! which is what a filetype needs. The type's lower bound is 0 and its extent the whole global
//! array's, so that copies of it tile the array. The replay builds the real type from the same
//! parameters after [`Darray::parse`] accepted them, so every consumer refuses the same traces.

use rsd::mpi::distribute;
use rsd::op::{Op, Param};

/// Why a recorded `MPI_Type_create_darray` describes no type (MPI refuses such a call, so a
/// trace holds one only when the call failed, or when the trace was edited or damaged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DarrayError {
    /// `ndims` is below 1.
    #[error("MPI_Type_create_darray: ndims is {0}, it must be at least 1")]
    Ndims(i64),
    /// The event holds fewer array values than `4 * ndims`.
    #[error("MPI_Type_create_darray: the event holds {have} array values, ndims {ndims} needs {}", 4 * ndims)]
    Truncated {
        /// The array values the event holds.
        have: usize,
        /// Its `ndims`.
        ndims: i64,
    },
    /// A global size or a process-grid size is not positive.
    #[error("MPI_Type_create_darray: {what}[{dim}] is {value}, it must be positive")]
    NotPositive {
        /// `gsizes` or `psizes`.
        what: &'static str,
        /// The dimension.
        dim: usize,
        /// Its value.
        value: i64,
    },
    /// The process grid's size is not `size`.
    #[error(
        "MPI_Type_create_darray: the psizes {psizes:?} make a grid of {grid} processes, size is {size}"
    )]
    Grid {
        /// The process-grid sizes.
        psizes: Vec<i64>,
        /// Their product (saturated).
        grid: i64,
        /// The recorded `size`.
        size: i64,
    },
    /// `rank` is not a process of the grid.
    #[error("MPI_Type_create_darray: rank {rank} is out of range for size {size}")]
    Rank {
        /// The recorded `rank`.
        rank: i64,
        /// The recorded `size`.
        size: i64,
    },
    /// A distribution that is none of BLOCK, CYCLIC, NONE.
    #[error("MPI_Type_create_darray: distribs[{dim}] is {value}, which is no distribution")]
    Distrib {
        /// The dimension.
        dim: usize,
        /// The stored value.
        value: i64,
    },
    /// A distribution argument that is neither the default nor a positive block size.
    #[error(
        "MPI_Type_create_darray: dargs[{dim}] is {value}, it must be positive or MPI_DISTRIBUTE_DFLT_DARG"
    )]
    Darg {
        /// The dimension.
        dim: usize,
        /// The stored value.
        value: i64,
    },
    /// A BLOCK distribution whose blocks do not cover the dimension.
    #[error(
        "MPI_Type_create_darray: dimension {dim}: psizes {psize} blocks of dargs {darg} cover less than gsizes {gsize}"
    )]
    BlockTooSmall {
        /// The dimension.
        dim: usize,
        /// Its block size.
        darg: i64,
        /// Its process count.
        psize: i64,
        /// Its global size.
        gsize: i64,
    },
    /// A NONE distribution over more than one process.
    #[error(
        "MPI_Type_create_darray: distribs[{dim}] is MPI_DISTRIBUTE_NONE, so psizes[{dim}] must be 1, not {psize}"
    )]
    NoneDistributed {
        /// The dimension.
        dim: usize,
        /// Its process count.
        psize: i64,
    },
    /// The global array has more elements than a 64-bit byte offset can address.
    #[error("MPI_Type_create_darray: the global array {gsizes:?} is too large")]
    TooLarge {
        /// The global sizes.
        gsizes: Vec<i64>,
    },
}

/// How one dimension is distributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distrib {
    /// One block per process; the block size (the default resolved).
    Block(i64),
    /// Blocks dealt round the processes; the block size (the default resolved).
    Cyclic(i64),
    /// Not distributed.
    None,
}

/// One dimension of a darray.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dim {
    /// The global size.
    pub gsize: i64,
    /// The distribution.
    pub distrib: Distrib,
    /// The processes along it.
    pub psize: i64,
    /// The caller's grid coordinate along it.
    pub coord: i64,
}

impl Dim {
    /// The runs of global indices this process owns, in increasing order, `(start, len)`,
    /// adjacent runs merged; `None` when there are more than `limit`.
    pub fn runs(&self, limit: usize) -> Option<Vec<(i64, i64)>> {
        let mut out: Vec<(i64, i64)> = Vec::new();
        let mut push = |s: i64, l: i64| -> bool {
            if l <= 0 {
                return true;
            }
            if let Some((ps, pl)) = out.last_mut()
                && *ps + *pl == s
            {
                *pl += l;
                return true;
            }
            out.push((s, l));
            out.len() <= limit
        };
        match self.distrib {
            Distrib::None => {
                push(0, self.gsize);
            }
            Distrib::Block(b) => {
                let s = self.coord.saturating_mul(b);
                push(s, (self.gsize - s).clamp(0, b));
            }
            // On one process the blocks are the whole dimension (walked block by block, a
            // damaged trace's huge dimension would take hours to merge back).
            Distrib::Cyclic(_) if self.psize == 1 => {
                push(0, self.gsize);
            }
            Distrib::Cyclic(b) => {
                // Blocks of different processes lie between: every block is a new run, so
                // the limit bounds the walk.
                let step = self.psize.saturating_mul(b);
                let mut s = self.coord.saturating_mul(b);
                while s < self.gsize {
                    if !push(s, (self.gsize - s).min(b)) {
                        return None;
                    }
                    s = s.saturating_add(step);
                }
            }
        }
        (out.len() <= limit).then_some(out)
    }

    /// The number of global indices this process owns.
    pub fn local_len(&self) -> i64 {
        match self.distrib {
            Distrib::None => self.gsize,
            Distrib::Block(b) => (self.gsize - self.coord.saturating_mul(b)).clamp(0, b),
            Distrib::Cyclic(b) => {
                let first = self.coord.saturating_mul(b);
                if first >= self.gsize {
                    return 0;
                }
                // Whole rounds of psize blocks from the first, then what is left of one block.
                let left = self.gsize - first;
                let round = self.psize.saturating_mul(b);
                (left / round) * b + (left % round).min(b)
            }
        }
    }
}

/// A valid `MPI_Type_create_darray`, its dimensions in the order the call listed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Darray {
    /// The dimensions.
    pub dims: Vec<Dim>,
    /// Fortran order: the first dimension varies fastest.
    pub fortran: bool,
    /// The old type's id.
    pub oldtype: i64,
}

impl Darray {
    /// The darray of a recorded `MPI_Type_create_darray` (`p` its parameters, arrays
    /// included), or why it describes none.
    pub fn parse(p: &[i64]) -> Result<Darray, DarrayError> {
        let op = Op::TypeCreateDarray;
        let get = |q: Param| op.param(p, q);
        let (size, rank, nd) = (get(Param::Size), get(Param::Rank), get(Param::Ndims));
        if nd < 1 {
            return Err(DarrayError::Ndims(nd));
        }
        let fixed = op.params().len();
        let have = p.len().saturating_sub(fixed);
        let n = nd as usize;
        if (have as u128) < 4 * n as u128 {
            return Err(DarrayError::Truncated { have, ndims: nd });
        }
        let a = |k: usize| &p[fixed + k * n..fixed + (k + 1) * n];
        let (gsizes, distribs, dargs, psizes) = (a(0), a(1), a(2), a(3));
        for (what, v) in [("gsizes", gsizes), ("psizes", psizes)] {
            if let Some(dim) = v.iter().position(|x| *x <= 0) {
                return Err(DarrayError::NotPositive {
                    what,
                    dim,
                    value: v[dim],
                });
            }
        }
        let grid = psizes.iter().fold(1i64, |g, x| g.saturating_mul(*x));
        if grid != size {
            return Err(DarrayError::Grid {
                psizes: psizes.to_vec(),
                grid,
                size,
            });
        }
        if !(0..size).contains(&rank) {
            return Err(DarrayError::Rank { rank, size });
        }
        let mut bytes_ok = Some(1i64);
        for g in gsizes {
            bytes_ok = bytes_ok.and_then(|t| t.checked_mul(*g));
        }
        // Element offsets are multiplied by the old type's extent later: keep headroom.
        if bytes_ok.is_none_or(|t| t > i64::MAX >> 16) {
            return Err(DarrayError::TooLarge {
                gsizes: gsizes.to_vec(),
            });
        }
        // The caller's coordinates in the row-major process grid.
        let mut coords = vec![0i64; n];
        let mut left = rank;
        for k in (0..n).rev() {
            coords[k] = left % psizes[k];
            left /= psizes[k];
        }
        let mut dims = Vec::with_capacity(n);
        for dim in 0..n {
            let (gsize, psize, darg) = (gsizes[dim], psizes[dim], dargs[dim]);
            let dflt = darg == distribute::DFLT_DARG;
            if !dflt && darg <= 0 {
                return Err(DarrayError::Darg { dim, value: darg });
            }
            let distrib = match distribs[dim] {
                distribute::BLOCK => {
                    // ceil(gsize / psize), without the overflow of gsize + psize - 1.
                    let b = if dflt {
                        gsize / psize + i64::from(gsize % psize != 0)
                    } else {
                        darg
                    };
                    if b.saturating_mul(psize) < gsize {
                        return Err(DarrayError::BlockTooSmall {
                            dim,
                            darg: b,
                            psize,
                            gsize,
                        });
                    }
                    Distrib::Block(b)
                }
                distribute::CYCLIC => Distrib::Cyclic(if dflt { 1 } else { darg }),
                distribute::NONE => {
                    if psize != 1 {
                        return Err(DarrayError::NoneDistributed { dim, psize });
                    }
                    Distrib::None
                }
                value => return Err(DarrayError::Distrib { dim, value }),
            };
            dims.push(Dim {
                gsize,
                distrib,
                psize,
                coord: coords[dim],
            });
        }
        Ok(Darray {
            dims,
            fortran: rsd::mpi::order_is_fortran(get(Param::Order)),
            oldtype: get(Param::Oldtype),
        })
    }

    /// The elements of the global array.
    pub fn global_len(&self) -> i64 {
        self.dims.iter().map(|d| d.gsize).product()
    }

    /// The elements this process owns.
    pub fn local_len(&self) -> i64 {
        self.dims.iter().map(Dim::local_len).product()
    }

    /// The dimensions slowest first (C order), whatever the array's order.
    pub fn c_order(&self) -> Vec<Dim> {
        let mut d = self.dims.clone();
        if self.fortran {
            d.reverse();
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::mpi::distribute::{BLOCK, CYCLIC, DFLT_DARG, NONE};
    use rsd::op::args;

    const INT: i64 = 7;

    /// The parameters of a darray event.
    pub(crate) fn ev(
        size: i64,
        rank: i64,
        fortran: bool,
        dims: &[(i64, i64, i64, i64)],
    ) -> Vec<i64> {
        let order = if fortran { 1 } else { 0 };
        let mut v = args::type_create_darray(size, rank, dims.len() as i64, order, INT, 1000);
        for k in 0..4 {
            v.extend(dims.iter().map(|d| [d.0, d.1, d.2, d.3][k]));
        }
        v
    }

    #[test]
    fn each_distribution_owns_what_the_standard_says() {
        // 10 elements over 3 processes.
        let runs = |distrib: i64, darg: i64, coord: i64| {
            let d = Darray::parse(&ev(3, coord, false, &[(10, distrib, darg, 3)])).unwrap();
            (d.dims[0].runs(100).unwrap(), d.dims[0].local_len())
        };
        // BLOCK, default: blocks of ceil(10/3) = 4; the last process gets 2.
        assert_eq!(runs(BLOCK, DFLT_DARG, 0), (vec![(0, 4)], 4));
        assert_eq!(runs(BLOCK, DFLT_DARG, 2), (vec![(8, 2)], 2));
        // BLOCK, darg 5: the last process gets nothing.
        assert_eq!(runs(BLOCK, 5, 1), (vec![(5, 5)], 5));
        assert_eq!(runs(BLOCK, 5, 2), (vec![], 0));
        // CYCLIC, default 1: every third element.
        assert_eq!(
            runs(CYCLIC, DFLT_DARG, 1),
            (vec![(1, 1), (4, 1), (7, 1)], 3)
        );
        assert_eq!(runs(CYCLIC, DFLT_DARG, 0).1, 4);
        // CYCLIC(2): blocks 0-1, 6-7 for 0; 4-5 for 2; 2-3, 8-9 for 1 (the wrap).
        assert_eq!(runs(CYCLIC, 2, 0), (vec![(0, 2), (6, 2)], 4));
        assert_eq!(runs(CYCLIC, 2, 1), (vec![(2, 2), (8, 2)], 4));
        assert_eq!(runs(CYCLIC, 2, 2), (vec![(4, 2)], 2));
        // CYCLIC(4): the cut last block.
        assert_eq!(runs(CYCLIC, 4, 2), (vec![(8, 2)], 2));
        // CYCLIC on one process: the whole dimension, one run, whatever its size.
        let d = Darray::parse(&ev(1, 0, false, &[(1 << 40, CYCLIC, DFLT_DARG, 1)])).unwrap();
        assert_eq!(d.dims[0].runs(4).unwrap(), vec![(0, 1 << 40)]);
        // More blocks than the limit: refused, not walked to the end.
        let d = Darray::parse(&ev(2, 0, false, &[(1 << 40, CYCLIC, DFLT_DARG, 2)])).unwrap();
        assert_eq!(d.dims[0].runs(4), None);
        // NONE: everything, on one process.
        let d = Darray::parse(&ev(1, 0, false, &[(10, NONE, DFLT_DARG, 1)])).unwrap();
        assert_eq!(d.dims[0].runs(100).unwrap(), vec![(0, 10)]);
    }

    #[test]
    fn the_grid_is_row_major_in_both_orders() {
        for fortran in [false, true] {
            let d = Darray::parse(&ev(
                6,
                5,
                fortran,
                &[(4, BLOCK, DFLT_DARG, 2), (9, BLOCK, DFLT_DARG, 3)],
            ))
            .unwrap();
            assert_eq!((d.dims[0].coord, d.dims[1].coord), (1, 2));
        }
    }

    #[test]
    fn bad_darrays_are_refused_naming_the_fault() {
        let bad = |v: Vec<i64>| Darray::parse(&v).unwrap_err();
        assert!(matches!(
            bad(ev(4, 0, false, &[(8, BLOCK, DFLT_DARG, 3)])),
            DarrayError::Grid {
                grid: 3,
                size: 4,
                ..
            }
        ));
        assert!(matches!(
            bad(ev(4, 4, false, &[(8, BLOCK, DFLT_DARG, 4)])),
            DarrayError::Rank { rank: 4, size: 4 }
        ));
        assert!(matches!(
            bad(ev(4, -1, false, &[(8, BLOCK, DFLT_DARG, 4)])),
            DarrayError::Rank { .. }
        ));
        assert!(matches!(
            bad(ev(4, 0, false, &[(9, BLOCK, 2, 4)])),
            DarrayError::BlockTooSmall { dim: 0, .. }
        ));
        assert!(matches!(
            bad(ev(2, 0, false, &[(9, NONE, DFLT_DARG, 2)])),
            DarrayError::NoneDistributed { dim: 0, psize: 2 }
        ));
        assert!(matches!(
            bad(ev(2, 0, false, &[(9, 121, DFLT_DARG, 2)])),
            DarrayError::Distrib { value: 121, .. }
        ));
        assert!(matches!(
            bad(ev(2, 0, false, &[(9, CYCLIC, 0, 2)])),
            DarrayError::Darg { value: 0, .. }
        ));
        assert!(matches!(
            bad(ev(2, 0, false, &[(0, CYCLIC, 1, 2)])),
            DarrayError::NotPositive { what: "gsizes", .. }
        ));
        assert!(matches!(bad(ev(1, 0, false, &[])), DarrayError::Ndims(0)));
        let mut short = ev(2, 0, false, &[(9, CYCLIC, 1, 2)]);
        short.pop();
        assert!(matches!(
            bad(short),
            DarrayError::Truncated { have: 3, ndims: 1 }
        ));
        let e = bad(ev(4, 0, false, &[(8, BLOCK, DFLT_DARG, 3)])).to_string();
        assert!(e.contains("psizes [3]") && e.contains("size is 4"), "{e}");
    }
}
