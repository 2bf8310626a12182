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
    /// HDF5 (`H5Fcreate`, `H5Dwrite`, ...): library calls above MPI-IO, recorded as containers
    /// whose children are the MPI, MPI-IO and POSIX calls the library made for them.
    Hdf5,
    /// PnetCDF (`ncmpi_create`, `ncmpi_put_vara_all`, ...): containers as HDF5's are, whose
    /// children are the MPI, MPI-IO and POSIX calls the library made for them.
    Pnetcdf,
    /// NetCDF (`nc_create_par`, `nc_put_vara_int`, ...): containers as HDF5's are; a NetCDF-4
    /// file's calls hold the HDF5 calls the library made (with the HDF5 layer recorded) or
    /// HDF5's MPI, MPI-IO and POSIX calls directly (without).
    Netcdf,
}

impl Layer {
    /// The layers of a trace header (`Header::layers`), in display order: those of format
    /// version 1, which its golden files record. [`Layer::STACK`] adds the libraries above
    /// MPI-IO.
    pub const ALL: [Layer; 4] = [Layer::MpiIo, Layer::Mpi, Layer::Posix, Layer::Stdio];

    /// Every layer, the application's libraries first (HDF5 above MPI-IO): what per-layer
    /// totals and displays iterate over.
    pub const STACK: [Layer; 7] = [
        Layer::Netcdf,
        Layer::Hdf5,
        Layer::Pnetcdf,
        Layer::MpiIo,
        Layer::Mpi,
        Layer::Posix,
        Layer::Stdio,
    ];

    /// The name shown to users.
    pub fn name(self) -> &'static str {
        match self {
            Layer::MpiIo => "MPIIO",
            Layer::Mpi => "MPI",
            Layer::Posix => "POSIX",
            Layer::Stdio => "STDIO",
            Layer::Hdf5 => "HDF5",
            Layer::Pnetcdf => "PnetCDF",
            Layer::Netcdf => "NetCDF",
        }
    }

    /// Whether the layer's calls are containers: a library above MPI-IO whose own calls move
    /// no bytes themselves, the calls it made (its event's children) do. Replay issues the
    /// children, the POSIX view and per-layer byte counts read them.
    pub fn is_container(self) -> bool {
        matches!(self, Layer::Hdf5 | Layer::Pnetcdf | Layer::Netcdf)
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
    Newfd => "newfd", Closed => "closed", Flag => "flag", Outcount => "outcount",
    Message => "message", MatchedSource => "matched_source", MatchedTag => "matched_tag",
    Indegree => "indegree", Outdegree => "outdegree", LocalLeader => "local_leader",
    PeerComm => "peer_comm", RemoteLeader => "remote_leader", RemoteSize => "remote_size",
    High => "high", Prot => "prot", Dirp => "dir",
    Loc => "loc", H5File => "file", Dset => "dset", Space => "space", MemSpace => "mem_space",
    FileSpace => "file_space", Attr => "attr", Group => "group", SelectOp => "select_op",
    Scope => "scope", Xfer => "xfer",
    Ncid => "ncid", Varid => "varid", Dimid => "dimid", Xtype => "xtype", MemType => "mem_type",
    Storage => "storage",
    Rank => "rank", Direction => "direction", Maxdims => "maxdims", Errhandler => "errhandler",
    Advice => "advice",
}

/// 1 for any parameter: counts a list's length in a constant expression.
impl Param {
    /// Whether the parameter is a quantity that follows the program's data (a size, a count,
    /// a returned length, a datatype's block length or extent), which an approximate
    /// extrapolation may summarise; the others name things (handles, peers, communicators,
    /// datatypes, tags) or places (offsets, displacements), whose summaries would replay as
    /// other files, partners or layouts.
    pub fn is_quantity(self) -> bool {
        matches!(
            self,
            Param::Size
                | Param::Count
                | Param::Bytes
                | Param::Sendcount
                | Param::Recvcount
                | Param::Recvbytes
                | Param::Sendbytes
                | Param::Blocklength
                | Param::Stride
                | Param::StrideBytes
                | Param::Lb
                | Param::Extent
                | Param::Ret
                | Param::Length
                | Param::Nmemb
                | Param::Outcount
        )
    }
}

macro_rules! one {
    ($p:ident) => {
        1
    };
}

