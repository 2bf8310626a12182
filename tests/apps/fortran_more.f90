! The newer MPI calls from Fortran (`use mpi`), each result checked: persistent requests
! (Send_init, Recv_init, Startall, Start), the completion calls with Fortran's 1-based indices
! (Waitany, Waitsome, Testall, Test, Testany), probes (Probe, Iprobe), Sendrecv_replace,
! nonblocking collectives (Ibarrier, Ibcast, Iallreduce), Alltoallw (an array of types),
! a Cartesian communicator with Cart_sub and Neighbor_alltoall, Comm_create_group and an
! intercommunicator (Intercomm_create, Intercomm_merge). Open MPI's Fortran bindings call
! PMPI_* directly, so only the tracer's Fortran hooks see these calls.
! Runs on an even number of ranks. Prints "COUNT <rank> <op> <calls> <bytes>" lines like the
! C mini-apps (count.h).
program fortran_more
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, left, right, i, idx, outc, flag_i
  integer :: q(2), idxs(2), st(MPI_STATUS_SIZE)
  integer :: s(4), r(4), v(4), cnt
  logical :: flag
  integer :: cart, line, nb_in(2), nb_out(2), dims(1)
  logical :: periods(1), remain(1), gperiods(1), done
  integer :: gdims(1), coords(1), src, dst, crank, plen
  character(len=MPI_MAX_PROCESSOR_NAME) :: pname
  integer :: world_group, even_group, evens, nev, inter, merged, msize
  integer, allocatable :: ranks(:), sc(:), sd(:), rc(:), rd(:), types(:), sbuf(:), rbuf(:)
  character(len=32) :: names(64)
  integer :: calls(64)
  integer(kind=8) :: bytes(64)
  integer :: nops = 0

  call MPI_Init(ierr)
  call count('MPI_Init')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call count('MPI_Comm_rank')
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call count('MPI_Comm_size')
  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)

  ! Persistent requests: a ring, twice through Startall, once through Start and Waitsome.
  call MPI_Send_init(s, 4, MPI_INTEGER, right, 1, MPI_COMM_WORLD, q(1), ierr)
  call count('MPI_Send_init')
  call MPI_Recv_init(r, 4, MPI_INTEGER, left, 1, MPI_COMM_WORLD, q(2), ierr)
  call count('MPI_Recv_init')
  do i = 1, 2
    s = rank * 10 + i
    call MPI_Startall(2, q, ierr)
    call count('MPI_Startall')
    call MPI_Waitall(2, q, MPI_STATUSES_IGNORE, ierr)
    call count('MPI_Waitall')
    if (r(1) /= left * 10 + i) stop 'persistent ring wrong'
  end do
  call MPI_Start(q(2), ierr)
  call count('MPI_Start')
  call MPI_Start(q(1), ierr)
  call count('MPI_Start')
  cnt = 0
  do while (cnt < 2)
    call MPI_Waitsome(2, q, outc, idxs, MPI_STATUSES_IGNORE, ierr)
    call count('MPI_Waitsome')
    do i = 1, outc
      if (idxs(i) < 1 .or. idxs(i) > 2) stop 'Waitsome index not 1-based'
    end do
    cnt = cnt + outc
  end do
  do i = 1, 2
    call MPI_Request_free(q(i), ierr)
    call count('MPI_Request_free')
  end do

  ! Waitany, Testall, Test and Testany on a nonblocking ring.
  s = rank
  call MPI_Irecv(r, 4, MPI_INTEGER, left, 2, MPI_COMM_WORLD, q(1), ierr)
  call count('MPI_Irecv')
  call MPI_Isend(s, 4, MPI_INTEGER, right, 2, MPI_COMM_WORLD, q(2), ierr)
  call count('MPI_Isend')
  call MPI_Waitany(2, q, idx, st, ierr)
  call count('MPI_Waitany')
  if (idx < 1 .or. idx > 2) stop 'Waitany index not 1-based'
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, q, flag, MPI_STATUSES_IGNORE, ierr)
    call count('MPI_Testall')
  end do
  if (r(1) /= left) stop 'ring wrong'
  call MPI_Irecv(r, 4, MPI_INTEGER, left, 3, MPI_COMM_WORLD, q(1), ierr)
  call count('MPI_Irecv')
  call MPI_Isend(s, 4, MPI_INTEGER, right, 3, MPI_COMM_WORLD, q(2), ierr)
  call count('MPI_Isend')
  flag = .false.
  do while (.not. flag)
    call MPI_Test(q(2), flag, st, ierr)
    call count('MPI_Test')
  end do
  flag = .false.
  do while (.not. flag)
    call MPI_Testany(2, q, idx, flag, st, ierr)
    call count('MPI_Testany')
  end do
  if (idx /= 1 .and. idx /= MPI_UNDEFINED) stop 'Testany index not 1-based'

  ! Probes and Sendrecv_replace.
  call MPI_Isend(s, 4, MPI_INTEGER, right, 4, MPI_COMM_WORLD, q(1), ierr)
  call count('MPI_Isend')
  call MPI_Probe(left, 4, MPI_COMM_WORLD, st, ierr)
  call count('MPI_Probe')
  if (st(MPI_SOURCE) /= left .or. st(MPI_TAG) /= 4) stop 'probe status wrong'
  call MPI_Recv(r, 4, MPI_INTEGER, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call count('MPI_Recv')
  call MPI_Wait(q(1), MPI_STATUS_IGNORE, ierr)
  call count('MPI_Wait')
  call MPI_Isend(s, 4, MPI_INTEGER, right, 5, MPI_COMM_WORLD, q(1), ierr)
  call count('MPI_Isend')
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(left, 5, MPI_COMM_WORLD, flag, st, ierr)
    call count('MPI_Iprobe')
  end do
  call MPI_Recv(r, 4, MPI_INTEGER, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call count('MPI_Recv')
  call MPI_Wait(q(1), MPI_STATUS_IGNORE, ierr)
  call count('MPI_Wait')
  v = rank
  call MPI_Sendrecv_replace(v, 4, MPI_INTEGER, right, 6, left, 6, MPI_COMM_WORLD, st, ierr)
  call count('MPI_Sendrecv_replace')
  if (v(1) /= left) stop 'Sendrecv_replace wrong'

  ! Nonblocking collectives.
  call MPI_Ibarrier(MPI_COMM_WORLD, q(1), ierr)
  call count('MPI_Ibarrier')
  call MPI_Wait(q(1), MPI_STATUS_IGNORE, ierr)
  call count('MPI_Wait')
  v = 7
  if (rank /= 0) v = 0
  call MPI_Ibcast(v, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, q(1), ierr)
  call count('MPI_Ibcast')
  call MPI_Wait(q(1), MPI_STATUS_IGNORE, ierr)
  call count('MPI_Wait')
  if (v(4) /= 7) stop 'Ibcast wrong'
  s = rank
  call MPI_Iallreduce(s, r, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, q(1), ierr)
  call count('MPI_Iallreduce')
  call MPI_Wait(q(1), MPI_STATUS_IGNORE, ierr)
  call count('MPI_Wait')
  if (r(1) /= nprocs * (nprocs - 1) / 2) stop 'Iallreduce wrong'

  ! Alltoallw: one integer to each rank, a type per peer.
  allocate(sc(nprocs), sd(nprocs), rc(nprocs), rd(nprocs), types(nprocs))
  allocate(sbuf(nprocs), rbuf(nprocs))
  do i = 1, nprocs
    sc(i) = 1
    rc(i) = 1
    sd(i) = (i - 1) * 4
    rd(i) = (i - 1) * 4
    types(i) = MPI_INTEGER
    sbuf(i) = rank * 100 + i - 1
  end do
  call MPI_Alltoallw(sbuf, sc, sd, types, rbuf, rc, rd, types, MPI_COMM_WORLD, ierr)
  call count('MPI_Alltoallw')
  if (rbuf(left + 1) /= left * 100 + rank) stop 'Alltoallw wrong'

  ! A periodic ring, its one-dimension sub-communicator, a neighbourhood exchange.
  dims(1) = 0
  call MPI_Dims_create(nprocs, 1, dims, ierr)
  call count('MPI_Dims_create')
  if (dims(1) /= nprocs) stop 'Dims_create wrong'
  periods(1) = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  call count('MPI_Cart_create')
  remain(1) = .true.
  call MPI_Cart_sub(cart, remain, line, ierr)
  call count('MPI_Cart_sub')
  nb_out = rank
  call MPI_Neighbor_alltoall(nb_out, 1, MPI_INTEGER, nb_in, 1, MPI_INTEGER, line, ierr)
  call count('MPI_Neighbor_alltoall')
  if (nb_in(1) /= left .or. nb_in(2) /= right) stop 'neighbour exchange wrong'

  ! The ring's local queries: its grid and this rank's place, its neighbours, the rank of a
  ! place; an error handler set on it, the processor's name, whether MPI is finalized.
  call MPI_Cart_get(cart, 1, gdims, gperiods, coords, ierr)
  call count('MPI_Cart_get')
  if (gdims(1) /= nprocs .or. .not. gperiods(1) .or. coords(1) /= rank) stop 'Cart_get wrong'
  call MPI_Cart_shift(cart, 0, 1, src, dst, ierr)
  call count('MPI_Cart_shift')
  if (src /= left .or. dst /= right) stop 'Cart_shift wrong'
  coords(1) = right
  call MPI_Cart_rank(cart, coords, crank, ierr)
  call count('MPI_Cart_rank')
  if (crank /= right) stop 'Cart_rank wrong'
  call MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN, ierr)
  call count('MPI_Comm_set_errhandler')
  call MPI_Get_processor_name(pname, plen, ierr)
  call count('MPI_Get_processor_name')
  if (plen <= 0 .or. len_trim(pname) /= plen) stop 'Get_processor_name wrong'
  call MPI_Finalized(done, ierr)
  call count('MPI_Finalized')
  if (done) stop 'Finalized wrong'

  ! The even ranks' communicator, made by them only; an intercommunicator between the evens
  ! and the odds, merged.
  call MPI_Comm_group(MPI_COMM_WORLD, world_group, ierr)
  nev = (nprocs + 1) / 2
  allocate(ranks(nev))
  do i = 1, nev
    ranks(i) = 2 * (i - 1)
  end do
  call MPI_Group_incl(world_group, nev, ranks, even_group, ierr)
  if (mod(rank, 2) == 0) then
    call MPI_Comm_create_group(MPI_COMM_WORLD, even_group, 9, evens, ierr)
    call count('MPI_Comm_create_group')
    call MPI_Comm_free(evens, ierr)
    call count('MPI_Comm_free')
  end if
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, line, ierr)
  call count('MPI_Comm_split')
  call MPI_Intercomm_create(line, 0, MPI_COMM_WORLD, 1 - mod(rank, 2), 10, inter, ierr)
  call count('MPI_Intercomm_create')
  call MPI_Intercomm_merge(inter, mod(rank, 2) == 1, merged, ierr)
  call count('MPI_Intercomm_merge')
  call MPI_Comm_size(merged, msize, ierr)
  call count('MPI_Comm_size')
  if (msize /= nprocs) stop 'merged size wrong'
  call MPI_Barrier(merged, ierr)
  call count('MPI_Barrier')

  flag_i = 0
  call MPI_Finalize(ierr)
  call count('MPI_Finalize')
  ! Allowed after MPI_Finalize, and not recorded: the trace is written by then.
  call MPI_Finalized(done, ierr)
  if (.not. done) stop 'Finalized after MPI_Finalize wrong'
  do i = 1, nops
    write(*, '(A,I0,A,A,A,I0,A,I0)') 'COUNT ', rank, ' ', trim(names(i)), ' ', calls(i), ' ', bytes(i)
  end do

contains

  subroutine count(name)
    character(len=*), intent(in) :: name
    integer :: k
    do k = 1, nops
      if (names(k) == name) then
        calls(k) = calls(k) + 1
        return
      end if
    end do
    nops = nops + 1
    names(nops) = name
    calls(nops) = 1
    bytes(nops) = 0
  end subroutine count

end program fortran_more
