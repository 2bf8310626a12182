//! The trace's NetCDF vocabulary: the library's own values that NetCDF events keep in their
//! integer parameters (`rsd::op`'s `nc_*` ops), as `netcdf.h` and `netcdf_par.h` define them
//! (unchanged since NetCDF 4.0; checked against 4.9.0). The tracer records them as passed;
//! every consumer that names one reads it here.

/// `nc_type` ids of the atomic types (`mem_type` and `xtype` parameters). PnetCDF's
/// `pnetcdf.h` defines the same ids for the types it has (all but `NC_STRING`), so its layer
/// reads them here too.
pub mod types {
    /// `NC_NAT`: not a type (a PnetCDF flexible call's derived MPI datatype).
    pub const NAT: i64 = 0;
    /// `NC_BYTE`: `signed char` (`nc_put_vara_schar`).
    pub const BYTE: i64 = 1;
    /// `NC_CHAR`: text (`nc_put_vara_text`).
    pub const CHAR: i64 = 2;
    /// `NC_SHORT`.
    pub const SHORT: i64 = 3;
    /// `NC_INT`.
    pub const INT: i64 = 4;
    /// `NC_FLOAT`.
    pub const FLOAT: i64 = 5;
    /// `NC_DOUBLE`.
    pub const DOUBLE: i64 = 6;
    /// `NC_UBYTE`: `unsigned char` (`nc_put_vara_uchar` and `_ubyte`).
    pub const UBYTE: i64 = 7;
    /// `NC_USHORT`.
    pub const USHORT: i64 = 8;
    /// `NC_UINT`.
    pub const UINT: i64 = 9;
    /// `NC_INT64`: `long long`, and `long` on LP64 (`nc_put_vara_long`).
    pub const INT64: i64 = 10;
    /// `NC_UINT64`.
    pub const UINT64: i64 = 11;
    /// `NC_STRING`: `char *` per element.
    pub const STRING: i64 = 12;

    /// The size in bytes of an element of a fixed-size type `t` in the file (0 for NC_NAT,
    /// `NC_STRING` or an unknown type).
    pub fn size(t: i64) -> i64 {
        match t {
            BYTE | CHAR | UBYTE => 1,
            SHORT | USHORT => 2,
            INT | FLOAT | UINT => 4,
            DOUBLE | INT64 | UINT64 => 8,
            _ => 0,
        }
    }

    /// The `nc_type` a predefined MPI datatype is read or written as (PnetCDF's flexible calls'
    /// `buftype`), by its name in `crate::mpi::DATATYPES`; NC_NAT for any other.
    pub fn of_mpi(name: &str) -> i64 {
        match name {
            "MPI_SIGNED_CHAR" | "MPI_BYTE" => BYTE,
            "MPI_CHAR" => CHAR,
            "MPI_UNSIGNED_CHAR" => UBYTE,
            "MPI_SHORT" => SHORT,
            "MPI_UNSIGNED_SHORT" => USHORT,
            "MPI_INT" => INT,
            "MPI_UNSIGNED" => UINT,
            "MPI_FLOAT" => FLOAT,
            "MPI_DOUBLE" => DOUBLE,
            "MPI_LONG" | "MPI_LONG_LONG_INT" => INT64,
            "MPI_UNSIGNED_LONG_LONG" => UINT64,
            _ => NAT,
        }
    }
}

/// The name and memory type of each member of a typed family (`nc_put_vara_<suffix>`,
/// `nc_put_att_<suffix>`, ...), as the library converts from them: the one table the
/// tracer's hooks are generated from and displays read.
pub const FAMILY: &[(&str, i64)] = &[
    ("text", types::CHAR),
    ("schar", types::BYTE),
    ("uchar", types::UBYTE),
    ("short", types::SHORT),
    ("int", types::INT),
    ("long", types::INT64),
    ("float", types::FLOAT),
    ("double", types::DOUBLE),
    ("ubyte", types::UBYTE),
    ("ushort", types::USHORT),
    ("uint", types::UINT),
    ("longlong", types::INT64),
    ("ulonglong", types::UINT64),
    ("string", types::STRING),
];

/// The C name of an atomic `nc_type` (`NC_INT`), or `None` for a user-defined one.
pub fn type_name(t: i64) -> Option<&'static str> {
    const NAMES: [&str; 12] = [
        "NC_BYTE",
        "NC_CHAR",
        "NC_SHORT",
        "NC_INT",
        "NC_FLOAT",
        "NC_DOUBLE",
        "NC_UBYTE",
        "NC_USHORT",
        "NC_UINT",
        "NC_INT64",
        "NC_UINT64",
        "NC_STRING",
    ];
    usize::try_from(t - 1)
        .ok()
        .and_then(|i| NAMES.get(i).copied())
}

/// `NC_UNLIMITED`: the `length` of an unlimited dimension.
pub const UNLIMITED: i64 = 0;
/// `NC_GLOBAL`: the `varid` of a file's (not a variable's) attribute.
pub const GLOBAL: i64 = -1;
/// `NC_INDEPENDENT` (`nc_var_par_access`'s `xfer`).
pub const INDEPENDENT: i64 = 0;
/// `NC_COLLECTIVE`.
pub const COLLECTIVE: i64 = 1;
/// `NC_CHUNKED` (`nc_def_var_chunking`'s `storage`).
pub const CHUNKED: i64 = 0;
/// `NC_CONTIGUOUS`.
pub const CONTIGUOUS: i64 = 1;
/// `NC_NETCDF4`: the mode bit of a NetCDF-4 (HDF5) file.
pub const NETCDF4: i64 = 0x1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_types_have_names() {
        for (suffix, t) in FAMILY {
            assert!(type_name(*t).is_some(), "{suffix}");
        }
        assert_eq!(type_name(types::INT), Some("NC_INT"));
        assert_eq!(type_name(types::STRING), Some("NC_STRING"));
        assert_eq!(type_name(0), None);
        assert_eq!(type_name(32), None);
    }
}
