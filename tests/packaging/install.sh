#!/bin/sh
# tests/packaging/install.sh: the llm_train module and llm-train-ckpt-torch
# as `make install DESTDIR=...` installs them (the wrapper's Python part
# only: quick). The module lands in pythondir, a directory on the sys.path
# of configure's PYTHON (by default one that can import torch; Debian's
# /usr/bin/python3 reads PREFIX/lib/pythonX.Y/dist-packages, not
# automake's site-packages, so `import llm_train` failed after a plain
# install: seen red); llm-train-ckpt-torch runs that Python, finds the
# module with no LLM_TRAIN_PYTHONPATH, and lists a checkpoint.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
fail() { echo "FAIL: $*"; exit 1; }
mk() { sed -n "s|^$1 = ||p" "$top_builddir/wrapper/Makefile"; }
PY=$(mk PYTHON)
[ -n "$PY" ] && [ "$PY" != : ] || { echo "SKIP: configure found no Python"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/llmt-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
${MAKE:-make} -s -C "$top_builddir/wrapper" install-pythonPYTHON install-binSCRIPTS DESTDIR="$tmp/root" \
	>"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "make install DESTDIR failed"; }
pd=$(${MAKE:-make} -s -C "$top_builddir/wrapper" -f Makefile -f - print-pythondir <<'MK'
print-pythondir:
	@echo '$(pythondir)'
MK
) || fail "no pythondir"
bindir=$(${MAKE:-make} -s -C "$top_builddir/wrapper" -f Makefile -f - print-bindir <<'MK'
print-bindir:
	@echo '$(bindir)'
MK
)
[ -f "$tmp/root$pd/llm_train.py" ] || fail "llm_train.py not in DESTDIR$pd: $(cd "$tmp/root" && find . -name 'llm_train*')"
echo "ok: llm_train.py installed to $pd"
"$PY" -c 'import sys; print("\n".join(sys.path))' | grep -x "$pd" >/dev/null ||
	fail "$pd is not on the sys.path of $PY ($("$PY" -c 'import sys; print(sys.path)')): import llm_train fails there"
echo "ok: $pd is on the sys.path of $PY"
ck=$tmp/root$bindir/llm-train-ckpt-torch
[ -x "$ck" ] || fail "llm-train-ckpt-torch not installed to $bindir"
[ "$(head -n1 "$ck")" = "#!$PY" ] || fail "llm-train-ckpt-torch runs $(head -n1 "$ck"), not $PY"
grep -q "\"$pd\"" "$ck" || fail "llm-train-ckpt-torch does not look in $pd"
# run it against the DESTDIR copy: its pythondir with DESTDIR in front
mkdir -p "$tmp/ck/step_00000007"
sed "s|\"$pd\"|\"$tmp/root$pd\"|" "$ck" >"$tmp/ck-tool" && chmod +x "$tmp/ck-tool"
echo '{"step": 7, "files": {}}' >"$tmp/ck/step_00000007/llm_train.complete"
out=$(env -u LLM_TRAIN_PYTHONPATH -u PYTHONPATH "$tmp/ck-tool" ckpt-list "$tmp/ck" 2>&1) ||
	fail "llm-train-ckpt-torch failed: $out"
[ "$out" = "7 $tmp/ck/step_00000007" ] || fail "llm-train-ckpt-torch ckpt-list: $out"
echo "ok: llm-train-ckpt-torch ($PY) finds the installed module without LLM_TRAIN_PYTHONPATH"
echo PASS
