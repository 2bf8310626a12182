//! Models of an MPI library's collective buffering.
//!
//! The POSIX calls nested in a collective MPI-IO call (`MPI_File_write_at_all`, `write_all`,
//! `read_at_all`, `read_all`) are not the application's: the library derives them from every
//! rank's application-level accesses in that call and its own configuration (how many ranks
//! aggregate, which, their file domains, the cycle buffer). Fitting them per event across
//! scales is the wrong model; this crate derives them instead.
//!
//! [`ompio`] models Open MPI 4.1's OMPIO (the `vulcan` and `individual` fcoll components its
//! defaults select on a non-Lustre file system, and the `posix` fbtl), read from the v4.1.4
//! source. Its input is one collective call ([`Collective`]: each rank's file regions after
//! the view, as `filetable::FileTable::apply` gives them, and the direction) plus the
//! configuration ([`ompio::Config`], Open MPI 4.1.4's defaults by default); its output is,
//! per rank, the POSIX calls in the order the rank issues them ([`Call`]). [`romio`] models
//! ROMIO 3.2.1's generic two-phase collective I/O as Open MPI 4.1.4 ships it.
//!
//! [`sharedfp`] says which numbers in the name of OMPIO's shared-file-pointer lock file belong to
//! the run (its job id and rank 0's pid), not the program.
//!
//! [`config`] reads the configuration the tracer records in the trace's header (the library,
//! the node layout, the control variables, each file's hints) into the models' configurations.
//!
//! # What the libraries decide on that a trace does not show (today)
//! The configuration structs carry these; their defaults are the libraries' defaults on one
//! node of a local file system, which is what the tests run:
//! - the MCA parameters and hints (`io_ompio_*`, `fcoll_vulcan_*`, `fbtl_posix_*`, `cb_nodes`,
//!   `cb_buffer_size`, `romio_cb_write`, `collective_buffering`, ...), and the io component;
//! - the node layout (ROMIO's aggregators are the first rank of each node) and whether
//!   `mpirun` mapped ranks by node (OMPIO's groups then interleave);
//! - the file system: on Lustre OMPIO selects `dynamic_gen2`, not modelled; on NFS OMPIO's
//!   fbtl locks ranges with `fcntl`, which the model does not issue;
//! - whether the file's communicator is cartesian with 2+ dimensions (OMPIO then groups by
//!   the topology, not modelled); whether the program runs `MPI_THREAD_MULTIPLE` (no write
//!   sieving in OMPIO's fbtl) is recorded (`rsd::format::THREAD_LEVEL`), but a trace from
//!   before it was is taken as single-threaded;
//! - the file's size when nothing in the trace wrote or sized it (what reads return), and
//!   the size at a data-sieving read that races with another aggregator's write;
//! - the user's memory datatype (taken as contiguous: a noncontiguous buffer splits OMPIO's
//!   `individual` io array and changes ROMIO's strided paths).
//!
//! OMPIO's `vulcan` writes asynchronously (`aio_write`) when a call takes more than 2 cycles
//! (more than `bytes_per_agg` bytes for one aggregator): the tracer records each request when
//! its result is collected, as the `pwrite` it did, and the model issues one per io array
//! entry ([`ompio::Outcome::async_writes`], [`fbtl::issue_async`]).

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod fbtl;
pub mod mca;
pub mod ompio;
pub mod romio;
pub mod sharedfp;
pub mod traced;

use rsd::op::Op;

/// Read or write: the direction of one collective call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// `MPI_File_read_all`, `MPI_File_read_at_all`.
    Read,
    /// `MPI_File_write_all`, `MPI_File_write_at_all`.
    Write,
}

/// One collective call: what every rank of the file's communicator asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collective {
    /// Read or write (the same on every rank).
    pub dir: Dir,
    /// Per rank of the communicator (index = rank in the communicator), the file regions
    /// (byte offset, length) in the order the rank's data fills them: the view applied.
    pub regions: Vec<Vec<(u64, u64)>>,
    /// The file's size when the call starts: what reads (and data-sieving reads) can return.
    pub file_size: u64,
    /// Per rank, the file offset its access starts at: where the explicit offset or the
    /// file pointer points through the view. Only a rank without data needs it (ROMIO counts
    /// such a rank's start in the call's range and its interleaving check); for the others
    /// it is their first region's offset.
    pub starts: Vec<u64>,
    /// Per rank, whether its view's filetype is contiguous as ROMIO judges it (Open MPI's
    /// `ADIOI_Datatype_iscontig`: two copies contiguous in memory and no hole before the
    /// first byte, i.e. one block from the origin to the extent, as predefined types are).
    /// ROMIO's independent path writes through a noncontiguous filetype with a byte-range
    /// lock around the `pwrite` even when the access is one region (HDF5's hyperslab
    /// filetypes are resized hindexed types: one region, noncontiguous type).
    pub contig_filetype: Vec<bool>,
}

impl Collective {
    /// A call whose ranks without data start at offset 0 (see [`Collective::starts`]) and
    /// whose views' filetypes are contiguous (see [`Collective::contig_filetype`]).
    pub fn new(dir: Dir, regions: Vec<Vec<(u64, u64)>>, file_size: u64) -> Collective {
        let starts = regions
            .iter()
            .map(|r| r.first().map_or(0, |f| f.0))
            .collect();
        let contig_filetype = vec![true; regions.len()];
        Collective {
            dir,
            regions,
            file_size,
            starts,
            contig_filetype,
        }
    }
}

/// One POSIX call the library issues inside the collective call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `pwrite`, `pwritev`, `pread` or `preadv`.
    pub op: Op,
    /// File offset.
    pub offset: u64,
    /// The iovec count of `pwritev`/`preadv`; `None` for `pwrite`/`pread`.
    pub iovcnt: Option<u32>,
    /// Bytes asked for.
    pub bytes: u64,
    /// Bytes the call returns: `bytes` for writes, up to the file's end for reads.
    pub ret: u64,
    /// The command of an `fcntl` (a lock or unlock of the range the library reads and
    /// writes); `None` for the data calls.
    pub cmd: Option<i64>,
}

impl Call {
    /// A data call (`pwrite`, `pwritev`, `pread`, `preadv`).
    pub fn data(op: Op, offset: u64, iovcnt: Option<u32>, bytes: u64, ret: u64) -> Call {
        Call {
            op,
            offset,
            iovcnt,
            bytes,
            ret,
            cmd: None,
        }
    }

    /// An `fcntl` lock command (`F_SETLKW` to lock, `F_SETLK` to unlock): the trace records
    /// its command and result, not the range.
    pub fn fcntl(cmd: i64) -> Call {
        Call {
            op: Op::Fcntl,
            offset: 0,
            iovcnt: None,
            bytes: 0,
            ret: 0,
            cmd: Some(cmd),
        }
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(cmd) = self.cmd {
            return write!(f, "{} cmd {cmd} ret {}", self.op.name(), self.ret);
        }
        write!(f, "{} offset {}", self.op.name(), self.offset)?;
        if let Some(n) = self.iovcnt {
            write!(f, " iovcnt {n}")?;
        }
        write!(f, " bytes {} ret {}", self.bytes, self.ret)
    }
}

/// Why a collective call cannot be modelled.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModelError {
    /// The communicator has no rank.
    #[error("the collective call has no rank")]
    NoRanks,
    /// The library does something here the model does not cover.
    #[error("not modelled: {0}")]
    Unmodelled(String),
    /// A configuration value the model divides by or counts with is out of range.
    #[error("configuration parameter {name} = {value} is out of range")]
    BadParameter {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: i64,
    },
}
