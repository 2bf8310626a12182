//! Inputs the fuzzer (`scripts/fuzz.sh codes`) found to crash or hang the CODES readers behind
//! `codes-stats`, each now refused with an error naming the file and line. Each
//! `tests/fuzz_regress/NAME.log` is read as a recorder export's `log.0`; `NAME.expect` holds
//! text the error must contain.

use codes_bridge::{Format, codes_stats};
use std::path::Path;

#[test]
fn fuzz_found_recorder_logs_are_refused_by_name() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regress");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/fuzz_regress") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("log") {
            continue;
        }
        let expect = std::fs::read_to_string(path.with_extension("expect"))
            .unwrap_or_else(|e| panic!("{}: no .expect file: {e}", path.display()));
        let work = tempfile::tempdir().expect("tempdir");
        let log0 = work.path().join("log.0");
        std::fs::copy(&path, &log0).expect("copy");
        let err = match codes_stats(work.path(), Format::Recorder) {
            Ok(s) => panic!("{}: read as {s:?}", path.display()),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains(&log0.display().to_string()),
            "{}: error does not name the log: {err}",
            path.display()
        );
        assert!(
            err.contains(expect.trim()),
            "{}: expected {:?} in: {err}",
            path.display(),
            expect.trim()
        );
        seen += 1;
    }
    assert!(seen > 0, "no regression inputs in {}", dir.display());
}
