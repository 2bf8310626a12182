//! Forked children, traced as processes of their rank (`docs/processes.md`).
//!
//! The `fork` hook gives each child a number `k` from a counter in an anonymous shared page
//! that every descendant of the rank's own process inherits, so the numbers, and the bound
//! `IOTREX_MAX_PROCESSES`, hold for the whole tree. The child's state is reset to a fresh
//! compressor of its slot (`nranks + rank * stride + k`, [`rsd::process::slot`]) and it
//! records as any process does. When it ends (exit, `_exit`, a terminating signal, `exec`)
//! it writes its record, a trace file of its slot, into the spool of its rank's own process
//! (`.iotrex-procs.<pid>/<slot>.iotrex` beside the trace), which folds the spool in when it
//! writes the trace ([`fold`]). Nothing here runs in a program that never forks or execs.
//!
//! An image started by `exec` joins the tree of the process that exec'd ([`before_exec`],
//! [`join_from_env`]): the counter page is a file in the spool, so that it survives the
//! `exec`, and the new image learns its place through [`rsd::process::PROCESS_VAR`].

use crate::guard::{BUSY, Enter};
use crate::state::{RECORDING, STATE, State, now_ns, say};
use rsd::process::{End, Group, Handoff, Processes};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// What one fork leaves in the shared page for its child `k`: who forked it and where, so a
/// child that never writes its record is still named, with its parent and site.
#[repr(C)]
struct Entry {
    /// `u32::MAX`: the rank's own process; else the parent's number.
    parent: AtomicU32,
    site: AtomicU64,
}

/// An [`Entry`]'s parent for a number whose spawn failed: no process had it.
const NOT_STARTED: u32 = u32::MAX - 1;

/// The page shared by a rank's process tree.
#[repr(C)]
struct Shared {
    /// Numbers given so far (past the bound too).
    next: AtomicU32,
    /// Forks past the bound, not traced.
    untraced: AtomicU32,
    // The `Entry` of each number follows, `max` of them.
}

/// The tree of the rank's own process: set there at its first fork, inherited by the
/// children (a forked image keeps the parent's memory).
struct Tree {
    shared: usize,
    /// Children traced at most, and slots per rank.
    max: u32,
    nranks: u32,
    /// The rank count from the launcher's environment, 0 without one ([`rank_of`]).
    launched: u32,
    rank: u32,
    spool: String,
    /// The pid of the rank's own process: the one that folds the spool.
    root_pid: i64,
}

static TREE: OnceLock<Tree> = OnceLock::new();

/// This process's number in its tree, `u32::MAX` in the rank's own process.
static ME: AtomicU32 = AtomicU32::new(u32::MAX);
/// This image was started by `exec` and joined its tree: its record names its command.
static EXECED: AtomicBool = AtomicBool::new(false);
/// In a child the `vfork` hook forked (untraced: it only sets up descriptors and execs), the
/// number of the process that forked it (`u32::MAX`: the rank's own process) and the call
/// site, so that the image it execs joins the tree as that process's child.
static VFORK_PARENT: AtomicU32 = AtomicU32::new(u32::MAX);
static VFORK_SITE: AtomicU64 = AtomicU64::new(0);
static IS_VFORK_CHILD: AtomicBool = AtomicBool::new(false);
/// What this image hands the one its `exec` starts (`IOTREX_PROCESS=...`), decided at the
/// first attempt: a shell tries `execve` on each directory of `PATH` in turn, and every
/// attempt must hand the same place.
static HANDOFF: OnceLock<Option<CString>> = OnceLock::new();
/// `exit`'s status, for the record the destructor writes (`i32::MIN`: main returned).
pub static EXIT_STATUS: AtomicI32 = AtomicI32::new(i32::MIN);

/// In every forked child (the fork handler): it is not the process its parent was, so it
/// writes no record of its parent's number (only atomics: a fork handler).
pub fn forget_in_child() {
    ME.store(u32::MAX, Ordering::SeqCst);
    IS_VFORK_CHILD.store(false, Ordering::SeqCst);
}

/// Whether this process is a traced child.
pub fn is_child() -> bool {
    ME.load(Ordering::Relaxed) != u32::MAX
}

