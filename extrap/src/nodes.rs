//! The node layout an extrapolated trace claims for its target (`Header::node_layout`): only
//! what the inputs say exactly. [`target_layout`] is the one rule; a target shape given by the
//! user (ranks per node, nodes) replaces it here.

use rsd::{Header, NodeLayout, Placement};

/// The target's node layout when the inputs say it exactly, else `None` (the trace then says
/// nothing of its nodes rather than something wrong). It is exact when every input ran by
/// slot with the same ranks per node `p` on nodes it filled, and `p` divides the target's
/// rank count: the target is then `target / p` nodes of `p` ranks by slot. Node names are not
/// known at the target and are left out. Inputs without a layout (traced before it was
/// recorded, serial programs), of one rank per node count differing, placed by node or
/// otherwise, or a target that would leave a node part-filled give `None`.
pub fn target_layout(inputs: &[&Header], target: u32) -> Option<NodeLayout> {
    let mut per_node = None;
    for h in inputs {
        let l = h.node_layout.as_ref()?;
        let Placement::Block { per_node: p } = l.placement else {
            return None;
        };
        if p == 0 || !h.nranks.is_multiple_of(p) || *per_node.get_or_insert(p) != p {
            return None;
        }
    }
    let p = per_node?;
    (target > 0 && target.is_multiple_of(p)).then(|| NodeLayout::block(target / p, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traced(nranks: u32, layout: Option<NodeLayout>) -> Header {
        let mut h = Header::new(nranks);
        h.node_layout = layout.map(|mut l| {
            l.names = (1..=l.nodes).map(|k| format!("node{k}")).collect();
            l
        });
        h
    }

    #[test]
    fn the_target_is_laid_out_only_where_the_inputs_say_it_exactly() {
        let by_slot = |nodes, p| traced(nodes * p, Some(NodeLayout::block(nodes, p)));
        let (a, b, c) = (by_slot(2, 2), by_slot(3, 2), by_slot(4, 2));
        let got = target_layout(&[&a, &b, &c], 16).unwrap();
        assert_eq!(got, NodeLayout::block(8, 2));
        assert!(got.names.is_empty(), "the target's names are not known");
        // A target that would leave a node part-filled.
        assert_eq!(target_layout(&[&a, &b, &c], 17), None);
        // Ranks per node differing: one node per input (2, 3 and 4 ranks on it).
        let (x, y) = (by_slot(1, 2), by_slot(1, 3));
        assert_eq!(target_layout(&[&x, &y], 12), None);
        // Round robin, or a layout not recorded, at any input.
        let rr = traced(
            4,
            Some(NodeLayout {
                nodes: 2,
                names: Vec::new(),
                placement: Placement::RoundRobin,
            }),
        );
        assert_eq!(target_layout(&[&a, &rr], 8), None);
        assert_eq!(target_layout(&[&a, &traced(6, None)], 8), None);
        assert_eq!(target_layout(&[], 8), None);
    }

    /// Through the whole extrapolation: inputs by slot at 2 ranks per node give the target
    /// its nodes; the largest input's layout (names and all) is never copied.
    #[test]
    fn an_extrapolation_carries_only_the_exact_layout() {
        use crate::patterns::{Pattern, trace_file};
        let inputs = |per_node: &dyn Fn(u32) -> u32| -> Vec<crate::Input> {
            [4u32, 8, 12, 16]
                .iter()
                .map(|&n| {
                    let mut file = trace_file(Pattern::Spmd, n);
                    let p = per_node(n);
                    let node_of: Vec<u32> = (0..n).map(|r| r / p).collect();
                    let names = (0..n / p).map(|k| format!("node{k}")).collect();
                    file.header.node_layout = Some(NodeLayout::from_nodes(&node_of, names));
                    crate::Input {
                        name: format!("s.{n}.iotrex"),
                        file,
                    }
                })
                .collect()
        };
        let ms = crate::ModelSet::builtin();
        let x = crate::request::as_given(&inputs(&|_| 2), 64, &ms).unwrap();
        assert_eq!(x.file.header.node_layout, Some(NodeLayout::block(32, 2)));
        // One node per input (ranks per node follow the scale): nothing is claimed.
        let x = crate::request::as_given(&inputs(&|n| n), 64, &ms).unwrap();
        assert_eq!(x.file.header.node_layout, None);
    }
}
