//! The rest of the MPI communication API (persistent requests, probes, matched receives, the
//! test calls, cancel, Sendrecv_replace, buffers, Alltoallw, nonblocking and neighbourhood
//! collectives, topology, group and intercommunicator creation) in a trace built here with
//! the layouts of `rsd::op`: it replays with `--comm real` under `mpirun` and with
//! `--threads`, every op's count equal to the trace's; the same trace with a persistent send
//! or a neighbourhood send removed is refused before any I/O, in both runtimes.

use crate::common;

use common::{build, have_mpirun, ops_of, with_path};
use rsd::Op;
use rsd::op::args;
use rsd::trace::RawEvent;
use std::path::Path;
use std::process::{Command, Output};

const N: u32 = 4;
/// MPI_BYTE: every count below is in bytes.
const BYTE: i64 = rsd::mpi::BYTE;

fn ev(op: Op, site: u64, params: Vec<i64>) -> RawEvent {
    let mut e = RawEvent::new(op, 0x5100 + site, params);
    e.gap_ns = 1_000;
    e.dur_ns = 1_000;
    e
}

fn with(mut v: Vec<i64>, extra: &[i64]) -> Vec<i64> {
    v.extend_from_slice(extra);
    v
}

/// What to break in the trace.
#[derive(Clone, Copy, PartialEq)]
enum Break {
    None,
    /// Rank 1 starts only its persistent receive in the first round: its send is missing.
    PersistentSend,
    /// Rank 1's neighbourhood alltoall sends to its previous neighbour only.
    NeighborSend,
}

