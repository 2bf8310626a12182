//! OTF2 archives of iotrex traces, for Vampir and the other Score-P tools.
//!
//! The OTF2 library is loaded at run time ([`ffi`]): iotrex builds without it, and an export
//! without it says what to install. One location (a CPU thread in a process location group)
//! per rank; one region per op; every call is an Enter/Leave pair, calls made inside a call
//! nested in it. Data calls also carry I/O records (`IoOperationBegin`/`Complete`) on I/O
//! handles of the POSIX, ISO C and MPI-IO paradigms, one handle per file and paradigm, so
//! I/O-aware readers see files and bytes; blocking point-to-point calls on
//! `MPI_COMM_WORLD` carry `MpiSend`/`MpiRecv` records.
//!
//! A trace keeps timing as statistics, not timestamps: times are rebuilt from each event's
//! mean gap and duration as the Chrome export does, and in an extrapolated trace they are the
//! models' predictions; the archive's description says which.

mod ffi;

use filetable::{FileId, FileTable};
use rsd::mpi::{COMM_WORLD, Peer, decode_peer};
use rsd::trace::{Event, Resolved, visit};
use rsd::{Layer, Op, Param, TraceFile};
use rsd_view::timeline::Cursor;
use std::collections::HashMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum Otf2Error {
    /// The OTF2 library could not be loaded.
    #[error(
        "the OTF2 library is not installed ({0}); install Debian's libotf2-trace-dev (or OTF2 3.x from score-p.org)"
    )]
    NoLibrary(String),
    /// The output exists: OTF2 does not overwrite an archive.
    #[error(
        "{0} already exists: OTF2 writes a new archive directory; remove it or pick another --output"
    )]
    Exists(PathBuf),
    /// The archive's directory cannot be made where the output is to go (a missing parent, a
    /// read-only or special file system): named as the output, not by the hidden directory
    /// it is first written into.
    #[error("cannot write the OTF2 archive {} (-o): {source}", dir.display())]
    Output {
        /// The directory given with `-o`.
        dir: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The finished archive could not be moved to its name.
    #[error("cannot move the OTF2 archive into {0}: {1}")]
    Rename(PathBuf, std::io::Error),
    /// A path cannot be passed to C.
    #[error("{0}: the path contains a NUL byte")]
    BadPath(PathBuf),
    /// An OTF2 call failed.
    #[error("writing the OTF2 archive {path}: {call} failed (OTF2 error {code})")]
    Call {
        /// The archive.
        path: PathBuf,
        /// The OTF2 function.
        call: &'static str,
        /// Its error code.
        code: i32,
    },
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Otf2Report {
    /// The anchor file (`<dir>/traces.otf2`) readers open.
    pub anchor: PathBuf,
    /// Locations (ranks).
    pub locations: u64,
    /// Calls written (Enter/Leave pairs), nested ones included.
    pub calls: u64,
    /// Events written in all (Enter, Leave, I/O and MPI records).
    pub events: u64,
    /// Events per location, in rank order.
    pub events_per_location: Vec<u64>,
    /// Regions defined (one per op).
    pub regions: u64,
    /// I/O handles defined (one per file and paradigm).
    pub io_handles: u64,
    /// Whether times are predictions of an extrapolated trace.
    pub predicted: bool,
}

/// The archive name inside the output directory (`traces.otf2` and `traces/`), as Score-P
/// names its own.
pub const ARCHIVE_NAME: &str = "traces";

/// Identifiers the definitions need, collected while the events are written.
#[derive(Default)]
struct Defs {
    strings: Vec<String>,
    string_ids: HashMap<String, u32>,
    regions: Vec<(Op, u32)>,
    region_ids: HashMap<Op, u32>,
    /// (paradigm, path) -> handle id, in order of first use.
    handles: Vec<(u8, String)>,
    handle_ids: HashMap<(u8, String), u32>,
}

impl Defs {
    fn string(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    fn region(&mut self, op: Op) -> u32 {
        if let Some(&id) = self.region_ids.get(&op) {
            return id;
        }
        let id = self.regions.len() as u32;
        let name = self.string(op.name());
        self.regions.push((op, name));
        self.region_ids.insert(op, id);
        id
    }

    fn handle(&mut self, paradigm: u8, path: &str) -> u32 {
        let key = (paradigm, path.to_string());
        if let Some(&id) = self.handle_ids.get(&key) {
            return id;
        }
        let id = self.handles.len() as u32;
        self.handles.push(key.clone());
        self.handle_ids.insert(key, id);
        id
    }
}

/// The I/O paradigms, by their index in the definitions.
const IO_POSIX: u8 = 0;
const IO_ISOC: u8 = 1;
const IO_MPIIO: u8 = 2;
const IO_PARADIGMS: [(&str, &str, u8); 3] = [
    ("POSIX", "POSIX I/O", ffi::IO_PARADIGM_CLASS_SERIAL),
    ("ISOC", "ISO C I/O", ffi::IO_PARADIGM_CLASS_SERIAL),
    ("MPI-IO", "MPI I/O", ffi::IO_PARADIGM_CLASS_PARALLEL),
];

fn io_paradigm(layer: Layer) -> Option<u8> {
    match layer {
        Layer::Posix => Some(IO_POSIX),
        Layer::Stdio => Some(IO_ISOC),
        Layer::MpiIo => Some(IO_MPIIO),
        _ => None,
    }
}

fn region_role(op: Op) -> u8 {
    match op.layer() {
        Layer::Posix | Layer::Stdio | Layer::MpiIo => ffi::REGION_ROLE_FILE_IO,
        _ if op == Op::Barrier => ffi::REGION_ROLE_BARRIER,
        _ if op.params().contains(&Param::Peer) || op == Op::Sendrecv => {
            ffi::REGION_ROLE_POINT2POINT
        }
        _ if op.params().contains(&Param::Comm) => ffi::REGION_ROLE_COLL_ALL2ALL,
        _ => ffi::REGION_ROLE_FUNCTION,
    }
}

/// Checks an OTF2 return code.
struct Check<'a> {
    path: &'a Path,
}

impl Check<'_> {
    fn ok(&self, call: &'static str, code: i32) -> Result<(), Otf2Error> {
        if code == ffi::SUCCESS {
            Ok(())
        } else {
            Err(Otf2Error::Call {
                path: self.path.to_path_buf(),
                call,
                code,
            })
        }
    }

    fn ptr<T>(&self, call: &'static str, p: *mut T) -> Result<*mut T, Otf2Error> {
        if p.is_null() {
            Err(Otf2Error::Call {
                path: self.path.to_path_buf(),
                call,
                code: -1,
            })
        } else {
            Ok(p)
        }
    }
}

