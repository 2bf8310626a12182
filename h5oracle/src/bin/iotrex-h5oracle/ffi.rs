//! The part of parallel HDF5's C API (1.10 ABI: `hid_t` 64-bit) and of Open MPI's the oracle
//! calls, resolved at run time: nothing links HDF5 or MPI.
//!
//! The library is opened `RTLD_GLOBAL | RTLD_NOW`, which puts it and its dependencies (libmpi)
//! in the process's global scope. Two lookups then matter:
//!
//! - [`Traced`]: the calls a plan step replays, looked up in the global scope, where the
//!   iotrex tracer (preloaded by `iotrex trace`) comes before HDF5: each goes through the
//!   tracer's hook and is recorded as the program's call, which is how [`h5oracle::run`]
//!   reads the oracle's I/O back. `MPI_Init` and `MPI_Finalize` too (the tracer starts and
//!   writes the trace there).
//! - [`Direct`]: everything else (property lists, types, the storage queries, the final
//!   releases), looked up in the HDF5 library's own handle, which bypasses the preload: the
//!   oracle's trace holds only the replayed calls.

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `hid_t`.
pub type Hid = i64;
/// `herr_t`.
pub type Herr = c_int;
/// `hsize_t`.
pub type Hsize = u64;
/// `haddr_t`.
pub type Haddr = u64;

/// `H5P_DEFAULT`.
pub const H5P_DEFAULT: Hid = 0;
/// `H5S_UNLIMITED`.
pub const H5S_UNLIMITED: Hsize = u64::MAX;
/// `HADDR_UNDEF`: storage not allocated.
pub const HADDR_UNDEF: Haddr = u64::MAX;
/// `H5T_OPAQUE` of `H5T_class_t`.
pub const H5T_OPAQUE: c_int = 5;
/// `H5D_layout_t`: `H5D_CONTIGUOUS`, `H5D_CHUNKED`.
pub const H5D_CONTIGUOUS: c_int = 1;
pub const H5D_CHUNKED: c_int = 2;

/// Where the parallel HDF5 library is: `$IOTREX_HDF5_LIB`, else Debian's Open MPI build as
/// `ldconfig -p` lists it, else its path in Debian's layout.
pub fn library_path() -> PathBuf {
    if let Some(p) = std::env::var_os("IOTREX_HDF5_LIB").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if let Ok(out) = Command::new("ldconfig").arg("-p").output() {
        let text = String::from_utf8_lossy(&out.stdout);
        // `\tlibhdf5_openmpi.so.103 (libc6,x86-64) => /lib/x86_64-linux-gnu/libhdf5_openmpi.so.103`:
        // the unversioned name (the -dev package's link) first, then a versioned one.
        let found: Vec<(&str, &str)> = text
            .lines()
            .filter_map(|l| {
                let (name, path) = l.trim().split_once(" => ")?;
                let name = name.split_whitespace().next()?;
                Some((name, path.trim()))
            })
            .filter(|(name, _)| {
                *name == "libhdf5_openmpi.so" || name.starts_with("libhdf5_openmpi.so.")
            })
            .collect();
        let pick = found
            .iter()
            .find(|(n, _)| *n == "libhdf5_openmpi.so")
            .or(found.first());
        if let Some((_, path)) = pick {
            return PathBuf::from(path);
        }
    }
    PathBuf::from("/usr/lib/x86_64-linux-gnu/hdf5/openmpi/libhdf5.so")
}

macro_rules! api {
    ($name:ident, $doc:literal, { $( $field:ident = $sym:literal : fn($($a:ty),*) -> $r:ty ;)* }) => {
        #[doc = $doc]
        pub struct $name {
            $( pub $field: unsafe extern "C" fn($($a),*) -> $r, )*
        }

        impl $name {
            /// Resolves every function in `lib`, or says which is missing.
            fn resolve(lib: &Library, from: &str) -> Result<$name, String> {
                // SAFETY: each symbol is declared with the prototype of HDF5 1.10's (or MPI's)
                // header it comes from.
                unsafe {
                    Ok($name {
                        $( $field: *lib
                            .get::<unsafe extern "C" fn($($a),*) -> $r>(concat!($sym, "\0").as_bytes())
                            .map_err(|e| format!("{from} has no {}: {e}", $sym))?, )*
                    })
                }
            }
        }
    };
}

