#!/bin/sh
# tests/runtime/tok_bad.sh: bad input to the tokenizer commands: a
# missing, corrupt or unsupported tokenizer file, a --vocab the text
# cannot fill, options without --tokenizer, a model that lacks BOS (also
# one whose tokenizer_config.json says "bos_token": null), and
# shards of a larger vocabulary than the model's: one line naming the
# value, the exit code of include/llmt/exitcodes.h, nothing written.
set -u
. "${top_srcdir:?}/tests/runtime/tok_lib.sh"
i=0
while [ $i -lt 300 ]; do echo "In the beginning was the word, and the word was $i."; i=$((i + 1)); done >"$tmp/in.txt"

# expect CODE WORD CMD...: exit CODE, one stderr line containing WORD
expect() {
	code=$1 word=$2
	shift 2
	"$@" >"$tmp/out.log" 2>"$tmp/err.log"
	rc=$?
	if [ $rc -eq "$code" ] && grep -qF -- "$word" "$tmp/err.log" && [ "$(wc -l <"$tmp/err.log")" -eq 1 ]; then
		echo "ok: exit $rc: $(cat "$tmp/err.log")"
	else
		echo "FAIL: $* exited $rc (want $code), stderr (want one line naming '$word'):"; cat "$tmp/err.log"; fail=1
	fi
}

expect 66 "$tmp/none.model" "$LT" tokenize "$tmp/in.txt" "$tmp/o1" --tokenizer "$tmp/none.model"
head -c 4096 /dev/urandom >"$tmp/junk.model"
expect 65 "$tmp/junk.model" "$LT" tokenize "$tmp/in.txt" "$tmp/o2" --tokenizer "$tmp/junk.model"
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, ' >"$tmp/cut.json"
expect 65 "cut.json:1:" "$LT" tokenize "$tmp/in.txt" "$tmp/o3" --tokenizer "$tmp/cut.json"
printf '{"model": {"type": "WordPiece", "vocab": {"a": 0}, "merges": []}}' >"$tmp/wp.json"
expect 65 "WordPiece" "$LT" tokenize "$tmp/in.txt" "$tmp/o4" --tokenizer "$tmp/wp.json"
printf '{"normalizer": {"type": "NFKC"}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}' >"$tmp/nfc.json"
expect 65 "normalizer NFKC" "$LT" tokenize "$tmp/in.txt" "$tmp/o5" --tokenizer "$tmp/nfc.json"
mkdir "$tmp/emptydir"
expect 66 "neither tokenizer.model nor tokenizer.json" "$LT" tokenize "$tmp/in.txt" "$tmp/o6" --tokenizer "$tmp/emptydir"
# found by review: an id of 1.5e9 wrapped the table size (an endless loop);
# a FIFO as the tokenizer blocked the reader
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "zz": 1500000000}, "merges": []}}' >"$tmp/bigid.json"
expect 65 "largest token id 1500000000" "$LT" tokenize "$tmp/in.txt" "$tmp/o9" --tokenizer "$tmp/bigid.json"
mkfifo "$tmp/fifo.model"
expect 65 "not a regular file" "$LT" tokenize "$tmp/in.txt" "$tmp/o10" --tokenizer "$tmp/fifo.model"
for d in o1 o2 o3 o4 o5 o6; do [ ! -e "$tmp/$d" ] || { echo "FAIL: $d written after a refused tokenizer"; fail=1; }; done

expect 64 "--vocab 50000" "$LT" tokenizer-train "$tmp/in.txt" "$tmp/big.model" --vocab 50000
[ ! -e "$tmp/big.model" ] || { echo "FAIL: big.model written"; fail=1; }
expect 64 "--vocab 12x" "$LT" tokenizer-train "$tmp/in.txt" "$tmp/x.model" --vocab 12x
expect 64 "--type wordpiece" "$LT" tokenizer-train "$tmp/in.txt" "$tmp/x.model" --vocab 100 --type wordpiece
expect 64 "--vocab is required" "$LT" tokenizer-train "$tmp/in.txt" "$tmp/x.model"
expect 66 "$tmp/nofile.txt" "$LT" tokenizer-train "$tmp/nofile.txt" "$tmp/x.model" --vocab 100
expect 64 "need --tokenizer" "$LT" tokenize "$tmp/in.txt" "$tmp/o7" --bos

# a good model kept when a retrain fails; a model without BOS refuses --bos
"$LT" tokenizer-train "$tmp/in.txt" "$tmp/m.model" --vocab 300 >/dev/null 2>&1 || { echo "FAIL: tokenizer-train"; exit 1; }
cp "$tmp/m.model" "$tmp/keep.model"
expect 64 "--vocab 50000" "$LT" tokenizer-train "$tmp/in.txt" "$tmp/m.model" --vocab 50000
cmp -s "$tmp/m.model" "$tmp/keep.model" && echo "ok: the model saved before is kept" || { echo "FAIL: m.model changed"; fail=1; }
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"}}' >"$tmp/nobos.json"
expect 64 "has no BOS" "$LT" tokenize "$tmp/in.txt" "$tmp/o8" --tokenizer "$tmp/nobos.json" --bos
# Qwen 2/3: tokenizer_config.json says "bos_token": null, so <|endoftext|>
# is no BOS (it was taken by its name: generate put it before every prompt,
# which transformers does not)
mkdir "$tmp/qwen"
printf '{"added_tokens": [{"id": 1, "content": "<|endoftext|>", "special": true}], "model": {"type": "BPE", "vocab": {"a": 0, "<|endoftext|>": 1}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"}}' >"$tmp/qwen/tokenizer.json"
printf '{"bos_token": null, "eos_token": "<|endoftext|>"}' >"$tmp/qwen/tokenizer_config.json"
printf 'aaaa' >"$tmp/a.txt"
"$LT" tokenize "$tmp/a.txt" "$tmp/o12" --tokenizer "$tmp/qwen/tokenizer.json" --eos >/dev/null 2>&1 || { echo "FAIL: tokenize --eos with qwen/tokenizer.json"; fail=1; }
expect 64 "has no BOS" "$LT" tokenize "$tmp/a.txt" "$tmp/o11" --tokenizer "$tmp/qwen/tokenizer.json" --bos

# shards of a 300-id vocabulary for a model of 256 ids: refused at start
"$LT" tokenize "$tmp/in.txt" "$tmp/data" --tokenizer "$tmp/m.model" >/dev/null || { echo "FAIL: tokenize"; exit 1; }
expect 65 "vocabulary of 300 ids, larger than the model's vocab_size 256" \
	"$LT" train --model "$top_srcdir/configs/tiny.yaml" --data "$tmp/data" --steps 1 --seq 8 --micro-batch 1 --quiet
exit $fail
