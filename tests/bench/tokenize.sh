#!/bin/sh
# tokenize.sh: tokenize throughput (MB/s of CPU time: user + system, so
# other jobs on the cores do not count) on the whole KJV text, best of
# BENCH_REPEAT (default 3) runs, in this run side by side:
#   SentencePiece BPE (8,000 pieces, tokenizer-train): `llm-train tokenize
#     --tokenizer m.model` (whole command: read, encode, write shards)
#     against Debian's `spm_encode --output_format=id` (whole command; it
#     encodes line by line)
#   tokenizer.json byte-level BPE (8,000 ids, Llama 3 pattern, trained by
#     tokenizers): `llm-train tokenize --tokenizer tokenizer.json` (whole
#     command) against tokenizers' encode of the whole text (the call
#     alone, in the venv) and its encode_batch of the lines (all threads).
# Prints ratios; no thresholds.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
LT=$top_builddir/runtime/llm-train
REF=$top_srcdir/tests/runtime/tok_ref.py
PY=${LLMT_VENV:-/opt/llmt-venv}/bin/python
rep=${BENCH_REPEAT:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/llmt-tokbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bible -l0 "gen1:1-rev22:21" >"$tmp/kjv.txt"
mb=$(awk -v b="$(wc -c <"$tmp/kjv.txt")" 'BEGIN { printf "%.3f", b / 1e6 }')
"$LT" tokenizer-train "$tmp/kjv.txt" "$tmp/m.model" --vocab 8000 >/dev/null
"$PY" "$REF" hf-train llama3 "$tmp/kjv.txt" 8000 "$tmp/tokenizer.json"

# best CPU seconds of a command over rep runs
cpu() {
	best=""
	i=0
	while [ $i -lt "$rep" ]; do
		rm -rf "$tmp/out"
		/usr/bin/time -f "%U %S" -o "$tmp/t" "$@" >/dev/null 2>&1
		s=$(awk '{ print $1 + $2 }' "$tmp/t")
		best=$(awk -v a="$s" -v b="${best:-1e9}" 'BEGIN { print (a < b) ? a : b }')
		i=$((i + 1))
	done
	echo "$best"
}
ours_spm=$(cpu "$LT" tokenize "$tmp/kjv.txt" "$tmp/out" --tokenizer "$tmp/m.model")
spm=$(cpu sh -c "spm_encode --model='$tmp/m.model' --output_format=id <'$tmp/kjv.txt' >'$tmp/ids.txt'")
ours_hf=$(cpu "$LT" tokenize "$tmp/kjv.txt" "$tmp/out" --tokenizer "$tmp/tokenizer.json")
hf=$("$PY" - "$tmp/tokenizer.json" "$tmp/kjv.txt" "$rep" <<'PYEOF'
import sys, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
text = open(sys.argv[2], encoding='utf-8').read()
lines = text.split('\n')
one = batch = 1e9
for _ in range(int(sys.argv[3])):
    t = time.process_time(); tok.encode(text, add_special_tokens=False); one = min(one, time.process_time() - t)
    t = time.process_time(); tok.encode_batch(lines, add_special_tokens=False); batch = min(batch, time.process_time() - t)
print(one, batch)
PYEOF
)
hf_one=${hf% *} hf_batch=${hf#* }
echo "tokenize: KJV $mb MB, CPU seconds (best of $rep) and MB per CPU second"
awk -v mb="$mb" -v a="$ours_spm" -v b="$spm" -v c="$ours_hf" -v d="$hf_one" -v e="$hf_batch" 'BEGIN {
	printf "  sentencepiece bpe 8000: llm-train %.2f s (%.1f MB/s)  spm_encode %.2f s (%.1f MB/s)  ratio x%.2f\n", a, mb / a, b, mb / b, b / a
	printf "  tokenizer.json bpe 8000: llm-train %.2f s (%.1f MB/s)  tokenizers encode %.2f s (%.1f MB/s)  ratio x%.2f\n", c, mb / c, d, mb / d, d / c
	printf "                          tokenizers encode_batch(lines) %.2f s (%.1f MB/s)  ratio x%.2f\n", e, mb / e, e / c
}'
