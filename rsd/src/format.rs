//! The `.iotrex` file format. This module is the only code that knows the bytes.
//!
//! ```text
//! offset  size  field
//!      0     8  magic  "IOTREX\0\x1a"
//!      8     4  format version, u32 little-endian (1 or 2; this build writes NEWEST_VERSION)
//!     12     4  minor version, u32 little-endian (see below; was "reserved, 0")
//!     16     8  body length in bytes, u64 little-endian
//!     24     8  xxh64 (seed 0) of the body, u64 little-endian
//!     32     …  body: version 1: MessagePack (rmp-serde, struct-as-array) of TraceFile;
//!               version 2: tables and varints ([`v2`], `docs/format-v2.md`)
//! ```
//!
//! Version 2 stores what repeats once: operation names, paths, call sites and rank sets in
//! tables, one count per timing record, integers as varints, explicit vectors as differences.
//! Files read from version 1 are written back as version 1 ([`Header::encoding`]), so the
//! golden files re-encode to their bytes; everything else is written as version 2.
//!
//! The reader checks each of these in order and refuses with an error naming the file and the
//! problem.
//!
//! **Versions.** The format version changes when a reader of the old one could not read the
//! new bytes at all. Additions that older readers would merely not know (a header field at the
//! end) keep the format version and raise the *minor version*, so that an older reader can
//! tell "written by a newer iotrex (format 1.7); upgrade" from damage: without it, an extra
//! field in the body is indistinguishable from corruption. The rule ([`Header::minor`]):
//! - a file holding only what readers since the `node_cores` field know has minor 0 (every
//!   file written before this rule has 0 in that word: the golden files keep their bytes);
//! - a file whose header holds a field added later has minor = that field's number among the
//!   fields after version 1's eight (`run_id` is the 6th: minor 6), so a file that does not
//!   use a newer field stays readable by older readers;
//! - a reader refuses a minor above [`FORMAT_MINOR`] as [`RsdError::NewerVersion`], before
//!   decoding anything; a minor it knows whose body does not decode is damage.
//!
//! - the header's `provenance` (the 7th field) came after minor 7, which changed version 2's
//!   timing records, so its minor is 8 ([`PROVENANCE_MINOR`]), not its number; each field
//!   after it has its number plus one ([`minor_of_field`]): `node_layout` (the 8th) is 9.
//!
//! - run values in the trace ([`Val::Run`], version 2's value tag 9) are minor 10
//!   ([`RUN_VALUE_MINOR`]): a trace that holds one is written with at least that minor, one
//!   that holds none as before.
//!
//! - off-CPU time in the compute gaps ([`crate::timing::GapWaits`], version 2's timing flag
//!   16) is minor 11 ([`GAP_WAITS_MINOR`]): a trace that holds some is written with at least
//!   that minor, one that holds none as before.
//! - the header's `sensitivity` (the 9th field, `iotrex sensitivity`'s result) is minor 12
//!   ([`SENSITIVITY_MINOR`]).
//! - a run value of the calling process's own pid ([`crate::runvalue::RunKind::OwnPid`], run
//!   value kind 4) is minor 13 ([`OWN_PID_MINOR`]), and so is the header's `shared_machines`
//!   (the 10th field).
//! - the sensitivity's `bandwidth` (an 8th element of its array, the run with the I/O held
//!   to a bandwidth) is minor 14 ([`SENSITIVITY_BANDWIDTH_MINOR`]): a result that holds one
//!   is written with at least that minor, one that holds none as before.
//! - the rank's host name in a path template ([`crate::path::HOST`], `%h`, which an older
//!   reader would take for a number's field) is minor 15 ([`HOST_MINOR`]).
//!
//! - the two paths of `rename`, `link` and `symlink` joined by NUL ([`crate::op::PATH_PAIR_SEP`]),
//!   where older files joined them by a newline, which a file name may hold, are minor 16
//!   ([`PATH_PAIR_MINOR`]); a file of an older minor is converted when read.
//!
//! - the header's `excluded` (the 11th field, calls left out under excluded directories) is
//!   minor 17 ([`EXCLUDED_MINOR`]).
//! - the header's `processes` (the 12th field, the forked children held as slots of the rank
//!   dimension, [`crate::process`]) is minor 18 ([`PROCESSES_MINOR`]).
//!
//! Whoever adds a header field (or anything else older readers cannot decode) gives it the
//! next minor version and raises [`FORMAT_MINOR`]. The checksum catches corruption before the decoder sees it, and the decoder is
//! still safe on arbitrary bytes (fuzzed in `tests/it/format_fuzz.rs`).

use crate::error::RsdError;
use crate::op::Layer;
use crate::trace::{Node, NodeKind, Trace};
use crate::value::{Elastic, MAX_DEPTH, Val};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub mod v2;

/// The magic bytes every trace starts with.
pub const MAGIC: [u8; 8] = *b"IOTREX\0\x1a";
/// Format version 1 (a MessagePack body): read, and written for traces read from version-1
/// files. Its minor versions are [`FORMAT_MINOR`]'s.
pub const FORMAT_VERSION: u32 = 1;
/// Format version 2 (tables and varints, [`v2`]): what this build writes by default.
pub const FORMAT_V2: u32 = 2;
/// The newest format version this build reads and the one it writes by default.
pub const NEWEST_VERSION: u32 = FORMAT_V2;
/// The newest minor version this build writes and reads (see the module's text): 18, the
/// header's `processes` ([`PROCESSES_MINOR`]); 17, the
/// header's `excluded` ([`EXCLUDED_MINOR`]); 16, the
/// two paths of `rename`, `link`, `symlink` joined by NUL ([`PATH_PAIR_MINOR`]); 15, the
/// host name in a path template ([`crate::path::HOST`]); 14, the
/// sensitivity's `bandwidth`; 13, a run value of a process's own pid and the header's
/// `shared_machines`; 12, the header's `sensitivity`; 11, off-CPU time in the gaps; 10, run
/// values; 9 the header's `node_layout`; 8 the header's `provenance`; 7 version 2's timing
/// records laid out by rank set ([`v2::TimingLayout::Sized`]), 6 the header's `run_id`. Both
/// format versions store the header alike, so one minor counts for both.
pub const FORMAT_MINOR: u32 = PROCESSES_MINOR;
/// What this build reads and writes, as `--version` and the report say it:
/// `trace format 2.18 (reads formats 1 and 2 up to minor 18)`. A file is written with the
/// lowest minor that holds what it holds, so most files name a lower one.
pub fn formats_text() -> String {
    format!(
        "trace format {NEWEST_VERSION}.{FORMAT_MINOR} (reads formats {FORMAT_VERSION} to \
         {NEWEST_VERSION} up to minor {FORMAT_MINOR})"
    )
}

