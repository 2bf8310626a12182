//! Compiles `src/shim.c`, the few hooks Rust cannot write on stable: C variadic functions
//! (`fprintf`, `__fprintf_chk`) that forward their `va_list` to the Rust `vfprintf` hooks.
//! No `cc` crate: one compiler call and one `ar` call are all it takes.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/shim.c");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let obj = out.join("shim.o");
    let lib = out.join("libiotrex_shim.a");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let st = Command::new(&cc)
        .args([
            "-O2",
            "-fPIC",
            "-fvisibility=hidden",
            "-Wall",
            "-c",
            "src/shim.c",
            "-o",
        ])
        .arg(&obj)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` for tracer/src/shim.c: {e}"));
    assert!(st.success(), "`{cc}` failed on tracer/src/shim.c");
    let _ = std::fs::remove_file(&lib);
    let st = Command::new("ar")
        .arg("crs")
        .arg(&lib)
        .arg(&obj)
        .status()
        .unwrap_or_else(|e| panic!("cannot run `ar` for the tracer shim: {e}"));
    assert!(st.success(), "`ar` failed on the tracer shim");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=iotrex_shim");
}
