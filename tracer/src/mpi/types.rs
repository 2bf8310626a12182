//! Datatype constructors.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use super::*;

// ---------------------------------------------------------------------------------------------
// Datatypes.

/// Wrapper: `MPI_Type_contiguous`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_contiguous(count: c_int, old: H, new: *mut H) -> c_int {
    let f = pmpi!(
        "PMPI_Type_contiguous",
        unsafe extern "C" fn(c_int, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeContiguous,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, old, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![count as i64, o, st.new_type(r, new)]
        },
    )
}

/// Wrapper: `MPI_Type_vector`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_vector(
    count: c_int,
    bl: c_int,
    stride: c_int,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_vector",
        unsafe extern "C" fn(c_int, c_int, c_int, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeVector,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bl, stride, old, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![
                count as i64,
                bl as i64,
                stride as i64,
                o,
                st.new_type(r, new),
            ]
        },
    )
}

/// Wrapper: `MPI_Type_create_hvector`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_hvector(
    count: c_int,
    bl: c_int,
    stride: Aint,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_hvector",
        unsafe extern "C" fn(c_int, c_int, Aint, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeHvector,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bl, stride, old, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![
                count as i64,
                bl as i64,
                stride as i64,
                o,
                st.new_type(r, new),
            ]
        },
    )
}

/// Wrapper: `MPI_Type_indexed`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_indexed(
    count: c_int,
    bls: *const c_int,
    displs: *const c_int,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_indexed",
        unsafe extern "C" fn(c_int, *const c_int, *const c_int, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeIndexed,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bls, displs, old, new) },
        |st, r| {
            let o = st.type_id(old);
            let mut v = vec![count as i64, o, st.new_type(r, new)];
            v.extend(ints(bls, count));
            v.extend(ints(displs, count));
            v
        },
    )
}

/// Wrapper: `MPI_Type_create_subarray`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    order: c_int,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_subarray",
        unsafe extern "C" fn(
            c_int,
            *const c_int,
            *const c_int,
            *const c_int,
            c_int,
            H,
            *mut H,
        ) -> c_int
    );
    mpi_call(
        Op::TypeCreateSubarray,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(ndims, sizes, subsizes, starts, order, old, new) },
        |st, r| {
            let o = st.type_id(old);
            let order = rsd::mpi::encode_order(order as i64, abi::order_fortran());
            let mut v = vec![ndims as i64, order, o, st.new_type(r, new)];
            v.extend(ints(sizes, ndims));
            v.extend(ints(subsizes, ndims));
            v.extend(ints(starts, ndims));
            v
        },
    )
}

/// Wrapper: `MPI_Type_create_struct`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_struct(
    count: c_int,
    bls: *const c_int,
    displs: *const Aint,
    types: *const H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_struct",
        unsafe extern "C" fn(c_int, *const c_int, *const Aint, *const H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeCreateStruct,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bls, displs, types, new) },
        |st, r| {
            let n = count.max(0) as usize;
            let d: Vec<i64> = if displs.is_null() {
                Vec::new()
            } else {
                // SAFETY: MPI requires `count` displacements, which the call has just read.
                unsafe { std::slice::from_raw_parts(displs, n) }
                    .iter()
                    .map(|&x| x as i64)
                    .collect()
            };
            // SAFETY: MPI requires `count` types, which the call has just read.
            let t = unsafe { rd_all(types, n) };
            let t: Vec<i64> = t.into_iter().map(|h| st.type_id(h as H)).collect();
            let mut v = vec![count as i64, st.new_type(r, new)];
            v.extend(ints(bls, count));
            v.extend(d);
            v.extend(t);
            v
        },
    )
}

