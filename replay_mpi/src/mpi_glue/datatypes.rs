//! Datatypes rebuilt from the trace's constructor chains, made of bytes.

use super::{MpiRuntime, check};
use mpi::ffi;
use replay::types::Types;
use rsd::op::{Op, Param};
use std::os::raw::c_int;

impl MpiRuntime {
    /// The MPI datatype for symbolic type `id`, rebuilt from its recorded constructor chain and
    /// committed. Predefined and unknown types become contiguous bytes of their size, so every
    /// rebuilt type is made of bytes and agrees with the byte etype and buffers of the replay.
    pub(super) fn dtype(
        &mut self,
        types: &Types,
        id: i64,
        depth: u32,
    ) -> Result<ffi::MPI_Datatype, String> {
        if let Some(t) = self.dtypes.get(&id) {
            return Ok(*t);
        }
        if depth > 64 {
            return Err(format!(
                "datatype {id} nests more than 64 constructors deep"
            ));
        }
        let u8t = self.p.u8;
        let mut nt: ffi::MPI_Datatype = u8t;
        let Some((op, prm)) = types.ctor(id) else {
            let s = types.size(id);
            if s == 1 {
                return Ok(u8t);
            }
            // SAFETY: a predefined type and a valid out-parameter.
            check(
                unsafe { ffi::MPI_Type_contiguous(cint(s), u8t, &mut nt) },
                "MPI_Type_contiguous",
            )?;
            return self.commit(id, nt);
        };
        let prm = prm.to_vec();
        let c = Ctor {
            types,
            id,
            op,
            prm: &prm,
            depth,
        };
        let rc = match op {
            Op::TypeContiguous
            | Op::TypeVector
            | Op::TypeHvector
            | Op::TypeDup
            | Op::TypeCreateResized => self.strided(&c, &mut nt)?,
            Op::TypeIndexed
            | Op::TypeCreateHindexed
            | Op::TypeCreateIndexedBlock
            | Op::TypeCreateHindexedBlock
            | Op::TypeCreateStruct => self.indexed(&c, &mut nt)?,
            Op::TypeCreateSubarray => self.subarray(&c, &mut nt)?,
            Op::TypeCreateDarray => self.darray(&c, &mut nt)?,
            _ => return Ok(u8t),
        };
        check(rc, &format!("{} rebuilding datatype {id}", op.name()))?;
        self.commit(id, nt)
    }

    /// The old type of constructor `c` at parameter `i`, rebuilt one level deeper.
    fn old(&mut self, c: &Ctor, i: usize) -> Result<ffi::MPI_Datatype, String> {
        self.dtype(c.types, c.at(i), c.depth + 1)
    }

