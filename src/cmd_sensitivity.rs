//! `iotrex sensitivity`: //TRACE's throttling (Mesnier et al., FAST'07). The program runs
//! under the tracer once as is, once per group of ranks with that group's I/O calls delayed,
//! and once with every rank's delayed; each rank's timeline of I/O calls in each run says
//! whose delayed I/O it waited for (`rsd::sensitivity::analyze`) and the run times say how
//! the program's time grows with I/O latency. With `--bandwidth`, one more configuration
//! holds every rank's I/O to a bandwidth (each call followed by a sleep of its bytes over it),
//! whose run time says how the program's time grows with lost bandwidth. The baseline run's
//! trace is written with the result in its header.

use crate::cmd_trace::{command_line, detect, find_lib};
use anyhow::{Context, Result};
use clap::Args;
use rsd::sensitivity::{BandwidthRun, Sensitivity, THROTTLE_VAR, Throttle, Timeline};
use rsd::{Layer, LoggedEvent, Op, TraceFile};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Arguments of `iotrex sensitivity`.
#[derive(Debug, Args)]
#[command(
    about = "Find which ranks wait for which rank's I/O, and how run time grows with I/O latency",
    long_about = "//TRACE's throttling: run an MPI program several times under the tracer, \
                  delaying the I/O calls of one rank (or group) at a time, then of every rank. \
                  A rank whose I/O calls start later when another rank's I/O is delayed waits \
                  for that rank: through a barrier, a token passed by messages, or a file the \
                  other rank writes. Dependencies implied through a third rank are left out, so \
                  a token chain shows as its links. The run with every rank delayed gives the \
                  run time's growth per unit of added I/O latency; with --bandwidth, one more run \
                  holds every rank's I/O to that bandwidth (a call that moved b bytes is followed \
                  by a sleep of b / bandwidth), which gives the growth per lost bandwidth. \
                  Runs: (2 + groups, + 1 with --bandwidth) x --runs; \
                  node sampling is choosing few groups with --ranks. The baseline run's trace is \
                  written to --output with the result in its header (format minor 12; 13 with \
                  --bandwidth): `show` \
                  and `report` print it, `replay` says it. A run that fails stops everything \
                  with an error naming it.",
    after_help = "Examples:\n  iotrex sensitivity -o app.4.iotrex -- mpirun -np 4 ./app\n  iotrex sensitivity --delay 50ms --ranks 0,2-3 --runs 3 -o app.iotrex -- mpirun -np 4 ./app\n  iotrex sensitivity --ranks 0+1,2+3 -o app.iotrex -- mpirun -np 4 ./app   (two groups of two)\n  iotrex sensitivity --bandwidth 20MiB/s -o app.iotrex -- mpirun -np 4 ./app"
)]
pub struct SensitivityArgs {
    /// The delay added to each I/O call of the delayed ranks: `auto`, or `20ms`, `500us`, `1s`,
    /// `250000ns`. `auto` runs the baseline at least 3 times and takes 4 times the widest
    /// run-to-run spread of a call's start (at least 1 ms). A fixed delay with 2 or more
    /// baseline runs (--runs) is refused when it is not above twice that spread: the
    /// dependencies would be the noise's.
    #[arg(long, default_value = "auto", value_parser = parse_delay)]
    pub delay: Delay,
    /// The groups delayed one per run: ranks and ranges delay one rank per run (`0-3` is four
    /// runs), `+` joins ranks into one group (`0+1`). Default: every rank, one per run.
    #[arg(long, value_name = "SPEC")]
    pub ranks: Option<String>,
    /// Also run once (times --runs) with every rank's I/O held to this bandwidth: `20MiB/s`,
    /// `500KB/s`, `1GiB/s` (a bare number is bytes/s). Choose it so that the added time
    /// (the busiest rank's bytes over it) is well above the run-to-run noise.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub bandwidth: Option<u64>,
    /// Runs of each configuration; the median start of each call is used.
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub runs: u32,
    /// Where the baseline run's trace is written, with the result in its header.
    #[arg(long, short)]
    pub output: PathBuf,
    /// The preload library (as `iotrex trace --lib`).
    #[arg(long, value_name = "PATH")]
    pub lib: Option<PathBuf>,
    /// The MPI launcher line to run, after `--`.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND",
        required = true
    )]
    pub command: Vec<OsString>,
}

/// `--delay`: chosen from the baselines' noise, or given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delay {
    Auto,
    Fixed(u64),
}

/// `auto`, or a duration ([`parse_duration`]).
fn parse_delay(s: &str) -> Result<Delay, String> {
    if s.trim() == "auto" {
        return Ok(Delay::Auto);
    }
    parse_duration(s).map(Delay::Fixed)
}

