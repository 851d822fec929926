#!/bin/sh
# train_tps.sh: training tokens/s of the 12-layer 768-wide model (seq 256,
# batch 8, byte vocabulary, AdamW), ours bf16 and fp32 against PyTorch fp32
# and bf16 autocast on the same threads, measured side by side in this run,
# plus MFU (6N + 6LTd FLOPs per token) against the bf16 dot-product peak
# measured in this run. Prints ratios; no thresholds.
# Two figures per run: wall tokens/s, and CPU tokens/s = tokens / (process
# CPU seconds / threads), which stays fair when other jobs share the cores
# (ratios and MFU use the CPU figures; OMP_WAIT_POLICY=passive so idle
# threads do not spin into the CPU time, for ours and PyTorch alike).
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
cfg="$top_srcdir/configs/bench-768.yaml"
text=/usr/share/common-licenses/GPL-3
steps=${BENCH_STEPS:-3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
bin="$top_builddir/tests/bench"
val() { sed -n "s/.* *$1 \([0-9.e+]*\).*/\1/p" | head -1; }
field() { echo "$1" | tr ' ' '\n' | grep -A1 -x "$2" | tail -1; }
p1=$("$bin/bench_peak")
o_bf=$("$bin/bench_model" "$cfg" bf16 8 256 "$steps" "$text")
t_bf=$(/usr/bin/python3 "$top_srcdir/tests/bench/bench_torch.py" "$cfg" bf16 8 256 "$steps" "$text")
o_32=$("$bin/bench_model" "$cfg" fp32 8 256 "$steps" "$text")
t_32=$(/usr/bin/python3 "$top_srcdir/tests/bench/bench_torch.py" "$cfg" fp32 8 256 "$steps" "$text")
p2=$("$bin/bench_peak")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v ob="$(field "$o_bf" tokens_per_s)" -v obc="$(field "$o_bf" cpu_tokens_per_s)" \
    -v o3="$(field "$o_32" tokens_per_s)" -v o3c="$(field "$o_32" cpu_tokens_per_s)" \
    -v pb="$(field "$t_bf" tokens_per_s)" -v pbc="$(field "$t_bf" cpu_tokens_per_s)" \
    -v p3="$(field "$t_32" tokens_per_s)" -v p3c="$(field "$t_32" cpu_tokens_per_s)" \
    -v f="$(field "$o_bf" flops_per_token)" \
    -v pk1="$(field "$p1" cpu_bf16_peak_gflops)" -v pk2="$(field "$p2" cpu_bf16_peak_gflops)" \
    -v th="$OMP_NUM_THREADS" '
function mfu(tps) { return (pk > 0) ? 100 * tps * f / (pk * 1e9) : 0 }
function row(name, w, c) { printf "%-22s %9.1f %9.1f %9.2f %7.1f%%\n", name, w, c, c / pbc, mfu(c) }
BEGIN {
  pk = pk1 > pk2 ? pk1 : pk2
  printf "threads %d; bf16 dot-product peak %.1f GFLOP/s (CPU time, best of before/after); %.4g FLOP/token\n", th, pk, f
  printf "%-22s %9s %9s %9s %8s\n", "run", "wall t/s", "cpu t/s", "vs pt bf16", "MFU"
  row("ours bf16", ob, obc); row("ours fp32", o3, o3c)
  row("pytorch bf16 autocast", pb, pbc); row("pytorch fp32", p3, p3c)
  printf "ours bf16 / pytorch bf16 = %.2f (wall %.2f); ours fp32 / pytorch fp32 = %.2f (wall %.2f)\n", obc / pbc, ob / pb, o3c / p3c, o3 / p3
}'
