//! The replay of a NetCDF plan: rank 0's `nc_*` calls, made again through the real NetCDF-4
//! library, which then makes exactly the HDF5 calls the traced program's NetCDF made (the
//! tracer records them nested in each replayed call, as it did in the program).
//!
//! Only the layout matters, not the data: every buffer is zeros of the size NetCDF reads.
//! The file, dimension and variable ids are NetCDF's: a file's id is mapped from the trace's
//! index to what the replay's create or open returned; dimension and variable ids are in
//! definition order, so the replay's are the trace's (checked as they are defined).
//!
//! The storage report comes from the files once the plan is done: each file the plan created
//! is opened again read-only through HDF5 directly (the sec2 driver, no MPI-IO, no HDF5 call
//! in the trace: only its POSIX reads, at the top level after the replayed calls) and its
//! datasets are listed as a walk from the root finds them.

use crate::ffi::{self, Hdf5, Hid, Netcdf};
use crate::{file_name, file_path, join, layout_of};
use h5oracle::{Plan, Step, Storage};
use rsd::op::{Layer, Op, Param};
use std::collections::HashMap;
use std::ffi::{CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

/// Replays `plan` (every step a NetCDF call) and reports the datasets of the files it created.
pub fn replay(h: &Hdf5, nc: &Netcdf, plan: &Plan, out: &Path) -> Result<Vec<Storage>, String> {
    if let Some(s) = plan.steps.iter().find(|s| s.op.layer() != Layer::Netcdf) {
        return Err(format!(
            "plan step {}: a NetCDF plan holds NetCDF calls only (the HDF5 calls are NetCDF's own)",
            s.describe()
        ));
    }
    let mut r = NcReplay {
        h,
        nc,
        out: out.to_path_buf(),
        names: Vec::new(),
        created: Vec::new(),
        open: HashMap::new(),
        xtypes: HashMap::new(),
    };
    for step in &plan.steps {
        r.step(step)?;
    }
    r.storage()
}

/// A file the replay has open.
#[derive(Debug, Clone, Copy)]
struct NcFile {
    /// NetCDF's id of it in the replay.
    ncid: c_int,
    /// The index of its name in [`NcReplay::names`].
    file: usize,
}

struct NcReplay<'a> {
    h: &'a Hdf5,
    nc: &'a Netcdf,
    out: PathBuf,
    /// The plan's file names, in order of first use: OUT.h5, OUT.h5.1, ...
    names: Vec<String>,
    /// Whether the plan created the file of each name (only those are reported: an opened
    /// one existed before the oracle).
    created: Vec<bool>,
    /// The trace's file indices (`ncid`) of the open files.
    open: HashMap<i64, NcFile>,
    /// Each variable's type, by file name index and varid: what `nc_put_vara` reads.
    xtypes: HashMap<(usize, c_int), c_int>,
}

/// The size of NetCDF's atomic type `xtype` (`nc_type`, `rsd::netcdf::types`), or the
/// failure of `step`.
fn type_size(step: &Step, xtype: i64) -> Result<usize, String> {
    match usize::try_from(rsd::netcdf::types::size(xtype)) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "plan step {}: the oracle replays NetCDF's atomic types of a fixed size only (NC_BYTE 1 to NC_UINT64 11), not type {xtype} (its parameters as recorded: {:?})",
            step.describe(),
            step.params
        )),
    }
}

/// Recorded value `v` of `step` as a C `int`.
fn int(step: &Step, what: &str, v: i64) -> Result<c_int, String> {
    c_int::try_from(v).map_err(|_| format!("plan step {}: {what} {v}", step.describe()))
}

/// Recorded value `v` of `step` as a `size_t`.
fn size(step: &Step, what: &str, v: i64) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("plan step {}: {what} {v}", step.describe()))
}

/// A zeroed buffer of `elements` values of `elem` bytes (at least one byte: NetCDF gets a
/// pointer it may not read, never NULL).
fn zeros(step: &Step, elements: usize, elem: usize) -> Result<Vec<u8>, String> {
    let len = elements.checked_mul(elem).ok_or_else(|| {
        format!(
            "plan step {}: {elements} elements of {elem} bytes",
            step.describe()
        )
    })?;
    Ok(vec![0u8; len.max(1)])
}

