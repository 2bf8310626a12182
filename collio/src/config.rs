//! The library's configuration as the trace records it, read into the models' configurations.
//!
//! The tracer records what steers collective I/O in the header (`rsd::MpiConfig`: the
//! library's version, the node layout, the MPI_T control variables, each file's hints). This
//! module turns it into an [`ompio::Config`] or a [`romio::Config`]: Open MPI 4.1.4's defaults,
//! overridden by every control variable and hint the trace recorded. It is read here, beside
//! the models, so that what a model depends on and how a trace says it stay in one crate.
//!
//! A header without a configuration is not read with the defaults: a trace taken before the
//! tracer recorded it may have run under any setting ([`ConfigError::NotRecorded`]).

use crate::mca;
use crate::ompio;
use crate::romio;
use rsd::format::THREAD_LEVEL;
use rsd::{Header, MpiConfig};

/// The library's configuration a model runs with.
#[derive(Debug, Clone, PartialEq)]
pub enum LibConfig {
    /// Open MPI's OMPIO.
    Ompio(ompio::Config),
    /// ROMIO as Open MPI ships it (`--mca io romio321`).
    Romio(romio::Config),
}

impl LibConfig {
    /// The configuration without what depends on the scale (ROMIO's node of each rank): what
    /// must be the same at every input scale for one model to say what the target does.
    pub fn scale_free(&self) -> LibConfig {
        match self {
            LibConfig::Romio(c) => LibConfig::Romio(romio::Config {
                nodes: Vec::new(),
                ..c.clone()
            }),
            c => c.clone(),
        }
    }
}

/// Why a recorded configuration cannot be read into a model's: each names the setting at
/// fault and its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The header records no configuration (the trace is older than the recording).
    #[error("the trace records no MPI library configuration (traced before iotrex recorded it)")]
    NotRecorded,
    /// The library is not one a model covers.
    #[error(
        "the MPI library {library:?} has no collective-I/O model here (modelled: Open MPI 4.1's \
         OMPIO and ROMIO 3.2.1)"
    )]
    Library {
        /// The library's version string, as recorded.
        library: String,
    },
    /// Open MPI's io component is not one a model covers.
    #[error(
        "Open MPI's io component {io:?} has no collective-I/O model here (modelled: ompio, \
         romio321)"
    )]
    IoComponent {
        /// The `io` control variable's value.
        io: String,
    },
    /// A control variable's value is not of its type.
    #[error("control variable {name} = {value:?} is not {expected}")]
    ControlVariable {
        /// The variable's full name (`io_ompio_bytes_per_agg`).
        name: String,
        /// Its recorded value.
        value: String,
        /// What it must be ("an integer", "a boolean").
        expected: &'static str,
    },
    /// A file's hint value is not of its type.
    #[error("{path}: hint {key} = {value:?} is not {expected}")]
    Hint {
        /// The file.
        path: String,
        /// The hint.
        key: String,
        /// Its recorded value.
        value: String,
        /// What it must be ("an integer", "a number", "a boolean", "a ROMIO switch").
        expected: &'static str,
    },
    /// A file's hint takes a value the model does not cover.
    #[error("{path}: hint {key} = {value:?} is not modelled")]
    UnmodelledHint {
        /// The file.
        path: String,
        /// The hint.
        key: String,
        /// Its recorded value.
        value: String,
    },
    /// ROMIO's aggregators follow the node layout, which the trace gives for another rank
    /// count than the one asked for.
    #[error(
        "ROMIO's aggregators depend on the node layout, which is not known at {np} ranks (the \
         traces ran on {nodes} nodes)"
    )]
    NodeLayoutUnknown {
        /// The rank count asked for.
        np: u32,
        /// The nodes the trace ran on.
        nodes: u64,
    },
    /// ROMIO's aggregators follow which ranks share a node, and the nodes hold ranks that are
    /// not consecutive (the trace records how many ranks each node has, not which).
    #[error(
        "ROMIO's aggregators depend on which ranks share a node, and the trace does not place \
         them (nodes hold non-consecutive ranks)"
    )]
    NodesNotContiguous,
}

/// The hint `key` of file `path` as the trace recorded it (what `MPI_File_get_info` gave,
/// else what the program passed).
pub fn file_hint<'a>(mc: &'a MpiConfig, path: &str, key: &str) -> Option<&'a str> {
    mc.file_hints
        .iter()
        .find(|(p, _)| p == path)
        .and_then(|(_, hints)| hints.iter().find(|(k, _)| k == key))
        .map(|(_, v)| v.as_str())
}

