//! The MPI runtime of `iotrex-replay`: MPI-IO and MPI calls issued through rsmpi's raw
//! bindings (`mpi::ffi`), the only `unsafe` code of the replay.
//!
//! Data moves as `MPI_UINT8_T` counts of the recorded byte totals. A recorded file view is
//! re-issued at the recorded displacement with a byte etype and the filetype rebuilt from its
//! recorded constructor chain (vector, hvector, indexed and its h- and _block forms, subarray,
//! darray, struct, resized, dup: each issued as the same MPI constructor, predefined leaves as contiguous bytes of their size), offsets
//! converted from the recorded etype to bytes; so noncontiguous access touches the same file
//! regions as the application's. Vector collectives exchange each rank's recorded byte count
//! first (the trace keeps each rank's own side, not the root's per-rank arrays), then issue
//! the real call with those counts.
//!
//! One file per family of calls, as the tracer's hooks are: [`file`] (MPI-IO), [`p2p`],
//! [`requests`], [`coll`], [`neighbor`] (neighbourhood collectives), [`comm`] (communicators),
//! [`datatypes`] and [`local`] (local queries). This file holds the runtime's state and
//! sends each call to its family.

#![allow(unsafe_code)]

mod coll;
mod comm;
mod datatypes;
mod file;
mod iodeps;
mod local;
mod neighbor;
mod p2p;
mod requests;

use filetable::{Effect, FileEnv, FileTable};
use mpi::ffi;
use replay::engine::{Pattern, Runtime};
use replay::types::Types;
use replay::{Mapped, Pinned};
use rsd::op::{Creation, Op};
use rsd::trace::FlatEvent;
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::os::raw::c_int;

/// Handles to MPI's predefined objects, read once.
#[derive(Clone, Copy)]
pub struct Predef {
    pub world: ffi::MPI_Comm,
    pub self_: ffi::MPI_Comm,
    pub u8: ffi::MPI_Datatype,
    pub info_null: ffi::MPI_Info,
    pub bor: ffi::MPI_Op,
    pub any_source: c_int,
    pub any_tag: c_int,
    pub proc_null: c_int,
    pub undefined: c_int,
    pub request_null: ffi::MPI_Request,
    pub message_no_proc: ffi::MPI_Message,
    pub status_ignore: *mut ffi::MPI_Status,
    pub statuses_ignore: *mut ffi::MPI_Status,
    pub unweighted: *mut c_int,
}

impl Predef {
    pub fn get() -> Predef {
        // SAFETY: these are constant globals of the rsmpi shim, initialised at load time; they
        // are only read.
        unsafe {
            Predef {
                world: ffi::RSMPI_COMM_WORLD,
                self_: ffi::RSMPI_COMM_SELF,
                u8: ffi::RSMPI_UINT8_T,
                info_null: ffi::RSMPI_INFO_NULL,
                bor: ffi::RSMPI_BOR,
                any_source: ffi::RSMPI_ANY_SOURCE,
                any_tag: ffi::RSMPI_ANY_TAG,
                proc_null: ffi::RSMPI_PROC_NULL,
                undefined: ffi::RSMPI_UNDEFINED,
                request_null: ffi::RSMPI_REQUEST_NULL,
                message_no_proc: ffi::RSMPI_MESSAGE_NO_PROC,
                status_ignore: ffi::RSMPI_STATUS_IGNORE,
                statuses_ignore: ffi::RSMPI_STATUSES_IGNORE,
                unweighted: ffi::RSMPI_UNWEIGHTED(),
            }
        }
    }
}

fn check(rc: c_int, what: &str) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{what} returned MPI error {rc}"))
    }
}

struct MFile {
    fh: ffi::MPI_File,
    /// The file opened inside the root, whose `/proc/self/fd/M` the library was given (see
    /// `Mapped::pin`); kept open as long as the handle, since ROMIO may open the file again
    /// later (deferred open on the ranks that are not aggregators).
    _pinned: Pinned,
    /// Its name in the root, when the traced open asked for `MPI_MODE_DELETE_ON_CLOSE`: the
    /// library's own removal would name `/proc/self/fd/M`, so the replay removes it here.
    delete_on_close: Option<Mapped>,
}

