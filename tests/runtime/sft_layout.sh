#!/bin/sh
# tests/runtime/sft_layout.sh: packed instruction samples (tokenize-sft on
# WordNet pairs, a SentencePiece vocabulary of tokenizer-train) give the
# same training under every layout: (tp,pp,dp) = (1,1,1) (2,1,1) (1,2,1)
# (1,1,2) (2,2,2) with micro-batches of 4, 4, 2, 2, 1 sequences (so 2, 2,
# 4, 2, 4 accumulation steps), each a real MPI job on the emulated cluster,
# 4 steps of a global batch of 8 in fp32: the same loss curve, gradient
# norms and held-out masked loss (within 1e-6) and the same step-4 weights
# and AdamW moments (loop_layout.sh's limits). The loss of a step is the
# mean over the trained targets of the whole global batch: a per
# micro-batch or per rank mean would differ between these layouts, as
# micro-batches hold different numbers of trained targets. Also: the
# metrics' tokens/s counts trained tokens only (below the 1024 tokens a
# step reads per step time), and the loss falls.
# Fails on the old code: no tokenize-sft, and shards with masks trained on
# every token.
set -u
. "$top_srcdir/tests/runtime/loop_lib.sh"
. "$top_srcdir/tests/runtime/sft_lib.sh"
W=$CLUSTER_WORK
sft_data "$W/sft" 128 || fail "instruction data"
CORPUS=$W/sft/data
MODEL=$top_srcdir/tests/runtime/sft-tiny.yaml

run() { # name tp pp dp B A
	rtrain "$W/$1" "" "$2" "$3" "$4" --seq 128 --steps 4 --micro-batch "$5" --grad-accum "$6" \
		--precision fp32 --lr 3e-3 --ckpt-dir "$W/$1" --ckpt-interval 4 --eval-interval 4 --eval-batches 2 \
		|| { cat "$W/last.out"; fail "$1: llm-train exited $?"; }
	losses "$W/$1/metrics.jsonl" >"$W/$1.loss"
	norms "$W/$1/metrics.jsonl" >"$W/$1.norm"
	[ "$(wc -l <"$W/$1.loss")" = 4 ] || fail "$1: want 4 metrics lines"
	/usr/bin/python3 -c 'import json,sys
print(json.loads(open(sys.argv[1]).readline())["val_loss"])' "$W/$1/eval.jsonl" >>"$W/$1.loss" ||
		fail "$1: no validation loss"
}
run l111 1 1 1 4 2
run l211 2 1 1 4 2
run l121 1 2 1 2 4
run l112 1 1 2 2 2
run l222 2 2 2 1 4

cmp_curve() { # a b tol [ext]
	paste "$W/$1.${4:-loss}" "$W/$2.${4:-loss}" | awk -v tol="$3" -v a="$1" -v b="$2" -v e="${4:-loss}" '
		{ d = $1 - $2; if (d < 0) d = -d; r = d / ($1 < 0 ? -$1 : $1);
		  if (r > worst) worst = r; if (r > tol) bad = 1 }
		END { printf "%s vs %s %s: worst relative difference %.2e (tolerance %g)\n", a, b, e, worst, tol; exit bad }'
}
cat "$W/l111.loss"
for l in l211 l121 l112 l222; do
	cmp_curve l111 "$l" 1e-6 || fail "$l differs from l111"
	cmp_curve l111 "$l" 1e-6 norm || fail "$l: gradient norms differ from l111's"
	/usr/bin/python3 "$top_srcdir/tests/runtime/ckpt_compare.py" "$W/l111/step_00000004" \
		"$W/$l/step_00000004" master=2e-3,adam_m=2e-4,adam_v=1e-4 ||
		fail "$l: step-4 weights or optimizer state differ from l111's"
done
# a fresh model's loss is near ln(512) = 6.24 when it is the mean over the
# trained targets (over all 1024 tokens it would be under half that)
awk 'NR == 1 { exit !($1 > 5.5 && $1 < 7) }' "$W/l111.loss" ||
	fail "step-1 loss $(head -1 "$W/l111.loss") is not near ln(512): not the mean over the trained targets"
awk 'NR == 1 { f = $1 } NR == 4 { if (!($1 < f - 0.3)) exit 1 }' "$W/l111.loss" ||
	fail "the masked loss did not fall over 4 steps"
# tokens/s x step time = the trained tokens of the step, fewer than the 1024 read
/usr/bin/python3 - "$W/l111/metrics.jsonl" <<'PY' || fail "tokens/s does not count trained tokens"
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    n = m['tokens_per_s'] * m['step_time_s']
    print('step %d: %.1f trained tokens (of 1024)' % (m['step'], n))
    assert 200 < n < 1000, n
PY
echo PASS
