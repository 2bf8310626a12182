//! The part of the OTF2 3.x C API the export uses, resolved from the library at run time, so
//! iotrex builds and runs without OTF2 and says what is missing only when asked to export.
//!
//! Signatures and constants are those of Debian's libotf2-trace-dev 3.0.2 headers
//! (`/usr/include/otf2/OTF2_*.h`); the reference types are plain integers there.

use libloading::Library;
use std::ffi::{c_char, c_void};

pub type Archive = c_void;
pub type EvtWriter = c_void;
pub type DefWriter = c_void;
pub type GlobalDefWriter = c_void;
pub type ErrorCode = i32;

/// `OTF2_SUCCESS`.
pub const SUCCESS: ErrorCode = 0;
pub const FILEMODE_WRITE: u8 = 0;
pub const SUBSTRATE_POSIX: u8 = 1;
pub const COMPRESSION_NONE: u8 = 1;
/// `OTF2_FLUSH`: the pre-flush callback lets OTF2 flush its buffers to disk.
pub const FLUSH: u8 = 1;
pub const UNDEFINED_U32: u32 = u32::MAX;
pub const SYSTEM_TREE_ROOT: u32 = 0;
pub const LOCATION_GROUP_TYPE_PROCESS: u8 = 1;
pub const LOCATION_TYPE_CPU_THREAD: u8 = 1;
pub const REGION_ROLE_FUNCTION: u8 = 1;
pub const REGION_ROLE_BARRIER: u8 = 15;
pub const REGION_ROLE_COLL_ALL2ALL: u8 = 25;
pub const REGION_ROLE_FILE_IO: u8 = 27;
pub const REGION_ROLE_POINT2POINT: u8 = 28;
pub const REGION_FLAG_NONE: u32 = 0;
pub const PARADIGM_USER: u8 = 1;
pub const PARADIGM_MPI: u8 = 4;
pub const IO_PARADIGM_CLASS_SERIAL: u8 = 0;
pub const IO_PARADIGM_CLASS_PARALLEL: u8 = 1;
pub const IO_PARADIGM_FLAG_NONE: u32 = 0;
pub const IO_HANDLE_FLAG_NONE: u32 = 0;
pub const IO_OPERATION_MODE_READ: u8 = 0;
pub const IO_OPERATION_MODE_WRITE: u8 = 1;
pub const IO_OPERATION_FLAG_NONE: u32 = 0;
pub const GROUP_TYPE_COMM_LOCATIONS: u8 = 4;
pub const GROUP_TYPE_COMM_GROUP: u8 = 5;
pub const GROUP_FLAG_NONE: u32 = 0;
pub const COMM_FLAG_NONE: u32 = 0;

type PreFlush = extern "C" fn(*mut c_void, u8, u64, *mut c_void, bool) -> u8;
type PostFlush = extern "C" fn(*mut c_void, u8, u64) -> u64;

/// `OTF2_FlushCallbacks`.
#[repr(C)]
pub struct FlushCallbacks {
    pub pre: Option<PreFlush>,
    pub post: Option<PostFlush>,
}

/// Always flush: the export writes each location's events in one go.
pub extern "C" fn pre_flush(_: *mut c_void, _: u8, _: u64, _: *mut c_void, _: bool) -> u8 {
    FLUSH
}

/// The library names tried, most specific first: Debian's runtime package ships only the
/// versioned name, its -dev package the plain one.
pub const LIBRARY_NAMES: &[&str] = &[
    "libotf2.so",
    "libopen-trace-format2.so.10",
    "libopen-trace-format2.so",
];

macro_rules! api {
    ($( $field:ident = $sym:literal : fn($($a:ty),*) -> $r:ty ;)*) => {
        /// The resolved functions; the library stays loaded as long as this lives.
        pub struct Api {
            _lib: Library,
            $( pub $field: unsafe extern "C" fn($($a),*) -> $r, )*
        }

        impl Api {
            /// Loads the library and resolves every function, or says which is missing.
            pub fn load() -> Result<Api, String> {
                let mut tried = Vec::new();
                for name in LIBRARY_NAMES {
                    // SAFETY: loading OTF2 runs its constructors, which only initialise
                    // the library's own state.
                    match unsafe { Library::new(name) } {
                        Ok(lib) => {
                            // SAFETY: each symbol is declared with the signature of the
                            // OTF2 3.x header it comes from.
                            unsafe {
                                return Ok(Api {
                                    $( $field: *lib
                                        .get::<unsafe extern "C" fn($($a),*) -> $r>(concat!($sym, "\0").as_bytes())
                                        .map_err(|e| format!("{name} has no {}: {e} (OTF2 3.x is needed)", $sym))?, )*
                                    _lib: lib,
                                });
                            }
                        }
                        Err(e) => tried.push(format!("{name}: {e}")),
                    }
                }
                Err(tried.join("; "))
            }
        }
    };
}

