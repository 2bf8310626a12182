//! The MPI library's I/O configuration, for the trace header (`rsd::MpiConfig`): what its
//! collective buffering depends on, which a model of it needs to derive the nested I/O of a
//! collective call at another scale.
//!
//! - At `MPI_Init` (every rank, collectively on the tracer's communicator): the node layout,
//!   from `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`; rank 0 also reads the library version.
//! - At rank 0's first `MPI_File_open`: the control variables that steer collective I/O.
//!   Under Open MPI only those someone set, read where Open MPI reads them ([`super::mca`]),
//!   since its `MPI_T_init_thread` opens every MCA component (about 0.2 s); under MPICH all of
//!   them through MPI_T (its variables are registered at `MPI_Init`, and initializing MPI_T
//!   costs little there). With them, the thread level the library provides
//!   (`MPI_Query_thread`), which decides OMPIO's write sieving.
//! - At each `MPI_File_open` of rank 0: the file's hints, once per path: what
//!   `MPI_File_get_info` reports, and the hints the program passed to the open.
//! - At each `MPI_File_set_view` of rank 0: the hints the program passed to it, for keys the
//!   file's entry does not hold yet.
//!
//! Everything runs through PMPI in BUSY mode and only reads; a call MPI refuses leaves its part
//! out. Hints of files that rank 0 never opens are not seen.
//!
//! Why the hints passed are read too, and which wins:
//! - Open MPI 4.1.4's `MPI_File_get_info` returns the open's info as the program gave it (its
//!   own copy, under OMPIO and ROMIO alike), nothing the library chose, and nothing of a later
//!   `MPI_File_set_view` or `MPI_File_set_info`. OMPIO honours `cb_nodes` and
//!   `collective_buffering` given to `MPI_File_set_view` when the open gave none
//!   (`common_ompio_file_view.c` reads the open's info first), so those only reach the trace
//!   from the view's info.
//! - MPICH's ROMIO reports what it uses, which can differ from what was passed: `cb_nodes` 2
//!   at 4 ranks on one node comes back as 1 (`cb_config_list` `*:1` allows one aggregator per
//!   node), and keys it does not know are dropped.
//!
//! So `MPI_File_get_info` wins where it reports a key (it is what the library used), the open's
//! info fills the keys it does not report, and a view's info only keys still absent (the
//! open's hint wins, as in OMPIO; ROMIO takes `cb_nodes` and `cb_config_list` only at open, and
//! lets a view change its buffer sizes and switches, which a first-value-wins entry does not
//! follow: the model's check against the recorded nested calls then says so).
//! `MPI_File_set_info` is not read: Open MPI 4.1.4 passes it to neither OMPIO nor ROMIO
//! (`opal_infosubscribe_change_info` only), so it changes nothing these models depend on.

use super::*;
use std::ffi::CStr;

/// Prefixes of the control variables that steer collective I/O (Open MPI's OMPIO and its
/// fcoll/fbtl/fs components, ROMIO; MPICH's ROMIO). `io` and `fcoll` are the component
/// selections themselves.
const CVAR_PREFIXES: &[&str] = &[
    "io_ompio_",
    "fcoll_",
    "fbtl_",
    "fs_",
    "io_romio",
    "MPIR_CVAR_ROMIO",
];
const CVAR_NAMES: &[&str] = &["io", "fcoll", "fbtl", "fs", "sharedfp"];

/// Suffixes of variables that say nothing about the I/O (component versions, debug output,
/// the build's configure line).
const CVAR_NOISE: &[&str] = &[
    "_major_version",
    "_minor_version",
    "_release_version",
    "_verbose",
    "_configure_params",
];

/// `MPI_INT`'s id in `rsd::mpi::DATATYPES` (checked by a test).
const MPI_INT_ID: usize = 7;

/// The first line of `MPI_Get_library_version`.
fn library_version() -> String {
    let Some(f) = real!(
        "PMPI_Get_library_version",
        unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int
    ) else {
        return String::new();
    };
    let mut buf = vec![0 as c_char; abi::MAX_LIBRARY_VERSION_STRING];
    let mut len: c_int = 0;
    // SAFETY: a buffer of the larger library's MPI_MAX_LIBRARY_VERSION_STRING, and a valid
    // out-parameter.
    if unsafe { f(buf.as_mut_ptr(), &mut len) } != MPI_SUCCESS {
        return String::new();
    }
    buf[abi::MAX_LIBRARY_VERSION_STRING - 1] = 0;
    // SAFETY: MPI wrote a NUL-terminated string into `buf`, whose last byte is NUL anyway.
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
    s.lines().next().unwrap_or("").trim().to_string()
}

