#!/bin/sh
# tests/runtime/tok_spm_kjv.sh: SentencePiece through libsentencepiece on
# the whole KJV text: a BPE model trained by `llm-train tokenizer-train`
# and a unigram model trained by Debian's spm_train give the ids of
# python3-sentencepiece's encode of the whole text (ours cuts a BPE text
# in 16 KiB blocks, and here in 300-byte ones: the cuts must not change an
# id), and decode back byte for byte.
set -u
. "${top_srcdir:?}/tests/runtime/tok_lib.sh"
command -v spm_train >/dev/null || { echo "FAIL: spm_train not found: install sentencepiece"; exit 1; }
need_kjv
"$LT" tokenizer-train "$tmp/kjv.txt" "$tmp/bpe.model" --vocab 2000 --type bpe >"$tmp/log" 2>&1 ||
	{ echo "FAIL: tokenizer-train:"; cat "$tmp/log"; exit 1; }
spm_train --input="$tmp/kjv.txt" --model_prefix="$tmp/uni" --vocab_size=2000 --model_type=unigram \
	--normalization_rule_name=identity --remove_extra_whitespaces=false --byte_fallback=true \
	--character_coverage=1.0 --minloglevel=2 >"$tmp/log" 2>&1 || { echo "FAIL: spm_train:"; cat "$tmp/log"; exit 1; }
check_text spm-check "$tmp/bpe.model" "$tmp/kjv.txt" -- --block-bytes 300
check_text spm-check "$tmp/uni.model" "$tmp/kjv.txt"
exit $fail
