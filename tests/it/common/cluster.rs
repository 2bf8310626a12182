//! The emulated cluster (`scripts/cluster.sh`) for tests: [`cluster`] brings two nodes up
//! once per test binary ([`cluster_of`] as many as a test needs), under a lock so that parallel tests share them, and gives the launch
//! lines of Open MPI and MPICH through them. A cluster this process brought up is taken down
//! when it exits; one that was up before (`scripts/cluster.sh up 2` by hand, or for several
//! test binaries run at once) is left as it was.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

/// Nodes the tests use.
pub const NODES: u32 = 2;

/// One launch at a time: each starts a daemon or proxy per node on the machine's 2 cores.
static LAUNCH: Mutex<()> = Mutex::new(());

/// The cluster, up.
pub struct Cluster {
    /// Nodes in it (node1..nodeN).
    pub nodes: u32,
}

/// `scripts/cluster.sh`.
pub fn script() -> PathBuf {
    super::build::workspace().join("scripts/cluster.sh")
}

/// `scripts/cluster-agent.sh`, the launchers' ssh.
pub fn agent() -> PathBuf {
    super::build::workspace().join("scripts/cluster-agent.sh")
}

/// Runs `scripts/cluster.sh args`, returning its output whatever its status.
pub fn run_script(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .expect("run bash scripts/cluster.sh")
}

/// `scripts/cluster.sh args`'s stdout; panics with its stderr if it failed.
fn script_ok(args: &[&str]) -> String {
    let out = run_script(args);
    assert!(
        out.status.success(),
        "scripts/cluster.sh {args:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

extern "C" fn take_down() {
    // At exit nothing can be reported to the harness, and a panic here would abort: a
    // failure is said on stderr.
    match Command::new("bash").arg(script()).arg("down").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => eprintln!(
            "scripts/cluster.sh down failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => eprintln!("cannot run scripts/cluster.sh down: {e}"),
    }
}

/// The cluster of [`NODES`] nodes, brought up on first use. Panics when it cannot be (not
/// root, no namespaces): the message is the script's, naming what is missing.
pub fn cluster() -> &'static Cluster {
    static C: OnceLock<Cluster> = OnceLock::new();
    C.get_or_init(|| cluster_of(NODES))
}

/// A cluster of at least `nodes` nodes (node1..nodeN up), brought up where fewer are: a second
/// `up` keeps the nodes that exist. Taken down at exit if this process brought any up.
pub fn cluster_of(nodes: u32) -> Cluster {
    // The most nodes known up, and whether this process took down registered.
    static UP: Mutex<(u32, bool)> = Mutex::new((0, false));
    let mut up = UP.lock().unwrap_or_else(|p| p.into_inner());
    if up.0 < nodes {
        let was_up = run_script(&["hosts", "1", &nodes.to_string()])
            .status
            .success();
        if !was_up {
            script_ok(&["up", &nodes.to_string()]);
            if !up.1 {
                // SAFETY: `take_down` is an `extern "C" fn()` that touches no state of this
                // process but runs a child; atexit only stores the pointer.
                let rc = unsafe { libc::atexit(take_down) };
                assert_eq!(rc, 0, "atexit");
                up.1 = true;
            }
        }
        up.0 = nodes;
    }
    Cluster { nodes }
}

impl Cluster {
    /// Open MPI's launch line through the first `nodes` nodes with `ppn` slots each, up to
    /// the program: `mpirun --mca plm_rsh_agent AGENT --hostfile H --mca oob_tcp_if_include
    /// NET --mca btl_tcp_if_include NET -np N`.
    pub fn openmpi(&self, nodes: u32, ppn: u32) -> Vec<OsString> {
        let args = script_ok(&["mpirun-args", &ppn.to_string(), &nodes.to_string()]);
        let mut v: Vec<OsString> = vec!["mpirun".into()];
        v.extend(args.split_whitespace().map(OsString::from));
        // Shared memory on a node, TCP between them: what a real cluster without a fabric
        // uses.
        v.extend(["--mca", "btl", "self,vader,tcp"].map(OsString::from));
        v.extend(["-np".into(), (nodes * ppn).to_string().into()]);
        v
    }

    /// MPICH's: `mpiexec.hydra -launcher ssh -launcher-exec AGENT -hosts node1:P,... -np N`.
    pub fn mpich(&self, nodes: u32, ppn: u32) -> Vec<OsString> {
        let hosts = script_ok(&["hosts", &ppn.to_string(), &nodes.to_string()]);
        let mut v: Vec<OsString> = vec![super::mpich::hydra().into()];
        v.extend(["-launcher", "ssh", "-launcher-exec"].map(OsString::from));
        v.push(agent().into());
        v.extend(["-hosts".into(), hosts.into()]);
        v.extend(["-np".into(), (nodes * ppn).to_string().into()]);
        v
    }

    /// Runs `argv` inside node1's namespaces, where the launcher must run so that the
    /// daemons it starts on the other nodes can connect back to it over the bridge; under
    /// `timeout` (120 s), one launch at a time, with MPI's root permissions and `env` added.
    pub fn run(&self, argv: &[OsString], env: &[(&str, String)]) -> Output {
        let _g = LAUNCH.lock().unwrap_or_else(|p| p.into_inner());
        Command::new("timeout")
            .args(["-k", "5", "120", "bash"])
            .arg(script())
            .args(["exec", "node1"])
            .args(argv)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .env("LD_PRELOAD", "")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run timeout/cluster.sh exec")
    }

    /// [`Cluster::run`] with MPICH's libraries on the path, for [`Cluster::mpich`]'s lines.
    pub fn run_mpich(&self, argv: &[OsString]) -> Output {
        self.run(
            argv,
            &[("LD_LIBRARY_PATH", super::mpich::ld_library_path())],
        )
    }
}
