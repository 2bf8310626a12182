//! The columns of both tables, in one list that makes the Parquet schema, `--help` and the docs,
//! and a writer that buffers one row group of cells at a time.

use crate::ExportError;
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use rsd::atomic::AtomicFile;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A column's Parquet type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// 64-bit signed integer.
    Int64,
    /// 64-bit float.
    Double,
    /// UTF-8 string.
    Utf8,
    /// Boolean.
    Bool,
}

impl ColumnKind {
    fn parquet(self) -> &'static str {
        match self {
            ColumnKind::Int64 => "int64",
            ColumnKind::Double => "double",
            ColumnKind::Utf8 => "binary",
            ColumnKind::Bool => "boolean",
        }
    }

    /// The name users see (DuckDB's).
    pub fn name(self) -> &'static str {
        match self {
            ColumnKind::Int64 => "BIGINT",
            ColumnKind::Double => "DOUBLE",
            ColumnKind::Utf8 => "VARCHAR",
            ColumnKind::Bool => "BOOLEAN",
        }
    }
}

/// One column of one table.
#[derive(Debug, Clone, Copy)]
pub struct ColumnDoc {
    /// `calls` or `events`.
    pub table: &'static str,
    /// Column name.
    pub name: &'static str,
    /// Type.
    pub kind: ColumnKind,
    /// Whether the column may be null (a call without a path, a loop without an op).
    pub nullable: bool,
    /// What it holds.
    pub doc: &'static str,
}

macro_rules! columns {
    ($( $table:literal $name:literal $kind:ident $null:literal $doc:literal ;)*) => {
        /// Every column of both tables, in file order.
        pub const COLUMNS: &[ColumnDoc] = &[$(ColumnDoc {
            table: $table, name: $name, kind: ColumnKind::$kind, nullable: $null, doc: $doc,
        }),*];
    };
}

columns! {
    "calls" "rank" Int64 false "rank that made the call, or whose process made it (see process)";
    "calls" "process" Int64 true "null for a call of the rank's own process; k for one of the rank's k-th other process (a child it forked, or a program it started; the trace's header lists them): rank, process and seq identify a call";
    "calls" "node" Int64 true "the node (machine) the rank ran on, numbered in the order of each node's lowest rank (node 0 holds rank 0); null where the trace has no node layout";
    "calls" "node_name" Utf8 true "that node's host name; null where not known (an extrapolated trace's target machine)";
    "calls" "seq" Int64 false "position of the call in the rank's sequence (nested calls counted, depth first)";
    "calls" "depth" Int64 false "0 for a call the application made, 1 for a call made inside it (the POSIX calls of an MPI-IO call), and so on";
    "calls" "parent_seq" Int64 true "seq of the call this one was made inside (null at depth 0)";
    "calls" "layer" Utf8 false "MPIIO, MPI, POSIX or STDIO";
    "calls" "op" Utf8 false "the call's C name (MPI_File_write_at_all, pwrite, ...)";
    "calls" "call_site" Utf8 false "call-site signature (hex): equal for calls from one place in the code";
    "calls" "path" Utf8 true "the file the call names or acts on (a handle's file, through the rank's open-file table); for rename and link the old path, for symlink the target";
    "calls" "path2" Utf8 true "the second path of a call that names two: rename's and link's newpath, symlink's linkpath (null for other calls)";
    "calls" "handle" Int64 true "open-file table index the call acts on or returns (fd, MPI file, stream)";
    "calls" "offset" Int64 true "the offset parameter (explicit-offset calls and seeks), as passed";
    "calls" "file_offset" Int64 true "byte offset in the file where the call's data starts (views and file pointers applied)";
    "calls" "bytes" Int64 false "file bytes read or written (0 for calls that move no file data)";
    "calls" "ret" Int64 true "return value, where the trace keeps it";
    "calls" "params" Utf8 false "every parameter as a JSON object, names as iotrex show gives them";
    "calls" "start_ns" Double false "start, ns from the rank's first call (rebuilt, see time_source)";
    "calls" "dur_ns" Double false "duration, ns, as recorded (see time_source); its sum per op is what iotrex stats reports. A nested call keeps it even where it overruns its parent's span as start_ns places it";
    "calls" "time_source" Utf8 false "'event mean': the mean over the event's calls (traces keep statistics, not timestamps); 'model': predicted by extrapolation";
    "calls" "approximate" Bool false "whether a parameter was drawn from a statistical summary rather than kept exactly";
    "events" "id" Int64 false "node number, depth first over the compressed trace";
    "events" "parent_id" Int64 true "the enclosing loop or call (null at the top level)";
    "events" "kind" Utf8 false "'event' (one call site) or 'loop'";
    "events" "nested" Bool false "whether the event is a call made inside another call (its parent)";
    "events" "depth" Int64 false "nesting level (loops and calls)";
    "events" "ranks" Utf8 false "ranks that execute the node (e.g. 0-63 or 0-62:2)";
    "events" "nranks" Int64 false "how many ranks execute it";
    "events" "layer" Utf8 true "layer of an event (null for loops)";
    "events" "op" Utf8 true "call of an event (null for loops)";
    "events" "call_site" Utf8 true "call-site signature (hex) of an event";
    "events" "path" Utf8 true "path template of an event that names files (the first of a call that names two)";
    "events" "path2" Utf8 true "template of the second path of rename, link and symlink (see calls.path2)";
    "events" "params" Utf8 true "the event's parameters as iotrex show renders them (functions of rank and loop indices)";
    "events" "iters" Utf8 true "iteration count of a loop, as a function of rank";
    "events" "calls" Int64 true "calls the event stands for over all ranks";
    "events" "gap_mean_ns" Double true "mean compute gap before the call, ns";
    "events" "dur_mean_ns" Double true "mean duration, ns";
    "events" "dur_sd_ns" Double true "standard deviation of the duration, ns";
    "events" "dur_min_ns" Double true "shortest call, ns";
    "events" "dur_max_ns" Double true "longest call, ns";
    "events" "dur_total_ns" Double true "time in the calls over all ranks, ns";
    "events" "dur_lo_ns" Double true "lower end of the predicted mean duration's interval (extrapolated traces)";
    "events" "dur_hi_ns" Double true "upper end of that interval";
    "events" "approximate" Bool false "whether a parameter is a statistical summary";
}