/// Why `iotrex sensitivity` stopped.
#[derive(Debug, thiserror::Error)]
pub enum SensitivityError {
    /// `--ranks` does not parse.
    #[error("--ranks `{spec}`: {why}")]
    BadRanks { spec: String, why: String },
    /// `--ranks` names a rank the program does not have.
    #[error("--ranks `{spec}`: rank {rank} is out of range: the program ran {nranks} ranks (0-{})", nranks - 1)]
    RankOutOfRange {
        spec: String,
        rank: u32,
        nranks: u32,
    },
    /// A run of the program failed.
    #[error("run {run} of {total} ({what}) failed: `{command}` exited with status {status}{tail}")]
    RunFailed {
        run: usize,
        total: usize,
        what: String,
        command: String,
        status: String,
        tail: String,
    },
    /// The delay given is within the run-to-run noise the baselines showed.
    #[error(
        "--delay {delay_ms:.3}ms is within the run-to-run noise: over {runs} baseline runs a call's \
         start varied by up to {spread_ms:.3}ms, so a wait for a delayed call cannot be told \
         from noise (the delay must be above {factor} times that); use --delay auto, or \
         --delay {suggest_ms:.0}ms or more"
    )]
    BelowNoise {
        delay_ms: f64,
        runs: usize,
        spread_ms: f64,
        factor: u64,
        suggest_ms: f64,
    },
    /// A run left no trace or raw log to read.
    #[error("run {run} ({what}) left no usable trace: {why}")]
    NoTrace {
        run: usize,
        what: String,
        why: String,
    },
}

/// `20ms`, `500us`, `1s`, `250000ns` (a bare number is ms), as ns.
fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" => 1e3,
        "" | "ms" => 1e6,
        "s" => 1e9,
        _ => {
            return Err(format!(
                "bad duration `{s}`: use forms like 20ms, 500us, 1s"
            ));
        }
    };
    match num.parse::<f64>() {
        Ok(v) if v > 0.0 && (v * scale) < 3.6e12 => Ok((v * scale).round() as u64),
        _ => Err(format!(
            "bad duration `{s}`: a positive number below an hour, like 20ms"
        )),
    }
}

/// `20MiB/s`, `500KB/s`, `1GiB/s`, `1000000` (bytes/s), as bytes/s.
fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1048576.0,
        "GiB" => 1073741824.0,
        _ => {
            return Err(format!(
                "bad bandwidth `{s}`: use forms like 20MiB/s, 500KB/s"
            ));
        }
    };
    match num.parse::<f64>() {
        Ok(v) if v * scale >= 1.0 && v * scale < 1e15 => Ok((v * scale).round() as u64),
        _ => Err(format!(
            "bad bandwidth `{s}`: a positive rate of at least 1 byte/s, like 20MiB/s"
        )),
    }
}

/// The groups `--ranks` names (syntax only; ranges checked against the run later).
fn parse_groups(spec: &str) -> Result<Vec<Vec<u32>>, SensitivityError> {
    let bad = |why: String| SensitivityError::BadRanks {
        spec: spec.into(),
        why,
    };
    let mut groups = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        if item.contains('+') {
            let mut g = item
                .split('+')
                .map(|r| {
                    r.trim()
                        .parse::<u32>()
                        .map_err(|_| bad(format!("`{item}` is not ranks joined by +")))
                })
                .collect::<Result<Vec<u32>, _>>()?;
            g.sort_unstable();
            g.dedup();
            groups.push(g);
        } else {
            let set = rsd::RankSet::parse(item).map_err(bad)?;
            groups.extend(set.to_vec().into_iter().map(|r| vec![r]));
        }
    }
    if groups.is_empty() {
        return Err(bad("no ranks".into()));
    }
    Ok(groups)
}

/// One configuration: its delay, and the runs' results.
struct Config {
    what: String,
    throttle: Option<Throttle>,
}

/// What one run left: its trace, every rank's timeline, and the bytes each rank's timed I/O
/// calls moved.
struct Run {
    trace: TraceFile,
    timelines: Vec<Timeline>,
    bytes: Vec<u64>,
}