macro_rules! ops {
    ($( $v:ident => $layer:ident, $name:literal, $dir:ident, [$($p:ident),*] ;)*) => {
        /// One traced operation. Traces store it by its variant name (formats 1 and 2 alike),
        /// so a name once written stays; the table's order is only [`Op::ALL`]'s.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum Op { $( #[doc = $name] $v, )* }

        impl Op {
            /// Every operation, in declaration order.
            pub const ALL: &'static [Op] = &[$(Op::$v),*];

            /// The layer the operation belongs to.
            #[inline]
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

    // POSIX. `fd` is the index in the rank's open-file table, `ret` the call's result. An
    // asynchronous request (`aio_read`/`aio_write`, a `lio_listio` entry) has no op of its
    // own: it is recorded when `aio_return` collects it, as the `pread`/`pwrite` it did
    // (`count` the bytes asked for, `offset` the request's, `ret` what `aio_return` gave),
    // nested in the call that collected it, so every consumer counts, places and replays it
    // as any positioned read or write.
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
    // `F_SETFL` is followed by the flags set, as passed (O_APPEND, O_DIRECT, O_NONBLOCK, ...;
    // older traces have none): O_DIRECT set on an open file changes where its data goes.
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
    // Followed by the grid: `ndims` dims and `ndims` periods (0 or 1) as passed, where the
    // call succeeded (older traces have none). OMPIO groups the aggregators
    // of a file opened on a Cartesian communicator of 2+ dimensions by the grid's first
    // dimension.
    CartCreate => Mpi, "MPI_Cart_create", None, [Comm, Color, Key, Newcomm];
    // `count` is the caller's own block (recvcounts[rank] for the vector form); `bytes` is
    // that block in bytes. Each rank sends every block, the sum of all ranks' counts.
    ReduceScatter => Mpi, "MPI_Reduce_scatter", None, [Count, Datatype, ReduceOp, Comm, Bytes];
    ReduceScatterBlock => Mpi, "MPI_Reduce_scatter_block", None, [Count, Datatype, ReduceOp, Comm, Bytes];

    // ---- The rest of the MPI-3.1 communication API. Conventions as above: peers
    // relative to the caller (rsd::mpi::ANY_SOURCE / PROC_NULL sentinels), tags as passed
    // (negative = MPI_ANY_TAG), `comm`, `datatype`, `op` symbolic ids, `bytes` = count times
    // the datatype's size, a type of -1 for an MPI_IN_PLACE side.
    //
    // Request ids: the index in the rank's request table, as for `MPI_Isend`; -1 for
    // MPI_REQUEST_NULL or a call that failed. A completion call records the ids it completed
    // and releases them, except for a persistent request (below), which keeps its id until
    // `MPI_Request_free`.

    // Persistent requests. The init calls record what `MPI_Isend`/`MPI_Irecv` record (peer,
    // tag, comm, bytes of one message) and the new persistent `request`; they move no message.
    // Each `MPI_Start`/`MPI_Startall` of the request sends (or receives) one such message, and
    // the completion call that follows (`Wait*`/`Test*`) records the request's id as it does
    // for any request; the id stays allocated (the request is only inactive) until
    // `MPI_Request_free`, which releases it.
    SendInit => Mpi, "MPI_Send_init", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    BsendInit => Mpi, "MPI_Bsend_init", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    SsendInit => Mpi, "MPI_Ssend_init", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    RsendInit => Mpi, "MPI_Rsend_init", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    RecvInit => Mpi, "MPI_Recv_init", None, [Count, Datatype, Peer, Tag, Comm, Bytes, Request];
    // `request`: the persistent request started.
    Start => Mpi, "MPI_Start", None, [Request];
    // `count` as passed, followed by the `count` persistent request ids started, in array order.
    Startall => Mpi, "MPI_Startall", None, [Count];

    // Probes. `peer`, `tag`: the source and tag asked for (wildcards as stored for a receive);
    // `matched_source` (relative, as peers are) and `matched_tag`: the status of the message
    // found; `bytes`: its size (MPI_Get_count of the status with MPI_BYTE). A probe on
    // MPI_PROC_NULL finds the empty message: matched_source PROC_NULL, matched_tag -1, bytes 0.
    // `flag`: 1 when the nonblocking probe found a message, 0 when not; with flag 0 the matched
    // fields and bytes are 0 (meaningless) and `message` is -1.
    // MPI_Probe/MPI_Iprobe receive nothing: the message stays for a later receive.
    Probe => Mpi, "MPI_Probe", None, [Peer, Tag, Comm, MatchedSource, MatchedTag, Bytes];
    Iprobe => Mpi, "MPI_Iprobe", None, [Peer, Tag, Comm, Flag, MatchedSource, MatchedTag, Bytes];
    // Matched probes: MPI_Mprobe (and MPI_Improbe with flag 1) takes the message off the
    // queue, so they are what counts as its receive; `message` is the index of the message
    // handle in the rank's message table (-1 for MPI_MESSAGE_NO_PROC or flag 0).
    Mprobe => Mpi, "MPI_Mprobe", None, [Peer, Tag, Comm, MatchedSource, MatchedTag, Bytes, Message];
    Improbe => Mpi, "MPI_Improbe", None, [Peer, Tag, Comm, Flag, MatchedSource, MatchedTag, Bytes, Message];
    // Receive of a matched message: `count`/`datatype` of the buffer, `message` the id
    // Mprobe/Improbe recorded (released here; -1 for MPI_MESSAGE_NO_PROC), `bytes` count times
    // the datatype size. They complete the receive, they do not count a second one.
    Mrecv => Mpi, "MPI_Mrecv", None, [Count, Datatype, Message, Bytes];
    Imrecv => Mpi, "MPI_Imrecv", None, [Count, Datatype, Message, Bytes, Request];

    // Completion calls. A test that finds its request(s) complete is a completion, as the
    // corresponding wait is; one that does not completes nothing.
    // `count` as passed; `outcount` the number completed (0 when MPI returned MPI_UNDEFINED),
    // followed by the `outcount` ids of the completed requests, in the order MPI's `indices`
    // lists them (ids read before the call, since MPI nulls completed non-persistent ones).
    Waitsome => Mpi, "MPI_Waitsome", None, [Count, Outcount];
    // `request`: the id tested (-1 for MPI_REQUEST_NULL); `flag`: 1 when it completed (the id
    // is then released, unless persistent), 0 when not.
    Test => Mpi, "MPI_Test", None, [Request, Flag];
    // `count` as passed, `flag` as returned, followed by the `count` request ids passed (read
    // before the call; -1 for MPI_REQUEST_NULL). With flag 1 all of them completed, with
    // flag 0 none did.
    Testall => Mpi, "MPI_Testall", None, [Count, Flag];
    // `request`: the id that completed, -1 for none (flag 0, or flag 1 with every request
    // null); `flag` as returned.
    Testany => Mpi, "MPI_Testany", None, [Count, Request, Flag];
    // As `MPI_Waitsome`: `outcount` may be 0; followed by the `outcount` completed ids.
    Testsome => Mpi, "MPI_Testsome", None, [Count, Outcount];
    // `request`: the id cancelled. Not a completion: the request is still waited for or
    // tested later, which records its completion (whether the cancel succeeded is not
    // recorded).
    Cancel => Mpi, "MPI_Cancel", None, [Request];

    // As `MPI_Sendrecv`, one buffer: `count`/`datatype` serve both sides, `bytes` is one side.
    SendrecvReplace => Mpi, "MPI_Sendrecv_replace", None, [Count, Datatype, Dest, Sendtag, Source, Recvtag, Comm, Bytes];
    // As `MPI_Alltoallv` with a type per peer: `sendbytes`/`recvbytes` are the sums over peers
    // of count times that peer's type size (sendbytes 0 for MPI_IN_PLACE); `bytes` = sendbytes.
    Alltoallw => Mpi, "MPI_Alltoallw", None, [Sendbytes, Recvbytes, Comm, Bytes];
    // `size` in bytes: of the buffer attached, and of the buffer detach returned.
    BufferAttach => Mpi, "MPI_Buffer_attach", None, [Size];
    BufferDetach => Mpi, "MPI_Buffer_detach", None, [Size];

    // Nonblocking collectives: exactly the parameters of the blocking call (same meaning,
    // same MPI_IN_PLACE rule), then the `request`. The call's messages move between the start
    // and the completion of the request.
    Ibarrier => Mpi, "MPI_Ibarrier", None, [Comm, Request];
    Ibcast => Mpi, "MPI_Ibcast", None, [Count, Datatype, Root, Comm, Bytes, Request];
    Ireduce => Mpi, "MPI_Ireduce", None, [Count, Datatype, ReduceOp, Root, Comm, Bytes, Request];
    Iallreduce => Mpi, "MPI_Iallreduce", None, [Count, Datatype, ReduceOp, Comm, Bytes, Request];
    Igather => Mpi, "MPI_Igather", None, [Sendcount, Sendtype, Recvcount, Recvtype, Root, Comm, Bytes, Request];
    Igatherv => Mpi, "MPI_Igatherv", None, [Sendcount, Sendtype, Recvbytes, Recvtype, Root, Comm, Bytes, Request];
    Iscatter => Mpi, "MPI_Iscatter", None, [Sendcount, Sendtype, Recvcount, Recvtype, Root, Comm, Bytes, Request];
    Iscatterv => Mpi, "MPI_Iscatterv", None, [Sendbytes, Sendtype, Recvcount, Recvtype, Root, Comm, Bytes, Request];
    Iallgather => Mpi, "MPI_Iallgather", None, [Sendcount, Sendtype, Recvcount, Recvtype, Comm, Bytes, Request];
    Iallgatherv => Mpi, "MPI_Iallgatherv", None, [Sendcount, Sendtype, Recvbytes, Recvtype, Comm, Bytes, Request];
    Ialltoall => Mpi, "MPI_Ialltoall", None, [Sendcount, Sendtype, Recvcount, Recvtype, Comm, Bytes, Request];
    Ialltoallv => Mpi, "MPI_Ialltoallv", None, [Sendbytes, Sendtype, Recvbytes, Recvtype, Comm, Bytes, Request];
    Ialltoallw => Mpi, "MPI_Ialltoallw", None, [Sendbytes, Recvbytes, Comm, Bytes, Request];
    IreduceScatter => Mpi, "MPI_Ireduce_scatter", None, [Count, Datatype, ReduceOp, Comm, Bytes, Request];
    IreduceScatterBlock => Mpi, "MPI_Ireduce_scatter_block", None, [Count, Datatype, ReduceOp, Comm, Bytes, Request];
    Iscan => Mpi, "MPI_Iscan", None, [Count, Datatype, ReduceOp, Comm, Bytes, Request];
    Iexscan => Mpi, "MPI_Iexscan", None, [Count, Datatype, ReduceOp, Comm, Bytes, Request];

    // Neighbourhood collectives, one layout for all ten, so the replay can issue any of them on
    // a graph of its own (the topology communicators are recorded as splits and carry none):
    // `indegree`/`outdegree` the caller's neighbour counts (as MPI_Dist_graph_neighbors_count
    // gives, or 2*ndims for a Cartesian communicator, or the graph's neighbour count for both),
    // `sendbytes`/`recvbytes` the totals of the arrays below, then the `request` for the `I`
    // forms. Followed by:
    //   `indegree` source peers, then `outdegree` destination peers, in MPI's neighbour order
    //   (Cartesian: for each dimension d in order, rank_source then rank_dest of
    //   MPI_Cart_shift(comm, d, 1), the same list for sources and destinations; graph:
    //   MPI_Graph_neighbors, the same list for both; distributed graph: the sources and
    //   destinations of MPI_Dist_graph_neighbors), stored relative to the caller as any peer,
    //   MPI_PROC_NULL as rsd::mpi::PROC_NULL;
    //   `outdegree` byte counts sent to each destination, in that order (the same sendcount
    //   times the type size for each in the allgather forms);
    //   `indegree` byte counts received from each source, in that order.
    NeighborAllgather => Mpi, "MPI_Neighbor_allgather", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes];
    NeighborAllgatherv => Mpi, "MPI_Neighbor_allgatherv", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes];
    NeighborAlltoall => Mpi, "MPI_Neighbor_alltoall", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes];
    NeighborAlltoallv => Mpi, "MPI_Neighbor_alltoallv", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes];
    NeighborAlltoallw => Mpi, "MPI_Neighbor_alltoallw", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes];
    IneighborAllgather => Mpi, "MPI_Ineighbor_allgather", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes, Request];
    IneighborAllgatherv => Mpi, "MPI_Ineighbor_allgatherv", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes, Request];
    IneighborAlltoall => Mpi, "MPI_Ineighbor_alltoall", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes, Request];
    IneighborAlltoallv => Mpi, "MPI_Ineighbor_alltoallv", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes, Request];
    IneighborAlltoallw => Mpi, "MPI_Ineighbor_alltoallw", None, [Comm, Indegree, Outdegree, Sendbytes, Recvbytes, Request];

    // Topology communicators, recorded as the split that builds the same communicator, as
    // `MPI_Cart_create` is: color = the parent-comm rank of the new communicator's rank 0
    // (MPI_UNDEFINED where the caller gets MPI_COMM_NULL), key = the caller's rank in it.
    // Every member of the parent makes these calls.
    CartSub => Mpi, "MPI_Cart_sub", None, [Comm, Color, Key, Newcomm];
    GraphCreate => Mpi, "MPI_Graph_create", None, [Comm, Color, Key, Newcomm];
    DistGraphCreate => Mpi, "MPI_Dist_graph_create", None, [Comm, Color, Key, Newcomm];
    DistGraphCreateAdjacent => Mpi, "MPI_Dist_graph_create_adjacent", None, [Comm, Color, Key, Newcomm];
    // Only the group's members make this call, so it is no split of the parent: `tag` as
    // passed, `size` the group's size, followed by the `size` MPI_COMM_WORLD ranks of the
    // members, in the new communicator's rank order (the same list at every member).
    CommCreateGroup => Mpi, "MPI_Comm_create_group", None, [Comm, Tag, Size, Newcomm];
    // An intercommunicator. `comm`: the local communicator; `local_leader` as passed (a rank
    // of `comm`); `peer_comm`: the id of the peer communicator at the local leader, -1
    // elsewhere (MPI reads it only there); `remote_leader`: as passed (a rank of peer_comm) at
    // the local leader, -1 elsewhere; `tag` as passed; `remote_size`: the remote group's
    // size, followed by the `remote_size` MPI_COMM_WORLD ranks of the remote group, in its
    // rank order. The local group is `comm`'s. Peers of messages on the intercommunicator are
    // remote-group ranks, stored relative to the caller's local rank as any peer.
    IntercommCreate => Mpi, "MPI_Intercomm_create", None, [Comm, LocalLeader, PeerComm, RemoteLeader, Tag, Newcomm, RemoteSize];
    // `comm`: the intercommunicator; `high` as passed (0 or 1); `size`: the merged
    // communicator's size, followed by its `size` MPI_COMM_WORLD ranks, in its rank order.
    IntercommMerge => Mpi, "MPI_Intercomm_merge", None, [Comm, High, Newcomm, Size];

    // ---- MPI's local queries and settings (the rest of the MPI calls Recorder 2.4
    // wraps). None communicates or touches a file: no message, no I/O, time a replay or an
    // export spends as computation. Each records what the program learnt, in forms that
    // extrapolate: a rank as returned (rank-linear), a peer relative to the caller as any
    // peer (rsd::mpi::PROC_NULL for MPI_PROC_NULL), `comm` the symbolic id. A call that
    // failed records -1 for what it returns (PROC_NULL for a peer, no array entries).
    // Calls made inside a library call (HDF5 asks MPI_Comm_rank in H5Fcreate) are its
    // children, as the library's other MPI calls are.
    // `rank`: the caller's rank in `comm`.
    CommRank => Mpi, "MPI_Comm_rank", None, [Comm, Rank];
    // `size`: the communicator's size.
    CommSize => Mpi, "MPI_Comm_size", None, [Comm, Size];
    // `maxdims` as passed; `ndims` the entries MPI wrote (the smaller of maxdims and the
    // topology's dimensions); followed by `ndims` dims, `ndims` periods (0 or 1), `ndims`
    // coords of the caller.
    CartGet => Mpi, "MPI_Cart_get", None, [Comm, Maxdims, Ndims];
    // `ndims` the topology's dimensions (MPI reads that many coords), `rank` the rank of
    // `comm` MPI gave for them; followed by the `ndims` coords passed.
    CartRank => Mpi, "MPI_Cart_rank", None, [Comm, Ndims, Rank];
    // `direction`, `disp` as passed; `source` and `dest` as MPI gave them, relative to the
    // caller (the neighbourhood collectives' Cartesian neighbours are the same shifts).
    CartShift => Mpi, "MPI_Cart_shift", None, [Comm, Direction, Disp, Source, Dest];
    // `length`: the name's length (resultlen). The name itself is the node's host name: no I/O
    // parameter, one per node of the run, which no other scale's nodes would have; its length
    // is what the program's buffer held.
    GetProcessorName => Mpi, "MPI_Get_processor_name", None, [Length];
    // `flag` as returned: 0 in a trace, since the tracer records nothing after MPI_Finalize
    // (the program may ask again after it, unrecorded).
    Finalized => Mpi, "MPI_Finalized", None, [Flag];
    // `errhandler`: the predefined handler's id (rsd::mpi::errhandler), or the id of a
    // program's own handler (from rsd::mpi::errhandler::FIRST_USER, in order of first sight).
    CommSetErrhandler => Mpi, "MPI_Comm_set_errhandler", None, [Comm, Errhandler];

    // ---- Calls that moved or named file data unseen before. The copies that move
    // data inside the kernel (`copy_file_range`, `sendfile`, `splice`) have no op of their
    // own: each is recorded as the read and the write it does, `read`/`pread` on a traced
    // source (`pread` when the call was given an offset, which it then leaves the position
    // alone for) and `write`/`pwrite` on a traced destination, so every consumer counts,
    // places and replays their bytes as it does any read or write.
    //
    // Two paths, old then new, joined by [`PATH_PAIR_SEP`] into the event's path (one
    // template, so the numbers of both extrapolate as one path's do); read them with
    // [`split_path_pair`].
    Rename => Posix, "rename", None, [Ret];
    Link => Posix, "link", None, [Ret];
    Symlink => Posix, "symlink", None, [Ret];
    Fstat => Posix, "fstat", None, [Fd, Ret];
    // `fstatat`/`newfstatat` and `statx` name a path (relative to a directory descriptor,
    // which is not recorded); `flags` as passed.
    Fstatat => Posix, "fstatat", None, [Flags, Ret];
    Statx => Posix, "statx", None, [Flags, Ret];
    // `dir`: the index of the `DIR *` in the rank's table of open directories (-1: failed).
    Opendir => Posix, "opendir", None, [Dirp];
    // `ret`: 1 for an entry, 0 at the end (or an error).
    Readdir => Posix, "readdir", None, [Dirp, Ret];
    Closedir => Posix, "closedir", None, [Dirp];
    Truncate => Posix, "truncate", None, [Length, Ret];
    // `fallocate` and `posix_fallocate` (recorded with mode 0); `ret` 0 on success.
    Fallocate => Posix, "fallocate", None, [Fd, Mode, Offset, Length, Ret];
    // A stream on a traced descriptor: `mode` encoded as `fopen`'s (`fopen_mode`), `stream`
    // the new stream's id (-1: failed). The stream and the descriptor share the open file.
    Fdopen => Stdio, "fdopen", None, [Fd, Mode, Stream];
    // A mapping of a traced descriptor; `flags` as passed (MAP_SHARED or MAP_PRIVATE, ...).
    Mmap => Posix, "mmap", None, [Fd, Length, Offset, Prot, Flags];
    // The bytes of a shared writable mapping reach the file at `msync` (the range synced) or,
    // when it was never synced, at `munmap` (the whole mapping): recorded as a positioned
    // write of `ret` bytes at file offset `offset` (0 bytes for other mappings). The pages
    // the program really dirtied are not known: this is the most the mapping could write.
    // `msync` is followed by its flags as passed (MS_SYNC, MS_ASYNC, MS_INVALIDATE; older
    // traces have none): MS_SYNC returns once the range is on the device. `munmap` is followed
    // by `touched`, the bytes of the range the program had faulted in (its reads and writes
    // through the mapping, page faults no hook sees; older traces have none), where the
    // tracer could read its page tables.
    Msync => Posix, "msync", Write, [Fd, Offset, Ret];
    Munmap => Posix, "munmap", Write, [Fd, Offset, Ret];

    // ---- HDF5, the calls Recorder 2.4 wraps that decide I/O. Every `hid_t` the
    // program gets from a traced call (files, groups, datasets, attributes, dataspaces) is an
    // index in the rank's one table of HDF5 identifiers, the lowest free slot as for
    // descriptors, -1 for a failed call or an identifier no traced call returned (a dataspace
    // from an untraced `H5Aget_space`), 0... for the others; `H5S_ALL` (0) is recorded as -2.
    // A file's name is the event's path (its template and integer fields); an object's name
    // (dataset, group, attribute) too, relative to `loc`: a name such as `strong3` keeps its
    // number as a path field, so it extrapolates like a file name. `size` is the element size
    // of the datatype in bytes, `count` the number of elements selected, `bytes` their product.
    // Arrays follow the fixed parameters, one entry per dimension (`ndims`), in C order;
    // `H5S_UNLIMITED` is -1. The MPI, MPI-IO and POSIX calls HDF5 makes inside a call are its
    // children ([`Layer::is_container`]).
    // `flags` as passed (H5F_ACC_*), `file` the new identifier.
    H5Fcreate => Hdf5, "H5Fcreate", None, [Flags, H5File];
    H5Fopen => Hdf5, "H5Fopen", None, [Flags, H5File];
    H5Fclose => Hdf5, "H5Fclose", None, [H5File];
    // `loc` any object of the file, `scope` as passed (H5F_SCOPE_LOCAL 0, GLOBAL 1).
    H5Fflush => Hdf5, "H5Fflush", None, [Loc, Scope];
    // `space` the dataspace given, `dset` the new dataset.
    H5Dcreate2 => Hdf5, "H5Dcreate2", None, [Loc, Size, Space, Dset];
    H5Dopen2 => Hdf5, "H5Dopen2", None, [Loc, Dset];
    // `xfer`: the transfer mode of the property list (H5FD_MPIO_INDEPENDENT 0, COLLECTIVE 1;
    // -1 without the MPI-IO driver's property). `count`: elements selected in the memory
    // dataspace (the dataset's whole extent for H5S_ALL).
    H5Dwrite => Hdf5, "H5Dwrite", Write, [Dset, MemSpace, FileSpace, Xfer, Size, Count, Bytes];
    H5Dread => Hdf5, "H5Dread", Read, [Dset, MemSpace, FileSpace, Xfer, Size, Count, Bytes];
    H5Dclose => Hdf5, "H5Dclose", None, [Dset];
    // Followed by the `ndims` new dimensions.
    H5DsetExtent => Hdf5, "H5Dset_extent", None, [Dset, Ndims];
    // `space` the new dataspace; followed by `ndims` dimensions, then `ndims` maximum
    // dimensions (the dimensions again when none were given).
    H5ScreateSimple => Hdf5, "H5Screate_simple", None, [Ndims, Space];
    // `select_op` as passed (H5S_SELECT_SET 0, OR 1, ...). Followed by `ndims` starts, strides,
    // counts and blocks (strides and blocks 1 where NULL was passed): a rank's hyperslab is
    // four elastic vectors, which extrapolate as offsets do.
    H5SselectHyperslab => Hdf5, "H5Sselect_hyperslab", None, [Space, SelectOp, Ndims];
    // `count` the number of points (their coordinates are not recorded).
    H5SselectElements => Hdf5, "H5Sselect_elements", None, [Space, SelectOp, Count];
    H5SselectAll => Hdf5, "H5Sselect_all", None, [Space];
    H5SselectNone => Hdf5, "H5Sselect_none", None, [Space];
    // `xfer` the mode set (as for H5Dwrite).
    H5PsetDxplMpio => Hdf5, "H5Pset_dxpl_mpio", None, [Xfer];
    // `comm` the communicator's symbolic id, as MPI calls record it.
    H5PsetFaplMpio => Hdf5, "H5Pset_fapl_mpio", None, [Comm];
    // Followed by the `ndims` chunk dimensions.
    H5PsetChunk => Hdf5, "H5Pset_chunk", None, [Ndims];
    // `space` the attribute's dataspace, `attr` the new attribute; its name is the path.
    H5Acreate2 => Hdf5, "H5Acreate2", None, [Loc, Size, Space, Attr];
    // `bytes`: element size times the attribute's elements (metadata, not dataset data).
    H5Awrite => Hdf5, "H5Awrite", None, [Attr, Size, Bytes];
    H5Aclose => Hdf5, "H5Aclose", None, [Attr];
    H5Gcreate2 => Hdf5, "H5Gcreate2", None, [Loc, Group];
    H5Gclose => Hdf5, "H5Gclose", None, [Group];
    // Dataspaces: a dataset's (its selection is then made on it) and their release, which
    // keeps the identifier table's slots reused across iterations.
    H5DgetSpace => Hdf5, "H5Dget_space", None, [Dset, Space];
    H5Sclose => Hdf5, "H5Sclose", None, [Space];

    // ---- PnetCDF: the `ncmpi_*` calls that decide I/O, containers as HDF5's
    // ([`Layer::is_container`]): the MPI, MPI-IO and POSIX calls PnetCDF makes inside a call
    // are its children. `ncid` is the index of the file's id in the rank's table of PnetCDF
    // ids (lowest free slot, as for descriptors; -1 for a failed call or an id no traced call
    // returned); `varid` and `dimid` are the library's own (definition order in the file,
    // already the same on every rank; `NC_GLOBAL` -1 for a file's attribute). A file's name is
    // the event's path, as is a dimension's, variable's or attribute's (its template and
    // integer fields, so `temp3` extrapolates as a file name). Types are `nc_type` ids
    // (NC_BYTE 1 ... NC_UINT64 11, as NetCDF's). The typed families (`ncmpi_put_vara_int_all`,
    // `_double_all`, ...) are one op per family with the member's memory type as `mem_type`;
    // the flexible calls (`ncmpi_put_vara_all(..., bufcount, buftype)`) record the `nc_type`
    // of a predefined `buftype` there, 0 (NC_NAT) for a derived one. `count` is the number of
    // the variable's elements the call accesses (the product of the counts), `bytes` the
    // memory buffer's size (count times the memory type's size; bufcount times buftype's size
    // for the flexible calls; 0 for a failed call). Arrays follow the fixed parameters, one
    // entry per dimension of the variable (`ndims`), in C order.
    // `mode` the create or open mode as passed (NC_CLOBBER, NC_64BIT_DATA, NC_WRITE, ...),
    // `comm` the communicator's symbolic id, as MPI calls record it, `ncid` the new file's.
    NcmpiCreate => Pnetcdf, "ncmpi_create", None, [Mode, Comm, Ncid];
    NcmpiOpen => Pnetcdf, "ncmpi_open", None, [Mode, Comm, Ncid];
    NcmpiClose => Pnetcdf, "ncmpi_close", None, [Ncid];
    NcmpiEnddef => Pnetcdf, "ncmpi_enddef", None, [Ncid];
    NcmpiRedef => Pnetcdf, "ncmpi_redef", None, [Ncid];
    NcmpiSync => Pnetcdf, "ncmpi_sync", None, [Ncid];
    // Independent data mode: PnetCDF opens its per-rank MPI file (on MPI_COMM_SELF) at the
    // first, and synchronises the record count when it ends.
    NcmpiBeginIndepData => Pnetcdf, "ncmpi_begin_indep_data", None, [Ncid];
    NcmpiEndIndepData => Pnetcdf, "ncmpi_end_indep_data", None, [Ncid];
    // `length` as passed (NC_UNLIMITED 0), `dimid` the new dimension's.
    NcmpiDefDim => Pnetcdf, "ncmpi_def_dim", None, [Ncid, Length, Dimid];
    // Followed by the `ndims` dimension ids.
    NcmpiDefVar => Pnetcdf, "ncmpi_def_var", None, [Ncid, Xtype, Ndims, Varid];
    // Every `ncmpi_put_att_<type>` and `ncmpi_put_att`: `xtype` the attribute's type in the
    // file (NC_CHAR for `_text`), `count` its length (metadata: written at `ncmpi_enddef`).
    NcmpiPutAtt => Pnetcdf, "ncmpi_put_att", None, [Ncid, Varid, Xtype, MemType, Count, Bytes];
    // Independent (`ncmpi_put_vara_<type>`, `ncmpi_put_vara`) and collective (`_all`)
    // transfers of a subarray, followed by the `ndims` starts, then the `ndims` counts: a
    // rank's region is two elastic vectors, which extrapolate as offsets and sizes do.
    NcmpiPutVara => Pnetcdf, "ncmpi_put_vara", Write, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    NcmpiPutVaraAll => Pnetcdf, "ncmpi_put_vara_all", Write, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    NcmpiGetVara => Pnetcdf, "ncmpi_get_vara", Read, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    NcmpiGetVaraAll => Pnetcdf, "ncmpi_get_vara_all", Read, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    // Strided: followed by the `ndims` starts, counts and strides (1 each where NULL was
    // passed).
    NcmpiPutVars => Pnetcdf, "ncmpi_put_vars", Write, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    NcmpiPutVarsAll => Pnetcdf, "ncmpi_put_vars_all", Write, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    NcmpiGetVars => Pnetcdf, "ncmpi_get_vars", Read, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    NcmpiGetVarsAll => Pnetcdf, "ncmpi_get_vars_all", Read, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    // Nonblocking: the transfer is posted, its bytes move at the `ncmpi_wait`/`ncmpi_wait_all`
    // that completes it (whose children are the MPI-IO calls). `request` is the index of the
    // request in the rank's table of pending PnetCDF requests (lowest free slot; -1 for a
    // failed call). Followed by the starts and counts (and strides) as the blocking calls.
    NcmpiIputVara => Pnetcdf, "ncmpi_iput_vara", Write, [Ncid, Varid, MemType, Ndims, Count, Bytes, Request];
    NcmpiIgetVara => Pnetcdf, "ncmpi_iget_vara", Read, [Ncid, Varid, MemType, Ndims, Count, Bytes, Request];
    NcmpiIputVars => Pnetcdf, "ncmpi_iput_vars", Write, [Ncid, Varid, MemType, Ndims, Count, Bytes, Request];
    NcmpiIgetVars => Pnetcdf, "ncmpi_iget_vars", Read, [Ncid, Varid, MemType, Ndims, Count, Bytes, Request];
    // Completion, independent (`ncmpi_wait`) and collective (`ncmpi_wait_all`): `count` as
    // passed, followed by the `count` request ids (read before the call; -1 for NC_REQ_NULL
    // or a request no traced call posted), which the call releases. A negative count
    // (NC_REQ_ALL -1, NC_GET_REQ_ALL -2, NC_PUT_REQ_ALL -3) lists none and releases every
    // pending request of the file (of that kind).
    NcmpiWait => Pnetcdf, "ncmpi_wait", None, [Ncid, Count];
    NcmpiWaitAll => Pnetcdf, "ncmpi_wait_all", None, [Ncid, Count];
    // ---- NetCDF, the `nc_*` calls that decide I/O, as a container layer as HDF5's
    // ([`Layer::is_container`]): a NetCDF-4 file's calls hold the HDF5 calls the library made
    // (with the HDF5 layer recorded), each with its own MPI, MPI-IO and POSIX children, or
    // those calls directly (without it). `ncid` is the index of the file's id in the rank's
    // table of NetCDF ids (lowest free slot, as for descriptors; -1 for a failed call or an id
    // no traced call returned, such as a group's); `varid` and `dimid` are the library's own
    // (definition order in the file, already the same on every rank). A file's name is the
    // event's path; a dimension's, variable's or attribute's name too (its template and
    // integer fields, so `temp3` extrapolates as a file name). Types are NetCDF's `nc_type`
    // ids (`rsd::netcdf::types`). The typed families (`nc_put_vara_int`, `_double`, ...) are
    // one op each with the family member's memory type as `mem_type`; the untyped call
    // (`nc_put_vara`) records the variable's type there. `count` is the elements the call
    // moves, `bytes` count times the memory type's size (0 for a failed call). Arrays follow
    // the fixed parameters, one entry per dimension (`ndims`), in C order.
    // `mode` as passed (NC_NETCDF4, NC_CLOBBER, NC_WRITE, ...), `ncid` the new file's.
    NcCreate => Netcdf, "nc_create", None, [Mode, Ncid];
    // `comm` the communicator's symbolic id, as MPI calls record it.
    NcCreatePar => Netcdf, "nc_create_par", None, [Mode, Comm, Ncid];
    NcOpen => Netcdf, "nc_open", None, [Mode, Ncid];
    NcOpenPar => Netcdf, "nc_open_par", None, [Mode, Comm, Ncid];
    NcClose => Netcdf, "nc_close", None, [Ncid];
    NcEnddef => Netcdf, "nc_enddef", None, [Ncid];
    NcRedef => Netcdf, "nc_redef", None, [Ncid];
    NcSync => Netcdf, "nc_sync", None, [Ncid];
    // `length` as passed (NC_UNLIMITED 0), `dimid` the new dimension's.
    NcDefDim => Netcdf, "nc_def_dim", None, [Ncid, Length, Dimid];
    // Followed by the `ndims` dimension ids.
    NcDefVar => Netcdf, "nc_def_var", None, [Ncid, Xtype, Ndims, Varid];
    // `storage` as passed (NC_CHUNKED 0, NC_CONTIGUOUS 1, NC_COMPACT 2); followed by the
    // variable's `ndims` chunk sizes (0 each where NULL was passed).
    NcDefVarChunking => Netcdf, "nc_def_var_chunking", None, [Ncid, Varid, Storage, Ndims];
    // `xfer` the access set (NC_INDEPENDENT 0, NC_COLLECTIVE 1), as HDF5's transfer mode.
    NcVarParAccess => Netcdf, "nc_var_par_access", None, [Ncid, Varid, Xfer];
    // `varid` NC_GLOBAL (-1) for a file's attribute; `xtype` the attribute's type in the
    // file, `count` its length (metadata: no data moves, `bytes` says how much).
    NcPutAtt => Netcdf, "nc_put_att", None, [Ncid, Varid, Xtype, MemType, Count, Bytes];
    // Followed by the `ndims` starts, then the `ndims` counts: a rank's region is two elastic
    // vectors, which extrapolate as offsets and sizes do.
    NcPutVara => Netcdf, "nc_put_vara", Write, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    NcGetVara => Netcdf, "nc_get_vara", Read, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    // Followed by the `ndims` starts, counts and strides (strides 1 where NULL was passed).
    NcPutVars => Netcdf, "nc_put_vars", Write, [Ncid, Varid, MemType, Ndims, Count, Bytes];
    NcGetVars => Netcdf, "nc_get_vars", Read, [Ncid, Varid, MemType, Ndims, Count, Bytes];

    // ---- MPI-IO split collectives and the shared pointer's seek (the MPI-IO calls
    // Recorder 2.4 wraps). A begin records what the blocking collective it splits records,
    // `bytes` being count times the datatype size (what it is to move: MPI gives the status
    // only to the end), so byte accounting counts the begin; the end moves nothing of its own
    // and records the file only: MPI allows one split collective at a time per file handle, so
    // an end completes the last begin on its `fh`.
    FileReadAllBegin => MpiIo, "MPI_File_read_all_begin", Read, [Fh, Count, Datatype, Bytes];
    FileReadAllEnd => MpiIo, "MPI_File_read_all_end", None, [Fh];
    FileWriteAllBegin => MpiIo, "MPI_File_write_all_begin", Write, [Fh, Count, Datatype, Bytes];
    FileWriteAllEnd => MpiIo, "MPI_File_write_all_end", None, [Fh];
    FileReadAtAllBegin => MpiIo, "MPI_File_read_at_all_begin", Read, [Fh, Offset, Count, Datatype, Bytes];
    FileReadAtAllEnd => MpiIo, "MPI_File_read_at_all_end", None, [Fh];
    FileWriteAtAllBegin => MpiIo, "MPI_File_write_at_all_begin", Write, [Fh, Offset, Count, Datatype, Bytes];
    FileWriteAtAllEnd => MpiIo, "MPI_File_write_at_all_end", None, [Fh];
    FileReadOrderedBegin => MpiIo, "MPI_File_read_ordered_begin", Read, [Fh, Count, Datatype, Bytes];
    FileReadOrderedEnd => MpiIo, "MPI_File_read_ordered_end", None, [Fh];
    FileWriteOrderedBegin => MpiIo, "MPI_File_write_ordered_begin", Write, [Fh, Count, Datatype, Bytes];
    FileWriteOrderedEnd => MpiIo, "MPI_File_write_ordered_end", None, [Fh];
    // Collective: moves the shared file pointer of every rank to the same place, `offset` in
    // etypes of the view from `whence` (as `MPI_File_seek` moves the individual one).
    FileSeekShared => MpiIo, "MPI_File_seek_shared", None, [Fh, Offset, Whence];

    // ---- `MPI_Type_create_darray` (the last datatype constructor Recorder 2.4
    // wraps), appended as the file format requires. `size` and `rank` as passed (the process
    // grid's size and the caller's place in it: n and the rank in an SPMD code, which
    // extrapolate as such), `order` in `rsd::mpi::order`'s encoding. Followed by `ndims`
    // global sizes, `ndims` distributions and `ndims` distribution arguments (both in
    // `rsd::mpi::distribute`'s encoding), then `ndims` process-grid sizes.
    TypeCreateDarray => Mpi, "MPI_Type_create_darray", None, [Size, Rank, Ndims, Order, Oldtype, Newtype];

    // ---- `MPI_Dims_create`, a local call (no message, no file) recorded because a domain
    // decomposition follows the grid it returns: extents, block starts and halo peers are
    // functions of `dims(n, ndims)`, and extrapolation needs the program's dimension count to
    // model them (a 2-D grid and a 3-D one agree at some rank counts). `size` (nnodes) and
    // `ndims` as passed; followed by `ndims` entries as given (0: free, else a constraint),
    // then `ndims` as returned (neither where the call failed: the arrays share the entries
    // after the fixed parameters equally).
    DimsCreate => Mpi, "MPI_Dims_create", None, [Size, Ndims];

    // ---- The calls that decide whether data is served by the page cache or the device,
    // and when it reaches the device. They move no data of the program's (`dir` None), but a
    // replay that leaves them out reads from the cache what the program read from the device.
    // `ret` is the call's result (0 on success; `posix_fadvise` returns the error number).
    // `advice` as passed (POSIX_FADV_NORMAL 0, RANDOM 1, SEQUENTIAL 2, WILLNEED 3, DONTNEED 4,
    // NOREUSE 5); `length` 0 means to the end of the file.
    Fadvise => Posix, "posix_fadvise", None, [Fd, Offset, Length, Advice, Ret];
    // `count` the bytes asked to be read into the cache.
    Readahead => Posix, "readahead", None, [Fd, Offset, Count, Ret];
    // `flags` as passed (SYNC_FILE_RANGE_WAIT_BEFORE 1, WRITE 2, WAIT_AFTER 4).
    SyncFileRange => Posix, "sync_file_range", None, [Fd, Offset, Length, Flags, Ret];
    // The file system of a traced descriptor, written back.
    Syncfs => Posix, "syncfs", None, [Fd, Ret];
    // Every file system written back: no descriptor, no result.
    Sync => Posix, "sync", None, [];
    // Advice on part of a mapping of a traced descriptor: `fd` its id, `offset` the file
    // offset of the range's first byte, `length` the range's bytes, `advice` as passed
    // (MADV_NORMAL 0, RANDOM 1, SEQUENTIAL 2, WILLNEED 3, DONTNEED 4, ..., PAGEOUT 21). Advice
    // on memory that maps no traced file is not recorded.
    Madvise => Posix, "madvise", None, [Fd, Offset, Length, Advice, Ret];
}

