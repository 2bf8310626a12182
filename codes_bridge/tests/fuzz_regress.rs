//! Inputs the fuzzer (`scripts/fuzz.sh codes`) found to crash, hang or be refused without
//! naming the input by the CODES readers behind `codes-stats`; each is now refused with an
//! error naming the file and line. In `tests/fuzz_regress/`, `NAME.log` is read as a recorder
//! export's `log.0` and `NAME.meta` as an iolang export's `meta.txt`; `NAME.expect` holds text
//! the error must contain.

use codes_bridge::{Format, codes_stats};
use std::path::Path;

#[test]
fn fuzz_found_exports_are_refused_by_name() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regress");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/fuzz_regress") {
        let path = entry.expect("entry").path();
        let (name, format) = match path.extension().and_then(|e| e.to_str()) {
            Some("log") => ("log.0", Format::Recorder),
            Some("meta") => ("meta.txt", Format::Iolang),
            _ => continue,
        };
        let expect = std::fs::read_to_string(path.with_extension("expect"))
            .unwrap_or_else(|e| panic!("{}: no .expect file: {e}", path.display()));
        let work = tempfile::tempdir().expect("tempdir");
        let input = work.path().join(name);
        std::fs::copy(&path, &input).expect("copy");
        let err = match codes_stats(work.path(), format) {
            Ok(s) => panic!("{}: read as {s:?}", path.display()),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains(&input.display().to_string()),
            "{}: error does not name {name}: {err}",
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
    assert!(seen >= 2, "regression inputs missing in {}", dir.display());
}

/// Trace bodies (`NAME.body`: what follows a `.iotrex` file's 32-byte prefix, version 1 or 2)
/// on which the fuzzer (`scripts/fuzz.sh export_codes`) found `iotrex export codes` to panic:
/// each now exports, or is refused with an error, in both formats; what is exported reads back.
#[test]
fn fuzz_found_traces_export_or_are_refused() {
    use codes_bridge::{ExportOptions, export_seeded};
    use rsd::TraceFile;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regress");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/fuzz_regress") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("body") {
            continue;
        }
        let body = std::fs::read(&path).expect("read body");
        let tf = TraceFile::decode_body(&body, &path)
            .or_else(|_| TraceFile::decode_body_v2(&body, &path))
            .unwrap_or_else(|e| panic!("{}: no longer decodes: {e}", path.display()));
        for format in [Format::Recorder, Format::Iolang] {
            let work = tempfile::tempdir().expect("tempdir");
            let out = work.path().join("export");
            let opts = ExportOptions {
                format,
                max_blocksize: Some(1 << 20),
                force: true,
                nranks_check: false,
            };
            if export_seeded(&tf, &out, &opts, rsd::draw::DEFAULT_SEED, &mut |_, _| {}).is_ok() {
                codes_stats(&out, format).expect("an export reads back");
            }
        }
        seen += 1;
    }
    assert!(seen >= 1, "regression traces missing in {}", dir.display());
}
