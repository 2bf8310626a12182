//! The operations iotrex records, grouped by layer, with the names of their parameters.
//!
//! Every parameter is an integer: handles are symbolic indices, peers are relative, paths are a
//! template (part of the event's structure) plus integer fields appended after the schema
//! parameters. Keeping everything integral is what lets elastic values and the extrapolation
//! models be exact.

use serde::{Deserialize, Serialize};

/// The software layer a call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Layer {
    /// MPI-IO (`MPI_File_*`).
    MpiIo,
    /// MPI communication, synchronisation, communicators and datatypes.
    Mpi,
    /// POSIX file I/O (`open`, `pwrite`, ...).
    Posix,
    /// C stdio streams (`fopen`, `fwrite`, ...).
    Stdio,
}

impl Layer {
    /// All layers, in display order.
    pub const ALL: [Layer; 4] = [Layer::MpiIo, Layer::Mpi, Layer::Posix, Layer::Stdio];

    /// The name shown to users.
    pub fn name(self) -> &'static str {
        match self {
            Layer::MpiIo => "MPIIO",
            Layer::Mpi => "MPI",
            Layer::Posix => "POSIX",
            Layer::Stdio => "STDIO",
        }
    }
}

/// What a data-moving operation does, for byte accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Reads bytes from a file.
    Read,
    /// Writes bytes to a file.
    Write,
    /// Moves no file data.
    None,
}

macro_rules! params {
    ($( $v:ident => $name:literal, )*) => {
        /// A parameter of the `ops!` table. Consumers name parameters with these, so a misspelt
        /// name is a compile error rather than a silent 0, and [`Op::index`] says where an op
        /// keeps one.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Param { $( #[doc = $name] $v, )* }

        impl Param {
            /// Every parameter name, in declaration order.
            pub const ALL: &'static [Param] = &[$(Param::$v),*];

            /// The name shown to users (`show`, `--json`, refusals).
            pub const fn name(self) -> &'static str { match self { $(Param::$v => $name,)* } }
        }
    };
}

params! {
    Comm => "comm", Amode => "amode", Fh => "fh", Size => "size", Disp => "disp",
    Etype => "etype", Filetype => "filetype", Offset => "offset", Whence => "whence",
    Count => "count", Datatype => "datatype", Bytes => "bytes", Request => "request",
    Root => "root", ReduceOp => "op", Sendcount => "sendcount", Sendtype => "sendtype",
    Recvcount => "recvcount", Recvtype => "recvtype", Recvbytes => "recvbytes",
    Sendbytes => "sendbytes", Peer => "peer", Tag => "tag", Dest => "dest", Sendtag => "sendtag",
    Source => "source", Recvtag => "recvtag", Newcomm => "newcomm", Color => "color",
    Key => "key", Oldtype => "oldtype", Newtype => "newtype", Blocklength => "blocklength",
    Stride => "stride", StrideBytes => "stride_bytes", Ndims => "ndims", Order => "order",
    Lb => "lb", Extent => "extent", Flags => "flags", Mode => "mode", Fd => "fd", Ret => "ret",
    Iovcnt => "iovcnt", Length => "length", Cmd => "cmd", Stream => "stream", Nmemb => "nmemb",
    Newfd => "newfd", Closed => "closed",
}

/// 1 for any parameter: counts a list's length in a constant expression.
macro_rules! one {
    ($p:ident) => {
        1
    };
}