/// Separates the two paths of a call that names two (`rename`, `link`, `symlink`: old, new)
/// in its event's path: NUL, the one byte no path can hold, so the pair splits back exactly
/// whatever the names. Traces of format minor below [`crate::format::PATH_PAIR_MINOR`] joined
/// them with [`OLD_PATH_PAIR_SEP`], which a file name may hold; they are converted when read
/// ([`upgrade_path_pairs`]). Every consumer goes through [`split_path_pair`],
/// [`paths_of`] or [`show_path`], never through the separator itself.
pub const PATH_PAIR_SEP: char = '\0';

/// The separator of the two paths in traces of minor versions below
/// [`crate::format::PATH_PAIR_MINOR`].
pub const OLD_PATH_PAIR_SEP: char = '\n';

/// The path of a call that names two (see [`PATH_PAIR_SEP`]).
pub fn path_pair(old: &str, new: &str) -> String {
    format!("{old}{PATH_PAIR_SEP}{new}")
}

/// The two paths of a call that names two, or `None` when `path` holds one.
pub fn split_path_pair(path: &str) -> Option<(&str, &str)> {
    path.split_once(PATH_PAIR_SEP)
}

/// Every file an event's path names: one path, or both of a pair.
pub fn paths_of(path: &str) -> impl Iterator<Item = &str> {
    path.split(PATH_PAIR_SEP)
}

