//! Errors of the `models` crate.

use std::path::PathBuf;

/// What can go wrong loading a model plugin or fitting with one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The plugin file does not exist or cannot be opened as a shared library.
    #[error("cannot load model plugin {path}: {detail}")]
    Load {
        /// The `--plugin` path.
        path: PathBuf,
        /// The loader's message.
        detail: String,
    },
    /// The library does not export the plugin entry point.
    #[error("model plugin {path} does not export `{symbol}`: not an iotrex model plugin")]
    MissingSymbol {
        /// The `--plugin` path.
        path: PathBuf,
        /// The symbol looked up.
        symbol: String,
    },
    /// The plugin was built for another version of the ABI.
    #[error(
        "model plugin {path} uses model ABI version {found}, this iotrex speaks version {supported}"
    )]
    AbiVersion {
        /// The `--plugin` path.
        path: PathBuf,
        /// The version the plugin declares.
        found: u32,
        /// The version this build implements.
        supported: u32,
    },
    /// The plugin's descriptor is malformed (null pointers, bad names, zero parameters).
    #[error("model plugin {path}: {detail}")]
    BadDescriptor {
        /// The `--plugin` path.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
}
