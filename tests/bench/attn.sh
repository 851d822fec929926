#!/bin/sh
# attn.sh: one layer's causal attention (forward + backward through the
# rotary prep) of the bench model's shape, the blocked bf16 kernel
# (runtime/model/attn.c) against the oneDNN full-square path it replaced,
# measured side by side in this run (bench_attn); also at T=1024, where the
# skipped upper triangle is a larger share. Prints times and ratios; no
# thresholds.
set -u
b=${top_builddir:-../..}/tests/bench/bench_attn
[ -x "$b" ] || { echo "bench_attn not built (make -C tests bench/bench_attn)"; exit 1; }
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
"$b" 8 12 256 64 10
"$b" 2 12 1024 64 5
