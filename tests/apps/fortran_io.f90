! fortran_io: the MPI-IO and MPI calls of a Fortran program (mpif.h-style bindings through
! `use mpi`). Open MPI's Fortran bindings call PMPI_* directly, so only the tracer's Fortran
! hooks see these calls. Collective strided writes, a vector file view with a collective
! write, a read back with a status, a nonblocking write, a subarray view, a darray view,
! MPI_IN_PLACE reductions, MPI_Sendrecv and MPI_Allgatherv, a nonblocking ring with
! MPI_Waitall, a communicator split, MPI_File_delete, and the split collectives (begin then
! end, explicit offsets, individual and shared pointers) with MPI_File_seek_shared, the data
! read back checked.
! Prints "COUNT <rank> <op> <calls> <bytes>" lines like the C mini-apps (count.h).
! Usage: fortran_io DIR [ITERS=3]
program fortran_io
  use mpi
  implicit none
  integer, parameter :: n = 1024, maxops = 64
  integer :: ierr, rank, nprocs, fh, i, iters, vtype, half, got, nops, left, right
  integer :: reqs(2), status(MPI_STATUS_SIZE)
  integer(kind=MPI_OFFSET_KIND) :: off, disp, band
  double precision :: buf(n), sums(4)
  integer :: sendv(64), recvv(4), sizes2(2), subs2(2), starts2(2)
  integer :: dgs(2), ddist(2), ddarg(2), dps(2)
  integer, allocatable :: counts(:), displs(:), gathered(:)
  character(len=4096) :: dir, path
  character(len=32) :: arg, names(maxops)
  integer :: calls(maxops)
  integer(kind=8) :: bytes(maxops)
  nops = 0

  call MPI_Init(ierr)
  call count('MPI_Init', 0_8)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call count('MPI_Comm_rank', 0_8)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call count('MPI_Comm_size', 0_8)
  call get_command_argument(1, dir)
  iters = 3
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read(arg, *) iters
  end if
  buf = rank
  path = trim(dir) // '/fortran.dat'

  call MPI_File_open(MPI_COMM_WORLD, trim(path), MPI_MODE_CREATE + MPI_MODE_RDWR, &
                     MPI_INFO_NULL, fh, ierr)
  call count('MPI_File_open', 0_8)
  do i = 0, iters - 1
    off = (int(i, MPI_OFFSET_KIND) * nprocs + rank) * n * 8
    call MPI_File_write_at_all(fh, off, buf, n, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE, ierr)
    call count('MPI_File_write_at_all', int(n, 8) * 8)
  end do

  ! Every rank sees every nprocs-th block of 8 doubles after the strided part.
  call MPI_Type_vector(n / 8, 8, 8 * nprocs, MPI_DOUBLE_PRECISION, vtype, ierr)
  call count('MPI_Type_vector', 0_8)
  call MPI_Type_commit(vtype, ierr)
  call count('MPI_Type_commit', 0_8)
  disp = (int(iters, MPI_OFFSET_KIND) * nprocs * n + rank * 8) * 8
  call MPI_File_set_view(fh, disp, MPI_DOUBLE_PRECISION, vtype, 'native', MPI_INFO_NULL, ierr)
  call count('MPI_File_set_view', 0_8)
  call MPI_File_write_all(fh, buf, n, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE, ierr)
  call count('MPI_File_write_all', int(n, 8) * 8)
  call MPI_Type_free(vtype, ierr)
  call count('MPI_Type_free', 0_8)
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_BYTE, MPI_BYTE, 'native', MPI_INFO_NULL, ierr)
  call count('MPI_File_set_view', 0_8)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call count('MPI_Barrier', 0_8)
  off = int(rank, MPI_OFFSET_KIND) * n * 8
  half = n / 2
  call MPI_File_read_at(fh, off, buf, half, MPI_DOUBLE_PRECISION, status, ierr)
  call MPI_Get_count(status, MPI_BYTE, got, ierr)
  call count('MPI_File_read_at', int(got, 8))
  ! A nonblocking write after the views' region, waited for.
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_BYTE, MPI_BYTE, 'native', MPI_INFO_NULL, ierr)
  call count('MPI_File_set_view', 0_8)
  off = (int(iters + 2, MPI_OFFSET_KIND) * nprocs + rank) * n * 8
  call MPI_File_iwrite_at(fh, off, buf, n, MPI_DOUBLE_PRECISION, reqs(1), ierr)
  call count('MPI_File_iwrite_at', int(n, 8) * 8)
  call MPI_Wait(reqs(1), status, ierr)
  call count('MPI_Wait', 0_8)
  ! A 2-D subarray view: this rank's column block of an n/8 x 8*nprocs matrix of doubles.
  sizes2 = (/ n / 8, 8 * nprocs /)
  subs2 = (/ n / 8, 8 /)
  starts2 = (/ 0, 8 * rank /)
  call MPI_Type_create_subarray(2, sizes2, subs2, starts2, MPI_ORDER_FORTRAN, &
                                MPI_DOUBLE_PRECISION, vtype, ierr)
  call count('MPI_Type_create_subarray', 0_8)
  call MPI_Type_commit(vtype, ierr)
  call count('MPI_Type_commit', 0_8)
  disp = (int(iters + 3, MPI_OFFSET_KIND) * nprocs * n) * 8
  call MPI_File_set_view(fh, disp, MPI_DOUBLE_PRECISION, vtype, 'native', MPI_INFO_NULL, ierr)
  call count('MPI_File_set_view', 0_8)
  call MPI_File_write_all(fh, buf, n, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE, ierr)
  call count('MPI_File_write_all', int(n, 8) * 8)
  call MPI_Type_free(vtype, ierr)
  call count('MPI_Type_free', 0_8)
  ! The same matrix as a darray (8-column blocks dealt cyclically over a 1 x nprocs grid,
  ! the rows not distributed): this rank's columns again, one matrix further on.
  dgs = (/ n / 8, 8 * nprocs /)
  ddist = (/ MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC /)
  ddarg = (/ MPI_DISTRIBUTE_DFLT_DARG, 8 /)
  dps = (/ 1, nprocs /)
  call MPI_Type_create_darray(nprocs, rank, 2, dgs, ddist, ddarg, dps, MPI_ORDER_FORTRAN, &
                              MPI_DOUBLE_PRECISION, vtype, ierr)
  call count('MPI_Type_create_darray', 0_8)
  call MPI_Type_commit(vtype, ierr)
  call count('MPI_Type_commit', 0_8)
  disp = (int(iters + 4, MPI_OFFSET_KIND) * nprocs * n) * 8
  call MPI_File_set_view(fh, disp, MPI_DOUBLE_PRECISION, vtype, 'native', MPI_INFO_NULL, ierr)
  call count('MPI_File_set_view', 0_8)
  call MPI_File_write_all(fh, buf, n, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE, ierr)
  call count('MPI_File_write_all', int(n, 8) * 8)
  call MPI_Type_free(vtype, ierr)
  call count('MPI_Type_free', 0_8)

  ! The split collectives past the darray's region: one band of n doubles per rank through
  ! explicit offsets, one through the individual pointer, one in rank order through the shared
  ! pointer; then each rank reads its right neighbour's blocks of the first two back.
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_BYTE, MPI_BYTE, 'native', MPI_INFO_NULL, ierr)
  call count('MPI_File_set_view', 0_8)
  band = int(nprocs, MPI_OFFSET_KIND) * n * 8
  disp = int(iters + 5, MPI_OFFSET_KIND) * band
  buf = rank + 100
  call MPI_File_write_at_all_begin(fh, disp + rank * n * 8, buf, n, MPI_DOUBLE_PRECISION, ierr)
  call count('MPI_File_write_at_all_begin', int(n, 8) * 8)
  call MPI_File_write_at_all_end(fh, buf, status, ierr)
  call count('MPI_File_write_at_all_end', 0_8)
  call MPI_File_seek(fh, disp + band + rank * n * 8, MPI_SEEK_SET, ierr)
  call count('MPI_File_seek', 0_8)
  call MPI_File_write_all_begin(fh, buf, n, MPI_DOUBLE_PRECISION, ierr)
  call count('MPI_File_write_all_begin', int(n, 8) * 8)
  call MPI_File_write_all_end(fh, buf, MPI_STATUS_IGNORE, ierr)
  call count('MPI_File_write_all_end', 0_8)
  call MPI_File_seek_shared(fh, disp + 2 * band, MPI_SEEK_SET, ierr)
  call count('MPI_File_seek_shared', 0_8)
  call MPI_File_write_ordered_begin(fh, buf, n, MPI_DOUBLE_PRECISION, ierr)
  call count('MPI_File_write_ordered_begin', int(n, 8) * 8)
  call MPI_File_write_ordered_end(fh, buf, MPI_STATUS_IGNORE, ierr)
  call count('MPI_File_write_ordered_end', 0_8)
  call MPI_File_sync(fh, ierr)
  call count('MPI_File_sync', 0_8)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call count('MPI_Barrier', 0_8)
  call MPI_File_sync(fh, ierr)
  call count('MPI_File_sync', 0_8)
  buf = -1
  call MPI_File_read_at_all_begin(fh, disp + mod(rank + 1, nprocs) * n * 8, buf, n, &
                                  MPI_DOUBLE_PRECISION, ierr)
  call count('MPI_File_read_at_all_begin', int(n, 8) * 8)
  call MPI_File_read_at_all_end(fh, buf, status, ierr)
  call count('MPI_File_read_at_all_end', 0_8)
  if (any(buf /= mod(rank + 1, nprocs) + 100)) stop 'split read_at_all read wrong data'
  buf = -1
  call MPI_File_seek(fh, disp + band + mod(rank + 1, nprocs) * n * 8, MPI_SEEK_SET, ierr)
  call count('MPI_File_seek', 0_8)
  call MPI_File_read_all_begin(fh, buf, n, MPI_DOUBLE_PRECISION, ierr)
  call count('MPI_File_read_all_begin', int(n, 8) * 8)
  call MPI_File_read_all_end(fh, buf, MPI_STATUS_IGNORE, ierr)
  call count('MPI_File_read_all_end', 0_8)
  if (any(buf /= mod(rank + 1, nprocs) + 100)) stop 'split read_all read wrong data'
  call MPI_File_close(fh, ierr)
  call count('MPI_File_close', 0_8)

  ! Point-to-point and vector collectives.
  call MPI_Sendrecv(sendv, 4, MPI_INTEGER, mod(rank + 1, nprocs), 9, recvv, 4, MPI_INTEGER, &
                    mod(rank + nprocs - 1, nprocs), 9, MPI_COMM_WORLD, status, ierr)
  call count('MPI_Sendrecv', 0_8)
  allocate(counts(nprocs), displs(nprocs), gathered(nprocs * nprocs))
  do i = 1, nprocs
    counts(i) = i
    displs(i) = (i - 1) * nprocs
  end do
  sendv = rank
  call MPI_Allgatherv(sendv, rank + 1, MPI_INTEGER, gathered, counts, displs, MPI_INTEGER, &
                      MPI_COMM_WORLD, ierr)
  call count('MPI_Allgatherv', 0_8)
  if (gathered(displs(nprocs) + 1) /= nprocs - 1) stop 'allgatherv wrong'

  sums = rank
  call MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call count('MPI_Allreduce', 0_8)
  if (abs(sums(1) - nprocs * (nprocs - 1) / 2.0d0) > 0.5d0) stop 'MPI_IN_PLACE reduction wrong'
  call MPI_Bcast(sums, 4, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  call count('MPI_Bcast', 0_8)

  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)
  sendv = rank
  call MPI_Irecv(recvv, 4, MPI_INTEGER, left, 7, MPI_COMM_WORLD, reqs(1), ierr)
  call count('MPI_Irecv', 0_8)
  call MPI_Isend(sendv, 4, MPI_INTEGER, right, 7, MPI_COMM_WORLD, reqs(2), ierr)
  call count('MPI_Isend', 0_8)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call count('MPI_Waitall', 0_8)
  if (recvv(1) /= left) stop 'ring exchange wrong'

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  call count('MPI_Comm_split', 0_8)
  call MPI_Barrier(half, ierr)
  call count('MPI_Barrier', 0_8)
  if (rank == 0) then
    call MPI_File_delete(trim(path), MPI_INFO_NULL, ierr)
    call count('MPI_File_delete', 0_8)
  end if
  call MPI_Finalize(ierr)
  call count('MPI_Finalize', 0_8)
  do i = 1, nops
    write(*, '(A,I0,A,A,A,I0,A,I0)') 'COUNT ', rank, ' ', trim(names(i)), ' ', calls(i), ' ', bytes(i)
  end do

contains

  subroutine count(name, b)
    character(len=*), intent(in) :: name
    integer(kind=8), intent(in) :: b
    integer :: k
    do k = 1, nops
      if (names(k) == name) then
        calls(k) = calls(k) + 1
        bytes(k) = bytes(k) + b
        return
      end if
    end do
    nops = nops + 1
    names(nops) = name
    calls(nops) = 1
    bytes(nops) = b
  end subroutine count

end program fortran_io
