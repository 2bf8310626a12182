//! The divisors of a 64-bit integer, through its prime factors.
//!
//! `scaled-floor-div` tries each divisor of the values' common divisor as a scale. Trial
//! division up to the square root cost up to 2^32 divisions per fit (bounded at 2^20 since
//! which then missed the divisors of a common divisor whose prime factors all
//! exceed 2^20, and still cost about a million divisions per fit: most of the plugin fuzz
//! target's time). Pollard's rho with a deterministic Miller-Rabin test factors any u64 in
//! microseconds, so every divisor is found and the cost no longer depends on the value.

/// `a * b mod m` without overflow.
fn mul_mod(a: u64, b: u64, m: u64) -> u64 {
    ((u128::from(a) * u128::from(b)) % u128::from(m)) as u64
}

fn pow_mod(mut b: u64, mut e: u64, m: u64) -> u64 {
    let mut r = 1 % m;
    b %= m;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, b, m);
        }
        b = mul_mod(b, b, m);
        e >>= 1;
    }
    r
}

/// Deterministic for every u64: the first twelve primes as bases suffice below 3.3 * 10^24.
fn is_prime(n: u64) -> bool {
    const BASES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
    if n < 2 {
        return false;
    }
    for p in BASES {
        if n.is_multiple_of(p) {
            return n == p;
        }
    }
    let s = (n - 1).trailing_zeros();
    let d = (n - 1) >> s;
    'bases: for a in BASES {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul_mod(x, x, n);
            if x == n - 1 {
                continue 'bases;
            }
        }
        return false;
    }
    true
}

/// Greatest common divisor (`gcd(0, b) = b`).
pub(crate) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A non-trivial factor of the odd composite `n` (Pollard's rho, Brent's cycle search,
/// products of 128 differences per gcd). Deterministic: the constants are tried in turn.
fn rho(n: u64) -> u64 {
    for c in 1.. {
        let f = |x: u64| (mul_mod(x, x, n) + c) % n;
        let (mut y, mut r, mut q) = (2u64, 1u64, 1u64);
        let (mut x, mut ys);
        let mut g;
        loop {
            x = y;
            for _ in 0..r {
                y = f(y);
            }
            let mut k = 0u64;
            loop {
                ys = y;
                for _ in 0..128.min(r - k) {
                    y = f(y);
                    q = mul_mod(q, x.abs_diff(y), n);
                }
                g = gcd(q, n);
                k += 128;
                if k >= r || g != 1 {
                    break;
                }
            }
            r *= 2;
            if g != 1 {
                break;
            }
        }
        if g == n {
            // The batch overshot: step one difference at a time from its start.
            loop {
                ys = f(ys);
                g = gcd(x.abs_diff(ys), n);
                if g != 1 {
                    break;
                }
            }
        }
        if g != n {
            return g;
        }
    }
    unreachable!("some constant splits every odd composite")
}

fn factor_into(n: u64, out: &mut Vec<u64>) {
    if n == 1 {
        return;
    }
    if is_prime(n) {
        out.push(n);
        return;
    }
    if n.is_multiple_of(2) {
        out.push(2);
        return factor_into(n / 2, out);
    }
    let d = rho(n);
    factor_into(d, out);
    factor_into(n / d, out);
}

/// The prime factors of `n > 0` with their multiplicities, smallest first.
pub fn factorize(n: u64) -> Vec<(u64, u32)> {
    let mut primes = Vec::new();
    factor_into(n, &mut primes);
    primes.sort_unstable();
    let mut out: Vec<(u64, u32)> = Vec::new();
    for p in primes {
        match out.last_mut() {
            Some((q, e)) if *q == p => *e += 1,
            _ => out.push((p, 1)),
        }
    }
    out
}

/// Every divisor `d > 1` of `n > 0`, ascending, or `None` when there are more than `max`.
pub fn divisors_above_one(n: u64, max: usize) -> Option<Vec<u64>> {
    let f = factorize(n);
    let count = f.iter().map(|&(_, e)| e as usize + 1).product::<usize>() - 1;
    if count > max {
        return None;
    }
    let mut all = vec![1u64];
    for (p, e) in f {
        let before = all.len();
        let mut pk = 1u64;
        for _ in 0..e {
            pk *= p;
            for i in 0..before {
                all.push(all[i] * pk);
            }
        }
    }
    all.sort_unstable();
    all.remove(0);
    Some(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Divisors by trial division: the definition.
    fn naive(n: u64) -> Vec<u64> {
        (2..=n).filter(|d| n.is_multiple_of(*d)).collect()
    }

    #[test]
    fn large_primes_and_their_products_factor() {
        let p = (1u64 << 61) - 1; // prime
        assert_eq!(factorize(p), vec![(p, 1)]);
        // Two primes above 2^20 (the old trial-division bound): found now.
        let (a, b) = (1_048_583u64, 1_048_589u64);
        assert_eq!(factorize(a * b), vec![(a, 1), (b, 1)]);
        assert_eq!(divisors_above_one(a * b, 64), Some(vec![a, b, a * b]));
        assert_eq!(
            factorize(u64::MAX),
            vec![
                (3, 1),
                (5, 1),
                (17, 1),
                (257, 1),
                (641, 1),
                (65537, 1),
                (6_700_417, 1)
            ]
        );
        assert_eq!(factorize(1 << 63), vec![(2, 63)]);
        // 2^63's 63 divisors above one fit within 64; 720720's 239 do not.
        assert_eq!(divisors_above_one(1 << 63, 64).map(|d| d.len()), Some(63));
        assert_eq!(divisors_above_one(720_720, 64), None);
    }

    proptest::proptest! {
        /// Every divisor, and only divisors, of small values (products of small primes and
        /// repeated factors included).
        #[test]
        fn divisors_equal_trial_division(n in 1u64..20_000) {
            proptest::prop_assert_eq!(divisors_above_one(n, usize::MAX), Some(naive(n)));
        }

        /// The factors of any u64 multiply back to it and are prime.
        #[test]
        fn factors_multiply_back(n in 1u64..) {
            let f = factorize(n);
            let mut x = 1u64;
            for &(p, e) in &f {
                proptest::prop_assert!(is_prime(p));
                x *= p.pow(e);
            }
            proptest::prop_assert_eq!(x, n);
        }
    }
}