impl Op {
    /// The name of the second path of a call that names two, as its manual page has it
    /// (`rename(oldpath, newpath)`, `symlink(target, linkpath)`); `None` for other ops.
    pub fn second_path_name(self) -> Option<&'static str> {
        match self {
            Op::Rename | Op::Link => Some("newpath"),
            Op::Symlink => Some("linkpath"),
            _ => None,
        }
    }
}

/// A path (concrete or a template) as one line shows it: a pair as `old newpath=new`, the
/// second path a parameter named by [`Op::second_path_name`].
pub fn show_path(op: Op, path: &str) -> String {
    match split_path_pair(path) {
        Some((a, b)) => format!("{a} {}={b}", op.second_path_name().unwrap_or("path2")),
        None => path.to_string(),
    }
}

/// Converts the path pairs of a trace read from a file of a minor version below
/// [`crate::format::PATH_PAIR_MINOR`] (joined by [`OLD_PATH_PAIR_SEP`]) to
/// [`PATH_PAIR_SEP`]: only the ops that name two paths, at their first old separator (the
/// tracer wrote exactly one).
pub fn upgrade_path_pairs(nodes: &mut [crate::trace::Node]) {
    use crate::trace::NodeKind;
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                if e.op.second_path_name().is_some()
                    && let Some(t) = &mut e.path
                    && !t.0.contains(PATH_PAIR_SEP)
                {
                    t.0 =
                        t.0.replacen(OLD_PATH_PAIR_SEP, &PATH_PAIR_SEP.to_string(), 1);
                }
                upgrade_path_pairs(&mut e.children);
            }
            NodeKind::Loop(l) => upgrade_path_pairs(&mut l.body),
        }
    }
}

