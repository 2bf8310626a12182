//! The models against real traces: every collective call of each mini-app, traced at many
//! scales under Open MPI's defaults (OMPIO) and under ROMIO (`--mca io romio321`, nothing
//! else set), must get exactly the nested POSIX calls the library made (op, offset, iovec
//! count, bytes returned, fcntl commands, in order, on every rank).
//!
//! Environment: `COLLIO_SCALES` (e.g. `1-64` or `3,16,17`) replaces the OMPIO scales, and the
//! ROMIO ones too with `COLLIO_ROMIO_ALL_SCALES=1`; `COLLIO_PROGRAMS` (comma-separated name
//! prefixes) keeps only some programs.

mod common;

use std::path::Path;

/// The scales checked: 1, 2, 3, 4, 8, 9, 16, 17 and 32 ranks, around every change of the
/// library's choices (individual up to 2 ranks, a second aggregator at 16, a rest group from
/// 17), an odd count past a power of two below them (9) and one well past them.
/// `COLLIO_SCALES=1-64` (ranges and commas) checks others: the whole sweep from 1 to 64 takes
/// about 15 minutes here. 24 and 64 were in the default set too, and then 5 and 12; they add
/// no choice of the library's (5 is another odd count below 8, as 3; 12 another even count
/// between 8 and 16), and CI's time is shared by every test (the extrapolation tests still
/// diff 64-rank runs).
fn scales() -> Vec<u32> {
    match std::env::var("COLLIO_SCALES") {
        Ok(s) => s
            .split(',')
            .flat_map(|part| match part.split_once('-') {
                Some((a, b)) => (a.parse::<u32>().unwrap()..=b.parse().unwrap()).collect(),
                None => vec![part.parse().unwrap()],
            })
            .collect(),
        Err(_) => vec![1, 2, 3, 4, 8, 9, 16, 17, 32],
    }
}

/// One mini-app: its name, its arguments given the scratch directory, and the hints its
/// arguments pass to `MPI_File_open` (the model is run with them).
struct Program {
    app: &'static str,
    args: fn(&Path) -> Vec<String>,
    hints: &'static [(&'static str, &'static str)],
}

/// `cb_nodes` 2 and 3 with `cb_config_list` `*:*`: under ROMIO the default `*:1` caps the
/// aggregators at one per node, one here.
const CB2: &[(&str, &str)] = &[("cb_config_list", "*:*"), ("cb_nodes", "2")];
const CB3: &[(&str, &str)] = &[("cb_config_list", "*:*"), ("cb_nodes", "3")];

