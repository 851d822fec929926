#!/bin/bash
# `llm-train-wrap report RUN_DIR` (and ckpt-unmark) run by root over a run dir another user
# (nobody) made with crafted files: a job id that closes gnuplot's string
# and calls `system`, links at loss.dat / loss.png / eval.jsonl, escape
# bytes for root's terminal. Before the fix root ran the command and
# overwrote the links' targets (gnuplot's `set output` and fopen "w").
. "${top_srcdir:?}/tests/security/lib.sh"
sec_need_root
sec_tmpdir
W=${top_builddir:?}/wrapper/llm-train-wrap
[ -x "$W" ] || { echo "FAIL: $W not built"; exit 1; }
command -v gnuplot >/dev/null || { echo "SKIP: gnuplot not installed"; exit 77; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }
d=$sec_dir
echo precious >"$d/victim1"; echo precious >"$d/victim2"
printf '{"step":1,"val_loss":4242.4242}\n' >"$d/secret.jsonl" && chmod 600 "$d/secret.jsonl"
ledger() {   # the start event of a job id that is a gnuplot command, then ESC and a newline
	printf '{"event":"start","job":"1)'"'"'; system '"'"'touch %s'"'"'; #\\u001b[2J\\nNVRM: Xid","t":1}\n' "$1"
	printf '{"event":"action","t":2,"exclude":["n1\\u001b]0;x\\u0007"]}\n'
}
plant() {    # a run dir $1 with the ledger, metrics and three links
	mkdir -p "$1" && ledger "$d/pwn" >"$1/ledger.jsonl" &&
		printf '{"step":1,"loss":2.5}\n{"step":2,"loss":2.0}\n' >"$1/metrics.jsonl" &&
		ln -s "$d/victim1" "$1/loss.dat" && ln -s "$d/victim2" "$1/loss.png" &&
		ln -s "$d/secret.jsonl" "$1/eval.jsonl" || exit 1
}
intact() {   # $1: the case
	[ ! -e "$d/pwn" ] || { bad "$1: gnuplot ran the job id's command as $(stat -c %U "$d/pwn")"; rm -f "$d/pwn"; }
	for v in victim1 victim2; do
		[ "$(cat "$d/$v")" = precious ] || { bad "$1: $v overwritten through a link"; echo precious >"$d/$v"; }
	done
}
# 1. another user's run dir, root reports: everything as that user
u=$d/nobody-run
plant "$u" && chown -R -h nobody: "$u" && chgrp root "$u"   # the dir's group is not its owner's
out=$("$W" report "$u" 2>"$d/err"); rc=$?
[ $rc = 0 ] || bad "report over nobody's dir: exit $rc: $(cat "$d/err")"
intact "nobody's dir"
grep -q "belongs to uid $(id -u nobody): read and written as uid" "$d/err" || bad "no line about the owner: $(cat "$d/err")"
for f in loss.png loss.dat dashboard.html llm_train.prom; do
	got=$(stat -c '%U %G %F' "$u/$f" 2>&1)
	[ "$got" = "nobody $(id -gn nobody) regular file" ] || bad "$u/$f: $got (want nobody's, of nobody's own group)"
done
file "$u/loss.png" | grep -q 'PNG image' || bad "loss.png is not a PNG: $(file "$u/loss.png")"
grep -q 4242.4242 "$u/dashboard.html" && bad "root's 0600 file, linked as eval.jsonl, reached the page"
printf '%s' "$out" | grep -q $'\x1b' && bad "an escape byte of the ledger reached the terminal"
printf '%s\n' "$out" | grep -q '^NVRM' && bad "a newline in the job id forged a line: $out"
printf '%s\n' "$out" | grep -q 'excluded nodes: n1?]0;x?$' || bad "excluded node not shown with ?: $out"
# 2. root's own dir with a quote and a newline in its name: the texts alone
r=$d/"root'run"$'\n'x
plant "$r"
"$W" report "$r" >/dev/null 2>"$d/err" || bad "report over root's dir: $(cat "$d/err")"
intact "root's dir"
file "$r/loss.png" | grep -q 'PNG image' || bad "root's dir: no PNG"
[ -L "$r/loss.dat" ] && bad "root's dir: loss.dat still the link"
# 3. refusals: one line naming the dir, exit 64
w=$d/open-run
plant "$w" && chmod 777 "$w"
"$W" report "$w" >/dev/null 2>"$d/err"; rc=$?
[ $rc = 64 ] && [ "$(wc -l <"$d/err")" = 1 ] && grep -q "open-run' is writable by every user (mode 0777): refused" "$d/err" ||
	bad "world-writable dir: exit $rc: $(cat "$d/err")"
