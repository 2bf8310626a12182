//! The open-file table of one rank: which file each handle refers to, where its positions are,
//! and which byte regions of which file every call touches.
//!
//! This is the one place that knows the file semantics of a trace:
//! - POSIX descriptors, stdio streams and `MPI_File`s live in separate handle tables
//!   ([`Handle`]); descriptor copies (`dup`) share one open file and its offset;
//! - reads and writes without an offset use the position (`O_APPEND` writes go to the end of
//!   what this rank knows the file holds), `lseek` reports its result, `fseek` and
//!   `MPI_File_seek` move by whence;
//! - MPI-IO offsets count etypes of the file's view, from its displacement, through its
//!   filetype tiled from there: [`View::regions`] turns a data position into file regions;
//!   the individual file pointer counts etypes too and `set_view` resets it; the shared file
//!   pointer (`*_shared`, `*_ordered`) is the caller's ([`FileEnv`]) or, offline, this rank's;
//! - a POSIX call inside an MPI-IO call on a descriptor nobody saw opened acts on the MPI
//!   file's own file (MPI-IO libraries open it internally, often untraced).
//!
//! Replay (both runtimes), `--prep` and the CODES export read the trace through this table and
//! keep only their issuing policy, so one trace means the same bytes everywhere.

use crate::types::{Flat, Types};
use rsd::mpi::{Whence, amode};
use rsd::op::{Dir, Handle, Layer, Op, Param, fopen_mode};
use std::collections::HashMap;
use std::sync::Arc;

/// An open file of the table (what every handle referring to it shares).
pub type FileId = u64;

/// `fcntl`'s `F_SETFL` (Linux's, as the traced program passed it).
const F_SETFL: i64 = 4;

/// Linux `open(2)` flags, as the tracer records them.
pub mod oflags {
    /// `O_WRONLY`
    pub const WRONLY: i64 = 0o1;
    /// `O_RDWR`
    pub const RDWR: i64 = 0o2;
    /// `O_CREAT`
    pub const CREAT: i64 = 0o100;
    /// `O_EXCL`
    pub const EXCL: i64 = 0o200;
    /// `O_TRUNC`
    pub const TRUNC: i64 = 0o1000;
    /// `O_APPEND`
    pub const APPEND: i64 = 0o2000;
}

/// The `open(2)` flags equivalent to an MPI-IO `amode`.
pub fn amode_flags(a: i64) -> i64 {
    let mut f = if a & amode::RDWR != 0 {
        oflags::RDWR
    } else if a & amode::WRONLY != 0 {
        oflags::WRONLY
    } else {
        0
    };
    if a & amode::CREATE != 0 {
        f |= oflags::CREAT;
    }
    if a & amode::EXCL != 0 {
        f |= oflags::EXCL;
    }
    if a & amode::APPEND != 0 {
        f |= oflags::APPEND;
    }
    f
}

/// An MPI-IO file view: displacement, etype and filetype, with the filetype flattened when it
/// is not contiguous.
#[derive(Debug, Clone)]
pub struct View {
    /// Byte displacement of the view.
    pub disp: i64,
    /// The etype's symbolic id.
    pub etype: i64,
    /// The etype's size in bytes (offsets and file pointers count etypes).
    pub etype_size: i64,
    /// The filetype's symbolic id.
    pub filetype: i64,
    /// The filetype flattened, when tiling it does not give a contiguous stream.
    pub flat: Option<Arc<Flat>>,
}

impl Default for View {
    /// The view a file has when opened: bytes from 0.
    fn default() -> View {
        View {
            disp: 0,
            etype: rsd::mpi::BYTE,
            etype_size: 1,
            filetype: rsd::mpi::BYTE,
            flat: None,
        }
    }
}

impl View {
    /// The file regions (byte offset, length), in order, where `len` bytes of data at data
    /// position `pos` (bytes of visible data: an etype offset times the etype size) lie.
    pub fn regions(&self, pos: i64, len: i64) -> Vec<(u64, u64)> {
        if len <= 0 {
            return Vec::new();
        }
        match &self.flat {
            None => vec![((self.disp + pos).max(0) as u64, len as u64)],
            Some(flat) => flat
                .pieces(self.disp, pos, len)
                .into_iter()
                .map(|(o, n)| (o, n as u64))
                .collect(),
        }
    }

    /// The data bytes this view shows before byte `end` of the file (where `MPI_SEEK_END`
    /// puts a file pointer).
    pub fn data_before(&self, end: i64) -> i64 {
        match &self.flat {
            None => (end - self.disp).max(0),
            Some(flat) => flat.data_before(self.disp, end),
        }
    }
}