/// The words of a `cpu_set_t` as MPI_INTs (1024 CPUs).
const MASK_INTS: usize = std::mem::size_of::<libc::cpu_set_t>() / std::mem::size_of::<c_int>();

/// This process's CPU affinity mask (`sched_getaffinity`) as ints; all zero when unknown.
fn affinity_mask() -> [c_int; MASK_INTS] {
    // SAFETY: cpu_set_t is plain bits, valid zeroed; sched_getaffinity fills at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size given.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return [0; MASK_INTS];
    }
    // SAFETY: both are plain bits of the same size.
    unsafe { std::mem::transmute::<libc::cpu_set_t, [c_int; MASK_INTS]>(set) }
}

/// What rank 0 learns of the nodes at `MPI_Init` (the others learn nothing): ranks per node
/// ([`layout_of`]), where each rank ran and the nodes' names (`rsd::NodeLayout`), and the
/// CPUs per node ([`cores_of`]).
struct Layout {
    node_ranks: Vec<(u32, u32)>,
    contiguous: bool,
    nodes: Option<rsd::NodeLayout>,
    cores: Vec<(u32, u32)>,
    machines: Vec<rsd::nodes::SharedMachine>,
}

/// Ints of a kernel's boot id gathered per rank (a hash of `/proc/sys/kernel/random/boot_id`).
const BOOT_INTS: usize = 2;

/// This kernel's boot id as ints ([`rsd::nodes::machine_id`]): zeros where it cannot be read.
fn boot_id() -> [c_int; BOOT_INTS] {
    let x = rsd::nodes::machine_id().unwrap_or(0);
    [x as c_int, (x >> 32) as c_int]
}

/// The nodes (in the order of each node's first rank, as [`layout_of`]) that share one boot
/// id with another node, one [`rsd::nodes::SharedMachine`] per such machine, its CPUs the
/// union of all its ranks' masks. Empty where every node is a machine of its own, or some
/// rank's boot id is unknown.
fn machines_of(
    leaders: &[c_int],
    boots: &[c_int],
    masks: Option<&[c_int]>,
) -> Vec<rsd::nodes::SharedMachine> {
    // Per machine: its boot id, its nodes' indices, the union of its ranks' masks.
    let mut machines: Vec<(&[c_int], Vec<u32>, [c_int; MASK_INTS])> = Vec::new();
    for (r, (&node, b)) in node_of(leaders)
        .iter()
        .zip(boots.chunks(BOOT_INTS))
        .enumerate()
    {
        if b.iter().all(|&x| x == 0) {
            return Vec::new();
        }
        let m = match machines.iter().position(|(id, _, _)| *id == b) {
            Some(i) => i,
            None => {
                machines.push((b, Vec::new(), [0; MASK_INTS]));
                machines.len() - 1
            }
        };
        if !machines[m].1.contains(&node) {
            machines[m].1.push(node);
        }
        if let Some(mask) = masks.and_then(|ms| ms.get(r * MASK_INTS..(r + 1) * MASK_INTS)) {
            for (a, b) in machines[m].2.iter_mut().zip(mask) {
                *a |= *b;
            }
        }
    }
    machines
        .into_iter()
        .filter(|(_, n, _)| n.len() > 1)
        .map(|(_, nodes, mask)| rsd::nodes::SharedMachine {
            nodes,
            cpus: mask.iter().map(|w| w.count_ones()).sum(),
        })
        .collect()
}

/// Bytes of a node name gathered per rank (Linux's `HOST_NAME_MAX` is 64, with its NUL);
/// a multiple of an int's size, so the names travel as MPI_INTs.
const NAME_BYTES: usize = 64;
const NAME_INTS: usize = NAME_BYTES / std::mem::size_of::<c_int>();

/// This host's name (`gethostname`, which `MPI_Get_processor_name` gives under both
/// libraries) as ints, NUL-padded and cut to `NAME_BYTES - 1` bytes.
fn host_name() -> [c_int; NAME_INTS] {
    let mut buf = [0u8; NAME_BYTES];
    // SAFETY: a writable buffer one byte shorter than given to us, so it stays NUL-terminated.
    unsafe { libc::gethostname(buf.as_mut_ptr().cast(), NAME_BYTES - 1) };
    buf[NAME_BYTES - 1] = 0;
    let mut out = [0 as c_int; NAME_INTS];
    for (o, b) in out.iter_mut().zip(buf.chunks(std::mem::size_of::<c_int>())) {
        *o = c_int::from_ne_bytes(b.try_into().expect("an int's bytes"));
    }
    out
}

