# llmt_onednn.m4: LLMT_CHECK_ONEDNN: oneDNN's C API (oneapi/dnnl/dnnl.h,
# libdnnl), the runtime's matrix products. Sets DNNL_LIBS.
AC_DEFUN([LLMT_CHECK_ONEDNN], [
AC_CHECK_HEADER([oneapi/dnnl/dnnl.h], [], [LLMT_NEED([oneDNN header oneapi/dnnl/dnnl.h], [libdnnl-dev])])
AC_CHECK_LIB([dnnl], [dnnl_engine_create], [DNNL_LIBS=-ldnnl], [LLMT_NEED([oneDNN library], [libdnnl-dev])])
AC_SUBST([DNNL_LIBS])
])