/// An open file.
#[derive(Debug, Clone)]
pub struct OpenFile {
    /// The traced path; `None` for a handle used without a traced open.
    pub path: Option<String>,
    /// The handle table of the handle that opened it.
    pub kind: Handle,
    /// The `open(2)` flags it was opened with (an MPI amode or fopen mode converted).
    pub flags: i64,
    /// Position: bytes for descriptors and streams, etypes of the view for MPI files (the
    /// individual file pointer).
    pub pos: i64,
    /// The MPI-IO view (bytes from 0 for descriptors and streams).
    pub view: View,
    /// Handles referring to it (descriptor copies share it); closed with the last.
    refs: u32,
}

impl OpenFile {
    /// Whether writes go to the end of the file (`O_APPEND`, stdio's `a`).
    pub fn append(&self) -> bool {
        self.kind != Handle::MpiFile && self.flags & oflags::APPEND != 0
    }
}

/// Bytes a call moved to or from a file, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The file.
    pub file: FileId,
    /// Read or write.
    pub dir: Dir,
    /// The bytes moved (the sum of the regions' lengths).
    pub bytes: u64,
    /// The file regions (byte offset, length), in the order the data fills them.
    pub regions: Vec<(u64, u64)>,
    /// The handle had no traced open (nor an enclosing MPI file): the table made up an
    /// anonymous file for it, which a consumer that must see an open first has to open.
    pub implicit_open: bool,
}

/// What one call does to the table's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// A handle now refers to a newly opened file.
    Open(FileId),
    /// A handle was closed; `last` when it was the file's last handle (the file is gone from
    /// the table: [`FileTable::apply`] returns it in `closed`).
    Close {
        /// The file the handle referred to.
        file: FileId,
        /// Whether the file itself closed.
        last: bool,
    },
    /// A descriptor copy now refers to `file` (as `dup`).
    Dup(FileId),
    /// Data moved.
    Access(Access),
    /// The file's size was set (`ftruncate`, `MPI_File_set_size`).
    Resize {
        /// The file.
        file: FileId,
        /// Its new size.
        size: u64,
    },
    /// A view was set; `unbuilt` says why it is taken as bytes from its displacement when its
    /// filetype is built on a type the trace never built.
    SetView {
        /// The file.
        file: FileId,
        /// Why the view is not the recorded one, if it is not.
        unbuilt: Option<String>,
    },
    /// Anything else: a seek, a failed open, a call on an unknown handle that moves nothing,
    /// a call that touches no file.
    None,
}

/// What [`FileTable::resolve_call`] found for one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The file the call acted on.
    pub file: Option<FileId>,
    /// Its traced path.
    pub path: Option<String>,
    /// Where the first byte the call moved lies in the file.
    pub offset: Option<u64>,
}

/// What only the caller knows: the real state a replay shares between ranks.
pub trait FileEnv {
    /// The size of the file MPI file handle `fh` refers to now, when the caller knows it
    /// better than the table (a real file other ranks also write).
    fn size(&mut self, _fh: i64) -> Option<u64> {
        None
    }

    /// Takes `units` etypes from the shared file pointer of MPI file handle `fh` and returns
    /// where it was, when the caller shares it between ranks.
    fn fetch_add_shared(&mut self, _fh: i64, _units: i64) -> Option<i64> {
        None
    }

    /// `MPI_File_seek_shared` of MPI file handle `fh`, when the caller shares the pointer:
    /// sets it to `to(where it is)` (in etypes) once every rank of the file is there, so no
    /// rank's earlier or later shared access races the seek. Returns false when the caller
    /// does not share it (the table then moves its own).
    fn seek_shared(&mut self, _fh: i64, _to: &dyn Fn(i64) -> i64) -> bool {
        false
    }
}

/// The table's own knowledge only: one rank walked alone (the CODES export, `--prep`).
pub struct Offline;

impl FileEnv for Offline {}

/// The open files of one rank, and the datatypes it built (views need them).
#[derive(Debug, Default)]
pub struct FileTable {
    handles: HashMap<(Handle, i64), FileId>,
    /// Handles that name an MPI file's file without a traced open of their own (descriptors
    /// the MPI library opened outside the trace): they hold no reference, closing one only
    /// forgets the name, and they die with the MPI file.
    aliases: HashMap<(Handle, i64), FileId>,
    files: HashMap<FileId, OpenFile>,
    next: FileId,
    /// Bytes this rank knows each file holds (its own writes, truncations and set sizes;
    /// other ranks' writes are not visible offline), for `O_APPEND` and `SEEK_END`.
    sizes: HashMap<String, u64>,
    /// Shared file pointers (etypes) by path, when the caller does not share them.
    shared: HashMap<String, i64>,
    types: Types,
}

