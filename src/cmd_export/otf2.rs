//! `iotrex export otf2`: an OTF2 archive for Vampir and Score-P tools, written by the
//! `otf2out` crate through the OTF2 library loaded at run time.

use super::Exporter;
use anyhow::Result;
use clap::Args;
use otf2out::Otf2Report;
use rsd::TraceFile;
use std::path::{Path, PathBuf};

/// Arguments of `iotrex export otf2`.
#[derive(Debug, Args)]
#[command(
    about = "Write an OTF2 archive (Vampir, Score-P tools, otf2-print)",
    long_about = "Write an OTF2 archive into a new directory (DIR/traces.otf2 plus DIR/traces/): \
                  one location per rank, one region per op, each call an Enter/Leave pair with \
                  the calls made inside it nested; file I/O also as OTF2 I/O records on handles \
                  of the POSIX, ISO C and MPI-IO paradigms (one handle per file and paradigm), \
                  blocking point-to-point calls on MPI_COMM_WORLD as MpiSend/MpiRecv records. \
                  Times are rebuilt from each event's mean gap and duration (predictions in an \
                  extrapolated trace; the archive's description says which). The OTF2 library \
                  (Debian: libotf2-trace-dev) is loaded at run time; without it the export says \
                  what to install.",
    after_help = "Example:\n  iotrex export otf2 app.64.iotrex -o app-otf2/ && otf2-print app-otf2/traces.otf2 | head"
)]
pub struct ExportOtf2Args {
    /// The trace file (.iotrex).
    pub trace: PathBuf,
    /// Output directory, which must not exist yet.
    #[arg(long, short)]
    pub output: PathBuf,
}

impl Exporter for ExportOtf2Args {
    type Report = Otf2Report;
    const PROGRESS: bool = true;

    fn trace(&self) -> &Path {
        &self.trace
    }

    fn export(&self, tf: &TraceFile, progress: &mut dyn FnMut(u32, u32)) -> Result<Otf2Report> {
        Ok(otf2out::export_otf2(tf, &self.output, progress)?)
    }

    fn summary(&self, r: &Otf2Report) -> String {
        format!(
            "wrote {}: {} locations, {} calls, {} events, {} regions, {} I/O handles; open it in Vampir or with otf2-print",
            r.anchor.display(),
            r.locations,
            r.calls,
            r.events,
            r.regions,
            r.io_handles
        )
    }

    fn warnings(&self, r: &Otf2Report) -> Vec<String> {
        if r.predicted {
            vec!["the trace is extrapolated: times are the models' predictions".to_string()]
        } else {
            Vec::new()
        }
    }
}
