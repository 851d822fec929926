#!/bin/sh
# tests/bench/ckpt_bw.sh: checkpoint save and load bandwidth against dd on
# the same disk in the same run (tests/bench/ckpt_bw does both, so dd runs
# under the same memory conditions). Save = snapshot + write + fsync of
# every shard + manifest + rename + latest (llmt_ckpt_save ..
# llmt_ckpt_wait), R ranks as threads; reference: R parallel dd of the same
# bytes, bs=8M conv=fsync. Load = open + read every range + verify every
# checksum, files evicted from the page cache first; reference: dd read of
# its files after the same eviction. Also the stall: the time the loop
# waits inside llmt_ckpt_save (host snapshot). Best of 3 runs.
# Env: CKPT_BW_MB (per rank, default 512), CKPT_BW_RANKS (default 2),
# CKPT_BW_DIR (default $top_builddir/tests/bench/ckpt_bw.tmp: the build's disk).
set -eu
top_builddir=${top_builddir:-.}
BIN=$top_builddir/tests/bench/ckpt_bw
[ -x "$BIN" ] || { echo "ckpt_bw: $BIN not built (make -C tests bench/ckpt_bw)"; exit 1; }
MB=${CKPT_BW_MB:-512}
R=${CKPT_BW_RANKS:-2}
D=${CKPT_BW_DIR:-$top_builddir/tests/bench/ckpt_bw.tmp}
rm -rf "$D"; mkdir -p "$D"
trap 'rm -rf "$D"' EXIT INT TERM
field() { echo "$1" | sed "s/.*$2=\([0-9.]*\).*/\1/"; }
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a) ? b : a }'; }
gbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.2f", b / s / 1e9 }'; }
bs=0 bl=0 bw=0 br=0
for rep in 1 2 3; do
	rm -rf "$D/ck"
	out=$("$BIN" "$MB" "$R" "$D/ck" drop)
	b=$(field "$out" bytes); db=$(field "$out" dd_bytes)
	sv=$(gbps "$b" "$(field "$out" save_s)"); ld=$(gbps "$b" "$(field "$out" load_s)")
	dw=$(gbps "$db" "$(field "$out" dd_write_s)"); dr=$(gbps "$db" "$(field "$out" dd_read_s)")
	echo "run $rep: $((b / 1048576)) MiB in $R shards: save $sv GB/s (dd write $dw), load $ld GB/s (dd read $dr), stall $(field "$out" stall_s) s of $(field "$out" save_s) s"
	bs=$(max "$bs" "$sv"); bl=$(max "$bl" "$ld"); bw=$(max "$bw" "$dw"); br=$(max "$br" "$dr")
done
awk -v s="$bs" -v l="$bl" -v w="$bw" -v r="$br" 'BEGIN {
	printf "ckpt_bw: best of 3: save %.2f GB/s = %.2f x dd write (%.2f GB/s); load %.2f GB/s = %.2f x dd read (%.2f GB/s); goal 0.80\n", s, s / w, w, l, l / r, r }'
