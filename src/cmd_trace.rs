//! `iotrex trace`: runs a command with the tracer preloaded into the ranks only.
//!
//! With an MPI launcher the library must reach the ranks, not the launcher itself (tracing
//! `mpirun` would record its own I/O and, for a non-MPI launcher process, write a stray trace).
//! Open MPI forwards variables with `-x NAME=VALUE`, MPICH's hydra with `-genv NAME VALUE`;
//! anything else gets the variables in its environment.

use anyhow::{Context, Result, bail};
use clap::Args;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

/// Arguments of `iotrex trace`.
#[derive(Debug, Args)]
#[command(
    about = "Run a command with the tracer preloaded into its ranks and report the trace",
    long_about = "Run an unmodified program, or an MPI launcher line, with libiotrex_tracer.so \
                  preloaded into the ranks only: `-x` for Open MPI's mpirun, `-genv` for \
                  MPICH's, the environment for a plain program. Rank 0 writes one .iotrex file \
                  at MPI_Finalize (a plain program at exit); iotrex then prints where it went, \
                  its size and rank count. The exit status is the command's. With --env, print \
                  the variables to export instead, for job scripts that launch ranks themselves.",
    after_help = "Examples:\n  iotrex trace -o app.8.iotrex -- mpirun -np 8 ./app --size 1M\n  iotrex trace -o cp.iotrex -- cp big.dat /tmp/copy\n  iotrex trace --env -o app.iotrex >> job.sh"
)]
pub struct TraceArgs {
    /// Where rank 0 writes the trace. Default: `./<exe>.<nranks>.iotrex` in the ranks' working
    /// directory.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Return-address frames hashed into each call-site signature (0 turns signatures off).
    #[arg(long, value_name = "N")]
    pub stack_depth: Option<u32>,
    /// Which parameters may be kept as statistical summaries when their exact form exceeds
    /// the value budget: `comm` (message sizes of communication calls; the default), `none` (an
    /// exact trace), `io` (sizes and offsets of I/O calls) or `comm,io`; with
    /// `order` (e.g. `comm,order`) a drain of `MPI_Waitsome` calls, which together complete
    /// their whole request array, is recorded as one call. Sets `IOTREX_APPROX` for every rank.
    #[arg(long, value_name = "LIST", value_parser = parse_approx)]
    pub approx: Option<String>,
    /// The numbers one parameter's exact form may take before it is summarised (sets
    /// `IOTREX_VALUE_BUDGET`; default 64).
    #[arg(long, value_name = "N")]
    pub value_budget: Option<usize>,
    /// Also write a flat per-rank log of every call, for debugging: the output's name with
    /// `.iotrex` replaced by `.rank<r>.jsonl` (`-o app.8.iotrex` writes `app.8.rank0.jsonl`,
    /// `app.8.rank1.jsonl`, ...).
    #[arg(long)]
    pub raw: bool,
    /// Record the HDF5 layer (the default): each HDF5 call (`H5Dwrite`, `H5Sselect_hyperslab`,
    /// ...) with the MPI, MPI-IO and POSIX calls it made nested as its children (sets
    /// `IOTREX_HDF5=1`, overriding an inherited `IOTREX_HDF5=0`).
    #[arg(long, overrides_with = "no_hdf5")]
    pub hdf5: bool,
    /// Do not record the HDF5 layer: HDF5's MPI, MPI-IO and POSIX calls at the top level (sets
    /// `IOTREX_HDF5=0`).
    #[arg(long, overrides_with = "hdf5")]
    pub no_hdf5: bool,
    /// Record the PnetCDF layer (the default): each PnetCDF call (`ncmpi_put_vara_all`,
    /// `ncmpi_wait_all`, ...) with the MPI, MPI-IO and POSIX calls it made nested as its
    /// children (sets `IOTREX_PNETCDF=1`).
    #[arg(long, overrides_with = "no_pnetcdf")]
    pub pnetcdf: bool,
    /// Do not record the PnetCDF layer (sets `IOTREX_PNETCDF=0`).
    #[arg(long, overrides_with = "pnetcdf")]
    pub no_pnetcdf: bool,
    /// Record the NetCDF layer (the default): each `nc_*` call (`nc_put_vara_int`,
    /// `nc_def_var`, ...) with the calls NetCDF made nested as its children, HDF5's among them
    /// unless `--no-hdf5` (sets `IOTREX_NETCDF=1`).
    #[arg(long, overrides_with = "no_netcdf")]
    pub netcdf: bool,
    /// Do not record the NetCDF layer (sets `IOTREX_NETCDF=0`).
    #[arg(long, overrides_with = "netcdf")]
    pub no_netcdf: bool,
    /// Keep numbers in paths as they were, even where they are the run's own ids. By
    /// default a number in a path that equals the process's pid, rank 0's pid, the job id
    /// (Open MPI's, PMIx's, Slurm's, PBS's, LSF's) or a time near the start (seconds since
    /// the epoch) is recorded as a run value, which extrapolation carries unfitted and replay
    /// fills afresh (sets `IOTREX_RUN_IDS=0`).
    #[arg(long)]
    pub no_run_ids: bool,
    /// Leave out the calls on files under DIR (repeatable): they are not recorded, only
    /// counted per directory in the trace's header. `none` drops the default exclusions.
    /// Adds to `IOTREX_EXCLUDE`.
    #[arg(long, value_name = "DIR", long_help = exclude_help())]
    pub exclude: Vec<String>,
    /// Trace the files under DIR even inside an excluded directory (repeatable; adds to
    /// `IOTREX_INCLUDE`): `--include /etc`, `--include /` for every file.
    #[arg(long, value_name = "DIR")]
    pub include: Vec<String>,
    /// The preload library. Default: `$IOTREX_TRACER_LIB`, else `libiotrex_tracer.so` next to
    /// this `iotrex` binary.
    #[arg(long, value_name = "PATH")]
    pub lib: Option<PathBuf>,
    /// Print the environment variables to set (as `export` lines) instead of running anything,
    /// for job scripts that launch ranks themselves.
    #[arg(long)]
    pub env: bool,
    /// The command to trace, after `--`: an MPI launcher line (`mpirun -np 8 ./app`) or a plain
    /// program.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<OsString>,
}

