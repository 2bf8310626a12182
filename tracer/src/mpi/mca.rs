//! Open MPI's MCA variables as a rank set them, read without MPI_T.
//!
//! Why not MPI_T: Open MPI 4.1's `MPI_T_init_thread` calls `ompi_info_register_framework_params`
//! (`ompi/mpi/tool/init_thread.c`), which opens every component of every framework (a `dlopen`
//! of each MCA component): about 210 ms on this machine, paid by rank 0 at the first
//! `MPI_File_open` and by every other rank waiting for it at the next collective. The model
//! (`collio::config`) starts from Open MPI 4.1.4's defaults and applies what the trace
//! records, so the trace needs only the variables someone *set*: those are found where Open MPI
//! itself finds them, for a few file reads and environment look-ups.
//!
//! Where Open MPI 4.1 takes a variable's value (`opal/mca/base/mca_base_var.c`,
//! `var_set_initial`), first found wins:
//! 1. the override file `<sysconfdir>/openmpi-mca-params-override.conf` (it wins even over the
//!    environment);
//! 2. the environment, `OMPI_MCA_<name>`: what `mpirun --mca name value` and `-x` give the
//!    ranks;
//! 3. the tune files (`mca_base_envar_file_prefix`, `mpirun --tune`), leftmost first;
//! 4. the parameter files, `mca_base_param_files` (by default
//!    `$HOME/.openmpi/mca-params.conf,<sysconfdir>/openmpi-mca-params.conf`), leftmost first;
//! 5. the default, which is not recorded.
//!
//! Within one file the last line of a name wins (`mca_base_parse_paramfile.c`, `save_value`).
//! A name is the variable's full name (`io_ompio_bytes_per_agg`) or its long name, with the
//! project in front (`ompi_io_ompio_bytes_per_agg`); both are looked for. Relative tune file
//! names are looked up in `mca_base_param_file_path` (by default
//! `<sysconfdir>/amca-param-sets:<cwd>`). `<sysconfdir>` is the loaded library's own
//! (`opal_install_dirs`, which Open MPI documents as public once `opal_init` ran).
//!
//! AMCA files (`mpirun --am`, `mca_base_param_file_prefix`) are not read: Open MPI 4.1.4's
//! ranks do not apply them (`resolve_relative_paths` joins the AMCA list to the parameter
//! files with `:` and `read_files` splits that list on `,`). Checked against MPI_T: a variable
//! set only in an `--am` file keeps its default, with or without a parameter-file list; the
//! environment, parameter files and `--tune` give what MPI_T gives.
//!
//! Values are recorded as MPI_T would read them where the text alone says it: integers with
//! Open MPI's `k`/`m`/`g` suffixes (powers of 1024) or in hex as decimal numbers, boolean words
//! (`yes`, `enabled`, `t`...) as `true`/`false` (`mca_base_var_enum_bool_vfs`). What the text
//! does not say (an enumerated integer given by its name) is recorded as given. Not seen:
//! deprecated synonyms under other names, and a variable set by the program itself through
//! `MPI_T_cvar_write` (it would need MPI_T).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment's prefix of an MCA variable.
const ENV_PREFIX: &str = "OMPI_MCA_";

/// Projects a variable's long name may start with.
const PROJECTS: &[&str] = &["ompi_", "opal_", "orte_"];

/// Where a rank's values come from, highest precedence first (see the module's doc).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Sources {
    /// The override file's (name, value) lines, in file order.
    pub overrides: Vec<(String, String)>,
    /// `OMPI_MCA_*` variables of the environment, the prefix removed.
    pub env: Vec<(String, String)>,
    /// Each file's lines, in file order; the files in precedence order (tune files, then
    /// parameter files, each list leftmost first).
    pub files: Vec<Vec<(String, String)>>,
}

/// The variables `wanted` (given a full name) that some source sets, by full name, with the
/// value the highest source gives, normalized (see the module's doc).
pub(crate) fn resolve(s: &Sources, wanted: impl Fn(&str) -> bool) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    // Lowest precedence first, so each higher source overwrites; within a file the last
    // line of a name is the one that counts, which plain overwriting gives too.
    let lists = s.files.iter().rev().chain([&s.env, &s.overrides]);
    for list in lists {
        for (name, value) in list {
            if let Some(full) = full_name(name, &wanted) {
                out.insert(full, normalize(value));
            }
        }
    }
    out
}

