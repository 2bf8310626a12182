//! MPI-IO wrappers.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::*;

// ---------------------------------------------------------------------------------------------
// MPI-IO.

/// Wrapper: `MPI_File_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_open(
    comm: H,
    name: *const c_char,
    amode: c_int,
    info: H,
    fh: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_File_open",
        unsafe extern "C" fn(H, *const c_char, c_int, H, *mut H) -> c_int
    );
    mpi_call_path(
        Op::FileOpen,
        true,
        cpath(name),
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(comm, name, amode, info, fh) },
        |st, r| {
            let c = st.comm_id(comm);
            let id = if r == MPI_SUCCESS && !fh.is_null() {
                // SAFETY: MPI wrote the handle through the application's non-null pointer.
                st.files.insert(unsafe { *fh } as usize)
            } else {
                -1
            };
            vec![c, amode as i64, id]
        },
    )
}

/// Wrapper: `MPI_File_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_close(fh: *mut H) -> c_int {
    let f = pmpi!("PMPI_File_close", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid pointer to an open file handle; read it before it is reset.
    let h = if fh.is_null() {
        0
    } else {
        (unsafe { *fh }) as usize
    };
    mpi_call(
        Op::FileClose,
        true,
        // SAFETY: forwarding the application's argument.
        || unsafe { f(fh) },
        |st, _| vec![st.files.remove(h).unwrap_or(-1)],
    )
}

/// Wrapper: `MPI_File_delete`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_delete(name: *const c_char, info: H) -> c_int {
    let f = pmpi!(
        "PMPI_File_delete",
        unsafe extern "C" fn(*const c_char, H) -> c_int
    );
    mpi_call_path(
        Op::FileDelete,
        true,
        cpath(name),
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(name, info) },
        |_, _| Vec::new(),
    )
}

/// Wrapper: `MPI_File_set_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_set_size(fh: H, size: Offset) -> c_int {
    let f = pmpi!(
        "PMPI_File_set_size",
        unsafe extern "C" fn(H, Offset) -> c_int
    );
    mpi_call(
        Op::FileSetSize,
        true,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(fh, size) },
        |st, _| vec![st.file_id(fh), size],
    )
}

/// Wrapper: `MPI_File_get_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_get_size(fh: H, size: *mut Offset) -> c_int {
    let f = pmpi!(
        "PMPI_File_get_size",
        unsafe extern "C" fn(H, *mut Offset) -> c_int
    );
    mpi_call(
        Op::FileGetSize,
        true,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(fh, size) },
        |st, r| {
            let s = if r == MPI_SUCCESS && !size.is_null() {
                // SAFETY: MPI wrote the size through the application's non-null pointer.
                unsafe { *size }
            } else {
                -1
            };
            vec![st.file_id(fh), s]
        },
    )
}

/// Wrapper: `MPI_File_set_view`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_set_view(
    fh: H,
    disp: Offset,
    etype: H,
    filetype: H,
    datarep: *const c_char,
    info: H,
) -> c_int {
    let f = pmpi!(
        "PMPI_File_set_view",
        unsafe extern "C" fn(H, Offset, H, H, *const c_char, H) -> c_int
    );
    mpi_call(
        Op::FileSetView,
        true,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(fh, disp, etype, filetype, datarep, info) },
        |st, _| {
            vec![
                st.file_id(fh),
                disp,
                st.type_id(etype),
                st.type_id(filetype),
            ]
        },
    )
}

/// Wrapper: `MPI_File_seek`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_seek(fh: H, off: Offset, whence: c_int) -> c_int {
    let f = pmpi!(
        "PMPI_File_seek",
        unsafe extern "C" fn(H, Offset, c_int) -> c_int
    );
    mpi_call(
        Op::FileSeek,
        true,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(fh, off, whence) },
        |st, _| vec![st.file_id(fh), off, whence as i64],
    )
}

/// Wrapper: `MPI_File_sync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_File_sync(fh: H) -> c_int {
    let f = pmpi!("PMPI_File_sync", unsafe extern "C" fn(H) -> c_int);
    mpi_call(
        Op::FileSync,
        true,
        // SAFETY: forwarding the application's argument.
        || unsafe { f(fh) },
        |st, _| vec![st.file_id(fh)],
    )
}

pub(crate) fn io_bytes(st: &mut State, r: c_int, count: i64, dt: H) -> i64 {
    if r == MPI_SUCCESS {
        count * st.tsize(dt)
    } else {
        0
    }
}