/// A pending nonblocking call and its buffer, kept alive until completion.
struct Pending {
    req: ffi::MPI_Request,
    _buf: Vec<u8>,
    /// The other buffers and arrays a nonblocking collective reads or writes until it
    /// completes (moving a Vec into the box leaves its heap data where MPI was told it is).
    _keep: Vec<Box<dyn Any>>,
    /// A receive posted with MPI_Irecv or MPI_Recv_init: the one kind the replay cancels.
    recv: bool,
}

impl Pending {
    /// A point-to-point request and the one buffer it reads or writes.
    fn with_buf(req: ffi::MPI_Request, buf: Vec<u8>, recv: bool) -> Pending {
        Pending {
            req,
            _buf: buf,
            _keep: Vec::new(),
            recv,
        }
    }
}

/// The MPI runtime of one rank.
pub struct MpiRuntime {
    p: Predef,
    comms: HashMap<i64, ffi::MPI_Comm>,
    files: HashMap<i64, MFile>,
    reqs: HashMap<i64, Pending>,
    rbuf: Vec<u8>,
    /// Datatypes rebuilt from the trace's constructors, by symbolic id (ids are never reused).
    dtypes: HashMap<i64, ffi::MPI_Datatype>,
    /// Persistent requests, by id, and those started and not yet completed.
    persist: HashMap<i64, Pending>,
    active: HashSet<i64>,
    /// Messages matched by MPI_Mprobe/MPI_Improbe and not yet received, by id.
    msgs: HashMap<i64, ffi::MPI_Message>,
    /// The distributed-graph communicator each communicator's neighbourhood collectives run
    /// on, built at the first one from the recorded neighbours (the topology communicators
    /// are recorded as splits and carry no topology).
    graphs: HashMap<i64, ffi::MPI_Comm>,
    /// The buffer attached by MPI_Buffer_attach.
    attached: Option<Vec<u8>>,
    /// The buffer of each file's split collective begun and not yet ended, by file id: MPI
    /// reads or fills it until the end (one split collective at a time per file handle).
    split: HashMap<i64, Vec<u8>>,
    /// The hints of each traced file that say how its data will be accessed
    /// ([`file::CACHE_HINTS`]), passed to its open as the program passed them.
    cache_hints: HashMap<String, Vec<(String, String)>>,
    /// The signals of the measured I/O dependencies, when the replay honours some.
    io: Option<iodeps::IoSignals>,
}

fn len(n: i64) -> c_int {
    n.clamp(0, c_int::MAX as i64) as c_int
}

impl MpiRuntime {
    pub fn new(p: Predef) -> MpiRuntime {
        let mut comms = HashMap::new();
        comms.insert(0, p.world);
        comms.insert(1, p.self_);
        MpiRuntime {
            p,
            comms,
            files: HashMap::new(),
            reqs: HashMap::new(),
            rbuf: Vec::new(),
            dtypes: HashMap::new(),
            persist: HashMap::new(),
            active: HashSet::new(),
            msgs: HashMap::new(),
            graphs: HashMap::new(),
            attached: None,
            split: HashMap::new(),
            cache_hints: HashMap::new(),
            io: None,
        }
    }

    /// Carries the measured I/O dependencies' signals (`on`: the replay honours some; the
    /// same on every rank, since the communicator it copies is made collectively).
    pub fn with_io_deps(mut self, on: bool) -> Result<MpiRuntime, String> {
        if on {
            self.io = Some(iodeps::IoSignals::new(&self.p)?);
        }
        Ok(self)
    }

    /// Passes each file's access hints the trace recorded (rank 0's files) to its opens.
    pub fn with_cache_hints(mut self, h: &rsd::Header) -> MpiRuntime {
        self.cache_hints = file::cache_hints(h);
        self
    }