/// The minor version of a file whose header holds `processes` (its 12th field after version
/// 1's eight): the forked children, slots of the rank dimension ([`crate::process`]).
pub const PROCESSES_MINOR: u32 = 18;
/// The minor version of a file whose header holds `excluded` (its 11th field after version
/// 1's eight): the calls left out under excluded directories ([`crate::exclude`]).
pub const EXCLUDED_MINOR: u32 = 17;
/// The minor version of a file whose trace holds the two paths of a call that names two
/// joined by [`crate::op::PATH_PAIR_SEP`] (NUL). Older files joined them by a newline: a
/// reader of such a file converts them ([`crate::op::upgrade_path_pairs`]); an older reader of
/// a newer file would show the NUL. A file without such a call keeps its minor and bytes.
pub const PATH_PAIR_MINOR: u32 = 16;
/// The minor version of a file whose trace holds the rank's host name in a path template
/// ([`crate::path::HOST`], `%h`): an older reader would take it for a number's field. A file
/// without one keeps the minor (and the bytes) it had.
pub const HOST_MINOR: u32 = 15;
/// The minor version of a file whose trace holds a run value of kind
/// [`crate::runvalue::RunKind::OwnPid`] (a kind older readers do not know), or whose header
/// holds `shared_machines` (its 10th field after version 1's eight).
pub const OWN_PID_MINOR: u32 = 13;
/// The minor version of a file whose trace holds off-CPU time in its gaps
/// ([`crate::timing::Timing::waits`]): a timing field older readers cannot decode. A file
/// without any keeps the minor (and the bytes) it had.
pub const GAP_WAITS_MINOR: u32 = 11;
/// The minor version of a file whose trace holds a run value ([`Val::Run`],
/// [`crate::runvalue`]): a value variant older readers cannot decode. A file without one
/// keeps the minor (and the bytes) it had.
pub const RUN_VALUE_MINOR: u32 = 10;
/// The minor version of a file whose header holds `provenance` (its 7th field after version
/// 1's eight; 7 was taken by version 2's timing records).
pub const PROVENANCE_MINOR: u32 = 8;
/// The minor version of a file whose header holds `node_layout` (its 8th field after
/// version 1's eight).
pub const NODE_LAYOUT_MINOR: u32 = 9;
/// The minor version of a file whose header holds `sensitivity` (its 9th field after version
/// 1's eight; 10 was taken by run values, 11 is kept for the compute-time records).
pub const SENSITIVITY_MINOR: u32 = 12;
/// The minor version of a file whose `sensitivity` holds its `bandwidth` run
/// ([`crate::sensitivity::BandwidthRun`]), an element older readers cannot decode. A file
/// without one keeps the minor (and the bytes) it had.
pub const SENSITIVITY_BANDWIDTH_MINOR: u32 = 14;

/// The minor version of a file whose last header field is the `later`-th after version 1's
/// eight: 0 up to `node_cores` (before the rule), the field's number up to `run_id`, its
/// number plus one for `provenance` and `node_layout` (minor 7 was taken by version 2's timing
/// records), and [`SENSITIVITY_MINOR`] for `sensitivity` (minors 10 and 11 were taken by
/// run values and the compute-time records).
const fn minor_of_field(later: u32) -> u32 {
    match later {
        0..=FIELDS_BEFORE_MINOR => 0,
        6 => 6,
        7 | 8 => later + 1,
        9 => SENSITIVITY_MINOR,
        10 => OWN_PID_MINOR,
        11 => EXCLUDED_MINOR,
        _ => PROCESSES_MINOR,
    }
}

/// Which format version a trace is written in ([`Header::encoding`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// Version 1: what a trace read from a version-1 file keeps (the default of a header
    /// decoded from MessagePack).
    #[default]
    V1,
    /// Version 2 with the timing records of minor versions 0 to 6: what a trace read from
    /// such a file keeps, so it re-encodes to its bytes (the golden files in `data/format/v2/`).
    V2,
    /// Version 2 with the timing records of minor version 7 ([`v2::TimingLayout::Sized`]):
    /// what [`Header::new`] gives. Written with minor version 7 or more.
    V2_7,
}

impl Encoding {
    /// The version word written for it.
    pub fn version(self) -> u32 {
        match self {
            Encoding::V1 => FORMAT_VERSION,
            Encoding::V2 | Encoding::V2_7 => FORMAT_V2,
        }
    }

    /// The minor version a file of this encoding with `header` is written with: the header's
    /// ([`Header::minor`]), and at least 7 for version 2's sized timing records.
    pub fn minor(self, header: &Header) -> u32 {
        match self {
            Encoding::V2_7 => header.minor().max(v2::SIZED_TIMING_MINOR),
            Encoding::V1 | Encoding::V2 => header.minor(),
        }
    }

    /// The name `iotrex show` and `trace_bytes` give it: `1`, `2` or `2.7`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::V1 => "1",
            Encoding::V2 => "2",
            Encoding::V2_7 => "2.7",
        }
    }

    /// The version a file of this encoding with `header` is written in, as `iotrex show`
    /// names it: [`Encoding::name`], with version 2's minor where a header field raises it
    /// past 7 (`2.8` for an extrapolation's provenance).
    pub fn name_with(self, header: &Header) -> String {
        let e = self.holding(header);
        match e.minor(header) {
            minor if e == Encoding::V2_7 && minor > v2::SIZED_TIMING_MINOR => {
                format!("{FORMAT_V2}.{minor}")
            }
            _ => e.name().to_string(),
        }
    }

    /// The encoding a file of `header` is written in: this one, except that version 2 with
    /// the timing records of minor 0 to 6 cannot hold a header field of minor 7 or more (the
    /// minor word says the layout), so such a header is written with the sized records.
    pub fn holding(self, header: &Header) -> Encoding {
        match self {
            Encoding::V2 if header.minor() >= v2::SIZED_TIMING_MINOR => Encoding::V2_7,
            e => e,
        }
    }
}
/// The header fields after version 1's eight that files of minor 0 may hold
/// (`unrecorded_mpi` .. `node_cores`): added before the minor version existed.
const FIELDS_BEFORE_MINOR: u32 = 5;
/// Size of the fixed header before the body.
pub const PREFIX_LEN: usize = 32;

