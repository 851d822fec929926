# llmt_cuda.m4: LLMT_CHECK_CUDA: the optional GPU backend: nvcc, CUDA
# runtime and NCCL under --with-cuda=DIR (default /usr/local/cuda;
# --without-cuda disables). Sets CUDA_CPPFLAGS, CUDA_LIBS, NCCL_LIBS, NVCC,
# NVCC_ARCH, have_cuda, the HAVE_CUDA conditional and LLMT_HAVE_CUDA. An
# incomplete toolkit where /usr/local/cuda exists is an error, not a build
# without the GPU backend (its emulation tests would skip).
AC_DEFUN([LLMT_CHECK_CUDA], [
AC_ARG_WITH([cuda], [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit with NCCL (default /usr/local/cuda; --without-cuda disables)])],
	[], [with_cuda=/usr/local/cuda])
have_cuda=no
AS_IF([test "x$with_cuda" != xno], [
	AS_IF([test "x$with_cuda" = xyes], [with_cuda=/usr/local/cuda])
	AC_PATH_PROG([NVCC], [nvcc], [], [$with_cuda/bin])
	AS_IF([test -n "$NVCC" && test -f "$with_cuda/include/cuda_runtime.h" && test -f "$with_cuda/include/nccl.h"], [
		CUDA_CPPFLAGS="-I$with_cuda/include"
		CUDA_LIBS="-L$with_cuda/lib64 -Wl,-rpath,$with_cuda/lib64 -lcublasLt -lcudart"
		NCCL_LIBS="-L$with_cuda/lib64 -Wl,-rpath,$with_cuda/lib64 -lnccl"
		have_cuda=yes
		AC_MSG_CHECKING([CUDA version])
		CUDA_VERSION=$($NVCC --version | sed -n 's/.*release \([[0-9.]]*\).*/\1/p')
		AC_MSG_RESULT([$CUDA_VERSION])
	], [AS_IF([test "x$with_cuda" != x/usr/local/cuda || test -e /usr/local/cuda],
		[AC_MSG_ERROR([CUDA (nvcc, cuda_runtime.h) or NCCL (nccl.h) not found under $with_cuda; --without-cuda builds without the GPU backend])])])
])
AC_ARG_VAR([NVCC_ARCH], [nvcc -arch value (default sm_90)])
: ${NVCC_ARCH=sm_90}
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_LIBS])
AC_SUBST([NCCL_LIBS])
AC_SUBST([NVCC])
AM_CONDITIONAL([HAVE_CUDA], [test $have_cuda = yes])
AS_IF([test $have_cuda = yes], [AC_DEFINE([LLMT_HAVE_CUDA], [1], [GPU backend built])])
])