    /// Frees what the replay opened and MPI still holds, before `MPI_Finalize`.
    pub fn finish(&mut self) {
        if let Some(mut io) = self.io.take() {
            io.finish(&self.p);
        }
        let _ = self.wait(None);
        let _ = self.detach();
        for (_, mut r) in self.persist.drain() {
            // SAFETY: inactive persistent requests (all were completed above), freed once.
            unsafe { ffi::MPI_Request_free(&mut r.req) };
        }
        for (_, mut g) in self.graphs.drain() {
            // SAFETY: communicators this runtime created, freed once.
            unsafe { ffi::MPI_Comm_free(&mut g) };
        }
        for (_, mut f) in self.files.drain() {
            // SAFETY: `f.fh` is a file this runtime opened and did not close.
            unsafe { ffi::MPI_File_close(&mut f.fh) };
        }
        for (_, mut t) in self.dtypes.drain() {
            if t != self.p.u8 {
                // SAFETY: a datatype this runtime created and committed, freed once.
                unsafe { ffi::MPI_Type_free(&mut t) };
            }
        }
    }
}

/// The MPI library shares file sizes and shared file pointers between ranks itself: the file
/// table's own knowledge is never asked for more than the etype of a view.
impl FileEnv for MpiRuntime {}

impl Runtime for MpiRuntime {
    fn io_ended(&mut self, count: u32, to: &[u32]) -> Result<(), String> {
        let p = self.p;
        match &mut self.io {
            Some(io) => io.ended(&p, count, to),
            None => Err("no communicator for I/O dependencies".into()),
        }
    }

    fn wait_io(&mut self, from: u32, count: u32) -> Result<bool, String> {
        let p = self.p;
        match &mut self.io {
            Some(io) => io.wait(&p, from, count),
            None => Err("no communicator for I/O dependencies".into()),
        }
    }

    fn mpiio(
        &mut self,
        e: &FlatEvent,
        path: Option<&Mapped>,
        files: &FileTable,
        _fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        self.file_io(e, path, files, data)
    }

    /// Each call to its family's function. The order of the arms is the order in which the
    /// families claim a call (the guards overlap the explicit arms of later families).
    fn mpi(&mut self, e: &FlatEvent, types: &Types, bookkeeping_only: bool) -> Result<(), String> {
        let op = e.op;
        match op {
            _ if matches!(op.creation(), Some(Creation::Members | Creation::Intercomm)) => {
                return self.create_listed(e);
            }
            _ if op.creates_comm() => return self.create_split(e),
            _ if bookkeeping_only => return Ok(()),
            _ => {}
        }
        match op {
            Op::Barrier
            | Op::Bcast
            | Op::Reduce
            | Op::Allreduce
            | Op::Scan
            | Op::Exscan
            | Op::ReduceScatter
            | Op::ReduceScatterBlock
            | Op::Gather
            | Op::Allgather
            | Op::Scatter
            | Op::Alltoall
            | Op::Gatherv
            | Op::Scatterv
            | Op::Allgatherv
            | Op::Alltoallv
            | Op::Alltoallw => self.collective(e, types),
            _ if op.is_neighborhood() => self.neighborhood(e),
            _ if op.is_nonblocking_collective() => self.icoll(e, types),
            _ if op.persistent().is_some() => self.persistent_init(e, types),
            Op::Start | Op::Startall => self.start(e),
            Op::Probe | Op::Iprobe | Op::Mprobe | Op::Improbe => self.probe(e),
            Op::Mrecv | Op::Imrecv | Op::SendrecvReplace | Op::Sendrecv => self.p2p(e, types),
            _ if op.p2p().is_some() => self.p2p(e, types),
            Op::Wait
            | Op::Waitany
            | Op::RequestFree
            | Op::Test
            | Op::Testany
            | Op::Testall
            | Op::Waitsome
            | Op::Testsome
            | Op::Cancel
            | Op::Waitall => self.complete(e),
            // MPI_Init's exchange: no rank leaves before every rank has come (the engine
            // starts the wall time there).
            Op::Init => {
                let c = self.comm(rsd::mpi::COMM_WORLD)?;
                // SAFETY: a valid communicator.
                check(unsafe { ffi::MPI_Barrier(c) }, "MPI_Barrier")
            }
            Op::BufferAttach | Op::BufferDetach => self.buffer(e),
            Op::CommFree => self.comm_free(e),
            Op::CommRank
            | Op::CommSize
            | Op::CartGet
            | Op::CartRank
            | Op::CartShift
            | Op::DimsCreate
            | Op::GetProcessorName
            | Op::Finalized
            | Op::CommSetErrhandler => self.local_query(e),
            _ => Ok(()),
        }
    }
}
