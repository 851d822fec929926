# hf_cache.py: a model as most users have it, in the Hugging Face cache
# (huggingface_hub's snapshot_download / huggingface-cli download:
# CACHE/models--ORG--NAME/snapshots/REV/FILE, each a relative symbolic
# link to ../../blobs/HASH, and refs/main naming REV), walked as a new
# user would: import, a few steps of training, export, and transformers
# (the venv's 4.46.3) on the export. The cache is laid out here by
# huggingface_hub's own functions (no network): the blobs named by their
# git/sha256 hashes, the links made by file_download._create_symlink,
# refs/main by _cache_commit_hash_for_specific_revision; scan_cache_dir
# and snapshot_download(local_files_only=True) confirm it is one the
# library reads. The source is a tiny LlamaForCausalLM with a byte-level
# BPE tokenizer (trained here on GPL-3) whose <pad> is config.json's
# pad_token_id, and no generation_config.json (as many Llama uploads).
# - import of snapshots/REV keeps the tokenizer files (links into the
#   repo's own blobs/), and of the repo root models--ORG--NAME (refs/main
#   read, the snapshot named in a note); both give the same checkpoint;
# - the step-0 export: AutoTokenizer gives the source's ids and
#   pad/bos/eos; AutoModelForCausalLM's config and generation_config
#   carry pad_token_id; generate() on a left-padded batch where one row
#   ends early (eos_token_id is an id the model emits there) gives the
#   source's ids, the finished row filled with pad_token_id as the
#   source does (without it transformers fills with eos_token_id);
# - three training steps on the model's own tokens, export, transformers
#   loads it and generates; its weights moved; --init-from the repo root
#   trains;
# - still refused: a link out of the snapshot (to a file beside the
#   cache) and one into another repo's blobs/ (notes, not kept); a
#   refs/main that is no revision ('../x', 'a/b', empty, two lines, a link):
#   exit 64, one line naming it; one naming a missing snapshot: 66;
# - a pad_token_id past vocab_size is not kept (a note names it).
# Fails on the old code: the tokenizer files were skipped ("a symbolic
# link out of the directory"), so the export had no tokenizer; the repo
# root was refused (no config.json: 66), by --init-from too; no pad_token_id in the export
# (generate filled the finished row with eos_token_id).
import json, os, re, shutil, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refcli
refcli.need_venv('transformers')
import transformers
import torch
from huggingface_hub import scan_cache_dir, snapshot_download
from huggingface_hub.file_download import _cache_commit_hash_for_specific_revision, _create_symlink, \
    repo_folder_name
from huggingface_hub.utils.sha import git_hash, sha_fileobj
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM, \
    PreTrainedTokenizerFast
from refcli import expect, finish, lt
transformers.logging.set_verbosity_error()
# generate() asks whether the model is FSDP-wrapped by importing
# torch.distributed.fsdp, which this Debian torch 1.13 cannot import under
# Python 3.11 (a dataclass with a mutable default): nothing here is
import transformers.generation.utils as _gu
_gu.is_fsdp_managed_module = lambda m: False
torch.manual_seed(3)
torch.set_num_threads(1)
TEXT = open('/usr/share/common-licenses/GPL-3').read()
REPO, REV = 'test-org/tiny-llama', '0123456789abcdef0123456789abcdef01234567'
PROMPTS = ['This License applies to any program', 'free']
SPECIAL = ['<s>', '</s>', '<pad>']
NEW = 10


def gen(m, tok, eos=None):
    """greedy generate() on the left-padded PROMPTS: the new ids per row"""
    tok.padding_side = 'left'
    b = tok(PROMPTS, return_tensors='pt', padding=True, return_token_type_ids=False)
    kw = {} if eos is None else dict(eos_token_id=eos)
    with torch.no_grad():
        o = m.generate(**b, max_new_tokens=NEW, do_sample=False, **kw)
    return o[:, b['input_ids'].shape[1]:].tolist()


