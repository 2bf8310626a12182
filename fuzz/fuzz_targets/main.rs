//! One libFuzzer binary for every iotrex reader; `IOTREX_FUZZ_TARGET` picks the target (one
//! binary links once, and `scripts/fuzz.sh TARGET SECONDS` sets the variable). Each target calls
//! the library functions behind a command, never a subprocess, and never replay's I/O.
//!
//! Trace inputs are the *body* of a `.iotrex` file (the MessagePack after the 32-byte prefix):
//! a checksum over the body would make nearly every mutation a checksum error, so the harness
//! goes past it with `TraceFile::decode_body`, `decode_body_v2` and `decode_body_v2_7`; the
//! `read` target also feeds raw bytes through
//! the prefix checks. Targets with several inputs (`extrap`, `diff`, `report`, `codes`) split
//! the fuzz input at [`SEP`].
//!
//! A command that expands a trace does work proportional to its ranks times its calls, which a
//! valid file may make as large as it likes (2^20 ranks, 2^40 iterations): that is its
//! intended cost, not a hang. So the commands run only on traces within [`budget`] (bounded
//! ranks, calls counted by a stopped expansion); every input is still decoded, validated and
//! shown.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rsd::TraceFile;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

mod budget;
mod plugin;
mod targets;

/// Separates the inputs of multi-input targets (also in `fuzz/dict/iotrex.dict`).
pub const SEP: &[u8] = b"\x00IOTREX-FUZZ-NEXT\x00";

/// Name the decoded inputs carry, so error messages can be checked to name it.
pub const NAME: &str = "fuzz.iotrex";

static TARGET: LazyLock<String> = LazyLock::new(|| {
    let t = std::env::var("IOTREX_FUZZ_TARGET").unwrap_or_default();
    if !targets::NAMES.contains(&t.as_str()) {
        // Not an input's fault: refuse to start so a typo does not fuzz nothing.
        eprintln!(
            "IOTREX_FUZZ_TARGET={t:?}: set it to one of {}",
            targets::NAMES.join(", ")
        );
        std::process::exit(2);
    }
    t
});

/// Scratch directory of this process (export and CODES targets write files there).
pub static SCRATCH: LazyLock<PathBuf> = LazyLock::new(|| {
    let base = std::env::var_os("IOTREX_FUZZ_SCRATCH")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let d = base.join(format!("iotrex-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("create the fuzz scratch directory");
    d
});

/// With `IOTREX_FUZZ_STAGES` set, prints each stage an input reaches (`-runs=0` over a corpus
/// then says how much of it gets past decoding to the command).
pub fn stage(name: &str) {
    static ON: LazyLock<bool> = LazyLock::new(|| std::env::var_os("IOTREX_FUZZ_STAGES").is_some());
    if *ON {
        eprintln!("stage: {name}");
    }
}

/// Decodes a body as format version 1, else as version 2, else as version 2.7 (the prefix
/// that says which is not part of the input, so every reader sees every input: the golden
/// seeds are version 1, traces written version 2, 2.7); an
/// error must name the input.
pub fn decode(body: &[u8]) -> Option<TraceFile> {
    let path = Path::new(NAME);
    let mut errs = Vec::new();
    let readers: [fn(&[u8], &Path) -> Result<TraceFile, rsd::RsdError>; 3] = [
        TraceFile::decode_body,
        TraceFile::decode_body_v2,
        TraceFile::decode_body_v2_7,
    ];
    for read in readers {
        match read(body, path) {
            Ok(tf) => return Some(tf),
            Err(e) => errs.push(e.to_string()),
        }
    }
    for msg in errs {
        stage(&format!("refused: {msg:.100}"));
        assert!(msg.contains(NAME), "error does not name the input: {msg}");
    }
    None
}

/// The inputs of a multi-input target.
pub fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(SEP.len()).position(|w| w == SEP) {
        out.push(&rest[..at]);
        rest = &rest[at + SEP.len()..];
    }
    out.push(rest);
    out
}

/// CPU time of this process, in seconds.
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The most CPU time one input may take (`IOTREX_FUZZ_CPU_LIMIT`, 1 s). libFuzzer's
/// `-timeout` is wall time, which a shared machine under load stretches several times over,
/// so scripts/fuzz.sh gives it a wide margin (it still catches inputs that never end) and this
/// check holds each input that does end to the limit of 1 s of its own work.
static CPU_LIMIT: LazyLock<f64> = LazyLock::new(|| {
    std::env::var("IOTREX_FUZZ_CPU_LIMIT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
});

fuzz_target!(|data: &[u8]| {
    let start = cpu_seconds();
    targets::run(&TARGET, data);
    let used = cpu_seconds() - start;
    assert!(
        used <= *CPU_LIMIT,
        "slow input: {used:.2} s of CPU time (limit {} s, IOTREX_FUZZ_CPU_LIMIT)",
        *CPU_LIMIT
    );
});
