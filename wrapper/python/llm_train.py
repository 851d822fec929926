"""llm_train: a PyTorch (or any Python) training script under llm-train-wrap.

The wrapper chooses where a job resumes and how much data it skips, and
watches every rank's heartbeat; llm-train (the C runtime) does its part
of that contract itself, and this module does it for a torchrun-style
script in a few lines:

    import llm_train
    job = llm_train.Job()                 # RANK, WORLD_SIZE, the wrapper's choices
    if job.resume:                        # the checkpoint dir the wrapper picked
        state = torch.load(job.resume + "/model.pt")
    skip = job.skip_batches               # batches to skip past a bad step
    for step in range(job.resume_step + 1, steps + 1):
        ...
        job.step(step, loss=loss.item(), grad_norm=norm, lr=lr, tokens=n)  # n: all ranks' tokens
        if job.ckpt_due(step):           # the interval, or SIGUSR1/SIGTERM on any rank (every rank, every step)
            job.phase("save", step)       # heartbeats refreshed while ranks wait here
            d = job.ckpt_dir_for(step)    # CKPT_DIR/step_NNNNNNNN
            if job.rank == 0: torch.save(model.state_dict(), d + "/model.pt")
            dist.barrier()
            job.ckpt_complete(step)       # the marker: now the wrapper may pick it
            job.phase("train", step)
        if job.stop_requested():         # preempted: saved above, the same step on every rank
            job.exit_requeue()            # exit 87: the wrapper requeues, the next run resumes here
    job.done()

job.step writes the rank's heartbeat (with its step time and, when given,
its waits: the same timing line llm-train writes) and rank 0's line of
RUN_DIR/metrics.jsonl; between steps a thread keeps the heartbeat fresh
only in phases "load" and "save" (job.phase(...)), so a hung step goes
stale. A rank waiting for its peers in a collective stays fresh inside
job.ddp_hook(ddp)'s reductions, ckpt_due's all-reduce and
`with job.collective():` (FSDP's or the script's own collectives), so
the rank it waits for is the one named for a hang; when every rank went
stale together the wrapper names none and restarts in place. `llm-train-ckpt-torch ckpt-list DIR` is the checkpoint lister for
--ckpt-tool: a step directory is complete when it holds this module's
marker (its files still of the sizes recorded) or, from
torch.distributed.checkpoint, its .metadata (written last). Newest first
is the marker's generation (1 + the largest in CKPT_DIR when it was
saved: after a rollback to step 100, a new step 150 ranks above the
abandoned step 200), then the step; a marker without one (older, or a
.metadata directory) is generation 0, below any new save; one that is not
an integer in 0..2^53-1 makes the checkpoint invalid, as llm-train's
manifests (include/llmt/ckptgen.h). Rank 0's first ckpt_complete lists
CKPT_DIR once for the largest; later ones carry it on.

job.ckpt_due(step) follows LLM_TRAIN_CKPT_INTERVAL (--llm-train=ckpt-interval):
N steps (step % N == 0, decided on each rank alike), Ns/Nm/Nh (time since
the last save, decided on rank 0 and shared in ckpt_due's all-reduce when
torch.distributed is initialized: call it on every rank at every step, as
a collective), or
auto (the wrapper's per-attempt choice from the measured checkpoint cost
and MTBF; before one is measured, Young's interval from this process's
last save time; before the first, the every= argument in steps when
given, else 600 s as llm-train does: auto is the shipped policy's
default). Unset: the every= argument in steps, else never.

Preemption, as llm-train does it: Job() catches SIGUSR1 and SIGTERM (the
wrapper forwards a --signal=B:USR1@N, scancel or time limit to the ranks
as SIGUSR1, then SIGTERM after --preempt-grace) unless the script set its
own handler first (kept; it may call job.request_stop()); the handler
only records the signal. The next job.ckpt_due(step) says save on every
rank, whichever rank got it, and job.stop_requested() then says stop;
job.exit_requeue() exits 87 and the wrapper requeues the job, which
resumes from that checkpoint. ckpt_due is one all-reduce per step for
this (with torch.distributed initialized): call it on every rank at every
step, and stop_requested after the save, on every rank too. A signal
before Job() ends the process as before, and so does one that a script
never asking ckpt_due or stop_requested gets (at its second job.step()
after it, not at the SIGKILL after KillWait).
"""
import contextlib, json, math, os, signal, socket, stat, sys, threading, time