/// This host's name as text (what [`host_name`] gathers), `None` where it is empty.
pub fn host_text() -> Option<String> {
    names_of(&host_name()).pop().filter(|n| !n.is_empty())
}

/// The names of `names` (`NAME_INTS` ints per rank) as text.
fn names_of(names: &[c_int]) -> Vec<String> {
    names
        .chunks(NAME_INTS)
        .map(|n| {
            let bytes: Vec<u8> = n.iter().flat_map(|i| i.to_ne_bytes()).collect();
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(&bytes[..end]).into_owned()
        })
        .collect()
}

/// `MPI_Gather`'s signature.
type GatherFn = unsafe extern "C" fn(
    *const libc::c_void,
    c_int,
    H,
    *mut libc::c_void,
    c_int,
    H,
    c_int,
    H,
) -> c_int;

/// Gathers this rank's ints `mine` (as many on every rank) to rank 0 of `comm`: all of
/// them in rank order there, a buffer of one int elsewhere; `None` when MPI refused.
fn gather_ints(
    gather: GatherFn,
    mine: &[c_int],
    int: H,
    comm: H,
    rank: i64,
    size: i64,
) -> Option<Vec<c_int>> {
    let n = mine.len();
    let mut all = vec![0 as c_int; if rank == 0 { size as usize * n } else { 1 }];
    // SAFETY: every rank of `comm` sends `n` ints; rank 0 receives as many from each into a
    // buffer of `size * n`.
    let rc = unsafe {
        gather(
            mine.as_ptr().cast(),
            n as c_int,
            int,
            all.as_mut_ptr().cast(),
            n as c_int,
            int,
            0,
            comm,
        )
    };
    (rc == MPI_SUCCESS).then_some(all)
}

/// Ranks per node in rank order, run-length encoded, whether nodes hold consecutive ranks,
/// each rank's node and the nodes' names, and the CPUs the ranks of each node could run on;
/// on rank 0 (the others give `None`). Collective over `comm` (the tracer's own).
fn node_layout(comm: H, rank: i64, size: i64) -> Option<Layout> {
    type SplitType = unsafe extern "C" fn(H, c_int, c_int, H, *mut H) -> c_int;
    type Bcast = unsafe extern "C" fn(*mut libc::c_void, c_int, H, c_int, H) -> c_int;
    let split = real!("PMPI_Comm_split_type", SplitType)?;
    let bcast = real!("PMPI_Bcast", Bcast)?;
    let gather = real!("PMPI_Gather", GatherFn)?;
    let free = real!("PMPI_Comm_free", unsafe extern "C" fn(*mut H) -> c_int)?;
    let (shared, info_null) = (abi::comm_type_shared(), abi::info_null() as H);
    // MPI_INT: the library's handle of the predefined type of that name.
    let int = match abi::flavour() {
        Flavour::Mpich => abi::mpich::TYPES[MPI_INT_ID],
        _ => lookup_global(TYPES[MPI_INT_ID]),
    } as H;
    let mut node: H = std::ptr::null_mut();
    // SAFETY: `comm` is the tracer's communicator, valid on every rank, which all make this
    // call; MPI_COMM_TYPE_SHARED and MPI_INFO_NULL are the library's values; `node` is a valid
    // out-parameter.
    if unsafe { split(comm, shared, rank as c_int, info_null, &mut node) } != MPI_SUCCESS {
        return None;
    }
    // The node's lowest rank names it: rank 0 of the node communicator (key = rank) tells.
    let mut leader = rank as c_int;
    // SAFETY: `node` was just created; one int from its rank 0.
    unsafe { bcast((&mut leader as *mut c_int).cast(), 1, int, 0, node) };
    let mut node_h = node;
    // SAFETY: a communicator this function created, freed once.
    unsafe { free(&mut node_h) };
    let leaders = gather_ints(gather, &[leader], int, comm, rank, size);
    // Every rank's affinity mask, to rank 0: a node's CPUs are the union of its ranks' masks
    // (ranks bound to one core each, or all free on the node's cores).
    let masks = gather_ints(gather, &affinity_mask(), int, comm, rank, size);
    // Every rank's host name, to rank 0: the nodes' names (once, here, never per call).
    let hosts = gather_ints(gather, &host_name(), int, comm, rank, size);
    // Every rank's kernel, to rank 0: nodes that are one machine share its CPUs.
    let boots = gather_ints(gather, &boot_id(), int, comm, rank, size);
    let leaders = leaders?;
    if rank != 0 {
        return None;
    }
    let (node_ranks, contiguous) = layout_of(&leaders);
    let cores = masks
        .as_deref()
        .map_or_else(Vec::new, |m| cores_of(&leaders, m));
    let machines = boots.map_or_else(Vec::new, |b| machines_of(&leaders, &b, masks.as_deref()));
    let hosts = hosts.map_or_else(Vec::new, |h| names_of(&h));
    Some(Layout {
        node_ranks,
        contiguous,
        nodes: Some(rsd::NodeLayout::from_leaders(&leaders, &hosts)),
        cores,
        machines,
    })
}

