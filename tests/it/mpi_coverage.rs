//! Which MPI functions the tracer records, derived from the standard's function list as the
//! installed MPI library declares it (every function prototype of its `mpi.h`), not from a list
//! kept by hand: each declared function is either recorded (the tracer exports a hook for it)
//! or in exactly one of the categories below, each with the reason it is not recorded. A
//! function a newer MPI adds, or a hook that disappears, fails this test until it is placed.
//!
//! The communication chapters (point-to-point, collectives, communicator, group and topology
//! creation) and MPI-IO data access have no category: all of them must be recorded.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// Functions not recorded, by reason. A pattern ending in `*` is a prefix.
const NOT_RECORDED: &[(&str, &[&str])] = &[
    (
        "local: queries and handle bookkeeping that neither communicate nor touch a file",
        &[
            "MPI_Comm_compare",
            "MPI_Comm_group",
            "MPI_Comm_get_name",
            "MPI_Comm_set_name",
            "MPI_Comm_test_inter",
            "MPI_Comm_remote_size",
            "MPI_Comm_remote_group",
            "MPI_Comm_get_info",
            "MPI_Comm_set_info",
            "MPI_Group_*",
            "MPI_Cart_coords",
            "MPI_Cart_map",
            "MPI_Cartdim_get",
            "MPI_Graph_get",
            "MPI_Graph_map",
            "MPI_Graph_neighbors",
            "MPI_Graph_neighbors_count",
            "MPI_Graphdims_get",
            "MPI_Dist_graph_neighbors",
            "MPI_Dist_graph_neighbors_count",
            "MPI_Topo_test",
            "MPI_Type_size",
            "MPI_Type_size_x",
            "MPI_Type_get_*",
            "MPI_Type_set_name",
            "MPI_Type_match_size",
            "MPI_Type_extent",
            "MPI_Type_lb",
            "MPI_Type_ub",
            "MPI_Type_create_f90_*",
            "MPI_Get_count",
            "MPI_Get_elements",
            "MPI_Get_elements_x",
            "MPI_Get_address",
            "MPI_Address",
            "MPI_Get_version",
            "MPI_Get_library_version",
            "MPI_Status_*",
            "MPI_Test_cancelled",
            "MPI_Request_get_status",
            "MPI_Wtime",
            "MPI_Wtick",
            "MPI_Initialized",
            "MPI_Query_thread",
            "MPI_Is_thread_main",
            "MPI_Pcontrol",
            "MPI_Op_create",
            "MPI_Op_free",
            "MPI_Op_commutative",
            "MPI_Reduce_local",
            "MPI_Pack*",
            "MPI_Unpack*",
            "MPI_Alloc_mem",
            "MPI_Free_mem",
            "MPI_File_get_*",
            // MPI_Abort is hooked (the aborting rank writes its calls before the library
            // aborts: tracer/src/mpi/abort.rs), so it counts as exported here.
        ],
    ),
    (
        "attributes, info objects and error handling",
        &[
            "MPI_Attr_*",
            "MPI_Keyval_*",
            "MPI_Comm_create_keyval",
            "MPI_Comm_free_keyval",
            "MPI_Comm_get_attr",
            "MPI_Comm_set_attr",
            "MPI_Comm_delete_attr",
            "MPI_Type_create_keyval",
            "MPI_Type_free_keyval",
            "MPI_Type_set_attr",
            "MPI_Type_delete_attr",
            "MPI_Info_*",
            "MPI_Errhandler_*",
            "MPI_Comm_create_errhandler",
            "MPI_Comm_get_errhandler",
            "MPI_Comm_call_errhandler",
            "MPI_File_create_errhandler",
            "MPI_File_set_errhandler",
            "MPI_File_call_errhandler",
            "MPI_Error_*",
            "MPI_Add_error_*",
            // The predefined attribute copy and delete callbacks, which mpi.h declares as
            // functions: MPI calls them, the application passes them.
            "MPI_C_MPI_*",
        ],
    ),
    ("the tool information interface", &["MPI_T_*"]),
    (
        "dynamic processes: not modelled (a trace covers the ranks of one MPI_COMM_WORLD)",
        &[
            "MPI_Comm_spawn*",
            "MPI_Comm_accept",
            "MPI_Comm_connect",
            "MPI_Comm_disconnect",
            "MPI_Comm_join",
            "MPI_Comm_get_parent",
            "MPI_Open_port",
            "MPI_Close_port",
            "MPI_Publish_name",
            "MPI_Unpublish_name",
            "MPI_Lookup_name",
        ],
    ),
    (
        "one-sided communication (RMA): not recorded yet; a code using it replays without it",
        &[
            "MPI_Win_*",
            "MPI_Put",
            "MPI_Get",
            "MPI_Accumulate",
            "MPI_Get_accumulate",
            "MPI_Fetch_and_op",
            "MPI_Compare_and_swap",
            "MPI_Rput",
            "MPI_Rget",
            "MPI_Raccumulate",
            "MPI_Rget_accumulate",
        ],
    ),
    (
        "generalized requests: completed by the application's own code, nothing to replay",
        &["MPI_Grequest_*"],
    ),
    (
        "MPI-IO calls not recorded yet: nonblocking collectives at explicit offsets, \
         preallocation, atomicity, hints and data representations",
        &[
            "MPI_File_iread_at_all",
            "MPI_File_iwrite_at_all",
            "MPI_File_preallocate",
            "MPI_File_set_atomicity",
            "MPI_File_set_info",
            "MPI_Register_datarep",
        ],
    ),
    (
        "datatype constructors not recorded (a view over one replays as bytes from its \
         displacement, and says so): the MPI-1 names removed in MPI-3.0",
        &["MPI_Type_hvector", "MPI_Type_hindexed", "MPI_Type_struct"],
    ),
];

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Every function `mpi.h` of the installed MPI declares, or None when there is no `mpicc`.
fn declared() -> Option<BTreeSet<String>> {
    let out = Command::new("mpicc")
        .arg("--showme:incdirs")
        .output()
        .ok()?;
    let dirs = String::from_utf8_lossy(&out.stdout).to_string();
    let header = dirs
        .split_whitespace()
        .map(|d| PathBuf::from(d).join("mpi.h"))
        .find(|p| p.exists())?;
    let text = std::fs::read_to_string(header).ok()?;
    let mut names = BTreeSet::new();
    // Prototypes: `OMPI_DECLSPEC  int MPI_Send(const void *buf, ...` (one per line start).
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("OMPI_DECLSPEC") else {
            continue;
        };
        let Some(at) = rest.find("MPI_") else {
            continue;
        };
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if rest[at + name.len()..].trim_start().starts_with('(') {
            names.insert(name);
        }
    }
    Some(names)
}

