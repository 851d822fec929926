#!/usr/bin/python3
"""metrics_cmp.py A.jsonl B.jsonl FIRST LAST TOL WHAT: loss and grad_norm of
steps FIRST..LAST of two llm-train metrics files within TOL relative (0:
the same bits). Prints the worst difference; exits with a FAIL line
otherwise. Used by tests/gpu/emu_train.sh and gpu_train.sh."""
import json, sys

a, b, lo, hi, tol, what = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
def rd(p):
    return {r['step']: r for r in map(json.loads, open(p))}
ra, rb = rd(a), rd(b)
worst = 0.0
for s in range(lo, hi + 1):
    if s not in ra or s not in rb:
        sys.exit('FAIL: %s: no step %d' % (what, s))
    for k in ('loss', 'grad_norm'):
        x, y = ra[s][k], rb[s][k]
        r = abs(x - y) / abs(x)
        worst = max(worst, r)
        if (tol == 0 and x != y) or r > tol:
            sys.exit('FAIL: %s: step %d %s %r vs %r (relative %.2e, limit %g)' % (what, s, k, x, y, r, tol))
print('%s: steps %d-%d, worst relative difference of loss and norm %.2e (limit %g); loss %.4f -> %.4f'
      % (what, lo, hi, worst, tol, rb[lo]['loss'], rb[hi]['loss']))