/// Run-length encoded CPUs per node (in order of each node's first rank, as [`layout_of`]):
/// the bits set in the union of the masks (`MASK_INTS` ints per rank) of the ranks with the
/// same leader. Empty when some node's union is empty (a mask that could not be read).
fn cores_of(leaders: &[c_int], masks: &[c_int]) -> Vec<(u32, u32)> {
    let of = node_of(leaders);
    let mut nodes = vec![[0 as c_int; MASK_INTS]; of.iter().max().map_or(0, |&n| n as usize + 1)];
    for (&i, m) in of.iter().zip(masks.chunks(MASK_INTS)) {
        for (a, b) in nodes[i as usize].iter_mut().zip(m) {
            *a |= *b;
        }
    }
    let mut rle: Vec<(u32, u32)> = Vec::new();
    for m in nodes {
        let c: u32 = m.iter().map(|w| w.count_ones()).sum();
        if c == 0 {
            return Vec::new();
        }
        match rle.last_mut() {
            Some((r, n)) if *r == c => *n += 1,
            _ => rle.push((c, 1)),
        }
    }
    rle
}

/// Each rank's node index, from each rank's node leader: the nodes numbered in order of
/// their first rank.
fn node_of(leaders: &[c_int]) -> Vec<u32> {
    let mut seen: Vec<c_int> = Vec::new();
    leaders
        .iter()
        .map(|l| match seen.iter().position(|k| k == l) {
            Some(i) => i as u32,
            None => {
                seen.push(*l);
                seen.len() as u32 - 1
            }
        })
        .collect()
}

/// Run-length encoded ranks per node (in order of each node's first rank) and whether every
/// node's ranks are consecutive, from each rank's node leader.
fn layout_of(leaders: &[c_int]) -> (Vec<(u32, u32)>, bool) {
    let mut counts: Vec<(c_int, u32)> = Vec::new();
    let mut contiguous = true;
    for (i, l) in leaders.iter().enumerate() {
        match counts.iter_mut().find(|(k, _)| k == l) {
            Some(c) => {
                contiguous &= leaders[i - 1] == *l;
                c.1 += 1;
            }
            None => counts.push((*l, 1)),
        }
    }
    let mut rle: Vec<(u32, u32)> = Vec::new();
    for (_, c) in counts {
        match rle.last_mut() {
            Some((r, n)) if *r == c => *n += 1,
            _ => rle.push((c, 1)),
        }
    }
    (rle, contiguous)
}

/// What rank 0 keeps of [`at_init`]: the library's configuration, the CPUs per node
/// (`Header::node_cores`) and the node layout (`Header::node_layout`).
pub(crate) struct AtInit {
    pub config: rsd::MpiConfig,
    pub cores: Vec<(u32, u32)>,
    pub nodes: Option<rsd::NodeLayout>,
    pub machines: Vec<rsd::nodes::SharedMachine>,
}

/// The configuration every rank computes at `MPI_Init` (the node layout is collective),
/// kept by rank 0.
pub(crate) fn at_init(comm: H, rank: i64, size: i64) -> Option<AtInit> {
    let l = node_layout(comm, rank, size)?;
    Some(AtInit {
        config: rsd::MpiConfig {
            library: library_version(),
            node_ranks: l.node_ranks,
            nodes_contiguous: l.contiguous,
            cvars: Vec::new(),
            file_hints: Vec::new(),
        },
        cores: l.cores,
        nodes: l.nodes,
        machines: l.machines,
    })
}