/// The status a blocking MPI-IO call writes: the application's, or ours when it passed
/// `MPI_STATUS_IGNORE`, so that the bytes really moved can be read back (a read past the end
/// of the file moves fewer than count times the type size).
pub(crate) fn status_for(app: H, own: &mut abi::StatusBuf) -> H {
    if abi::status_ignored(app) {
        own.as_mut_ptr().cast()
    } else {
        app
    }
}

/// Bytes a blocking MPI-IO call moved: its status's count in bytes, else (MPI could not say)
/// count times the type size.
pub(crate) fn io_bytes_done(st: &mut State, r: c_int, count: i64, dt: H, status: H) -> i64 {
    if r != MPI_SUCCESS {
        return 0;
    }
    let byte = globals().map_or(0, |g| g.byte);
    if let Some(f) = real!(
        "PMPI_Get_count",
        unsafe extern "C" fn(H, H, *mut c_int) -> c_int
    ) && byte != 0
    {
        let mut n: c_int = 0;
        // SAFETY: `status` is the status the call just filled (ours or the application's) and
        // MPI_BYTE a predefined type; `n` is a valid out-parameter.
        if unsafe { f(status, byte as H, &mut n) } == MPI_SUCCESS && n != MPI_UNDEFINED && n >= 0 {
            return n as i64;
        }
    }
    io_bytes(st, r, count, dt)
}

// Each macro below takes the count's C type (`c_int`, or `Count` for the `_c` variants), then
// the wrappers to define as `name, PMPI symbol, op, buffer type;`.

macro_rules! file_data {
    ($cnt:ty; $($name:ident, $sym:literal, $op:expr, $buf:ty;)*) => {$(
        /// Wrapper: an MPI-IO data call with the individual or shared file pointer.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fh: H, buf: $buf, count: $cnt, dt: H, status: H) -> c_int {
            let f = pmpi!($sym, unsafe extern "C" fn(H, $buf, $cnt, H, H) -> c_int);
            let mut own: abi::StatusBuf = [0; 8];
            let used = status_for(status, &mut own);
            mpi_call(
                $op,
                true,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(fh, buf, count, dt, used) },
                |st, r| {
                    let b = io_bytes_done(st, r, count as i64, dt, used);
                    vec![st.file_id(fh), count as i64, st.type_id(dt), b]
                },
            )
        }
    )*};
}
file_data!(c_int;
    MPI_File_read, "PMPI_File_read", Op::FileRead, *mut c_void;
    MPI_File_read_all, "PMPI_File_read_all", Op::FileReadAll, *mut c_void;
    MPI_File_read_shared, "PMPI_File_read_shared", Op::FileReadShared, *mut c_void;
    MPI_File_read_ordered, "PMPI_File_read_ordered", Op::FileReadOrdered, *mut c_void;
    MPI_File_write, "PMPI_File_write", Op::FileWrite, *const c_void;
    MPI_File_write_all, "PMPI_File_write_all", Op::FileWriteAll, *const c_void;
    MPI_File_write_shared, "PMPI_File_write_shared", Op::FileWriteShared, *const c_void;
    MPI_File_write_ordered, "PMPI_File_write_ordered", Op::FileWriteOrdered, *const c_void;
);
file_data!(Count;
    MPI_File_read_c, "PMPI_File_read_c", Op::FileRead, *mut c_void;
    MPI_File_read_all_c, "PMPI_File_read_all_c", Op::FileReadAll, *mut c_void;
    MPI_File_read_shared_c, "PMPI_File_read_shared_c", Op::FileReadShared, *mut c_void;
    MPI_File_read_ordered_c, "PMPI_File_read_ordered_c", Op::FileReadOrdered, *mut c_void;
    MPI_File_write_c, "PMPI_File_write_c", Op::FileWrite, *const c_void;
    MPI_File_write_all_c, "PMPI_File_write_all_c", Op::FileWriteAll, *const c_void;
    MPI_File_write_shared_c, "PMPI_File_write_shared_c", Op::FileWriteShared, *const c_void;
    MPI_File_write_ordered_c, "PMPI_File_write_ordered_c", Op::FileWriteOrdered, *const c_void;
);

