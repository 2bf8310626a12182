//! The recording core every MPI wrapper goes through, and `mpi_hooks!`, the table that
//! generates the wrappers.

use super::*;

/// Runs an MPI call and records it. In MPI-IO calls (the op's layer), POSIX calls made by the
/// library become the event's children; in other calls they are not recorded, except the
/// asynchronous requests on traced files the call collects (a nonblocking MPI-IO transfer
/// completed in `MPI_Wait`: `posix_more`'s `aio_return` hook records them into this call's
/// frame). Made by HDF5 or NetCDF inside a traced call of theirs, the call is that call's
/// child. `path` is the file a call names (`MPI_File_open`, `MPI_File_delete`).
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
    let t0 = crate::waits::call_start(child);
    open_frame(t0);
    if io {
        if !child {
            crate::throttle::pause();
        }
        g.switch(IN_MPIIO);
    }
    let r = call();
    let t1 = now_ns();
    g.switch(BUSY);
    let children = close_frame();
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
/// the Fortran conversion of request, status and handle arrays needs) and, through its `F08`
/// conversion, the hook of MPICH's `mpi_f08` procedure (`mpi_x_f08_`, or `mpi_x_f08ts_` when a
/// kind is a choice buffer: `fortran_f08`). A kind is a name, generic over at most one
/// handle kind (`New<Request>`), so that the generated hooks can tell buffers by name. `let`
/// statements run before the call, on the application's arguments, and may rebind them (the
/// forwarded call uses the latest binding); `record` builds the event's parameters with the
/// op's generated constructor from what the kinds record (`comm.id(st)`, `peer.rel(comm)`,
/// ...), `r` being the call's return code.
macro_rules! mpi_hooks {
    ($(
        $(#[$doc:meta])*
        $cname:ident, $fname:tt (
            $($arg:ident: $kind:ident $(<$g:ident>)? $([$n:ident])?),* $(,)?
        ) => $op:ident
            $(let $p:pat = $e:expr;)*
            $(path $path:expr;)?
            record |$st:pat_param, $r:pat_param| $body:expr;
            $(@after |$ra:pat_param| $after:expr;)?
    )*) => {$( paste::paste! {
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $cname($($arg: $kind $(<$g>)?),*) -> c_int {
            let f = pmpi!(
                concat!("P", stringify!($cname)),
                unsafe extern "C" fn($($kind $(<$g>)?),*) -> c_int
            );
            // SAFETY: forwarding the application's arguments, of the C types MPI declares.
            let call = |$($arg),*| unsafe { f($($arg),*) };
            // SAFETY: the application's arguments.
            unsafe { [<$cname _via>](call, $($arg),*) }
        }

        #[doc = concat!("`", stringify!($cname), "` recorded around `call` instead of its `PMPI_*`: ")]
        /// an `mpi_f08` hook forwards a call only MPICH's own procedure can make (a
        /// non-contiguous buffer) and records it as this one.
        #[inline(always)]
        pub(crate) unsafe fn [<$cname _via>](
            call: impl FnOnce($($kind $(<$g>)?),*) -> c_int,
            $($arg: $kind $(<$g>)?),*
        ) -> c_int {
            $(let $p = $e;)*
            let rc = $crate::mpi::record::mpi_call(
                rsd::Op::$op,
                None $(.or($path))?,
                || call($($arg),*),
                |$st, $r| $body,
            );
            // What the tracer reads from MPI after the call, outside the state's lock.
            $({
                let $ra = rc;
                $after;
            })?
            rc
        }
        fortran_hook!($fname, $cname, ($($arg: [$kind $(<$g>)?] $kind $([$n])?),*));
    })*};
}

/// The Fortran hook of an `mpi_hooks!` entry: every argument by reference and converted by its
/// kind, the C wrapper called (which records and forwards), outputs converted back, `ierr` set.
/// Then the `mpi_f08` hook (`f08_hook!`). Each argument comes as `name: [type] kind`.
macro_rules! fortran_hook {
    (_, $cname:ident, ($($t:tt)*)) => {};
    ($fname:ident, $cname:ident, ($($arg:ident: [$ty:ty] $kind:ident $([$n:ident])?),*)) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $fname(
            $($arg: <$ty as $crate::mpi::kinds::Fortran>::F,)*
            ierr: *mut $crate::mpi::fortran::Fint,
        ) {
            use $crate::mpi::kinds::Fortran;
            $(let mut $arg = <$ty as Fortran>::from_f($arg);)*
            $($(<$ty as Fortran>::set_len(&mut $arg, $crate::mpi::kinds::Len::array_len(&$n));)?)*
            // SAFETY: the program's arguments, each converted to its C type by its kind.
            let rc = unsafe { $cname($(<$ty as Fortran>::c(&mut $arg)),*) };
            $(<$ty as Fortran>::back(&$arg);)*
            $crate::mpi::fortran::set(ierr, rc);
        }
        paste::paste! {
            // `ompi_x_f` and, for those with a LOGICAL argument, the profiling name `pmpi_x_`:
            // what Open MPI's mpi_f08 procedures call (see `fortran.rs`).
            fortran_spellings!($fname => [<$cname:upper>], [<$fname _>], [<o $fname f>], [<p $fname>]);
        }
        f08_hook!(@scan [$($kind)*] $fname, $cname, ($($arg: [$ty] $([$n])?),*));
    };
}