fn cstr(s: &str) -> CString {
    // Interior NULs cannot come from C strings the tracer recorded; replace rather than fail.
    CString::new(s.replace('\0', "?")).expect("NULs replaced")
}

/// Writes `tf` as an OTF2 archive in the new directory `dir`, calling `progress(ranks done,
/// ranks in all)` as ranks are written.
pub fn export_otf2(
    tf: &TraceFile,
    dir: &Path,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<Otf2Report, Otf2Error> {
    let api = ffi::Api::load().map_err(Otf2Error::NoLibrary)?;
    if dir.exists() {
        return Err(Otf2Error::Exists(dir.to_path_buf()));
    }
    // The archive is written into a hidden directory beside the output and renamed into
    // place once closed, so an interrupted export never leaves a half archive under the name.
    let tmp = tmp_dir(dir);
    let _ = std::fs::remove_dir_all(&tmp);
    // Made and removed here first: OTF2 reports a directory it cannot make by its own lines
    // on stderr and an error code on the hidden name; this names the output and the OS error.
    std::fs::create_dir(&tmp)
        .and_then(|()| std::fs::remove_dir(&tmp))
        .map_err(|source| Otf2Error::Output {
            dir: dir.to_path_buf(),
            source,
        })?;
    // Run values (numbers that belong to the traced run) are this export's own numbers.
    let filled;
    let tf = if rsd::runvalue::present(&tf.trace.nodes) {
        let mut t = tf.clone();
        rsd::runvalue::fill(&mut t.trace, &rsd::runvalue::Fresh::here());
        filled = t;
        &filled
    } else {
        tf
    };
    let rep = write_into(&api, tf, &tmp, progress);
    let rep = match rep {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::rename(&tmp, dir) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(Otf2Error::Rename(dir.to_path_buf(), e));
    }
    Ok(Otf2Report {
        anchor: dir.join(format!("{ARCHIVE_NAME}.otf2")),
        ..rep
    })
}

/// The hidden directory an archive for `dir` is written into.
fn tmp_dir(dir: &Path) -> PathBuf {
    let name = dir
        .file_name()
        .map_or_else(|| "otf2".into(), |n| n.to_string_lossy().into_owned());
    dir.with_file_name(format!(".{name}.{}.iotrex-tmp", std::process::id()))
}

/// Writes the archive into `dir`.
fn write_into(
    api: &ffi::Api,
    tf: &TraceFile,
    dir: &Path,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<Otf2Report, Otf2Error> {
    let ck = Check { path: dir };
    let cdir = CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| Otf2Error::BadPath(dir.to_path_buf()))?;
    let name = cstr(ARCHIVE_NAME);
    let predicted = tf.header.prediction.is_some();
    // SAFETY: every call below follows the OTF2 3.x writing protocol (open, callbacks, event
    // files, one writer per location, definitions, close) with pointers the library returned
    // and NUL-terminated strings that outlive the calls.
    unsafe {
        let archive = ck.ptr(
            "OTF2_Archive_Open",
            (api.archive_open)(
                cdir.as_ptr(),
                name.as_ptr(),
                ffi::FILEMODE_WRITE,
                1 << 20,
                4 << 20,
                ffi::SUBSTRATE_POSIX,
                ffi::COMPRESSION_NONE,
            ),
        )?;
        let result = write_archive(api, &ck, archive, tf, progress);
        let close = (api.archive_close)(archive);
        let mut rep = result?;
        ck.ok("OTF2_Archive_Close", close)?;
        rep.predicted = predicted;
        Ok(rep)
    }
}

/// The archive's contents, between open and close.
unsafe fn write_archive(
    api: &ffi::Api,
    ck: &Check,
    archive: *mut ffi::Archive,
    tf: &TraceFile,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<Otf2Report, Otf2Error> {
    let flush = ffi::FlushCallbacks {
        pre: Some(ffi::pre_flush),
        post: None,
    };
    let creator = cstr(&format!("iotrex {}", env!("CARGO_PKG_VERSION")));
    let description = cstr(if tf.header.prediction.is_some() {
        "iotrex extrapolated trace: times are the models' predictions (mean gap and duration per event)"
    } else {
        "iotrex trace: times rebuilt from each event's mean gap and mean duration (the trace keeps statistics, not timestamps)"
    });
    // SAFETY: see export_otf2.
    unsafe {
        ck.ok(
            "OTF2_Archive_SetFlushCallbacks",
            (api.set_flush_callbacks)(archive, &flush, std::ptr::null_mut()),
        )?;
        ck.ok(
            "OTF2_Archive_SetSerialCollectiveCallbacks",
            (api.set_serial_collective_callbacks)(archive),
        )?;
        ck.ok(
            "OTF2_Archive_SetCreator",
            (api.set_creator)(archive, creator.as_ptr()),
        )?;
        ck.ok(
            "OTF2_Archive_SetDescription",
            (api.set_description)(archive, description.as_ptr()),
        )?;
        ck.ok("OTF2_Archive_OpenEvtFiles", (api.open_evt_files)(archive))?;
    }
    let mut defs = Defs::default();
    let trace = tf.trace.resolved();
    let ranks = trace.ranks().to_vec();
    let total = ranks.len() as u32;
    let mut rep = Otf2Report {
        locations: u64::from(total),
        ..Otf2Report::default()
    };
    let mut end_time = 0u64;
    for (done, &rank) in ranks.iter().enumerate() {
        // SAFETY: see export_otf2.
        let w = unsafe {
            ck.ptr(
                "OTF2_Archive_GetEvtWriter",
                (api.get_evt_writer)(archive, u64::from(rank)),
            )?
        };
        let mut loc = Location {
            api,
            trace: &trace,
            ck,
            w,
            rank,
            defs: &mut defs,
            files: FileTable::new(),
            now: 0,
            events: 0,
            calls: 0,
            matching: 0,
            err: None,
        };
        let mut at = Cursor::top(1.0);
        let mut idx = Vec::new();
        visit(&trace.nodes, rank, &mut idx, &mut |e, idx| {
            let (start, dur) = at.place(&e.timing);
            loc.call(e, idx, None, start, dur)
        });
        if let Some(e) = loc.err.take() {
            return Err(e);
        }
        end_time = end_time.max(loc.now);
        rep.calls += loc.calls;
        rep.events += loc.events;
        rep.events_per_location.push(loc.events);
        // SAFETY: see export_otf2.
        unsafe {
            ck.ok(
                "OTF2_Archive_CloseEvtWriter",
                (api.close_evt_writer)(archive, w),
            )?;
        }
        progress(done as u32 + 1, total);
    }
    // SAFETY: see export_otf2.
    unsafe {
        ck.ok("OTF2_Archive_CloseEvtFiles", (api.close_evt_files)(archive))?;
        // Local definition files: empty, but readers expect one per location.
        ck.ok("OTF2_Archive_OpenDefFiles", (api.open_def_files)(archive))?;
        for &rank in &ranks {
            let d = ck.ptr(
                "OTF2_Archive_GetDefWriter",
                (api.get_def_writer)(archive, u64::from(rank)),
            )?;
            ck.ok(
                "OTF2_Archive_CloseDefWriter",
                (api.close_def_writer)(archive, d),
            )?;
        }
        ck.ok("OTF2_Archive_CloseDefFiles", (api.close_def_files)(archive))?;
        let g = ck.ptr(
            "OTF2_Archive_GetGlobalDefWriter",
            (api.get_global_def_writer)(archive),
        )?;
        let h = &tf.header;
        let locations: Vec<(u32, String)> = ranks
            .iter()
            .map(|&s| {
                (
                    s,
                    rsd::process::slot_name(h.processes.as_ref(), h.nranks, s),
                )
            })
            .collect();
        write_defs(
            api,
            ck,
            g,
            &mut defs,
            &locations,
            &rep.events_per_location,
            end_time,
        )?;
    }
    rep.regions = defs.regions.len() as u64;
    rep.io_handles = defs.handles.len() as u64;
    Ok(rep)
}

/// The global definitions: clock, strings, system tree, locations, regions, the MPI world
/// communicator and the I/O paradigms, files and handles.
unsafe fn write_defs(
    api: &ffi::Api,
    ck: &Check,
    g: *mut ffi::GlobalDefWriter,
    defs: &mut Defs,
    locations: &[(u32, String)],
    events: &[u64],
    end_time: u64,
) -> Result<(), Otf2Error> {
    let ranks: Vec<u32> = locations.iter().map(|(r, _)| *r).collect();
    let machine = defs.string("iotrex machine");
    let machine_class = defs.string("machine");
    let world = defs.string("MPI_COMM_WORLD");
    let group_name = defs.string("");
    let rank_names: Vec<(u32, u32)> = locations
        .iter()
        .map(|(_, name)| (defs.string(name), defs.string(&format!("{name} thread 0"))))
        .collect();
    let paradigm_names: Vec<(u32, u32)> = IO_PARADIGMS
        .iter()
        .map(|(id, name, _)| (defs.string(id), defs.string(name)))
        .collect();
    let files: Vec<String> = {
        let mut f: Vec<String> = defs.handles.iter().map(|(_, p)| p.clone()).collect();
        f.sort();
        f.dedup();
        f
    };
    let file_ids: HashMap<String, u32> = files
        .iter()
        .enumerate()
        .map(|(i, p)| (p.clone(), i as u32))
        .collect();
    let file_names: Vec<u32> = files.iter().map(|p| defs.string(p)).collect();
    // SAFETY: see export_otf2.
    unsafe {
        // Nanosecond ticks.
        ck.ok(
            "OTF2_GlobalDefWriter_WriteClockProperties",
            (api.def_clock)(g, 1_000_000_000, 0, end_time.max(1), u64::MAX),
        )?;
        for (i, s) in defs.strings.iter().enumerate() {
            let c = cstr(s);
            ck.ok(
                "OTF2_GlobalDefWriter_WriteString",
                (api.def_string)(g, i as u32, c.as_ptr()),
            )?;
        }
        ck.ok(
            "OTF2_GlobalDefWriter_WriteSystemTreeNode",
            (api.def_system_tree_node)(
                g,
                ffi::SYSTEM_TREE_ROOT,
                machine,
                machine_class,
                ffi::UNDEFINED_U32,
            ),
        )?;
        for (i, &r) in ranks.iter().enumerate() {
            ck.ok(
                "OTF2_GlobalDefWriter_WriteLocationGroup",
                (api.def_location_group)(
                    g,
                    r,
                    rank_names[i].0,
                    ffi::LOCATION_GROUP_TYPE_PROCESS,
                    ffi::SYSTEM_TREE_ROOT,
                    ffi::UNDEFINED_U32,
                ),
            )?;
            ck.ok(
                "OTF2_GlobalDefWriter_WriteLocation",
                (api.def_location)(
                    g,
                    u64::from(r),
                    rank_names[i].1,
                    ffi::LOCATION_TYPE_CPU_THREAD,
                    events[i],
                    r,
                ),
            )?;
        }
        for (id, &(op, name)) in defs.regions.iter().enumerate() {
            let paradigm = match op.layer() {
                Layer::Mpi | Layer::MpiIo => ffi::PARADIGM_MPI,
                _ => ffi::PARADIGM_USER,
            };
            ck.ok(
                "OTF2_GlobalDefWriter_WriteRegion",
                (api.def_region)(
                    g,
                    id as u32,
                    name,
                    name,
                    name,
                    region_role(op),
                    paradigm,
                    ffi::REGION_FLAG_NONE,
                    ffi::UNDEFINED_U32,
                    0,
                    0,
                ),
            )?;
        }
        // MPI_COMM_WORLD: its locations, then the group of its ranks.
        let members: Vec<u64> = ranks.iter().map(|&r| u64::from(r)).collect();
        ck.ok(
            "OTF2_GlobalDefWriter_WriteGroup",
            (api.def_group)(
                g,
                0,
                group_name,
                ffi::GROUP_TYPE_COMM_LOCATIONS,
                ffi::PARADIGM_MPI,
                ffi::GROUP_FLAG_NONE,
                members.len() as u32,
                members.as_ptr(),
            ),
        )?;
        let group_ranks: Vec<u64> = (0..members.len() as u64).collect();
        ck.ok(
            "OTF2_GlobalDefWriter_WriteGroup",
            (api.def_group)(
                g,
                1,
                group_name,
                ffi::GROUP_TYPE_COMM_GROUP,
                ffi::PARADIGM_MPI,
                ffi::GROUP_FLAG_NONE,
                group_ranks.len() as u32,
                group_ranks.as_ptr(),
            ),
        )?;
        ck.ok(
            "OTF2_GlobalDefWriter_WriteComm",
            (api.def_comm)(g, 0, world, 1, ffi::UNDEFINED_U32, ffi::COMM_FLAG_NONE),
        )?;
        for (i, &(ident, name)) in paradigm_names.iter().enumerate() {
            ck.ok(
                "OTF2_GlobalDefWriter_WriteIoParadigm",
                (api.def_io_paradigm)(
                    g,
                    i as u8,
                    ident,
                    name,
                    IO_PARADIGMS[i].2,
                    ffi::IO_PARADIGM_FLAG_NONE,
                    0,
                    std::ptr::null(),
                    std::ptr::null(),
                    std::ptr::null(),
                ),
            )?;
        }
        for (i, &n) in file_names.iter().enumerate() {
            ck.ok(
                "OTF2_GlobalDefWriter_WriteIoRegularFile",
                (api.def_io_regular_file)(g, i as u32, n, ffi::SYSTEM_TREE_ROOT),
            )?;
        }
        for (id, (paradigm, path)) in defs.handles.iter().enumerate() {
            let comm = if *paradigm == IO_MPIIO {
                0
            } else {
                ffi::UNDEFINED_U32
            };
            ck.ok(
                "OTF2_GlobalDefWriter_WriteIoHandle",
                (api.def_io_handle)(
                    g,
                    id as u32,
                    file_names[file_ids[path] as usize],
                    file_ids[path],
                    *paradigm,
                    ffi::IO_HANDLE_FLAG_NONE,
                    comm,
                    ffi::UNDEFINED_U32,
                ),
            )?;
        }
    }
    Ok(())
}

/// One rank's event writer and state.
struct Location<'a> {
    api: &'a ffi::Api,
    /// The trace with the offsets the other ranks' calls decide resolved: an I/O record's
    /// offset is the one the call asked for.
    trace: &'a Resolved<'a>,
    ck: &'a Check<'a>,
    w: *mut ffi::EvtWriter,
    rank: u32,
    defs: &'a mut Defs,
    files: FileTable,
    /// The last timestamp written: OTF2 wants them non-decreasing per location.
    now: u64,
    events: u64,
    calls: u64,
    matching: u64,
    err: Option<Otf2Error>,
}

impl Location<'_> {
    fn stamp(&mut self, t: f64) -> u64 {
        self.now = self.now.max(t.max(0.0).round() as u64);
        self.now
    }

    fn ok(&mut self, call: &'static str, code: i32) -> bool {
        self.events += 1;
        match self.ck.ok(call, code) {
            Ok(()) => true,
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }

    /// Writes `e` (and the calls made inside it) from `start` for `dur` ns; false stops the
    /// walk on an error.
    fn call(
        &mut self,
        e: &Event,
        idx: &mut Vec<u64>,
        ctx: Option<FileId>,
        start: f64,
        dur: f64,
    ) -> bool {
        let flat = self.trace.flatten(e, self.rank, idx);
        let region = self.defs.region(e.op);
        let filetable::Resolved { file, path, .. } = self.files.resolve_call(&flat, ctx);
        let t0 = self.stamp(start);
        // SAFETY: `w` is this location's open event writer.
        if !self.ok("OTF2_EvtWriter_Enter", unsafe {
            (self.api.enter)(self.w, std::ptr::null_mut(), t0, region)
        }) {
            return false;
        }
        self.calls += 1;
        let bytes = e.op.data_bytes(&flat.params);
        let io = match (io_paradigm(e.op.layer()), &path, e.op.dir()) {
            (Some(p), Some(path), rsd::op::Dir::Read | rsd::op::Dir::Write) => {
                let mode = if e.op.dir() == rsd::op::Dir::Read {
                    ffi::IO_OPERATION_MODE_READ
                } else {
                    ffi::IO_OPERATION_MODE_WRITE
                };
                Some((self.defs.handle(p, path), mode))
            }
            _ => None,
        };
        let matching = self.matching;
        if let Some((h, mode)) = io {
            self.matching += 1;
            // SAFETY: as above.
            if !self.ok("OTF2_EvtWriter_IoOperationBegin", unsafe {
                (self.api.io_begin)(
                    self.w,
                    std::ptr::null_mut(),
                    t0,
                    h,
                    mode,
                    ffi::IO_OPERATION_FLAG_NONE,
                    bytes,
                    matching,
                )
            }) {
                return false;
            }
        }
        if !self.p2p(&flat, t0) {
            return false;
        }
        // Calls made inside: laid out inside this call's span (`rsd_view::timeline`).
        let mut inner = Cursor::within(start, dur, 1.0);
        let ok = visit(&e.children, self.rank, idx, &mut |c, idx| {
            let (cs, cd) = inner.place(&c.timing);
            self.call(c, idx, file.or(ctx), cs, cd)
        });
        if !ok {
            return false;
        }
        let t1 = self.stamp(start + dur);
        if let Some((h, _)) = io {
            // SAFETY: as above.
            if !self.ok("OTF2_EvtWriter_IoOperationComplete", unsafe {
                (self.api.io_complete)(self.w, std::ptr::null_mut(), t1, h, bytes, matching)
            }) {
                return false;
            }
        }
        // SAFETY: as above.
        self.ok("OTF2_EvtWriter_Leave", unsafe {
            (self.api.leave)(self.w, std::ptr::null_mut(), t1, region)
        })
    }

    /// `MpiSend`/`MpiRecv` records of a blocking point-to-point call on `MPI_COMM_WORLD`.
    fn p2p(&mut self, f: &rsd::FlatEvent, t: u64) -> bool {
        let me = i64::from(self.rank);
        let world = |f: &rsd::FlatEvent| f.get(Param::Comm) == Some(COMM_WORLD);
        let rank_of = |stored: Option<i64>| match stored.map(|s| decode_peer(s, me)) {
            Some(Peer::Rank(r)) => u32::try_from(r).ok(),
            _ => None,
        };
        let tag = |p| f.get(p).and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        if !world(f) {
            return true;
        }
        match f.op {
            Op::Send => sends.push((rank_of(f.get(Param::Peer)), tag(Param::Tag))),
            Op::Recv => recvs.push((rank_of(f.get(Param::Peer)), tag(Param::Tag))),
            Op::Sendrecv => {
                sends.push((rank_of(f.get(Param::Dest)), tag(Param::Sendtag)));
                recvs.push((rank_of(f.get(Param::Source)), tag(Param::Recvtag)));
            }
            _ => return true,
        }
        let bytes = f.get(Param::Bytes).unwrap_or(0).max(0) as u64;
        for (peer, tag) in sends {
            if let Some(p) = peer {
                // SAFETY: as above.
                if !self.ok("OTF2_EvtWriter_MpiSend", unsafe {
                    (self.api.mpi_send)(self.w, std::ptr::null_mut(), t, p, 0, tag, bytes)
                }) {
                    return false;
                }
            }
        }
        for (peer, tag) in recvs {
            if let Some(p) = peer {
                // SAFETY: as above.
                if !self.ok("OTF2_EvtWriter_MpiRecv", unsafe {
                    (self.api.mpi_recv)(self.w, std::ptr::null_mut(), t, p, 0, tag, bytes)
                }) {
                    return false;
                }
            }
        }
        true
    }
}
