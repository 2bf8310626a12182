//! The MPI library's node communicators as a library model: `MPI_Comm_split_type(SHARED)`
//! groups the ranks of each node, so its color (the node leader's rank, as the tracer records
//! it) and every value on the communicator it makes (the rank on the node, the node's size)
//! follow the node layout. Over inputs on several nodes the node models of the fit take them
//! (`rank/ppn`, `rank%ppn`, `ppn*(rank/ppn)`, each input with its own ranks per node, the
//! target with its own); over inputs that all ran on one node those values look like
//! functions of the rank alone, and a target of several nodes is refused, naming what no
//! input shows. So is a file opened through OMPIO on one node, whose shared file pointer the
//! `sm` component serves there (`lockedfile`, with other files, across nodes); a program
//! with neither extrapolates from one node to several.

use crate::error::ExtrapError;
use crate::library::{Inner, LibraryModel, Stage};
use crate::request::Cx;
use crate::{Extrapolated, Input, nodes};
use rsd::trace::{Node, NodeKind};

/// The node communicators' model (see the module's documentation).
pub(crate) struct NodeCommunicators;

impl LibraryModel for NodeCommunicators {
    fn around(
        &self,
        cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        if let Some(target) = cx.layout.filter(|l| l.nodes() > 1) {
            let one_node =
                |i: &Input| nodes::of_header(&i.file.header).is_some_and(|l| l.nodes() == 1);
            if inputs.iter().all(one_node)
                && let Some(what) = inputs
                    .iter()
                    .find_map(|i| node_dependent(&i.file.trace.nodes))
            {
                return Err(ExtrapError::OneNodeInputs {
                    target: target.to_string(),
                    what,
                    ppn: target.ranks_per_node,
                });
            }
        }
        inner(cx, inputs, stage)
    }
}

/// What in `nodes` (at any depth) follows the nodes, described for messages: the first
/// `MPI_Comm_split_type`, or the first `MPI_File_open` whose shared file pointer OMPIO's `sm`
/// component took (on several nodes `lockedfile` opens other files).
fn node_dependent(nodes: &[Node]) -> Option<String> {
    nodes.iter().find_map(|n| match &n.kind {
        NodeKind::Event(e) if e.op == rsd::Op::CommSplitType => Some(format!(
            "which ranks share a node: {} groups the ranks of each node (its color is the \
             node's first rank), and the values on the communicator it makes follow the nodes",
            crate::describe_node(n)
        )),
        NodeKind::Event(e) if e.op == rsd::Op::FileOpen && sm_segment(&e.children) => {
            Some(format!(
                "which files Open MPI opens: {} opened its shared file pointer's segment \
                 through OMPIO's sm component, which serves one node only (across nodes \
                 lockedfile opens a lock file)",
                crate::describe_node(n)
            ))
        }
        NodeKind::Event(e) => node_dependent(&e.children),
        NodeKind::Loop(l) => node_dependent(&l.body),
    })
}

/// Whether `nodes` (a call's nested calls) open OMPIO's `sm` segment.
fn sm_segment(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => e
            .path
            .as_ref()
            .is_some_and(|p| collio::sharedfp::is_sm_segment(&p.0)),
        NodeKind::Loop(l) => sm_segment(&l.body),
    })
}

#[cfg(test)]
mod tests {
    use crate::{ExtrapError, Inconsistent, Input, Request, TargetShape};
    use rsd::op::{Op, args};
    use rsd::trace::RawEvent;

    /// IOR's node queries on `nodes` nodes of `ppn` ranks, placed by block: the shared-memory
    /// split (color: the node leader), the rank on the node, then "on rank 0's node" gathered
    /// at rank 0 (a receive count of 1 on the root alone).
    fn input(nodes: u32, ppn: u32) -> Input {
        let n = nodes * ppn;
        let ranks = (0..n)
            .map(|r| {
                let (r64, p) = (i64::from(r), i64::from(ppn));
                let mut c = rsd::Compressor::new(r);
                let leader = p * (r64 / p);
                c.push(&RawEvent::new(
                    Op::CommSplitType,
                    1,
                    args::comm_split_type(0, leader, r64, 2),
                ));
                c.push(&RawEvent::new(Op::CommRank, 2, args::comm_rank(2, r64 % p)));
                if r == 0 {
                    // IOR's GetNumTasksOnNode0: the node's size, asked on rank 0.
                    c.push(&RawEvent::new(Op::CommSize, 4, args::comm_size(2, p)));
                }
                let root = i64::from(r == 0);
                c.push(&RawEvent::new(
                    Op::Gather,
                    3,
                    args::gather(1, 7, root, if r == 0 { 7 } else { -1 }, 0, 0, 4),
                ));
                c.finish()
            })
            .collect();
        let mut header = rsd::Header::new(n);
        header.command = vec!["node_queries".into()];
        header.mpi_config = Some(rsd::MpiConfig {
            library: "Open MPI v4.1.4".into(),
            node_ranks: vec![(ppn, nodes)],
            nodes_contiguous: true,
            ..Default::default()
        });
        Input {
            name: format!("nq.{nodes}x{ppn}.iotrex"),
            file: rsd::TraceFile {
                header,
                trace: rsd::merge_tree(ranks).unwrap(),
            },
        }
    }

