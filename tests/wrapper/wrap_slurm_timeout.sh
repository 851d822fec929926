#!/bin/sh
# tests/wrapper/wrap_slurm_timeout.sh: the wrapper's slurmctld queries are
# bounded by --slurm-timeout. A Slurm configuration (SLURM_CONF) whose
# slurmctld port is a socket that takes connections and never answers (a
# hung controller; MessageTimeout=100, so a query waits 100 s and more),
# with a munged of the test's own for the credentials. In a job (a
# SLURM_JOB_ID, a fake srun that runs the command), a trainer exits 87
# (preempted, checkpoint written): the wrapper asks squeue for leftover
# steps, sinfo for node states, job-state whether the job was cancelled,
# scontrol to requeue. Each must be killed after --slurm-timeout 1 with
# one line naming it and the safe choice (leftover steps not looked for,
# node states unknown, not cancelled, not requeued), and the wrapper ends
# with the attempt's 87 and a requeue_failed event (the safe side: if
# slurmctld took the requeue after all, the job comes back and resumes).
# The run is guarded by a 90 s timeout only so that a red run ends: red
# with the bound gone (wr_slurm_query without a deadline): the guard
# fires with the wrapper still in its first query.
set -u
TAG=slurmto
. "$top_srcdir/tests/wrapper/real_lib.sh"
MUNGED=/usr/sbin/munged
[ -x "$MUNGED" ] && command -v squeue >/dev/null && command -v scontrol >/dev/null ||
	{ echo "SKIP: munged or the Slurm commands missing"; exit 77; }
hole= mpid=
trap '_rc=$?; [ -n "$hole" ] && kill "$hole" 2>/dev/null; [ -n "$mpid" ] && kill "$mpid" 2>/dev/null;
	[ $_rc = 0 ] && rm -rf "$W" || echo "files kept in $W"; exit $_rc' EXIT
# the controller that never answers: a listening socket nobody accepts on
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
time.sleep(3600)' >"$W/port" &
hole=$!
i=0
until [ -s "$W/port" ]; do i=$((i + 1)); [ $i -le 100 ] || fail "no listening socket"; sleep 0.1; done
P=$(cat "$W/port")
mkdir -m 700 "$W/munge"
dd if=/dev/urandom bs=1024 count=1 of="$W/munge/key" 2>/dev/null && chmod 400 "$W/munge/key"
"$MUNGED" --force --socket="$W/munge/sock" --pid-file="$W/munge/pid" --key-file="$W/munge/key" \
	--log-file="$W/munge/log" --seed-file="$W/munge/seed" || fail "munged did not start"
mpid=$(cat "$W/munge/pid")
cat >"$W/slurm.conf" <<CONF
ClusterName=wrap-slurmto
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$P
SlurmdPort=$((P + 1))
AuthType=auth/munge
AuthInfo=socket=$W/munge/sock
MessageTimeout=100
NodeName=hn1 CPUs=1 State=UNKNOWN
PartitionName=p Nodes=hn1 Default=YES
CONF
# srun: the command without srun's options
cat >"$W/srun" <<'SRUN'
#!/bin/sh
while [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; do shift; done
exec "$@"
SRUN
chmod +x "$W/srun"
SLURM_CONF=$W/slurm.conf SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=hn1 SLURM_NTASKS=1 LLM_TRAIN=1 \
	timeout -k 5 90 "$WRAP" --srun "$W/srun" --ckpt-dir "$W/ck" --ckpt-tool none --no-preflight --tick 0.1 \
	--slurm-timeout 1 -- sh -c 'exit 87' >"$W/out" 2>&1
rc=$?
[ $rc != 124 ] && [ $rc != 137 ] || { cat "$W/out"; fail "the wrapper was still running after 90 s: a query not bounded"; }
[ $rc = 87 ] || { cat "$W/out"; fail "wrapper exit $rc, want 87 (the attempt's code: the requeue failed)"; }
for q in "squeue -h: .*leftover steps not looked for" "sinfo -h: .*node states unknown" \
	"llm-train-wrap job-state: .*the job taken as not cancelled" "scontrol requeue: .*taken as not requeued"; do
	[ "$(grep -c "^llm-train-wrap: $q" "$W/out")" = 1 ] || { cat "$W/out"; fail "not one line '$q'"; }
done
grep "no answer in" "$W/out" | grep -v -q "no answer in 1 s (--slurm-timeout): killed; " &&
	{ cat "$W/out"; fail "a query line without the bound"; }
grep -q '"event":"requeue_failed","rc":-2' "$W/ck/ledger.jsonl" || { cat "$W/ck/ledger.jsonl"; fail "no requeue_failed event (rc -2)"; }
grep "no answer in" "$W/out"
echo "every slurmctld query killed after 1 s; exit 87, requeue_failed"
echo PASS