intact "world-writable dir"
chmod 755 "$w"
sec_as_nobody "$W" report "$w" >/dev/null 2>"$d/err"; rc=$?
[ $rc = 64 ] && grep -q "open-run' belongs to uid 0, not to uid $(id -u nobody): refused" "$d/err" ||
	bad "nobody over root's dir: exit $rc: $(cat "$d/err")"
# 4. ckpt-unmark by root: nobody's ledger.jsonl a link to root's own
# ledger (0600, a mark): root appended `ckpt_unmark all` to it before
mkdir -p "$d/rootjob" && chmod 700 "$d/rootjob" || exit 1
printf '{"time":1,"event":"ckpt_bad","attempt":0,"path":"/ck/step_1","step":1,"rule":"exit_code","id":"x"}\n' \
	>"$d/rootjob/ledger.jsonl" && chmod 600 "$d/rootjob/ledger.jsonl"
before=$(md5sum <"$d/rootjob/ledger.jsonl")
m=$d/unmark-run && mkdir "$m" && ln -s "$d/rootjob/ledger.jsonl" "$m/ledger.jsonl" && chown -h -R nobody: "$m" || exit 1
"$W" ckpt-unmark "$m" --all >/dev/null 2>"$d/err"; rc=$?
[ "$(md5sum <"$d/rootjob/ledger.jsonl")" = "$before" ] || bad "ckpt-unmark as root wrote through nobody's link into root's ledger"
[ $rc = 74 ] || bad "ckpt-unmark over the link: exit $rc (want 74, nobody cannot read it): $(cat "$d/err")"
# a mark's path with ESC and a newline, listed to root's terminal
rm "$m/ledger.jsonl"
printf '{"time":1,"event":"ckpt_bad","attempt":0,"path":"/ck/s\\u001b[2J\\nforged","step":1,"rule":"exit_code","id":"x"}\n' \
	>"$m/ledger.jsonl" && chown nobody: "$m/ledger.jsonl"
"$W" ckpt-unmark "$m" /nowhere >/dev/null 2>"$d/err"; rc=$?
[ $rc = 64 ] || bad "ckpt-unmark of an unmarked path: exit $rc: $(cat "$d/err")"
grep -q $'\x1b' "$d/err" && bad "ckpt-unmark printed a mark's ESC byte"
grep -q '^forged' "$d/err" && bad "ckpt-unmark printed a mark's newline (a forged line)"
grep -q 'marked bad: /ck/s?\[2J?forged$' "$d/err" || bad "mark not listed with ?: $(cat "$d/err")"
# 5. a ledger text "<!--<script>" (a tool's line, a why) in the page's data
# block kept it open past its </script>: the page's own script never ran
p=$d/page-run && mkdir "$p" || exit 1
printf '{"event":"start","job":"7","t":1}\n{"event":"failure","t":2,"class":"transient","step":3,"why":"x <!--<script> y"}\n' \
	>"$p/ledger.jsonl" && printf '{"step":1,"loss":2.5}\n{"step":2,"loss":2.0}\n' >"$p/metrics.jsonl"