impl Tree {
    fn shared(&self) -> &Shared {
        // SAFETY: `shared` is the mapping made in `tree`, never unmapped, zeroed at start.
        unsafe { &*(self.shared as *const Shared) }
    }

    fn entry(&self, k: u32) -> &Entry {
        debug_assert!(k < self.max);
        let at =
            self.shared + std::mem::size_of::<Shared>() + k as usize * std::mem::size_of::<Entry>();
        // SAFETY: the mapping holds `max` entries after the header (aligned: the header's
        // size is a multiple of 8) and `k < max`.
        unsafe { &*(at as *const Entry) }
    }

    /// The slot of number `k`; `None` past the bound (an untraced process).
    fn slot(&self, k: u32) -> Option<u32> {
        (k < self.max)
            .then(|| rsd::process::slot(self.nranks, self.max, self.rank, k))
            .flatten()
    }

    fn path(&self, slot: u32) -> String {
        format!("{}/{slot}.iotrex", self.spool)
    }
}

/// The bound: `IOTREX_MAX_PROCESSES`, default [`rsd::process::DEFAULT_MAX`].
fn max_from_env() -> u32 {
    match std::env::var(rsd::process::MAX_VAR) {
        Ok(v) => match v.trim().parse::<u32>() {
            Ok(n) if n <= 1 << 20 => n,
            _ => {
                say(&format!(
                    "{}={v:?} is not a count from 0 to 1048576; {} children are traced",
                    rsd::process::MAX_VAR,
                    rsd::process::DEFAULT_MAX
                ));
                rsd::process::DEFAULT_MAX
            }
        },
        Err(_) => rsd::process::DEFAULT_MAX,
    }
}

/// The counter page's file in a spool.
fn counter_path(spool: &str) -> String {
    format!("{spool}/counter")
}

/// The counter page's size for a bound.
fn counter_len(max: u32) -> usize {
    std::mem::size_of::<Shared>() + max as usize * std::mem::size_of::<Entry>()
}

/// The counter page mapped shared from its file (made, zeroed, when `create`): a file, not an
/// anonymous mapping, because `exec` drops mappings and an exec'd image numbers its own
/// children from the same counter. `None` when it cannot be.
fn map_counter(spool: &str, max: u32, create: bool) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let len = counter_len(max);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(create)
        .open(counter_path(spool))
        .ok()?;
    if create {
        f.set_len(len as u64).ok()?;
    } else if f.metadata().ok()?.len() < len as u64 {
        return None;
    }
    // SAFETY: a shared mapping of the file just opened, at least `len` long; no address
    // hint; checked below. The mapping outlives the descriptor.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p as usize)
}

/// The rank count and rank a tree made here belongs to, the count as the launcher's
/// environment gives it (0 without one: an MPI program's rank 0 of 1 is not its launcher's
/// process).
fn rank_of(st: &State) -> (u32, u32) {
    (
        st.cfg.env_size.unwrap_or(0),
        st.cfg.env_rank.unwrap_or(st.rank),
    )
}

/// The tree, made at the first fork (or exec) of the rank's own process: the spool
/// directory beside the trace and the counter page in it. `None` when the page cannot be
/// mapped (children then stay untraced, as before).
fn tree(st: &State) -> Option<&'static Tree> {
    if let Some(t) = TREE.get() {
        return Some(t);
    }
    let max = max_from_env();
    let out = st.cfg.out.as_deref().filter(|o| !o.is_empty());
    let dir = match out.and_then(|o| o.rfind('/').map(|i| &o[..i])) {
        Some("") => "/".to_string(),
        Some(d) => d.to_string(),
        None => std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_else(|_| ".".into()),
    };
    let root_pid = crate::exec::getpid();
    let spool = format!("{dir}/.iotrex-procs.{root_pid}");
    let _ = std::fs::create_dir(&spool);
    let Some(shared) = map_counter(&spool, max, true) else {
        let _ = std::fs::remove_file(counter_path(&spool));
        let _ = std::fs::remove_dir(&spool);
        return None;
    };
    let (launched, rank) = rank_of(st);
    let _ = TREE.set(Tree {
        shared,
        max,
        nranks: launched.max(1),
        launched,
        rank,
        spool,
        root_pid,
    });
    TREE.get()
}

