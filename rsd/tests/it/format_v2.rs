//! Format version 2 (`docs/format-v2.md`): the golden files in `data/format/v2/` read, mean
//! the same trace as their version-1 originals and re-encode to their bytes; any trace
//! round-trips through version 2, and through version 1 then version 2; the reader refuses
//! damage with an error naming the file (bit flips, truncation, random bodies).

use proptest::prelude::*;
use rsd::approx::Summary;
use rsd::format::{Encoding, FORMAT_V2, GAP_WAITS_MINOR, MAGIC, PREFIX_LEN};
use rsd::layout::FileEnd;
use rsd::path::PathTemplate;
use rsd::prefix::Exscan;
use rsd::timing::{BINS, GapWaits, Interval, Intervals, Stats, Timing};
use rsd::trace::{Event, Loop, Node, NodeKind};
use rsd::value::Group;
use rsd::{Elastic, FlatEvent, Header, Op, RankFn, RankSet, Trace, TraceFile, Val};
use std::path::{Path, PathBuf};

fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../data/format")
        .join(rel)
}

fn read(p: &Path) -> (Vec<u8>, TraceFile) {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let tf = TraceFile::read(p).unwrap_or_else(|e| panic!("{e}"));
    (bytes, tf)
}

/// Each version-2 golden file is its version-1 original rewritten
/// (`trace_bytes --write-as v2`): the same header and trace, its own bytes, and smaller.
#[test]
fn golden_v2_files_mean_their_v1_originals_and_keep_their_bytes() {
    for name in ["spmd_4x10.iotrex", "spmd_4x10_mpiconfig.iotrex"] {
        let (b1, v1) = read(&data(&format!("v1/{name}")));
        let (b2, v2) = read(&data(&format!("v2/{name}")));
        assert_eq!(&b2[..8], &MAGIC);
        assert_eq!(u32::from_le_bytes(b2[8..12].try_into().unwrap()), FORMAT_V2);
        assert_eq!(
            (v1.header.encoding, v2.header.encoding),
            (Encoding::V1, Encoding::V2)
        );
        assert_eq!(v2.trace, v1.trace, "{name}: trace");
        let mut h = v1.header.clone();
        h.encoding = Encoding::V2;
        assert_eq!(v2.header, h, "{name}: header");
        assert_eq!(
            v2.to_bytes().unwrap(),
            b2,
            "{name}: v2 re-encodes to its bytes"
        );
        assert_eq!(
            v1.to_bytes().unwrap(),
            b1,
            "{name}: v1 re-encodes to its bytes"
        );
        assert_eq!(
            v1.to_bytes_as(Encoding::V2).unwrap(),
            b2,
            "{name}: v1 -> v2"
        );
        assert!(
            b2.len() * 2 < b1.len(),
            "{name}: {} B as v2, {} B as v1",
            b2.len(),
            b1.len()
        );
    }
}

/// The version-2 golden file expands to the calls stored next to the version-1 one.
#[test]
fn golden_v2_expands_to_the_recorded_calls() {
    let (_, tf) = read(&data("v2/spmd_4x10.iotrex"));
    let text = std::fs::read_to_string(data("v1/spmd_4x10.expand.json")).unwrap();
    let want: Vec<Vec<FlatEvent>> = serde_json::from_str(&text).unwrap();
    for (r, w) in want.iter().enumerate() {
        assert_eq!(&tf.trace.expand(r as u32), w, "rank {r}");
    }
}

/// New traces are written as version 2; the size test's synthetic program is under half its
/// version-1 size at every scale it checks.
#[test]
fn new_traces_are_version_2_and_smaller() {
    for (n, it) in [(4u32, 10u64), (64, 1000), (1024, 10)] {
        let tf = TraceFile {
            header: Header::new(n),
            trace: rsd_view::synth::spmd(n, it),
        };
        let b = tf.to_bytes().unwrap();
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), FORMAT_V2);
        let v1 = tf.to_bytes_as(Encoding::V1).unwrap();
        assert!(
            b.len() * 2 < v1.len(),
            "{n}x{it}: v2 {} B, v1 {} B",
            b.len(),
            v1.len()
        );
        let back = TraceFile::from_bytes(&b, Path::new("mem")).unwrap();
        assert_eq!(back, tf);
    }
}

/// A damaged version-2 file or body is refused with the file's name, never accepted as
/// another trace, never a panic.
#[test]
fn damage_is_refused_naming_the_file() {
    let tf = TraceFile {
        header: Header::new(4),
        trace: rsd_view::synth::spmd(4, 10),
    };
    // Both layouts of version 2's timing records (minor versions 0-6, and 7).
    type Decode = fn(&[u8], &Path) -> Result<TraceFile, rsd::RsdError>;
    let layouts: [(Encoding, Decode); 2] = [
        (Encoding::V2, TraceFile::decode_body_v2),
        (Encoding::V2_7, TraceFile::decode_body_v2_7),
    ];
    for (enc, decode) in layouts {
        let b = tf.to_bytes_as(enc).unwrap();
        let body = &b[PREFIX_LEN..];
        let p = Path::new("v2.iotrex");
        for n in 0..body.len() {
            let e = decode(&body[..n], p).unwrap_err();
            assert!(e.to_string().contains("v2.iotrex"), "{e}");
        }
        let mut x = body.to_vec();
        x.push(0);
        assert!(
            decode(&x, p)
                .unwrap_err()
                .to_string()
                .contains("1 bytes left over")
        );
        assert_eq!(decode(body, p).unwrap().trace, tf.trace);
    }
}

// --- Arbitrary traces ----------------------------------------------------------------------

fn rankset() -> impl Strategy<Value = RankSet> {
    prop_oneof![
        (1u32..70_000).prop_map(RankSet::all),
        prop::collection::btree_set(0u32..80, 1..12)
            .prop_map(|s| RankSet::from_sorted(&s.into_iter().collect::<Vec<_>>())),
    ]
}

fn rankfn() -> impl Strategy<Value = RankFn> {
    prop_oneof![
        4 => any::<i64>().prop_map(RankFn::Const),
        4 => (-5i64..5).prop_map(RankFn::Const),
        1 => (any::<i64>(), any::<i64>()).prop_map(|(a, b)| RankFn::Affine { a, b }),
        1 => (any::<i64>(), 1i64..64, any::<i64>()).prop_map(|(a, k, b)| RankFn::Div { a, k, b }),
        1 => (any::<i64>(), 1i64..64, any::<i64>()).prop_map(|(a, k, b)| RankFn::Mod { a, k, b }),
        1 => (1i64..8, 8i64..16, 0i64..8).prop_map(|(w, p, o)| RankFn::Shift { w, p, o }),
        1 => (any::<i64>(), 1i64..9, any::<i64>(), any::<u32>(), any::<i64>())
            .prop_map(|(a, k, b, t, d)| RankFn::Step { a, k, b, t, d }),
    ]
}

/// Any float the statistics hold: integers, means of integer sums, arbitrary finite values,
/// zero and negative zero.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        (0u64..1 << 40).prop_map(|x| x as f64),
        (0u64..1 << 40, 2u64..1000).prop_map(|(s, n)| s as f64 / n as f64),
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
    ]
}

fn stats() -> impl Strategy<Value = Stats> {
    (
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        float(),
        float(),
        prop::collection::vec((0usize..BINS, 0u64..1 << 36), 0..4),
        any::<bool>(),
        0u64..3,
    )
        .prop_map(
            |(min, max, min_rank, max_rank, mean, m2, bins, consistent, extra)| {
                let mut b = [0u64; BINS];
                for (i, c) in bins {
                    b[i] = c;
                }
                // Mostly the bins sum to the count (what the compressor makes), sometimes not.
                let sum: u64 = b.iter().sum();
                let count = if consistent { sum } else { sum + extra };
                Stats {
                    count,
                    min,
                    max,
                    min_rank,
                    max_rank,
                    mean,
                    m2,
                    bins: b,
                }
            },
        )
}

