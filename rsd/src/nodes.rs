//! Where each rank of a run ran ([`NodeLayout`], the header's `node_layout`, minor version
//! 9): the nodes' names and the placement of the ranks on them, in constant space for the
//! placements launchers make (by slot, by node) and as runs of ranks for any other.
//!
//! Nodes are numbered in the order of their lowest rank: node 0 holds rank 0, node 1 the
//! lowest rank not on node 0, and so on. Under that numbering a rank's node is `rank /
//! per_node` when the launcher filled each node before the next (by slot, Open MPI's default
//! and `--map-by slot`) and `rank % nodes` when it dealt the ranks over the nodes in turn
//! (Open MPI's `--map-by node`, MPICH's `-rr`).

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The node layout of a run: how many nodes, their names, and which node each rank ran on.
///
/// Stored as a MessagePack array of its three fields in order (`docs/format-v2.md`, "Minor
/// version 9"); a field added later goes at the end with `#[serde(default)]` and a new minor
/// version, as header fields do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeLayout {
    /// Nodes in all (at least 1).
    pub nodes: u32,
    /// Each node's name (its hostname) in node order; empty where the names are not known
    /// (an extrapolated trace's target machine).
    pub names: Vec<String>,
    /// Which node each rank ran on.
    pub placement: Placement,
}

/// This machine's kernel, as a number: its boot id (`/proc/sys/kernel/random/boot_id`)
/// hashed, never 0. It is not namespaced, so it is the same on every node of one machine (the
/// emulated nodes of a cluster in network and UTS namespaces), and another on every other
/// machine; `None` where it cannot be read.
pub fn machine_id() -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.trim().hash(&mut h);
    Some(h.finish() | 1)
}

/// Nodes that were one machine ([`crate::Header::shared_machines`]): MPI saw them as nodes
/// (each its own host name and shared-memory domain), but they ran on one kernel, so their
/// ranks shared its CPUs. Without it, five emulated nodes of two ranks on a two-core host
/// read as one rank per core, and times fitted over them grow as if each node brought cores
/// of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedMachine {
    /// The nodes on it, by index in node order (the order of `MpiConfig::node_ranks`).
    pub nodes: Vec<u32>,
    /// The CPUs its ranks could run on (the union of their affinity masks).
    pub cpus: u32,
}

impl SharedMachine {
    /// Whether node `i` is on it.
    pub fn holds(&self, i: usize) -> bool {
        self.nodes.iter().any(|&n| n as usize == i)
    }

    /// Its nodes as ranges of indices, `0-4` or `0,2,5-6`.
    pub fn nodes_text(&self) -> String {
        let mut v = self.nodes.clone();
        v.sort_unstable();
        let mut out: Vec<String> = Vec::new();
        let mut i = 0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            out.push(if j > i {
                format!("{}-{}", v[i], v[j])
            } else {
                v[i].to_string()
            });
            i = j + 1;
        }
        out.join(",")
    }
}

/// How ranks sit on the nodes, in the node numbering of [`NodeLayout`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    /// By slot: each node filled before the next, rank `r` on node `r / per_node` (the last
    /// node may hold fewer).
    Block {
        /// Ranks on each node but the last.
        per_node: u32,
    },
    /// By node, round robin: rank `r` on node `r % nodes`.
    RoundRobin,
    /// Any other placement: runs of consecutive ranks on one node, in rank order, as (node,
    /// ranks in the run).
    Runs(Vec<(u32, u32)>),
}

impl NodeLayout {
    /// The layout of a run whose rank `r` ran on node `node_of[r]` (numbered in the order of
    /// each node's lowest rank, [`number_nodes`]), with the nodes' `names` (empty when
    /// unknown): the most compact placement that says it exactly.
    pub fn from_nodes(node_of: &[u32], names: Vec<String>) -> NodeLayout {
        let nranks = node_of.len() as u64;
        let nodes = node_of.iter().max().map_or(1, |m| m + 1);
        let per_node = node_of.iter().take_while(|&&n| n == 0).count().max(1) as u32;
        let placement = if node_of
            .iter()
            .enumerate()
            .all(|(r, &n)| u64::from(n) == r as u64 / u64::from(per_node))
        {
            Placement::Block { per_node }
        } else if node_of
            .iter()
            .enumerate()
            .all(|(r, &n)| u64::from(n) == r as u64 % u64::from(nodes))
            && u64::from(nodes) <= nranks
        {
            Placement::RoundRobin
        } else {
            let mut runs: Vec<(u32, u32)> = Vec::new();
            for &n in node_of {
                match runs.last_mut() {
                    Some((m, k)) if *m == n => *k += 1,
                    _ => runs.push((n, 1)),
                }
            }
            Placement::Runs(runs)
        };
        NodeLayout {
            nodes,
            names,
            placement,
        }
    }

