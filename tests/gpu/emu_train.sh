#!/bin/sh
# tests/gpu/emu_train.sh: llm-train's GPU path end to end on a machine
# without a GPU. llm-train-emu is llm-train with the GPU backend built over
# the emulated CUDA runtime (cuda_emu.c, kernels as fibers: gk_emu.h; NCCL
# over the MPI groups), so the model, DP reduction, norm, clipping, AdamW,
# weight all-gather and checkpoint snapshots run the device code paths.
# Each run is a real MPI job launched through the plugin
# (srun --llm-train=tp=..,pp=..,dp=..) on the emulated cluster, the tiny
# emu.yaml model (tied embeddings), steps of 2 micro-batches, bf16:
# - emulated GPU (chunked attention: the CPU model's arithmetic) vs CPU
#   llm-train, same seed and data, at dp=2, at dp=3
#   (ZeRO-1 tails) and at pp=2,dp=2 (the tied embedding gradient crosses
#   stages): per-step loss
#   and gradient norm within 2e-6 relative (the same bf16 products, fp32
#   sums in another order in the emulated kernels: measured <= 1.3e-7);
#   the SDC check at every step passes (bit-identical DP replicas) and the
#   checkpoints say replicas_agree;
# - the fused attention (the default, dev_flash.cu) at dp=2 against the
#   chunked run: per-step loss and gradient norm within 2e-3 relative (the
#   probabilities in fp32, not rounded to bf16: measured 2.3e-4), the
#   SDC check at every step passes (bit-identical DP replicas);
# - a resume of the GPU run from its step-2 checkpoint (saved while step 3
#   ran) reproduces steps 3 and 4 (loss, norm) and the step-4 checkpoint
#   files bit for bit;
# - checkpoints cross backends and layouts: a CPU run at dp=2 resumes the
#   GPU pp=2,dp=2 checkpoint, a GPU run at dp=2 the CPU's, each
#   next step within 2e-6 of the run it continues (measured 0);
# - resharding (dp 2 -> 4 -> 2) of the device's ZeRO-1 state: the GPU and
#   the CPU resume the same checkpoint at another dp, next steps within
#   2e-6 of each other;
# - the device path moves no gradients or weights to the host per step:
#   host<->device bytes per step (counted by the emulation) stay under a
#   tenth of the fp32 weights;
# - faults on the device: spike and nan steps are skipped, a bit flipped
#   in one replica is found by the SDC check (exit 86, sdc.json); bit 30
#   of one rank's device fp32 master share flipped alone (masterflip)
#   is found by that rank's share check before the update (exit 86,
#   cause master_share, no checkpoint after the fault).
# SKIP without CUDA in the build (no llm-train-emu), Slurm or bible-kjv.
set -u
EMU=$top_builddir/tests/gpu/llm-train-emu
if [ ! -x "$EMU" ]; then
	echo "SKIP: built without CUDA (configure found no CUDA + NCCL): no llm-train-emu"
	exit 77
fi
. "$top_srcdir/tests/runtime/loop_lib.sh"
CPU=$LT
W=$CLUSTER_WORK
py=/usr/bin/python3
if ldd "$EMU" | grep -E 'libcudart|libnccl|libcublas'; then
	fail "llm-train-emu links the CUDA runtime or NCCL"
fi
MODEL=$top_srcdir/tests/gpu/emu.yaml
# the backend of each task, whatever the plugin set for a node without GPUs
for g in 0 -1; do
	printf '#!/bin/sh\nLLM_TRAIN_GPU=%s LLM_TRAIN_GPU_ATTN=chunked exec "$@"\n' "$g" >"$W/gpu$g"
	chmod +x "$W/gpu$g"
done
printf '#!/bin/sh\nLLM_TRAIN_GPU=0 LLM_TRAIN_GPU_ATTN=fused exec "$@"\n' >"$W/gpuf"
chmod +x "$W/gpuf"
common="--seq 8 --micro-batch 1 --grad-accum 2 --lr 1e-3 --warmup 1 --seed 5 --sdc-interval 1"