/// `-H KEY=VALUE` per hint, as ior_like and ckpt_strong take them.
fn hint_args(hints: &[(&str, &str)]) -> Vec<String> {
    hints
        .iter()
        .flat_map(|(k, v)| ["-H".to_string(), format!("{k}={v}")])
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn programs() -> Vec<(&'static str, Program)> {
    vec![
        (
            "ior segmented",
            Program {
                app: "ior_like",
                args: |d| {
                    let o = d.join("seg.dat").display().to_string();
                    let mut a = s(&[
                        "-a", "mpiio", "-c", "-t", "65536", "-b", "131072", "-s", "2", "-R", "-o",
                    ]);
                    a.push(o);
                    a
                },
                hints: &[],
            },
        ),
        (
            "ior strided",
            Program {
                app: "ior_like",
                args: |d| {
                    let o = d.join("str.dat").display().to_string();
                    let mut a = s(&[
                        "-a", "mpiio", "-c", "-L", "strided", "-t", "4096", "-b", "8192", "-s",
                        "2", "-R", "-o",
                    ]);
                    a.push(o);
                    a
                },
                hints: &[],
            },
        ),
        (
            // Three checkpoints in one run: 1000003 B (one cycle), 40 MiB (more than 2
            // cycles of half bytes_per_agg for one aggregator: asynchronous aio writes), and
            // 1000003 B at 1 MiB where odd ranks move no data.
            "checkpoints",
            Program {
                app: "ckpt_strong",
                args: |d| {
                    let f = |name: &str| d.join(name).display().to_string();
                    let mut a = vec![f("ck.dat")];
                    a.extend(s(&["1000003", "-R", "+"]));
                    a.push(f("ckbig.dat"));
                    a.extend(s(&["41943049", "-R", "+"]));
                    a.push(f("cku.dat"));
                    a.extend(s(&["1000003", "-R", "-u", "-b", "1048576"]));
                    a
                },
                hints: &[],
            },
        ),
        (
            "views",
            Program {
                app: "view_app",
                args: |d| vec![d.display().to_string()],
                hints: &[],
            },
        ),
        (
            // darray filetypes (BLOCK, CYCLIC(k), NONE; C and Fortran order; 2-D and 3-D),
            // one collective write and one collective read of each of five files: the
            // aggregators' accesses come from the file table's placement of the views.
            "darray",
            Program {
                app: "darray",
                args: |d| vec![d.display().to_string()],
                hints: &[],
            },
        ),
        (
            "ior strided cb_nodes 2",
            Program {
                app: "ior_like",
                args: |d| {
                    let o = d.join("str.dat").display().to_string();
                    let mut a = s(&[
                        "-a", "mpiio", "-c", "-L", "strided", "-t", "4096", "-b", "8192", "-s",
                        "2", "-R", "-o",
                    ]);
                    a.push(o);
                    a.extend(hint_args(CB2));
                    a
                },
                hints: CB2,
            },
        ),
        (
            "checkpoint cb_nodes 3",
            Program {
                app: "ckpt_strong",
                args: |d| {
                    let mut a = vec![d.join("ck.dat").display().to_string()];
                    a.extend(s(&["1000003", "-R"]));
                    a.extend(hint_args(CB3));
                    a
                },
                hints: CB3,
            },
        ),
        (
            // Parallel HDF5 under its defaults: two steps of a strong-scaled 1-D dataset
            // (odd ranks select nothing) and a weak-scaled 2-D one (a block of rows per
            // rank), each written with one collective H5Dwrite through a derived filetype,
            // then read back collectively from a reopened file. HDF5's metadata goes
            // through independent calls, which are not modelled and not checked.
            "hdf5 blocks",
            Program {
                app: "h5_coll",
                args: |d| {
                    let mut a = vec![d.join("blocks.h5").display().to_string()];
                    a.extend(s(&["-s", "2", "-z", "-R"]));
                    a
                },
                hints: &[],
            },
        ),
        (
            // The same with the rows of the 2-D dataset interleaved over the ranks (rank,
            // rank+n, ...: a strided hyperslab, a vector filetype).
            "hdf5 interleaved",
            Program {
                app: "h5_coll",
                args: |d| {
                    let mut a = vec![d.join("rows.h5").display().to_string()];
                    a.extend(s(&["-s", "2", "-i", "-R"]));
                    a
                },
                hints: &[],
            },
        ),
    ]
}

#[test]
fn ompio_model_reproduces_the_nested_calls_at_every_scale() {
    sweep(common::Lib::Ompio, scales());
}

/// ROMIO is not Open MPI's default: it is run only to show its model, at fewer scales.
#[test]
fn romio_model_reproduces_the_nested_calls() {
    let scales = match std::env::var("COLLIO_ROMIO_ALL_SCALES") {
        Ok(_) => scales(),
        Err(_) => vec![1, 2, 3, 4, 16, 32],
    };
    sweep(common::Lib::Romio, scales);
}

fn sweep(lib: common::Lib, scales: Vec<u32>) {
    let only = std::env::var("COLLIO_PROGRAMS").ok();
    let mut failures = Vec::new();
    for (name, p) in programs() {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|x| name.starts_with(x)))
        {
            continue;
        }
        let bin = common::app(p.app);
        for np in scales.iter().copied() {
            // ROMIO 3.2.1 (Open MPI's romio321) aborts in ADIOI_Optimize_flattened ("free():
            // invalid pointer"), untraced as traced, at a rank whose darray filetype selects
            // nothing: darray.c's 2-D Fortran-order CYCLIC(2) x BLOCK(4) view at rank 7 of 16
            // (a 1-D empty darray view does not crash it), which happens from 16 ranks.
            if lib == common::Lib::Romio && p.app == "darray" && np >= 16 {
                continue;
            }
            let dir = common::scratch();
            let trace = dir.path().join("t.iotrex");
            let data = dir.path().join("data");
            std::fs::create_dir(&data).unwrap();
            let tf = common::traced(np, &bin, &(p.args)(&data), &trace, lib);
            match common::check(&tf, np, lib, p.hints) {
                Ok(c) => {
                    assert!(c.calls > 0, "{name} at {np}: no collective call traced");
                    assert!(c.nested > 0, "{name} at {np}: no nested call traced");
                    eprintln!(
                        "{lib:?} {name} at {np} ranks: {} collective calls, {} nested calls identical; aggregators {:?}, async {}",
                        c.calls,
                        c.nested,
                        {
                            let mut a = c.aggregators.clone();
                            a.dedup();
                            a
                        },
                        c.async_calls
                    );
                }
                Err(e) => {
                    eprintln!("{lib:?} {name} at {np} ranks: DIFFERS: {e}");
                    failures.push(format!("{name} at {np} ranks: {e}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
