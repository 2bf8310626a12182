//! Bob Jenkins' lookup3 `hashlittle2`, written out here so file ids match CODES bit for bit.
//!
//! CODES' recorder loader names a file by `bj_hashlittle2(path, strlen(path), &h1, &h2)` with
//! `h1 = 0` and `h2 = 0xFFFFFFFF`, then `file_id = h1 + (h2 << 32)`. lookup3 reads the key as
//! little-endian 32-bit words (its aligned fast paths give the same result as its byte path on
//! little-endian machines, where CODES runs), so the byte path below is the whole algorithm.

#[inline]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

#[inline]
fn finalize(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

/// Little-endian word from up to 4 bytes, missing bytes zero: lookup3's tail handling.
#[inline]
fn word(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .enumerate()
        .fold(0u32, |w, (i, &x)| w | (u32::from(x) << (8 * i)))
}

/// lookup3 `hashlittle2(key, len, &pc, &pb)`: returns the new `(pc, pb)`, i.e. `(c, b)`.
pub fn hashlittle2(key: &[u8], pc: u32, pb: u32) -> (u32, u32) {
    // lookup3 adds the length as a uint32_t, so longer keys wrap exactly as in C.
    let init = 0xdead_beef_u32
        .wrapping_add(key.len() as u32)
        .wrapping_add(pc);
    let (mut a, mut b, mut c) = (init, init, init.wrapping_add(pb));
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(word(&k[0..4]));
        b = b.wrapping_add(word(&k[4..8]));
        c = c.wrapping_add(word(&k[8..12]));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        // Zero-length tails skip the final mix: this is what makes "" hash to deadbeef.
        return (c, b);
    }
    a = a.wrapping_add(word(&k[..k.len().min(4)]));
    if k.len() > 4 {
        b = b.wrapping_add(word(&k[4..k.len().min(8)]));
    }
    if k.len() > 8 {
        c = c.wrapping_add(word(&k[8..]));
    }
    finalize(&mut a, &mut b, &mut c);
    (c, b)
}

/// The CODES file id of a path as written in a recorder log: `h1 + (h2 << 32)` after
/// `hashlittle2(path, h1 = 0, h2 = 0xFFFFFFFF)`.
pub fn file_id(path: &str) -> u64 {
    let (h1, h2) = hashlittle2(path.as_bytes(), 0, 0xFFFF_FFFF);
    u64::from(h1).wrapping_add(u64::from(h2) << 32)
}

/// The file id used in iolang kernels: the recorder id with the top bit cleared, because the
/// iolang lexer reads integer literals with `atoll` and anything at or above 2^63 overflows.
pub fn iolang_file_id(path: &str) -> u64 {
    file_id(path) & (u64::MAX >> 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOUR: &[u8] = b"Four score and seven years ago";

    #[test]
    fn published_vectors() {
        assert_eq!(FOUR.len(), 30);
        assert_eq!(hashlittle2(FOUR, 0, 0), (0x1777_0551, 0xce72_26e6));
        assert_eq!(hashlittle2(FOUR, 1, 0), (0xcd62_8161, 0x6cbe_a4b3));
        assert_eq!(hashlittle2(b"", 0, 0), (0xdead_beef, 0xdead_beef));
    }

    #[test]
    fn more_lookup3_driver_vectors() {
        // From lookup3.c's driver5: b=1, c=0 and the empty key with other seeds.
        assert_eq!(hashlittle2(FOUR, 0, 1), (0xe360_7cae, 0xbd37_1de4));
        assert_eq!(hashlittle2(b"", 0, 0xdead_beef), (0xbd5b_7dde, 0xdead_beef));
        assert_eq!(
            hashlittle2(b"", 0xdead_beef, 0xdead_beef),
            (0x9c09_3ccd, 0xbd5b_7dde)
        );
    }

    #[test]
    fn every_tail_length_differs() {
        // Each tail length 1..=12 (and one full block plus tail) takes a different path.
        let s = b"abcdefghijklmnopqrstuvwxyz";
        let mut seen = std::collections::HashSet::new();
        for n in 0..=s.len() {
            assert!(seen.insert(hashlittle2(&s[..n], 0, 0xFFFF_FFFF)), "len {n}");
        }
    }

    #[test]
    fn file_id_combines_both_halves_and_spelling_matters() {
        let (h1, h2) = hashlittle2(b"out/file_0", 0, 0xFFFF_FFFF);
        assert_eq!(file_id("out/file_0"), u64::from(h1) + (u64::from(h2) << 32));
        assert_ne!(file_id("./a"), file_id("a"));
        assert!(iolang_file_id("out/file_0") < 1 << 63);
        // Cross-checked against an independent lookup3 implementation.
        assert_eq!(file_id("out/file_0"), 16_357_300_632_594_167_403);
        assert_eq!(iolang_file_id("out/file_0"), 7_133_928_595_739_391_595);
    }
}
