//! Communicators rebuilt from the recorded creations, the way MPI builds them.
//!
//! A rank records each communicator creation with its local ids (the parent, the new one)
//! and the values that decide the members: a split's color and key, a dup (a split of one
//! color that keeps the parent's order), a listed group's MPI_COMM_WORLD ranks, an
//! intercommunicator's remote group. The k-th creation on a communicator by each of its
//! members forms the new ones: by color, ordered by key, then by the parent's order.
//! Readers that need to know who a communicator holds (replay's message matching, the
//! collective-I/O derivation's "is this file opened on every rank, in the world's order")
//! rebuild them here, from each rank's creations in call order.

use crate::mpi::{COMM_SELF, COMM_WORLD, UNDEFINED};
use crate::op::{Creation, Op, Param};
use std::collections::{BTreeMap, HashMap};

/// A rebuilt communicator: its members (world ranks, in communicator order). An
/// intercommunicator's members are its two groups, one after the other, the first `inter`
/// ranks being the first group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comm {
    /// World ranks, in communicator order.
    pub members: Vec<u32>,
    /// For an intercommunicator, the size of its first group.
    pub inter: Option<usize>,
}

impl Comm {
    fn intra(members: Vec<u32>) -> Comm {
        Comm {
            members,
            inter: None,
        }
    }

    /// The ranks a member at index `me` addresses as peers (the remote group of an
    /// intercommunicator) and its rank among its own group.
    pub fn peers_of(&self, me: usize) -> (&[u32], usize) {
        match self.inter {
            Some(a) if me < a => (&self.members[a..], me),
            Some(a) => (&self.members[..a], me - a),
            None => (&self.members, me),
        }
    }

    /// Whether this is an intracommunicator of all `n` world ranks in the world's order (the
    /// world, a duplicate of it, a split of it by one color with keys in rank order).
    pub fn is_world_order(&self, n: u32) -> bool {
        self.inter.is_none()
            && self.members.len() == n as usize
            && self.members.iter().enumerate().all(|(i, &m)| i as u32 == m)
    }
}

/// One recorded creation, as the creating rank recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Made {
    /// A split: parent id, color, key, new id; a dup's key (the rank's place in its parent) is
    /// None, known once the parent is rebuilt.
    Split(i64, i64, Option<i64>, i64),
    /// Listed members (MPI_COMM_WORLD ranks, in order): parent id, tag (or kind), members,
    /// new id.
    Listed(i64, i64, Vec<u32>, i64),
    /// An intercommunicator: local communicator id, tag, remote group, new id.
    Inter(i64, i64, Vec<u32>, i64),
}

impl Made {
    fn parent(&self) -> i64 {
        match self {
            Made::Split(p, ..) | Made::Listed(p, ..) | Made::Inter(p, ..) => *p,
        }
    }

    /// The creation a call of `op` with `params` makes, if it creates a communicator.
    pub fn of(op: Op, params: &[i64]) -> Option<Made> {
        let list = || -> Vec<u32> {
            op.list(params)
                .iter()
                .map(|r| u32::try_from(*r).unwrap_or(u32::MAX))
                .collect()
        };
        let p = |q: Param| op.param(params, q);
        let (comm, new) = (p(Param::Comm), p(Param::Newcomm));
        match op.creation()? {
            // A dup is the split with one color that keeps the parent's order.
            Creation::Dup => Some(Made::Split(comm, 0, None, new)),
            Creation::Split => Some(Made::Split(comm, p(Param::Color), Some(p(Param::Key)), new)),
            Creation::Members => {
                let kind = op.get(params, Param::Tag).unwrap_or(MERGE_KIND);
                Some(Made::Listed(comm, kind, list(), new))
            }
            Creation::Intercomm => Some(Made::Inter(comm, p(Param::Tag), list(), new)),
        }
    }
}

/// The tag slot of an `MPI_Intercomm_merge` among the listed creations (no tag of its own).
const MERGE_KIND: i64 = i64::MIN;

/// Where a rank's local communicator id leads: the communicator and the rank's place in it.
pub type Local = HashMap<i64, (usize, usize)>;