/// The handle table and handle of a call acting on an open handle.
fn handle_of(op: Op, params: &[i64]) -> Option<(Handle, i64)> {
    let kind = op.handle()?;
    let p = match kind {
        Handle::Fd => Param::Fd,
        Handle::Stream => Param::Stream,
        Handle::MpiFile => Param::Fh,
    };
    Some((kind, op.param(params, p)))
}

impl FileTable {
    /// An empty table.
    pub fn new() -> FileTable {
        FileTable::default()
    }

    /// The datatypes built so far.
    pub fn types(&self) -> &Types {
        &self.types
    }

    /// An open file.
    pub fn file(&self, id: FileId) -> Option<&OpenFile> {
        self.files.get(&id)
    }

    /// The file a handle refers to.
    pub fn lookup(&self, kind: Handle, h: i64) -> Option<FileId> {
        self.handles
            .get(&(kind, h))
            .copied()
            .filter(|id| self.files.contains_key(id))
    }

    /// The open MPI file of handle `fh`.
    pub fn mpi_file(&self, fh: i64) -> Option<&OpenFile> {
        self.lookup(Handle::MpiFile, fh)
            .and_then(|id| self.file(id))
    }

    /// Applies one expanded call offline and names what it touched, for exports that show
    /// each call with its file: the file it acts on, that file's path (a call on a handle
    /// gets the path of the handle's open), and the byte offset where the data it moved
    /// starts. `ctx` is the file of the call it is nested in.
    pub fn resolve_call(&mut self, e: &rsd::FlatEvent, ctx: Option<FileId>) -> Resolved {
        // The handle's file before the call: a close takes it out of the table.
        let before = handle_of(e.op, &e.params).and_then(|(kind, h)| self.lookup(kind, h));
        let before_path = before
            .and_then(|id| self.file(id))
            .and_then(|f| f.path.clone());
        let (effect, closed) = self.apply(e.op, &e.params, e.path.as_deref(), ctx, &mut Offline);
        let (file, offset) = match &effect {
            Effect::Open(id) | Effect::Dup(id) => (Some(*id), None),
            Effect::Access(a) => (Some(a.file), a.regions.first().map(|r| r.0)),
            Effect::Close { file, .. }
            | Effect::Resize { file, .. }
            | Effect::SetView { file, .. } => (Some(*file), None),
            Effect::None => (before, None),
        };
        let path = e
            .path
            .clone()
            .or_else(|| {
                file.and_then(|id| self.file(id))
                    .and_then(|f| f.path.clone())
            })
            .or_else(|| closed.and_then(|(_, f)| f.path))
            .or(before_path);
        Resolved { file, path, offset }
    }

    /// The size this rank knows `path` has.
    pub fn known_size(&self, path: &str) -> u64 {
        self.sizes.get(path).copied().unwrap_or(0)
    }

