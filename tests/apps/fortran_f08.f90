! fortran_f08: the MPI-IO and MPI calls of a Fortran 2008 program through `use mpi_f08`
! (handles are derived types, ierror is optional). Open MPI 4.1's mpi_f08 procedures
! (`mpi_send_f08_`, ...) call the C functions behind its mpif.h binding (`ompi_send_f`, ...),
! which call PMPI_* directly: only the tracer's hooks of those functions see these calls.
! Collective writes, a vector file view (its string argument passed with an explicit length),
! a darray type, a read back with a status, a nonblocking write, MPI_IN_PLACE reductions,
! MPI_Sendrecv, a nonblocking ring with MPI_Waitall, a communicator split, calls without
! ierror, and
! MPI_File_delete. Strided array sections (non-contiguous buffers: MPICH's f08 procedures
! build a datatype for them, compilers without descriptors copy them in and out) are written
! and read back through MPI-IO and exchanged with MPI_Sendrecv, in blocking calls only. The
! split collectives (begin then end, explicit offsets, individual and shared pointers) with
! MPI_File_seek_shared, the data read back checked.
! Prints "COUNT <rank> <op> <calls> <bytes>" lines like the C mini-apps.
! Usage: fortran_f08 DIR [ITERS=3]
program fortran_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 1024, maxops = 64
  integer :: ierr, rank, nprocs, i, iters, half, got, nops, left, right
  type(MPI_File) :: fh
  type(MPI_Datatype) :: vtype
  type(MPI_Comm) :: sub
  type(MPI_Request) :: reqs(2)
  type(MPI_Status) :: status
  integer(kind=MPI_OFFSET_KIND) :: off, disp, band
  double precision :: buf(n), sums(4)
  integer :: sendv(64), recvv(4), sendw(8), recvw(8), k
  double precision :: back(n)
  character(len=4096) :: dir, path
  character(len=32) :: arg, names(maxops)
  integer :: calls(maxops)
  integer(kind=8) :: bytes(maxops)
  nops = 0

  call MPI_Init(ierr)
  call count('MPI_Init', 0_8)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call count('MPI_Comm_rank', 0_8)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call count('MPI_Comm_size', 0_8)
  call get_command_argument(1, dir)
  iters = 3
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read(arg, *) iters
  end if
  buf = rank
  path = trim(dir) // '/fortran_f08.dat'

  call MPI_File_open(MPI_COMM_WORLD, trim(path), MPI_MODE_CREATE + MPI_MODE_RDWR, &
                     MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) stop 'MPI_File_open failed'
  call count('MPI_File_open', 0_8)
  do i = 0, iters - 1
    off = (int(i, MPI_OFFSET_KIND) * nprocs + rank) * n * 8
    call MPI_File_write_at_all(fh, off, buf, n, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE, ierr)
    call count('MPI_File_write_at_all', int(n, 8) * 8)
  end do

  call MPI_Type_vector(n / 8, 8, 8 * nprocs, MPI_DOUBLE_PRECISION, vtype, ierr)
  call count('MPI_Type_vector', 0_8)
  call MPI_Type_commit(vtype)
  call count('MPI_Type_commit', 0_8)
  disp = (int(iters, MPI_OFFSET_KIND) * nprocs * n + rank * 8) * 8
  call MPI_File_set_view(fh, disp, MPI_DOUBLE_PRECISION, vtype, 'native', MPI_INFO_NULL, ierr)
  if (ierr /= MPI_SUCCESS) stop 'MPI_File_set_view failed'
  call count('MPI_File_set_view', 0_8)
  call MPI_File_write_all(fh, buf, n, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE, ierr)
  call count('MPI_File_write_all', int(n, 8) * 8)
  call MPI_Type_free(vtype, ierr)
  call count('MPI_Type_free', 0_8)
  ! A darray of the same matrix (8-column blocks dealt cyclically over a 1 x nprocs grid),
  ! built and freed: its hook through the f08 binding.
  call MPI_Type_create_darray(nprocs, rank, 2, (/ n / 8, 8 * nprocs /), &
                              (/ MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC /), &
                              (/ MPI_DISTRIBUTE_DFLT_DARG, 8 /), (/ 1, nprocs /), &
                              MPI_ORDER_FORTRAN, MPI_DOUBLE_PRECISION, vtype, ierr)
  call count('MPI_Type_create_darray', 0_8)
  call MPI_Type_free(vtype, ierr)
  call count('MPI_Type_free', 0_8)
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_BYTE, MPI_BYTE, 'native', MPI_INFO_NULL)
  call count('MPI_File_set_view', 0_8)
  call MPI_Barrier(MPI_COMM_WORLD)
  call count('MPI_Barrier', 0_8)
  off = int(rank, MPI_OFFSET_KIND) * n * 8
  half = n / 2
  call MPI_File_read_at(fh, off, buf, half, MPI_DOUBLE_PRECISION, status, ierr)
  call MPI_Get_count(status, MPI_BYTE, got, ierr)
  if (got /= half * 8) stop 'MPI_File_read_at status wrong'
  call count('MPI_File_read_at', int(got, 8))
  off = (int(iters + 2, MPI_OFFSET_KIND) * nprocs + rank) * n * 8
  call MPI_File_iwrite_at(fh, off, buf, n, MPI_DOUBLE_PRECISION, reqs(1), ierr)
  call count('MPI_File_iwrite_at', int(n, 8) * 8)
  call MPI_Wait(reqs(1), status, ierr)
  call count('MPI_Wait', 0_8)
  ! Every other element out, then back into every other element: the file holds them packed.
  do k = 1, n
    buf(k) = rank * n + k
  end do
  off = (int(iters + 3, MPI_OFFSET_KIND) * nprocs + rank) * n * 8
  call MPI_File_write_at(fh, off, buf(1:n:2), n / 2, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) stop 'strided MPI_File_write_at failed'
  call count('MPI_File_write_at', int(n / 2, 8) * 8)
  back = -1
  call MPI_File_read_at(fh, off, back(2:n:2), n / 2, MPI_DOUBLE_PRECISION, status, ierr)
  call MPI_Get_count(status, MPI_BYTE, got, ierr)
  if (got /= (n / 2) * 8) stop 'strided MPI_File_read_at status wrong'
  call count('MPI_File_read_at', int(got, 8))
  do k = 1, n / 2
    if (back(2 * k) /= buf(2 * k - 1) .or. back(2 * k - 1) /= -1) stop 'strided read back wrong'
  end do

  ! The split collectives past the strided part: one band of n doubles per rank through
  ! explicit offsets, one through the individual pointer, one in rank order through the shared
  ! pointer; then each rank reads its right neighbour's blocks of the first two back.
  band = int(nprocs, MPI_OFFSET_KIND) * n * 8
  disp = int(iters + 4, MPI_OFFSET_KIND) * band
  buf = rank + 100
  call MPI_File_write_at_all_begin(fh, disp + rank * n * 8, buf, n, MPI_DOUBLE_PRECISION, ierr)
  call count('MPI_File_write_at_all_begin', int(n, 8) * 8)
  call MPI_File_write_at_all_end(fh, buf, status, ierr)
  call count('MPI_File_write_at_all_end', 0_8)
  call MPI_File_seek(fh, disp + band + rank * n * 8, MPI_SEEK_SET, ierr)
  call count('MPI_File_seek', 0_8)
  call MPI_File_write_all_begin(fh, buf, n, MPI_DOUBLE_PRECISION)
  call count('MPI_File_write_all_begin', int(n, 8) * 8)
  call MPI_File_write_all_end(fh, buf, MPI_STATUS_IGNORE)
  call count('MPI_File_write_all_end', 0_8)
  call MPI_File_seek_shared(fh, disp + 2 * band, MPI_SEEK_SET, ierr)
  call count('MPI_File_seek_shared', 0_8)
  call MPI_File_write_ordered_begin(fh, buf, n, MPI_DOUBLE_PRECISION, ierr)
  call count('MPI_File_write_ordered_begin', int(n, 8) * 8)
  call MPI_File_write_ordered_end(fh, buf, MPI_STATUS_IGNORE, ierr)
  call count('MPI_File_write_ordered_end', 0_8)
  call MPI_File_sync(fh, ierr)
  call count('MPI_File_sync', 0_8)
  call MPI_Barrier(MPI_COMM_WORLD)
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

  sendv = rank
  call MPI_Sendrecv(sendv, 4, MPI_INTEGER, mod(rank + 1, nprocs), 9, recvv, 4, MPI_INTEGER, &
                    mod(rank + nprocs - 1, nprocs), 9, MPI_COMM_WORLD, status, ierr)
  call count('MPI_Sendrecv', 0_8)
  if (recvv(1) /= mod(rank + nprocs - 1, nprocs)) stop 'sendrecv wrong'
  sums = rank
  call MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call count('MPI_Allreduce', 0_8)
  if (abs(sums(1) - nprocs * (nprocs - 1) / 2.0d0) > 0.5d0) stop 'MPI_IN_PLACE reduction wrong'
  call MPI_Bcast(sums, 4, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD)
  call count('MPI_Bcast', 0_8)

  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)
  call MPI_Irecv(recvv, 4, MPI_INTEGER, left, 7, MPI_COMM_WORLD, reqs(1), ierr)
  call count('MPI_Irecv', 0_8)
  call MPI_Isend(sendv, 4, MPI_INTEGER, right, 7, MPI_COMM_WORLD, reqs(2), ierr)
  call count('MPI_Isend', 0_8)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call count('MPI_Waitall', 0_8)
  if (recvv(1) /= left) stop 'ring exchange wrong'
  do k = 1, 8
    sendw(k) = rank * 100 + k
  end do
  recvw = -1
  call MPI_Sendrecv(sendw(1:8:2), 4, MPI_INTEGER, right, 11, recvw(2:8:2), 4, MPI_INTEGER, &
                    left, 11, MPI_COMM_WORLD, status, ierr)
  call count('MPI_Sendrecv', 0_8)
  call MPI_Get_count(status, MPI_INTEGER, got, ierr)
  if (got /= 4 .or. status%MPI_SOURCE /= left) stop 'strided sendrecv status wrong'
  do k = 1, 4
    if (recvw(2 * k) /= left * 100 + 2 * k - 1 .or. recvw(2 * k - 1) /= -1) &
      stop 'strided sendrecv wrong'
  end do

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  call count('MPI_Comm_split', 0_8)
  call MPI_Barrier(sub, ierr)
  call count('MPI_Barrier', 0_8)
  if (rank == 0) then
    call MPI_File_delete(trim(path), MPI_INFO_NULL, ierr)
    if (ierr /= MPI_SUCCESS) stop 'MPI_File_delete failed'
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

end program fortran_f08
