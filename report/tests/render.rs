//! The report renders for synthetic traces, every plot has data, the page is self-contained,
//! caps and left-out plots are stated, and inputs are escaped.

use report::{Input, Limits, NoModels, check, render};
use rsd::{Header, TraceFile};

fn synth(n: u32, iters: u64) -> Input {
    let mut header = Header::new(n);
    header.command = vec!["synth".into(), n.to_string()];
    Input {
        label: format!("spmd.{n}.iotrex"),
        file: TraceFile {
            header,
            trace: rsd_view::synth::spmd(n, iters),
        },
    }
}

#[test]
fn synthetic_traces_and_extrapolation_render_with_data_in_every_plot() {
    let inputs = vec![synth(4, 5), synth(8, 5), synth(16, 5)];
    let out = synth(64, 5);
    let mut steps = 0;
    let r = render(
        &inputs,
        Some(&out),
        &NoModels,
        &Limits::default(),
        &mut |_| steps += 1,
    )
    .unwrap();
    assert!(steps >= 5, "progress is reported per step");
    let c = check(&r.html).unwrap();
    assert_eq!(c.svgs, r.plots, "every plot is one inline <svg>");
    assert!(c.min_marks >= 1);
    // 4 traces x (2 per-rank, 1 stack, 1 timeline) plus the scaling plots.
    assert!(r.plots >= 4 * 4 + 3, "{} plots", r.plots);
    assert!(r.omitted.is_empty(), "{:?}", r.omitted);
    for want in [
        "Extrapolation to 64 ranks",
        "MPI_File_write_at_all",
        "1 of 4", // rank 0 aggregates the collective writes of 4 ranks
        "1 of 64",
        "out/file_%d",
        "Timeline",
        "No parameter models",
    ] {
        assert!(r.html.contains(want), "page lacks {want:?}");
    }
    // Measured totals are drawn at the input scales and at the target, without a curve.
    assert!(r.html.contains("<circle"));
    assert!(r.html.contains("in the extrapolated trace at 64 ranks"));
}

#[test]
fn plot_without_data_is_left_out_with_a_note() {
    // Only MPI calls: no file bytes, no I/O time, no MPI-IO calls.
    let mut c = rsd::Compressor::new(0);
    for op in [rsd::Op::Init, rsd::Op::Barrier, rsd::Op::Finalize] {
        let params = if op == rsd::Op::Barrier {
            vec![1]
        } else {
            vec![]
        };
        let mut e = rsd::RawEvent::new(op, 7, params);
        e.dur_ns = 1000;
        c.push(&e);
    }
    let input = Input {
        label: "mpi-only.iotrex".into(),
        file: TraceFile {
            header: Header::new(1),
            trace: c.finish(),
        },
    };
    let r = render(&[input], None, &NoModels, &Limits::default(), &mut |_| {}).unwrap();
    assert!(
        r.omitted
            .iter()
            .any(|o| o.contains("File bytes per rank") && o.contains("mpi-only.iotrex")),
        "{:?}",
        r.omitted
    );
    assert!(r.html.contains("Plot left out"));
    assert!(r.html.contains("No MPI-IO calls"));
    let c = check(&r.html).unwrap();
    assert_eq!(c.svgs, r.plots);
    assert!(r.plots >= 1, "the timeline still has the barrier");
}

#[test]
fn caps_are_stated() {
    let inputs = vec![synth(300, 40)];
    let limits = Limits {
        rank_bars: 50,
        timeline_ranks: 3,
        timeline_spans: 25,
        ..Limits::default()
    };
    let r = render(&inputs, None, &NoModels, &limits, &mut |_| {}).unwrap();
    assert!(
        r.html
            .contains("Capped: 51 of 300 ranks shown (every 6th rank and the last)")
    );
    assert!(r.html.contains("3 of 300 ranks shown"));
    assert!(r.html.contains("Capped at 25 calls per rank"));
    check(&r.html).unwrap();
}

#[test]
fn inputs_are_escaped_and_nothing_is_fetched() {
    let mut i = synth(4, 2);
    i.file.header.command = vec!["<script>alert(1)</script>".into(), "https://x".into()];
    i.label = "a&b<c>.iotrex".into();
    let r = render(&[i], None, &NoModels, &Limits::default(), &mut |_| {}).unwrap();
    assert!(!r.html.contains("<script>"));
    assert!(r.html.contains("&lt;script&gt;"));
    assert!(r.html.contains("a&amp;b&lt;c&gt;.iotrex"));
    check(&r.html).unwrap();
}

#[test]
fn check_rejects_empty_plots_and_network_assets() {
    let empty = "<!DOCTYPE html><html><body><svg><rect fill=\"#FFFFFF\"/></svg></body></html>";
    assert!(check(empty).unwrap_err().contains("no data"));
    let remote = "<!DOCTYPE html><html><body><img src=\"https://x/y.png\"></body></html>";
    assert!(check(remote).unwrap_err().contains("network"));
}

#[test]
fn no_inputs_is_an_error() {
    let e = render(&[], None, &NoModels, &Limits::default(), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("no input traces"));
}

/// The overview says where each trace's ranks ran: node count and placement, every node with
/// its ranks in the cell's title; "-" for a trace that does not say.
#[test]
fn the_overview_says_the_node_layout() {
    let mut laid = synth(4, 2);
    laid.file.header.node_layout = Some(rsd::NodeLayout::from_nodes(
        &[0, 1, 0, 1],
        vec!["node1".into(), "node2".into()],
    ));
    let r = render(
        &[laid, synth(8, 2)],
        None,
        &NoModels,
        &Limits::default(),
        &mut |_| {},
    )
    .unwrap();
    assert!(
        r.html.contains(
            "<td title=\"2 nodes by node (round robin), 2 ranks per node: node1 0-2:2, node2 \
             1-3:2\">2 by node (round robin), 2 per node</td>"
        ),
        "{}",
        r.html
    );
    assert!(r.html.contains("<th>nodes</th>"));
    assert!(r.html.contains("<td>-</td>"), "the trace without a layout");
}
