# hf_tokexport.py: an export of an imported model loads in transformers
# (the venv's 4.46.3) with the source's tokenizer and BOS/EOS ids, no
# file copied by hand. The source is Llama-3-like: a byte-level BPE
# (tokenizers, trained here on GPL-3) whose <|begin_of_text|>,
# <|end_of_text|>, <|eot_id|> come after the merges (ids ~300, not 1/2),
# a LlamaForCausalLM written by save_pretrained with those ids in
# config.json, and a generation_config.json whose eos_token_id is a list
# (end_of_text, eot_id). `llm-train import`, a step of training in its
# CKPT_DIR, then `llm-train export` (of step 1; the second case of step 0):
# - AutoTokenizer of the export gives the source's ids on a few strings,
#   and the same bos/eos_token_id;
# - AutoModelForCausalLM of the export: config.bos/eos_token_id and
#   generation_config.eos_token_id equal the source's;
# - the same source without generation_config.json: the export writes
#   one from config.json's ids (generation_config.eos_token_id the
#   source's config.eos_token_id);
# - a model trained from scratch exports as before: config.json and
#   model.safetensors, no bos/eos_token_id (import_check.py checks it too).
# Fails on the old code: the export held no tokenizer (AutoTokenizer
# raised) and its generation_config.eos_token_id was 2.
import json, os, shutil, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refcli
refcli.need_venv('transformers')
import transformers
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM, \
    PreTrainedTokenizerFast
from refcli import expect, finish, lt
transformers.logging.set_verbosity_error()
torch.set_num_threads(1)
TEXT = open('/usr/share/common-licenses/GPL-3').read()
STRINGS = ['This License applies to any', 'free software, GNU General Public License!', 'a\n\n  b  c 12345']
SPECIAL = ['<|begin_of_text|>', '<|end_of_text|>', '<|eot_id|>']


def source(d):
    """the Llama-3-like model directory; returns its (bos, eos, [eos, eot])"""
    tok = refcli.byte_bpe(TEXT, SPECIAL)
    bos, eos, eot = (tok.token_to_id(s) for s in SPECIAL)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=SPECIAL[0], eos_token=SPECIAL[1])
    fast.save_pretrained(d)
    cfg = LlamaConfig(vocab_size=320, hidden_size=16, intermediate_size=24, num_attention_heads=2,
                      num_key_value_heads=1, num_hidden_layers=2, max_position_embeddings=64,
                      tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos)
    m = LlamaForCausalLM(cfg).eval()
    m.generation_config.eos_token_id = [eos, eot]
    m.save_pretrained(d, safe_serialization=True)
    return bos, eos, [eos, eot]


def import_export(W, src, tag, tune=False):
    ck, out = os.path.join(W, 'ck_' + tag), os.path.join(W, 'out_' + tag)
    rc, so, se = lt('import', src, ck)
    expect('%s: import' % tag, rc == 0, se.strip())
    if tune:   # a step of training in the CKPT_DIR: the export takes the newest checkpoint
        open(os.path.join(W, 't.txt'), 'w').write(TEXT[:20000])
        lt('tokenize', os.path.join(W, 't.txt'), os.path.join(W, 'data'))
        rc, so, se = lt('--model', os.path.join(ck, 'model.yaml'), '--data', os.path.join(W, 'data'), '--steps', '1',
                        '--seq', '16', '--micro-batch', '1', '--ckpt-dir', ck, '--quiet')
        expect('%s: a step of fine-tuning' % tag, rc == 0 and os.path.isdir(os.path.join(ck, 'step_00000001')),
               se.strip()[-300:])
    rc, so, se = lt('export', '--dtype', 'fp32', ck, out)
    expect('%s: export' % tag, rc == 0, (so + se).strip())
    return out


def same_tokenizer(tag, src, out):
    try:
        a, b = AutoTokenizer.from_pretrained(src), AutoTokenizer.from_pretrained(out)
    except (OSError, ValueError) as e:
        expect('%s: AutoTokenizer of the export' % tag, False, str(e).splitlines()[0])
        return
    ids = [(a.encode(s), b.encode(s)) for s in STRINGS]
    expect('%s: AutoTokenizer ids equal the source\'s' % tag, all(x == y for x, y in ids), str(ids[0]))
    expect('%s: tokenizer bos/eos ids' % tag, (a.bos_token_id, a.eos_token_id) == (b.bos_token_id, b.eos_token_id),
           '%s vs %s' % ((b.bos_token_id, b.eos_token_id), (a.bos_token_id, a.eos_token_id)))


with tempfile.TemporaryDirectory() as W:
    src = os.path.join(W, 'src')
    bos, eos, gen_eos = source(src)
    print('source: bos %d, eos %d, generation_config eos %s' % (bos, eos, gen_eos))
    out = import_export(W, src, 'llama3-like', tune=True)
    same_tokenizer('llama3-like', src, out)
    m = AutoModelForCausalLM.from_pretrained(out)
    expect('config bos/eos_token_id', (m.config.bos_token_id, m.config.eos_token_id) == (bos, eos),
           str((m.config.bos_token_id, m.config.eos_token_id)))
    expect('generation_config.eos_token_id (a list)', m.generation_config.eos_token_id == gen_eos,
           str(m.generation_config.eos_token_id))

    # no generation_config.json in the source: the export writes one
    nogen = os.path.join(W, 'nogen')
    shutil.copytree(src, nogen)
    os.unlink(os.path.join(nogen, 'generation_config.json'))
    out = import_export(W, nogen, 'no-generation-config')
    same_tokenizer('no-generation-config', nogen, out)
    m = AutoModelForCausalLM.from_pretrained(out)
    g = json.load(open(os.path.join(out, 'generation_config.json'))) if os.path.exists(
        os.path.join(out, 'generation_config.json')) else {}
    expect('written generation_config.json', g == {'bos_token_id': bos, 'eos_token_id': eos}, str(g))
    expect('generation_config.eos_token_id from config.json', m.generation_config.eos_token_id == eos,
           str(m.generation_config.eos_token_id))
finish()