/// The MPI_T control variables of [`CVAR_PREFIXES`] and [`CVAR_NAMES`], as text.
fn cvars() -> Vec<(String, String)> {
    type InitThread = unsafe extern "C" fn(c_int, *mut c_int) -> c_int;
    type GetNum = unsafe extern "C" fn(*mut c_int) -> c_int;
    type GetInfo = unsafe extern "C" fn(
        c_int,
        *mut c_char,
        *mut c_int,
        *mut c_int,
        *mut H,
        *mut H,
        *mut c_char,
        *mut c_int,
        *mut c_int,
        *mut c_int,
    ) -> c_int;
    type HandleAlloc = unsafe extern "C" fn(c_int, *mut libc::c_void, *mut H, *mut c_int) -> c_int;
    type Read = unsafe extern "C" fn(H, *mut libc::c_void) -> c_int;
    type HandleFree = unsafe extern "C" fn(*mut H) -> c_int;
    let (Some(init), Some(num), Some(info), Some(alloc), Some(read), Some(hfree), Some(fin)) = (
        real!("PMPI_T_init_thread", InitThread),
        real!("PMPI_T_cvar_get_num", GetNum),
        real!("PMPI_T_cvar_get_info", GetInfo),
        real!("PMPI_T_cvar_handle_alloc", HandleAlloc),
        real!("PMPI_T_cvar_read", Read),
        real!("PMPI_T_cvar_handle_free", HandleFree),
        real!("PMPI_T_finalize", unsafe extern "C" fn() -> c_int),
    ) else {
        return Vec::new();
    };
    let mut provided = 0;
    // SAFETY: the library's MPI_THREAD_SINGLE; a valid out-parameter.
    if unsafe { init(abi::THREAD_SINGLE, &mut provided) } != MPI_SUCCESS {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut n: c_int = 0;
    // SAFETY: a valid out-parameter, after MPI_T_init_thread.
    unsafe { num(&mut n) };
    for i in 0..n {
        let mut name = [0 as c_char; 256];
        let mut name_len: c_int = name.len() as c_int;
        let (mut verbosity, mut bind, mut scope) = (0, 0, 0);
        let (mut dt, mut en): (H, H) = (std::ptr::null_mut(), std::ptr::null_mut());
        let mut desc_len: c_int = 0;
        // SAFETY: index below the count MPI gave; a name buffer of `name_len` bytes; a null
        // description with length 0 (MPI then writes none); valid out-parameters.
        let rc = unsafe {
            info(
                i,
                name.as_mut_ptr(),
                &mut name_len,
                &mut verbosity,
                &mut dt,
                &mut en,
                std::ptr::null_mut(),
                &mut desc_len,
                &mut bind,
                &mut scope,
            )
        };
        if rc != MPI_SUCCESS {
            continue;
        }
        name[255] = 0;
        // SAFETY: NUL-terminated by MPI, and by us at the end.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .to_string();
        if !wanted_cvar(&name) {
            continue;
        }
        // Bound to no object: a handle without one.
        if bind != abi::T_BIND_NO_OBJECT {
            continue;
        }
        let mut h: H = std::ptr::null_mut();
        let mut count: c_int = 0;
        // SAFETY: a valid index, no object for an unbound variable, valid out-parameters.
        if unsafe { alloc(i, std::ptr::null_mut(), &mut h, &mut count) } != MPI_SUCCESS {
            continue;
        }
        let value = read_value(h, dt, count, read);
        // SAFETY: the handle just allocated, freed once.
        unsafe { hfree(&mut h) };
        if let Some(v) = value {
            out.push((name, v));
        }
    }
    // SAFETY: pairs the MPI_T_init_thread above.
    unsafe { fin() };
    out.sort();
    out
}

/// The value behind an MPI_T handle of datatype `dt` and `count` elements, as text: integers
/// and strings (what collective-I/O variables are); other types are left out.
fn read_value(
    h: H,
    dt: H,
    count: c_int,
    read: unsafe extern "C" fn(H, *mut libc::c_void) -> c_int,
) -> Option<String> {
    let name = with_state(|st| st.types.id(hv(dt)))
        .and_then(rsd::mpi::predefined)
        .map(|t| t.name)?;
    let count = count.max(1) as usize;
    // Large enough for any element type times the count (strings come with their length).
    let mut buf = vec![0u8; 16 * count + 16];
    // SAFETY: `buf` holds `count` elements of any predefined type.
    if unsafe { read(h, buf.as_mut_ptr().cast()) } != MPI_SUCCESS {
        return None;
    }
    let le = |n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&buf[..n]);
        u64::from_le_bytes(b)
    };
    Some(match name {
        "MPI_CHAR" => {
            let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).to_string()
        }
        "MPI_INT" => (le(4) as u32 as i32).to_string(),
        "MPI_UNSIGNED" => (le(4) as u32).to_string(),
        "MPI_LONG" | "MPI_LONG_LONG_INT" | "MPI_LONG_LONG" | "MPI_COUNT" => {
            (le(8) as i64).to_string()
        }
        "MPI_UNSIGNED_LONG" | "MPI_UNSIGNED_LONG_LONG" => le(8).to_string(),
        "MPI_C_BOOL" => (buf[0] != 0).to_string(),
        _ => return None,
    })
}

