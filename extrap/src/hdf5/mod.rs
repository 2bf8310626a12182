//! Parallel HDF5's behaviour, as the extrapolation models it: the metadata it writes dealt
//! over the ranks in blocks, independently ([`dealt`]) or collectively ([`collflush`]); the
//! file space its calls see, taken from the HDF5 library itself where the inputs cannot say
//! it ([`space`], the oracle); the data's addresses where the storage moves at the target
//! ([`relocate`]); the chunk index's growth ([`chunk_btree`]) and what of its metadata is not
//! modelled ([`meta`]).

pub(crate) mod chunk_btree;
pub(crate) mod collflush;
pub(crate) mod dealt;
pub(crate) mod meta;
pub(crate) mod relocate;
pub mod space;

/// Whether some of `inputs` calls HDF5 (a NetCDF-4 program's NetCDF calls are HDF5's too),
/// at any depth: a refusal names HDF5's behaviour only where the trace shows HDF5.
pub(crate) fn shows_hdf5(inputs: &[crate::Input]) -> bool {
    fn any(nodes: &[rsd::trace::Node]) -> bool {
        nodes.iter().any(|n| match &n.kind {
            rsd::trace::NodeKind::Event(e) => {
                matches!(e.op.layer(), rsd::op::Layer::Hdf5 | rsd::op::Layer::Netcdf)
                    || any(&e.children)
            }
            rsd::trace::NodeKind::Loop(l) => any(&l.body),
        })
    }
    inputs.iter().any(|i| any(&i.file.trace.nodes))
}