/// Every call of the brief on 4 ranks in a ring (next = r + 1, prev = r - 1), each
/// exchange matched, after a file written by every rank (so a refusal before any I/O leaves
/// the root empty).
fn rank_calls(r: u32, brk: Break) -> Vec<RawEvent> {
    let ri = i64::from(r);
    let n = i64::from(N);
    let next = if r + 1 == N { 1 - n } else { 1 };
    let prev = if r == 0 { n - 1 } else { -1 };
    let mut v = vec![
        ev(Op::Init, 0, vec![]),
        with_path(
            ev(Op::Open, 1, vec![0o1101, 0o644, 3]),
            &format!("out/rank_{r}"),
        ),
        ev(Op::Pwrite, 2, vec![3, 64, 0, 64]),
        ev(Op::Close, 3, vec![3]),
    ];
    // Persistent requests: a ring started three times with Startall, then once with Start
    // and completed by Waitsome; each mode's init; Testall and Test completions.
    v.push(ev(
        Op::SendInit,
        10,
        args::send_init(8, BYTE, next, 1, 0, 8, 0),
    ));
    v.push(ev(
        Op::RecvInit,
        11,
        args::recv_init(8, BYTE, prev, 1, 0, 8, 1),
    ));
    for i in 0..3 {
        if brk == Break::PersistentSend && r == 1 && i == 0 {
            v.push(ev(Op::Start, 12, args::start(1)));
        } else {
            v.push(ev(Op::Startall, 13, with(args::startall(2), &[0, 1])));
        }
        v.push(ev(Op::Waitall, 14, args::waitall(2)));
    }
    v.push(ev(Op::Start, 15, args::start(1)));
    v.push(ev(Op::Start, 16, args::start(0)));
    v.push(ev(Op::Waitsome, 17, with(args::waitsome(2, 2), &[0, 1])));
    v.push(ev(
        Op::SsendInit,
        18,
        args::ssend_init(8, BYTE, next, 2, 0, 8, 2),
    ));
    v.push(ev(
        Op::RecvInit,
        19,
        args::recv_init(8, BYTE, prev, 2, 0, 8, 3),
    ));
    v.push(ev(Op::Start, 20, args::start(3)));
    v.push(ev(Op::Start, 21, args::start(2)));
    v.push(ev(Op::Testall, 22, with(args::testall(2, 1), &[3, 2])));
    v.push(ev(
        Op::RsendInit,
        23,
        args::rsend_init(8, BYTE, next, 3, 0, 8, 4),
    ));
    v.push(ev(
        Op::RecvInit,
        24,
        args::recv_init(8, BYTE, prev, 3, 0, 8, 5),
    ));
    v.push(ev(Op::Start, 25, args::start(5)));
    v.push(ev(Op::Barrier, 26, vec![0]));
    v.push(ev(Op::Start, 27, args::start(4)));
    v.push(ev(Op::Wait, 28, args::wait(4)));
    v.push(ev(Op::Wait, 29, args::wait(5)));
    v.push(ev(Op::BufferAttach, 30, args::buffer_attach(4096)));
    v.push(ev(
        Op::BsendInit,
        31,
        args::bsend_init(8, BYTE, next, 4, 0, 8, 6),
    ));
    v.push(ev(
        Op::RecvInit,
        32,
        args::recv_init(8, BYTE, prev, 4, 0, 8, 7),
    ));
    v.push(ev(Op::Start, 33, args::start(6)));
    v.push(ev(Op::Start, 34, args::start(7)));
    v.push(ev(Op::Test, 35, args::test(7, 1)));
    v.push(ev(Op::Wait, 36, args::wait(6)));
    for q in 0..8 {
        v.push(ev(Op::RequestFree, 37, args::request_free(q)));
    }
    v.push(ev(Op::BufferDetach, 38, args::buffer_detach(4096)));
    // Probes and matched receives.
    v.push(ev(Op::Send, 40, args::send(8, BYTE, next, 10, 0, 8)));
    v.push(ev(Op::Probe, 41, args::probe(prev, 10, 0, prev, 10, 8)));
    v.push(ev(
        Op::Iprobe,
        42,
        args::iprobe(prev, 10, 0, 1, prev, 10, 8),
    ));
    v.push(ev(Op::Iprobe, 43, args::iprobe(prev, 99, 0, 0, 0, 0, 0)));
    v.push(ev(Op::Recv, 44, args::recv(8, BYTE, prev, 10, 0, 8)));
    v.push(ev(Op::Send, 45, args::send(8, BYTE, next, 11, 0, 8)));
    v.push(ev(
        Op::Mprobe,
        46,
        args::mprobe(prev, 11, 0, prev, 11, 8, 0),
    ));
    v.push(ev(Op::Mrecv, 47, args::mrecv(8, BYTE, 0, 8)));
    v.push(ev(Op::Send, 48, args::send(8, BYTE, next, 12, 0, 8)));
    v.push(ev(
        Op::Improbe,
        49,
        args::improbe(prev, 12, 0, 1, prev, 12, 8, 0),
    ));
    v.push(ev(Op::Imrecv, 50, args::imrecv(8, BYTE, 0, 8, 0)));
    v.push(ev(Op::Wait, 51, args::wait(0)));
    v.push(ev(
        Op::Improbe,
        52,
        args::improbe(prev, 98, 0, 0, 0, 0, 0, -1),
    ));
    // Tests, a cancelled receive, Waitsome.
    v.push(ev(Op::Isend, 60, args::isend(8, BYTE, next, 13, 0, 8, 0)));
    v.push(ev(Op::Irecv, 61, args::irecv(8, BYTE, prev, 13, 0, 8, 1)));
    v.push(ev(Op::Test, 62, args::test(1, 0)));
    v.push(ev(Op::Testany, 63, args::testany(2, 1, 1)));
    v.push(ev(Op::Testsome, 64, with(args::testsome(2, 1), &[0])));
    v.push(ev(Op::Irecv, 65, args::irecv(8, BYTE, prev, 14, 0, 8, 2)));
    v.push(ev(Op::Cancel, 66, args::cancel(2)));
    v.push(ev(Op::Wait, 67, args::wait(2)));
    v.push(ev(Op::Isend, 68, args::isend(8, BYTE, next, 15, 0, 8, 0)));
    v.push(ev(Op::Irecv, 69, args::irecv(8, BYTE, prev, 15, 0, 8, 1)));
    v.push(ev(Op::Waitsome, 70, with(args::waitsome(2, 2), &[1, 0])));
    v.push(ev(
        Op::SendrecvReplace,
        71,
        args::sendrecv_replace(8, BYTE, next, 16, prev, 16, 0, 8),
    ));
    // Collectives: Alltoallw and every nonblocking one, completed together.
    v.push(ev(Op::Alltoallw, 80, args::alltoallw(32, 32, 0, 32)));
    let root_sum = |k: i64| if r == 0 { k } else { 0 };
    let colls = [
        (Op::Ibarrier, args::ibarrier(0, 0)),
        (Op::Ibcast, args::ibcast(8, BYTE, 0, 0, 8, 1)),
        (Op::Ireduce, args::ireduce(8, BYTE, 0, 0, 0, 8, 2)),
        (Op::Iallreduce, args::iallreduce(8, BYTE, 0, 0, 8, 3)),
        (Op::Igather, args::igather(8, BYTE, 8, BYTE, 0, 0, 8, 4)),
        // Rank r sends 8 + r bytes: the root receives 38.
        (
            Op::Igatherv,
            args::igatherv(8 + ri, BYTE, root_sum(38), BYTE, 0, 0, 8 + ri, 5),
        ),
        (Op::Iscatter, args::iscatter(8, BYTE, 8, BYTE, 0, 0, 8, 6)),
        (
            Op::Iscatterv,
            args::iscatterv(root_sum(38), BYTE, 8 + ri, BYTE, 0, 0, root_sum(38), 7),
        ),
        (Op::Iallgather, args::iallgather(8, BYTE, 8, BYTE, 0, 8, 8)),
        (
            Op::Iallgatherv,
            args::iallgatherv(8 + ri, BYTE, 38, BYTE, 0, 8 + ri, 9),
        ),
        (Op::Ialltoall, args::ialltoall(8, BYTE, 8, BYTE, 0, 8, 10)),
        (
            Op::Ialltoallv,
            args::ialltoallv(32, BYTE, 32, BYTE, 0, 32, 11),
        ),
        (Op::Ialltoallw, args::ialltoallw(32, 32, 0, 32, 12)),
        (
            Op::IreduceScatter,
            args::ireduce_scatter(ri + 1, BYTE, 0, 0, ri + 1, 13),
        ),
        (
            Op::IreduceScatterBlock,
            args::ireduce_scatter_block(8, BYTE, 0, 0, 8, 14),
        ),
        (Op::Iscan, args::iscan(8, BYTE, 0, 0, 8, 15)),
        (Op::Iexscan, args::iexscan(8, BYTE, 0, 0, 8, 16)),
    ];
    for (i, (op, p)) in colls.into_iter().enumerate() {
        v.push(ev(op, 81 + i as u64, p));
    }
    v.push(ev(Op::Waitall, 99, args::waitall(17)));
    // A periodic ring topology (recorded as a split) and its neighbourhood collectives:
    // neighbours [prev, next] both ways; alltoallv/w send 8 bytes back and 16 forward.
    v.push(ev(Op::CartCreate, 100, args::cart_create(0, 0, ri, 2)));
    let peers = [prev, next];
    let neighbor = |op: Op, back: i64, fwd: i64, req: Option<i64>| {
        let (mut dsts, mut sent) = (vec![prev, next], vec![back, fwd]);
        if brk == Break::NeighborSend && r == 1 && op == Op::NeighborAlltoall {
            dsts.pop();
            sent.pop();
        }
        let (sb, rb) = (sent.iter().sum::<i64>(), back + fwd);
        let mut p = match req {
            None => args::neighbor_alltoall(2, 2, dsts.len() as i64, sb, rb),
            Some(q) => args::ineighbor_alltoall(2, 2, dsts.len() as i64, sb, rb, q),
        };
        p.extend(peers);
        p.extend(&dsts);
        p.extend(&sent);
        // From prev: what it sends forward; from next: what it sends back.
        p.extend([fwd, back]);
        p
    };
    let nbs = [
        (Op::NeighborAllgather, 8, 8),
        (Op::NeighborAllgatherv, 8, 8),
        (Op::NeighborAlltoall, 8, 8),
        (Op::NeighborAlltoallv, 8, 16),
        (Op::NeighborAlltoallw, 8, 16),
    ];
    for (i, (op, back, fwd)) in nbs.into_iter().enumerate() {
        v.push(ev(op, 101 + i as u64, neighbor(op, back, fwd, None)));
    }
    let inbs = [
        (Op::IneighborAllgather, 8, 8),
        (Op::IneighborAllgatherv, 8, 8),
        (Op::IneighborAlltoall, 8, 8),
        (Op::IneighborAlltoallv, 8, 16),
        (Op::IneighborAlltoallw, 8, 16),
    ];
    for (i, (op, back, fwd)) in inbs.into_iter().enumerate() {
        v.push(ev(
            op,
            110 + i as u64,
            neighbor(op, back, fwd, Some(i as i64)),
        ));
    }
    v.push(ev(Op::Waitall, 115, args::waitall(5)));
    // Topology creations as splits, a message on the last one.
    v.push(ev(Op::CartSub, 120, args::cart_sub(2, 0, ri, 3)));
    v.push(ev(Op::Barrier, 121, vec![3]));
    v.push(ev(Op::GraphCreate, 122, args::graph_create(0, 0, ri, 4)));
    v.push(ev(
        Op::DistGraphCreate,
        123,
        args::dist_graph_create(0, 0, ri, 5),
    ));
    v.push(ev(
        Op::DistGraphCreateAdjacent,
        124,
        args::dist_graph_create_adjacent(0, 0, ri, 6),
    ));
    v.push(ev(Op::Send, 125, args::send(8, BYTE, next, 20, 6, 8)));
    v.push(ev(Op::Recv, 126, args::recv(8, BYTE, prev, 20, 6, 8)));
    // Ranks 1 and 3 make a communicator of their own; its rank 0 sends to its rank 1.
    if r % 2 == 1 {
        let p = with(args::comm_create_group(0, 7, 2, 7), &[1, 3]);
        v.push(ev(Op::CommCreateGroup, 130, p));
        if r == 1 {
            v.push(ev(Op::Send, 131, args::send(8, BYTE, 1, 21, 7, 8)));
        } else {
            v.push(ev(Op::Recv, 132, args::recv(8, BYTE, -1, 21, 7, 8)));
        }
        v.push(ev(Op::CommFree, 133, args::comm_free(7)));
    }
    // Evens and odds, an intercommunicator between them (leaders world 0 and 1), a message
    // from each even rank to the odd rank of the same index, and the merge (evens first).
    v.push(ev(Op::CommSplit, 140, vec![0, ri % 2, ri, 8]));
    let remote: &[i64] = if r.is_multiple_of(2) {
        &[1, 3]
    } else {
        &[0, 2]
    };
    let (peer_comm, remote_leader) = match r {
        0 => (0, 1),
        1 => (0, 0),
        _ => (-1, -1),
    };
    let p = args::intercomm_create(8, 0, peer_comm, remote_leader, 9, 9, 2);
    v.push(ev(Op::IntercommCreate, 141, with(p, remote)));
    if r.is_multiple_of(2) {
        v.push(ev(Op::Send, 142, args::send(8, BYTE, 0, 22, 9, 8)));
    } else {
        v.push(ev(Op::Recv, 143, args::recv(8, BYTE, 0, 22, 9, 8)));
    }
    // The same on a copy of the intercommunicator.
    v.push(ev(Op::CommDup, 146, vec![9, 11]));
    if r.is_multiple_of(2) {
        v.push(ev(Op::Send, 147, args::send(8, BYTE, 0, 23, 11, 8)));
    } else {
        v.push(ev(Op::Recv, 148, args::recv(8, BYTE, 0, 23, 11, 8)));
    }
    let p = args::intercomm_merge(9, ri % 2, 10, 4);
    v.push(ev(Op::IntercommMerge, 144, with(p, &[0, 2, 1, 3])));
    v.push(ev(Op::Allreduce, 145, args::allreduce(8, BYTE, 0, 10, 8)));
    for c in [11, 10, 9, 8, 6, 5, 4, 3, 2] {
        v.push(ev(Op::CommFree, 149, args::comm_free(c)));
    }
    v.push(ev(Op::Finalize, 150, vec![]));
    v
}

