//! Real programs extrapolated to a target machine's shape on the emulated cluster
//! (`scripts/cluster.sh`), each traced at 2 nodes x 1, 2, 3, 4 ranks and extrapolated to
//! 2 x 8 (more ranks per node), and at 2, 3, 4, 5 nodes x 2 ranks and extrapolated to 8 x 2
//! (more nodes), and diffed against a real run at the target, which must say identical:
//!
//! - the IOR-like mini-app's collective MPI-IO on one shared file under ROMIO (`--mca io
//!   romio321`, the library under test; its own defaults otherwise): the accesses do not
//!   interleave, so ROMIO writes independently, as the model derives at the target;
//! - parallel HDF5 (`h5_coll -i`, interleaved rows: a strided hyperslab) under ROMIO, whose
//!   two-phase collective buffering takes one aggregator per node (`cb_config_list *:1`): the
//!   target's aggregators are derived at the target's layout, 8 at 8 x 2 and 2 at 2 x 8, for
//!   the same 16 ranks;
//! - parallel HDF5 with read-back of the neighbour's part (`h5_coll -R`) under Open MPI's
//!   defaults (OMPIO), more ranks per node: the neighbour's start `((rank+1)%n)*floor(T/n)` is
//!   one line through both ranks at 2 ranks and two rank groups at more; it is fitted over
//!   the larger scales and the 2-rank input is reproduced rank by rank (`extrap`'s held-out
//!   scales);
//! - PnetCDF (`pnc_more`, the PnetCDF layer traced) under Open MPI's defaults (OMPIO). With
//!   `-k 4096` the file is larger than PnetCDF's header read (256 KiB) already at 2 ranks.
//!   With `-k 2048`, `ncmpi_open` reads the whole, smaller file at 2 ranks (min(request, file
//!   size), and the file's size is no quantity the fit sees): from 2 x 1-4 it is refused,
//!   naming the 2-rank scale and the scales to trace instead, and from 2 x 2-5 it extrapolates.
//!
//! - LAMMPS from Debian (`lmp`, `tests/apps/lammps_weak.in` on a line grid `NP x 1 x 1`, a
//!   small, short deck: 3 x 3 x 3 cells per rank, 20 steps, dumps through MPI-IO at 0, 10 and
//!   20; each of its runs costs LAMMPS's start-up and its steps' exchanges, 16 ranks polling
//!   on 2 cores, so 20 steps, not 40: the exchanges and the three dumps the model reads are the
//!   same calls)
//!   under Open MPI's defaults. With two ranks on the line LAMMPS exchanges atoms once (both
//!   neighbours are one rank), with more twice: 2 x 1 has fewer calls than 2 x 2, which no
//!   rank function holds, and extrap refuses 2 x 1-4 naming the scale and the one to trace in
//!   its place (2 x 5). From 2 x 2-5 and 2-5 x 2 (2 x 2 traced once for both) it extrapolates
//!   to 16 ranks within `--tolerance 10%` of the real run, with `--approx-unfit` (the dump's
//!   text lengths are summaries): the dump's offsets are `end of file (+ exscan(count))`, and
//!   the size `MPI_File_set_size` gives the file before each dump (and OMPIO's `ftruncate`
//!   inside it) is the end the dump's writes reach, the same model (`rsd::layout`), where a
//!   fit of the size over n was 14.7% short at the step-0 dump.
//!
//! Open MPI's default OMPIO under HDF5 and the IOR-like app are in `extrap_runvalues` and
//! `scripts/bench-nodes.sh`.

use crate::common;
use common::nodes::{Grow, Program, extrapolates_as_run, refused};
use std::path::PathBuf;

const ROMIO: &[&str] = &["--mca", "io", "romio321"];

/// The target's shape in each direction (the inputs' ranks per node differ in the first).
fn shape(grow: Grow) -> &'static [&'static str] {
    match grow {
        Grow::RanksPerNode => &["--ranks-per-node", "8"],
        Grow::Nodes => &[],
    }
}

/// The input scales of each direction.
fn scales(grow: Grow) -> [u32; 4] {
    match grow {
        Grow::RanksPerNode => [1, 2, 3, 4],
        Grow::Nodes => [2, 3, 4, 5],
    }
}

fn ior_romio() -> Program<'static> {
    const ARGS: &[&str] = &[
        "-a", "mpiio", "-c", "-t", "4096", "-b", "8192", "-s", "2", "-o", "DATA/f",
    ];
    Program {
        mpirun: ROMIO,
        ..Program::app("ior_like", ARGS)
    }
}

/// The IOR-like app's collective writes: derived as ROMIO's independent accesses.
fn ior_collective_under_romio(grow: Grow) {
    let said = extrapolates_as_run(&ior_romio(), grow, scales(grow), 8, shape(grow), &[]);
    assert!(
        said.contains("derived by the model of ROMIO 3.2.1: the accesses do not interleave"),
        "{said}"
    );
}

