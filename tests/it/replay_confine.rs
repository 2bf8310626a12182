//! A replay never touches a byte outside `--root`: traces whose paths climb
//! with `..`, name absolute places outside the traced prefix, go through symbolic links
//! planted in the root (absolute, relative, into /proc), end on a FIFO, carry a ROMIO `ufs:`
//! prefix, or meet a symlink swapped in while the replay runs. Each is replayed for real, by
//! `iotrex replay` and by `iotrex-replay` under `mpirun`, in a sandbox this test makes: the
//! sandbox outside the root is listed (types, sizes, contents, link targets) before and after,
//! and must not change.

use rsd::mpi::amode;
use rsd::op::args;
use rsd::trace::RawEvent;
use rsd::{Header, Op, TraceFile};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// mpirun runs one at a time.
static MPIRUN: Mutex<()> = Mutex::new(());

const BYTES: i64 = 64;

fn bin(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/release")
        .join(name);
    assert!(
        p.exists(),
        "{} is not built: cargo build --release -p iotrex -p replay_mpi",
        p.display()
    );
    p
}

fn ev(op: Op, params: Vec<i64>, path: Option<&str>) -> RawEvent {
    let mut e = RawEvent::new(op, 0xc0f1 + op as u64, params);
    e.path = path.map(str::to_string);
    e.gap_ns = 1_000;
    e.dur_ns = 1_000;
    e
}