fn write_trace(dir: &Path, brk: Break) -> std::path::PathBuf {
    let tf = build(N, |r| rank_calls(r, brk));
    let p = dir.join(format!("calls{}.iotrex", brk as u8));
    tf.write(&p).unwrap();
    p
}

/// How a test replays: under mpirun, as threads, or as coroutines on a pool of one thread.
#[derive(Clone, Copy, Debug)]
enum How {
    Mpi,
    Threads,
    Pool,
}

fn replay(trace: &Path, root: &Path, how: How, json: Option<&Path>) -> Output {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    let bin = env!("CARGO_BIN_EXE_iotrex-replay");
    let mut c = Command::new("timeout");
    c.arg("120");
    match how {
        How::Mpi => c.args(["mpirun", "-np", &N.to_string(), bin]),
        How::Threads => c.args([bin, "--threads"]),
        How::Pool => c.args([bin, "--threads", "--max-threads", "1"]),
    };
    c.arg(trace)
        .args(["--comm", "real", "--stall-timeout", "20", "--root"])
        .arg(root);
    if let Some(j) = json {
        c.arg("--json").arg(j);
    }
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .unwrap()
}

fn runtimes() -> Vec<How> {
    if have_mpirun() {
        vec![How::Threads, How::Pool, How::Mpi]
    } else {
        eprintln!("mpirun missing: only --threads is replayed");
        vec![How::Threads, How::Pool]
    }
}