    /// Applies call `op` with parameters `params` (and its concrete path) to the table and
    /// says what it did. `ctx` is the file of the MPI-IO call a POSIX call is nested in.
    /// Returns the effect, and the file the call closed, when it closed the last handle of
    /// one (a close, or a `dup2` onto a traced descriptor).
    pub fn apply(
        &mut self,
        op: Op,
        params: &[i64],
        path: Option<&str>,
        ctx: Option<FileId>,
        env: &mut dyn FileEnv,
    ) -> (Effect, Option<(FileId, OpenFile)>) {
        let get = |p: Param| op.param(params, p);
        match op {
            Op::Open | Op::Openat if get(Param::Fd) >= 0 => {
                let e = self.open(Handle::Fd, get(Param::Fd), path, get(Param::Flags));
                (e, None)
            }
            Op::Creat if get(Param::Fd) >= 0 => {
                let flags = oflags::WRONLY | oflags::CREAT | oflags::TRUNC;
                (self.open(Handle::Fd, get(Param::Fd), path, flags), None)
            }
            Op::Fopen if get(Param::Stream) >= 0 => {
                let flags = fopen_mode::open_flags(get(Param::Mode));
                (
                    self.open(Handle::Stream, get(Param::Stream), path, flags),
                    None,
                )
            }
            Op::FileOpen if get(Param::Fh) >= 0 => {
                let a = get(Param::Amode);
                let e = self.open(Handle::MpiFile, get(Param::Fh), path, amode_flags(a));
                if a & amode::APPEND != 0
                    && let Effect::Open(id) = e
                {
                    // MPI_MODE_APPEND puts the initial file pointers at the end of the file.
                    let end = env.size(get(Param::Fh));
                    let f = self.files.get_mut(&id).expect("just opened");
                    let known = f.path.as_ref().and_then(|p| self.sizes.get(p)).copied();
                    f.pos = end.or(known).unwrap_or(0) as i64;
                }
                (e, None)
            }
            Op::Close | Op::Fclose | Op::FileClose => {
                let (kind, h) = handle_of(op, params).expect("close ops act on a handle");
                self.close(kind, h)
            }
            Op::Dup => {
                let mut closed = None;
                if get(Param::Closed) >= 0 {
                    // dup2/dup3 onto a traced descriptor closed it first.
                    closed = self.close(Handle::Fd, get(Param::Closed)).1;
                }
                if get(Param::Newfd) < 0 {
                    return (Effect::None, closed);
                }
                let (id, _) = self.resolve(Handle::Fd, get(Param::Fd), ctx);
                self.release(Handle::Fd, get(Param::Newfd));
                self.handles.insert((Handle::Fd, get(Param::Newfd)), id);
                self.files.get_mut(&id).expect("resolved").refs += 1;
                (Effect::Dup(id), closed)
            }
            // A stream on a traced descriptor: one open file under both handles, as a dup.
            Op::Fdopen => {
                let s = get(Param::Stream);
                if s < 0 {
                    return (Effect::None, None);
                }
                let (id, _) = self.resolve(Handle::Fd, get(Param::Fd), ctx);
                self.release(Handle::Stream, s);
                self.handles.insert((Handle::Stream, s), id);
                self.files.get_mut(&id).expect("resolved").refs += 1;
                (Effect::Dup(id), None)
            }
            Op::Ftruncate | Op::FileSetSize => {
                let (kind, h) = handle_of(op, params).expect("acts on a handle");
                let size = get(if op == Op::Ftruncate {
                    Param::Length
                } else {
                    Param::Size
                })
                .max(0) as u64;
                match self.lookup(kind, h) {
                    Some(file) => {
                        if let Some(p) = self.files[&file].path.clone() {
                            self.sizes.insert(p, size);
                        }
                        (Effect::Resize { file, size }, None)
                    }
                    None => (Effect::None, None),
                }
            }
            // fcntl(F_SETFL) with its flags recorded (see `rsd::op`): O_APPEND set or cleared
            // on the open file changes where its later writes go.
            Op::Fcntl if get(Param::Cmd) == F_SETFL && get(Param::Ret) >= 0 => {
                if let Some(&[fl]) = op.array_values(params, "setfl")
                    && let Some(f) = self.handle_mut(Handle::Fd, get(Param::Fd))
                {
                    f.flags = (f.flags & !oflags::APPEND) | (fl & oflags::APPEND);
                }
                (Effect::None, None)
            }
            Op::Lseek => {
                // lseek's result is the new position, exact whatever the whence; a failed
                // lseek (-1) leaves the position alone.
                let ret = get(Param::Ret);
                if ret >= 0
                    && let Some(f) = self.handle_mut(Handle::Fd, get(Param::Fd))
                {
                    f.pos = ret;
                }
                (Effect::None, None)
            }
            Op::Fseek => {
                self.seek_bytes(get(Param::Stream), get(Param::Offset), get(Param::Whence));
                (Effect::None, None)
            }
            Op::FileSeek => {
                self.seek_mpi(get(Param::Fh), get(Param::Offset), get(Param::Whence), env);
                (Effect::None, None)
            }
            Op::FileSeekShared => {
                self.seek_shared(get(Param::Fh), get(Param::Offset), get(Param::Whence), env);
                (Effect::None, None)
            }
            Op::FileSetView => (self.set_view(params), None),
            _ if op.layer() == Layer::Mpi => {
                self.types.track_call(op, params);
                (Effect::None, None)
            }
            // A library above MPI-IO (HDF5) moves its bytes through the calls it made, its
            // children: its own call names objects inside the file, not file regions.
            _ if op.layer().is_container() => (Effect::None, None),
            _ if op.dir() != Dir::None => (self.access(op, params, ctx, env), None),
            _ => (Effect::None, None),
        }
    }

    fn open(&mut self, kind: Handle, h: i64, path: Option<&str>, flags: i64) -> Effect {
        if let Some(p) = path
            && flags & oflags::TRUNC != 0
        {
            self.sizes.insert(p.to_string(), 0);
        }
        // A handle reused without a traced close (the tracer saw the close fail, say).
        self.release(kind, h);
        let id = self.next;
        self.next += 1;
        self.files.insert(
            id,
            OpenFile {
                path: path.map(str::to_string),
                kind,
                flags,
                pos: 0,
                view: View::default(),
                refs: 1,
            },
        );
        self.handles.insert((kind, h), id);
        Effect::Open(id)
    }