MARKER = "llm_train.complete"
EXIT_ROLLBACK = 85   # include/llmt/exitcodes.h: numerical fault persisted, roll back and skip data
HB_PERIOD_S = 2.0    # include/llmt/heartbeat.h LLMT_HB_PERIOD_S: the heartbeat's refresh period
AUTO_FIRST_S = 600.0  # runtime/train/train.c llmt_auto_interval: before any save is timed
AUTO_MTBF_S = 4 * 3600.0  # llm-train's default --mtbf
EXIT_USAGE = 64      # include/llmt/exitcodes.h: usage/config error (never retried)
EXIT_REQUEUE = 87    # include/llmt/exitcodes.h LLMT_EXIT_REQUEUE: preempted, checkpoint written: requeue
EXIT_NOINPUT = 66    # include/llmt/exitcodes.h: ckpt-list DIR is not a directory
EXIT_IO = 74         # include/llmt/exitcodes.h: ckpt-list DIR cannot be listed
GEN_MAX = 9007199254740991  # include/llmt/ckptgen.h LLMT_CKPT_GEN_MAX (2^53 - 1): the largest generation
# what llm-train-wrap forwards to the ranks (SIGUSR1 at once, SIGTERM after
# --preempt-grace) and Slurm sends them (--signal, scancel, a time limit):
# llm-train catches the same two (runtime/train/train.c)
STOP_SIGNALS = (signal.SIGUSR1, signal.SIGTERM)
# (HB_PERIOD_S, the EXIT_ codes and GEN_MAX checked against the C headers by tests/wrapper/py_contract.py)
RANKS_PER_TASK = 8   # wrapper/watch.h WR_RANKS_PER_TASK: heartbeats watched per Slurm task (torchrun per node)
PARTS = ("step", "compute", "tp", "pp", "dp", "all", "data", "ckpt")


def _env(name, default=""):
    v = os.environ.get(name)
    return default if v is None or v == "" else v