/// Runs `iotrex sensitivity`.
pub fn run(a: &SensitivityArgs, json: bool) -> Result<()> {
    let lib = find_lib(a.lib.as_deref())?;
    let groups_asked = a
        .ranks
        .as_deref()
        .map(parse_groups)
        .transpose()
        .map_err(|e| crate::exit::Usage(e.to_string()))?;
    let dir = tempfile::Builder::new()
        .prefix("iotrex-sensitivity.")
        .tempdir()
        .context("cannot make a temporary directory for the runs")?;
    let mut runner = Runner {
        a,
        lib: &lib,
        dir: dir.path(),
        done: 0,
        total: 0,
        bar: None,
    };
    // The baseline first: it says how many ranks there are, which the groups need.
    let base_cfg = Config {
        what: "baseline, no delay".into(),
        throttle: None,
    };
    let extra = 1 + usize::from(a.bandwidth.is_some());
    // `auto` needs a spread: at least 3 baselines.
    let nbase = match a.delay {
        Delay::Auto => a.runs.max(3) as usize,
        Delay::Fixed(_) => a.runs as usize,
    };
    runner.total = nbase
        + extra * a.runs as usize
        + a.runs as usize * groups_asked.as_ref().map_or(2, Vec::len);
    runner.start_bar();
    let mut base_runs = vec![runner.run(&base_cfg)?];
    let nranks = base_runs[0].trace.header.nranks;
    let groups = match groups_asked {
        Some(g) => check_groups(a.ranks.as_deref().unwrap_or(""), g, nranks)?,
        None => (0..nranks).map(|r| vec![r]).collect(),
    };
    runner.total = nbase + (extra + groups.len()) * a.runs as usize;
    for _ in 1..nbase {
        base_runs.push(runner.run(&base_cfg)?);
    }
    let (delay, spread) = choose_delay(a.delay, &base_runs)?;
    let mut delayed = Vec::new();
    for g in &groups {
        let cfg = Config {
            what: format!("rank {}'s I/O delayed", rsd::RankSet::from_sorted(g)),
            throttle: Some(Throttle {
                delay_ns: delay,
                bps: 0,
                ranks: Some(g.clone()),
            }),
        };
        let runs = (0..a.runs)
            .map(|_| runner.run(&cfg))
            .collect::<Result<Vec<_>>>()?;
        delayed.push((g.clone(), median_timelines(&runs, nranks)));
    }
    let all_cfg = Config {
        what: "every rank's I/O delayed".into(),
        throttle: Some(Throttle {
            delay_ns: delay,
            bps: 0,
            ranks: None,
        }),
    };
    let all_runs = (0..a.runs)
        .map(|_| runner.run(&all_cfg))
        .collect::<Result<Vec<_>>>()?;
    let bandwidth = a
        .bandwidth
        .map(|bps| bandwidth_run(&mut runner, bps, &base_runs))
        .transpose()?;
    runner.finish();
    let base = median_timelines(&base_runs, nranks);
    let s = Sensitivity {
        delay_ns: delay,
        runs: runner.done as u32,
        max_calls: base.iter().map(|t| t.len() as u32).max().unwrap_or(0),
        base_ns: median(base_runs.iter().map(|r| r.trace.header.wall_ns).collect()),
        all_ns: median(all_runs.iter().map(|r| r.trace.header.wall_ns).collect()),
        deps: rsd::sensitivity::analyze(delay, &base, &delayed),
        groups,
        bandwidth,
    };
    let nbase = base_runs.len();
    let mut tf = base_runs.swap_remove(0).trace;
    tf.header.sensitivity = Some(s.clone());
    crate::output::write_trace(&tf, &a.output, "--output")?;
    if json {
        crate::output::print_json(&s)
    } else {
        let mut text = noise_line(a.delay, delay, spread, nbase);
        text.push_str(&s.lines().join("\n"));
        text.push_str(&format!(
            "\ntrace with the result: {}\n",
            a.output.display()
        ));
        crate::output::print_text(&text)
    }
}

/// The delay to use and the baselines' spread of a call's start (`None`: one baseline, no
/// estimate): `auto` takes [`rsd::sensitivity::auto_delay_ns`] of it; a fixed delay within
/// the noise is refused.
fn choose_delay(asked: Delay, base_runs: &[Run]) -> Result<(u64, Option<u64>)> {
    let tls: Vec<&[Timeline]> = base_runs.iter().map(|r| r.timelines.as_slice()).collect();
    let spread = rsd::sensitivity::start_spread(&tls);
    let delay = match (asked, spread) {
        (Delay::Fixed(d), Some(sp)) if rsd::sensitivity::delay_below_noise(d, sp) => {
            return Err(SensitivityError::BelowNoise {
                delay_ms: d as f64 / 1e6,
                runs: base_runs.len(),
                spread_ms: sp as f64 / 1e6,
                factor: rsd::sensitivity::NOISE_REFUSE_FACTOR,
                suggest_ms: (rsd::sensitivity::auto_delay_ns(sp) as f64 / 1e6).ceil(),
            }
            .into());
        }
        (Delay::Fixed(d), _) => d,
        (Delay::Auto, sp) => rsd::sensitivity::auto_delay_ns(sp.unwrap_or(0)),
    };
    Ok((delay, spread))
}