api!(Traced, "The calls the oracle replays (through the tracer's hooks when it is preloaded).", {
    mpi_init = "MPI_Init": fn(*mut c_int, *mut *mut *mut c_char) -> c_int;
    mpi_finalize = "MPI_Finalize": fn() -> c_int;
    pset_fapl_mpio = "H5Pset_fapl_mpio": fn(Hid, *mut c_void, *mut c_void) -> Herr;
    fcreate = "H5Fcreate": fn(*const c_char, c_uint, Hid, Hid) -> Hid;
    fopen = "H5Fopen": fn(*const c_char, c_uint, Hid) -> Hid;
    fclose = "H5Fclose": fn(Hid) -> Herr;
    fflush = "H5Fflush": fn(Hid, c_int) -> Herr;
    screate_simple = "H5Screate_simple": fn(c_int, *const Hsize, *const Hsize) -> Hid;
    pset_chunk = "H5Pset_chunk": fn(Hid, c_int, *const Hsize) -> Herr;
    dcreate2 = "H5Dcreate2": fn(Hid, *const c_char, Hid, Hid, Hid, Hid, Hid) -> Hid;
    dopen2 = "H5Dopen2": fn(Hid, *const c_char, Hid) -> Hid;
    dclose = "H5Dclose": fn(Hid) -> Herr;
    dset_extent = "H5Dset_extent": fn(Hid, *const Hsize) -> Herr;
    acreate2 = "H5Acreate2": fn(Hid, *const c_char, Hid, Hid, Hid, Hid) -> Hid;
    awrite = "H5Awrite": fn(Hid, Hid, *const c_void) -> Herr;
    aclose = "H5Aclose": fn(Hid) -> Herr;
    gcreate2 = "H5Gcreate2": fn(Hid, *const c_char, Hid, Hid, Hid) -> Hid;
    gclose = "H5Gclose": fn(Hid) -> Herr;
});

api!(Direct, "HDF5's own functions, past any hook: what the oracle does besides replaying.", {
    open = "H5open": fn() -> Herr;
    get_libversion = "H5get_libversion": fn(*mut c_uint, *mut c_uint, *mut c_uint) -> Herr;
    pcreate = "H5Pcreate": fn(Hid) -> Hid;
    pclose = "H5Pclose": fn(Hid) -> Herr;
    pset_create_intermediate_group = "H5Pset_create_intermediate_group": fn(Hid, c_uint) -> Herr;
    pget_layout = "H5Pget_layout": fn(Hid) -> c_int;
    tcreate = "H5Tcreate": fn(c_int, usize) -> Hid;
    idec_ref = "H5Idec_ref": fn(Hid) -> c_int;
    dget_create_plist = "H5Dget_create_plist": fn(Hid) -> Hid;
    dget_offset = "H5Dget_offset": fn(Hid) -> Haddr;
    dget_storage_size = "H5Dget_storage_size": fn(Hid) -> Hsize;
    dget_space = "H5Dget_space": fn(Hid) -> Hid;
    sget_simple_extent_ndims = "H5Sget_simple_extent_ndims": fn(Hid) -> c_int;
    sclose = "H5Sclose": fn(Hid) -> Herr;
});

/// `H5Dget_num_chunks` and `H5Dget_chunk_info` (HDF5 1.10.5 and later).
pub struct ChunkQueries {
    pub num_chunks: unsafe extern "C" fn(Hid, Hid, *mut Hsize) -> Herr,
    #[allow(clippy::type_complexity)]
    pub chunk_info: unsafe extern "C" fn(
        Hid,
        Hid,
        Hsize,
        *mut Hsize,
        *mut c_uint,
        *mut Haddr,
        *mut Hsize,
    ) -> Herr,
}

/// The global identifiers `H5open` sets (property-list classes, native types).
pub struct Globals {
    pub file_access: Hid,
    pub dataset_create: Hid,
    pub link_create: Hid,
    pub native_schar: Hid,
    pub native_short: Hid,
    pub native_int: Hid,
    pub native_double: Hid,
}

/// Parallel HDF5 and MPI, loaded.
pub struct Hdf5 {
    /// Which library.
    pub path: PathBuf,
    pub traced: Traced,
    pub direct: Direct,
    pub chunks: Option<ChunkQueries>,
    /// `MPI_COMM_WORLD` and `MPI_INFO_NULL` (Open MPI's are the addresses of its globals).
    pub comm_world: *mut c_void,
    pub info_null: *mut c_void,
    lib: Library,
    _global: Library,
}

