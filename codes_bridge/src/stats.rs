//! What `codes-workload-dump -s` prints for an export, computed without CODES.

use serde::Serialize;
use std::fmt;

/// The counts `codes-workload-dump -s` prints for an I/O workload, summed over all ranks.
///
/// JSON keys are the names CODES prints (`NUM_OPENS`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct CodesStats {
    /// Ranks loaded.
    pub ranks: u64,
    /// Open operations.
    pub num_opens: u64,
    /// Close operations.
    pub num_closes: u64,
    /// Barriers, explicit and implicit (recorder opens without `O_CREAT`).
    pub num_barriers: u64,
    /// Sum of delays, seconds.
    pub total_delay: f64,
    /// Read operations.
    pub num_reads: u64,
    /// Bytes read.
    pub read_size: u64,
    /// Write operations.
    pub num_writes: u64,
    /// Bytes written.
    pub write_size: u64,
    /// Things CODES does silently that the user should know (e.g. truncation at 2048 ops).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl fmt::Display for CodesStats {
    /// The layout of `codes-workload-dump -s`, so outputs can be diffed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "NUM_OPENS:       {}", self.num_opens)?;
        writeln!(f, "NUM_CLOSES:      {}", self.num_closes)?;
        writeln!(f, "NUM_BARRIERS:    {}", self.num_barriers)?;
        writeln!(f, "TOTAL_DELAY:     {:.4}", self.total_delay)?;
        writeln!(f, "NUM_READS:       {}", self.num_reads)?;
        writeln!(f, "READ_SIZE:       {}", self.read_size)?;
        writeln!(f, "NUM_WRITES:      {}", self.num_writes)?;
        write!(f, "WRITE_SIZE:      {}", self.write_size)
    }
}

/// Operations an export hands to CODES, as the writers count them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    /// Opens, including the placeholder opens of idle ranks and made-up opens.
    pub opens: u64,
    /// Closes.
    pub closes: u64,
    /// Barriers.
    pub barriers: u64,
    /// Reads (after splitting).
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Writes (after splitting).
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Delay CODES will see, ns.
    pub delay_ns: u64,
    /// Ranks that got a placeholder open/close because they do no I/O (recorder only).
    pub idle_ranks: u64,
}

impl OpCounts {
    /// Operations that occupy a slot in CODES' recorder array.
    pub fn ops(&self) -> u64 {
        self.opens + self.closes + self.barriers + self.reads + self.writes
    }

    /// Adds another rank's counts.
    pub fn add(&mut self, o: &OpCounts) {
        self.opens += o.opens;
        self.closes += o.closes;
        self.barriers += o.barriers;
        self.reads += o.reads;
        self.read_bytes += o.read_bytes;
        self.writes += o.writes;
        self.write_bytes += o.write_bytes;
        self.delay_ns += o.delay_ns;
        self.idle_ranks += o.idle_ranks;
    }
}