    /// The constructors of one old type and a few numbers: contiguous, (h)vector, dup,
    /// resized. Returns MPI's return code; the new type is in `nt`.
    fn strided(&mut self, c: &Ctor, nt: &mut ffi::MPI_Datatype) -> Result<c_int, String> {
        let at = |i: usize| c.at(i);
        Ok(match c.op {
            Op::TypeContiguous => {
                let old = self.old(c, 1)?;
                // SAFETY: a committed or predefined old type and a valid out-parameter.
                unsafe { ffi::MPI_Type_contiguous(cint(at(0)), old, nt) }
            }
            Op::TypeVector => {
                let old = self.old(c, 3)?;
                // SAFETY: as above.
                unsafe { ffi::MPI_Type_vector(cint(at(0)), cint(at(1)), cint(at(2)), old, nt) }
            }
            Op::TypeHvector => {
                let old = self.old(c, 3)?;
                // SAFETY: as above.
                unsafe {
                    ffi::MPI_Type_create_hvector(
                        cint(at(0)),
                        cint(at(1)),
                        at(2) as ffi::MPI_Aint,
                        old,
                        nt,
                    )
                }
            }
            Op::TypeDup => {
                let old = self.old(c, 0)?;
                // SAFETY: an old type and a valid out-parameter.
                unsafe { ffi::MPI_Type_dup(old, nt) }
            }
            _ => {
                let old = self.old(c, 0)?;
                // SAFETY: an old type and a valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_resized(
                        old,
                        at(1) as ffi::MPI_Aint,
                        at(2) as ffi::MPI_Aint,
                        nt,
                    )
                }
            }
        })
    }

    /// The constructors of per-block arrays: indexed, hindexed, their block forms, struct.
    /// Returns MPI's return code; the new type is in `nt`.
    fn indexed(&mut self, c: &Ctor, nt: &mut ffi::MPI_Datatype) -> Result<c_int, String> {
        let at = |i: usize| c.at(i);
        let arr = |from: usize, n: usize| c.ints(from, n);
        let aints = |from: usize, n: usize| -> Vec<ffi::MPI_Aint> {
            (0..n).map(|i| at(from + i) as ffi::MPI_Aint).collect()
        };
        let n = at(0).max(0) as usize;
        Ok(match c.op {
            Op::TypeIndexed => {
                let old = self.old(c, 1)?;
                let (bl, ds) = (arr(3, n), arr(3 + n, n));
                // SAFETY: two arrays of `n` ints that outlive the call, an old type and a
                // valid out-parameter.
                unsafe { ffi::MPI_Type_indexed(n as c_int, bl.as_ptr(), ds.as_ptr(), old, nt) }
            }
            Op::TypeCreateHindexed => {
                let old = self.old(c, 1)?;
                let (bl, ds) = (arr(3, n), aints(3 + n, n));
                // SAFETY: two arrays of `n` entries that outlive the call, an old type and a
                // valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_hindexed(n as c_int, bl.as_ptr(), ds.as_ptr(), old, nt)
                }
            }
            Op::TypeCreateIndexedBlock => {
                let old = self.old(c, 2)?;
                let ds = arr(4, n);
                // SAFETY: an array of `n` ints that outlives the call, an old type and a valid
                // out-parameter.
                unsafe {
                    ffi::MPI_Type_create_indexed_block(
                        n as c_int,
                        cint(at(1)),
                        ds.as_ptr(),
                        old,
                        nt,
                    )
                }
            }
            Op::TypeCreateHindexedBlock => {
                let old = self.old(c, 2)?;
                let ds = aints(4, n);
                // SAFETY: as above, with byte displacements.
                unsafe {
                    ffi::MPI_Type_create_hindexed_block(
                        n as c_int,
                        cint(at(1)),
                        ds.as_ptr(),
                        old,
                        nt,
                    )
                }
            }
            _ => {
                let (bl, ds) = (arr(2, n), aints(2 + n, n));
                let mut ts = Vec::with_capacity(n);
                for i in 0..n {
                    ts.push(self.old(c, 2 + 2 * n + i)?);
                }
                // SAFETY: three arrays of `n` entries that outlive the call and a valid
                // out-parameter.
                unsafe {
                    ffi::MPI_Type_create_struct(
                        n as c_int,
                        bl.as_ptr(),
                        ds.as_ptr(),
                        ts.as_ptr(),
                        nt,
                    )
                }
            }
        })
    }

    /// `MPI_Type_create_subarray` as recorded. Returns MPI's return code; the new type is in
    /// `nt`.
    fn subarray(&mut self, c: &Ctor, nt: &mut ffi::MPI_Datatype) -> Result<c_int, String> {
        let nd = c.at(0).max(0) as usize;
        let old = self.old(c, 2)?;
        // Issue this MPI's own constant for the stored order.
        let order = order(rsd::mpi::order_is_fortran(c.at(1)));
        let (sz, sub, st) = (c.ints(4, nd), c.ints(4 + nd, nd), c.ints(4 + 2 * nd, nd));
        // SAFETY: three arrays of `nd` ints that outlive the call, an old type and a valid
        // out-parameter.
        Ok(unsafe {
            ffi::MPI_Type_create_subarray(
                nd as c_int,
                sz.as_ptr(),
                sub.as_ptr(),
                st.as_ptr(),
                order,
                old,
                nt,
            )
        })
    }

    /// `MPI_Type_create_darray` as recorded: refused here as the file table refuses it (MPI
    /// would abort the job), then issued with the recorded size and rank, whatever the
    /// replay's rank count. Returns MPI's return code; the new type is in `nt`.
    fn darray(&mut self, c: &Ctor, nt: &mut ffi::MPI_Datatype) -> Result<c_int, String> {
        use filetable::darray::{Darray, Distrib};
        let d = Darray::parse(c.prm).map_err(|e| format!("rebuilding datatype {}: {e}", c.id))?;
        let nd = d.dims.len();
        let old = self.dtype(c.types, d.oldtype, c.depth + 1)?;
        let order = order(d.fortran);
        // This MPI's own constants for the stored distributions.
        let fixed = c.op.params().len();
        let distribs: Vec<c_int> = d
            .dims
            .iter()
            .map(|dim| match dim.distrib {
                Distrib::Block(_) => ffi::MPI_DISTRIBUTE_BLOCK as c_int,
                Distrib::Cyclic(_) => ffi::MPI_DISTRIBUTE_CYCLIC as c_int,
                Distrib::None => ffi::MPI_DISTRIBUTE_NONE as c_int,
            })
            .collect();
        let dargs: Vec<c_int> = (0..nd)
            .map(|k| match c.at(fixed + 2 * nd + k) {
                rsd::mpi::distribute::DFLT_DARG => ffi::MPI_DISTRIBUTE_DFLT_DARG as c_int,
                v => cint(v),
            })
            .collect();
        let (gs, ps) = (c.ints(fixed, nd), c.ints(fixed + 3 * nd, nd));
        // SAFETY: four arrays of `nd` ints that outlive the call, an old type and a valid
        // out-parameter.
        Ok(unsafe {
            ffi::MPI_Type_create_darray(
                cint(c.op.param(c.prm, Param::Size)),
                cint(c.op.param(c.prm, Param::Rank)),
                nd as c_int,
                gs.as_ptr(),
                distribs.as_ptr(),
                dargs.as_ptr(),
                ps.as_ptr(),
                order,
                old,
                nt,
            )
        })
    }

    pub(super) fn commit(
        &mut self,
        id: i64,
        mut nt: ffi::MPI_Datatype,
    ) -> Result<ffi::MPI_Datatype, String> {
        // SAFETY: a datatype this runtime just created.
        check(unsafe { ffi::MPI_Type_commit(&mut nt) }, "MPI_Type_commit")?;
        self.dtypes.insert(id, nt);
        Ok(nt)
    }
}

/// One recorded constructor call: what rebuilding its type reads.
struct Ctor<'a> {
    types: &'a Types,
    /// The type it makes.
    id: i64,
    op: Op,
    /// Its recorded parameters.
    prm: &'a [i64],
    /// How deep in the chain of constructors it is.
    depth: u32,
}

impl Ctor<'_> {
    /// Parameter `i`, 0 where the recording is short.
    fn at(&self, i: usize) -> i64 {
        self.prm.get(i).copied().unwrap_or(0)
    }

    /// Parameters `from..from + n` as C ints.
    fn ints(&self, from: usize, n: usize) -> Vec<c_int> {
        (0..n).map(|i| cint(self.at(from + i))).collect()
    }
}

/// `v` as a C int, saturated at its bounds.
fn cint(v: i64) -> c_int {
    v.clamp(c_int::MIN as i64, c_int::MAX as i64) as c_int
}

/// This MPI's own constant for a stored array order.
fn order(fortran: bool) -> c_int {
    if fortran {
        ffi::MPI_ORDER_FORTRAN as c_int
    } else {
        ffi::MPI_ORDER_C as c_int
    }
}