# launch DIR COPY TP PP DP [options]: rtrain (tests/runtime/loop_lib.sh):
# once more only when no rank reached llm-train's main
launch() { rtrain "$@"; }
# go NAME gpu|cpu TP PP DP [options]: one run, checkpoints in $W/NAME
go() {
	_name=$1 _b=$2; shift 2
	case $_b in
	gpu) LT=$EMU LAUNCH=$W/gpu0 ;;
	fused) LT=$EMU LAUNCH=$W/gpuf ;;
	*) LT=$CPU LAUNCH=$W/gpu-1 ;;
	esac
	launch "$W/$_name" "" "$@" $common --ckpt-dir "$W/$_name" --ckpt-interval 2
	_rc=$?
	cp "$CLUSTER_WORK/last.out" "$W/$_name.out"
	return $_rc
}
ok() {
	go "$@"
	_r=$?
	[ $_r = 0 ] || { cat "$W/$1.out"; fail "$1: llm-train exited $_r"; }
}

# cmp_metrics A B FIRST LAST TOL: steps FIRST..LAST of A/metrics.jsonl and
# B/metrics.jsonl: loss and grad_norm within TOL relative (0: equal bits)
cmp_metrics() {
	$py "$top_srcdir/tests/gpu/metrics_cmp.py" "$W/$1/metrics.jsonl" "$W/$2/metrics.jsonl" "$3" "$4" "$5" "$1 vs $2"
}
agree() { grep -q '"replicas_agree": *true' "$W/$1/step_0000000$2/manifest.json" || fail "$1: step $2 manifest lacks replicas_agree true"; }

# ---- dp=2 and pp=2,dp=2: GPU vs CPU; bytes per step -------------------------
ok g12 gpu 1 1 2 --steps 4
ok c12 cpu 1 1 2 --steps 4
cmp_metrics c12 g12 1 4 2e-6 || exit 1
agree g12 2
agree g12 4
ok f12 fused 1 1 2 --steps 4
cmp_metrics g12 f12 1 4 2e-3 || exit 1
agree f12 2
agree f12 4
ok g22 gpu 1 2 2 --steps 3
ok c22 cpu 1 2 2 --steps 3
cmp_metrics c22 g22 1 3 2e-6 || exit 1
agree g22 3
# dp=3: bucket lengths not divisible by dp leave tails (all-reduced and
# updated on every replica, counted in the norm once)
ok g13 gpu 1 1 3 --steps 2
ok c13 cpu 1 1 3 --steps 2
cmp_metrics c13 g13 1 2 2e-6 || exit 1
agree g13 2
# tp=2 and tp=2,dp=2: the TP sums are NCCL all-reduces in the GPU model; the
# device norm counts TP-replicated tensors once
ok g21 gpu 2 1 1 --steps 2
ok c21 cpu 2 1 1 --steps 2
cmp_metrics c21 g21 1 2 2e-6 || exit 1
ok g212 gpu 2 1 2 --steps 2
ok c212 cpu 2 1 2 --steps 2
cmp_metrics c212 g212 1 2 2e-6 || exit 1
agree g212 2

# ---- resume: bit-identical on the GPU; across backends and layouts ----------
ok g12r gpu 1 1 2 --steps 4 --resume "$W/g12/step_00000002"
cmp_metrics g12 g12r 3 4 0 || exit 1
for f in rank_00000.bin rank_00001.bin; do
	cmp "$W/g12/step_00000004/$f" "$W/g12r/step_00000004/$f" \
		|| fail "resumed GPU run: step-4 checkpoint $f differs from the uninterrupted run's"
done
echo "resumed GPU run: step-4 checkpoint files identical to the uninterrupted run's"
ok c22x cpu 1 1 2 --steps 3 --resume "$W/g22/step_00000002"
cmp_metrics g22 c22x 3 3 2e-6 || exit 1
ok g22x gpu 1 1 2 --steps 3 --resume "$W/c22/step_00000002"
cmp_metrics c22 g22x 3 3 2e-6 || exit 1