/// The columns of `table`.
pub fn columns_of(table: &str) -> Vec<&'static ColumnDoc> {
    COLUMNS.iter().filter(|c| c.table == table).collect()
}

fn schema(table: &str) -> String {
    let mut s = format!("message {table} {{\n");
    for c in columns_of(table) {
        let rep = if c.nullable { "optional" } else { "required" };
        let ann = if c.kind == ColumnKind::Utf8 {
            " (UTF8)"
        } else {
            ""
        };
        s.push_str(&format!("  {rep} {} {}{ann};\n", c.kind.parquet(), c.name));
    }
    s.push('}');
    s
}

/// One column's buffered values and, for a nullable column, its definition levels.
enum Buf {
    I(Vec<i64>),
    F(Vec<f64>),
    S(Vec<ByteArray>),
    B(Vec<bool>),
}

/// Writes one table, a row at a time: cells are pushed in column order, and every
/// `rows_per_group` rows the buffers go out as a row group, so memory stays bounded.
pub struct TableWriter {
    path: PathBuf,
    cols: Vec<&'static ColumnDoc>,
    bufs: Vec<Buf>,
    defs: Vec<Vec<i16>>,
    /// The column the next cell goes to.
    at: usize,
    rows_in_group: usize,
    rows_per_group: usize,
    /// Written under a temporary name, renamed into place by [`TableWriter::finish`]: an
    /// interrupted export never leaves a half table under the name.
    writer: SerializedFileWriter<AtomicFile>,
    /// Rows written so far.
    pub rows: u64,
    /// Row groups written so far.
    pub row_groups: u64,
}

