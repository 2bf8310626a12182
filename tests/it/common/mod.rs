//! Helpers for the tracer's end-to-end tests: build the C mini-apps with mpicc, find the
//! preload library, run `mpirun` (timeout-wrapped, oversubscribed) under it, and read back the
//! trace, the IOTREX_RAW logs and the apps' own counts.

#![allow(dead_code)]

use testkit as build;
pub mod cluster;
pub mod darray;
pub mod h5file;
pub mod mpich;
pub mod nodes;
pub mod shared;
pub mod storage;

use rsd::{FlatEvent, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Condvar, Mutex};

/// The ranks of this binary's runs under way, and their change. A run starts when its ranks
/// fit in [`RANK_BUDGET`] beside the others' (a larger one when it is alone): no run is more
/// oversubscribed than the largest run the tests make is alone, while smaller runs overlap
/// each other's start-up and shutdown in mpirun and the tracer's merge, where a run mostly
/// waits rather than computes (four 8-rank runs at once take half the time of one after the
/// other on 2 cores).
static RUNNING: (Mutex<u32>, Condvar) = (Mutex::new(0), Condvar::new());

/// The most ranks of this binary's runs at a time: the largest run the tests make.
const RANK_BUDGET: u32 = 64;

/// `np` ranks of [`RUNNING`], given back when dropped.
struct Ranks(u32);

impl Ranks {
    fn take(np: u32) -> Ranks {
        let (lock, changed) = &RUNNING;
        let mut running = lock.lock().unwrap_or_else(|p| p.into_inner());
        while *running > 0 && *running + np > RANK_BUDGET {
            running = changed.wait(running).unwrap_or_else(|p| p.into_inner());
        }
        *running += np;
        Ranks(np)
    }
}

impl Drop for Ranks {
    fn drop(&mut self) {
        let (lock, changed) = &RUNNING;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) -= self.0;
        changed.notify_all();
    }
}

/// The whole rank budget, held by a test whose figure the machine's load moves (a replay's
/// pacing) while it measures: it waits for the runs under way and no other run starts beside
/// it (a run of `np` ranks inside it would wait for ever: take it after the test's own runs).
pub fn alone() -> impl Drop {
    Ranks::take(RANK_BUDGET)
}

pub use build::tracer_lib;
// Only some test binaries use it (each includes this module).
#[allow(unused_imports)]
pub use build::target_dir;

/// Builds `tests/apps/<name>.c` into target/iotrex-apps (see [`build::app_in`]).
pub fn app(name: &str) -> PathBuf {
    build::app_in("", name)
}

/// Builds `tests/apps/<name>.c` into a shared object to preload (see [`build::shared_lib`]).
pub fn shared_lib(name: &str) -> PathBuf {
    build::shared_lib(name)
}

/// A scratch directory in /dev/shm (tmpfs: fast, small runs only).
pub fn scratch() -> tempfile::TempDir {
    build::scratch_with("iotrex-test-")
}

/// One traced run.
#[derive(Clone)]
pub struct Run {
    /// mpirun's output.
    pub out: Output,
    /// Where the trace was asked to go.
    pub trace: PathBuf,
}

impl Run {
    /// stdout as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    /// The trace file, read and validated.
    pub fn read(&self) -> TraceFile {
        TraceFile::read(&self.trace).unwrap_or_else(|e| {
            panic!(
                "cannot read the trace: {e}\nstdout:\n{}\nstderr:\n{}",
                self.stdout(),
                String::from_utf8_lossy(&self.out.stderr)
            )
        })
    }

    /// The IOTREX_RAW log of `rank`.
    pub fn raw(&self, rank: u32) -> Vec<FlatEvent> {
        let p = self.trace.with_file_name(format!(
            "{}.rank{rank}.jsonl",
            self.trace
                .file_name()
                .unwrap()
                .to_string_lossy()
                .trim_end_matches(".iotrex")
        ));
        let text = std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("cannot read raw log {}: {e}", p.display()));
        text.lines()
            .map(|l| serde_json::from_str(l).expect("raw log line is a FlatEvent"))
            .collect()
    }
}

/// Options of a traced run.
#[derive(Default, Clone)]
pub struct Opts<'a> {
    /// MPI-IO component (`ompio` or `romio321`); None = Open MPI's default.
    pub io: Option<&'a str>,
    /// Also write the IOTREX_RAW logs.
    pub raw: bool,
    /// Extra environment for the ranks.
    pub env: Vec<(&'a str, String)>,
}

