//! What a CODES workload format is to an export and to [`crate::codes_stats`]: how its files
//! are named (and so how many ranks CODES' path buffers can take), how each rank is written and
//! how the export ends, and how CODES loads it back. One implementation per format, in the
//! format's own file: [`crate::recorder::Recorder`], [`crate::iolang::Iolang`]; everything the
//! formats share (the walk, the POSIX view, the directory, the report) is written once in
//! `lib.rs` against this trait.

use crate::error::CodesError;
use crate::stats::{CodesStats, OpCounts};
use crate::view::Sink;
use crate::{ExportReport, Format};
use std::path::Path;

/// Longest path CODES keeps for the workload directory or meta file (`MAX_NAME_LENGTH_WKLD`).
pub(crate) const CODES_NAME_MAX: usize = 512;

/// One CODES workload format, writing an export as it goes (one rank at a time).
pub(crate) trait Workload: Sized {
    /// The format, as `--format` names it.
    const FORMAT: Format;
    /// The writer of one rank's operations.
    type Rank: Sink;
    /// Why CODES could not name every file of an export of ranks `0..=last` in a directory
    /// whose path is `dir_len` bytes long, or `None` when it can.
    fn capacity(dir_len: usize, last: u32) -> Option<String>;
    /// Whether `name` is a file of an export in this format (replaced by `--force`).
    fn is_export_file(name: &str) -> bool;
    /// Starts an export of the trace whose header is `header` into `dir` (which exists and
    /// holds no export in this format).
    fn begin(dir: &Path, header: &rsd::Header) -> Result<Self, CodesError>;
    /// Starts rank `rank`'s file.
    fn rank(&mut self, dir: &Path, rank: u32) -> Result<Self::Rank, CodesError>;
    /// Ends rank `rank`, with `trailing` ns of delay after its last operation: writes what is
    /// left, adds the bytes (and any delay the format drops) to `rep`, returns the rank's counts.
    fn end_rank(
        &mut self,
        r: Self::Rank,
        dir: &Path,
        rank: u32,
        trailing: u64,
        rep: &mut ExportReport,
    ) -> Result<OpCounts, CodesError>;
    /// Ends the export (files beyond the ranks' own are counted in `rep`).
    fn end(self, rep: &mut ExportReport) -> Result<(), CodesError>;
    /// Loads an export in this format at `path` as CODES' loader does.
    fn read(path: &Path) -> Result<CodesStats, CodesError>;
}
