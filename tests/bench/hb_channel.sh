#!/bin/sh
# tests/bench/hb_channel.sh: the heartbeat channel at RANKS simulated ranks
# (default 16,384, 8 a node: 2,048 nodes), side by side in one run: rank
# files (each rank tmp + rename per step; the wrapper opening every rank's
# file) against node files (hbchannel.c: each rank writes its node's
# shared segment, one rank of the node flushes its file). The heartbeat
# directory is on a real file system (mktemp -d under $TMPDIR, /tmp
# here). File-system calls are counted in the code paths (bench_hbchan)
# and, for a run of SSTEPS steps again, by strace -f -y (openat, rename,
# getdents64 on the heartbeat directory's paths) of the whole process:
# writers and the wrapper's reader. Simulated step time STEP_S: the
# writes run as fast as the file system takes them; rates are per second
# of the simulated training.
# usage: hb_channel.sh [RANKS] [PER_NODE] [STEPS] [STEP_S] [THREADS] [SSTEPS]
set -eu
top_builddir=${top_builddir:-.}
B=$top_builddir/tests/bench/bench_hbchan
[ -x "$B" ] || { echo "hb_channel: $B not built (make -C tests check TESTS=)"; exit 1; }
RANKS=${1:-16384} PER=${2:-8} STEPS=${3:-8} STEP_S=${4:-0.2} THREADS=${5:-4} SSTEPS=${6:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/llmt-bench-hb.XXXXXX")
trap 'rm -rf "$W"' EXIT
df -T "$W" | tail -n 1 | awk '{print "heartbeat dir on " $2 " (" $1 ")"}'
for mode in rank node; do
	mkdir "$W/$mode"
	"$B" "$W/$mode" $mode "$RANKS" "$PER" "$STEPS" "$STEP_S" "$THREADS"
done
if command -v strace >/dev/null 2>&1; then
	for mode in rank node; do
		rm -rf "$W/$mode"; mkdir "$W/$mode"
		strace -f -y -e trace=openat,rename,getdents64 -o "$W/$mode.strace" \
			"$B" "$W/$mode" $mode "$RANKS" "$PER" "$SSTEPS" "$STEP_S" "$THREADS" >/dev/null
		# only the calls on the heartbeat directory (not /dev/shm, not libraries)
		grep -F "$W/$mode" "$W/$mode.strace" | awk -v m=$mode -v s="$SSTEPS" -v d="$STEP_S" '
			{ for (k in n) if (index($0, k "(")) c[k]++ }
			BEGIN { n["openat"]; n["rename"]; n["getdents64"] }
			END { printf "strace %s, %d steps: on the heartbeat dir openat %d, rename %d, getdents64 %d: %.0f calls/s of training\n",
			m, s, c["openat"], c["rename"], c["getdents64"], (c["openat"] + c["rename"] + c["getdents64"]) / (s * d) }'
		rm -f "$W/$mode.strace"
	done
fi
