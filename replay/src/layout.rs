//! Where the replay's ranks run against where the traced ones did: the sentence the report
//! says it in ([`LayoutNote`]), and the check of `--ranks-per-node`.
//!
//! The replay issues each rank's calls as recorded, whatever its own layout: a communicator
//! the application made with `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` was recorded as the
//! split that builds the same groups (color: the traced node leader's rank) and is replayed
//! as that split, so its groups are the traced nodes' wherever the ranks now run, and every
//! later call on it (its roots, peers and counts, recorded in those groups) still fits. What
//! follows the replay's own layout is the MPI library's part: shared memory or the network
//! between two ranks, ROMIO's aggregators per node, OMPIO's grouping and its shared-file-pointer
//! component. The run values (job ids, pids in names) are filled afresh by the replay
//! (`rsd::runvalue`). A replay on another layout therefore replays the application as it ran
//! on the traced one, on the replay's machine shape; to ask how it would run on another shape,
//! extrapolate to it (`iotrex extrap --ranks-per-node`) and replay that.

use crate::error::ReplayError;
use rsd::NodeLayout;
use serde::{Deserialize, Serialize};

/// The traced layout and the replay's, and the sentence that compares them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutNote {
    /// The traced layout's shape (`2 nodes x 2 ranks`), when the trace records one.
    pub traced: Option<String>,
    /// The replay's (`1 node x 4 ranks`; with `--threads` always one node).
    pub replayed: String,
    /// Whether every rank runs on the same node as traced (names aside); `None` where the
    /// trace does not say.
    pub as_traced: Option<bool>,
    /// The sentence: `replayed on 2 nodes x 2 ranks as traced`, `traced on 2 nodes x 2 ranks,
    /// replayed on 1 node x 4 ranks`, `2 nodes x 2 ranks replayed as threads on one node`.
    pub text: String,
}

impl LayoutNote {
    /// Under MPI: the layout the replay learnt from its launch (`None` when it could not)
    /// against the trace's.
    pub fn mpi(traced: Option<&NodeLayout>, replayed: Option<&NodeLayout>, nranks: u32) -> Self {
        let t = traced.map(|l| l.shape(nranks));
        let Some(r) = replayed else {
            return LayoutNote {
                traced: t.clone(),
                replayed: "an unknown layout".into(),
                as_traced: None,
                text: format!(
                    "the replay's node layout is unknown (MPI_Comm_split_type failed){}",
                    t.map(|t| format!("; traced on {t}")).unwrap_or_default()
                ),
            };
        };
        let shape = r.shape(nranks);
        let same = traced.map(|l| l.same_placement(r, nranks));
        let text = match (&t, same) {
            (Some(_), Some(true)) => format!("replayed on {shape} as traced"),
            (Some(t), _) => format!("traced on {t}, replayed on {shape}"),
            (None, _) => format!("replayed on {shape} (the trace does not record its layout)"),
        };
        LayoutNote {
            traced: t,
            replayed: shape,
            as_traced: same,
            text,
        }
    }

    /// With `--threads`: every rank on this node.
    pub fn threads(traced: Option<&NodeLayout>, nranks: u32) -> Self {
        let one = NodeLayout::block(1, nranks.max(1));
        let t = traced.map(|l| l.shape(nranks));
        let text = match (&t, traced) {
            (Some(_), Some(l)) if l.nodes == 1 => {
                format!("replayed on {} as threads, as traced", one.shape(nranks))
            }
            (Some(t), _) => format!("{t} replayed as threads on one node"),
            (None, _) => format!(
                "replayed on {} as threads (the trace does not record its layout)",
                one.shape(nranks)
            ),
        };
        LayoutNote {
            as_traced: traced.map(|l| l.nodes == 1),
            traced: t,
            replayed: one.shape(nranks),
            text,
        }
    }
}

/// Checks `--ranks-per-node per_node` against a run of `nranks` ranks whose layout is
/// `replayed` (`None` under MPI when it could not be learnt; with `--threads`, one node):
/// `per_node` must divide `nranks`, and the ranks must sit `per_node` to a node by slot.
pub fn check_wanted(
    per_node: u32,
    nranks: u32,
    replayed: Option<&NodeLayout>,
    threads: bool,
) -> Result<(), ReplayError> {
    if per_node == 0 || !nranks.is_multiple_of(per_node) {
        return Err(ReplayError::RanksPerNode {
            per_node,
            ranks: nranks,
        });
    }
    let want = NodeLayout::block(nranks / per_node, per_node);
    let bad = |got: String, how: String| ReplayError::Layout {
        per_node,
        want: want.shape(nranks),
        got,
        how,
    };
    if threads {
        return match want.nodes {
            1 => Ok(()),
            _ => Err(bad(
                format!("{} as threads", NodeLayout::block(1, nranks).shape(nranks)),
                format!(
                    "; --threads runs every rank on this node: replay under mpirun on {} nodes",
                    want.nodes
                ),
            )),
        };
    }
    match replayed {
        Some(r) if r.same_placement(&want, nranks) => Ok(()),
        Some(r) => Err(bad(
            format!("{} as launched", r.shape(nranks)),
            format!(
                "; place {per_node} ranks on each node, by slot (Open MPI: a hostfile with \
                 slots={per_node}, or --map-by ppr:{per_node}:node)"
            ),
        )),
        None => Err(bad(
            "a layout it could not learn (MPI_Comm_split_type failed)".into(),
            String::new(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_says_as_traced_or_both_layouts() {
        let two = NodeLayout::block(2, 2);
        let one = NodeLayout::block(1, 4);
        let n = LayoutNote::mpi(Some(&two), Some(&two), 4);
        assert_eq!(n.text, "replayed on 2 nodes x 2 ranks as traced");
        assert_eq!(n.as_traced, Some(true));
        let n = LayoutNote::mpi(Some(&two), Some(&one), 4);
        assert_eq!(
            n.text,
            "traced on 2 nodes x 2 ranks, replayed on 1 node x 4 ranks"
        );
        assert_eq!(n.as_traced, Some(false));
        let n = LayoutNote::threads(Some(&NodeLayout::block(8, 2)), 16);
        assert_eq!(n.text, "8 nodes x 2 ranks replayed as threads on one node");
        assert!(
            LayoutNote::threads(None, 4)
                .text
                .contains("does not record")
        );
    }

    #[test]
    fn ranks_per_node_is_checked_against_the_launch() {
        let two = NodeLayout::block(2, 2);
        assert!(check_wanted(2, 4, Some(&two), false).is_ok());
        let e = check_wanted(3, 4, Some(&two), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--ranks-per-node 3 does not divide"), "{e}");
        let e = check_wanted(4, 4, Some(&two), false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runs on 2 nodes x 2 ranks as launched, not 1 node x 4"),
            "{e}"
        );
        assert!(check_wanted(4, 4, None, true).is_ok());
        let e = check_wanted(2, 4, None, true).unwrap_err().to_string();
        assert!(e.contains("--threads runs every rank on this node"), "{e}");
    }
}
