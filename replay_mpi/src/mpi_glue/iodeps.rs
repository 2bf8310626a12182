//! The measured I/O dependencies ([`replay::deps`]) carried between ranks: a rank that ended
//! the I/O calls another waits for sends it their count, on a communicator of the replay's
//! own (a copy of `MPI_COMM_WORLD`, so no message of the application's can match them).

use super::{Predef, check};
use mpi::ffi;
use std::collections::HashMap;
use std::os::raw::{c_int, c_void};

/// The tag of every signal (the communicator is the replay's own).
const TAG: c_int = 0;

/// One rank's side of the signals.
pub struct IoSignals {
    comm: ffi::MPI_Comm,
    /// The highest count each rank has told this one.
    seen: HashMap<u32, u32>,
    /// Sends not yet known complete, with the count each sends (MPI reads it until then).
    sends: Vec<(ffi::MPI_Request, Box<u32>)>,
}

impl IoSignals {
    /// Copies `MPI_COMM_WORLD`: collective, so every rank makes one or none.
    pub fn new(p: &Predef) -> Result<IoSignals, String> {
        let mut comm = p.world;
        // SAFETY: MPI is initialised; every rank calls this (the table is the same on all).
        check(
            unsafe { ffi::MPI_Comm_dup(p.world, &mut comm) },
            "MPI_Comm_dup",
        )?;
        Ok(IoSignals {
            comm,
            seen: HashMap::new(),
            sends: Vec::new(),
        })
    }

    /// Tells ranks `to` that this rank has ended `count` I/O calls (nonblocking).
    pub fn ended(&mut self, p: &Predef, count: u32, to: &[u32]) -> Result<(), String> {
        for &t in to {
            let buf = Box::new(count);
            let mut req = p.request_null;
            // SAFETY: the count lives in its box, kept with the request until it completes.
            check(
                unsafe {
                    ffi::MPI_Isend(
                        &*buf as *const u32 as *const c_void,
                        4,
                        p.u8,
                        t as c_int,
                        TAG,
                        self.comm,
                        &mut req,
                    )
                },
                "MPI_Isend",
            )?;
            self.sends.push((req, buf));
        }
        Ok(())
    }

    /// Receives `from`'s signals until it has said `count`; whether a receive was needed.
    pub fn wait(&mut self, p: &Predef, from: u32, count: u32) -> Result<bool, String> {
        let mut waited = false;
        while self.seen.get(&from).copied().unwrap_or(0) < count {
            let mut got = 0u32;
            // SAFETY: four bytes into `got`, from a rank of this communicator.
            check(
                unsafe {
                    ffi::MPI_Recv(
                        &mut got as *mut u32 as *mut c_void,
                        4,
                        p.u8,
                        from as c_int,
                        TAG,
                        self.comm,
                        p.status_ignore,
                    )
                },
                "MPI_Recv",
            )?;
            waited = true;
            let s = self.seen.entry(from).or_default();
            *s = (*s).max(got);
        }
        Ok(waited)
    }

    /// Completes this rank's sends and frees the communicator.
    pub fn finish(&mut self, p: &Predef) {
        for (mut req, _buf) in self.sends.drain(..) {
            // SAFETY: a request of this runtime's, completed once; its buffer lives until then.
            unsafe { ffi::MPI_Wait(&mut req, p.status_ignore) };
        }
        // SAFETY: the communicator this runtime duplicated, freed once.
        unsafe { ffi::MPI_Comm_free(&mut self.comm) };
    }
}
