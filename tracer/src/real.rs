//! Lazy, cached lookup of the real functions behind the hooks.

/// Looks up `name` (NUL-terminated) in the libraries loaded after this one; an MPI or HDF5
/// name that is not there is looked up in the libraries loaded privately (see
/// [`lookup_local`]).
pub fn lookup(name: &'static str) -> usize {
    debug_assert!(name.ends_with('\0'));
    // SAFETY: `name` is a NUL-terminated static string; dlsym has no other precondition and
    // returns null when the symbol is absent.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) as usize };
    if p == 0 && may_be_private(name) {
        return lookup_local(name);
    }
    p
}

/// MPI's C and Fortran names, HDF5's, PnetCDF's and NetCDF's, the only ones a program may load
/// out of the global scope (Python loads mpi4py's, h5py's and netCDF4's extensions, which link
/// libmpi, libhdf5 and libnetcdf, with `RTLD_LOCAL`).
fn may_be_private(name: &str) -> bool {
    ["PMPI_", "MPI_", "pmpi_", "mpi_", "H5", "ncmpi_", "nc_"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Looks up `name` in every loaded object but this library. A program that loads MPI with
/// `dlopen(RTLD_LOCAL)`, as Python does for mpi4py's extension (which links libmpi), binds
/// its `MPI_Init` to our hook through the global scope, where the preload comes first, but
/// `RTLD_NEXT` from here cannot see the private libmpi behind it. The objects are listed by
/// `dl_iterate_phdr` and opened again with `RTLD_NOLOAD`, which only returns a handle to what
/// is already loaded.
fn lookup_local(name: &'static str) -> usize {
    let mut names: Vec<std::ffi::CString> = Vec::new();
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `names` vector passed below, alive for the whole iteration,
        // and `info` is the loader's description of one object, valid during the callback.
        unsafe {
            let names = &mut *(data as *mut Vec<std::ffi::CString>);
            let n = (*info).dlpi_name;
            if !n.is_null() && *n != 0 {
                names.push(std::ffi::CStr::from_ptr(n).to_owned());
            }
        }
        0
    }
    // SAFETY: the callback only copies names; `names` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut names as *mut Vec<_>).cast()) };
    let own = own_base();
    for n in &names {
        // SAFETY: RTLD_NOLOAD never loads anything; the handle is closed again below.
        let h = unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if h.is_null() {
            continue;
        }
        // SAFETY: `h` is a live handle and `name` is NUL-terminated.
        let p = unsafe { libc::dlsym(h, name.as_ptr().cast()) } as usize;
        // SAFETY: `h` came from the dlopen above (the object stays loaded: it was loaded
        // before, and NOLOAD only added a reference).
        unsafe { libc::dlclose(h) };
        // dlsym on a handle searches its dependencies too, and the preload is never one, but
        // an object linked against it would find our hook: skip anything defined here.
        if p != 0 && base_of(p) != own {
            return p;
        }
    }
    0
}

/// The load address of the object that defines the code at `addr`.
fn base_of(addr: usize) -> usize {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    if unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } == 0 {
        return 0;
    }
    info.dli_fbase as usize
}

/// This library's load address.
fn own_base() -> usize {
    base_of(own_base as fn() -> usize as usize)
}

/// Looks up `name` (NUL-terminated) anywhere in the process.
pub fn lookup_global(name: &'static str) -> usize {
    // SAFETY: as in `lookup`.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast()) as usize }
}

/// `real!("name", fn type)` gives `Option<fn type>` for the next definition of `name`,
/// resolved once and cached in an atomic (hooks can run on any thread, before constructors).
macro_rules! real {
    ($name:expr, $ty:ty) => {{
        static P: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let mut p = P.load(std::sync::atomic::Ordering::Relaxed);
        if p == 0 {
            p = $crate::real::lookup(concat!($name, "\0"));
            P.store(p, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: `p` is null or the address dlsym gave for `$name`, whose C prototype `$ty`
        // matches; `Option<fn>` has the null-pointer niche, so null becomes `None`.
        unsafe { std::mem::transmute::<usize, Option<$ty>>(p) }
    }};
}
pub(crate) use real;