    fn extrapolate(
        layouts: &[(u32, u32)],
        target: u32,
        shape: Option<TargetShape>,
    ) -> Result<crate::Extrapolated, ExtrapError> {
        let inputs: Vec<Input> = layouts.iter().map(|&(k, p)| input(k, p)).collect();
        let req = Request::new(target)
            .shape(shape)
            .inconsistent(Inconsistent::AsGiven);
        crate::run(&req, &inputs)
    }

    /// Every rank's calls of `got` equal those of the program run at `nodes` x `ppn`.
    fn assert_as_run(got: &crate::Extrapolated, nodes: u32, ppn: u32) {
        let real = input(nodes, ppn).file;
        for r in 0..nodes * ppn {
            let (g, w) = (got.file.trace.expand(r), real.trace.expand(r));
            assert_eq!(g, w, "rank {r} at {nodes} x {ppn}");
        }
        let mc = got.file.header.mpi_config.as_ref().unwrap();
        assert_eq!(mc.node_ranks, [(ppn, nodes)]);
        assert!(mc.nodes_contiguous);
    }

    #[test]
    fn more_ranks_per_node_take_the_targets_ranks_per_node() {
        let layouts = [(2, 1), (2, 2), (2, 3), (2, 4)];
        let x = extrapolate(&layouts, 16, Some(TargetShape::RanksPerNode(8))).unwrap();
        assert_as_run(&x, 2, 8);
        let said: Vec<&str> = x.explain.iter().map(|e| e.model.as_str()).collect();
        assert!(said.contains(&"ppn*(rank/ppn)"), "{said:?}");
        assert!(said.contains(&"(rank%ppn)"), "{said:?}");
        assert!(said.contains(&"[rank==0]"), "{said:?}");
        // The same 16 ranks as 4 nodes of 4: inputs all on 2 nodes cannot tell the node's
        // size (1, 2, 3, 4 at 2, 4, 6, 8 ranks) from half the ranks: refused, naming both.
        let e = extrapolate(&layouts, 16, Some(TargetShape::Nodes(4))).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("MPI_Comm_size"), "{text}");
        assert!(text.contains("ppn") && text.contains("(1/2)*n"), "{text}");
    }

    #[test]
    fn more_nodes_keep_the_inputs_ranks_per_node() {
        let x = extrapolate(&[(2, 2), (3, 2), (4, 2), (5, 2)], 16, None).unwrap();
        assert_as_run(&x, 8, 2);
    }

    /// Inputs that vary in both tell the node's size from the rank count, and the node
    /// terms hold at any layout.
    #[test]
    fn inputs_varying_in_nodes_and_ranks_per_node() {
        let layouts = [(2, 1), (2, 2), (3, 3), (3, 4)];
        let x = extrapolate(&layouts, 24, Some(TargetShape::RanksPerNode(6))).unwrap();
        assert_as_run(&x, 4, 6);
        // The node's size is no function of n over these scales (1, 2, 3, 4 at 2, 4, 9, 12).
        let size = x
            .explain
            .iter()
            .find(|e| e.event.starts_with("MPI_Comm_size"));
        let size = size.map(|e| e.model.as_str()).unwrap_or_default();
        assert!(size.contains("value = ppn"), "{:?}", x.explain);
        let y = extrapolate(&layouts, 16, Some(TargetShape::Nodes(4))).unwrap();
        assert_as_run(&y, 4, 4);
    }

    /// A value on the root alone is `-rank + 1` at 2 ranks and two rank groups at more: one
    /// model at every scale, with 1-node inputs of 1 to 4 ranks too.
    #[test]
    fn a_value_on_the_root_alone_whatever_the_rank_groups() {
        let x = extrapolate(&[(1, 1), (1, 2), (1, 3), (1, 4)], 8, None).unwrap();
        assert_as_run(&x, 1, 8);
        let x = extrapolate(&[(1, 2), (2, 2), (3, 2), (4, 2)], 12, None).unwrap();
        assert_as_run(&x, 6, 2);
    }

    /// A program on one node at 4-16 ranks asking the world's size, and with `sm`, opening a
    /// file through MPI-IO where OMPIO's `sm` component opens its segment.
    fn one_node(sm: bool) -> Vec<Input> {
        [4u32, 8, 12, 16]
            .iter()
            .map(|&n| {
                let ranks = (0..n)
                    .map(|r| {
                        let mut c = rsd::Compressor::new(r);
                        let size = args::comm_size(0, i64::from(n));
                        c.push(&RawEvent::new(Op::CommSize, 1, size));
                        if sm {
                            let mut open = RawEvent::new(Op::FileOpen, 2, args::file_open(0, 5, 0));
                            open.path = Some("/d/f".into());
                            let mut seg = RawEvent::new(Op::Open, 3, args::open(66, 420, 3));
                            seg.path = Some(format!("/tmp/ompi.h.0/jf.1/0/f_cid-3-{}.sm", 4000));
                            open.children.push(seg);
                            c.push(&open);
                        }
                        c.finish()
                    })
                    .collect();
                let mut header = rsd::Header::new(n);
                header.mpi_config = Some(rsd::MpiConfig {
                    library: "Open MPI v4.1.4".into(),
                    node_ranks: vec![(n, 1)],
                    nodes_contiguous: true,
                    ..Default::default()
                });
                let trace = rsd::merge_tree(ranks).unwrap();
                Input {
                    name: format!("size.1x{n}.iotrex"),
                    file: rsd::TraceFile { header, trace },
                }
            })
            .collect()
    }

    /// One-node inputs that split nothing by node extrapolate to 4 nodes x 8: the world's
    /// size is `n` (on one node `ppn` fits it too, which says nothing of the nodes: no node
    /// term is fitted over one-node inputs). With OMPIO's `sm` segment they are refused: on
    /// several nodes Open MPI opens other files.
    #[test]
    fn one_node_inputs_without_a_node_dependence_extrapolate_to_several_nodes() {
        let req = Request::new(32).shape(Some(TargetShape::RanksPerNode(8)));
        let x = crate::run(&req, &one_node(false)).unwrap_or_else(|e| panic!("{e}"));
        let got = x.file.trace.expand(31);
        assert_eq!(got[0].params, args::comm_size(0, 32), "{got:?}");
        let mc = x.file.header.mpi_config.as_ref().unwrap();
        assert_eq!(mc.node_ranks, [(8, 4)]);
        let e = crate::run(&req, &one_node(true)).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, ExtrapError::OneNodeInputs { .. }), "{text}");
        assert!(
            text.contains("MPI_File_open") && text.contains("sm component"),
            "{text}"
        );
    }

    #[test]
    fn one_node_inputs_to_several_nodes_are_refused_naming_the_split() {
        let layouts = [(1, 1), (1, 2), (1, 3), (1, 4)];
        let e = extrapolate(&layouts, 16, Some(TargetShape::RanksPerNode(8))).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, ExtrapError::OneNodeInputs { .. }), "{text}");
        assert!(text.contains("MPI_Comm_split_type"), "{text}");
        assert!(text.contains("2 nodes x 8 ranks"), "{text}");
        assert!(
            text.contains("trace the program on two nodes or more"),
            "{text}"
        );
    }

    #[test]
    fn the_targets_shape_is_checked() {
        let layouts = [(2, 1), (2, 2), (2, 3), (2, 4)];
        // Different ranks per node and no shape: asked for, naming each input's layout.
        let e = extrapolate(&layouts, 16, None).unwrap_err();
        assert!(matches!(e, ExtrapError::TargetShapeNeeded { .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains("nq.2x3.iotrex (2 nodes x 3 ranks)"), "{text}");
        assert!(text.contains("--ranks-per-node"), "{text}");
        for (shape, says) in [
            (
                TargetShape::RanksPerNode(5),
                "--ranks-per-node 5 does not divide 16",
            ),
            (TargetShape::Nodes(3), "--nodes 3 does not divide 16"),
            (TargetShape::RanksPerNode(0), "--ranks-per-node 0"),
            (TargetShape::Nodes(0), "--nodes 0"),
        ] {
            let e = extrapolate(&layouts, 16, Some(shape)).unwrap_err();
            assert!(matches!(e, ExtrapError::BadTarget { .. }), "{e}");
            assert!(e.to_string().contains(says), "{shape:?}: {e}");
        }
        // Constant ranks per node that do not divide the target.
        let e = extrapolate(&[(2, 2), (3, 2), (4, 2), (5, 2)], 15, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("2 ranks per node, which does not divide 15"),
            "{e}"
        );
    }
}