def _atomic_write(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _mkdirs(path):
    """mkdir -p, every directory made 0700 as llm-train makes its own (a
    checkpoint holds the model; heartbeats say what the job does)."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(os.path.normpath(path))
    if parent and parent != path:
        _mkdirs(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


def dir_refusal(what, path):
    """Why a directory the job writes and trusts is another user's (the
    rule of include/llmt/owndir.h), or None: it must be missing or owned by
    this user or root, and neither it nor a directory above it writable by
    every user without the sticky bit."""
    # the path as given, and the directories it lies in once links are followed
    for full in (os.path.abspath(path), os.path.realpath(path)):
        parts = full.split("/")
        for i in range(2, len(parts) + 1):
            p = "/".join(parts[:i]) or "/"
            try:
                st = os.stat(p)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
                return "%s %s: %s is writable by every user without the sticky bit (mode %04o): refused" % (
                    what, path, p, st.st_mode & 0o7777)
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return "%s %s: not a directory: refused" % (what, path)
    if st.st_uid not in (os.geteuid(), 0) and not group_trusted(st.st_gid):
        mine = os.getegid() == st.st_gid or st.st_gid in os.getgroups()
        return "%s %s: owned by uid %d, not by this user (uid %d): refused%s%s" % (
            what, path, st.st_uid, os.geteuid(),
            " (a project directory of your group %d: LLM_TRAIN_TRUST_GROUP=%d)" % (st.st_gid, st.st_gid)
            if mine else "",
            " (uid 65534 is NFS's nobody: root squashed, or an ID mapping failed)" if st.st_uid == 65534 else "")
    return None


def group_trusted(gid):
    """Whether gid is the group LLM_TRAIN_TRUST_GROUP names (a name or a
    number) and this process is in it (owndir.h's llmt_dir_group_trusted)."""
    g = os.environ.get("LLM_TRAIN_TRUST_GROUP", "")
    if not g:
        return False
    if g.isdigit():
        want = int(g)
    else:
        try:
            import grp
            want = grp.getgrnam(g).gr_gid
        except (KeyError, ImportError):
            return False
    return want == gid and (os.getegid() == gid or gid in os.getgroups())


def parse_interval(text):
    """LLM_TRAIN_CKPT_INTERVAL's text (doc/contracts.md): ("steps", N),
    ("seconds", S), ("auto", None), or None when unset; ValueError else."""
    t = (text or "").strip()
    if not t:
        return None
    if t == "auto":
        return ("auto", None)
    unit = {"s": 1, "m": 60, "h": 3600}.get(t[-1])
    num = t[:-1] if unit else t
    if not (num.isascii() and num.isdigit()) or not 1 <= int(num) <= 1000000000:
        raise ValueError("LLM_TRAIN_CKPT_INTERVAL=%s is not N, Ns, Nm, Nh or auto (N from 1)" % t)
    return ("seconds", float(int(num) * unit)) if unit else ("steps", int(num))


def _host():
    h = _env("SLURMD_NODENAME", socket.gethostname()) or "unknown"
    return "".join(c if c.isalnum() or c in ".-_" else "_" for c in h)[:63]


def _signame(sig):
    if sig == 1:
        return "job.request_stop()"
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "signal %d" % sig


class Job:
    """The job as the wrapper and the plugin describe it (environment)."""

    def __init__(self, refresh_s=HB_PERIOD_S, signals=True):
        self.rank = int(_env("RANK", _env("SLURM_PROCID", "0")))
        self.world_size = int(_env("WORLD_SIZE", _env("SLURM_NTASKS", "1")))
        self.local_rank = int(_env("LOCAL_RANK", _env("SLURM_LOCALID", "0")))
        self.ckpt_dir = _env("LLM_TRAIN_CKPT_DIR")
        if not self.ckpt_dir:
            raise SystemExit("llm_train: LLM_TRAIN_CKPT_DIR is not set (run under llm-train-wrap)")
        self.run_dir = _env("LLM_TRAIN_RUN_DIR", self.ckpt_dir)
        self.hb_dir = _env("LLM_TRAIN_HEARTBEAT_DIR", self.ckpt_dir + "/heartbeat")
        self.resume = _env("LLM_TRAIN_RESUME") or None
        self.resume_step = step_of(self.resume) if self.resume else 0
        self.skip_batches = int(_env("LLM_TRAIN_SKIP_BATCHES", "0"))
        self.attempt = int(_env("LLM_TRAIN_ATTEMPT", "0"))
        self.host = _host()
        for what, d in (("checkpoint dir", self.ckpt_dir), ("heartbeat dir", self.hb_dir), ("run dir", self.run_dir)):
            why = dir_refusal(what, d)
            if why:
                print("llm_train: rank %d: %s" % (self.rank, why), file=sys.stderr)
                raise SystemExit(EXIT_USAGE)
        _mkdirs(self.hb_dir)
        # again once made: another user may have made one between the check and mkdir
        for what, d in (("checkpoint dir", self.ckpt_dir), ("heartbeat dir", self.hb_dir)):
            why = dir_refusal(what, d)
            if why:
                print("llm_train: rank %d: %s" % (self.rank, why), file=sys.stderr)
                raise SystemExit(EXIT_USAGE)
        self._hb = "%s/rank_%05d" % (self.hb_dir, self.rank)
        self._lock = threading.Lock()
        self._state = [self.resume_step, "init", 0.0]
        self._timing = None
        self._steps, self._first_ns, self._total = 0, 0, [0.0] * len(PARTS)
        self._last_t = None
        self._stall, self._save_t = 0.0, 0.0
        self._comm_op, self._comm_busy, self._dp_wait = 0, 0, 0.0
        self._metrics = None
        self.max_bad_steps = int(_env("LLM_TRAIN_MAX_BAD_STEPS", "3"))
        self._bad_run = 0
        try:
            self.ckpt_interval = parse_interval(_env("LLM_TRAIN_CKPT_INTERVAL"))
        except ValueError as e:
            print("llm_train: %s" % e, file=sys.stderr)
            raise SystemExit(EXIT_USAGE)
        self._ckpt_t = time.monotonic()   # the time interval's clock (rank 0's decides)
        self._save_cost = 0.0             # the last phase("save")'s length (auto's cost)
        self._stop = threading.Event()
        self._polled = False       # the script asked ckpt_due or stop_requested once
        self._signal_steps = 0     # job.step() calls when the signal came
        self.signal_received = 0   # the first stop signal this rank got (1: request_stop()); ckpt_due agrees
        self._stop_at = None       # the step after which every rank agreed to stop
        self._stop_sig = 0         # the agreed stop's signal (the largest number any rank got)
        self._saved_at = None      # ckpt_due said save for an interval at this step: stop_requested looks again
        self._completed = None     # the last step ckpt_complete marked
        self._gen = None           # rank 0: CKPT_DIR's largest generation (None: its first save lists it)
        self._beat()
        self._warn_unwatched()
        if signals:
            self._catch_signals()
        t = threading.Thread(target=self._refresh, args=(refresh_s,), daemon=True)
        t.start()

    def _warn_unwatched(self):
        """llm-train-wrap watches the heartbeats of up to RANKS_PER_TASK
        ranks per Slurm task of the step (torchrun per node inside it:
        srun --ntasks-per-node=1 torchrun --nproc_per_node=K): a rank past
        them is not watched, and its hang never found (its peers wait in
        ddp_hook's reduction, fresh). Said once, on rank 0."""
        tasks = _env("SLURM_STEP_NUM_TASKS", _env("SLURM_NTASKS"))
        if self.rank != 0 or not _env("LLM_TRAIN_ATTEMPT") or not tasks.isdigit():
            return
        if self.world_size > RANKS_PER_TASK * int(tasks) > 0:
            print("llm_train: WORLD_SIZE %d but the step has %s tasks (torchrun per node?): "
                  "llm-train-wrap watches the heartbeats of ranks 0..%d only, a hang of another "
                  "rank is not found; start one task per rank (--ntasks-per-node=K, no torchrun)"
                  % (self.world_size, tasks, RANKS_PER_TASK * int(tasks) - 1), file=sys.stderr, flush=True)

    # -- heartbeat ------------------------------------------------------
    def _beat(self):
        step, phase, last = self._state
        text = "%d %d %s %.6f %s\n" % (step, time.time_ns(), phase, last, self.host)
        if self._timing:
            text += self._timing
        _atomic_write(self._hb, text)

    def _refresh(self, period):
        seen = None
        while not self._stop.wait(period):
            with self._lock:
                op = self._comm_op if self._comm_busy else None
                # in train only while one collective has been waiting since
                # the last tick (ddp_hook): the rank its peers wait for is
                # the one whose heartbeat goes stale, as with llm-train
                if self._state[1] in ("load", "save") or (op is not None and op == seen):
                    self._beat()
                seen = op

    @contextlib.contextmanager
    def _waiting(self):
        """Around a blocking collective of this module: counted as one
        communication op, as ddp_hook counts a reduction, so the refresh
        thread keeps this rank's heartbeat fresh while it waits for a peer
        (a stopped peer, not the rank waiting for it, goes stale)."""
        with self._lock:
            self._comm_op += 1
            self._comm_busy += 1
        try:
            yield
        finally:
            with self._lock:
                self._comm_busy -= 1

    def collective(self):
        """`with job.collective():` around a collective of the script's own
        (FSDP's, a hand-written all_reduce, a barrier outside a save): this
        rank counts as waiting for its peers while inside, as in ddp_hook's
        reduction, so its heartbeat stays fresh while a peer is stopped and
        the wrapper names the stopped peer for the hang. Without it every
        rank goes stale together and the wrapper blames none (a restart in
        place). Only the wait belongs inside: a rank that hangs in there on
        its own is not found."""
        return self._waiting()

    def ddp_hook(self, ddp):
        """Register a DDP communication hook that all-reduces gradients as
        DDP does, counts its time as this rank's "dp" wait and keeps the
        heartbeat fresh while a reduction waits for a peer."""
        import torch.distributed as dist
        world = dist.get_world_size()

        def hook(state, bucket):
            with self._lock:
                self._comm_op += 1
                self._comm_busy += 1
            t0 = time.monotonic()
            fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()

            def done(f):
                with self._lock:
                    self._comm_busy -= 1
                    self._dp_wait += time.monotonic() - t0
                return f.value()[0].div_(world)
            return fut.then(done)
        ddp.register_comm_hook(None, hook)

    def phase(self, name, step=None):
        """'load' or 'save' around long I/O (refreshed), 'train' after; the
        time in 'save' counts as the next step's checkpoint stall."""
        now = time.monotonic()
        if self._state[1] == "save" and name != "save":
            self._stall += now - self._save_t
            self._save_cost = now - self._save_t
        if name == "save" and self._state[1] != "save":
            self._save_t = now
        with self._lock:
            if step is not None:
                self._state[0] = step
            self._state[1] = name
            self._beat()

    # -- preemption -----------------------------------------------------
    def _catch_signals(self):
        """SIGUSR1 and SIGTERM only record that a stop was asked for: the
        next ckpt_due says save on every rank and stop_requested says
        stop. A handler the script installed before Job() (or SIG_IGN, or
        one set from C) is left in place; it may call request_stop()."""
        if threading.current_thread() is not threading.main_thread():
            if self.rank == 0:
                print("llm_train: Job() outside the main thread: SIGUSR1/SIGTERM not caught "
                      "(a preemption ends the job without a save)", file=sys.stderr)
            return
        kept = []
        for sig in STOP_SIGNALS:
            h = signal.getsignal(sig)
            if h != signal.SIG_DFL and not isinstance(getattr(h, "__self__", None), Job):   # an earlier Job's: ours
                kept.append(signal.Signals(sig).name)
                continue
            signal.signal(sig, self._on_signal)
            # restart interrupted system calls (signal.signal makes them
            # fail with EINTR): the C code under torch.save, gloo and NCCL
            # need not handle it, Python retries its own (PEP 475)
            signal.siginterrupt(sig, False)
        if kept and self.rank == 0:
            print("llm_train: %s: the script's own handler left in place (call job.request_stop() "
                  "from it to save and stop)" % ", ".join(kept), file=sys.stderr)

    def _on_signal(self, sig, frame):
        # Python runs this in the main thread between two bytecodes of
        # whatever it was doing (inside ckpt_due, holding self._lock, in
        # a print): a lock, I/O or an exception here could deadlock or
        # break that code, so it only records the signal
        if not self.signal_received:
            self.signal_received = sig
            self._signal_steps = self._steps

    def _unheeded(self):
        """A script that never asks (no ckpt_due or stop_requested) two
        steps after a stop signal would only end by the SIGKILL after
        KillWait: the signal's default action then, as without Job()."""
        sig = self.signal_received
        if sig > 1 and not self._polled and self._steps - self._signal_steps >= 2:
            self.done()
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)

    def request_stop(self, sig=0):
        """Ask for a save and a stop as SIGUSR1 would (from the script's own
        signal handler, say): the next ckpt_due says save on every rank."""
        if not self.signal_received:
            self.signal_received = sig if sig > 1 else 1

    def stop_requested(self):
        """Whether to exit now, after the save ckpt_due asked for: the same
        on every rank once any rank got SIGUSR1/SIGTERM (or request_stop).
        Call it on every rank at every step, after that save: after an
        interval's save it agrees once more (a collective), so a signal
        that came during the save stops the job on it rather than one
        step and one save later. Then exit_requeue()."""
        self._polled = True
        if self._stop_at is not None:
            return True
        if self._saved_at is None:
            return False
        step, self._saved_at = self._saved_at, None
        _, sig = self._agree(False, self.signal_received)
        if sig:
            self._stopping(step, sig, "during the save of step %d: every rank stops on it")
        return bool(sig)

    def _stopping(self, step, sig, what):
        self._stop_at, self._stop_sig = step, sig
        if self.rank == 0:
            print("llm_train: %s on a rank %s (exit %d)" % (_signame(sig), what % step, EXIT_REQUEUE),
                  file=sys.stderr)
            sys.stderr.flush()

    def exit_requeue(self):
        """After the save of a stop: the last heartbeat and exit 87, which
        llm-train-wrap takes for "checkpoint written": it requeues the job
        (or, without Slurm or with --no-requeue, stops with 87) and the
        next run resumes from this checkpoint. Raises SystemExit."""
        if self.rank == 0:
            step = self._stop_at
            if step is not None and self._completed == step:
                print("llm_train: preempted (%s): checkpoint of step %d written, exit %d for requeue" %
                      (_signame(self._stop_sig), step, EXIT_REQUEUE), file=sys.stderr)
            else:
                print("llm_train: preempted after step %s without a completed checkpoint of it "
                      "(job.ckpt_complete): exit %d for requeue, the next run resumes from an older one" %
                      (step, EXIT_REQUEUE), file=sys.stderr)
        self.done()
        sys.stderr.flush()
        sys.stdout.flush()
        raise SystemExit(EXIT_REQUEUE)

    # -- one step -------------------------------------------------------
    def step(self, step, loss=None, grad_norm=None, lr=None, tokens=None, waits=None, data_s=0.0, ckpt_s=None):
        """Call once per optimizer step, after it. tokens: the step's tokens
        over all ranks (the global batch; rank 0's tokens / step time is the
        job's tokens_per_s in metrics.jsonl, the dashboard and the
        Prometheus textfile, so a rank's own count understates it by
        WORLD_SIZE / (tp * pp)); waits: {"tp"|"pp"|"dp"|"all": seconds};
        ckpt_s: checkpoint stall in it (default: the time in phase 'save' since the last call)."""
        now = time.monotonic()
        if ckpt_s is None:
            ckpt_s, self._stall = self._stall, 0.0
        if self._last_t is None:   # the first step: timed from the first call of this process
            self._last_t = getattr(self, "_t0", now)
        dt = now - self._last_t
        self._last_t = now
        with self._lock:
            hooked, self._dp_wait = self._dp_wait, 0.0
        waits = dict(waits or {})
        if hooked and "dp" not in waits:
            waits["dp"] = hooked   # ddp_hook's reductions (overlapping backward: an upper bound)
        w = [float(waits.get(g, 0.0)) for g in ("tp", "pp", "dp", "all")]
        rest = sum(w) + data_s + ckpt_s
        last = [dt, max(dt - rest, 0.0)] + w + [data_s, ckpt_s]
        if self._steps == 0:
            self._first_ns = time.time_ns() - int(dt * 1e9)
        self._steps += 1
        self._total = [a + b for a, b in zip(self._total, last)]
        self._timing = "timing %d %d %s %s\n" % (self._steps, self._first_ns,
            " ".join("%.6f" % v for v in self._total), " ".join("%.6f" % v for v in last))
        with self._lock:
            self._state = [step, "train", dt]
            self._beat()
        if self.rank == 0:
            self._metric(step, loss, grad_norm, lr, tokens / dt if tokens and dt > 0 else None, dt, sum(w), ckpt_s)
        if self.signal_received:
            self._unheeded()

    def start(self):
        """Mark the start of the first step (else it is timed from the first step() call's previous one)."""
        self._t0 = self._ckpt_t = time.monotonic()
        self.phase("train")

    def _metric(self, step, loss, norm, lr, tps, dt, comm, ckpt):
        def num(v):
            return v if isinstance(v, (int, float)) and math.isfinite(v) else None
        if self._metrics is None:
            _mkdirs(self.run_dir)
            self._metrics = open(self.run_dir + "/metrics.jsonl", "a")
        rec = {"step": step, "loss": num(loss), "grad_norm": num(norm), "lr": num(lr), "tokens_per_s": num(tps),
               "mfu": None, "step_time_s": dt, "comm_time_s": comm, "ckpt_time_s": ckpt,
               "skipped": loss is not None and not math.isfinite(loss)}
        self._metrics.write(json.dumps(rec) + "\n")
        self._metrics.flush()

    def bad(self, loss, grad_norm=None):
        """Whether this step's loss (or gradient norm) is not finite: skip its
        update then. After max_bad_steps in a row the job exits 85 and the
        wrapper rolls it back to an earlier checkpoint and skips the data."""
        vals = [v for v in (loss, grad_norm) if v is not None]
        if all(math.isfinite(v) for v in vals):
            self._bad_run = 0
            return False
        self._bad_run += 1
        if self._bad_run >= self.max_bad_steps:
            print("llm_train: %d non-finite steps in a row: exit %d (roll back)" % (self._bad_run, EXIT_ROLLBACK),
                  file=sys.stderr)
            with self._lock:
                self._stop.set()
            sys.stderr.flush()
            os._exit(EXIT_ROLLBACK)   # all ranks see the same loss: all leave alike
        return True

    # -- checkpoints ----------------------------------------------------
    def ckpt_due(self, step, every=None):
        """Whether to save a checkpoint after this step: when the job's
        --llm-train=ckpt-interval (LLM_TRAIN_CKPT_INTERVAL) says so (every:
        the step interval when the job sets none, and under auto until a
        save has been timed; None: never), or once any
        rank got SIGUSR1/SIGTERM (then stop_requested() says exit after the
        save). The answer is the same on every rank: with torch.distributed
        initialized it is a collective, so call it on every rank at every
        step."""
        self._polled = True
        iv = self.ckpt_interval or (("steps", int(every)) if every else None)
        kind, n = iv if iv else (None, None)
        if kind == "auto" and self._save_cost <= 0 and every:
            # no save timed yet: the script's own step interval, not 600 s
            # (auto is the shipped policy's default, so a job that names no
            # ckpt-interval gets it; a first save measures the cost)
            kind, n = "steps", int(every)
        elif kind == "auto":
            # the wrapper turns auto into N or Ns once a checkpoint's cost is
            # in metrics.jsonl; until then Young's interval from the last save
            n = math.sqrt(2 * self._save_cost * AUTO_MTBF_S) if self._save_cost > 0 else AUTO_FIRST_S
            n = max(n, 2 * self._save_cost)
        timed = kind in ("seconds", "auto")
        timely, sig = self._agree(timed and time.monotonic() - self._ckpt_t >= n,
                                  0 if self._stop_at is not None else self.signal_received)
        due = timely or (kind == "steps" and step % n == 0)   # steps: alike on every rank
        if sig:
            self._stopping(step, sig, "after step %d: every rank saves it, then stops")
        elif due:
            self._saved_at = step
        due = due or bool(sig)
        if due and timed:
            self._ckpt_t = time.monotonic()
        return due

    def _agree(self, timely, sig):
        """(rank 0's timely, the largest sig of any rank) on every rank:
        one all-reduce (max) of two numbers per step when torch.distributed
        is initialized with peers, else this rank's own. Each rank's clock
        started at its own Job()/start() and its steps end at slightly
        different times, so a time interval decided locally lets one rank
        enter the save's barrier while its peer enters the next step's
        all-reduce (a deadlock, or mismatched collectives); a signal reaches
        the ranks at different steps, or one rank only. A step interval is
        decided alike on every rank, but its stop signal is not, so the
        collective runs for it too. It costs what one tiny all-reduce
        costs (0.5 ms a step measured with two local gloo ranks on two
        busy cores, as much as the bare all-reduce); on nccl one tiny
        kernel, whose read waits for the GPU work queued before it (as
        the usual loss.item() for job.step already does). It is counted as a
        communication wait (_waiting): a rank that waits here for a stopped
        peer stays fresh, and the stopped one is named for the hang."""
        dist = sys.modules.get("torch.distributed")   # never imported here: a script without torch stays fast
        if dist is None or not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
            return timely, sig
        import torch
        dev = "cpu"
        if dist.get_backend() == "nccl":   # nccl reduces device tensors only
            # the script's device (torch.cuda.set_device); a script that
            # never set one (model.to(f"cuda:{local_rank}") and DDP's
            # device_ids only) leaves every rank on cuda:0, where NCCL
            # refuses two ranks of a node: the local rank's device then,
            # as torchrun's scripts use it (one device a task when
            # CUDA_VISIBLE_DEVICES gives each its own)
            cur, n = torch.cuda.current_device(), torch.cuda.device_count()
            dev = torch.device("cuda", cur if cur != 0 or n <= 1 else self.local_rank % n)
        t = torch.tensor([1 if timely and dist.get_rank() == 0 else 0, sig], dtype=torch.int32, device=dev)
        with self._waiting():
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            v = t.tolist()
        return bool(v[0]), int(v[1])

    def ckpt_dir_for(self, step):
        d = "%s/step_%08d" % (self.ckpt_dir, step)
        _mkdirs(d)
        return d

    def ckpt_complete(self, step):
        """Rank 0, after every rank's files of the step are written (a barrier):
        the marker (file sizes) and the `latest` pointer, each by rename."""
        self._completed = step
        if self.rank != 0:
            return
        d = self.ckpt_dir_for(step)
        if self._gen is None:
            self._gen = max((g for g, _, _ in _listing(self.ckpt_dir)[0]), default=0)
        self._gen = gen_next(self._gen)
        files = {}
        for root, _, names in os.walk(d):
            for n in names:
                if n != MARKER and ".tmp." not in n:
                    p = os.path.join(root, n)
                    files[os.path.relpath(p, d)] = os.path.getsize(p)
        _atomic_write(d + "/" + MARKER, json.dumps({"step": step, "generation": self._gen, "files": files}) + "\n")
        _atomic_write(self.ckpt_dir + "/latest", "step_%08d\n" % step)

    def done(self):
        """The last heartbeat (phase done): call at a clean end."""
        self._stop.set()
        with self._lock:
            self._state[1] = "done"
            self._beat()
        if self._metrics:
            self._metrics.close()


