#!/bin/sh
# tests/runtime/tok_hf_gpt2.sh: our tokenizer.json byte-level BPE (C,
# PCRE2) against Hugging Face tokenizers for a BPE that tokenizers trained
# with GPT-2's pre-tokenizer (ByteLevel with its regex): equal ids on the
# whole KJV, WordNet's glosses, a multilingual/emoji/digit text and random
# text; decoding gives each back byte for byte.
set -u
. "${top_srcdir:?}/tests/runtime/tok_lib.sh"
hf_case gpt2
exit $fail
