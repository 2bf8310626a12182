//! The `plugin` target: a model plugin's descriptor built in memory from the fuzz input and
//! passed to the loader's checks (`models::plugin::check_descriptor`, what `--plugin` runs
//! after `dlopen`), then a plugin model's proposals checked by `models::fit_exact`.
//!
//! Input: u32 ABI version, u16 model count (up to 2047, so the loader's cap of 1024 is
//! crossed), a flags byte (bit 0: null model array), then per model: flags (bit 0 null name,
//! bit 1 null fit, bit 2 null eval), coefficient count, variables, name length and name bytes.
//! What is left: points (u16 n, u16 rank, i64 y) and proposed coefficients (i64 pairs).

use models::plugin::{ModelV1, PluginV1, check_descriptor};
use models::{Model, Point, Rat, Vars, fit_exact};
use std::ffi::{CString, c_char};
use std::path::Path;

/// Largest rank count of a fuzzed point: the most ranks `diff` expands one by one.
const MAX_N: u16 = 4096;

/// Reads fuzz bytes, zeros once they run out.
struct Bytes<'a>(&'a [u8]);
impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(std::array::from_fn(|_| self.u8()))
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(std::array::from_fn(|_| self.u8()))
    }
}

unsafe extern "C" fn fit_fn(
    _: *const i64,
    _: *const i64,
    _: *const i64,
    _: u64,
    _: *mut i64,
) -> i32 {
    0
}
unsafe extern "C" fn eval_fn(_: *const i64, _: i64, _: i64, _: *mut i64) -> i32 {
    0
}

/// A plugin model as models sees one: it proposes whatever coefficients it likes and evaluates
/// them as a polynomial in n (and rank) with checked arithmetic.
struct Proposer {
    nparams: usize,
    vars: Vars,
    proposals: Vec<Vec<Rat>>,
}

impl Model for Proposer {
    fn name(&self) -> &str {
        "fuzz"
    }
    fn vars(&self) -> Vars {
        self.vars
    }
    fn nparams(&self) -> usize {
        self.nparams
    }
    fn fit(&self, _: &[Point]) -> Vec<Vec<Rat>> {
        self.proposals.clone()
    }
    fn eval(&self, coeffs: &[Rat], n: i64, rank: i64) -> Option<i64> {
        let mut acc = Rat::int(0);
        let mut x = Rat::int(1);
        for c in coeffs {
            acc = acc.checked_add(c.checked_mul(x)?)?;
            x = x.checked_mul(Rat::int(n))?.checked_add(Rat::int(rank))?;
        }
        acc.to_i64()
    }
    fn describe(&self, coeffs: &[Rat]) -> String {
        format!("{coeffs:?}")
    }
}

pub fn run(data: &[u8]) {
    let mut b = Bytes(data);
    let abi_version = b.u32();
    let nmodels = u32::from(u16::from_le_bytes([b.u8(), b.u8()]) & 0x7ff);
    let null_array = b.u8() & 1 == 1;
    let mut names = Vec::new();
    let mut raw = Vec::new();
    for _ in 0..nmodels {
        let flags = b.u8();
        let nparams = u32::from(b.u8());
        let vars = u32::from(b.u8());
        let len = usize::from(b.u8() % 32);
        let name = b.take(len).iter().map(|&c| c.max(1)).collect::<Vec<u8>>();
        names.push(CString::new(name).expect("no NUL"));
        raw.push((flags, nparams, vars));
    }
    let models: Vec<ModelV1> = raw
        .iter()
        .zip(&names)
        .map(|(&(flags, nparams, vars), name)| ModelV1 {
            name: if flags & 1 == 1 {
                std::ptr::null()
            } else {
                name.as_ptr() as *const c_char
            },
            nparams,
            vars,
            fit: (flags & 2 == 0).then_some(fit_fn as models::plugin::FitFn),
            eval: (flags & 4 == 0).then_some(eval_fn as models::plugin::EvalFn),
        })
        .collect();
    let desc = PluginV1 {
        abi_version,
        nmodels,
        models: if null_array {
            std::ptr::null()
        } else {
            models.as_ptr()
        },
    };
    let path = Path::new("fuzz-plugin.so");
    // SAFETY: `desc` is a live V1 descriptor whose array holds `nmodels` entries with live
    // names, as the ABI asks.
    let declared = match unsafe { check_descriptor(&desc, path) } {
        Ok(d) => d,
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains("fuzz-plugin.so"),
                "error does not name the plugin: {msg}"
            );
            return;
        }
    };
    // Proposals of the first declared model, on fuzzed points.
    let Some(d) = declared.first() else { return };
    let npts = usize::from(b.u8() % 16);
    // Points as extrap makes them: a rank count n of an input trace and a rank below it.
    // (The per-rank search models step through every knob up to n: their solves are bounded
    // by the distinct systems, docs/model-cost.md, but the steps and rank-cyclic's proposals
    // stay linear in n, as expanding such a trace is, so n stays within what extrap expands
    // per rank.)
    let pts: Vec<Point> = (0..npts)
        .map(|_| {
            let n = i64::from(u16::from_le_bytes([b.u8(), b.u8()]) % MAX_N) + 1;
            let rank = i64::from(u16::from_le_bytes([b.u8(), b.u8()])) % n;
            Point {
                n,
                ppn: 0,
                rank,
                y: b.i64(),
            }
        })
        .collect();
    let nprop = usize::from(b.u8() % 4);
    let proposals = (0..nprop)
        .map(|_| {
            (0..d.nparams)
                .map(|_| Rat::new(i128::from(b.i64()), i128::from(b.i64())).unwrap_or(Rat::int(0)))
                .collect()
        })
        .collect();
    let m: Vec<Arc<dyn Model>> = vec![Arc::new(Proposer {
        nparams: d.nparams,
        vars: d.vars,
        proposals,
    })];
    for f in fit_exact(&m, d.vars, &pts) {
        // An accepted proposal reproduces every point.
        for p in &pts {
            assert_eq!(m[0].eval(&f.coeffs, p.n, p.rank), Some(p.y));
        }
    }
    // The built-in models the proposals compete with, on the same points, evaluated at a
    // fuzzed target as extrap does.
    let builtin = models::ModelSet::builtin();
    let target = b.i64();
    let fits = fit_exact(&builtin.models, d.vars, &pts);
    let _ = models::agree(fits, |f| f.model.eval(&f.coeffs, target, 0));
}