/// Whether any event of `nodes` holds a path pair in [`PATH_PAIR_SEP`]'s form (format minor
/// [`crate::format::PATH_PAIR_MINOR`]).
pub fn holds_path_pairs(nodes: &[crate::trace::Node]) -> bool {
    use crate::trace::NodeKind;
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => {
            e.path.as_ref().is_some_and(|t| t.0.contains(PATH_PAIR_SEP))
                || holds_path_pairs(&e.children)
        }
        NodeKind::Loop(l) => holds_path_pairs(&l.body),
    })
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

/// How a communicator creation is recorded, so every consumer rebuilds it the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creation {
    /// `MPI_Comm_dup`: the parent's members, in the parent's order.
    Dup,
    /// A split of the parent by `color` and `key` (`MPI_Comm_split` and every creation
    /// recorded as one); every member of the parent makes the call.
    Split,
    /// The members are listed: the fixed parameters are followed by `size` MPI_COMM_WORLD
    /// ranks, in the new communicator's order (`MPI_Comm_create_group`, where only they make
    /// the call, and `MPI_Intercomm_merge`, made by both groups of the intercommunicator).
    Members,
    /// An intercommunicator: the local group is `comm`'s, the remote group's `remote_size`
    /// MPI_COMM_WORLD ranks follow the fixed parameters. Every member of `comm` makes the call.
    Intercomm,
}

impl Op {
    /// The POSIX calls that open a file descriptor, which their return value (`fd`) holds:
    /// `open`, `openat`, `creat` (`creat`'s flags are implied: `O_WRONLY|O_CREAT|O_TRUNC`).
    pub fn opens_descriptor(self) -> bool {
        matches!(self, Op::Open | Op::Openat | Op::Creat)
    }

    /// Whether the op reads a directory's entries (`readdir`): how many calls a listing makes
    /// follows what the directory holds when the run looks (files earlier runs and other jobs
    /// left), not the program or its scale.
    pub fn lists_directory(self) -> bool {
        matches!(self, Op::Readdir)
    }

    /// Whether extrapolation may set the op's calls aside where their counts are what stops
    /// it: MPI's local queries (their counts follow the data) and directory listings (their
    /// lengths follow the directory's contents). Nothing another rank sees, no file's data.
    pub fn may_be_set_aside(self) -> bool {
        self.is_local_query() || self.lists_directory()
    }

    /// Whether the op is one of MPI's local queries and settings (`MPI_Comm_rank`,
    /// `MPI_Comm_size`, the Cartesian queries, `MPI_Get_processor_name`, `MPI_Finalized`,
    /// `MPI_Comm_set_errhandler`, `MPI_Dims_create`): no message, no I/O, nothing another rank sees. A program may
    /// make them a number of times that follows its data (Meep asks `MPI_Comm_size` once per
    /// chunk), so extrapolation may set them aside where their counts are all that differs.
    pub fn is_local_query(self) -> bool {
        matches!(
            self,
            Op::CommRank
                | Op::CommSize
                | Op::CartGet
                | Op::CartRank
                | Op::CartShift
                | Op::GetProcessorName
                | Op::Finalized
                | Op::CommSetErrhandler
                | Op::DimsCreate
        )
    }

    /// Collective communication calls (every member of the communicator makes them, in the
    /// same order), communicator creation aside ([`Op::creates_comm`]). The nonblocking ones
    /// (those with a `request`, [`Op::is_nonblocking_collective`]) move their messages between
    /// the call and the completion of the request; the neighbourhood collectives
    /// ([`Op::is_neighborhood`]) only exchange with the recorded neighbours.
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
                | Op::Alltoallw
                | Op::Ibarrier
                | Op::Ibcast
                | Op::Ireduce
                | Op::Iallreduce
                | Op::Igather
                | Op::Igatherv
                | Op::Iscatter
                | Op::Iscatterv
                | Op::Iallgather
                | Op::Iallgatherv
                | Op::Ialltoall
                | Op::Ialltoallv
                | Op::Ialltoallw
                | Op::IreduceScatter
                | Op::IreduceScatterBlock
                | Op::Iscan
                | Op::Iexscan
        ) || self.is_neighborhood()
    }

    /// Collectives that return a `request` instead of completing.
    pub fn is_nonblocking_collective(self) -> bool {
        self.is_collective() && self.params().contains(&Param::Request)
    }

    /// The blocking call a nonblocking collective starts (its layout less the `request`);
    /// other ops are their own.
    pub fn blocking_form(self) -> Op {
        match self {
            Op::Ibarrier => Op::Barrier,
            Op::Ibcast => Op::Bcast,
            Op::Ireduce => Op::Reduce,
            Op::Iallreduce => Op::Allreduce,
            Op::Igather => Op::Gather,
            Op::Igatherv => Op::Gatherv,
            Op::Iscatter => Op::Scatter,
            Op::Iscatterv => Op::Scatterv,
            Op::Iallgather => Op::Allgather,
            Op::Iallgatherv => Op::Allgatherv,
            Op::Ialltoall => Op::Alltoall,
            Op::Ialltoallv => Op::Alltoallv,
            Op::Ialltoallw => Op::Alltoallw,
            Op::IreduceScatter => Op::ReduceScatter,
            Op::IreduceScatterBlock => Op::ReduceScatterBlock,
            Op::Iscan => Op::Scan,
            Op::Iexscan => Op::Exscan,
            Op::IneighborAllgather => Op::NeighborAllgather,
            Op::IneighborAllgatherv => Op::NeighborAllgatherv,
            Op::IneighborAlltoall => Op::NeighborAlltoall,
            Op::IneighborAlltoallv => Op::NeighborAlltoallv,
            Op::IneighborAlltoallw => Op::NeighborAlltoallw,
            op => op,
        }
    }

    /// The neighbourhood collectives, blocking and not: one layout for all (see the table).
    pub fn is_neighborhood(self) -> bool {
        matches!(
            self,
            Op::NeighborAllgather
                | Op::NeighborAllgatherv
                | Op::NeighborAlltoall
                | Op::NeighborAlltoallv
                | Op::NeighborAlltoallw
                | Op::IneighborAllgather
                | Op::IneighborAllgatherv
                | Op::IneighborAlltoall
                | Op::IneighborAlltoallv
                | Op::IneighborAlltoallw
        )
    }

    /// Calls that create a communicator from a parent `comm` (see [`Op::creation`] for who
    /// makes them and how the new one's members are recorded).
    pub fn creates_comm(self) -> bool {
        self.creation().is_some()
    }

    /// How this communicator creation is recorded, or `None` for other calls.
    pub fn creation(self) -> Option<Creation> {
        match self {
            Op::CommDup => Some(Creation::Dup),
            Op::CommSplit
            | Op::CommCreate
            | Op::CommSplitType
            | Op::CartCreate
            | Op::CartSub
            | Op::GraphCreate
            | Op::DistGraphCreate
            | Op::DistGraphCreateAdjacent => Some(Creation::Split),
            Op::CommCreateGroup | Op::IntercommMerge => Some(Creation::Members),
            Op::IntercommCreate => Some(Creation::Intercomm),
            _ => None,
        }
    }

    /// The point-to-point role of this op, for the calls that send or receive one message
    /// each time they are made (`MPI_Sendrecv` and `MPI_Sendrecv_replace` do both: they have
    /// none here). `MPI_Mprobe` is the receive of the message it matches (its `MPI_Mrecv`
    /// only completes it); `MPI_Improbe` is one only when its `flag` is 1, so it is not listed;
    /// persistent requests send or receive at each `MPI_Start` ([`Op::persistent`]).
    pub fn p2p(self) -> Option<P2p> {
        match self {
            Op::Send | Op::Ssend | Op::Rsend | Op::Bsend => Some(P2p::Send { nonblocking: false }),
            Op::Isend | Op::Issend | Op::Irsend | Op::Ibsend => {
                Some(P2p::Send { nonblocking: true })
            }
            Op::Recv | Op::Mprobe => Some(P2p::Recv { nonblocking: false }),
            Op::Irecv => Some(P2p::Recv { nonblocking: true }),
            _ => None,
        }
    }

    /// For the persistent-request inits, the message each start of the request moves
    /// (always nonblocking: `MPI_Start` returns at once, a completion call ends it).
    pub fn persistent(self) -> Option<P2p> {
        match self {
            Op::SendInit | Op::BsendInit | Op::SsendInit | Op::RsendInit => {
                Some(P2p::Send { nonblocking: true })
            }
            Op::RecvInit => Some(P2p::Recv { nonblocking: true }),
            _ => None,
        }
    }

    /// For the begin of an MPI-IO split collective, the blocking collective it splits (same
    /// layout, same file pointer, same data) and the end that completes it; `None` for other
    /// ops.
    pub fn split_collective(self) -> Option<(Op, Op)> {
        match self {
            Op::FileReadAllBegin => Some((Op::FileReadAll, Op::FileReadAllEnd)),
            Op::FileWriteAllBegin => Some((Op::FileWriteAll, Op::FileWriteAllEnd)),
            Op::FileReadAtAllBegin => Some((Op::FileReadAtAll, Op::FileReadAtAllEnd)),
            Op::FileWriteAtAllBegin => Some((Op::FileWriteAtAll, Op::FileWriteAtAllEnd)),
            Op::FileReadOrderedBegin => Some((Op::FileReadOrdered, Op::FileReadOrderedEnd)),
            Op::FileWriteOrderedBegin => Some((Op::FileWriteOrdered, Op::FileWriteOrderedEnd)),
            _ => None,
        }
    }

    /// Whether this op is the end of an MPI-IO split collective (it completes the begin
    /// [`Op::split_collective`] names it for).
    pub fn is_split_end(self) -> bool {
        matches!(
            self,
            Op::FileReadAllEnd
                | Op::FileWriteAllEnd
                | Op::FileReadAtAllEnd
                | Op::FileWriteAtAllEnd
                | Op::FileReadOrderedEnd
                | Op::FileWriteOrderedEnd
        )
    }

    /// The collective MPI-IO data calls of the `_all` family (explicit offset or individual
    /// file pointer; blocking, nonblocking and split): what an MPI library's collective
    /// buffering serves, so their nested calls follow its choice of aggregators.
    pub fn is_collective_buffered(self) -> bool {
        matches!(
            self,
            Op::FileReadAll
                | Op::FileReadAtAll
                | Op::FileIreadAll
                | Op::FileWriteAll
                | Op::FileWriteAtAll
                | Op::FileIwriteAll
                | Op::FileReadAllBegin
                | Op::FileReadAllEnd
                | Op::FileWriteAllBegin
                | Op::FileWriteAllEnd
                | Op::FileReadAtAllBegin
                | Op::FileReadAtAllEnd
                | Op::FileWriteAtAllBegin
                | Op::FileWriteAtAllEnd
        )
    }
}

