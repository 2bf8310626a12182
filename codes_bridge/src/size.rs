//! Parsing human sizes such as `256KiB` for `--max-blocksize`.

use crate::error::CodesError;

/// Parses a byte count with an optional unit.
///
/// - `KiB`, `MiB`, `GiB`, `TiB` and the bare letters `K`, `M`, `G`, `T` are powers of 1024
///   (the bare letters follow `dd` and GNU tools, where `256K` means 256 KiB);
/// - `KB`, `MB`, `GB`, `TB` are powers of 1000;
/// - `B` or no unit means bytes.
///
/// Units are case-insensitive; whitespace between number and unit is allowed. Zero is refused:
/// a block size of 0 cannot split anything.
pub fn parse_size(input: &str) -> Result<u64, CodesError> {
    let bad = |reason: &str| CodesError::BadSize {
        input: input.to_string(),
        reason: reason.to_string(),
    };
    let s = input.trim();
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits_end);
    if num.is_empty() {
        return Err(bad(
            "expected a whole number of bytes, optionally followed by a unit such as KiB or MiB",
        ));
    }
    let n: u64 = num
        .parse()
        .map_err(|_| bad("the number does not fit in 64 bits"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => {
            return Err(bad(
                "unknown unit; use B, KiB, MiB, GiB, TiB (or K, M, G, T), or KB, MB, GB, TB",
            ));
        }
    };
    let v = n
        .checked_mul(mult)
        .ok_or_else(|| bad("the size does not fit in 64 bits"))?;
    if v == 0 {
        return Err(bad("the size must be at least 1 byte"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_size("256KiB").unwrap(), 262_144);
        assert_eq!(parse_size("256K").unwrap(), 262_144);
        assert_eq!(parse_size("256 kib").unwrap(), 262_144);
        assert_eq!(parse_size("4MiB").unwrap(), 4 << 20);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("7B").unwrap(), 7);
        assert_eq!(parse_size("1TiB").unwrap(), 1 << 40);
    }

    #[test]
    fn refusals_name_the_flag() {
        for s in [
            "",
            "KiB",
            "0",
            "0KiB",
            "12XB",
            "-5",
            "1.5MiB",
            "99999999999999999999",
        ] {
            let e = parse_size(s).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("--max-blocksize"), "{msg}");
            assert!(msg.contains(&format!("{s:?}")), "{msg}");
        }
        assert!(parse_size("20000000TiB").is_err());
    }
}