/// `nodes` with no off-CPU gap time anywhere.
fn without_waits(mut nodes: Vec<Node>) -> Vec<Node> {
    fn strip(nodes: &mut [Node]) {
        for n in nodes {
            match &mut n.kind {
                NodeKind::Event(e) => {
                    e.timing.waits = None;
                    strip(&mut e.children);
                }
                NodeKind::Loop(l) => strip(&mut l.body),
            }
        }
    }
    strip(&mut nodes);
    nodes
}

/// Whether any event holds off-CPU gap time.
fn has_waits(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => e.timing.waits.is_some() || has_waits(&e.children),
        NodeKind::Loop(l) => has_waits(&l.body),
    })
}

fn timing() -> impl Strategy<Value = Timing> {
    (
        stats(),
        stats(),
        any::<bool>(),
        prop::option::of((float(), float(), float(), float())),
        // Off-CPU time in the gaps (minor 11): in one record in eight.
        prop::option::weighted(0.125, (any::<u64>(), any::<u64>())),
    )
        .prop_map(|(gap, mut dur, same, iv, waits)| {
            if same {
                dur.count = gap.count;
            }
            Timing {
                gap,
                dur,
                interval: iv.map(|(a, b, c, d)| Intervals {
                    gap: Interval { lo: a, hi: b },
                    dur: Interval { lo: c, hi: d },
                }),
                waits: waits.map(|(runq_ns, blocked_ns)| GapWaits {
                    runq_ns,
                    blocked_ns,
                }),
            }
        })
}

fn val() -> impl Strategy<Value = Val<RankFn>> {
    let leaf = prop_oneof![
        6 => rankfn().prop_map(Val::Const),
        2 => (rankfn(), prop::collection::vec(rankfn(), 0..3))
            .prop_map(|(base, strides)| Val::Lin { base, strides }),
        1 => stats().prop_map(|stats| Val::Approx(Box::new(Summary { stats }))),
        1 => (0u32..4, any::<bool>(), rankfn()).prop_map(|(of, running, c)| {
            Val::Exscan(Box::new(Exscan { of, running, start: Val::Const(c), from: None }))
        }),
        1 => (prop::option::of(0u32..4), rankfn())
            .prop_map(|(of, c)| Val::FileEnd(Box::new(FileEnd { of, start: Val::Const(c) }))),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..5).prop_map(Val::Seq),
            prop::collection::vec(inner, 1..5).prop_map(Val::Cycle),
            // Explicit vectors of constants (stored as differences).
            prop::collection::vec(any::<i64>(), 1..6).prop_map(|v| Val::Seq(
                v.into_iter()
                    .map(|x| Val::Const(RankFn::Const(x)))
                    .collect()
            )),
        ]
    })
}

fn elastic() -> impl Strategy<Value = Elastic> {
    prop::collection::vec((rankset(), val()), 1..3).prop_map(|g| Elastic {
        groups: g
            .into_iter()
            .map(|(ranks, val)| Group { ranks, val })
            .collect(),
    })
}

/// An event that follows its op's schema, as the decoder requires: the fixed parameters,
/// up to two more (a variadic op's arrays; any op may carry them), then the path's fields.
/// One to three values are drawn and repeated to that length (drawing one per parameter
/// makes the strategy's trees deep enough to overflow a test thread's stack).
fn event(children: Vec<Node>) -> impl Strategy<Value = Event> {
    (
        prop::sample::select(Op::ALL.to_vec()),
        prop_oneof![0u64..4, any::<u64>()],
        prop::option::of(prop::sample::select(vec![
            "shared.dat",
            "out/file_%d",
            "a%%b",
        ])),
        prop::collection::vec(elastic(), 1..4),
        0usize..3,
        timing(),
    )
        .prop_map(move |(op, sig, path, drawn, extra, timing)| {
            let path = path.map(|p| PathTemplate(p.to_string()));
            let n = op.params().len() + extra + path.as_ref().map_or(0, |p| p.nfields());
            Event {
                op,
                sig,
                path,
                params: drawn.iter().cycle().take(n).cloned().collect(),
                timing,
                children: children.clone(),
            }
        })
}

fn nodes() -> impl Strategy<Value = Vec<Node>> {
    let leaf = (rankset(), event(Vec::new())).prop_map(|(ranks, e)| Node {
        ranks,
        kind: NodeKind::Event(e),
    });
    let tree = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            (
                rankset(),
                elastic(),
                prop::collection::vec(inner.clone(), 1..4)
            )
                .prop_map(|(ranks, iters, body)| Node {
                    ranks,
                    kind: NodeKind::Loop(Loop { iters, body }),
                }),
            (rankset(), prop::collection::vec(inner, 1..3))
                .prop_flat_map(|(ranks, children)| (Just(ranks), event(children)))
                .prop_map(|(ranks, e)| Node {
                    ranks,
                    kind: NodeKind::Event(e),
                }),
        ]
    });
    prop::collection::vec(tree, 0..5)
}