def source(d):
    """the model saved as save_pretrained does; returns (pad, bos, eos)"""
    tok = refcli.byte_bpe(TEXT, SPECIAL)
    bos, _, pad = (tok.token_to_id(s) for s in SPECIAL)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=SPECIAL[0], eos_token=SPECIAL[1],
                                   pad_token=SPECIAL[2])
    fast.save_pretrained(d)
    cfg = LlamaConfig(vocab_size=320, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                      num_key_value_heads=2, num_hidden_layers=2, max_position_embeddings=64,
                      tie_word_embeddings=True, bos_token_id=bos, eos_token_id=None, pad_token_id=pad)
    m = LlamaForCausalLM(cfg).eval()
    # eos: an id row 0 emits early and row 1 never does, so row 0 ends
    # first and is filled with pad_token_id while row 1 goes on
    m.generation_config.pad_token_id = pad
    r0, r1 = gen(m, fast)
    eos = next(t for k, t in enumerate(r0[:NEW - 3]) if t not in r1 and t not in r0[:k] and t != pad)
    m.config.eos_token_id = eos
    m.save_pretrained(d, safe_serialization=True)
    os.unlink(os.path.join(d, 'generation_config.json'))   # many uploads have none
    return pad, bos, eos


def cache_layout(src, cache):
    """src's files into CACHE as huggingface_hub lays out a download;
    returns (repo root, snapshot dir)"""
    root = os.path.join(cache, repo_folder_name(repo_id=REPO, repo_type='model'))
    snap = os.path.join(root, 'snapshots', REV)
    os.makedirs(os.path.join(root, 'blobs'))
    os.makedirs(snap)
    for n in sorted(os.listdir(src)):
        data = open(os.path.join(src, n), 'rb').read()
        lfs = n.endswith('.safetensors')   # LFS files are named by sha256, others by git's sha1
        blob = os.path.join(root, 'blobs', sha_fileobj(open(os.path.join(src, n), 'rb')).hex() if lfs else git_hash(data))
        open(blob, 'wb').write(data)
        _create_symlink(blob, os.path.join(snap, n), new_blob=False)
    _cache_commit_hash_for_specific_revision(root, 'main', REV)
    return root, snap


def kept(ck):
    d = os.path.join(ck, 'hf_tokenizer')
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def import_ok(tag, hf, ck, note=None):
    rc, so, se = lt('import', hf, ck)
    expect('%s: import exit 0' % tag, rc == 0, se.strip()[-300:])
    expect('%s: no link refused' % tag, 'symbolic link' not in se, se.strip()[-300:])
    expect('%s: tokenizer files kept' % tag, {'tokenizer.json', 'tokenizer_config.json',
                                              'special_tokens_map.json'} <= set(kept(ck)), str(kept(ck)))
    if note:
        expect('%s: the snapshot named' % tag, note in se, se.strip()[-300:])


def refused_ref(W, root, tag, text, code, words):
    bad = os.path.join(W, 'bad_' + re.sub(r'\W', '_', tag))
    shutil.copytree(root, bad, symlinks=True)
    open(os.path.join(bad, 'refs', 'main'), 'w').write(text)
    ck = os.path.join(W, 'ck_' + re.sub(r'\W', '_', tag))
    rc, so, se = lt('import', bad, ck)
    msg = (so + se).strip()
    expect('refs/main %s: exit %d' % (tag, code), rc == code, msg)
    expect('refs/main %s: one line naming it' % tag, len(msg.splitlines()) == 1 and
           all(w in msg for w in words), msg)
    expect('refs/main %s: nothing written' % tag, not os.path.exists(ck), str(os.path.exists(ck)))


