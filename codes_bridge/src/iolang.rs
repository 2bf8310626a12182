//! The `iolang` format: `DIR/meta.txt` plus one kernel `DIR/rank<R>.kernel` per rank, in the
//! I/O language of CODES' `iolang_workload` method, and a reader that runs kernels the way
//! CODES' parser does.
//!
//! ```text
//! meta.txt:      1 0 0 rank0.kernel
//!                1 1 1 rank1.kernel
//! rank0.kernel:  r = getgrouprank -1;
//!                sleep 3120;
//!                open 7133928595739391595;
//!                writeat 7133928595739391595, 8192, 0;
//!                close 7133928595739391595;
//!                sync 0;
//!                exit 0;
//! ```
//! Quirks and how the writer avoids them:
//! - `getgrouprank` reads a global set at load time, which is wrong inside a simulator, so each
//!   rank gets its own kernel (meta line `1 R R rankR.kernel`) with literal offsets;
//! - the first statement is consumed at load, so every kernel starts `r = getgrouprank -1;`;
//! - a kernel without `exit 0;` never ends;
//! - `while` runs its whole body in one step and only the last operation reaches the
//!   simulator, so kernels are straight-line;
//! - the lexer knows no `#`, upper case or multi-letter names: none are written;
//! - integer literals go through `atoll`, so file ids are kept below 2^63;
//! - delays are `sleep` in nanoseconds and barriers are `sync`;
//! - a meta line's first number is the rank's group id, which the loader only carries
//!   (`codes_workload_info::group_id`) and warns about when 0: it is the rank's node plus one
//!   where the trace has a node layout ([`group_of`]), else 1.

use crate::error::CodesError;
use crate::stats::{CodesStats, OpCounts};
use crate::view::{Kind, Sink, ViewOp};
use crate::workload::{CODES_NAME_MAX, Workload};
use crate::{ExportReport, Format};
use rsd::atomic::AtomicFile;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The meta file's name inside the export directory.
pub const META: &str = "meta.txt";

/// A rank's kernel file name.
pub fn kernel_name(rank: u32) -> String {
    format!("rank{rank}.kernel")
}

/// The iolang format: `DIR/meta.txt`, a line per rank naming its kernel `DIR/rank<R>.kernel`.
pub(crate) struct Iolang {
    /// The meta file, written a line per rank as each kernel is done.
    meta: AtomicFile,
    path: PathBuf,
    /// Where the ranks ran (`rsd::Header::node_layout`) and the run's rank count.
    nodes: Option<(rsd::NodeLayout, u32)>,
}

/// The group id of `rank`'s meta line: its node plus one (CODES reserves group 0) where the
/// trace says where ranks ran, else 1 (one group).
pub fn group_of(nodes: Option<&(rsd::NodeLayout, u32)>, rank: u32) -> u64 {
    nodes
        .and_then(|(l, n)| l.node_of(rank, *n))
        .map_or(1, |node| u64::from(node) + 1)
}

impl Workload for Iolang {
    const FORMAT: Format = Format::Iolang;
    type Rank = IolangRank;

    fn capacity(d: usize, last: u32) -> Option<String> {
        let meta = d + 1 + META.len();
        let kernel = d + 1 + kernel_name(last).len();
        (meta.max(kernel) + 1 > CODES_NAME_MAX).then(|| {
            format!(
                "{} would need a {}-byte path and CODES holds {CODES_NAME_MAX}",
                kernel_name(last),
                meta.max(kernel)
            )
        })
    }

    fn is_export_file(name: &str) -> bool {
        name == META
            || name
                .strip_prefix("rank")
                .and_then(|s| s.strip_suffix(".kernel"))
                .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
    }

    fn begin(dir: &Path, header: &rsd::Header) -> Result<Iolang, CodesError> {
        let path = dir.join(META);
        let f = AtomicFile::create(&path).map_err(|e| CodesError::io(&path, e))?;
        let nodes = header.node_layout.clone().map(|l| (l, header.nranks));
        Ok(Iolang {
            meta: f,
            path,
            nodes,
        })
    }

    fn rank(&mut self, dir: &Path, rank: u32) -> Result<IolangRank, CodesError> {
        IolangRank::create(dir, rank)
    }

