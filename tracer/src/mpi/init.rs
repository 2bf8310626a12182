//! `MPI_Init` and `MPI_Finalize`: the tracer's own set-up and the finalize-time merge.

use super::*;

// ---------------------------------------------------------------------------------------------
// Init and finalize.

fn after_init(r: c_int) {
    if r != MPI_SUCCESS || !check_mpi() {
        return;
    }
    let Some(g) = globals() else { return };
    // The job has ranks: its launcher and helpers leave the trace to them (`crate::job`).
    crate::job::mark_rank();
    let rank = comm_rank(g.world as H) as u32;
    // The tracer's own communicator, so the finalize-time merge never matches an application
    // message.
    if let Some(dup) = real!("PMPI_Comm_dup", unsafe extern "C" fn(H, *mut H) -> c_int) {
        let mut c: H = std::ptr::null_mut();
        // SAFETY: MPI is initialised, `world` is MPI_COMM_WORLD and `c` a valid out-parameter.
        if unsafe { dup(g.world as H, &mut c) } == MPI_SUCCESS {
            TRACER_COMM.store(hv(c), Ordering::SeqCst);
            // Every rank starts its clock together: ranks leave MPI_Init milliseconds apart
            // on a crowded node, and the first collective of the application absorbed that
            // skew into the run's wall time, which a replay (started by a barrier) never has.
            // Which run this is, for the per-rank files (collective, so here).
            crate::finalize::agree_run_id(hv(c), g.byte, rank);
            if let Some(bar) = real!("PMPI_Barrier", unsafe extern "C" fn(H) -> c_int) {
                // SAFETY: `c` is the communicator just duplicated, valid on every rank.
                unsafe { bar(c) };
            }
        }
    }
    // The library's I/O configuration: collective over the tracer's communicator.
    let tracer_comm = TRACER_COMM.load(Ordering::SeqCst);
    let config = if tracer_comm != 0 {
        super::config::at_init(tracer_comm as H, i64::from(rank), comm_size(g.world as H))
    } else {
        None
    };
    with_state(|st| {
        if rank == 0
            && let Some(at) = config
        {
            st.mpi_config = Some(at.config);
            st.node_cores = at.cores;
            st.node_layout = at.nodes;
            st.shared_machines = at.machines;
        }
        if st.rank != rank {
            // Only possible when the launcher's environment did not name the rank; the events
            // recorded so far carry the wrong rank, so say so.
            if st.comp.events() > 0 {
                st.incomplete = true;
                st.notes.push(format!(
                    "rank {rank}: {} calls before MPI_Init were recorded as rank {}",
                    st.comp.events(),
                    st.rank
                ));
            }
            st.rank = rank;
            st.comp = rsd::Compressor::new(rank);
            st.comp.coalesce_drains(st.cfg.drains);
            if let Some(raw) = &mut st.raw {
                raw.clear();
            }
        }
        // From here on a name made with rank 0's pid is the run's pid on every rank.
        if let Some(ids) = &mut st.cfg.run_ids {
            ids.root_pid = crate::finalize::root_pid();
            st.comp.set_run_ids(ids.clone());
        }
        st.comms.fixed(g.world, rsd::mpi::COMM_WORLD);
        if g.self_ != 0 {
            st.comms.fixed(g.self_, rsd::mpi::COMM_SELF);
        }
        let mpich_abi = abi::flavour() == Flavour::Mpich;
        let predefined = |names: &[&'static str], mpich: &[usize], ids: &mut crate::state::Ids| {
            for (i, name) in names.iter().enumerate() {
                let a = if mpich_abi {
                    mpich[i]
                } else {
                    lookup_global(name)
                };
                if a != 0 {
                    ids.fixed(a, i as i64);
                }
            }
        };
        predefined(TYPES, abi::mpich::TYPES, &mut st.types);
        predefined(OPS, abi::mpich::OPS, &mut st.ops);
        predefined(ERRHANDLERS, abi::mpich::ERRHANDLERS, &mut st.errhandlers);
        st.mpi_initialized = true;
        if rank == 0 {
            st.unrecorded_mpi = crate::unseen::unrecorded_mpi();
        }
        st.start_ns = now_ns();
    });
}

pub(crate) fn init_common(op_call: impl FnOnce() -> c_int) -> c_int {
    // Everything MPI_Init does (sockets, shared memory, the runtime's files and threads) runs
    // in BUSY mode and is not recorded.
    let g = Enter::new(BUSY);
    let t0 = now_ns();
    let r = op_call();
    after_init(r);
    drop(g);
    if RECORDING.load(Ordering::Relaxed) && crate::guard::mode() == IDLE {
        let _g = Enter::new(BUSY);
        let sig = signature();
        // The tracer's own start-up (a collective Comm_dup, symbol lookups, the first stack
        // unwind) ends here and counts as part of MPI_Init: charged to the gap before the
        // application's first call, it made every rank wait it out in a replay (~0.3 ms at one
        // rank, milliseconds on an oversubscribed node). The run's wall time starts here too.
        let t1 = now_ns();
        with_state(|st| st.start_ns = t1);
        record_parent(
            Call {
                op: Op::Init,
                sig,
                t0,
                t1,
            },
            Vec::new(),
            |_| Some((args::init(), None)),
        );
    }
    r
}

/// Wrapper: `MPI_Init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let f = pmpi!(
        "PMPI_Init",
        unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int
    );
    // SAFETY: forwarding the application's arguments.
    init_common(|| unsafe { f(argc, argv) })
}

/// Wrapper: `MPI_Init_thread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let f = pmpi!(
        "PMPI_Init_thread",
        unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int
    );
    // SAFETY: forwarding the application's arguments.
    init_common(|| unsafe { f(argc, argv, required, provided) })
}

/// Wrapper: `MPI_Finalize`. Merges every rank's trace and writes it, before `PMPI_Finalize`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    let f = pmpi!("PMPI_Finalize", unsafe extern "C" fn() -> c_int);
    // SAFETY: no arguments; the application asked for it.
    finalize_common(|| unsafe { f() })
}

/// Records `MPI_Finalize`, merges and writes the trace, then runs `finalize` (the C or the
/// Fortran binding's real finalize).
pub(crate) fn finalize_common(finalize: impl FnOnce() -> c_int) -> c_int {
    if crate::guard::mode() == IDLE && RECORDING.load(Ordering::Relaxed) {
        let _g = Enter::new(BUSY);
        let sig = signature();
        let t = now_ns();
        record_parent(
            Call {
                op: Op::Finalize,
                sig,
                t0: t,
                t1: t,
            },
            Vec::new(),
            |_| Some((args::finalize(), None)),
        );
    }
    let comm = TRACER_COMM.swap(0, Ordering::SeqCst);
    {
        let _g = Enter::new(BUSY);
        if comm != 0 && !WRONG_MPI.load(Ordering::Relaxed) {
            crate::finalize::merge_and_write(comm as H);
        }
    }
    let _g = Enter::new(BUSY);
    finalize()
}
