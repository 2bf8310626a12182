//! `iotrex-h5oracle PLAN.json OUT.h5 STORAGE.json`: replays a plan of rank 0's HDF5 calls
//! ([`h5oracle::plan_of`]) on one rank through the real parallel HDF5, then writes every
//! dataset's storage (addresses of its contiguous block or of each chunk) to STORAGE.json.
//! Run under `mpirun -np 1`, traced by `iotrex trace` ([`h5oracle::run`] does both).
//! A plan of NetCDF calls is replayed through the real NetCDF instead ([`netcdf`]).
//!
//! Parallel HDF5 (Open MPI's build) is loaded at run time: `$IOTREX_HDF5_LIB`, else Debian's
//! `libhdf5_openmpi.so`; for a NetCDF plan, parallel NetCDF too: `$IOTREX_NETCDF_LIB`, else
//! Debian's `libnetcdf_mpi.so`. HDF5's version must be the one the plan's trace ran on. Exit
//! status 2, with the reason on stderr, for a plan it cannot replay, a library it cannot use,
//! or an HDF5 or NetCDF call that fails (naming the plan step).

mod ffi;
mod netcdf;

use ffi::{Globals, H5P_DEFAULT, H5S_UNLIMITED, Hdf5, Hid, Hsize, Netcdf};
use h5oracle::{Chunk, Layout, Plan, Step, Storage};
use rsd::op::{Op, Param};
use std::collections::HashMap;
use std::ffi::{CString, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: iotrex-h5oracle PLAN.json OUT.h5 STORAGE.json (under mpirun -np 1)";

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [plan, out, storage] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    match oracle(plan, out, storage) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("iotrex-h5oracle: {e}");
            ExitCode::from(2)
        }
    }
}

fn oracle(plan_path: &Path, out: &Path, storage_path: &Path) -> Result<(), String> {
    let plan: Plan = std::fs::read(plan_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|e| format!("cannot read the plan {}: {e}", plan_path.display()))?;
    let h = Hdf5::load(&ffi::library_path())?;
    // After HDF5 (NetCDF's libhdf5 is then the one loaded), and only for a plan that needs
    // it: an HDF5 plan runs where no NetCDF is installed.
    let nc = if plan.is_netcdf() {
        Some(Netcdf::load(&ffi::netcdf_library_path())?)
    } else {
        None
    };
    // SAFETY: MPI_Init with no arguments (allowed since MPI-2), once.
    if unsafe { (h.traced.mpi_init)(std::ptr::null_mut(), std::ptr::null_mut()) } != 0 {
        return Err("MPI_Init failed".into());
    }
    let done = replay_all(&h, nc.as_ref(), &plan, out, storage_path);
    // SAFETY: MPI was initialised above; parallel HDF5 closes whatever is left open inside
    // MPI_Finalize (an attribute of MPI_COMM_SELF it set at H5open), before MPI goes.
    let fin = unsafe { (h.traced.mpi_finalize)() };
    done?;
    if fin != 0 {
        return Err("MPI_Finalize failed".into());
    }
    Ok(())
}

fn replay_all(
    h: &Hdf5,
    nc: Option<&Netcdf>,
    plan: &Plan,
    out: &Path,
    storage_path: &Path,
) -> Result<(), String> {
    let g = h.open()?;
    let version = h.version()?;
    match plan.hdf5_version.as_deref().map(str::trim) {
        Some(want) if want != version => {
            return Err(format!(
                "the plan's trace ran on HDF5 {want}, {} is HDF5 {version}: another version may lay the file out otherwise (set IOTREX_HDF5_LIB to a parallel HDF5 {want})",
                h.path.display()
            ));
        }
        Some(_) => {}
        None => eprintln!(
            "iotrex-h5oracle: the plan names no HDF5 version; replaying with HDF5 {version}"
        ),
    }
    let write = |storage: &[Storage]| -> Result<(), String> {
        let json = serde_json::to_vec(storage).map_err(|e| e.to_string())?;
        std::fs::write(storage_path, json)
            .map_err(|e| format!("cannot write {}: {e}", storage_path.display()))
    };
    if let Some(nc) = nc {
        return write(&netcdf::replay(h, nc, plan, out)?);
    }
    let mut r = Replay::new(h, g, out)?;
    for step in &plan.steps {
        r.step(step)?;
    }
    write(&r.storage()?)?;
    r.release();
    Ok(())
}

