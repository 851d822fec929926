#!/bin/sh
# The man pages: each renders without a groff warning and has a NAME line
# whatis can read; together they document every exit code of
# include/llmt/exitcodes.h, every variable of doc/contracts.md, every
# option the plugin, the wrapper and the runtime accept, every key of the
# admin policy, and every LLM_TRAIN_* variable the sources use.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
# pages made from doc/*.in at build time are in the build tree
page() { if [ -f "$top_builddir/doc/$1" ]; then echo "$top_builddir/doc/$1"; else echo "$top_srcdir/doc/$1"; fi; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

command -v groff >/dev/null 2>&1 || { echo "FAIL: groff not installed (Debian package groff-base)"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/llmt-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

pages="llm_train.8 llm-train.yaml.5 llm-train.1 llm-train-wrap.1 llm-train-plan.1 llm-train-ckpt-torch.1"
# Plain text, one paragraph per line, no hyphenation: words can be grepped.
render() { groff -man -Tascii -rLL=1000n -rHY=0 -P-cbou "$(page "$1")" 2>/dev/null; }

for p in $pages; do
	f=$(page "$p")
	[ -f "$f" ] || { fail "doc/$p missing (not built?)"; continue; }
	case $(cat "$f") in *@slurm*@*) fail "doc/$p: a @...@ placeholder left";; esac
	w=$(groff -man -ww -z "$f" 2>&1)
	[ -z "$w" ] || fail "doc/$p: groff warnings: $w"
	name=${p%.*}
	sec=${p##*.}
	grep -q "^\.TH $(echo "$name" | tr 'a-z' 'A-Z' | sed 's/-/\\\\-/g') $sec " "$f" \
		|| fail "doc/$p: no .TH line for $name($sec)"
	if command -v lexgrog >/dev/null 2>&1; then
		lexgrog "$f" | grep -q ": \"$name - " || fail "doc/$p: NAME line unreadable by whatis: $(lexgrog "$f")"
	fi
	for s in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
		grep -q "^\.SH \"*$s" "$f" || fail "doc/$p: no $s section"
	done
	render "$p" >"$tmp/$p.txt"
done
cat "$tmp"/*.txt >"$tmp/all.txt"

# Every exit code, as an entry of llm-train(1)'s EXIT STATUS, and named by
# llm-train-wrap(1), whose decisions follow from them.
codes=$(sed -n 's/^#define LLMT_EXIT_[A-Z]* *\([0-9][0-9]*\).*/\1/p' "$top_srcdir/include/llmt/exitcodes.h")
[ -n "$codes" ] || fail "no exit codes found in include/llmt/exitcodes.h"
sed -n '/^EXIT STATUS/,/^[A-Z]/p' "$tmp/llm-train.1.txt" >"$tmp/exit.txt"
for c in $codes; do
	grep -Eq "^ +$c( |\$)" "$tmp/exit.txt" || fail "llm-train(1) EXIT STATUS lacks exit code $c"
	grep -Eqw "$c" "$tmp/llm-train-wrap.1.txt" || fail "llm-train-wrap(1) does not mention exit code $c"
done
echo "exit codes checked: $(echo $codes)"

# Every variable named in the contracts.
vars=$(grep -oE '\b(LLM_TRAIN[A-Z_]*|RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|CUDA_VISIBLE_DEVICES|NCCL_)\b' \
	"$top_srcdir/doc/contracts.md" | sort -u)
[ -n "$vars" ] || fail "no variables found in doc/contracts.md"
for v in $vars; do
	grep -qF "$v" "$tmp/all.txt" || fail "no man page documents $v (doc/contracts.md)"
done
echo "contract variables checked: $(echo "$vars" | wc -l)"

# LLM_TRAIN_* variables the sources of each part read or set, in its page.
src_vars() { # dir page
	files=$(ls "$top_srcdir/$1"/*.c "$top_srcdir/$1"/*.h 2>/dev/null)
	[ -n "$files" ] || { echo "note: no sources in $1/ yet"; return; }
	for v in $(grep -ohE '"LLM_TRAIN(_[A-Z0-9]+)*' $files | tr -d '"' | sort -u); do
		grep -qF "$v" "$tmp/$2.txt" || fail "$2 does not document $v (used in $1/)"
	done
}
src_vars spank llm_train.8
src_vars wrapper llm-train-wrap.1
src_vars runtime llm-train.1

# Plugin options: the spank_option table.
opts=$(cat "$top_srcdir"/spank/*.c 2>/dev/null | grep -oE '\{ *"llm-[a-z-]+" *,' | sed 's/[{ ",]//g' | sort -u)
if [ -n "$opts" ]; then
	for o in $opts; do
		grep -qF -- "--$o" "$tmp/llm_train.8.txt" || fail "llm_train(8) does not document --$o"
	done
	echo "plugin options checked: $(echo $opts)"
else
	echo "note: no spank_option table in spank/ yet"
fi

# Admin policy keys: the "known:" lists of the policy reader.
keys=$(cat "$top_srcdir"/spank/policy.c 2>/dev/null | tr '\n\t' '  ' |
	grep -oE 'unknown\(w, k, [^;]*;' | sed -n 's/.*key, *"\([^"]*\)".*/\1/p' | tr ' ' '\n' | sort -u)
if [ -n "$keys" ]; then
	for k in $keys; do
		grep -qw -- "$k" "$tmp/llm-train.yaml.5.txt" || fail "llm-train.yaml(5) does not document key $k"
	done
	echo "policy keys checked: $(echo $keys)"
else
	echo "note: no policy reader in spank/ yet"
fi

# Long options of the commands (getopt_long tables), in their pages.
long_opts() { # dir page
	files=$(grep -l 'struct option' "$top_srcdir/$1"/*.c 2>/dev/null)
	[ -n "$files" ] || { echo "note: no getopt_long table in $1/ yet"; return; }
	o=$(cat $files | grep -oE '\{ *"[a-z0-9][a-z0-9-]*" *, *(no_argument|required_argument|optional_argument|[012]) *,' |
		sed 's/^{ *"\([^"]*\)".*/\1/' | sort -u)
	for x in $o; do
		grep -qF -- "--$x" "$tmp/$2.txt" || fail "$2 does not document --$x (from $1/)"
	done
	echo "$2 options checked: $(echo $o)"
}
long_opts wrapper llm-train-wrap.1
long_opts runtime llm-train.1
long_opts spank llm-train-plan.1

# The checkpoint commands the wrapper relies on (doc/contracts.md).
for c in ckpt-verify ckpt-list; do
	grep -qF "$c" "$tmp/llm-train.1.txt" || fail "llm-train(1) does not document $c"
done

[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "PASS: $(echo $pages | wc -w) man pages render cleanly and document the contracts"
