//! The tables read back with the Parquet reader equal the trace they came from: one row per
//! expanded call, bytes per op as `stats` counts them, a node per row of the events table.

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use rsd::{Header, TraceFile};
use std::collections::BTreeMap;

fn rows(path: &std::path::Path) -> Vec<Row> {
    let r = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    r.get_row_iter(None).unwrap().map(|r| r.unwrap()).collect()
}

fn get<'a>(row: &'a Row, name: &str) -> &'a Field {
    row.get_column_iter()
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("no column {name}"))
}

fn int(row: &Row, name: &str) -> i64 {
    match get(row, name) {
        Field::Long(v) => *v,
        f => panic!("{name} is {f:?}"),
    }
}

fn text(row: &Row, name: &str) -> String {
    match get(row, name) {
        Field::Str(v) => v.clone(),
        f => panic!("{name} is {f:?}"),
    }
}

fn trace_file(nranks: u32, iters: u64) -> TraceFile {
    TraceFile {
        header: Header::new(nranks),
        trace: rsd_view::synth::spmd(nranks, iters),
    }
}

#[test]
fn calls_and_bytes_per_op_equal_the_expanded_trace() {
    let tf = trace_file(4, 7);
    let dir = tempfile::tempdir().unwrap();
    // A small row group, so the test crosses group boundaries.
    let rep = columnar::export_parquet(&tf, dir.path(), 5, &mut |_, _| {}).unwrap();
    let calls = rows(&rep.calls_file);
    assert_eq!(calls.len() as u64, rep.calls);
    assert!(rep.row_groups > 1, "{rep:?}");
    let stats = rsd_view::stats::summarize(&tf.trace);
    let mut per_op: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in &calls {
        let e = per_op.entry(text(r, "op")).or_default();
        e.0 += 1;
        e.1 += int(r, "bytes") as u64;
    }
    let want: BTreeMap<String, (u64, u64)> = stats
        .ops
        .iter()
        .map(|((_, op), t)| (op.name().to_string(), (t.count, t.bytes)))
        .collect();
    assert_eq!(per_op, want);
    // Nested calls point at a parent of the same rank, made before them.
    for r in calls.iter().filter(|r| int(r, "depth") > 0) {
        let p = int(r, "parent_seq");
        assert!(p < int(r, "seq"));
        assert!(calls.iter().any(|q| int(q, "rank") == int(r, "rank")
            && int(q, "seq") == p
            && int(q, "depth") == int(r, "depth") - 1));
    }
    // Each rank's top-level calls do not go back in time.
    for rank in 0..4 {
        let ts: Vec<f64> = calls
            .iter()
            .filter(|r| int(r, "rank") == rank && int(r, "depth") == 0)
            .map(|r| match get(r, "start_ns") {
                Field::Double(v) => *v,
                f => panic!("{f:?}"),
            })
            .collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    }
    assert!(calls.iter().all(|r| text(r, "time_source") == "event mean"));
}

#[test]
fn the_events_table_has_a_row_per_node() {
    let tf = trace_file(8, 3);
    let dir = tempfile::tempdir().unwrap();
    let rep = columnar::export_parquet(&tf, dir.path(), 1000, &mut |_, _| {}).unwrap();
    let events = rows(&rep.events_file);
    assert_eq!(
        events.len() as u64,
        rsd_view::stats::summarize(&tf.trace).nodes
    );
    let calls: i64 = events
        .iter()
        .filter(|r| text(r, "kind") == "event")
        .map(|r| int(r, "calls"))
        .sum();
    assert_eq!(calls as u64, rep.calls);
}

#[test]
fn an_unwritable_directory_is_named() {
    let tf = trace_file(2, 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let err = columnar::export_parquet(&tf, &file.join("sub"), 10, &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("plain"), "{err}");
}
