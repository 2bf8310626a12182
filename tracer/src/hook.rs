//! `libc_hooks!`, the table that generates the POSIX and stdio hooks.
//!
//! One entry per call, and per group of entry points that share a C signature and a recording
//! (`pread | pread64`):
//!
//! ```text
//! /// doc
//! pread | pread64 (fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t
//!     => on_handle(fd, Pread)     // the runner, the argument it keys on, the op recorded
//!     let x = ...;                // optional: computed before the call
//!     ret |r| ...;                // optional: the result as recorded (default `r as i64`)
//!     |id, r| [id, n as i64, off, r];
//! ```
//!
//! The argument list states the C signature once: it gives the exported hook and the type of
//! the real function, looked up under the hook's own name (`dlsym(RTLD_NEXT)`). `else value`
//! after the return type is what the hook returns when there is no real function (default:
//! -1 with `errno` = `ENOSYS`). The runner (`posix::on_handle` for a descriptor or a stream,
//! `posix::path_op` for a path) does the guard, the timing and the recording; the last closure
//! builds the parameters from what it gives (the descriptor's or stream's id, or the state) and
//! the recorded result.
macro_rules! libc_hooks {
    ($(
        $(#[$doc:meta])*
        $($name:ident)|+ ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $(, else $missing:expr)?
            => $runner:ident($subject:expr, $op:ident)
            $(let $p:pat = $e:expr;)*
            $(ret $retf:expr;)?
            |$a:pat_param, $b:pat_param| $params:expr;
    )*) => {$(
        libc_hooks!(@each [$($name)*] {$(#[$doc])*} ($($arg: $ty),*) -> $ret, ($($missing)?),
            $runner($subject, $op), {$(let $p = $e;)*}, ($($retf)?), |$a, $b| $params);
    )*};
    (@each [$name:ident $($rest:ident)*] $doc:tt $args:tt -> $ret:ty, $missing:tt,
        $runner:ident($subject:expr, $op:ident), $pre:tt, $retf:tt,
        |$a:pat_param, $b:pat_param| $params:expr) => {
        libc_hooks!(@one $name $doc $args -> $ret, $missing, $runner($subject, $op), $pre, $retf,
            |$a, $b| $params);
        libc_hooks!(@each [$($rest)*] $doc $args -> $ret, $missing, $runner($subject, $op), $pre,
            $retf, |$a, $b| $params);
    };
    (@each [] $($t:tt)*) => {};
    (@one $name:ident {$(#[$doc:meta])*} ($($arg:ident: $ty:ty),*) -> $ret:ty,
        ($($missing:expr)?), $runner:ident($subject:expr, $op:ident), {$($pre:tt)*},
        ($($retf:expr)?), |$a:pat_param, $b:pat_param| $params:expr) => {
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            let Some(f) = real!(stringify!($name), unsafe extern "C" fn($($ty),*) -> $ret) else {
                return libc_hooks!(@missing $($missing)?);
            };
            $($pre)*
            $runner(
                $subject,
                rsd::Op::$op,
                // SAFETY: forwarding the caller's arguments to the real function, of the types
                // its C prototype declares.
                || unsafe { f($($arg),*) },
                libc_hooks!(@ret $ret; $($retf)?),
                |$a, $b| $params,
            )
        }
    };
    (@missing) => { $crate::posix::enosys() };
    (@missing $missing:expr) => { $missing };
    (@ret $ret:ty;) => { |r: $ret| r as i64 };
    (@ret $ret:ty; $retf:expr) => { $retf };
}

/// Hooks of C variadic functions (`fprintf`, `dprintf`, `execl`, ...), which stable Rust cannot
/// define: a naked tail jump to the C shim (`shim.c`), which leaves every register and the
/// stack as the caller set them, so the shim sees the original variadic call; it then calls
/// the `va_list` or vector hook named in [`shim_targets!`].
macro_rules! naked_jumps {
    ($($(#[$doc:meta])* $name:ident => $shim:ident;)*) => {
        #[cfg(target_arch = "x86_64")]
        unsafe extern "C" {
            $(fn $shim();)*
        }
        $(
            $(#[$doc])*
            #[cfg(target_arch = "x86_64")]
            #[unsafe(naked)]
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name() {
                core::arch::naked_asm!("jmp {f}", f = sym $shim);
            }
        )*
    };
}

/// The entry points the C shim calls (`iotrex_vfprintf_hook` and friends), each forwarding to
/// the hook of the same call with a `va_list` or an argument vector.
macro_rules! shim_targets {
    ($($name:ident => $hook:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[doc = concat!("Called by the C shim, which built the arguments of `", stringify!($hook), "` from the caller's.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the shim passes on the arguments of the application's variadic call
            // (its `va_list`, or a NULL-terminated vector it built), the contract of `$hook`.
            unsafe { $hook($($arg),*) }
        }
    )*};
}