/// The hook of MPICH's `mpi_f08` procedure of an `mpi_hooks!` entry (`fortran_f08`): named
/// `mpi_x_f08ts_` when a kind is a choice buffer (MPICH's generator's rule), `mpi_x_f08_`
/// otherwise. Each argument is converted by its kind's `F08` conversion and the C wrapper
/// called, as the mpif.h hook does; a call with a non-contiguous buffer is made by MPICH's
/// own procedure (which builds a datatype for it) inside the C wrapper's recording
/// (`_via`), each argument pointing where the C view reads. Under any other binding (Open
/// MPI's `mpi_barrier_f08_` has the same name) the call goes on to the binding untouched.
macro_rules! f08_hook {
    (@scan [] $($e:tt)*) => { f08_hook!(@gen f08, direct, $($e)*); };
    (@scan [Buf $($k:ident)*] $($e:tt)*) => { f08_hook!(@gen f08ts, choice, $($e)*); };
    (@scan [BufMut $($k:ident)*] $($e:tt)*) => { f08_hook!(@gen f08ts, choice, $($e)*); };
    (@scan [IoBuf $($k:ident)*] $($e:tt)*) => { f08_hook!(@gen f08ts, choice, $($e)*); };
    (@scan [IoBufMut $($k:ident)*] $($e:tt)*) => { f08_hook!(@gen f08ts, choice, $($e)*); };
    (@scan [$k0:ident $($k:ident)*] $($e:tt)*) => { f08_hook!(@scan [$($k)*] $($e)*); };
    (@gen $suffix:ident, $how:ident, $fname:ident, $cname:ident,
        ($($arg:ident: [$ty:ty] $([$n:ident])?),*)) => { paste::paste! {
        #[doc = concat!("MPICH's `use mpi_f08` binding of `", stringify!($cname), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<$fname $suffix _>](
            $($arg: <$ty as $crate::mpi::fortran_f08::F08>::F,)*
            ierr: *mut $crate::mpi::fortran::Fint,
        ) {
            use $crate::mpi::fortran_f08::F08;
            type Real = unsafe extern "C" fn(
                $(<$ty as F08>::F,)* *mut $crate::mpi::fortran::Fint
            );
            let Some(real) = real!(stringify!([<$fname $suffix _>]), Real) else {
                return $crate::mpi::fortran::set(ierr, MPI_ERR_OTHER);
            };
            if !$crate::mpi::fortran_f08::mpich() {
                // SAFETY: forwarding the program's arguments to the binding's own procedure.
                return unsafe { real($($arg,)* ierr) };
            }
            $(let mut [<t_ $arg>] = <$ty as F08>::from_f08($arg);)*
            $($(<$ty as F08>::set_len(
                &mut [<t_ $arg>],
                $crate::mpi::kinds::Len::array_len(&[<t_ $n>]),
            );)?)*
            let rc = f08_hook!(@call $how, real, $cname,
                ($($arg: [$ty] [<t_ $arg>] [<g_ $arg>] [<c_ $arg>] [<_ $arg>]),*));
            $(<$ty as F08>::back(&[<t_ $arg>]);)*
            $crate::mpi::fortran::set(ierr, rc);
        }
    }};
    (@call direct, $real:ident, $cname:ident,
        ($($arg:ident: [$ty:ty] $t:ident $g:ident $c:ident $u:ident),*)) => {
        // SAFETY: the program's arguments, each converted to its C type by its kind.
        unsafe { $cname($(<$ty as F08>::c(&mut $t)),*) }
    };
    (@call choice, $real:ident, $cname:ident,
        ($($arg:ident: [$ty:ty] $t:ident $g:ident $c:ident $u:ident),*)) => {
        if true $(&& <$ty as F08>::direct(&$t))* {
            // SAFETY: the program's arguments, each converted to its C type by its kind.
            unsafe { $cname($(<$ty as F08>::c(&mut $t)),*) }
        } else {
            use $crate::mpi::fortran_f08::F08Fwd;
            $(let ($g, $c) = <$ty as F08Fwd>::fwd($arg, &mut $t);)*
            let call = |$($u),*| {
                let mut e: $crate::mpi::fortran::Fint = 0;
                // SAFETY: MPICH's procedure with the program's arguments, its outputs pointing
                // where the C view reads them.
                unsafe { $real($($g,)* &mut e) };
                e
            };
            // SAFETY: the C view of the same arguments.
            unsafe { paste::paste!([<$cname _via>])(call, $($c),*) }
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
