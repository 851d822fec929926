#!/bin/sh
# emu_orders.sh: test_gpu_emu (every kernel against kernels.c) and
# test_gpu_emu_model (whole GPU model steps against the CPU model) again
# with the emulation's threads and blocks resumed in reverse order, then shuffled (two seeds): a
# missing __syncthreads, a read of another thread's shared-memory write
# before the barrier, or a kernel that needs its blocks in order passes
# only in some orders (gk_emu.h: GK_EMU_ORDER). SKIP (77) without CUDA in
# the build (no emulation).
set -u
bin=$top_builddir/tests/gpu/test_gpu_emu
if [ ! -x "$bin" ]; then
	echo "SKIP: built without CUDA (configure found no CUDA + NCCL): no GPU emulation"
	exit 77
fi
rc=0
for prog in test_gpu_emu test_gpu_emu_model; do
	bin=$top_builddir/tests/gpu/$prog
	for run in reverse:1 shuffle:1 shuffle:2; do
		order=${run%%:*} seed=${run#*:}
		if out=$(GK_EMU_ORDER=$order GK_EMU_SEED=$seed "$bin" 2>&1); then
			echo "ok $prog with GK_EMU_ORDER=$order GK_EMU_SEED=$seed"
		else
			echo "FAIL $prog with GK_EMU_ORDER=$order GK_EMU_SEED=$seed:"
			echo "$out" | grep -E 'ERROR|FAILED|LINE|gk_emu|cuda_emu' | head -n 20
			rc=1
		fi
	done
done
exit $rc
