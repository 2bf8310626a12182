//! Chrome / Perfetto `traceEvents` JSON: one process per rank, one complete (`X`) span per call.
//!
//! A trace keeps timing as statistics, not timestamps, so the timeline is rebuilt from each
//! event's mean gap and mean duration: a rank's call starts its mean gap after the previous
//! call ended. Nested POSIX calls are laid out inside their parent's span, on the same thread,
//! so Perfetto shows them stacked below it. Output is capped; a capped export says so in a
//! metadata event and in [`ChromeReport::truncated`].

use crate::timeline::Cursor;
use rsd::ranks::RankSet;
use rsd::trace::{Event, Trace, flatten_event, visit};
use serde::Serialize;
use std::io::Write;

/// The format's unit is the microsecond.
const NS_PER_US: f64 = 1e3;

/// What was exported.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ChromeReport {
    /// Ranks exported.
    pub ranks: u64,
    /// Spans written (calls, nested calls included).
    pub spans: u64,
    /// Whether the cap stopped the export before every call of the chosen ranks was written.
    pub truncated: bool,
}

#[derive(Serialize)]
struct Span<'a> {
    name: &'a str,
    cat: &'a str,
    ph: &'static str,
    /// Microseconds, as the format wants.
    ts: f64,
    dur: f64,
    pid: u32,
    tid: u32,
    args: serde_json::Map<String, serde_json::Value>,
}

/// Writes the spans of `ranks` (all ranks of the trace when `None`), at most `max_events`
/// spans in all, each slot's track named `name(slot)` (`rsd::process::slot_name`).
pub fn write_chrome(
    trace: &Trace,
    name: &dyn Fn(u32) -> String,
    ranks: Option<&RankSet>,
    max_events: u64,
    out: &mut dyn Write,
) -> std::io::Result<ChromeReport> {
    // Every span's offsets as the rank's call had them (`Trace::resolved`).
    let trace = &trace.resolved();
    let all = trace.ranks();
    let chosen: Vec<u32> = match ranks {
        Some(r) => r
            .to_vec()
            .into_iter()
            .filter(|x| all.contains(*x))
            .collect(),
        None => all.to_vec(),
    };
    let mut rep = ChromeReport {
        ranks: chosen.len() as u64,
        ..ChromeReport::default()
    };
    out.write_all(b"{\"traceEvents\":[\n")?;
    let mut first = true;
    let mut err = None;
    for &rank in &chosen {
        // Process name, so Perfetto labels the track "rank N" (or "rank N process K").
        let meta = serde_json::json!({"name": "process_name", "ph": "M", "pid": rank,
            "args": {"name": name(rank)}});
        sep(out, &mut first)?;
        serde_json::to_writer(&mut *out, &meta)?;
        let mut at = Cursor::top(NS_PER_US);
        let mut idx = Vec::new();
        let done = visit(&trace.nodes, rank, &mut idx, &mut |e, idx| {
            if rep.spans >= max_events {
                rep.truncated = true;
                return false;
            }
            let (start, dur) = at.place(&e.timing);
            let r = span(
                e, rank, idx, at, start, dur, out, &mut first, &mut rep, max_events,
            );
            if let Err(x) = r {
                err = Some(x);
                return false;
            }
            true
        });
        if let Some(e) = err.take() {
            return Err(e);
        }
        if !done {
            break;
        }
    }
    if rep.truncated {
        let meta = serde_json::json!({"name": "iotrex_truncated", "ph": "M", "pid": 0,
            "args": {"note": format!("capped at {max_events} spans (--max-events)")}});
        sep(out, &mut first)?;
        serde_json::to_writer(&mut *out, &meta)?;
    }
    out.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")?;
    Ok(rep)
}

fn sep(out: &mut dyn Write, first: &mut bool) -> std::io::Result<()> {
    if !*first {
        out.write_all(b",\n")?;
    }
    *first = false;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn span(
    e: &Event,
    rank: u32,
    idx: &mut Vec<u64>,
    at: Cursor,
    start: f64,
    dur: f64,
    out: &mut dyn Write,
    first: &mut bool,
    rep: &mut ChromeReport,
    max_events: u64,
) -> std::io::Result<()> {
    // Events of the resolved trace (`write_chrome`) always flatten.
    let Some(flat) = flatten_event(e, rank, idx) else {
        return Ok(());
    };
    let mut args = serde_json::Map::new();
    let nf = e.nfields();
    let names = flat.params.len() + nf;
    for (i, v) in flat.params.iter().enumerate() {
        args.insert(e.op.param_name(i, names, nf), (*v).into());
    }
    if let Some(p) = &flat.path {
        let (first, second) = rsd::op::split_path_pair(p).unwrap_or((p, ""));
        args.insert("path".into(), first.into());
        if let Some(name) = e.op.second_path_name() {
            args.insert(name.into(), second.into());
        }
    }
    let s = Span {
        name: e.op.name(),
        cat: e.op.layer().name(),
        ph: "X",
        ts: start,
        dur,
        pid: rank,
        tid: 0,
        args,
    };
    sep(out, first)?;
    serde_json::to_writer(&mut *out, &s)?;
    rep.spans += 1;
    // Children: laid out inside the parent's span (`timeline`).
    let mut inner = at.inside(start, dur);
    let mut err = None;
    visit(&e.children, rank, idx, &mut |c, idx| {
        if rep.spans >= max_events {
            rep.truncated = true;
            return false;
        }
        let (cs, cd) = inner.place(&c.timing);
        if let Err(x) = span(c, rank, idx, inner, cs, cd, out, first, rep, max_events) {
            err = Some(x);
            return false;
        }
        true
    });
    err.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_equal_expanded_calls_and_json_is_valid() {
        let t = crate::synth::spmd(4, 5);
        let mut buf = Vec::new();
        let rep = write_chrome(&t, &|r| format!("rank {r}"), None, u64::MAX, &mut buf).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        let spans = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .count() as u64;
        fn count(e: &rsd::FlatEvent) -> u64 {
            1 + e.children.iter().map(count).sum::<u64>()
        }
        let expanded: u64 = (0..4)
            .map(|r| t.expand(r).iter().map(count).sum::<u64>())
            .sum();
        assert_eq!(spans, expanded);
        assert_eq!(rep.spans, expanded);
        assert!(!rep.truncated);
        // Spans of one rank do not go back in time.
        let ts: Vec<f64> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == 2 && e["cat"] != "POSIX")
            .map(|e| e["ts"].as_f64().unwrap())
            .collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn cap_is_reported() {
        let t = crate::synth::spmd(4, 50);
        let mut buf = Vec::new();
        let rep = write_chrome(
            &t,
            &|r| format!("rank {r}"),
            Some(&RankSet::from_sorted(&[1, 2])),
            30,
            &mut buf,
        )
        .unwrap();
        assert!(rep.truncated);
        assert_eq!(rep.spans, 30);
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        assert!(ev.iter().any(|e| e["name"] == "iotrex_truncated"));
        assert!(
            ev.iter()
                .filter(|e| e["ph"] == "X")
                .all(|e| e["pid"] == 1 || e["pid"] == 2)
        );
    }
}