/// What a trace says about the run that produced it.
///
/// Fields added after format version 1 was fixed sit at the end, default when absent, and are
/// written only up to the last one that holds something (see the `Serialize` impl): a body is
/// a MessagePack array, so a field can only be left out at its end, and a trace without the
/// new fields keeps the bytes it had.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Header {
    /// Version of the tool that wrote the file.
    pub tool_version: String,
    /// Number of ranks in the run.
    pub nranks: u32,
    /// The traced command line.
    pub command: Vec<String>,
    /// Layers that were traced.
    pub layers: Vec<Layer>,
    /// Clock used for timing, e.g. `CLOCK_MONOTONIC`.
    pub clock: String,
    /// Wall time from `MPI_Init` to `MPI_Finalize` (or process start to exit), ns, max over ranks.
    pub wall_ns: u64,
    /// Set when something was not recorded: a rank died, a limit was hit, the tracer disabled
    /// itself.
    pub incomplete: bool,
    /// Why the trace is incomplete, or other notes from the producer.
    pub notes: Vec<String>,
    /// MPI functions the program and its libraries import (their dynamic symbol tables at
    /// `MPI_Init`) that the tracer does not record: calls the trace cannot show. Added after
    /// format version 1 was fixed: a trace without it reads as an empty list, and an empty
    /// list is not written, so such traces keep their bytes.
    #[serde(default)]
    pub unrecorded_mpi: Vec<String>,
    /// How the MPI library was configured for I/O when traced (what its collective buffering
    /// depends on); `None` in traces of serial programs and in older traces.
    #[serde(default)]
    pub mpi_config: Option<MpiConfig>,
    /// How the times of an extrapolated trace were predicted (wall time, its parts and their
    /// intervals); `None` in a traced run, so its presence says the trace is extrapolated.
    #[serde(default)]
    pub prediction: Option<crate::timing::Prediction>,
    /// The GNU build id of the traced executable (hex), when it has one: two traces of
    /// different builds have different call sites, which `diff` and `extrap` then say.
    /// Added after `prediction`, written only when known (older traces keep their bytes).
    #[serde(default)]
    pub build_id: Option<String>,
    /// The CPUs the job could run on at each node (the union of its ranks' `sched_getaffinity`
    /// masks), run-length encoded in the order of `mpi_config.node_ranks`' nodes: (CPUs of a
    /// node, how many such nodes follow each other). With the ranks per node it says whether
    /// ranks shared cores (oversubscribed), which changes how times grow with the rank count.
    /// Empty when not recorded (older traces, serial programs); added after `build_id`,
    /// written only when known.
    #[serde(default)]
    pub node_cores: Vec<(u32, u32)>,
    /// Which run of the traced program wrote the file: the same for every rank of one run
    /// (rank 0's choice, broadcast at `MPI_Init`), different for another run. Written in the
    /// per-rank files a run leaves when its merged trace could not be written, so that files
    /// of an earlier run in the same place are never merged with them. Minor version 6.
    #[serde(default)]
    pub run_id: Option<String>,
    /// How `iotrex extrap` made the trace (scales used and dropped, what it set aside or made
    /// up, where HDF5's layout came from): `None` in a traced or synthetic trace and in an
    /// extrapolation written before minor version 8, whose notes say it in words
    /// (`extrap::provenance::of` reads both). Minor version 8.
    #[serde(default)]
    pub provenance: Option<crate::provenance::Provenance>,
    /// The nodes the run ran on (their names) and which node each rank ran on: recorded by
    /// the tracer at `MPI_Init`; set by `iotrex extrap` only where the inputs say the target's
    /// layout exactly; `None` in serial programs' traces and older traces. Minor version 9.
    #[serde(default)]
    pub node_layout: Option<crate::nodes::NodeLayout>,
    /// Which ranks' progress waited for which rank's I/O and how the run time grows with
    /// added I/O latency, measured by `iotrex sensitivity` (//TRACE's throttling); `None`
    /// otherwise. Minor version 12.
    #[serde(default)]
    pub sensitivity: Option<crate::sensitivity::Sensitivity>,
    /// Nodes that were one machine (the same kernel boot id: an emulated cluster of
    /// namespaces, containers on one host), whose ranks shared that machine's CPUs; empty
    /// when every node was a machine of its own. Minor version 13.
    #[serde(default)]
    pub shared_machines: Vec<crate::nodes::SharedMachine>,
    /// Calls the tracer left out because their files were under an excluded directory (the
    /// system's and the interpreter's files, [`crate::exclude`]), counted per directory and
    /// summed over the ranks; empty when none were left out. Minor version 17.
    #[serde(default)]
    pub excluded: Vec<crate::exclude::Excluded>,
    /// The processes beyond the ranks' own (forked children) and how each ended; `None` when
    /// no traced process forked. Minor version 18.
    #[serde(default)]
    pub processes: Option<crate::process::Processes>,
    /// The format version the trace is written in: version 2 for a new header, the file's
    /// version for a header read from a file (so re-encoding a version-1 file gives its bytes
    /// back). Not stored in the body: the prefix's version word says it.
    #[serde(skip)]
    pub encoding: Encoding,
}

/// The MPI library's configuration that steers its I/O: which library, how ranks sit on
/// nodes, its control variables, and each file's hints. The model of the library's collective
/// buffering reads it; `show` and the report print it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MpiConfig {
    /// `MPI_Get_library_version`'s text (first line).
    pub library: String,
    /// Ranks per node, run-length encoded in rank order: (ranks on a node, how many such nodes
    /// follow each other). Nodes are found with `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`.
    pub node_ranks: Vec<(u32, u32)>,
    /// Whether every node's ranks are consecutive (block placement); when not, `node_ranks`
    /// counts them but does not place them.
    pub nodes_contiguous: bool,
    /// MPI_T control variables that steer collective I/O (for Open MPI the selected `io` and
    /// `fcoll` components and the `io_ompio_*` / `fcoll_*` parameters), name and value as text;
    /// and, under [`THREAD_LEVEL`], the thread level the library provided (no control
    /// variable says it, and OMPIO's write sieving depends on it). Traces from before it was
    /// recorded lack it.
    pub cvars: Vec<(String, String)>,
    /// The hints `MPI_File_get_info` gave at each distinct file opened: the traced path and
    /// its (key, value) pairs.
    pub file_hints: Vec<(String, Vec<(String, String)>)>,
}

/// The entry of [`MpiConfig::cvars`] that holds the thread level the MPI library provided
/// (`MPI_Query_thread`), by its constant's name (`MPI_THREAD_SINGLE` ... `MPI_THREAD_MULTIPLE`):
/// written by the tracer, read by the collective-I/O models.
pub const THREAD_LEVEL: &str = "mpi_thread_level";

impl MpiConfig {
    /// The value of control variable `name`.
    pub fn cvar(&self, name: &str) -> Option<&str> {
        self.cvars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Ranks in all (the sum over nodes).
    pub fn ranks(&self) -> u64 {
        self.node_ranks
            .iter()
            .map(|(r, n)| u64::from(*r) * u64::from(*n))
            .sum()
    }

    /// Nodes in all.
    pub fn nodes(&self) -> u64 {
        self.node_ranks.iter().map(|(_, n)| u64::from(*n)).sum()
    }
}

impl Serialize for Header {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // The version-1 fields, then the later ones up to the last that is not empty.
        let later = self.later_fields();
        let mut st = s.serialize_struct("Header", 8 + later as usize)?;
        st.serialize_field("tool_version", &self.tool_version)?;
        st.serialize_field("nranks", &self.nranks)?;
        st.serialize_field("command", &self.command)?;
        st.serialize_field("layers", &self.layers)?;
        st.serialize_field("clock", &self.clock)?;
        st.serialize_field("wall_ns", &self.wall_ns)?;
        st.serialize_field("incomplete", &self.incomplete)?;
        st.serialize_field("notes", &self.notes)?;
        if later >= 1 {
            st.serialize_field("unrecorded_mpi", &self.unrecorded_mpi)?;
        }
        if later >= 2 {
            st.serialize_field("mpi_config", &self.mpi_config)?;
        }
        if later >= 3 {
            st.serialize_field("prediction", &self.prediction)?;
        }
        if later >= 4 {
            st.serialize_field("build_id", &self.build_id)?;
        }
        if later >= 5 {
            st.serialize_field("node_cores", &self.node_cores)?;
        }
        if later >= 6 {
            st.serialize_field("run_id", &self.run_id)?;
        }
        if later >= 7 {
            st.serialize_field("provenance", &self.provenance)?;
        }
        if later >= 8 {
            st.serialize_field("node_layout", &self.node_layout)?;
        }
        if later >= 9 {
            st.serialize_field("sensitivity", &self.sensitivity)?;
        }
        if later >= 10 {
            st.serialize_field("shared_machines", &self.shared_machines)?;
        }
        if later >= 11 {
            st.serialize_field("excluded", &self.excluded)?;
        }
        if later >= 12 {
            st.serialize_field("processes", &self.processes)?;
        }
        st.end()
    }
}