impl TableWriter {
    /// Creates `path` for `table`.
    pub fn create(table: &str, path: &Path, rows_per_group: usize) -> Result<Self, ExportError> {
        let pq = |source| ExportError::Parquet {
            path: path.to_path_buf(),
            source,
        };
        let schema = Arc::new(parse_message_type(&schema(table)).map_err(pq)?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_created_by(format!("iotrex {}", env!("CARGO_PKG_VERSION")))
                .build(),
        );
        let file = AtomicFile::create(path).map_err(|source| ExportError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let writer = SerializedFileWriter::new(file, schema, props).map_err(pq)?;
        let cols = columns_of(table);
        let bufs = cols
            .iter()
            .map(|c| match c.kind {
                ColumnKind::Int64 => Buf::I(Vec::new()),
                ColumnKind::Double => Buf::F(Vec::new()),
                ColumnKind::Utf8 => Buf::S(Vec::new()),
                ColumnKind::Bool => Buf::B(Vec::new()),
            })
            .collect();
        let defs = vec![Vec::new(); cols.len()];
        Ok(TableWriter {
            path: path.to_path_buf(),
            cols,
            bufs,
            defs,
            at: 0,
            rows_in_group: 0,
            rows_per_group: rows_per_group.max(1),
            writer,
            rows: 0,
            row_groups: 0,
        })
    }

    fn next(&mut self, present: bool) -> usize {
        let i = self.at;
        assert!(i < self.cols.len(), "more cells than columns in a row");
        assert!(
            present || self.cols[i].nullable,
            "null in required column {}",
            self.cols[i].name
        );
        if self.cols[i].nullable {
            self.defs[i].push(i16::from(present));
        }
        self.at += 1;
        i
    }

    /// An integer cell.
    pub fn int(&mut self, v: i64) {
        let i = self.next(true);
        match &mut self.bufs[i] {
            Buf::I(b) => b.push(v),
            _ => panic!("column {} is not an integer", self.cols[i].name),
        }
    }

    /// A float cell.
    pub fn float(&mut self, v: f64) {
        let i = self.next(true);
        match &mut self.bufs[i] {
            Buf::F(b) => b.push(v),
            _ => panic!("column {} is not a float", self.cols[i].name),
        }
    }

    /// A string cell.
    pub fn text(&mut self, v: &str) {
        let i = self.next(true);
        match &mut self.bufs[i] {
            Buf::S(b) => b.push(ByteArray::from(v)),
            _ => panic!("column {} is not a string", self.cols[i].name),
        }
    }

    /// A boolean cell.
    pub fn flag(&mut self, v: bool) {
        let i = self.next(true);
        match &mut self.bufs[i] {
            Buf::B(b) => b.push(v),
            _ => panic!("column {} is not a boolean", self.cols[i].name),
        }
    }

    /// A null cell (nullable columns only).
    pub fn null(&mut self) {
        self.next(false);
    }

    /// An integer or null.
    pub fn opt_int(&mut self, v: Option<i64>) {
        match v {
            Some(v) => self.int(v),
            None => self.null(),
        }
    }

    /// A float or null.
    pub fn opt_float(&mut self, v: Option<f64>) {
        match v {
            Some(v) => self.float(v),
            None => self.null(),
        }
    }

    /// A string or null.
    pub fn opt_text(&mut self, v: Option<&str>) {
        match v {
            Some(v) => self.text(v),
            None => self.null(),
        }
    }

    /// Ends a row: every column must have had its cell.
    pub fn end_row(&mut self) -> Result<(), ExportError> {
        assert_eq!(self.at, self.cols.len(), "a row ended with cells missing");
        self.at = 0;
        self.rows += 1;
        self.rows_in_group += 1;
        if self.rows_in_group >= self.rows_per_group {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        if self.rows_in_group == 0 {
            return Ok(());
        }
        let path = self.path.clone();
        let pq = |source| ExportError::Parquet {
            path: path.clone(),
            source,
        };
        let mut rg = self.writer.next_row_group().map_err(pq)?;
        for (i, buf) in self.bufs.iter_mut().enumerate() {
            let mut col = rg
                .next_column()
                .map_err(pq)?
                .expect("the schema has a column per buffer");
            let defs = self.cols[i].nullable.then_some(self.defs[i].as_slice());
            match buf {
                Buf::I(v) => col.typed::<Int64Type>().write_batch(v, defs, None),
                Buf::F(v) => col.typed::<DoubleType>().write_batch(v, defs, None),
                Buf::S(v) => col.typed::<ByteArrayType>().write_batch(v, defs, None),
                Buf::B(v) => col.typed::<BoolType>().write_batch(v, defs, None),
            }
            .map_err(pq)?;
            col.close().map_err(pq)?;
            match buf {
                Buf::I(v) => v.clear(),
                Buf::F(v) => v.clear(),
                Buf::S(v) => v.clear(),
                Buf::B(v) => v.clear(),
            }
            self.defs[i].clear();
        }
        rg.close().map_err(pq)?;
        self.rows_in_group = 0;
        self.row_groups += 1;
        Ok(())
    }

    /// Writes the last row group and the footer.
    pub fn finish(mut self) -> Result<(u64, u64), ExportError> {
        self.flush()?;
        let path = self.path.clone();
        let file = self
            .writer
            .into_inner()
            .map_err(|source| ExportError::Parquet {
                path: path.clone(),
                source,
            })?;
        file.commit()
            .map_err(|source| ExportError::Io { path, source })?;
        Ok((self.rows, self.row_groups))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_parses_and_names_are_unique_per_table() {
        for t in ["calls", "events"] {
            parse_message_type(&schema(t)).unwrap();
            let cols = columns_of(t);
            let mut names: Vec<_> = cols.iter().map(|c| c.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), cols.len(), "{t}");
        }
    }
}