    /// Drops handle `h`'s reference to its file; returns the file when that was the last.
    fn release(&mut self, kind: Handle, h: i64) -> Option<(FileId, OpenFile)> {
        let id = self.handles.remove(&(kind, h))?;
        if self.aliases.remove(&(kind, h)).is_some() {
            return None;
        }
        let f = self.files.get_mut(&id)?;
        f.refs = f.refs.saturating_sub(1);
        if f.refs == 0 {
            if !self.aliases.is_empty() {
                let names: Vec<_> = self
                    .aliases
                    .iter()
                    .filter(|(_, f)| **f == id)
                    .map(|(k, _)| *k)
                    .collect();
                for k in names {
                    self.aliases.remove(&k);
                    self.handles.remove(&k);
                }
            }
            return self.files.remove(&id).map(|f| (id, f));
        }
        None
    }

    fn close(&mut self, kind: Handle, h: i64) -> (Effect, Option<(FileId, OpenFile)>) {
        let Some(file) = self.lookup(kind, h) else {
            self.handles.remove(&(kind, h));
            return (Effect::None, None);
        };
        match self.release(kind, h) {
            Some(closed) => (Effect::Close { file, last: true }, Some(closed)),
            None => (Effect::Close { file, last: false }, None),
        }
    }

    fn handle_mut(&mut self, kind: Handle, h: i64) -> Option<&mut OpenFile> {
        let id = self.lookup(kind, h)?;
        self.files.get_mut(&id)
    }

    /// The file of handle `h`: its own, the enclosing MPI-IO call's (`ctx`: a descriptor the
    /// MPI library opened outside the trace), or a new anonymous one (`true`).
    fn resolve(&mut self, kind: Handle, h: i64, ctx: Option<FileId>) -> (FileId, bool) {
        if let Some(id) = self.lookup(kind, h) {
            return (id, false);
        }
        if let Some(id) = ctx.filter(|id| self.files.contains_key(id)) {
            self.handles.insert((kind, h), id);
            self.aliases.insert((kind, h), id);
            return (id, false);
        }
        let flags = oflags::RDWR | oflags::CREAT;
        let Effect::Open(id) = self.open(kind, h, None, flags) else {
            unreachable!("open always opens")
        };
        (id, true)
    }

    /// A stream's position moved by whence (fseek reports no result).
    fn seek_bytes(&mut self, stream: i64, offset: i64, whence: i64) {
        let Some(id) = self.lookup(Handle::Stream, stream) else {
            return;
        };
        let Some(kind) = rsd::mpi::whence(whence) else {
            return;
        };
        let size = self.files[&id]
            .path
            .as_deref()
            .map_or(0, |p| self.known_size(p)) as i64;
        let f = self.files.get_mut(&id).expect("looked up");
        let base = match kind {
            Whence::Set => 0,
            Whence::Cur => f.pos,
            Whence::End => size,
        };
        let p = base.saturating_add(offset);
        // Seeking before the start fails (EINVAL) and leaves the position alone.
        if p >= 0 {
            f.pos = p;
        }
    }

    /// An MPI file's individual pointer moved by whence, in etypes of its view.
    fn seek_mpi(&mut self, fh: i64, offset: i64, whence: i64, env: &mut dyn FileEnv) {
        let Some(id) = self.lookup(Handle::MpiFile, fh) else {
            return;
        };
        let known = self.files[&id]
            .path
            .as_deref()
            .map_or(0, |p| self.known_size(p));
        let end = env.size(fh).unwrap_or(known) as i64;
        let f = self.files.get_mut(&id).expect("looked up");
        f.pos = match rsd::mpi::whence(whence) {
            Some(Whence::Cur) => f.pos + offset,
            // The end of file in the view: the data the view shows before it.
            Some(Whence::End) => f.view.data_before(end) / f.view.etype_size.max(1) + offset,
            _ => offset,
        };
    }

    /// An MPI file's shared pointer moved by whence, in etypes of its view (the caller's
    /// pointer when it shares one, else this rank's by path).
    fn seek_shared(&mut self, fh: i64, offset: i64, whence: i64, env: &mut dyn FileEnv) {
        let Some(id) = self.lookup(Handle::MpiFile, fh) else {
            return;
        };
        let f = &self.files[&id];
        let known = f.path.as_deref().map_or(0, |p| self.known_size(p));
        let end = env.size(fh).unwrap_or(known) as i64;
        let units_at_end = f.view.data_before(end) / f.view.etype_size.max(1);
        let to = move |at: i64| match rsd::mpi::whence(whence) {
            Some(Whence::Cur) => at + offset,
            Some(Whence::End) => units_at_end + offset,
            _ => offset,
        };
        if !env.seek_shared(fh, &to) {
            let key = f.path.clone().unwrap_or_default();
            let sp = self.shared.entry(key).or_insert(0);
            *sp = to(*sp);
        }
    }