macro_rules! ops {
    ($( $v:ident => $layer:ident, $name:literal, $dir:ident, [$($p:ident),*] ;)*) => {
        /// One traced operation. The discriminant order is part of the file format: append only.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum Op { $( #[doc = $name] $v, )* }

        impl Op {
            /// Every operation, in declaration order.
            pub const ALL: &'static [Op] = &[$(Op::$v),*];

            /// The layer the operation belongs to.
            pub fn layer(self) -> Layer { match self { $(Op::$v => Layer::$layer,)* } }

            /// The C name of the call, as users know it.
            pub fn name(self) -> &'static str { match self { $(Op::$v => $name,)* } }

            /// The fixed parameters, in the order the event stores them. Variable-length array
            /// parameters and path fields follow them; see [`Op::param_name`].
            pub fn params(self) -> &'static [Param] { match self { $(Op::$v => &[$(Param::$p),*],)* } }

            /// Names of the fixed parameters, for display.
            pub fn schema(self) -> &'static [&'static str] {
                match self { $(Op::$v => { const S: &[&str] = &[$(Param::$p.name()),*]; S })* }
            }

            /// Whether the call reads or writes file data.
            pub fn dir(self) -> Dir { match self { $(Op::$v => Dir::$dir,)* } }
        }

        /// Constructors of each op's fixed parameters, one function per op named after it
        /// (`args::pwrite(fd, count, offset, ret)`), so the producer writes the layout the
        /// consumers read through [`Param`] and the compiler checks both against the table.
        pub mod args {
            $(
                paste::paste! {
                    #[doc = concat!("The fixed parameters of `", $name, "`, in schema order.")]
                    #[allow(clippy::too_many_arguments)]
                    #[inline]
                    pub fn [<$v:snake>]($([<$p:snake>]: i64),*) -> Vec<i64> { vec![$([<$p:snake>]),*] }
                }
            )*
        }

        /// The same constructors returning a fixed array, for producers on a hot path: the
        /// tracer's POSIX hooks record a traced loop's calls without allocating.
        pub mod fixed {
            $(
                paste::paste! {
                    #[doc = concat!("The fixed parameters of `", $name, "`, in schema order.")]
                    #[allow(clippy::too_many_arguments)]
                    #[inline]
                    pub fn [<$v:snake>]($([<$p:snake>]: i64),*) -> [i64; 0 $(+ one!($p))*] {
                        [$([<$p:snake>]),*]
                    }
                }
            )*
        }
    };
}