/// The library's configuration for `path` at `np` ranks from a trace header
/// ([`library_config`]), or [`ConfigError::NotRecorded`] when it records none.
pub fn config(h: &Header, path: &str, np: u32) -> Result<LibConfig, ConfigError> {
    let mc = h.mpi_config.as_ref().ok_or(ConfigError::NotRecorded)?;
    library_config(mc, path, np)
}

/// The library's configuration for `path` at `np` ranks: the io component the control
/// variables name (OMPIO by default) and its configuration ([`ompio_config`],
/// [`romio_config`]).
pub fn library_config(mc: &MpiConfig, path: &str, np: u32) -> Result<LibConfig, ConfigError> {
    if !mc.library.contains("Open MPI") {
        return Err(ConfigError::Library {
            library: mc.library.clone(),
        });
    }
    match mc.cvar("io").map(str::trim) {
        None | Some("") | Some("ompio") => ompio_config(mc, path).map(LibConfig::Ompio),
        Some("romio321") => romio_config(mc, path, np).map(LibConfig::Romio),
        Some(io) => Err(ConfigError::IoComponent { io: io.into() }),
    }
}

/// OMPIO's configuration for `path`: Open MPI 4.1.4's defaults, overridden by the recorded
/// control variables (OMPIO's, vulcan's and the posix fbtl's), the file's
/// `collective_buffering` and `cb_nodes` hints, and whether `mpirun` mapped ranks by node.
pub fn ompio_config(mc: &MpiConfig, path: &str) -> Result<ompio::Config, ConfigError> {
    let mut cfg = ompio::Config::default();
    let int = |p: mca::Param| -> Result<Option<i64>, ConfigError> {
        let name = p.full();
        mc.cvar(&name)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| ConfigError::ControlVariable {
                        name: name.clone(),
                        value: v.into(),
                        expected: "an integer",
                    })
            })
            .transpose()
    };
    // Sizes below 0 mean nothing to the library's unsigned arithmetic: 0 stands for them.
    let size = |p: mca::Param| Ok::<_, ConfigError>(int(p)?.map(|v| v.max(0) as u64));
    if let Some(v) = int(mca::NUM_AGGREGATORS)? {
        cfg.num_aggregators = v;
    }
    if let Some(v) = size(mca::BYTES_PER_AGG)? {
        cfg.bytes_per_agg = v;
    }
    if let Some(v) = int(mca::CYCLE_BUFFER_SIZE)? {
        cfg.cycle_buffer_size = v;
    }
    if let Some(v) = int(mca::GROUPING_OPTION)? {
        cfg.grouping_option = v;
    }
    if let Some(v) = int(mca::MAX_AGGREGATORS_RATIO)? {
        cfg.max_aggregators_ratio = v;
    }
    if let Some(v) = int(mca::AGGREGATORS_CUTOFF_THRESHOLD)? {
        cfg.aggregators_cutoff_threshold = v;
    }
    if let Some(v) = int(mca::VULCAN_ASYNC_IO)? {
        cfg.vulcan_async_io = v;
    }
    if let Some(v) = size(mca::FBTL_MAX_BLOCK_SIZE)? {
        cfg.fbtl.max_block_size = v;
    }
    if let Some(v) = size(mca::FBTL_MAX_GAP_SIZE)? {
        cfg.fbtl.max_gap_size = v;
    }
    if let Some(v) = size(mca::FBTL_MAX_TMPBUF_SIZE)? {
        cfg.fbtl.max_tmpbuf_size = v;
    }
    // MPI_T gives booleans as `true`/`false`.
    let boolean = |p: mca::Param| -> Result<Option<bool>, ConfigError> {
        let name = p.full();
        mc.cvar(&name)
            .map(|v| match v.trim() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(ConfigError::ControlVariable {
                    name: name.clone(),
                    value: v.into(),
                    expected: "a boolean",
                }),
            })
            .transpose()
    };
    if let Some(v) = boolean(mca::FBTL_READ_DATASIEVING)? {
        cfg.fbtl.read_datasieving = v;
    }
    if let Some(v) = boolean(mca::FBTL_WRITE_DATASIEVING)? {
        cfg.fbtl.write_datasieving = v;
    }
    cfg.fbtl.thread_multiple = thread_multiple(mc)?;
    cfg.map_by_node = !mc.nodes_contiguous && mc.nodes() > 1;
    let hint = Hints { mc, path };
    match hint.get("collective_buffering").map(str::trim) {
        None | Some("true") => {}
        Some("false") => cfg.collective_buffering = false,
        Some(v) => return Err(hint.bad("collective_buffering", v, "a boolean")),
    }
    if let Some(v) = hint.get("cb_nodes") {
        cfg.cb_nodes = Some(
            v.trim()
                .parse()
                .map_err(|_| hint.bad("cb_nodes", v, "an integer"))?,
        );
    }
    Ok(cfg)
}

