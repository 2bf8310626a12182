//! Invariant 1, lossless except time: compressing one rank's calls, merging ranks in any tree
//! shape, writing and reading the file, then expanding rank r gives back exactly rank r's calls.

use proptest::prelude::*;
use rsd::trace::RawEvent;
use rsd::{Compressor, Op, Trace, TraceFile, merge, merge_tree};

/// A random program: statements that are calls or loops over statements.
#[derive(Debug, Clone)]
enum Stmt {
    /// A call whose parameters are functions of (rank, loop indices).
    Call {
        op: Op,
        site: u64,
        params: Vec<ParamGen>,
        path: Option<u8>,
        child: bool,
    },
    Loop {
        count: LoopCount,
        body: Vec<Stmt>,
    },
}

#[derive(Debug, Clone)]
enum LoopCount {
    Fixed(u64),
    /// Differs per rank: `base + rank % 3`.
    PerRank(u64),
    /// Differs per outer iteration: `base + i`.
    PerOuter(u64),
}

#[derive(Debug, Clone)]
enum ParamGen {
    Const(i64),
    /// a*rank + b*i + c*j (innermost two loop indices).
    Affine(i64, i64, i64),
    /// Periodic in the innermost index.
    Periodic(Vec<i64>),
    /// Pseudo-random: irregular, must stay lossless.
    Random(u64),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop::sample::select(vec![
        Op::Pwrite,
        Op::Pread,
        Op::FileWriteAt,
        Op::Barrier,
        Op::Send,
        Op::Fwrite,
        Op::Open,
    ])
}

fn param_strategy() -> impl Strategy<Value = ParamGen> {
    prop_oneof![
        (-5i64..100).prop_map(ParamGen::Const),
        (-3i64..4096, -2i64..9000, -1i64..3).prop_map(|(a, b, c)| ParamGen::Affine(a, b, c)),
        prop::collection::vec(0i64..50, 1..4).prop_map(ParamGen::Periodic),
        any::<u64>().prop_map(ParamGen::Random),
    ]
}

