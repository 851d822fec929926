#!/bin/sh
# style/limits.sh: the tree's size rules (DESIGN.md "Style"), checked on
# every C, C++ and CUDA source: no file over 600 lines, no function over
# 100 lines, indentation by tabs (no line indented by spaces alone).
# Fails naming each file or function that breaks a rule.
src=${srcdir:-.}/..
[ -d "$src/runtime" ] || src=$(cd "$(dirname "$0")/../.." && pwd)
files=$(cd "$src" && find runtime spank wrapper include tests \
	\( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) \
	! -name '*_js.h' ! -name 'config.h' ! -path '*/sanitize-regress/*' -type f | sort)
[ -n "$files" ] || { echo "FAIL: no sources found under $src"; exit 1; }
bad=0
for f in $files; do
	p=$src/$f
	n=$(wc -l < "$p")
	if [ "$n" -gt 600 ]; then
		echo "FAIL: $f: $n lines (most 600)"
		bad=1
	fi
	# A function body: a line that is exactly "{" after a header line, up to
	# the next line that starts with "}".
	out=$(awk -v f="$f" '
		/^[A-Za-z_].*\(/ { hdr = $0 }
		/^\{/ && start == 0 { start = NR; name = hdr; next }
		/^\}/ && start > 0 {
			if (NR - start - 1 > 100) {
				sub(/\(.*/, "", name); m = split(name, w, /[ *]+/)
				printf "FAIL: %s:%d: function %s is %d lines (most 100)\n", f, start, w[m], NR - start - 1
			}
			start = 0
		}
		/^    [^ *]/ { sp++; if (!first) first = NR }
		END { if (sp > 3) printf "FAIL: %s:%d: %d lines indented by spaces (the tree indents by tabs)\n", f, first, sp }
	' "$p")
	if [ -n "$out" ]; then
		echo "$out"
		bad=1
	fi
done
[ $bad -eq 0 ] && echo "ok: $(echo "$files" | wc -l) sources within 600 lines, functions within 100, tab indentation"
exit $bad