/// The first `n` values of `step`'s arrays from `from` on, or the step's failure.
fn array(step: &Step, from: usize, n: usize) -> Result<&[i64], String> {
    let end = from.saturating_add(n);
    step.arrays().get(from..end).ok_or_else(|| {
        format!(
            "plan step {}: {} values after its parameters where {} are needed (its parameters as recorded: {:?})",
            step.describe(),
            step.arrays().len(),
            end,
            step.params
        )
    })
}

fn cname(step: &Step) -> Result<CString, String> {
    let name = step
        .name
        .as_deref()
        .ok_or_else(|| format!("plan step {}: it has no name", step.describe()))?;
    CString::new(name)
        .map_err(|_| format!("plan step {}: the name has a NUL byte", step.describe()))
}

impl NcReplay<'_> {
    /// `status` of `what` (a NetCDF call of `step`) as a result.
    fn ok(&self, step: &Step, what: &str, status: c_int) -> Result<(), String> {
        if status == 0 {
            return Ok(());
        }
        Err(format!(
            "plan step {} failed: {what} returned {status} ({}) (its parameters as recorded: {:?})",
            step.describe(),
            self.nc.strerror(status),
            step.params
        ))
    }

    /// The open file `step`'s `ncid` names.
    fn file(&self, step: &Step) -> Result<NcFile, String> {
        let id = step.p(Param::Ncid);
        self.open.get(&id).copied().ok_or_else(|| {
            format!(
                "plan step {}: its ncid {id} is no file the oracle has open (the plan was not made by plan_of?)",
                step.describe()
            )
        })
    }

    fn step(&mut self, step: &Step) -> Result<(), String> {
        let t = &self.nc.traced;
        // SAFETY (every call below): the traced functions with the arguments their
        // prototypes take: ids NetCDF gave the replay, NUL-terminated names, out-pointers to
        // ints, arrays of the `ndims` values the call reads (checked against the step), and
        // buffers of the bytes NetCDF reads (the counts' product times the type's size).
        match step.op {
            Op::NcCreate | Op::NcCreatePar | Op::NcOpen | Op::NcOpenPar => {
                let name = step
                    .name
                    .as_deref()
                    .ok_or_else(|| format!("plan step {}: it names no file", step.describe()))?;
                let (k, path, first) = file_name(&mut self.names, &self.out, name);
                self.created.resize(self.names.len(), false);
                let create = matches!(step.op, Op::NcCreate | Op::NcCreatePar);
                if first && create {
                    // What an earlier oracle run left there (NC_NOCLOBBER would fail).
                    let _ = std::fs::remove_file(&path);
                }
                let c = CString::new(path.as_os_str().as_encoded_bytes())
                    .map_err(|_| format!("{}: a NUL byte", path.display()))?;
                let mode = int(step, "mode", step.p(Param::Mode))?;
                // The world of one rank whatever communicator the program used: the layout
                // follows the calls, not the ranks.
                let (world, info) = (self.h.comm_world, self.h.info_null);
                let mut ncid: c_int = -1;
                let status = match step.op {
                    Op::NcCreate => unsafe { (t.create)(c.as_ptr(), mode, &mut ncid) },
                    Op::NcCreatePar => unsafe {
                        (t.create_par)(c.as_ptr(), mode, world, info, &mut ncid)
                    },
                    Op::NcOpen => unsafe { (t.open)(c.as_ptr(), mode, &mut ncid) },
                    _ => unsafe { (t.open_par)(c.as_ptr(), mode, world, info, &mut ncid) },
                };
                self.ok(step, step.op.name(), status)?;
                if create {
                    self.created[k] = true;
                }
                self.open
                    .insert(step.p(Param::Ncid), NcFile { ncid, file: k });
            }
            Op::NcClose => {
                let f = self.file(step)?;
                self.ok(step, "nc_close", unsafe { (t.close)(f.ncid) })?;
                self.open.remove(&step.p(Param::Ncid));
            }
            Op::NcEnddef => {
                let f = self.file(step)?;
                self.ok(step, "nc_enddef", unsafe { (t.enddef)(f.ncid) })?;
            }
            Op::NcRedef => {
                let f = self.file(step)?;
                self.ok(step, "nc_redef", unsafe { (t.redef)(f.ncid) })?;
            }
            Op::NcSync => {
                let f = self.file(step)?;
                self.ok(step, "nc_sync", unsafe { (t.sync)(f.ncid) })?;
            }
            Op::NcDefDim => {
                let f = self.file(step)?;
                let c = cname(step)?;
                // NC_UNLIMITED is 0, as recorded.
                let len = size(step, "length", step.p(Param::Length))?;
                let mut dimid: c_int = -1;
                self.ok(step, "nc_def_dim", unsafe {
                    (t.def_dim)(f.ncid, c.as_ptr(), len, &mut dimid)
                })?;
                same_id(step, "dimid", Param::Dimid, dimid)?;
            }
            Op::NcDefVar => {
                let f = self.file(step)?;
                let c = cname(step)?;
                let xtype = step.p(Param::Xtype);
                // A user-defined type would need its definition, which no step replays.
                type_size(step, xtype)?;
                let ndims = size(step, "ndims", step.p(Param::Ndims))?;
                let dimids = array(step, 0, ndims)?
                    .iter()
                    .map(|&d| int(step, "dimid", d))
                    .collect::<Result<Vec<c_int>, String>>()?;
                let mut varid: c_int = -1;
                self.ok(step, "nc_def_var", unsafe {
                    (t.def_var)(
                        f.ncid,
                        c.as_ptr(),
                        xtype as c_int,
                        ndims as c_int,
                        dimids.as_ptr(),
                        &mut varid,
                    )
                })?;
                same_id(step, "varid", Param::Varid, varid)?;
                self.xtypes.insert((f.file, varid), xtype as c_int);
            }
            Op::NcDefVarChunking => {
                let f = self.file(step)?;
                let varid = int(step, "varid", step.p(Param::Varid))?;
                let storage = step.p(Param::Storage);
                let ndims = size(step, "ndims", step.p(Param::Ndims))?;
                let chunks = array(step, 0, ndims)?
                    .iter()
                    .map(|&c| size(step, "chunk size", c))
                    .collect::<Result<Vec<usize>, String>>()?;
                // Chunk sizes for NC_CHUNKED as recorded; NULL for contiguous and compact
                // storage, and where the program passed NULL (recorded as zeros: NetCDF's
                // default chunks).
                let p = if storage == rsd::netcdf::CHUNKED && chunks.iter().any(|&c| c != 0) {
                    chunks.as_ptr()
                } else {
                    std::ptr::null()
                };
                self.ok(step, "nc_def_var_chunking", unsafe {
                    (t.def_var_chunking)(f.ncid, varid, int(step, "storage", storage)?, p)
                })?;
            }
            Op::NcVarParAccess => {
                let f = self.file(step)?;
                let varid = int(step, "varid", step.p(Param::Varid))?;
                let xfer = int(step, "xfer", step.p(Param::Xfer))?;
                self.ok(step, "nc_var_par_access", unsafe {
                    (t.var_par_access)(f.ncid, varid, xfer)
                })?;
            }
            Op::NcPutAtt => {
                let f = self.file(step)?;
                let c = cname(step)?;
                let varid = int(step, "varid", step.p(Param::Varid))?;
                let xtype = step.p(Param::Xtype);
                let count = size(step, "count", step.p(Param::Count))?;
                // Untyped, in the file's type: the typed call the program made converts to
                // that type and stores the same.
                let buf = zeros(step, count, type_size(step, xtype)?)?;
                self.ok(step, "nc_put_att", unsafe {
                    (t.put_att)(
                        f.ncid,
                        varid,
                        c.as_ptr(),
                        xtype as c_int,
                        count,
                        buf.as_ptr().cast::<c_void>(),
                    )
                })?;
            }
            Op::NcPutVara | Op::NcPutVars => {
                let f = self.file(step)?;
                let varid = int(step, "varid", step.p(Param::Varid))?;
                let xtype = *self.xtypes.get(&(f.file, varid)).ok_or_else(|| {
                    format!(
                        "plan step {}: no nc_def_var of the plan defined variable {varid} of this file",
                        step.describe()
                    )
                })?;
                let ndims = size(step, "ndims", step.p(Param::Ndims))?;
                let to_size = |v: &[i64]| {
                    v.iter()
                        .map(|&x| size(step, "start or count", x))
                        .collect::<Result<Vec<usize>, String>>()
                };
                let start = to_size(array(step, 0, ndims)?)?;
                let count = to_size(array(step, ndims, ndims)?)?;
                let elements = count
                    .iter()
                    .try_fold(1usize, |n, &c| n.checked_mul(c))
                    .ok_or_else(|| format!("plan step {}: counts {count:?}", step.describe()))?;
                // Untyped: NetCDF reads the variable's type from the buffer.
                let buf = zeros(step, elements, type_size(step, xtype.into())?)?;
                let data = buf.as_ptr().cast::<c_void>();
                if step.op == Op::NcPutVara {
                    self.ok(step, "nc_put_vara", unsafe {
                        (t.put_vara)(f.ncid, varid, start.as_ptr(), count.as_ptr(), data)
                    })?;
                } else {
                    let stride: Vec<isize> = array(step, 2 * ndims, ndims)?
                        .iter()
                        .map(|&s| s as isize)
                        .collect();
                    self.ok(step, "nc_put_vars", unsafe {
                        (t.put_vars)(
                            f.ncid,
                            varid,
                            start.as_ptr(),
                            count.as_ptr(),
                            stride.as_ptr(),
                            data,
                        )
                    })?;
                }
            }
            op => {
                return Err(format!(
                    "plan step {}: the oracle does not replay {}",
                    step.describe(),
                    op.name()
                ));
            }
        }
        Ok(())
    }

    /// The datasets of every file the plan created, each file walked from its root.
    fn storage(&self) -> Result<Vec<Storage>, String> {
        let mut out = Vec::new();
        for (k, name) in self.names.iter().enumerate() {
            if !self.created[k] {
                continue;
            }
            if self.open.values().any(|f| f.file == k) {
                // Closing it here would put NetCDF's HDF5 calls outside any replayed call
                // in the trace (NetCDF calls HDF5 through the tracer's hooks, whichever
                // handle nc_close comes from), and HDF5 cannot open it again meanwhile.
                eprintln!(
                    "iotrex-h5oracle: the plan leaves {name} open: no storage reported for it"
                );
                continue;
            }
            walk_file(self.h, &file_path(&self.out, k), &mut out)?;
        }
        Ok(out)
    }
}

