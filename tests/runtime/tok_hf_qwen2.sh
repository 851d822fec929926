#!/bin/sh
# tests/runtime/tok_hf_qwen2.sh: as tok_hf_gpt2.sh with Qwen 2's
# pre-tokenizer (Split by its pattern: single digits, then ByteLevel) and
# its NFC normalizer (libunistring): equal ids with tokenizers, also on
# text that is not NFC (decomposed accents, Angstrom sign); decoding gives
# the NFC form of each text back byte for byte.
set -u
. "${top_srcdir:?}/tests/runtime/tok_lib.sh"
NFC_DECODE=1
hf_case qwen2
exit $fail
