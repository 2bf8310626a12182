//! The replay options every rank shares ([`Options`]), the enums of their choices and the
//! parsers of their flags' values, apart from the engine that acts on them so that the command
//! line (`cli`, behind the feature of that name) and the runtimes name them without reaching
//! into the engine.

use crate::error::ReplayError;
use std::time::Duration;

/// What to do with MPI calls that move no file data (`--comm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CommMode {
    /// Sleep for the recorded mean duration: the traced run's waits on other ranks, right
    /// where the replay's storage and machine are the traced ones.
    Delay,
    /// Issue the call for real (thread barriers and channels, or MPI): waits on other ranks
    /// are what this replay's I/O makes them, so a barrier or token that waited for slow
    /// storage when traced does not hold a replay on fast storage (docs/xstorage.md).
    #[default]
    Real,
    /// Do nothing.
    Skip,
}

impl CommMode {
    /// The mode as `--comm` spells it.
    pub fn name(self) -> &'static str {
        match self {
            CommMode::Delay => "delay",
            CommMode::Real => "real",
            CommMode::Skip => "skip",
        }
    }
}

/// How compute gaps are replayed (`--compute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeMode {
    /// The recorded mean gap.
    #[default]
    Mean,
    /// A draw from the recorded histogram.
    Sample,
    /// No gaps: as fast as possible.
    None,
    /// CPU work: each gap's shortest recorded instance, spent computing (this thread's CPU
    /// time) instead of sleeping. A recorded gap is wall time: where the traced ranks shared
    /// cores it includes the time a rank waited for one, and a replay that sleeps the mean
    /// neither competes for cores as the application did nor leaves out the waits it will
    /// meet again. With `--comm real` on such a node this reproduces the run; on a node with a
    /// core per rank it only costs the cores the application used anyway.
    Work,
}

impl ComputeMode {
    /// The mode as `--compute` spells it.
    pub fn name(self) -> &'static str {
        match self {
            ComputeMode::Mean => "mean",
            ComputeMode::Sample => "sample",
            ComputeMode::None => "none",
            ComputeMode::Work => "work",
        }
    }
}

/// Which view of the I/O is issued (`--layer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LayerView {
    /// Application-level calls: MPI-IO calls are issued, their nested POSIX calls are not.
    #[default]
    App,
    /// The POSIX view: MPI-IO calls are not issued, their nested POSIX calls are.
    Posix,
}

/// How `--threads` replays collective MPI-IO data calls (`--collective-io`); under MPI the
/// MPI library does its own collective I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CollectiveIo {
    /// The POSIX calls the MPI library made for the call when traced (collective buffering:
    /// an aggregator's large writes, nothing from the other ranks), after a barrier; when the
    /// trace recorded none for any collective, each rank's own piece.
    #[default]
    Library,
    /// Each rank's own piece at its view's offsets, after a barrier.
    Ranks,
}