/// Whether the library provided `MPI_THREAD_MULTIPLE` (OMPIO's fbtl then does no write
/// sieving), as the tracer records it ([`THREAD_LEVEL`]). A trace from before it was recorded
/// is taken as single-threaded, as the model did before.
fn thread_multiple(mc: &MpiConfig) -> Result<bool, ConfigError> {
    match mc.cvar(THREAD_LEVEL).map(str::trim) {
        None | Some("MPI_THREAD_SINGLE" | "MPI_THREAD_FUNNELED" | "MPI_THREAD_SERIALIZED") => {
            Ok(false)
        }
        Some("MPI_THREAD_MULTIPLE") => Ok(true),
        Some(v) => Err(ConfigError::ControlVariable {
            name: THREAD_LEVEL.into(),
            value: v.into(),
            expected: "an MPI thread level (MPI_THREAD_SINGLE to MPI_THREAD_MULTIPLE)",
        }),
    }
}

/// ROMIO's configuration for `path` at `np` ranks from the file's hints (Open MPI 4.1.4
/// reports none of its own: the defaults stand unless the program passed some) and the node
/// layout, which gives ROMIO's default aggregators (the first rank of each node).
pub fn romio_config(mc: &MpiConfig, path: &str, np: u32) -> Result<romio::Config, ConfigError> {
    let hint = Hints { mc, path };
    let mut cfg = romio::Config::default();
    let num = |key: &str| -> Result<Option<u64>, ConfigError> {
        hint.get(key)
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| hint.bad(key, v, "a number"))
            })
            .transpose()
    };
    let switch = |key: &str| -> Result<Option<romio::Switch>, ConfigError> {
        hint.get(key)
            .map(|v| match v.trim() {
                "enable" => Ok(romio::Switch::Enable),
                "disable" => Ok(romio::Switch::Disable),
                "automatic" => Ok(romio::Switch::Automatic),
                _ => Err(hint.bad(key, v, "a ROMIO switch")),
            })
            .transpose()
    };
    if let Some(v) = num("cb_buffer_size")? {
        cfg.cb_buffer_size = v;
    }
    if let Some(v) = num("cb_nodes")? {
        cfg.cb_nodes = Some(v as u32);
    }
    if let Some(v) = num("ind_wr_buffer_size")? {
        cfg.ind_wr_buffer_size = v;
    }
    if let Some(v) = num("ind_rd_buffer_size")? {
        cfg.ind_rd_buffer_size = v;
    }
    if let Some(v) = num("romio_min_fdomain_size")? {
        cfg.min_fdomain_size = v;
    }
    if let Some(v) = switch("romio_cb_write")? {
        cfg.cb_write = v;
    }
    if let Some(v) = switch("romio_cb_read")? {
        cfg.cb_read = v;
    }
    if let Some(v) = switch("romio_ds_write")? {
        cfg.ds_write = v;
    }
    if let Some(v) = switch("romio_ds_read")? {
        cfg.ds_read = v;
    }
    match hint.get("cb_config_list").map(str::trim) {
        None | Some("*:1") => {}
        Some("*:*") => cfg.cb_config_list = romio::ConfigList::Any,
        Some(v) => {
            return Err(ConfigError::UnmodelledHint {
                path: path.into(),
                key: "cb_config_list".into(),
                value: v.into(),
            });
        }
    }
    // The aggregators are the first rank of each node: the layout matters on several nodes.
    if mc.nodes() > 1 {
        if mc.ranks() != u64::from(np) {
            return Err(ConfigError::NodeLayoutUnknown {
                np,
                nodes: mc.nodes(),
            });
        }
        if !mc.nodes_contiguous {
            return Err(ConfigError::NodesNotContiguous);
        }
        cfg.nodes = mc
            .node_ranks
            .iter()
            .flat_map(|&(per, count)| std::iter::repeat_n(per, count as usize))
            .enumerate()
            .flat_map(|(node, per)| std::iter::repeat_n(node as u64, per as usize))
            .collect();
    }
    Ok(cfg)
}

/// One file's recorded hints, and the error naming one of them.
struct Hints<'a> {
    mc: &'a MpiConfig,
    path: &'a str,
}

