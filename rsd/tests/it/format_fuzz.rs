//! Invariant 3, the reader never panics: bounded fuzzing of `TraceFile::from_bytes` and
//! `TraceFile::decode_body` over mutations of a real trace, random bodies, huge length fields
//! and deeply nested input. Every outcome must be an error naming the file, or a trace that
//! passed validation (which the text renderer must then handle too).

use proptest::prelude::*;
use rsd::format::PREFIX_LEN;
use rsd::trace::{Event, Loop, Node, NodeKind};
use rsd::value::Group;
use rsd::{Elastic, Header, Op, RankFn, RankSet, Trace, TraceFile, Val};
use std::path::Path;
use std::sync::LazyLock;

const NAME: &str = "fuzz.iotrex";

/// A real trace: the synthetic SPMD program on 4 ranks, every node kind and value form it makes.
static SAMPLE: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut header = Header::new(4);
    header.command = vec!["./app".into(), "-n".into(), "4".into()];
    header.notes = vec!["fuzz sample".into()];
    TraceFile {
        header,
        trace: rsd_view::synth::spmd(4, 10),
    }
    .to_bytes()
    .expect("encode sample")
});

static ORIGINAL: LazyLock<TraceFile> =
    LazyLock::new(|| TraceFile::from_bytes(&SAMPLE, Path::new(NAME)).expect("sample reads"));

fn body() -> &'static [u8] {
    &SAMPLE[PREFIX_LEN..]
}

/// The outcome must be a clean error naming the file, or a valid trace.
fn check(r: Result<TraceFile, rsd::RsdError>) -> Result<(), TestCaseError> {
    match r {
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(msg.contains(NAME), "error does not name the file: {msg}");
        }
        Ok(tf) => {
            // Whatever decodes and validates must also render and re-encode without panicking.
            // (Expanding is not tried: a mutated iteration count can legitimately be 2^60.)
            let text = rsd_view::show::render_trace_file(&tf);
            prop_assert!(text.starts_with("iotrex trace"));
            tf.to_bytes()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
    }
    Ok(())
}

fn from_bytes(b: &[u8]) -> Result<TraceFile, rsd::RsdError> {
    TraceFile::from_bytes(b, Path::new(NAME))
}

fn decode_body(b: &[u8]) -> Result<TraceFile, rsd::RsdError> {
    TraceFile::decode_body(b, Path::new(NAME))
}

/// MessagePack headers announcing the largest lengths: array32, map32, str32, bin32, ext32.
const HUGE: [&[u8]; 5] = [
    &[0xdd, 0xff, 0xff, 0xff, 0xff],
    &[0xdf, 0xff, 0xff, 0xff, 0xff],
    &[0xdb, 0xff, 0xff, 0xff, 0xff],
    &[0xc6, 0xff, 0xff, 0xff, 0xff],
    &[0xc9, 0xff, 0xff, 0xff, 0xff, 0x01],
];