    /// The layout of the ranks whose node leaders are `leaders` (a node: the ranks of one
    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` group; each rank's leader its lowest rank)
    /// and whose hosts are `hosts` (empty when unknown): each node named by its lowest rank's
    /// host. What the tracer records at `MPI_Init` and what `iotrex-replay` learns of its own
    /// launch, so that the two compare.
    pub fn from_leaders<K: PartialEq>(leaders: &[K], hosts: &[String]) -> NodeLayout {
        let node_of = number_nodes(leaders);
        let mut names: Vec<String> = Vec::new();
        for (n, h) in node_of.iter().zip(hosts) {
            if *n as usize == names.len() {
                names.push(h.clone());
            }
        }
        if names.len() != node_of.iter().max().map_or(0, |m| *m as usize + 1) {
            names.clear();
        }
        NodeLayout::from_nodes(&node_of, names)
    }

    /// The layout's shape for a reader, of a run of `nranks` ranks: `4 nodes x 2 ranks`, `1
    /// node x 4 ranks`, `2 nodes x 2 ranks by node (round robin)` when not by slot, and
    /// `3 nodes (3, 3, 2 ranks)` when the nodes hold different counts.
    pub fn shape(&self, nranks: u32) -> String {
        let nodes = match self.nodes {
            1 => "1 node".to_string(),
            n => format!("{n} nodes"),
        };
        let how = match self.placement {
            Placement::Block { .. } => String::new(),
            _ => format!(" {}", self.kind()),
        };
        match (self.ranks_per_node(nranks), self.counts(nranks)) {
            (Some(p), _) => format!("{nodes} x {p} ranks{how}"),
            (None, Some(c)) if c.len() <= 8 => {
                let c: Vec<String> = c.iter().map(u32::to_string).collect();
                format!("{nodes} ({} ranks){how}", c.join(", "))
            }
            _ => format!("{nodes}{how}"),
        }
    }

    /// Whether `other` puts every one of `nranks` ranks on the same node as this layout (the
    /// names aside: a replay runs on other hosts than the trace).
    pub fn same_placement(&self, other: &NodeLayout, nranks: u32) -> bool {
        self.nodes == other.nodes
            && (self.placement == other.placement
                || (0..nranks).all(|r| self.node_of(r, nranks) == other.node_of(r, nranks)))
    }

    /// `nodes` nodes of `per_node` ranks each, by slot, names unknown.
    pub fn block(nodes: u32, per_node: u32) -> NodeLayout {
        NodeLayout {
            nodes,
            names: Vec::new(),
            placement: Placement::Block { per_node },
        }
    }

    /// The node rank `rank` ran on, of a run of `nranks` ranks (`None` past the end).
    pub fn node_of(&self, rank: u32, nranks: u32) -> Option<u32> {
        if rank >= nranks {
            return None;
        }
        match &self.placement {
            Placement::Block { per_node } => Some(rank / (*per_node).max(1)),
            Placement::RoundRobin => Some(rank % self.nodes.max(1)),
            Placement::Runs(runs) => {
                let mut at = 0u64;
                runs.iter().find_map(|&(n, k)| {
                    at += u64::from(k);
                    (u64::from(rank) < at).then_some(n)
                })
            }
        }
    }

    /// Node `node`'s name, when known.
    pub fn name(&self, node: u32) -> Option<&str> {
        self.names.get(node as usize).map(String::as_str)
    }

    /// The ranks on each node when every node holds as many, of a run of `nranks` ranks.
    pub fn ranks_per_node(&self, nranks: u32) -> Option<u32> {
        let counts = self.counts(nranks)?;
        let first = *counts.first()?;
        counts.iter().all(|&c| c == first).then_some(first)
    }

    /// The ranks on each node, in node order; `None` for a layout that does not fit `nranks`
    /// (see [`NodeLayout::validate`]) or of more than 2^20 nodes.
    pub fn counts(&self, nranks: u32) -> Option<Vec<u32>> {
        self.validate(nranks).ok()?;
        if self.nodes > 1 << 20 {
            return None;
        }
        let mut c = vec![0u32; self.nodes as usize];
        match &self.placement {
            Placement::Block { per_node } => {
                for (i, x) in c.iter_mut().enumerate() {
                    let lo = i as u64 * u64::from(*per_node);
                    *x = (u64::from(nranks) - lo).min(u64::from(*per_node)) as u32;
                }
            }
            Placement::RoundRobin => {
                for (i, x) in c.iter_mut().enumerate() {
                    *x = nranks / self.nodes + u32::from((i as u32) < nranks % self.nodes);
                }
            }
            Placement::Runs(runs) => runs.iter().for_each(|&(n, k)| c[n as usize] += k),
        }
        Some(c)
    }

