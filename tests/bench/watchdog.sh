#!/bin/sh
# tests/bench/watchdog.sh: the cost of the communication watchdog's bracket
# per MPI call (runtime/resilience/watchdog.h), against one monotonic clock read and
# an 8-byte MPI_Allreduce on a one-rank world (raw, and through
# comm_mpi.c with the bracket), all measured in the same run
# (tests/bench/bench_watchdog). A singleton MPI job: no cluster needed.
set -eu
top_builddir=${top_builddir:-.}
BIN=$top_builddir/tests/bench/bench_watchdog
[ -x "$BIN" ] || { echo "watchdog: $BIN not built (make -C tests bench/bench_watchdog)"; exit 1; }
export OMPI_MCA_btl=self OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$("$BIN")
echo "$out"
f() { echo "$out" | sed "s/.*$1=\([0-9.]*\).*/\1/"; }
echo "watchdog bracket: $(f bracket_ns) ns per MPI call = $(f bracket_over_clock)x one clock_gettime ($(f clock_ns) ns);" \
	"8-byte MPI_Allreduce, 1 rank: $(f allreduce_watched_ns) ns watched vs $(f allreduce_raw_ns) ns raw = $(f watched_over_raw)x"
