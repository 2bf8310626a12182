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
//! - PnetCDF (`pnc_more`, the PnetCDF layer traced) under Open MPI's defaults (OMPIO). With
//!   `-k 4096` the file is larger than PnetCDF's header read (256 KiB) already at 2 ranks;
//!   with less, `ncmpi_open` reads the whole, smaller file at 2 ranks, a size no model of
//!   the scale gives.
//!
//! Open MPI's default OMPIO under HDF5 and the IOR-like app are in `extrap_runvalues` and
//! `scripts/bench-nodes.sh` (with LAMMPS).

mod common;
use common::nodes::{Grow, Program, extrapolates_as_run};

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
