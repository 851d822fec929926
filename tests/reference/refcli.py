# refcli.py: what the reference checks that drive the llm-train binary
# share: its path, lt() (one run: exit code, stdout, stderr), expect() (a
# named check, its failures kept) and finish() (PASS, or FAIL with them).
import os, subprocess, sys

top_srcdir = os.environ.get('top_srcdir', os.path.join(os.path.dirname(__file__), '..', '..'))
top_builddir = os.environ.get('top_builddir', top_srcdir)
LT = os.path.join(top_builddir, 'runtime', 'llm-train')
failures = []


def lt(*args):
    r = subprocess.run([LT] + list(args), capture_output=True, env=dict(os.environ, OMP_NUM_THREADS='2'))
    return r.returncode, r.stdout.decode('latin-1'), r.stderr.decode('latin-1')


def expect(tag, ok, detail=''):
    print('%-56s %s %s' % (tag, 'ok' if ok else 'FAILED', detail))
    if not ok:
        failures.append('%s %s' % (tag, detail))


def finish():
    if failures:
        print('FAIL:\n  ' + '\n  '.join(failures))
        sys.exit(1)
    print('PASS')