/// The arrays a neighbourhood collective keeps after its fixed parameters (see the table):
/// peers relative to the caller, byte counts in the same order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighborhood<'a> {
    /// The `indegree` source peers.
    pub sources: &'a [i64],
    /// The `outdegree` destination peers.
    pub destinations: &'a [i64],
    /// Bytes sent to each destination.
    pub sendbytes: &'a [i64],
    /// Bytes received from each source.
    pub recvbytes: &'a [i64],
}

impl Op {
    /// The parameter that counts the entries of this op's one listed array, for the calls
    /// whose array is a list of ids or ranks.
    fn list_len(self) -> Option<Param> {
        match self {
            Op::Startall | Op::Testall => Some(Param::Count),
            Op::Waitsome | Op::Testsome => Some(Param::Outcount),
            Op::CommCreateGroup | Op::IntercommMerge => Some(Param::Size),
            Op::IntercommCreate => Some(Param::RemoteSize),
            Op::NcmpiWait | Op::NcmpiWaitAll => Some(Param::Count),
            _ => None,
        }
    }

    /// The list an event of this op keeps after its fixed parameters (`params` without path
    /// fields): the request ids of `MPI_Startall` and `MPI_Testall`, the completed ids of
    /// `MPI_Waitsome` and `MPI_Testsome`, the MPI_COMM_WORLD ranks of the members of
    /// `MPI_Comm_create_group` and `MPI_Intercomm_merge` and of `MPI_Intercomm_create`'s remote
    /// group, the PnetCDF request ids of `ncmpi_wait` and `ncmpi_wait_all`; empty for other
    /// ops. Never longer than the count says, nor than the event.
    pub fn list(self, params: &[i64]) -> &[i64] {
        let Some(n) = self.list_len() else {
            return &[];
        };
        let n = self.param(params, n).max(0) as usize;
        let rest = params.get(self.params().len()..).unwrap_or(&[]);
        &rest[..n.min(rest.len())]
    }

    /// The arrays of a neighbourhood collective, or `None` for other ops and for an event
    /// shorter than its degrees say.
    pub fn neighborhood(self, params: &[i64]) -> Option<Neighborhood<'_>> {
        if !self.is_neighborhood() {
            return None;
        }
        let deg = |p: Param| usize::try_from(self.get(params, p)?).ok();
        let (i, o) = (deg(Param::Indegree)?, deg(Param::Outdegree)?);
        let rest = params.get(self.params().len()..)?;
        if rest.len() < 2 * (i + o) {
            return None;
        }
        let (sources, rest) = rest.split_at(i);
        let (destinations, rest) = rest.split_at(o);
        let (sendbytes, rest) = rest.split_at(o);
        Some(Neighborhood {
            sources,
            destinations,
            sendbytes,
            recvbytes: &rest[..i],
        })
    }
}

/// The elements of a variable a PnetCDF transfer accesses, as the arrays after its fixed
/// parameters give them (one entry per dimension, `ndims` each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PnetcdfAccess {
    /// `start`, then `count` (`ncmpi_put_vara*`, `ncmpi_iget_vara`, ...).
    Subarray,
    /// `start`, `count`, then `stride` (`ncmpi_put_vars*`, ...).
    Strided,
}