/// Takes the next number of the tree for a process whose parent is `parent` (`u32::MAX`: the
/// rank's own process), started at `site`; past the bound it is counted as untraced.
fn take(t: &Tree, parent: u32, site: u64) -> u32 {
    let sh = t.shared();
    let k = sh.next.fetch_add(1, Ordering::SeqCst);
    if t.slot(k).is_some() {
        let e = t.entry(k);
        e.parent.store(parent, Ordering::SeqCst);
        e.site.store(site, Ordering::SeqCst);
    } else {
        sh.untraced.fetch_add(1, Ordering::SeqCst);
    }
    k
}

/// The tree (made at this process's first child) and the next number in it, for a child of
/// this process started at `site` (a fork, or a spawn). `None` when there is no tree.
fn take_child(site: u64) -> Option<(&'static Tree, u32)> {
    let made = crate::state::with_state(|st| tree(st).is_some())?;
    let t = TREE.get().filter(|_| made)?;
    Some((t, take(t, ME.load(Ordering::Relaxed), site)))
}

/// What the parent decided before the real `fork`, for the child.
#[derive(Clone, Copy)]
pub struct Plan {
    k: u32,
    slot: u32,
}

/// In the `fork` hook, before the real call (recording, outside any MPI call): the child's
/// number and slot, or `None` when it is not traced (past the bound, or no page).
pub fn before_fork(site: u64) -> Option<Plan> {
    let _g = Enter::new(BUSY);
    let (t, k) = take_child(site)?;
    let slot = t.slot(k)?;
    Some(Plan { k, slot })
}

/// In the child, after the real `fork` (the fork handler stopped recording): the state reset
/// to the child's slot, the descriptor tables kept, and recording on again.
pub fn in_child(p: Plan) {
    let _g = Enter::new(BUSY);
    ME.store(p.k, Ordering::SeqCst);
    EXIT_STATUS.store(i32::MIN, Ordering::SeqCst);
    crate::exec::remember_pid();
    crate::exclude::reset_counts();
    let ok = crate::state::with_state(|st| st.reset_for_child(p.slot, now_ns())).is_some();
    if ok {
        crate::state::FORKED.store(false, Ordering::SeqCst);
        RECORDING.store(true, Ordering::SeqCst);
    }
}

/// In the `vfork` hook's parent, before the real `fork` (recording): the tree made, and this
/// process's number, for the child's [`mark_vfork_child`]. `None` when there is no tree.
pub fn before_vfork() -> Option<u32> {
    let _g = Enter::new(BUSY);
    crate::state::with_state(|st| tree(st).is_some())?.then(|| ME.load(Ordering::Relaxed))
}

/// In the `vfork` hook's child (untraced, as the fork handler left it): the image it execs
/// joins the tree as a child of `parent`, started at `site`.
pub fn mark_vfork_child(parent: u32, site: u64) {
    VFORK_PARENT.store(parent, Ordering::SeqCst);
    VFORK_SITE.store(site, Ordering::SeqCst);
    IS_VFORK_CHILD.store(true, Ordering::SeqCst);
}

/// Whether this process is a child of the `vfork` hook.
pub fn is_vfork_child() -> bool {
    IS_VFORK_CHILD.load(Ordering::Relaxed)
}

/// Before a successful `exec` would replace this image: the `IOTREX_PROCESS=...` entry for
/// the new image's environment, or `None` to hand nothing (the image then starts a trace of
/// its own, as a process that was never exec'd by a traced one). Decided once per image.
/// - A traced child hands its successor a number of its own, as its child; the caller
///   writes the child's record (ended by `exec`).
/// - A child of the `vfork` hook hands its successor a number as its parent's child.
/// - The rank's own process writes what it recorded as a process of its own (its command,
///   ended by `exec`) and hands over its place: the image it becomes is the rank's own
///   process, which writes the trace ([`exec_own_record`] tells the caller so).
pub fn before_exec(site: u64) -> Option<&'static std::ffi::CStr> {
    HANDOFF
        .get_or_init(|| {
            let _g = Enter::new(BUSY);
            entry_of(&handoff(site)?)
        })
        .as_deref()
}

