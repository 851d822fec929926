#!/usr/bin/python3
"""TEST checkpoint tool for the wrapper's tests (the product's is
`llm-train ckpt-list`): `test-ckpt-tool.py ckpt-list DIR` prints the valid
checkpoints of the test trainer newest first as "step path"; a checkpoint
without a manifest or with a shard whose sha256 differs from the manifest
is reported on stderr and never deleted."""
import hashlib, json, os, sys

if len(sys.argv) != 3 or sys.argv[1] != "ckpt-list":
    print("usage: test-ckpt-tool.py ckpt-list DIR", file=sys.stderr); sys.exit(64)
d = sys.argv[2]
if not os.path.isdir(d):
    sys.exit(0)
for name in sorted((n for n in os.listdir(d) if n.startswith("step_")), reverse=True):
    p = os.path.join(d, name)
    try:
        with open(p + "/manifest.json") as fh:
            man = json.load(fh)
    except (OSError, ValueError) as e:
        print("%s: no valid manifest (%s)" % (p, e.__class__.__name__), file=sys.stderr); continue
    bad = None
    for f, digest in man["files"].items():
        try:
            with open(os.path.join(p, f), "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() != digest:
                    bad = "%s checksum mismatch" % f
        except OSError:
            bad = "%s missing" % f
        if bad:
            break
    if bad:
        print("%s: %s" % (p, bad), file=sys.stderr); continue
    print("%d %s" % (man["step"], p))