impl Op {
    /// For PnetCDF's data transfers, how the event gives the elements it accesses; `None` for
    /// other ops.
    pub fn pnetcdf_access(self) -> Option<PnetcdfAccess> {
        match self {
            Op::NcmpiPutVara
            | Op::NcmpiPutVaraAll
            | Op::NcmpiGetVara
            | Op::NcmpiGetVaraAll
            | Op::NcmpiIputVara
            | Op::NcmpiIgetVara => Some(PnetcdfAccess::Subarray),
            Op::NcmpiPutVars
            | Op::NcmpiPutVarsAll
            | Op::NcmpiGetVars
            | Op::NcmpiGetVarsAll
            | Op::NcmpiIputVars
            | Op::NcmpiIgetVars => Some(PnetcdfAccess::Strided),
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
        match self.array_element(idx, nparams, nfields) {
            Some((array, k)) => format!("{array}[{k}]"),
            None => format!("extra[{}]", idx - schema.len()),
        }
    }

    /// The array ([`Op::arrays`]) and element that parameter `idx` of an event of this op
    /// with `nparams` parameters and `nfields` path fields is, or `None` for a fixed
    /// parameter or a path field. The arrays share the parameters after the fixed ones
    /// equally (`start[0..d]`, `count[0..d]`, ...).
    pub fn array_element(
        self,
        idx: usize,
        nparams: usize,
        nfields: usize,
    ) -> Option<(&'static str, usize)> {
        let fixed = self.schema().len();
        if idx < fixed || idx >= nparams.saturating_sub(nfields) {
            return None;
        }
        let extra = idx - fixed;
        let n_extra = nparams - nfields - fixed;
        let arrays = self.arrays();
        let per = (n_extra / arrays.len()).max(1);
        let which = (extra / per).min(arrays.len() - 1);
        Some((arrays[which], extra - which * per))
    }

    /// The entries of array `name` ([`Op::arrays`]) of an event of this op without path fields:
    /// its share of the parameters after the fixed ones (the arrays share them equally).
    /// `None` for an array the op has not, or entries that do not divide equally.
    pub fn array_values<'p>(self, params: &'p [i64], name: &str) -> Option<&'p [i64]> {
        let arrays = self.arrays();
        let which = arrays.iter().position(|a| *a == name)?;
        let rest = params.get(self.schema().len()..)?;
        if rest.len() % arrays.len() != 0 {
            return None;
        }
        let per = rest.len() / arrays.len();
        Some(&rest[which * per..(which + 1) * per])
    }

    /// The arrays an event of this op stores after its fixed parameters, in order, each of the
    /// same length (`dims[k]`, `count[k]`): the names [`Op::param_name`] gives their elements.
    pub fn arrays(self) -> &'static [&'static str] {
        match self {
            Op::TypeIndexed => &["blocklengths", "displacements"],
            Op::TypeCreateHindexed => &["blocklengths", "displacements"],
            Op::TypeCreateHindexedBlock | Op::TypeCreateIndexedBlock => &["displacements"],
            Op::TypeCreateSubarray => &["sizes", "subsizes", "starts"],
            Op::TypeCreateDarray => &["gsizes", "distribs", "dargs", "psizes"],
            Op::CartGet => &["dims", "periods", "coords"],
            Op::DimsCreate => &["given", "dims"],
            Op::CartCreate => &["dims", "periods"],
            Op::CartRank => &["coords"],
            Op::TypeCreateStruct => &["blocklengths", "displacements", "types"],
            Op::Startall | Op::Testall | Op::NcmpiWait | Op::NcmpiWaitAll => &["requests"],
            Op::Waitsome | Op::Testsome => &["completed"],
            Op::CommCreateGroup | Op::IntercommMerge => &["members"],
            Op::IntercommCreate => &["remote_group"],
            Op::H5ScreateSimple => &["dims", "maxdims"],
            Op::H5SselectHyperslab => &["start", "stride", "count", "block"],
            Op::H5DsetExtent | Op::H5PsetChunk => &["dims"],
            Op::Fcntl => &["setfl"],
            Op::Msync => &["flags"],
            Op::Munmap => &["touched"],
            Op::NcmpiDefVar | Op::NcDefVar => &["dimids"],
            Op::NcDefVarChunking => &["chunks"],
            Op::NcPutVara | Op::NcGetVara => &["start", "count"],
            Op::NcPutVars | Op::NcGetVars => &["start", "count", "stride"],
            _ if self.pnetcdf_access() == Some(PnetcdfAccess::Subarray) => &["start", "count"],
            _ if self.pnetcdf_access() == Some(PnetcdfAccess::Strided) => {
                &["start", "count", "stride"]
            }
            // Sources, destinations, bytes sent, bytes received: the split depends on the
            // degrees, which a display name cannot see, so one array.
            _ if self.is_neighborhood() => &["neighborhood"],
            _ => &["extra"],
        }
    }

    /// Whether the elements of this op's array `array` ([`Op::arrays`]) are quantities that
    /// follow the program's data, as [`Param::is_quantity`] says of a fixed parameter:
    /// lengths, counts and extents (`count`, `dims`, `blocklengths`), not places (`start`,
    /// `displacements`), steps, types or handles.
    pub fn array_is_quantity(self, array: &str) -> bool {
        // A Cartesian grid's `dims` count processes, not the program's data: they follow the
        // scale, as ranks do.
        !matches!(self, Op::CartGet | Op::DimsCreate | Op::CartCreate)
            && self.arrays().contains(&array)
            && matches!(
                array,
                "blocklengths"
                    | "sizes"
                    | "gsizes"
                    | "subsizes"
                    | "dims"
                    | "maxdims"
                    | "count"
                    | "block"
                    | "chunks"
            )
    }

    /// Bytes of file data this call moved, given its parameters, or 0 for calls that move none.
    /// MPI-IO uses `bytes`; POSIX uses the result `ret` (clamped at 0 for failures); stdio uses
    /// `size * ret` for fread/fwrite and `ret` for fprintf.
    pub fn data_bytes(self, params: &[i64]) -> u64 {
        let get = |p: Param| self.param(params, p);
        let v = match self.data_params() {
            [] => 0,
            [p] => get(*p),
            // stdio's fread/fwrite: items of a size.
            [size, ret, ..] => get(*size).saturating_mul(get(*ret)),
        };
        v.max(0) as u64
    }

    /// The parameters [`Op::data_bytes`] reads: a reader that sums data sizes tells ranks
    /// apart by these ([`crate::classes`]).
    pub fn data_params(self) -> &'static [Param] {
        if self.dir() == Dir::None {
            return &[];
        }
        match self.layer() {
            Layer::MpiIo | Layer::Hdf5 | Layer::Pnetcdf | Layer::Netcdf => &[Param::Bytes],
            Layer::Posix => &[Param::Ret],
            Layer::Stdio => match self {
                Op::Fprintf => &[Param::Ret],
                _ => &[Param::Size, Param::Ret],
            },
            Layer::Mpi => &[],
        }
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
    fn the_rest_of_the_mpi_api_is_appended() {
        // The order is the file format: the new ops come after the last one of the previous
        // version, in the table's order.
        let at = |op: Op| Op::ALL.iter().position(|o| *o == op).unwrap();
        assert_eq!(at(Op::SendInit), at(Op::ReduceScatterBlock) + 1);
        // The later file calls were appended after it (the last op of the MPI API's batch),
        // and the local queries placed between them (traces store an op by its name,
        // not its place, so a block may go anywhere in the table).
        assert_eq!(at(Op::IntercommMerge) + 1, at(Op::CommRank));
        assert_eq!(at(Op::CommSetErrhandler) + 1, at(Op::Rename));
        for op in &Op::ALL[at(Op::SendInit)..=at(Op::CommSetErrhandler)] {
            assert_eq!(op.layer(), Layer::Mpi, "{}", op.name());
            assert_eq!(op.dir(), Dir::None, "{}", op.name());
        }
    }

    #[test]
    fn local_queries_are_local() {
        let at = |op: Op| Op::ALL.iter().position(|o| *o == op).unwrap();
        let block = &Op::ALL[at(Op::CommRank)..=at(Op::CommSetErrhandler)];
        assert_eq!(block.len(), 8);
        // And MPI_Dims_create, appended later.
        assert_eq!(
            Op::ALL.iter().filter(|o| o.is_local_query()).count(),
            block.len() + 1
        );
        assert!(Op::DimsCreate.is_local_query());
        for op in block {
            assert!(op.is_local_query(), "{}", op.name());
            assert!(!op.is_collective(), "{}", op.name());
            assert!(!op.creates_comm(), "{}", op.name());
            assert_eq!(op.p2p(), None, "{}", op.name());
            assert_eq!(op.persistent(), None, "{}", op.name());
            assert_eq!(op.handle(), None, "{}", op.name());
            assert_eq!(op.data_bytes(&[1; 12]), 0, "{}", op.name());
            assert!(!op.params().contains(&Param::Peer), "{}", op.name());
        }
        // Cart_get: 2 dimensions, three arrays of two.
        let mut v = args::cart_get(3, 4, 2);
        v.extend([2, 3, 1, 0, 1, 2]);
        assert_eq!(Op::CartGet.param_name(3, v.len(), 0), "dims[0]");
        assert_eq!(Op::CartGet.param_name(6, v.len(), 0), "periods[1]");
        assert_eq!(Op::CartGet.param_name(8, v.len(), 0), "coords[1]");
        // A process grid's dims are not data.
        assert!(!Op::CartGet.array_is_quantity("dims"));
        assert!(Op::H5ScreateSimple.array_is_quantity("dims"));
        assert_eq!(Op::CartGet.array_values(&v, "periods"), Some(&[1, 0][..]));
        assert_eq!(Op::CartGet.array_values(&v, "coords"), Some(&[1, 2][..]));
        assert_eq!(Op::CartGet.array_values(&v, "nothing"), None);
        assert_eq!(Op::CartGet.array_values(&v[..v.len() - 1], "dims"), None);
        let mut v = args::cart_rank(3, 2, 5);
        v.extend([1, 2]);
        assert_eq!(Op::CartRank.param_name(4, v.len(), 0), "coords[1]");
        assert_eq!(Op::CartRank.param(&v, Param::Rank), 5);
        let v = args::cart_shift(3, 0, 1, crate::mpi::PROC_NULL, 2);
        assert_eq!(
            Op::CartShift.param(&v, Param::Source),
            crate::mpi::PROC_NULL
        );
        assert_eq!(Op::CartShift.param(&v, Param::Dest), 2);
    }

    #[test]
    fn the_file_calls_of_issue_16_are_appended() {
        let at = |op: Op| Op::ALL.iter().position(|o| *o == op).unwrap();
        // The HDF5 layer was appended after it.
        assert_eq!(at(Op::Munmap) + 1, at(Op::H5Fcreate));
        // Only the mapping writes move data; they are positioned writes of `ret` bytes.
        for op in &Op::ALL[at(Op::Rename)..=at(Op::Munmap)] {
            let moves = matches!(op, Op::Msync | Op::Munmap);
            assert_eq!(op.dir() == Dir::Write, moves, "{}", op.name());
            assert!(op.dir() != Dir::Read, "{}", op.name());
        }
        assert_eq!(Op::Munmap.data_bytes(&[3, 4096, 8192]), 8192);
        assert_eq!(Op::Fdopen.handle(), Some(Handle::Fd));
        let p = path_pair("a/x_1", "a/y_1");
        assert_eq!(split_path_pair(&p), Some(("a/x_1", "a/y_1")));
        assert_eq!(split_path_pair("a/x_1"), None);
    }

    #[test]
    fn the_netcdf_layer_is_one_appended_block() {
        let at = |op: Op| Op::ALL.iter().position(|o| *o == op).unwrap();
        // After the HDF5 block (another layer's block may come between: only the order
        // within this one is fixed here).
        assert!(at(Op::NcCreate) > at(Op::H5Sclose));
        let block = &Op::ALL[at(Op::NcCreate)..=at(Op::NcGetVars)];
        assert_eq!(block.len(), 17);
        for op in block {
            assert_eq!(op.layer(), Layer::Netcdf, "{}", op.name());
            assert!(op.layer().is_container());
            assert!(op.name().starts_with("nc_"), "{}", op.name());
        }
        assert_eq!(Layer::STACK[0], Layer::Netcdf);
        // A 2-D region: start[0..2], count[0..2].
        let mut v = args::nc_put_vara(0, 1, 4, 2, 6, 24);
        v.extend([0, 3, 2, 3]);
        assert_eq!(Op::NcPutVara.param_name(7, v.len(), 0), "start[1]");
        assert_eq!(Op::NcPutVara.param_name(8, v.len(), 0), "count[0]");
        assert_eq!(Op::NcPutVara.data_bytes(&v), 24);
        assert_eq!(Op::NcGetVars.dir(), Dir::Read);
        assert_eq!(
            Op::NcPutAtt.data_bytes(&args::nc_put_att(0, -1, 2, 2, 5, 5)),
            0
        );
    }

    #[test]
    fn darray_is_appended_with_its_four_arrays() {
        let at = |op: Op| Op::ALL.iter().position(|o| *o == op).unwrap();
        // After the split collectives (another block appended in the same session may come
        // between).
        assert!(at(Op::TypeCreateDarray) > at(Op::FileSeekShared));
        let op = Op::TypeCreateDarray;
        assert_eq!((op.layer(), op.dir()), (Layer::Mpi, Dir::None));
        // A 7 x 9 array on a 2 x 2 grid: gsizes, distribs, dargs, psizes.
        let mut v = args::type_create_darray(4, 3, 2, 0, 7, 1000);
        v.extend([7, 9, 0, 1, -1, 2, 2, 2]);
        let name = |i: usize| op.param_name(i, v.len(), 0);
        assert_eq!(
            (name(0), name(1), name(5)),
            ("size".into(), "rank".into(), "newtype".into())
        );
        assert_eq!(
            (name(6), name(9), name(11), name(13)),
            (
                "gsizes[0]".into(),
                "distribs[1]".into(),
                "dargs[1]".into(),
                "psizes[1]".into()
            )
        );
        assert!(op.array_is_quantity("gsizes") && !op.array_is_quantity("psizes"));
        assert_eq!(crate::mpi::datatype_positions(op, &v), vec![4, 5]);
    }

    #[test]
    fn collective_buffered_ops_are_the_all_family() {
        for op in Op::ALL {
            let n = op.name();
            let all = n.starts_with("MPI_File_") && n.contains("_all");
            assert_eq!(op.is_collective_buffered(), all, "{n}");
        }
    }

    #[test]
    fn split_collectives_are_the_blocking_layouts_with_an_end() {
        let at = |op: Op| Op::ALL.iter().position(|o| *o == op).unwrap();
        let block = &Op::ALL[at(Op::FileReadAllBegin)..=at(Op::FileSeekShared)];
        assert_eq!(block.len(), 13);
        let mut begins = 0;
        for op in block {
            assert_eq!(op.layer(), Layer::MpiIo, "{}", op.name());
            assert_eq!(op.handle(), Some(Handle::MpiFile), "{}", op.name());
            if let Some((blocking, end)) = op.split_collective() {
                begins += 1;
                assert_eq!(op.params(), blocking.params(), "{}", op.name());
                assert_eq!(op.dir(), blocking.dir(), "{}", op.name());
                assert!(end.is_split_end() && end.dir() == Dir::None);
                assert_eq!(end.name(), op.name().replace("_begin", "_end"));
            } else {
                assert_eq!(op.dir(), Dir::None, "{}", op.name());
            }
        }
        assert_eq!(begins, 6);
        // The begin counts the bytes, the end none.
        let v = args::file_write_at_all_begin(0, 4, 2, 3, 8);
        assert_eq!(Op::FileWriteAtAllBegin.data_bytes(&v), 8);
        assert_eq!(Op::FileWriteAtAllEnd.data_bytes(&[0]), 0);
        assert_eq!(Op::FileSeekShared.params(), Op::FileSeek.params());
    }

    #[test]
    fn roles_of_the_new_calls() {
        assert!(Op::Ibarrier.is_collective() && Op::Ibarrier.is_nonblocking_collective());
        assert!(Op::Alltoallw.is_collective() && !Op::Alltoallw.is_nonblocking_collective());
        assert!(!Op::Bcast.is_nonblocking_collective());
        assert!(Op::NeighborAlltoallw.is_collective() && Op::NeighborAlltoallw.is_neighborhood());
        assert!(Op::IneighborAllgather.is_nonblocking_collective());
        assert!(!Op::Isend.is_collective() && !Op::Isend.is_nonblocking_collective());
        // Every nonblocking collective is its blocking call's layout plus the request.
        let pairs = [
            (Op::Barrier, Op::Ibarrier),
            (Op::Bcast, Op::Ibcast),
            (Op::Reduce, Op::Ireduce),
            (Op::Allreduce, Op::Iallreduce),
            (Op::Gather, Op::Igather),
            (Op::Gatherv, Op::Igatherv),
            (Op::Scatter, Op::Iscatter),
            (Op::Scatterv, Op::Iscatterv),
            (Op::Allgather, Op::Iallgather),
            (Op::Allgatherv, Op::Iallgatherv),
            (Op::Alltoall, Op::Ialltoall),
            (Op::Alltoallv, Op::Ialltoallv),
            (Op::Alltoallw, Op::Ialltoallw),
            (Op::ReduceScatter, Op::IreduceScatter),
            (Op::ReduceScatterBlock, Op::IreduceScatterBlock),
            (Op::Scan, Op::Iscan),
            (Op::Exscan, Op::Iexscan),
            (Op::NeighborAllgather, Op::IneighborAllgather),
            (Op::NeighborAllgatherv, Op::IneighborAllgatherv),
            (Op::NeighborAlltoall, Op::IneighborAlltoall),
            (Op::NeighborAlltoallv, Op::IneighborAlltoallv),
            (Op::NeighborAlltoallw, Op::IneighborAlltoallw),
        ];
        for (b, i) in pairs {
            assert_eq!(i.blocking_form(), b);
            assert_eq!(b.blocking_form(), b);
            assert_eq!(&i.params()[..b.params().len()], b.params(), "{}", i.name());
            assert_eq!(
                i.params()[b.params().len()..],
                [Param::Request],
                "{}",
                i.name()
            );
            assert!(
                b.is_collective() && !b.is_nonblocking_collective(),
                "{}",
                b.name()
            );
            assert!(i.is_nonblocking_collective(), "{}", i.name());
        }
        // Persistent inits record an Isend's layout; only a start moves the message.
        for op in [Op::SendInit, Op::BsendInit, Op::SsendInit, Op::RsendInit] {
            assert_eq!(op.params(), Op::Isend.params());
            assert_eq!(op.persistent(), Some(P2p::Send { nonblocking: true }));
            assert_eq!(op.p2p(), None);
        }
        assert_eq!(Op::RecvInit.params(), Op::Irecv.params());
        assert_eq!(
            Op::RecvInit.persistent(),
            Some(P2p::Recv { nonblocking: true })
        );
        assert_eq!(Op::Start.p2p(), None);
        // A matched probe is the receive; its Mrecv and a plain probe are not.
        assert_eq!(Op::Mprobe.p2p(), Some(P2p::Recv { nonblocking: false }));
        for op in [Op::Mrecv, Op::Imrecv, Op::Probe, Op::Iprobe, Op::Improbe] {
            assert_eq!(op.p2p(), None, "{}", op.name());
        }
        assert_eq!(Op::SendrecvReplace.p2p(), None);
        // Creations.
        assert_eq!(Op::CommDup.creation(), Some(Creation::Dup));
        for op in [
            Op::CommSplit,
            Op::CartCreate,
            Op::CartSub,
            Op::GraphCreate,
            Op::DistGraphCreate,
            Op::DistGraphCreateAdjacent,
        ] {
            assert_eq!(op.creation(), Some(Creation::Split), "{}", op.name());
            assert_eq!(
                op.params(),
                [Param::Comm, Param::Color, Param::Key, Param::Newcomm]
            );
        }
        assert_eq!(Op::CommCreateGroup.creation(), Some(Creation::Members));
        assert_eq!(Op::IntercommMerge.creation(), Some(Creation::Members));
        assert_eq!(Op::IntercommCreate.creation(), Some(Creation::Intercomm));
        assert!(Op::IntercommCreate.creates_comm() && !Op::Send.creates_comm());
        for op in Op::ALL {
            if op.creates_comm() {
                assert!(op.index(Param::Newcomm).is_some(), "{}", op.name());
                assert!(!op.is_collective(), "{}", op.name());
            }
        }
    }

    #[test]
    fn array_names_of_the_new_calls() {
        // Startall: count = 2, then two request ids.
        assert_eq!(Op::Startall.param_name(0, 3, 0), "count");
        assert_eq!(Op::Startall.param_name(2, 3, 0), "requests[1]");
        assert_eq!(Op::Waitsome.param_name(2, 3, 0), "completed[0]");
        assert_eq!(Op::Testall.param_name(3, 4, 0), "requests[1]");
        // A group of three.
        assert_eq!(Op::CommCreateGroup.param_name(6, 7, 0), "members[2]");
        assert_eq!(Op::IntercommCreate.param_name(7, 9, 0), "remote_group[0]");
        // In 1, out 2: sources, destinations, sent, received (6 entries after 5 fixed).
        assert_eq!(Op::NeighborAlltoall.param_name(5, 11, 0), "neighborhood[0]");
        assert_eq!(
            Op::NeighborAlltoall.param_name(10, 11, 0),
            "neighborhood[5]"
        );
        let v = args::improbe(-1, 3, 0, 1, -1, 3, 16, 0);
        assert_eq!(Op::Improbe.param(&v, Param::Message), 0);
        assert_eq!(Op::Improbe.param(&v, Param::MatchedTag), 3);
    }

    #[test]
    fn lists_and_neighborhoods_are_read_from_the_layout() {
        let mut v = args::startall(2);
        v.extend([5, 7]);
        assert_eq!(Op::Startall.list(&v), [5, 7]);
        // A short event gives what it has.
        assert_eq!(Op::Startall.list(&v[..2]), [5]);
        let mut v = args::waitsome(4, 1);
        v.extend([3]);
        assert_eq!(Op::Waitsome.list(&v), [3]);
        let mut v = args::comm_create_group(0, 9, 2, 3);
        v.extend([1, 3]);
        assert_eq!(Op::CommCreateGroup.list(&v), [1, 3]);
        assert_eq!(Op::Send.list(&args::send(1, 1, 1, 0, 0, 1)), [] as [i64; 0]);
        // In 1, out 2.
        let mut v = args::neighbor_alltoallv(2, 1, 2, 12, 4);
        v.extend([-1, 1, 2, 4, 8, 4]);
        let n = Op::NeighborAlltoallv.neighborhood(&v).unwrap();
        assert_eq!(n.sources, [-1]);
        assert_eq!(n.destinations, [1, 2]);
        assert_eq!(n.sendbytes, [4, 8]);
        assert_eq!(n.recvbytes, [4]);
        assert_eq!(Op::NeighborAlltoallv.neighborhood(&v[..9]), None);
        assert_eq!(Op::Alltoallv.neighborhood(&v), None);
        let mut v = args::ineighbor_allgather(2, 0, 1, 8, 0, 6);
        v.extend([1, 8]);
        assert_eq!(
            Op::IneighborAllgather.neighborhood(&v).unwrap().sendbytes,
            [8]
        );
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
    fn the_pnetcdf_layer_is_one_appended_block() {
        // Appended together (the lead orders the blocks appended in one session): every op
        // from ncmpi_create to ncmpi_wait_all is PnetCDF's, and no other op is.
        let at = |op: Op| Op::ALL.iter().position(|o| *o == op).unwrap();
        let block = at(Op::NcmpiCreate)..=at(Op::NcmpiWaitAll);
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(
                op.layer() == Layer::Pnetcdf,
                block.contains(&i),
                "{}",
                op.name()
            );
        }
        assert!(Layer::Pnetcdf.is_container());
        assert!(Layer::STACK.contains(&Layer::Pnetcdf));
        assert_eq!(Layer::Pnetcdf.name(), "PnetCDF");
        // Every transfer has the same fixed layout, the nonblocking ones the request after.
        for op in &Op::ALL[block] {
            if let Some(acc) = op.pnetcdf_access() {
                let fixed = [
                    Param::Ncid,
                    Param::Varid,
                    Param::MemType,
                    Param::Ndims,
                    Param::Count,
                    Param::Bytes,
                ];
                assert_eq!(&op.params()[..6], fixed, "{}", op.name());
                let nonblocking = op.name().starts_with("ncmpi_i");
                assert_eq!(op.params().len(), 6 + nonblocking as usize, "{}", op.name());
                assert_ne!(op.dir(), Dir::None, "{}", op.name());
                // 2 dimensions: the arrays' names.
                let n = op.params().len() + if acc == PnetcdfAccess::Strided { 6 } else { 4 };
                let last = op.param_name(n - 1, n, 0);
                let want = if acc == PnetcdfAccess::Strided {
                    "stride[1]"
                } else {
                    "count[1]"
                };
                assert_eq!(last, want, "{}", op.name());
            } else {
                assert_eq!(op.dir(), Dir::None, "{}", op.name());
            }
        }
        let mut v = args::ncmpi_put_vara_all(0, 3, 6, 1, 100, 800);
        v.extend([400, 100]);
        assert_eq!(Op::NcmpiPutVaraAll.data_bytes(&v), 800);
        assert_eq!(Op::NcmpiPutVaraAll.param_name(6, 8, 0), "start[0]");
        // The requests a completion lists; NC_REQ_ALL lists none.
        let mut v = args::ncmpi_wait_all(0, 2);
        v.extend([0, 1]);
        assert_eq!(Op::NcmpiWaitAll.list(&v), [0, 1]);
        assert_eq!(Op::NcmpiWait.list(&args::ncmpi_wait(0, -1)), [] as [i64; 0]);
        assert_eq!(Op::NcmpiDefVar.param_name(4, 6, 0), "dimids[0]");
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
