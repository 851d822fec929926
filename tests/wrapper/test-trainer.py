#!/usr/bin/python3
"""TEST TRAINER for the wrapper's tests, not the product (that is llm-train).

A stand-in that honours the environment contract of doc/contracts.md so
llm-train-wrap can be tested before and apart from the real runtime:
per-rank heartbeats, checkpoints step_NNNNNNNN/rank_NNNNN.bin + a manifest
written last (tmp + rename) + `latest`, metrics.jsonl, exit codes 0/64/75/
85/86/87, sdc.json, SIGUSR1 -> checkpoint and exit 87, LLM_TRAIN_FAULT.
Its "model" is a hash chain: w_s = sha256(w_{s-1} | batch index), the
same on every data-parallel replica, so a run that restarts and resumes
ends with bit-identical weights to one that did not.

usage: test-trainer.py --steps N [--step-time S] [--bad-config]
"""
import hashlib, json, os, signal, socket, sys, time

def env(name, default=""):
    v = os.environ.get(name)
    return default if v is None or v == "" else v

args = sys.argv[1:]
steps, step_time, bad = 20, 0.05, False
while args:
    a = args.pop(0)
    if a == "--steps": steps = int(args.pop(0))
    elif a == "--step-time": step_time = float(args.pop(0))
    elif a == "--bad-config": bad = True
    else:
        print("test-trainer: unknown argument %r" % a, file=sys.stderr); sys.exit(64)
if bad:
    print("test-trainer: config error: --bad-config given", file=sys.stderr)
    sys.exit(64)

rank = int(env("RANK", env("SLURM_PROCID", "0")))
world = int(env("WORLD_SIZE", env("SLURM_NTASKS", "1")))
host = env("SLURMD_NODENAME", socket.gethostname())
ckpt = env("LLM_TRAIN_CKPT_DIR")
if not ckpt:
    print("test-trainer: LLM_TRAIN_CKPT_DIR not set", file=sys.stderr); sys.exit(64)
hbdir = env("LLM_TRAIN_HEARTBEAT_DIR", ckpt + "/heartbeat")
attempt = int(env("LLM_TRAIN_ATTEMPT", "0"))
interval = env("LLM_TRAIN_CKPT_INTERVAL", "5")
interval = int(interval) if interval.isdigit() else 5
os.makedirs(hbdir, exist_ok=True)
os.makedirs(ckpt + "/pids", exist_ok=True)
with open("%s/pids/rank_%05d.attempt_%d" % (ckpt, rank, attempt), "w") as f:
    f.write("%d %s\n" % (os.getpid(), host))

fault_kind, fault_step, fault_rank = "", -1, -1
f = env("LLM_TRAIN_FAULT")
if f:
    kind, _, rest = f.partition("@")
    rest, _, node = rest.partition("/")   # /node: only on that node (llm-train's form)
    st, _, rk = rest.partition(":")
    always = kind.endswith("!")
    if (always or attempt == 0) and node in ("", host):
        fault_kind, fault_step = kind.rstrip("!"), int(st)
        fault_rank = int(rk) if rk else -1