/// How the header's notes name the HDF5 library the tracer's HDF5 layer ran on
/// (`HDF5 library 1.14.2`): written by the tracer, read by the HDF5 oracle.
pub const HDF5_NOTE: &str = "HDF5 library ";

impl Header {
    /// The version of the HDF5 library the notes name ([`HDF5_NOTE`]), if any.
    pub fn hdf5_version(&self) -> Option<String> {
        self.notes
            .iter()
            .find_map(|n| n.strip_prefix(HDF5_NOTE))
            .map(|v| v.trim().to_string())
    }

    /// A header for a complete trace of `nranks` ranks, written by this crate's version.
    pub fn new(nranks: u32) -> Header {
        Header {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            nranks,
            command: Vec::new(),
            layers: Layer::ALL.to_vec(),
            clock: "CLOCK_MONOTONIC".to_string(),
            wall_ns: 0,
            incomplete: false,
            notes: Vec::new(),
            unrecorded_mpi: Vec::new(),
            mpi_config: None,
            prediction: None,
            build_id: None,
            node_cores: Vec::new(),
            run_id: None,
            provenance: None,
            node_layout: None,
            sensitivity: None,
            shared_machines: Vec::new(),
            excluded: Vec::new(),
            processes: None,
            encoding: Encoding::V2_7,
        }
    }

    /// How many of the fields after version 1's eight are written: up to the last one that
    /// holds something.
    fn later_fields(&self) -> u32 {
        if self.processes.is_some() {
            12
        } else if !self.excluded.is_empty() {
            11
        } else if !self.shared_machines.is_empty() {
            10
        } else if self.sensitivity.is_some() {
            9
        } else if self.node_layout.is_some() {
            8
        } else if self.provenance.is_some() {
            7
        } else if self.run_id.is_some() {
            6
        } else if !self.node_cores.is_empty() {
            5
        } else if self.build_id.is_some() {
            4
        } else if self.prediction.is_some() {
            3
        } else if self.mpi_config.is_some() {
            2
        } else if !self.unrecorded_mpi.is_empty() {
            1
        } else {
            0
        }
    }

    /// The minor version a file with this header is written with (see the module's text):
    /// 0 while it holds no field added after the rule, else its last field's minor
    /// ([`minor_of_field`]: [`PROVENANCE_MINOR`] for the 7th, [`NODE_LAYOUT_MINOR`] for the
    /// 8th).
    pub fn minor(&self) -> u32 {
        minor_of_field(self.later_fields())
    }

    /// The most ranks any machine ran per CPU it had (above 1: ranks shared cores), when the
    /// trace records both the ranks and the CPUs per node: a node is a machine, except the
    /// nodes of one [`crate::nodes::SharedMachine`], whose ranks count together against its
    /// CPUs.
    pub fn ranks_per_core(&self) -> Option<f64> {
        let expand = |v: &[(u32, u32)]| -> Vec<u32> {
            v.iter()
                .flat_map(|&(x, k)| std::iter::repeat_n(x, k as usize))
                .collect()
        };
        let ranks = expand(&self.mpi_config.as_ref()?.node_ranks);
        let cores = expand(&self.node_cores);
        if ranks.is_empty() || ranks.len() != cores.len() || cores.contains(&0) {
            return None;
        }
        let shared = |i: usize| self.shared_machines.iter().any(|m| m.holds(i));
        let alone = (0..ranks.len())
            .filter(|&i| !shared(i))
            .map(|i| f64::from(ranks[i]) / f64::from(cores[i]));
        let machines = self.shared_machines.iter().filter(|m| m.cpus > 0).map(|m| {
            let r: u32 = m.nodes.iter().filter_map(|&i| ranks.get(i as usize)).sum();
            f64::from(r) / f64::from(m.cpus)
        });
        alone.chain(machines).reduce(f64::max)
    }

    /// The program the trace is of: the file name of the command's first word.
    pub fn program(&self) -> Option<&str> {
        let c = self.command.first()?;
        Some(c.rsplit('/').next().unwrap_or(c))
    }

    /// Why two traces may not be of the same program build, in words, or `None` when nothing
    /// says so (same program and build id, or not recorded): their call sites then differ
    /// even where the calls are the same.
    pub fn origin_differs(&self, other: &Header) -> Option<String> {
        match (self.program(), other.program()) {
            (Some(a), Some(b)) if a != b => {
                return Some(format!("different programs: {a} and {b}"));
            }
            _ => {}
        }
        match (&self.build_id, &other.build_id) {
            (Some(a), Some(b)) if a != b => Some(format!(
                "different builds of {}: build id {a} and {b}",
                self.program().unwrap_or("the program")
            )),
            _ => None,
        }
    }
}

/// A whole trace file: header and trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceFile {
    /// Metadata.
    pub header: Header,
    /// The compressed trace.
    pub trace: Trace,
}

fn xxh64(bytes: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, bytes)
}

impl TraceFile {
    /// Encodes the file to bytes, in the format version [`Header::encoding`] says.
    pub fn to_bytes(&self) -> Result<Vec<u8>, RsdError> {
        self.to_bytes_as(self.header.encoding)
    }

    /// Encodes the file to bytes in format version `encoding`.
    pub fn to_bytes_as(&self, encoding: Encoding) -> Result<Vec<u8>, RsdError> {
        let encoding = self.holding(encoding);
        let body = match encoding {
            Encoding::V1 => rmp_serde::to_vec(self).map_err(|e| RsdError::Encode(e.to_string()))?,
            Encoding::V2 => v2::encode(self, v2::TimingLayout::Plain)?.0,
            Encoding::V2_7 => v2::encode(self, v2::TimingLayout::Sized)?.0,
        };
        Ok(Self::frame(
            &body,
            encoding.version(),
            self.minor_as(encoding),
        ))
    }

    /// Whether the trace holds a run value ([`crate::runvalue`]), which needs minor 10.
    fn holds_run_values(&self) -> bool {
        crate::runvalue::present(&self.trace.nodes)
    }

    /// The encoding this file is written in when asked for `encoding`
    /// ([`Encoding::holding`]): version 2 in the timing layout of minor 0 to 6 cannot say
    /// minor 10 either, so a trace with run values is written with the sized records.
    fn holding(&self, encoding: Encoding) -> Encoding {
        match encoding.holding(&self.header) {
            Encoding::V2
                if self.holds_run_values()
                    || self.holds_gap_waits()
                    || crate::op::holds_path_pairs(&self.trace.nodes) =>
            {
                Encoding::V2_7
            }
            e => e,
        }
    }

