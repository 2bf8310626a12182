//! Forked children, traced as processes of their rank (`docs/processes.md`).
//!
//! The `fork` hook gives each child a number `k` from a counter in an anonymous shared page
//! that every descendant of the rank's own process inherits, so the numbers, and the bound
//! `IOTREX_MAX_PROCESSES`, hold for the whole tree. The child's state is reset to a fresh
//! compressor of its slot (`nranks + rank * stride + k`, [`rsd::process::slot`]) and it
//! records as any process does. When it ends (exit, `_exit`, a terminating signal, `exec`)
//! it writes its record, a trace file of its slot, into the spool of its rank's own process
//! (`.iotrex-procs.<pid>/<slot>.iotrex` beside the trace), which folds the spool in when it
//! writes the trace ([`fold`]). Nothing here runs in a program that never forks.

use crate::guard::{BUSY, Enter};
use crate::state::{RECORDING, STATE, State, now_ns, say};
use rsd::process::{End, Group, Processes};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// What one fork leaves in the shared page for its child `k`: who forked it and where, so a
/// child that never writes its record is still named, with its parent and site.
#[repr(C)]
struct Entry {
    /// `u32::MAX`: the rank's own process; else the parent's number.
    parent: AtomicU32,
    site: AtomicU64,
}

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
    rank: u32,
    spool: String,
    /// The pid of the rank's own process: the one that folds the spool.
    root_pid: i64,
}

static TREE: OnceLock<Tree> = OnceLock::new();

/// This process's number in its tree, `u32::MAX` in the rank's own process.
static ME: AtomicU32 = AtomicU32::new(u32::MAX);
/// `exit`'s status, for the record the destructor writes (`i32::MIN`: main returned).
pub static EXIT_STATUS: AtomicI32 = AtomicI32::new(i32::MIN);

/// In every forked child (the fork handler): it is not the process its parent was, so it
/// writes no record of its parent's number (only atomics: a fork handler).
pub fn forget_in_child() {
    ME.store(u32::MAX, Ordering::SeqCst);
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

    fn slot(&self, k: u32) -> Option<u32> {
        rsd::process::slot(self.nranks, self.max, self.rank, k)
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

/// The tree, made at the first fork of the rank's own process: the shared page and the spool
/// directory beside the trace. `None` when the page cannot be mapped (children then stay
/// untraced, as before).
fn tree(st: &State) -> Option<&'static Tree> {
    if let Some(t) = TREE.get() {
        return Some(t);
    }
    let max = max_from_env();
    let len = std::mem::size_of::<Shared>() + max as usize * std::mem::size_of::<Entry>();
    // SAFETY: an anonymous shared mapping; no address hint; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
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
    let _ = TREE.set(Tree {
        shared: p as usize,
        max,
        nranks: st.cfg.env_size.unwrap_or(1).max(1),
        rank: st.cfg.env_rank.unwrap_or(st.rank),
        spool,
        root_pid,
    });
    TREE.get()
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
    let made = crate::state::with_state(|st| tree(st).is_some())?;
    let t = TREE.get().filter(|_| made)?;
    let sh = t.shared();
    let k = sh.next.fetch_add(1, Ordering::SeqCst);
    let slot = (k < t.max).then(|| t.slot(k)).flatten();
    let Some(slot) = slot else {
        sh.untraced.fetch_add(1, Ordering::SeqCst);
        return None;
    };
    let e = t.entry(k);
    e.parent.store(ME.load(Ordering::Relaxed), Ordering::SeqCst);
    e.site.store(site, Ordering::SeqCst);
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

/// The `fork` hook's site of child `k` and its parent, from the shared page.
fn group_of(t: &Tree, k: u32, end: End) -> Option<Group> {
    let e = t.entry(k);
    let parent = e.parent.load(Ordering::SeqCst);
    Some(Group {
        slots: rsd::RankSet::single(t.slot(k)?),
        parent: (parent != u32::MAX).then_some(parent),
        site: e.site.load(Ordering::SeqCst),
        command: Vec::new(),
        end,
    })
}

/// Set once this child wrote its record.
static WRITTEN: Mutex<bool> = Mutex::new(false);

/// In a traced child that ends by `end`: its record written into the spool, once; recording
/// stops. Never blocks on the state lock (the signal path calls it).
pub fn write_record(end: End) {
    let Some(t) = TREE.get() else { return };
    let k = ME.load(Ordering::SeqCst);
    if k == u32::MAX {
        return;
    }
    let Ok(mut done) = WRITTEN.try_lock() else {
        return;
    };
    if *done {
        return;
    }
    *done = true;
    let _g = Enter::new(BUSY);
    let bytes = {
        let mut g = match STATE.try_lock() {
            Ok(g) => g,
            Err(_) => return,
        };
        let Some(st) = g.as_mut() else { return };
        RECORDING.store(false, Ordering::SeqCst);
        st.done = true;
        record_bytes(t, k, st, end)
    };
    let Some(bytes) = bytes else { return };
    let Some(slot) = t.slot(k) else { return };
    if let Some(d) = crate::outfile::Dest::new(&t.path(slot)) {
        let _ = crate::outfile::put(&d, &bytes, false);
    }
}

/// The child's record: its trace, its notes, and its group of one.
fn record_bytes(t: &Tree, k: u32, st: &State, end: End) -> Option<Vec<u8>> {
    let group = group_of(t, k, end)?;
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
        trace: st.comp.finish(),
    };
    crate::finalize::encoded(&tf).ok()
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
            None => {
                if let Some(g) = group_of(t, k, End::Missing) {
                    p.add(&Processes {
                        stride: t.max,
                        groups: vec![g],
                        untraced: 0,
                    });
                }
            }
        }
    }
    let _ = std::fs::remove_dir(&t.spool);
    if given > 0 || p.untraced > 0 {
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
