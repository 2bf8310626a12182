//! Lazy, cached lookup of the real functions behind the hooks.

/// Looks up `name` (NUL-terminated) in the libraries loaded after this one.
pub fn lookup(name: &'static str) -> usize {
    debug_assert!(name.ends_with('\0'));
    // SAFETY: `name` is a NUL-terminated static string; dlsym has no other precondition and
    // returns null when the symbol is absent.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) as usize }
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