/// Whether this image handed its place to the image its `exec` starts and wrote its own
/// record: the rank's own process then writes no trace before `exec`.
pub fn exec_own_record() -> bool {
    matches!(HANDOFF.get(), Some(Some(_))) && !is_child() && !IS_VFORK_CHILD.load(Ordering::SeqCst)
}

/// At the exit of the rank's own process after every `exec` it tried failed (a shell's
/// `exec` of a command it cannot find): its calls are already in its record, a process of the
/// tree, so the state starts over empty (its start kept) and the trace it writes holds them
/// there once, not twice. Calls after the failed `exec` are not recorded.
pub fn restart_after_failed_exec() {
    crate::state::with_state(|st| {
        let start = st.start_ns;
        *st = State::new(st.cfg.clone(), start);
    });
}

/// A spawn: what `posix_spawn`, `system` or `popen` hand the image they start, as this
/// process's child.
pub struct Spawn {
    /// The `IOTREX_PROCESS=...` entry for the image's environment.
    pub entry: CString,
    k: u32,
}

/// Before a spawn by this traced process at `site`: the image it starts takes the next
/// number as this process's child (past the bound it is handed one too, and records nothing).
/// glibc execs inside a clone of its own there, where no `exec` hook runs, so the image's
/// place goes in the environment the spawn is given. `None` when there is no tree.
pub fn before_spawn(site: u64) -> Option<Spawn> {
    if IS_VFORK_CHILD.load(Ordering::SeqCst) {
        return None;
    }
    let _g = Enter::new(BUSY);
    let (t, k) = take_child(site)?;
    let entry = entry_of(&place(t, Some(k), true))?;
    Some(Spawn { entry, k })
}