fn stmt_strategy() -> impl Strategy<Value = Stmt> {
    // Calls follow their op's schema (the decoder refuses an event shorter than it): one to
    // three parameter generators, repeated to the schema's length.
    let call = (
        op_strategy(),
        0u64..6,
        prop::collection::vec(param_strategy(), 1..4),
        prop::option::of(0u8..3),
        any::<bool>(),
    )
        .prop_map(|(op, site, drawn, path, child)| Stmt::Call {
            op,
            site,
            params: drawn
                .iter()
                .cycle()
                .take(op.params().len())
                .cloned()
                .collect(),
            path,
            child,
        });
    call.prop_recursive(3, 24, 4, |inner| {
        (
            prop_oneof![
                (0u64..6).prop_map(LoopCount::Fixed),
                (1u64..4).prop_map(LoopCount::PerRank),
                (0u64..3).prop_map(LoopCount::PerOuter),
            ],
            prop::collection::vec(inner, 1..4),
        )
            .prop_map(|(count, body)| Stmt::Loop { count, body })
    })
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn run(stmts: &[Stmt], rank: u32, idx: &mut Vec<u64>, counter: &mut u64, out: &mut Vec<RawEvent>) {
    for s in stmts {
        match s {
            Stmt::Call {
                op,
                site,
                params,
                path,
                child,
            } => {
                let i = idx.last().copied().unwrap_or(0) as i64;
                let j = idx.iter().rev().nth(1).copied().unwrap_or(0) as i64;
                *counter += 1;
                let vals = params
                    .iter()
                    .map(|p| match p {
                        ParamGen::Const(c) => *c,
                        ParamGen::Affine(a, b, c) => a * rank as i64 + b * i + c * j,
                        ParamGen::Periodic(v) => v[i as usize % v.len()],
                        ParamGen::Random(seed) => {
                            (mix(seed ^ *counter ^ ((rank as u64) << 40)) % 1000) as i64
                        }
                    })
                    .collect();
                let mut e = RawEvent::new(*op, *site, vals);
                e.gap_ns = mix(*counter) % 10_000;
                e.dur_ns = mix(*counter + 1) % 10_000;
                e.path = path.map(|p| match p {
                    0 => format!("out/file_{rank}"),
                    1 => format!("out/data.{:08}", i),
                    _ => "shared.dat".to_string(),
                });
                if *child && rank.is_multiple_of(2) {
                    e.children.push(RawEvent::new(
                        Op::Pwrite,
                        99,
                        vec![3, 4096 * (rank as i64 + 1), i * 4096, 4096],
                    ));
                    e.children.push(RawEvent::new(
                        Op::Pwrite,
                        99,
                        vec![3, 4096 * (rank as i64 + 1), i * 4096 + 4096, 4096],
                    ));
                }
                out.push(e);
            }
            Stmt::Loop { count, body } => {
                let n = match count {
                    LoopCount::Fixed(n) => *n,
                    LoopCount::PerRank(b) => b + rank as u64 % 3,
                    LoopCount::PerOuter(b) => b + idx.last().copied().unwrap_or(0),
                };
                idx.push(0);
                for it in 0..n {
                    *idx.last_mut().unwrap() = it;
                    run(body, rank, idx, counter, out);
                }
                idx.pop();
            }
        }
    }
}

fn events_of(prog: &[Stmt], rank: u32) -> Vec<RawEvent> {
    let mut out = Vec::new();
    run(prog, rank, &mut Vec::new(), &mut 0, &mut out);
    // Rank 1 does one extra call in the middle: the merge has to align around it.
    if rank == 1 && !out.is_empty() {
        let mid = out.len() / 2;
        out.insert(mid, RawEvent::new(Op::Fflush, 77, vec![1]));
    }
    out
}

fn compress(rank: u32, evs: &[RawEvent], window: usize) -> Trace {
    let mut c = Compressor::with_window(rank, window);
    for e in evs {
        c.push(e);
    }
    c.finish()
}

fn check_all(trace: &Trace, expected: &[Vec<RawEvent>]) -> Result<(), TestCaseError> {
    for (r, evs) in expected.iter().enumerate() {
        let want: Vec<_> = evs.iter().map(RawEvent::flat).collect();
        let got = trace.expand(r as u32);
        prop_assert_eq!(got.len(), want.len(), "rank {} event count", r);
        prop_assert_eq!(got, want, "rank {}", r);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn single_rank_roundtrip(prog in prop::collection::vec(stmt_strategy(), 1..5), window in prop::sample::select(vec![1usize, 4, 64])) {
        let evs = events_of(&prog, 0);
        let t = compress(0, &evs, window);
        check_all(&t, &[evs])?;
    }

    #[test]
    fn merged_ranks_roundtrip_any_tree_shape(prog in prop::collection::vec(stmt_strategy(), 1..5), nranks in 1u32..7) {
        let per_rank: Vec<Vec<RawEvent>> = (0..nranks).map(|r| events_of(&prog, r)).collect();
        let traces: Vec<Trace> = per_rank.iter().enumerate().map(|(r, e)| compress(r as u32, e, 64)).collect();
        // Radix tree.
        let tree = merge_tree(traces.clone()).unwrap();
        check_all(&tree, &per_rank)?;
        // Left fold, and right fold in reverse order: other tree shapes, same calls.
        let left = traces.iter().skip(1).fold(traces[0].clone(), |acc, t| merge(&acc, t).unwrap());
        check_all(&left, &per_rank)?;
        let right = traces.iter().rev().skip(1).fold(traces[traces.len() - 1].clone(), |acc, t| merge(t, &acc).unwrap());
        check_all(&right, &per_rank)?;
        // Through the file format.
        let tf = TraceFile { header: rsd::Header::new(nranks), trace: tree };
        let back = TraceFile::from_bytes(&tf.to_bytes().unwrap(), std::path::Path::new("mem")).unwrap();
        check_all(&back.trace, &per_rank)?;
    }
}

#[test]
fn overlapping_ranks_are_refused() {
    let a = compress(0, &[RawEvent::new(Op::Barrier, 1, vec![0])], 8);
    let err = merge(&a, &a).unwrap_err();
    assert!(err.to_string().contains("rank 0"), "{err}");
}

#[test]
fn million_iteration_loop_is_constant_size() {
    let mut c = Compressor::new(0);
    for i in 0..1_000_000i64 {
        c.push(&RawEvent::new(Op::Pwrite, 1, vec![3, 8, i * 8, 8]));
    }
    assert_eq!(c.len(), 1);
    let t = c.finish();
    let small = compress(
        0,
        &(0..10i64)
            .map(|i| RawEvent::new(Op::Pwrite, 1, vec![3, 8, i * 8, 8]))
            .collect::<Vec<_>>(),
        64,
    );
    let size = |t: &Trace| rmp_size(t);
    // Only integer widths grow: the iteration count and the timing counters (count and one
    // histogram bin, for gap and duration), each at most 4 bytes wider in MessagePack.
    let (big, small) = (size(&t), size(&small));
    assert!(
        big >= small && big - small <= 5 * 4,
        "10 iterations: {small} B, 10^6 iterations: {big} B"
    );
    assert_eq!(t.expand(0).len(), 1_000_000);
    assert_eq!(t.expand(0)[999_999].params[2], 999_999 * 8);
}

fn rmp_size(t: &Trace) -> usize {
    TraceFile {
        header: rsd::Header::new(1),
        trace: t.clone(),
    }
    .to_bytes()
    .unwrap()
    .len()
}

#[test]
fn strided_nested_loops_fold_into_nested_affine_loops() {
    // for s in 0..S { for i in 0..I { pwrite(offset = s*BIG + i*T) } }, as in an IOR
    // segment loop: two nested loops with one affine offset, whatever S and I are.
    let run = |segs: i64, xfers: i64| {
        let evs: Vec<RawEvent> = (0..segs)
            .flat_map(|s| {
                (0..xfers).map(move |i| {
                    RawEvent::new(Op::Pwrite, 1, vec![3, 4096, s * 1_048_576 + i * 4096, 4096])
                })
            })
            .collect();
        let t = compress(0, &evs, 64);
        check_all(&t, &[evs]).unwrap();
        t
    };
    for (segs, xfers) in [(2, 2), (4, 16), (100, 3)] {
        let t = run(segs, xfers);
        assert_eq!(t.nodes.len(), 1, "{segs}x{xfers}: {t:?}");
        let rsd::trace::NodeKind::Loop(outer) = &t.nodes[0].kind else {
            panic!("not a loop: {t:?}")
        };
        let [inner] = outer.body.as_slice() else {
            panic!("{segs}x{xfers}: {t:?}")
        };
        let rsd::trace::NodeKind::Loop(inner) = &inner.kind else {
            panic!("{segs}x{xfers}: {t:?}")
        };
        let rsd::trace::NodeKind::Event(e) = &inner.body[0].kind else {
            panic!()
        };
        assert_eq!(
            e.params[2].groups[0].val,
            rsd::Val::Lin {
                base: rsd::RankFn::Const(0),
                strides: vec![rsd::RankFn::Const(1_048_576), rsd::RankFn::Const(4096)]
            },
            "{segs}x{xfers}"
        );
    }
}

proptest::proptest! {
    /// The header's optional trailing fields (unrecorded functions, the MPI configuration)
    /// round-trip whichever of them are set, and a header with neither encodes as version 1
    /// first did.
    #[test]
    fn header_trailing_fields_round_trip(
        unrecorded in proptest::collection::vec("[A-Za-z_]{1,12}", 0..3),
        config in proptest::option::of((
            "[ -~]{0,20}",
            proptest::collection::vec((1u32..64, 1u32..8), 0..3),
            proptest::bool::ANY,
            proptest::collection::vec(("[a-z_]{1,8}", "[0-9]{1,4}"), 0..3),
        )),
    ) {
        let mut tf = rsd::TraceFile { header: rsd::Header::new(4), trace: rsd::Trace::default() };
        tf.header.unrecorded_mpi = unrecorded;
        tf.header.mpi_config = config.map(|(library, node_ranks, nodes_contiguous, cvars)| rsd::MpiConfig {
            library,
            node_ranks,
            nodes_contiguous,
            cvars,
            file_hints: vec![("f".into(), vec![("cb_nodes".into(), "1".into())])],
        });
        let bytes = tf.to_bytes().unwrap();
        let back = rsd::TraceFile::from_bytes(&bytes, std::path::Path::new("mem")).unwrap();
        proptest::prop_assert_eq!(&back, &tf);
    }
}

/// An OMPIO aggregator's nested calls in one collective write: a partial block at its file
/// domain's start, full blocks every 8 KiB, a block split in two at a cycle's end, full
/// blocks again and a partial block at the domain's end.
fn aggregator_calls(head: i64, n1: i64, n2: i64, tail: i64) -> Vec<RawEvent> {
    let w = |off: i64, len: i64| RawEvent::new(Op::Pwritev, 7, vec![0, 1, off, len]);
    let mut c = vec![w(8192 - head, head)];
    c.extend((0..n1).map(|i| w(8192 * (1 + i), 4096)));
    let split = 8192 * (1 + n1);
    c.extend([w(split, 1000), w(split + 1000, 3096)]);
    c.extend((0..n2).map(|i| w(split + 8192 * (1 + i), 4096)));
    c.push(w(split + 8192 * (1 + n2), tail));
    c
}

#[test]
fn nested_runs_with_irregular_ends_stay_compact() {
    // Folded greedily, the partial first block pairs with the first full one and every later
    // pair repeats the mismatch; a shorter last block makes the run's lengths explicit. Both
    // would keep vectors as long as the run; kept apart, the trace has a constant shape.
    let size_of = |n: i64| {
        let mut e = RawEvent::new(Op::FileWriteAtAll, 9, vec![0, 0, 4096, 4, 4096]);
        e.children = aggregator_calls(1386, n, n / 3, 2710);
        let evs = vec![e];
        let t = compress(0, &evs, 64);
        check_all(&t, &[evs]).unwrap();
        rmp_size(&t)
    };
    let (small, large) = (size_of(30), size_of(3000));
    // Only the numbers' own widths grow (a vector would add bytes per call).
    assert!(
        large < small + 64,
        "the nested calls' size grows with the run: {small} B for 30 blocks, {large} B for 3000"
    );
}

#[test]
fn aggregators_spaced_unevenly_merge_into_one_group_per_run() {
    // One aggregator per 5462 ranks, then one per 5461: a value affine in the aggregator's
    // index (its file domain's start) is no integer line through the ranks.
    let ranks: Vec<u32> = (0..4)
        .map(|k| 5462 * k)
        .chain((0..4).map(|m| 21849 + 5461 * m))
        .collect();
    let per_rank: Vec<Vec<RawEvent>> = ranks
        .iter()
        .enumerate()
        .map(|(k, _)| {
            vec![RawEvent::new(
                Op::Pwrite,
                1,
                vec![3, 4096, 22_369_622 * k as i64, 4096],
            )]
        })
        .collect();
    let traces: Vec<Trace> = ranks
        .iter()
        .zip(&per_rank)
        .map(|(&r, e)| compress(r, e, 64))
        .collect();
    let t = merge_tree(traces).unwrap();
    for (r, evs) in ranks.iter().zip(&per_rank) {
        let want: Vec<_> = evs.iter().map(RawEvent::flat).collect();
        assert_eq!(t.expand(*r), want, "rank {r}");
    }
    let rsd::trace::NodeKind::Event(e) = &t.nodes[0].kind else {
        panic!("{t:?}")
    };
    assert_eq!(e.params[2].groups.len(), 2, "{:?}", e.params[2]);
}