/// Runs `app args` on `np` ranks under the tracer, writing the trace to `trace`. Panics if
/// mpirun fails or times out.
pub fn mpirun(np: u32, app: &Path, args: &[String], trace: &Path, o: &Opts) -> Run {
    let run = mpirun_any(np, app, args, trace, o);
    let out = &run.out;
    assert!(
        out.status.success(),
        "mpirun -np {np} {} {:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        app.display(),
        args,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    run
}

/// As [`mpirun`], but returns whatever the exit status (124 means the timeout fired).
pub fn mpirun_any(np: u32, app: &Path, args: &[String], trace: &Path, o: &Opts) -> Run {
    let _ranks = Ranks::take(np);
    // Two minutes, and a second more a rank beyond 32: 128 ranks of `log_lines` take 16 s
    // traced on a quiet 2-core machine and went past 120 s beside the other tests.
    let limit = (120 + np.saturating_sub(32)).to_string();
    let mut c = Command::new("timeout");
    c.args([
        "-k",
        "5",
        &limit,
        "mpirun",
        "-np",
        &np.to_string(),
        "--oversubscribe",
    ]);
    c.args(["--mca", "btl", "self,vader"]);
    if let Some(io) = o.io {
        c.args(["--mca", "io", io]);
    }
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("LD_PRELOAD", "")
        .env("IOTREX_OUT", trace)
        .env("IOTREX_RAW", if o.raw { "1" } else { "0" })
        .env("TRACER_LIB", tracer_lib());
    c.args(["-x", &format!("LD_PRELOAD={}", tracer_lib().display())]);
    c.args(["-x", "IOTREX_OUT", "-x", "IOTREX_RAW"]);
    for (k, v) in &o.env {
        c.env(k, v);
        c.args(["-x", k]);
    }
    c.arg(app).args(args);
    let _ = std::fs::remove_file(trace);
    let out = c.output().expect("run timeout/mpirun");
    Run {
        out,
        trace: trace.to_path_buf(),
    }
}

/// The apps' own counts, summed over ranks: op name -> (calls, bytes); and the ranks that
/// reported.
pub fn app_counts(stdout: &str) -> (BTreeMap<String, (u64, u64)>, usize) {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut ranks = std::collections::BTreeSet::new();
    for l in stdout.lines().filter(|l| l.starts_with("COUNT ")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 5, "malformed count line {l:?}");
        ranks.insert(f[1].to_string());
        let e = m.entry(f[2].to_string()).or_default();
        e.0 += f[3].parse::<u64>().expect("calls");
        e.1 += f[4].parse::<u64>().expect("bytes");
    }
    (m, ranks.len())
}

/// Counts of top-level calls (children excluded: those are the MPI library's own POSIX
/// calls, which the app cannot count) over every rank of the trace: op name -> (calls, bytes).
pub fn trace_counts(tf: &TraceFile) -> BTreeMap<String, (u64, u64)> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    tf.trace.ranks().for_each(|r| {
        tf.trace.expand_with(r, &mut |e| {
            let x = m.entry(e.op.name().to_string()).or_default();
            x.0 += 1;
            x.1 += e.op.data_bytes(&e.params);
            true
        });
    });
    m
}

/// [`trace_counts`] seen through the library layers: the application's calls and, inside each
/// call of a library layer (HDF5, PnetCDF, NetCDF, recorded by default), the calls it made,
/// as `extrap` and `collio` see them (`rsd::Trace::lift_containers`).
pub fn lifted_counts(tf: &TraceFile) -> BTreeMap<String, (u64, u64)> {
    let mut lifted = tf.clone();
    lifted.trace.lift_containers();
    trace_counts(&lifted)
}

/// Asserts the trace's top-level counts equal the app's, op by op, and that every layer's
/// totals in `rsd_view::stats` (children included) are at least the app's.
pub fn assert_counts_match(run: &Run, np: u32) {
    let tf = run.read();
    assert!(
        !tf.header.incomplete,
        "trace flagged incomplete: {:?}",
        tf.header.notes
    );
    assert_eq!(tf.header.nranks, np);
    assert_eq!(tf.trace.ranks().len(), np as u64);
    let (want, nr) = app_counts(&run.stdout());
    assert_eq!(nr, np as usize, "every rank printed its counts");
    let got = trace_counts(&tf);
    // MPI calls carry no file bytes in rsd's accounting; the apps count 0 for them too.
    assert_eq!(
        got, want,
        "trace counts (left) differ from the app's own (right)"
    );
    let s = rsd_view::stats::summarize(&tf.trace);
    for ((_, op), t) in &s.ops {
        let w = want.get(op.name()).copied().unwrap_or((0, 0));
        assert!(
            t.count >= w.0 && t.bytes >= w.1,
            "{}: stats {:?} below the app's {:?}",
            op.name(),
            (t.count, t.bytes),
            w
        );
    }
}

