#!/bin/sh
# tests/runtime/sft_finetune.sh: fine-tuning end to end on the emulated
# cluster, with real Slurm jobs. A small model (tests/runtime/sft-tiny.yaml)
# with a SentencePiece vocabulary of `llm-train tokenizer-train` on KJV is
# pretrained briefly on KJV, exported, imported into a fresh checkpoint
# directory, then fine-tuned through `sbatch --llm-train=tp=2,dp=auto`
# under llm-train-wrap on WordNet pairs ("What does the word X mean?"
# answered by its gloss; tests/runtime/sft_lib.sh), split by word:
# - the held-out masked loss after fine-tuning is well below the base
#   model's (both printed): at least 0.4 nats lower (measured 5.13 for
#   the base model, 4.55 after 30 steps of 8 sequences; more steps go
#   lower, slowly: 4.52 after 30 steps at 2.5x the learning rate);
# - `generate` answers a held-out word (printed; no claim on its quality);
# - the same job with one rank killed by kill -9 after its step-10
#   checkpoint (the wrapper restarts it) ends with fp32 weights and AdamW
#   moments bit-identical to the unfaulted job's.
# Fails on the old code: no tokenize-sft, no loss mask.
set -u
. "$top_srcdir/tests/runtime/loop_lib.sh"
. "$top_srcdir/tests/runtime/sft_lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"     # WRAP, real_pid
W=$CLUSTER_WORK
MODEL=$top_srcdir/tests/runtime/sft-tiny.yaml
STEPS=30
sbatch --help 2>&1 | grep -q -- '--llm-train' || fail "sbatch has no --llm-train: the plugin is not loaded"
sft_data "$W/sft" 128 || fail "instruction data"

# the base model: a short pretraining on KJV in the same vocabulary
"$LT" tokenize "$W/sft/kjv.txt" "$W/kjv" --tokenizer "$W/sft/spm.model" >/dev/null || fail "tokenize KJV"
"$LT" --model "$MODEL" --data "$W/kjv" --seq 128 --micro-batch 8 --steps 20 --lr 3e-3 --warmup 2 \
	--precision fp32 --ckpt-dir "$W/base" --quiet >"$W/base.out" 2>&1 || { cat "$W/base.out"; fail "pretraining: exit $?"; }
"$LT" export --dtype fp32 "$W/base" "$W/hf" >/dev/null || fail "export: exit $?"
cp "$W/sft/spm.model" "$W/hf/tokenizer.model"
"$LT" import "$W/hf" "$W/I" >"$W/import.out" 2>&1 || { cat "$W/import.out"; fail "import: exit $?"; }

# the base model's held-out masked loss: one evaluation of the imported
# weights (the same 4 held-out batches the fine-tuning run evaluates)
"$LT" --model "$MODEL" --data "$W/sft/data" --seq 128 --micro-batch 8 --steps 1 --lr 1e-30 --min-lr 0 \
	--warmup 0 --precision fp32 --init-from "$W/hf" --ckpt-dir "$W/b0" --eval-interval 1 --eval-batches 4 \
	--quiet >"$W/b0.out" 2>&1 || { cat "$W/b0.out"; fail "base evaluation: exit $?"; }

job() { # NAME: fine-tune a copy of the import through sbatch --llm-train and the wrapper
	cp -r "$W/I" "$W/$1"
	cat >"$W/$1.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/$1" --ckpt-tool "$LT" --tick 0.1 --hang-timeout-min 4 --hang-timeout-max 60 \\
	--backoff 0.2 -- "$LT" --model "$MODEL" --data "$W/sft/data" --seq 128 --micro-batch 4 \\
	--precision fp32 --lr 4e-3 --warmup 2 --steps $STEPS --ckpt-interval 10 --eval-interval $STEPS \\
	--eval-batches 4 --quiet
JOB
	chmod +x "$W/$1.sh"
	(cd "$W" && SLURM_MPI_TYPE=pmix OMP_NUM_THREADS=1 sbatch --parsable --requeue --open-mode=append \
		-o "$1.out" -N2 --ntasks-per-node=2 --llm-train=tp=2,dp=auto "$1.sh")
}
ref=$(job ft) || fail "sbatch ft"
k9=$(job k9) || fail "sbatch k9"
i=0
until [ -f "$W/k9/step_00000010/manifest.json" ]; do
	i=$((i + 1)); [ $i -le 2400 ] || fail "k9: no step-10 checkpoint"; sleep 0.1
done
pid=$(real_pid "$k9" 1) || fail "k9: no rank 1 process"
kill -9 "$pid"
for j in "ft $ref" "k9 $k9"; do
	set -- $j
	st=$(cluster_sbatch_wait "$2" 400) || { cat "$W/$1.out"; fail "$1: job $2 ended $st"; }
done
grep '"event":"failure"' "$W/k9/ledger.jsonl" | grep -q '"signal":9' || { cat "$W/k9/ledger.jsonl"; fail "k9: no kill -9 failure in the ledger"; }
grep -q "\"tp\": *2," "$W/ft/step_000000$STEPS/manifest.json" || fail "ft: not trained under tp=2"
/usr/bin/python3 "$top_srcdir/tests/runtime/ckpt_compare.py" "$W/ft/step_000000$STEPS" "$W/k9/step_000000$STEPS" 0 ||
	fail "k9: the final weights differ from the unfaulted run's"

val() { /usr/bin/python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["val_loss"])' "$1"; }
base=$(val "$W/b0/eval.jsonl") && ft=$(val "$W/ft/eval.jsonl") || fail "no held-out loss"
echo "held-out masked loss: base model $base, fine-tuned $ft"
awk -v b="$base" -v f="$ft" 'BEGIN { exit !(f <= b - 0.4) }' || fail "the held-out loss did not fall well below the base model's"
word=$(sed -n '1s/.*the word \([a-z]*\) mean.*/\1/p' "$W/sft/val.jsonl")
grep -q "word $word mean" "$W/sft/train.jsonl" && fail "held-out word $word is in the training pairs"
printf 'generate, held-out word "%s": ' "$word"
"$LT" generate --ckpt "$W/ft/step_000000$STEPS" --tokenizer "$W/sft/spm.model" --max-new 32 \
	--prompt "What does the word $word mean?
" 2>"$W/gen.err" || { cat "$W/gen.err"; fail "generate: exit $?"; }
echo
echo PASS
