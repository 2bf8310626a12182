//! The calls table: one row per expanded call, rank after rank, streamed in row groups.
//!
//! Each rank's calls go through its open-file table (`filetable`), so a call on a handle
//! names the file the handle was opened on, and a data call gets the byte offset it reached
//! in the file (views and file pointers applied), not only its explicit offset parameter.

use crate::ExportError;
use crate::table::TableWriter;
use filetable::{FileId, FileTable};
use rsd::Param;
use rsd::trace::{Event, Resolved, visit};
use rsd_view::timeline::Cursor;
use std::path::Path;

/// What the calls table holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallsWritten {
    /// Rows.
    pub rows: u64,
    /// Row groups.
    pub row_groups: u64,
    /// Ranks.
    pub ranks: u64,
    /// Rows with a parameter drawn from a summary.
    pub approximate: u64,
}

/// Where a call sits: its nesting depth, the call it was made inside, and that call's file.
#[derive(Clone, Copy)]
struct Nest {
    depth: i64,
    parent: Option<i64>,
    ctx: Option<FileId>,
}

impl Nest {
    const TOP: Nest = Nest {
        depth: 0,
        parent: None,
        ctx: None,
    };
}

/// The per-rank state of the walk.
struct Walk<'a> {
    w: &'a mut TableWriter,
    /// The trace with the offsets the other ranks' calls decide resolved, as the rank's calls
    /// had them: the column `offset` of a call is what the call asked for.
    trace: &'a Resolved<'a>,
    /// The slot walked: a rank, or a process of a rank (`rsd::process`).
    slot: u32,
    /// The rank it belongs to, and its process number there (`None`: the rank's own).
    rank: u32,
    process: Option<i64>,
    /// The rank's node and its name (`rsd::Header::node_layout`), when known.
    node: Option<i64>,
    node_name: Option<&'a str>,
    seq: i64,
    source: &'static str,
    approximate: u64,
    err: Option<ExportError>,
    files: FileTable,
}

/// A call's path and, for a call that names two (`rename`, `link`, `symlink`), its second.
pub(crate) fn split_pair(path: Option<&str>) -> (Option<&str>, Option<&str>) {
    match path.map(|p| (p, rsd::op::split_path_pair(p))) {
        Some((_, Some((a, b)))) => (Some(a), Some(b)),
        Some((p, None)) => (Some(p), None),
        None => (None, None),
    }
}

/// Writes the calls of every rank of `tf` to `path`.
pub fn write_calls(
    tf: &rsd::TraceFile,
    path: &Path,
    rows_per_group: usize,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<CallsWritten, ExportError> {
    let mut w = TableWriter::create("calls", path, rows_per_group)?;
    let source = if tf.header.prediction.is_some() {
        "model"
    } else {
        "event mean"
    };
    let trace = tf.trace.resolved();
    let ranks = trace.ranks().to_vec();
    let total = ranks.len() as u32;
    let mut approximate = 0;
    let layout = tf.header.node_layout.as_ref();
    let processes = tf.header.processes.as_ref();
    for (done, &slot) in ranks.iter().enumerate() {
        let owner = processes.and_then(|p| p.owner(tf.header.nranks, slot));
        let rank = owner.map_or(slot, |(r, _)| r);
        let node = layout.and_then(|l| l.node_of(rank, tf.header.nranks));
        let mut walk = Walk {
            w: &mut w,
            trace: &trace,
            slot,
            rank,
            process: owner.map(|(_, k)| i64::from(k)),
            node: node.map(i64::from),
            node_name: node.and_then(|n| layout?.name(n)),
            seq: 0,
            source,
            approximate: 0,
            err: None,
            files: FileTable::new(),
        };
        let mut at = Cursor::top(1.0);
        let mut idx = Vec::new();
        visit(&trace.nodes, slot, &mut idx, &mut |e, idx| {
            let (start, dur) = at.place(&e.timing);
            walk.call(e, idx, Nest::TOP, start, dur)
        });
        if let Some(e) = walk.err {
            return Err(e);
        }
        approximate += walk.approximate;
        progress(done as u32 + 1, total);
    }
    let (rows, row_groups) = w.finish()?;
    Ok(CallsWritten {
        rows,
        row_groups,
        ranks: u64::from(total),
        approximate,
    })
}

impl Walk<'_> {
    /// Writes `e` and the calls made inside it; false stops the walk on an error.
    fn call(&mut self, e: &Event, idx: &mut Vec<u64>, at: Nest, start: f64, dur: f64) -> bool {
        let Nest { depth, parent, ctx } = at;
        let flat = self.trace.flatten(e, self.slot, idx);
        let r = self.files.resolve_call(&flat, ctx);
        let seq = self.seq;
        self.seq += 1;
        let approx = e.params.iter().any(|p| p.is_approx());
        self.approximate += u64::from(approx);
        let w = &mut *self.w;
        w.int(i64::from(self.rank));
        w.opt_int(self.process);
        w.opt_int(self.node);
        w.opt_text(self.node_name);
        w.int(seq);
        w.int(depth);
        w.opt_int(parent);
        w.text(e.op.layer().name());
        w.text(e.op.name());
        w.text(&format!("{:016x}", e.sig));
        let (path, path2) = split_pair(r.path.as_deref());
        w.opt_text(path);
        w.opt_text(path2);
        let get = |p| flat.get(p);
        w.opt_int(get(Param::Fd).or(get(Param::Fh)).or(get(Param::Stream)));
        w.opt_int(get(Param::Offset));
        w.opt_int(r.offset.map(|o| i64::try_from(o).unwrap_or(i64::MAX)));
        w.int(i64::try_from(e.op.data_bytes(&flat.params)).unwrap_or(i64::MAX));
        w.opt_int(get(Param::Ret));
        let params: serde_json::Map<String, serde_json::Value> =
            rsd_view::show::named_params(&flat)
                .into_iter()
                .map(|(k, v)| (k, v.into()))
                .collect();
        w.text(&serde_json::Value::Object(params).to_string());
        w.float(start);
        // The call's own duration as recorded, not what the placement below kept of it: a
        // nested call whose mean overruns its parent's placed span (means of different
        // calls need not nest) is placed at the span's end but keeps its time, so the
        // column's sum per op is the time `iotrex stats` reports.
        w.float(e.timing.dur.mean);
        w.text(self.source);
        w.flag(approx);
        if let Err(x) = w.end_row() {
            self.err = Some(x);
            return false;
        }
        // Calls made inside: laid out inside the parent's span (`rsd_view::timeline`).
        let mut inner = Cursor::within(start, dur, 1.0);
        visit(&e.children, self.slot, idx, &mut |c, idx| {
            let (cs, cd) = inner.place(&c.timing);
            let inside = Nest {
                depth: depth + 1,
                parent: Some(seq),
                ctx: r.file.or(ctx),
            };
            self.call(c, idx, inside, cs, cd)
        })
    }
}
