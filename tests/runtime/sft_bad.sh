#!/bin/sh
# tests/runtime/sft_bad.sh: bad instruction data and mismatches, each with
# one message naming the bad value, exit 64 or 65, nothing already saved
# overwritten: malformed JSON Lines (FILE:LINE:COLUMN), a missing field, a
# field that is not a string, an unknown role, an unknown template, a
# template the tokenizer lacks tokens for (chatml without <|im_start|>),
# an OUTDIR that holds shards already (kept byte for byte), a data dir
# mixing masked and plain shards, shards packed for another --seq than
# the run's, and shards of a tokenizer with more ids than the model's
# vocab_size (the checkpoint dir untouched). A
# sample longer than --seq is cut to it and counted.
# Fails on the old code: no tokenize-sft.
set -u
. "$top_srcdir/tests/runtime/expect_lib.sh"
bible -l0 "gen1:1-gen50:26" >"$tmp/gen.txt"
"$LT" tokenizer-train "$tmp/gen.txt" "$tmp/t512.model" --vocab 512 >/dev/null 2>&1 || fail "tokenizer-train"

sft() { "$LT" tokenize-sft "$@"; }
good='{"prompt": "What does the word ark mean?", "response": "a boat"}'
printf '%s\n{"prompt": "x" "response": "y"}\n' "$good" >"$tmp/syntax.jsonl"
expect 65 "syntax.jsonl:2:25: '}' expected near '\"response\"'" sft "$tmp/syntax.jsonl" "$tmp/o1" --tokenizer "$tmp/t512.model" --template plain
[ -e "$tmp/o1" ] && fail "a failed tokenize-sft left $tmp/o1"
printf '%s\n\n{"prompt": "x"}\n' "$good" >"$tmp/missing.jsonl"
expect 65 'missing.jsonl:3: missing field "response"' sft "$tmp/missing.jsonl" "$tmp/o1" --tokenizer "$tmp/t512.model" --template plain
printf '{"prompt": 7, "response": "y"}\n' >"$tmp/type.jsonl"
expect 65 'type.jsonl:1: field "prompt" is not a string' sft "$tmp/type.jsonl" "$tmp/o1" --tokenizer "$tmp/t512.model" --template plain
printf '{"messages": [{"role": "user", "content": "x"}, {"role": "bot", "content": "y"}]}\n' >"$tmp/role.jsonl"
expect 65 'role.jsonl:1: message 2: unknown role "bot"' sft "$tmp/role.jsonl" "$tmp/o1" --tokenizer "$tmp/t512.model" --template llama2
printf '%s\n' "$good" >"$tmp/good.jsonl"
expect 64 "template alpaca: unknown" sft "$tmp/good.jsonl" "$tmp/o1" --tokenizer "$tmp/t512.model" --template alpaca
expect 64 "template chatml needs <|im_start|>, which tokenizer .*t512.model does not have" \
	sft "$tmp/good.jsonl" "$tmp/o1" --tokenizer "$tmp/t512.model" --template chatml
[ -e "$tmp/o1" ] && fail "a refused tokenize-sft left $tmp/o1"

# a sample longer than --seq: cut to it and counted
long=$(awk 'BEGIN { for (i = 0; i < 40; i++) printf "and the waters prevailed "; }')
{ printf '%s\n' "$good"; printf '{"prompt": "Tell", "response": "%s"}\n' "$long"; } >"$tmp/long.jsonl"
sft "$tmp/long.jsonl" "$tmp/d" --tokenizer "$tmp/t512.model" --template llama2 --seq 64 >"$tmp/out" 2>&1 ||
	{ cat "$tmp/out"; fail "tokenize-sft of a long sample: exit $?"; }
cat "$tmp/out"
grep -q "2 samples (1 longer than --seq 64, cut to it)" "$tmp/out" || fail "the cut sample is not counted"
# --help: the usage on stdout, exit 0 (was "unrecognized option", exit 64)
"$LT" tokenize-sft --help >"$tmp/out" 2>"$tmp/err" && grep -q "^usage: .*tokenize-sft IN.jsonl OUTDIR" "$tmp/out" &&
	[ ! -s "$tmp/err" ] || { cat "$tmp/out" "$tmp/err"; fail "tokenize-sft --help: no usage, or not exit 0"; }
# an OUTDIR with shards: refused, the shards kept
cp "$tmp/d/train_000000.bin" "$tmp/keep.bin"
expect 64 "holds token shards already (train_000000.*): not overwritten" \
	sft "$tmp/good.jsonl" "$tmp/d" --tokenizer "$tmp/t512.model" --template plain --seq 64
cmp -s "$tmp/d/train_000000.bin" "$tmp/keep.bin" || fail "an existing shard was overwritten"

# training refusals: a shard without its mask among masked ones; a
# tokenizer of more ids than the model's vocab_size (fewer: a padded
# embedding, tests/runtime/sft_padvocab.sh)
cfg=$top_srcdir/tests/runtime/sft-tiny.yaml
mkdir -p "$tmp/ck/step_00000007" && echo keep >"$tmp/ck/step_00000007/marker"
train() { OMP_NUM_THREADS=1 "$LT" --model "$cfg" --data "$1" --seq "${SEQ:-64}" --micro-batch 1 --steps 1 --ckpt-dir "$tmp/ck" --quiet; }
cp "$tmp/d/train_000000.bin" "$tmp/d/train_000001.bin"
expect 65 "train_000001.bin has no loss mask .* mix of instruction and plain data" train "$tmp/d"
rm "$tmp/d/train_000001.bin"
sed 's/^vocab_size: 512$/vocab_size: 400/' "$cfg" >"$tmp/v400.yaml"
cfg=$tmp/v400.yaml expect 65 "train_000000.bin: tokenized with a vocabulary of 512 ids, larger than the model's vocab_size 400" \
	train "$tmp/d"
SEQ=32 expect 65 "train_000000.mask: packed for sequences of 64 tokens (tokenize-sft --seq); this run's --seq is 32" train "$tmp/d"
[ "$(find "$tmp/ck" -type f)" = "$tmp/ck/step_00000007/marker" ] || fail "a refused run wrote into the checkpoint dir"
echo PASS