def atomic_write(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as fh:
        fh.write(text)
    os.rename(tmp, path)

# TEST_TRAINER_HB_HOST=0: heartbeats without the optional host field (as llm-train writes them)
hb_host = " " + host if env("TEST_TRAINER_HB_HOST", "1") != "0" else ""

# TEST_TRAINER_CLOCK_SKEW=r:s: rank r's clock (its heartbeat times) is s seconds ahead (a node's clock)
sk_rank, _, sk_s = env("TEST_TRAINER_CLOCK_SKEW").partition(":")
skew_ns = int(float(sk_s) * 1e9) if sk_rank == str(rank) else 0

def heartbeat(step, phase, last):
    atomic_write("%s/rank_%05d" % (hbdir, rank),
                 "%d %d %s %.6f%s\n" % (step, time.time_ns() + skew_ns, phase, last, hb_host))

preempt = [False]
signal.signal(signal.SIGUSR1, lambda s, fr: preempt.__setitem__(0, True))
signal.signal(signal.SIGTERM, lambda s, fr: preempt.__setitem__(0, True))

heartbeat(0, "init", 0)
w, step, data_pos = hashlib.sha256(b"init").hexdigest(), 0, 0
resume = env("LLM_TRAIN_RESUME")
if resume:
    heartbeat(0, "load", 0)
    with open(resume + "/manifest.json") as fh:
        man = json.load(fh)
    with open("%s/rank_%05d.bin" % (resume, rank % man["world_size"])) as fh:
        w, data_pos = fh.read().split()[:2]
    data_pos, step = int(data_pos), man["step"]
data_pos += int(env("LLM_TRAIN_SKIP_BATCHES", "0"))

def wait_peer(t0):
    # A peer that never shows up is a lost peer: once Slurm signals the
    # step (SIGTERM) or after a long wait, give up like a real rank (75).
    if (preempt[0] and time.time() - t0 > 1.0) or time.time() - t0 > 120:
        print("test-trainer: rank %d: lost a peer in the checkpoint barrier" % rank, file=sys.stderr)
        sys.exit(75)
    time.sleep(0.01)

def save(step):
    t0 = time.time()
    heartbeat(step, "save", 0)
    d = "%s/step_%08d" % (ckpt, step)
    os.makedirs(d, exist_ok=True)
    atomic_write("%s/rank_%05d.bin" % (d, rank), "%s %d %s %d\n" % (w, data_pos, host, attempt))
    man_path = d + "/manifest.json"
    if rank == 0:
        shards = {}
        while len(shards) < world:
            for r in range(world):
                p = "%s/rank_%05d.bin" % (d, r)
                if r not in shards and os.path.exists(p):
                    sh = open(p).read().split()
                    if len(sh) >= 4 and int(sh[3]) == attempt:   # not a shard of an earlier attempt
                        shards[r] = sh
            if len(shards) < world:
                wait_peer(t0)
        ws = [shards[r][0] for r in range(world)]
        agree = len(set(ws)) == 1
        files = {}
        for r in range(world):
            with open("%s/rank_%05d.bin" % (d, r), "rb") as fh:
                files["rank_%05d.bin" % r] = hashlib.sha256(fh.read()).hexdigest()
        man = {"step": step, "world_size": world, "data_pos": data_pos, "files": files, "replicas_agree": agree,
               "attempt": attempt}
        if not agree:
            # Silent data corruption: name the replica(s) that differ.
            maj = max(set(ws), key=ws.count)
            sus = [r for r in range(world) if ws[r] != maj] if world >= 3 else list(range(world))
            atomic_write(ckpt + "/sdc.json", json.dumps({"step": step, "dp": world, "checksums": ws,
                         "suspects": [{"dp_rank": r, "hosts": [shards[r][2]]} for r in sus]}))
        atomic_write(man_path, json.dumps(man))
        if agree:
            atomic_write(ckpt + "/latest", "step_%08d\n" % step)
    else:
        while True:
            # A manifest left by an earlier attempt at this step is not ours.
            try:
                with open(man_path) as fh:
                    man = json.load(fh)
                if man.get("attempt") == attempt:
                    break
            except (OSError, ValueError):
                pass
            wait_peer(t0)
        agree = man["replicas_agree"]
    if not agree:
        sys.exit(86)
    return time.time() - t0

last, ckpt_s = 0.0, 0.0
heartbeat(step, "train", 0)
while step < steps:
    t0 = time.time()
    if fault_step == step + 1 and fault_rank in (-1, rank):
        if fault_kind == "crash": os.abort()
        if fault_kind == "exit75": sys.exit(75)
        if fault_kind == "hang":
            while True: time.sleep(1)
        if fault_kind in ("nan", "spike"):
            print("test-trainer: rank %d: loss is %s at step %d, in-memory retry failed" % (rank, fault_kind, step + 1), file=sys.stderr)
            sys.exit(85)
        if fault_kind == "bitflip":
            w = ("1" if w[0] == "0" else "0") + w[1:]
    # stuck: the fault rank freezes outside communication (no heartbeat);
    # the others wait for it "in communication" as llm-train does, their
    # heartbeat refreshed every 0.5 s, until LLM_TRAIN_COMM_TIMEOUT: exit 75
    if fault_step == step + 1 and fault_kind == "stuck":
        if fault_rank == rank:
            while True: time.sleep(1)
        t1 = time.time()
        while time.time() - t1 < float(env("LLM_TRAIN_COMM_TIMEOUT", "300")):
            heartbeat(step, "train", last)
            time.sleep(0.5)
        print("test-trainer: rank %d: communication watchdog: waited for a peer" % rank, file=sys.stderr)
        sys.exit(75)
    # TEST_TRAINER_SLOW_RANK=r: that rank's steps take 5x as long (a straggler)
    time.sleep(step_time * (5 if env("TEST_TRAINER_SLOW_RANK") == str(rank) else 1))
    w = hashlib.sha256((w + ":%d" % data_pos).encode()).hexdigest()
    step += 1
    data_pos += 1
    last = time.time() - t0
    if rank == 0:
        with open(ckpt + "/metrics.jsonl", "a") as fh:
            fh.write(json.dumps({"step": step, "loss": 10.0 / (1 + step) + int(w[:4], 16) / 65536e2,
                                 "grad_norm": 1.0, "lr": 1e-3, "tokens_per_s": 1000.0, "mfu": 0.0,
                                 "step_time_s": last, "comm_time_s": 0.0, "ckpt_time_s": ckpt_s,
                                 "skipped": False}) + "\n")
    ckpt_s = 0.0
    heartbeat(step, "train", last)
    if step % interval == 0 or step == steps or preempt[0]:
        ckpt_s = save(step)
        heartbeat(step, "train", last)
    if preempt[0]:
        print("test-trainer: rank %d: preempted, checkpoint at step %d" % (rank, step), file=sys.stderr)
        sys.exit(87)
if rank == 0:
    atomic_write(ckpt + "/final_weights", w + "\n")
heartbeat(step, "done", last)
print("test-trainer: rank %d done at step %d" % (rank, step))