/// The MPI functions the tracer exports a hook for.
fn recorded() -> BTreeSet<String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(common::tracer_lib())
        .output()
        .expect("nm runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| s.starts_with("MPI_"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_declared_mpi_function_is_recorded_or_placed() {
    let Some(declared) = declared() else {
        eprintln!("skipped: no mpicc or mpi.h");
        return;
    };
    assert!(
        declared.len() > 300,
        "read {} functions from mpi.h",
        declared.len()
    );
    assert!(declared.contains("MPI_Send") && declared.contains("MPI_File_write_at_all"));
    let recorded = recorded();
    let mut unplaced = Vec::new();
    for f in &declared {
        let places: Vec<&str> = NOT_RECORDED
            .iter()
            .filter(|(_, pats)| pats.iter().any(|p| matches(p, f)))
            .map(|(why, _)| *why)
            .collect();
        let named = NOT_RECORDED
            .iter()
            .any(|(_, pats)| pats.contains(&f.as_str()));
        match (recorded.contains(f), places.len()) {
            // A prefix may cover a recorded function (MPI_File_get_size among MPI_File_get_*).
            (true, _) if !named => {}
            (false, 1) => {}
            (true, _) => panic!("{f} is recorded but listed as not recorded: {places:?}"),
            (false, 0) => unplaced.push(f.clone()),
            (false, _) => panic!("{f} is in more than one category: {places:?}"),
        }
    }
    assert!(
        unplaced.is_empty(),
        "{} MPI functions are neither recorded nor placed in a category: {}",
        unplaced.len(),
        unplaced.join(" ")
    );
    // No stale entries: every exact name listed is a function of this MPI.
    for (why, pats) in NOT_RECORDED {
        for p in pats.iter().filter(|p| !p.ends_with('*')) {
            assert!(
                declared.contains(*p),
                "{p} ({why}) is not declared by mpi.h"
            );
        }
    }
    let n_not: usize = declared.iter().filter(|f| !recorded.contains(*f)).count();
    eprintln!(
        "mpi.h declares {} functions: {} recorded, {} not (by category above)",
        declared.len(),
        declared.len() - n_not,
        n_not
    );
}