/// Whether a control variable is one the trace keeps: one that steers collective I/O, not
/// noise.
fn wanted_cvar(name: &str) -> bool {
    (CVAR_NAMES.contains(&name) || CVAR_PREFIXES.iter().any(|p| name.starts_with(p)))
        && !CVAR_NOISE.iter().any(|n| name.ends_with(n))
}

/// Open MPI's control variables that steer collective I/O and were set (environment, MCA
/// parameter files: [`super::mca`]), without MPI_T, whose initialization costs Open MPI about
/// 0.2 s; the component selections (`io`, `fcoll`, ...) always, empty where unset (the
/// library's own choice), as MPI_T gives them. The defaults are not recorded: the models start
/// from them.
fn set_cvars() -> Vec<(String, String)> {
    let mut set = super::mca::resolve(&super::mca::sources(), wanted_cvar);
    for name in CVAR_NAMES {
        set.entry(name.to_string()).or_default();
    }
    set.into_iter().collect()
}

/// The thread level the library provides, by its constant's name. OMPIO's posix fbtl does no
/// write sieving under `MPI_THREAD_MULTIPLE` (mpi4py's default): a collective write over
/// holes is a `pread` and a `pwrite` of the whole span, or one `pwritev` per piece, as this
/// says. Asked with `MPI_Query_thread`, which changes nothing: Open MPI 4.1's
/// `MPI_T_init_thread`, which the tracer called here before, sets the library's thread level
/// to the one it is given, and turned write sieving back on in rank 0 of an
/// `MPI_THREAD_MULTIPLE` program.
fn thread_level() -> Option<&'static str> {
    let query = real!(
        "PMPI_Query_thread",
        unsafe extern "C" fn(*mut c_int) -> c_int
    )?;
    let mut level: c_int = -1;
    // SAFETY: a valid out-parameter; MPI is initialized (a file was opened).
    if unsafe { query(&mut level) } != MPI_SUCCESS {
        return None;
    }
    abi::THREAD_LEVELS
        .get(usize::try_from(level).ok()?)
        .copied()
}

/// Whether the MPI_T control variables were read (see [`at_file_open`]).
static CVARS_READ: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether an MPI-IO call is the application's: made by the program itself, or by a library
/// layer's call on its behalf (HDF5's `H5Fcreate` opens the file: with the layers on by
/// default, an HDF5 program makes no `MPI_File_open` of its own).
fn applications() -> bool {
    use crate::guard::{IN_HDF5, IN_NETCDF};
    matches!(crate::guard::mode(), IDLE | IN_HDF5 | IN_NETCDF) && RECORDING.load(Ordering::Relaxed)
}

/// Rank 0, at an `MPI_File_open` that returned `fh` for `path` with the program's `info`:
/// the file's hints, once per path; and the control variables at the first open, when the I/O
/// components are loaded. Runs after the call, for the application's calls only (those of a
/// library layer's call included, see [`applications`]).
pub(crate) fn at_file_open(fh: H, path: Option<&str>, info: H) {
    if !applications() {
        return;
    }
    // The MPI calls below are the tracer's, not the application's.
    let _busy = Enter::new(BUSY);
    if with_state(|st| st.rank == 0) != Some(true) {
        return;
    }
    let path = path.unwrap_or_default().to_string();
    let fresh = with_state(|st| {
        st.hinted_files.insert(fh as usize, path.clone());
        st.mpi_config
            .as_ref()
            .is_some_and(|c| !c.file_hints.iter().any(|(p, _)| *p == path))
    });
    if fresh != Some(true) {
        return;
    }
    // Once per process, even when none of the variables is found: MPICH's MPI_T_init_thread
    // after an MPI_T_finalize leaves its variable table freed, and MPI_T_cvar_get_num then
    // crashed the program at its second file (found by darray.c, which opens five).
    let first = with_state(|st| st.mpi_config.as_ref().is_some_and(|c| c.cvars.is_empty()));
    let vars = if first == Some(true) && !CVARS_READ.swap(true, Ordering::Relaxed) {
        let mut vars = match abi::flavour() {
            Flavour::OpenMpi => set_cvars(),
            Flavour::Mpich => cvars(),
        };
        let level = thread_level().map(|l| (rsd::format::THREAD_LEVEL.to_string(), l.into()));
        vars.extend(level);
        vars.sort();
        vars
    } else {
        Vec::new()
    };
    // What the library reports first: it wins (see the module's doc).
    let mut hints = reported_hints(fh);
    add_absent(&mut hints, info_pairs(info));
    with_state(|st| {
        if let Some(c) = st.mpi_config.as_mut() {
            if c.cvars.is_empty() {
                c.cvars = vars;
            }
            c.file_hints.push((path, hints));
        }
    });
}

