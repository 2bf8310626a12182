; Meep (FDTD) deck for iotrex's real-application tests (tests/real_meep.rs,
; scripts/meep-scales.sh): weak-scaled, a 2D cell of 4n x 4 (n = the rank count,
; passed as `n=N` on meep's command line) at resolution 10, so every rank owns
; one 40 x 40 chunk whatever n; a dielectric waveguide along x, a continuous Ez
; source, no PML (so the cost per pixel, and with it Meep's chunk division, is
; uniform). Output: the permittivity once, then Ez every 1 time unit, each an
; HDF5 file written by Meep through parallel HDF5 (MPI-IO). `outdir=DIR` names the
; output directory.
(define-param n 4)
(define-param outdir "meep-out")
(define-param tmax 4)
(set! geometry-lattice (make lattice (size (* 4 n) 4 no-size)))
(set! resolution 10)
(set! geometry
      (list (make block (center 0 0) (size infinity 1 infinity)
                  (material (make dielectric (epsilon 12))))))
(set! sources
      (list (make source (src (make continuous-src (frequency 0.15)))
                  (component Ez) (center 0 0))))
(use-output-directory outdir)
(run-until tmax (at-beginning output-epsilon) (at-every 1 output-efield-z))
