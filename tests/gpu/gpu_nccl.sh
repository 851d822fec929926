#!/bin/sh
# gpu_nccl.sh: runs `gpu_test nccl` (see gpu_test.c) on configs/tiny.yaml and
# real English text. SKIP (77) without CUDA in the build or without a GPU.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
drv=$top_builddir/tests/gpu/gpu_test
if [ ! -x "$drv" ]; then
	echo "SKIP: built without CUDA (configure found no CUDA + NCCL)"
	exit 77
fi
"$drv" probe || exit $?
# one process: world size 1, so TP, PP and DP groups have one rank each
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self
unset LLM_TRAIN_TP LLM_TRAIN_PP LLM_TRAIN_DP RANK WORLD_SIZE
set -- "$drv" nccl "$top_srcdir/configs/tiny.yaml" "${LLMT_GPU_TEXT:-/usr/share/common-licenses/GPL-3}"
if command -v mpirun >/dev/null 2>&1; then
	exec mpirun -np 1 "$@"
fi
exec "$@"     # MPI singleton
