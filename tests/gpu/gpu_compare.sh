#!/bin/sh
# gpu_compare.sh: runs `gpu_test hash` (the device XXH3 against libxxhash) and
# `gpu_test compare` (see gpu_test.c) on configs/tiny.yaml and real English
# text. SKIP (77) without CUDA in the build or without a GPU.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
drv=$top_builddir/tests/gpu/gpu_test
if [ ! -x "$drv" ]; then
	echo "SKIP: built without CUDA (configure found no CUDA + NCCL)"
	exit 77
fi
# LLMT_GPU_TEST_CFGS: other configs (tests/gpu/check --emulate: a smaller one)
cfgs=${LLMT_GPU_TEST_CFGS:-"$top_srcdir/configs/tiny.yaml $top_srcdir/tests/reference/ref-gqa.yaml"}
"$drv" hash || exit $?
for cfg in $cfgs; do
	"$drv" compare "$cfg" "${LLMT_GPU_TEXT:-/usr/share/common-licenses/GPL-3}" || exit $?
done