    fn end_rank(
        &mut self,
        r: IolangRank,
        _dir: &Path,
        rank: u32,
        trailing: u64,
        rep: &mut ExportReport,
    ) -> Result<OpCounts, CodesError> {
        let (bytes, counts) = r.finish(trailing)?;
        rep.bytes += bytes;
        let gid = group_of(self.nodes.as_ref(), rank);
        let line = format!("{gid} {rank} {rank} {}\n", kernel_name(rank));
        rep.bytes += line.len() as u64;
        self.meta
            .write_all(line.as_bytes())
            .map_err(|e| CodesError::io(&self.path, e))?;
        Ok(counts)
    }

    fn end(self, rep: &mut ExportReport) -> Result<(), CodesError> {
        self.meta
            .commit()
            .map_err(|e| CodesError::io(&self.path, e))?;
        rep.files += 1;
        Ok(())
    }

    fn read(path: &Path) -> Result<CodesStats, CodesError> {
        read(path)
    }
}

/// Streams one rank's kernel to disk.
pub(crate) struct IolangRank {
    w: AtomicFile,
    path: PathBuf,
    bytes: u64,
    counts: OpCounts,
}

impl IolangRank {
    pub fn create(dir: &Path, rank: u32) -> Result<IolangRank, CodesError> {
        let path = dir.join(kernel_name(rank));
        let f = AtomicFile::create(&path).map_err(|e| CodesError::io(&path, e))?;
        let mut k = IolangRank {
            w: f,
            path,
            bytes: 0,
            counts: OpCounts::default(),
        };
        k.put(format_args!("r = getgrouprank -1;"))?;
        Ok(k)
    }

    fn put(&mut self, s: std::fmt::Arguments<'_>) -> Result<(), CodesError> {
        let line = format!("{s}\n");
        self.bytes += line.len() as u64;
        self.w
            .write_all(line.as_bytes())
            .map_err(|e| CodesError::io(&self.path, e))
    }

    /// Writes the trailing delay and `exit 0;`; returns the bytes written and the rank's counts.
    pub fn finish(mut self, trailing: u64) -> Result<(u64, OpCounts), CodesError> {
        if trailing > 0 {
            self.counts.delay_ns += trailing;
            self.put(format_args!("sleep {trailing};"))?;
        }
        self.put(format_args!("exit 0;"))?;
        self.w.commit().map_err(|e| CodesError::io(&self.path, e))?;
        Ok((self.bytes, self.counts))
    }
}