/// Replay options shared by every rank.
#[derive(Debug, Clone)]
pub struct Options {
    /// Non-I/O MPI calls.
    pub comm: CommMode,
    /// `--comm` was not given: `comm` is [`CommMode::Real`], and [`crate::check_matching`]
    /// turns it into [`CommMode::Delay`], saying so, for a trace real calls cannot be shown to
    /// replay (its messages do not match, or it is too large to check), where an explicit
    /// `--comm real` is refused or warned about.
    pub comm_auto: bool,
    /// Compute gaps.
    pub compute: ComputeMode,
    /// `--compute` was not given: [`crate::compute_choice::choose`] picks `work` or `mean`
    /// from the trace and this node. False in [`Options::default`], so that a library user's
    /// `compute` is replayed as set.
    pub compute_auto: bool,
    /// Why the default chose `work`, or `mean` where ranks shared cores
    /// ([`crate::compute_choice::choose`]), for the report.
    pub compute_note: Option<String>,
    /// Factor applied to every delay.
    pub time_scale: f64,
    /// Which layer's calls are issued.
    pub layer: LayerView,
    /// Collective MPI-IO under `--threads`.
    pub collective_io: CollectiveIo,
    /// `--stall-timeout`: how long past ten times its traced duration a call may take before
    /// the watchdog ends the replay ([`crate::watchdog`]).
    pub stall_timeout: Duration,
    /// `--open-loop`: each I/O call moves the plan on by its traced duration, not by what it
    /// took here, so every call is issued at its traced start (or at once when the one before
    /// overran it): timing-accurate issue, whatever the storage answers.
    pub open_loop: bool,
    /// Honour the I/O dependencies `iotrex sensitivity` stored in the trace ([`crate::deps`]);
    /// `--ignore-io-deps` turns it off.
    pub io_deps: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            comm: CommMode::Real,
            comm_auto: true,
            compute: ComputeMode::Mean,
            compute_auto: false,
            compute_note: None,
            time_scale: 1.0,
            layer: LayerView::App,
            collective_io: CollectiveIo::Library,
            stall_timeout: crate::watchdog::DEFAULT_STALL_TIMEOUT,
            open_loop: false,
            io_deps: true,
        }
    }
}

/// Parses `--max-threads`: a whole number of at least 1.
pub fn parse_max_threads(s: &str) -> Result<u32, ReplayError> {
    match s.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(ReplayError::BadOption {
            flag: "--max-threads",
            why: format!("{s:?} is not a whole number >= 1"),
        }),
    }
}

/// Parses `--comm`.
pub fn parse_comm(s: &str) -> Result<CommMode, ReplayError> {
    choice(
        "--comm",
        s,
        &[CommMode::Delay, CommMode::Real, CommMode::Skip].map(|m| (m.name(), m)),
    )
}

/// Parses `--compute`.
pub fn parse_compute(s: &str) -> Result<ComputeMode, ReplayError> {
    choice(
        "--compute",
        s,
        &[
            ComputeMode::Mean,
            ComputeMode::Sample,
            ComputeMode::Work,
            ComputeMode::None,
        ]
        .map(|m| (m.name(), m)),
    )
}

/// Parses `--collective-io`.
pub fn parse_collective_io(s: &str) -> Result<CollectiveIo, ReplayError> {
    choice(
        "--collective-io",
        s,
        &[
            ("library", CollectiveIo::Library),
            ("ranks", CollectiveIo::Ranks),
        ],
    )
}

/// Parses `--stall-timeout SECS` (seconds, a positive number).
pub fn parse_stall_timeout(s: &str) -> Result<std::time::Duration, ReplayError> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e9 => Ok(std::time::Duration::from_secs_f64(v)),
        _ => Err(ReplayError::BadOption {
            flag: "--stall-timeout",
            why: format!("{s:?} is not a positive number of seconds"),
        }),
    }
}

/// Parses `--layer`.
pub fn parse_layer(s: &str) -> Result<LayerView, ReplayError> {
    choice(
        "--layer",
        s,
        &[("app", LayerView::App), ("posix", LayerView::Posix)],
    )
}

/// Parses `--time-scale`: a finite factor of at least 0.
pub fn parse_scale(s: &str) -> Result<f64, ReplayError> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 => Ok(f),
        _ => Err(ReplayError::BadOption {
            flag: "--time-scale",
            why: format!("{s:?} is not a finite number >= 0"),
        }),
    }
}

/// The value of `flag` spelt `s`, one of `choices` (spelling, value), or an error listing them.
fn choice<T: Copy>(flag: &'static str, s: &str, choices: &[(&str, T)]) -> Result<T, ReplayError> {
    match choices.iter().find(|(name, _)| *name == s) {
        Some(&(_, v)) => Ok(v),
        None => {
            let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
            Err(ReplayError::BadOption {
                flag,
                why: format!("{s:?} is not one of {}", names.join(", ")),
            })
        }
    }
}
