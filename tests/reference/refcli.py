# refcli.py: what the reference checks that drive the llm-train binary
# share: its path, lt() (one run: exit code, stdout, stderr), expect() (a
# named check, its failures kept), finish() (PASS, or FAIL with them) and
# need_venv() (the script run again in the pinned venv when a module is
# not here) and byte_bpe() (a small byte-level BPE of Hugging Face
# tokenizers, as Llama 3's and Qwen's are).
import importlib.util, os, subprocess, sys

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


def need_venv(module='transformers'):
    """Run this script again with the venv's python (scripts/install-deps
    makes it, pinned) when module is not importable here; FAIL without it."""
    if importlib.util.find_spec(module):
        return
    py = os.path.join(os.environ.get('LLMT_VENV', '/opt/llmt-venv'), 'bin', 'python')
    if not os.environ.get('LLMT_IN_VENV') and os.access(py, os.X_OK):
        os.environ['LLMT_IN_VENV'] = '1'
        os.execv(py, [py] + sys.argv)
    print('FAIL: no %s in %s (scripts/install-deps makes the venv)' % (module, py))
    sys.exit(1)


def byte_bpe(text, special, vocab=300):
    """A byte-level BPE tokenizers.Tokenizer trained on text to vocab
    tokens at most, the special tokens added after them.
    Needs the venv's tokenizers (need_venv first)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([text], trainers.BpeTrainer(vocab_size=vocab, show_progress=False,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.add_special_tokens(special)
    return tok