impl Sink for IolangRank {
    fn op(&mut self, delay_ns: u64, op: &ViewOp) -> Result<(), CodesError> {
        if delay_ns > 0 {
            self.counts.delay_ns += delay_ns;
            self.put(format_args!("sleep {delay_ns};"))?;
        }
        let id = op.file_id & (u64::MAX >> 1);
        match op.kind {
            Kind::Open { .. } => {
                self.counts.opens += 1;
                self.put(format_args!("open {id};"))
            }
            Kind::Close => {
                self.counts.closes += 1;
                self.put(format_args!("close {id};"))
            }
            Kind::Read { size, offset } => {
                self.counts.reads += 1;
                self.counts.read_bytes += size;
                self.put(format_args!("readat {id}, {size}, {offset};"))
            }
            Kind::Write { size, offset } => {
                self.counts.writes += 1;
                self.counts.write_bytes += size;
                self.put(format_args!("writeat {id}, {size}, {offset};"))
            }
            Kind::Barrier => {
                self.counts.barriers += 1;
                self.put(format_args!("sync 0;"))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading an export back, as CODES' lexer, parser and `codes_kernel_helper_parse_input` do.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Int(i64),
    Var(u8),
    P(u8),
    Ge,
    Le,
    Eq,
    Ne,
    Kw(&'static str),
}

const KEYWORDS: &[&str] = &[
    "while",
    "if",
    "else",
    "print",
    "write",
    "writeat",
    "write_all",
    "writeat_all",
    "read",
    "readat",
    "read_all",
    "readat_all",
    "sync",
    "delete",
    "sleep",
    "open",
    "close",
    "flush",
    "seek",
    "getgroupid",
    "getnumgroups",
    "getgrouprank",
    "getgroupsize",
    "getcurtime",
    "exit",
];

/// Keywords whose token makes the statement an instruction for the simulator (the switch in
/// `codes_kernel_helper_parse_input`); the last one lexed names the instruction.
const INSTRUCTIONS: &[&str] = &[
    "writeat",
    "readat",
    "getgrouprank",
    "getgroupsize",
    "close",
    "open",
    "sync",
    "sleep",
    "exit",
    "delete",
];

fn lex(path: &Path, text: &str) -> Result<Vec<(Tok, usize)>, CodesError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b' ' | b'\t' => i += 1,
            b'a'..=b'z' => {
                // flex takes the longest match; keywords beat the one-letter variable rule.
                let kw = KEYWORDS
                    .iter()
                    .filter(|k| b[i..].starts_with(k.as_bytes()))
                    .max_by_key(|k| k.len());
                match kw {
                    Some(k) => {
                        out.push((Tok::Kw(k), line));
                        i += k.len();
                    }
                    None => {
                        out.push((Tok::Var(c - b'a'), line));
                        i += 1;
                    }
                }
            }
            b'0' => {
                out.push((Tok::Int(0), line));
                i += 1;
            }
            b'1'..=b'9' => {
                let s = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                // atoll saturates on overflow (glibc strtoll).
                let v = text[s..i].parse::<i64>().unwrap_or(i64::MAX);
                out.push((Tok::Int(v), line));
            }
            b'>' | b'<' | b'=' | b'!' if b.get(i + 1) == Some(&b'=') => {
                let t = match c {
                    b'>' => Tok::Ge,
                    b'<' => Tok::Le,
                    b'=' => Tok::Eq,
                    _ => Tok::Ne,
                };
                out.push((t, line));
                i += 2;
            }
            b'-' | b'(' | b')' | b'<' | b'>' | b'=' | b'+' | b'*' | b'/' | b'%' | b',' | b';'
            | b'{' | b'}' | b'.' => {
                out.push((Tok::P(c), line));
                i += 1;
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(CodesError::Parse {
                    path: path.to_path_buf(),
                    line,
                    msg: format!(
                        "character {ch:?} is not in CODES' I/O language (its lexer prints \"Unknown character\" and skips it, misreading the rest)"
                    ),
                });
            }
        }
    }
    Ok(out)
}

/// What one kernel contributes, with CODES' per-rank group values.
struct Interp<'a> {
    path: &'a Path,
    toks: Vec<(Tok, usize)>,
    pos: usize,
    sym: [i64; 26],
    rank: i64,
    group_size: i64,
}

#[derive(Debug, PartialEq)]
enum Inst {
    None,
    Ignore,
    Open,
    Close,
    Read(i64),
    Write(i64),
    Sync,
    Sleep(i64),
    Exit,
}

