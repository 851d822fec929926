#!/bin/sh
# tests/gpu/emu_recompute.sh: llm-train --recompute attn and full on the
# GPU backend end to end (llm-train-emu: the GPU code over the emulated
# CUDA runtime, NCCL over the MPI groups), as real MPI jobs on the
# emulated cluster: at tp=2,dp=2 with the chunked attention and at dp=2
# with the fused one, each mode gives the per-step loss and gradient norm
# of --recompute none bit for bit, and the same checkpoint files (weights,
# AdamW state) byte for byte. Fails on the old code: llm-train refused
# --recompute attn|full on the GPU backend (exit 64).
# SKIP without CUDA in the build (no llm-train-emu), Slurm or bible-kjv.
set -u
EMU=$top_builddir/tests/gpu/llm-train-emu
if [ ! -x "$EMU" ]; then
	echo "SKIP: built without CUDA (configure found no CUDA + NCCL): no llm-train-emu"
	exit 77
fi
. "$top_srcdir/tests/runtime/loop_lib.sh"
W=$CLUSTER_WORK
MODEL=$top_srcdir/tests/gpu/emu.yaml
for a in chunked fused; do
	printf '#!/bin/sh\nLLM_TRAIN_GPU=0 LLM_TRAIN_GPU_ATTN=%s exec "$@"\n' "$a" >"$W/$a"
	chmod +x "$W/$a"
done
common="--seq 8 --micro-batch 1 --grad-accum 2 --lr 1e-3 --warmup 1 --seed 5 --steps 2"

# run NAME ATTN TP PP DP MODE: two steps, the checkpoint of step 2 in $W/NAME
run() {
	_name=$1 _attn=$2 _tp=$3 _pp=$4 _dp=$5 _mode=$6
	LT=$EMU LAUNCH=$W/$_attn rtrain "$W/$_name" "" "$_tp" "$_pp" "$_dp" $common \
		--recompute "$_mode" --ckpt-dir "$W/$_name" --ckpt-interval 2
	_rc=$?
	[ $_rc = 0 ] || { cat "$CLUSTER_WORK/last.out"; fail "$_name: llm-train --recompute $_mode exited $_rc"; }
}
# same A B: B's metrics and step-2 checkpoint files are A's, bit for bit
same() {
	/usr/bin/python3 "$top_srcdir/tests/gpu/metrics_cmp.py" "$W/$1/metrics.jsonl" \
		"$W/$2/metrics.jsonl" 1 2 0 "$1 vs $2" || exit 1
	_n=0
	for _f in "$W/$1"/step_00000002/rank_*.bin; do
		cmp "$_f" "$W/$2/step_00000002/${_f##*/}" || fail "$2: ${_f##*/} differs from $1's"
		_n=$((_n + 1))
	done
	[ $_n -gt 0 ] || fail "$1: no checkpoint files"
	echo "$2: losses, norms and $_n checkpoint files the same bits as $1"
}
for m in none attn full; do
	run "c-$m" chunked 2 1 2 "$m"
done
same c-none c-attn
same c-none c-full
for m in none attn full; do
	run "f-$m" fused 1 1 2 "$m"
done
same f-none f-attn
same f-none f-full
echo "PASS: --recompute attn and full on the emulated GPU: the bits of none (tp=2 dp=2 chunked, dp=2 fused)"
