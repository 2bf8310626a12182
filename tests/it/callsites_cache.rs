//! The tracer's cost of a call site, and where it goes (`tests/apps/site_loop.c`):
//! - calls of one function in a loop are recognised from the cache of stacks seen before,
//!   each of them: with one entry per stack pointer, the three `pwrite`s of one loop body
//!   (one stack pointer) evicted each other, and every call unwound its stack (12 us each);
//! - the time spent naming a call site never seen before is the tracer's, and is left out of
//!   the gap before the call, which a replay would wait out as the program's compute.

use crate::common;
use common::status_text as text;

/// Runs `site_loop FILE ITERS` under `iotrex trace` with the flat log and the verbose line;
/// gives the run's output and every `pwrite` of the log as (offset, gap ns).
fn run(iters: u32) -> (std::process::Output, Vec<(i64, u64)>) {
    let dir = common::scratch();
    let out = dir.path().join("sites.iotrex");
    let data = dir.path().join("data");
    let app = common::app("site_loop");
    let o = common::trace_command(
        &out,
        &[
            app.to_str().unwrap(),
            data.to_str().unwrap(),
            &iters.to_string(),
        ],
        &[("IOTREX_RAW", "1"), ("IOTREX_VERBOSE", "1")],
    );
    assert!(o.status.success(), "{}", text(&o));
    let log = dir.path().join("sites.rank0.jsonl");
    let raw = std::fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", log.display(), text(&o)));
    let writes = raw
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["op"] == "Pwrite")
        .map(|e| {
            (
                e["params"][2].as_i64().unwrap(),
                e["gap_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    (o, writes)
}

/// The number the verbose line gives: "... N call-site stacks unwound".
fn unwound(o: &std::process::Output) -> u64 {
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("call-site stacks unwound"))
        .unwrap_or_else(|| panic!("no verbose line:\n{}", text(o)));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "call-site").unwrap();
    words[at - 1].parse().unwrap()
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn the_calls_of_one_loop_body_are_recognised_without_unwinding() {
    let (o, writes) = run(2000);
    assert_eq!(writes.len(), 3 * 2000 + 64, "{}", text(&o));
    // The loop's three sites and the 64 others once each, the file's open and close, the
    // start-up's few: nowhere near one per call of the loop (6,000 before).
    let n = unwound(&o);
    assert!(n < 200, "{n} stacks unwound for 6,064 writes\n{}", text(&o));
}

#[test]
fn naming_a_new_call_site_is_left_out_of_the_gap_before_it() {
    let (o, writes) = run(200);
    // The loop's calls come from stacks the cache knows (after the first pass): their gaps
    // are the program's loop and the tracer's recording on the hot path, the baseline.
    let known: Vec<u64> = writes
        .iter()
        .filter(|w| w.0 < 3)
        .skip(3)
        .map(|w| w.1)
        .collect();
    let new: Vec<u64> = writes.iter().filter(|w| w.0 >= 100).map(|w| w.1).collect();
    assert_eq!((known.len(), new.len()), (597, 64), "{}", text(&o));
    // Between the new sites the program does nothing either; unwinding and naming each took
    // 17-26 us here, and that was in every one of their gaps.
    let (k, n) = (median(known), median(new));
    assert!(
        n < k + 5_000,
        "median gap before a new call site {n} ns, before a known one {k} ns"
    );
}