/// Rank 0, at an `MPI_File_set_view` of `fh` with the program's `info`: its hints, for the
/// keys the file's entry does not hold yet (see the module's doc).
pub(crate) fn at_set_view(fh: H, info: H) {
    if !applications() {
        return;
    }
    let _busy = Enter::new(BUSY);
    let path = with_state(|st| {
        if st.rank == 0 {
            st.hinted_files.get(&(fh as usize)).cloned()
        } else {
            None
        }
    });
    let Some(Some(path)) = path else { return };
    let given = info_pairs(info);
    if given.is_empty() {
        return;
    }
    with_state(|st| {
        let entry = st
            .mpi_config
            .as_mut()
            .and_then(|c| c.file_hints.iter_mut().find(|(p, _)| *p == path));
        if let Some((_, hints)) = entry {
            add_absent(hints, given);
        }
    });
}

/// Rank 0, at an `MPI_File_close` of `fh`: its path is no longer needed for a view's hints.
pub(crate) fn at_file_close(st: &mut State, fh: usize) {
    st.hinted_files.remove(&fh);
}

/// Appends the pairs of `more` whose key `hints` does not hold.
fn add_absent(hints: &mut Vec<(String, String)>, more: Vec<(String, String)>) {
    for (k, v) in more {
        if !hints.iter().any(|(h, _)| *h == k) {
            hints.push((k, v));
        }
    }
}

/// `MPI_File_get_info` of `fh`, as (key, value) pairs in the library's order.
fn reported_hints(fh: H) -> Vec<(String, String)> {
    type GetInfo = unsafe extern "C" fn(H, *mut H) -> c_int;
    let (Some(get_info), Some(free)) = (
        real!("PMPI_File_get_info", GetInfo),
        real!("PMPI_Info_free", unsafe extern "C" fn(*mut H) -> c_int),
    ) else {
        return Vec::new();
    };
    let mut info: H = std::ptr::null_mut();
    // SAFETY: `fh` is the file MPI just opened; a valid out-parameter.
    if unsafe { get_info(fh, &mut info) } != MPI_SUCCESS {
        return Vec::new();
    }
    let out = info_pairs(info);
    // SAFETY: the info object MPI returned, freed once.
    unsafe { free(&mut info) };
    out
}