# ---- resharding: the GPU dp=2 checkpoint (each rank's ZeRO-1 share of the
# fp32 master, m and v on the device) resumed at dp=4, and that run's
# checkpoint back at dp=2, each on the GPU and on the CPU (host optimizer)
# from the same files: the next steps within 2e-6 (a share loaded wrong or
# fresh m and v differ by far more)
ok g14x gpu 1 1 4 --steps 4 --resume "$W/g12/step_00000002"
ok c14x cpu 1 1 4 --steps 4 --resume "$W/g12/step_00000002"
cmp_metrics c14x g14x 3 4 2e-6 || exit 1
ok g12y gpu 1 1 2 --steps 5 --resume "$W/g14x/step_00000004"
ok c12y cpu 1 1 2 --steps 5 --resume "$W/g14x/step_00000004"
cmp_metrics c12y g12y 5 5 2e-6 || exit 1
echo "resharding: GPU checkpoints of dp=2 and dp=4 resumed at dp=4 and dp=2 as the CPU resumes them"

# ---- host traffic per step: a 2-step run minus a 1-step run ---------------
# (dp=2, no checkpoints, no SDC checks: what every step moves)
for k in 1 2; do
	rm -f "$W/s$k.stats"
	LT=$EMU LAUNCH=$W/gpu0 LLMT_EMU_STATS=$W/s$k.stats launch "$W/s$k" "" 1 1 2 $common --steps $k \
		--sdc-interval 0 --run-dir "$W/s$k"
	rc=$?
	[ $rc = 0 ] || { cat "$CLUSTER_WORK/last.out"; fail "s$k: llm-train exited $rc"; }
done
$py - "$W/g12/step_00000002/manifest.json" "$W/s1.stats" "$W/s2.stats" <<'PY' || exit 1
import json, sys
from functools import reduce
m = json.load(open(sys.argv[1]))
n = sum(reduce(lambda a, b: a * b, t['shape'], 1) for t in m['tensors'])
def tot(p):
    rows = [list(map(int, l.split())) for l in open(p)]
    if len(rows) != 2:
        sys.exit('FAIL: %s: %d processes reported, want 2' % (p, len(rows)))
    return [max(r[0] for r in rows), max(r[1] for r in rows)]
one, two = tot(sys.argv[2]), tot(sys.argv[3])
h2d, d2h = two[0] - one[0], two[1] - one[1]
lim = 0.1 * 4 * n
print('host<->device traffic per step: %.0f bytes up, %.0f down; fp32 weights %d bytes'
      % (h2d, d2h, 4 * n))
if not (0 < h2d < lim and 0 < d2h < lim):
    sys.exit('FAIL: a step moves %.0f / %.0f bytes to / from the device (limit %.0f)' % (h2d, d2h, lim))
PY

# ---- faults on the device ---------------------------------------------------
LLM_TRAIN_FAULT=spike@2,nan@3:1,bitflip@3:1 go gf gpu 1 1 2 --steps 3
rc=$?
[ $rc = 86 ] || { cat "$W/gf.out"; fail "faults: want exit 86 (SDC), got $rc"; }
$py - "$W/gf/metrics.jsonl" <<'PY' || exit 1
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
sk = [x['skipped'] for x in r]
if sk != [False, True] or not r[1]['loss'] > 1000:
    sys.exit('FAIL: faults: skipped flags %r (want [False, True]: no line for the SDC step 3), '
             'step 2 loss %r (want a spike)' % (sk, r[-1]['loss']))
PY
grep -q 'step 3: non-finite loss or gradient' "$W/gf.out" || { cat "$W/gf.out"; fail "faults: step 3 (nan) not skipped"; }
[ -s "$W/gf/sdc.json" ] || fail "faults: no sdc.json after the bitflip"
grep -q '"step":3' "$W/gf/sdc.json" || fail "faults: sdc.json is not about step 3: $(cat "$W/gf/sdc.json")"
echo "faults on the device: spike and nan steps skipped, bitflip found by the SDC check at step 3"
# masterflip: rank 1's device master share corrupted at rest during step 3
# (after its step-2 update and checkpoint): the replicas' bf16 weights
# still agree; the share check (every step at dp > 1 with --sdc-interval)
# sees it before the update: 86, cause master_share, suspect dp rank 1
# alone, the step-2 checkpoint the last
LLM_TRAIN_FAULT=masterflip@3:1 go gm gpu 1 1 2 --steps 6
masterflip_check "masterflip on the device" $? "$W/gm.out" "$W/gm" "$CPU"
echo PASS