fn header() -> impl Strategy<Value = Header> {
    (
        1u32..100_000,
        prop::collection::vec("[ -~]{0,12}", 0..3),
        prop::option::of("[0-9a-f]{16}"),
        any::<u64>(),
    )
        .prop_map(|(n, command, run_id, wall_ns)| {
            let mut h = Header::new(n);
            h.command = command;
            h.run_id = run_id;
            h.wall_ns = wall_ns;
            h
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// v2 write -> read gives the same trace and header, and re-encodes to the same bytes;
    /// v1 write -> read -> v2 write -> read gives the same trace too.
    #[test]
    fn any_trace_round_trips(header in header(), nodes in nodes()) {
        let tf = TraceFile { header, trace: Trace { nodes } };
        let b2 = tf.to_bytes().unwrap();
        prop_assert_eq!(u32::from_le_bytes(b2[8..12].try_into().unwrap()), FORMAT_V2);
        let back = TraceFile::from_bytes(&b2, Path::new("mem")).unwrap();
        prop_assert_eq!(&back, &tf);
        prop_assert_eq!(back.to_bytes().unwrap(), b2.clone());

        let b1 = tf.to_bytes_as(Encoding::V1).unwrap();
        let from_v1 = TraceFile::from_bytes(&b1, Path::new("mem")).unwrap();
        prop_assert_eq!(from_v1.header.encoding, Encoding::V1);
        prop_assert_eq!(&from_v1.trace, &tf.trace);
        // New traces are written as 2.7 (`Header::new`); a version-1 trace written as 2.7
        // gives the same bytes.
        prop_assert_eq!(tf.header.encoding, Encoding::V2_7);
        let again = from_v1.to_bytes_as(tf.header.encoding).unwrap();
        prop_assert_eq!(&again, &b2);
        let v2 = TraceFile::from_bytes(&again, Path::new("mem")).unwrap();
        prop_assert_eq!(&v2.trace, &tf.trace);
        prop_assert_eq!(&v2, &tf);

        // Off-CPU gap time is minor 11, which the timing records of minor versions 0-6
        // cannot say: such a trace is written with the sized records whatever is asked.
        let minor = |b: &[u8]| u32::from_le_bytes(b[12..16].try_into().unwrap());
        if has_waits(&tf.trace.nodes) {
            prop_assert!(minor(&b2) >= GAP_WAITS_MINOR);
            prop_assert_eq!(tf.to_bytes_as(Encoding::V2).unwrap(), b2);
            return Ok(());
        }
        prop_assert!(minor(&b2) < GAP_WAITS_MINOR);
        // The timing records of minor versions 0-6 still round-trip, and read as such.
        let plain = tf.to_bytes_as(Encoding::V2).unwrap();
        prop_assert!(u32::from_le_bytes(plain[12..16].try_into().unwrap()) < 7);
        let back = TraceFile::from_bytes(&plain, Path::new("mem")).unwrap();
        prop_assert_eq!(back.header.encoding, Encoding::V2);
        prop_assert_eq!(&back.trace, &tf.trace);
        prop_assert_eq!(back.to_bytes().unwrap(), plain);
    }

    /// Bit flips and random bytes in a version-2 body: a clean error naming the file, or a
    /// trace that validated and re-encodes.
    #[test]
    fn damaged_bodies_never_panic(
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..6),
        junk in prop::collection::vec(any::<u8>(), 0..64),
        keep in any::<prop::sample::Index>(),
    ) {
        let tf = TraceFile { header: Header::new(4), trace: rsd_view::synth::spmd(4, 10) };
        for sized in [false, true] {
        type Decode = fn(&[u8], &Path) -> Result<TraceFile, rsd::RsdError>;
        let (b, decode): (Vec<u8>, Decode) =
            if sized {
                (tf.to_bytes().unwrap(), TraceFile::decode_body_v2_7)
            } else {
                (tf.to_bytes_as(Encoding::V2).unwrap(), TraceFile::decode_body_v2)
            };
        let mut body = b[PREFIX_LEN..].to_vec();
        for (at, bit) in &flips {
            let i = at.index(body.len());
            body[i] ^= 1 << bit;
        }
        let p = Path::new("fuzz.iotrex");
        for input in [body.clone(), {
            let mut x = b[PREFIX_LEN..][..keep.index(b.len() - PREFIX_LEN)].to_vec();
            x.extend(&junk);
            x
        }] {
            match decode(&input, p) {
                Err(e) => prop_assert!(e.to_string().contains("fuzz.iotrex"), "{}", e),
                Ok(tf) => {
                    let again = tf.to_bytes().unwrap();
                    TraceFile::from_bytes(&again, p).unwrap();
                }
            }
        }
        }
    }
}

/// An event with fewer parameters than its op's schema (what the fuzzers found replay's
/// planning to index past) is refused when read, in both versions, naming the event and its
/// op, never a panic; one parameter more (a variadic op's array) still reads.
#[test]
fn an_event_shorter_than_its_schema_is_refused_naming_it() {
    let tf = TraceFile {
        header: Header::new(4),
        trace: rsd_view::synth::spmd(4, 10),
    };
    fn edit_first_pwrite(nodes: &mut [Node], f: &mut dyn FnMut(&mut Event)) -> bool {
        for n in nodes {
            let done = match &mut n.kind {
                NodeKind::Event(e) if e.op == Op::Pwrite => {
                    f(e);
                    true
                }
                NodeKind::Event(e) => edit_first_pwrite(&mut e.children, f),
                NodeKind::Loop(l) => edit_first_pwrite(&mut l.body, f),
            };
            if done {
                return true;
            }
        }
        false
    }
    for enc in [Encoding::V1, Encoding::V2] {
        let mut short = tf.clone();
        assert!(edit_first_pwrite(&mut short.trace.nodes, &mut |e| e
            .params
            .truncate(2)));
        let b = short.to_bytes_as(enc).unwrap();
        let msg = TraceFile::from_bytes(&b, Path::new("short.iotrex"))
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("short.iotrex: ")
                && msg.contains("(pwrite, ranks 0-3) has 2 parameter(s) where its schema needs 4 (fd, count, offset, ret)"),
            "{enc:?}: {msg}"
        );
        let mut long = tf.clone();
        assert!(edit_first_pwrite(&mut long.trace.nodes, &mut |e| {
            let extra = e.params[0].clone();
            e.params.push(extra)
        }));
        let b = long.to_bytes_as(enc).unwrap();
        assert_eq!(
            TraceFile::from_bytes(&b, Path::new("long.iotrex"))
                .unwrap()
                .trace,
            long.trace
        );
    }
}