def _read_small(path, limit=1 << 24):
    """A regular file's text, never blocking (a FIFO there waited for a
    writer forever, and the wrapper with its checkpoint lister)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("%s: not a regular file" % path)
        return os.read(fd, limit).decode("utf-8", "replace")
    finally:
        os.close(fd)


def step_of(path):
    """The step of a checkpoint directory: its marker's, else its name's."""
    try:
        return int(json.loads(_read_small(os.path.join(path, MARKER)))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    name = os.path.basename(os.path.normpath(path))
    return int(name[5:]) if name.startswith("step_") and name[5:].isdigit() else 0


def gen_next(largest):
    """The generation of a save after one of generation largest (stays at
    GEN_MAX, never past it: include/llmt/ckptgen.h)."""
    return min(largest + 1, GEN_MAX)


def generation_of(path):
    """A complete checkpoint's generation: its marker's; 0 without one
    (torch.distributed.checkpoint) or without the field (an older marker).
    ValueError naming a value that is not an integer in 0..GEN_MAX."""
    try:
        m = json.loads(_read_small(os.path.join(path, MARKER)))
    except (OSError, ValueError):
        return 0
    v = m.get("generation", 0) if isinstance(m, dict) else 0
    if type(v) is not int or not 0 <= v <= GEN_MAX:
        raise ValueError("bad marker: generation %.40s: not an integer in 0..%d" % (json.dumps(v), GEN_MAX))
    return v


def complete(path):
    """None when path is a complete checkpoint, else why not."""
    m = os.path.join(path, MARKER)
    if os.path.exists(m):
        try:
            files = json.loads(_read_small(m))["files"]
            files = dict(files)
        except (OSError, ValueError, KeyError, TypeError) as e:
            return "bad marker (%s)" % e.__class__.__name__
        for n, size in files.items():
            p = os.path.join(path, n)
            if not os.path.isfile(p):
                return "%s missing" % n
            if os.path.getsize(p) != size:
                return "%s is %d bytes, the marker says %d" % (n, os.path.getsize(p), size)
        return None
    if os.path.isfile(os.path.join(path, ".metadata")):
        return None   # torch.distributed.checkpoint writes .metadata last
    return "no %s and no .metadata (incomplete)" % MARKER


def ckpt_list(d, out=sys.stdout, err=sys.stderr):
    """`ckpt-list DIR`: valid checkpoints newest first as "step path";
    none when DIR does not exist yet, 66 when it is not a directory, 74
    when it cannot be listed (never taken for empty: that is a fresh
    start beside the checkpoints), as llm-train's lister."""
    if not os.path.lexists(d):
        return 0
    if not os.path.isdir(d):
        print("llm-train-ckpt-torch: ckpt-list: %s: not a directory" % d, file=err)
        return EXIT_NOINPUT
    try:
        names = os.listdir(d)
    except OSError as e:
        print("llm-train-ckpt-torch: ckpt-list: %s: %s" % (d, e.strerror or e), file=err)
        return EXIT_IO
    good, bad = _listing(d, names)
    for p, why in bad:
        print("%s: %s" % (p, why), file=err)
    for _, step, p in good:
        print("%d %s" % (step, p), file=out)
    return 0


def _listing(d, names=None):
    """The complete checkpoints of d newest first as (generation, step,
    path), and the others as (path, why). names: os.listdir(d)'s (None: listed here)."""
    good, bad = [], []
    for name in sorted((n for n in (os.listdir(d) if names is None else names) if n.startswith("step_")),
                       reverse=True):
        p = os.path.join(d, name)
        if not os.path.isdir(p):
            continue
        why = complete(p)
        try:
            g = generation_of(p) if not why else 0
        except ValueError as e:
            why = str(e)
        if why:
            bad.append((p, why))
        else:
            good.append((g, step_of(p), p))
    # newest by generation, then step, not by name: a kept copy (step_keep,
    # step_00000010.bak) sorts after step_0... by name and would be resumed from
    good.sort(key=lambda t: (t[0], t[1]), reverse=True)
    return good, bad


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "ckpt-list":
        print("usage: llm-train-ckpt-torch ckpt-list DIR", file=sys.stderr)
        return 64
    return ckpt_list(argv[1])


if __name__ == "__main__":
    sys.exit(main())