ops! {
    // MPI-IO. `fh` is the index in the rank's open-file table; `count`/`datatype` as passed;
    // `bytes` is count times the datatype size, i.e. what actually moved.
    FileOpen => MpiIo, "MPI_File_open", None, [Comm, Amode, Fh];
    FileClose => MpiIo, "MPI_File_close", None, [Fh];
    FileDelete => MpiIo, "MPI_File_delete", None, [];
    FileSetSize => MpiIo, "MPI_File_set_size", None, [Fh, Size];
    FileGetSize => MpiIo, "MPI_File_get_size", None, [Fh, Size];
    FileSetView => MpiIo, "MPI_File_set_view", None, [Fh, Disp, Etype, Filetype];
    FileSeek => MpiIo, "MPI_File_seek", None, [Fh, Offset, Whence];
    FileSync => MpiIo, "MPI_File_sync", None, [Fh];
    FileRead => MpiIo, "MPI_File_read", Read, [Fh, Count, Datatype, Bytes];
    FileReadAt => MpiIo, "MPI_File_read_at", Read, [Fh, Offset, Count, Datatype, Bytes];
    FileReadAll => MpiIo, "MPI_File_read_all", Read, [Fh, Count, Datatype, Bytes];
    FileReadAtAll => MpiIo, "MPI_File_read_at_all", Read, [Fh, Offset, Count, Datatype, Bytes];
    FileReadShared => MpiIo, "MPI_File_read_shared", Read, [Fh, Count, Datatype, Bytes];
    FileReadOrdered => MpiIo, "MPI_File_read_ordered", Read, [Fh, Count, Datatype, Bytes];
    FileIread => MpiIo, "MPI_File_iread", Read, [Fh, Count, Datatype, Bytes, Request];
    FileIreadAt => MpiIo, "MPI_File_iread_at", Read, [Fh, Offset, Count, Datatype, Bytes, Request];
    FileIreadAll => MpiIo, "MPI_File_iread_all", Read, [Fh, Count, Datatype, Bytes, Request];
    FileIreadShared => MpiIo, "MPI_File_iread_shared", Read, [Fh, Count, Datatype, Bytes, Request];
    FileWrite => MpiIo, "MPI_File_write", Write, [Fh, Count, Datatype, Bytes];
    FileWriteAt => MpiIo, "MPI_File_write_at", Write, [Fh, Offset, Count, Datatype, Bytes];
    FileWriteAll => MpiIo, "MPI_File_write_all", Write, [Fh, Count, Datatype, Bytes];
    FileWriteAtAll => MpiIo, "MPI_File_write_at_all", Write, [Fh, Offset, Count, Datatype, Bytes];
    FileWriteShared => MpiIo, "MPI_File_write_shared", Write, [Fh, Count, Datatype, Bytes];
    FileWriteOrdered => MpiIo, "MPI_File_write_ordered", Write, [Fh, Count, Datatype, Bytes];
    FileIwrite => MpiIo, "MPI_File_iwrite", Write, [Fh, Count, Datatype, Bytes, Request];
    FileIwriteAt => MpiIo, "MPI_File_iwrite_at", Write, [Fh, Offset, Count, Datatype, Bytes, Request];
    FileIwriteAll => MpiIo, "MPI_File_iwrite_all", Write, [Fh, Count, Datatype, Bytes, Request];
    FileIwriteShared => MpiIo, "MPI_File_iwrite_shared", Write, [Fh, Count, Datatype, Bytes, Request];

    // MPI. Peers are stored relative to the caller (peer - rank); `comm`, `datatype`, `op` and
    // `request` are symbolic ids; `bytes` is count times the datatype size.
    Init => Mpi, "MPI_Init", None, [];
    Finalize => Mpi, "MPI_Finalize", None, [];
    Barrier => Mpi, "MPI_Barrier", None, [Comm];
    Bcast => Mpi, "MPI_Bcast", None, [Count, Datatype, Root, Comm, Bytes];
    Reduce => Mpi, "MPI_Reduce", None, [Count, Datatype, ReduceOp, Root, Comm, Bytes];
    Allreduce => Mpi, "MPI_Allreduce", None, [Count, Datatype, ReduceOp, Comm, Bytes];
    Gather => Mpi, "MPI_Gather", None, [Sendcount, Sendtype, Recvcount, Recvtype, Root, Comm, Bytes];
    Gatherv => Mpi, "MPI_Gatherv", None, [Sendcount, Sendtype, Recvbytes, Recvtype, Root, Comm, Bytes];
    Scatter => Mpi, "MPI_Scatter", None, [Sendcount, Sendtype, Recvcount, Recvtype, Root, Comm, Bytes];
    Scatterv => Mpi, "MPI_Scatterv", None, [Sendbytes, Sendtype, Recvcount, Recvtype, Root, Comm, Bytes];
    Allgather => Mpi, "MPI_Allgather", None, [Sendcount, Sendtype, Recvcount, Recvtype, Comm, Bytes];
    Allgatherv => Mpi, "MPI_Allgatherv", None, [Sendcount, Sendtype, Recvbytes, Recvtype, Comm, Bytes];
    Alltoall => Mpi, "MPI_Alltoall", None, [Sendcount, Sendtype, Recvcount, Recvtype, Comm, Bytes];
    Alltoallv => Mpi, "MPI_Alltoallv", None, [Sendbytes, Sendtype, Recvbytes, Recvtype, Comm, Bytes];
    Send => Mpi, "MPI_Send", None, [Count, Datatype, Peer, Tag, Comm, Bytes];
    Recv => Mpi, "MPI_Recv", None, [Count, Datatype, Peer, Tag, Comm, Bytes];
    Isend => Mpi, "MPI_Isend", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    Irecv => Mpi, "MPI_Irecv", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    Wait => Mpi, "MPI_Wait", None, [Request];
    Waitall => Mpi, "MPI_Waitall", None, [Count];
    Sendrecv => Mpi, "MPI_Sendrecv", None, [Sendcount, Sendtype, Dest, Sendtag, Recvcount, Recvtype, Source, Recvtag, Comm, Bytes];
    CommDup => Mpi, "MPI_Comm_dup", None, [Comm, Newcomm];
    CommSplit => Mpi, "MPI_Comm_split", None, [Comm, Color, Key, Newcomm];
    TypeContiguous => Mpi, "MPI_Type_contiguous", None, [Count, Oldtype, Newtype];
    TypeVector => Mpi, "MPI_Type_vector", None, [Count, Blocklength, Stride, Oldtype, Newtype];
    TypeHvector => Mpi, "MPI_Type_create_hvector", None, [Count, Blocklength, StrideBytes, Oldtype, Newtype];
    // Followed by `count` block lengths then `count` displacements.
    TypeIndexed => Mpi, "MPI_Type_indexed", None, [Count, Oldtype, Newtype];
    // Followed by `ndims` sizes, `ndims` subsizes, `ndims` starts.
    TypeCreateSubarray => Mpi, "MPI_Type_create_subarray", None, [Ndims, Order, Oldtype, Newtype];
    // Followed by `count` block lengths, `count` byte displacements, `count` types.
    TypeCreateStruct => Mpi, "MPI_Type_create_struct", None, [Count, Newtype];
    TypeCreateResized => Mpi, "MPI_Type_create_resized", None, [Oldtype, Lb, Extent, Newtype];
    TypeCommit => Mpi, "MPI_Type_commit", None, [Datatype];
    TypeFree => Mpi, "MPI_Type_free", None, [Datatype];

    // POSIX. `fd` is the index in the rank's open-file table, `ret` the call's result.
    Open => Posix, "open", None, [Flags, Mode, Fd];
    Openat => Posix, "openat", None, [Flags, Mode, Fd];
    Creat => Posix, "creat", None, [Mode, Fd];
    Close => Posix, "close", None, [Fd];
    Read => Posix, "read", Read, [Fd, Count, Ret];
    Write => Posix, "write", Write, [Fd, Count, Ret];
    Pread => Posix, "pread", Read, [Fd, Count, Offset, Ret];
    Pwrite => Posix, "pwrite", Write, [Fd, Count, Offset, Ret];
    Readv => Posix, "readv", Read, [Fd, Iovcnt, Ret];
    Writev => Posix, "writev", Write, [Fd, Iovcnt, Ret];
    Preadv => Posix, "preadv", Read, [Fd, Iovcnt, Offset, Ret];
    Pwritev => Posix, "pwritev", Write, [Fd, Iovcnt, Offset, Ret];
    Lseek => Posix, "lseek", None, [Fd, Offset, Whence, Ret];
    Fsync => Posix, "fsync", None, [Fd];
    Fdatasync => Posix, "fdatasync", None, [Fd];
    Ftruncate => Posix, "ftruncate", None, [Fd, Length];
    Unlink => Posix, "unlink", None, [];
    Mkdir => Posix, "mkdir", None, [Mode];
    Rmdir => Posix, "rmdir", None, [];
    Stat => Posix, "stat", None, [Ret];
    Access => Posix, "access", None, [Mode, Ret];
    Fcntl => Posix, "fcntl", None, [Fd, Cmd, Ret];

    // stdio. `stream` is the index in the rank's open-file table.
    Fopen => Stdio, "fopen", None, [Mode, Stream];
    Fclose => Stdio, "fclose", None, [Stream];
    Fread => Stdio, "fread", Read, [Stream, Size, Nmemb, Ret];
    Fwrite => Stdio, "fwrite", Write, [Stream, Size, Nmemb, Ret];
    Fseek => Stdio, "fseek", None, [Stream, Offset, Whence];
    Fflush => Stdio, "fflush", None, [Stream];
    Fprintf => Stdio, "fprintf", Write, [Stream, Ret];
    // A communicator built from a group (`MPI_Comm_create`), recorded as the split that builds
    // the same one: color = the parent-comm rank of the new communicator's rank 0 (MPI_UNDEFINED,
    // -32766, where the caller is not a member), key = the caller's rank in it.
    CommCreate => Mpi, "MPI_Comm_create", None, [Comm, Color, Key, Newcomm];
    // `MPI_Comm_split_type`, with color and key derived the same way.
    CommSplitType => Mpi, "MPI_Comm_split_type", None, [Comm, Color, Key, Newcomm];
    // Descriptor duplication: `dup`, `dup2`, `dup3` and `fcntl(F_DUPFD[_CLOEXEC])`. `fd` is the
    // traced source, `newfd` the id the copy gets (-1 when the call failed), `closed` the id of
    // a traced descriptor that `dup2`/`dup3` closed by reusing its number (-1 for none).
    Dup => Posix, "dup", None, [Fd, Newfd, Closed];
    // Followed by `count` block lengths, then `count` byte displacements.
    TypeCreateHindexed => Mpi, "MPI_Type_create_hindexed", None, [Count, Oldtype, Newtype];
    // Followed by `count` byte displacements.
    TypeCreateHindexedBlock => Mpi, "MPI_Type_create_hindexed_block", None, [Count, Blocklength, Oldtype, Newtype];
    // Followed by `count` displacements (in extents of `oldtype`).
    TypeCreateIndexedBlock => Mpi, "MPI_Type_create_indexed_block", None, [Count, Blocklength, Oldtype, Newtype];
    TypeDup => Mpi, "MPI_Type_dup", None, [Oldtype, Newtype];
    // The other send modes, recorded as `MPI_Send`/`MPI_Isend` are (a code that sends with
    // MPI_Rsend otherwise left receives without sends in its trace).
    Ssend => Mpi, "MPI_Ssend", None, [Count, Datatype, Peer, Tag, Comm, Bytes];
    Rsend => Mpi, "MPI_Rsend", None, [Count, Datatype, Peer, Tag, Comm, Bytes];
    Bsend => Mpi, "MPI_Bsend", None, [Count, Datatype, Peer, Tag, Comm, Bytes];
    Issend => Mpi, "MPI_Issend", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    Irsend => Mpi, "MPI_Irsend", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    Ibsend => Mpi, "MPI_Ibsend", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    // Prefix reductions, as `MPI_Allreduce` is recorded.
    Scan => Mpi, "MPI_Scan", None, [Count, Datatype, ReduceOp, Comm, Bytes];
    Exscan => Mpi, "MPI_Exscan", None, [Count, Datatype, ReduceOp, Comm, Bytes];
    // `request` is the request that completed (-1 for none: all were null).
    Waitany => Mpi, "MPI_Waitany", None, [Count, Request];
    RequestFree => Mpi, "MPI_Request_free", None, [Request];
    CommFree => Mpi, "MPI_Comm_free", None, [Comm];
    // `MPI_Cart_create`, recorded as the split that builds the same communicator (as
    // `MPI_Comm_create`): its topology only answers local queries, its messages are ordinary.
    CartCreate => Mpi, "MPI_Cart_create", None, [Comm, Color, Key, Newcomm];
    // `count` is the caller's own block (recvcounts[rank] for the vector form); `bytes` is
    // that block in bytes. Each rank sends every block, the sum of all ranks' counts.
    ReduceScatter => Mpi, "MPI_Reduce_scatter", None, [Count, Datatype, ReduceOp, Comm, Bytes];
    ReduceScatterBlock => Mpi, "MPI_Reduce_scatter_block", None, [Count, Datatype, ReduceOp, Comm, Bytes];
}