/// Wrapper: `MPI_Type_create_hindexed` (HDF5 builds its hyperslab file types with it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_hindexed(
    count: c_int,
    bls: *const c_int,
    displs: *const Aint,
    old: H,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_hindexed",
        unsafe extern "C" fn(c_int, *const c_int, *const Aint, H, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeCreateHindexed,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(count, bls, displs, old, new) },
        |st, r| {
            let o = st.type_id(old);
            let mut v = vec![count as i64, o, st.new_type(r, new)];
            v.extend(ints(bls, count));
            v.extend(aints(displs, count));
            v
        },
    )
}

/// `MPI_Type_create_indexed_block` and `_hindexed_block`: the same call with element or byte
/// displacements.
macro_rules! indexed_block {
    ($name:ident, $sym:literal, $op:expr, $disp:ty, $read:ident) => {
        /// Wrapper: an indexed-block type constructor.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            count: c_int,
            bl: c_int,
            displs: *const $disp,
            old: H,
            new: *mut H,
        ) -> c_int {
            let f = pmpi!(
                $sym,
                unsafe extern "C" fn(c_int, c_int, *const $disp, H, *mut H) -> c_int
            );
            mpi_call(
                $op,
                false,
                // SAFETY: forwarding the application's arguments.
                || unsafe { f(count, bl, displs, old, new) },
                |st, r| {
                    let o = st.type_id(old);
                    let mut v = vec![count as i64, bl as i64, o, st.new_type(r, new)];
                    v.extend($read(displs, count));
                    v
                },
            )
        }
    };
}
indexed_block!(
    MPI_Type_create_hindexed_block,
    "PMPI_Type_create_hindexed_block",
    Op::TypeCreateHindexedBlock,
    Aint,
    aints
);
indexed_block!(
    MPI_Type_create_indexed_block,
    "PMPI_Type_create_indexed_block",
    Op::TypeCreateIndexedBlock,
    c_int,
    ints
);

/// Wrapper: `MPI_Type_dup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_dup(old: H, new: *mut H) -> c_int {
    let f = pmpi!("PMPI_Type_dup", unsafe extern "C" fn(H, *mut H) -> c_int);
    mpi_call(
        Op::TypeDup,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(old, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![o, st.new_type(r, new)]
        },
    )
}

/// Wrapper: `MPI_Type_create_resized`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_create_resized(
    old: H,
    lb: Aint,
    extent: Aint,
    new: *mut H,
) -> c_int {
    let f = pmpi!(
        "PMPI_Type_create_resized",
        unsafe extern "C" fn(H, Aint, Aint, *mut H) -> c_int
    );
    mpi_call(
        Op::TypeCreateResized,
        false,
        // SAFETY: forwarding the application's arguments.
        || unsafe { f(old, lb, extent, new) },
        |st, r| {
            let o = st.type_id(old);
            vec![o, lb as i64, extent as i64, st.new_type(r, new)]
        },
    )
}

/// Wrapper: `MPI_Type_commit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_commit(dt: *mut H) -> c_int {
    let f = pmpi!("PMPI_Type_commit", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid pointer to a datatype handle.
    let h = if dt.is_null() {
        std::ptr::null_mut()
    } else {
        unsafe { rd_h(dt) }
    };
    mpi_call(
        Op::TypeCommit,
        false,
        // SAFETY: forwarding the application's argument.
        || unsafe { f(dt) },
        |st, _| vec![st.type_id(h)],
    )
}

/// Wrapper: `MPI_Type_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Type_free(dt: *mut H) -> c_int {
    let f = pmpi!("PMPI_Type_free", unsafe extern "C" fn(*mut H) -> c_int);
    // SAFETY: MPI requires a valid pointer to a datatype handle; read it before MPI resets it.
    let h = if dt.is_null() {
        std::ptr::null_mut()
    } else {
        unsafe { rd_h(dt) }
    };
    mpi_call(
        Op::TypeFree,
        false,
        // SAFETY: forwarding the application's argument.
        || unsafe { f(dt) },
        |st, _| {
            let id = st.type_id(h);
            st.types.forget(hv(h));
            st.type_sizes.remove(&hv(h));
            vec![id]
        },
    )
}
