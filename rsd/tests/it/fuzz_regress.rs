//! Trace bodies (`tests/fuzz_regress/NAME.body`: what follows a `.iotrex` file's 32-byte
//! prefix, version 1 or 2) on which the fuzzer (`scripts/fuzz.sh replay`) found replay's
//! planning to panic: drawing summarised values and resolving modelled offsets
//! (`rsd::draw::realize`, which calls `rsd::prefix::resolve`) now finish or refuse. Since the
//! decoder checks each event's parameter count against its op's schema (`format.rs`,
//! `params_fit`), a body whose event is shorter than its schema is refused when read, naming
//! the event and its op, before any reader indexes it.

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
        seen += 1;
        let mut tf = match TraceFile::decode_body(&body, &path)
            .or_else(|_| TraceFile::decode_body_v2(&body, &path))
        {
            Ok(tf) => tf,
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("parameter(s) where its schema needs"),
                    "{}: refused for another reason: {msg}",
                    path.display()
                );
                continue;
            }
        };
        let _ = rsd::draw::realize(&mut tf.trace, rsd::draw::DEFAULT_SEED);
    }
    assert!(seen >= 1, "regression traces missing in {}", dir.display());
}
