! Drop-in from Fortran: MPICH's Fortran bindings (use mpi; mpif.h shares
! them) call the C MPI_Allgather(v), so libcoupler_mpi, linked before MPI,
! runs them. Checks the values and the library's call counter for
! MPI_ALLGATHER and MPI_ALLGATHERV on an intercommunicator (world split
! in halves) and MPI_ALLGATHER with MPI_IN_PLACE on MPI_COMM_WORLD.
program test_dropin_fortran
  use mpi
  use iso_c_binding, only: c_int
  implicit none
  interface
    integer(c_int) function interposed_calls() bind(C, name='cpl_mpi_interposed_calls')
      import :: c_int
    end function interposed_calls
  end interface
  integer :: ierr, wrank, wsize, half, color, local, inter, rsize, rbase, i, j, n, k, fails, total
  integer :: s(3), r(3 * 64), counts(64), displs(64)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, wrank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, wsize, ierr)
  fails = 0
  half = wsize / 2
  color = 0
  if (wrank >= half) color = 1
  call MPI_Comm_split(MPI_COMM_WORLD, color, wrank, local, ierr)
  call MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, merge(half, 0, color == 0), 11, inter, ierr)
  call MPI_Comm_remote_size(inter, rsize, ierr)
  rbase = merge(half, 0, color == 0) ! world rank of remote rank 0
  s = [(wrank * 10 + j, j = 1, 3)]
  ! Send buffers as s(1), a scalar like MPI_IN_PLACE below: gfortran
  ! warns when one choice argument is passed both ways.

  n = interposed_calls()
  r = -1
  call MPI_Allgather(s(1), 3, MPI_INTEGER, r, 3, MPI_INTEGER, inter, ierr)
  k = interposed_calls() ! before the test: .and. may skip a call in it
  call check('MPI_ALLGATHER inter', ierr == MPI_SUCCESS .and. k == n + 1)
  do i = 0, rsize - 1
    call check('MPI_ALLGATHER inter values', all(r(3 * i + 1:3 * i + 3) == &
                                                [((rbase + i) * 10 + j, j = 1, 3)]))
  end do

  ! Remote blocks in reverse rank order.
  do i = 0, rsize - 1
    counts(i + 1) = 3
    displs(i + 1) = 3 * (rsize - 1 - i)
  end do
  n = interposed_calls()
  r = -1
  call MPI_Allgatherv(s(1), 3, MPI_INTEGER, r, counts, displs, MPI_INTEGER, inter, ierr)
  k = interposed_calls() ! before the test: .and. may skip a call in it
  call check('MPI_ALLGATHERV inter', ierr == MPI_SUCCESS .and. k == n + 1)
  do i = 0, rsize - 1
    call check('MPI_ALLGATHERV inter values', all(r(displs(i + 1) + 1:displs(i + 1) + 3) == &
                                                 [((rbase + i) * 10 + j, j = 1, 3)]))
  end do

  n = interposed_calls()
  r = -1
  r(3 * wrank + 1:3 * wrank + 3) = s
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  k = interposed_calls() ! before the test: .and. may skip a call in it
  call check('MPI_ALLGATHER MPI_IN_PLACE', ierr == MPI_SUCCESS .and. k == n + 1)
  do i = 0, wsize - 1
    call check('MPI_ALLGATHER MPI_IN_PLACE values', all(r(3 * i + 1:3 * i + 3) == &
                                                       [(i * 10 + j, j = 1, 3)]))
  end do

  call MPI_Allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (wrank == 0) print '(a,i0,a)', 'test_dropin_fortran: ', total, ' failures'
  call MPI_Comm_free(inter, ierr)
  call MPI_Comm_free(local, ierr)
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1

contains

  subroutine check(what, ok)
    character(*), intent(in) :: what
    logical, intent(in) :: ok
    if (.not. ok) then
      fails = fails + 1
      print '(a,i0,2a)', 'FAIL rank ', wrank, ': ', what
    end if
  end subroutine check
end program test_dropin_fortran
