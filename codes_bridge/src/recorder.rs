//! The `recorder` format: `DIR/log.<rank>` text files in the syntax CODES'
//! `recorder_io_workload` method (`codes-recorder-io-wrkld.c`) parses, and a reader that loads
//! them the way that method does.
//!
//! Lines the writer produces (times in seconds with nanosecond digits):
//! ```text
//! 1.000000000 iotrex_start
//! 1.000003120 open (out/file_0, 577, 420) 3 0.000001500
//! 1.000012000 write (3, 0x0, 8192, 0) 8192 0.000000900
//! 1.000013000 close (3) 0 0.000000400
//! BARRIER
//! ```
//! Each loader quirk and how the writer avoids it:
//! - the first timestamp becomes the rank's zero, so the first line is an `iotrex_start` marker
//!   (an unknown call, which the loader skips after reading its time) and the delay before the
//!   first operation survives;
//! - a bare `0` timestamp is a continuation line, so every time is at least 1 s;
//! - a `BARRIER` line restarts the rank's clock at zero, so times after it count from 1 s again,
//!   and the delay before a barrier (which the loader cannot express) is moved after it;
//! - gaps of 10 us or less are dropped, so shorter delays are carried forward and added to the
//!   next one until the sum is longer (what is still pending at the end is reported dropped);
//! - a non-`O_CREAT` open inserts an all-rank barrier, so every open carries `O_CREAT`;
//! - fds are allocated lowest-free and reused only after their close;
//! - read/write lines carry all four arguments; no blank lines;
//! - every rank's log has an open: a rank with no I/O opens and closes `iotrex_idle`;
//! - paths are percent-encoded (spaces, commas and parentheses split tokens);
//! - more than 2048 operations in a rank are refused (the loader silently drops the rest).

use crate::error::CodesError;
use crate::hash::file_id;
use crate::stats::{CodesStats, OpCounts};
use crate::view::{Kind, O_CREAT, Sink, ViewOp};
use crate::workload::{CODES_NAME_MAX, Workload};
use crate::{ExportReport, Format};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Operations per rank CODES' recorder loader keeps (`trace_ops[2048]`).
pub const RECORDER_MAX_OPS: u64 = 2048;
/// `RECORDER_NEGLIGIBLE_DELAY`: gaps up to this are not turned into delays.
const NEGLIGIBLE_NS: u64 = 10_000;
/// Every written time is this plus the rank clock, so no time is 0.
const BASE_NS: u64 = 1_000_000_000;
/// Path opened by ranks with no I/O, because the loader needs at least one open per rank.
pub const IDLE_PATH: &str = "iotrex_idle";
/// Longest `DIR/log.<rank>` the recorder loader's `trace_file_name[1024]` holds.
const RECORDER_FILE_MAX: usize = 1024;

/// The recorder format: one `DIR/log.<rank>` per rank, nothing else.
pub(crate) struct Recorder;

impl Workload for Recorder {
    const FORMAT: Format = Format::Recorder;
    type Rank = RecorderRank;

    fn capacity(d: usize, last: u32) -> Option<String> {
        // The directory goes into a 512-byte field; "DIR/log.<rank>" into 1024 bytes.
        if d + 1 > CODES_NAME_MAX {
            return Some(format!(
                "CODES holds the directory in {CODES_NAME_MAX} bytes and this path has {d}"
            ));
        }
        let longest = d + "/log.".len() + last.to_string().len();
        (longest + 1 > RECORDER_FILE_MAX).then(|| {
            format!(
                "log.{last} would need a {longest}-byte path and CODES holds {RECORDER_FILE_MAX}"
            )
        })
    }

    fn is_export_file(name: &str) -> bool {
        name.strip_prefix("log.")
            .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
    }

    /// The log format has no place for a rank's node: the header is not needed.
    fn begin(_dir: &Path, _header: &rsd::Header) -> Result<Recorder, CodesError> {
        Ok(Recorder)
    }

    fn rank(&mut self, _dir: &Path, _rank: u32) -> Result<RecorderRank, CodesError> {
        Ok(RecorderRank::new())
    }

    fn end_rank(
        &mut self,
        r: RecorderRank,
        dir: &Path,
        rank: u32,
        trailing: u64,
        rep: &mut ExportReport,
    ) -> Result<OpCounts, CodesError> {
        let (bytes, dropped, counts) = r.finish(rank, trailing, dir)?;
        rep.bytes += bytes;
        rep.dropped_delay_ns += dropped;
        Ok(counts)
    }

