//! Sizes of datatypes by the tracer's symbolic ids, so MPI-IO offsets in etype units and
//! counts of derived types convert to bytes.
//!
//! Predefined types have the ids the tracer gives them (its `TYPES` table, in Open MPI's order
//! of `ompi_mpi_*` globals); derived types are numbered from 1000 at their constructor, whose
//! recorded arguments give their size here.

use crate::engine::param;
use rsd::op::Op;
use rsd::trace::FlatEvent;
use std::collections::HashMap;

/// Sizes of the tracer's predefined datatype ids 0.. (datatype_null, char, signed_char, ...).
const PREDEFINED: &[i64] = &[
    0, 1, 1, 1, 1, 2, 2, 4, 4, 8, 8, 8, 8, 4, 8, 16, 4, 1, 1, 1, 2, 2, 4, 4, 8, 8, 8, 8, 8, 1, 8,
    16, 32, 8, 12, 12, 8, 6, 20, 1, 4, 4, 8, 0, 0,
];

/// Datatype sizes known to one rank.
#[derive(Debug, Default, Clone)]
pub struct Types {
    derived: HashMap<i64, i64>,
}

impl Types {
    /// Size in bytes of datatype `id`, 1 when unknown (a byte stream).
    pub fn size(&self, id: i64) -> i64 {
        if let Some(s) = self.derived.get(&id) {
            return *s;
        }
        match usize::try_from(id).ok().and_then(|i| PREDEFINED.get(i)) {
            Some(s) if *s > 0 => *s,
            _ => 1,
        }
    }

    /// Records the size of a datatype built by `e`, if `e` builds one.
    pub fn track(&mut self, e: &FlatEvent) {
        let p = &e.params;
        let n = param(e, "count").max(0);
        let size = match e.op {
            Op::TypeContiguous => n * self.size(param(e, "oldtype")),
            Op::TypeVector | Op::TypeHvector => {
                n * param(e, "blocklength") * self.size(param(e, "oldtype"))
            }
            Op::TypeIndexed => {
                let bl: i64 = p.iter().skip(3).take(n as usize).sum();
                bl * self.size(param(e, "oldtype"))
            }
            Op::TypeCreateSubarray => {
                let nd = param(e, "ndims").max(0) as usize;
                let sub: i64 = p.iter().skip(4 + nd).take(nd).product();
                sub * self.size(param(e, "oldtype"))
            }
            Op::TypeCreateStruct => {
                let n = n as usize;
                let bl = p.iter().skip(2).take(n);
                let ty = p.iter().skip(2 + 2 * n).take(n);
                bl.zip(ty).map(|(b, t)| b * self.size(*t)).sum()
            }
            Op::TypeCreateResized => self.size(param(e, "oldtype")),
            _ => return,
        };
        self.derived.insert(param(e, "newtype"), size);
    }
}