impl Hdf5 {
    /// Loads the library at `path` into the global scope and resolves what the oracle calls.
    pub fn load(path: &Path) -> Result<Hdf5, String> {
        let from = path.display().to_string();
        // SAFETY: loading parallel HDF5 runs its and MPI's constructors, which only set up
        // their own state; RTLD_GLOBAL so that the global lookups below (and the tracer's
        // `dlsym(RTLD_NEXT)`) find it.
        let lib = unsafe { Library::open(Some(path), RTLD_GLOBAL | RTLD_NOW) }
            .map_err(|e| format!("cannot load parallel HDF5 {from} (set IOTREX_HDF5_LIB): {e}"))?;
        // SAFETY: only whether the symbol exists is asked.
        if unsafe { lib.get::<*mut c_void>(b"H5Pset_fapl_mpio\0") }.is_err() {
            return Err(format!(
                "{from} is not a parallel HDF5 (it has no H5Pset_fapl_mpio): the HDF5 oracle supports only Open MPI's parallel HDF5 (Debian's libhdf5-openmpi; set IOTREX_HDF5_LIB to one)"
            ));
        }
        let global = Library::this();
        let traced = Traced::resolve(&global, &format!("the process (with {from} loaded)"))?;
        let direct = Direct::resolve(&lib, &from)?;
        // SAFETY: as in `api!`: the 1.10.5 prototypes.
        let chunks = unsafe {
            match (
                lib.get::<unsafe extern "C" fn(Hid, Hid, *mut Hsize) -> Herr>(
                    b"H5Dget_num_chunks\0",
                ),
                lib.get(b"H5Dget_chunk_info\0"),
            ) {
                (Ok(n), Ok(i)) => Some(ChunkQueries {
                    num_chunks: *n,
                    chunk_info: *i,
                }),
                _ => None,
            }
        };
        let address = |l: &Library, name: &[u8]| -> Option<*mut c_void> {
            // SAFETY: only the symbol's address is taken, not what it points to.
            unsafe { l.get::<*mut c_void>(name).ok().map(|s| *s) }
        };
        let (Some(comm_world), Some(info_null)) = (
            address(&global, b"ompi_mpi_comm_world\0"),
            address(&global, b"ompi_mpi_info_null\0"),
        ) else {
            return Err(format!(
                "{from} is not built on Open MPI (no ompi_mpi_comm_world or ompi_mpi_info_null): the HDF5 oracle supports only Open MPI's parallel HDF5 (set IOTREX_HDF5_LIB to one)"
            ));
        };
        Ok(Hdf5 {
            path: path.to_path_buf(),
            traced,
            direct,
            chunks,
            comm_world,
            info_null,
            lib,
            _global: global,
        })
    }

    /// Initialises HDF5 (after `MPI_Init`: parallel HDF5 then closes itself inside
    /// `MPI_Finalize`, while MPI still runs) and reads the globals it sets.
    pub fn open(&self) -> Result<Globals, String> {
        // SAFETY: H5open takes nothing.
        if unsafe { (self.direct.open)() } < 0 {
            return Err(format!("H5open failed in {}", self.path.display()));
        }
        let read = |name: &str| -> Result<Hid, String> {
            let sym = format!("{name}\0");
            // SAFETY: each global is a `hid_t` HDF5 defines and H5open has set.
            unsafe {
                self.lib
                    .get::<*const Hid>(sym.as_bytes())
                    .map(|p| **p)
                    .map_err(|e| format!("{} has no {name}: {e}", self.path.display()))
            }
        };
        Ok(Globals {
            file_access: read("H5P_CLS_FILE_ACCESS_ID_g")?,
            dataset_create: read("H5P_CLS_DATASET_CREATE_ID_g")?,
            link_create: read("H5P_CLS_LINK_CREATE_ID_g")?,
            native_schar: read("H5T_NATIVE_SCHAR_g")?,
            native_short: read("H5T_NATIVE_SHORT_g")?,
            native_int: read("H5T_NATIVE_INT_g")?,
            native_double: read("H5T_NATIVE_DOUBLE_g")?,
        })
    }

    /// The library's version, `1.10.8`.
    pub fn version(&self) -> Result<String, String> {
        let (mut a, mut b, mut c) = (0, 0, 0);
        // SAFETY: three out-pointers to unsigned ints.
        if unsafe { (self.direct.get_libversion)(&mut a, &mut b, &mut c) } < 0 {
            return Err(format!(
                "H5get_libversion failed in {}",
                self.path.display()
            ));
        }
        Ok(format!("{a}.{b}.{c}"))
    }
}