proptest! {
    // Bounded: ~1.5 s in release (what `make test` runs), ~2 s for the smaller debug count.
    #![proptest_config(ProptestConfig {
        cases: if cfg!(debug_assertions) { 2_000 } else { 10_000 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Bit flips anywhere in the file: the prefix checks or the checksum must catch them.
    #[test]
    fn bit_flips_in_file(flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..8)) {
        let mut b = SAMPLE.clone();
        for (at, bit) in &flips {
            let i = at.index(b.len());
            b[i] ^= 1 << bit;
        }
        let r = from_bytes(&b);
        // Flips that cancel out, or that only lower the minor version word (the body decodes
        // the same), may be accepted, but never as a different trace.
        if let Ok(tf) = &r {
            prop_assert_eq!(tf, &*ORIGINAL, "corrupted file accepted as a different trace");
        }
        check(r)?;
    }

    /// Bit flips past the checksum, straight into the decoder.
    #[test]
    fn bit_flips_in_body(flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..8)) {
        let mut b = body().to_vec();
        for (at, bit) in &flips {
            let i = at.index(b.len());
            b[i] ^= 1 << bit;
        }
        check(decode_body(&b))?;
    }

    /// Every strict prefix of a file, or of a body, is refused.
    #[test]
    fn truncation(at in any::<prop::sample::Index>()) {
        let n = at.index(SAMPLE.len());
        let r = from_bytes(&SAMPLE[..n]);
        prop_assert!(r.is_err(), "prefix of {n} bytes accepted");
        check(r)?;
        let n = at.index(body().len());
        let r = decode_body(&body()[..n]);
        prop_assert!(r.is_err(), "body prefix of {n} bytes accepted");
        check(r)?;
    }

    /// Random bytes inserted into the body, and into the file.
    #[test]
    fn insertion(at in any::<prop::sample::Index>(), junk in prop::collection::vec(any::<u8>(), 1..16)) {
        let mut b = body().to_vec();
        let i = at.index(b.len() + 1);
        b.splice(i..i, junk.iter().copied());
        check(decode_body(&b))?;
        let mut f = SAMPLE.clone();
        let i = at.index(f.len() + 1);
        f.splice(i..i, junk.iter().copied());
        let r = from_bytes(&f);
        prop_assert!(r.is_err(), "file with {} inserted bytes accepted", junk.len());
        check(r)?;
    }

    /// Arbitrary bodies, and arbitrary bodies behind the real body's first bytes so the decoder
    /// gets past the outer structure.
    #[test]
    fn random_bodies(junk in prop::collection::vec(any::<u8>(), 0..512), keep in 0usize..64) {
        check(decode_body(&junk))?;
        let mut b = body()[..keep.min(body().len())].to_vec();
        b.extend_from_slice(&junk);
        check(decode_body(&b))?;
    }

    /// Huge length fields written over, or inserted into, the body must be refused without
    /// allocating what they announce.
    #[test]
    fn huge_lengths(at in any::<prop::sample::Index>(), which in 0usize..HUGE.len(), overwrite in any::<bool>()) {
        let mut b = body().to_vec();
        let i = at.index(b.len());
        let h = HUGE[which];
        if overwrite {
            let end = (i + h.len()).min(b.len());
            b[i..end].copy_from_slice(&h[..end - i]);
        } else {
            b.splice(i..i, h.iter().copied());
        }
        check(decode_body(&b))?;
    }
}

/// A huge body length in the prefix is a truncation, not an allocation or an overflow.
#[test]
fn huge_body_length_in_prefix() {
    for len in [u64::MAX, u64::MAX - 31, 1 << 62] {
        let mut b = SAMPLE.clone();
        b[16..24].copy_from_slice(&len.to_le_bytes());
        let e = from_bytes(&b).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
    }
}

// --- Deep nesting -------------------------------------------------------------------------------
//
// Nested input is built as bytes, not as values, so the test itself never recurses deeply: the
// encoding of a wrapper around `x` is `prefix ++ enc(x)` (MessagePack announces lengths up
// front, and `x` is the wrapper's last field), so `prefix^n ++ enc(leaf)` is n levels deep.

/// A marker value, and a trace holding it as the only event parameter.
const MARK: i64 = 0x0123_4567_89ab_cdef;

fn elastic(v: Val<RankFn>) -> Elastic {
    Elastic {
        groups: vec![Group {
            ranks: RankSet::all(2),
            val: v,
        }],
    }
}

fn event_node(param: Elastic) -> Node {
    Node {
        ranks: RankSet::all(2),
        kind: NodeKind::Event(Event {
            op: Op::Barrier,
            sig: 7,
            path: None,
            params: vec![param],
            timing: Default::default(),
            children: vec![],
        }),
    }
}

fn loop_node(body: Vec<Node>) -> Node {
    Node {
        ranks: RankSet::all(2),
        kind: NodeKind::Loop(Loop {
            iters: elastic(Val::Const(RankFn::Const(2))),
            body,
        }),
    }
}

fn enc<T: serde::Serialize>(x: &T) -> Vec<u8> {
    rmp_serde::to_vec(x).expect("encode")
}

/// `prefix` such that `enc(wrap(x)) == prefix ++ enc(x)`.
fn prefix_of(wrapped: &[u8], inner: &[u8]) -> Vec<u8> {
    assert!(
        wrapped.ends_with(inner),
        "wrapper does not end with its content"
    );
    wrapped[..wrapped.len() - inner.len()].to_vec()
}