/// What a point-to-point call does with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum P2p {
    /// Sends one (`peer`, `tag`), whatever the mode.
    Send {
        /// Returns before it completes, leaving a `request`.
        nonblocking: bool,
    },
    /// Receives one (`peer`, `tag`).
    Recv {
        /// Returns before it completes, leaving a `request`.
        nonblocking: bool,
    },
}

impl Op {
    /// Collective communication calls (every member of the communicator makes them, in the
    /// same order), communicator creation aside ([`Op::creates_comm`]).
    pub fn is_collective(self) -> bool {
        matches!(
            self,
            Op::Barrier
                | Op::Bcast
                | Op::Reduce
                | Op::Allreduce
                | Op::Gather
                | Op::Gatherv
                | Op::Scatter
                | Op::Scatterv
                | Op::Allgather
                | Op::Allgatherv
                | Op::Alltoall
                | Op::Alltoallv
                | Op::Scan
                | Op::Exscan
                | Op::ReduceScatter
                | Op::ReduceScatterBlock
        )
    }

    /// Calls that create a communicator from a parent (collective over the parent).
    pub fn creates_comm(self) -> bool {
        matches!(
            self,
            Op::CommDup | Op::CommSplit | Op::CommCreate | Op::CommSplitType | Op::CartCreate
        )
    }

