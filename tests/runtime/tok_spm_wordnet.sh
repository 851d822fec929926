#!/bin/sh
# tests/runtime/tok_spm_wordnet.sh: SentencePiece on WordNet 3.0's glosses
# (all 117,659): unigram models trained on the first 30,000 glosses by
# `llm-train tokenizer-train` and by Debian's spm_train give the ids of
# python3-sentencepiece's encode of all the glosses at once, and decode
# back byte for byte. (BPE models and block cuts: tok_spm_kjv.sh.)
set -u
. "${top_srcdir:?}/tests/runtime/tok_lib.sh"
command -v spm_train >/dev/null || { echo "FAIL: spm_train not found: install sentencepiece"; exit 1; }
need_glosses
head -n 30000 "$tmp/glosses.txt" >"$tmp/train.txt"
"$LT" tokenizer-train "$tmp/train.txt" "$tmp/uni.model" --vocab 3000 --type unigram >"$tmp/log" 2>&1 ||
	{ echo "FAIL: tokenizer-train:"; cat "$tmp/log"; exit 1; }
spm_train --input="$tmp/train.txt" --model_prefix="$tmp/spm" --vocab_size=3000 --model_type=unigram \
	--normalization_rule_name=identity --remove_extra_whitespaces=false --byte_fallback=true \
	--character_coverage=1.0 --minloglevel=2 >"$tmp/log" 2>&1 || { echo "FAIL: spm_train:"; cat "$tmp/log"; exit 1; }
check_text spm-check "$tmp/uni.model" "$tmp/glosses.txt"
check_text spm-check "$tmp/spm.model" "$tmp/glosses.txt"
exit $fail
