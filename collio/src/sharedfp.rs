//! Open MPI 4.1's shared-file-pointer components, as far as their files show in a trace.
//!
//! OMPIO opens a shared file pointer's backing store in `MPI_File_open`. On one node the
//! `sm` component takes it (a shared-memory segment); across nodes `sm` declines and
//! `lockedfile` (priority 10) does: `ompi/mca/sharedfp/lockedfile/sharedfp_lockedfile_file_open.c`
//! (v4.1.x) names the lock file
//!
//! ```c
//! snprintf(lockedfilename, filenamelen, "%s-%u-%d%s", filename, masterjobid, int_pid, ".lock");
//! ```
//!
//! where `filename` is the name given to `MPI_File_open`, `masterjobid` the job id of the
//! communicator's rank 0 (`OMPI_CAST_RTE_NAME(...)->jobid`, broadcast) and `int_pid` rank 0's
//! `getpid()` (broadcast): rank 0 creates it (`open(O_RDWR | O_CREAT)`, writes the offset 0),
//! every rank opens it after a barrier, and rank 0 unlinks it in `MPI_File_close`. Both numbers
//! belong to the run: another run of the same program at the same scale names another file.
//! This module says which path fields of a traced call are those numbers.

use rsd::runvalue::RunKind;

/// The suffix `lockedfile` appends to the file's name, as a path template
/// ([`rsd::path::PathTemplate`]): the job id, rank 0's pid, `.lock`.
pub const LOCKEDFILE_SUFFIX: &str = "-%d-%d.lock";

/// The kinds of the fields `lockedfile`'s suffix adds, in order.
pub const LOCKEDFILE_FIELDS: [RunKind; 2] = [RunKind::JobId, RunKind::Pid];

/// The run values of a call's path template `template` when it is `lockedfile`'s lock file
/// of a file opened under one of `opened` (the path templates `MPI_File_open` was given in
/// the trace): the kinds of its last two fields. `None` for any other path.
pub fn lockedfile_fields(template: &str, opened: &[&str]) -> Option<[RunKind; 2]> {
    let file = template.strip_suffix(LOCKEDFILE_SUFFIX)?;
    opened.contains(&file).then_some(LOCKEDFILE_FIELDS)
}

/// Whether a call's path template is the `sm` component's segment, the file OMPIO opens in
/// `MPI_File_open` on one node (`sharedfp_sm_file_open.c`: `SESSION/BASENAME_cid-CID-PID.sm`
/// in the job's session directory). Across nodes `sm` declines and `lockedfile` opens its lock
/// file instead: a trace holding this file shows nothing of what a run on several nodes
/// opens.
pub fn is_sm_segment(template: &str) -> bool {
    template.ends_with(".sm")
        && template
            .rsplit('/')
            .next()
            .is_some_and(|b| b.contains("_cid-"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::path::PathTemplate;

    #[test]
    fn the_sm_segment_is_recognised() {
        let (t, _) = PathTemplate::parse("/tmp/ompi.h.0/jf.1/0/f_cid-3-4242.sm");
        assert!(is_sm_segment(&t.0));
        assert!(!is_sm_segment("/a/f.sm"));
        assert!(!is_sm_segment("/a/f_cid-%d.dat"));
    }

    #[test]
    fn the_lock_file_of_an_opened_file_holds_its_job_id_and_pid() {
        let (t, f) = PathTemplate::parse("/dev/shm/out/f.3.dat-2125201409-13772.lock");
        assert_eq!(t.0, "/dev/shm/out/f.%d.dat-%d-%d.lock");
        assert_eq!(f, [3, 2125201409, 13772]);
        assert_eq!(
            lockedfile_fields(&t.0, &["/dev/shm/out/f.%d.dat"]),
            Some([RunKind::JobId, RunKind::Pid])
        );
    }

    #[test]
    fn other_paths_are_not_lock_files() {
        // Not the lock file of a file the program opened through MPI-IO.
        assert_eq!(lockedfile_fields("/a/g-%d-%d.lock", &["/a/f"]), None);
        // The file itself, and a name that only looks alike.
        assert_eq!(lockedfile_fields("/a/f", &["/a/f"]), None);
        assert_eq!(lockedfile_fields("/a/f-%d.lock", &["/a/f"]), None);
    }
}
