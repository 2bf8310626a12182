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
/// `H5F_ACC_RDONLY`.
pub const H5F_ACC_RDONLY: c_uint = 0;
/// `H5E_DEFAULT`: the current error stack.
pub const H5E_DEFAULT: Hid = 0;
/// `H5I_type_t`: `H5I_GROUP`, `H5I_DATASET`.
pub const H5I_GROUP: c_int = 2;
pub const H5I_DATASET: c_int = 5;
/// `H5_index_t`: `H5_INDEX_NAME`, `H5_INDEX_CRT_ORDER`.
pub const H5_INDEX_NAME: c_int = 0;
pub const H5_INDEX_CRT_ORDER: c_int = 1;
/// `H5_iter_order_t`: `H5_ITER_INC`.
pub const H5_ITER_INC: c_int = 0;

/// `H5G_info_t` (`H5Gget_info`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct GroupInfo {
    /// `H5G_storage_type_t`.
    pub storage_type: c_int,
    pub nlinks: Hsize,
    pub max_corder: i64,
    /// `hbool_t`: C99 `bool` in 1.10 (`H5_HAVE_STDBOOL_H`).
    pub mounted: bool,
}

/// `H5E_auto2_t`: the error stack's automatic printer (NULL for none).
pub type ErrorHandler = Option<unsafe extern "C" fn(Hid, *mut c_void) -> Herr>;

/// Where the parallel HDF5 library is: `$IOTREX_HDF5_LIB`, else Debian's Open MPI build as
/// `ldconfig -p` lists it, else its path in Debian's layout.
pub fn library_path() -> PathBuf {
    env_or_ldconfig("IOTREX_HDF5_LIB", "libhdf5_openmpi.so")
        .unwrap_or_else(|| PathBuf::from("/usr/lib/x86_64-linux-gnu/hdf5/openmpi/libhdf5.so"))
}

/// Where the parallel NetCDF library is: `$IOTREX_NETCDF_LIB`, else Debian's MPI build as
/// `ldconfig -p` lists it, else its path in Debian's layout (`libnetcdf-mpi-19`).
pub fn netcdf_library_path() -> PathBuf {
    env_or_ldconfig("IOTREX_NETCDF_LIB", "libnetcdf_mpi.so")
        .unwrap_or_else(|| PathBuf::from("/usr/lib/x86_64-linux-gnu/libnetcdf_mpi.so.19"))
}

/// The path in environment variable `var` (when set and not empty), else library `name` as
/// `ldconfig -p` lists it: the unversioned name (the -dev package's link) first, then a
/// versioned one (`name.N`).
fn env_or_ldconfig(var: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let out = Command::new("ldconfig").arg("-p").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let versioned = format!("{name}.");
    // `\tlibhdf5_openmpi.so.103 (libc6,x86-64) => /lib/x86_64-linux-gnu/libhdf5_openmpi.so.103`.
    let found: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| {
            let (lib, path) = l.trim().split_once(" => ")?;
            let lib = lib.split_whitespace().next()?;
            Some((lib, path.trim()))
        })
        .filter(|(lib, _)| *lib == name || lib.starts_with(&versioned))
        .collect();
    let pick = found.iter().find(|(l, _)| *l == name).or(found.first());
    pick.map(|(_, path)| PathBuf::from(path))
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
                // SAFETY: each symbol is declared with the prototype of the header it comes
                // from: HDF5 1.10's, MPI's, NetCDF 4.9's (`netcdf.h`, `netcdf_par.h`).
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
    // The storage walk of a NetCDF plan's files (`netcdf::storage`).
    fopen = "H5Fopen": fn(*const c_char, c_uint, Hid) -> Hid;
    fclose = "H5Fclose": fn(Hid) -> Herr;
    oopen = "H5Oopen": fn(Hid, *const c_char, Hid) -> Hid;
    oclose = "H5Oclose": fn(Hid) -> Herr;
    iget_type = "H5Iget_type": fn(Hid) -> c_int;
    gget_info = "H5Gget_info": fn(Hid, *mut GroupInfo) -> Herr;
    lget_name_by_idx = "H5Lget_name_by_idx": fn(Hid, *const c_char, c_int, c_int, Hsize, *mut c_char, usize, Hid) -> isize;
    eget_auto2 = "H5Eget_auto2": fn(Hid, *mut ErrorHandler, *mut *mut c_void) -> Herr;
    eset_auto2 = "H5Eset_auto2": fn(Hid, ErrorHandler, *mut c_void) -> Herr;
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