/// The line that says the noise and the delay it allowed or chose.
fn noise_line(asked: Delay, delay: u64, spread: Option<u64>, nbase: usize) -> String {
    let how = match asked {
        Delay::Auto => format!(
            "chosen as {}x that (--delay auto)",
            rsd::sensitivity::NOISE_AUTO_FACTOR
        ),
        Delay::Fixed(_) => "as given".to_string(),
    };
    match spread {
        Some(sp) => format!(
            "run-to-run noise: a call's start varied by up to {:.3} ms over {nbase} baseline runs; delay {:.3} ms, {how}\n",
            sp as f64 / 1e6,
            delay as f64 / 1e6
        ),
        None => format!(
            "run-to-run noise not measured (one baseline run: --runs 2 or more, or --delay auto, measures it); delay {:.3} ms\n",
            delay as f64 / 1e6
        ),
    }
}

/// The runs with every rank's I/O held to `bps` bytes/s: their median wall time, and the most
/// bytes one rank moved in the baseline.
fn bandwidth_run(runner: &mut Runner, bps: u64, base_runs: &[Run]) -> Result<BandwidthRun> {
    let cfg = Config {
        what: format!("every rank's I/O held to {bps} bytes/s"),
        throttle: Some(Throttle {
            delay_ns: 0,
            bps,
            ranks: None,
        }),
    };
    let runs = (0..runner.a.runs)
        .map(|_| runner.run(&cfg))
        .collect::<Result<Vec<_>>>()?;
    Ok(BandwidthRun {
        bps,
        wall_ns: median(runs.iter().map(|r| r.trace.header.wall_ns).collect()),
        max_bytes: base_runs[0].bytes.iter().copied().max().unwrap_or(0),
    })
}

/// The groups, each rank checked against the run's rank count.
fn check_groups(spec: &str, groups: Vec<Vec<u32>>, nranks: u32) -> Result<Vec<Vec<u32>>> {
    if let Some(&rank) = groups.iter().flatten().find(|&&r| r >= nranks) {
        return Err(crate::exit::Usage(
            SensitivityError::RankOutOfRange {
                spec: spec.into(),
                rank,
                nranks,
            }
            .to_string(),
        )
        .into());
    }
    Ok(groups)
}

/// Runs the program, counting runs and drawing the bar.
struct Runner<'a> {
    a: &'a SensitivityArgs,
    lib: &'a Path,
    dir: &'a Path,
    done: usize,
    total: usize,
    bar: Option<indicatif::ProgressBar>,
}

impl Runner<'_> {
    /// A bar on a terminal only: pipes and CI logs get the result alone.
    fn start_bar(&mut self) {
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return;
        }
        let b = indicatif::ProgressBar::new(self.total as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("sensitivity {bar:30} run {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        self.bar = Some(b);
    }

    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }

    /// Runs the program once in configuration `cfg` and reads what it left.
    fn run(&mut self, cfg: &Config) -> Result<Run> {
        self.done += 1;
        let n = self.done;
        if let Some(b) = &self.bar {
            b.set_length(self.total as u64);
            b.set_position(n as u64 - 1);
            b.set_message(cfg.what.clone());
        }
        let out = self.dir.join(format!("run{n}.iotrex"));
        // One job per run (the tracer's `job` module): mpirun's own processes leave the
        // trace to the ranks.
        let job = format!("iotrex-sensitivity-{}-{n}", std::process::id());
        let mut vars = vec![
            ("LD_PRELOAD".to_string(), self.lib.display().to_string()),
            ("IOTREX_OUT".to_string(), out.display().to_string()),
            ("IOTREX_RAW".to_string(), "1".to_string()),
            (rsd::job::JOB_VAR.to_string(), job.clone()),
        ];
        if let Some(t) = &cfg.throttle {
            vars.push((THROTTLE_VAR.to_string(), t.to_var()));
        }
        let cmd = &self.a.command;
        let kind = detect(Path::new(&cmd[0]));
        let line = command_line(cmd, kind, &vars);
        let log = self.dir.join(format!("run{n}.log"));
        let log_file = std::fs::File::create(&log).context("cannot create a run's log")?;
        let mut child = Command::new(&line[0]);
        child
            .args(&line[1..])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        if kind == crate::cmd_trace::Launcher::Plain {
            child.envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        }
        let shown = cmd
            .iter()
            .map(|s| s.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let status = child
            .status()
            .with_context(|| format!("cannot run {} (COMMAND)", Path::new(&cmd[0]).display()))?;
        let tmp = rsd::job::tmp_dir(std::env::var("TMPDIR").ok().as_deref());
        let _ = std::fs::remove_dir_all(rsd::job::job_dir(&tmp, &job));
        if !status.success() {
            return Err(SensitivityError::RunFailed {
                run: n,
                total: self.total,
                what: cfg.what.clone(),
                command: shown,
                status: status
                    .code()
                    .map_or_else(|| format!("{status}"), |c| c.to_string()),
                tail: tail(&log),
            }
            .into());
        }
        read_run(&out, n, &cfg.what)
    }
}

