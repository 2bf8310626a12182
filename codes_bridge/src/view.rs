//! The POSIX view of one rank: turns traced calls into the operations CODES simulates (open,
//! close, read and write with explicit offsets, barrier) and the delays between them.
//!
//! The mapping (also in the README):
//! - POSIX and stdio calls map directly; reads and writes without an offset get the tracked
//!   file position (open, lseek, fseek, read/write results, `O_APPEND`).
//! - An MPI-IO call with nested POSIX calls is exported as those calls. A POSIX call on a
//!   descriptor the view has not seen opened, inside an MPI-IO call on handle `fh`, is taken to
//!   act on `fh`'s file: MPI-IO libraries open the file internally, often untraced.
//! - An MPI-IO call without nested calls: `MPI_File_open`/`close` become `open`/`close` on the
//!   same rank. Data calls become the equivalent POSIX read/write only when the trace was taken
//!   with POSIX tracing off; with it on, a childless data call moved no POSIX data on this rank
//!   (collective buffering gave it to an aggregator), so it only takes time.
//! - `MPI_Barrier` becomes a barrier, except on a communicator made by `MPI_Comm_split` (CODES
//!   barriers span all ranks).
//! - Everything else (other MPI calls, metadata calls such as `fsync` or `stat`, calls that
//!   failed or moved no bytes) adds its mean duration to the delay before the next operation,
//!   as does every compute gap. An exported operation's own duration stays its duration.
//! - `max_blocksize` splits a read or write larger than it into consecutive operations.

use crate::error::CodesError;
use crate::hash::file_id;
use crate::walk::Ev;
use filetable::table::{Access, Effect, FileId, FileTable, Offline};
use rsd::op::{Creation, Dir, Handle};
use rsd::{Layer, Op, Param};
use std::collections::{BTreeSet, HashMap, HashSet};

pub(crate) use filetable::table::oflags::CREAT as O_CREAT;
/// Linux open(2) flag values, as the tracer records them and as CODES tests `O_CREAT`.
#[cfg(test)]
pub(crate) use filetable::table::oflags::{
    APPEND as O_APPEND, RDWR as O_RDWR, TRUNC as O_TRUNC, WRONLY as O_WRONLY,
};

/// The mode used for opens the view has to make up.
const DEFAULT_MODE: i64 = 0o644;

/// What one exported operation does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    Open { path: String, flags: i64, mode: i64 },
    Close,
    Read { size: u64, offset: u64 },
    Write { size: u64, offset: u64 },
    Barrier,
}

/// One operation for CODES.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ViewOp {
    pub kind: Kind,
    /// The rank's descriptor for the file in the export (not the traced one).
    pub fd: i32,
    /// CODES' recorder file id of the (written) path.
    pub file_id: u64,
    /// Mean duration of the call, ns.
    pub dur_ns: u64,
}

/// Where the view's operations go: a format writer, or a vector in tests.
pub(crate) trait Sink {
    /// `delay_ns` is the time to wait before `op` starts.
    fn op(&mut self, delay_ns: u64, op: &ViewOp) -> Result<(), CodesError>;
}

impl Sink for Vec<(u64, ViewOp)> {
    fn op(&mut self, delay_ns: u64, op: &ViewOp) -> Result<(), CodesError> {
        self.push((delay_ns, op.clone()));
        Ok(())
    }
}

