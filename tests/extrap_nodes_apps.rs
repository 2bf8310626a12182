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
//! Open MPI's default OMPIO under HDF5 and the IOR-like app are in `extrap_runvalues` and
//! `scripts/bench-nodes.sh` (with LAMMPS).

mod common;
use common::nodes::{Grow, Program, extrapolates_as_run, refused};

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