api! {
    archive_open = "OTF2_Archive_Open": fn(*const c_char, *const c_char, u8, u64, u64, u8, u8) -> *mut Archive;
    archive_close = "OTF2_Archive_Close": fn(*mut Archive) -> ErrorCode;
    set_flush_callbacks = "OTF2_Archive_SetFlushCallbacks": fn(*mut Archive, *const FlushCallbacks, *mut c_void) -> ErrorCode;
    set_serial_collective_callbacks = "OTF2_Archive_SetSerialCollectiveCallbacks": fn(*mut Archive) -> ErrorCode;
    set_creator = "OTF2_Archive_SetCreator": fn(*mut Archive, *const c_char) -> ErrorCode;
    set_description = "OTF2_Archive_SetDescription": fn(*mut Archive, *const c_char) -> ErrorCode;
    open_evt_files = "OTF2_Archive_OpenEvtFiles": fn(*mut Archive) -> ErrorCode;
    close_evt_files = "OTF2_Archive_CloseEvtFiles": fn(*mut Archive) -> ErrorCode;
    open_def_files = "OTF2_Archive_OpenDefFiles": fn(*mut Archive) -> ErrorCode;
    close_def_files = "OTF2_Archive_CloseDefFiles": fn(*mut Archive) -> ErrorCode;
    get_evt_writer = "OTF2_Archive_GetEvtWriter": fn(*mut Archive, u64) -> *mut EvtWriter;
    close_evt_writer = "OTF2_Archive_CloseEvtWriter": fn(*mut Archive, *mut EvtWriter) -> ErrorCode;
    get_def_writer = "OTF2_Archive_GetDefWriter": fn(*mut Archive, u64) -> *mut DefWriter;
    close_def_writer = "OTF2_Archive_CloseDefWriter": fn(*mut Archive, *mut DefWriter) -> ErrorCode;
    get_global_def_writer = "OTF2_Archive_GetGlobalDefWriter": fn(*mut Archive) -> *mut GlobalDefWriter;
    enter = "OTF2_EvtWriter_Enter": fn(*mut EvtWriter, *mut c_void, u64, u32) -> ErrorCode;
    leave = "OTF2_EvtWriter_Leave": fn(*mut EvtWriter, *mut c_void, u64, u32) -> ErrorCode;
    mpi_send = "OTF2_EvtWriter_MpiSend": fn(*mut EvtWriter, *mut c_void, u64, u32, u32, u32, u64) -> ErrorCode;
    mpi_recv = "OTF2_EvtWriter_MpiRecv": fn(*mut EvtWriter, *mut c_void, u64, u32, u32, u32, u64) -> ErrorCode;
    io_begin = "OTF2_EvtWriter_IoOperationBegin": fn(*mut EvtWriter, *mut c_void, u64, u32, u8, u32, u64, u64) -> ErrorCode;
    io_complete = "OTF2_EvtWriter_IoOperationComplete": fn(*mut EvtWriter, *mut c_void, u64, u32, u64, u64) -> ErrorCode;
    def_clock = "OTF2_GlobalDefWriter_WriteClockProperties": fn(*mut GlobalDefWriter, u64, u64, u64, u64) -> ErrorCode;
    def_string = "OTF2_GlobalDefWriter_WriteString": fn(*mut GlobalDefWriter, u32, *const c_char) -> ErrorCode;
    def_system_tree_node = "OTF2_GlobalDefWriter_WriteSystemTreeNode": fn(*mut GlobalDefWriter, u32, u32, u32, u32) -> ErrorCode;
    def_location_group = "OTF2_GlobalDefWriter_WriteLocationGroup": fn(*mut GlobalDefWriter, u32, u32, u8, u32, u32) -> ErrorCode;
    def_location = "OTF2_GlobalDefWriter_WriteLocation": fn(*mut GlobalDefWriter, u64, u32, u8, u64, u32) -> ErrorCode;
    def_region = "OTF2_GlobalDefWriter_WriteRegion": fn(*mut GlobalDefWriter, u32, u32, u32, u32, u8, u8, u32, u32, u32, u32) -> ErrorCode;
    def_group = "OTF2_GlobalDefWriter_WriteGroup": fn(*mut GlobalDefWriter, u32, u32, u8, u8, u32, u32, *const u64) -> ErrorCode;
    def_comm = "OTF2_GlobalDefWriter_WriteComm": fn(*mut GlobalDefWriter, u32, u32, u32, u32, u32) -> ErrorCode;
    def_io_paradigm = "OTF2_GlobalDefWriter_WriteIoParadigm": fn(*mut GlobalDefWriter, u8, u32, u32, u8, u32, u8, *const c_void, *const c_void, *const c_void) -> ErrorCode;
    def_io_regular_file = "OTF2_GlobalDefWriter_WriteIoRegularFile": fn(*mut GlobalDefWriter, u32, u32, u32) -> ErrorCode;
    def_io_handle = "OTF2_GlobalDefWriter_WriteIoHandle": fn(*mut GlobalDefWriter, u32, u32, u32, u8, u32, u32, u32) -> ErrorCode;
}
