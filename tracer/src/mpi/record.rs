//! The recording core every MPI wrapper goes through, and `mpi_hooks!`, the table that
//! generates the wrappers.

use super::*;

/// Runs an MPI call and records it. In MPI-IO calls (the op's layer), POSIX calls made by the
/// library become the event's children; in other calls they are not recorded. Made by HDF5
/// or NetCDF inside a traced call of theirs, the call is that call's child. `path` is the
/// file a call names (`MPI_File_open`, `MPI_File_delete`).
#[inline]
pub(crate) fn mpi_call(
    op: Op,
    path: Option<String>,
    call: impl FnOnce() -> c_int,
    build: impl FnOnce(&mut State, c_int) -> Vec<i64>,
) -> c_int {
    // Inside a traced HDF5 call, the library's MPI calls are that call's children.
    let child = match crate::guard::mode() {
        IDLE => false,
        IN_HDF5 | crate::guard::IN_NETCDF => true,
        _ => return call(),
    };
    if !RECORDING.load(Ordering::Relaxed) {
        return call();
    }
    let io = op.layer() == rsd::op::Layer::MpiIo;
    let g = Enter::new(BUSY);
    let sig = signature();
    let t0 = now_ns();
    if io {
        open_frame(t0);
        g.switch(IN_MPIIO);
    }
    let r = call();
    let t1 = now_ns();
    g.switch(BUSY);
    let children = if io { close_frame() } else { Vec::new() };
    record_nested(Call { op, sig, t0, t1 }, child, children, |st| {
        Some((build(st, r), path))
    });
    r
}

/// The table of MPI wrappers. One entry per MPI call:
///
/// ```text
/// /// doc
/// MPI_Bcast, mpi_bcast_ (buf: BufMut, count: Count, dt: Datatype, root: Int, comm: Comm) => Bcast
///     let h = ...;                 // optional: read before the call (handles MPI resets)
///     path cpath(name);            // optional: the file the call names
///     record |st, r| args::bcast(...);
/// ```
///
/// The argument list is the C signature, stated once: every argument kind (`kinds`) is a
/// `#[repr(transparent)]` newtype of the C type, so the list gives the exported `MPI_X`, the type
/// of the `PMPI_X` it forwards to and, through each kind's `Fortran` conversion, the Fortran
/// hook (`mpi_x_`, or `_` for none; `[n]` names the argument holding an array's length, which
/// the Fortran conversion of request, status and handle arrays needs). `let` statements run
/// before the call, on the application's arguments, and may rebind them (the forwarded call
/// uses the latest binding); `record` builds the event's parameters with the op's generated
/// constructor from what the kinds record (`comm.id(st)`, `peer.rel(comm)`, ...), `r` being the
/// call's return code.
macro_rules! mpi_hooks {
    ($(
        $(#[$doc:meta])*
        $cname:ident, $fname:tt ($($arg:ident: $kind:ty $([$n:ident])?),* $(,)?) => $op:ident
            $(let $p:pat = $e:expr;)*
            $(path $path:expr;)?
            record |$st:pat_param, $r:pat_param| $body:expr;
            $(@after |$ra:pat_param| $after:expr;)?
    )*) => {$(
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $cname($($arg: $kind),*) -> c_int {
            let f = pmpi!(
                concat!("P", stringify!($cname)),
                unsafe extern "C" fn($($kind),*) -> c_int
            );
            $(let $p = $e;)*
            let rc = $crate::mpi::record::mpi_call(
                rsd::Op::$op,
                None $(.or($path))?,
                // SAFETY: forwarding the application's arguments, of the C types MPI declares.
                || unsafe { f($($arg),*) },
                |$st, $r| $body,
            );
            // What the tracer reads from MPI after the call, outside the state's lock.
            $({
                let $ra = rc;
                $after;
            })?
            rc
        }
        fortran_hook!($fname, $cname, ($($arg: $kind $([$n])?),*));
    )*};
}

/// The Fortran hook of an `mpi_hooks!` entry: every argument by reference and converted by its
/// kind, the C wrapper called (which records and forwards), outputs converted back, `ierr` set.
macro_rules! fortran_hook {
    (_, $cname:ident, ($($t:tt)*)) => {};
    ($fname:ident, $cname:ident, ($($arg:ident: $kind:ty $([$n:ident])?),*)) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $fname(
            $($arg: <$kind as $crate::mpi::kinds::Fortran>::F,)*
            ierr: *mut $crate::mpi::fortran::Fint,
        ) {
            use $crate::mpi::kinds::Fortran;
            $(let mut $arg = <$kind as Fortran>::from_f($arg);)*
            $($(<$kind as Fortran>::set_len(&mut $arg, $crate::mpi::kinds::Len::array_len(&$n));)?)*
            // SAFETY: the program's arguments, each converted to its C type by its kind.
            let rc = unsafe { $cname($(<$kind as Fortran>::c(&mut $arg)),*) };
            $(<$kind as Fortran>::back(&$arg);)*
            $crate::mpi::fortran::set(ierr, rc);
        }
        paste::paste! {
            // `ompi_x_f`: what Open MPI's mpi_f08 procedures call (see `fortran.rs`).
            fortran_spellings!($fname => [<$cname:upper>], [<$fname _>], [<o $fname f>]);
        }
    };
}

/// The other spellings of a Fortran hook, for compilers that do not use gfortran's one
/// trailing underscore: upper case (`MPI_BCAST`) and two underscores (`mpi_bcast__`, g77 and
/// `-fsecond-underscore`), as Open MPI and MPICH define them. Each is a naked tail jump to
/// the hook, whatever its arguments (hidden string lengths included).
macro_rules! fortran_spellings {
    ($($f:ident => $($alias:ident),+;)*) => {$($(
        #[doc = concat!("Another spelling of `", stringify!($f), "`.")]
        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $alias() {
            core::arch::naked_asm!("jmp {f}", f = sym $f);
        }
    )+)*};
    ($f:ident => $($alias:ident),+) => {
        fortran_spellings!($f => $($alias),+;);
    };
}