/// Which launcher a command starts with, and so how variables reach the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// Open MPI's mpirun/mpiexec: `-x NAME=VALUE`.
    OpenMpi,
    /// MPICH (hydra): `-genv NAME VALUE`.
    Mpich,
    /// Anything else: the variables go into the command's environment.
    Plain,
}

const LAUNCHERS: &[&str] = &[
    "mpirun",
    "mpiexec",
    "orterun",
    "mpirun.openmpi",
    "mpiexec.openmpi",
    "mpirun.mpich",
    "mpiexec.mpich",
    "mpiexec.hydra",
];

/// Decides the launcher kind from the command's first word, asking the launcher itself
/// (`--version`) which MPI it belongs to.
pub fn detect(cmd0: &Path) -> Launcher {
    let name = cmd0.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !LAUNCHERS.contains(&name) {
        return Launcher::Plain;
    }
    if name.ends_with(".openmpi") || name == "orterun" {
        return Launcher::OpenMpi;
    }
    if name.ends_with(".mpich") || name.ends_with(".hydra") {
        return Launcher::Mpich;
    }
    let out = Command::new("timeout")
        .arg("20")
        .arg(cmd0)
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    let text = match out {
        Ok(o) => format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(_) => String::new(),
    };
    if text.contains("Open MPI") || text.contains("OpenRTE") || text.contains("Open RTE") {
        Launcher::OpenMpi
    } else if text.contains("HYDRA") || text.contains("MPICH") {
        Launcher::Mpich
    } else {
        // An unknown mpirun: environment variables are the only thing every launcher passes on.
        Launcher::Plain
    }
}

/// Finds the preload library and makes its path absolute.
pub fn find_lib(explicit: Option<&Path>) -> Result<PathBuf> {
    let candidate = match explicit {
        Some(p) => p.to_path_buf(),
        None => match std::env::var_os("IOTREX_TRACER_LIB") {
            Some(p) => PathBuf::from(p),
            None => std::env::current_exe()
                .context("cannot locate the iotrex binary to find libiotrex_tracer.so")?
                .with_file_name("libiotrex_tracer.so"),
        },
    };
    if !candidate.is_file() {
        bail!(
            "libiotrex_tracer.so not found at {} (--lib)\nhint: build it with `cargo build --release -p tracer`, or pass --lib PATH",
            candidate.display()
        );
    }
    std::path::absolute(&candidate)
        .with_context(|| format!("cannot make {} absolute (--lib)", candidate.display()))
}

