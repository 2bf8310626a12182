//! Trace bodies (`tests/fuzz_regress/NAME.body`: what follows a `.iotrex` file's 32-byte
//! prefix, version 1 or 2) on which the fuzzer (`scripts/fuzz.sh replay`) found replay's
//! planning to panic: drawing summarised values and resolving modelled offsets
//! (`rsd::draw::realize`, which calls `rsd::prefix::resolve`) now finish or refuse.

use rsd::TraceFile;
use std::path::Path;

#[test]
fn fuzz_found_traces_realize_or_are_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regress");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/fuzz_regress") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("body") {
            continue;
        }
        let body = std::fs::read(&path).expect("read body");
        let mut tf = TraceFile::decode_body(&body, &path)
            .or_else(|_| TraceFile::decode_body_v2(&body, &path))
            .unwrap_or_else(|e| panic!("{}: no longer decodes: {e}", path.display()));
        let _ = rsd::draw::realize(&mut tf.trace, rsd::draw::DEFAULT_SEED);
        seen += 1;
    }
    assert!(seen >= 1, "regression traces missing in {}", dir.display());
}
