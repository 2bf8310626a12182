//! The CPUs a run had, recorded by the tracer (`Header::node_cores`), and what extrap makes of
//! them: on real `mpirun` runs, the trace holds the CPUs this process may run on
//! (the job's ranks inherit its affinity under Open MPI's defaults), the ranks per core follow,
//! and `iotrex extrap` chooses the wall time's parts among the time-sharing families exactly
//! when every input and the target have more ranks than cores; carried to 2^20 ranks, every
//! predicted time stays finite and non-negative.

use crate::common;
use common::*;

/// The CPUs this test process may run on (`sched_getaffinity`, which the ranks inherit).
fn cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

#[test]
fn traces_record_their_cores_and_extrap_says_whether_ranks_shared_them() {
    let dir = scratch();
    let data = dir.path().join("d");
    std::fs::create_dir_all(&data).unwrap();
    let args = ["{d}", "4", "8192", "1", "65536"];
    let mut inputs = Vec::new();
    for np in [4u32, 6, 8] {
        let out = dir.path().join(format!("{np}.iotrex"));
        let tf = trace_in(&out, &data, np, "io_sample", &args, None);
        let h = &tf.header;
        let total: u32 = h.node_cores.iter().map(|(c, n)| c * n).sum();
        assert_eq!(
            total,
            cpus(),
            "{np} ranks: node_cores {:?} (one node)",
            h.node_cores
        );
        let rpc = h.ranks_per_core().expect("ranks per core recorded");
        assert!(
            (rpc - f64::from(np) / f64::from(cpus())).abs() < 1e-9,
            "{np} ranks on {} CPUs: {rpc}",
            cpus()
        );
        // `show` says it.
        let shown = text(&iotrex(&["show", out.to_str().unwrap()]));
        assert!(
            shown.contains(&format!("cores      1 x {} CPUs", cpus())),
            "{shown}"
        );
        inputs.push(out);
    }
    let oversubscribed = cpus() < 4;
    let out = dir.path().join("16.iotrex");
    let (all, _) = extrap_explained("io_sample", &inputs, 16, &out);
    let cores = all
        .lines()
        .find(|l| l.starts_with("run  cores:"))
        .unwrap_or_else(|| panic!("no cores line in:\n{all}"));
    if oversubscribed {
        assert!(cores.contains(": oversubscribed"), "{cores}");
        // Every part of the wall time is one of the time-sharing families.
        let allowed = [
            "(constant,",
            "(inverse,",
            "(inverse+constant,",
            "(linear,",
            "(inverse+constant+linear,",
        ];
        for l in all.lines().filter(|l| l.starts_with("run  time per rank:")) {
            assert!(allowed.iter().any(|a| l.contains(a)), "{l}");
        }
    } else if cpus() >= 8 {
        assert!(cores.contains("not oversubscribed"), "{cores}");
    }
    // Carried to 2^20 ranks, every predicted time (the wall time and each part, their
    // intervals) is finite, non-negative, the interval around its value, and grown at most
    // linearly from the largest input (twice the largest wall time times 2^20/8: no part of
    // a rank's time exceeds the run's wall time).
    let wmax = inputs
        .iter()
        .map(|p| rsd::TraceFile::read(p).unwrap().header.wall_ns as f64)
        .fold(0.0f64, f64::max);
    let bound = 2.0 * wmax * f64::from(1u32 << 20) / 8.0;
    let far = dir.path().join("1M.iotrex");
    extrap_explained("io_sample", &inputs, 1 << 20, &far);
    let p = rsd::TraceFile::read(&far)
        .unwrap()
        .header
        .prediction
        .expect("a prediction");
    for (what, x) in std::iter::once(("wall".to_string(), &p.wall))
        .chain(p.parts.iter().map(|(k, x)| (k.name().to_string(), x)))
    {
        let (v, lo, hi) = (x.value, x.interval.lo, x.interval.hi);
        assert!(
            v.is_finite() && hi.is_finite() && lo >= 0.0 && lo <= v && v <= hi,
            "{what}: {v} [{lo}, {hi}]"
        );
        // The wall time is the sum of five parts, each under the bound.
        assert!(hi <= 5.0 * bound, "{what}: {v} [{lo}, {hi}] beyond {bound}");
    }
}