/// Checks that NetCDF gave the id the trace has (`p` of `step`): later steps name
/// dimensions and variables by the trace's ids.
fn same_id(step: &Step, what: &str, p: Param, got: c_int) -> Result<(), String> {
    let want = step.p(p);
    if i64::from(got) != want {
        return Err(format!(
            "plan step {}: NetCDF gave {what} {got} where the trace has {want}",
            step.describe()
        ));
    }
    Ok(())
}

/// Adds the datasets of the HDF5 file at `path` to `out`, numbered on from `out.len()`.
fn walk_file(h: &Hdf5, path: &Path, out: &mut Vec<Storage>) -> Result<(), String> {
    let x = &h.direct;
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{}: a NUL byte", path.display()))?;
    // Read-only with the default access list (sec2): nothing of MPI-IO, and HDF5's error
    // stack printed if it cannot.
    // SAFETY: a NUL-terminated path, a flag and the default list.
    let f = unsafe { (x.fopen)(c.as_ptr(), ffi::H5F_ACC_RDONLY, ffi::H5P_DEFAULT) };
    if f < 0 {
        return Err(format!(
            "cannot open {} with HDF5 to read its storage",
            path.display()
        ));
    }
    let (mut func, mut data): (ffi::ErrorHandler, *mut c_void) = (None, std::ptr::null_mut());
    // SAFETY: out-pointers for the current stack's printer, which is then set to none (the
    // walk's expected failures: a group that does not track creation order) and restored.
    unsafe {
        (x.eget_auto2)(ffi::H5E_DEFAULT, &mut func, &mut data);
        (x.eset_auto2)(ffi::H5E_DEFAULT, None, std::ptr::null_mut());
    }
    let walked = walk_group(h, f, "", out);
    // SAFETY: the printer saved above; the file opened above, closed once.
    unsafe {
        (x.eset_auto2)(ffi::H5E_DEFAULT, func, data);
        (x.fclose)(f);
    }
    walked.map_err(|e| format!("{}: {e}", path.display()))
}