/// A timing record as the tracer and the merge make them, on a node of rank set `ranks`:
/// the count a multiple of the set's size, the extreme ranks members of the set, bins from the
/// minimum's to the maximum's summing to the count, the mean an exact sum over the count.
#[allow(clippy::too_many_arguments)]
fn recorded_stats(
    ranks: &RankSet,
    per_rank: u64,
    picks: [prop::sample::Index; 2],
    lo: u64,
    spread: u64,
    split: f64,
    sum_at: f64,
    m2: f64,
) -> Stats {
    let members = ranks.to_vec();
    let count = per_rank * ranks.len();
    let (min, max) = (lo, lo + spread);
    let mut bins = [0u64; BINS];
    let (a, b) = (rsd::timing::bin_of(min), rsd::timing::bin_of(max));
    let low = if a == b {
        count
    } else {
        ((count as f64 * split) as u64).clamp(1, count - 1)
    };
    bins[a] += low;
    bins[b] += count - low;
    let sum = min * count + ((spread * count) as f64 * sum_at) as u64;
    Stats {
        count,
        min,
        max,
        min_rank: members[picks[0].index(members.len())],
        max_rank: members[picks[1].index(members.len())],
        mean: sum as f64 / count as f64,
        m2,
        bins,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Timing records as traced (counts per rank, extreme ranks in the node's set, exact
    /// sums) round-trip through version 2.7 and are never longer than in minor versions
    /// 0-6; so do the same records with ranks outside the set.
    #[test]
    fn sized_timing_records_round_trip_and_never_grow(
        ranks in rankset(),
        per_rank in 1u64..2000,
        picks in prop::array::uniform4(any::<prop::sample::Index>()),
        lo in prop_oneof![0u64..5000, 0u64..1 << 34],
        spread in prop_oneof![0u64..5000, 0u64..1 << 30],
        split in 0.0f64..1.0,
        sum_at in 0.0f64..1.0,
        m2 in float(),
        outside in any::<bool>(),
    ) {
        let mut gap = recorded_stats(&ranks, per_rank, [picks[0], picks[1]], lo, spread, split, sum_at, m2);
        let dur = recorded_stats(&ranks, per_rank, [picks[2], picks[3]], spread, lo, 1.0 - split, 1.0 - sum_at, m2);
        if outside {
            gap.max_rank = 1 << 20;
        }
        let node = Node {
            ranks: ranks.clone(),
            kind: NodeKind::Event(Event {
                op: Op::Barrier,
                sig: 1,
                path: None,
                params: vec![Elastic {
                    groups: vec![Group { ranks, val: Val::Const(RankFn::Const(0)) }],
                }],
                timing: Timing { gap, dur, interval: None, waits: None },
                children: vec![],
            }),
        };
        let tf = TraceFile { header: Header::new(70_000), trace: Trace { nodes: vec![node] } };
        let sized = tf.to_bytes().unwrap();
        let plain = tf.to_bytes_as(Encoding::V2).unwrap();
        prop_assert!(sized.len() <= plain.len(), "2.7 {} B, 2.0-2.6 {} B", sized.len(), plain.len());
        let back = TraceFile::from_bytes(&sized, Path::new("mem")).unwrap();
        prop_assert_eq!(&back, &tf);
        prop_assert_eq!(back.to_bytes().unwrap(), sized);
    }
}

/// The version-2.7 golden files (`data/format/v2.7/`) are their version-1 originals written
/// with minor version 7's timing records (`trace_bytes --write-as v2.7`): the same header and
/// trace, their own bytes, minor version 7, and smaller than the version-2 golden files.
#[test]
fn golden_v2_7_files_mean_their_v1_originals_and_keep_their_bytes() {
    for name in ["spmd_4x10.iotrex", "spmd_4x10_mpiconfig.iotrex"] {
        let (_, v1) = read(&data(&format!("v1/{name}")));
        let (b2, _) = read(&data(&format!("v2/{name}")));
        let (b27, v27) = read(&data(&format!("v2.7/{name}")));
        assert_eq!(
            u32::from_le_bytes(b27[8..12].try_into().unwrap()),
            FORMAT_V2
        );
        assert_eq!(u32::from_le_bytes(b27[12..16].try_into().unwrap()), 7);
        assert_eq!(v27.header.encoding, Encoding::V2_7);
        assert_eq!(v27.trace, v1.trace, "{name}: trace");
        let mut h = v1.header.clone();
        h.encoding = Encoding::V2_7;
        assert_eq!(v27.header, h, "{name}: header");
        assert_eq!(
            v27.to_bytes().unwrap(),
            b27,
            "{name}: re-encodes to its bytes"
        );
        assert_eq!(
            v1.to_bytes_as(Encoding::V2_7).unwrap(),
            b27,
            "{name}: v1 -> v2.7"
        );
        assert!(
            b27.len() < b2.len(),
            "{name}: {} B as 2.7, {} B as 2",
            b27.len(),
            b2.len()
        );
    }
    let (_, tf) = read(&data("v2.7/spmd_4x10.iotrex"));
    let text = std::fs::read_to_string(data("v1/spmd_4x10.expand.json")).unwrap();
    let want: Vec<Vec<FlatEvent>> = serde_json::from_str(&text).unwrap();
    for (r, w) in want.iter().enumerate() {
        assert_eq!(&tf.trace.expand(r as u32), w, "rank {r}");
    }
}

/// The provenance of `data/format/v2.8/spmd_4x10_provenance.iotrex`: every field set.
fn golden_provenance() -> rsd::Provenance {
    rsd::Provenance {
        scales: vec![1, 2, 3],
        target: 4,
        dropped: vec![6],
        set_aside: vec![Op::CommSize],
        made_up_sites: vec![0x8000_0000_0000_b39c],
        oracle_layout: true,
    }
}

/// Minor version 8, the header's provenance: the golden file is its version-1 original with
/// the provenance, re-encodes to its bytes, and without the provenance it is the 2.7 file to
/// the byte (a file that does not hold the field keeps the bytes it had).
#[test]
fn golden_v2_8_file_holds_the_provenance_and_nothing_else_changes() {
    let (_, v1) = read(&data("v1/spmd_4x10.iotrex"));
    let (b27, _) = read(&data("v2.7/spmd_4x10.iotrex"));
    let (b28, v28) = read(&data("v2.8/spmd_4x10_provenance.iotrex"));
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!((word(&b28, 8), word(&b28, 12)), (FORMAT_V2, 8));
    assert_eq!(rsd::format::PROVENANCE_MINOR, 8);
    const { assert!(rsd::format::FORMAT_MINOR >= 8) };
    assert_eq!(v28.header.encoding, Encoding::V2_7);
    assert_eq!(v28.header.encoding.name_with(&v28.header), "2.8");
    assert_eq!(v28.trace, v1.trace);
    let mut h = v1.header.clone();
    h.encoding = Encoding::V2_7;
    h.provenance = Some(golden_provenance());
    assert_eq!(v28.header, h);
    assert_eq!(v28.to_bytes().unwrap(), b28, "re-encodes to its bytes");
    let mut made = v1.clone();
    made.header.provenance = Some(golden_provenance());
    assert_eq!(made.to_bytes_as(Encoding::V2_7).unwrap(), b28, "v1 -> v2.8");
    let mut without = v28.clone();
    without.header.provenance = None;
    assert_eq!(
        without.to_bytes().unwrap(),
        b27,
        "without it, the 2.7 bytes"
    );
    // Version 1 holds it too (its header is the same MessagePack), with minor 8; version 2
    // in the timing layout of minor 0-6 cannot say minor 8, so it is written as 2.8.
    let b1 = made.to_bytes_as(Encoding::V1).unwrap();
    assert_eq!((word(&b1, 8), word(&b1, 12)), (1, 8));
    let back = TraceFile::from_bytes(&b1, Path::new("v1")).unwrap();
    assert_eq!(back.header.provenance, Some(golden_provenance()));
    assert_eq!(made.to_bytes_as(Encoding::V2).unwrap(), b28);
    // The older minor versions read as before: no provenance.
    for old in [
        "v1/spmd_4x10.iotrex",
        "v2/spmd_4x10.iotrex",
        "v2.7/spmd_4x10.iotrex",
    ] {
        assert_eq!(read(&data(old)).1.header.provenance, None, "{old}");
    }
}

fn provenance() -> impl Strategy<Value = rsd::Provenance> {
    (
        prop::collection::vec(1u32..100_000, 0..5),
        any::<u32>(),
        prop::collection::vec(1u32..100_000, 0..3),
        prop::collection::vec(prop::sample::select(Op::ALL.to_vec()), 0..3),
        prop::collection::vec(any::<u64>(), 0..4),
        any::<bool>(),
    )
        .prop_map(
            |(scales, target, dropped, set_aside, made_up_sites, oracle_layout)| rsd::Provenance {
                scales,
                target,
                dropped,
                set_aside,
                made_up_sites,
                oracle_layout,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A header with provenance round-trips in both versions as minor 8 and re-encodes to its
    /// bytes; without it, the file is what it was before the field.
    #[test]
    fn provenance_round_trips(header in header(), nodes in nodes(), p in provenance()) {
        // The minor said is the header's: no gap waits (minor 11) in the body.
        let nodes = without_waits(nodes);
        let plain = TraceFile { header, trace: Trace { nodes } };
        let mut tf = plain.clone();
        tf.header.provenance = Some(p);
        for enc in [Encoding::V2_7, Encoding::V1] {
            let b = tf.to_bytes_as(enc).unwrap();
            prop_assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 8);
            let back = TraceFile::from_bytes(&b, Path::new("mem")).unwrap();
            prop_assert_eq!(&back.header.provenance, &tf.header.provenance);
            prop_assert_eq!(&back.trace, &tf.trace);
            prop_assert_eq!(back.to_bytes().unwrap(), b);
        }
        let mut back = TraceFile::from_bytes(&tf.to_bytes().unwrap(), Path::new("mem")).unwrap();
        back.header.provenance = None;
        prop_assert_eq!(back.to_bytes().unwrap(), plain.to_bytes().unwrap());
    }
}

/// The node layout of `data/format/v2.9/spmd_4x10_nodes.iotrex`: two named nodes, ranks
/// placed neither by slot nor by node (the explicit runs, the longest form).
fn golden_node_layout() -> rsd::NodeLayout {
    rsd::NodeLayout {
        nodes: 2,
        names: vec!["node1".into(), "node2".into()],
        placement: rsd::Placement::Runs(vec![(0, 1), (1, 2), (0, 1)]),
    }
}

/// Minor version 9, the header's node layout: the golden file is its version-1 original with
/// the layout, re-encodes to its bytes, and without the layout it is the 2.7 file to the byte.
#[test]
fn golden_v2_9_file_holds_the_node_layout_and_nothing_else_changes() {
    let (_, v1) = read(&data("v1/spmd_4x10.iotrex"));
    let (b27, _) = read(&data("v2.7/spmd_4x10.iotrex"));
    let (b29, v29) = read(&data("v2.9/spmd_4x10_nodes.iotrex"));
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!((word(&b29, 8), word(&b29, 12)), (FORMAT_V2, 9));
    assert_eq!(rsd::format::NODE_LAYOUT_MINOR, 9);
    assert_eq!(v29.header.encoding.name_with(&v29.header), "2.9");
    assert_eq!(v29.trace, v1.trace);
    let mut h = v1.header.clone();
    h.encoding = Encoding::V2_7;
    h.node_layout = Some(golden_node_layout());
    assert_eq!(v29.header, h);
    assert_eq!(v29.to_bytes().unwrap(), b29, "re-encodes to its bytes");
    let mut made = v1.clone();
    made.header.node_layout = Some(golden_node_layout());
    assert_eq!(made.to_bytes_as(Encoding::V2_7).unwrap(), b29, "v1 -> v2.9");
    let mut without = v29.clone();
    without.header.node_layout = None;
    assert_eq!(
        without.to_bytes().unwrap(),
        b27,
        "without it, the 2.7 bytes"
    );
    // Version 1 holds it too, with minor 9.
    let b1 = made.to_bytes_as(Encoding::V1).unwrap();
    assert_eq!((word(&b1, 8), word(&b1, 12)), (1, 9));
    let back = TraceFile::from_bytes(&b1, Path::new("v1")).unwrap();
    assert_eq!(back.header.node_layout, Some(golden_node_layout()));
    // The older minor versions read as before: no layout.
    for old in [
        "v1/spmd_4x10.iotrex",
        "v2/spmd_4x10.iotrex",
        "v2.7/spmd_4x10.iotrex",
        "v2.8/spmd_4x10_provenance.iotrex",
    ] {
        assert_eq!(read(&data(old)).1.header.node_layout, None, "{old}");
    }
}

/// A layout that cannot be the run's (here: by slot at 3 ranks per node over 4 ranks, which
/// fills 2 nodes, said to be 3) passes the checksum but is refused naming the file.
#[test]
fn a_corrupt_node_layout_is_refused_naming_the_file() {
    let (_, mut tf) = read(&data("v2.9/spmd_4x10_nodes.iotrex"));
    tf.header.node_layout = Some(rsd::NodeLayout {
        nodes: 3,
        names: Vec::new(),
        placement: rsd::Placement::Block { per_node: 3 },
    });
    let bytes = tf.to_bytes().unwrap();
    let err = TraceFile::from_bytes(&bytes, Path::new("bad/layout.iotrex"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bad/layout.iotrex")
            && err.contains(
                "node layout of the header: 4 ranks by slot at 3 per node fill 2 nodes, not 3"
            ),
        "{err}"
    );
}

fn node_layout() -> impl Strategy<Value = (u32, rsd::NodeLayout)> {
    // A rank's node drawn from the nodes seen so far or the next one: any placement.
    (
        1usize..40,
        prop::collection::vec(any::<bool>(), 40),
        any::<bool>(),
        any::<u32>(),
    )
        .prop_map(|(n, fresh, named, seed)| {
            let mut node_of = Vec::with_capacity(n);
            let mut nodes = 0u32;
            for (r, f) in fresh.iter().take(n).enumerate() {
                if nodes == 0 || *f {
                    node_of.push(nodes);
                    nodes += 1;
                } else {
                    node_of.push((seed.wrapping_mul(r as u32 + 7)) % nodes);
                }
            }
            let names = if named {
                (0..nodes).map(|k| format!("host-{k}")).collect()
            } else {
                Vec::new()
            };
            (n as u32, rsd::NodeLayout::from_nodes(&node_of, names))
        })
}

/// `data/format/v2.10/spmd_4x10_run_value.iotrex`: the version-1 golden file with the field
/// of its first path (`out/file_%d`, the rank) made a run value (a pid), as a lock file's name
/// holds one.
fn with_run_value(mut tf: TraceFile) -> TraceFile {
    let e = tf.trace.nodes.iter_mut().find_map(|n| match &mut n.kind {
        NodeKind::Event(e) if e.nfields() > 0 => Some((n.ranks.clone(), e)),
        _ => None,
    });
    let (ranks, e) = e.expect("an event with a path field");
    let last = e.params.last_mut().unwrap();
    *last = rsd::runvalue::elastic(rsd::runvalue::RunKind::Pid, ranks);
    tf.header.encoding = Encoding::V2_7;
    tf
}

/// Minor version 10, run values: the golden file is its version-1 original with one run
/// value, reads as such and re-encodes to its bytes; filled in, it is the 2.7 file to the
/// byte (a file without run values keeps the bytes it had). An older minor holding one is
/// damage.
#[test]
fn golden_v2_10_file_holds_a_run_value_and_nothing_else_changes() {
    let (_, v1) = read(&data("v1/spmd_4x10.iotrex"));
    let (b27, _) = read(&data("v2.7/spmd_4x10.iotrex"));
    let (b210, v210) = read(&data("v2.10/spmd_4x10_run_value.iotrex"));
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!((word(&b210, 8), word(&b210, 12)), (FORMAT_V2, 10));
    assert_eq!(rsd::format::RUN_VALUE_MINOR, 10);
    assert_eq!(v210.version_name(), "2.10");
    let made = with_run_value(v1.clone());
    assert_eq!(v210, made);
    assert_eq!(v210.to_bytes().unwrap(), b210, "re-encodes to its bytes");
    assert_eq!(
        made.to_bytes_as(Encoding::V2).unwrap(),
        b210,
        "v2 asked: 2.10"
    );
    // Filled with the rank it replaced (file_0 .. file_3), the original's bytes.
    let mut filled = v210.clone();
    if let NodeKind::Event(e) = &mut filled.trace.nodes[1].kind {
        *e.params.last_mut().unwrap() = Elastic {
            groups: vec![Group {
                ranks: RankSet::all(4),
                val: Val::Const(RankFn::Affine { a: 1, b: 0 }),
            }],
        };
    }
    assert_eq!(filled.to_bytes().unwrap(), b27, "without it, the 2.7 bytes");
    // Version 1 holds it too, as minor 10.
    let b1 = made.to_bytes_as(Encoding::V1).unwrap();
    assert_eq!((word(&b1, 8), word(&b1, 12)), (1, 10));
    assert_eq!(
        TraceFile::from_bytes(&b1, Path::new("v1")).unwrap().trace,
        made.trace
    );
    // The same body claiming minor 8: damage, said so.
    let old = TraceFile::frame(&b210[PREFIX_LEN..], FORMAT_V2, 8);
    let e = TraceFile::from_bytes(&old, Path::new("old.iotrex")).unwrap_err();
    assert!(e.to_string().contains("run value"), "{e}");
}

/// The sensitivity of `data/format/v2.12/spmd_4x10_sensitivity.iotrex`: a token chain over
/// 4 ranks found with a 20 ms delay, and one dependency on a group.
fn golden_sensitivity() -> rsd::sensitivity::Sensitivity {
    let dep = |from: Vec<u32>, to, after, at| rsd::sensitivity::Dependency {
        from,
        to,
        after,
        at,
    };
    rsd::sensitivity::Sensitivity {
        delay_ns: 20_000_000,
        runs: 6,
        groups: vec![vec![0], vec![1], vec![2, 3]],
        base_ns: 1_500_000_000,
        all_ns: 2_700_000_000,
        max_calls: 10,
        deps: vec![
            dep(vec![0], 1, 9, 4),
            dep(vec![1], 2, 9, 4),
            dep(vec![2, 3], 0, 2, 3),
        ],
        bandwidth: None,
    }
}

/// Minor version 12, the header's sensitivity: the golden file is its version-1 original with
/// the field, re-encodes to its bytes, and without it is the 2.7 file to the byte.
#[test]
fn golden_v2_12_file_holds_the_sensitivity_and_nothing_else_changes() {
    let (_, v1) = read(&data("v1/spmd_4x10.iotrex"));
    let (b27, _) = read(&data("v2.7/spmd_4x10.iotrex"));
    let (b212, v212) = read(&data("v2.12/spmd_4x10_sensitivity.iotrex"));
    let mut made = v1.clone();
    made.header.sensitivity = Some(golden_sensitivity());
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!((word(&b212, 8), word(&b212, 12)), (FORMAT_V2, 12));
    assert_eq!(rsd::format::SENSITIVITY_MINOR, 12);
    assert_eq!(v212.version_name(), "2.12");
    assert_eq!(v212.trace, v1.trace);
    assert_eq!(v212.header.sensitivity, Some(golden_sensitivity()));
    assert_eq!(v212.to_bytes().unwrap(), b212, "re-encodes to its bytes");
    assert_eq!(
        made.to_bytes_as(Encoding::V2_7).unwrap(),
        b212,
        "v1 -> v2.12"
    );
    let mut without = v212.clone();
    without.header.sensitivity = None;
    assert_eq!(
        without.to_bytes().unwrap(),
        b27,
        "without it, the 2.7 bytes"
    );
    let b1 = made.to_bytes_as(Encoding::V1).unwrap();
    assert_eq!((word(&b1, 8), word(&b1, 12)), (1, 12));
    let back = TraceFile::from_bytes(&b1, Path::new("v1")).unwrap();
    assert_eq!(back.header.sensitivity, Some(golden_sensitivity()));
    for old in [
        "v1/spmd_4x10.iotrex",
        "v2.7/spmd_4x10.iotrex",
        "v2.9/spmd_4x10_nodes.iotrex",
        "v2.10/spmd_4x10_run_value.iotrex",
    ] {
        assert_eq!(read(&data(old)).1.header.sensitivity, None, "{old}");
    }
}

/// `v1/spmd_4x10.iotrex` with the field of its first path made each rank's own pid (a run
/// value of kind own pid) and its nodes 0 and 1 one machine of 2 CPUs: minor 13's two parts.
fn with_own_pid_and_shared_machine(v1: TraceFile) -> TraceFile {
    let mut tf = with_run_value(v1);
    let e = tf.trace.nodes.iter_mut().find_map(|n| match &mut n.kind {
        NodeKind::Event(e) if e.nfields() > 0 => Some((n.ranks.clone(), e)),
        _ => None,
    });
    let (ranks, e) = e.expect("an event with a path field");
    *e.params.last_mut().unwrap() = rsd::runvalue::elastic(rsd::runvalue::RunKind::OwnPid, ranks);
    tf.header.shared_machines = vec![rsd::nodes::SharedMachine {
        nodes: vec![0, 1],
        cpus: 2,
    }];
    tf
}

/// Minor version 13: a run value of the process's own pid (kind 4) and the header's
/// `shared_machines`. The golden file reads as made and re-encodes to its bytes; without the
/// two it is the 2.7 file to the byte; the same body claiming minor 12 is refused (the field
/// after the sensitivity would be damage there, the kind unknown).
#[test]
fn golden_v2_13_file_holds_an_own_pid_and_a_shared_machine_and_nothing_else_changes() {
    let (_, v1) = read(&data("v1/spmd_4x10.iotrex"));
    let (b27, _) = read(&data("v2.7/spmd_4x10.iotrex"));
    let made = with_own_pid_and_shared_machine(v1.clone());
    let path = data("v2.13/spmd_4x10_own_pid.iotrex");
    if std::env::var_os("IOTREX_WRITE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, made.to_bytes().unwrap()).unwrap();
    }
    let (b213, v213) = read(&path);
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!((word(&b213, 8), word(&b213, 12)), (FORMAT_V2, 13));
    assert_eq!(rsd::format::OWN_PID_MINOR, 13);
    assert_eq!(v213.version_name(), "2.13");
    assert_eq!(v213, made);
    assert_eq!(v213.to_bytes().unwrap(), b213, "re-encodes to its bytes");
    let mut without = v213.clone();
    without.header.shared_machines.clear();
    if let NodeKind::Event(e) = &mut without.trace.nodes[1].kind {
        *e.params.last_mut().unwrap() = Elastic {
            groups: vec![Group {
                ranks: RankSet::all(4),
                val: Val::Const(RankFn::Affine { a: 1, b: 0 }),
            }],
        };
    }
    assert_eq!(
        without.to_bytes().unwrap(),
        b27,
        "without them, the 2.7 bytes"
    );
    let b1 = made.to_bytes_as(Encoding::V1).unwrap();
    assert_eq!((word(&b1, 8), word(&b1, 12)), (1, 13));
    assert_eq!(TraceFile::from_bytes(&b1, Path::new("v1")).unwrap(), {
        let mut m = made.clone();
        m.header.encoding = Encoding::V1;
        m
    });
    let old = TraceFile::frame(&b213[PREFIX_LEN..], FORMAT_V2, 12);
    assert!(TraceFile::from_bytes(&old, Path::new("old.iotrex")).is_err());
    for old in [
        "v2.10/spmd_4x10_run_value.iotrex",
        "v2.12/spmd_4x10_sensitivity.iotrex",
    ] {
        assert!(
            read(&data(old)).1.header.shared_machines.is_empty(),
            "{old}"
        );
    }
}

/// Minor version 14, the sensitivity's bandwidth run: a file holding one is written as 2.14
/// and reads back; the 2.12 file above keeps its minor and bytes (checked there).
#[test]
fn a_sensitivity_with_its_bandwidth_run_is_minor_14_and_reads_back() {
    let (_, v1) = read(&data("v1/spmd_4x10.iotrex"));
    let mut made = v1.clone();
    let mut s = golden_sensitivity();
    s.bandwidth = Some(rsd::sensitivity::BandwidthRun {
        bps: 20 << 20,
        wall_ns: 2_100_000_000,
        max_bytes: 8 << 20,
    });
    made.header.sensitivity = Some(s.clone());
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    for enc in [Encoding::V1, Encoding::V2_7] {
        let b = made.to_bytes_as(enc).unwrap();
        assert_eq!(word(&b, 12), rsd::format::SENSITIVITY_BANDWIDTH_MINOR);
        let back = TraceFile::from_bytes(&b, Path::new("v2.14")).unwrap();
        assert_eq!(back.header.sensitivity, Some(s.clone()));
    }
}

fn sensitivity() -> impl Strategy<Value = rsd::sensitivity::Sensitivity> {
    let dep = (
        prop::collection::vec(0u32..64, 1..3),
        0u32..64,
        0u32..1000,
        0u32..1000,
    )
        .prop_map(|(from, to, after, at)| rsd::sensitivity::Dependency {
            from,
            to,
            after,
            at,
        });
    (
        any::<u64>(),
        any::<u32>(),
        prop::collection::vec(prop::collection::vec(0u32..64, 1..4), 0..5),
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        prop::collection::vec(dep, 0..8),
        prop::option::of((any::<u64>(), any::<u64>(), any::<u64>())),
    )
        .prop_map(
            |(delay_ns, runs, groups, base_ns, all_ns, max_calls, deps, bw)| {
                rsd::sensitivity::Sensitivity {
                    delay_ns,
                    runs,
                    groups,
                    base_ns,
                    all_ns,
                    max_calls,
                    deps,
                    bandwidth: bw.map(|(bps, wall_ns, max_bytes)| rsd::sensitivity::BandwidthRun {
                        bps,
                        wall_ns,
                        max_bytes,
                    }),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// A header with a sensitivity round-trips in both versions as minor 12, or 14 with its
    /// bandwidth run (with a node layout before it or not) and re-encodes to its bytes;
    /// without it, the file is what it was before.
    #[test]
    fn sensitivity_round_trips(
        header in header(),
        nodes in nodes(),
        sens in sensitivity(),
        l in prop::option::of(node_layout()),
    ) {
        let mut plain = TraceFile { header, trace: Trace { nodes } };
        if let Some((n, l)) = l {
            plain.header.nranks = n;
            plain.header.node_layout = Some(l);
        }
        let mut tf = plain.clone();
        let minor = if sens.bandwidth.is_some() { 14 } else { 12 };
        tf.header.sensitivity = Some(sens);
        for enc in [Encoding::V2_7, Encoding::V1] {
            let b = tf.to_bytes_as(enc).unwrap();
            prop_assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), minor);
            let back = TraceFile::from_bytes(&b, Path::new("mem")).unwrap();
            prop_assert_eq!(&back.header.sensitivity, &tf.header.sensitivity);
            prop_assert_eq!(&back.header.node_layout, &tf.header.node_layout);
            prop_assert_eq!(&back.trace, &tf.trace);
            prop_assert_eq!(back.to_bytes().unwrap(), b);
        }
        let mut back = TraceFile::from_bytes(&tf.to_bytes().unwrap(), Path::new("mem")).unwrap();
        back.header.sensitivity = None;
        prop_assert_eq!(back.to_bytes().unwrap(), plain.to_bytes().unwrap());
    }
}

/// Every value of `nodes` at the positions `pick` chooses made a run value of `kind`.
fn run_values_in(nodes: &mut [Node], kind: rsd::runvalue::RunKind, pick: &mut dyn FnMut() -> bool) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                for p in &mut e.params {
                    if pick() {
                        *p = rsd::runvalue::elastic(kind, n.ranks.clone());
                    }
                }
                run_values_in(&mut e.children, kind, pick);
            }
            NodeKind::Loop(l) => run_values_in(&mut l.body, kind, pick),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A header with a node layout round-trips in both versions as minor 9 (with and without
    /// provenance) and re-encodes to its bytes; without it, the file is what it was before.
    #[test]
    fn node_layout_round_trips(
        header in header(),
        nodes in nodes(),
        (nranks, l) in node_layout(),
        p in prop::option::of(provenance()),
    ) {
        // The minor said is the one under test: no gap waits (minor 11) in the body.
        let nodes = without_waits(nodes);
        let mut plain = TraceFile { header, trace: Trace { nodes } };
        plain.header.nranks = nranks;
        plain.header.provenance = p;
        prop_assert_eq!(l.validate(nranks), Ok(()));
        let mut tf = plain.clone();
        tf.header.node_layout = Some(l);
        for enc in [Encoding::V2_7, Encoding::V1] {
            let b = tf.to_bytes_as(enc).unwrap();
            prop_assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 9);
            let back = TraceFile::from_bytes(&b, Path::new("mem")).unwrap();
            prop_assert_eq!(&back.header.node_layout, &tf.header.node_layout);
            prop_assert_eq!(&back.header.provenance, &tf.header.provenance);
            prop_assert_eq!(&back.trace, &tf.trace);
            prop_assert_eq!(back.to_bytes().unwrap(), b);
        }
        let mut back = TraceFile::from_bytes(&tf.to_bytes().unwrap(), Path::new("mem")).unwrap();
        back.header.node_layout = None;
        prop_assert_eq!(back.to_bytes().unwrap(), plain.to_bytes().unwrap());
    }

    /// Run values round-trip in both versions as minor 10 (13 for a rank's own pid) and
    /// re-encode to their bytes; a trace without them keeps the minor it had.
    #[test]
    fn run_values_round_trip(
        header in header(),
        nodes in nodes(),
        kind in prop::sample::select(rsd::runvalue::RunKind::ALL.to_vec()),
        every in 1usize..4,
    ) {
        // The minor said is the one under test: no gap waits (minor 11) in the body.
        let nodes = without_waits(nodes);
        let plain = TraceFile { header, trace: Trace { nodes } };
        let mut tf = plain.clone();
        let mut k = 0usize;
        run_values_in(&mut tf.trace.nodes, kind, &mut || { k += 1; k.is_multiple_of(every) });
        let holds = rsd::runvalue::present(&tf.trace.nodes);
        for enc in [Encoding::V2_7, Encoding::V1, Encoding::V2] {
            let b = tf.to_bytes_as(enc).unwrap();
            let minor = u32::from_le_bytes(b[12..16].try_into().unwrap());
            let before = u32::from_le_bytes(plain.to_bytes_as(enc).unwrap()[12..16].try_into().unwrap());
            prop_assert_eq!(minor, if holds { kind.minor() } else { before });
            let back = TraceFile::from_bytes(&b, Path::new("mem")).unwrap();
            prop_assert_eq!(&back.trace, &tf.trace);
            prop_assert_eq!(back.to_bytes().unwrap(), b);
        }
    }
}

/// The first event of `nodes`, depth first.
fn first_event(nodes: &mut [Node]) -> Option<&mut Event> {
    nodes.iter_mut().find_map(|n| match &mut n.kind {
        NodeKind::Event(e) => Some(e),
        NodeKind::Loop(l) => first_event(&mut l.body),
    })
}

/// `trace` with off-CPU gap time on its first event (2 ms blocked and 0.5 ms waiting for a
/// core over its calls).
fn with_gap_waits(mut tf: TraceFile) -> TraceFile {
    first_event(&mut tf.trace.nodes)
        .expect("an event")
        .timing
        .waits = Some(GapWaits {
        runq_ns: 500_000,
        blocked_ns: 2_000_000,
    });
    tf
}

/// `data/format/v2.11/spmd_4x10_gap_waits.iotrex` is `v1/spmd_4x10.iotrex` with off-CPU gap
/// time on its first event, written as 2.11 (`IOTREX_WRITE_GOLDEN=1` writes it when missing).
#[test]
fn golden_v2_11_file_holds_gap_waits_and_nothing_else_changes() {
    let (_, v1) = read(&data("v1/spmd_4x10.iotrex"));
    let (b27, _) = read(&data("v2.7/spmd_4x10.iotrex"));
    let made = with_gap_waits(v1);
    let path = data("v2.11/spmd_4x10_gap_waits.iotrex");
    if std::env::var_os("IOTREX_WRITE_GOLDEN").is_some() && !path.exists() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, made.to_bytes_as(Encoding::V2_7).unwrap()).unwrap();
    }
    let (b211, v211) = read(&path);
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!((word(&b211, 8), word(&b211, 12)), (FORMAT_V2, 11));
    assert_eq!(GAP_WAITS_MINOR, 11);
    assert_eq!(v211.version_name(), "2.11");
    assert_eq!(v211.trace, made.trace);
    assert_eq!(v211.to_bytes().unwrap(), b211, "re-encodes to its bytes");
    assert_eq!(
        made.to_bytes_as(Encoding::V2).unwrap(),
        b211,
        "v2 asked: 2.11"
    );
    // Without them, the 2.7 bytes.
    let mut plain = v211.clone();
    first_event(&mut plain.trace.nodes).unwrap().timing.waits = None;
    assert_eq!(
        plain.to_bytes().unwrap(),
        b27,
        "without them, the 2.7 bytes"
    );
    // Version 1 holds them too, as minor 11.
    let b1 = made.to_bytes_as(Encoding::V1).unwrap();
    assert_eq!((word(&b1, 8), word(&b1, 12)), (1, 11));
    assert_eq!(
        TraceFile::from_bytes(&b1, Path::new("v1")).unwrap().trace,
        made.trace
    );
    // The same body claiming minor 10: damage, said so.
    let old = TraceFile::frame(&b211[PREFIX_LEN..], FORMAT_V2, 10);
    let e = TraceFile::from_bytes(&old, Path::new("old.iotrex")).unwrap_err();
    assert!(e.to_string().contains("off-CPU gap time"), "{e}");
}

/// `v1`'s first path with the rank's host name appended as `%h`, and the template it had.
fn with_host(v1: TraceFile) -> (TraceFile, PathTemplate) {
    let mut tf = v1;
    let e = tf.trace.nodes.iter_mut().find_map(|n| match &mut n.kind {
        NodeKind::Event(e) if e.path.is_some() => Some(e),
        _ => None,
    });
    let p = e.expect("an event with a path").path.as_mut().unwrap();
    let was = p.clone();
    *p = PathTemplate(format!("{}.{}", p.0, rsd::path::HOST));
    tf.header.encoding = Encoding::V2_7;
    (tf, was)
}

/// Minor version 15: the rank's host name in a path template (`%h`). The golden file reads
/// as made and re-encodes to its bytes; without it it is the 2.7 file to the byte; the same
/// body claiming minor 14 is refused (an older reader would take `%h` for a field); a
/// consumer's fill puts its own host name there.
#[test]
fn golden_v2_15_file_holds_a_host_name_and_nothing_else_changes() {
    let (_, v1) = read(&data("v1/spmd_4x10.iotrex"));
    let (b27, _) = read(&data("v2.7/spmd_4x10.iotrex"));
    let (made, was) = with_host(v1);
    let path = data("v2.15/spmd_4x10_host.iotrex");
    if std::env::var_os("IOTREX_WRITE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, made.to_bytes().unwrap()).unwrap();
    }
    let (b215, v215) = read(&path);
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!((word(&b215, 8), word(&b215, 12)), (FORMAT_V2, 15));
    assert_eq!(rsd::format::HOST_MINOR, 15);
    assert_eq!(v215.version_name(), "2.15");
    assert_eq!(v215, made);
    assert_eq!(v215.to_bytes().unwrap(), b215, "re-encodes to its bytes");
    let mut without = v215.clone();
    let e = without
        .trace
        .nodes
        .iter_mut()
        .find_map(|n| match &mut n.kind {
            NodeKind::Event(e) if e.path.is_some() => Some(e),
            _ => None,
        });
    e.unwrap().path = Some(was);
    assert_eq!(
        without.to_bytes().unwrap(),
        b27,
        "without it, the 2.7 bytes"
    );
    let old = TraceFile::frame(&b215[PREFIX_LEN..], FORMAT_V2, 14);
    assert!(TraceFile::from_bytes(&old, Path::new("old.iotrex")).is_err());
    let mut filled = v215.clone();
    let mut fresh = rsd::runvalue::Fresh::new(77, 1);
    fresh.host = "nodeX".into();
    rsd::runvalue::fill(&mut filled.trace, &fresh);
    let first = |tf: &TraceFile| tf.trace.expand(1).into_iter().find_map(|e| e.path).unwrap();
    assert!(first(&v215).ends_with(".%h"), "{}", first(&v215));
    assert!(first(&filled).ends_with(".nodeX"), "{}", first(&filled));
}

/// Minor 17: the header's `excluded` (the calls the tracer left out under the system's
/// directories). The golden file is the 2.7 one with two directories' counts; without them
/// it is the 2.7 file to the byte; a body claiming minor 16 is refused (an older reader would
/// take the field for damage).
#[test]
fn golden_v2_17_file_holds_what_was_excluded_and_nothing_else_changes() {
    let (b27, v27) = read(&data("v2.7/spmd_4x10.iotrex"));
    let mut made = v27.clone();
    made.header.excluded = vec![
        rsd::exclude::Excluded {
            prefix: "/proc".into(),
            calls: 12,
            bytes: 3000,
        },
        rsd::exclude::Excluded {
            prefix: "/usr".into(),
            calls: 4431,
            bytes: 83_886_080,
        },
    ];
    let path = data("v2.17/spmd_4x10_excluded.iotrex");
    if std::env::var_os("IOTREX_WRITE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, made.to_bytes().unwrap()).unwrap();
    }
    let (b217, v217) = read(&path);
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!((word(&b217, 8), word(&b217, 12)), (FORMAT_V2, 17));
    assert_eq!(rsd::format::EXCLUDED_MINOR, 17);
    assert_eq!(v217.version_name(), "2.17");
    assert_eq!(v217, made);
    assert_eq!(v217.to_bytes().unwrap(), b217, "re-encodes to its bytes");
    let mut without = v217.clone();
    without.header.excluded.clear();
    assert_eq!(
        without.to_bytes().unwrap(),
        b27,
        "without it, the 2.7 bytes"
    );
    let old = TraceFile::frame(&b217[PREFIX_LEN..], FORMAT_V2, 16);
    assert!(TraceFile::from_bytes(&old, Path::new("old.iotrex")).is_err());
}

/// Minor 18: the header's `processes` (forked children as slots after the ranks). The golden
/// file is the 2.7 one with two groups of children, one of them missing, and some untraced;
/// without them it is the 2.7 file to the byte; a body claiming minor 17 is refused.
#[test]
fn golden_v2_18_file_holds_the_processes_and_nothing_else_changes() {
    use rsd::process::{End, Group, Processes};
    let (b27, v27) = read(&data("v2.7/spmd_4x10.iotrex"));
    let mut made = v27.clone();
    let nranks = made.header.nranks;
    made.header.processes = Some(Processes {
        stride: 1024,
        groups: vec![
            Group {
                slots: rsd::RankSet::from_sorted(&[nranks, nranks + 1]),
                parent: None,
                site: 0x1234_5678_9abc,
                command: Vec::new(),
                end: End::Exit(Some(0)),
            },
            Group {
                slots: rsd::RankSet::single(nranks + 1024 + 2),
                parent: Some(0),
                site: 0x42,
                command: Vec::new(),
                end: End::Missing,
            },
        ],
        untraced: 3,
    });
    let path = data("v2.18/spmd_4x10_processes.iotrex");
    if std::env::var_os("IOTREX_WRITE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, made.to_bytes().unwrap()).unwrap();
    }
    let (b218, v218) = read(&path);
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!((word(&b218, 8), word(&b218, 12)), (FORMAT_V2, 18));
    assert_eq!(rsd::format::PROCESSES_MINOR, 18);
    assert_eq!(v218.version_name(), "2.18");
    assert_eq!(v218, made);
    assert_eq!(v218.to_bytes().unwrap(), b218, "re-encodes to its bytes");
    let mut without = v218.clone();
    without.header.processes = None;
    assert_eq!(
        without.to_bytes().unwrap(),
        b27,
        "without it, the 2.7 bytes"
    );
    let old = TraceFile::frame(&b218[PREFIX_LEN..], FORMAT_V2, 17);
    assert!(TraceFile::from_bytes(&old, Path::new("old.iotrex")).is_err());
}
