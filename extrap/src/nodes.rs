//! The node layout of the inputs and of the target: how many consecutive ranks each node
//! holds. A scale is a rank count and its ranks per node; the node models of the `models`
//! crate (`rank/ppn`, `rank%ppn`, the node leader) are fitted with each input's ranks per node
//! and evaluated with the target's, and the output's header says the target's layout.
//!
//! The inputs' layout is read from the header's `mpi_config` (`node_ranks`, `nodes_contiguous`)
//! alone, in one place ([`of_header`]).

use crate::Input;
use crate::error::ExtrapError;
use rsd::format::Header;

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
/// the same number of ranks, placed by block (or a single node). `None` for traces without
/// the MPI configuration, with nodes of different sizes, or with ranks dealt round-robin.
pub fn of_header(h: &Header) -> Option<Layout> {
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

/// `mc` saying the target's layout: `layout`'s nodes, placed by block.
pub(crate) fn set_layout(mc: &mut rsd::MpiConfig, layout: Layout) {
    mc.node_ranks = vec![(layout.ranks_per_node, layout.nodes())];
    mc.nodes_contiguous = true;
}
