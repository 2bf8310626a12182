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
        let cint = |v: i64| v.clamp(c_int::MIN as i64, c_int::MAX as i64) as c_int;
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
        let at = |i: usize| prm.get(i).copied().unwrap_or(0);
        let arr =
            |from: usize, n: usize| -> Vec<c_int> { (0..n).map(|i| cint(at(from + i))).collect() };
        let rc = match op {
            Op::TypeContiguous => {
                let old = self.dtype(types, at(1), depth + 1)?;
                // SAFETY: a committed or predefined old type and a valid out-parameter.
                unsafe { ffi::MPI_Type_contiguous(cint(at(0)), old, &mut nt) }
            }
            Op::TypeVector => {
                let old = self.dtype(types, at(3), depth + 1)?;
                // SAFETY: as above.
                unsafe { ffi::MPI_Type_vector(cint(at(0)), cint(at(1)), cint(at(2)), old, &mut nt) }
            }
            Op::TypeHvector => {
                let old = self.dtype(types, at(3), depth + 1)?;
                // SAFETY: as above.
                unsafe {
                    ffi::MPI_Type_create_hvector(
                        cint(at(0)),
                        cint(at(1)),
                        at(2) as ffi::MPI_Aint,
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeIndexed => {
                let n = at(0).max(0) as usize;
                let old = self.dtype(types, at(1), depth + 1)?;
                let (bl, ds) = (arr(3, n), arr(3 + n, n));
                // SAFETY: two arrays of `n` ints that outlive the call, an old type and a
                // valid out-parameter.
                unsafe { ffi::MPI_Type_indexed(n as c_int, bl.as_ptr(), ds.as_ptr(), old, &mut nt) }
            }
            Op::TypeCreateHindexed => {
                let n = at(0).max(0) as usize;
                let old = self.dtype(types, at(1), depth + 1)?;
                let bl = arr(3, n);
                let ds: Vec<ffi::MPI_Aint> =
                    (0..n).map(|i| at(3 + n + i) as ffi::MPI_Aint).collect();
                // SAFETY: two arrays of `n` entries that outlive the call, an old type and a
                // valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_hindexed(
                        n as c_int,
                        bl.as_ptr(),
                        ds.as_ptr(),
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateIndexedBlock => {
                let n = at(0).max(0) as usize;
                let old = self.dtype(types, at(2), depth + 1)?;
                let ds = arr(4, n);
                // SAFETY: an array of `n` ints that outlives the call, an old type and a valid
                // out-parameter.
                unsafe {
                    ffi::MPI_Type_create_indexed_block(
                        n as c_int,
                        cint(at(1)),
                        ds.as_ptr(),
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateHindexedBlock => {
                let n = at(0).max(0) as usize;
                let old = self.dtype(types, at(2), depth + 1)?;
                let ds: Vec<ffi::MPI_Aint> = (0..n).map(|i| at(4 + i) as ffi::MPI_Aint).collect();
                // SAFETY: as above, with byte displacements.
                unsafe {
                    ffi::MPI_Type_create_hindexed_block(
                        n as c_int,
                        cint(at(1)),
                        ds.as_ptr(),
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeDup => {
                let old = self.dtype(types, at(0), depth + 1)?;
                // SAFETY: an old type and a valid out-parameter.
                unsafe { ffi::MPI_Type_dup(old, &mut nt) }
            }
            Op::TypeCreateSubarray => {
                let nd = at(0).max(0) as usize;
                let old = self.dtype(types, at(2), depth + 1)?;
                // Issue this MPI's own constant for the stored order.
                let order = if rsd::mpi::order_is_fortran(at(1)) {
                    ffi::MPI_ORDER_FORTRAN as c_int
                } else {
                    ffi::MPI_ORDER_C as c_int
                };
                let (sz, sub, st) = (arr(4, nd), arr(4 + nd, nd), arr(4 + 2 * nd, nd));
                // SAFETY: three arrays of `nd` ints that outlive the call, an old type and a
                // valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_subarray(
                        nd as c_int,
                        sz.as_ptr(),
                        sub.as_ptr(),
                        st.as_ptr(),
                        order,
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateDarray => {
                // Refused here as the file table refuses it (MPI would abort the job), then
                // issued with the recorded size and rank, whatever the replay's rank count.
                let d = filetable::darray::Darray::parse(&prm)
                    .map_err(|e| format!("rebuilding datatype {id}: {e}"))?;
                let nd = d.dims.len();
                let old = self.dtype(types, d.oldtype, depth + 1)?;
                let order = if d.fortran {
                    ffi::MPI_ORDER_FORTRAN as c_int
                } else {
                    ffi::MPI_ORDER_C as c_int
                };
                // This MPI's own constants for the stored distributions.
                let fixed = op.params().len();
                let distribs: Vec<c_int> = d
                    .dims
                    .iter()
                    .map(|dim| match dim.distrib {
                        filetable::darray::Distrib::Block(_) => ffi::MPI_DISTRIBUTE_BLOCK as c_int,
                        filetable::darray::Distrib::Cyclic(_) => {
                            ffi::MPI_DISTRIBUTE_CYCLIC as c_int
                        }
                        filetable::darray::Distrib::None => ffi::MPI_DISTRIBUTE_NONE as c_int,
                    })
                    .collect();
                let dargs: Vec<c_int> = (0..nd)
                    .map(|k| match at(fixed + 2 * nd + k) {
                        rsd::mpi::distribute::DFLT_DARG => ffi::MPI_DISTRIBUTE_DFLT_DARG as c_int,
                        v => cint(v),
                    })
                    .collect();
                let (gs, ps) = (arr(fixed, nd), arr(fixed + 3 * nd, nd));
                // SAFETY: four arrays of `nd` ints that outlive the call, an old type and a
                // valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_darray(
                        cint(op.param(&prm, Param::Size)),
                        cint(op.param(&prm, Param::Rank)),
                        nd as c_int,
                        gs.as_ptr(),
                        distribs.as_ptr(),
                        dargs.as_ptr(),
                        ps.as_ptr(),
                        order,
                        old,
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateStruct => {
                let n = at(0).max(0) as usize;
                let bl = arr(2, n);
                let ds: Vec<ffi::MPI_Aint> =
                    (0..n).map(|i| at(2 + n + i) as ffi::MPI_Aint).collect();
                let mut ts = Vec::with_capacity(n);
                for i in 0..n {
                    ts.push(self.dtype(types, at(2 + 2 * n + i), depth + 1)?);
                }
                // SAFETY: three arrays of `n` entries that outlive the call and a valid
                // out-parameter.
                unsafe {
                    ffi::MPI_Type_create_struct(
                        n as c_int,
                        bl.as_ptr(),
                        ds.as_ptr(),
                        ts.as_ptr(),
                        &mut nt,
                    )
                }
            }
            Op::TypeCreateResized => {
                let old = self.dtype(types, at(0), depth + 1)?;
                // SAFETY: an old type and a valid out-parameter.
                unsafe {
                    ffi::MPI_Type_create_resized(
                        old,
                        at(1) as ffi::MPI_Aint,
                        at(2) as ffi::MPI_Aint,
                        &mut nt,
                    )
                }
            }
            _ => return Ok(u8t),
        };
        check(rc, &format!("{} rebuilding datatype {id}", op.name()))?;
        self.commit(id, nt)
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