/// Makes a path safe for a recorder line, where the loader splits on spaces, commas and `(`.
/// Percent-encoding keeps distinct paths distinct (unlike replacing characters), and the
/// written form is what both formats hash, so file ids agree between them.
pub(crate) fn encode_path(p: &str) -> String {
    if p.is_empty() {
        return "%00".to_string();
    }
    let mut out = String::with_capacity(p.len());
    for c in p.chars() {
        match c {
            ' ' | ',' | '(' | ')' | '%' => out.push_str(&format!("%{:02X}", c as u32)),
            c if c.is_control() => {
                let mut b = [0u8; 4];
                for x in c.encode_utf8(&mut b).bytes() {
                    out.push_str(&format!("%{x:02X}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Lowest-free descriptor allocation from 3, like the kernel: a descriptor is reused only after
/// its close, which CODES' per-rank fd table requires.
#[derive(Debug, Default)]
struct Fds {
    next: i32,
    free: BTreeSet<i32>,
}

impl Fds {
    fn alloc(&mut self) -> i32 {
        if let Some(fd) = self.free.pop_first() {
            return fd;
        }
        let fd = self.next.max(3);
        self.next = fd + 1;
        fd
    }

    fn release(&mut self, fd: i32) {
        self.free.insert(fd);
    }
}

/// A file open in the export: the CODES descriptor and file id the table's open file maps to.
#[derive(Debug, Clone)]
struct Exported {
    fd: i32,
    file_id: u64,
    /// Whether closing the table's file closes this descriptor (an MPI file opened through a
    /// nested `open` shares that open's descriptor, which the nested `close` closes).
    owner: bool,
}

/// The per-rank mapping state: the trace's file semantics come from the file table; what is
/// kept here is the export's policy (CODES descriptors, made-up opens, barriers, delays).
pub(crate) struct Mapper {
    posix_traced: bool,
    max_blocksize: Option<u64>,
    pending: u64,
    table: FileTable,
    exported: HashMap<FileId, Exported>,
    fds: Fds,
    sub_comms: HashSet<i64>,
    /// File most recently opened, so an `MPI_File_open` with nested calls can name its file.
    last_opened: Option<FileId>,
    /// Opens made up for descriptors used without a traced open.
    pub synthesized_opens: u64,
    /// Extra operations created by splitting.
    pub split_extra: u64,
}

impl Mapper {
    pub fn new(posix_traced: bool, max_blocksize: Option<u64>) -> Mapper {
        Mapper {
            posix_traced,
            max_blocksize: max_blocksize.filter(|&b| b > 0),
            pending: 0,
            table: FileTable::new(),
            exported: HashMap::new(),
            fds: Fds::default(),
            sub_comms: HashSet::new(),
            last_opened: None,
            synthesized_opens: 0,
            split_extra: 0,
        }
    }

    /// Maps one top-level call.
    pub fn event(&mut self, ev: &Ev, sink: &mut dyn Sink) -> Result<(), CodesError> {
        self.pending += ev.gap_ns;
        match ev.op.layer() {
            Layer::Posix | Layer::Stdio => self.posix(ev, None, sink),
            Layer::MpiIo if !ev.children.is_empty() => self.mpiio_nested(ev, sink),
            Layer::MpiIo => self.mpiio_alone(ev, sink),
            Layer::Mpi => self.mpi(ev, sink),
            // A library above MPI-IO (HDF5, PnetCDF, NetCDF) is a container: its calls are what it made.
            Layer::Hdf5 | Layer::Pnetcdf | Layer::Netcdf => {
                self.pending += ev
                    .dur_ns
                    .saturating_sub(ev.children.iter().map(|c| c.gap_ns + c.dur_ns).sum::<u64>());
                ev.children.iter().try_for_each(|c| self.event(c, sink))
            }
        }
    }

    /// The delay left after the last operation (CODES' recorder loader cannot express it).
    pub fn finish(&mut self) -> u64 {
        std::mem::take(&mut self.pending)
    }

    fn delay(&mut self, ev: &Ev) -> Result<(), CodesError> {
        self.pending += ev.dur_ns;
        Ok(())
    }

    fn emit(
        &mut self,
        kind: Kind,
        fd: i32,
        fid: u64,
        dur: u64,
        sink: &mut dyn Sink,
    ) -> Result<(), CodesError> {
        let d = std::mem::take(&mut self.pending);
        sink.op(
            d,
            &ViewOp {
                kind,
                fd,
                file_id: fid,
                dur_ns: dur,
            },
        )
    }

    fn mpi(&mut self, ev: &Ev, sink: &mut dyn Sink) -> Result<(), CodesError> {
        // Datatype constructors build the views of later MPI-IO calls.
        self.table
            .apply(ev.op, &ev.params, None, None, &mut Offline);
        match ev.op {
            Op::Barrier if !self.sub_comms.contains(&ev.p(Param::Comm)) => {
                // The barrier's own duration is waiting for other ranks, which the simulator
                // reproduces by synchronising; counting it as a delay would wait twice.
                self.emit(Kind::Barrier, -1, 0, 0, sink)
            }
            // A copy is a sub-communicator when its parent is; every other creation (splits,
            // the topology ones recorded as splits, listed groups, intercommunicators and
            // their merge) may leave out ranks, so a barrier on it is no world barrier.
            _ if ev.op.creation() == Some(Creation::Dup) => {
                if self.sub_comms.contains(&ev.p(Param::Comm)) {
                    self.sub_comms.insert(ev.p(Param::Newcomm));
                }
                self.delay(ev)
            }
            _ if ev.op.creates_comm() => {
                self.sub_comms.insert(ev.p(Param::Newcomm));
                self.delay(ev)
            }
            _ => self.delay(ev),
        }
    }

    fn mpiio_nested(&mut self, ev: &Ev, sink: &mut dyn Sink) -> Result<(), CodesError> {
        // Nested POSIX calls on unknown descriptors act on the MPI file's own file.
        let ctx = match ev.op {
            Op::FileOpen | Op::FileDelete => None,
            _ => ev
                .get(Param::Fh)
                .and_then(|fh| self.table.lookup(Handle::MpiFile, fh)),
        };
        self.last_opened = None;
        let mut inner = 0u64;
        for c in &ev.children {
            inner += c.gap_ns + c.dur_ns;
            self.pending += c.gap_ns;
            match c.op.layer() {
                Layer::Posix | Layer::Stdio => self.posix(c, ctx, sink)?,
                // MPI-IO libraries do not nest MPI calls that move data; keep their time.
                _ => self.delay(c)?,
            }
        }
        // The rest of the call's time (collective exchange, locking) is a delay.
        self.pending += ev.dur_ns.saturating_sub(inner);
        // The call itself moves pointers and sets views; its data went through its children.
        let (fx, closed) =
            self.table
                .apply(ev.op, &ev.params, ev.path.as_deref(), None, &mut Offline);
        match fx {
            Effect::Open(mf) => {
                // The MPI file is the file its nested open opened: same CODES descriptor.
                if let Some(e) = self.last_opened.and_then(|id| self.exported.get(&id)) {
                    let shared = Exported {
                        owner: false,
                        ..e.clone()
                    };
                    self.exported.insert(mf, shared);
                }
            }
            Effect::Close { .. } => {
                if let Some((id, _)) = closed {
                    self.close_exported(id, 0, sink)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn mpiio_alone(&mut self, ev: &Ev, sink: &mut dyn Sink) -> Result<(), CodesError> {
        let (fx, closed) =
            self.table
                .apply(ev.op, &ev.params, ev.path.as_deref(), None, &mut Offline);
        match fx {
            Effect::Open(id) => self.open(id, Handle::MpiFile, ev, DEFAULT_MODE, sink),
            Effect::Close { .. } => match closed {
                Some((id, _)) => self.close_exported(id, ev.dur_ns, sink),
                None => self.delay(ev),
            },
            // Without POSIX tracing, a data call is the POSIX I/O it stands for; with it, a
            // childless data call moved no POSIX data on this rank (collective buffering gave
            // it to an aggregator), so it only takes time.
            Effect::Access(a) if !self.posix_traced => {
                self.access(&a, Handle::MpiFile, ev.p(Param::Fh), ev.dur_ns, sink)
            }
            _ => self.delay(ev),
        }
    }

    fn posix(
        &mut self,
        ev: &Ev,
        ctx: Option<FileId>,
        sink: &mut dyn Sink,
    ) -> Result<(), CodesError> {
        let (fx, closed) =
            self.table
                .apply(ev.op, &ev.params, ev.path.as_deref(), ctx, &mut Offline);
        match fx {
            Effect::Open(id) => {
                let (kind, mode) = match ev.op {
                    Op::Fopen => (Handle::Stream, DEFAULT_MODE),
                    _ => (Handle::Fd, ev.p(Param::Mode)),
                };
                self.open(id, kind, ev, mode, sink)
            }
            Effect::Close { .. } => match closed {
                Some((id, _)) => self.close_exported(id, ev.dur_ns, sink),
                // Other copies keep the file open; or it was never opened in the view.
                None => self.delay(ev),
            },
            // A copy of a descriptor is the same open file (and offset) under another number:
            // CODES keeps using the one descriptor it has for it.
            Effect::Dup(id) => {
                if let Some((c, _)) = closed {
                    // dup2/dup3 onto a traced descriptor closed it first.
                    self.close_exported(c, 0, sink)?;
                }
                self.ensure_open(id, Handle::Fd, ev.p(Param::Fd), sink)?;
                self.delay(ev)
            }
            Effect::Access(a) => {
                let (kind, h) = match ev.op.layer() {
                    Layer::Stdio => (Handle::Stream, ev.p(Param::Stream)),
                    _ => (Handle::Fd, ev.p(Param::Fd)),
                };
                self.access(&a, kind, h, ev.dur_ns, sink)
            }
            _ => {
                if let Some((c, _)) = closed {
                    self.close_exported(c, 0, sink)?;
                }
                self.delay(ev)
            }
        }
    }

    /// Emits the open of table file `id`, opened by `ev`.
    fn open(
        &mut self,
        id: FileId,
        kind: Handle,
        ev: &Ev,
        mode: i64,
        sink: &mut dyn Sink,
    ) -> Result<(), CodesError> {
        let h = handle_param(kind, ev);
        self.emit_open(id, kind, h, mode, ev.dur_ns, sink)
    }

    fn emit_open(
        &mut self,
        id: FileId,
        kind: Handle,
        h: i64,
        mode: i64,
        dur: u64,
        sink: &mut dyn Sink,
    ) -> Result<(), CodesError> {
        let f = self.table.file(id).expect("the table just resolved it");
        let path = match &f.path {
            Some(p) => encode_path(p),
            None => format!("iotrex_{}{h}", ns_name(kind)),
        };
        let flags = f.flags;
        let fd = self.fds.alloc();
        let fid = file_id(&path);
        self.exported.insert(
            id,
            Exported {
                fd,
                file_id: fid,
                owner: true,
            },
        );
        self.last_opened = Some(id);
        self.emit(Kind::Open { path, flags, mode }, fd, fid, dur, sink)
    }

    /// Makes up an open for a file the table knows but the export has not opened: CODES'
    /// loader fails on a read, write or close of a descriptor it has not seen opened.
    fn ensure_open(
        &mut self,
        id: FileId,
        kind: Handle,
        h: i64,
        sink: &mut dyn Sink,
    ) -> Result<(), CodesError> {
        if self.exported.contains_key(&id) {
            return Ok(());
        }
        self.synthesized_opens += 1;
        let saved = self.last_opened;
        self.emit_open(id, kind, h, DEFAULT_MODE, 0, sink)?;
        self.last_opened = saved;
        Ok(())
    }

    fn close_exported(
        &mut self,
        id: FileId,
        dur: u64,
        sink: &mut dyn Sink,
    ) -> Result<(), CodesError> {
        match self.exported.remove(&id) {
            Some(e) if e.owner => {
                self.emit(Kind::Close, e.fd, e.file_id, dur, sink)?;
                // Release after emitting, so the descriptor is reused only after its close.
                self.fds.release(e.fd);
                Ok(())
            }
            // Closing something never opened in the view, or a name for another's descriptor.
            _ => {
                self.pending += dur;
                Ok(())
            }
        }
    }

    /// Emits the reads or writes of an access, one per file region (and per block of at most
    /// `max_blocksize`), the call's duration shared in proportion to bytes.
    fn access(
        &mut self,
        a: &Access,
        kind: Handle,
        h: i64,
        dur: u64,
        sink: &mut dyn Sink,
    ) -> Result<(), CodesError> {
        self.ensure_open(a.file, kind, h, sink)?;
        let e = self.exported[&a.file].clone();
        let read = a.dir == Dir::Read;
        let bs = self.max_blocksize;
        let mut chunks: Vec<(u64, u64)> = Vec::new();
        for &(offset, size) in &a.regions {
            let b = match bs {
                Some(b) if size > b => b,
                _ => size,
            };
            let mut off = 0;
            while off < size {
                chunks.push((offset + off, b.min(size - off)));
                off += b;
            }
            self.split_extra += size.div_ceil(b) - 1;
        }
        let total: u64 = chunks.iter().map(|c| c.1).sum();
        let mut dur_left = dur;
        for (i, &(offset, size)) in chunks.iter().enumerate() {
            // Duration shared in proportion to bytes; the last chunk takes the rounding.
            let d = if i + 1 == chunks.len() {
                dur_left
            } else {
                (u128::from(dur) * u128::from(size) / u128::from(total)) as u64
            };
            dur_left -= d;
            let kind = if read {
                Kind::Read { size, offset }
            } else {
                Kind::Write { size, offset }
            };
            self.emit(kind, e.fd, e.file_id, d, sink)?;
        }
        Ok(())
    }
}

/// The handle an open of table `kind` gives (its result parameter).
fn handle_param(kind: Handle, ev: &Ev) -> i64 {
    match kind {
        Handle::Fd => ev.p(Param::Fd),
        Handle::Stream => ev.p(Param::Stream),
        Handle::MpiFile => ev.p(Param::Fh),
    }
}

fn ns_name(kind: Handle) -> &'static str {
    match kind {
        Handle::Fd => "fd",
        Handle::Stream => "stream",
        Handle::MpiFile => "mpifile",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_path(mut e: Ev, p: &str) -> Ev {
        e.path = Some(p.to_string());
        e
    }

    fn timed(mut e: Ev, gap: u64, dur: u64) -> Ev {
        e.gap_ns = gap;
        e.dur_ns = dur;
        e
    }

    fn run(posix: bool, bs: Option<u64>, evs: &[Ev]) -> (Vec<(u64, ViewOp)>, Mapper, u64) {
        let mut m = Mapper::new(posix, bs);
        let mut out = Vec::new();
        for e in evs {
            m.event(e, &mut out).unwrap();
        }
        let t = m.finish();
        (out, m, t)
    }

    /// (read?, size, offset) of every data operation.
    fn io_ops(out: &[(u64, ViewOp)]) -> Vec<(bool, u64, u64)> {
        out.iter()
            .filter_map(|(_, o)| match o.kind {
                Kind::Read { size, offset } => Some((true, size, offset)),
                Kind::Write { size, offset } => Some((false, size, offset)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn dup_copies_share_the_open_file_and_its_offset() {
        // open -> 0; dup(0) -> 1; two writes on 1; close(0); dup2(1, 0); pwrite on 0;
        // close(1); close(0): one CODES file, offsets continuing across the copies, and one
        // close at the very end.
        let evs = vec![
            with_path(Ev::new(Op::Open, vec![O_WRONLY | O_CREAT, 0o644, 0]), "f"),
            Ev::new(Op::Dup, vec![0, 1, -1]),
            Ev::new(Op::Write, vec![1, 4096, 4096]),
            Ev::new(Op::Write, vec![1, 4096, 4096]),
            Ev::new(Op::Close, vec![0]),
            Ev::new(Op::Dup, vec![1, 0, -1]),
            Ev::new(Op::Pwrite, vec![0, 100, 0, 100]),
            Ev::new(Op::Write, vec![0, 10, 10]),
            Ev::new(Op::Close, vec![1]),
            Ev::new(Op::Close, vec![0]),
        ];
        let (out, m, _) = run(true, None, &evs);
        assert_eq!(
            io_ops(&out),
            vec![
                (false, 4096, 0),
                (false, 4096, 4096),
                (false, 100, 0),
                (false, 10, 8192)
            ]
        );
        let opens = out
            .iter()
            .filter(|(_, o)| matches!(o.kind, Kind::Open { .. }))
            .count();
        let closes: Vec<usize> = out
            .iter()
            .enumerate()
            .filter(|(_, (_, o))| matches!(o.kind, Kind::Close))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(opens, 1, "{out:?}");
        assert_eq!(closes, vec![out.len() - 1], "{out:?}");
        assert_eq!(m.synthesized_opens, 0);
    }

    #[test]
    fn offsets_through_lseek_appends_and_partial_reads() {
        let evs = vec![
            with_path(Ev::new(Op::Open, vec![O_RDWR | O_CREAT, 0o644, 3]), "f"),
            Ev::new(Op::Write, vec![3, 100, 100]),
            Ev::new(Op::Write, vec![3, 50, 30]), // partial write: 30 bytes moved
            Ev::new(Op::Lseek, vec![3, 10, 0, 10]), // SEEK_SET 10
            Ev::new(Op::Read, vec![3, 64, 20]),  // partial read: 20 of 64
            Ev::new(Op::Read, vec![3, 8, 8]),
            Ev::new(Op::Lseek, vec![3, -5, 1, 33]), // SEEK_CUR -5 from 38
            Ev::new(Op::Read, vec![3, 4, 4]),
            Ev::new(Op::Lseek, vec![3, -10, 2, 120]), // SEEK_END -10 of 130
            Ev::new(Op::Write, vec![3, 4, 4]),
            Ev::new(Op::Lseek, vec![3, -1000, 0, -1]), // failed: position unchanged
            Ev::new(Op::Write, vec![3, 6, 6]),
            Ev::new(Op::Pwrite, vec![3, 16, 4096, 16]), // explicit offset, position kept
            Ev::new(Op::Write, vec![3, 1, 1]),
            Ev::new(Op::Read, vec![3, 100, 0]), // EOF: nothing moved, not exported
            Ev::new(Op::Close, vec![3]),
            with_path(Ev::new(Op::Open, vec![O_WRONLY | O_APPEND, 0, 3]), "f"),
            Ev::new(Op::Write, vec![3, 7, 7]), // appends at 4112 (pwrite extended the file)
            Ev::new(Op::Lseek, vec![3, 0, 0, 0]),
            Ev::new(Op::Write, vec![3, 3, 3]), // O_APPEND ignores the seek
            Ev::new(Op::Close, vec![3]),
        ];
        let (out, m, _) = run(true, None, &evs);
        assert_eq!(
            io_ops(&out),
            vec![
                (false, 100, 0),
                (false, 30, 100),
                (true, 20, 10),
                (true, 8, 30),
                (true, 4, 33),
                (false, 4, 120),
                (false, 6, 124),
                (false, 16, 4096),
                (false, 1, 130),
                (false, 7, 4112),
                (false, 3, 4119),
            ]
        );
        assert_eq!(m.synthesized_opens, 0);
        // Both opens got fd 3: the second only after the first was closed.
        let fds: Vec<i32> = out
            .iter()
            .filter(|(_, o)| matches!(o.kind, Kind::Open { .. }))
            .map(|(_, o)| o.fd)
            .collect();
        assert_eq!(fds, vec![3, 3]);
    }

    #[test]
    fn stdio_positions_fseek_and_append_mode() {
        let evs = vec![
            with_path(Ev::new(Op::Fopen, vec![rsd::op::fopen_mode::W, 5]), "log"), // "w"
            Ev::new(Op::Fwrite, vec![5, 4, 10, 10]),                               // 40 bytes
            Ev::new(Op::Fprintf, vec![5, 12]),
            Ev::new(Op::Fseek, vec![5, 8, 0]), // SEEK_SET 8
            Ev::new(Op::Fwrite, vec![5, 1, 2, 2]),
            Ev::new(Op::Fseek, vec![5, 4, 1]), // SEEK_CUR +4 -> 14
            Ev::new(Op::Fwrite, vec![5, 1, 1, 1]),
            Ev::new(Op::Fseek, vec![5, -2, 2]), // SEEK_END -2 of 52 -> 50
            Ev::new(Op::Fread, vec![5, 1, 2, 2]),
            Ev::new(Op::Fclose, vec![5]),
            with_path(Ev::new(Op::Fopen, vec![rsd::op::fopen_mode::A, 6]), "log"), // "a"
            Ev::new(Op::Fprintf, vec![6, 5]),
            Ev::new(Op::Fclose, vec![6]),
        ];
        let (out, _, _) = run(true, None, &evs);
        assert_eq!(
            io_ops(&out),
            vec![
                (false, 40, 0),
                (false, 12, 40),
                (false, 2, 8),
                (false, 1, 14),
                (true, 2, 50),
                (false, 5, 52),
            ]
        );
        match &out[0].1.kind {
            Kind::Open { flags, .. } => assert_eq!(*flags, O_WRONLY | O_CREAT | O_TRUNC),
            k => panic!("{k:?}"),
        }
    }

    fn split_sizes(size: u64, bs: u64) -> Vec<(u64, u64)> {
        let evs = vec![
            with_path(Ev::new(Op::Open, vec![O_WRONLY | O_CREAT, 0o644, 3]), "f"),
            timed(
                Ev::new(Op::Pwrite, vec![3, size as i64, 1000, size as i64]),
                50_000,
                999,
            ),
        ];
        let (out, m, _) = run(true, Some(bs), &evs);
        let w: Vec<&(u64, ViewOp)> = out
            .iter()
            .filter(|(_, o)| matches!(o.kind, Kind::Write { .. }))
            .collect();
        assert_eq!(m.split_extra, w.len() as u64 - 1);
        // The delay precedes the first piece only, and the pieces share the duration.
        assert_eq!(w[0].0, 50_000);
        assert!(w[1..].iter().all(|(d, _)| *d == 0));
        assert_eq!(w.iter().map(|(_, o)| o.dur_ns).sum::<u64>(), 999);
        w.iter()
            .map(|(_, o)| match o.kind {
                Kind::Write { size, offset } => (size, offset),
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn splitting_at_the_boundaries() {
        const S: u64 = 256 * 1024;
        assert_eq!(split_sizes(S - 1, S), vec![(S - 1, 1000)]);
        assert_eq!(split_sizes(S, S), vec![(S, 1000)]);
        assert_eq!(split_sizes(S + 1, S), vec![(S, 1000), (1, 1000 + S)]);
        let ten = split_sizes(10 * S + 3, S);
        assert_eq!(ten.len(), 11);
        for (i, (sz, off)) in ten.iter().enumerate() {
            assert_eq!(*off, 1000 + i as u64 * S);
            assert_eq!(*sz, if i == 10 { 3 } else { S });
        }
        assert_eq!(ten.iter().map(|x| x.0).sum::<u64>(), 10 * S + 3);
        // Without the flag nothing is split.
        let (out, _, _) = run(
            true,
            None,
            &[
                with_path(Ev::new(Op::Open, vec![O_CREAT, 0, 3]), "f"),
                Ev::new(Op::Pwrite, vec![3, 1 << 40, 0, 1 << 40]),
            ],
        );
        assert_eq!(io_ops(&out), vec![(false, 1 << 40, 0)]);
    }

    #[test]
    fn mpiio_children_alias_the_file_and_childless_data_calls_depend_on_posix_tracing() {
        let open = with_path(
            timed(Ev::new(Op::FileOpen, vec![1, 37, 0]), 100, 10),
            "shared",
        );
        let mut coll = timed(
            Ev::new(Op::FileWriteAtAll, vec![0, 64, 8, 1, 8]),
            200,
            5_000,
        );
        let child = timed(Ev::new(Op::Pwrite, vec![4, 32, 0, 32]), 300, 700);
        coll.children.push(child);
        let lone = timed(
            Ev::new(Op::FileWriteAtAll, vec![0, 128, 8, 1, 8]),
            200,
            4_000,
        );
        let seq = timed(Ev::new(Op::FileWrite, vec![0, 8, 1, 8]), 0, 0);
        let close = timed(Ev::new(Op::FileClose, vec![0]), 0, 10);
        let evs = [open, coll, lone.clone(), seq.clone(), close.clone()];

        let (out, m, _) = run(true, None, &evs);
        assert_eq!(m.synthesized_opens, 0);
        // Aggregator's child write on the MPI file; the childless call moved nothing here.
        assert_eq!(io_ops(&out), vec![(false, 32, 0)]);
        assert_eq!(out[1].0, 200 + 300);
        // Rest of the collective (5000 - 300 - 700) + lone (200 + 4000) + close's gap.
        assert_eq!(out[2].0, 4_000 + 4_200);
        assert!(matches!(out[2].1.kind, Kind::Close));
        assert!(out.iter().all(|(_, o)| o.fd == out[0].1.fd));

        // POSIX tracing off: childless data calls become pwrites at view offsets / positions.
        let (out, _, _) = run(
            false,
            None,
            &evs[..1]
                .iter()
                .cloned()
                .chain([lone, seq.clone(), seq, close])
                .collect::<Vec<_>>(),
        );
        assert_eq!(
            io_ops(&out),
            vec![(false, 8, 128), (false, 8, 0), (false, 8, 8)]
        );
    }

    #[test]
    fn mpiio_open_and_close_with_nested_calls_are_not_doubled() {
        let mut open = with_path(Ev::new(Op::FileOpen, vec![1, 9, 2]), "s");
        open.children.push(with_path(
            Ev::new(Op::Open, vec![O_RDWR | O_CREAT, 0o644, 7]),
            "s",
        ));
        let mut w = Ev::new(Op::FileWriteAt, vec![2, 0, 4, 1, 4]);
        w.children.push(Ev::new(Op::Pwrite, vec![7, 4, 0, 4]));
        // Childless read on the MPI handle: the file is known through the nested open.
        let r = Ev::new(Op::FileReadAt, vec![2, 0, 4, 1, 4]);
        let mut close = Ev::new(Op::FileClose, vec![2]);
        close.children.push(Ev::new(Op::Close, vec![7]));
        let (out, m, _) = run(false, None, &[open, w, r, close.clone()]);
        let kinds: Vec<&Kind> = out.iter().map(|(_, o)| &o.kind).collect();
        assert!(matches!(kinds[0], Kind::Open { path, .. } if path == "s"));
        assert_eq!(
            kinds[1..],
            [
                &Kind::Write { size: 4, offset: 0 },
                &Kind::Read { size: 4, offset: 0 },
                &Kind::Close
            ]
        );
        assert!(out.iter().all(|(_, o)| o.fd == 3));
        assert_eq!(m.synthesized_opens, 0);
        // A second close of the same handle has nothing left to close.
        let mut m2 = m;
        let mut more = Vec::new();
        m2.event(&close, &mut more).unwrap();
        assert!(more.is_empty());
    }

    #[test]
    fn barriers_delays_and_unknown_descriptors() {
        let evs = vec![
            timed(Ev::new(Op::Init, vec![]), 1_000, 2_000),
            timed(Ev::new(Op::Allreduce, vec![1, 1, 1, 1, 8]), 500, 3_000),
            timed(Ev::new(Op::Barrier, vec![1]), 700, 9_999),
            timed(Ev::new(Op::CommSplit, vec![1, 0, 0, 7]), 0, 10),
            timed(Ev::new(Op::Barrier, vec![7]), 0, 40), // sub-communicator: a delay
            timed(Ev::new(Op::Write, vec![9, 10, 10]), 5, 1), // fd 9 never opened
            timed(Ev::new(Op::Fsync, vec![9]), 0, 77),
        ];
        let (out, m, trailing) = run(true, None, &evs);
        assert_eq!(
            out[0],
            (
                1_000 + 2_000 + 500 + 3_000 + 700,
                ViewOp {
                    kind: Kind::Barrier,
                    fd: -1,
                    file_id: 0,
                    dur_ns: 0
                }
            )
        );
        assert_eq!(m.synthesized_opens, 1);
        match &out[1].1.kind {
            Kind::Open { path, flags, .. } => {
                assert_eq!(path, "iotrex_fd9");
                assert!(flags & O_CREAT != 0);
            }
            k => panic!("{k:?}"),
        }
        assert_eq!(out[1].0, 10 + 40 + 5);
        assert_eq!(io_ops(&out), vec![(false, 10, 0)]);
        assert_eq!(trailing, 77);
    }

    #[test]
    fn the_rest_of_the_mpi_api_is_delays() {
        use rsd::op::args;
        let mut nb = args::neighbor_alltoall(0, 1, 1, 8, 8);
        nb.extend([-1, 1, 8, 8]);
        let evs = vec![
            timed(
                Ev::new(Op::SendInit, args::send_init(1, 4, 1, 0, 0, 1, 0)),
                10,
                1,
            ),
            timed(Ev::new(Op::Start, args::start(0)), 10, 2),
            timed(Ev::new(Op::Ibarrier, args::ibarrier(0, 1)), 10, 3),
            timed(Ev::new(Op::Waitsome, vec![2, 2, 0, 1]), 10, 4),
            timed(Ev::new(Op::NeighborAlltoall, nb), 10, 5),
            timed(Ev::new(Op::CartSub, args::cart_sub(0, 0, 0, 3)), 10, 6),
            timed(Ev::new(Op::Barrier, vec![3]), 10, 7), // sub-communicator: a delay
            timed(Ev::new(Op::CommDup, vec![3, 4]), 10, 8),
            timed(Ev::new(Op::Barrier, vec![4]), 10, 9), // a copy of one too
            timed(Ev::new(Op::IntercommMerge, vec![5, 0, 6, 2, 0, 1]), 10, 10),
            timed(Ev::new(Op::Barrier, vec![6]), 10, 11),
            timed(Ev::new(Op::Barrier, vec![0]), 10, 12), // the world's: a barrier
        ];
        let (out, _, trailing) = run(true, None, &evs);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].1.kind, Kind::Barrier);
        // Every call before the world barrier is its gap and duration as a delay.
        assert_eq!(out[0].0, (1..=11).map(|d| 10 + d).sum::<u64>() + 10);
        assert_eq!(trailing, 0);
    }

    #[test]
    fn paths_are_encoded_injectively() {
        assert_eq!(encode_path("a b,c(d)%e"), "a%20b%2Cc%28d%29%25e");
        assert_eq!(encode_path("out/file_0"), "out/file_0");
        assert_eq!(encode_path("x\ny"), "x%0Ay");
        assert_ne!(encode_path("a b"), encode_path("a_b"));
        assert_eq!(encode_path(""), "%00");
    }
}