/// Every communicator a run creates.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    /// The communicators: 0 is the world, 1..=n each rank's MPI_COMM_SELF.
    pub comms: Vec<Comm>,
    /// Per rank, its local ids (as last created) and where they lead.
    pub local: Vec<Local>,
    /// Per rank, per creation in its order: the communicator it joined (None for a split with
    /// `MPI_UNDEFINED` or a creation left incomplete).
    pub joined: Vec<Vec<Option<usize>>>,
}

impl Rebuilt {
    /// How a report names communicator `cid`.
    pub fn name(&self, cid: usize) -> String {
        if cid == 0 {
            "MPI_COMM_WORLD".to_string()
        } else {
            format!("a communicator of {} ranks", self.comms[cid].members.len())
        }
    }
}

/// Each member's (color, key, new local id, index of the creation in its rank's list) of
/// one creation on one communicator.
type Slot = Vec<Option<(i64, i64, i64, usize)>>;

/// The communicators and ids of a run of `n` ranks before any creation.
pub fn initial(n: u32) -> Rebuilt {
    let mut comms = vec![Comm::intra((0..n).collect())];
    let mut local: Vec<Local> = (0..n)
        .map(|r| {
            let mut m = Local::new();
            m.insert(COMM_WORLD, (0, r as usize));
            m
        })
        .collect();
    for (r, l) in local.iter_mut().enumerate() {
        comms.push(Comm::intra(vec![r as u32]));
        l.insert(COMM_SELF, (comms.len() - 1, 0));
    }
    Rebuilt {
        comms,
        local,
        joined: vec![Vec::new(); n as usize],
    }
}

/// Rebuilds the communicators of a run of `todo.len()` ranks from each rank's creations in
/// call order. The error says which creation cannot be completed (members that never join
/// it, a parent no recorded call created): MPI would wait in it forever.
pub fn rebuild(todo: &[Vec<Made>]) -> Result<Rebuilt, String> {
    rebuild_with(todo, true)
}

/// [`rebuild`] of what can be rebuilt: a creation on a communicator no recorded call created
/// (one made inside a call whose calls are not in `todo`) is skipped, with the creations on
/// what it makes, and a creation some members never made joins nothing; the rest is as
/// [`rebuild`] makes it.
pub fn rebuild_partial(todo: &[Vec<Made>]) -> Rebuilt {
    match rebuild_with(todo, false) {
        Ok(b) => b,
        // Not strict: every error is one of the checks `strict` guards, but a listed
        // creation that does not include its rank leaves it out of the rebuild.
        Err(_) => initial(todo.len() as u32),
    }
}