    /// The point-to-point role of this op, for the calls that send or receive one message
    /// (`MPI_Sendrecv` does both: it has none here).
    pub fn p2p(self) -> Option<P2p> {
        match self {
            Op::Send | Op::Ssend | Op::Rsend | Op::Bsend => Some(P2p::Send { nonblocking: false }),
            Op::Isend | Op::Issend | Op::Irsend | Op::Ibsend => {
                Some(P2p::Send { nonblocking: true })
            }
            Op::Recv => Some(P2p::Recv { nonblocking: false }),
            Op::Irecv => Some(P2p::Recv { nonblocking: true }),
            _ => None,
        }
    }
}

/// How the `mode` parameter of `fopen` encodes the mode string: one bit per letter, so a trace
/// keeps it exactly and every consumer decodes it the same way.
pub mod fopen_mode {
    /// `r`
    pub const R: i64 = 1;
    /// `w`
    pub const W: i64 = 2;
    /// `a`
    pub const A: i64 = 4;
    /// `+`
    pub const PLUS: i64 = 8;
    /// `b`
    pub const B: i64 = 16;
    /// `x`
    pub const X: i64 = 32;
    /// `e`
    pub const E: i64 = 64;

    /// The bits of a mode string such as `"w+b"`; glibc's `,ccs=...` suffix is ignored.
    pub fn encode(mode: &str) -> i64 {
        let mut b = 0;
        for c in mode.chars() {
            b |= match c {
                'r' => R,
                'w' => W,
                'a' => A,
                '+' => PLUS,
                'b' => B,
                'x' => X,
                'e' => E,
                ',' => break,
                _ => 0,
            };
        }
        b
    }

