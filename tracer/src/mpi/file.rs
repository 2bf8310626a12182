//! MPI-IO wrappers. POSIX calls the library makes inside them are recorded as their children.

use super::kinds::*;
use super::*;

mpi_hooks! {
    /// Wrapper: `MPI_File_open`.
    MPI_File_open, _ (comm: Comm, name: Str, amode: Int, info: Info, fh: New<File>) => FileOpen
        path cpath(name.0);
        record |st, r| {
            let c = comm.id(st);
            let id = match fh.get(r) {
                Some(h) => st.files.insert(h),
                None => -1,
            };
            args::file_open(c, amode.i(), id)
        };
        @after |r| if let Some(h) = fh.get(r) {
            super::config::at_file_open(h as H, cpath(name.0).as_deref(), info.0)
        };

    /// Wrapper: `MPI_File_close`.
    MPI_File_close, mpi_file_close_ (fh: Ref<File>) => FileClose
        // Read before the call, which resets it to MPI_FILE_NULL.
        let h = fh.peek();
        record |st, _| {
            super::config::at_file_close(st, h);
            args::file_close(st.files.remove(h).unwrap_or(-1))
        };

    /// Wrapper: `MPI_File_delete`.
    MPI_File_delete, _ (name: Str, info: Info) => FileDelete
        path cpath(name.0);
        record |_, _| args::file_delete();

    /// Wrapper: `MPI_File_set_size`.
    MPI_File_set_size, mpi_file_set_size_ (fh: File, size: Offset) => FileSetSize
        record |st, _| args::file_set_size(fh.id(st), size.i());

    /// Wrapper: `MPI_File_get_size`.
    MPI_File_get_size, mpi_file_get_size_ (fh: File, size: OffsetOut) => FileGetSize
        record |st, r| args::file_get_size(fh.id(st), size.get(r));

    /// Wrapper: `MPI_File_set_view`.
    MPI_File_set_view, _ (
        fh: File, disp: Offset, etype: Datatype, filetype: Datatype, datarep: Str, info: Info,
    ) => FileSetView
        record |st, _| args::file_set_view(fh.id(st), disp.i(), etype.id(st), filetype.id(st));
        // The view's hints (OMPIO honours its cb_nodes): `mpi::config` says which win.
        @after |r| if r == MPI_SUCCESS {
            super::config::at_set_view(fh.0, info.0)
        };

    /// Wrapper: `MPI_File_seek`.
    MPI_File_seek, mpi_file_seek_ (fh: File, off: Offset, whence: Int) => FileSeek
        record |st, _| args::file_seek(fh.id(st), off.i(), whence.i());

    /// Wrapper: `MPI_File_seek_shared` (collective: every rank passes the same place).
    MPI_File_seek_shared, mpi_file_seek_shared_ (fh: File, off: Offset, whence: Int) => FileSeekShared
        record |st, _| args::file_seek_shared(fh.id(st), off.i(), whence.i());

    // The ends of the split collectives: the status of the begin's transfer comes back here,
    // but the begin recorded its bytes already (the file pointer moved then), so the end
    // records the file only.
    /// Wrapper: `MPI_File_read_all_end`.
    MPI_File_read_all_end, mpi_file_read_all_end_ (fh: File, buf: IoBufMut, status: Status)
        => FileReadAllEnd
        record |st, _| args::file_read_all_end(fh.id(st));

    /// Wrapper: `MPI_File_write_all_end`.
    MPI_File_write_all_end, mpi_file_write_all_end_ (fh: File, buf: IoBuf, status: Status)
        => FileWriteAllEnd
        record |st, _| args::file_write_all_end(fh.id(st));

    /// Wrapper: `MPI_File_read_at_all_end`.
    MPI_File_read_at_all_end, mpi_file_read_at_all_end_ (fh: File, buf: IoBufMut, status: Status)
        => FileReadAtAllEnd
        record |st, _| args::file_read_at_all_end(fh.id(st));

    /// Wrapper: `MPI_File_write_at_all_end`.
    MPI_File_write_at_all_end, mpi_file_write_at_all_end_ (fh: File, buf: IoBuf, status: Status)
        => FileWriteAtAllEnd
        record |st, _| args::file_write_at_all_end(fh.id(st));

    /// Wrapper: `MPI_File_read_ordered_end`.
    MPI_File_read_ordered_end, mpi_file_read_ordered_end_ (fh: File, buf: IoBufMut, status: Status)
        => FileReadOrderedEnd
        record |st, _| args::file_read_ordered_end(fh.id(st));

    /// Wrapper: `MPI_File_write_ordered_end`.
    MPI_File_write_ordered_end, mpi_file_write_ordered_end_ (fh: File, buf: IoBuf, status: Status)
        => FileWriteOrderedEnd
        record |st, _| args::file_write_ordered_end(fh.id(st));

    /// Wrapper: `MPI_File_sync`.
    MPI_File_sync, mpi_file_sync_ (fh: File) => FileSync
        record |st, _| args::file_sync(fh.id(st));
}

/// Bytes a call that did not complete yet will move: count times the type size.
fn io_bytes(st: &mut State, r: c_int, count: i64, dt: Datatype) -> i64 {
    if r == MPI_SUCCESS {
        dt.bytes(st, count)
    } else {
        0
    }
}

/// Bytes a blocking MPI-IO call moved: its status's count in bytes, else (MPI could not say)
/// count times the type size.
fn io_bytes_done(st: &mut State, r: c_int, count: i64, dt: Datatype, status: Status) -> i64 {
    if r != MPI_SUCCESS {
        return 0;
    }
    status.bytes().unwrap_or_else(|| io_bytes(st, r, count, dt))
}