/// The variables the ranks need, in a fixed order.
pub fn variables(a: &TraceArgs, lib: &Path) -> Result<Vec<(String, String)>> {
    let mut v = vec![("LD_PRELOAD".to_string(), lib.display().to_string())];
    if let Some(out) = &a.output {
        // Absolute, because ranks may start in another directory than this command.
        let abs = std::path::absolute(out)
            .with_context(|| format!("cannot make {} absolute (--output)", out.display()))?;
        v.push(("IOTREX_OUT".into(), abs.display().to_string()));
    }
    if let Some(d) = a.stack_depth {
        v.push(("IOTREX_STACK_DEPTH".into(), d.to_string()));
    }
    if let Some(x) = &a.approx {
        v.push((rsd::approx::APPROX_ENV.into(), x.clone()));
    }
    if let Some(b) = a.value_budget {
        v.push((rsd::approx::BUDGET_ENV.into(), b.to_string()));
    }
    if a.raw {
        v.push(("IOTREX_RAW".into(), "1".into()));
    }
    if a.no_run_ids {
        v.push(("IOTREX_RUN_IDS".into(), "0".into()));
    }
    for (var, on, off) in [
        ("IOTREX_HDF5", a.hdf5, a.no_hdf5),
        ("IOTREX_PNETCDF", a.pnetcdf, a.no_pnetcdf),
        ("IOTREX_NETCDF", a.netcdf, a.no_netcdf),
    ] {
        // The layers are on by default; `--hdf5` is still said, so that it wins over an
        // `IOTREX_HDF5=0` the user's environment holds.
        if on || off {
            v.push((var.into(), if off { "0" } else { "1" }.into()));
        }
    }
    v.extend(exclusion_variables(a)?);
    Ok(v)
}

/// Why a program that ran well may leave no trace: a process writes one only when it made a
/// traced call, and calls on the system's files are left out.
fn nothing_traced_hint() -> String {
    format!(
        "hint: a program writes a trace only when it makes a traced call; calls on files under \
         {} are left out by default: `iotrex trace --include DIR` traces them",
        rsd::exclude::DEFAULT_EXCLUDE.join(", ")
    )
}

/// `--exclude`'s help, with the default rules from the one place that holds them.
fn exclude_help() -> String {
    use rsd::exclude::{DEFAULT_EXCLUDE, DEFAULT_INCLUDE, INTERPRETER_VARS};
    format!(
        "Leave out the calls on files under DIR (repeatable): they are not recorded, only \
         counted per directory in the trace's header (`iotrex show`, `iotrex stats`). The \
         system's directories are left out by default: {} (but not {}), and the `lib` of \
         ${} when set (an interpreter's modules). Only absolute paths are matched; the \
         longest rule that holds a path decides. `--exclude none` drops the defaults. Adds to \
         `IOTREX_EXCLUDE`.",
        DEFAULT_EXCLUDE.join(", "),
        DEFAULT_INCLUDE.join(", "),
        INTERPRETER_VARS.join(" or $"),
    )
}

/// `IOTREX_EXCLUDE` and `IOTREX_INCLUDE` from `--exclude` and `--include` added to the
/// inherited ones, checked here so that a bad rule fails before the run.
fn exclusion_variables(a: &TraceArgs) -> Result<Vec<(String, String)>> {
    use rsd::exclude::{EXCLUDE_VAR, INCLUDE_VAR, Rules};
    let joined = |var: &str, more: &[String]| -> String {
        let inherited = std::env::var(var).ok().filter(|s| !s.is_empty());
        inherited
            .into_iter()
            .chain(more.iter().cloned())
            .collect::<Vec<_>>()
            .join(",")
    };
    let (ex, inc) = (
        joined(EXCLUDE_VAR, &a.exclude),
        joined(INCLUDE_VAR, &a.include),
    );
    Rules::parse(&ex, &inc).map_err(|e| anyhow::anyhow!("{e} (--exclude/--include)"))?;
    let mut v = Vec::new();
    if !a.exclude.is_empty() {
        v.push((EXCLUDE_VAR.to_string(), ex));
    }
    if !a.include.is_empty() {
        v.push((INCLUDE_VAR.to_string(), inc));
    }
    Ok(v)
}

