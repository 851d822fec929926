#!/bin/sh
# tests/wrapper/wrap_torch_env.sh: a torchrun-style script sees under
# sbatch --llm-train + llm-train-wrap every variable the real torchrun
# (torch 1.13's torch.distributed.run, tests/wrapper/torchrun-ref.py)
# sets its workers, but the elastic agent's own (TORCHELASTIC_RUN_ID,
# whose presence makes dist.is_torchelastic_launched() claim an agent,
# TORCHELASTIC_USE_AGENT_STORE, TORCHELASTIC_ERROR_FILE, and
# NCCL_ASYNC_ERROR_HANDLING). Reference: torchrun --nnodes 1
# --nproc_per_node 2 locally; ours: -N2 --ntasks-per-node=2 on the
# emulated cluster. GROUP_RANK is the node rank (RANK = GROUP_RANK *
# LOCAL_WORLD_SIZE + LOCAL_RANK), GROUP_WORLD_SIZE the nodes, ROLE_* as
# torchrun's single role, and TORCHELASTIC_RESTART_COUNT counts the
# wrapper's restarts (rank 0 exits 75 once: 1 on the second attempt).
# Red before: GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE,
# ROLE_NAME, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS unset
# (a script reading os.environ["GROUP_RANK"] died with KeyError).
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
torch_cluster_need 2
W=$CLUSTER_WORK
PY=$top_srcdir/tests/wrapper/torch-env.py
mkdir -p "$W/ref" "$W/ours" || exit 1
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT OMP_NUM_THREADS=1 timeout -k 5 120 \
	/usr/bin/python3 "$top_srcdir/tests/wrapper/torchrun-ref.py" --nnodes 1 --nproc_per_node 2 \
	--master_addr 127.0.0.1 --master_port "$port" "$PY" "$W/ref" >"$W/ref.out" 2>&1 || { cat "$W/ref.out"; fail "torchrun (the reference) failed"; }
cat >"$W/ours.sh" <<JOB
#!/bin/sh
export OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo TORCH_ENV_FAIL=1
exec "$WRAP" --ckpt-dir "$W/ck" --ckpt-tool none --tick 0.2 --backoff 0.2 --max-restarts 2 -- /usr/bin/python3 "$PY" "$W/ours"
JOB
chmod +x "$W/ours.sh"
j=$(cd "$W" && sbatch --parsable --no-requeue -N2 --ntasks-per-node=2 --llm-train=tp=1 -o ours.out ours.sh) || fail "sbatch"
st=$(cluster_sbatch_wait "$j" 120) || { cat "$W/ours.out"; fail "job $j ended $st"; }
/usr/bin/python3 - "$W" <<'PY' || { cat "$W/ours.out"; fail "the environment differs from torchrun's"; }
import glob, json, os, sys
w = sys.argv[1]
agent_only = {"TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE",
              "NCCL_ASYNC_ERROR_HANDLING"}
ref = [json.load(open(p)) for p in sorted(glob.glob(w + "/ref/env.*"))]
assert len(ref) == 2, "torchrun: %d ranks wrote their environment" % len(ref)
names = set(ref[0]) - set(os.environ) - {"OMP_NUM_THREADS"}   # what torchrun set
assert {"RANK", "GROUP_RANK", "TORCHELASTIC_RESTART_COUNT"} <= names, sorted(names)
bad = []
for a in ("0", "1"):
    ours = [json.load(open(p)) for p in sorted(glob.glob(w + "/ours/env.*.%s" % a))]
    if len(ours) != 4:
        bad.append("attempt %s: %d of 4 ranks wrote their environment" % (a, len(ours)))
    for e in ours:
        miss = sorted(n for n in names - agent_only if n not in e)
        if miss:
            bad.append("rank %s: torchrun sets %s, we do not" % (e.get("RANK"), " ".join(miss)))
            continue
        i = {k: int(e[k]) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                                     "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE",
                                     "TORCHELASTIC_RESTART_COUNT")}
        want = {"GROUP_WORLD_SIZE": 2, "ROLE_RANK": i["RANK"], "ROLE_WORLD_SIZE": i["WORLD_SIZE"],
                "TORCHELASTIC_RESTART_COUNT": int(a),
                "RANK": i["GROUP_RANK"] * i["LOCAL_WORLD_SIZE"] + i["LOCAL_RANK"]}
        for k, v in want.items():
            if i[k] != v:
                bad.append("rank %d: %s=%d, want %d" % (i["RANK"], k, i[k], v))
        if e.get("ROLE_NAME") != ref[0]["ROLE_NAME"]:
            bad.append("ROLE_NAME=%s, torchrun's %s" % (e.get("ROLE_NAME"), ref[0]["ROLE_NAME"]))
        for n in agent_only & set(e):
            bad.append("rank %d: %s set (the elastic agent's own)" % (i["RANK"], n))
for b in bad:
    print("FAIL:", b)
print("torchrun's variables checked:", " ".join(sorted(names - agent_only)))
sys.exit(1 if bad else 0)
PY
echo "ok: torchrun's worker environment, node rank and restart count under sbatch --llm-train"
echo PASS