    fn set_view(&mut self, params: &[i64]) -> Effect {
        let get = |p: Param| Op::FileSetView.param(params, p);
        let Some(file) = self.lookup(Handle::MpiFile, get(Param::Fh)) else {
            return Effect::None;
        };
        let (etype, filetype) = (get(Param::Etype), get(Param::Filetype));
        // A filetype built on a type the trace never built becomes bytes from the
        // displacement (the accesses stay as large as recorded and near where they were).
        let unbuilt = crate::types::unbuilt_view(&self.types, filetype);
        let flat = match unbuilt {
            Some(_) => None,
            None => match self.types.flatten(filetype) {
                Ok(flat) if !flat.is_dense() => Some(Arc::new(flat)),
                Ok(_) => None,
                Err(why) => {
                    let f = self.files.get_mut(&file).expect("looked up");
                    f.view = View {
                        disp: get(Param::Disp),
                        ..View::default()
                    };
                    f.pos = 0;
                    return Effect::SetView {
                        file,
                        unbuilt: Some(why),
                    };
                }
            },
        };
        let etype_size = self.types.size(etype).max(1);
        let f = self.files.get_mut(&file).expect("looked up");
        f.view = View {
            disp: get(Param::Disp),
            etype,
            etype_size,
            filetype,
            flat,
        };
        // MPI_File_set_view resets the individual file pointer to the view's start.
        f.pos = 0;
        Effect::SetView { file, unbuilt }
    }

    /// A call that moves data: where its bytes lie.
    fn access(
        &mut self,
        op: Op,
        params: &[i64],
        ctx: Option<FileId>,
        env: &mut dyn FileEnv,
    ) -> Effect {
        let Some((kind, h)) = handle_of(op, params) else {
            return Effect::None;
        };
        let bytes = op.data_bytes(params);
        if kind == Handle::MpiFile {
            return self.access_mpi(op, params, h, bytes, env);
        }
        if bytes == 0 {
            // Nothing moved (a failed or empty call): no position changes either.
            return Effect::None;
        }
        let (file, implicit_open) = self.resolve(kind, h, ctx);
        let offset = op.get(params, Param::Offset);
        let f = &self.files[&file];
        let known = f.path.as_deref().map_or(0, |p| self.known_size(p));
        let at = match offset {
            // Positioned calls leave the position alone.
            Some(o) if kind == Handle::Fd => o.max(0) as u64,
            _ => {
                let at = if op.dir() == Dir::Write && f.append() {
                    known
                } else {
                    f.pos.max(0) as u64
                };
                self.files.get_mut(&file).expect("resolved").pos = (at + bytes) as i64;
                at
            }
        };
        self.finish_access(file, op.dir(), bytes, vec![(at, bytes)], implicit_open)
    }

    fn access_mpi(
        &mut self,
        op: Op,
        params: &[i64],
        fh: i64,
        bytes: u64,
        env: &mut dyn FileEnv,
    ) -> Effect {
        let (file, implicit_open) = self.resolve(Handle::MpiFile, fh, None);
        let f = &self.files[&file];
        let es = f.view.etype_size.max(1);
        let units = bytes as i64 / es;
        // The data position, in bytes of the view's data, where the access starts.
        let pos = match op.get(params, Param::Offset) {
            Some(o) => o * es,
            None if matches!(
                op,
                Op::FileReadShared
                    | Op::FileReadOrdered
                    | Op::FileReadOrderedBegin
                    | Op::FileIreadShared
                    | Op::FileWriteShared
                    | Op::FileWriteOrdered
                    | Op::FileWriteOrderedBegin
                    | Op::FileIwriteShared
            ) =>
            {
                let at = match env.fetch_add_shared(fh, units) {
                    Some(at) => at,
                    None => {
                        let key = f.path.clone().unwrap_or_default();
                        let sp = self.shared.entry(key).or_insert(0);
                        *sp += units;
                        *sp - units
                    }
                };
                at * es
            }
            None => {
                let f = self.files.get_mut(&file).expect("looked up");
                f.pos += units;
                (f.pos - units) * es
            }
        };
        let regions = self.files[&file].view.regions(pos, bytes as i64);
        self.finish_access(file, op.dir(), bytes, regions, implicit_open)
    }

