// spm.cc: the C wrapper over SentencePiece's C++ API (processor and
// trainer) that spm.h declares; no other file of the project is C++.
// Every call catches C++ exceptions so none crosses into C.
#include "spm.h"
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

struct llmt_spm {
	sentencepiece::SentencePieceProcessor sp;
};

static void set_err(char *err, size_t errlen, const std::string &msg)
{
	if (errlen)
		snprintf(err, errlen, "%s", msg.c_str());
}

extern "C" llmt_spm *llmt_spm_load(const char *path, char *err, size_t errlen)
{
	try {
		llmt_spm *m = new llmt_spm;
		auto st = m->sp.Load(path);
		if (!st.ok()) {
			std::string why = st.ToString();
			if (why.find("ParseFromArray") != std::string::npos)
				why = "it does not parse as one";
			set_err(err, errlen, std::string(path) + ": neither a tokenizer.json (no '{' first) nor a SentencePiece model (" + why + ")");
			delete m;
			return nullptr;
		}
		return m;
	} catch (const std::exception &e) {
		set_err(err, errlen, std::string(path) + ": " + e.what());
		return nullptr;
	}
}

extern "C" void llmt_spm_free(llmt_spm *m)
{
	delete m;
}

extern "C" int llmt_spm_size(const llmt_spm *m) { return m->sp.GetPieceSize(); }
extern "C" int llmt_spm_bos(const llmt_spm *m) { return m->sp.bos_id(); }
extern "C" int llmt_spm_eos(const llmt_spm *m) { return m->sp.eos_id(); }
extern "C" int llmt_spm_pad(const llmt_spm *m) { return m->sp.pad_id(); }
extern "C" int llmt_spm_unk(const llmt_spm *m) { return m->sp.unk_id(); }

