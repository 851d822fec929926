#!/bin/sh
# tests/cluster/smoke_mpi.sh: a real MPI job over PMIx on the emulated
# cluster: srun --mpi=pmix -N4 -n8 mpi_hello; the allreduce of the ranks
# must be 0+1+...+7 = 28 and the ranks must span 4 nodes.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
prog=$top_builddir/tests/cluster/mpi_hello
[ -x "$prog" ] || fail "$prog is not built (make -C tests cluster/mpi_hello)"
cluster_need

out=$CLUSTER_WORK/mpi.out
timeout 120 srun --mpi=pmix -N4 -n8 --ntasks-per-node=2 "$prog" >"$out" 2>&1
rc=$?
cat "$out"
# Open MPI 4.1.4's rare start-up race (see cluster_env in lib.sh): a rank
# dies of SIGSEGV inside MPI_Init before any rank printed. Said, then run
# once more; any other failure, or a second one, fails the test.
if [ $rc != 0 ] && grep -q 'Segmentation fault' "$out" && ! grep -q '^rank ' "$out"; then
	echo "note: Open MPI crashed inside MPI_Init (its known TCP start-up race); running once more"
	timeout 120 srun --mpi=pmix -N4 -n8 --ntasks-per-node=2 "$prog" >"$out" 2>&1
	rc=$?
	cat "$out"
fi
[ $rc = 0 ] || fail "srun --mpi=pmix exited $rc"
grep -qx 'size 8 sum 28' "$out" || fail "want 'size 8 sum 28' from rank 0"
[ "$(grep -c '^rank [0-7] of 8 on ' "$out")" = 8 ] || fail "want 8 rank lines"
nn=$(sed -n 's/^rank [0-7] of 8 on //p' "$out" | sort -u | wc -l)
[ "$nn" = 4 ] || fail "ranks ran on $nn nodes, want 4"
echo "PASS"
