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

macro_rules! ops {
    ($( $v:ident => $layer:ident, $name:literal, $dir:ident, [$($p:literal),*] ;)*) => {
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

            /// Names of the fixed parameters. Variable-length array parameters and path fields
            /// follow them; see [`Op::param_name`].
            pub fn schema(self) -> &'static [&'static str] { match self { $(Op::$v => &[$($p),*],)* } }

            /// Whether the call reads or writes file data.
            pub fn dir(self) -> Dir { match self { $(Op::$v => Dir::$dir,)* } }
        }
    };
}

ops! {
    // MPI-IO. `fh` is the index in the rank's open-file table; `count`/`datatype` as passed;
    // `bytes` is count times the datatype size, i.e. what actually moved.
    FileOpen => MpiIo, "MPI_File_open", None, ["comm", "amode", "fh"];
    FileClose => MpiIo, "MPI_File_close", None, ["fh"];
    FileDelete => MpiIo, "MPI_File_delete", None, [];
    FileSetSize => MpiIo, "MPI_File_set_size", None, ["fh", "size"];
    FileGetSize => MpiIo, "MPI_File_get_size", None, ["fh", "size"];
    FileSetView => MpiIo, "MPI_File_set_view", None, ["fh", "disp", "etype", "filetype"];
    FileSeek => MpiIo, "MPI_File_seek", None, ["fh", "offset", "whence"];
    FileSync => MpiIo, "MPI_File_sync", None, ["fh"];
    FileRead => MpiIo, "MPI_File_read", Read, ["fh", "count", "datatype", "bytes"];
    FileReadAt => MpiIo, "MPI_File_read_at", Read, ["fh", "offset", "count", "datatype", "bytes"];
    FileReadAll => MpiIo, "MPI_File_read_all", Read, ["fh", "count", "datatype", "bytes"];
    FileReadAtAll => MpiIo, "MPI_File_read_at_all", Read, ["fh", "offset", "count", "datatype", "bytes"];
    FileReadShared => MpiIo, "MPI_File_read_shared", Read, ["fh", "count", "datatype", "bytes"];
    FileReadOrdered => MpiIo, "MPI_File_read_ordered", Read, ["fh", "count", "datatype", "bytes"];
    FileIread => MpiIo, "MPI_File_iread", Read, ["fh", "count", "datatype", "bytes", "request"];
    FileIreadAt => MpiIo, "MPI_File_iread_at", Read, ["fh", "offset", "count", "datatype", "bytes", "request"];
    FileIreadAll => MpiIo, "MPI_File_iread_all", Read, ["fh", "count", "datatype", "bytes", "request"];
    FileIreadShared => MpiIo, "MPI_File_iread_shared", Read, ["fh", "count", "datatype", "bytes", "request"];
    FileWrite => MpiIo, "MPI_File_write", Write, ["fh", "count", "datatype", "bytes"];
    FileWriteAt => MpiIo, "MPI_File_write_at", Write, ["fh", "offset", "count", "datatype", "bytes"];
    FileWriteAll => MpiIo, "MPI_File_write_all", Write, ["fh", "count", "datatype", "bytes"];
    FileWriteAtAll => MpiIo, "MPI_File_write_at_all", Write, ["fh", "offset", "count", "datatype", "bytes"];
    FileWriteShared => MpiIo, "MPI_File_write_shared", Write, ["fh", "count", "datatype", "bytes"];
    FileWriteOrdered => MpiIo, "MPI_File_write_ordered", Write, ["fh", "count", "datatype", "bytes"];
    FileIwrite => MpiIo, "MPI_File_iwrite", Write, ["fh", "count", "datatype", "bytes", "request"];
    FileIwriteAt => MpiIo, "MPI_File_iwrite_at", Write, ["fh", "offset", "count", "datatype", "bytes", "request"];
    FileIwriteAll => MpiIo, "MPI_File_iwrite_all", Write, ["fh", "count", "datatype", "bytes", "request"];
    FileIwriteShared => MpiIo, "MPI_File_iwrite_shared", Write, ["fh", "count", "datatype", "bytes", "request"];

    // MPI. Peers are stored relative to the caller (peer - rank); `comm`, `datatype`, `op` and
    // `request` are symbolic ids; `bytes` is count times the datatype size.
    Init => Mpi, "MPI_Init", None, [];
    Finalize => Mpi, "MPI_Finalize", None, [];
    Barrier => Mpi, "MPI_Barrier", None, ["comm"];
    Bcast => Mpi, "MPI_Bcast", None, ["count", "datatype", "root", "comm", "bytes"];
    Reduce => Mpi, "MPI_Reduce", None, ["count", "datatype", "op", "root", "comm", "bytes"];
    Allreduce => Mpi, "MPI_Allreduce", None, ["count", "datatype", "op", "comm", "bytes"];
    Gather => Mpi, "MPI_Gather", None, ["sendcount", "sendtype", "recvcount", "recvtype", "root", "comm", "bytes"];
    Gatherv => Mpi, "MPI_Gatherv", None, ["sendcount", "sendtype", "recvbytes", "recvtype", "root", "comm", "bytes"];
    Scatter => Mpi, "MPI_Scatter", None, ["sendcount", "sendtype", "recvcount", "recvtype", "root", "comm", "bytes"];
    Scatterv => Mpi, "MPI_Scatterv", None, ["sendbytes", "sendtype", "recvcount", "recvtype", "root", "comm", "bytes"];
    Allgather => Mpi, "MPI_Allgather", None, ["sendcount", "sendtype", "recvcount", "recvtype", "comm", "bytes"];
    Allgatherv => Mpi, "MPI_Allgatherv", None, ["sendcount", "sendtype", "recvbytes", "recvtype", "comm", "bytes"];
    Alltoall => Mpi, "MPI_Alltoall", None, ["sendcount", "sendtype", "recvcount", "recvtype", "comm", "bytes"];
    Alltoallv => Mpi, "MPI_Alltoallv", None, ["sendbytes", "sendtype", "recvbytes", "recvtype", "comm", "bytes"];
    Send => Mpi, "MPI_Send", None, ["count", "datatype", "peer", "tag", "comm", "bytes"];
    Recv => Mpi, "MPI_Recv", None, ["count", "datatype", "peer", "tag", "comm", "bytes"];
    Isend => Mpi, "MPI_Isend", None, ["count", "datatype", "peer", "tag", "comm", "bytes", "request"];
    Irecv => Mpi, "MPI_Irecv", None, ["count", "datatype", "peer", "tag", "comm", "bytes", "request"];
    Wait => Mpi, "MPI_Wait", None, ["request"];
    Waitall => Mpi, "MPI_Waitall", None, ["count"];
    Sendrecv => Mpi, "MPI_Sendrecv", None, ["sendcount", "sendtype", "dest", "sendtag", "recvcount", "recvtype", "source", "recvtag", "comm", "bytes"];
    CommDup => Mpi, "MPI_Comm_dup", None, ["comm", "newcomm"];
    CommSplit => Mpi, "MPI_Comm_split", None, ["comm", "color", "key", "newcomm"];
    TypeContiguous => Mpi, "MPI_Type_contiguous", None, ["count", "oldtype", "newtype"];
    TypeVector => Mpi, "MPI_Type_vector", None, ["count", "blocklength", "stride", "oldtype", "newtype"];
    TypeHvector => Mpi, "MPI_Type_create_hvector", None, ["count", "blocklength", "stride_bytes", "oldtype", "newtype"];
    // Followed by `count` block lengths then `count` displacements.
    TypeIndexed => Mpi, "MPI_Type_indexed", None, ["count", "oldtype", "newtype"];
    // Followed by `ndims` sizes, `ndims` subsizes, `ndims` starts.
    TypeCreateSubarray => Mpi, "MPI_Type_create_subarray", None, ["ndims", "order", "oldtype", "newtype"];
    // Followed by `count` block lengths, `count` byte displacements, `count` types.
    TypeCreateStruct => Mpi, "MPI_Type_create_struct", None, ["count", "newtype"];
    TypeCreateResized => Mpi, "MPI_Type_create_resized", None, ["oldtype", "lb", "extent", "newtype"];
    TypeCommit => Mpi, "MPI_Type_commit", None, ["datatype"];
    TypeFree => Mpi, "MPI_Type_free", None, ["datatype"];

    // POSIX. `fd` is the index in the rank's open-file table, `ret` the call's result.
    Open => Posix, "open", None, ["flags", "mode", "fd"];
    Openat => Posix, "openat", None, ["flags", "mode", "fd"];
    Creat => Posix, "creat", None, ["mode", "fd"];
    Close => Posix, "close", None, ["fd"];
    Read => Posix, "read", Read, ["fd", "count", "ret"];
    Write => Posix, "write", Write, ["fd", "count", "ret"];
    Pread => Posix, "pread", Read, ["fd", "count", "offset", "ret"];
    Pwrite => Posix, "pwrite", Write, ["fd", "count", "offset", "ret"];
    Readv => Posix, "readv", Read, ["fd", "iovcnt", "ret"];
    Writev => Posix, "writev", Write, ["fd", "iovcnt", "ret"];
    Preadv => Posix, "preadv", Read, ["fd", "iovcnt", "offset", "ret"];
    Pwritev => Posix, "pwritev", Write, ["fd", "iovcnt", "offset", "ret"];
    Lseek => Posix, "lseek", None, ["fd", "offset", "whence", "ret"];
    Fsync => Posix, "fsync", None, ["fd"];
    Fdatasync => Posix, "fdatasync", None, ["fd"];
    Ftruncate => Posix, "ftruncate", None, ["fd", "length"];
    Unlink => Posix, "unlink", None, [];
    Mkdir => Posix, "mkdir", None, ["mode"];
    Rmdir => Posix, "rmdir", None, [];
    Stat => Posix, "stat", None, ["ret"];
    Access => Posix, "access", None, ["mode", "ret"];
    Fcntl => Posix, "fcntl", None, ["fd", "cmd", "ret"];

    // stdio. `stream` is the index in the rank's open-file table.
    Fopen => Stdio, "fopen", None, ["mode", "stream"];
    Fclose => Stdio, "fclose", None, ["stream"];
    Fread => Stdio, "fread", Read, ["stream", "size", "nmemb", "ret"];
    Fwrite => Stdio, "fwrite", Write, ["stream", "size", "nmemb", "ret"];
    Fseek => Stdio, "fseek", None, ["stream", "offset", "whence"];
    Fflush => Stdio, "fflush", None, ["stream"];
    Fprintf => Stdio, "fprintf", Write, ["stream", "ret"];
    // A communicator built from a group (`MPI_Comm_create`), recorded as the split that builds
    // the same one: color = the parent-comm rank of the new communicator's rank 0 (MPI_UNDEFINED,
    // -32766, where the caller is not a member), key = the caller's rank in it.
    CommCreate => Mpi, "MPI_Comm_create", None, ["comm", "color", "key", "newcomm"];
    // `MPI_Comm_split_type`, with color and key derived the same way.
    CommSplitType => Mpi, "MPI_Comm_split_type", None, ["comm", "color", "key", "newcomm"];
    // Descriptor duplication: `dup`, `dup2`, `dup3` and `fcntl(F_DUPFD[_CLOEXEC])`. `fd` is the
    // traced source, `newfd` the id the copy gets (-1 when the call failed), `closed` the id of
    // a traced descriptor that `dup2`/`dup3` closed by reusing its number (-1 for none).
    Dup => Posix, "dup", None, ["fd", "newfd", "closed"];
    // Followed by `count` block lengths, then `count` byte displacements.
    TypeCreateHindexed => Mpi, "MPI_Type_create_hindexed", None, ["count", "oldtype", "newtype"];
    // Followed by `count` byte displacements.
    TypeCreateHindexedBlock => Mpi, "MPI_Type_create_hindexed_block", None, ["count", "blocklength", "oldtype", "newtype"];
    // Followed by `count` displacements (in extents of `oldtype`).
    TypeCreateIndexedBlock => Mpi, "MPI_Type_create_indexed_block", None, ["count", "blocklength", "oldtype", "newtype"];
    TypeDup => Mpi, "MPI_Type_dup", None, ["oldtype", "newtype"];
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

impl Op {
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
        let get = |name: &str| -> i64 {
            self.schema()
                .iter()
                .position(|p| *p == name)
                .and_then(|i| params.get(i).copied())
                .unwrap_or(0)
        };
        let v = match self.layer() {
            Layer::MpiIo => get("bytes"),
            Layer::Posix => get("ret"),
            Layer::Stdio => match self {
                Op::Fprintf => get("ret"),
                _ => get("size").saturating_mul(get("ret")),
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
