//! The node layout of the inputs and of the target: how many consecutive ranks each node
//! holds. A scale is a rank count and its ranks per node; the node models of the `models`
//! crate (`rank/ppn`, `rank%ppn`, the node leader) are fitted with each input's ranks per node
//! and evaluated with the target's, and the output's header says the target's layout, and only
//! that: the nodes and their ranks by slot, never the inputs' host names.
//!
//! An input's layout is read in one place ([`of_header`]): the header's node layout where the
//! tracer recorded one, else its `mpi_config` (`node_ranks`, `nodes_contiguous`).

use crate::Input;
use crate::error::ExtrapError;
use rsd::format::Header;
use rsd::{NodeLayout, Placement};

/// The target's shape as asked for (`iotrex extrap --ranks-per-node P` or `--nodes K`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetShape {
    /// Every node holds this many consecutive ranks.
    RanksPerNode(u32),
    /// This many nodes, the ranks dealt in equal consecutive blocks.
    Nodes(u32),
}

/// A layout of `ranks` ranks in blocks of `ranks_per_node` consecutive ranks per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Ranks in all.
    pub ranks: u32,
    /// Ranks on every node (the ranks are placed by block: node `rank / ranks_per_node`).
    pub ranks_per_node: u32,
}

impl Layout {
    /// Nodes in all.
    pub fn nodes(&self) -> u32 {
        self.ranks / self.ranks_per_node.max(1)
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} nodes x {} ranks", self.nodes(), self.ranks_per_node)
    }
}

/// An input's layout where its header records one that the node models can use: every node
/// the same number of ranks, placed by block (or a single node). `None` for traces that record
/// neither a node layout nor the MPI configuration, with nodes of different sizes, or with
/// ranks dealt round-robin.
pub fn of_header(h: &Header) -> Option<Layout> {
    match &h.node_layout {
        Some(l) => of_node_layout(l, h.nranks),
        None => of_mpi_config(h),
    }
}

/// An input's scale: its rank count and, where its header says one, its ranks per node. Two
/// runs are repeated runs of one scale only where both agree: 6 ranks as 3 nodes x 2 and as
/// 2 nodes x 3 are two scales, whose node-dependent values differ by the law of the layout,
/// not by the run.
pub fn scale(h: &Header) -> (u32, Option<u32>) {
    (h.nranks, of_header(h).map(|l| l.ranks_per_node))
}

/// The layout a recorded node layout says: by slot with every node full.
fn of_node_layout(l: &NodeLayout, ranks: u32) -> Option<Layout> {
    match l.placement {
        Placement::Block { per_node } if per_node > 0 && ranks.is_multiple_of(per_node) => {
            Some(Layout {
                ranks,
                ranks_per_node: per_node,
            })
        }
        // One node holds every rank, whatever the placement says of it.
        _ if l.nodes == 1 => Some(Layout {
            ranks,
            ranks_per_node: ranks,
        }),
        _ => None,
    }
}

/// The layout the MPI configuration says (traces from before the node layout was recorded).
fn of_mpi_config(h: &Header) -> Option<Layout> {
    let mc = h.mpi_config.as_ref()?;
    let [(per, count)] = mc.node_ranks[..] else {
        return None;
    };
    if per == 0 || (count > 1 && !mc.nodes_contiguous) || mc.ranks() != u64::from(h.nranks) {
        return None;
    }
    Some(Layout {
        ranks: h.nranks,
        ranks_per_node: per,
    })
}

/// The ranks per node each input's points carry in the fit (0: not known, where no node model
/// fits). Where every input ran on one node they are all 0: there the ranks per node are the
/// rank count at every scale, so a node term only copies `n` (a count of the world's ranks is
/// `ppn` as well) and would disagree with it at a target of several nodes. Whether such a
/// program depends on the nodes at all is the node communicators' model's to say
/// (`mpi::nodes`), which refuses one that splits the world by node.
pub(crate) fn fitted_ppns(inputs: &[&Input]) -> Vec<i64> {
    let layouts: Vec<Option<Layout>> = inputs.iter().map(|i| of_header(&i.file.header)).collect();
    if layouts.iter().all(|l| l.is_some_and(|l| l.nodes() == 1)) {
        return vec![0; inputs.len()];
    }
    layouts
        .iter()
        .map(|l| l.map_or(0, |l| l.ranks_per_node.into()))
        .collect()
}