api!(NcTraced, "NetCDF's calls the oracle replays, looked up in the global scope (through the tracer's hooks when it is preloaded), as [`Traced`].", {
    create = "nc_create": fn(*const c_char, c_int, *mut c_int) -> c_int;
    create_par = "nc_create_par": fn(*const c_char, c_int, *mut c_void, *mut c_void, *mut c_int) -> c_int;
    open = "nc_open": fn(*const c_char, c_int, *mut c_int) -> c_int;
    open_par = "nc_open_par": fn(*const c_char, c_int, *mut c_void, *mut c_void, *mut c_int) -> c_int;
    close = "nc_close": fn(c_int) -> c_int;
    enddef = "nc_enddef": fn(c_int) -> c_int;
    redef = "nc_redef": fn(c_int) -> c_int;
    sync = "nc_sync": fn(c_int) -> c_int;
    def_dim = "nc_def_dim": fn(c_int, *const c_char, usize, *mut c_int) -> c_int;
    def_var = "nc_def_var": fn(c_int, *const c_char, c_int, c_int, *const c_int, *mut c_int) -> c_int;
    def_var_chunking = "nc_def_var_chunking": fn(c_int, c_int, c_int, *const usize) -> c_int;
    var_par_access = "nc_var_par_access": fn(c_int, c_int, c_int) -> c_int;
    put_att = "nc_put_att": fn(c_int, c_int, *const c_char, c_int, usize, *const c_void) -> c_int;
    put_vara = "nc_put_vara": fn(c_int, c_int, *const usize, *const usize, *const c_void) -> c_int;
    put_vars = "nc_put_vars": fn(c_int, c_int, *const usize, *const usize, *const isize, *const c_void) -> c_int;
});

api!(NcDirect, "NetCDF's own functions, past any hook, as [`Direct`].", {
    strerror = "nc_strerror": fn(c_int) -> *const c_char;
});

/// Parallel NetCDF, loaded after [`Hdf5`] (whose library it uses).
pub struct Netcdf {
    pub traced: NcTraced,
    pub direct: NcDirect,
    _lib: Library,
}

impl Netcdf {
    /// Loads the library at `path` into the global scope (after parallel HDF5, so that the
    /// `libhdf5_openmpi` it needs is the one already there) and resolves what the oracle calls.
    pub fn load(path: &Path) -> Result<Netcdf, String> {
        let from = path.display().to_string();
        // SAFETY: loading NetCDF runs its constructors, which only set up its own state;
        // RTLD_GLOBAL so that the global lookups below (and the tracer's `dlsym(RTLD_NEXT)`)
        // find it.
        let lib = unsafe { Library::open(Some(path), RTLD_GLOBAL | RTLD_NOW) }
            .map_err(|e| format!("cannot load NetCDF {from} (set IOTREX_NETCDF_LIB): {e}"))?;
        // SAFETY: only whether the symbol exists is asked.
        if unsafe { lib.get::<*mut c_void>(b"nc_create_par\0") }.is_err() {
            return Err(format!(
                "{from} is not a parallel NetCDF (it has no nc_create_par): the oracle replays NetCDF calls only through NetCDF built on parallel HDF5 (Debian's libnetcdf-mpi; set IOTREX_NETCDF_LIB to one)"
            ));
        }
        let traced = NcTraced::resolve(
            &Library::this(),
            &format!("the process (with {from} loaded)"),
        )?;
        let direct = NcDirect::resolve(&lib, &from)?;
        Ok(Netcdf {
            traced,
            direct,
            _lib: lib,
        })
    }

    /// NetCDF's text for status `status`.
    pub fn strerror(&self, status: c_int) -> String {
        // SAFETY: nc_strerror returns a static NUL-terminated string for any status.
        let p = unsafe { (self.direct.strerror)(status) };
        if p.is_null() {
            return format!("NetCDF status {status}");
        }
        // SAFETY: not null, NUL-terminated, static.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }
}
