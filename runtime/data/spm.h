/* spm.h: a C view of SentencePiece (libsentencepiece): load a model
 * (tokenizer.model), encode, decode, special ids, and train a new BPE or
 * unigram model. The only C++ is spm.cc behind this header. */
#ifndef LLMT_SPM_H
#define LLMT_SPM_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct llmt_spm llmt_spm;

/* Load a model file. NULL with err set (one line naming the file). */
llmt_spm *llmt_spm_load(const char *path, char *err, size_t errlen);
void llmt_spm_free(llmt_spm *m);
int llmt_spm_size(const llmt_spm *m);
/* -1 when the model has none */
int llmt_spm_bos(const llmt_spm *m);
int llmt_spm_eos(const llmt_spm *m);
int llmt_spm_pad(const llmt_spm *m);
int llmt_spm_unk(const llmt_spm *m);
/* 1 for a unigram model (the default type), 0 for BPE, word or char */
int llmt_spm_unigram(const llmt_spm *m);
/* id of a piece, or -1 when the vocabulary lacks it */
int llmt_spm_piece_id(const llmt_spm *m, const char *piece);
/* piece of an id (into buf, NUL-terminated); -1 when out of range */
int llmt_spm_id_piece(const llmt_spm *m, int id, char *buf, size_t len);

/* Encode n bytes as one sentence; appends to *ids (realloc'd, capacity
 * *cap, count *nids). 0, or -1 with err set. */
int llmt_spm_encode(const llmt_spm *m, const char *s, size_t n, uint32_t **ids,
	size_t *nids, size_t *cap, char *err, size_t errlen);
/* Decode: *out is malloc'd, NUL-terminated, *outlen bytes. 0 or -1. */
int llmt_spm_decode(const llmt_spm *m, const uint32_t *ids, size_t n, char **out,
	size_t *outlen, char *err, size_t errlen);

/* Train a model on the text file `input` (one sentence a line); writes
 * the serialized model to *model (malloc'd, *len bytes). type: "bpe" or
 * "unigram". 0, or -1 with SentencePiece's reason in err. */
int llmt_spm_train(const char *input, int vocab, const char *type, char **model,
	size_t *len, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