macro_rules! file_data_at {
    ($cnt:ty; $($name:ident, $sym:literal, $op:expr, $buf:ty;)*) => {$(
        /// Wrapper: an MPI-IO data call at an explicit offset.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fh: H,
            off: Offset,
            buf: $buf,
            count: $cnt,
            dt: H,
            status: H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(H, Offset, $buf, $cnt, H, H) -> c_int
            );
            let mut own: abi::StatusBuf = [0; 8];
            let used = status_for(status, &mut own);
            mpi_call(
                $op,
                true,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(fh, off, buf, count, dt, used) },
                |st, r| {
                    let b = io_bytes_done(st, r, count as i64, dt, used);
                    vec![st.file_id(fh), off, count as i64, st.type_id(dt), b]
                },
            )
        }
    )*};
}
file_data_at!(c_int;
    MPI_File_read_at, "PMPI_File_read_at", Op::FileReadAt, *mut c_void;
    MPI_File_read_at_all, "PMPI_File_read_at_all", Op::FileReadAtAll, *mut c_void;
    MPI_File_write_at, "PMPI_File_write_at", Op::FileWriteAt, *const c_void;
    MPI_File_write_at_all, "PMPI_File_write_at_all", Op::FileWriteAtAll, *const c_void;
);
file_data_at!(Count;
    MPI_File_read_at_c, "PMPI_File_read_at_c", Op::FileReadAt, *mut c_void;
    MPI_File_read_at_all_c, "PMPI_File_read_at_all_c", Op::FileReadAtAll, *mut c_void;
    MPI_File_write_at_c, "PMPI_File_write_at_c", Op::FileWriteAt, *const c_void;
    MPI_File_write_at_all_c, "PMPI_File_write_at_all_c", Op::FileWriteAtAll, *const c_void;
);

macro_rules! file_idata {
    ($cnt:ty; $($name:ident, $sym:literal, $op:expr, $buf:ty;)*) => {$(
        /// Wrapper: a nonblocking MPI-IO data call.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fh: H,
            buf: $buf,
            count: $cnt,
            dt: H,
            req: *mut H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(H, $buf, $cnt, H, *mut H) -> c_int
            );
            mpi_call(
                $op,
                true,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(fh, buf, count, dt, req) },
                |st, r| {
                    let b = io_bytes(st, r, count as i64, dt);
                    let q = st.new_req(r, req);
                    vec![st.file_id(fh), count as i64, st.type_id(dt), b, q]
                },
            )
        }
    )*};
}
file_idata!(c_int;
    MPI_File_iread, "PMPI_File_iread", Op::FileIread, *mut c_void;
    MPI_File_iread_all, "PMPI_File_iread_all", Op::FileIreadAll, *mut c_void;
    MPI_File_iread_shared, "PMPI_File_iread_shared", Op::FileIreadShared, *mut c_void;
    MPI_File_iwrite, "PMPI_File_iwrite", Op::FileIwrite, *const c_void;
    MPI_File_iwrite_all, "PMPI_File_iwrite_all", Op::FileIwriteAll, *const c_void;
    MPI_File_iwrite_shared, "PMPI_File_iwrite_shared", Op::FileIwriteShared, *const c_void;
);
file_idata!(Count;
    MPI_File_iread_c, "PMPI_File_iread_c", Op::FileIread, *mut c_void;
    MPI_File_iread_all_c, "PMPI_File_iread_all_c", Op::FileIreadAll, *mut c_void;
    MPI_File_iread_shared_c, "PMPI_File_iread_shared_c", Op::FileIreadShared, *mut c_void;
    MPI_File_iwrite_c, "PMPI_File_iwrite_c", Op::FileIwrite, *const c_void;
    MPI_File_iwrite_all_c, "PMPI_File_iwrite_all_c", Op::FileIwriteAll, *const c_void;
    MPI_File_iwrite_shared_c, "PMPI_File_iwrite_shared_c", Op::FileIwriteShared, *const c_void;
);

macro_rules! file_idata_at {
    ($cnt:ty; $($name:ident, $sym:literal, $op:expr, $buf:ty;)*) => {$(
        /// Wrapper: a nonblocking MPI-IO data call at an explicit offset.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fh: H,
            off: Offset,
            buf: $buf,
            count: $cnt,
            dt: H,
            req: *mut H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(H, Offset, $buf, $cnt, H, *mut H) -> c_int
            );
            mpi_call(
                $op,
                true,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(fh, off, buf, count, dt, req) },
                |st, r| {
                    let b = io_bytes(st, r, count as i64, dt);
                    let q = st.new_req(r, req);
                    vec![st.file_id(fh), off, count as i64, st.type_id(dt), b, q]
                },
            )
        }
    )*};
}
file_idata_at!(c_int;
    MPI_File_iread_at, "PMPI_File_iread_at", Op::FileIreadAt, *mut c_void;
    MPI_File_iwrite_at, "PMPI_File_iwrite_at", Op::FileIwriteAt, *const c_void;
);
file_idata_at!(Count;
    MPI_File_iread_at_c, "PMPI_File_iread_at_c", Op::FileIreadAt, *mut c_void;
    MPI_File_iwrite_at_c, "PMPI_File_iwrite_at_c", Op::FileIwriteAt, *const c_void;
);