/// `name`'s full name when it, or it without its project, is `wanted`.
fn full_name(name: &str, wanted: &impl Fn(&str) -> bool) -> Option<String> {
    let name = name.trim();
    if wanted(name) {
        return Some(name.to_string());
    }
    PROJECTS
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .filter(|rest| wanted(rest))
        .map(str::to_string)
}

/// `value` as MPI_T would give it, where the text says so: `32m` is 33554432, `0x10` is 16,
/// `yes` is `true`; anything else as given, trimmed.
pub(crate) fn normalize(value: &str) -> String {
    let v = value.trim();
    match v {
        "true" | "t" | "enabled" | "yes" | "y" => return "true".into(),
        "false" | "f" | "disabled" | "no" | "n" => return "false".into(),
        _ => {}
    }
    let (digits, shift) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 10),
        Some(b'm' | b'M') => (&v[..v.len() - 1], 20),
        Some(b'g' | b'G') => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    let (neg, digits) = match digits.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, digits),
    };
    let parsed = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => digits.parse::<i64>().ok(),
    };
    match parsed.and_then(|n| n.checked_mul(1 << shift)) {
        // A plain decimal stays as written (a leading `+` or zeros aside, which MPI_T drops).
        Some(n) => (if neg { -n } else { n }).to_string(),
        None => v.to_string(),
    }
}