/// The body of a file whose single top-level node is `node_bytes`.
fn body_with_node(node_bytes: &[u8]) -> Vec<u8> {
    let leaf = event_node(elastic(Val::Const(RankFn::Const(MARK))));
    let tf = TraceFile {
        header: Header::new(2),
        trace: Trace {
            nodes: vec![leaf.clone()],
        },
    };
    let whole = enc(&tf);
    let leaf_bytes = enc(&leaf);
    let at = whole
        .windows(leaf_bytes.len())
        .position(|w| w == leaf_bytes)
        .expect("node in body");
    let mut b = whole[..at].to_vec();
    b.extend_from_slice(node_bytes);
    b.extend_from_slice(&whole[at + leaf_bytes.len()..]);
    b
}

/// Loops nested `n` deep around one event.
fn nested_loops(n: usize) -> Vec<u8> {
    let leaf = event_node(elastic(Val::Const(RankFn::Const(1))));
    let p = prefix_of(&enc(&loop_node(vec![leaf.clone()])), &enc(&leaf));
    let mut b = p.repeat(n);
    b.extend_from_slice(&enc(&leaf));
    body_with_node(&b)
}

/// An event whose parameter is `Seq[Seq[...[1]]]`, `n` deep.
fn nested_values(n: usize) -> Vec<u8> {
    let leaf: Val<RankFn> = Val::Const(RankFn::Const(1));
    let p = prefix_of(&enc(&Val::Seq(vec![leaf.clone()])), &enc(&leaf));
    let mut v = p.repeat(n);
    v.extend_from_slice(&enc(&leaf));
    // Splice the nested value where the marker value sits in an event node.
    let marked = enc(&event_node(elastic(Val::Const(RankFn::Const(MARK)))));
    let mark = enc(&Val::Const(RankFn::Const(MARK)));
    let at = marked
        .windows(mark.len())
        .position(|w| w == mark)
        .expect("marker");
    let mut node = marked[..at].to_vec();
    node.extend_from_slice(&v);
    node.extend_from_slice(&marked[at + mark.len()..]);
    body_with_node(&node)
}

#[test]
fn shallow_nesting_decodes() {
    // The construction is sound: a few levels decode into exactly what they say.
    let tf = decode_body(&nested_loops(3)).expect("3 nested loops");
    let mut n = &tf.trace.nodes[0];
    for _ in 0..3 {
        match &n.kind {
            NodeKind::Loop(l) => n = &l.body[0],
            other => panic!("expected a loop, got {other:?}"),
        }
    }
    assert!(matches!(n.kind, NodeKind::Event(_)));
    assert_eq!(tf.trace.expand(1).len(), 8);
    let tf = decode_body(&nested_values(3)).expect("3 nested values");
    assert_eq!(tf.trace.expand(0).len(), 1);
}

/// Stack for decoding hostile nesting. Release builds must cope on a 2 MiB thread (the default
/// for spawned threads). Unoptimised builds use several times more stack per level, and the
/// decoder's own depth limit (rmp-serde's 1024) still lets ~80 nested loops overflow 2 MiB
/// there, so debug runs of this test check boundedness on a larger stack instead.
const DECODE_STACK: usize = if cfg!(debug_assertions) {
    64 << 20
} else {
    2 << 20
};

/// Decodes on a thread with [`DECODE_STACK`]; a stack overflow aborts the whole test binary.
fn decode_deep(body: Vec<u8>) -> Result<(), String> {
    std::thread::Builder::new()
        .stack_size(DECODE_STACK)
        .spawn(move || decode_body(&body).map(|_| ()).map_err(|e| e.to_string()))
        .expect("spawn")
        .join()
        .expect("decoder thread")
}

#[test]
fn nesting_beyond_the_model_limit_is_refused() {
    // Deeper than rsd's MAX_DEPTH (64): refused either by the decoder's depth limit or by
    // validation, whichever sees it first.
    for (kind, body) in [("loops", nested_loops(100)), ("values", nested_values(100))] {
        let e = decode_deep(body).expect_err(kind);
        assert!(
            e.contains("nested too deeply") || e.contains("depth limit"),
            "{kind}: {e}"
        );
    }
}

#[test]
fn very_deep_nesting_is_refused_without_overflowing_the_stack() {
    for n in [1_000, 100_000] {
        for (kind, body) in [("loops", nested_loops(n)), ("values", nested_values(n))] {
            let e = decode_deep(body).expect_err(&format!("{n} nested {kind} accepted"));
            assert!(e.contains(NAME), "{e}");
        }
    }
}