#[test]
fn ior_collective_under_romio_to_more_ranks_per_node() {
    ior_collective_under_romio(Grow::RanksPerNode);
}

#[test]
fn ior_collective_under_romio_to_more_nodes() {
    ior_collective_under_romio(Grow::Nodes);
}

/// The same inputs (2, 3, 4, 5 nodes x 2) to targets of 32 ranks per node: the derivation
/// that works the nested calls out at a few ranks of each rank interval (every rank writes on
/// its own: from 1,024 ranks on) gives every rank the calls the per-rank one gives it, at 64,
/// 1,024 and 4,096 ranks; at 2^20 ranks (32,768 nodes) the calls are still derived, not
/// fitted, within twice the largest input's bytes.
#[test]
fn ior_collective_under_romio_at_32_ranks_per_node() {
    use extrap::diff::{DiffOptions, diff};
    use extrap::{Derivation, Input, Request, TargetShape};
    let p = ior_romio();
    let paths: Vec<_> = scales(Grow::Nodes)
        .iter()
        .map(|&k| common::nodes::trace(&p, Grow::Nodes, k))
        .collect();
    let ins: Vec<Input> = (paths.iter())
        .map(|f| Input {
            name: f.display().to_string(),
            file: rsd::TraceFile::read(f).unwrap(),
        })
        .collect();
    let with = |t: u32, how: Derivation| {
        let req = Request::new(t)
            .shape(Some(TargetShape::RanksPerNode(32)))
            .derivation(how);
        extrap::run(&req, &ins).unwrap_or_else(|e| panic!("{how:?} at {t}: {e}"))
    };
    for t in [64, 1024, 4096] {
        let comp = with(t, Derivation::Compressed);
        let full = with(t, Derivation::PerRank);
        assert!(
            comp.explain
                .iter()
                .any(|e| e.model.contains("in compressed form")),
            "at {t}: {:?}",
            comp.explain.first()
        );
        let r = diff(&comp.file, &full.file, &DiffOptions::default());
        assert!(r.identical, "at {t}: {:?}", r.differences);
    }
    let x = with(1 << 20, Derivation::Auto);
    assert!(
        x.explain
            .iter()
            .any(|e| e.model.contains("in compressed form")),
        "{:?}",
        x.explain.first()
    );
    let notes = &x.file.header.notes;
    assert!(
        !notes
            .iter()
            .any(|n| n.starts_with(extrap::FITTED_NOT_DERIVED)),
        "{notes:?}"
    );
    let largest = paths.iter().map(|f| f.metadata().unwrap().len()).max();
    let dir = common::scratch();
    let size = x.file.write(&dir.path().join("x.iotrex")).unwrap();
    assert!(
        size <= 2 * largest.unwrap(),
        "{size} B, inputs up to {largest:?} B"
    );
}

/// HDF5's interleaved collective writes: ROMIO's two-phase aggregators, one per node of the
/// target, `aggregators` as `extrap --explain` names them.
fn hdf5_under_romio(grow: Grow, aggregators: &str) {
    let p = Program {
        mpirun: ROMIO,
        ..Program::app("h5_coll", &["DATA/ckpt.h5", "-s", "2", "-i"])
    };
    let said = extrapolates_as_run(&p, grow, scales(grow), 8, shape(grow), &[]);
    let want = format!(
        "ROMIO 3.2.1's two-phase collective buffering: {aggregators} at 16 ranks from \
         cb_config_list *:1 (the first rank of each node)"
    );
    assert!(said.contains(&want), "{want}:\n{said}");
}

#[test]
fn hdf5_under_romio_to_more_ranks_per_node() {
    hdf5_under_romio(Grow::RanksPerNode, "2 aggregators (ranks 0-8:8)");
}

#[test]
fn hdf5_under_romio_to_more_nodes() {
    hdf5_under_romio(Grow::Nodes, "8 aggregators (ranks 0-14:2)");
}

/// PnetCDF's collective calls under OMPIO, derived at the target.
fn pnetcdf(grow: Grow) {
    let p = Program {
        trace: &["--pnetcdf"],
        ..Program::app("pnc_more", &["DATA/t.nc", "-k", "4096", "-s", "3"])
    };
    let said = extrapolates_as_run(&p, grow, scales(grow), 8, shape(grow), &[]);
    assert!(
        said.contains("derived by the model of Open MPI 4.1's OMPIO"),
        "{said}"
    );
}

#[test]
fn pnetcdf_to_more_ranks_per_node() {
    pnetcdf(Grow::RanksPerNode);
}

#[test]
fn pnetcdf_to_more_nodes() {
    pnetcdf(Grow::Nodes);
}

