//! An example iotrex model plugin: `y = b*rank + c*(rank % 2)`, i.e. `rank*b` for even ranks
//! and `rank*b + c` for odd ones, which none of the built-in models expresses.
//!
//! It is written against the C ABI in `models/include/iotrex_model.h` only (no iotrex crate
//! is linked), as a plugin in C would be. Build it with `cargo build -p
//! iotrex-plugin-even-odd` (or `rustc --edition 2024 --crate-type cdylib src/lib.rs`) and pass
//! the library to `iotrex extrap --plugin`.
//!
//! `--cfg bad_abi` builds a copy that declares ABI version 99 and `--cfg no_entry` one that
//! exports no entry point; the loader's tests use both.

use std::ffi::c_char;

#[repr(C)]
pub struct ModelV1 {
    name: *const c_char,
    nparams: u32,
    vars: u32,
    fit: Option<unsafe extern "C" fn(*const i64, *const i64, *const i64, u64, *mut i64) -> i32>,
    eval: Option<unsafe extern "C" fn(*const i64, i64, i64, *mut i64) -> i32>,
}

#[repr(C)]
pub struct Plugin {
    abi_version: u32,
    nmodels: u32,
    models: *const ModelV1,
}

// SAFETY: the descriptor is immutable static data; the raw pointers in it point to other
// immutable statics, so sharing it between threads is sound.
unsafe impl Sync for Plugin {}
// SAFETY: as above.
unsafe impl Sync for ModelV1 {}

fn value(b: i64, c: i64, rank: i64) -> Option<i64> {
    b.checked_mul(rank)?
        .checked_add(c.checked_mul(rank.rem_euclid(2))?)
}

/// Fits `b` from the first even rank other than 0 and `c` from the first odd rank, then
/// checks every point.
unsafe extern "C" fn fit(
    n: *const i64,
    rank: *const i64,
    y: *const i64,
    len: u64,
    out: *mut i64,
) -> i32 {
    let _ = n;
    if rank.is_null() || y.is_null() || out.is_null() || len == 0 {
        return 0;
    }
    // SAFETY: the caller passes `len` values in each array (the ABI contract).
    let (rank, y) = unsafe {
        (
            std::slice::from_raw_parts(rank, len as usize),
            std::slice::from_raw_parts(y, len as usize),
        )
    };
    let Some(ie) = (0..rank.len()).find(|&i| rank[i] != 0 && rank[i] % 2 == 0) else {
        return 0;
    };
    if y[ie] % rank[ie] != 0 {
        return 0;
    }
    let b = y[ie] / rank[ie];
    let Some(io) = (0..rank.len()).find(|&i| rank[i] % 2 == 1) else {
        return 0;
    };
    let c = y[io] - b * rank[io];
    if c == 0 || !(0..rank.len()).all(|i| value(b, c, rank[i]) == Some(y[i])) {
        return 0;
    }
    // SAFETY: the caller provides room for the 2 coefficients this model declares.
    unsafe {
        *out = b;
        *out.add(1) = c;
    }
    1
}

unsafe extern "C" fn eval(coeffs: *const i64, _n: i64, rank: i64, out: *mut i64) -> i32 {
    if coeffs.is_null() || out.is_null() {
        return 0;
    }
    // SAFETY: the caller passes the 2 coefficients this model declared.
    let (b, c) = unsafe { (*coeffs, *coeffs.add(1)) };
    match value(b, c, rank) {
        Some(v) => {
            // SAFETY: `out` is a valid place for one i64 (the ABI contract).
            unsafe { *out = v };
            1
        }
        None => 0,
    }
}

static MODELS: [ModelV1; 1] = [ModelV1 {
    name: c"even-odd".as_ptr(),
    nparams: 2,
    vars: 2,
    fit: Some(fit),
    eval: Some(eval),
}];

static PLUGIN: Plugin = Plugin {
    abi_version: if cfg!(bad_abi) { 99 } else { 1 },
    nmodels: 1,
    models: MODELS.as_ptr(),
};

/// The entry point iotrex looks up.
#[cfg(not(no_entry))]
#[unsafe(no_mangle)]
pub extern "C" fn iotrex_model_plugin() -> *const Plugin {
    &PLUGIN
}

/// Keeps the descriptor referenced in the `no_entry` build.
#[cfg(no_entry)]
#[unsafe(no_mangle)]
pub extern "C" fn not_a_plugin() -> *const Plugin {
    &PLUGIN
}
