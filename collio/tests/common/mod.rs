//! Real runs for the model's tests: build the C mini-apps of the workspace's `tests/apps`
//! with mpicc, run them under the tracer with `mpirun` (timeout-wrapped, oversubscribed,
//! Open MPI's defaults: no io/fcoll parameter is ever set), and check the model against the
//! nested calls of every collective call of the trace.

#![allow(dead_code)]

use collio::ompio::{self, Config, ViewStats};
use collio::{Call, Collective, Dir};
use filetable::{Effect, FileTable, Offline};
use rsd::op::{Op, Param};
use rsd::{FlatEvent, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("collio lives in the workspace")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// The preload library (target/release, then target/debug).
pub fn tracer_lib() -> PathBuf {
    let t = target_dir();
    for p in [
        t.join("release/libiotrex_tracer.so"),
        t.join("debug/libiotrex_tracer.so"),
    ] {
        if p.exists() {
            return p;
        }
    }
    panic!(
        "libiotrex_tracer.so not found under {}: run `cargo build --release -p tracer` first",
        t.display()
    );
}

/// The apps built by this test binary, by name.
static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
/// mpirun runs one at a time: the machine's cores are shared.
static MPIRUN: Mutex<()> = Mutex::new(());

/// Builds `tests/apps/<name>.c` with mpicc into target/iotrex-apps/collio, once per test
/// binary (a few hundred milliseconds; no race with other test binaries' builds, which use
/// other directories).
pub fn app(name: &str) -> PathBuf {
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(bin) = built.get(name) {
        return bin.clone();
    }
    let dir = target_dir().join("iotrex-apps/collio");
    std::fs::create_dir_all(&dir).expect("create target/iotrex-apps/collio");
    let src = workspace().join("tests/apps").join(format!("{name}.c"));
    let bin = dir.join(name);
    // A name of this process's own: another run of these tests may be building the same app.
    let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
    let out = Command::new("mpicc")
        .args(["-O1", "-g", "-o"])
        .arg(&tmp)
        .arg(&src)
        .output()
        .expect("run mpicc (is Open MPI installed?)");
    assert!(
        out.status.success(),
        "mpicc {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, &bin).expect("rename the built app");
    built.insert(name.to_string(), bin.clone());
    bin
}

/// A scratch directory in /dev/shm.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("iotrex-collio-")
        .tempdir_in("/dev/shm")
        .expect("create a scratch dir in /dev/shm")
}

/// The MPI-IO library a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lib {
    /// Open MPI's default, OMPIO.
    Ompio,
    /// ROMIO (`--mca io romio321`): the library chosen to show the ROMIO model, nothing
    /// else set.
    Romio,
}