    /// The minor version the file is written with in `encoding` (already [`Self::holding`]):
    /// the header's, and [`RUN_VALUE_MINOR`] where the trace holds a run value.
    fn minor_as(&self, encoding: Encoding) -> u32 {
        let mut minor = encoding.minor(&self.header);
        minor = minor.max(crate::runvalue::minor_needed(&self.trace.nodes));
        if self.holds_gap_waits() {
            minor = minor.max(GAP_WAITS_MINOR);
        }
        if crate::op::holds_path_pairs(&self.trace.nodes) {
            minor = minor.max(PATH_PAIR_MINOR);
        }
        if self
            .header
            .sensitivity
            .as_ref()
            .is_some_and(|s| s.bandwidth.is_some())
        {
            minor = minor.max(SENSITIVITY_BANDWIDTH_MINOR);
        }
        minor
    }

    /// Whether any event records off-CPU time in its gaps.
    fn holds_gap_waits(&self) -> bool {
        fn any(nodes: &[Node]) -> bool {
            nodes.iter().any(|n| match &n.kind {
                NodeKind::Event(e) => e.timing.waits.is_some() || any(&e.children),
                NodeKind::Loop(l) => any(&l.body),
            })
        }
        any(&self.trace.nodes)
    }

    /// The version the file is written in, as `iotrex show` names it: `1`, `2`, `2.7`, `2.8`
    /// (the header's provenance), `2.10` (run values).
    pub fn version_name(&self) -> String {
        let e = self.holding(self.header.encoding);
        match self.minor_as(e) {
            minor if e == Encoding::V2_7 && minor > v2::SIZED_TIMING_MINOR => {
                format!("{FORMAT_V2}.{minor}")
            }
            _ => e.name().to_string(),
        }
    }

    /// Where the bytes of this file go when written in format version `encoding`: the
    /// prefix, then per part of the body, the application's calls and the nested calls
    /// apart. Version 2's encoder counts each byte it writes; version 1's MessagePack is
    /// measured by encoding each part alone, what containers add counted as structure.
    pub fn breakdown(&self, encoding: Encoding) -> Result<v2::Breakdown, RsdError> {
        match self.holding(encoding) {
            Encoding::V2 => Ok(v2::encode(self, v2::TimingLayout::Plain)?.1),
            Encoding::V2_7 => Ok(v2::encode(self, v2::TimingLayout::Sized)?.1),
            Encoding::V1 => v1_breakdown(self),
        }
    }

