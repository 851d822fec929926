#!/bin/sh
# tests/runtime/sft_padvocab.sh: a model whose vocab_size is larger than
# its tokenizer's vocabulary (Qwen 2/3: config.json says 151936, the
# tokenizer has 151,669 ids; the embedding rows past them are padding)
# goes the whole fine-tuning path with its own tokenizer: import, tokenize-sft,
# training on the masked shards, generate (--ckpt and --hf). A tokenizer
# with more ids than vocab_size is still refused by each (import and
# generate exit 64, training exit 65), one line naming both numbers.
# Here: vocab_size 352, a SentencePiece tokenizer of 340 pieces (and one
# of 400 for the refusals).
# Fails on the old code: import, generate and the training refused the
# 340-piece tokenizer ("has 340 tokens; ... vocab_size is 352", "not the
# model's tokenizer").
set -u
. "$top_srcdir/tests/runtime/expect_lib.sh"
export OMP_NUM_THREADS=1
bible -l0 "gen1:1-gen20:18" >"$tmp/gen.txt"
for v in 340 400; do
	"$LT" tokenizer-train "$tmp/gen.txt" "$tmp/t$v.model" --vocab $v >/dev/null 2>&1 || fail "tokenizer-train $v"
done
printf 'vocab_size: 352\nd_model: 32\nn_layers: 1\nn_heads: 2\nd_ff: 64\nmax_seq: 64\ntie_embeddings: false\n' \
	>"$tmp/m.yaml"

ok() { "$@" >"$tmp/out" 2>"$tmp/err"; _rc=$?; [ $_rc = 0 ] || { cat "$tmp/err"; fail "$*: exit $_rc"; }; }

# the HF directory: a model of vocab_size 352 exported, the 340-piece tokenizer beside it
ok "$LT" tokenize "$tmp/gen.txt" "$tmp/plain" --tokenizer "$tmp/t340.model"
ok "$LT" --model "$tmp/m.yaml" --data "$tmp/plain" --seq 64 --micro-batch 2 --steps 1 --ckpt-dir "$tmp/base" --quiet
ok "$LT" export --dtype fp32 "$tmp/base" "$tmp/hf"
cp "$tmp/t340.model" "$tmp/hf/tokenizer.model"
grep -q '"vocab_size": 352' "$tmp/hf/config.json" || fail "export: vocab_size is not 352"

ok "$LT" import "$tmp/hf" "$tmp/ck"
awk 'NR % 2 { printf "{\"prompt\": \"%s\", \"response\": \"", $0; next } { printf "%s\"}\n", $0 }' \
	"$tmp/gen.txt" | head -40 >"$tmp/pairs.jsonl"
ok "$LT" tokenize-sft "$tmp/pairs.jsonl" "$tmp/sft" --tokenizer "$tmp/hf/tokenizer.model" --template llama2 --seq 64
ok "$LT" --model "$tmp/m.yaml" --data "$tmp/sft" --seq 64 --micro-batch 2 --steps 2 --ckpt-dir "$tmp/ck" --quiet
[ -f "$tmp/ck/step_00000002/manifest.json" ] || fail "the fine-tuning wrote no step-2 checkpoint"
ok "$LT" generate --ckpt "$tmp/ck" --tokenizer "$tmp/t340.model" --prompt "In the beginning" --max-new 8
ok "$LT" generate --hf "$tmp/hf" --tokenizer "$tmp/t340.model" --prompt "In the beginning" --max-new 8

# more ids than vocab_size: refused
expect 64 "tokenizer $tmp/t400.model has 400 tokens, more than .*vocab_size 352" \
	"$LT" import "$tmp/hf" "$tmp/ck400" --tokenizer "$tmp/t400.model"
[ ! -e "$tmp/ck400" ] || fail "a refused import wrote $tmp/ck400"
expect 64 "tokenizer $tmp/t400.model has 400 tokens, more than .*vocab_size 352" \
	"$LT" generate --ckpt "$tmp/ck" --tokenizer "$tmp/t400.model" --prompt "In the beginning"
ok "$LT" tokenize-sft "$tmp/pairs.jsonl" "$tmp/sft400" --tokenizer "$tmp/t400.model" --template llama2 --seq 64
expect 65 "vocabulary of 400 ids.*vocab_size 352" \
	"$LT" --model "$tmp/m.yaml" --data "$tmp/sft400" --seq 64 --steps 1 --ckpt-dir "$tmp/ck" --quiet
echo PASS