/// Asserts that expanding the trace for `rank` gives back the IOTREX_RAW log.
pub fn assert_expand_matches_raw(run: &Run, rank: u32) {
    let tf = run.read();
    let exp = tf.trace.expand(rank);
    let raw = run.raw(rank);
    assert_eq!(exp.len(), raw.len(), "rank {rank}: event count");
    for (i, (a, b)) in exp.iter().zip(&raw).enumerate() {
        assert_eq!(
            a,
            &with_run_values_of(a, b),
            "rank {rank}: event {i} differs"
        );
    }
}

/// `raw` with the path fields that `traced` holds as run values (the tracer matched them
/// against the run's ids; the raw log keeps the numbers, and the host name) given those run
/// values' markers (and `%h`),
/// nested calls included: equal to `traced` where nothing else differs.
fn with_run_values_of(traced: &FlatEvent, raw: &FlatEvent) -> FlatEvent {
    use rsd::path::PathTemplate;
    let mut out = raw.clone();
    if let (Some(t), Some(r)) = (&traced.path, &raw.path) {
        // The host name the tracer made `%h` (this machine's: these runs are local).
        let host = rsd::runvalue::host_name();
        let (tt, tf) = PathTemplate::parse(t);
        let (rt, mut rf) = PathTemplate::parse_on(r, host.as_deref().filter(|_| tt.holds_host()));
        if tt == rt && tf.len() == rf.len() {
            for (x, y) in tf.iter().zip(rf.iter_mut()) {
                if rsd::runvalue::of_marker(*x).is_some() {
                    *y = *x;
                }
            }
            out.path = Some(rt.render(&rf));
        }
    }
    for (c, rc) in traced.children.iter().zip(out.children.iter_mut()) {
        *rc = with_run_values_of(c, rc);
    }
    out
}

/// Strings for an argument list.
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Runs this build's `iotrex` with `args`.
/// `iotrex trace --lib TRACER FLAGS -o OUT --`: a traced launch line up to the launcher.
pub fn trace_prefix(out: &Path, flags: &[&str]) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = vec![env!("CARGO_BIN_EXE_iotrex").into(), "trace".into()];
    v.extend(flags.iter().map(Into::into));
    v.extend(["--lib".into(), tracer_lib().into(), "-o".into()]);
    v.extend([out.into(), "--".into()]);
    v
}

pub fn iotrex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .expect("run iotrex")
}

/// A command's stdout then stderr, for assertion messages.
/// Runs the shell script `script` with `args` as the unprivileged user nobody. The script is
/// read from a descriptor root opened, and it runs from `/`: a checkout in a directory only
/// root may enter (a CI clone under `mktemp -d`) is still run by nobody.
pub fn as_nobody(script: &Path, args: &[&str]) -> Output {
    let file = std::fs::File::open(script).unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "bash",
            "-s",
            "--",
        ])
        .args(args)
        .stdin(file)
        .current_dir("/")
        .output()
        .expect("run setpriv")
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Traces `app args` at `np` ranks into `out` with the data directory `data` emptied first
/// (ROMIO's open makes a `stat` only when the file does not exist yet, so every scale must
/// start from the same state) and substituted for `{d}` in `args`, under Open MPI's defaults
/// or with the io component `io`. The trace must be complete and carry Open MPI's
/// configuration, which the collective model needs.
pub fn trace_in(
    out: &Path,
    data: &Path,
    np: u32,
    app_name: &str,
    args: &[&str],
    io: Option<&str>,
) -> TraceFile {
    for f in std::fs::read_dir(data).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let d = data.display().to_string();
    let a: Vec<String> = args.iter().map(|s| s.replace("{d}", &d)).collect();
    let opts = Opts {
        io,
        ..Opts::default()
    };
    let tf = mpirun(np, &app(app_name), &a, out, &opts).read();
    assert!(
        !tf.header.incomplete,
        "{app_name} at {np}: {:?}",
        tf.header.notes
    );
    let cfg =
        tf.header.mpi_config.as_ref().unwrap_or_else(|| {
            panic!("{app_name} at {np}: the tracer recorded no MPI configuration")
        });
    assert!(cfg.library.contains("Open MPI"), "{}", cfg.library);
    tf
}

