# tok_lib.sh: sourced by tests/runtime/tok_*.sh: the real texts (KJV from
# bible-kjv, WordNet 3.0 glosses from wordnet-base), a temporary
# directory, and check_text (tokenize, compare ids with a reference,
# decode back byte for byte).
LT=${top_builddir:?}/runtime/llm-train
DEC=$top_builddir/tests/runtime/tok_decode
REF=$top_srcdir/tests/runtime/tok_ref.py
VENV_PY=${LLMT_VENV:-/opt/llmt-venv}/bin/python
[ -x "$LT" ] && [ -x "$DEC" ] || { echo "FAIL: $LT or $DEC not built"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/llmt-tok.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

need_kjv() {
	command -v bible >/dev/null 2>&1 || { echo "FAIL: bible not found: install bible-kjv (scripts/install-deps)"; exit 1; }
	bible -l0 "gen1:1-rev22:21" >"$tmp/kjv.txt"
	[ -s "$tmp/kjv.txt" ] || { echo "FAIL: bible printed nothing (bible-kjv-text)"; exit 1; }
}

# every synset's gloss (after "| "), one a line, all four parts of speech
need_glosses() {
	for p in noun verb adj adv; do
		[ -r /usr/share/wordnet/data.$p ] || { echo "FAIL: /usr/share/wordnet/data.$p: install wordnet-base"; exit 1; }
		grep -v '^  ' /usr/share/wordnet/data.$p | sed -n 's/^[^|]*| //p'
	done >"$tmp/glosses.txt"
}

# check_text MODE TOKENIZER TEXT [OPTIONS [-- OPTIONS]...]: tokenize TEXT
# once per option set (none: one plain run), compare each run's ids with
# one reference encode (MODE spm-check: python3-sentencepiece; hf-check:
# tokenizers in the venv) and decode each back byte for byte
check_text() {
	mode=$1 tok=$2 text=$3
	shift 3
	py=/usr/bin/python3
	[ "$mode" = hf-check ] && py=$VENV_PY
	k=0 dirs=""
	while :; do
		opts=""
		while [ $# -gt 0 ] && [ "$1" != -- ]; do opts="$opts $1"; shift; done
		k=$((k + 1)); out=$tmp/out$k; rm -rf "$out"
		# shellcheck disable=SC2086
		if "$LT" tokenize "$text" "$out" --tokenizer "$tok" $opts >"$tmp/log" 2>&1; then
			dirs="$dirs $out"
			want=$text
			if [ -n "${NFC_DECODE:-}" ]; then want=$tmp/want.txt; "$VENV_PY" "$REF" nfc "$text" "$want"; fi
			if "$DEC" "$tok" "$out"/train_*.bin >"$tmp/back" && cmp -s "$want" "$tmp/back"; then
				echo "ok: $(basename "$text") decodes back byte for byte ($(basename "$tok")$opts)"
			else
				echo "FAIL: $(basename "$text") does not decode back with $(basename "$tok")$opts"
				cmp "$want" "$tmp/back" | head -2; fail=1
			fi
		else
			echo "FAIL: tokenize $text --tokenizer $tok$opts:"; cat "$tmp/log"; fail=1
		fi
		[ $# -gt 0 ] || break
		shift
	done
	# shellcheck disable=SC2086
	[ -z "$dirs" ] || "$py" "$REF" "$mode" "$tok" "$text" $dirs || fail=1
}

# hf_case llama3|gpt2|qwen2: a byte-level BPE trained by tokenizers with
# that pre-tokenizer pattern (qwen2: and NFC; decoding gives the NFC text), checked on KJV, the WordNet glosses, a
# multilingual, emoji- and digit-heavy text and a seeded random text
hf_case() {
	"$VENV_PY" -c 'import tokenizers' 2>/dev/null ||
		{ echo "SKIP: $VENV_PY has no tokenizers (scripts/install-deps makes the venv)"; exit 77; }
	need_kjv
	need_glosses
	ml=$top_srcdir/tests/runtime/data/multilingual.txt
	"$VENV_PY" "$REF" random 7 3000 "$tmp/rand_train.txt"
	"$VENV_PY" "$REF" random 11 2000 "$tmp/rand.txt"
	cat "$tmp/kjv.txt" "$ml" "$tmp/rand_train.txt" >"$tmp/train.txt"
	"$VENV_PY" "$REF" hf-train "$1" "$tmp/train.txt" 3000 "$tmp/tokenizer.json" ||
		{ echo "FAIL: tokenizers could not train"; exit 1; }
	for t in "$tmp/kjv.txt" "$tmp/glosses.txt" "$ml" "$tmp/rand.txt"; do
		check_text hf-check "$tmp/tokenizer.json" "$t"
	done
}