    fn end(self, _rep: &mut ExportReport) -> Result<(), CodesError> {
        Ok(())
    }

    fn read(path: &Path) -> Result<CodesStats, CodesError> {
        read_dir(path)
    }
}

fn secs(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// Writes one rank's log in memory (at most 2048 short lines), then to disk.
pub(crate) struct RecorderRank {
    buf: String,
    /// Rank clock: time since the rank's zero or its last barrier, ns.
    clock: u64,
    /// Delay not yet written because it is too short for the loader to keep.
    carry: u64,
    counts: OpCounts,
}

impl RecorderRank {
    pub fn new() -> RecorderRank {
        let mut buf = String::new();
        let _ = writeln!(buf, "{} iotrex_start", secs(BASE_NS));
        RecorderRank {
            buf,
            clock: 0,
            carry: 0,
            counts: OpCounts::default(),
        }
    }

    fn ops(&self) -> u64 {
        self.counts.ops()
    }

    fn line(&mut self, s: std::fmt::Arguments<'_>) {
        // Past the cap the rank is refused anyway; keep counting but stop growing the buffer.
        if self.ops() <= RECORDER_MAX_OPS {
            let _ = self.buf.write_fmt(s);
            self.buf.push('\n');
        }
    }

    /// Writes the log. `trailing` is the delay after the last operation, which the format
    /// cannot express. Returns (bytes written, delay dropped in ns, the rank's counts).
    pub fn finish(
        mut self,
        rank: u32,
        trailing: u64,
        dir: &Path,
    ) -> Result<(u64, u64, OpCounts), CodesError> {
        if self.counts.opens == 0 {
            // The loader crashes on a log without an open (its fd table is never created).
            let _ = self.op(
                0,
                &idle_op(Kind::Open {
                    path: IDLE_PATH.into(),
                    flags: O_CREAT | 1,
                    mode: 0o644,
                }),
            );
            let _ = self.op(0, &idle_op(Kind::Close));
            self.counts.idle_ranks = 1;
        }
        if self.ops() > RECORDER_MAX_OPS {
            return Err(CodesError::TooManyOps {
                rank,
                ops: self.ops(),
                limit: RECORDER_MAX_OPS,
            });
        }
        let path = dir.join(format!("log.{rank}"));
        rsd::atomic::write(&path, &self.buf).map_err(|e| CodesError::io(&path, e))?;
        Ok((self.buf.len() as u64, self.carry + trailing, self.counts))
    }
}

fn idle_op(kind: Kind) -> ViewOp {
    ViewOp {
        kind,
        fd: 3,
        file_id: file_id(IDLE_PATH),
        dur_ns: 0,
    }
}

impl Sink for RecorderRank {
    fn op(&mut self, delay_ns: u64, op: &ViewOp) -> Result<(), CodesError> {
        self.carry += delay_ns;
        if op.kind == Kind::Barrier {
            self.counts.barriers += 1;
            self.line(format_args!("BARRIER"));
            self.clock = 0;
            return Ok(());
        }
        let start = if self.carry > NEGLIGIBLE_NS {
            self.counts.delay_ns += self.carry;
            self.clock + std::mem::take(&mut self.carry)
        } else {
            self.clock
        };
        let ts = secs(BASE_NS + start);
        let dur = secs(op.dur_ns);
        let fd = op.fd;
        match &op.kind {
            Kind::Open { path, flags, mode } => {
                self.counts.opens += 1;
                let flags = flags | O_CREAT;
                self.line(format_args!(
                    "{ts} open ({path}, {flags}, {mode}) {fd} {dur}"
                ));
            }
            Kind::Close => {
                self.counts.closes += 1;
                self.line(format_args!("{ts} close ({fd}) 0 {dur}"));
            }
            Kind::Read { size, offset } => {
                self.counts.reads += 1;
                self.counts.read_bytes += size;
                self.line(format_args!(
                    "{ts} read ({fd}, 0x0, {size}, {offset}) {size} {dur}"
                ));
            }
            Kind::Write { size, offset } => {
                self.counts.writes += 1;
                self.counts.write_bytes += size;
                self.line(format_args!(
                    "{ts} write ({fd}, 0x0, {size}, {offset}) {size} {dur}"
                ));
            }
            Kind::Barrier => unreachable!("handled above"),
        }
        self.clock = start + op.dur_ns;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Reading an export back, as CODES does.

/// C `strtok` over one line: skips leading delimiters, cuts at the next one and consumes it.
struct Strtok<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Strtok<'a> {
    fn next(&mut self, delims: &str) -> Option<&'a str> {
        let b = self.s.as_bytes();
        let is_delim = |c: u8| delims.as_bytes().contains(&c);
        while self.pos < b.len() && is_delim(b[self.pos]) {
            self.pos += 1;
        }
        if self.pos >= b.len() {
            return None;
        }
        let start = self.pos;
        while self.pos < b.len() && !is_delim(b[self.pos]) {
            self.pos += 1;
        }
        let tok = &self.s[start..self.pos];
        if self.pos < b.len() {
            self.pos += 1;
        }
        Some(tok)
    }
}

/// C `atof`: the longest numeric prefix, 0 if none.
fn atof(s: &str) -> f64 {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(s.len());
    (0..=end)
        .rev()
        .find_map(|n| s[..n].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// C `atol`/`atoi`: optional sign and leading digits, 0 if none (wrapping where C is undefined).
fn atol(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for c in digits.bytes().take_while(u8::is_ascii_digit) {
        v = v.wrapping_mul(10).wrapping_add(i64::from(c - b'0'));
    }
    if neg { v.wrapping_neg() } else { v }
}

#[derive(Debug, Clone, Copy)]
enum ROpKind {
    Open,
    Close,
    Read(u64),
    Write(u64),
    Barrier,
}

#[derive(Debug, Clone, Copy)]
struct ROp {
    start: f64,
    end: f64,
    kind: ROpKind,
}

/// Loads one `log.<rank>` exactly as `recorder_io_workload_load` does, then replays it as
/// `recorder_io_workload_get_next` does, adding what `codes-workload-dump -s` counts.
fn load_rank(path: &Path, text: &str, stats: &mut CodesStats) -> Result<(), CodesError> {
    let perr = |line: usize, msg: &str| CodesError::Parse {
        path: path.to_path_buf(),
        line,
        msg: msg.to_string(),
    };
    let mut ops: Vec<ROp> = Vec::new();
    // fd -> stack of file ids: qhash_add puts new entries first, so a lookup finds the newest.
    let mut files: Option<HashMap<i64, Vec<u64>>> = None;
    let mut wkld_start = 0.0f64;
    let mut io_start = 0.0f64;
    let mut lines = text.split_inclusive('\n').enumerate();
    let mut truncated = false;
    for (i, line) in lines.by_ref() {
        let ln = i + 1;
        let mut t = Strtok { s: line, pos: 0 };
        let crash = |what: &str| {
            perr(
                ln,
                &format!("{what}: CODES' loader dereferences NULL here and crashes"),
            )
        };
        let Some(mut tok) = t.next(", \n") else {
            return Err(crash("blank line"));
        };
        let mut start = 0.0;
        if tok != "BARRIER" && tok != "0" {
            if wkld_start == 0.0 {
                wkld_start = atof(tok);
            }
            start = atof(tok) - wkld_start;
            // An infinite time (`1e999`) or one that is not a number (infinities subtracted)
            // makes the replay below, CODES' recorder_io_workload_get_next, loop forever:
            // its delay never brings the clock to the operation's start.
            if !start.is_finite() {
                return Err(perr(
                    ln,
                    &format!(
                        "timestamp {tok} minus the first ({wkld_start}) is {start}: CODES' replay of this log never ends"
                    ),
                ));
            }
            tok = t
                .next(", ")
                .ok_or_else(|| crash("timestamp without a call name"))?;
        }
        fn need<'a>(
            t: &mut Strtok<'a>,
            d: &str,
            what: &str,
            crash: &dyn Fn(&str) -> CodesError,
        ) -> Result<&'a str, CodesError> {
            t.next(d).ok_or_else(|| crash(what))
        }
        let op = match tok {
            "open" | "open64" => {
                let name = need(&mut t, ", (", "open without a path", &crash)?;
                let flags = atol(need(&mut t, ", )", "open without flags", &crash)?);
                if flags & crate::view::O_CREAT == 0 {
                    ops.push(ROp {
                        start,
                        end: start,
                        kind: ROpKind::Barrier,
                    });
                    if ops.len() as u64 == RECORDER_MAX_OPS {
                        truncated = true;
                        break;
                    }
                }
                need(&mut t, ", )", "open without a mode", &crash)?;
                let fd = atol(need(&mut t, ", ", "open without a returned fd", &crash)?);
                let dur = atof(need(&mut t, ", \n", "open without a duration", &crash)?);
                files
                    .get_or_insert_with(HashMap::new)
                    .entry(fd)
                    .or_default()
                    .push(file_id(name));
                ROp {
                    start,
                    end: start + dur,
                    kind: ROpKind::Open,
                }
            }
            "close" => {
                let fd = atol(need(&mut t, ", ()", "close without an fd", &crash)?);
                need(&mut t, ", ", "close without a result", &crash)?;
                let dur = atof(need(&mut t, ", \n", "close without a duration", &crash)?);
                let tbl = files
                    .as_mut()
                    .ok_or_else(|| crash("close before any open"))?;
                let ids = tbl.get_mut(&fd).filter(|v| !v.is_empty()).ok_or_else(|| {
                    perr(
                        ln,
                        &format!(
                            "close of fd {fd}, which is not open: CODES' loader fails the rank"
                        ),
                    )
                })?;
                ids.pop();
                ROp {
                    start,
                    end: start + dur,
                    kind: ROpKind::Close,
                }
            }
            "read" | "read64" | "write" | "write64" => {
                let fd = atol(need(&mut t, ", (", "read/write without an fd", &crash)?);
                need(&mut t, ", ", "read/write without a buffer", &crash)?;
                let size = atol(need(&mut t, ", )", "read/write without a size", &crash)?);
                need(&mut t, ", )", "read/write without an offset", &crash)?;
                need(&mut t, ", ", "read/write without a result", &crash)?;
                let dur = atof(need(
                    &mut t,
                    ", \n",
                    "read/write without a duration",
                    &crash,
                )?);
                let (s, e) = if io_start == 0.0 {
                    (start, start + dur)
                } else {
                    (io_start, io_start)
                };
                let tbl = files
                    .as_ref()
                    .ok_or_else(|| crash("read/write before any open"))?;
                if tbl.get(&fd).is_none_or(|v| v.is_empty()) {
                    return Err(perr(
                        ln,
                        &format!(
                            "read/write on fd {fd}, which is not open: CODES' loader fails the rank"
                        ),
                    ));
                }
                // size_t in CODES: a negative size wraps.
                let size = size as u64;
                let kind = if tok.starts_with("read") {
                    ROpKind::Read(size)
                } else {
                    ROpKind::Write(size)
                };
                ROp {
                    start: s,
                    end: e,
                    kind,
                }
            }
            "BARRIER" => ROp {
                start: io_start,
                end: io_start,
                kind: ROpKind::Barrier,
            },
            "0" => {
                let d = atof(need(
                    &mut t,
                    ", \n",
                    "continuation line without a duration",
                    &crash,
                )?);
                let last = ops.last_mut().ok_or_else(|| {
                    perr(ln, "a bare 0 timestamp before any operation: CODES' loader writes before its array and crashes")
                })?;
                last.end += d;
                io_start = 0.0;
                continue;
            }
            other => {
                if other == "MPI_File_write_at_all" || other == "MPI_File_read_at_all" {
                    io_start = start;
                }
                continue;
            }
        };
        ops.push(op);
        if ops.len() as u64 == RECORDER_MAX_OPS {
            truncated = true;
            break;
        }
    }
    if truncated && lines.next().is_some() {
        stats.warnings.push(format!(
            "{}: more than {RECORDER_MAX_OPS} operations; CODES keeps the first {RECORDER_MAX_OPS} and ignores the rest, and so do these counts",
            path.display()
        ));
    }
    if files.is_none() {
        return Err(perr(
            0,
            "no open in this log: CODES' loader finalizes a NULL fd table and crashes",
        ));
    }
    // recorder_io_workload_get_next.
    let mut last = 0.0f64;
    let mut i = 0;
    while i < ops.len() {
        let op = ops[i];
        if op.start - last <= 0.00001 {
            match op.kind {
                ROpKind::Open => stats.num_opens += 1,
                ROpKind::Close => stats.num_closes += 1,
                ROpKind::Barrier => stats.num_barriers += 1,
                ROpKind::Read(n) => {
                    stats.num_reads += 1;
                    stats.read_size = stats.read_size.wrapping_add(n);
                }
                ROpKind::Write(n) => {
                    stats.num_writes += 1;
                    stats.write_size = stats.write_size.wrapping_add(n);
                }
            }
            last = op.end;
            i += 1;
        } else {
            stats.total_delay += op.start - last;
            last = op.start;
        }
    }
    Ok(())
}

/// Reads `DIR/log.0 .. log.<n-1>` (n = the number of consecutive logs from 0).
fn read_dir(dir: &Path) -> Result<CodesStats, CodesError> {
    let log = |r: u64| -> PathBuf { dir.join(format!("log.{r}")) };
    if !dir.is_dir() {
        return Err(CodesError::NoWorkload {
            path: dir.to_path_buf(),
            format: "recorder",
            detail: "not a directory".into(),
        });
    }
    let mut stats = CodesStats::default();
    let mut r = 0u64;
    loop {
        let p = log(r);
        let text = match std::fs::read(&p) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(CodesError::io(&p, e)),
        };
        load_rank(&p, &text, &mut stats)?;
        r += 1;
    }
    if r == 0 {
        return Err(CodesError::NoWorkload {
            path: dir.to_path_buf(),
            format: "recorder",
            detail: "log.0 not found".into(),
        });
    }
    stats.ranks = r;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<CodesStats, CodesError> {
        let mut s = CodesStats::default();
        load_rank(Path::new("log.0"), text, &mut s).map(|_| s)
    }

    #[test]
    fn strtok_and_c_conversions() {
        let mut t = Strtok {
            s: "1.5 open (a/b, 577, 420) 3 0.1\n",
            pos: 0,
        };
        assert_eq!(t.next(", \n"), Some("1.5"));
        assert_eq!(t.next(", "), Some("open"));
        assert_eq!(t.next(", ("), Some("a/b"));
        assert_eq!(t.next(", )"), Some("577"));
        assert_eq!(t.next(", )"), Some("420"));
        assert_eq!(t.next(", "), Some("3"));
        assert_eq!(t.next(", \n"), Some("0.1"));
        assert_eq!(t.next(", \n"), None);
        assert_eq!(atof("1.25abc"), 1.25);
        assert_eq!(atof("x"), 0.0);
        assert_eq!(atol("-12x"), -12);
        assert_eq!(atol("0x0"), 0);
    }

    #[test]
    fn loader_semantics() {
        // First timestamp is zero; gap of 2 s between close and write is a delay; a 5 us gap
        // is dropped; a BARRIER resets the clock so the next op at 1.5 s waits 0.5 s.
        let s = load(
            "1.0 iotrex_start\n\
             1.0 open (f, 64, 420) 3 0.000001\n\
             1.000006 write (3, 0x0, 10, 0) 10 0.1\n\
             3.100006 read (3, 0x0, 4, 0) 4 0.0\n\
             BARRIER\n\
             1.5 close (3) 0 0.0\n",
        )
        .unwrap();
        assert_eq!(
            (
                s.num_opens,
                s.num_writes,
                s.write_size,
                s.num_reads,
                s.read_size
            ),
            (1, 1, 10, 1, 4)
        );
        assert_eq!((s.num_barriers, s.num_closes), (1, 1));
        assert!((s.total_delay - 2.5).abs() < 1e-9, "{}", s.total_delay);

        // A non-creating open inserts a barrier.
        let s = load("1.0 open (f, 0, 0) 3 0.0\n").unwrap();
        assert_eq!((s.num_barriers, s.num_opens), (1, 1));
    }

    #[test]
    fn loader_failures_are_reported_not_crashed() {
        for (text, what) in [
            ("1.0 open (f, 64, 0) 3 0\n\n", "blank line"),
            ("0 0.5\n", "bare 0"),
            ("1.0 iotrex_start\n", "no open"),
            ("1.0 write (3, 0x0, 1, 0) 1 0\n", "before any open"),
            ("1.0 open (f, 64, 0) 3 0\n1.0 close (4) 0 0\n", "not open"),
            (
                "1.0 open (f, 64, 0) 3 0\n1.0 write (3, 0x0, 1) 1\n",
                "without a result",
            ),
        ] {
            let e = load(text).unwrap_err().to_string();
            assert!(e.contains(what), "{text:?}: {e}");
        }
    }

    #[test]
    fn truncation_at_the_cap_is_emulated() {
        let mut text = String::from("1.0 open (f, 64, 0) 3 0\n");
        for _ in 0..3000 {
            text.push_str("1.0 write (3, 0x0, 1, 0) 1 0\n");
        }
        let s = load(&text).unwrap();
        assert_eq!(s.num_writes, 2047);
        assert_eq!(s.warnings.len(), 1);
    }
}