/// `--approx`: the tracer's syntax, checked here so a typo fails before the run.
fn parse_approx(s: &str) -> Result<String, String> {
    rsd::approx::Policy::parse_layers(s)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// The command line to run: launcher flags inserted right after the launcher's name.
pub fn command_line(cmd: &[OsString], kind: Launcher, vars: &[(String, String)]) -> Vec<OsString> {
    let mut out = vec![cmd[0].clone()];
    for (k, v) in vars {
        match kind {
            Launcher::OpenMpi => {
                out.push("-x".into());
                out.push(format!("{k}={v}").into());
            }
            Launcher::Mpich => {
                out.push("-genv".into());
                out.push(k.into());
                out.push(v.into());
            }
            Launcher::Plain => {}
        }
    }
    out.extend(cmd[1..].iter().cloned());
    out
}

/// Runs `iotrex trace`; returns the exit status to use.
pub fn run(a: &TraceArgs) -> Result<i32> {
    let lib = find_lib(a.lib.as_deref())?;
    let mut vars = variables(a, &lib)?;
    if a.env {
        for (k, v) in &vars {
            println!("export {k}={}", shell_quote(v));
        }
        // One id per run of the job script (its shell's pid and the time), shared by every
        // process it starts: the tracer lets the MPI ranks alone own the trace when there
        // are any, so mpirun and the script's helpers do not overwrite it.
        println!("export {}=\"iotrex-$$-$(date +%s%N)\"", rsd::job::JOB_VAR);
        if let Some(c0) = a.command.first() {
            let kind = detect(Path::new(c0));
            let line = command_line(&a.command, kind, &vars);
            let shown: Vec<String> = line
                .iter()
                .map(|s| shell_quote(&s.to_string_lossy()))
                .collect();
            println!("# {kind:?} launcher; run as:\n# {}", shown.join(" "));
        }
        return Ok(0);
    }
    if a.command.is_empty() {
        bail!(
            "no command to trace (COMMAND)\nhint: iotrex trace -o app.iotrex -- mpirun -np 8 ./app"
        );
    }
    // Every process of this command is one job (see the tracer's `job` module): when some are
    // MPI ranks, the others (mpirun under `timeout`, a shell's helpers) leave the trace to them.
    let job = format!(
        "iotrex-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let job_dir = rsd::job::job_dir(
        &rsd::job::tmp_dir(std::env::var("TMPDIR").ok().as_deref()),
        &job,
    );
    vars.push((rsd::job::JOB_VAR.to_string(), job));
    let kind = detect(Path::new(&a.command[0]));
    let line = command_line(&a.command, kind, &vars);
    let start = SystemTime::now();
    let mut child = Command::new(&line[0]);
    child.args(&line[1..]);
    if kind == Launcher::Plain {
        for (k, v) in &vars {
            child.env(k, v);
        }
        // Every process of a plain command (a shell running `a; b`, a script) inherits the
        // same IOTREX_OUT and writes it at exit: the last one would win. With
        // IOTREX_ONE_WRITER the first process to write claims the path with an exclusive
        // create and the others write `<stem>.pid<PID>.iotrex` beside it, listed below. The
        // claim needs the path free, so a trace left by an earlier run is removed first (it
        // would be replaced anyway).
        if let Some(out) = &a.output {
            match std::fs::remove_file(out) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => bail!(
                    "cannot remove the old trace {} (--output): {e}",
                    out.display()
                ),
            }
            // Old per-process traces of the same name would be listed as this run's.
            for p in others(out, SystemTime::UNIX_EPOCH) {
                let _ = std::fs::remove_file(p);
            }
            child.env("IOTREX_ONE_WRITER", "1");
        }
    }
    let status = child.status().with_context(|| {
        format!(
            "cannot run {} (COMMAND)",
            Path::new(&a.command[0]).display()
        )
    })?;
    // The job's few marker files (the tracer keeps nothing else there).
    let _ = std::fs::remove_dir_all(&job_dir);
    // Killed by a signal: the shell's convention, 128 + the signal number.
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(128 + 9);
    match find_trace(a.output.as_deref(), start) {
        Some(p) => {
            let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            let what = match rsd::TraceFile::read(&p) {
                Ok(tf) => format!(
                    "{} ranks{}",
                    tf.header.nranks,
                    if tf.header.incomplete {
                        ", INCOMPLETE"
                    } else {
                        ""
                    }
                ),
                Err(e) => format!("unreadable: {e}"),
            };
            eprintln!("iotrex: trace {} ({size} bytes, {what})", p.display());
        }
        None if a
            .output
            .as_deref()
            .is_some_and(|o| !others(o, start).is_empty()) => {}
        None => {
            if !left_elsewhere(a.output.as_deref(), start, code) {
                eprintln!(
                    "iotrex: no trace was written{}; the command exited with status {code}",
                    a.output
                        .as_ref()
                        .map(|o| format!(" to {}", o.display()))
                        .unwrap_or_default()
                );
                if code == 0 {
                    eprintln!("{}", nothing_traced_hint());
                    return Ok(1);
                }
            }
        }
    }
    if let Some(o) = &a.output {
        for p in others(o, start) {
            let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            eprintln!(
                "iotrex: another process of the command wrote its own trace: {} ({size} bytes)",
                p.display()
            );
        }
    }
    Ok(code)
}