/// After a spawn that started no image: its number names no process (not missing, not
/// untraced).
pub fn spawn_failed(s: Spawn) {
    let Some(t) = TREE.get() else { return };
    if t.slot(s.k).is_some() {
        t.entry(s.k).parent.store(NOT_STARTED, Ordering::SeqCst);
    } else {
        t.shared().untraced.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The place `k` of tree `t` (`None`: the rank's own process) handed by this process, to the
/// image its `exec` starts or, when `spawned`, to its spawned child.
fn place(t: &Tree, k: Option<u32>, spawned: bool) -> Handoff {
    Handoff {
        pid: crate::exec::getpid(),
        spawned,
        k,
        max: t.max,
        nranks: t.launched,
        rank: t.rank,
        root_pid: t.root_pid,
        spool: t.spool.clone(),
    }
}

/// `IOTREX_PROCESS=...` for `h`.
fn entry_of(h: &Handoff) -> Option<CString> {
    CString::new(format!("{}={}", rsd::process::PROCESS_VAR, h.encode())).ok()
}

fn handoff(site: u64) -> Option<Handoff> {
    let of = |t: &Tree, k: Option<u32>| place(t, k, false);
    if IS_VFORK_CHILD.load(Ordering::SeqCst) {
        let t = TREE.get()?;
        let k = take(
            t,
            VFORK_PARENT.load(Ordering::SeqCst),
            VFORK_SITE.load(Ordering::SeqCst),
        );
        return Some(of(t, Some(k)));
    }
    if is_child() {
        let t = TREE.get()?;
        return Some(of(t, Some(take(t, ME.load(Ordering::SeqCst), site))));
    }
    // The rank's own process: its record is a process of the tree, the new image the rank's.
    // A wrapper that recorded nothing and forked nothing (`taskset`, `numactl`, `env` in front
    // of an MPI program) hands nothing: the image it becomes is simply the process, as before,
    // and its trace holds no process for the wrapper.
    let t = crate::state::with_state(|st| {
        if st.comp.events() == 0 && TREE.get().is_none() {
            return None;
        }
        tree(st)
    })??;
    let k = take(t, u32::MAX, site);
    if k >= t.max {
        return None;
    }
    write_as(k, End::Exec, true);
    Some(of(t, None))
}

/// At start-up (the constructor, before the program runs): an image a traced process exec'd
/// takes its place in that process's tree from [`rsd::process::PROCESS_VAR`], which is
/// removed from the environment (the program's own children must not see it). An image of
/// another rank (a launcher's child exec'ing an MPI program) or of another pid ignores it.
pub fn join_from_env() {
    let Ok(v) = std::env::var(rsd::process::PROCESS_VAR) else {
        return;
    };
    // SAFETY: the constructor runs before the program's own threads exist.
    unsafe { std::env::remove_var(rsd::process::PROCESS_VAR) };
    // SAFETY: getppid has no preconditions.
    let ppid = i64::from(unsafe { libc::getppid() });
    let Some(h) = Handoff::decode(&v).filter(|h| h.is_for(crate::exec::getpid(), ppid)) else {
        return;
    };
    let _g = Enter::new(BUSY);
    crate::state::with_state(|st| join(st, h));
}

fn join(st: &mut State, h: Handoff) {
    if rank_of(st) != (h.nranks, h.rank) {
        return;
    }
    let Some(shared) = map_counter(&h.spool, h.max, false) else {
        return;
    };
    let t = Tree {
        shared,
        max: h.max,
        nranks: h.nranks.max(1),
        launched: h.nranks,
        rank: h.rank,
        spool: h.spool,
        root_pid: h.root_pid,
    };
    let slot = h.k.and_then(|k| t.slot(k));
    if TREE.set(t).is_err() {
        return;
    }
    let Some(k) = h.k else { return };
    ME.store(k, Ordering::SeqCst);
    EXECED.store(true, Ordering::SeqCst);
    match slot {
        Some(slot) => st.reset_for_child(slot, now_ns()),
        // Past the bound: counted as untraced by the process that exec'd; nothing recorded.
        None => RECORDING.store(false, Ordering::SeqCst),
    }
}

/// The `fork` (or `exec`) hook's site of process `k` and its parent, from the shared page;
/// `command` for an image `exec` started (empty for a forked one).
fn group_of(t: &Tree, k: u32, end: End, command: Vec<String>) -> Option<Group> {
    if k >= t.max {
        return None;
    }
    let e = t.entry(k);
    let parent = e.parent.load(Ordering::SeqCst);
    Some(Group {
        slots: rsd::RankSet::single(t.slot(k)?),
        parent: (parent != u32::MAX).then_some(parent),
        site: e.site.load(Ordering::SeqCst),
        command,
        end,
    })
}

/// Set once this child wrote its record.
static WRITTEN: Mutex<bool> = Mutex::new(false);

/// In a traced child that ends by `end`: its record written into the spool, once; recording
/// stops. Never blocks on the state lock (the signal path calls it).
pub fn write_record(end: End) {
    let k = ME.load(Ordering::SeqCst);
    if k == u32::MAX {
        return;
    }
    write_as(k, end, EXECED.load(Ordering::SeqCst));
}

/// [`write_record`] as process `k`, naming the image's command when `named`.
fn write_as(k: u32, end: End, named: bool) {
    let Some(t) = TREE.get() else { return };
    if k >= t.max {
        return;
    }
    let Ok(mut done) = WRITTEN.try_lock() else {
        return;
    };
    if *done {
        return;
    }
    *done = true;
    // A terminating signal that arrives while the record is written (a pool's `terminate`
    // sends SIGTERM to workers that are already leaving through `_exit`) waits for it: dying
    // half-way would leave the process missing from the trace.
    let exiting = crate::finalize::EXITING.swap(true, Ordering::SeqCst);
    write_locked(t, k, end, named);
    if !exiting {
        crate::finalize::EXITING.store(false, Ordering::SeqCst);
        crate::signals::raise_held();
    }
}

/// [`write_as`] once the record is this process's to write.
fn write_locked(t: &Tree, k: u32, end: End, named: bool) {
    let _g = Enter::new(BUSY);
    let bytes = {
        let mut g = match STATE.try_lock() {
            Ok(g) => g,
            Err(_) => return,
        };
        let Some(st) = g.as_mut() else { return };
        RECORDING.store(false, Ordering::SeqCst);
        st.done = true;
        let command = if named {
            st.cfg.argv.clone()
        } else {
            Vec::new()
        };
        record_bytes(t, k, st, end, command)
    };
    let Some(bytes) = bytes else { return };
    let Some(slot) = t.slot(k) else { return };
    if let Some(d) = crate::outfile::Dest::new(&t.path(slot)) {
        let _ = crate::outfile::put(&d, &bytes, false);
    }
}

/// The child's record: its trace, its notes, and its group of one.
fn record_bytes(t: &Tree, k: u32, st: &State, end: End, command: Vec<String>) -> Option<Vec<u8>> {
    let group = group_of(t, k, end, command)?;
    let mut h = rsd::Header::new(1);
    h.command = st.cfg.argv.clone();
    h.wall_ns = now_ns().saturating_sub(st.start_ns);
    h.incomplete = st.incomplete;
    h.notes = st.notes.clone();
    h.excluded = crate::exclude::taken();
    h.processes = Some(Processes {
        stride: t.max,
        groups: vec![group],
        untraced: 0,
    });
    let tf = rsd::TraceFile {
        header: h,
        trace: st.comp.finish_as(t.slot(k)?),
    };
    crate::finalize::encoded(&tf).ok()
}

/// Whether this is the rank's own process of a tree that took numbers: it has processes to
/// fold in, and writes a trace for them even if it recorded no call of its own.
pub fn holds_processes() -> bool {
    TREE.get().is_some_and(|t| {
        !is_child()
            && t.root_pid == crate::exec::getpid()
            && t.shared().next.load(Ordering::SeqCst) > 0
    })
}

/// What the rank's own process folds in when it writes: its children's calls and groups.
#[derive(Default)]
pub struct Folded {
    /// `None` when no process of the tree forked.
    pub processes: Option<Processes>,
    pub notes: Vec<String>,
    pub excluded: Vec<rsd::exclude::Excluded>,
}

/// In the rank's own process as it writes its trace: every child's record in the spool merged
/// into `trace` (children with no record named missing), the spool removed. Nothing when
/// this process never forked, or it is itself a child.
pub fn fold(trace: &mut rsd::Trace) -> Folded {
    let mut out = Folded::default();
    let Some(t) = TREE.get() else { return out };
    if is_child() || t.root_pid != crate::exec::getpid() {
        return out;
    }
    let sh = t.shared();
    let given = sh.next.load(Ordering::SeqCst).min(t.max);
    let mut p = Processes {
        stride: t.max,
        groups: Vec::new(),
        untraced: u64::from(sh.untraced.load(Ordering::SeqCst)),
    };
    for k in 0..given {
        let Some(slot) = t.slot(k) else { continue };
        let path = t.path(slot);
        let rec = std::fs::read(&path)
            .ok()
            .and_then(|b| rsd::TraceFile::from_bytes(&b, std::path::Path::new(&path)).ok());
        let _ = std::fs::remove_file(&path);
        let merged = rec.and_then(|r| {
            let m = rsd::merge(trace, &r.trace).ok()?;
            Some((m, r.header))
        });
        match merged {
            Some((m, h)) => {
                *trace = m;
                if let Some(hp) = &h.processes {
                    p.add(hp);
                }
                out.notes.extend(h.notes);
                rsd::exclude::add(&mut out.excluded, &h.excluded);
            }
            None if t.entry(k).parent.load(Ordering::SeqCst) == NOT_STARTED => {}
            None => {
                if let Some(g) = group_of(t, k, End::Missing, Vec::new()) {
                    p.add(&Processes {
                        stride: t.max,
                        groups: vec![g],
                        untraced: 0,
                    });
                }
            }
        }
    }
    let _ = std::fs::remove_file(counter_path(&t.spool));
    let _ = std::fs::remove_dir(&t.spool);
    if !p.groups.is_empty() || p.untraced > 0 {
        out.processes = Some(p);
    }
    out
}

/// The rank's own process ends without writing a trace (a process of an MPI job that is not
/// a rank): its spool goes, so no hidden files are left behind.
pub fn discard() {
    let mut t = rsd::Trace::default();
    let _ = fold(&mut t);
}
