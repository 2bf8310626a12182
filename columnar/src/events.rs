//! The events table: one row per node of the compressed trace, depth first.

use crate::ExportError;
use crate::table::TableWriter;
use rsd::notation::render_elastic;
use rsd::trace::{Node, NodeKind};
use std::path::Path;

/// Row groups of the events table: the compressed trace is small, so one group is the norm.
const EVENT_ROWS_PER_GROUP: usize = 1 << 16;

/// Writes the nodes of `tf` to `path`; returns the rows written.
pub fn write_events(tf: &rsd::TraceFile, path: &Path) -> Result<u64, ExportError> {
    let mut w = TableWriter::create("events", path, EVENT_ROWS_PER_GROUP)?;
    let mut id = 0;
    nodes(&mut w, &tf.trace.nodes, None, 0, false, &mut id)?;
    Ok(w.finish()?.0)
}

fn nodes(
    w: &mut TableWriter,
    list: &[Node],
    parent: Option<i64>,
    depth: i64,
    nested: bool,
    id: &mut i64,
) -> Result<(), ExportError> {
    for n in list {
        let me = *id;
        *id += 1;
        w.int(me);
        w.opt_int(parent);
        match &n.kind {
            NodeKind::Event(e) => {
                w.text("event");
                w.flag(nested);
                w.int(depth);
                w.text(&n.ranks.to_string());
                w.int(i64::try_from(n.ranks.len()).unwrap_or(i64::MAX));
                w.text(e.op.layer().name());
                w.text(e.op.name());
                w.text(&format!("{:016x}", e.sig));
                let (path, path2) = crate::calls::split_pair(e.path.as_ref().map(|p| p.0.as_str()));
                w.opt_text(path);
                w.opt_text(path2);
                let params: serde_json::Map<String, serde_json::Value> =
                    rsd::notation::render_params(e)
                        .into_iter()
                        .map(|(name, shown)| (name, shown.into()))
                        .collect();
                w.text(&serde_json::Value::Object(params).to_string());
                w.null();
                let d = &e.timing.dur;
                w.int(i64::try_from(d.count).unwrap_or(i64::MAX));
                w.float(e.timing.gap.mean);
                w.float(d.mean);
                w.float(d.variance().sqrt());
                w.float(d.min as f64);
                w.float(d.max as f64);
                w.float(d.total());
                let iv = e.timing.interval.as_ref();
                w.opt_float(iv.map(|i| i.dur.lo));
                w.opt_float(iv.map(|i| i.dur.hi));
                w.flag(e.params.iter().any(|p| p.is_approx()));
                w.end_row()?;
                nodes(w, &e.children, Some(me), depth + 1, true, id)?;
            }
            NodeKind::Loop(l) => {
                w.text("loop");
                w.flag(nested);
                w.int(depth);
                w.text(&n.ranks.to_string());
                w.int(i64::try_from(n.ranks.len()).unwrap_or(i64::MAX));
                for _ in 0..6 {
                    w.null(); // layer, op, call site, path, path2, params
                }
                w.text(&render_elastic(&l.iters));
                for _ in 0..9 {
                    w.null(); // calls and timing
                }
                w.flag(l.iters.is_approx());
                w.end_row()?;
                nodes(w, &l.body, Some(me), depth + 1, nested, id)?;
            }
        }
    }
    Ok(())
}