/// The (key, value) pairs of the info object `info`, in its order; none for `MPI_INFO_NULL`.
/// Only reads `info` (the program's, or one the tracer got from MPI).
fn info_pairs(info: H) -> Vec<(String, String)> {
    type Nkeys = unsafe extern "C" fn(H, *mut c_int) -> c_int;
    type Nthkey = unsafe extern "C" fn(H, c_int, *mut c_char) -> c_int;
    type Valuelen = unsafe extern "C" fn(H, *const c_char, *mut c_int, *mut c_int) -> c_int;
    type Get = unsafe extern "C" fn(H, *const c_char, c_int, *mut c_char, *mut c_int) -> c_int;
    if info.is_null() || info as usize == abi::info_null() {
        return Vec::new();
    }
    let (Some(nkeys), Some(nthkey), Some(vlen), Some(get)) = (
        real!("PMPI_Info_get_nkeys", Nkeys),
        real!("PMPI_Info_get_nthkey", Nthkey),
        real!("PMPI_Info_get_valuelen", Valuelen),
        real!("PMPI_Info_get", Get),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut n: c_int = 0;
    // SAFETY: a valid info object (not MPI_INFO_NULL); a valid out-parameter.
    if unsafe { nkeys(info, &mut n) } != MPI_SUCCESS {
        return Vec::new();
    }
    for i in 0..n {
        // MPI_MAX_INFO_KEY is 255 in MPICH and 36 in Open MPI, plus the NUL.
        let mut key = [0 as c_char; 256];
        let (mut len, mut flag): (c_int, c_int) = (0, 0);
        // SAFETY: `i` below the key count; a key buffer of MPI_MAX_INFO_KEY + 1 bytes;
        // then the key MPI wrote, NUL-terminated, and valid out-parameters.
        unsafe {
            if nthkey(info, i, key.as_mut_ptr()) != MPI_SUCCESS {
                continue;
            }
            key[255] = 0;
            if vlen(info, key.as_ptr(), &mut len, &mut flag) != MPI_SUCCESS || flag == 0 {
                continue;
            }
        }
        let mut val = vec![0 as c_char; len.max(0) as usize + 1];
        // SAFETY: a value buffer of `len + 1` bytes, which MPI fills with `len` characters
        // and a NUL; the key as above.
        unsafe { get(info, key.as_ptr(), len, val.as_mut_ptr(), &mut flag) };
        if flag == 0 {
            continue;
        }
        // SAFETY: both NUL-terminated (the value's last byte is ours and 0).
        let (k, v) = unsafe { (CStr::from_ptr(key.as_ptr()), CStr::from_ptr(val.as_ptr())) };
        out.push((
            k.to_string_lossy().to_string(),
            v.to_string_lossy().to_string(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpi_int_id() {
        assert_eq!(rsd::mpi::DATATYPES[MPI_INT_ID].name, "MPI_INT");
    }

    #[test]
    fn what_the_library_reports_wins_over_what_was_passed() {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        let mut hints = vec![pair("cb_nodes", "1"), pair("cb_config_list", "*:1")];
        add_absent(
            &mut hints,
            vec![pair("cb_nodes", "2"), pair("striping_unit", "65536")],
        );
        assert_eq!(
            hints,
            vec![
                pair("cb_nodes", "1"),
                pair("cb_config_list", "*:1"),
                pair("striping_unit", "65536")
            ]
        );
    }

    #[test]
    fn node_cores_are_the_union_of_the_node_ranks_masks() {
        let mut masks = vec![0; 4 * MASK_INTS];
        // Node of rank 0: ranks 0 and 1 bound to CPUs 0 and 1; node of rank 2: both free on
        // CPUs 0-3.
        masks[0] = 0b01;
        masks[MASK_INTS] = 0b10;
        masks[2 * MASK_INTS] = 0b1111;
        masks[3 * MASK_INTS] = 0b1111;
        assert_eq!(cores_of(&[0, 0, 2, 2], &masks), vec![(2, 1), (4, 1)]);
        masks[2 * MASK_INTS] = 0b11;
        masks[3 * MASK_INTS] = 0b11;
        assert_eq!(cores_of(&[0, 0, 2, 2], &masks), vec![(2, 2)]);
        assert_eq!(cores_of(&[0, 0], &[0; 2 * MASK_INTS]), Vec::new());
    }

    #[test]
    fn node_layouts() {
        assert_eq!(layout_of(&[0, 0, 0, 0]), (vec![(4, 1)], true));
        assert_eq!(
            layout_of(&[0, 0, 2, 2, 4, 4, 6]),
            (vec![(2, 3), (1, 1)], true)
        );
        // Round-robin placement: two nodes of two, not consecutive.
        assert_eq!(layout_of(&[0, 1, 0, 1]), (vec![(2, 2)], false));
    }

    #[test]
    fn nodes_are_named_by_their_lowest_ranks_host() {
        let name = |s: &str| {
            let mut b = [0u8; NAME_BYTES];
            b[..s.len()].copy_from_slice(s.as_bytes());
            b.chunks(4)
                .map(|c| c_int::from_ne_bytes(c.try_into().unwrap()))
                .collect::<Vec<_>>()
        };
        let hosts =
            names_of(&[name("node1"), name("node2"), name("node1"), name("node2")].concat());
        assert_eq!(hosts, ["node1", "node2", "node1", "node2"]);
        let l = rsd::NodeLayout::from_leaders(&[0, 1, 0, 1], &hosts);
        assert_eq!(
            (l.nodes, l.names.clone()),
            (2, vec!["node1".to_string(), "node2".into()])
        );
        assert_eq!(l.placement, rsd::Placement::RoundRobin);
        let l = rsd::NodeLayout::from_leaders(&[0, 0, 2, 2], &hosts);
        assert_eq!(l.placement, rsd::Placement::Block { per_node: 2 });
        // Without the names (the gather failed), the layout still says where ranks ran.
        assert_eq!(
            rsd::NodeLayout::from_leaders(&[0, 0, 2, 2], &[]).names,
            Vec::<String>::new()
        );
        assert_eq!(names_of(&host_name()).len(), 1);
    }
}
