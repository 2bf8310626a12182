//! Exact rational numbers and Gaussian elimination over them.
//!
//! Structure and parameters are extrapolated exactly, so no floating point is involved: a
//! coefficient such as 1/4 (every fourth rank) stays 1/4, and a fit either has zero residual or
//! is rejected. Arithmetic is checked; an overflow rejects the fit instead of wrapping.

use std::cmp::Ordering;
use std::fmt;

/// A normalised fraction `num/den` with `den > 0` and `gcd(num, den) == 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rat {
    num: i128,
    den: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rat {
    /// Zero.
    pub const ZERO: Rat = Rat { num: 0, den: 1 };
    /// One.
    pub const ONE: Rat = Rat { num: 1, den: 1 };

    /// `num/den`, or `None` when `den == 0`.
    pub fn new(num: i128, den: i128) -> Option<Rat> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        let s = if den < 0 { -1 } else { 1 };
        Some(Rat {
            num: s * num / g,
            den: s * den / g,
        })
    }

    /// The integer `v`.
    pub fn int(v: i64) -> Rat {
        Rat {
            num: v as i128,
            den: 1,
        }
    }

    /// Numerator.
    pub fn num(self) -> i128 {
        self.num
    }

    /// Denominator (positive).
    pub fn den(self) -> i128 {
        self.den
    }

    /// Whether the value is zero.
    pub fn is_zero(self) -> bool {
        self.num == 0
    }

    /// The value as an i64 when it is an integer in range.
    pub fn to_i64(self) -> Option<i64> {
        if self.den == 1 {
            i64::try_from(self.num).ok()
        } else {
            None
        }
    }

    /// Floor of the value.
    pub fn floor(self) -> i128 {
        self.num.div_euclid(self.den)
    }

    /// `self + o`, `None` on overflow.
    pub fn checked_add(self, o: Rat) -> Option<Rat> {
        // Integers, and an integer plus a fraction, need no gcd: `a + c/d` over `d` stays
        // reduced since `gcd(a*d + c, d) = gcd(c, d) = 1`. Fitting and evaluating models is
        // mostly such sums, and every gcd is a loop of 128-bit divisions (software on x86-64).
        if self.den == 1 && o.den == 1 {
            return Some(Rat::from_reduced(self.num.checked_add(o.num)?, 1));
        }
        if self.den == 1 || o.den == 1 {
            let (i, f) = if self.den == 1 { (self, o) } else { (o, self) };
            let n = i.num.checked_mul(f.den)?.checked_add(f.num)?;
            return Some(Rat::from_reduced(n, f.den));
        }
        let n = self
            .num
            .checked_mul(o.den)?
            .checked_add(o.num.checked_mul(self.den)?)?;
        Rat::new(n, self.den.checked_mul(o.den)?)
    }

    /// `self - o`.
    pub fn checked_sub(self, o: Rat) -> Option<Rat> {
        self.checked_add(Rat {
            num: o.num.checked_neg()?,
            den: o.den,
        })
    }

    /// `self * o`.
    pub fn checked_mul(self, o: Rat) -> Option<Rat> {
        if self.den == 1 && o.den == 1 {
            return Some(Rat::from_reduced(self.num.checked_mul(o.num)?, 1));
        }
        // Cross-reduce first so products of reduced fractions stay small. The product of
        // cross-reduced factors is itself reduced (with `g = gcd(a, d)`, `a/g` and `d/g` are
        // coprime, and `a` shares nothing with `b` nor `c` with `d`), and its denominator is
        // positive, so no further gcd is taken.
        let g1 = gcd(self.num, o.den).max(1);
        let g2 = gcd(o.num, self.den).max(1);
        Some(Rat::from_reduced(
            (self.num / g1).checked_mul(o.num / g2)?,
            (self.den / g2).checked_mul(o.den / g1)?,
        ))
    }

    /// A fraction already in lowest terms with a positive denominator (checked in debug
    /// builds: the arithmetic above relies on the reasoning in its comments).
    fn from_reduced(num: i128, den: i128) -> Rat {
        debug_assert!(den > 0 && gcd(num, den) == 1, "{num}/{den} is not reduced");
        Rat { num, den }
    }

    /// `self / o`, `None` when `o` is zero or on overflow.
    pub fn checked_div(self, o: Rat) -> Option<Rat> {
        if o.num == 0 {
            return None;
        }
        // The reciprocal of a reduced fraction is reduced: only the sign moves.
        let s = o.num.signum();
        self.checked_mul(Rat::from_reduced(s * o.den, s * o.num))
    }
}