/// What one traced call does with its path.
enum Call<'a> {
    /// open(O_CREAT|O_WRONLY|O_TRUNC), a write of [`BYTES`], close.
    Write(&'a str),
    /// MPI_File_open(CREATE|WRONLY), a write_at of [`BYTES`], close.
    MpiWrite(&'a str),
    Mkdir(&'a str),
    Unlink(&'a str),
}

/// A one-rank trace making `calls` `times` times over.
fn trace(dir: &Path, calls: &[Call], times: usize) -> PathBuf {
    let mut c = rsd::Compressor::new(0);
    c.push(&ev(Op::Init, vec![], None));
    for _ in 0..times {
        for call in calls {
            match call {
                Call::Write(p) => {
                    let flags = (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as i64;
                    c.push(&ev(Op::Open, args::open(flags, 0o644, 3), Some(p)));
                    c.push(&ev(Op::Write, args::write(3, BYTES, BYTES), None));
                    c.push(&ev(Op::Close, args::close(3), None));
                }
                Call::MpiWrite(p) => {
                    let am = amode::CREATE | amode::WRONLY;
                    c.push(&ev(
                        Op::FileOpen,
                        args::file_open(rsd::mpi::COMM_WORLD, am, 0),
                        Some(p),
                    ));
                    c.push(&ev(
                        Op::FileWriteAt,
                        args::file_write_at(0, 0, BYTES, rsd::mpi::BYTE, BYTES),
                        None,
                    ));
                    c.push(&ev(Op::FileClose, args::file_close(0), None));
                }
                Call::Mkdir(p) => c.push(&ev(Op::Mkdir, args::mkdir(0o755), Some(p))),
                Call::Unlink(p) => c.push(&ev(Op::Unlink, args::unlink(), Some(p))),
            }
        }
    }
    c.push(&ev(Op::Finalize, vec![], None));
    let mut header = Header::new(1);
    header.wall_ns = 1_000_000;
    let tf = TraceFile {
        header,
        trace: rsd::merge_tree(vec![c.finish()]).unwrap(),
    };
    let p = dir.join("t.iotrex");
    tf.write(&p).unwrap();
    p
}

/// The sandbox: `S/root` is the replay root, `S/outside` holds a file and a directory that
/// nothing may change, the trace lives in `S/trace`.
struct Sandbox {
    _tmp: tempfile::TempDir,
    s: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::Builder::new()
            .prefix("iotrex-confine-")
            .tempdir_in("/dev/shm")
            .unwrap();
        let s = tmp.path().canonicalize().unwrap();
        for d in ["root", "outside/sub", "trace"] {
            std::fs::create_dir_all(s.join(d)).unwrap();
        }
        std::fs::write(s.join("outside/keep"), b"the original bytes").unwrap();
        std::fs::write(s.join("outside/sub/f"), b"more").unwrap();
        Sandbox { _tmp: tmp, s }
    }

    fn root(&self) -> PathBuf {
        self.s.join("root")
    }

    fn outside(&self) -> PathBuf {
        self.s.join("outside")
    }

    /// Everything in the sandbox but the root, and the root's own entry: path -> (type,
    /// size, mode, contents or link target).
    fn listing(&self) -> BTreeMap<PathBuf, String> {
        fn walk(p: &Path, root: &Path, out: &mut BTreeMap<PathBuf, String>) {
            let m = std::fs::symlink_metadata(p).unwrap();
            let what = if m.file_type().is_symlink() {
                format!("link -> {}", std::fs::read_link(p).unwrap().display())
            } else if m.is_file() {
                format!("file {:o} {:?}", m.mode(), std::fs::read(p).unwrap())
            } else if m.is_dir() {
                format!("dir {:o}", m.mode())
            } else {
                format!("special {:o} {}", m.mode(), m.len())
            };
            out.insert(p.to_path_buf(), what);
            if m.is_dir() && p != root {
                for e in std::fs::read_dir(p).unwrap() {
                    walk(&e.unwrap().path(), root, out);
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.s, &self.root(), &mut out);
        out
    }
}

/// How a replay ended.
#[derive(Debug, PartialEq)]
enum End {
    Clean,
    Refused,
}

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Replays `trace` in `root` with `iotrex replay` (threads) and `iotrex-replay` under
/// `mpirun -np 1`; `prepare` resets the root before each (what the test plants in it).
fn replays(trace: &Path, root: &Path, mut prepare: impl FnMut()) -> Vec<(&'static str, Output)> {
    let mut v = Vec::new();
    prepare();
    let o = Command::new("timeout")
        .args(["-k", "5", "60"])
        .arg(bin("iotrex"))
        .arg("replay")
        .arg(trace)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    v.push(("iotrex replay", o));
    prepare();
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let o = Command::new("timeout")
        .args(["-k", "5", "90", "mpirun", "-np", "1", "--oversubscribe"])
        .args(["--mca", "btl", "self,vader"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("LD_PRELOAD", "")
        .arg(bin("iotrex-replay"))
        .arg(trace)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    v.push(("iotrex-replay under mpirun", o));
    v
}

fn end_of(o: &Output) -> End {
    let t = text(o);
    if o.status.success() {
        End::Clean
    } else {
        assert!(
            t.contains("refusing to touch it"),
            "a replay that fails must say it refused a path:\n{t}"
        );
        End::Refused
    }
}

/// Replays `calls` with both replayers, `prepare` planting what the case needs in the root
/// first, and checks that the sandbox outside the root is as it was and each replay ended as
/// `want`.
fn confined(sb: &Sandbox, calls: &[Call], want: End, mut prepare: impl FnMut(&Path)) {
    let t = trace(&sb.s.join("trace"), calls, 1);
    let before = sb.listing();
    let root = sb.root();
    for (who, o) in replays(&t, &root, || {
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::create_dir(&root).unwrap();
        prepare(&root);
    }) {
        assert_eq!(end_of(&o), want, "{who}:\n{}", text(&o));
        assert_eq!(
            sb.listing(),
            before,
            "{who} changed the sandbox outside the root:\n{}",
            text(&o)
        );
    }
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .len()
}

#[test]
fn dotdot_absolute_proc_and_dev_paths_land_inside() {
    let sb = Sandbox::new();
    let abs = sb.outside().join("keep");
    let abs = abs.to_str().unwrap().to_string();
    let up = format!("../../../../..{abs}");
    let calls = [
        Call::Write("../../outside/keep"),
        Call::Write("a/../../../../outside/sub/f"),
        Call::Write(&abs),
        Call::Write(&up),
        Call::Write("/proc/self/fd/1"),
        Call::Write("/dev/null"),
        Call::Unlink("../outside/sub/f"),
        Call::Mkdir("/dev/shm/iotrex-confine-made"),
    ];
    confined(&sb, &calls, End::Clean, |_| {});
    // Where they went instead: lexically under the root.
    let r = sb.root();
    assert_eq!(size(&r.join("outside/keep")), BYTES as u64);
    assert_eq!(size(&r.join(abs.trim_start_matches('/'))), BYTES as u64);
    assert_eq!(size(&r.join("proc/self/fd/1")), BYTES as u64);
    assert_eq!(size(&r.join("dev/null")), BYTES as u64);
    assert!(r.join("dev/shm/iotrex-confine-made").is_dir());
    assert!(!Path::new("/dev/shm/iotrex-confine-made").exists());
}

#[test]
fn planted_symlinks_out_of_the_root_are_refused() {
    let sb = Sandbox::new();
    let out = sb.outside();
    // An absolute link to a directory outside, a relative one climbing out, a link at the
    // end naming a file outside (O_TRUNC would empty it), a link into /proc (the root's
    // parent through the replay's own descriptors), and links deeper in.
    for (link, target, call) in [
        ("evil", out.clone(), "evil/new"),
        ("rel", PathBuf::from("../outside"), "rel/keep"),
        ("leaf", out.join("keep"), "leaf"),
        ("pfd", PathBuf::from("/proc/self/cwd"), "pfd/new"),
        ("d/deep", PathBuf::from("../../outside/sub"), "/d/deep/f"),
    ] {
        let calls = [Call::Write(call)];
        confined(&sb, &calls, End::Refused, |root| {
            if let Some(parent) = Path::new(link).parent() {
                std::fs::create_dir_all(root.join(parent)).unwrap();
            }
            std::os::unix::fs::symlink(&target, root.join(link)).unwrap();
        });
        let calls = [Call::MpiWrite(call)];
        confined(&sb, &calls, End::Refused, |root| {
            if let Some(parent) = Path::new(link).parent() {
                std::fs::create_dir_all(root.join(parent)).unwrap();
            }
            std::os::unix::fs::symlink(&target, root.join(link)).unwrap();
        });
    }
    // A link that stays inside is followed.
    let calls = [Call::Write("in/f")];
    confined(&sb, &calls, End::Clean, |root| {
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink("real", root.join("in")).unwrap();
    });
    assert_eq!(size(&sb.root().join("real/f")), BYTES as u64);
}

#[test]
fn a_fifo_in_the_root_is_refused() {
    let sb = Sandbox::new();
    let calls = [Call::Write("dev/fifo")];
    let t = trace(&sb.s.join("trace"), &calls, 1);
    let root = sb.root();
    let fifo = root.join("dev/fifo");
    let mut readers = Vec::new();
    for (who, o) in replays(&t, &root, || {
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::create_dir_all(root.join("dev")).unwrap();
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        // A reader holds it open, as a process outside the root would: bytes written into
        // the FIFO leave the root.
        let r = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        readers.push(r);
    }) {
        assert_eq!(end_of(&o), End::Refused, "{who}:\n{}", text(&o));
        let mut got = Vec::new();
        use std::io::Read;
        let r = readers.last_mut().unwrap();
        let _ = r.read_to_end(&mut got);
        assert!(
            got.is_empty(),
            "{who} wrote {} bytes into the FIFO",
            got.len()
        );
    }
}

use std::os::unix::fs::OpenOptionsExt;

#[test]
fn romio_prefix_is_stripped_then_confined() {
    let sb = Sandbox::new();
    let calls = [
        Call::MpiWrite("ufs:/abs/shared.dat"),
        Call::MpiWrite("ufs:../../outside/u"),
    ];
    confined(&sb, &calls, End::Clean, |_| {});
    assert_eq!(size(&sb.root().join("abs/shared.dat")), BYTES as u64);
    assert_eq!(size(&sb.root().join("outside/u")), BYTES as u64);
    assert!(!sb.root().join("ufs:").exists());
    let calls = [Call::MpiWrite("ufs:data/f")];
    let out = sb.outside();
    confined(&sb, &calls, End::Refused, |root| {
        std::os::unix::fs::symlink(&out, root.join("data")).unwrap();
    });
}

/// A symlink swapped in while the replay runs: a thread exchanges `race` (a directory) with
/// a symlink to the outside as fast as it can while the replay opens `race/f` thousands of
/// times. A check by name followed by an open by name let some of those opens through the
/// link; resolution from descriptors never does. (The replay may end clean or refuse the
/// link when it sees it; either way nothing outside changes.)
#[test]
fn a_symlink_swapped_in_during_the_replay_never_leads_out() {
    let sb = Sandbox::new();
    let calls = [Call::Write("race/f")];
    let t = trace(&sb.s.join("trace"), &calls, 3000);
    let before = sb.listing();
    let root = sb.root();
    let out = sb.outside();
    for round in 0..40 {
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("race")).unwrap();
        std::os::unix::fs::symlink(&out, root.join("swap")).unwrap();
        let stop = AtomicBool::new(false);
        let swaps = std::sync::atomic::AtomicU64::new(0);
        let (a, b) = (
            std::ffi::CString::new(root.join("race").to_str().unwrap()).unwrap(),
            std::ffi::CString::new(root.join("swap").to_str().unwrap()).unwrap(),
        );
        let o = std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: NUL-terminated paths; RENAME_EXCHANGE swaps the two entries.
                    let rc = unsafe {
                        libc::renameat2(
                            libc::AT_FDCWD,
                            a.as_ptr(),
                            libc::AT_FDCWD,
                            b.as_ptr(),
                            libc::RENAME_EXCHANGE,
                        )
                    };
                    if rc == 0 {
                        swaps.fetch_add(1, Ordering::Relaxed);
                    }
                    // Mostly a directory, a symlink only between two swaps: a check by name
                    // then mostly passes, and the open after it sometimes meets the link.
                    if swaps.load(Ordering::Relaxed).is_multiple_of(2) {
                        std::thread::sleep(std::time::Duration::from_micros(20));
                    }
                }
            });
            let o = Command::new("timeout")
                .args(["-k", "5", "60"])
                .arg(bin("iotrex"))
                .arg("replay")
                .arg(&t)
                .arg("--root")
                .arg(&root)
                .output()
                .unwrap();
            stop.store(true, Ordering::Relaxed);
            o
        });
        eprintln!(
            "round {round}: {:?} after {} swaps",
            end_of(&o),
            swaps.load(Ordering::Relaxed)
        );
        assert!(
            swaps.load(Ordering::Relaxed) > 0,
            "the swaps failed: nothing was tested"
        );
        assert_eq!(
            sb.listing(),
            before,
            "round {round}: the replay wrote through the swapped-in symlink:\n{}",
            text(&o)
        );
    }
}

/// An MPI-IO open under `mpirun` while `race/f` is swapped, over and over, with a symlink to a
/// file outside the root (`RENAME_EXCHANGE`): the library opens files by name, and given
/// `/proc/self/fd/DIR/f` it followed a symlink swapped in at that instant and wrote 64 bytes
/// over the outside file. Given `/proc/self/fd/FILE` of the file the replay opened confined
/// first, it opens that very file whatever the directory holds.
#[test]
fn a_symlink_swapped_in_during_an_mpi_io_open_never_leads_out() {
    let sb = Sandbox::new();
    let calls = [Call::MpiWrite("race/f")];
    let t = trace(&sb.s.join("trace"), &calls, 2000);
    let before = sb.listing();
    let root = sb.root();
    let keep = sb.outside().join("keep");
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    for round in 0..10 {
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("race")).unwrap();
        std::fs::write(root.join("race/f"), b"").unwrap();
        std::os::unix::fs::symlink(&keep, root.join("race/lnk")).unwrap();
        let stop = AtomicBool::new(false);
        let swaps = std::sync::atomic::AtomicU64::new(0);
        let (a, b) = (
            std::ffi::CString::new(root.join("race/f").to_str().unwrap()).unwrap(),
            std::ffi::CString::new(root.join("race/lnk").to_str().unwrap()).unwrap(),
        );
        let o = std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: NUL-terminated paths; RENAME_EXCHANGE swaps the two entries.
                    let rc = unsafe {
                        libc::renameat2(
                            libc::AT_FDCWD,
                            a.as_ptr(),
                            libc::AT_FDCWD,
                            b.as_ptr(),
                            libc::RENAME_EXCHANGE,
                        )
                    };
                    if rc == 0 {
                        swaps.fetch_add(1, Ordering::Relaxed);
                    }
                    // Mostly the file, the symlink only between two swaps: the mapping then
                    // mostly finds the file, and what opens it after sometimes meets the link.
                    if swaps.load(Ordering::Relaxed).is_multiple_of(2) {
                        std::thread::sleep(std::time::Duration::from_micros(50));
                    }
                }
            });
            let o = Command::new("timeout")
                .args(["-k", "5", "120", "mpirun", "-np", "1", "--oversubscribe"])
                .args(["--mca", "btl", "self,vader"])
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
                .env("LD_PRELOAD", "")
                .arg(bin("iotrex-replay"))
                .arg(&t)
                .arg("--root")
                .arg(&root)
                .output()
                .unwrap();
            stop.store(true, Ordering::Relaxed);
            o
        });
        eprintln!(
            "round {round}: {} after {} swaps",
            o.status,
            swaps.load(Ordering::Relaxed)
        );
        assert!(
            swaps.load(Ordering::Relaxed) > 0,
            "the swaps failed: nothing was tested"
        );
        assert_ne!(o.status.code(), Some(124), "the replay hung:\n{}", text(&o));
        assert_eq!(
            sb.listing(),
            before,
            "round {round}: the replay's MPI-IO open went through the swapped-in symlink:\n{}",
            text(&o)
        );
    }
}

/// A root on a file system mounted read-only (a real tmpfs mounted `ro`) is refused before
/// any call, by both replayers, saying the mount is read-only: the probe's EROFS, not a
/// permission the user could fix with `mkdir -p`.
#[test]
fn a_root_on_a_read_only_mount_is_refused_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("trace")).unwrap();
    let t = trace(&dir.path().join("trace"), &[Call::Write("/data/f")], 1);
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"])
        .arg(&ro)
        .output()
        .unwrap();
    assert!(mounted.status.success(), "mount: {}", text(&mounted));
    let outs = replays(&t, &ro, || {});
    let _ = Command::new("umount").arg(&ro).status();
    for (who, o) in outs {
        let t = text(&o);
        assert!(!o.status.success(), "{who}:\n{t}");
        assert!(t.contains("on a read-only file system"), "{who}:\n{t}");
        assert!(t.contains("mounted read-write"), "{who}:\n{t}");
    }
}
