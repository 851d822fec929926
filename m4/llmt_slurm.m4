# llmt_slurm.m4: LLMT_CHECK_SLURM: Slurm's spank.h and release number
# (--with-slurm=PREFIX), the plugin and config directories, sbatch/srun.
# Sets SLURM_CPPFLAGS, SLURM_VERSION, slurmplugindir, slurmsysconfdir.
AC_DEFUN([LLMT_CHECK_SLURM], [
AC_ARG_WITH([slurm], [AS_HELP_STRING([--with-slurm=DIR], [Slurm install prefix (default /usr)])],
	[SLURM_PREFIX=$withval], [SLURM_PREFIX=/usr])
SLURM_CPPFLAGS=""
AS_IF([test "$SLURM_PREFIX" != /usr], [SLURM_CPPFLAGS="-I$SLURM_PREFIX/include"])
save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
AC_CHECK_HEADER([slurm/spank.h], [], [LLMT_NEED([Slurm's slurm/spank.h], [libslurm-dev])], [#include <stdint.h>])
AC_MSG_CHECKING([Slurm version])
AC_COMPUTE_INT([slurm_vnum], [SLURM_VERSION_NUMBER], [#include <slurm/slurm_version.h>], [slurm_vnum=0])
SLURM_VERSION=$(printf "%d.%02d.%d" $(( (slurm_vnum >> 16) & 255 )) $(( (slurm_vnum >> 8) & 255 )) $(( slurm_vnum & 255 )))
AC_MSG_RESULT([$SLURM_VERSION])
CPPFLAGS=$save_CPPFLAGS
AC_ARG_WITH([slurm-plugindir], [AS_HELP_STRING([--with-slurm-plugindir=DIR], [where Slurm loads plugins from])],
	[slurmplugindir=$withval],
	[slurmplugindir=""
	 for d in "$SLURM_PREFIX/lib/x86_64-linux-gnu/slurm-wlm" "$SLURM_PREFIX/lib64/slurm" "$SLURM_PREFIX/lib/slurm"; do
		AS_IF([test -d "$d"], [slurmplugindir=$d; break])
	 done
	 AS_IF([test -z "$slurmplugindir"], [slurmplugindir='${libdir}/slurm'])])
AC_SUBST([SLURM_CPPFLAGS])
AC_SUBST([SLURM_VERSION])
AC_SUBST([slurmplugindir])
AC_DEFINE_UNQUOTED([LLMT_SLURM_VERSION], ["$SLURM_VERSION"], [Slurm release built against])
AC_ARG_WITH([slurm-sysconfdir], [AS_HELP_STRING([--with-slurm-sysconfdir=DIR], [Slurm's config dir (default /etc/slurm)])],
	[slurmsysconfdir=$withval], [slurmsysconfdir=/etc/slurm])
AC_SUBST([slurmsysconfdir])
AC_DEFINE_UNQUOTED([LLMT_DEFAULT_POLICY], ["$slurmsysconfdir/llm-train.yaml"], [default admin policy path])
AC_PATH_PROG([SBATCH], [sbatch], [], [$SLURM_PREFIX/bin$PATH_SEPARATOR$PATH])
AC_PATH_PROG([SRUN], [srun], [/usr/bin/srun], [$SLURM_PREFIX/bin$PATH_SEPARATOR$PATH])
AC_DEFINE_UNQUOTED([LLMT_SRUN], ["$SRUN"], [srun used by the wrapper])
])
