#!/bin/sh
# gpu_nccl.sh: the NCCL paths on one GPU, as one process (world size 1, so
# every TP, PP and DP group has one rank) with real English text:
# `gpu_test nccl` (communicators for the TP, PP and DP groups, each
# collective) on configs/tiny.yaml, and `gpu_test tp` (the GPU model's
# tensor-parallel path with a one-rank TP group) on configs/tiny.yaml (tied
# MHA) and tests/reference/ref-gqa.yaml (GQA, QK-norm, z-loss); see
# gpu_test.c. SKIP (77) without CUDA in the build or without a GPU.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
drv=$top_builddir/tests/gpu/gpu_test
if [ ! -x "$drv" ]; then
	echo "SKIP: built without CUDA (configure found no CUDA + NCCL)"
	exit 77
fi
"$drv" probe || exit $?
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self
unset LLM_TRAIN_TP LLM_TRAIN_PP LLM_TRAIN_DP RANK WORLD_SIZE
text=${LLMT_GPU_TEXT:-/usr/share/common-licenses/GPL-3}
launch=""
command -v mpirun >/dev/null 2>&1 && launch="mpirun -np 1"   # else an MPI singleton
rc=0
# LLMT_GPU_TEST_CFGS: other configs (tests/gpu/check --emulate: a smaller one)
cfgs=${LLMT_GPU_TEST_CFGS:-"$top_srcdir/configs/tiny.yaml $top_srcdir/tests/reference/ref-gqa.yaml"}
$launch "$drv" nccl "${cfgs%% *}" "$text" || rc=1
for cfg in $cfgs; do
	echo "== tp $(basename "$cfg")"
	$launch "$drv" tp "$cfg" "$text" || rc=1
done
exit $rc
