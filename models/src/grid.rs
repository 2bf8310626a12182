//! Process grids: what `MPI_Dims_create` gives for `n` ranks and `d` free dimensions, and a
//! rank's coordinates in the Cartesian grid `MPI_Cart_create` builds on it. Codes that
//! decompose a domain this way size and place their blocks (and their halos) by these
//! values, which no smooth function of `n` reproduces: 12 ranks in 3 dimensions are 3x2x2,
//! 16 are 4x2x2, 32 are 4x4x2.
//!
//! The factorisation is Open MPI's (`ompi/mpi/c/dims_create.c`, unchanged from 1.x to 5.x):
//! the prime factors of `n`, largest first, each multiplied into the smallest dimension so
//! far (the first of equals), the dimensions then sorted in decreasing order. MPICH balances
//! by another search and may answer otherwise for some `n`; the extrapolation checks a model
//! against every input scale, but at the target it predicts Open MPI's grid (`docs/grid.md`).

/// The largest dimension count tried.
pub const MAX_DIMS: usize = 4;

/// `MPI_Dims_create(n, d, dims)` with every `dims[i]` 0 on entry, as Open MPI computes it;
/// `None` for `n < 1` or `d` outside 1..=[`MAX_DIMS`].
pub fn dims_create(n: i64, d: usize) -> Option<Vec<i64>> {
    if n < 1 || !(1..=MAX_DIMS).contains(&d) {
        return None;
    }
    let mut bins = vec![1i64; d];
    for f in prime_factors(n).into_iter().rev() {
        // The first smallest bin, as `assignnodes` scans them.
        let (i, _) = bins
            .iter()
            .enumerate()
            .min_by_key(|&(i, b)| (*b, i))
            .expect("d >= 1");
        bins[i] *= f;
    }
    bins.sort_unstable_by(|a, b| b.cmp(a));
    Some(bins)
}

/// The prime factors of `n > 1`, in increasing order (with repeats); empty for 1.
fn prime_factors(mut n: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut p = 2;
    while p * p <= n {
        while n % p == 0 {
            out.push(p);
            n /= p;
        }
        p += if p == 2 { 1 } else { 2 };
    }
    if n > 1 {
        out.push(n);
    }
    out
}

/// The coordinates of `rank` in the row-major grid `dims` (`MPI_Cart_coords` of a
/// communicator `MPI_Cart_create` made without reordering: the last dimension varies
/// fastest); `None` for a rank outside the grid.
pub fn coords(rank: i64, dims: &[i64]) -> Option<Vec<i64>> {
    let size: i64 = dims.iter().product();
    if rank < 0 || rank >= size {
        return None;
    }
    let mut rest = rank;
    let mut out = vec![0; dims.len()];
    for (i, &d) in dims.iter().enumerate().rev() {
        out[i] = rest % d;
        rest /= d;
    }
    Some(out)
}

/// The rank one step of `disp` along dimension `i` of the periodic grid `dims` from `rank`,
/// relative to `rank` (`MPI_Cart_shift`'s destination minus the rank; the source is the shift
/// by `-disp`); `None` for a rank outside the grid or a dimension it has not.
pub fn shift(rank: i64, dims: &[i64], i: usize, disp: i64) -> Option<i64> {
    let mut c = coords(rank, dims)?;
    let d = *dims.get(i)?;
    c[i] = (c[i] + disp).rem_euclid(d);
    let peer = c.iter().zip(dims).fold(0, |acc, (&x, &d)| acc * d + x);
    Some(peer - rank)
}

/// The (dimension count, dimension) pairs a model may take, 2 to [`MAX_DIMS`] dimensions (one
/// dimension is `n` itself, which the linear model covers), as one knob index.
pub fn knob(i: i64) -> Option<(usize, usize)> {
    let mut i = usize::try_from(i).ok()?;
    for d in 2..=MAX_DIMS {
        if i < d {
            return Some((d, i));
        }
        i -= d;
    }
    None
}

/// How many knob values [`knob`] takes.
pub fn knobs() -> i64 {
    (2..=MAX_DIMS).sum::<usize>() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_as_open_mpi_gives_them() {
        // Values printed by MPI_Dims_create under Open MPI 4.1.4 (tests/it/extrap_grid.rs
        // compares every n up to 256 with the installed library).
        assert_eq!(dims_create(12, 3).unwrap(), [3, 2, 2]);
        assert_eq!(dims_create(16, 3).unwrap(), [4, 2, 2]);
        assert_eq!(dims_create(32, 3).unwrap(), [4, 4, 2]);
        assert_eq!(dims_create(24, 2).unwrap(), [6, 4]);
        assert_eq!(dims_create(7, 3).unwrap(), [7, 1, 1]);
        assert_eq!(dims_create(1, 2).unwrap(), [1, 1]);
        assert!(dims_create(0, 2).is_none() && dims_create(8, 5).is_none());
    }

    #[test]
    fn coords_are_row_major() {
        assert_eq!(coords(5, &[3, 2, 2]).unwrap(), [1, 0, 1]);
        assert_eq!(coords(11, &[3, 2, 2]).unwrap(), [2, 1, 1]);
        assert!(coords(12, &[3, 2, 2]).is_none());
    }

    #[test]
    fn shifts_wrap_around_the_periodic_grid() {
        // 3x2x2: rank 5 is (1,0,1); up the last dimension wraps to (1,0,0) = 4.
        assert_eq!(shift(5, &[3, 2, 2], 2, 1), Some(-1));
        assert_eq!(shift(5, &[3, 2, 2], 0, 1), Some(4));
        assert_eq!(shift(11, &[3, 2, 2], 0, 1), Some(-8));
        assert_eq!(shift(0, &[3, 2, 2], 0, -1), Some(8));
        assert!(shift(0, &[3, 2, 2], 3, 1).is_none());
    }

    #[test]
    fn knobs_cover_every_dimension_once() {
        let all: Vec<(usize, usize)> = (0..knobs()).map(|i| knob(i).unwrap()).collect();
        assert_eq!(all.len(), 9);
        assert_eq!(all[0], (2, 0));
        assert_eq!(all[8], (4, 3));
        assert!(knob(knobs()).is_none() && knob(-1).is_none());
    }
}