"$W" report "$p" >/dev/null 2>&1 || bad "report of the page run"
grep -q '<!--<script' "$p/dashboard.html" && bad "'<!--<script' of the ledger is in the page's data block"
if command -v chromium >/dev/null; then
	timeout 120 chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 --user-data-dir="$d/chrome" \
		--dump-dom "file://$p/dashboard.html" >"$d/page.dom" 2>/dev/null
	grep -q '<div id="app"><h1>llm-train job 7' "$d/page.dom" || bad "the page's script did not run (empty app)"
	grep -q 'x &lt;!--&lt;script&gt; y' "$d/page.dom" || bad "the event's text is not shown as text"
fi
# 6. the run dir named through a link nobody controls: root's own dir when
# judged (root stays root), nobody's crafted one just after (the shim
# swaps the link at the first access(2)): before, root then read nobody's
# eval.jsonl -> root's 0600 file into a page in nobody's dir
if ${CC:-cc} -shared -fPIC -O1 -o "$d/flip.so" "$top_srcdir/tests/security/mkdir_race.c" -ldl 2>"$d/cc.err"; then
	mkdir -p "$d/rootrun" "$d/lnk" && cp "$p/ledger.jsonl" "$p/metrics.jsonl" "$d/rootrun/" || exit 1
	n=$d/nobody-flip && plant "$n" && chown -R -h nobody: "$n" && ln -s "$d/rootrun" "$d/lnk/run" && chown -h nobody: "$d/lnk/run"
	env LD_PRELOAD="$d/flip.so" LLMT_FLIP_LINK="$d/lnk/run" LLMT_FLIP_TO="$n" "$W" report "$d/lnk/run" >/dev/null 2>"$d/err" ||
		bad "report through the swapped link: $(cat "$d/err")"
	[ "$(readlink "$d/lnk/run")" = "$n" ] || bad "the shim did not swap the link"
	grep -qs 4242.4242 "$n/dashboard.html" && bad "root followed the swapped link: its 0600 file reached nobody's page"
	[ -f "$d/rootrun/dashboard.html" ] || bad "the report did not stay in the dir it judged"
	intact "swapped link"
	# 7. the same for ckpt-unmark (the shim swaps at the first open of a
	# ledger.jsonl): before, root judged its own dir through the link, then
	# read and appended to nobody's ledger.jsonl, a link to root's 0600
	# ledger (the mark there lifted by root's own hand)
	mkdir -p "$d/rootrun2" "$d/lnk2" "$d/nobody-flip2" && chmod 700 "$d/rootjob" || exit 1
	: >"$d/rootrun2/ledger.jsonl"
	before=$(md5sum <"$d/rootjob/ledger.jsonl")
	ln -s "$d/rootjob/ledger.jsonl" "$d/nobody-flip2/ledger.jsonl" && chown -R -h nobody: "$d/nobody-flip2" &&
		ln -s "$d/rootrun2" "$d/lnk2/run" && chown -h nobody: "$d/lnk2/run" || exit 1
	env LD_PRELOAD="$d/flip.so" LLMT_FLIP_OPEN=1 LLMT_FLIP_LINK="$d/lnk2/run" LLMT_FLIP_TO="$d/nobody-flip2" \
		"$W" ckpt-unmark "$d/lnk2/run" --all >/dev/null 2>"$d/err"; rc=$?
	[ "$(readlink "$d/lnk2/run")" = "$d/nobody-flip2" ] || bad "the shim did not swap the unmark link"
	[ "$(md5sum <"$d/rootjob/ledger.jsonl")" = "$before" ] ||
		bad "ckpt-unmark as root followed the swapped link and wrote into root's ledger through nobody's"
	[ $rc = 0 ] || bad "ckpt-unmark through the swapped link: exit $rc (want 0: the judged dir has no mark): $(cat "$d/err")"
else
	bad "the shim does not build: $(cat "$d/cc.err")"
fi
[ $fail = 0 ] && echo "ok: no command run, no link followed, no escape printed; refusals 64"
exit $fail