/// What a trace identifier stands for in the oracle.
#[derive(Debug, Clone)]
enum Kind {
    /// A file: the index of its name in [`Replay::names`].
    File(usize),
    /// A dataspace of these dimensions.
    Space(Vec<Hsize>),
    /// A dataset: its index in [`Replay::dsets`].
    Dataset(usize),
    /// An attribute: its datatype and element count.
    Attribute { ty: Hid, elements: u64 },
    /// A group.
    Group,
}

/// An open object.
#[derive(Debug, Clone)]
struct Obj {
    hid: Hid,
    kind: Kind,
    /// The file it is in (its `hid`; a file's own for a file).
    file: Hid,
    /// Its name from the file's root (empty for a file or a dataspace).
    path: String,
}

/// A dataset the plan created (or opened).
struct Dataset {
    at: usize,
    /// Its file's name index.
    file: usize,
    path: String,
    /// Its storage when it was last closed.
    layout: Option<Layout>,
}

struct Replay<'a> {
    h: &'a Hdf5,
    g: Globals,
    out: PathBuf,
    /// The plan's file names, in order of first use: OUT.h5, OUT.h5.1, ...
    names: Vec<String>,
    /// The trace's identifiers (rank 0's table slots) and what the oracle has for them.
    ids: HashMap<i64, Obj>,
    /// The last `H5Pset_fapl_mpio`'s list, which every later file is opened with.
    fapl: Option<Hid>,
    /// The last `H5Pset_chunk`'s list, for the next `H5Dcreate2` only.
    dcpl: Option<Hid>,
    /// Intermediate groups created as h5py's high-level API has them (the trace does not
    /// record the link creation list, and a missing group would fail the create).
    lcpl: Hid,
    /// Datatypes by element size.
    types: HashMap<i64, Hid>,
    dsets: Vec<Dataset>,
    /// Identifiers to release at the end: property lists, created types, and objects whose
    /// slot the trace reused after a close the oracle does not replay (`H5Sclose`).
    leftover: Vec<Hid>,
}

/// `r` as an HDF5 identifier, or the failure of the step.
fn ok_id(step: &Step, what: &str, r: Hid) -> Result<Hid, String> {
    if r < 0 {
        Err(failed(step, what, r))
    } else {
        Ok(r)
    }
}

fn ok(step: &Step, what: &str, r: c_int) -> Result<(), String> {
    if r < 0 {
        Err(failed(step, what, r.into()))
    } else {
        Ok(())
    }
}

fn failed(step: &Step, what: &str, r: i64) -> String {
    format!(
        "plan step {} failed: {what} returned {r} (its parameters as recorded: {:?}; HDF5's error stack above says why)",
        step.describe(),
        step.params
    )
}

fn cname(step: &Step, name: &str) -> Result<CString, String> {
    CString::new(name)
        .map_err(|_| format!("plan step {}: the name has a NUL byte", step.describe()))
}

/// A recorded dimension as `hsize_t`: -1 is `H5S_UNLIMITED`.
fn dim(d: i64) -> Hsize {
    if d == -1 { H5S_UNLIMITED } else { d as Hsize }
}

/// The oracle's name for the `k`-th file of a plan: OUT.h5 for the first, OUT.h5.K for the
/// K-th.
fn file_path(out: &Path, k: usize) -> PathBuf {
    if k == 0 {
        out.to_path_buf()
    } else {
        let mut s = out.as_os_str().to_os_string();
        s.push(format!(".{k}"));
        PathBuf::from(s)
    }
}

/// The oracle's file for plan file `name`, `names` the plan's files so far in order of first
/// use: its index there, its path ([`file_path`]), and whether this is its first use.
fn file_name(names: &mut Vec<String>, out: &Path, name: &str) -> (usize, PathBuf, bool) {
    let (k, first) = match names.iter().position(|n| n == name) {
        Some(k) => (k, false),
        None => {
            names.push(name.to_string());
            (names.len() - 1, true)
        }
    };
    (k, file_path(out, k), first)
}

/// `name` (relative to an object at `base`) from the file's root.
fn join(base: &str, name: &str) -> String {
    let name = name.trim_matches('/');
    if base.is_empty() || name.is_empty() {
        name.to_string()
    } else {
        format!("{base}/{name}")
    }
}