/// Where the trace of `out` went when it is not there, said on stderr: the temporary
/// directory (the tracer's fallback when `out` refused it: a warning, the exit status stays
/// the command's), or the per-rank files a job that ended before its merge left, with the
/// command that merges them. False when there is neither.
fn left_elsewhere(out: Option<&Path>, start: SystemTime, code: i32) -> bool {
    let Some(out) = out else { return false };
    let since = start.checked_sub(Duration::from_secs(1)).unwrap_or(start);
    let fresh = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= since)
    };
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = rsd::job::tmp_dir(std::env::var("TMPDIR").ok().as_deref());
    let moved: Vec<PathBuf> = std::fs::read_dir(&tmp)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            name.as_deref()
                .is_some_and(|n| rsd::job::is_fallback_of(&e.file_name().to_string_lossy(), n))
        })
        .map(|e| e.path())
        .filter(|p| fresh(p))
        .collect();
    if let Some(p) = moved.first() {
        let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "iotrex: warning: {} refused the trace; it was written to {} instead ({size} bytes)",
            out.display(),
            p.display()
        );
        return true;
    }
    let ranks: Vec<PathBuf> = rsd::job::rank_files(out)
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| fresh(p))
        .collect();
    if ranks.is_empty() {
        return false;
    }
    let shown: Vec<String> = ranks
        .iter()
        .take(4)
        .map(|p| p.display().to_string())
        .collect();
    let more = ranks.len().saturating_sub(shown.len());
    eprintln!(
        "iotrex: no merged trace at {o}: the command (status {code}) ended before MPI_Finalize          merged it; its ranks left {} files of their own: {}{}
         iotrex: merge them with `iotrex merge {o} -o {o}` (`iotrex show {o}` reads them as          they are)",
        ranks.len(),
        shown.join(" "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
        o = out.display()
    );
    true
}

/// The traces written beside `out` by the other processes of a plain command
/// (`<stem>.pid<PID>.iotrex`, see `IOTREX_ONE_WRITER`, and with `IOTREX_ALL_PROCESSES=1` the
/// `<stem>.nonrank-<exe>-<pid>.iotrex` of an MPI job's other processes) since `since`, oldest
/// first.
fn others(out: &Path, since: SystemTime) -> Vec<PathBuf> {
    let since = since.checked_sub(Duration::from_secs(1)).unwrap_or(since);
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned());
    let Some(name) = name else { return Vec::new() };
    let stem = name.strip_suffix(".iotrex").unwrap_or(&name).to_string();
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(SystemTime, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let pid_file = n
                .strip_prefix(&format!("{stem}.pid"))
                .and_then(|r| r.strip_suffix(".iotrex"))
                .is_some_and(|pid| {
                    !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit() || b == b'-')
                });
            // A process of an MPI job that is not a rank, kept by IOTREX_ALL_PROCESSES=1.
            let nonrank = n.starts_with(&format!("{stem}.nonrank-")) && n.ends_with(".iotrex");
            pid_file || nonrank
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .filter(|(m, _)| *m >= since)
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// The trace just written: `--output`, or the newest `*.iotrex` in the current directory
/// modified since the run started.
fn find_trace(out: Option<&Path>, since: SystemTime) -> Option<PathBuf> {
    if let Some(o) = out {
        return o.is_file().then(|| o.to_path_buf());
    }
    let since = since.checked_sub(Duration::from_secs(1)).unwrap_or(since);
    std::fs::read_dir(".")
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "iotrex"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .filter(|(m, _)| *m >= since)
        .max_by_key(|(m, _)| *m)
        .map(|(_, p)| p)
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-=:+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