    fn finish_access(
        &mut self,
        file: FileId,
        dir: Dir,
        bytes: u64,
        regions: Vec<(u64, u64)>,
        implicit_open: bool,
    ) -> Effect {
        if dir == Dir::Write
            && let Some(p) = &self.files[&file].path
            && let Some(end) = regions.iter().map(|(o, n)| o + n).max()
        {
            let s = self.sizes.entry(p.clone()).or_insert(0);
            *s = (*s).max(end);
        }
        Effect::Access(Access {
            file,
            dir,
            bytes,
            regions,
            implicit_open,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::op::args;

    fn run(t: &mut FileTable, op: Op, params: Vec<i64>, path: Option<&str>) -> Effect {
        t.apply(op, &params, path, None, &mut Offline).0
    }

    fn regions(e: Effect) -> Vec<(u64, u64)> {
        match e {
            Effect::Access(a) => a.regions,
            other => panic!("not an access: {other:?}"),
        }
    }

    #[test]
    fn posix_positions_appends_and_dups() {
        let mut t = FileTable::new();
        let fl = oflags::WRONLY | oflags::CREAT;
        run(&mut t, Op::Open, args::open(fl, 0o644, 3), Some("a"));
        assert_eq!(
            regions(run(&mut t, Op::Write, args::write(3, 10, 10), None)),
            [(0, 10)]
        );
        assert_eq!(
            regions(run(&mut t, Op::Pwrite, args::pwrite(3, 4, 100, 4), None)),
            [(100, 4)]
        );
        // A copy shares the offset.
        run(&mut t, Op::Dup, args::dup(3, 4, -1), None);
        assert_eq!(
            regions(run(&mut t, Op::Write, args::write(4, 5, 5), None)),
            [(10, 5)]
        );
        run(&mut t, Op::Lseek, args::lseek(3, 0, 0, 2), None);
        assert_eq!(
            regions(run(&mut t, Op::Read, args::read(3, 3, 3), None)),
            [(2, 3)]
        );
        // Closing one copy keeps the file open for the other.
        assert!(matches!(
            run(&mut t, Op::Close, args::close(3), None),
            Effect::Close { last: false, .. }
        ));
        assert!(matches!(
            run(&mut t, Op::Close, args::close(4), None),
            Effect::Close { last: true, .. }
        ));
        // O_APPEND writes at the end this rank knows (104 bytes).
        run(
            &mut t,
            Op::Open,
            args::open(fl | oflags::APPEND, 0o644, 5),
            Some("a"),
        );
        assert_eq!(
            regions(run(&mut t, Op::Write, args::write(5, 1, 1), None)),
            [(104, 1)]
        );
        // fcntl(F_SETFL) clears O_APPEND (its flags follow its fixed parameters): writes go
        // to the position again (105 after the append), and sets it back.
        let setfl = |fl: i64| [&args::fcntl(5, F_SETFL, 0)[..], &[fl]].concat();
        run(&mut t, Op::Fcntl, setfl(oflags::WRONLY), None);
        run(&mut t, Op::Lseek, args::lseek(5, 0, 0, 0), None);
        assert_eq!(
            regions(run(&mut t, Op::Write, args::write(5, 2, 2), None)),
            [(0, 2)]
        );
        run(&mut t, Op::Fcntl, setfl(oflags::APPEND), None);
        assert_eq!(
            regions(run(&mut t, Op::Write, args::write(5, 1, 1), None)),
            [(105, 1)]
        );
    }

    #[test]
    fn unknown_descriptors_use_the_enclosing_mpi_file() {
        let mut t = FileTable::new();
        let a = rsd::mpi::amode::CREATE | rsd::mpi::amode::RDWR;
        let Effect::Open(mf) = run(&mut t, Op::FileOpen, args::file_open(0, a, 0), Some("f"))
        else {
            panic!()
        };
        let (e, _) = t.apply(
            Op::Pwrite,
            &args::pwrite(9, 8, 64, 8),
            None,
            Some(mf),
            &mut Offline,
        );
        let Effect::Access(acc) = e else { panic!() };
        assert_eq!((acc.file, acc.implicit_open), (mf, false));
        // Without one, an anonymous file is made up, once.
        let Effect::Access(acc) = run(&mut t, Op::Write, args::write(7, 2, 2), None) else {
            panic!()
        };
        assert!(acc.implicit_open);
        let Effect::Access(acc2) = run(&mut t, Op::Write, args::write(7, 2, 2), None) else {
            panic!()
        };
        assert_eq!(
            (acc2.file, acc2.implicit_open, acc2.regions),
            (acc.file, false, vec![(2, 2)])
        );
    }

    #[test]
    fn mpi_views_apply_etype_and_filetype() {
        let mut t = FileTable::new();
        let int = 7; // MPI_INT, 4 bytes
        assert_eq!(rsd::mpi::predefined(int).map(|t| t.size), Some(4));
        let a = rsd::mpi::amode::CREATE | rsd::mpi::amode::RDWR;
        run(&mut t, Op::FileOpen, args::file_open(0, a, 0), Some("f"));
        // vector(2 blocks of 3 ints, stride 5 ints) = blocks at bytes 0..12 and 20..32, extent 32.
        let v = rsd::mpi::FIRST_DERIVED_TYPE;
        run(
            &mut t,
            Op::TypeVector,
            args::type_vector(2, 3, 5, int, v),
            None,
        );
        run(
            &mut t,
            Op::FileSetView,
            args::file_set_view(0, 100, int, v),
            None,
        );
        // 4 ints at etype offset 2: data bytes 8..24 -> file 108..112, 120..132.
        let e = run(
            &mut t,
            Op::FileWriteAt,
            args::file_write_at(0, 2, 4, int, 16),
            None,
        );
        assert_eq!(regions(e), [(108, 4), (120, 12)]);
        // The individual pointer counts etypes of the view: 6 ints fill a tile, the next
        // starts one extent (32 bytes) on, so its first block continues the last one.
        let e = run(&mut t, Op::FileWrite, args::file_write(0, 7, int, 28), None);
        assert_eq!(regions(e), [(100, 12), (120, 16)]);
        let e = run(&mut t, Op::FileWrite, args::file_write(0, 1, int, 4), None);
        assert_eq!(regions(e), [(136, 4)]);
        // SEEK_SET in etypes, then a byte etype over a contiguous filetype.
        run(
            &mut t,
            Op::FileSeek,
            args::file_seek(0, 3, rsd::mpi::seek::SET),
            None,
        );
        let e = run(&mut t, Op::FileRead, args::file_read(0, 1, int, 4), None);
        assert_eq!(regions(e), [(120, 4)]);
        let byte = rsd::mpi::BYTE;
        run(
            &mut t,
            Op::FileSetView,
            args::file_set_view(0, 10, byte, byte),
            None,
        );
        let e = run(
            &mut t,
            Op::FileReadAt,
            args::file_read_at(0, 5, 3, byte, 3),
            None,
        );
        assert_eq!(regions(e), [(15, 3)]);
    }

    #[test]
    fn split_collectives_move_the_pointers_their_blocking_calls_move() {
        let mut t = FileTable::new();
        let a = rsd::mpi::amode::CREATE | rsd::mpi::amode::RDWR;
        run(&mut t, Op::FileOpen, args::file_open(0, a, 0), Some("s"));
        let byte = rsd::mpi::BYTE;
        // The begin moves the data and the individual pointer; its end moves nothing.
        let e = run(
            &mut t,
            Op::FileWriteAllBegin,
            args::file_write_all_begin(0, 8, byte, 8),
            None,
        );
        assert_eq!(regions(e), [(0, 8)]);
        let e = run(
            &mut t,
            Op::FileWriteAllEnd,
            args::file_write_all_end(0),
            None,
        );
        assert_eq!(e, Effect::None);
        let e = run(
            &mut t,
            Op::FileWriteAtAllBegin,
            args::file_write_at_all_begin(0, 100, 4, byte, 4),
            None,
        );
        assert_eq!(regions(e), [(100, 4)]);
        // The ordered ones take the shared pointer, which seek_shared moves.
        let e = run(
            &mut t,
            Op::FileWriteOrderedBegin,
            args::file_write_ordered_begin(0, 6, byte, 6),
            None,
        );
        assert_eq!(regions(e), [(0, 6)]);
        let seek = rsd::mpi::seek::CUR;
        run(
            &mut t,
            Op::FileSeekShared,
            args::file_seek_shared(0, 10, seek),
            None,
        );
        let e = run(
            &mut t,
            Op::FileReadOrderedBegin,
            args::file_read_ordered_begin(0, 2, byte, 2),
            None,
        );
        assert_eq!(regions(e), [(16, 2)]);
        let set = rsd::mpi::seek::SET;
        run(
            &mut t,
            Op::FileSeekShared,
            args::file_seek_shared(0, 3, set),
            None,
        );
        let e = run(
            &mut t,
            Op::FileReadOrderedBegin,
            args::file_read_ordered_begin(0, 2, byte, 2),
            None,
        );
        assert_eq!(regions(e), [(3, 2)]);
        // The individual pointer was left where the first begin put it.
        let e = run(
            &mut t,
            Op::FileReadAllBegin,
            args::file_read_all_begin(0, 1, byte, 1),
            None,
        );
        assert_eq!(regions(e), [(8, 1)]);
    }

    #[test]
    fn shared_pointers_are_per_path_offline() {
        let mut t = FileTable::new();
        let a = rsd::mpi::amode::CREATE | rsd::mpi::amode::WRONLY;
        run(&mut t, Op::FileOpen, args::file_open(0, a, 0), Some("s"));
        run(&mut t, Op::FileOpen, args::file_open(0, a, 1), Some("s"));
        let byte = rsd::mpi::BYTE;
        let e = run(
            &mut t,
            Op::FileWriteShared,
            args::file_write_shared(0, 8, byte, 8),
            None,
        );
        assert_eq!(regions(e), [(0, 8)]);
        let e = run(
            &mut t,
            Op::FileWriteShared,
            args::file_write_shared(1, 8, byte, 8),
            None,
        );
        assert_eq!(regions(e), [(8, 8)]);
    }
}