fn rebuild_with(todo: &[Vec<Made>], strict: bool) -> Result<Rebuilt, String> {
    let n = todo.len() as u32;
    let mut out = initial(n);
    out.joined = todo.iter().map(|t| vec![None; t.len()]).collect();
    let Rebuilt {
        comms,
        local,
        joined,
    } = &mut out;
    let mut next = vec![0usize; n as usize];
    // (communicator, creation number) -> each member's (color, key, new local id, index).
    let mut pending: HashMap<(usize, usize), Slot> = HashMap::new();
    let mut made: HashMap<(u32, usize), usize> = HashMap::new();
    // Listed creations: (parent or the two groups, tag, members) -> occurrences at each rank,
    // and (key, occurrence) -> (communicator, members that joined).
    type ListKey = (Vec<u32>, i64, Vec<u32>);
    let mut list_seen: HashMap<(u32, ListKey), usize> = HashMap::new();
    let mut listed: BTreeMap<(ListKey, usize), (usize, usize)> = BTreeMap::new();
    loop {
        let mut progress = false;
        for r in 0..n as usize {
            while let Some(t) = todo[r].get(next[r]) {
                let Some(&(cid, me)) = local[r].get(&t.parent()) else {
                    break;
                };
                let (color, key, new) = match t {
                    Made::Split(_, c, k, nw) => (*c, *k, *nw),
                    Made::Listed(_, tag, members, nw) | Made::Inter(_, tag, members, nw) => {
                        let inter = matches!(t, Made::Inter(..));
                        // Both groups of an intercommunicator name the same one: the group
                        // whose first rank is lower first.
                        let (members, split) = if inter {
                            let mine = comms[cid].members.clone();
                            let (a, b) = if mine <= *members {
                                (mine, members.clone())
                            } else {
                                (members.clone(), mine)
                            };
                            let la = a.len();
                            (a.into_iter().chain(b).collect::<Vec<u32>>(), Some(la))
                        } else {
                            (members.clone(), None)
                        };
                        let scope = if inter {
                            Vec::new()
                        } else {
                            comms[cid].members.clone()
                        };
                        let k: ListKey = (scope, *tag, members.clone());
                        let Some(pos) = members.iter().position(|m| *m == r as u32) else {
                            return Err(format!(
                                "rank {r}'s {} lists members {:?} that do not include it",
                                if inter {
                                    "MPI_Intercomm_create"
                                } else {
                                    "communicator creation"
                                },
                                &members[..members.len().min(8)]
                            ));
                        };
                        let occ = list_seen.entry((r as u32, k.clone())).or_insert(0);
                        *occ += 1;
                        let ent = listed.entry((k, *occ)).or_insert_with(|| {
                            comms.push(Comm {
                                members,
                                inter: split,
                            });
                            (comms.len() - 1, 0)
                        });
                        ent.1 += 1;
                        if *nw >= 0 {
                            local[r].insert(*nw, (ent.0, pos));
                        }
                        joined[r][next[r]] = Some(ent.0);
                        next[r] += 1;
                        progress = true;
                        continue;
                    }
                };
                let seq = made.entry((r as u32, cid)).or_insert(0);
                let slot = pending
                    .entry((cid, *seq))
                    .or_insert_with(|| vec![None; comms[cid].members.len()]);
                *seq += 1;
                slot[me] = Some((color, key.unwrap_or(me as i64), new, next[r]));
                next[r] += 1;
                progress = true;
                if slot.iter().all(Option::is_some) {
                    let entries: Vec<(i64, i64, i64, usize)> =
                        slot.iter().flatten().copied().collect();
                    let parent_members = comms[cid].members.clone();
                    let mut by_color: BTreeMap<i64, Vec<(i64, usize)>> = BTreeMap::new();
                    for (i, (c, k, _, _)) in entries.iter().enumerate() {
                        if *c != UNDEFINED {
                            by_color.entry(*c).or_default().push((*k, i));
                        }
                    }
                    let parent_inter = comms[cid].inter;
                    for (_, mut group) in by_color {
                        group.sort();
                        let id = comms.len();
                        // A copy of an intercommunicator (a dup: every member, in order) is
                        // one too.
                        let whole = group.len() == parent_members.len()
                            && group.iter().enumerate().all(|(p, (_, i))| p == *i);
                        comms.push(Comm {
                            members: group.iter().map(|(_, i)| parent_members[*i]).collect(),
                            inter: parent_inter.filter(|_| whole),
                        });
                        for (pos, (_, i)) in group.iter().enumerate() {
                            let (_, _, newid, at) = entries[*i];
                            let member = parent_members[*i] as usize;
                            if newid >= 0 {
                                local[member].insert(newid, (id, pos));
                            }
                            joined[member][at] = Some(id);
                        }
                    }
                }
            }
        }
        if progress {
            continue;
        }
        // No rank can go on. Without `strict`, each rank's next creation on a communicator
        // it does not know (its parent was made where `todo` does not see, or by a split
        // still waiting for members that are themselves stuck) is skipped, and the rounds
        // go on.
        let mut skipped = false;
        if !strict {
            for r in 0..n as usize {
                if todo[r]
                    .get(next[r])
                    .is_some_and(|t| !local[r].contains_key(&t.parent()))
                {
                    next[r] += 1;
                    skipped = true;
                }
            }
        }
        if !skipped {
            break;
        }
    }
    if !strict {
        return Ok(out);
    }
    // A creation some members never made: MPI would wait in it forever.
    let mut incomplete: Vec<(&(usize, usize), &Slot)> = pending
        .iter()
        .filter(|(_, slot)| !slot.iter().all(Option::is_some))
        .collect();
    incomplete.sort_by_key(|(k, _)| **k);
    if let Some(&(&(cid, _), slot)) = incomplete.first() {
        let members = &out.comms[cid].members;
        let who = slot.iter().position(Option::is_some).unwrap_or(0);
        let missing: Vec<String> = slot
            .iter()
            .zip(members)
            .filter(|(s, _)| s.is_none())
            .take(8)
            .map(|(_, m)| m.to_string())
            .collect();
        return Err(format!(
            "rank {} creates a communicator from {}, which ranks {} never join",
            members[who],
            out.name(cid),
            missing.join(", ")
        ));
    }
    // A listed creation some members never made.
    if let Some((cid, joined)) = listed
        .values()
        .find(|(cid, joined)| *joined < out.comms[*cid].members.len())
    {
        let m = &out.comms[*cid].members;
        return Err(format!(
            "only {joined} of the {} ranks of a communicator (ranks {}) create it",
            m.len(),
            m.iter()
                .take(8)
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // A creation on a communicator that was never created for that rank.
    if let Some(r) = (0..n as usize).find(|&r| next[r] < todo[r].len()) {
        return Err(format!(
            "rank {r} creates a communicator from its communicator {}, which no recorded call created",
            todo[r][next[r]].parent()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_of_one_color_in_rank_order_is_the_world_and_a_reversed_one_is_not() {
        // Rank r: split of the world, color 0, key r (IOR's MPI_Comm_create of all ranks is
        // recorded so); then a split with keys reversed; then a dup of the first.
        let todo: Vec<Vec<Made>> = (0..4i64)
            .map(|r| {
                vec![
                    Made::Split(COMM_WORLD, 0, Some(r), 10),
                    Made::Split(COMM_WORLD, 0, Some(-r), 11),
                    Made::Split(10, 0, None, 12),
                ]
            })
            .collect();
        let b = rebuild(&todo).expect("complete");
        for r in 0..4 {
            let [a, rev, dup] = [0, 1, 2].map(|k| b.joined[r][k].expect("joined"));
            assert!(b.comms[a].is_world_order(4));
            assert!(!b.comms[rev].is_world_order(4));
            assert_eq!(b.comms[rev].members, vec![3, 2, 1, 0]);
            assert!(b.comms[dup].is_world_order(4));
        }
    }

    #[test]
    fn two_colors_make_two_communicators_and_undefined_joins_none() {
        let todo: Vec<Vec<Made>> = (0..4i64)
            .map(|r| {
                let color = if r == 3 { UNDEFINED } else { r % 2 };
                vec![Made::Split(COMM_WORLD, color, Some(0), 7)]
            })
            .collect();
        let b = rebuild(&todo).expect("complete");
        assert_eq!(b.joined[3][0], None);
        let even = b.joined[0][0].expect("joined");
        assert_eq!(b.joined[2][0], Some(even));
        assert_eq!(b.comms[even].members, vec![0, 2]);
        assert_eq!(b.comms[b.joined[1][0].expect("joined")].members, vec![1]);
    }

    #[test]
    fn a_partial_rebuild_skips_creations_on_unknown_communicators() {
        // Each rank first splits a communicator made where the walk does not see (id 99),
        // then the one that made (id 100), then dups the world.
        let todo: Vec<Vec<Made>> = (0..3i64)
            .map(|r| {
                vec![
                    Made::Split(99, 0, Some(r), 100),
                    Made::Split(100, 0, None, 101),
                    Made::Split(COMM_WORLD, 0, None, 102),
                ]
            })
            .collect();
        assert!(rebuild(&todo).is_err());
        let b = rebuild_partial(&todo);
        for r in 0..3 {
            assert_eq!(b.joined[r][..2], [None, None]);
            let dup = b.joined[r][2].expect("the dup of the world is rebuilt");
            assert!(b.comms[dup].is_world_order(3));
        }
    }

    #[test]
    fn a_creation_some_members_never_make_is_named() {
        let todo = vec![vec![Made::Split(COMM_WORLD, 0, None, 5)], Vec::new()];
        let e = rebuild(&todo).expect_err("incomplete");
        assert!(e.contains("ranks 1 never join"), "{e}");
    }
}