// The data calls. Each line gives the kind of call (`blocking`, with a status, or
// `nonblocking`, with a request), the op, the C name, its Fortran hook, the buffer kind and,
// for the explicit-offset calls, the offset argument (`off`). Each also gets its MPI-4
// large-count `_c` wrapper (an `MPI_Count` count, recorded as the same op: MPICH 4 has them and
// codes such as IOR call them when they exist).
macro_rules! file_data {
    ($($kind:ident $op:ident: $c:ident, $f:tt, $buf:ident $(, $at:ident)?;)*) => { paste::paste! {
        $(file_data!(@$kind $op, $c, $f, $buf, Count $(, $at)?);)*
        $(file_data!(@$kind $op, [<$c _c>], _, $buf, BigCount $(, $at)?);)*
    }};
    (@blocking $op:ident, $c:ident, $f:tt, $buf:ident, $cnt:ident $(, $at:ident)?) => {
        paste::paste! { mpi_hooks! {
            /// Wrapper: a blocking MPI-IO data call.
            $c, $f (fh: File, $($at: Offset,)? buf: $buf, count: $cnt, dt: Datatype, status: Status)
                => $op
                let mut own = [0; 8];
                let status = status.or_own(&mut own);
                record |st, r| {
                    let b = io_bytes_done(st, r, count.i(), dt, status);
                    args::[<$op:snake>](fh.id(st), $($at.i(),)? count.i(), dt.id(st), b)
                };
        }}
    };
    (@begin $op:ident, $c:ident, $f:tt, $buf:ident, $cnt:ident $(, $at:ident)?) => {
        paste::paste! { mpi_hooks! {
            /// Wrapper: the begin of a split collective: the bytes it is to move.
            $c, $f (fh: File, $($at: Offset,)? buf: $buf, count: $cnt, dt: Datatype) => $op
                record |st, r| {
                    let b = io_bytes(st, r, count.i(), dt);
                    args::[<$op:snake>](fh.id(st), $($at.i(),)? count.i(), dt.id(st), b)
                };
        }}
    };
    (@nonblocking $op:ident, $c:ident, $f:tt, $buf:ident, $cnt:ident $(, $at:ident)?) => {
        paste::paste! { mpi_hooks! {
            /// Wrapper: a nonblocking MPI-IO data call: the bytes it is to move.
            $c, $f (fh: File, $($at: Offset,)? buf: $buf, count: $cnt, dt: Datatype, req: New<Request>)
                => $op
                record |st, r| {
                    let b = io_bytes(st, r, count.i(), dt);
                    let q = req.id(st, r);
                    args::[<$op:snake>](fh.id(st), $($at.i(),)? count.i(), dt.id(st), b, q)
                };
        }}
    };
}

file_data! {
    blocking FileRead: MPI_File_read, mpi_file_read_, IoBufMut;
    blocking FileReadAll: MPI_File_read_all, mpi_file_read_all_, IoBufMut;
    blocking FileReadShared: MPI_File_read_shared, mpi_file_read_shared_, IoBufMut;
    blocking FileReadOrdered: MPI_File_read_ordered, mpi_file_read_ordered_, IoBufMut;
    blocking FileWrite: MPI_File_write, mpi_file_write_, IoBuf;
    blocking FileWriteAll: MPI_File_write_all, mpi_file_write_all_, IoBuf;
    blocking FileWriteShared: MPI_File_write_shared, mpi_file_write_shared_, IoBuf;
    blocking FileWriteOrdered: MPI_File_write_ordered, mpi_file_write_ordered_, IoBuf;
    blocking FileReadAt: MPI_File_read_at, mpi_file_read_at_, IoBufMut, off;
    blocking FileReadAtAll: MPI_File_read_at_all, mpi_file_read_at_all_, IoBufMut, off;
    blocking FileWriteAt: MPI_File_write_at, mpi_file_write_at_, IoBuf, off;
    blocking FileWriteAtAll: MPI_File_write_at_all, mpi_file_write_at_all_, IoBuf, off;
    nonblocking FileIread: MPI_File_iread, mpi_file_iread_, IoBufMut;
    nonblocking FileIreadAll: MPI_File_iread_all, mpi_file_iread_all_, IoBufMut;
    nonblocking FileIreadShared: MPI_File_iread_shared, mpi_file_iread_shared_, IoBufMut;
    nonblocking FileIwrite: MPI_File_iwrite, mpi_file_iwrite_, IoBuf;
    nonblocking FileIwriteAll: MPI_File_iwrite_all, mpi_file_iwrite_all_, IoBuf;
    nonblocking FileIwriteShared: MPI_File_iwrite_shared, mpi_file_iwrite_shared_, IoBuf;
    nonblocking FileIreadAt: MPI_File_iread_at, mpi_file_iread_at_, IoBufMut, off;
    nonblocking FileIwriteAt: MPI_File_iwrite_at, mpi_file_iwrite_at_, IoBuf, off;
    begin FileReadAllBegin: MPI_File_read_all_begin, mpi_file_read_all_begin_, IoBufMut;
    begin FileWriteAllBegin: MPI_File_write_all_begin, mpi_file_write_all_begin_, IoBuf;
    begin FileReadOrderedBegin: MPI_File_read_ordered_begin, mpi_file_read_ordered_begin_, IoBufMut;
    begin FileWriteOrderedBegin: MPI_File_write_ordered_begin, mpi_file_write_ordered_begin_, IoBuf;
    begin FileReadAtAllBegin: MPI_File_read_at_all_begin, mpi_file_read_at_all_begin_, IoBufMut, off;
    begin FileWriteAtAllBegin: MPI_File_write_at_all_begin, mpi_file_write_at_all_begin_, IoBuf, off;
}
