#!/bin/sh
# tests/wrapper/wrap_cluster_hbhost.sh: the node named in a heartbeat is
# the job's bytes (doc/contracts.md: "optionally followed by the rank's
# node"); a script that writes its own heartbeats may put its FQDN there
# (socket.getfqdn(), `hostname -f`) or anything else. Two jobs (sbatch -N2,
# the wrapper, a small heartbeat writer whose rank 1 hangs in attempts 0
# and 1): one names "gpu9.example.com", one "<its Slurm node>.example.com".
# Before: the second hang made gpu9.example.com a node fault: dp shrunk
# 2 -> 1 with `srun --exclude=gpu9.example.com`, which Slurm refuses
# ("Invalid node name specified"), and the job ended 70 after burning its
# restarts. Now a name that is not one of the job's nodes is "node
# unknown" (both hangs transient, no exclusion, the job finishes), and
# NAME.domain of a job's node NAME is that node (a node fault on it).
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
cluster_need
W=$CLUSTER_WORK
cat >"$W/hb.py" <<'PY'
import os, time
ck = os.environ["LLM_TRAIN_CKPT_DIR"]; hb = ck + "/heartbeat"
rank = int(os.environ["RANK"]); att = int(os.environ.get("LLM_TRAIN_ATTEMPT", "0"))
host = os.environ["HBHOST"].replace("SELF", os.environ["SLURMD_NODENAME"])
os.makedirs(hb, exist_ok=True)
def beat(step, phase):
    p = "%s/rank_%05d" % (hb, rank)
    with open(p + ".tmp", "w") as f:
        f.write("%d %d %s 0.2 %s\n" % (step, time.time_ns(), phase, host))
    os.replace(p + ".tmp", p)
for step in range(1, 6):
    time.sleep(0.2); beat(step, "train")
if att < 2:
    for i in range(600):   # rank 1 hangs; rank 0 waits for it, fresh
        time.sleep(0.2)
        if rank != 1: beat(5, "train")
beat(5, "done")
PY
job() {  # NAME HBHOST
	cat >"$W/$1.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/$1" --ckpt-tool none --tick 0.2 --hang-timeout-min 3 --hang-timeout-max 3 \\
	--backoff 0.2 --max-restarts 4 --no-requeue -- /usr/bin/python3 "$W/hb.py"
JOB
	chmod +x "$W/$1.sh"
	(cd "$W" && HBHOST=$2 sbatch --parsable --no-requeue -N2 --ntasks-per-node=1 --llm-train=tp=1 -o "$1.out" "$1.sh")
}
bogus=$(job bogus gpu9.example.com) || fail "sbatch bogus"
fqdn=$(job fqdn SELF.example.com) || fail "sbatch fqdn"
st=$(cluster_sbatch_wait "$bogus" 120) || { cat "$W/bogus.out"; fail "bogus: job $bogus ended $st"; }
ledger bogus "launches=3 failures=transient,transient restarts=2 requeues=0"
grep -q '"exclude":\["' "$W/bogus/ledger.jsonl" && fail "bogus: a node was excluded"
echo "ok: a heartbeat naming gpu9.example.com: node unknown, two transient hangs, finished"
st=$(cluster_sbatch_wait "$fqdn" 120) || { cat "$W/fqdn.out"; fail "fqdn: job $fqdn ended $st"; }
grep '"event":"failure"' "$W/fqdn/ledger.jsonl" | grep -q '"class":"node_fault","node":"node[0-9]*"' ||
	{ cat "$W/fqdn.out"; fail "fqdn: no node fault on a Slurm node name"; }
echo "ok: NODE.example.com is taken as NODE"
echo PASS
