//! The workspace's integration tests, one binary (one link of the workspace, where a binary per
//! file linked it 58 times): each module is one capability's real runs (real `mpirun`, real
//! files, real devices), sharing `common`'s helpers, among them the rank budget that lets
//! small runs of different modules overlap.

mod common;

mod approx;
mod atomic_outputs;
mod callsites_cache;
mod callsites_rebuild;
mod cli;
mod cli_approx;
mod cli_codes;
mod cli_extrap;
mod cli_newuser;
mod cli_scripting;
mod codes_real;
mod export_otf2;
mod export_parquet;
mod extrap_collective;
mod extrap_consistent;
mod extrap_derive_scale;
mod extrap_digits;
mod extrap_grid;
mod extrap_hdf5;
mod extrap_hints;
mod extrap_nodes;
mod extrap_nodes_apps;
mod extrap_nodes_mpich;
mod extrap_real;
mod extrap_runvalues;
mod faults;
mod layers_default;
mod mpi_coverage;
mod prefixsum;
mod real_lammps;
mod real_meep;
mod real_python;
mod replay_compute_choice;
mod replay_confine;
mod replay_nodes;
mod replay_pacing;
mod report;
mod report_screens;
mod resolved_offsets;
mod rig_cluster;
mod rig_storage;
mod sensitivity;
mod stats_stack;
mod timing_cores;
mod trace_cmd;
mod trace_file_calls;
mod trace_hdf5;
mod trace_hdf5_wheel;
mod trace_jobs;
mod trace_netcdf;
mod trace_pnetcdf;
mod trace_processes;
mod tracer_apps;
mod tracer_comms;
mod tracer_darray;
mod tracer_fortran;
mod tracer_invariants;
mod tracer_mpi_results;
mod tracer_mpich;
mod tracer_threads;
mod tracer_unrecorded;