/// Adds the datasets under group `g` (whose path from the root is `base`) to `out`, in link
/// creation order (name order where the group does not track it), depth first.
fn walk_group(h: &Hdf5, g: Hid, base: &str, out: &mut Vec<Storage>) -> Result<(), String> {
    let x = &h.direct;
    let mut info = ffi::GroupInfo::default();
    // SAFETY: a group (or file) the walk holds and an out-pointer to an `H5G_info_t`.
    if unsafe { (x.gget_info)(g, &mut info) } < 0 {
        return Err(format!("H5Gget_info of group /{base} failed"));
    }
    if info.nlinks == 0 {
        return Ok(());
    }
    // NetCDF-4 tracks creation order on every group, which is its definition order.
    let index = if link_name(h, g, ffi::H5_INDEX_CRT_ORDER, 0).is_some() {
        ffi::H5_INDEX_CRT_ORDER
    } else {
        ffi::H5_INDEX_NAME
    };
    for i in 0..info.nlinks {
        let name = link_name(h, g, index, i)
            .ok_or_else(|| format!("H5Lget_name_by_idx of group /{base}, link {i} failed"))?;
        let path = join(base, &String::from_utf8_lossy(&name));
        // No NUL inside: HDF5 gave it as a C string.
        let c = CString::new(name).map_err(|_| format!("/{path}: a NUL byte"))?;
        // SAFETY: a group the walk holds, a NUL-terminated link name, the default list.
        let o = unsafe { (x.oopen)(g, c.as_ptr(), ffi::H5P_DEFAULT) };
        if o < 0 {
            // A soft or external link whose target is not in this file: no dataset of it.
            continue;
        }
        // SAFETY: the object just opened.
        let walked = match unsafe { (x.iget_type)(o) } {
            ffi::H5I_GROUP => walk_group(h, o, &path, out),
            ffi::H5I_DATASET => layout_of(h, o).map(|layout| {
                out.push(Storage {
                    at: out.len(),
                    name: path,
                    layout,
                })
            }),
            // Named datatypes hold no data.
            _ => Ok(()),
        };
        // SAFETY: the object opened above, closed once.
        unsafe { (x.oclose)(o) };
        walked?;
    }
    Ok(())
}

/// The name of link `n` of group `g` in index `index` (increasing), or `None` when HDF5
/// cannot say (the group does not track creation order, for `H5_INDEX_CRT_ORDER`).
fn link_name(h: &Hdf5, g: Hid, index: c_int, n: u64) -> Option<Vec<u8>> {
    let x = &h.direct;
    let dot = c".";
    // SAFETY: a group the walk holds; a NULL buffer of size 0 asks the name's length, then a
    // buffer of that length plus the NUL receives it.
    unsafe {
        let len = (x.lget_name_by_idx)(
            g,
            dot.as_ptr(),
            index,
            ffi::H5_ITER_INC,
            n,
            std::ptr::null_mut(),
            0,
            ffi::H5P_DEFAULT,
        );
        let len = usize::try_from(len).ok()?;
        let mut buf = vec![0u8; len + 1];
        let got = (x.lget_name_by_idx)(
            g,
            dot.as_ptr(),
            index,
            ffi::H5_ITER_INC,
            n,
            buf.as_mut_ptr().cast::<c_char>(),
            buf.len(),
            ffi::H5P_DEFAULT,
        );
        if got < 0 {
            return None;
        }
        buf.truncate(len);
        Some(buf)
    }
}
