# llmt_march.m4: LLMT_CHECK_MARCH: the CPU the runtime is built for. By
# default the baseline x86-64 (binaries run on any node) plus an AVX-512
# BF16 copy of the kernels chosen at run time (LLMT_AVX512_CFLAGS);
# --with-march=ARCH builds the whole runtime for ARCH (LLMT_MARCH_CFLAGS).
AC_DEFUN([LLMT_CHECK_MARCH], [
AC_ARG_WITH([march], [AS_HELP_STRING([--with-march=ARCH],
	[build the runtime with -march=ARCH (e.g. native, sapphirerapids); default: portable x86-64 with AVX-512 BF16 kernels chosen at run time])],
	[], [with_march=no])
LLMT_MARCH_CFLAGS=""
AS_IF([test "x$with_march" = xyes], [AC_MSG_ERROR([--with-march needs a value, e.g. --with-march=native])])
AS_IF([test "x$with_march" != xno], [LLMT_MARCH_CFLAGS="-march=$with_march"])
LLMT_AVX512_CFLAGS="-mavx512f -mavx512bw -mavx512vl -mavx512bf16"
save_CFLAGS=$CFLAGS
CFLAGS="$CFLAGS $LLMT_MARCH_CFLAGS $LLMT_AVX512_CFLAGS"
AC_MSG_CHECKING([whether $CC builds $LLMT_MARCH_CFLAGS $LLMT_AVX512_CFLAGS code])
AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <immintrin.h>]],
	[[__m512 a = _mm512_setzero_ps(); __m256bh b = _mm512_cvtneps_pbh(a); (void)b;]])],
	[AC_MSG_RESULT([yes])],
	[AC_MSG_RESULT([no]); AC_MSG_ERROR([$CC cannot build the AVX-512 BF16 kernels (GCC 10 or later needed) or rejects $LLMT_MARCH_CFLAGS])])
CFLAGS=$save_CFLAGS
AC_SUBST([LLMT_MARCH_CFLAGS])
AC_SUBST([LLMT_AVX512_CFLAGS])
AS_IF([test -n "$LLMT_MARCH_CFLAGS"], [AC_DEFINE_UNQUOTED([LLMT_MARCH], ["$with_march"], [-march the runtime was built with])])
])