impl PartialOrd for Rat {
    fn partial_cmp(&self, o: &Rat) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Rat {
    fn cmp(&self, o: &Rat) -> Ordering {
        // Denominators are positive, so cross-multiplying keeps the order; i128 products of
        // values derived from i64 data do not overflow in practice, and saturate if they do.
        self.num
            .saturating_mul(o.den)
            .cmp(&o.num.saturating_mul(self.den))
    }
}

impl fmt::Display for Rat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

/// The outcome of solving `A x = b` exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Solution {
    /// Exactly one solution.
    Unique(Vec<Rat>),
    /// No solution: some equation contradicts the others (the model does not fit).
    Inconsistent,
    /// Several solutions: the data cannot tell the coefficients apart.
    Underdetermined,
    /// An intermediate value overflowed.
    Overflow,
}

#[cfg(test)]
thread_local! {
    /// Calls of [`solve`] on this thread: tests bound a fit's work by it (never by time).
    pub(crate) static SOLVES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Solves the (possibly overdetermined) system `rows · x = rhs` exactly over the rationals.
/// Every equation must hold exactly for a [`Solution::Unique`] answer.
///
/// The search models solve one system per knob value, thousands of times over the same
/// points, and most knob values do not fit: eliminating every row of every system made a
/// fit over inputs at a few thousand ranks take seconds to minutes (found by the `plugin`
/// fuzz target). So the first rows that make the system square are solved alone and every
/// other row is checked against that answer, stopping at the first that disagrees. A full
/// column rank system has one solution whichever independent rows give it, so the answer is
/// the elimination's; the rare rank-deficient or overflowing cases take the elimination.
pub fn solve(rows: &[Vec<Rat>], rhs: &[Rat]) -> Solution {
    #[cfg(test)]
    SOLVES.with(|c| c.set(c.get() + 1));
    let m = rows.first().map_or(0, Vec::len);
    let Some(basis) = independent_rows(rows, m) else {
        return eliminate(rows, rhs);
    };
    let square: Vec<Vec<Rat>> = basis.iter().map(|&i| rows[i].clone()).collect();
    let ys: Vec<Rat> = basis.iter().map(|&i| rhs[i]).collect();
    let Solution::Unique(x) = eliminate(&square, &ys) else {
        return eliminate(rows, rhs);
    };
    for (r, &y) in rows.iter().zip(rhs) {
        match dot(r, &x) {
            Some(v) if v == y => {}
            Some(_) => return Solution::Inconsistent,
            None => return eliminate(rows, rhs),
        }
    }
    Solution::Unique(x)
}

/// The indices of the first `m` linearly independent rows, in order, or None when there are
/// fewer (or an intermediate value overflows): rows reduced against the ones kept so far.
fn independent_rows(rows: &[Vec<Rat>], m: usize) -> Option<Vec<usize>> {
    if m == 0 {
        return None;
    }
    // Kept rows, reduced, each with its pivot column.
    let mut kept: Vec<(usize, Vec<Rat>)> = Vec::with_capacity(m);
    let mut picked = Vec::with_capacity(m);
    for (i, r) in rows.iter().enumerate() {
        let mut v = r.clone();
        for (c, k) in &kept {
            if v[*c].is_zero() {
                continue;
            }
            let f = v[*c].checked_div(k[*c])?;
            for (x, &p) in v.iter_mut().zip(k) {
                *x = x.checked_sub(f.checked_mul(p)?)?;
            }
        }
        if let Some(c) = v.iter().position(|x| !x.is_zero()) {
            kept.push((c, v));
            picked.push(i);
            if picked.len() == m {
                return Some(picked);
            }
        }
    }
    None
}

fn dot(row: &[Rat], x: &[Rat]) -> Option<Rat> {
    row.iter()
        .zip(x)
        .try_fold(Rat::ZERO, |acc, (a, b)| acc.checked_add(a.checked_mul(*b)?))
}

/// Gauss-Jordan elimination of every row: the classification [`solve`] falls back on.
fn eliminate(rows: &[Vec<Rat>], rhs: &[Rat]) -> Solution {
    let m = rows.first().map_or(0, Vec::len);
    let mut a: Vec<Vec<Rat>> = rows
        .iter()
        .zip(rhs)
        .map(|(r, &y)| {
            let mut v = r.clone();
            v.push(y);
            v
        })
        .collect();
    let mut row = 0;
    let mut pivots = Vec::with_capacity(m);
    for col in 0..m {
        let Some(p) = (row..a.len()).find(|&i| !a[i][col].is_zero()) else {
            continue;
        };
        a.swap(row, p);
        let piv = a[row][col];
        let pivot_row = a[row].clone();
        for (i, r) in a.iter_mut().enumerate() {
            if i == row || r[col].is_zero() {
                continue;
            }
            let Some(f) = r[col].checked_div(piv) else {
                return Solution::Overflow;
            };
            for (x, &p) in r[col..].iter_mut().zip(&pivot_row[col..]) {
                let Some(v) = f.checked_mul(p).and_then(|t| x.checked_sub(t)) else {
                    return Solution::Overflow;
                };
                *x = v;
            }
        }
        pivots.push(col);
        row += 1;
    }
    if a[row..].iter().any(|r| !r[m].is_zero()) {
        return Solution::Inconsistent;
    }
    if pivots.len() < m {
        return Solution::Underdetermined;
    }
    let mut x = vec![Rat::ZERO; m];
    for (r, &c) in pivots.iter().enumerate() {
        match a[r][m].checked_div(a[r][c]) {
            Some(v) => x[c] = v,
            None => return Solution::Overflow,
        }
    }
    Solution::Unique(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(v: i64) -> Rat {
        Rat::int(v)
    }

    #[test]
    fn arithmetic_normalises() {
        let a = Rat::new(2, 8).unwrap();
        assert_eq!(a, Rat::new(-1, -4).unwrap());
        assert_eq!(a.checked_add(a).unwrap(), Rat::new(1, 2).unwrap());
        assert_eq!(a.checked_mul(r(8)).unwrap().to_i64(), Some(2));
        assert_eq!(Rat::new(-7, 2).unwrap().floor(), -4);
        assert_eq!(a.to_string(), "1/4");
        assert!(r(1).checked_div(Rat::ZERO).is_none());
    }

    #[test]
    fn solves_exact_and_detects_misfit() {
        // y = n/4 + 3 at n = 4, 8, 12.
        let rows: Vec<Vec<Rat>> = [4, 8, 12].iter().map(|&n| vec![r(n), r(1)]).collect();
        let ys = [r(4), r(5), r(6)];
        assert_eq!(
            solve(&rows, &ys),
            Solution::Unique(vec![Rat::new(1, 4).unwrap(), r(3)])
        );
        assert_eq!(solve(&rows, &[r(4), r(5), r(7)]), Solution::Inconsistent);
        let same: Vec<Vec<Rat>> = [4, 8].iter().map(|&n| vec![r(n), r(2 * n)]).collect();
        assert_eq!(solve(&same, &[r(1), r(2)]), Solution::Underdetermined);
    }

    /// The arithmetic as defined, normalising every result with `Rat::new`: what the fast
    /// paths (no gcd for integers, no final gcd after cross-reduction) must equal.
    fn reference(a: Rat, b: Rat) -> [Option<Rat>; 3] {
        let add = a
            .num
            .checked_mul(b.den)
            .zip(b.num.checked_mul(a.den))
            .and_then(|(x, y)| x.checked_add(y))
            .zip(a.den.checked_mul(b.den))
            .and_then(|(n, d)| Rat::new(n, d));
        let mul = a
            .num
            .checked_mul(b.num)
            .zip(a.den.checked_mul(b.den))
            .and_then(|(n, d)| Rat::new(n, d));
        let div = a
            .num
            .checked_mul(b.den)
            .zip(a.den.checked_mul(b.num))
            .and_then(|(n, d)| Rat::new(n, d));
        [add, mul, div]
    }

    proptest::proptest! {
        /// Sums, products and quotients are the normalised results of their definitions,
        /// integers and fractions mixed, signs and zeros included.
        #[test]
        fn arithmetic_equals_its_definition(
            an in -1000i128..1000, ad in proptest::prop_oneof![proptest::strategy::Just(1i128), 1i128..50],
            bn in -1000i128..1000, bd in proptest::prop_oneof![proptest::strategy::Just(1i128), 1i128..50],
        ) {
            let (a, b) = (Rat::new(an, ad).unwrap(), Rat::new(bn, bd).unwrap());
            let [add, mul, div] = reference(a, b);
            proptest::prop_assert_eq!(a.checked_add(b), add);
            proptest::prop_assert_eq!(a.checked_sub(b), reference(a, Rat::new(-bn, bd).unwrap())[0]);
            proptest::prop_assert_eq!(a.checked_mul(b), mul);
            proptest::prop_assert_eq!(a.checked_div(b), if bn == 0 { None } else { div });
        }

        /// The square-then-check path answers as eliminating every row does (where that
        /// does not overflow): small integer systems, often overdetermined, consistent or not,
        /// and rank-deficient ones.
        #[test]
        fn solve_agrees_with_full_elimination(
            m in 1usize..4,
            rows in proptest::collection::vec(proptest::collection::vec(-4i64..5, 4), 0..9),
            x in proptest::collection::vec(-6i64..7, 4),
            noise in proptest::collection::vec(proptest::prop_oneof![8 => proptest::strategy::Just(0i64), 1 => -2i64..3], 9),
        ) {
            let rows: Vec<Vec<Rat>> = rows.iter().map(|r| r[..m].iter().map(|&v| r_(v)).collect()).collect();
            let rhs: Vec<Rat> = rows
                .iter()
                .zip(&noise)
                .map(|(r, &e)| dot(r, &x[..m].iter().map(|&v| r_(v)).collect::<Vec<_>>()).unwrap().checked_add(r_(e)).unwrap())
                .collect();
            let want = eliminate(&rows, &rhs);
            if want != Solution::Overflow {
                proptest::prop_assert_eq!(solve(&rows, &rhs), want);
            }
        }
    }

    fn r_(v: i64) -> Rat {
        Rat::int(v)
    }
}
