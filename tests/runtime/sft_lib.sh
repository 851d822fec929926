# tests/runtime/sft_lib.sh: the instruction data of the fine-tuning tests:
# a SentencePiece BPE of 512 pieces trained by `llm-train tokenizer-train`
# on KJV (Genesis to Deuteronomy), and WordNet pairs ("What does the word
# X mean?" answered by X's gloss, the first sense of each noun and verb),
# split by word (every 10th word held out), packed by tokenize-sft.
# sft_data DIR [SEQ]: DIR/spm.model, DIR/train.jsonl, DIR/val.jsonl,
# DIR/data (train shards) and DIR/data/val (held-out shards).
sft_data() {
	_d=$1 _seq=${2:-128}
	mkdir -p "$_d" || return 1
	command -v bible >/dev/null 2>&1 || { echo "FAIL: bible not found: install bible-kjv (scripts/install-deps)"; return 1; }
	bible -l0 "gen1:1-deu34:12" >"$_d/kjv.txt" && [ -s "$_d/kjv.txt" ] || { echo "FAIL: bible printed nothing"; return 1; }
	"$LT" tokenizer-train "$_d/kjv.txt" "$_d/spm.model" --vocab 512 >"$_d/spm.log" 2>&1 ||
		{ cat "$_d/spm.log"; echo "FAIL: tokenizer-train"; return 1; }
	for _p in noun verb; do
		[ -r /usr/share/wordnet/data.$_p ] || { echo "FAIL: /usr/share/wordnet/data.$_p: install wordnet-base"; return 1; }
		grep -v '^  ' /usr/share/wordnet/data.$_p
	done | awk -F'|' '
		{ split($1, a, " "); w = a[5]; g = $2
		  if (w !~ /^[a-z]+$/ || seen[w]++) next   # plain words, first sense
		  sub(/^ +/, "", g); sub(/;.*/, "", g); sub(/ +$/, "", g)
		  gsub(/[\\"]/, "", g)
		  if (length(g) < 8 || length(g) > 160) next
		  n++; f = n % 10 == 0 ? "val" : "train"
		  printf "{\"prompt\": \"What does the word %s mean?\", \"response\": \"%s\"}\n", w, g > (D "/" f ".jsonl") }' D="$_d"
	"$LT" tokenize-sft "$_d/train.jsonl" "$_d/data" --tokenizer "$_d/spm.model" --template plain --seq "$_seq" >"$_d/sft.log" 2>&1 &&
		"$LT" tokenize-sft "$_d/val.jsonl" "$_d/data/val" --tokenizer "$_d/spm.model" --template plain --seq "$_seq" >>"$_d/sft.log" 2>&1 ||
		{ cat "$_d/sft.log"; echo "FAIL: tokenize-sft"; return 1; }
}