/// The last lines the program printed, for the error: 12, without the MPI library's rules
/// of dashes (Open MPI's abort banner alone takes 8 lines).
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim().chars().all(|c| c == '-'))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let from = lines.len().saturating_sub(12);
    format!("; its last output:\n  {}", lines[from..].join("\n  "))
}

/// The run's trace and its ranks' timelines from the raw logs beside it.
fn read_run(out: &Path, n: usize, what: &str) -> Result<Run> {
    let no = |why: String| SensitivityError::NoTrace {
        run: n,
        what: what.into(),
        why,
    };
    let trace = TraceFile::read(out).map_err(|e| no(e.to_string()))?;
    let stem = out
        .to_string_lossy()
        .trim_end_matches(".iotrex")
        .to_string();
    let mut timelines = Vec::new();
    let mut bytes = Vec::new();
    for r in 0..trace.header.nranks {
        let p = PathBuf::from(format!("{stem}.rank{r}.jsonl"));
        let text = std::fs::read_to_string(&p).map_err(|e| no(format!("{}: {e}", p.display())))?;
        let events = text
            .lines()
            .map(serde_json::from_str::<LoggedEvent>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| no(format!("{}: {e}", p.display())))?;
        let (t, b) = timeline(&events);
        timelines.push(t);
        bytes.push(b);
    }
    Ok(Run {
        trace,
        timelines,
        bytes,
    })
}

/// When each I/O call started, ns after the end of `MPI_Init` (which every rank leaves at
/// about the same time), or after the first call without one; and the bytes those calls
/// moved. (The replay numbers the calls alike: `replay::deps`.)
fn timeline(events: &[LoggedEvent]) -> (Timeline, u64) {
    let mut t = 0u64;
    let mut anchor = None;
    let mut starts = Vec::new();
    let mut bytes = 0u64;
    for e in events {
        let start = t + e.gap_ns;
        t = start + e.dur_ns;
        if e.call.op == Op::Init && anchor.is_none() {
            anchor = Some(t);
            starts.clear();
            bytes = 0;
        } else if e.call.op.layer() != Layer::Mpi {
            starts.push(start);
            bytes += e.call.op.data_bytes(&e.call.params);
        }
    }
    let a = anchor.unwrap_or(0);
    (
        starts.into_iter().map(|s| s.saturating_sub(a)).collect(),
        bytes,
    )
}

/// Each rank's median start of each call over the runs (the calls all runs made).
fn median_timelines(runs: &[Run], nranks: u32) -> Vec<Timeline> {
    (0..nranks as usize)
        .map(|r| {
            let len = runs
                .iter()
                .map(|x| x.timelines.get(r).map_or(0, Vec::len))
                .min()
                .unwrap_or(0);
            (0..len)
                .map(|k| median(runs.iter().map(|x| x.timelines[r][k]).collect()))
                .collect()
        })
        .collect()
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_groups_parse() {
        assert_eq!(parse_duration("20ms"), Ok(20_000_000));
        assert_eq!(parse_delay("auto"), Ok(Delay::Auto));
        assert_eq!(parse_delay("2ms"), Ok(Delay::Fixed(2_000_000)));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("500us"), Ok(500_000));
        assert!(parse_duration("0ms").is_err() && parse_duration("3 parsecs").is_err());
        assert_eq!(
            parse_groups("0-2,3+5").unwrap(),
            vec![vec![0], vec![1], vec![2], vec![3, 5]]
        );
        assert!(parse_groups("x").is_err() && parse_groups(",").is_err());
        assert_eq!(parse_rate("20MiB/s"), Ok(20 << 20));
        assert_eq!(parse_rate("500KB/s"), Ok(500_000));
        assert_eq!(parse_rate("4096"), Ok(4096));
        assert!(parse_rate("0MiB/s").is_err() && parse_rate("fast").is_err());
    }
}
