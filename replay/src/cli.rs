//! The one definition of the replay command line, shared by `iotrex replay` (a subcommand of
//! the `iotrex` CLI) and `iotrex-replay` (the `replay_mpi` binary): every flag, its spelling,
//! its value parser and its help text are written here once, so the two cannot drift.
//!
//! It is a clap `Args` struct, and the rule is that libraries do not depend on clap: this
//! module is behind the `cli` feature, off by default, which only the two binaries turn on. A
//! program that uses the replay library (the examples, the tests, another front end) builds no
//! clap. The alternatives were worse: a crate of its own for one struct, or the MPI package
//! (which the `iotrex` CLI must not depend on, or it would build an MPI library).

use crate::error::ReplayError;
use crate::options::{self, CollectiveIo, CommMode, ComputeMode, LayerView, Options};
use crate::report::Report;
use std::path::PathBuf;
use std::time::Duration;

/// The replay's arguments, the same for `iotrex replay` and `iotrex-replay`.
///
/// The numeric flags take values that look negative (`--stall-timeout -1`), so that the flag's
/// own parser refuses them naming the flag, as the hand-written parser of `iotrex-replay` did,
/// instead of clap taking `-1` for an unknown option. A flag given twice takes its last value,
/// as it did there too.
#[derive(Debug, Clone, clap::Args)]
#[command(args_override_self = true)]
pub struct ReplayArgs {
    /// The trace file (.iotrex).
    pub trace: PathBuf,
    /// Directory every traced path is re-rooted under (must exist and be writable); nothing is
    /// written outside it.
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// Run every rank in this process, without MPI: one thread per rank, or past --max-threads
    /// ranks as coroutines sharing that many threads. The only mode of `iotrex replay`, where
    /// it may be left out; without it `iotrex-replay` replays under MPI (`mpirun -np N
    /// iotrex-replay`).
    #[arg(long)]
    pub threads: bool,
    /// With --threads, at most N OS threads run ranks. Default: one thread per rank up to a
    /// quarter of /proc/sys/kernel/threads-max (256 to 8192), beyond that a pool of 4 threads
    /// per core (8 to 256). In a pool, a rank waiting in a barrier, receive or delay lets
    /// another run, but a blocking I/O call or --compute work holds its thread: at most that
    /// many I/O calls are in flight and timing is coarser than one thread per rank.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = options::parse_max_threads)]
    pub max_threads: Option<u32>,
    /// Non-I/O MPI calls: real (issue them), delay (sleep the recorded mean), or skip. Under
    /// MPI, real vector collectives (Gatherv, Scatterv, Allgatherv) first exchange each rank's
    /// recorded count, then move those counts; Alltoallv's trace keeps only per-rank totals, so
    /// the pairs are a matrix with those sums. With --threads, collectives (vector ones
    /// included) are thread barriers and move no data, point-to-point calls are channels.
    /// Default: real, so that a barrier or message that waited for the traced storage waits
    /// for this one's instead (a replay on other storage); delay, with a note, for a trace
    /// whose messages do not match or are too many to check. delay replays the traced
    /// machine's waits: for a replay on the storage the trace was taken on.
    #[arg(long, value_parser = options::parse_comm)]
    pub comm: Option<CommMode>,
    /// Compute gaps: mean (sleep the recorded mean), sample (a draw from the recorded
    /// histogram), work (compute, burning this thread's CPU time, for the gaps' recorded CPU
    /// time, or in traces older than format 2.11 the gap's shortest recorded instance: ranks
    /// sharing cores then compete for them as the traced ones did and the time they waited for
    /// a core is not replayed twice; lateness is not measured), or none. Mean and sample leave
    /// out the time the traced rank was blocked between calls (format 2.11: a page fault its
    /// storage served), which this replay's storage decides. Default: work when MPI calls are
    /// issued (--comm real) and ranks shared cores, in the traced run (the trace's CPUs and
    /// ranks per node) or here (this node's ranks against its online CPUs): there slept gaps
    /// leave idle the cores the application kept busy, so real MPI calls end too soon; mean
    /// otherwise, and for an extrapolated trace (its gaps' CPU time is predicted as a share of
    /// the predicted gap, which grows with the contention). The report says the mode and why.
    #[arg(long, value_parser = options::parse_compute)]
    pub compute: Option<ComputeMode>,
    /// With --threads, collective MPI-IO data calls: library (issue, after a barrier, the
    /// POSIX calls the MPI library made for them when traced: collective buffering's
    /// aggregator writes, nothing from the other ranks; used when the trace recorded such
    /// calls) or ranks (each rank's own piece at its view's offsets). Under MPI the library
    /// does its own collective I/O.
    #[arg(long, default_value = "library", value_parser = options::parse_collective_io)]
    pub collective_io: CollectiveIo,
    /// Multiply every delay by F.
    #[arg(long, value_name = "F", default_value = "1", allow_negative_numbers = true, value_parser = options::parse_scale)]
    pub time_scale: f64,
    /// End the replay when a rank stays in one call longer than SECS plus ten times that call's
    /// longest traced duration (a receive whose message never comes, a deadlock): every rank's
    /// current call is printed and the exit status is non-zero (under MPI the job aborts).
    #[arg(long, value_name = "SECS", default_value = "60", allow_negative_numbers = true, value_parser = options::parse_stall_timeout)]
    pub stall_timeout: Duration,
    /// Issue every I/O call at its traced start time (open loop: a call that takes longer here
    /// than when traced does not delay the ones after it, unless it overruns their start),
    /// instead of after the previous call's replayed end plus the traced gap.
    #[arg(long)]
    pub open_loop: bool,
    /// Do not honour the I/O dependencies `iotrex sensitivity` stored in the trace. By
    /// default a rank's I/O call that waited for other ranks' I/O calls when measured (through
    /// a barrier, a token, or a file another rank writes, which no MPI call shows) is issued
    /// only once those calls have ended here, under every --comm mode and with --threads.
    #[arg(long)]
    pub ignore_io_deps: bool,
    /// Issue application calls (app) or only the POSIX view (posix).
    #[arg(long, default_value = "app", value_parser = options::parse_layer)]
    pub layer: LayerView,
    /// First create the files the trace reads before writing, at the sizes its reads reach.
    #[arg(long)]
    pub prep: bool,
    /// Check that the ranks run P to a node, by slot: under mpirun, the launch must place
    /// them so (the replay learns its own layout as the tracer does at MPI_Init, and says in
    /// its report whether it replays on the traced layout or another); with --threads every
    /// rank runs on this one node, so P must be the rank count. P must divide the rank count.
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..))]
    pub ranks_per_node: Option<u32>,
    /// Replay the trace K times, one after the other in the same root, and predict the
    /// application's run time on this storage from all of them: the median wall time, with
    /// an interval from their spread widened by the compute time's spread in the trace's
    /// timing statistics (see the report's "interval:" line). The report is the median
    /// replay's.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Replay a trace flagged incomplete.
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Seed of the values drawn for approximate (summarised) parameters: the same seed
    /// issues the same calls on every run and in both runtimes.
    #[arg(long, value_name = "N", default_value_t = rsd::draw::DEFAULT_SEED)]
    pub seed: u64,
    // `--json-out` in both commands (`iotrex --json` prints the report itself as JSON);
    // `iotrex-replay` also takes its older spelling `--json FILE` ([`JSON_ALIAS`]).
    /// Also write the report as JSON to FILE.
    #[arg(id = JSON_OUT, long = "json-out", value_name = "FILE")]
    pub json_out: Option<PathBuf>,
}