/// The target's layout: the one asked for, checked against `target`; else the inputs' ranks
/// per node where every input has the same; else one node where every input ran on one node.
/// `None` where some input records no usable layout (nothing is known of nodes then). A shape
/// that does not divide the target, or inputs of different ranks per node with no shape
/// asked for, is refused.
pub fn target(
    target: u32,
    asked: Option<TargetShape>,
    inputs: &[Input],
) -> Result<Option<Layout>, ExtrapError> {
    if let Some(shape) = asked {
        return asked_layout(target, shape).map(Some);
    }
    let layouts: Option<Vec<Layout>> = inputs.iter().map(|i| of_header(&i.file.header)).collect();
    let Some(layouts) = layouts else {
        return Ok(None);
    };
    let Some(first) = layouts.first() else {
        return Ok(None);
    };
    if layouts
        .iter()
        .all(|l| l.ranks_per_node == first.ranks_per_node)
    {
        let ppn = first.ranks_per_node;
        if !target.is_multiple_of(ppn) {
            return Err(ExtrapError::BadTarget {
                target: target.into(),
                why: format!(
                    "every input has {ppn} ranks per node, which does not divide {target}; \
                     say the target's shape with --ranks-per-node or --nodes"
                ),
            });
        }
        return Ok(Some(Layout {
            ranks: target,
            ranks_per_node: ppn,
        }));
    }
    if layouts.iter().all(|l| l.nodes() == 1) {
        return Ok(Some(Layout {
            ranks: target,
            ranks_per_node: target,
        }));
    }
    Err(ExtrapError::TargetShapeNeeded {
        inputs: inputs
            .iter()
            .zip(&layouts)
            .map(|(i, l)| format!("{} ({l})", i.name))
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// The layout `shape` asks for at `target` ranks, or why it cannot be.
fn asked_layout(target: u32, shape: TargetShape) -> Result<Layout, ExtrapError> {
    let bad = |why: String| ExtrapError::BadTarget {
        target: target.into(),
        why,
    };
    let ranks_per_node = match shape {
        TargetShape::RanksPerNode(0) => {
            return Err(bad(
                "--ranks-per-node 0: a node holds at least one rank".into()
            ));
        }
        TargetShape::Nodes(0) => return Err(bad("--nodes 0: a run has at least one node".into())),
        TargetShape::RanksPerNode(p) if !target.is_multiple_of(p) => {
            return Err(bad(format!(
                "--ranks-per-node {p} does not divide {target} ranks (every node holds the same \
                 number of ranks)"
            )));
        }
        TargetShape::Nodes(k) if !target.is_multiple_of(k) => {
            return Err(bad(format!(
                "--nodes {k} does not divide {target} ranks (every node holds the same number \
                 of ranks)"
            )));
        }
        TargetShape::RanksPerNode(p) => p,
        TargetShape::Nodes(k) => target / k,
    };
    Ok(Layout {
        ranks: target,
        ranks_per_node,
    })
}

/// `header`, made from an input's, saying the target's layout `layout` (or nothing of nodes
/// where it is not known): the MPI configuration's ranks per node, and a node layout of its
/// nodes by slot without names (the target's hosts are not known).
pub(crate) fn set_layout(header: &mut Header, layout: Option<Layout>) {
    header.node_layout = layout.map(|l| NodeLayout::block(l.nodes(), l.ranks_per_node));
    if let (Some(mc), Some(l)) = (header.mpi_config.as_mut(), layout) {
        mc.node_ranks = vec![(l.ranks_per_node, l.nodes())];
        mc.nodes_contiguous = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patterns::{Pattern, trace_file};

    fn traced(nranks: u32, layout: NodeLayout) -> Header {
        let mut h = Header::new(nranks);
        h.node_layout = Some(layout);
        h
    }

    /// The recorded node layout is read first: by slot with full nodes, or one node; round
    /// robin over several nodes says nothing the node models can use.
    #[test]
    fn an_inputs_layout_is_read_from_its_node_layout() {
        let l = |ranks, per| Layout {
            ranks,
            ranks_per_node: per,
        };
        assert_eq!(
            of_header(&traced(8, NodeLayout::block(4, 2))),
            Some(l(8, 2))
        );
        assert_eq!(of_header(&traced(7, NodeLayout::block(4, 2))), None);
        assert_eq!(
            of_header(&traced(6, NodeLayout::block(1, 6))),
            Some(l(6, 6))
        );
        let rr = NodeLayout {
            nodes: 2,
            names: Vec::new(),
            placement: Placement::RoundRobin,
        };
        assert_eq!(of_header(&traced(4, rr)), None);
        assert_eq!(of_header(&Header::new(4)), None);
    }

    fn inputs(per_node: &dyn Fn(u32) -> u32) -> Vec<Input> {
        [4u32, 8, 12, 16]
            .iter()
            .map(|&n| {
                let mut file = trace_file(Pattern::Spmd, n);
                let p = per_node(n);
                let node_of: Vec<u32> = (0..n).map(|r| r / p).collect();
                let names = (0..n / p).map(|k| format!("node{k}")).collect();
                file.header.node_layout = Some(NodeLayout::from_nodes(&node_of, names));
                Input {
                    name: format!("s.{n}.iotrex"),
                    file,
                }
            })
            .collect()
    }

    /// Through the whole extrapolation: inputs by slot at 2 ranks per node give the target its
    /// nodes by slot, without the inputs' names; inputs that each ran on one node give one
    /// node (the default shape).
    #[test]
    fn an_extrapolation_says_the_targets_layout_and_no_names() {
        let ms = crate::ModelSet::builtin();
        let x = crate::request::as_given(&inputs(&|_| 2), 64, &ms).unwrap();
        assert_eq!(x.file.header.node_layout, Some(NodeLayout::block(32, 2)));
        let x = crate::request::as_given(&inputs(&|n| n), 64, &ms).unwrap();
        assert_eq!(x.file.header.node_layout, Some(NodeLayout::block(1, 64)));
    }
}
