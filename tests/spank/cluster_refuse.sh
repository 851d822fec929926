#!/bin/bash
# tests/spank/cluster_refuse.sh: llm_train.so refuses bad jobs cleanly on
# the emulated cluster: bad options and impossible layouts at sbatch/srun
# time with one line naming the value (nothing submitted), --llm-explain
# prints and runs nothing, a broken policy refuses training jobs with
# file:line:column (at submit and at task start) while other jobs run, and
# the daemons survive all of it.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
so=$top_builddir/spank/.libs/llm_train.so
[ -f "$so" ] || { echo "FAIL: $so not built (a build output, never a skip)"; exit 1; }
. "$top_srcdir/tests/cluster/lib.sh"
cluster_need --nodes 4 --plugin "$so"
fail() { echo "FAIL: $*"; exit 1; }
w=$CLUSTER_DIR/spank-refuse
mkdir -p "$w" || exit 1
pol=$CLUSTER_DIR/etc/llm-train.yaml
cp "$pol" "$w/good.yaml" || exit 1
printf '#!/bin/sh\ntouch %s/ran\n' "$w" >"$w/job.sh"

njobs() { squeue -h -o %i | wc -l; }

# refused CMD... : must fail, say "llm_train:" and name the value in $want
refused() {
	"$@" >"$w/out" 2>"$w/err" && { cat "$w/out" "$w/err"; fail "accepted: $*"; }
	grep -q "llm_train: .*$want" "$w/err" || { cat "$w/err"; fail "no 'llm_train: ...$want' line for: $*"; }
	[ "$(grep -c 'llm_train: ' "$w/err")" = 1 ] || { cat "$w/err"; fail "more than one llm_train line for: $*"; }
}

before=$(njobs)
want=abc refused sbatch -N1 --llm-tp=abc "$w/job.sh"
want=99999999999999999999 refused sbatch -N1 --llm-train=tp=99999999999999999999 "$w/job.sh"
want=bogus refused sbatch -N1 --llm-train=tp=1,bogus=2 "$w/job.sh"
want=999 refused sbatch -N1 --llm-restarts=999 "$w/job.sh"
want=nosuch refused sbatch -N1 --llm-nccl-profile=nosuch "$w/job.sh"
want=/etc/x refused sbatch -N1 --llm-ckpt-dir=/etc/x "$w/job.sh"
[ "$(njobs)" = "$before" ] || fail "a refused sbatch left a job behind"
want=10x refused salloc -N1 --llm-ckpt-interval=10x true
want=abc SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_pp=abc refused srun -N1 true
# the task count is known to srun once it has the step: refused before launch
want='3 tasks' refused srun -N1 -n3 --llm-tp=2 true
[ ! -e "$w/ran" ] || fail "a refused job ran"
echo "ok: bad options refused with one line naming the value, nothing submitted"

# --llm-explain: sbatch prints and does not submit; srun prints the map
sbatch -N2 --llm-train=tp=2,explain "$w/job.sh" >"$w/out" 2>"$w/err" && fail "sbatch --llm-explain submitted"
grep -q 'llm_train: explain: layout tp=2' "$w/out" || { cat "$w/out" "$w/err"; fail "sbatch explain output"; }
grep -q 'LLM_TRAIN_RESTARTS=' "$w/out" || fail "sbatch explain shows no environment"
grep -q 'job not submitted' "$w/err" || fail "sbatch explain: no refusal line"
sbatch -H -N1 --llm-train=explain --parsable "$w/job.sh" >/dev/null 2>&1 && fail "explain submitted a held job"
cat >"$w/ex.sh" <<EOF
#!/bin/sh
srun --llm-explain touch $w/ran
echo "srun rc=\$?"
EOF
jid=$(sbatch --parsable -N2 --ntasks-per-node=2 --llm-train=tp=2 -o "$w/ex.out" "$w/ex.sh") || fail "sbatch"
cluster_sbatch_wait "$jid" 60 >/dev/null || { cat "$w/ex.out"; fail "explain job"; }
grep -q 'environment of task 3 (node2)' "$w/ex.out" || { cat "$w/ex.out"; fail "srun explain: no per-task environment"; }
grep -q 'srun rc=1' "$w/ex.out" || fail "srun --llm-explain did not refuse to launch"
[ ! -e "$w/ran" ] || fail "srun --llm-explain ran the command"
echo "ok: --llm-explain prints map and environment, runs nothing"

# ---- broken policy -------------------------------------------------------------
printf 'defaults:\n  tp: 1\n  bogus: 3\n' >"$w/bad.yaml"
cp "$w/bad.yaml" "$pol"
want='llm-train.yaml:3:3: unknown key' refused sbatch -N1 --llm-train "$w/job.sh"
want='llm-train.yaml:3:3: unknown key' refused srun -N1 --llm-train true
srun -N1 true || fail "a job without --llm-* options failed under a broken policy"
# broken between submit and launch: the batch step refuses, nothing runs
cp "$w/good.yaml" "$pol"
jid=$(sbatch --parsable -H -N1 --llm-train -o "$w/held.out" "$w/job.sh") || fail "sbatch (good policy)"
cp "$w/bad.yaml" "$pol"
scontrol release "$jid"
st=$(cluster_sbatch_wait "$jid" 60) && fail "job ran under a broken policy"
grep -q 'llm_train: task refused: .*llm-train.yaml:3:3' "$w/held.out" ||
	{ cat "$w/held.out"; fail "no refusal message in the job's output"; }
[ ! -e "$w/ran" ] || fail "the batch script ran under a broken policy"
cp "$w/good.yaml" "$pol"
echo "ok: broken policy: refused at submit and at task start with file:line:column"

for n in $(cluster_nodes); do
	_cl_daemon_pid "$CLUSTER_DIR" slurmd "$n" >/dev/null || fail "slurmd of $n died"
done
_cl_daemon_pid "$CLUSTER_DIR" slurmctld >/dev/null || fail "slurmctld died"
srun -N4 --llm-train true || fail "good training step after all this"
echo "PASS"
