#!/bin/sh
# tests/wrapper/wrap_cluster_nopmix.sh: `srun llm-train` where no PMIx is
# asked for (SLURM_MPI_TYPE unset, the emulated cluster's MpiDefault=none),
# as a new user types it: exit 64 with one line naming SLURM_MPI_TYPE and
# MpiDefault=pmix, not Open MPI's pages ("OMPI was not built with SLURM's
# PMI support", MPI_Init_thread aborts: red before, exit 1); the same for
# `llm-train selftest`; under llm-train-wrap a usage error, never retried
# (one launch, user_error); with SLURM_MPI_TYPE=pmix the same run trains.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
real_trainer_setup
unset SLURM_MPI_TYPE
md=$(scontrol show config | sed -n 's/^MpiDefault *= *//p')
[ "$md" = none ] || fail "the emulated cluster's MpiDefault is '$md', want none"
ARGS="--model $RT_SRC/configs/tiny.yaml --data $W/corpus --seq 64 --micro-batch 2 --steps 2 --quiet"

one_line() {  # FILE WHAT: exactly one llm-train line, naming both, no Open MPI text
	n=$(grep -c '^llm-train' "$1")
	grep '^llm-train' "$1" | grep -q 'SLURM_MPI_TYPE unset.*MpiDefault=pmix' && [ "$n" = 1 ] &&
		! grep -q 'PMI support\|MPI_Init\|OPAL ERROR' "$1" || { cat "$1"; fail "$2: want one line naming SLURM_MPI_TYPE and MpiDefault=pmix, got $n and the above"; }
}
# shellcheck disable=SC2086
srun -N2 --ntasks-per-node=1 "$LT" $ARGS >"$W/srun.out" 2>&1
rc=$?
[ $rc = 64 ] || { cat "$W/srun.out"; fail "srun llm-train without PMIx: exit $rc, want 64"; }
one_line "$W/srun.out" "srun llm-train"
echo "ok: srun llm-train without PMIx: exit 64, $(grep '^llm-train' "$W/srun.out" | cut -c1-90)..."
srun -N2 --ntasks-per-node=1 "$LT" selftest >"$W/st.out" 2>&1
rc=$?
[ $rc = 64 ] || { cat "$W/st.out"; fail "srun llm-train selftest without PMIx: exit $rc, want 64"; }
one_line "$W/st.out" "srun llm-train selftest"
echo "ok: srun llm-train selftest without PMIx: exit 64, one line"

# under the wrapper: a usage error, stopped at once
# one task too: Open MPI refuses a direct launch by srun without PMI
# ("OMPI was not built with SLURM's PMI support"), singleton or not
srun -N1 -n1 "$LT" $ARGS >"$W/one.out" 2>&1
rc=$?
[ $rc = 64 ] || { cat "$W/one.out"; fail "srun -n1 llm-train without PMIx: exit $rc, want 64"; }
one_line "$W/one.out" "srun -n1 llm-train"
echo "ok: srun -n1 llm-train without PMIx: exit 64, one line"
# the batch script itself (no srun: no SLURM_STEP_ID) starts llm-train as
# an MPI singleton, which trains
printf '#!/bin/sh\nunset SLURM_MPI_TYPE\nLLM_TRAIN_DP=1 exec "%s" %s\n' "$LT" "$ARGS" >"$W/direct.sh" && chmod +x "$W/direct.sh"
j=$(cd "$W" && sbatch --parsable --no-requeue -o direct.out -N1 -n1 direct.sh) || fail "sbatch"
cluster_sbatch_wait "$j" 60 >/dev/null || { cat "$W/direct.out"; fail "llm-train in the batch script itself (no srun) failed"; }
echo "ok: llm-train run by the batch script itself (a singleton) trains"

cat >"$W/j.sh" <<JOB
#!/bin/sh
unset SLURM_MPI_TYPE
exec "$WRAP" --ckpt-dir "$W/nopmix" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- "$LT" $ARGS
JOB
chmod +x "$W/j.sh"
j=$(cd "$W" && sbatch --parsable --no-requeue -o nopmix.out -N2 --ntasks-per-node=1 j.sh) || fail "sbatch"
cluster_sbatch_wait "$j" 60 >/dev/null && { cat "$W/nopmix.out"; fail "the job without PMIx completed"; }
ledger nopmix "launches=1 failures=user_error restarts=0 requeues=0"
grep -q 'SLURM_MPI_TYPE unset.*MpiDefault=pmix' "$W/nopmix.out" || { cat "$W/nopmix.out"; fail "the job's output lacks the line"; }
echo "ok: under llm-train-wrap: one launch, user_error, not retried"

# shellcheck disable=SC2086
SLURM_MPI_TYPE=pmix srun -N2 --ntasks-per-node=1 "$LT" $ARGS >"$W/pmix.out" 2>&1 ||
	{ cat "$W/pmix.out"; fail "srun llm-train with SLURM_MPI_TYPE=pmix failed"; }
echo "ok: with SLURM_MPI_TYPE=pmix it trains"
echo PASS
