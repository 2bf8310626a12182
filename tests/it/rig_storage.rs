//! The storage rig (`scripts/storage.sh`, through `tests/it/common/storage.rs`): each profile
//! mounts what it says, the device counts say where reads and writes were served, a throttle
//! rule exists exactly while its rig is up, and teardown leaves nothing. Mechanisms, not
//! times: nothing here depends on the machine's speed or load.

use crate::common;
use common::storage::{DevStats, Storage, run_script};
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

const MIB: u64 = 1 << 20;

/// The mount's options, from /proc/mounts.
fn mount_entry(mnt: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string("/proc/mounts").unwrap();
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(1) == Some(&mnt.to_str().unwrap())).then(|| (f[2].to_string(), f[3].to_string()))
    })
}

/// Writes `n` bytes of a pattern to `path`, with an fsync when `sync` is set.
fn write_file(path: &Path, n: u64, sync: bool) {
    let mut f = std::fs::File::create(path).unwrap();
    let block: Vec<u8> = (0..MIB).map(|i| (i * 7 % 251) as u8).collect();
    for _ in 0..n / MIB {
        f.write_all(&block).unwrap();
    }
    if sync {
        f.sync_all().unwrap();
    }
}

fn read_file(path: &Path) -> u64 {
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_end(&mut buf)
        .unwrap();
    buf.len() as u64
}

/// What `f` made the device serve.
fn served(s: &Storage, f: impl FnOnce()) -> DevStats {
    let before = s.stats();
    f();
    s.stats() - before
}

/// A rule for `mm` in one of the root blkio cgroup's throttle files.
fn rule(file: &str, mm: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/sys/fs/cgroup/blkio/blkio.throttle.{file}"))
        .unwrap_or_else(|e| panic!("read blkio.throttle.{file}: {e}"));
    text.lines()
        .find_map(|l| l.strip_prefix(mm)?.strip_prefix(' ')?.parse().ok())
}

/// Nothing of rig `name` is left: no directory, no mount, no loop device on its file.
fn assert_gone(name: &str, mnt: &Path) {
    assert!(!mnt.exists(), "{} is left after down", mnt.display());
    assert!(
        mount_entry(mnt).is_none(),
        "{} still mounted",
        mnt.display()
    );
    let list = run_script(&["list"]);
    assert!(!String::from_utf8_lossy(&list.stdout).contains(name));
    let out = Command::new("losetup").arg("-a").output().unwrap();
    let all = String::from_utf8_lossy(&out.stdout);
    assert!(
        !all.contains(name),
        "a loop device still backs {name}:\n{all}"
    );
}

#[test]
fn ext4_reads_come_from_the_device_until_cached_and_writes_reach_it_on_fsync() {
    let s = Storage::up("ext4");
    assert_eq!(mount_entry(&s.mnt).expect("mounted").0, "ext4");
    let dev = s.device().expect("a loop device");
    assert!(dev.to_string_lossy().starts_with("/dev/loop"), "{dev:?}");
    let f = s.mnt.join("data");

    let w = served(&s, || write_file(&f, 4 * MIB, true));
    assert!(
        w.write_bytes >= 4 * MIB,
        "4 MiB written and fsynced, the device wrote {w:?}"
    );

    s.drop_caches();
    let r = served(&s, || assert_eq!(read_file(&f), 4 * MIB));
    assert!(
        r.read_bytes >= 4 * MIB,
        "4 MiB read after drop_caches, the device read {r:?}"
    );

    // The page cache serves the second read: the device sees (almost) nothing.
    let again = served(&s, || assert_eq!(read_file(&f), 4 * MIB));
    assert!(
        again.read_bytes < 64 * 1024,
        "a cached read reached the device: {again:?}"
    );

    let name = s.name.clone();
    let mnt = s.mnt.clone();
    drop(s);
    assert_gone(&name, &mnt);
}