// Protocol buffer fields, read by hand: the model's header is not
// installed. ModelProto.trainer_spec is field 2, TrainerSpec.model_type
// field 3 (UNIGRAM 1, BPE 2, WORD 3, CHAR 4; absent: UNIGRAM).
static bool varint(const std::string &b, size_t &i, uint64_t &v)
{
	v = 0;
	for (int sh = 0; i < b.size() && sh < 64; sh += 7) {
		unsigned char c = static_cast<unsigned char>(b[i++]);
		v |= static_cast<uint64_t>(c & 0x7f) << sh;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

// the value of varint field `want` in message b, or dflt
static uint64_t field(const std::string &b, unsigned want, uint64_t dflt, std::string *sub)
{
	size_t i = 0;
	uint64_t key, v;

	while (i < b.size() && varint(b, i, key)) {
		unsigned wt = key & 7, num = static_cast<unsigned>(key >> 3);
		if (wt == 0) {
			if (!varint(b, i, v))
				break;
			if (num == want && !sub)
				return v;
		} else if (wt == 2) {
			if (!varint(b, i, v) || v > b.size() - i)
				break;
			if (num == want && sub) {
				*sub = b.substr(i, v);
				return 1;
			}
			i += v;
		} else if (wt == 1 || wt == 5) {
			i += wt == 1 ? 8 : 4;
		} else {
			break;
		}
	}
	return dflt;
}

extern "C" int llmt_spm_unigram(const llmt_spm *m)
{
	try {
		std::string spec;
		if (!field(m->sp.serialized_model_proto(), 2, 0, &spec))
			return 1;
		return field(spec, 3, 1, nullptr) == 1;
	} catch (const std::exception &) {
		return 1;
	}
}

extern "C" int llmt_spm_piece_id(const llmt_spm *m, const char *piece)
{
	try {
		int id = m->sp.PieceToId(piece);
		return id >= 0 && m->sp.IdToPiece(id) == piece ? id : -1;
	} catch (const std::exception &) {
		return -1;
	}
}

extern "C" int llmt_spm_id_piece(const llmt_spm *m, int id, char *buf, size_t len)
{
	if (id < 0 || id >= m->sp.GetPieceSize())
		return -1;
	snprintf(buf, len, "%s", m->sp.IdToPiece(id).c_str());
	return 0;
}

extern "C" int llmt_spm_encode(const llmt_spm *m, const char *s, size_t n, uint32_t **ids,
	size_t *nids, size_t *cap, char *err, size_t errlen)
{
	try {
		std::vector<int> v;
		auto st = m->sp.Encode(absl::string_view(s, n), &v);
		if (!st.ok()) {
			set_err(err, errlen, "SentencePiece encode: " + st.ToString());
			return -1;
		}
		if (*nids + v.size() > *cap) {
			size_t nc = *cap ? *cap : 1024;
			while (nc < *nids + v.size())
				nc *= 2;
			uint32_t *nv = static_cast<uint32_t *>(realloc(*ids, nc * sizeof(uint32_t)));
			if (!nv) {
				set_err(err, errlen, "out of memory");
				return -1;
			}
			*ids = nv;
			*cap = nc;
		}
		for (int id : v)
			(*ids)[(*nids)++] = static_cast<uint32_t>(id);
		return 0;
	} catch (const std::exception &e) {
		set_err(err, errlen, std::string("SentencePiece encode: ") + e.what());
		return -1;
	}
}

extern "C" int llmt_spm_decode(const llmt_spm *m, const uint32_t *ids, size_t n, char **out,
	size_t *outlen, char *err, size_t errlen)
{
	try {
		std::vector<int> v(n);
		std::string text;
		for (size_t i = 0; i < n; i++) {
			if (ids[i] >= static_cast<uint32_t>(m->sp.GetPieceSize())) {
				set_err(err, errlen, "token " + std::to_string(ids[i]) + " is outside the vocabulary (" +
					std::to_string(m->sp.GetPieceSize()) + ")");
				return -1;
			}
			v[i] = static_cast<int>(ids[i]);
		}
		auto st = m->sp.Decode(v, &text);
		if (!st.ok()) {
			set_err(err, errlen, "SentencePiece decode: " + st.ToString());
			return -1;
		}
		*out = static_cast<char *>(malloc(text.size() + 1));
		if (!*out) {
			set_err(err, errlen, "out of memory");
			return -1;
		}
		memcpy(*out, text.data(), text.size());
		(*out)[text.size()] = 0;
		*outlen = text.size();
		return 0;
	} catch (const std::exception &e) {
		set_err(err, errlen, std::string("SentencePiece decode: ") + e.what());
		return -1;
	}
}

// Byte for byte round trips: no normalization, spaces kept as they are,
// bytes outside the vocabulary as <0xNN> pieces (as Llama's models).
extern "C" int llmt_spm_train(const char *input, int vocab, const char *type, char **model,
	size_t *len, char *err, size_t errlen)
{
	try {
		std::unordered_map<std::string, std::string> kw = {
			{ "input", input },
			{ "vocab_size", std::to_string(vocab) },
			{ "model_type", type },
			{ "normalization_rule_name", "identity" },
			{ "remove_extra_whitespaces", "false" },
			{ "byte_fallback", "true" },
			{ "character_coverage", "1.0" },
			{ "max_sentence_length", "1000000" },
			{ "input_sentence_size", "2000000" },
			{ "shuffle_input_sentence", "true" },
			{ "minloglevel", "2" },
		};
		std::string proto;
		auto st = sentencepiece::SentencePieceTrainer::Train(kw, nullptr, &proto);
		if (!st.ok()) {
			set_err(err, errlen, st.ToString());
			return -1;
		}
		*model = static_cast<char *>(malloc(proto.size()));
		if (!*model) {
			set_err(err, errlen, "out of memory");
			return -1;
		}
		memcpy(*model, proto.data(), proto.size());
		*len = proto.size();
		return 0;
	} catch (const std::exception &e) {
		set_err(err, errlen, e.what());
		return -1;
	}
}