    /// The `open(2)` flags `fopen` uses for these bits (`O_RDONLY` 0, `O_WRONLY` 1, `O_RDWR`
    /// 2, `O_CREAT` 0o100, `O_TRUNC` 0o1000, `O_APPEND` 0o2000, `O_EXCL` 0o200, as on Linux).
    pub fn open_flags(bits: i64) -> i64 {
        let plus = bits & PLUS != 0;
        let acc = if plus {
            2
        } else if bits & R != 0 {
            0
        } else {
            1
        };
        let mut f = acc;
        if bits & W != 0 {
            f |= 0o100 | 0o1000;
        }
        if bits & A != 0 {
            f |= 0o100 | 0o2000;
        }
        if bits & X != 0 {
            f |= 0o200;
        }
        f
    }
}

/// The open-file table an operation's handle lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Handle {
    /// A POSIX descriptor (`fd`).
    Fd,
    /// A stdio stream (`stream`).
    Stream,
    /// An MPI file (`fh`).
    MpiFile,
}

impl Op {
    /// The table of the open handle this op acts on, when its first parameter is one (an open
    /// call's new handle is a result, not what it acts on, and does not count).
    pub fn handle(self) -> Option<Handle> {
        match self.params().first() {
            Some(Param::Fd) => Some(Handle::Fd),
            Some(Param::Stream) => Some(Handle::Stream),
            Some(Param::Fh) => Some(Handle::MpiFile),
            _ => None,
        }
    }

    /// Where this op stores parameter `p` among its fixed parameters, or `None` when it has no
    /// such parameter.
    pub fn index(self, p: Param) -> Option<usize> {
        self.params().iter().position(|q| *q == p)
    }

    /// Parameter `p` of an event of this op with parameters `params`: `None` when the op has no
    /// such parameter or the event is shorter than its schema.
    pub fn get(self, params: &[i64], p: Param) -> Option<i64> {
        self.index(p).and_then(|i| params.get(i).copied())
    }

    /// Parameter `p`, which this op's schema has. Asking an op for a parameter its schema lacks
    /// is a programming error: debug builds panic (use [`Op::get`] where the op may lack it),
    /// release builds read 0 rather than abort a replay or an export; so does an event shorter
    /// than its schema (only a hand-built one).
    pub fn param(self, params: &[i64], p: Param) -> i64 {
        let i = self.index(p);
        debug_assert!(i.is_some(), "{} has no parameter {}", self.name(), p.name());
        i.and_then(|i| params.get(i).copied()).unwrap_or(0)
    }

    /// Name of parameter `idx` of an event of this op that has `nparams` parameters in all and
    /// `nfields` path fields at the end.
    pub fn param_name(self, idx: usize, nparams: usize, nfields: usize) -> String {
        let schema = self.schema();
        if idx < schema.len() {
            return schema[idx].to_string();
        }
        if idx >= nparams.saturating_sub(nfields) {
            return format!("path[{}]", idx - (nparams - nfields));
        }
        let extra = idx - schema.len();
        let n_extra = nparams - nfields - schema.len();
        let arrays: &[&str] = match self {
            Op::TypeIndexed => &["blocklengths", "displacements"],
            Op::TypeCreateHindexed => &["blocklengths", "displacements"],
            Op::TypeCreateHindexedBlock | Op::TypeCreateIndexedBlock => &["displacements"],
            Op::TypeCreateSubarray => &["sizes", "subsizes", "starts"],
            Op::TypeCreateStruct => &["blocklengths", "displacements", "types"],
            _ => &["extra"],
        };
        let per = (n_extra / arrays.len()).max(1);
        let which = (extra / per).min(arrays.len() - 1);
        format!("{}[{}]", arrays[which], extra - which * per)
    }