impl<'a> Hints<'a> {
    fn get(&self, key: &str) -> Option<&'a str> {
        file_hint(self.mc, self.path, key)
    }

    fn bad(&self, key: &str, value: &str, expected: &'static str) -> ConfigError {
        ConfigError::Hint {
            path: self.path.into(),
            key: key.into(),
            value: value.into(),
            expected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorded configuration of Open MPI 4.1.4 on `nodes` (ranks per node, node count),
    /// with these control variables and the hints of file `/f`.
    fn recorded(
        nodes: Vec<(u32, u32)>,
        cvars: &[(&str, &str)],
        hints: &[(&str, &str)],
    ) -> MpiConfig {
        let pairs = |kv: &[(&str, &str)]| {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        MpiConfig {
            library: "Open MPI v4.1.4, package: Debian OpenMPI".into(),
            node_ranks: nodes,
            nodes_contiguous: true,
            cvars: pairs(cvars),
            file_hints: vec![("/f".into(), pairs(hints))],
        }
    }

    fn header(cvars: &[(&str, &str)], hints: &[(&str, &str)]) -> Header {
        let mut h = Header::new(16);
        h.mpi_config = Some(recorded(vec![(16, 1)], cvars, hints));
        h
    }

    #[test]
    fn nothing_recorded_but_the_library_is_ompio_under_its_defaults() {
        let h = header(&[("io", "")], &[]);
        assert_eq!(
            config(&h, "/f", 16).unwrap(),
            LibConfig::Ompio(ompio::Config::default())
        );
    }

    #[test]
    fn recorded_control_variables_and_hints_override_the_defaults() {
        let h = header(
            &[
                ("io", ""),
                ("io_ompio_bytes_per_agg", "1048576"),
                ("fbtl_posix_write_datasieving", "false"),
            ],
            &[("cb_nodes", "3")],
        );
        let LibConfig::Ompio(c) = config(&h, "/f", 16).unwrap() else {
            panic!("OMPIO expected");
        };
        assert_eq!(c.bytes_per_agg, 1 << 20);
        assert!(!c.fbtl.write_datasieving && c.fbtl.read_datasieving);
        assert_eq!(c.cb_nodes, Some(3));
        assert_eq!(
            c.max_aggregators_ratio,
            ompio::Config::default().max_aggregators_ratio
        );
        // Another file has no hint.
        let LibConfig::Ompio(c) = config(&h, "/g", 16).unwrap() else {
            panic!("OMPIO expected");
        };
        assert_eq!(c.cb_nodes, None);
    }

    #[test]
    fn the_recorded_thread_level_decides_write_sieving() {
        let fbtl = |level: Option<&str>| {
            let mut cvars = vec![("io", "")];
            cvars.extend(level.map(|l| (THREAD_LEVEL, l)));
            ompio_config(&recorded(vec![(16, 1)], &cvars, &[]), "/f").map(|c| c.fbtl)
        };
        // mpi4py's default: no write sieving.
        assert!(fbtl(Some("MPI_THREAD_MULTIPLE")).unwrap().thread_multiple);
        assert!(!fbtl(Some("MPI_THREAD_SERIALIZED")).unwrap().thread_multiple);
        assert!(!fbtl(Some("MPI_THREAD_SINGLE")).unwrap().thread_multiple);
        // Not recorded (an older trace): as before.
        assert!(!fbtl(None).unwrap().thread_multiple);
        let e = fbtl(Some("3")).unwrap_err();
        assert!(e.to_string().contains(THREAD_LEVEL), "{e}");
    }

    #[test]
    fn ranks_placed_round_robin_over_nodes_map_ompio_by_node() {
        let mut mc = recorded(vec![(4, 2)], &[], &[]);
        assert!(!ompio_config(&mc, "/f").unwrap().map_by_node);
        mc.nodes_contiguous = false;
        assert!(ompio_config(&mc, "/f").unwrap().map_by_node);
    }

    #[test]
    fn romio_is_chosen_by_the_io_component_and_reads_its_hints() {
        let h = header(
            &[("io", "romio321")],
            &[("cb_buffer_size", "4096"), ("romio_cb_write", "enable")],
        );
        let LibConfig::Romio(c) = config(&h, "/f", 16).unwrap() else {
            panic!("ROMIO expected");
        };
        assert_eq!(c.cb_buffer_size, 4096);
        assert_eq!(c.cb_write, romio::Switch::Enable);
        assert!(c.nodes.is_empty());
    }

    #[test]
    fn romio_takes_cb_nodes_and_cb_config_list_and_places_nodes() {
        let io = [("io", "romio321")];
        let mc = recorded(
            vec![(3, 1), (2, 1)],
            &io,
            &[("cb_nodes", "2"), ("cb_config_list", "*:*")],
        );
        let LibConfig::Romio(c) = library_config(&mc, "/f", 5).unwrap() else {
            panic!("ROMIO expected");
        };
        assert_eq!(c.cb_nodes, Some(2));
        assert_eq!(c.cb_config_list, romio::ConfigList::Any);
        assert_eq!(c.nodes, [0, 0, 0, 1, 1]);
        // One aggregator per node is the default list.
        let mc = recorded(vec![(16, 1)], &io, &[("cb_config_list", "*:1")]);
        let c = romio_config(&mc, "/f", 16).unwrap();
        assert_eq!(c.cb_config_list, romio::Config::default().cb_config_list);
        // The node of each rank is known only at the scale the trace ran at, and only where
        // nodes hold consecutive ranks.
        let mut mc = recorded(vec![(2, 2)], &io, &[]);
        assert_eq!(
            romio_config(&mc, "/f", 8).unwrap_err(),
            ConfigError::NodeLayoutUnknown { np: 8, nodes: 2 }
        );
        mc.nodes_contiguous = false;
        assert_eq!(
            romio_config(&mc, "/f", 4).unwrap_err(),
            ConfigError::NodesNotContiguous
        );
    }

    #[test]
    fn a_scale_free_configuration_forgets_romios_nodes_only() {
        let mc = recorded(vec![(2, 2)], &[("io", "romio321")], &[]);
        let c = library_config(&mc, "/f", 4).unwrap();
        let LibConfig::Romio(free) = c.scale_free() else {
            panic!("ROMIO expected");
        };
        assert!(free.nodes.is_empty());
        let ompio = library_config(&recorded(vec![(2, 2)], &[], &[]), "/f", 4).unwrap();
        assert_eq!(ompio.scale_free(), ompio);
    }

    #[test]
    fn a_bad_value_names_the_file_the_setting_and_the_value() {
        let mc = recorded(vec![(16, 1)], &[], &[("cb_nodes", "many")]);
        let e = library_config(&mc, "/f", 16).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"/f: hint cb_nodes = "many" is not an integer"#
        );
        let mc = recorded(vec![(16, 1)], &[("io", "romio321")], &[("cb_nodes", "-1")]);
        let e = library_config(&mc, "/f", 16).unwrap_err();
        assert_eq!(e.to_string(), r#"/f: hint cb_nodes = "-1" is not a number"#);
        let mc = recorded(
            vec![(16, 1)],
            &[("io", "romio321")],
            &[("romio_cb_write", "on")],
        );
        assert!(matches!(
            library_config(&mc, "/f", 16).unwrap_err(),
            ConfigError::Hint { key, expected: "a ROMIO switch", .. } if key == "romio_cb_write"
        ));
        let mc = recorded(
            vec![(16, 1)],
            &[("io", "romio321")],
            &[("cb_config_list", "node1:2")],
        );
        assert_eq!(
            library_config(&mc, "/f", 16).unwrap_err().to_string(),
            r#"/f: hint cb_config_list = "node1:2" is not modelled"#
        );
        let mc = recorded(vec![(16, 1)], &[], &[("collective_buffering", "yes")]);
        assert!(
            library_config(&mc, "/f", 16)
                .unwrap_err()
                .to_string()
                .contains("is not a boolean")
        );
    }

    #[test]
    fn no_configuration_or_another_library_is_not_modelled() {
        let mut h = header(&[], &[]);
        h.mpi_config = None;
        assert_eq!(config(&h, "/f", 16), Err(ConfigError::NotRecorded));
        let mut h = header(&[], &[]);
        h.mpi_config.as_mut().unwrap().library = "MPICH Version: 4.1".into();
        assert!(
            config(&h, "/f", 16)
                .unwrap_err()
                .to_string()
                .contains("MPICH")
        );
        let h = header(&[("io", "lustre")], &[]);
        assert!(matches!(
            config(&h, "/f", 16),
            Err(ConfigError::IoComponent { io }) if io == "lustre"
        ));
        let h = header(&[("io_ompio_bytes_per_agg", "lots")], &[]);
        assert_eq!(
            config(&h, "/f", 16).unwrap_err().to_string(),
            r#"control variable io_ompio_bytes_per_agg = "lots" is not an integer"#
        );
    }
}
