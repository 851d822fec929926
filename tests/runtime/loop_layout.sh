#!/bin/sh
# tests/runtime/loop_layout.sh: layout invariance. The same global batch
# (8 sequences) trained for 4 steps of the tiny model in fp32 under
# (tp,pp,dp) = (1,1,1) (2,1,1) (1,2,1) (1,1,2) (2,2,2), each a real MPI
# job on the emulated cluster, must give the same loss curve and the same
# validation loss after step 4 (2 global batches of held-out text):
# relative difference <= 1e-4 (fp32 sums in another order; observed
# ~1e-7). Also: (2,2,2) with RANK reversed against the MPI rank (as the
# plugin may set it); (1,4,1) against (1,1,1) at sequence 128, whose
# activations (128 KiB) go by rendezvous, so a 1F1B ordering error would
# deadlock; and bf16 under (2,2,2) within 5e-3 of fp32 (bf16 rounding of
# the matmul inputs).
set -u
. "$top_srcdir/tests/runtime/loop_lib.sh"

run() { # name tp pp dp B A [extra...]
	_name=$1; shift
	_tp=$1 _pp=$2 _dp=$3 _b=$4 _a=$5; shift 5
	rtrain "$CLUSTER_WORK/$_name" "" "$_tp" "$_pp" "$_dp" --steps 4 --micro-batch "$_b" --grad-accum "$_a" \
		--ckpt-dir "$CLUSTER_WORK/$_name" --ckpt-interval 0 --eval-interval 4 --eval-batches 2 "$@" \
		|| { cat "$CLUSTER_WORK/last.out"; fail "$_name: llm-train exited $?"; }
	losses "$CLUSTER_WORK/$_name/metrics.jsonl" >"$CLUSTER_WORK/$_name.loss"
	[ "$(wc -l <"$CLUSTER_WORK/$_name.loss")" = 4 ] || fail "$_name: want 4 metrics lines"
	/usr/bin/python3 -c 'import json,sys
print(json.loads(open(sys.argv[1]).readline())["val_loss"])' "$CLUSTER_WORK/$_name/eval.jsonl" \
		>>"$CLUSTER_WORK/$_name.loss" || fail "$_name: no validation loss"
}
run l111 1 1 1 4 2 --precision fp32
run l211 2 1 1 4 2 --precision fp32
run l121 1 2 1 2 4 --precision fp32
run l112 1 1 2 2 2 --precision fp32
run l222 2 2 2 1 4 --precision fp32
run b222 2 2 2 1 4 --precision bf16
# 4 stages with activations over the TCP eager limit (2x128x128 fp32 =
# 128 KiB, sent by rendezvous): the 1F1B exchanges must not deadlock
run s111 1 1 1 2 4 --precision fp32 --seq 128
run s141 1 4 1 2 4 --precision fp32 --seq 128
# the plugin's RANK is topology-aware and may differ from the MPI rank:
# reversed RANKs must change nothing
cat >"$CLUSTER_WORK/reverse" <<'SH'
#!/bin/sh
# (the plugin's coordinates describe its own RANK: drop them with it)
unset LLM_TRAIN_TP_RANK LLM_TRAIN_PP_RANK LLM_TRAIN_DP_RANK
RANK=$((SLURM_NTASKS - 1 - SLURM_PROCID)) WORLD_SIZE=$SLURM_NTASKS exec "$@"
SH
chmod +x "$CLUSTER_WORK/reverse"
LAUNCH=$CLUSTER_WORK/reverse run r222 2 2 2 1 4 --precision fp32

cmp_curve() { # a b tol
	paste "$CLUSTER_WORK/$1.loss" "$CLUSTER_WORK/$2.loss" | awk -v tol="$3" -v a="$1" -v b="$2" '
		{ d = $1 - $2; if (d < 0) d = -d; r = d / ($1 < 0 ? -$1 : $1);
		  if (r > worst) worst = r; if (r > tol) bad = 1 }
		END { printf "%s vs %s: worst relative difference %.2e (tolerance %g)\n", a, b, worst, tol; exit bad }'
}
cat "$CLUSTER_WORK/l111.loss"
for l in l211 l121 l112 l222 r222; do
	cmp_curve l111 "$l" 1e-4 || fail "$l differs from l111"
done
cmp_curve s111 s141 1e-4 || fail "s141 differs from s111"
cmp_curve l222 b222 5e-3 || fail "bf16 curve too far from fp32"
# the curve must go down (training works), and not be a constant
awk 'NR == 1 { f = $1 } END { if (!($1 < f - 0.2)) exit 1 }' "$CLUSTER_WORK/l111.loss" \
	|| fail "loss did not decrease over 4 steps"
echo PASS
