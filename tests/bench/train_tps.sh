#!/bin/sh
# train_tps.sh: training tokens/s of the 12-layer 768-wide model (seq 256,
# batch 8, byte vocabulary), ours bf16 and fp32 against PyTorch fp32 and
# bf16 autocast on the same threads, measured side by side in this run,
# plus MFU (6N + 6LTd FLOPs per token) against the bf16 dot-product peak
# measured in this run. Prints ratios; no thresholds.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
cfg="$top_srcdir/configs/bench-768.yaml"
text=/usr/share/common-licenses/GPL-3
steps=${BENCH_STEPS:-3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_PROC_BIND=${OMP_PROC_BIND:-true}
bin="$top_builddir/tests/bench"
val() { sed -n "s/.*$1 \([0-9.e+]*\).*/\1/p"; }
peak=$("$bin/bench_peak" | val bf16_peak_gflops)
out=$("$bin/bench_model" "$cfg" bf16 8 256 "$steps" "$text")
ours_bf=$(echo "$out" | val tokens_per_s)
fpt=$(echo "$out" | val flops_per_token)
ours_32=$("$bin/bench_model" "$cfg" fp32 8 256 "$steps" "$text" | val tokens_per_s)
pt_bf=$(/usr/bin/python3 "$top_srcdir/tests/bench/bench_torch.py" "$cfg" bf16 8 256 "$steps" "$text" | val tokens_per_s)
pt_32=$(/usr/bin/python3 "$top_srcdir/tests/bench/bench_torch.py" "$cfg" fp32 8 256 "$steps" "$text" | val tokens_per_s)
peak_after=$("$bin/bench_peak" | val bf16_peak_gflops)
awk -v ob="$ours_bf" -v o3="$ours_32" -v pb="$pt_bf" -v p3="$pt_32" -v f="$fpt" \
    -v pk="$peak" -v pk2="$peak_after" -v th="$OMP_NUM_THREADS" '
function mfu(tps) { return (pk > 0) ? 100 * tps * f / (pk * 1e9) : 0 }
BEGIN {
  if (pk2 > pk) pk = pk2
  printf "threads %d, bf16 peak %.1f GFLOP/s (best of before/after), %.4g FLOP/token\n", th, pk, f
  printf "%-22s %10s %12s %8s\n", "run", "tokens/s", "vs torch bf16", "MFU"
  printf "%-22s %10.1f %12.2f %7.1f%%\n", "ours bf16", ob, ob / pb, mfu(ob)
  printf "%-22s %10.1f %12.2f %7.1f%%\n", "ours fp32", o3, o3 / pb, mfu(o3)
  printf "%-22s %10.1f %12.2f %7.1f%%\n", "pytorch bf16 autocast", pb, 1.0, mfu(pb)
  printf "%-22s %10.1f %12.2f %7.1f%%\n", "pytorch fp32", p3, p3 / pb, mfu(p3)
  printf "ours bf16 / pytorch bf16 = %.2f   ours fp32 / pytorch fp32 = %.2f\n", ob / pb, o3 / p3
}'
