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
