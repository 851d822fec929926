#!/bin/sh
# tests/runtime/tok_hf_llama3.sh: as tok_hf_gpt2.sh with Llama 3's
# pre-tokenizer (Split by its regex, then ByteLevel; ignore_merges), and
# then the same tokenizer widened to Llama 3's 128,256 ids with its 256
# reserved special tokens last: a text holding some of them gives
# tokenizers' ids in version 2 (uint32) shards, which decode back too.
set -u
. "${top_srcdir:?}/tests/runtime/tok_lib.sh"
hf_case llama3
"$VENV_PY" "$REF" hf-widen "$tmp/tokenizer.json" "$tmp/wide.json" 128256 || { echo "FAIL: hf-widen"; exit 1; }
awk 'NR % 7 == 0 { printf "<|reserved_special_token_%d|>", NR % 256 } { print }' \
	"$top_srcdir/tests/runtime/data/multilingual.txt" >"$tmp/special.txt"
check_text hf-check "$tmp/wide.json" "$tmp/special.txt"
v=$(od -An -tu4 -j4 -N4 "$tmp/out1/train_000000.bin" | tr -d ' ')
if [ "$v" = 2 ]; then echo "ok: a 128,256-id vocabulary writes shard version 2"; else echo "FAIL: shard version $v, want 2"; fail=1; fi
exit $fail
