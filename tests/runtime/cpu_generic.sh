#!/bin/sh
# tests/runtime/cpu_generic.sh: the portable CPU kernels forced with
# LLMT_CPU=generic against the AVX-512 BF16 ones chosen by cpuid: 8 steps
# of the tiny model, one process. fp32: the same bits (losses and the
# checkpointed weights); bf16: every loss within bf16's precision (2^-8
# relative) of the AVX-512 path's, and not bit-identical (both paths ran).
# A bad LLMT_CPU is refused with exit 64. Fails on the code before the
# run-time choice (no LLMT_CPU: the bf16 runs were identical).
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
[ -x "$LT" ] || fail "$LT is not built"
grep -q avx512_bf16 /proc/cpuinfo || { echo "SKIP: this CPU has no AVX-512 BF16 (only the portable kernels run)"; exit 77; }
W=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=2
cat "$top_srcdir"/runtime/model/*.c > "$W/in.txt"
"$LT" tokenize "$W/in.txt" "$W/data" --shard-tokens 100000 >/dev/null || fail "tokenize failed"

run() { # CPU PRECISION
	LLMT_CPU=$1 "$LT" --model "$top_srcdir/configs/tiny.yaml" --data "$W/data" --steps 8 \
		--seq 64 --micro-batch 4 --lr 1e-3 --warmup 2 --precision "$2" --quiet \
		--run-dir "$W/run_$1_$2" --ckpt-dir "$W/ck_$1_$2" --ckpt-interval 8 \
		>"$W/out_$1_$2" 2>&1 || { cat "$W/out_$1_$2"; fail "LLMT_CPU=$1 --precision $2: exit $?"; }
	grep -o '"loss":[^,]*' "$W/run_$1_$2/metrics.jsonl" | cut -d: -f2 >"$W/loss_$1_$2"
	[ "$(wc -l <"$W/loss_$1_$2")" = 8 ] || fail "LLMT_CPU=$1 $2: not 8 steps of metrics"
}
for p in fp32 bf16; do run auto $p; run generic $p; done

cmp -s "$W/loss_auto_fp32" "$W/loss_generic_fp32" || fail "fp32 losses differ: $(paste -d' ' "$W/loss_auto_fp32" "$W/loss_generic_fp32" | tr '\n' ';')"
cmp -s "$W/ck_auto_fp32/step_00000008/rank_00000.bin" "$W/ck_generic_fp32/step_00000008/rank_00000.bin" ||
	fail "fp32 weights after 8 steps differ between the AVX-512 and the portable kernels"
cmp -s "$W/loss_auto_bf16" "$W/loss_generic_bf16" && fail "bf16 losses bit-identical: the AVX-512 kernels did not run"
paste -d' ' "$W/loss_auto_bf16" "$W/loss_generic_bf16" | awk '
	{ d = $1 - $2; if (d < 0) d = -d; r = d / $1; if (r > m) m = r }
	END { printf "bf16: largest relative loss difference %.3g over 8 steps (tolerance 2^-8 = 0.0039)\n", m; exit !(m <= 1 / 256) }' ||
	fail "bf16 losses of the portable kernels outside bf16 precision of the AVX-512 ones"
echo "fp32: losses and weights bit-identical"

LLMT_CPU=avx9000 "$LT" --model "$top_srcdir/configs/tiny.yaml" --data "$W/data" --steps 1 --quiet >"$W/bad" 2>&1
rc=$?
[ $rc = 64 ] || fail "LLMT_CPU=avx9000: exit $rc, expected 64"
grep -q "LLMT_CPU=avx9000" "$W/bad" || fail "LLMT_CPU=avx9000: the message does not name the value: $(cat "$W/bad")"
echo "PASS"