/// Runs `app args` on `np` ranks under the tracer (Open MPI's defaults, and the io component
/// `lib` names), writing the trace to `trace`, and reads it back. Panics when mpirun fails.
pub fn traced(np: u32, app: &Path, args: &[String], trace: &Path, lib: Lib) -> TraceFile {
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let _ = std::fs::remove_file(trace);
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", "120", "mpirun", "-np", &np.to_string()])
        .args(["--oversubscribe", "--mca", "btl", "self,vader"]);
    if lib == Lib::Romio {
        cmd.args(["--mca", "io", "romio321"]);
    }
    let out = cmd
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("LD_PRELOAD", "")
        .env("IOTREX_OUT", trace)
        .env("IOTREX_RAW", "0")
        .args(["-x", &format!("LD_PRELOAD={}", tracer_lib().display())])
        .args(["-x", "IOTREX_OUT", "-x", "IOTREX_RAW"])
        .arg(app)
        .args(args)
        .output()
        .expect("run timeout/mpirun");
    assert!(
        out.status.success(),
        "mpirun -np {np} {} {args:?} failed ({}):\n{}\n{}",
        app.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    TraceFile::read(trace).unwrap_or_else(|e| panic!("cannot read {}: {e}", trace.display()))
}

/// One rank's view of one collective call: its regions, its recorded nested calls, its view.
struct RankCall {
    dir: Dir,
    op: Op,
    regions: Vec<(u64, u64)>,
    recorded: Vec<Call>,
    view_blocks: Vec<u64>,
    /// Where the access starts in the file (for a rank without data: where its offset or
    /// file pointer points through the view).
    start: u64,
    /// The file size this rank knows when it enters the call (its own writes and resizes).
    size_before: u64,
}

/// The collective data calls of the MPI-IO layer.
fn collective_dir(op: Op) -> Option<Dir> {
    match op {
        Op::FileWriteAll | Op::FileWriteAtAll => Some(Dir::Write),
        Op::FileReadAll | Op::FileReadAtAll => Some(Dir::Read),
        _ => None,
    }
}

/// A recorded nested call as the model's [`Call`]. A call the model never issues (a lock's
/// `fcntl`, say) keeps its op, so the comparison names it.
fn recorded(e: &FlatEvent) -> Call {
    let get = |p| e.get(p).unwrap_or(-1);
    let iovcnt = match e.op {
        Op::Pwritev | Op::Preadv => Some(get(Param::Iovcnt) as u32),
        _ => None,
    };
    let ret = get(Param::Ret);
    if e.op == Op::Fcntl {
        let mut c = Call::fcntl(get(Param::Cmd));
        c.ret = ret as u64;
        return c;
    }
    // pwritev/preadv record no byte count: what they asked for is what they returned unless
    // a read hit the end of the file.
    let bytes = if iovcnt.is_some() {
        ret
    } else {
        get(Param::Count)
    };
    Call::data(
        e.op,
        get(Param::Offset) as u64,
        iovcnt,
        bytes as u64,
        ret as u64,
    )
}

/// Per file path, per rank, the rank's collective calls in order.
fn collectives(tf: &TraceFile, np: u32) -> BTreeMap<String, Vec<Vec<RankCall>>> {
    let mut out: BTreeMap<String, Vec<Vec<RankCall>>> = BTreeMap::new();
    for rank in 0..np {
        let mut table = FileTable::new();
        // Bytes this rank knows each path holds.
        let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
        for e in tf.trace.expand(rank) {
            // The data position (etypes) a collective call starts at, before the call moves
            // the file pointer.
            let etypes = match e.get(Param::Offset) {
                Some(o) if collective_dir(e.op).is_some() => Some(o),
                _ if collective_dir(e.op).is_some() => e
                    .get(Param::Fh)
                    .and_then(|fh| table.mpi_file(fh))
                    .map(|f| f.pos),
                _ => None,
            };
            let (effect, _) = table.apply(e.op, &e.params, e.path.as_deref(), None, &mut Offline);
            let path_of = |t: &FileTable, id| t.file(id).and_then(|f| f.path.clone());
            match effect {
                Effect::Access(a) => {
                    let Some(path) = path_of(&table, a.file) else {
                        continue;
                    };
                    let before = sizes.get(&path).copied().unwrap_or(0);
                    if a.dir == rsd::op::Dir::Write {
                        let end = a.regions.iter().map(|r| r.0 + r.1).max().unwrap_or(0);
                        sizes.insert(path.clone(), before.max(end));
                    }
                    let Some(dir) = collective_dir(e.op) else {
                        continue;
                    };
                    let f = table.file(a.file).expect("accessed file is open");
                    let view_blocks = ompio::view_blocks(&f.view, table.types());
                    let start = match a.regions.first() {
                        Some(r) => r.0,
                        None => {
                            let pos = etypes.unwrap_or(0) * f.view.etype_size;
                            match &f.view.flat {
                                None => (f.view.disp + pos).max(0) as u64,
                                Some(_) => f.view.regions(pos, 1).first().map_or(0, |r| r.0),
                            }
                        }
                    };
                    let recorded = e.children.iter().map(recorded).collect();
                    let ranks = out.entry(path).or_insert_with(|| {
                        (0..np).map(|_| Vec::new()).collect::<Vec<Vec<RankCall>>>()
                    });
                    ranks[rank as usize].push(RankCall {
                        dir,
                        op: e.op,
                        regions: a.regions,
                        recorded,
                        view_blocks,
                        start,
                        size_before: before,
                    });
                }
                Effect::Resize { file, size } => {
                    if let Some(p) = path_of(&table, file) {
                        sizes.insert(p, size);
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// What one trace's check found.
#[derive(Debug, Default)]
pub struct Checked {
    /// Collective calls compared.
    pub calls: usize,
    /// Nested POSIX calls compared.
    pub nested: usize,
    /// Aggregator counts seen (per call).
    pub aggregators: Vec<usize>,
    /// Calls whose aggregators wrote asynchronously (aio, not recorded).
    pub async_calls: usize,
}

/// Runs the model on every collective call of `tf` (all files opened on all `np` ranks)
/// and compares its nested calls with the recorded ones. Returns the first difference.
pub fn check(tf: &TraceFile, np: u32, lib: Lib) -> Result<Checked, String> {
    let cfg = Config::default();
    let romio_cfg = collio::romio::Config::default();
    let mut done = Checked::default();
    for (path, ranks) in collectives(tf, np) {
        let k = ranks[0].len();
        if let Some(r) = ranks.iter().position(|c| c.len() != k) {
            return Err(format!(
                "{path}: rank 0 makes {k} collective calls, rank {r} {}",
                ranks[r].len()
            ));
        }
        for i in 0..k {
            let dir = ranks[0][i].dir;
            let coll = Collective {
                dir,
                regions: ranks.iter().map(|c| c[i].regions.clone()).collect(),
                file_size: ranks.iter().map(|c| c[i].size_before).max().unwrap_or(0),
                starts: ranks.iter().map(|c| c[i].start).collect(),
            };
            let view = ViewStats::from_ranks(ranks.iter().map(|c| c[i].view_blocks.as_slice()));
            // The model's calls per rank, and how it got them.
            let (calls_of, how) = match lib {
                Lib::Ompio => {
                    let o = ompio::model(&cfg, view, &coll)
                        .map_err(|e| format!("{path}: collective call {i}: {e}"))?;
                    done.aggregators.push(o.aggregators.len());
                    done.async_calls += usize::from(o.async_writes);
                    let how = format!(
                        "OMPIO {:?}, aggregators {:?}, domain {:?}, cycles {}",
                        o.fcoll, o.aggregators, o.domain_size, o.cycles
                    );
                    (o.calls, how)
                }
                Lib::Romio => {
                    let o = collio::romio::model(&romio_cfg, &coll)
                        .map_err(|e| format!("{path}: collective call {i}: {e}"))?;
                    done.aggregators
                        .push(if o.two_phase { o.aggregators.len() } else { 0 });
                    let how = format!(
                        "ROMIO two-phase {}, aggregators {:?}, domain {:?}",
                        o.two_phase, o.aggregators, o.domain_size
                    );
                    (o.calls, how)
                }
            };
            done.calls += 1;
            for (r, calls) in ranks.iter().enumerate() {
                let rec = &calls[i].recorded;
                let got = &calls_of[r];
                let what = || {
                    format!(
                        "{path}: {} #{i} at {np} ranks, rank {r} (model: {how})",
                        calls[i].op.name()
                    )
                };
                for (j, (a, b)) in rec.iter().zip(got).enumerate() {
                    if a != b {
                        return Err(format!(
                            "{}: nested call {j}: recorded {a}, modelled {b}",
                            what()
                        ));
                    }
                }
                if rec.len() != got.len() {
                    let j = rec.len().min(got.len());
                    let show = |v: &[Call]| v.get(j).map_or("nothing".into(), |c| c.to_string());
                    return Err(format!(
                        "{}: {} nested calls recorded, {} modelled; call {j}: recorded {}, modelled {}",
                        what(),
                        rec.len(),
                        got.len(),
                        show(rec),
                        show(got)
                    ));
                }
                done.nested += rec.len();
            }
        }
    }
    Ok(done)
}