/// The id of the `--json-out` argument, for a binary that adds an alias to it.
pub const JSON_OUT: &str = "json_out";
/// `iotrex-replay`'s own spelling of `--json-out`, kept because scripts and tests use it; not
/// possible in `iotrex replay`, where `--json` is the global flag.
pub const JSON_ALIAS: &str = "json";

impl ReplayArgs {
    /// `--threads`: replays every rank in this process ([`crate::run_threads_file`]) and
    /// writes `--json-out`.
    pub fn run_threads(&self) -> Result<Report, ReplayError> {
        let job = crate::ThreadsJob {
            prep: self.prep,
            allow_incomplete: self.allow_incomplete,
            max_threads: self.max_threads,
            seed: self.seed,
            ranks_per_node: self.ranks_per_node,
            repeat: self.repeat,
            ..crate::ThreadsJob::new(&self.trace, &self.root)
        };
        let r = crate::run_threads_job(&job, &self.options())?;
        self.write_json(&r)?;
        Ok(r)
    }

    /// Writes the report to `--json-out`, when it is given.
    pub fn write_json(&self, r: &Report) -> Result<(), ReplayError> {
        let Some(path) = &self.json_out else {
            return Ok(());
        };
        let err = |error: String| ReplayError::Json {
            path: path.clone(),
            error,
        };
        let s = serde_json::to_string_pretty(r).map_err(|e| err(e.to_string()))?;
        rsd::atomic::write(path, (s + "\n").as_bytes()).map_err(|e| err(e.to_string()))
    }