    /// A file of `body` (an encoded [`TraceFile`], or what a newer writer's would be) with the
    /// prefix of format `version`.`minor`: magic, versions, length and checksum.
    pub fn frame(body: &[u8], version: u32, minor: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(PREFIX_LEN + body.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&minor.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&xxh64(body).to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    /// Decodes bytes read from `path` (used only in error messages).
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<TraceFile, RsdError> {
        let p = || path.to_path_buf();
        let head = &bytes[..bytes.len().min(8)];
        if head != &MAGIC[..head.len()] || bytes.is_empty() {
            return Err(RsdError::BadMagic {
                path: p(),
                found: head.to_vec(),
            });
        }
        if bytes.len() < PREFIX_LEN {
            return Err(RsdError::Truncated {
                path: p(),
                expected: PREFIX_LEN as u64,
                found: bytes.len() as u64,
            });
        }
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        let (version, minor) = (u32_at(8), u32_at(12));
        if version > NEWEST_VERSION || minor > FORMAT_MINOR {
            return Err(RsdError::NewerVersion {
                path: p(),
                found: version,
                found_minor: minor,
                supported: NEWEST_VERSION,
                supported_minor: FORMAT_MINOR,
            });
        }
        if version == 0 {
            return Err(RsdError::Corrupt {
                path: p(),
                detail: "format version 0 does not exist".into(),
            });
        }
        let body_len = u64_at(16);
        let expected = (PREFIX_LEN as u64).saturating_add(body_len);
        let found = bytes.len() as u64;
        if found < expected {
            return Err(RsdError::Truncated {
                path: p(),
                expected,
                found,
            });
        }
        if found > expected {
            return Err(RsdError::TrailingGarbage {
                path: p(),
                extra: found - expected,
            });
        }
        let body = &bytes[PREFIX_LEN..];
        let sum = xxh64(body);
        if sum != u64_at(24) {
            return Err(RsdError::Corrupt {
                path: p(),
                detail: format!(
                    "checksum mismatch (stored {:016x}, computed {sum:016x})",
                    u64_at(24)
                ),
            });
        }
        let mut tf = if version == FORMAT_V2 && minor >= v2::SIZED_TIMING_MINOR {
            Self::decode_body_v2_7(body, path)
        } else if version == FORMAT_V2 {
            Self::decode_body_v2(body, path)
        } else {
            Self::decode_body(body, path)
        }?;
        // A run value is a minor-10 variant (its own-pid kind minor 13, the host name in a
        // path 15): in a file of an older minor it is damage.
        if minor < crate::runvalue::minor_needed(&tf.trace.nodes) {
            return Err(RsdError::Corrupt {
                path: p(),
                detail: format!("a run value in a file of minor version {minor}"),
            });
        }
        // A header field is written only by a build that knows its minor: one newer than the
        // file says is damage (an older reader would take it for that anyway).
        if minor < tf.header.minor() {
            return Err(RsdError::Corrupt {
                path: p(),
                detail: format!(
                    "a header field of minor version {} in a file of minor version {minor}",
                    tf.header.minor()
                ),
            });
        }
        if minor < GAP_WAITS_MINOR && tf.holds_gap_waits() {
            return Err(RsdError::Corrupt {
                path: p(),
                detail: format!("off-CPU gap time in a file of minor version {minor}"),
            });
        }
        if minor < PATH_PAIR_MINOR {
            crate::op::upgrade_path_pairs(&mut tf.trace.nodes);
        }
        Ok(tf)
    }

    /// Decodes and validates a version-2 body of minor version 0 to 6 without the prefix
    /// checks. Public so the fuzz tests can feed it arbitrary bytes past the checksum.
    pub fn decode_body_v2(body: &[u8], path: &Path) -> Result<TraceFile, RsdError> {
        Self::decode_v2_as(body, path, v2::TimingLayout::Plain)
    }

    /// Decodes and validates a version-2 body of minor version 7 or later (sized timing
    /// records) without the prefix checks, for the fuzz tests as [`Self::decode_body_v2`].
    pub fn decode_body_v2_7(body: &[u8], path: &Path) -> Result<TraceFile, RsdError> {
        Self::decode_v2_as(body, path, v2::TimingLayout::Sized)
    }

    fn decode_v2_as(
        body: &[u8],
        path: &Path,
        layout: v2::TimingLayout,
    ) -> Result<TraceFile, RsdError> {
        let tf = v2::decode(body, layout).map_err(|e| match e {
            v2::DecodeError::Corrupt(detail) => RsdError::Corrupt {
                path: path.to_path_buf(),
                detail,
            },
            v2::DecodeError::UnknownOp(op) => RsdError::UnknownOperation {
                path: path.to_path_buf(),
                op,
            },
        })?;
        tf.validate().map_err(|detail| RsdError::Corrupt {
            path: path.to_path_buf(),
            detail,
        })?;
        Ok(tf)
    }

    /// Decodes and validates a version-1 body without the prefix checks. Public so the fuzz
    /// test can feed it arbitrary bytes past the checksum.
    pub fn decode_body(body: &[u8], path: &Path) -> Result<TraceFile, RsdError> {
        // A `&[u8]` reader advances over what was decoded, so what remains is trailing data.
        let mut rest = body;
        let mut de = rmp_serde::Deserializer::new(&mut rest);
        // Each loop level nests about four MessagePack containers (node, kind, loop, body);
        // refusing deeper input here keeps hostile files from overflowing the stack before
        // validate() sees them.
        de.set_max_depth(4 * MAX_DEPTH + 32);
        let tf: TraceFile = Deserialize::deserialize(&mut de).map_err(|e| {
            let detail = e.to_string();
            // Ops are stored by name and only ever appended, so an unknown name in a body that
            // passed its checksum means a newer writer, not damage.
            match unknown_op(&detail) {
                Some(op) => RsdError::UnknownOperation {
                    path: path.to_path_buf(),
                    op,
                },
                None => RsdError::Corrupt {
                    path: path.to_path_buf(),
                    detail,
                },
            }
        })?;
        drop(de);
        let rest = rest.len();
        if rest != 0 {
            return Err(RsdError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("{rest} bytes left over after the trace body"),
            });
        }
        tf.validate().map_err(|detail| RsdError::Corrupt {
            path: path.to_path_buf(),
            detail,
        })?;
        Ok(tf)
    }

    /// Checks what the decoder cannot: the header's node layout against its rank count,
    /// nesting depth, value shapes, rank ranges.
    fn validate(&self) -> Result<(), String> {
        if let Some(l) = &self.header.node_layout {
            l.validate(self.header.nranks)
                .map_err(|e| format!("node layout of the header: {e}"))?;
        }
        if let Some(p) = &self.header.processes {
            p.validate()?;
        }
        fn val_ok<T>(v: &Val<T>, depth: usize) -> Result<(), String> {
            if depth > MAX_DEPTH {
                return Err("values nested too deeply".into());
            }
            match v {
                Val::Seq(items) | Val::Cycle(items) => {
                    if items.is_empty() {
                        return Err("empty value vector".into());
                    }
                    items.iter().try_for_each(|i| val_ok(i, depth + 1))
                }
                _ => Ok(()),
            }
        }
        fn elastic_ok(e: &Elastic, depth: usize) -> Result<(), String> {
            for g in &e.groups {
                if g.ranks
                    .runs
                    .iter()
                    .any(|r| r.dims.is_empty() || r.dims.len() > 8)
                {
                    return Err("malformed rank list".into());
                }
                val_ok(&g.val, depth)?;
            }
            Ok(())
        }
        fn nodes_ok(nodes: &[Node], depth: usize, seen: &mut u64) -> Result<(), String> {
            if depth > MAX_DEPTH {
                return Err("loops nested too deeply".into());
            }
            for n in nodes {
                if n.ranks
                    .runs
                    .iter()
                    .any(|r| r.dims.is_empty() || r.dims.len() > 8)
                {
                    return Err("malformed rank list".into());
                }
                match &n.kind {
                    NodeKind::Event(e) => {
                        *seen += 1;
                        if e.nfields() != e.path.as_ref().map_or(0, |p| p.nfields()) {
                            return Err(format!(
                                "{}: path has more fields than parameters",
                                e.op.name()
                            ));
                        }
                        params_fit(e, &n.ranks, *seen)?;
                        e.params.iter().try_for_each(|p| elastic_ok(p, depth))?;
                        nodes_ok(&e.children, depth + 1, seen)?;
                    }
                    NodeKind::Loop(l) => {
                        elastic_ok(&l.iters, depth)?;
                        nodes_ok(&l.body, depth + 1, seen)?;
                    }
                }
            }
            Ok(())
        }
        nodes_ok(&self.trace.nodes, 0, &mut 0)
    }

    /// Writes the file atomically ([`crate::atomic`]), so a crash never leaves a half-written
    /// trace under the final name.
    pub fn write(&self, path: &Path) -> Result<u64, RsdError> {
        let bytes = self.to_bytes()?;
        crate::atomic::write(path, &bytes).map_err(|error| RsdError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        Ok(bytes.len() as u64)
    }

    /// Reads and validates a trace file.
    pub fn read(path: &Path) -> Result<TraceFile, RsdError> {
        let bytes = std::fs::read(path).map_err(|error| RsdError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        Self::from_bytes(&bytes, path)
    }
}

/// Whether event number `nth` (depth first, from 1) has the parameters its op's schema says:
/// every fixed parameter ([`crate::Op::params`]), then the path's fields. Readers (layouts,
/// prefix sums, collective models, replay, the CODES export) index the fixed parameters by
/// their schema position, so an event shorter than its schema is refused here rather than
/// read past its end. More parameters fit: variadic ops store their arrays after the fixed
/// parameters (datatype constructors, `Startall`, hyperslabs, ...), whose readers check each
/// array's length themselves. Events of version-1 files have the same layout: no op's fixed
/// parameters have changed since version 1 (`git log -p rsd/src/op.rs`), only ops were added.
fn params_fit(
    e: &crate::trace::Event,
    ranks: &crate::ranks::RankSet,
    nth: u64,
) -> Result<(), String> {
    let fixed = e.op.params().len();
    let fields = e.path.as_ref().map_or(0, |p| p.nfields());
    if e.params.len() >= fixed + fields {
        return Ok(());
    }
    let mut need = e.op.schema().join(", ");
    if fields > 0 {
        need = format!(
            "{need}{}{fields} path field(s)",
            if fixed > 0 { ", then " } else { "" }
        );
    }
    Err(format!(
        "event {nth} ({}, ranks {ranks}) has {} parameter(s) where its schema needs {} ({need})",
        e.op.name(),
        e.params.len(),
        fixed + fields
    ))
}

/// Version 1's breakdown: each part's MessagePack alone, the rest (array and map headers,
/// variant names of nodes) as structure.
fn v1_breakdown(tf: &TraceFile) -> Result<v2::Breakdown, RsdError> {
    use v2::Part;
    fn size<T: Serialize + ?Sized>(v: &T) -> u64 {
        rmp_serde::to_vec(v).map_or(0, |b| b.len() as u64)
    }
    fn elastic(e: &Elastic, part: Part, nested: bool, out: &mut v2::Breakdown) {
        let ranks: u64 = e.groups.iter().map(|g| size(&g.ranks)).sum();
        *out.entry((Part::RankSets, nested)).or_default() += ranks;
        *out.entry((part, nested)).or_default() += size(e) - ranks;
    }
    fn walk(nodes: &[Node], nested: bool, out: &mut v2::Breakdown) {
        for n in nodes {
            *out.entry((Part::RankSets, nested)).or_default() += size(&n.ranks);
            match &n.kind {
                NodeKind::Event(e) => {
                    *out.entry((Part::Strings, nested)).or_default() += size(&e.op) + size(&e.path);
                    *out.entry((Part::CallSites, nested)).or_default() += size(&e.sig);
                    e.params
                        .iter()
                        .for_each(|p| elastic(p, Part::Params, nested, out));
                    *out.entry((Part::Timing, nested)).or_default() += size(&e.timing);
                    walk(&e.children, true, out);
                }
                NodeKind::Loop(l) => {
                    elastic(&l.iters, Part::Iterations, nested, out);
                    walk(&l.body, nested, out);
                }
            }
        }
    }
    let total = rmp_serde::to_vec(tf)
        .map_err(|e| RsdError::Encode(e.to_string()))?
        .len() as u64;
    let mut out = v2::Breakdown::new();
    out.insert((Part::Header, false), size(&tf.header));
    walk(&tf.trace.nodes, false, &mut out);
    let parts: u64 = out.values().sum();
    *out.entry((Part::Structure, false)).or_default() += total.saturating_sub(parts);
    Ok(out)
}

/// The operation name in serde's "unknown variant `X`, expected one of ..." for `Op`.
fn unknown_op(detail: &str) -> Option<String> {
    let rest = detail.split("unknown variant `").nth(1)?;
    let name = rest.split('`').next()?;
    // Only an `Op` name: the list serde gives names the op variants (FileOpen, ...).
    detail.contains("`FileOpen`").then(|| name.to_string())
}

/// Asserts that a trace of `n` ranks survives the format: written and read back, it is the
/// same (for the unit tests of the modules whose values the format stores).
#[cfg(test)]
pub(crate) fn assert_round_trips(n: u32, trace: &crate::trace::Trace) {
    let tf = TraceFile {
        header: Header::new(n),
        trace: trace.clone(),
    };
    let read = TraceFile::from_bytes(&tf.to_bytes().unwrap(), Path::new("x")).unwrap();
    assert_eq!(read, tf);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let tf = TraceFile {
            header: Header::new(4),
            trace: crate::synth::spmd(4, 10),
        };
        tf.to_bytes().unwrap()
    }

    #[test]
    fn roundtrip() {
        let b = sample();
        let tf = TraceFile::from_bytes(&b, Path::new("x")).unwrap();
        assert_eq!(tf.to_bytes().unwrap(), b);
    }

    #[test]
    fn node_cores_are_additive_and_give_the_ranks_per_core() {
        let b = sample();
        let mut tf = TraceFile::from_bytes(&b, Path::new("x")).unwrap();
        assert_eq!(tf.header.node_cores, Vec::new());
        assert_eq!(tf.header.ranks_per_core(), None);
        tf.header.mpi_config = Some(MpiConfig {
            node_ranks: vec![(8, 1), (4, 2)],
            ..MpiConfig::default()
        });
        // Without the CPUs the bytes are those of a header with the configuration alone.
        let without = tf.to_bytes().unwrap();
        assert_eq!(tf.header.ranks_per_core(), None);
        tf.header.node_cores = vec![(2, 3)];
        let with = tf.to_bytes().unwrap();
        assert!(with.len() > without.len());
        let back = TraceFile::from_bytes(&with, Path::new("x")).unwrap();
        assert_eq!(back, tf);
        assert_eq!(back.to_bytes().unwrap(), with);
        // 8 ranks on the first node's 2 CPUs: 4 per core, the most of any node.
        assert_eq!(back.header.ranks_per_core(), Some(4.0));
        // CPUs for fewer nodes than the configuration names say nothing.
        tf.header.node_cores = vec![(2, 2)];
        assert_eq!(tf.header.ranks_per_core(), None);
    }

    #[test]
    fn predictions_are_additive() {
        use crate::timing::{Interval, Intervals, Predicted, Prediction, TimeKind};
        let b = sample();
        let mut tf = TraceFile::from_bytes(&b, Path::new("x")).unwrap();
        // Without intervals the bytes are today's (the golden files check the same).
        assert_eq!(tf.to_bytes().unwrap(), b);
        let iv = Interval { lo: 1.0, hi: 3.0 };
        let p = Predicted {
            value: 2.0,
            interval: iv,
        };
        tf.header.prediction = Some(Prediction {
            inputs: vec![(4, 3), (8, 1)],
            wall: p,
            parts: vec![(TimeKind::Io, p), (TimeKind::Compensation, p)],
        });
        fn first_event(n: &mut [Node]) -> Option<&mut crate::trace::Event> {
            n.iter_mut().find_map(|n| match &mut n.kind {
                NodeKind::Event(e) => Some(e),
                NodeKind::Loop(l) => first_event(&mut l.body),
            })
        }
        first_event(&mut tf.trace.nodes).unwrap().timing.interval =
            Some(Intervals { gap: iv, dur: iv });
        let with = tf.to_bytes().unwrap();
        assert!(with.len() > b.len());
        let back = TraceFile::from_bytes(&with, Path::new("x")).unwrap();
        assert_eq!(back, tf);
        assert_eq!(back.to_bytes().unwrap(), with);
    }

    #[test]
    fn an_operation_from_a_newer_writer_is_named_not_called_damage() {
        let tf = TraceFile::from_bytes(&sample(), Path::new("x")).unwrap();
        for enc in [Encoding::V1, Encoding::V2] {
            let b = tf.to_bytes_as(enc).unwrap();
            let mut body = b[PREFIX_LEN..].to_vec();
            // Rename the stored `Barrier` to a name no build has: what a newer writer's new
            // op looks like to this reader, with a valid checksum (version 2 stores the name
            // once, in its string table).
            let at = body
                .windows(7)
                .position(|w| w == b"Barrier")
                .expect("the sample has a barrier");
            body[at..at + 7].copy_from_slice(b"Barrieq");
            let framed = TraceFile::frame(&body, enc.version(), 0);
            match TraceFile::from_bytes(&framed, Path::new("t.iotrex")) {
                Err(RsdError::UnknownOperation { op, .. }) => assert_eq!(op, "Barrieq"),
                other => panic!("{enc:?}: expected UnknownOperation, got {other:?}"),
            }
        }
    }

    /// The body a newer iotrex would write with one more header field than this build knows
    /// (after `run_id`): the header array one longer, the field at its end.
    pub(crate) fn body_with_a_future_field(tf: &TraceFile) -> Vec<u8> {
        let mut header = rmp_serde::to_vec(&tf.header).unwrap();
        // 8 + 6 fields: a fixarray of 14 (0x9e); 15 with the new one.
        assert_eq!(
            header[0],
            0x90 | 14,
            "the header holds every field up to run_id"
        );
        header[0] = 0x90 | 15;
        header.extend(rmp_serde::to_vec(&("a field from the future", 42u32)).unwrap());
        let mut body = vec![0x92];
        body.extend(header);
        body.extend(rmp_serde::to_vec(&tf.trace).unwrap());
        body
    }

    #[test]
    fn gap_waits_are_minor_11_in_both_versions_and_damage_in_an_older_minor() {
        let b = sample();
        let mut tf = TraceFile::from_bytes(&b, Path::new("x")).unwrap();
        fn first_event(nodes: &mut [Node]) -> Option<&mut crate::trace::Event> {
            nodes.iter_mut().find_map(|n| match &mut n.kind {
                NodeKind::Event(e) => Some(e),
                NodeKind::Loop(l) => first_event(&mut l.body),
            })
        }
        first_event(&mut tf.trace.nodes).unwrap().timing.waits = Some(crate::timing::GapWaits {
            runq_ns: 5_000,
            blocked_ns: 7_000_000,
        });
        let minor = |b: &[u8]| u32::from_le_bytes(b[12..16].try_into().unwrap());
        for e in [Encoding::V2_7, Encoding::V2, Encoding::V1] {
            let w = tf.to_bytes_as(e).unwrap();
            assert_eq!(minor(&w), GAP_WAITS_MINOR, "{e:?}");
            let back = TraceFile::from_bytes(&w, Path::new("x")).unwrap();
            assert_eq!(back.trace, tf.trace, "{e:?}");
            // The same body under minor 10 is damage, not a trace without the waits.
            let version = u32::from_le_bytes(w[8..12].try_into().unwrap());
            let old = TraceFile::frame(&w[PREFIX_LEN..], version, RUN_VALUE_MINOR);
            let err = TraceFile::from_bytes(&old, Path::new("old.iotrex"))
                .unwrap_err()
                .to_string();
            assert!(err.contains("old.iotrex"), "{err}");
        }
        // A trace without any keeps its bytes.
        assert_eq!(
            TraceFile::from_bytes(&b, Path::new("x"))
                .unwrap()
                .to_bytes()
                .unwrap(),
            b
        );
    }

    /// A rename written before minor 16 (its paths joined by a newline) reads as the NUL pair;
    /// written back, it is minor 16 and reads the same.
    #[test]
    fn old_path_pairs_are_converted_and_new_ones_are_minor_16() {
        let mut tf = TraceFile::from_bytes(&sample(), Path::new("x")).unwrap();
        fn with_path(nodes: &mut [Node]) -> Option<&mut crate::trace::Event> {
            nodes.iter_mut().find_map(|n| match &mut n.kind {
                NodeKind::Event(e) if e.path.is_some() => Some(e),
                NodeKind::Event(_) => None,
                NodeKind::Loop(l) => with_path(&mut l.body),
            })
        }
        let e = with_path(&mut tf.trace.nodes).unwrap();
        let old = e.path.clone().unwrap().0;
        e.op = crate::Op::Rename;
        e.path = Some(crate::path::PathTemplate(format!("{old}\nnew name")));
        let w = tf.to_bytes().unwrap();
        let version = u32::from_le_bytes(w[8..12].try_into().unwrap());
        let as15 = TraceFile::frame(&w[PREFIX_LEN..], version, HOST_MINOR);
        let back = TraceFile::from_bytes(&as15, Path::new("x")).unwrap();
        let mut back_trace = back.trace.clone();
        let p = with_path(&mut back_trace.nodes)
            .unwrap()
            .path
            .clone()
            .unwrap();
        assert_eq!(
            crate::op::split_path_pair(&p.0),
            Some((old.as_str(), "new name"))
        );
        let w16 = back.to_bytes().unwrap();
        assert_eq!(
            u32::from_le_bytes(w16[12..16].try_into().unwrap()),
            PATH_PAIR_MINOR
        );
        assert_eq!(
            TraceFile::from_bytes(&w16, Path::new("x")).unwrap().trace,
            back.trace
        );
        // A newline in a minor-16 file is a file name's own.
        let mut nl = back.clone();
        with_path(&mut nl.trace.nodes).unwrap().path =
            Some(crate::path::PathTemplate(format!("{old}\0new\nname")));
        let again = TraceFile::from_bytes(&nl.to_bytes().unwrap(), Path::new("x")).unwrap();
        assert_eq!(again.trace, nl.trace);
    }

    #[test]
    fn a_newer_minor_version_is_named_and_damage_is_still_damage() {
        let mut tf = TraceFile::from_bytes(&sample(), Path::new("x")).unwrap();
        // New files have version 2's sized timing records: minor 7. Files in the layout of
        // minor 0-6 without the newer fields keep minor 0 (and their bytes: the golden files).
        let minor = |b: &[u8]| u32::from_le_bytes(b[12..16].try_into().unwrap());
        assert_eq!(minor(&sample()), 7);
        assert_eq!(minor(&tf.to_bytes_as(Encoding::V2).unwrap()), 0);
        tf.header.run_id = Some("0123456789abcdef".into());
        let b = tf.to_bytes_as(Encoding::V2).unwrap();
        assert_eq!(minor(&b), 6);
        let mut old = tf.clone();
        old.header.encoding = Encoding::V2;
        assert_eq!(TraceFile::from_bytes(&b, Path::new("x")).unwrap(), old);
        let b = tf.to_bytes().unwrap();
        assert_eq!(minor(&b), 7);
        assert_eq!(TraceFile::from_bytes(&b, Path::new("x")).unwrap(), tf);
        let body = body_with_a_future_field(&tf);
        let p = Path::new("new.iotrex");
        let newer = TraceFile::frame(&body, FORMAT_VERSION, FORMAT_MINOR + 1);
        let e = TraceFile::from_bytes(&newer, p).unwrap_err();
        assert!(matches!(e, RsdError::NewerVersion { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "new.iotrex: trace format version 1.{} is newer than this iotrex reads (up to {NEWEST_VERSION}.{FORMAT_MINOR}): the file was written by a newer iotrex; upgrade iotrex",
                FORMAT_MINOR + 1
            )
        );
        // The same bytes claiming a minor version this build knows: damage, said so.
        let lying = TraceFile::frame(&body, FORMAT_VERSION, FORMAT_MINOR);
        let e = TraceFile::from_bytes(&lying, p).unwrap_err();
        assert!(matches!(e, RsdError::Corrupt { .. }), "{e:?}");
        // A new format version altogether (version 2 is read since it exists).
        let v3 = TraceFile::frame(&body, NEWEST_VERSION + 1, 0);
        assert!(
            TraceFile::from_bytes(&v3, p)
                .unwrap_err()
                .to_string()
                .contains("version 3 is newer than this iotrex reads")
        );
        // Version 2 with a newer minor version (a header field it does not know) too.
        let v2 = TraceFile::frame(
            &tf.to_bytes().unwrap()[PREFIX_LEN..],
            FORMAT_V2,
            FORMAT_MINOR + 1,
        );
        assert!(matches!(
            TraceFile::from_bytes(&v2, p).unwrap_err(),
            RsdError::NewerVersion { .. }
        ));
    }

    #[test]
    fn refusals_name_the_problem() {
        let b = sample();
        let p = Path::new("t.iotrex");
        let msg = |bytes: &[u8]| TraceFile::from_bytes(bytes, p).unwrap_err().to_string();
        assert!(msg(b"hello world, not a trace at all").contains("bad magic"));
        assert!(msg(b"").contains("bad magic"));
        let mut newer = b.clone();
        newer[8..12].copy_from_slice(&7u32.to_le_bytes());
        newer[12..16].copy_from_slice(&0u32.to_le_bytes());
        assert!(msg(&newer).contains("version 7 is newer"));
        assert!(msg(&b[..b.len() - 3]).contains("truncated"));
        assert!(msg(&b[..20]).contains("truncated"));
        let mut extra = b.clone();
        extra.extend_from_slice(b"junk");
        assert!(msg(&extra).contains("4 bytes of trailing garbage"));
        let mut flipped = b.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x55;
        assert!(msg(&flipped).contains("checksum mismatch"));
        assert!(
            msg(&b[..4]).starts_with("t.iotrex: truncated"),
            "{}",
            msg(&b[..4])
        );
    }
}