#[test]
fn sync_profile_writes_through_without_fsync() {
    let s = Storage::up("sync");
    let (fs, opts) = mount_entry(&s.mnt).expect("mounted");
    assert_eq!(fs, "ext4");
    assert!(
        opts.split(',').any(|o| o == "sync"),
        "not mounted -o sync: {opts}"
    );
    // No fsync: a sync mount writes every write through before it returns.
    let w = served(&s, || write_file(&s.mnt.join("data"), MIB, false));
    assert!(
        w.write_bytes >= MIB,
        "1 MiB written on a sync mount, the device wrote {w:?} by the time write returned"
    );
}

#[test]
fn throttled_profile_has_its_rules_while_up_and_none_after_down() {
    let s = Storage::up("throttled:40M:400");
    let mm = s.major_minor().expect("a loop device");
    for f in ["read_bps_device", "write_bps_device"] {
        assert_eq!(rule(f, &mm), Some(40 * MIB), "{f} of {mm}");
    }
    for f in ["read_iops_device", "write_iops_device"] {
        assert_eq!(rule(f, &mm), Some(400), "{f} of {mm}");
    }
    // The rule is on the device the file system is on: its reads are counted as usual.
    let f = s.mnt.join("data");
    write_file(&f, MIB, true);
    s.drop_caches();
    let r = served(&s, || assert_eq!(read_file(&f), MIB));
    assert!(r.read_bytes >= MIB, "{r:?}");

    // Changed while up, then removed by down.
    let out = run_script(&["throttle", &s.name, "8M:100"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(rule("read_bps_device", &mm), Some(8 * MIB));
    assert_eq!(rule("write_iops_device", &mm), Some(100));
    drop(s);
    for f in [
        "read_bps_device",
        "write_bps_device",
        "read_iops_device",
        "write_iops_device",
    ] {
        assert_eq!(
            rule(f, &mm),
            None,
            "{f} still has a rule for {mm} after down"
        );
    }
}

#[test]
fn tmpfs_has_no_device_to_count_or_throttle() {
    let s = Storage::up("tmpfs");
    assert_eq!(mount_entry(&s.mnt).expect("mounted").0, "tmpfs");
    assert!(s.device().is_none());
    let stats = run_script(&["stats", &s.name]);
    assert!(!stats.status.success());
    assert!(
        String::from_utf8_lossy(&stats.stderr).contains("tmpfs"),
        "{stats:?}"
    );
    let t = run_script(&["throttle", &s.name, "40M:400"]);
    assert!(!t.status.success(), "throttling a tmpfs succeeded");
    let err = String::from_utf8_lossy(&t.stderr);
    assert!(err.contains("cannot be throttled"), "{err}");
    let (name, mnt) = (s.name.clone(), s.mnt.clone());
    drop(s);
    assert_gone(&name, &mnt);
}

#[test]
fn bad_profiles_and_no_root_are_clear_errors() {
    for (profile, says) in [
        ("zfs", "unknown profile 'zfs'"),
        ("throttled:fast", "not a byte rate: 'fast'"),
        ("throttled:40M:x", "IOPS must be a number"),
        ("ext4:2G", "takes no parameters"),
    ] {
        let e = Storage::try_up(profile).err().expect(profile);
        assert!(e.contains(says), "{profile}: {e}");
    }
    // A backing file the backing directory has no room for is refused at once, naming the
    // variables to change, and leaves nothing behind.
    let name = format!("test-{}-huge", std::process::id());
    let out = std::process::Command::new("bash")
        .arg(common::storage::script())
        .args(["up", &name, "ext4"])
        .env("IOTREX_STORAGE_SIZE", "64T")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("no room for a 64T backing file") && err.contains("IOTREX_STORAGE_DIR"),
        "{err}"
    );
    assert!(
        common::storage::run_script(&["down", &name])
            .status
            .success()
    );
    let listed = common::storage::run_script(&["list"]);
    assert!(!String::from_utf8_lossy(&listed.stdout).contains(&name));
    // A user without root is told what root is needed for; nothing is set up.
    let out = common::as_nobody(&common::storage::script(), &["up", "nonroot", "ext4"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs root"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Replays on another rig: the cache and durability calls a trace records make the replay's
// device serve what the application's did (`tests/apps/cache_calls.c`, 2 ranks).

/// Ranks of the traced runs.
const NP: u32 = 2;

/// A run of `cache_calls MODE` traced with its files on rig `on`: the trace, what the rig's
/// device served during the run (nothing for tmpfs), and the bytes the ranks read and wrote (their own counts).
struct Traced {
    trace: std::path::PathBuf,
    served: DevStats,
    read: u64,
    wrote: u64,
}

fn trace_on(on: &Storage, mode: &str, scratch: &Path) -> Traced {
    let data = on.mnt.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let trace = scratch.join(format!("{mode}.iotrex"));
    let app = common::app("cache_calls");
    let args = common::args(&[mode, data.to_str().unwrap()]);
    let mut run = None;
    let mut go = || {
        run = Some(common::mpirun(
            NP,
            &app,
            &args,
            &trace,
            &common::Opts::default(),
        ))
    };
    // A tmpfs rig has no device to count.
    let served = match on.device() {
        Some(_) => served(on, go),
        None => {
            go();
            DevStats::default()
        }
    };
    let out = run.expect("ran").stdout();
    let (mut read, mut wrote) = (0, 0);
    for l in out.lines().filter(|l| l.starts_with("rank ")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        read += w[3].parse::<u64>().unwrap();
        wrote += w[5].parse::<u64>().unwrap();
    }
    assert_eq!(
        out.lines().filter(|l| l.starts_with("rank ")).count(),
        NP as usize,
        "{out}"
    );
    Traced {
        trace,
        served,
        read,
        wrote,
    }
}

/// `iotrex replay` of `trace` under rig `on`'s mount, ranks as threads meeting at their real
/// barriers, no compute: the report, and what the rig's device served until it returned.
fn replay_on(on: &Storage, trace: &Path) -> (serde_json::Value, DevStats) {
    let mut out = None;
    let served = served(on, || {
        out = Some(common::iotrex(&[
            "--json",
            "replay",
            trace.to_str().unwrap(),
            "--root",
            on.mnt.to_str().unwrap(),
            "--compute",
            "none",
            "--comm",
            "real",
        ]))
    });
    let o = out.expect("ran");
    assert!(o.status.success(), "{}", common::text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["failed"], 0, "{v}");
    assert_eq!(v["mismatches"], serde_json::json!([]), "{v}");
    (v, served)
}

/// `iotrex-replay` of `trace` under `mpirun -np NP` (the MPI runtime) under rig `on`'s mount,
/// as [`replay_on`]: the report, and what the rig's device served.
fn replay_mpi_on(on: &Storage, trace: &Path, scratch: &Path) -> (serde_json::Value, DevStats) {
    let bin = common::target_dir().join("release/iotrex-replay");
    assert!(
        bin.exists(),
        "{} is not built: cargo build --release -p replay_mpi",
        bin.display()
    );
    let json = scratch.join("replay.json");
    let mut out = None;
    let served = served(on, || {
        out = Some(
            Command::new("timeout")
                .args([
                    "-k",
                    "5",
                    "120",
                    "mpirun",
                    "-np",
                    &NP.to_string(),
                    "--oversubscribe",
                ])
                .args(["--mca", "btl", "self,vader"])
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
                .env("LD_PRELOAD", "")
                .arg(&bin)
                .arg(trace)
                .arg("--root")
                .arg(&on.mnt)
                .args(["--compute", "none", "--comm", "real", "--json-out"])
                .arg(&json)
                .output()
                .unwrap(),
        )
    });
    let o = out.expect("ran");
    assert!(o.status.success(), "{}", common::text(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["failed"], 0, "{v}");
    assert_eq!(v["mismatches"], serde_json::json!([]), "{v}");
    (v, served)
}

#[test]
fn replay_of_fadvise_dontneed_reads_from_the_device_as_the_application_did() {
    let scratch = common::scratch();
    let (a, b) = (Storage::up("ext4"), Storage::up("ext4"));
    let app = trace_on(&a, "fadvise", scratch.path());
    assert_eq!(app.read, NP as u64 * 2 * MIB);
    // The application's reads were cold: after fsync and posix_fadvise(DONTNEED), its device
    // served them.
    assert!(
        app.served.read_bytes >= app.read,
        "the application read {} bytes, its device served {:?}",
        app.read,
        app.served
    );
    let tf = rsd::TraceFile::read(&app.trace).unwrap();
    let fadvise: Vec<_> = (0..NP)
        .flat_map(|r| tf.trace.expand(r))
        .filter(|c| c.op == rsd::Op::Fadvise)
        .collect();
    assert_eq!(fadvise.len(), NP as usize, "one fadvise per rank");
    let (_, replay) = replay_on(&b, &app.trace);
    assert!(
        replay.read_bytes >= app.read,
        "the replay read {} bytes; its device served {replay:?}, the application's {:?}",
        app.read,
        app.served
    );
    // The same under mpirun, on the same rig again (its files are there: the replay's fsync
    // and fadvise leave none of them cached).
    let (_, replay) = replay_mpi_on(&b, &app.trace, scratch.path());
    assert!(
        replay.read_bytes >= app.read,
        "iotrex-replay read {} bytes; its device served {replay:?}",
        app.read
    );

    // Without the fadvise the same reads come from the page cache, the application's and
    // the replay's alike: what the replay above read from the device is the fadvise's doing.
    let b2 = Storage::up("ext4");
    let warm = trace_on(&a, "nofadvise", scratch.path());
    assert!(warm.served.read_bytes < MIB / 2, "{:?}", warm.served);
    let (_, replay) = replay_on(&b2, &warm.trace);
    assert!(replay.read_bytes < MIB / 2, "{replay:?}");
}

#[test]
fn replay_of_o_direct_transfers_goes_to_the_device_aligned() {
    let scratch = common::scratch();
    let (a, b) = (Storage::up("ext4"), Storage::up("ext4"));
    let app = trace_on(&a, "direct", scratch.path());
    // O_DIRECT at the open and set by fcntl(F_SETFL): every byte read and written went to
    // the device, although each rank reads what another just wrote.
    assert_eq!(app.read, 2 * NP as u64 * MIB);
    assert!(app.served.read_bytes >= app.read, "{:?}", app.served);
    assert!(app.served.write_bytes >= app.wrote, "{:?}", app.served);
    let (v, replay) = replay_on(&b, &app.trace);
    assert!(
        replay.read_bytes >= app.read && replay.write_bytes >= app.wrote,
        "the application read {} and wrote {} bytes; the replay's device served {replay:?}",
        app.read,
        app.wrote
    );
    assert_eq!(v["buffered_direct"], 0, "{v}");

    // Direct transfers tmpfs took unaligned cannot be issued aligned on ext4: the replay
    // issues them through the page cache and says so.
    let t = Storage::up("tmpfs");
    let odd = trace_on(&t, "unaligned", scratch.path());
    assert_eq!(odd.wrote, NP as u64 * 1000);
    let (v, _) = replay_on(&b, &odd.trace);
    assert_eq!(v["buffered_direct"], NP, "{v}");
    let why = v["buffered_direct_why"].as_str().unwrap_or_default();
    assert!(
        why.contains("pwrite of 1000 bytes") && why.contains("alignment"),
        "{v}"
    );
}

#[test]
fn replay_of_fsync_fdatasync_and_o_dsync_writes_to_the_device_before_returning() {
    let scratch = common::scratch();
    let (a, b) = (Storage::up("ext4"), Storage::up("ext4"));
    // Each rank writes 2 MiB then fsync or fdatasync, 1 MiB through O_DSYNC, 1 MiB then
    // sync_file_range (waiting), and 1 MiB then syncfs.
    let app = trace_on(&a, "fsync", scratch.path());
    assert_eq!(app.wrote, NP as u64 * 5 * MIB);
    assert!(app.served.write_bytes >= app.wrote, "{:?}", app.served);
    let (_, replay) = replay_on(&b, &app.trace);
    assert!(
        replay.write_bytes >= app.wrote,
        "the application's {} bytes were on its device when it ended; the replay's device \
         wrote {replay:?}",
        app.wrote
    );

    // The same writes without them stay in the page cache past the end of the run (write-back
    // waits 30 s): the device writes above are the sync calls' doing.
    let b2 = Storage::up("ext4");
    let lazy = trace_on(&a, "nosync", scratch.path());
    assert!(
        lazy.served.write_bytes < lazy.wrote / 2,
        "{:?}",
        lazy.served
    );
    let (_, replay) = replay_on(&b2, &lazy.trace);
    assert!(replay.write_bytes < lazy.wrote / 2, "{replay:?}");
}

#[test]
fn replay_of_mpi_file_sync_writes_to_the_device_and_passes_access_style_on() {
    let scratch = common::scratch();
    let (a, b) = (Storage::up("ext4"), Storage::up("ext4"));
    let app = trace_on(&a, "mpiio", scratch.path());
    assert_eq!(app.wrote, NP as u64 * 2 * MIB);
    assert!(app.served.write_bytes >= app.wrote, "{:?}", app.served);
    let tf = rsd::TraceFile::read(&app.trace).unwrap();
    let syncs = (0..NP)
        .flat_map(|r| tf.trace.expand(r))
        .filter(|c| c.op == rsd::Op::FileSync)
        .count();
    assert_eq!(syncs, NP as usize);
    // The hint the program passed is in the header (rank 0's file).
    let access_style = |tf: &rsd::TraceFile| -> Vec<String> {
        let mc = tf
            .header
            .mpi_config
            .as_ref()
            .expect("MPI configuration recorded");
        mc.file_hints
            .iter()
            .flat_map(|(_, h)| h.iter().filter(|(k, _)| k == "access_style"))
            .map(|(_, v)| v.clone())
            .collect()
    };
    assert_eq!(
        access_style(&tf),
        ["write_once,sequential"],
        "{:?}",
        tf.header.mpi_config
    );

    // The MPI runtime's replay, itself traced: its MPI_File_sync wrote the bytes to B's
    // device, and its MPI_File_open passed the hint as the program did.
    let replayed = scratch.path().join("replayed.iotrex");
    let bin = common::target_dir().join("release/iotrex-replay");
    let args = common::args(&[
        app.trace.to_str().unwrap(),
        "--root",
        b.mnt.to_str().unwrap(),
        "--compute",
        "none",
        "--comm",
        "real",
    ]);
    let mut run = None;
    let replay = served(&b, || {
        run = Some(common::mpirun(
            NP,
            &bin,
            &args,
            &replayed,
            &common::Opts::default(),
        ))
    });
    assert!(replay.write_bytes >= app.wrote, "{replay:?}");
    let tf = run.expect("ran").read();
    assert_eq!(
        access_style(&tf),
        ["write_once,sequential"],
        "{:?}",
        tf.header.mpi_config
    );
}

// ---------------------------------------------------------------------------------------------
// Compute apart from storage waits: `xstorage mapped` reads its part back through a mapping,
// so the time the device takes is spent in page faults between traced calls (docs/xstorage.md).

/// The off-CPU time a trace recorded in its gaps, summed over its events: (blocked, waiting
/// for a core), ns.
fn gap_waits(trace: &Path) -> (u64, u64) {
    fn walk(nodes: &[rsd::trace::Node], acc: &mut (u64, u64)) {
        for n in nodes {
            match &n.kind {
                rsd::trace::NodeKind::Event(e) => {
                    if let Some(w) = e.timing.waits {
                        acc.0 += w.blocked_ns;
                        acc.1 += w.runq_ns;
                    }
                    walk(&e.children, acc);
                }
                rsd::trace::NodeKind::Loop(l) => walk(&l.body, acc),
            }
        }
    }
    let tf = rsd::TraceFile::read(trace).unwrap_or_else(|e| panic!("{}: {e}", trace.display()));
    let mut acc = (0, 0);
    walk(&tf.trace.nodes, &mut acc);
    acc
}

/// `xstorage mapped` traced with its file on rig `on` (NP ranks, 8 blocks of 256 KiB per rank,
/// 400 units of compute after each: about 70 ms of CPU per rank).
fn trace_mapped_on(on: &Storage, name: &str, scratch: &Path) -> std::path::PathBuf {
    let data = on.mnt.join("mapped");
    std::fs::create_dir_all(&data).unwrap();
    let trace = scratch.join(format!("{name}.iotrex"));
    on.drop_caches();
    let run = common::mpirun(
        NP,
        &common::app("xstorage"),
        &common::args(&["mapped", data.to_str().unwrap(), "8", "262144", "400"]),
        &trace,
        &common::Opts::default(),
    );
    assert!(run.stdout().contains("app_time"), "{}", run.stdout());
    trace
}

/// `iotrex replay --compute work` of `trace` on rig `on`: the compute it planned, summed over
/// ranks (ns).
fn planned_compute_on(on: &Storage, trace: &Path) -> u64 {
    let root = on.mnt.join("replay");
    std::fs::create_dir_all(&root).unwrap();
    let o = common::iotrex(&[
        "--json",
        "replay",
        trace.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--compute",
        "work",
        "--comm",
        "real",
    ]);
    assert!(o.status.success(), "{}", common::text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["failed"], 0, "{v}");
    v["compute_plan_ns"]
        .as_u64()
        .unwrap_or_else(|| panic!("no compute_plan_ns: {v}"))
}

#[test]
fn replay_on_fast_storage_of_a_slow_storage_trace_plans_the_fast_runs_compute() {
    // 8 MiB/s: the throttle lets about a tenth of a second's worth through at once after an
    // idle spell, which at 40 MiB/s would be all of this run's 4 MiB.
    let slow = Storage::up("throttled:8M:200");
    let fast = Storage::up("tmpfs");
    let dir = common::scratch();
    let slow_trace = trace_mapped_on(&slow, "slow", dir.path());
    let fast_trace = trace_mapped_on(&fast, "fast", dir.path());
    // The device's page-ins were waited for between traced calls, and the tracer saw it:
    // 4 MiB at 8 MiB/s is 500 ms of device time; tmpfs serves faults from memory.
    let (slow_blocked, _) = gap_waits(&slow_trace);
    let (fast_blocked, _) = gap_waits(&fast_trace);
    assert!(
        slow_blocked > 50_000_000 && fast_blocked < slow_blocked / 5,
        "blocked in gaps: slow storage {slow_blocked} ns, fast {fast_blocked} ns"
    );
    // Replayed on the fast rig, the slow trace asks for the compute the fast run did, not
    // for its page-in waits as well.
    let from_slow = planned_compute_on(&fast, &slow_trace);
    let from_fast = planned_compute_on(&fast, &fast_trace);
    let err = (from_slow as f64 - from_fast as f64) / from_fast as f64;
    assert!(
        err.abs() <= 0.10,
        "compute planned from the slow trace {from_slow} ns vs the fast trace's {from_fast} ns ({:+.1}%), slow trace blocked {slow_blocked} ns",
        err * 100.0
    );
}

#[test]
fn replay_of_reads_through_a_mapping_faults_them_in_from_the_device() {
    // Traced on a tmpfs, whose page faults no device serves; replayed on an ext4 rig, whose
    // device serves the replay's, as it served the application's there.
    let (a, b) = (Storage::up("tmpfs"), Storage::up("ext4"));
    let dir = common::scratch();
    let trace = trace_mapped_on(&a, "mapped", dir.path());
    let tf = rsd::TraceFile::read(&trace).unwrap();
    let per_rank = 8 * 262_144;
    for r in 0..NP {
        let touched: Vec<i64> = tf
            .trace
            .expand(r)
            .iter()
            .filter(|c| c.op == rsd::Op::Munmap)
            .filter_map(|c| c.op.array_values(&c.params, "touched").map(|t| t[0]))
            .collect();
        // Every page of its part, read once through the mapping (fault-around adds none: the
        // mapping is the rank's part, and every page of it is read).
        assert_eq!(touched, [per_rank], "rank {r}'s munmap");
    }
    let (_, replay) = replay_on(&b, &trace);
    assert!(
        replay.read_bytes >= NP as u64 * per_rank as u64,
        "the ranks read {} bytes through their mappings; the replay's device served {replay:?}",
        NP as u64 * per_rank as u64
    );
}