    /// The report as text, then the advice for these options ([`crate::advice`]) when
    /// `ranks_here` ranks share this node's cores.
    pub fn render(&self, r: &Report, ranks_here: usize) -> String {
        let mut text = r.render();
        // The modes replayed, which the defaults chose.
        let opts = Options {
            comm: r.comm,
            compute: r.compute,
            ..self.options()
        };
        // The default's choice is said in the report (with an extrapolated trace on a crowded
        // node it keeps mean on purpose); the advice is for a mode asked for.
        if let Some(a) = crate::advice(&opts, ranks_here).filter(|_| !opts.compute_auto) {
            text += &a;
            text.push('\n');
        }
        text
    }

    /// The options every rank shares.
    pub fn options(&self) -> Options {
        Options {
            comm: self.comm.unwrap_or_default(),
            comm_auto: self.comm.is_none(),
            compute: self.compute.unwrap_or_default(),
            compute_auto: self.compute.is_none(),
            compute_note: None,
            time_scale: self.time_scale,
            layer: self.layer,
            collective_io: self.collective_io,
            stall_timeout: self.stall_timeout,
            open_loop: self.open_loop,
            io_deps: !self.ignore_io_deps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: ReplayArgs,
    }

    #[test]
    fn definition_is_valid_and_defaults_are_the_libraries() {
        Cli::command().debug_assert();
        let c = Cli::try_parse_from(["x", "t.iotrex", "--root", "r"]).unwrap();
        let (o, d) = (c.args.options(), Options::default());
        assert_eq!(
            (o.comm, o.comm_auto, o.compute, o.layer, o.collective_io),
            (d.comm, d.comm_auto, d.compute, d.layer, d.collective_io)
        );
        assert_eq!(
            (o.time_scale, o.stall_timeout),
            (d.time_scale, d.stall_timeout)
        );
        // Without --compute the replay chooses (the library's default replays as set).
        assert!(o.compute_auto && !d.compute_auto);
        let c = Cli::try_parse_from(["x", "t", "--root", "r", "--compute", "mean"]).unwrap();
        assert!(!c.args.options().compute_auto);
    }

    #[test]
    fn a_repeated_flag_takes_its_last_value() {
        let c = Cli::try_parse_from(["x", "t", "--root", "r", "--comm", "real", "--comm", "skip"])
            .unwrap();
        assert_eq!(c.args.comm, Some(CommMode::Skip));
        assert!(!c.args.options().comm_auto);
    }

    #[test]
    fn bad_values_name_their_flag() {
        for (flag, v) in [
            ("--comm", "loud"),
            ("--compute", "x"),
            ("--max-threads", "0"),
            ("--layer", "mpi"),
            ("--collective-io", "all"),
            ("--time-scale", "-1"),
            ("--stall-timeout", "-1"),
            ("--max-threads", "-2"),
            ("--stall-timeout", "0"),
        ] {
            let e = Cli::try_parse_from(["x", "t", "--root", "r", flag, v]).unwrap_err();
            assert!(e.to_string().contains(flag), "{flag}: {e}");
        }
    }
}
