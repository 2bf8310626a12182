//! Models for extrapolating traces across rank counts.
//!
//! - [`rational`]: exact fractions and Gaussian elimination over them.
//! - [`exact`]: the [`Model`] trait, the built-in exact models of the rank count `n`
//!   (constant, linear, inverse `k/n`, inverse plus constant, floor and ceil of `K/n`, largest
//!   power of two ≤ n and its remainder, log2 n) and of `(n, rank)` (`((rank+a) % n) * b`,
//!   `rank/k` blocks, `rank%k`, affine in rank and n, a value on one rank alone) and of the
//!   node layout (`rank/ppn`, `rank%ppn`, the node leader `ppn*(rank/ppn)`), the fallbacks tried only where none of
//!   those fits (`a*n^2 + b*n + c`; a dimension of `MPI_Dims_create`'s grid, a rank's
//!   coordinate and periodic neighbour in it), and the guarded fit ([`fit_exact`]: zero
//!   residual, fewer coefficients than observations, leave-one-scale-out).
//! - [`grid`]: the process grids of `MPI_Dims_create` and `MPI_Cart_create`.
//! - [`timing`]: least-squares fits of timing statistics (the only approximate quantity).
//! - [`plugin`]: the versioned C ABI for model plugins and its loader.
//!
//! Structure and parameters are never guessed: a model either reproduces every observation
//! exactly or is not used, and a caller refuses when two surviving models disagree at the
//! target. This crate knows nothing of traces; `extrap` maps trace quantities onto points.

use std::sync::Arc;

pub mod error;
pub mod exact;
mod factor;
pub mod grid;
pub mod plugin;
pub mod rational;
pub mod timing;

pub use error::ModelError;
pub use exact::{Agreement, Fitted, Model, Point, Vars, agree, fit_exact};
pub use plugin::Plugin;
pub use rational::Rat;

/// The models an extrapolation may use: the built-ins, then those of any plugins.
#[derive(Clone)]
pub struct ModelSet {
    /// Every model, built-ins first (so they win ties and name the simplest form).
    pub models: Vec<Arc<dyn Model>>,
    /// Paths of the loaded plugins, for messages.
    pub plugins: Vec<std::path::PathBuf>,
}

impl ModelSet {
    /// The built-in models only.
    pub fn builtin() -> ModelSet {
        let mut models = exact::builtin_n_models();
        models.extend(exact::builtin_rank_models());
        models.extend(exact::builtin_node_models());
        ModelSet {
            models,
            plugins: Vec::new(),
        }
    }

    /// Adds a loaded plugin's models after the built-ins.
    pub fn add_plugin(&mut self, p: Plugin) {
        self.plugins.push(p.path.clone());
        for m in p.models {
            self.models.push(Arc::new(m));
        }
    }

    /// This set with the grid models ([`grid`]) trying grids of `ndims` dimensions only:
    /// those the program asked `MPI_Dims_create` for, as its trace records them; in
    /// [`ModelSet::builtin`] they try none. Between 4 and 16 ranks a 2-D grid's first
    /// dimension is twice a 3-D grid's last (`dims(n, 2)[0] = 2 * dims(n, 3)[2]`), so values
    /// alone cannot tell the programs apart, and predictions past 16 ranks differ; the
    /// program's own call can.
    pub fn for_grids(&self, ndims: &[usize]) -> ModelSet {
        ModelSet {
            models: (self.models.iter())
                .map(|m| m.for_grids(ndims).unwrap_or_else(|| m.clone()))
                .collect(),
            plugins: self.plugins.clone(),
        }
    }

    /// Names of the models of kind `vars`, for refusal messages.
    pub fn names(&self, vars: Vars) -> Vec<String> {
        exact::names(&self.models, vars)
    }
}