/// LAMMPS on the line grid `NP x 1 x 1` (the deck's `px py pz`), the small deck; fails where
/// `lmp` is missing (scripts/install-deps.sh installs it).
fn lammps() -> Program<'static> {
    const ARGS: &[&str] = &[
        "-in",
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/apps/lammps_weak.in"),
        "-var",
        "d",
        "DATA",
        "-var",
        "px",
        "NP",
        "-var",
        "py",
        "1",
        "-var",
        "pz",
        "1",
        "-var",
        "c",
        "3",
        "-var",
        "steps",
        "20",
        "-var",
        "every",
        "10",
        "-log",
        "none",
        "-screen",
        "none",
    ];
    let found = std::process::Command::new("lmp").arg("-h").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "lmp is not installed (scripts/install-deps.sh installs Debian's lammps)"
    );
    Program {
        name: "lammps",
        bin: PathBuf::from("lmp"),
        args: ARGS,
        mpirun: &[],
        trace: &[],
    }
}

#[test]
fn lammps_from_two_ranks_on_a_line_is_refused_naming_the_scale_to_trace() {
    let p = lammps();
    let inputs: Vec<PathBuf> = [1, 2, 3, 4]
        .map(|k| common::nodes::trace(&p, Grow::RanksPerNode, k))
        .into();
    let scratch = common::scratch();
    let out = scratch.path().join("lammps.2x8.iotrex");
    let o = common::extrap(
        &inputs,
        16,
        &out,
        &["--ranks-per-node", "8", "--approx-unfit"],
    );
    let said = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(!out.exists(), "nothing is written on a refusal");
    // The exchange's second MPI_Sendrecv is where 2 ranks end their first exchange early.
    assert!(
        said.contains("4, 6 and 8 ranks agree with each other; 2 ranks but differ")
            && said.contains("MPI_Sendrecv"),
        "{said}"
    );
    assert!(
        said.contains(
            "2 ranks, the smallest, took another path than the larger scales (a program that \
             calls differently with few ranks: with two ranks on a line both neighbours are \
             one rank): trace 2 x 5 in their place"
        ),
        "{said}"
    );
}

/// LAMMPS from 2 x 2-5 (more ranks per node) or 2-5 x 2 (more nodes) to 16 ranks, within 10%
/// of the real run, with no difference beyond it.
fn lammps_to_sixteen_ranks(grow: Grow) {
    let p = lammps();
    let mut x = shape(grow).to_vec();
    x.push("--approx-unfit");
    let said = extrapolates_as_run(&p, grow, [2, 3, 4, 5], 8, &x, &["--tolerance", "10%"]);
    assert!(said.contains("MPI_File_set_size"), "{said}");
}

#[test]
fn lammps_to_more_ranks_per_node() {
    lammps_to_sixteen_ranks(Grow::RanksPerNode);
}

#[test]
fn lammps_to_more_nodes() {
    lammps_to_sixteen_ranks(Grow::Nodes);
}

/// HDF5's read-back of the neighbour's part under OMPIO, 2 x 1-4 -> 2 x 8: the 2-rank input's
/// neighbour start, one line there, is held out of the fit and reproduced.
#[test]
fn hdf5_readback_under_ompio_to_more_ranks_per_node() {
    let grow = Grow::RanksPerNode;
    let p = Program::app("h5_coll", &["DATA/ckpt.h5", "-s", "2", "-R"]);
    let said = extrapolates_as_run(&p, grow, scales(grow), 8, shape(grow), &[]);
    assert!(
        said.contains(
            "at 2 ranks, where the rank groups take another form, reproduced rank by rank"
        ),
        "{said}"
    );
}

/// PnetCDF with a file smaller than its header read at 2 ranks: refused from 2 x 1-4, naming
/// the scale; from 2 x 2-5, as the refusal says, identical at 2 x 8.
#[test]
fn pnetcdf_small_file_to_more_ranks_per_node() {
    let grow = Grow::RanksPerNode;
    let p = Program {
        trace: &["--pnetcdf"],
        ..Program::app("pnc_more", &["DATA/t.nc", "-k", "2048", "-s", "3"])
    };
    let said = refused(&p, grow, [1, 2, 3, 4], 8, shape(grow));
    for want in [
        "at 2 ranks this value takes another form than at 4, 6 and 8 ranks",
        "min(request, file size)",
        "trace scales above 2 ranks instead of it (for example add 10 ranks and leave out 2)",
    ] {
        assert!(said.contains(want), "{want}:\n{said}");
    }
    let said = extrapolates_as_run(&p, grow, [2, 3, 4, 5], 8, shape(grow), &[]);
    assert!(
        said.contains("derived by the model of Open MPI 4.1's OMPIO"),
        "{said}"
    );
}