    /// Bytes of file data this call moved, given its parameters, or 0 for calls that move none.
    /// MPI-IO uses `bytes`; POSIX uses the result `ret` (clamped at 0 for failures); stdio uses
    /// `size * ret` for fread/fwrite and `ret` for fprintf.
    pub fn data_bytes(self, params: &[i64]) -> u64 {
        if self.dir() == Dir::None {
            return 0;
        }
        let get = |p: Param| self.param(params, p);
        let v = match self.layer() {
            Layer::MpiIo => get(Param::Bytes),
            Layer::Posix => get(Param::Ret),
            Layer::Stdio => match self {
                Op::Fprintf => get(Param::Ret),
                _ => get(Param::Size).saturating_mul(get(Param::Ret)),
            },
            Layer::Mpi => 0,
        };
        v.max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_schema_has_no_duplicates() {
        let mut seen = std::collections::HashSet::new();
        for op in Op::ALL {
            assert!(seen.insert(op.name()), "duplicate op name {}", op.name());
            let mut ps = std::collections::HashSet::new();
            for p in op.schema() {
                assert!(ps.insert(*p), "{} repeats {}", op.name(), p);
            }
        }
        assert!(Op::ALL.len() > 80);
    }

    #[test]
    fn typed_params_follow_the_schema() {
        for op in Op::ALL {
            let names: Vec<&str> = op.params().iter().map(|p| p.name()).collect();
            assert_eq!(names, op.schema(), "{}", op.name());
            for (i, p) in op.params().iter().enumerate() {
                assert_eq!(op.index(*p), Some(i));
            }
        }
        let v = args::pwrite(3, 8, 4096, 8);
        assert_eq!(Op::Pwrite.get(&v, Param::Offset), Some(4096));
        assert_eq!(Op::Pwrite.get(&v, Param::Whence), None);
        assert_eq!(Op::Pwrite.param(&v, Param::Fd), 3);
        let v = args::sendrecv(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
        assert_eq!(Op::Sendrecv.param(&v, Param::Source), 7);
        assert_eq!(args::reduce(1, 2, 3, 4, 5, 6)[2], 3);
        // A short (hand-built) event reads 0 for what it lacks.
        assert_eq!(Op::Pwrite.param(&[3], Param::Ret), 0);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "fsync has no parameter offset")]
    fn asking_an_op_for_a_parameter_it_lacks_panics() {
        Op::Fsync.param(&[0], Param::Offset);
    }

    #[test]
    fn handle_kinds_come_from_the_table() {
        assert_eq!(Op::Pwrite.handle(), Some(Handle::Fd));
        assert_eq!(Op::Fwrite.handle(), Some(Handle::Stream));
        assert_eq!(Op::FileWriteAt.handle(), Some(Handle::MpiFile));
        // An open's handle is its result, not what it acts on.
        assert_eq!(Op::Open.handle(), None);
        assert_eq!(Op::FileOpen.handle(), None);
        assert_eq!(Op::Barrier.handle(), None);
    }

    #[test]
    fn array_param_names() {
        // count=2, old, new, 2 blocklengths, 2 displacements, 1 path field (not realistic, but shows the split).
        let n = 3 + 4;
        assert_eq!(Op::TypeIndexed.param_name(3, n, 0), "blocklengths[0]");
        assert_eq!(Op::TypeIndexed.param_name(6, n, 0), "displacements[1]");
        assert_eq!(Op::Open.param_name(3, 4, 1), "path[0]");
    }

    #[test]
    fn fopen_modes() {
        use fopen_mode::*;
        assert_eq!(encode("r"), R);
        assert_eq!(encode("w+b"), W | PLUS | B);
        assert_eq!(encode("a,ccs=UTF-8"), A);
        assert_eq!(open_flags(encode("r")), 0);
        assert_eq!(open_flags(encode("w")), 0o1101);
        assert_eq!(open_flags(encode("a+")), 0o2102);
        assert_eq!(open_flags(encode("r+")), 2);
    }

    #[test]
    fn data_bytes_by_layer() {
        assert_eq!(Op::Pwrite.data_bytes(&[0, 8, 0, 8]), 8);
        assert_eq!(Op::Pwrite.data_bytes(&[0, 8, 0, -1]), 0);
        assert_eq!(Op::Fwrite.data_bytes(&[0, 4, 10, 10]), 40);
        assert_eq!(Op::FileWriteAt.data_bytes(&[0, 0, 1, 1, 4096]), 4096);
        assert_eq!(Op::Barrier.data_bytes(&[0]), 0);
    }
}