impl Interp<'_> {
    fn err(&self, msg: &str) -> CodesError {
        let line = self
            .toks
            .get(self.pos)
            .or(self.toks.last())
            .map_or(1, |t| t.1);
        CodesError::Parse {
            path: self.path.to_path_buf(),
            line,
            msg: msg.to_string(),
        }
    }

    fn peek(&self) -> Option<Tok> {
        self.toks.get(self.pos).map(|t| t.0)
    }

    fn bump(&mut self) -> Option<Tok> {
        let t = self.peek();
        self.pos += 1;
        t
    }

    fn expect(&mut self, c: u8) -> Result<(), CodesError> {
        match self.bump() {
            Some(Tok::P(x)) if x == c => Ok(()),
            _ => {
                self.pos -= 1;
                Err(self.err(&format!("syntax error: expected '{}'", c as char)))
            }
        }
    }

    fn binop_prec(t: Tok) -> Option<u8> {
        match t {
            Tok::Ge | Tok::Le | Tok::Eq | Tok::Ne | Tok::P(b'<') | Tok::P(b'>') => Some(1),
            Tok::P(b'+') | Tok::P(b'-') => Some(2),
            Tok::P(b'*') | Tok::P(b'/') | Tok::P(b'%') => Some(3),
            _ => None,
        }
    }

    /// Operands of unary minus and of `getgrouprank`: they bind tighter than any binary operator.
    fn unary(&mut self) -> Result<i64, CodesError> {
        match self.bump() {
            Some(Tok::Int(v)) => Ok(v),
            Some(Tok::Var(v)) => Ok(self.sym[v as usize]),
            Some(Tok::P(b'-')) => Ok(self.unary()?.wrapping_neg()),
            Some(Tok::P(b'(')) => {
                let v = self.expr(0)?;
                self.expect(b')')?;
                Ok(v)
            }
            Some(Tok::Kw("getgrouprank")) => {
                self.unary()?;
                Ok(self.rank)
            }
            Some(Tok::Kw("getgroupsize")) => {
                self.unary()?;
                Ok(self.group_size)
            }
            Some(Tok::Kw("getgroupid")) => Ok(8),
            Some(Tok::Kw("getnumgroups")) => Ok(32),
            _ => {
                self.pos -= 1;
                Err(self.err("syntax error or unsupported expression (codes-stats reads straight-line kernels)"))
            }
        }
    }

    fn expr(&mut self, min: u8) -> Result<i64, CodesError> {
        let mut lhs = self.unary()?;
        while let Some(p) = self.peek().and_then(Self::binop_prec).filter(|&p| p > min) {
            let op = self.bump().expect("peeked");
            let rhs = self.expr(p)?;
            lhs = match op {
                Tok::Ge => i64::from(lhs >= rhs),
                Tok::Le => i64::from(lhs <= rhs),
                Tok::Eq => i64::from(lhs == rhs),
                Tok::Ne => i64::from(lhs != rhs),
                Tok::P(b'<') => i64::from(lhs < rhs),
                Tok::P(b'>') => i64::from(lhs > rhs),
                Tok::P(b'+') => lhs.wrapping_add(rhs),
                Tok::P(b'-') => lhs.wrapping_sub(rhs),
                Tok::P(b'*') => lhs.wrapping_mul(rhs),
                Tok::P(b'/') | Tok::P(b'%') if rhs == 0 => {
                    return Err(self.err("division by zero: CODES' interpreter crashes"));
                }
                Tok::P(b'/') => lhs.wrapping_div(rhs),
                _ => lhs.wrapping_rem(rhs),
            };
        }
        Ok(lhs)
    }

    fn args(&mut self, n: usize) -> Result<Vec<i64>, CodesError> {
        let mut v = vec![self.expr(0)?];
        for _ in 1..n {
            self.expect(b',')?;
            v.push(self.expr(0)?);
        }
        self.expect(b';')?;
        Ok(v)
    }

    /// Runs one statement; returns the instruction CODES would hand out for it.
    fn stmt(&mut self) -> Result<Inst, CodesError> {
        let start = self.pos;
        // The instruction is named by the last instruction keyword lexed in the statement.
        let end = self.toks[start..]
            .iter()
            .position(|t| t.0 == Tok::P(b';'))
            .map(|p| start + p)
            .ok_or_else(|| self.err("statement without ';'"))?;
        let last_kw = self.toks[start..end].iter().rev().find_map(|t| match t.0 {
            Tok::Kw(k) if INSTRUCTIONS.contains(&k) => Some(k),
            _ => None,
        });
        let kw = match self.bump().expect("not at end") {
            Tok::P(b';') => return Ok(Inst::None),
            Tok::Kw(k) => k,
            Tok::Var(v) if self.peek() == Some(Tok::P(b'=')) => {
                self.pos += 1;
                let x = self.expr(0)?;
                self.expect(b';')?;
                self.sym[v as usize] = x;
                // An assignment is an instruction only through getgrouprank/getgroupsize.
                return Ok(if last_kw.is_some() {
                    Inst::Ignore
                } else {
                    Inst::None
                });
            }
            _ => {
                self.pos = start;
                self.expr(0)?;
                self.expect(b';')?;
                return Ok(if last_kw.is_some() {
                    Inst::Ignore
                } else {
                    Inst::None
                });
            }
        };
        let (n, _) = match kw {
            "writeat" | "readat" | "writeat_all" | "readat_all" => (3, ()),
            "write" | "read" | "write_all" | "read_all" | "seek" => (2, ()),
            "sync" | "sleep" | "open" | "close" | "delete" | "flush" | "exit" | "print" => (1, ()),
            "getgrouprank" | "getgroupsize" | "getgroupid" | "getnumgroups" => {
                self.pos = start;
                self.expr(0)?;
                self.expect(b';')?;
                return Ok(if last_kw.is_some() {
                    Inst::Ignore
                } else {
                    Inst::None
                });
            }
            other => {
                self.pos = start;
                return Err(self.err(&format!(
                    "'{other}' is not supported: CODES runs control flow in one step and hands the simulator only the last operation, so exports are straight-line"
                )));
            }
        };
        let a = self.args(n)?;
        // Keywords outside parse_input's switch (write, flush, seek, *_all, print) set no
        // instruction: CODES keeps parsing, as if the statement were not there.
        let inst = match last_kw {
            None => Inst::None,
            Some(k) if k != kw => Inst::Ignore,
            Some("writeat") => Inst::Write(a[1]),
            Some("readat") => Inst::Read(a[1]),
            Some("open") => Inst::Open,
            Some("close") => Inst::Close,
            Some("sync") => Inst::Sync,
            Some("sleep") => Inst::Sleep(a[0]),
            Some("exit") => Inst::Exit,
            Some(_) => Inst::Ignore,
        };
        Ok(inst)
    }
}