/// The (name, value) lines of an MCA parameter file: `name = value`, `#` comments, and the
/// tune files' `--mca name value` (or `-mca`); other lines (`-x VAR`) are not variables.
pub(crate) fn parse_file(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(rest) = line
            .strip_prefix("--mca ")
            .or_else(|| line.strip_prefix("-mca "))
        {
            let mut it = rest.trim().splitn(2, char::is_whitespace);
            if let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((k.to_string(), v.trim().to_string()));
            }
        } else if let Some((k, v)) = line.split_once('=')
            && !k.trim().is_empty()
            && !k.trim().starts_with('-')
        {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

/// The loaded Open MPI's `sysconfdir` (`opal_install_dirs.sysconfdir`, the structure's eighth
/// pointer); `/etc/openmpi` (Debian's) when the library does not say.
fn sysconfdir() -> PathBuf {
    let dirs = crate::real::lookup_global("opal_install_dirs\0");
    if dirs != 0 {
        // SAFETY: `opal_install_dirs` is a structure of `char *` (prefix, exec_prefix, bindir,
        // sbindir, libexecdir, datarootdir, datadir, sysconfdir, ...), filled by opal_init,
        // which MPI_Init ran; a pointer is null or a NUL-terminated path.
        let p = unsafe { *(dirs as *const *const libc::c_char).add(7) };
        if !p.is_null() {
            // SAFETY: as above.
            let s = unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy();
            if s.starts_with('/') {
                return PathBuf::from(s.as_ref());
            }
        }
    }
    PathBuf::from("/etc/openmpi")
}

/// The environment variable `OMPI_MCA_<name>`, or of its synonym `OMPI_MCA_<alt>`.
fn env_var(name: &str, alt: &str) -> Option<String> {
    std::env::var(format!("{ENV_PREFIX}{name}"))
        .or_else(|_| std::env::var(format!("{ENV_PREFIX}{alt}")))
        .ok()
}

/// The files named by the comma-separated `prefix` (the tune files), each absolute or found
/// in a directory of `search` (`:`-separated).
fn prefix_files(prefix: &str, search: &str) -> Vec<PathBuf> {
    prefix
        .split(',')
        .filter(|f| !f.is_empty())
        .filter_map(|f| {
            let f = Path::new(f);
            if f.is_absolute() {
                return Some(f.to_path_buf());
            }
            search
                .split(':')
                .map(|d| Path::new(d).join(f))
                .find(|p| p.is_file())
        })
        .collect()
}

/// This process's sources, read now: the environment and the files it names.
pub(crate) fn sources() -> Sources {
    let etc = sysconfdir();
    let read = |p: &Path| parse_file(&std::fs::read_to_string(p).unwrap_or_default());
    let home = std::env::var("HOME").unwrap_or_default();
    let param_files = env_var("mca_base_param_files", "mca_param_files").unwrap_or_else(|| {
        format!(
            "{home}/.openmpi/mca-params.conf,{}",
            etc.join("openmpi-mca-params.conf").display()
        )
    });
    let cwd = std::env::current_dir().unwrap_or_default();
    let search = env_var("mca_base_param_file_path", "mca_param_file_path").unwrap_or_else(|| {
        format!(
            "{}:{}",
            etc.join("amca-param-sets").display(),
            cwd.display()
        )
    });
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(p) = env_var("mca_base_envar_file_prefix", "mca_base_envar_file_prefix") {
        files.extend(prefix_files(&p, &search));
    }
    files.extend(param_files.split(',').map(PathBuf::from));
    let overrides = env_var(
        "mca_base_override_param_file",
        "mca_base_override_param_file",
    )
    .map(PathBuf::from)
    .unwrap_or_else(|| etc.join("openmpi-mca-params-override.conf"));
    Sources {
        overrides: read(&overrides),
        env: std::env::vars()
            .filter_map(|(k, v)| Some((k.strip_prefix(ENV_PREFIX)?.to_string(), v)))
            .collect(),
        files: files.iter().map(|f| read(f)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn io(name: &str) -> bool {
        name == "io" || name.starts_with("io_ompio_")
    }

    #[test]
    fn the_override_file_beats_the_environment_which_beats_the_files() {
        let s = Sources {
            overrides: pairs(&[("io_ompio_cycle_buffer_size", "3")]),
            env: pairs(&[
                ("io_ompio_cycle_buffer_size", "5"),
                ("io_ompio_bytes_per_agg", "1m"),
                ("btl", "self"),
            ]),
            files: vec![
                pairs(&[("io_ompio_bytes_per_agg", "4096"), ("io", "romio321")]),
                pairs(&[("io", "ompio"), ("io_ompio_grouping_option", "2")]),
            ],
        };
        let got = resolve(&s, io);
        let want: BTreeMap<String, String> = pairs(&[
            ("io", "romio321"),
            ("io_ompio_bytes_per_agg", "1048576"),
            ("io_ompio_grouping_option", "2"),
            ("io_ompio_cycle_buffer_size", "3"),
        ])
        .into_iter()
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn within_a_file_the_last_line_wins_and_long_names_count() {
        let s = Sources {
            files: vec![parse_file(
                "# a comment\nio_ompio_bytes_per_agg = 1k\n\n\
                 ompi_io_ompio_bytes_per_agg=2k # trailing\n--mca io romio321\n-x FOO\n",
            )],
            ..Sources::default()
        };
        let got = resolve(&s, io);
        assert_eq!(
            got.get("io_ompio_bytes_per_agg").map(String::as_str),
            Some("2048")
        );
        assert_eq!(got.get("io").map(String::as_str), Some("romio321"));
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn values_read_as_mpi_t_gives_them() {
        assert_eq!(normalize(" 32m "), "33554432");
        assert_eq!(normalize("2G"), "2147483648");
        assert_eq!(normalize("0x10"), "16");
        assert_eq!(normalize("-1"), "-1");
        assert_eq!(normalize("yes"), "true");
        assert_eq!(normalize("disabled"), "false");
        assert_eq!(normalize("vulcan"), "vulcan");
        assert_eq!(normalize("^romio321"), "^romio321");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn tune_files_are_found_absolute_or_in_the_search_path() {
        let dir = std::env::temp_dir().join(format!("iotrex-tune-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("set"), "io = romio321\n").unwrap();
        let search = format!("/nonexistent:{}", dir.display());
        assert_eq!(prefix_files("set", &search), vec![dir.join("set")]);
        assert_eq!(
            prefix_files("/abs/x,missing", &search),
            vec![PathBuf::from("/abs/x")]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