with tempfile.TemporaryDirectory() as W:
    src, cache = os.path.join(W, 'src'), os.path.join(W, 'hub')
    pad, bos, eos = source(src)
    root, snap = cache_layout(src, cache)
    info = scan_cache_dir(cache)
    repos = [(r.repo_id, [v.commit_hash for v in r.revisions], sorted(r.refs)) for r in info.repos]
    expect('scan_cache_dir reads the layout', repos == [(REPO, [REV], ['main'])] and not info.warnings,
           str(repos) + str(info.warnings))
    expect('snapshot_download(local_files_only) finds it',
           snapshot_download(REPO, cache_dir=cache, local_files_only=True) == snap)
    expect('every file a link into blobs/', all(os.path.islink(os.path.join(snap, n)) for n in os.listdir(snap)))
    print('source: pad %d, bos %d, eos %d; cache %s' % (pad, bos, eos, snap))

    ck = os.path.join(W, 'ck')
    import_ok('snapshot', snap, ck)
    import_ok('repo root', root, os.path.join(W, 'ck_root'), note='snapshots/' + REV)
    man = [os.path.join(d, 'step_00000000', 'manifest.json') for d in (ck, os.path.join(W, 'ck_root'))]
    expect('repo root: the same weights', all(map(os.path.exists, man)) and
           json.load(open(man[0]))['tensors'] == json.load(open(man[1]))['tensors'])

    # the step-0 export against the source, as transformers loads each
    rc, so, se = lt('export', '--dtype', 'fp32', ck, os.path.join(W, 'out0'))
    expect('export of step 0', rc == 0, (so + se).strip())
    s_tok = AutoTokenizer.from_pretrained(REPO, cache_dir=cache, local_files_only=True)
    s_m = AutoModelForCausalLM.from_pretrained(REPO, cache_dir=cache, local_files_only=True).eval()
    try:
        e_tok = AutoTokenizer.from_pretrained(os.path.join(W, 'out0'))
    except (OSError, ValueError) as e:
        e_tok = None
        expect('AutoTokenizer of the export', False, str(e).splitlines()[0])
    e_m = AutoModelForCausalLM.from_pretrained(os.path.join(W, 'out0')).eval()
    if e_tok:
        expect('tokenizer ids equal', [s_tok.encode(p) for p in PROMPTS] == [e_tok.encode(p) for p in PROMPTS])
        expect('tokenizer pad/bos/eos', (e_tok.pad_token_id, e_tok.bos_token_id, e_tok.eos_token_id) ==
               (s_tok.pad_token_id, s_tok.bos_token_id, s_tok.eos_token_id))
    expect('config pad/bos/eos_token_id', (e_m.config.pad_token_id, e_m.config.bos_token_id,
                                           e_m.config.eos_token_id) == (pad, bos, eos),
           str((e_m.config.pad_token_id, e_m.config.bos_token_id, e_m.config.eos_token_id)))
    expect('generation_config pad_token_id', e_m.generation_config.pad_token_id == pad,
           str(e_m.generation_config.pad_token_id))
    g_s = gen(s_m, s_tok)
    g_e = gen(e_m, e_tok or s_tok)
    print('generate source %s\n         export %s' % (g_s, g_e))
    expect('source row 0 ends early, padded', pad in g_s[0] and eos in g_s[0] and len(g_s[1]) == NEW, str(g_s))
    expect('generate ids of the export equal the source\'s', g_s == g_e, '%s vs %s' % (g_e, g_s))

    # a few steps of fine-tuning on the model's own tokens, then export
    open(os.path.join(W, 't.txt'), 'w').write(TEXT[:20000])
    rc, so, se = lt('tokenize', os.path.join(W, 't.txt'), os.path.join(W, 'data'), '--tokenizer',
                    os.path.join(snap, 'tokenizer.json'))
    expect('tokenize with the snapshot\'s tokenizer.json', rc == 0, se.strip()[-300:])
    rc, so, se = lt('--model', os.path.join(ck, 'model.yaml'), '--data', os.path.join(W, 'data'), '--steps', '3',
                    '--seq', '32', '--micro-batch', '2', '--lr', '1e-2', '--ckpt-dir', ck, '--quiet')
    expect('three steps of fine-tuning', rc == 0 and os.path.isdir(os.path.join(ck, 'step_00000003')),
           se.strip()[-300:])
    rc, so, se = lt('export', '--dtype', 'fp32', ck, os.path.join(W, 'out3'))
    expect('export of step 3', rc == 0, (so + se).strip())
    try:
        t3 = AutoTokenizer.from_pretrained(os.path.join(W, 'out3'))
        m3 = AutoModelForCausalLM.from_pretrained(os.path.join(W, 'out3')).eval()
        g3 = gen(m3, t3)
        moved = any((p - q).abs().max() > 0 for p, q in zip(m3.parameters(), s_m.parameters()))
        print('generate trained %s' % g3)
        expect('trained export: loads, generates, weights moved', len(g3) == 2 and moved and
               m3.config.pad_token_id == pad)
    except (OSError, ValueError) as e:
        expect('trained export loads in transformers', False, str(e).splitlines()[0])

    # --init-from the repo root with the import's model.yaml as one's own --model
    rc, so, se = lt('--model', os.path.join(ck, 'model.yaml'), '--data', os.path.join(W, 'data'), '--steps', '1',
                    '--seq', '32', '--micro-batch', '1', '--init-from', root, '--ckpt-dir', os.path.join(W, 'ck_init'),
                    '--quiet')
    expect('--init-from the repo root', rc == 0, se.strip()[-300:])

    # links out of the snapshot are still not followed
    other = os.path.join(cache, repo_folder_name(repo_id='other/model', repo_type='model'))
    os.makedirs(os.path.join(other, 'blobs'))
    tj = open(os.path.join(src, 'tokenizer.json')).read()   # a tokenizer: import reads it to check
    open(os.path.join(other, 'blobs', 'abc'), 'w').write(tj)
    open(os.path.join(W, 'secret'), 'w').write(tj)
    for tag, target in (('a file beside the cache', os.path.join(W, 'secret')),
                        ('another repo\'s blobs', os.path.join(other, 'blobs', 'abc'))):
        # a cache of its own beside the other repo: models--test-org--tiny-llama
        r2 = os.path.join(cache, 'x', repo_folder_name(repo_id=REPO, repo_type='model'))
        shutil.rmtree(os.path.dirname(r2), ignore_errors=True)
        shutil.copytree(root, r2, symlinks=True)
        s2 = os.path.join(r2, 'snapshots', REV)
        os.unlink(os.path.join(s2, 'tokenizer.json'))
        os.symlink(os.path.relpath(target, s2), os.path.join(s2, 'tokenizer.json'))
        ck2 = os.path.join(W, 'ck_' + tag.replace(' ', '_').replace("'", ''))
        rc, so, se = lt('import', s2, ck2)
        expect('link to %s: imported, not kept' % tag, rc == 0 and 'tokenizer.json' not in kept(ck2) and
               'tokenizer_config.json' in kept(ck2) and
               'tokenizer.json: a symbolic link out of the directory: not kept' in se, se.strip()[-300:])

    for tag, text, code, words in (('../x', '../x', 64, ['refs/main', "'../x'"]),
                                   ('a/b', 'a/b', 64, ['refs/main', "'a/b'"]),
                                   ('empty', '', 64, ['refs/main', "''"]),
                                   ('two lines', REV + '\nmain\n', 64, ['refs/main']),
                                   ('missing snapshot', 'f' * 40, 66, ['snapshots/' + 'f' * 40])):
        refused_ref(W, root, tag, text, code, words)

    # refs/main a link (to a valid revision file): not followed
    lnk = os.path.join(W, 'bad_link')
    shutil.copytree(root, lnk, symlinks=True)
    open(os.path.join(W, 'rev'), 'w').write(REV)
    os.unlink(os.path.join(lnk, 'refs', 'main'))
    os.symlink(os.path.join(W, 'rev'), os.path.join(lnk, 'refs', 'main'))
    rc, so, se = lt('import', lnk, os.path.join(W, 'ck_link'))
    expect('refs/main a link: exit 64, one line', rc == 64 and len(se.strip().splitlines()) == 1 and
           'refs/main: not a regular file' in se, se.strip())

    # a pad_token_id past the vocabulary is not kept
    bad = os.path.join(W, 'badpad')
    shutil.copytree(snap, bad)   # the links' files, as regular ones
    c = json.load(open(os.path.join(bad, 'config.json')))
    c['pad_token_id'] = 320
    json.dump(c, open(os.path.join(bad, 'config.json'), 'w'))
    rc, so, se = lt('import', bad, os.path.join(W, 'ck_badpad'))
    rc2, so2, se2 = lt('export', os.path.join(W, 'ck_badpad'), os.path.join(W, 'out_badpad'))
    cj = json.load(open(os.path.join(W, 'out_badpad', 'config.json'))) if rc2 == 0 else {}
    expect('pad_token_id 320 (vocab_size 320): a note, not kept',
           rc == 0 and 'pad_token_id 320' in se and rc2 == 0 and 'pad_token_id' not in cj and
           cj.get('eos_token_id') == eos, se.strip()[-300:] + str(cj))
finish()
