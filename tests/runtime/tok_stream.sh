#!/bin/sh
# tests/runtime/tok_stream.sh: generate's streamed text (one id at a time,
# each decoded with the ids before it: runtime/data/tok_iface.c) is the
# text itself, for a SentencePiece model with byte pieces (a character cut
# into several ids: it used to stream U+FFFD for each part) and leading
# spaces, on text with euro signs, CJK and emoji.
set -u
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
TS=$top_builddir/tests/runtime/tok_stream
[ -x "$LT" ] && [ -x "$TS" ] || fail "llm-train or tok_stream is not built"
W=$(mktemp -d /tmp/llmt-tokstream.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$LT" tokenizer-train "$top_srcdir/LICENSE" "$W/t.model" --vocab 400 >"$W/log" 2>&1 || { cat "$W/log"; fail "tokenizer-train"; }
printf 'This License costs 5 \342\202\254, \344\275\240\345\245\275 \360\237\230\200 and the GNU General Public License.\n' >"$W/text"
"$TS" "$W/t.model" "$W/text" >"$W/out" || fail "tok_stream exited $?"
cmp -s "$W/text" "$W/out" || { od -c "$W/out" | head; fail "the streamed text differs from the text"; }
echo "streamed $(wc -c <"$W/text") bytes back exactly (euro, CJK, emoji as byte pieces)"
echo PASS
