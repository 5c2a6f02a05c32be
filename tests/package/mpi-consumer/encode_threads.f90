! The encode plan with every rank on a thread of this process, called from
! Fortran through collplan.h's bind(C) interface (collplan::runtime), checked
! against sum_j x_j*A(j,k) over GF(2^8) computed here from A's CSV.
!   encode_threads_f PLAN.cplan A.csv COUNT
program encode_threads_f
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    integer(c_int) function collplan_open_file(path, plan) bind(C, name="collplan_open_file")
      import :: c_int, c_char, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr), intent(out) :: plan
    end function
    integer(c_int) function collplan_num_ranks(plan) bind(C, name="collplan_num_ranks")
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
    end function
    integer(c_size_t) function collplan_output_count(plan, rank, count) bind(C, name="collplan_output_count")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: plan
      integer(c_int), value :: rank
      integer(c_size_t), value :: count
    end function
    integer(c_int) function collplan_run_threads(plan, sendbufs, recvbufs, count) bind(C, name="collplan_run_threads")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: plan
      type(c_ptr), dimension(*), intent(in) :: sendbufs, recvbufs
      integer(c_size_t), value :: count
    end function
    type(c_ptr) function collplan_last_error() bind(C, name="collplan_last_error")
      import :: c_ptr
    end function
    subroutine collplan_close(plan) bind(C, name="collplan_close")
      import :: c_ptr
      type(c_ptr), value :: plan
    end subroutine
    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function
  end interface

  integer, parameter :: K = 8
  integer :: A(0:K-1, 0:K-1)
  integer(c_int8_t), allocatable, target :: x(:, :), y(:, :)
  type(c_ptr) :: plan, sp(K), rp(K)
  character(len=4096) :: path, csv, arg
  integer(c_size_t) :: count
  integer :: i, j, kk, st, want, got, u, failures

  call get_command_argument(1, path)
  call get_command_argument(2, csv)
  call get_command_argument(3, arg)
  read (arg, *) i
  count = int(i, c_size_t)
  open (newunit=u, file=trim(csv), status="old", action="read")
  do j = 0, K - 1
    read (u, *) (A(j, kk), kk = 0, K - 1)
  end do
  close (u)

  st = collplan_open_file(trim(path)//c_null_char, plan)
  if (st /= 0) call fail("collplan_open_file", st)
  if (collplan_num_ranks(plan) /= K) call fail("collplan_num_ranks", -1)
  if (collplan_output_count(plan, 3_c_int, count) /= count) call fail("collplan_output_count", -1)

  allocate (x(count, 0:K-1), y(count, 0:K-1))
  do kk = 0, K - 1
    do i = 1, int(count)
      x(i, kk) = int(iand(kk * 89 + (i - 1) * 5 + 17, 255) - merge(256, 0, iand(kk * 89 + (i - 1) * 5 + 17, 255) > 127), &
                     c_int8_t)
    end do
    sp(kk + 1) = c_loc(x(1, kk))
    rp(kk + 1) = c_loc(y(1, kk))
  end do
  st = collplan_run_threads(plan, sp, rp, count)
  if (st /= 0) call fail("collplan_run_threads", st)

  failures = 0
  do kk = 0, K - 1
    do i = 1, int(count)
      want = 0
      do j = 0, K - 1
        want = ieor(want, gf_mul(iand(int(x(i, j)), 255), A(j, kk)))
      end do
      got = iand(int(y(i, kk)), 255)
      if (got /= want) then
        print '(a,i0,a,i0,a,i0,a,i0)', "FAIL: rank ", kk, ", element ", i - 1, ": expected ", want, ", got ", got
        failures = failures + 1
        exit
      end if
    end do
  end do
  call collplan_close(plan)
  if (failures /= 0) stop 1
  print '(a,i0,a)', "PASS (Fortran, threads): 8 ranks, count ", count, ": every rank's output equals x*A column by column"

contains

  integer function gf_mul(a0, b0)
    integer, intent(in) :: a0, b0
    integer :: a, b
    a = a0
    b = b0
    gf_mul = 0
    do while (b /= 0)
      if (iand(b, 1) /= 0) gf_mul = ieor(gf_mul, a)
      a = ishft(a, 1)
      if (iand(a, 256) /= 0) a = ieor(a, 285)  ! 0x11D
      b = ishft(b, -1)
    end do
  end function

  subroutine fail(what, st)
    character(len=*), intent(in) :: what
    integer, intent(in) :: st
    character(kind=c_char), pointer :: msg(:)
    type(c_ptr) :: p
    p = collplan_last_error()
    call c_f_pointer(p, msg, [c_strlen(p)])
    print '(a,a,i0,a,*(a))', what, ": status ", st, ": ", msg
    stop 1
  end subroutine

end program