/// Runs `iotrex extrap INPUTS --ranks target -o out EXTRA`.
pub fn extrap(inputs: &[PathBuf], target: u32, out: &Path, extra: &[&str]) -> Output {
    let t = target.to_string();
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", &t, "-o", out.to_str().unwrap()]);
    a.extend(extra);
    iotrex(&a)
}

/// Runs `iotrex extrap INPUTS --ranks target -o out --explain`, which must succeed, and
/// returns its output and the `--explain` lines about collective calls' nested POSIX calls.
pub fn extrap_explained(
    name: &str,
    inputs: &[PathBuf],
    target: u32,
    out: &Path,
) -> (String, Vec<String>) {
    let o = extrap(inputs, target, out, &["--explain"]);
    let all = text(&o);
    assert!(
        o.status.success(),
        "{name}: extrap to {target} refused:\n{all}"
    );
    let nested = all
        .lines()
        .filter(|l| l.contains("nested POSIX calls"))
        .map(str::to_string)
        .collect();
    (all, nested)
}

/// `iotrex diff extrapolated real` must say identical.
pub fn assert_identical(name: &str, extrapolated: &Path, real: &Path) {
    let o = iotrex(&[
        "diff",
        extrapolated.to_str().unwrap(),
        real.to_str().unwrap(),
    ]);
    assert!(
        o.status.success() && text(&o).contains("identical"),
        "{name}: extrapolated {} and real {} differ:\n{}",
        extrapolated.display(),
        real.display(),
        text(&o)
    );
}

/// Runs `iotrex ARGS` the way a user runs `iotrex trace`: under `timeout`, with MPI allowed to
/// run as root and oversubscribed, this build's preload library (`IOTREX_TRACER_LIB`), no
/// preload or job marker inherited from the test's own environment, plus `envs`.
pub fn iotrex_traced(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "120", env!("CARGO_BIN_EXE_iotrex")])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env_remove("LD_PRELOAD")
        .env_remove("IOTREX_JOB")
        .env("IOTREX_TRACER_LIB", tracer_lib());
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("run iotrex")
}

/// `iotrex trace -o OUT -- CMD...` as a user runs it ([`iotrex_traced`]), with `envs`.
pub fn trace_command(out: &Path, cmd: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut a = vec!["trace", "-o", out.to_str().unwrap(), "--"];
    a.extend_from_slice(cmd);
    iotrex_traced(&a, envs)
}

/// A command's status, stdout and stderr, labelled, for assertion messages.
pub fn status_text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts fortran_io's and fortran_f08's darray (the same) as recorded at `rank` of `np`: its
/// size, rank, order and arrays in rsd::mpi's encodings, whatever the library's Fortran
/// constants.
pub fn assert_fortran_darray(tf: &TraceFile, np: u32, rank: u32) {
    use rsd::mpi::distribute::{CYCLIC, DFLT_DARG, NONE};
    let ev = tf.trace.expand(rank);
    let d = ev
        .iter()
        .find(|e| e.op == rsd::Op::TypeCreateDarray)
        .expect("MPI_Type_create_darray recorded");
    let n = np as i64;
    assert_eq!(
        &d.params[..4],
        &[n, rank as i64, 2, rsd::mpi::order::FORTRAN],
        "{:?}",
        d.params
    );
    assert_eq!(
        &d.params[6..],
        &[1024 / 8, 8 * n, NONE, CYCLIC, DFLT_DARG, 8, 1, n],
        "{:?}",
        d.params
    );
}

/// Runs a DuckDB query through Debian's Python (DuckDB from PyPI, installed by
/// scripts/install-deps.sh into target/pydeps) and returns its rows as JSON arrays.
pub fn duckdb(sql: &str) -> Vec<serde_json::Value> {
    let pydeps = target_dir().join("pydeps");
    let script = format!(
        "import duckdb, json\nfor r in duckdb.sql({sql:?}).fetchall(): print(json.dumps(r))\n"
    );
    let o = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(&script)
        .env("PYTHONPATH", &pydeps)
        .output()
        .expect("run /usr/bin/python3");
    assert!(
        o.status.success(),
        "duckdb query failed (scripts/install-deps.sh installs duckdb into {}):\n{sql}\n{}",
        pydeps.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