fn run_kernel(
    path: &Path,
    text: &str,
    rank: i64,
    group_size: i64,
    stats: &mut CodesStats,
) -> Result<(), CodesError> {
    let mut it = Interp {
        path,
        toks: lex(path, text)?,
        pos: 0,
        sym: [0; 26],
        rank,
        group_size,
    };
    let mut first = true;
    while it.pos < it.toks.len() {
        let inst = it.stmt()?;
        if inst == Inst::None {
            continue;
        }
        if first {
            // codes_kernel_helper_bootstrap parses the first instruction and never hands it
            // to the simulator.
            first = false;
            if inst == Inst::Exit {
                return Err(it.err("the first instruction is consumed at load, so this exit is lost and the kernel never ends"));
            }
            continue;
        }
        match inst {
            Inst::Open => stats.num_opens += 1,
            Inst::Close => stats.num_closes += 1,
            Inst::Sync => stats.num_barriers += 1,
            Inst::Sleep(ns) => stats.total_delay += ns as f64 / 1e9,
            Inst::Read(n) => {
                stats.num_reads += 1;
                stats.read_size = stats.read_size.wrapping_add(n as u64);
            }
            Inst::Write(n) => {
                stats.num_writes += 1;
                stats.write_size = stats.write_size.wrapping_add(n as u64);
            }
            Inst::Exit => return Ok(()),
            Inst::None | Inst::Ignore => {}
        }
    }
    Err(CodesError::Parse {
        path: path.to_path_buf(),
        line: text.lines().count().max(1),
        msg: "kernel ends without 'exit 0;': CODES' workload never ends".into(),
    })
}

