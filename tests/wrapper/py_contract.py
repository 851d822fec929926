#!/usr/bin/python3
"""The llm_train Python module's copies of C contract values equal the C
headers': Job's heartbeat refresh period (its refresh_s default and
HB_PERIOD_S) is include/llmt/heartbeat.h's LLMT_HB_PERIOD_S, and
EXIT_ROLLBACK, EXIT_USAGE, EXIT_REQUEUE, EXIT_NOINPUT and EXIT_IO are
include/llmt/exitcodes.h's LLMT_EXIT_ROLLBACK, LLMT_EXIT_USAGE,
LLMT_EXIT_REQUEUE, LLMT_EXIT_NOINPUT and LLMT_EXIT_IO, and GEN_MAX is
include/llmt/ckptgen.h's LLMT_CKPT_GEN_MAX, and RANKS_PER_TASK is
wrapper/watch.h's WR_RANKS_PER_TASK.

The module stays a plain source file (installed as is by automake's
python_PYTHON, imported from the tree by the tests and copied by users),
so it keeps literal copies and this test fails when they drift."""
import inspect, os, re, sys

top = os.environ.get("top_srcdir") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
sys.path.insert(0, os.path.join(top, "wrapper/python"))
import llm_train


def define(header, name):
    text = open(os.path.join(top, "include/llmt", header)).read()
    m = re.search(r"^#define\s+%s\s+([0-9.]+)(?:LL)?\b" % name, text, re.M)
    if not m:
        print("FAIL: no numeric #define %s in include/llmt/%s" % (name, header))
        sys.exit(1)
    return float(m.group(1))


bad = 0
period = define("heartbeat.h", "LLMT_HB_PERIOD_S")
default = inspect.signature(llm_train.Job.__init__).parameters["refresh_s"].default
for what, v in (("llm_train.HB_PERIOD_S", llm_train.HB_PERIOD_S), ("Job(refresh_s=) default", default)):
    if v != period:
        print("FAIL: %s is %r, LLMT_HB_PERIOD_S is %r" % (what, v, period))
        bad = 1
codes = []
for name in ("ROLLBACK", "USAGE", "REQUEUE", "NOINPUT", "IO"):
    code = define("exitcodes.h", "LLMT_EXIT_" + name)
    codes.append("%s %d" % (name.lower(), code))
    if getattr(llm_train, "EXIT_" + name) != code:
        print("FAIL: llm_train.EXIT_%s is %r, LLMT_EXIT_%s is %r" % (name, getattr(llm_train, "EXIT_" + name), name, code))
        bad = 1
gen_max = define("ckptgen.h", "LLMT_CKPT_GEN_MAX")
if llm_train.GEN_MAX != gen_max:
    print("FAIL: llm_train.GEN_MAX is %r, LLMT_CKPT_GEN_MAX is %r" % (llm_train.GEN_MAX, gen_max))
    bad = 1
m = re.search(r"^#define\s+WR_RANKS_PER_TASK\s+([0-9]+)\b", open(os.path.join(top, "wrapper/watch.h")).read(), re.M)
if not m or llm_train.RANKS_PER_TASK != int(m.group(1)):
    print("FAIL: llm_train.RANKS_PER_TASK is %r, WR_RANKS_PER_TASK %s" % (llm_train.RANKS_PER_TASK,
                                                                         m.group(1) if m else "not found"))
    bad = 1
if not bad:
    print("ok: heartbeat period %g s, exit codes %s, largest generation %d: the same in llm_train.py and the C headers"
          % (period, ", ".join(codes), gen_max))
sys.exit(bad)
