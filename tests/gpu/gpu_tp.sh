#!/bin/sh
# gpu_tp.sh: runs `gpu_test tp` (see gpu_test.c: the GPU model's tensor-
# parallel path with a one-rank TP group, NCCL on one GPU) on
# configs/tiny.yaml (tied MHA) and tests/reference/ref-gqa.yaml (GQA,
# QK-norm, z-loss) with real English text. SKIP (77) without CUDA in the
# build or without a GPU.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
drv=$top_builddir/tests/gpu/gpu_test
if [ ! -x "$drv" ]; then
	echo "SKIP: built without CUDA (configure found no CUDA + NCCL)"
	exit 77
fi
"$drv" probe || exit $?
# one process: world size 1, so the TP group has one rank
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self
unset LLM_TRAIN_TP LLM_TRAIN_PP LLM_TRAIN_DP RANK WORLD_SIZE
launch=""
command -v mpirun >/dev/null 2>&1 && launch="mpirun -np 1"   # else an MPI singleton
rc=0
for cfg in "$top_srcdir/configs/tiny.yaml" "$top_srcdir/tests/reference/ref-gqa.yaml"; do
	echo "== $(basename "$cfg")"
	$launch "$drv" tp "$cfg" "${LLMT_GPU_TEXT:-/usr/share/common-licenses/GPL-3}" || rc=1
done
exit $rc