/// Reads `meta.txt` (or the given meta file) and every kernel it names, for ranks 0..n where n
/// is one past the largest rank of any line.
fn read(path: &Path) -> Result<CodesStats, CodesError> {
    let meta = if path.is_dir() {
        path.join(META)
    } else {
        path.to_path_buf()
    };
    let text = match std::fs::read_to_string(&meta) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CodesError::NoWorkload {
                path: path.to_path_buf(),
                format: "iolang",
                detail: format!("{} not found", meta.display()),
            });
        }
        Err(e) => return Err(CodesError::io(&meta, e)),
    };
    let base = meta.parent().unwrap_or(Path::new("."));
    // (min, max, kernel path, meta line)
    let mut groups = Vec::new();
    let mut stats = CodesStats::default();
    for (i, line) in text.lines().enumerate() {
        let perr = |msg: &str| CodesError::Parse {
            path: meta.clone(),
            line: i + 1,
            msg: msg.to_string(),
        };
        let f: Vec<&str> = line.split([' ']).filter(|s| !s.is_empty()).collect();
        if f.len() < 4 {
            return Err(perr("expected 'GID MIN MAX KERNEL'"));
        }
        let num = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| perr(&format!("{s:?} is not a number")))
        };
        let (gid, min, max) = (num(f[0])?, num(f[1])?, num(f[2])?);
        if max < 0 {
            return Err(perr(
                "codes-stats needs an explicit last rank (not -1) to know the rank count",
            ));
        }
        if gid == 0 {
            stats.warnings.push(format!(
                "{}:{}: group id 0 is reserved; CODES warns",
                meta.display(),
                i + 1
            ));
        }
        // The dump tool joins the kernel name to the meta file's directory (--i-use-relpath).
        groups.push((min, max, base.join(f[3]), i + 1));
    }
    let n = groups
        .iter()
        .map(|g| g.1 + 1)
        .max()
        .ok_or_else(|| CodesError::NoWorkload {
            path: path.to_path_buf(),
            format: "iolang",
            detail: format!("{} names no kernels", meta.display()),
        })?;
    for r in 0..n {
        let (min, max, kpath, line) =
            groups
                .iter()
                .find(|g| r >= g.0 && r <= g.1)
                .ok_or_else(|| CodesError::Parse {
                    path: meta.clone(),
                    line: 0,
                    msg: format!("no line covers rank {r}: CODES exits"),
                })?;
        // The kernel is named by a line of the meta file: say which, as well as the kernel.
        let k = std::fs::read_to_string(kpath).map_err(|e| CodesError::Parse {
            path: meta.clone(),
            line: *line,
            msg: format!("cannot read the kernel it names, {}: {e}", kpath.display()),
        })?;
        run_kernel(kpath, &k, r, max - min, &mut stats)?;
    }
    stats.ranks = n as u64;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Result<CodesStats, CodesError> {
        let mut s = CodesStats::default();
        run_kernel(Path::new("k"), text, 3, 8, &mut s).map(|_| s)
    }

    #[test]
    fn first_instruction_is_consumed_and_exit_ends() {
        let s = run("r = getgrouprank -1;\nopen 5;\nwriteat 5, 10, r*10;\nsleep 1500000000;\nsync 0;\nclose 5;\nexit 0;\nopen 6;\n").unwrap();
        assert_eq!(
            (
                s.num_opens,
                s.num_writes,
                s.write_size,
                s.num_barriers,
                s.num_closes
            ),
            (1, 1, 10, 1, 1)
        );
        assert!((s.total_delay - 1.5).abs() < 1e-12);
        // Without the leading getgrouprank, the open is swallowed.
        let s = run("open 5;\nclose 5;\nexit 0;\n").unwrap();
        assert_eq!((s.num_opens, s.num_closes), (0, 1));
    }

    #[test]
    fn expressions_and_plain_assignments() {
        let s = run("r = getgrouprank -1;\nb = 4;\nc = -b * 2 + 20 % 6;\nreadat 1, (c + 10) * b, 0;\nexit 0;\n").unwrap();
        // c = -8 + 2 = -6; size = 4 * 4 = 16
        assert_eq!((s.num_reads, s.read_size), (1, 16));
        // getgrouprank inside an operation turns it into an ignored instruction.
        let s = run("r = getgrouprank -1;\nwriteat 1, 8, getgrouprank -1;\nexit 0;\n").unwrap();
        assert_eq!(s.num_writes, 0);
    }

    #[test]
    fn refusals() {
        for (k, what) in [
            ("r = getgrouprank -1;\n# hi\nexit 0;\n", "Unknown character"),
            (
                "r = getgrouprank -1;\nOpen 1;\nexit 0;\n",
                "Unknown character",
            ),
            ("r = getgrouprank -1;\nopen 1;\n", "without 'exit 0;'"),
            (
                "r = getgrouprank -1;\nwhile (r < 3) open 1;\nexit 0;\n",
                "not supported",
            ),
            ("r = getgrouprank -1;\nopen 1 2;\nexit 0;\n", "expected ';'"),
            ("exit 0;\n", "consumed at load"),
        ] {
            let e = run(k).unwrap_err().to_string();
            assert!(e.contains(what), "{k:?}: {e}");
        }
    }
}