    /// What the placement is called: `by slot`, `by node (round robin)` or `other placement`.
    pub fn kind(&self) -> &'static str {
        match self.placement {
            Placement::Block { .. } => "by slot",
            Placement::RoundRobin => "by node (round robin)",
            Placement::Runs(_) => "other placement",
        }
    }

    /// Node `node`'s ranks as text (`0-3`, `1-7:2`, `0-1,4-5`), of a run of `nranks` ranks;
    /// `None` for a node past the last.
    pub fn ranks_of(&self, node: u32, nranks: u32) -> Option<String> {
        if node >= self.nodes || self.validate(nranks).is_err() {
            return None;
        }
        let range = |lo: u64, hi: u64| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        };
        Some(match &self.placement {
            Placement::Block { per_node } => {
                let lo = u64::from(node) * u64::from(*per_node);
                let hi = (lo + u64::from(*per_node)).min(u64::from(nranks)) - 1;
                range(lo, hi)
            }
            Placement::RoundRobin => {
                let last = u64::from(nranks - 1 - (nranks - 1 - node) % self.nodes);
                match last == u64::from(node) {
                    true => node.to_string(),
                    false => format!("{node}-{last}:{}", self.nodes),
                }
            }
            Placement::Runs(runs) => {
                let mut out = String::new();
                let mut at = 0u64;
                for &(n, k) in runs {
                    if n == node {
                        let sep = if out.is_empty() { "" } else { "," };
                        let _ = write!(out, "{sep}{}", range(at, at + u64::from(k) - 1));
                    }
                    at += u64::from(k);
                }
                out
            }
        })
    }

    /// Whether the layout can be the one of a run of `nranks` ranks: at least one node, names
    /// for every node or none, and a placement that puts every rank on a node and every node
    /// in the order of its lowest rank. What is wrong, in words.
    pub fn validate(&self, nranks: u32) -> Result<(), String> {
        if self.nodes == 0 {
            return Err("0 nodes".into());
        }
        if !self.names.is_empty() && self.names.len() != self.nodes as usize {
            return Err(format!(
                "{} node names for {} nodes",
                self.names.len(),
                self.nodes
            ));
        }
        if self.nodes > nranks.max(1) {
            return Err(format!("{} nodes for {nranks} ranks", self.nodes));
        }
        match &self.placement {
            Placement::Block { per_node: 0 } => Err("0 ranks per node".into()),
            Placement::Block { per_node } => {
                let need = nranks.div_ceil(*per_node);
                (need == self.nodes).then_some(()).ok_or_else(|| {
                    format!(
                        "{nranks} ranks by slot at {per_node} per node fill {need} nodes, not {}",
                        self.nodes
                    )
                })
            }
            Placement::RoundRobin => Ok(()),
            Placement::Runs(runs) => runs_fit(runs, self.nodes, nranks),
        }
    }
}

/// Whether explicit runs place `nranks` ranks on `nodes` nodes in the node numbering.
fn runs_fit(runs: &[(u32, u32)], nodes: u32, nranks: u32) -> Result<(), String> {
    let mut total = 0u64;
    let mut next = 0u32;
    for (i, &(n, k)) in runs.iter().enumerate() {
        if k == 0 {
            return Err(format!("run {i} holds no ranks"));
        }
        if n > next || n >= nodes {
            return Err(format!(
                "run {i} (ranks from {total}) is on node {n}, before any rank of node {next}"
            ));
        }
        if n == next {
            next += 1;
        }
        total += u64::from(k);
    }
    if total != u64::from(nranks) || next != nodes {
        return Err(format!(
            "runs place {total} ranks on {next} nodes, not {nranks} ranks on {nodes}"
        ));
    }
    Ok(())
}

