//! MPI's local queries and settings (the rest of the MPI calls Recorder 2.4 wraps):
//! the caller's rank and the size of a communicator, the Cartesian topology's queries, the
//! processor name, `MPI_Finalized` and a communicator's error handler. None communicates or
//! touches a file; each records what the program learnt, in the layouts of `rsd::op`.
//!
//! The tracer's own questions (`handles::comm_rank`, `topo`'s neighbours, the split
//! equivalents) go to `PMPI_*` directly and stay unrecorded. A program that asks for its rank
//! in a loop pays what any recorded MPI call costs, no more: the record builds from the values
//! MPI just wrote, and only the Cartesian calls ask MPI one more thing (the topology's
//! dimensions, after a call that succeeded, so on a Cartesian communicator).

use super::kinds::*;
use super::*;

mpi_hooks! {
    /// Wrapper: `MPI_Comm_rank`.
    MPI_Comm_rank, mpi_comm_rank_ (comm: Comm, rank: IntOut) => CommRank
        record |st, r| args::comm_rank(comm.id(st), rank.got(r));

    /// Wrapper: `MPI_Comm_size`.
    MPI_Comm_size, mpi_comm_size_ (comm: Comm, size: IntOut) => CommSize
        record |st, r| args::comm_size(comm.id(st), size.got(r));

    /// Wrapper: `MPI_Cart_get`: the entries MPI wrote (no more than the topology has, which
    /// `maxdims` may exceed: the rest of the program's arrays is left as it was).
    MPI_Cart_get, mpi_cart_get_ (
        comm: Comm, maxdims: Int, dims: IntsOut, periods: IntsOut, coords: IntsOut,
    ) => CartGet
        record |st, r| {
            let n = if r == MPI_SUCCESS { cartdim(comm).min(maxdims.i()).max(0) } else { 0 };
            let mut v = args::cart_get(comm.id(st), maxdims.i(), n);
            v.extend(dims.read(n));
            v.extend(periods.read(n).into_iter().map(|p| i64::from(p != 0)));
            v.extend(coords.read(n));
            v
        };

    /// Wrapper: `MPI_Cart_rank`: the coords MPI read (one per dimension of the topology).
    MPI_Cart_rank, mpi_cart_rank_ (comm: Comm, coords: Ints, rank: IntOut) => CartRank
        record |st, r| {
            let n = if r == MPI_SUCCESS { cartdim(comm) } else { 0 };
            let mut v = args::cart_rank(comm.id(st), n, rank.got(r));
            v.extend(coords.read(n));
            v
        };

    /// Wrapper: `MPI_Cart_shift`: both neighbours relative to the caller, as any peer.
    MPI_Cart_shift, mpi_cart_shift_ (
        comm: Comm, direction: Int, disp: Int, source: IntOut, dest: IntOut,
    ) => CartShift
        record |st, r| {
            let peer = |p: IntOut| {
                if r == MPI_SUCCESS {
                    Peer(p.get() as c_int).rel(comm)
                } else {
                    rsd::mpi::PROC_NULL
                }
            };
            let (s, d) = (peer(source), peer(dest));
            args::cart_shift(comm.id(st), direction.i(), disp.i(), s, d)
        };

    /// Wrapper: `MPI_Get_processor_name`: the name's length only (see `rsd::op`). The Fortran
    /// hook is written by hand (`fortran.rs`), for the string's hidden length.
    MPI_Get_processor_name, _ (name: StrOut, resultlen: IntOut) => GetProcessorName
        record |_, r| args::get_processor_name(resultlen.got(r));

    /// Wrapper: `MPI_Finalized`. After `MPI_Finalize` nothing is recorded (the trace is
    /// written): the call goes to MPI untouched.
    MPI_Finalized, mpi_finalized_ (flag: IntOut) => Finalized
        record |_, r| args::finalized(flag.got(r));

    /// Wrapper: `MPI_Comm_set_errhandler`.
    MPI_Comm_set_errhandler, mpi_comm_set_errhandler_ (comm: Comm, errhandler: Errhandler)
        => CommSetErrhandler
        record |st, _| {
            let c = comm.id(st);
            args::comm_set_errhandler(c, errhandler.id(st))
        };
}

mpi_hooks! {
    /// Wrapper: `MPI_Dims_create`: the entries as given (read before the call, which
    /// overwrites the free ones) and as returned.
    MPI_Dims_create, mpi_dims_create_ (nnodes: Int, ndims: Int, dims: IntsOut) => DimsCreate
        let given = dims.read(ndims.i().clamp(0, MAX_DIMS));
        record |_, r| {
            let mut v = args::dims_create(nnodes.i(), ndims.i());
            if r == MPI_SUCCESS {
                v.extend(given);
                v.extend(dims.read(ndims.i().clamp(0, MAX_DIMS)));
            }
            v
        };
}

/// More dimensions than any grid a program asks for: a bound on what is read of a program's
/// array, whatever its `ndims` says.
const MAX_DIMS: i64 = 64;

/// The dimensions of `comm`'s Cartesian topology (0 if MPI refuses). Only asked after the
/// program's own Cartesian call succeeded on `comm`, so MPI has no error to raise.
fn cartdim(comm: Comm) -> i64 {
    let Some(f) = real!(
        "PMPI_Cartdim_get",
        unsafe extern "C" fn(H, *mut c_int) -> c_int
    ) else {
        return 0;
    };
    let mut n = 0;
    // SAFETY: a Cartesian communicator the program's call just used; a valid out-parameter.
    if unsafe { f(comm.0, &mut n) } != MPI_SUCCESS {
        return 0;
    }
    i64::from(n)
}
