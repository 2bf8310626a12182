//! The replay's own node layout, learnt at start-up as the tracer learns the traced one at
//! `MPI_Init`: each rank's node is its `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` group,
//! named by the group's lowest rank and by that rank's host name, and the layout is built by
//! the one function both use (`rsd::NodeLayout::from_leaders`), so that the two compare. The
//! MPI calls are this binary's (rsmpi's bindings); the tracer's are resolved at run time
//! from whichever MPI library the application loaded.

use crate::mpi_glue::Predef;
use mpi::ffi;
use std::os::raw::{c_int, c_void};

/// Bytes of a host name gathered per rank (Linux's `HOST_NAME_MAX` is 64, with its NUL).
const NAME_BYTES: usize = 64;

/// This host's name, NUL-padded to [`NAME_BYTES`].
fn host_name() -> [u8; NAME_BYTES] {
    let mut buf = [0u8; NAME_BYTES];
    // SAFETY: a writable buffer one byte shorter than given, so it stays NUL-terminated.
    unsafe { libc::gethostname(buf.as_mut_ptr().cast(), NAME_BYTES - 1) };
    buf
}

/// Gathers `mine` (as many bytes on every rank) to rank 0 of MPI_COMM_WORLD: everyone's in
/// rank order there, nothing elsewhere.
fn gather_bytes(p: &Predef, rank: c_int, size: c_int, mine: &[u8]) -> Vec<u8> {
    let n = mine.len();
    let mut all = vec![0u8; if rank == 0 { n * size as usize } else { 1 }];
    // SAFETY: every rank sends `n` bytes; rank 0 receives as many from each into a buffer of
    // `n * size`; the others' receive buffer is ignored.
    unsafe {
        ffi::MPI_Gather(
            mine.as_ptr() as *const c_void,
            n as c_int,
            p.u8,
            all.as_mut_ptr() as *mut c_void,
            n as c_int,
            p.u8,
            0,
            p.world,
        )
    };
    if rank == 0 { all } else { Vec::new() }
}

/// Where the replay's ranks run, on rank 0 (`None` on the others, and where MPI refused the
/// split). Collective over MPI_COMM_WORLD.
pub fn learn(p: &Predef, rank: c_int, size: c_int) -> Option<rsd::NodeLayout> {
    let mut node: ffi::MPI_Comm = p.self_;
    // SAFETY: MPI is initialised; every rank of MPI_COMM_WORLD makes this call with the
    // library's MPI_COMM_TYPE_SHARED and MPI_INFO_NULL; `node` is a valid out-parameter.
    let rc = unsafe {
        ffi::MPI_Comm_split_type(
            p.world,
            ffi::RSMPI_COMM_TYPE_SHARED,
            rank,
            ffi::RSMPI_INFO_NULL,
            &mut node,
        )
    };
    // MPI's default handler aborts on an error; a library set to return one leaves `ok`
    // false here, and every rank still joins the gathers below.
    let ok = rc == 0;
    // The node's lowest rank names it: rank 0 of the node's communicator (key = rank).
    let mut leader: i32 = rank;
    if ok {
        // SAFETY: `node` was just created on every rank; one int from its rank 0.
        unsafe {
            ffi::MPI_Bcast(
                &mut leader as *mut i32 as *mut c_void,
                1,
                ffi::RSMPI_INT32_T,
                0,
                node,
            );
            ffi::MPI_Comm_free(&mut node);
        }
    }
    let leaders = gather_bytes(p, rank, size, &(if ok { leader } else { -1 }).to_ne_bytes());
    let hosts = gather_bytes(p, rank, size, &host_name());
    if rank != 0 {
        return None;
    }
    let leaders: Vec<i32> = leaders
        .chunks(4)
        .map(|c| i32::from_ne_bytes(c.try_into().expect("4 bytes")))
        .collect();
    if leaders.contains(&-1) {
        return None;
    }
    let hosts: Vec<String> = hosts
        .chunks(NAME_BYTES)
        .map(|h| {
            let end = h.iter().position(|&b| b == 0).unwrap_or(h.len());
            String::from_utf8_lossy(&h[..end]).into_owned()
        })
        .collect();
    Some(rsd::NodeLayout::from_leaders(&leaders, &hosts))
}

/// The processes of the job on this machine ([`rsd::nodes::machine_id`]), which may be more
/// than the node's (emulated nodes share one machine's cores); `None` where this rank's id
/// cannot be read or MPI refused the split. Collective over MPI_COMM_WORLD.
pub fn machine_procs(p: &Predef, rank: c_int) -> Option<usize> {
    let id = rsd::nodes::machine_id();
    // A color is a non-negative int: 31 bits of the id tell machines apart.
    let color = id.map_or(p.undefined, |x| (x & 0x7fff_ffff) as c_int);
    let mut same: ffi::MPI_Comm = p.self_;
    // SAFETY: MPI is initialised; every rank of MPI_COMM_WORLD makes this call; `same` is a
    // valid out-parameter (MPI_COMM_NULL where the color is MPI_UNDEFINED).
    let rc = unsafe { ffi::MPI_Comm_split(p.world, color, rank, &mut same) };
    if rc != 0 || id.is_none() {
        return None;
    }
    let mut n: c_int = 0;
    // SAFETY: `same` was just created on this rank, and is freed once its size is read.
    unsafe {
        ffi::MPI_Comm_size(same, &mut n);
        ffi::MPI_Comm_free(&mut same);
    }
    usize::try_from(n).ok().filter(|&n| n > 0)
}
