#!/bin/sh
# gpu_train.sh: llm-train itself on the GPU (LLM_TRAIN_GPU=0: the model,
# gradient norm, clipping and fused AdamW on the device, checkpoints through
# pinned asynchronous snapshots; bridge_optim.c) against llm-train on the
# CPU, same seed, same real text (KJV, scripts/make-corpus), bf16, tiny
# model (the path tests/gpu/emu_train.sh checks in emulation):
# - the loss curves of 30 steps agree within 3% at every step (bf16);
# - the GPU run saves at steps 10 and 20 while training goes on (the
#   snapshot copy overlaps the next step) and at 30; a GPU run resumed from
#   step 10 reproduces steps 11-30 (loss, norm) and the step-30 checkpoint
#   bit for bit (a snapshot that raced the next update would not);
# - a CPU run resumes the GPU's step-20 checkpoint: steps 21-30 within 3%;
# - pp=2 with both stages on the GPU (tied embedding exchanged through the
#   host): 10 steps within 3% of the CPU run;
# - with two GPUs or more: two data-parallel replicas (mpirun -np 2, one GPU
#   each: NCCL takes one rank per device) reduce over NCCL during backward
#   and pass the silent-data-corruption check every 5 steps (bit-identical
#   replicas), then resume from their step-5 checkpoint bit for bit.
# SKIP (77) without CUDA in the build, a GPU, or bible-kjv.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
drv=$top_builddir/tests/gpu/gpu_test
LT=$top_builddir/runtime/llm-train
if [ ! -x "$drv" ]; then
	echo "SKIP: built without CUDA (configure found no CUDA + NCCL)"
	exit 77
fi
"$drv" probe || exit $?
# LLMT_GPU_CORPUS: shards made elsewhere (tests/gpu/bundle), for a GPU
# machine without bible-kjv
if [ -z "${LLMT_GPU_CORPUS:-}" ]; then
	bible -l0 gen1:1 >/dev/null 2>&1 || { echo "SKIP: bible-kjv (and bible-kjv-text) not installed"; exit 77; }
fi
fail() { echo "FAIL: $*"; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu_train.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo   # one host
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
unset LLM_TRAIN_TP LLM_TRAIN_PP LLM_TRAIN_DP RANK WORLD_SIZE LLM_TRAIN_RESUME LLM_TRAIN_CKPT_DIR
if [ -n "${LLMT_GPU_CORPUS:-}" ]; then
	cp -r "$LLMT_GPU_CORPUS" "$W/corpus" || fail "cannot copy $LLMT_GPU_CORPUS"
else
	LLM_TRAIN=$LT "$top_srcdir/scripts/make-corpus" "$W/corpus" --max-bytes 300000 \
		--shard-tokens 100000 >/dev/null || fail "make-corpus failed"
fi
args="--model $top_srcdir/configs/tiny.yaml --data $W/corpus --seq 64 --micro-batch 4
	--grad-accum 2 --steps 30 --lr 1e-3 --warmup 3 --precision bf16 --seed 5 --quiet"

# run NAME GPU [options]: llm-train with LLM_TRAIN_GPU=GPU, checkpoints and
# metrics in $W/NAME
run() {
	_n=$1 _g=$2; shift 2
	# shellcheck disable=SC2086
	LLM_TRAIN_GPU=$_g timeout 100 "$LT" $args --ckpt-dir "$W/$_n" "$@" >"$W/$_n.out" 2>&1
	_rc=$?
	[ $_rc = 0 ] || { cat "$W/$_n.out"; fail "$_n: llm-train exited $_rc"; }
}
# same A B FIRST LAST TOL: loss and grad_norm of steps FIRST..LAST (0: equal)
same() {
	"${LLMT_PYTHON:-/usr/bin/python3}" "$top_srcdir/tests/gpu/metrics_cmp.py" "$W/$1/metrics.jsonl" "$W/$2/metrics.jsonl" \
		"$3" "$4" "$5" "$1 vs $2"
}

run cpu -1 --ckpt-interval 0
run gpu 0 --ckpt-interval 10
same cpu gpu 1 30 0.03 || exit 1
"${LLMT_PYTHON:-/usr/bin/python3}" -c 'import json,sys
r=[json.loads(l)["loss"] for l in open(sys.argv[1])]
sys.exit(0 if r[-1] < r[0] - 0.3 else "FAIL: the GPU run did not learn: %r -> %r" % (r[0], r[-1]))' \
	"$W/gpu/metrics.jsonl" || exit 1
run gpur 0 --ckpt-interval 10 --resume "$W/gpu/step_00000010"
same gpu gpur 11 30 0 || exit 1
cmp "$W/gpu/step_00000030/rank_00000.bin" "$W/gpur/step_00000030/rank_00000.bin" \
	|| fail "the resumed GPU run's step-30 checkpoint differs from the uninterrupted run's"
run cpur -1 --ckpt-interval 0 --resume "$W/gpu/step_00000020"
same gpu cpur 21 30 0.03 || exit 1
echo "GPU checkpoints: resume bit-identical on the GPU, loaded by the CPU"

command -v mpirun >/dev/null 2>&1 || { echo "PASS (mpirun missing: PP and DP not checked)"; exit 0; }
# pp=2 on one GPU (two ranks share it; no NCCL group: the activations and
# the tied embedding gradient cross through the host) against the CPU run
# shellcheck disable=SC2086
LLM_TRAIN_GPU=0 LLM_TRAIN_PP=2 timeout 100 mpirun --oversubscribe -np 2 -x LLM_TRAIN_GPU \
	-x LLM_TRAIN_PP -x OMP_NUM_THREADS "$LT" $args --steps 10 --ckpt-dir "$W/pp" --ckpt-interval 5 \
	>"$W/pp.out" 2>&1
rc=$?
[ $rc = 0 ] || { cat "$W/pp.out"; fail "GPU pp=2 run exited $rc"; }
same cpu pp 1 10 0.03 || exit 1
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${ngpu:-0}" -lt 2 ]; then
	echo "PASS (one GPU: the DP=2 device run needs two, NCCL takes one rank per GPU)"
	exit 0
fi
# dp NAME [options]: two replicas, one GPU each
dp() {
	_n=$1; shift
	# shellcheck disable=SC2086,SC2016
	LLM_TRAIN_DP=2 timeout 100 mpirun --oversubscribe -np 2 -x LLM_TRAIN_DP -x OMP_NUM_THREADS \
		sh -c 'LLM_TRAIN_GPU=$OMPI_COMM_WORLD_LOCAL_RANK exec "$@"' sh "$LT" $args --steps 10 \
		--sdc-interval 5 --ckpt-dir "$W/$_n" --ckpt-interval 5 "$@" >"$W/$_n.out" 2>&1
	_rc=$?
	[ $_rc = 0 ] || { cat "$W/$_n.out"; fail "GPU DP=2 run $_n exited $_rc (SDC check or failure)"; }
}
dp dp
n=$(wc -l < "$W/dp/metrics.jsonl")
[ "$n" -eq 10 ] || fail "DP=2 run wrote $n metric lines, want 10"
dp dpr --resume "$W/dp/step_00000005"
same dp dpr 6 10 0 || exit 1
for f in rank_00000.bin rank_00001.bin; do
	cmp "$W/dp/step_00000010/$f" "$W/dpr/step_00000010/$f" || fail "DP=2 resume: $f differs"
done
echo "PASS: DP=2 GPU replicas passed the SDC check at steps 5 and 10 and resume bit for bit"
