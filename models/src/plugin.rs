//! The model plugin ABI and its loader.
//!
//! A plugin is a shared library exporting `iotrex_model_plugin`, which returns a pointer to a
//! static [`PluginV1`] descriptor. The layout is C's (see `models/include/iotrex_model.h`), so
//! plugins can be written in C or in Rust without linking against this crate. The first field
//! is the ABI version, read and checked before any other field is trusted. Plugin fits are
//! never trusted either: [`crate::exact::fit_exact`] checks each proposal against every point.
//!
//! This module holds the only `unsafe` code of the crate: loading the library, calling its
//! entry point, reading the descriptor and calling the fit and eval functions.

use crate::error::ModelError;
use crate::exact::{Model, Point, Vars};
use crate::rational::Rat;
use libloading::Library;
use std::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The ABI version this build implements.
pub const ABI_VERSION: u32 = 1;
/// The symbol every plugin exports.
pub const ENTRY_SYMBOL: &str = "iotrex_model_plugin";
/// Most coefficients a plugin model may declare.
pub const MAX_PARAMS: u32 = 16;

/// `fit(n, rank, y, npoints, coeffs) -> 1 if exact`.
pub type FitFn = unsafe extern "C" fn(*const i64, *const i64, *const i64, u64, *mut i64) -> i32;
/// `eval(coeffs, n, rank, out) -> 1 if defined`.
pub type EvalFn = unsafe extern "C" fn(*const i64, i64, i64, *mut i64) -> i32;

/// One model as a plugin declares it (`iotrex_model_v1`).
#[repr(C)]
pub struct ModelV1 {
    /// NUL-terminated name.
    pub name: *const c_char,
    /// Coefficient count.
    pub nparams: u32,
    /// 1: f(n); 2: f(n, rank).
    pub vars: u32,
    /// The fit function (null is rejected).
    pub fit: Option<FitFn>,
    /// The eval function (null is rejected).
    pub eval: Option<EvalFn>,
}

/// The plugin descriptor (`iotrex_plugin`).
#[repr(C)]
pub struct PluginV1 {
    /// Must equal [`ABI_VERSION`]; stays the first field in every version.
    pub abi_version: u32,
    /// Number of entries in `models`.
    pub nmodels: u32,
    /// The models.
    pub models: *const ModelV1,
}

/// A loaded plugin: its models, which keep the library mapped while they live.
pub struct Plugin {
    /// The path it was loaded from.
    pub path: PathBuf,
    /// Its models.
    pub models: Vec<PluginModel>,
}

/// One model of a loaded plugin.
pub struct PluginModel {
    name: String,
    nparams: usize,
    vars: Vars,
    fit: FitFn,
    eval: EvalFn,
    // Keeps the code behind `fit` and `eval` mapped.
    _lib: Arc<Library>,
}

impl Plugin {
    /// Loads the plugin at `path` and validates its descriptor.
    pub fn load(path: &Path) -> Result<Plugin, ModelError> {
        let p = || path.to_path_buf();
        if !path.exists() {
            return Err(ModelError::Load {
                path: p(),
                detail: "no such file".into(),
            });
        }
        // SAFETY: loading a library runs its initialisers. That is what `--plugin` asks for:
        // the user names code to run. Nothing else about the library is assumed here.
        let lib = unsafe { Library::new(path) }.map_err(|e| ModelError::Load {
            path: p(),
            detail: e.to_string(),
        })?;
        let lib = Arc::new(lib);
        // SAFETY: the symbol's type is the ABI's entry point type, `const iotrex_plugin *(void)`.
        // A library exporting the name with another type breaks the ABI contract.
        let entry = unsafe {
            lib.get::<unsafe extern "C" fn() -> *const PluginV1>(b"iotrex_model_plugin\0")
        }
        .map_err(|_| ModelError::MissingSymbol {
            path: p(),
            symbol: ENTRY_SYMBOL.into(),
        })?;
        // SAFETY: calling the entry point as declared by the ABI; it takes no arguments.
        let desc = unsafe { entry() };
        // SAFETY: `desc` is what the entry point returned: the ABI says null or a descriptor
        // that lives as long as the library, which `lib` keeps mapped.
        let declared = unsafe { check_descriptor(desc, path) }?;
        let models = declared
            .into_iter()
            .map(|d| PluginModel {
                name: d.name,
                nparams: d.nparams,
                vars: d.vars,
                fit: d.fit,
                eval: d.eval,
                _lib: lib.clone(),
            })
            .collect();
        Ok(Plugin { path: p(), models })
    }
}

/// One model of a descriptor that passed [`check_descriptor`].
#[derive(Debug)]
pub struct Declared {
    /// Its name, UTF-8.
    pub name: String,
    /// Coefficient count, 1 to [`MAX_PARAMS`].
    pub nparams: usize,
    /// Its variables.
    pub vars: Vars,
    /// The fit function.
    pub fit: FitFn,
    /// The eval function.
    pub eval: EvalFn,
}

