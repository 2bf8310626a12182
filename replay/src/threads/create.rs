//! Communicator creation: duplicates and splits (every member deposits its color and key),
//! and the creations whose members are listed (groups, intercommunicators and their merges).

use super::comm::CommObj;
use super::{Creation, INTER_UID, MERGE_KIND, ThreadsRuntime};
use rsd::mpi::UNDEFINED;
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

impl ThreadsRuntime {
    pub(super) fn create_comm(
        &mut self,
        parent: i64,
        color: i64,
        key: i64,
        newid: i64,
    ) -> Result<(), String> {
        let (pc, me) = self.comm(parent)?;
        let seq = self.created.entry(pc.uid).or_insert(0);
        *seq += 1;
        let slot_key = (pc.uid, *seq);
        let slot = {
            let mut m = self.sh.creating.lock().map_err(|_| "poisoned")?;
            m.entry(slot_key)
                .or_insert_with(|| {
                    Arc::new(Creation {
                        entries: Mutex::new(vec![None; pc.members.len()]),
                        made: Mutex::new(HashMap::new()),
                    })
                })
                .clone()
        };
        slot.entries.lock().map_err(|_| "poisoned")?[me] = Some((color, key));
        pc.barrier(&self.sh)?;
        if color != UNDEFINED && newid >= 0 {
            let entries = slot.entries.lock().map_err(|_| "poisoned")?.clone();
            let mut group: Vec<(i64, usize)> = entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.filter(|(c, _)| *c == color).map(|(_, k)| (k, i)))
                .collect();
            group.sort();
            let members: Vec<u32> = group.iter().map(|(_, i)| pc.members[*i]).collect();
            let my = group.iter().position(|(_, i)| *i == me).unwrap_or(0);
            let obj = slot
                .made
                .lock()
                .map_err(|_| "poisoned")?
                .entry(color)
                .or_insert_with(|| {
                    Arc::new(CommObj::new(
                        self.sh.next_uid.fetch_add(1, Ordering::SeqCst),
                        members,
                    ))
                })
                .clone();
            self.comms.insert(newid, (obj, my));
        }
        // Second barrier: nobody reuses the slot before everyone has read it.
        pc.barrier(&self.sh)?;
        if me == 0 {
            self.sh
                .creating
                .lock()
                .map_err(|_| "poisoned")?
                .remove(&slot_key);
        }
        Ok(())
    }

    /// Joins the communicator of the listed `members` (MPI_COMM_WORLD ranks, in order) that
    /// this call makes from `parent`, kind `kind` (a tag or one of the kinds above).
    fn join_listed(
        &mut self,
        parent_uid: u64,
        kind: i64,
        members: Vec<u32>,
    ) -> Result<(Arc<CommObj>, usize), String> {
        let me = members
            .iter()
            .position(|m| *m == self.rank)
            .ok_or_else(|| format!("rank {} is not among the members it lists", self.rank))?;
        let seen = self
            .listed_seen
            .entry((parent_uid, kind, members.clone()))
            .or_insert(0);
        *seen += 1;
        let key = (parent_uid, kind, members.clone(), *seen);
        let n = members.len();
        let mut m = self.sh.listed.lock().map_err(|_| "poisoned")?;
        let (obj, taken) = {
            let ent = m.entry(key.clone()).or_insert_with(|| {
                (
                    Arc::new(CommObj::new(
                        self.sh.next_uid.fetch_add(1, Ordering::SeqCst),
                        members,
                    )),
                    0,
                )
            });
            ent.1 += 1;
            (ent.0.clone(), ent.1)
        };
        if taken == n {
            m.remove(&key);
        }
        Ok((obj, me))
    }

    /// The communicator creations whose members are listed, and intercommunicators.
    pub(super) fn create_listed(&mut self, e: &FlatEvent) -> Result<(), String> {
        let cid = e.p(Param::Comm);
        let (pc, _) = self.comm(cid)?;
        let list: Vec<u32> =
            e.op.list(&e.params)
                .iter()
                .map(|r| u32::try_from(*r).map_err(|_| format!("member {r} is no rank")))
                .collect::<Result<_, _>>()?;
        let newid = e.p(Param::Newcomm);
        if e.op == Op::IntercommCreate {
            // Both groups build the same object: the group whose first rank is lower first.
            let local = pc.members.clone();
            let local_first = local <= list;
            let (a, b) = if local_first {
                (local, list)
            } else {
                (list, local)
            };
            let (la, lb) = (a.len(), b.len());
            let mut all = a;
            all.extend(b);
            let (obj, me) = self.join_listed(INTER_UID, e.p(Param::Tag), all)?;
            obj.barrier(&self.sh)?;
            if newid >= 0 {
                let (l, r, n) = if local_first {
                    (0, la, lb)
                } else {
                    (la, 0, la)
                };
                self.inter.insert(newid, (l, r, n));
                self.comms.insert(newid, (obj, me));
            }
            return Ok(());
        }
        let kind = if e.op == Op::IntercommMerge {
            MERGE_KIND
        } else {
            e.p(Param::Tag)
        };
        let (obj, me) = self.join_listed(pc.uid, kind, list)?;
        obj.barrier(&self.sh)?;
        if newid >= 0 {
            self.comms.insert(newid, (obj, me));
        }
        Ok(())
    }
}
