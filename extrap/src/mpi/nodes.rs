//! The MPI library's node communicators as a library model: `MPI_Comm_split_type(SHARED)`
//! groups the ranks of each node, so its color (the node leader's rank, as the tracer records
//! it) and every value on the communicator it makes (the rank on the node, the node's size)
//! follow the node layout. Over inputs on several nodes the node models of the fit take them
//! (`rank/ppn`, `rank%ppn`, `ppn*(rank/ppn)`, each input with its own ranks per node, the
//! target with its own); over inputs that all ran on one node those values look like
//! functions of the rank alone, and a target of several nodes is refused, naming what no
//! input shows.

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
            if !inputs.is_empty() && inputs.iter().all(one_node) {
                if let Some(site) = inputs.iter().find_map(|i| node_split(&i.file.trace.nodes)) {
                    return Err(ExtrapError::OneNodeInputs {
                        target: target.to_string(),
                        what: format!(
                            "which ranks share a node: {site} groups the ranks of each node \
                             (its color is the node's first rank), and the values on the \
                             communicator it makes follow the nodes"
                        ),
                        ppn: target.ranks_per_node,
                    });
                }
            }
        }
        inner(cx, inputs, stage)
    }
}

/// The first `MPI_Comm_split_type` of `nodes` (at any depth), described for messages.
fn node_split(nodes: &[Node]) -> Option<String> {
    nodes.iter().find_map(|n| match &n.kind {
        NodeKind::Event(e) if e.op == rsd::Op::CommSplitType => Some(crate::describe_node(n)),
        NodeKind::Event(e) => node_split(&e.children),
        NodeKind::Loop(l) => node_split(&l.body),
    })
}
