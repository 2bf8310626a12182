//! `diff`: parameter differences are found and named, representation differences are seen
//! through by expansion, timing is compared on request.

use extrap::diff::{DiffOptions, diff};
use extrap::patterns::{Pattern, trace_file};
use rsd::RankSet;
use rsd::trace::NodeKind;
use rsd::value::{Elastic, Group};

#[test]
fn identical_traces() {
    let a = trace_file(Pattern::Spmd, 8);
    let r = diff(&a, &a.clone(), &DiffOptions::default());
    assert!(r.identical && r.method == "structure" && r.count == 0);
}

#[test]
fn a_changed_parameter_is_named_with_both_values() {
    let a = trace_file(Pattern::Neighbour, 8);
    let mut b = a.clone();
    // The neighbour read's offset: make rank 7 read block 3 instead of block 0.
    for n in &mut b.trace.nodes {
        if let NodeKind::Event(e) = &mut n.kind
            && e.op == rsd::Op::Pread
        {
            let g = e.params[2].groups.last_mut().unwrap();
            g.val = rsd::Val::Const(rsd::RankFn::Const(3 << 20));
        }
    }
    let r = diff(&a, &b, &DiffOptions::default());
    assert!(!r.identical);
    // Expansion confirms it and names the rank.
    let d = r.differences.iter().find(|d| d.ranks == "7").unwrap();
    assert_eq!(
        (d.ranks.as_str(), d.param.as_str()),
        ("7", "offset"),
        "{r:#?}"
    );
    assert_eq!((d.left.as_str(), d.right.as_str()), ("0", "3145728"));
    let s = r.differences.iter().find(|d| d.ranks == "0-7").unwrap();
    assert!(s.event.contains("pread") && s.param == "offset", "{s:?}");
}

#[test]
fn the_same_calls_written_differently_are_identical() {
    let a = trace_file(Pattern::Spmd, 8);
    let mut b = a.clone();
    // Split the first event's (empty) rank-set-wide value into two groups: another encoding.
    let NodeKind::Event(e) = &mut b.trace.nodes[1].kind else {
        panic!("open expected")
    };
    let g = e.params[0].groups[0].clone();
    e.params[0] = Elastic {
        groups: vec![
            Group {
                ranks: RankSet::from_sorted(&[0, 1, 2, 3]),
                val: g.val.clone(),
            },
            Group {
                ranks: RankSet::from_sorted(&[4, 5, 6, 7]),
                val: g.val,
            },
        ],
    };
    let r = diff(&a, &b, &DiffOptions::default());
    assert!(r.identical, "{r:#?}");
    assert_eq!(r.method, "expansion");
    assert!(r.note.unwrap().contains("encode"));
    // Beyond the expansion limit the walk alone decides, and says different.
    let r = diff(
        &a,
        &b,
        &DiffOptions {
            expand_limit: 4,
            ..DiffOptions::default()
        },
    );
    assert!(!r.identical);
}

#[test]
fn timing_is_compared_on_request() {
    let a = trace_file(Pattern::Strong, 8);
    let b = trace_file(Pattern::Strong, 16);
    let r = diff(
        &a,
        &b,
        &DiffOptions {
            timing: true,
            ..DiffOptions::default()
        },
    );
    let t = r.timing.unwrap();
    let pw = t
        .events
        .iter()
        .find(|e| e.event.contains("pwrite"))
        .unwrap();
    // 2000 + 64000/8 = 10000 ns against 2000 + 64000/16 = 6000 ns.
    assert!((pw.dur_diff_pct + 40.0).abs() < 1e-9, "{pw:?}");
    let (wa, wb) = t.wall_ns;
    assert_eq!((wa, wb), (1_160_000, 1_320_000));
    assert!(t.wall_diff_pct.unwrap() > 13.0);
}