/// The loader's checks of a descriptor, apart from loading so they can be fuzzed: the version
/// first, then the model count, and each model's name, coefficient count, variables and
/// functions. `path` names the plugin in the errors.
///
/// # Safety
/// `desc` is null, or points to a readable `u32`; when that `u32` is [`ABI_VERSION`], to a
/// [`PluginV1`] whose `models` (when non-null and `nmodels` is at most 1024) points to
/// `nmodels` readable [`ModelV1`]s, each `name` null or a NUL-terminated string. This is
/// what the ABI asks of a plugin's entry point.
pub unsafe fn check_descriptor(
    desc: *const PluginV1,
    path: &Path,
) -> Result<Vec<Declared>, ModelError> {
    let p = || path.to_path_buf();
    if desc.is_null() {
        return Err(ModelError::BadDescriptor {
            path: p(),
            detail: format!("{ENTRY_SYMBOL} returned a null descriptor"),
        });
    }
    // SAFETY: `desc` is non-null and points to a descriptor whose first field is a u32 in
    // every ABI version; only that field is read before the version is known.
    let version = unsafe { std::ptr::read(desc.cast::<u32>()) };
    if version != ABI_VERSION {
        return Err(ModelError::AbiVersion {
            path: p(),
            found: version,
            supported: ABI_VERSION,
        });
    }
    // SAFETY: the version matches, so the descriptor has the V1 layout and the plugin
    // promises it lives as long as the library (it is static data in the library).
    let d = unsafe { &*desc };
    if d.nmodels == 0 || d.models.is_null() || d.nmodels > 1024 {
        return Err(ModelError::BadDescriptor {
            path: p(),
            detail: format!("declares {} models", d.nmodels),
        });
    }
    // SAFETY: `models` is non-null and the plugin declares `nmodels` entries there.
    let raw = unsafe { std::slice::from_raw_parts(d.models, d.nmodels as usize) };
    let mut models = Vec::with_capacity(raw.len());
    for (i, m) in raw.iter().enumerate() {
        let bad = |detail: String| ModelError::BadDescriptor {
            path: p(),
            detail: format!("model {i}: {detail}"),
        };
        if m.name.is_null() {
            return Err(bad("null name".into()));
        }
        // SAFETY: non-null, and the ABI requires a NUL-terminated string in the library.
        let name = unsafe { CStr::from_ptr(m.name) }
            .to_str()
            .map_err(|_| bad("name is not UTF-8".into()))?
            .to_string();
        if m.nparams == 0 || m.nparams > MAX_PARAMS {
            return Err(bad(format!("`{name}` declares {} coefficients", m.nparams)));
        }
        let vars = match m.vars {
            1 => Vars::N,
            2 => Vars::NRank,
            v => return Err(bad(format!("`{name}` has unknown vars {v}"))),
        };
        let (Some(fit), Some(eval)) = (m.fit, m.eval) else {
            return Err(bad(format!("`{name}` has a null fit or eval function")));
        };
        models.push(Declared {
            name,
            nparams: m.nparams as usize,
            vars,
            fit,
            eval,
        });
    }
    Ok(models)
}

impl Model for PluginModel {
    fn name(&self) -> &str {
        &self.name
    }
    fn vars(&self) -> Vars {
        self.vars
    }
    fn nparams(&self) -> usize {
        self.nparams
    }
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>> {
        let n: Vec<i64> = pts.iter().map(|p| p.n).collect();
        let rank: Vec<i64> = pts.iter().map(|p| p.rank).collect();
        let y: Vec<i64> = pts.iter().map(|p| p.y).collect();
        let mut c = vec![0i64; self.nparams];
        // SAFETY: the three input arrays hold `pts.len()` values each and `c` has room for the
        // `nparams` coefficients the model declared; the plugin reads and writes only those.
        let ok = unsafe {
            (self.fit)(
                n.as_ptr(),
                rank.as_ptr(),
                y.as_ptr(),
                pts.len() as u64,
                c.as_mut_ptr(),
            )
        };
        if ok == 1 {
            vec![c.into_iter().map(Rat::int).collect()]
        } else {
            vec![]
        }
    }
    fn eval(&self, coeffs: &[Rat], n: i64, rank: i64) -> Option<i64> {
        let c: Vec<i64> = coeffs.iter().map(|r| r.to_i64()).collect::<Option<_>>()?;
        if c.len() != self.nparams {
            return None;
        }
        let mut out = 0i64;
        // SAFETY: `c` holds the `nparams` coefficients the model declared and `out` is a valid
        // place for one i64.
        let ok = unsafe { (self.eval)(c.as_ptr(), n, rank, &mut out) };
        (ok == 1).then_some(out)
    }
    fn describe(&self, coeffs: &[Rat]) -> String {
        let c: Vec<String> = coeffs.iter().map(Rat::to_string).collect();
        format!("{}({})", self.name, c.join(", "))
    }
}