impl<'a> Replay<'a> {
    fn new(h: &'a Hdf5, g: Globals, out: &Path) -> Result<Replay<'a>, String> {
        // SAFETY: H5Pcreate of a class H5open set; a negative result is an error.
        let lcpl = unsafe { (h.direct.pcreate)(g.link_create) };
        // SAFETY: a link creation list just made.
        if lcpl < 0 || unsafe { (h.direct.pset_create_intermediate_group)(lcpl, 1) } < 0 {
            return Err("cannot make a link creation property list".into());
        }
        Ok(Replay {
            h,
            g,
            out: out.to_path_buf(),
            names: Vec::new(),
            ids: HashMap::new(),
            fapl: None,
            dcpl: None,
            lcpl,
            types: HashMap::new(),
            dsets: Vec::new(),
            leftover: vec![lcpl],
        })
    }

    /// The object trace identifier `p` of `step` names.
    fn obj(&self, step: &Step, p: Param) -> Result<&Obj, String> {
        let id = step.p(p);
        self.ids.get(&id).ok_or_else(|| {
            format!(
                "plan step {}: its {} {id} is no object the oracle has (the plan was not made by plan_of?)",
                step.describe(),
                p.name()
            )
        })
    }

    /// Records what the step made under its trace identifier `p`.
    fn made(&mut self, step: &Step, p: Param, obj: Obj) {
        if let Some(old) = self.ids.insert(step.p(p), obj) {
            self.leftover.push(old.hid);
        }
    }

    /// The datatype for elements of `size` bytes. The trace records only a datatype's size;
    /// a native integer or float of that size, else an opaque type: object headers have
    /// slack (an integer and a float type of one size gave the same layout), and the
    /// extrapolator checks the oracle against the inputs anyway.
    fn datatype(&mut self, step: &Step, size: i64) -> Result<Hid, String> {
        if let Some(&t) = self.types.get(&size) {
            return Ok(t);
        }
        let t = match size {
            1 => self.g.native_schar,
            2 => self.g.native_short,
            4 => self.g.native_int,
            8 => self.g.native_double,
            _ => {
                let bytes = usize::try_from(size)
                    .map_err(|_| format!("plan step {}: element size {size}", step.describe()))?;
                // SAFETY: H5Tcreate of a class and a size.
                let t = ok_id(step, "H5Tcreate(H5T_OPAQUE)", unsafe {
                    (self.h.direct.tcreate)(ffi::H5T_OPAQUE, bytes)
                })?;
                self.leftover.push(t);
                t
            }
        };
        self.types.insert(size, t);
        Ok(t)
    }

    /// The file name of plan file `name`: OUT.h5 for the first, OUT.h5.K for the K-th.
    fn file_name(&mut self, name: &str) -> (usize, PathBuf, bool) {
        file_name(&mut self.names, &self.out, name)
    }

    fn step(&mut self, step: &Step) -> Result<(), String> {
        let h = self.h;
        let t = &h.traced;
        let name = step.name.as_deref().unwrap_or_default();
        let arrays: Vec<Hsize> = step.arrays().iter().map(|&d| dim(d)).collect();
        let ndims = step.p(Param::Ndims);
        // SAFETY (every call below): the traced functions with the arguments their
        // prototypes take: identifiers the oracle holds, NUL-terminated names, arrays of
        // `ndims` dimensions (`plan_of` checked their lengths).
        match step.op {
            Op::H5PsetFaplMpio => {
                // The world of one rank whatever communicator the program used: the
                // layout follows the calls, not the ranks.
                let fapl = ok_id(step, "H5Pcreate(H5P_FILE_ACCESS)", unsafe {
                    (h.direct.pcreate)(self.g.file_access)
                })?;
                self.leftover.push(fapl);
                ok(step, "H5Pset_fapl_mpio", unsafe {
                    (t.pset_fapl_mpio)(fapl, h.comm_world, h.info_null)
                })?;
                // Kept for every later file: a program reuses its access list (create,
                // close, open again) more often than it mixes serial and parallel files.
                self.fapl = Some(fapl);
            }
            Op::H5Fcreate | Op::H5Fopen => {
                let (k, path, first) = self.file_name(name);
                if first && step.op == Op::H5Fcreate {
                    // What an earlier oracle run left there (H5F_ACC_EXCL would fail).
                    let _ = std::fs::remove_file(&path);
                }
                let c = CString::new(path.as_os_str().as_encoded_bytes())
                    .map_err(|_| format!("{}: a NUL byte", path.display()))?;
                let flags = step.p(Param::Flags) as c_uint;
                let fapl = self.fapl.unwrap_or(H5P_DEFAULT);
                let f = if step.op == Op::H5Fcreate {
                    ok_id(step, "H5Fcreate", unsafe {
                        (t.fcreate)(c.as_ptr(), flags, H5P_DEFAULT, fapl)
                    })?
                } else {
                    ok_id(step, "H5Fopen", unsafe {
                        (t.fopen)(c.as_ptr(), flags, fapl)
                    })?
                };
                let obj = Obj {
                    hid: f,
                    kind: Kind::File(k),
                    file: f,
                    path: String::new(),
                };
                self.made(step, Param::H5File, obj);
            }
            Op::H5Fclose => {
                let f = self.obj(step, Param::H5File)?.hid;
                // HDF5 closes a file of the MPI-IO driver only when nothing of it is open
                // (H5F_CLOSE_SEMI): what the oracle still has of it, the program released
                // by calls the trace does not hold (`H5Oclose`, `H5Idec_ref`).
                let inside: Vec<i64> = self
                    .ids
                    .iter()
                    .filter(|(_, o)| o.file == f && !matches!(o.kind, Kind::File(_)))
                    .map(|(&id, _)| id)
                    .collect();
                for id in inside {
                    if let Some(o) = self.ids.remove(&id) {
                        self.forget(&o)?;
                        // SAFETY: an identifier the oracle holds, released once.
                        unsafe { (h.direct.idec_ref)(o.hid) };
                    }
                }
                ok(step, "H5Fclose", unsafe { (t.fclose)(f) })?;
                self.ids.remove(&step.p(Param::H5File));
            }
            Op::H5Fflush => {
                let loc = self.obj(step, Param::Loc)?.hid;
                let scope = step.p(Param::Scope) as c_int;
                ok(step, "H5Fflush", unsafe { (t.fflush)(loc, scope) })?;
            }
            Op::H5ScreateSimple => {
                let n = arrays.len() / 2;
                let (cur, max) = arrays.split_at(n);
                let s = ok_id(step, "H5Screate_simple", unsafe {
                    (t.screate_simple)(ndims as c_int, cur.as_ptr(), max.as_ptr())
                })?;
                let obj = Obj {
                    hid: s,
                    kind: Kind::Space(cur.to_vec()),
                    file: -1,
                    path: String::new(),
                };
                self.made(step, Param::Space, obj);
            }
            Op::H5PsetChunk => {
                let dcpl = ok_id(step, "H5Pcreate(H5P_DATASET_CREATE)", unsafe {
                    (h.direct.pcreate)(self.g.dataset_create)
                })?;
                self.leftover.push(dcpl);
                ok(step, "H5Pset_chunk", unsafe {
                    (t.pset_chunk)(dcpl, ndims as c_int, arrays.as_ptr())
                })?;
                // The trace's convention (extrap's too): a chunk shape applies to the next
                // H5Dcreate2 only (the property list itself is not recorded).
                self.dcpl = Some(dcpl);
            }
            Op::H5Dcreate2 => {
                let loc = self.obj(step, Param::Loc)?.clone();
                let space = self.obj(step, Param::Space)?.hid;
                let ty = self.datatype(step, step.p(Param::Size))?;
                let c = cname(step, name)?;
                let dcpl = self.dcpl.take().unwrap_or(H5P_DEFAULT);
                let d = ok_id(step, "H5Dcreate2", unsafe {
                    (t.dcreate2)(loc.hid, c.as_ptr(), ty, space, self.lcpl, dcpl, H5P_DEFAULT)
                })?;
                let path = join(&loc.path, name);
                let file = self.file_index(loc.file);
                self.dsets.push(Dataset {
                    at: step.at,
                    file,
                    path: path.clone(),
                    layout: None,
                });
                let obj = Obj {
                    hid: d,
                    kind: Kind::Dataset(self.dsets.len() - 1),
                    file: loc.file,
                    path,
                };
                self.made(step, Param::Dset, obj);
            }
            Op::H5Dopen2 => {
                let loc = self.obj(step, Param::Loc)?.clone();
                let c = cname(step, name)?;
                let d = ok_id(step, "H5Dopen2", unsafe {
                    (t.dopen2)(loc.hid, c.as_ptr(), H5P_DEFAULT)
                })?;
                let path = join(&loc.path, name);
                let file = self.file_index(loc.file);
                let ds = match self
                    .dsets
                    .iter()
                    .position(|s| s.file == file && s.path == path)
                {
                    Some(i) => i,
                    None => {
                        self.dsets.push(Dataset {
                            at: step.at,
                            file,
                            path: path.clone(),
                            layout: None,
                        });
                        self.dsets.len() - 1
                    }
                };
                let obj = Obj {
                    hid: d,
                    kind: Kind::Dataset(ds),
                    file: loc.file,
                    path,
                };
                self.made(step, Param::Dset, obj);
            }
            Op::H5Dclose => {
                let o = self.obj(step, Param::Dset)?.clone();
                self.forget(&o)?;
                ok(step, "H5Dclose", unsafe { (t.dclose)(o.hid) })?;
                self.ids.remove(&step.p(Param::Dset));
            }
            Op::H5DsetExtent => {
                let d = self.obj(step, Param::Dset)?.hid;
                ok(step, "H5Dset_extent", unsafe {
                    (t.dset_extent)(d, arrays.as_ptr())
                })?;
            }
            Op::H5Acreate2 => {
                let loc = self.obj(step, Param::Loc)?.clone();
                let space = self.obj(step, Param::Space)?.clone();
                let ty = self.datatype(step, step.p(Param::Size))?;
                let c = cname(step, name)?;
                let a = ok_id(step, "H5Acreate2", unsafe {
                    (t.acreate2)(loc.hid, c.as_ptr(), ty, space.hid, H5P_DEFAULT, H5P_DEFAULT)
                })?;
                let elements = match &space.kind {
                    Kind::Space(dims) => dims.iter().product(),
                    _ => 1,
                };
                let obj = Obj {
                    hid: a,
                    kind: Kind::Attribute { ty, elements },
                    file: loc.file,
                    path: loc.path.clone(),
                };
                self.made(step, Param::Attr, obj);
            }
            Op::H5Awrite => {
                let a = self.obj(step, Param::Attr)?.clone();
                let Kind::Attribute { ty, elements } = a.kind else {
                    return Err(format!("plan step {}: not an attribute", step.describe()));
                };
                // Zeros: the value does not move anything (an attribute's size is fixed at
                // its creation), only the write itself marks the header dirty.
                let size = u64::try_from(step.p(Param::Size)).unwrap_or(0);
                let bytes = u64::try_from(step.p(Param::Bytes)).unwrap_or(0);
                let len = usize::try_from(bytes.max(size.saturating_mul(elements)))
                    .map_err(|_| format!("plan step {}: {bytes} bytes", step.describe()))?;
                let buf = vec![0u8; len.max(1)];
                ok(step, "H5Awrite", unsafe {
                    (t.awrite)(a.hid, ty, buf.as_ptr().cast::<c_void>())
                })?;
            }
            Op::H5Aclose => {
                let a = self.obj(step, Param::Attr)?.hid;
                ok(step, "H5Aclose", unsafe { (t.aclose)(a) })?;
                self.ids.remove(&step.p(Param::Attr));
            }
            Op::H5Gcreate2 => {
                let loc = self.obj(step, Param::Loc)?.clone();
                let c = cname(step, name)?;
                let gr = ok_id(step, "H5Gcreate2", unsafe {
                    (t.gcreate2)(loc.hid, c.as_ptr(), self.lcpl, H5P_DEFAULT, H5P_DEFAULT)
                })?;
                let obj = Obj {
                    hid: gr,
                    kind: Kind::Group,
                    file: loc.file,
                    path: join(&loc.path, name),
                };
                self.made(step, Param::Group, obj);
            }
            Op::H5Gclose => {
                let gr = self.obj(step, Param::Group)?.hid;
                ok(step, "H5Gclose", unsafe { (t.gclose)(gr) })?;
                self.ids.remove(&step.p(Param::Group));
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

    /// The name index of the open file `hid`.
    fn file_index(&self, hid: Hid) -> usize {
        self.ids
            .values()
            .find_map(|o| match o.kind {
                Kind::File(k) if o.hid == hid => Some(k),
                _ => None,
            })
            .unwrap_or(usize::MAX)
    }

    /// Notes a dataset's storage before it closes.
    fn forget(&mut self, o: &Obj) -> Result<(), String> {
        if let Kind::Dataset(i) = o.kind {
            self.dsets[i].layout = Some(layout_of(self.h, o.hid)?);
        }
        Ok(())
    }

    /// Every dataset's storage now: the open ones' asked, the closed ones' as they closed.
    fn storage(&mut self) -> Result<Vec<Storage>, String> {
        let open: Vec<Obj> = self.ids.values().cloned().collect();
        for o in &open {
            self.forget(o)?;
        }
        let mut out: Vec<Storage> = self
            .dsets
            .iter()
            .map(|d| Storage {
                at: d.at,
                name: d.path.clone(),
                layout: d.layout.clone().unwrap_or(Layout::Other),
            })
            .collect();
        out.sort_by_key(|s| s.at);
        Ok(out)
    }

    /// Releases everything still open, as h5py does at exit (`H5Idec_ref`, which the tracer
    /// does not record): objects, dataspaces, lists and types, then the files.
    fn release(&mut self) {
        let x = &self.h.direct;
        let mut open: Vec<Obj> = self.ids.drain().map(|(_, o)| o).collect();
        // Files last: HDF5 closes a file of the MPI-IO driver with nothing of it open.
        open.sort_by_key(|o| matches!(o.kind, Kind::File(_)));
        let files_last = self
            .leftover
            .drain(..)
            .chain(open.into_iter().map(|o| o.hid));
        for hid in files_last {
            // SAFETY: identifiers the oracle made, each released once.
            unsafe { (x.idec_ref)(hid) };
        }
    }
}

/// Where dataset `d`'s data is, asked of HDF5 directly (these queries are no replay): of
/// the HDF5 replay's datasets as they close, of a NetCDF replay's in its files' walk.
fn layout_of(h: &Hdf5, d: Hid) -> Result<Layout, String> {
    let x = &h.direct;
    // SAFETY: queries of a dataset the oracle holds, with out-pointers sized by its
    // rank; each list or space opened here is closed here.
    unsafe {
        let plist = (x.dget_create_plist)(d);
        if plist < 0 {
            return Err(format!("H5Dget_create_plist({d}) failed"));
        }
        let layout = (x.pget_layout)(plist);
        (x.pclose)(plist);
        match layout {
            ffi::H5D_CONTIGUOUS => {
                let addr = (x.dget_offset)(d);
                if addr == ffi::HADDR_UNDEF {
                    return Ok(Layout::Other);
                }
                let size = (x.dget_storage_size)(d);
                Ok(Layout::Contiguous { addr, size })
            }
            ffi::H5D_CHUNKED => {
                let Some(q) = &h.chunks else {
                    return Ok(Layout::Other);
                };
                // The whole extent's chunks: 1.10.8 takes no H5S_ALL here.
                let space = (x.dget_space)(d);
                if space < 0 {
                    return Err(format!("H5Dget_space({d}) failed"));
                }
                let chunks = chunks_of(q, x, d, space);
                (x.sclose)(space);
                let chunks = chunks?;
                Ok(Layout::Chunked { chunks })
            }
            _ => Ok(Layout::Other),
        }
    }
}

/// Every allocated chunk of dataset `d`, whose dataspace `space` is.
///
/// # Safety
/// `d` and `space` are identifiers the oracle holds.
unsafe fn chunks_of(
    q: &ffi::ChunkQueries,
    x: &ffi::Direct,
    d: Hid,
    space: Hid,
) -> Result<Vec<Chunk>, String> {
    // SAFETY: queries of the caller's identifiers, with out-pointers sized by the rank.
    unsafe {
        let rank = usize::try_from((x.sget_simple_extent_ndims)(space))
            .map_err(|_| format!("cannot ask the rank of dataset {d}"))?;
        let mut n: Hsize = 0;
        if (q.num_chunks)(d, space, &mut n) < 0 {
            return Err(format!("H5Dget_num_chunks({d}) failed"));
        }
        let mut chunks = Vec::with_capacity(n as usize);
        for i in 0..n {
            let mut coords = vec![0 as Hsize; rank.max(1)];
            let (mut mask, mut addr, mut size) = (0, 0, 0);
            if (q.chunk_info)(
                d,
                space,
                i,
                coords.as_mut_ptr(),
                &mut mask,
                &mut addr,
                &mut size,
            ) < 0
            {
                return Err(format!("H5Dget_chunk_info({d}, {i}) failed"));
            }
            coords.truncate(rank);
            chunks.push(Chunk { coords, addr, size });
        }
        Ok(chunks)
    }
}