#[test]
fn every_call_replays_with_real_communication_and_the_trace_counts() {
    let t = tempfile::tempdir().unwrap();
    let trace = write_trace(t.path(), Break::None);
    let tf = rsd::TraceFile::read(&trace).unwrap();
    // The trace's count of each op, all ranks.
    let mut want: std::collections::BTreeMap<&str, u64> = Default::default();
    for r in 0..N {
        for e in tf.trace.expand(r) {
            *want.entry(e.op.name()).or_default() += 1;
        }
    }
    for how in runtimes() {
        let root = t.path().join(format!("root{how:?}"));
        let json = t.path().join(format!("r{how:?}.json"));
        let o = replay(&trace, &root, how, Some(&json));
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "{how:?}: {out}\n{err}");
        assert!(
            out.contains("op counts and bytes equal the trace's"),
            "{how:?}: {out}"
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let got: std::collections::BTreeMap<String, u64> = ops_of(&j)
            .into_iter()
            .map(|(name, n, _)| (name, n))
            .collect();
        for (op, n) in &want {
            assert_eq!(got.get(*op), Some(n), "{how:?}: {op}: {got:?}");
        }
        // Every new call is in the trace, so each was replayed.
        for op in [
            "MPI_Startall",
            "MPI_Mprobe",
            "MPI_Ineighbor_alltoallw",
            "MPI_Intercomm_merge",
            "MPI_Comm_create_group",
            "MPI_Ialltoallw",
        ] {
            assert!(got.contains_key(op), "{how:?}: {op} missing: {got:?}");
        }
        assert_eq!(
            std::fs::metadata(root.join("out/rank_3")).unwrap().len(),
            64
        );
    }
}

#[test]
fn a_removed_persistent_or_neighbourhood_send_is_refused_before_any_io() {
    let t = tempfile::tempdir().unwrap();
    for (brk, what) in [
        (
            Break::PersistentSend,
            "rank 2 receives 4 messages from rank 1 with tag 1 on MPI_COMM_WORLD, and rank 1 sends it 3",
        ),
        (
            Break::NeighborSend,
            "rank 2 receives 10 messages from rank 1 in neighbourhood collectives on a communicator of 4 ranks, and rank 1 sends it 9",
        ),
    ] {
        let trace = write_trace(t.path(), brk);
        for how in runtimes() {
            let root = t.path().join("root");
            let o = replay(&trace, &root, how, None);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{how:?}: {err}");
            assert!(err.contains(what), "{how:?}: {err}");
            assert!(err.contains("replay with --comm delay"), "{how:?}: {err}");
            assert_eq!(
                std::fs::read_dir(&root).unwrap().count(),
                0,
                "{how:?}: the refused replay wrote files"
            );
        }
    }
}
