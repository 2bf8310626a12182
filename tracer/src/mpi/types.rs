//! Datatype constructors (the file views of MPI-IO are built from them). Array arguments are
//! appended after the op's fixed parameters, as its comment in `rsd::op` says.

use super::kinds::*;
use super::*;

mpi_hooks! {
    /// Wrapper: `MPI_Type_contiguous`.
    MPI_Type_contiguous, mpi_type_contiguous_ (count: Count, old: Datatype, new: New<Datatype>)
        => TypeContiguous
        record |st, r| {
            let o = old.id(st);
            args::type_contiguous(count.i(), o, new.id(st, r))
        };

    /// Wrapper: `MPI_Type_vector`.
    MPI_Type_vector, mpi_type_vector_ (
        count: Count, bl: Int, stride: Int, old: Datatype, new: New<Datatype>,
    ) => TypeVector
        record |st, r| {
            let o = old.id(st);
            args::type_vector(count.i(), bl.i(), stride.i(), o, new.id(st, r))
        };

    /// Wrapper: `MPI_Type_create_hvector`.
    MPI_Type_create_hvector, mpi_type_create_hvector_ (
        count: Count, bl: Int, stride: Aint, old: Datatype, new: New<Datatype>,
    ) => TypeHvector
        record |st, r| {
            let o = old.id(st);
            args::type_hvector(count.i(), bl.i(), stride.i(), o, new.id(st, r))
        };

    /// Wrapper: `MPI_Type_indexed`.
    MPI_Type_indexed, mpi_type_indexed_ (
        count: Count, bls: Ints, displs: Ints, old: Datatype, new: New<Datatype>,
    ) => TypeIndexed
        record |st, r| {
            let o = old.id(st);
            let mut v = args::type_indexed(count.i(), o, new.id(st, r));
            v.extend(bls.read(count));
            v.extend(displs.read(count));
            v
        };

    /// Wrapper: `MPI_Type_create_subarray`. The order is recorded in `rsd::mpi`'s encoding.
    MPI_Type_create_subarray, mpi_type_create_subarray_ (
        ndims: Int, sizes: Ints, subsizes: Ints, starts: Ints, order: Int, old: Datatype,
        new: New<Datatype>,
    ) => TypeCreateSubarray
        record |st, r| {
            let o = old.id(st);
            let order = rsd::mpi::encode_order(order.i(), abi::order_fortran());
            let mut v = args::type_create_subarray(ndims.i(), order, o, new.id(st, r));
            v.extend(sizes.read(ndims.i()));
            v.extend(subsizes.read(ndims.i()));
            v.extend(starts.read(ndims.i()));
            v
        };

    /// Wrapper: `MPI_Type_create_darray`. The order, the distributions and the default
    /// distribution argument are recorded in `rsd::mpi`'s encodings.
    MPI_Type_create_darray, mpi_type_create_darray_ (
        size: Int, rank: Int, ndims: Int, gsizes: Ints, distribs: Ints, dargs: Ints,
        psizes: Ints, order: Int, old: Datatype, new: New<Datatype>,
    ) => TypeCreateDarray
        record |st, r| {
            let o = old.id(st);
            let order = rsd::mpi::encode_order(order.i(), abi::order_fortran());
            let lib = abi::distribute();
            let nd = ndims.i();
            let mut v = args::type_create_darray(size.i(), rank.i(), nd, order, o, new.id(st, r));
            v.extend(gsizes.read(nd));
            v.extend(distribs.read(nd).into_iter().map(|d| rsd::mpi::encode_distrib(d, lib)));
            v.extend(dargs.read(nd).into_iter().map(|d| rsd::mpi::encode_darg(d, lib)));
            v.extend(psizes.read(nd));
            v
        };

    /// Wrapper: `MPI_Type_create_struct`.
    MPI_Type_create_struct, mpi_type_create_struct_ (
        count: Count, bls: Ints, displs: Aints, types: Handles<Datatype> [count],
        new: New<Datatype>,
    ) => TypeCreateStruct
        record |st, r| {
            let t: Vec<i64> = types.read(count).into_iter().map(|h| st.type_id(h as H)).collect();
            let mut v = args::type_create_struct(count.i(), new.id(st, r));
            v.extend(bls.read(count));
            v.extend(displs.read(count));
            v.extend(t);
            v
        };

    /// Wrapper: `MPI_Type_create_hindexed` (HDF5 builds its hyperslab file types with it).
    MPI_Type_create_hindexed, mpi_type_create_hindexed_ (
        count: Count, bls: Ints, displs: Aints, old: Datatype, new: New<Datatype>,
    ) => TypeCreateHindexed
        record |st, r| {
            let o = old.id(st);
            let mut v = args::type_create_hindexed(count.i(), o, new.id(st, r));
            v.extend(bls.read(count));
            v.extend(displs.read(count));
            v
        };

    /// Wrapper: `MPI_Type_create_hindexed_block` (byte displacements).
    MPI_Type_create_hindexed_block, mpi_type_create_hindexed_block_ (
        count: Count, bl: Int, displs: Aints, old: Datatype, new: New<Datatype>,
    ) => TypeCreateHindexedBlock
        record |st, r| {
            let o = old.id(st);
            let mut v = args::type_create_hindexed_block(count.i(), bl.i(), o, new.id(st, r));
            v.extend(displs.read(count));
            v
        };

    /// Wrapper: `MPI_Type_create_indexed_block` (displacements in extents of `old`).
    MPI_Type_create_indexed_block, mpi_type_create_indexed_block_ (
        count: Count, bl: Int, displs: Ints, old: Datatype, new: New<Datatype>,
    ) => TypeCreateIndexedBlock
        record |st, r| {
            let o = old.id(st);
            let mut v = args::type_create_indexed_block(count.i(), bl.i(), o, new.id(st, r));
            v.extend(displs.read(count));
            v
        };

    /// Wrapper: `MPI_Type_dup`.
    MPI_Type_dup, mpi_type_dup_ (old: Datatype, new: New<Datatype>) => TypeDup
        record |st, r| {
            let o = old.id(st);
            args::type_dup(o, new.id(st, r))
        };

    /// Wrapper: `MPI_Type_create_resized`.
    MPI_Type_create_resized, mpi_type_create_resized_ (
        old: Datatype, lb: Aint, extent: Aint, new: New<Datatype>,
    ) => TypeCreateResized
        record |st, r| {
            let o = old.id(st);
            args::type_create_resized(o, lb.i(), extent.i(), new.id(st, r))
        };

    /// Wrapper: `MPI_Type_commit`.
    MPI_Type_commit, mpi_type_commit_ (dt: Ref<Datatype>) => TypeCommit
        let h = dt.peek_h();
        record |st, _| args::type_commit(st.type_id(h));

    /// Wrapper: `MPI_Type_free`. The handle is forgotten, as `MPI_Comm_free`'s.
    MPI_Type_free, mpi_type_free_ (dt: Ref<Datatype>) => TypeFree
        // Read before the call, which resets it to MPI_DATATYPE_NULL.
        let h = dt.peek_h();
        record |st, _| {
            let id = st.type_id(h);
            st.types.forget(hv(h));
            st.type_sizes.remove(&hv(h));
            args::type_free(id)
        };
}