/// Node numbers in the order of each node's first rank, from any per-rank key of the node
/// (its leader's rank, its hostname): rank `r`'s node is `number_nodes(keys)[r]`.
pub fn number_nodes<K: PartialEq>(keys: &[K]) -> Vec<u32> {
    let mut seen: Vec<&K> = Vec::new();
    keys.iter()
        .map(|k| match seen.iter().position(|s| *s == k) {
            Some(i) => i as u32,
            None => {
                seen.push(k);
                seen.len() as u32 - 1
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: u32) -> Vec<String> {
        (1..=n).map(|k| format!("node{k}")).collect()
    }

    #[test]
    fn launchers_placements_are_named_in_constant_space() {
        let l = NodeLayout::from_nodes(&[0, 0, 1, 1], names(2));
        assert_eq!(l.placement, Placement::Block { per_node: 2 });
        assert_eq!(l.kind(), "by slot");
        let l = NodeLayout::from_nodes(&[0, 1, 0, 1], names(2));
        assert_eq!(l.placement, Placement::RoundRobin);
        assert_eq!(
            (l.ranks_of(0, 4).unwrap(), l.ranks_of(1, 4).unwrap()),
            ("0-2:2".to_string(), "1-3:2".to_string())
        );
        // A last node holding fewer is still by slot.
        let l = NodeLayout::from_nodes(&[0, 0, 0, 1], Vec::new());
        assert_eq!(l.placement, Placement::Block { per_node: 3 });
        assert_eq!(l.counts(4), Some(vec![3, 1]));
        assert_eq!(l.ranks_per_node(4), None);
        // One node.
        let l = NodeLayout::from_nodes(&[0; 5], names(1));
        assert_eq!(
            (l.nodes, l.placement.clone()),
            (1, Placement::Block { per_node: 5 })
        );
        assert_eq!(l.ranks_of(0, 5).as_deref(), Some("0-4"));
    }

    #[test]
    fn other_placements_are_runs_and_every_form_gives_each_ranks_node() {
        let node_of = [0, 0, 1, 0, 2, 2];
        let l = NodeLayout::from_nodes(&node_of, names(3));
        assert_eq!(
            l.placement,
            Placement::Runs(vec![(0, 2), (1, 1), (0, 1), (2, 2)])
        );
        assert_eq!(l.ranks_of(0, 6).as_deref(), Some("0-1,3"));
        assert_eq!(l.counts(6), Some(vec![3, 1, 2]));
        for layout in [
            node_of.to_vec(),
            vec![0, 1, 2, 0, 1, 2, 0],
            vec![0, 0, 0, 1, 1, 1, 2],
        ] {
            let l = NodeLayout::from_nodes(&layout, Vec::new());
            assert_eq!(l.validate(layout.len() as u32), Ok(()));
            let back: Vec<u32> = (0..layout.len() as u32)
                .map(|r| l.node_of(r, layout.len() as u32).unwrap())
                .collect();
            assert_eq!(back, layout, "{l:?}");
        }
    }

    #[test]
    fn leaders_name_nodes_by_their_lowest_ranks_host_and_shapes_read_as_text() {
        let hosts: Vec<String> = ["a", "b", "a", "b"].map(String::from).to_vec();
        let l = NodeLayout::from_leaders(&[0, 1, 0, 1], &hosts);
        assert_eq!(
            (l.nodes, l.names.clone()),
            (2, vec!["a".into(), "b".into()])
        );
        assert_eq!(l.placement, Placement::RoundRobin);
        assert_eq!(l.shape(4), "2 nodes x 2 ranks by node (round robin)");
        let l = NodeLayout::from_leaders(&[0, 0, 2, 2], &hosts);
        assert_eq!(l.names, vec!["a".to_string(), "a".into()]);
        assert_eq!(l.shape(4), "2 nodes x 2 ranks");
        // Without the names (the gather failed), the layout still says where ranks ran.
        assert!(
            NodeLayout::from_leaders(&[0, 0, 2, 2], &[])
                .names
                .is_empty()
        );
        assert_eq!(NodeLayout::block(1, 4).shape(4), "1 node x 4 ranks");
        assert_eq!(NodeLayout::block(2, 3).shape(5), "2 nodes (3, 2 ranks)");
        // The same placement under other names, and another one.
        let named = NodeLayout::from_nodes(&[0, 0, 1, 1], names(2));
        assert!(named.same_placement(&NodeLayout::block(2, 2), 4));
        assert!(!named.same_placement(&NodeLayout::block(1, 4), 4));
        assert!(!named.same_placement(&NodeLayout::from_nodes(&[0, 1, 0, 1], Vec::new()), 4));
    }

    #[test]
    fn layouts_that_cannot_be_a_runs_are_refused_saying_why() {
        let bad = |l: NodeLayout, n: u32| l.validate(n).unwrap_err();
        assert_eq!(bad(NodeLayout::block(2, 0), 4), "0 ranks per node");
        assert!(bad(NodeLayout::block(3, 2), 4).contains("fill 2 nodes, not 3"));
        let mut l = NodeLayout::block(2, 2);
        l.names = names(3);
        assert_eq!(bad(l, 4), "3 node names for 2 nodes");
        let runs = |r: Vec<(u32, u32)>, nodes| NodeLayout {
            nodes,
            names: Vec::new(),
            placement: Placement::Runs(r),
        };
        assert!(bad(runs(vec![(1, 2), (0, 2)], 2), 4).contains("before any rank of node 0"));
        assert!(bad(runs(vec![(0, 2), (1, 1)], 2), 4).contains("place 3 ranks"));
        assert!(bad(runs(vec![(0, 4)], 2), 4).contains("on 1 nodes"));
        assert_eq!(number_nodes(&["b", "a", "b", "c"]), [0, 1, 0, 2]);
    }
}
