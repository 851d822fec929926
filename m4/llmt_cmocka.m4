# llmt_cmocka.m4: LLMT_CHECK_CMOCKA: cmocka for the unit tests of
# `make check` only; without it configure goes on, and each unit test
# reports "SKIP: ... cmocka" (tests/nocmocka/cmocka.h stands in). Sets
# CMOCKA_LIBS, have_cmocka and the HAVE_CMOCKA conditional.
AC_DEFUN([LLMT_CHECK_CMOCKA], [
have_cmocka=no
AC_CHECK_HEADER([cmocka.h], [
	AC_CHECK_LIB([cmocka], [_cmocka_run_group_tests], [CMOCKA_LIBS=-lcmocka; have_cmocka=yes])], [],
	[#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>])
AS_IF([test $have_cmocka = no],
	[AC_MSG_WARN([cmocka not found: make check will skip the unit tests (install libcmocka-dev)])])
AC_SUBST([CMOCKA_LIBS])
AM_CONDITIONAL([HAVE_CMOCKA], [test $have_cmocka = yes])
])
