/* model_share.c: a CPU model whose fp32 master weights are a ZeRO-1 share
 * (llmt_model_create_share): the fp32 copies of the tensors kernels read
 * in fp32 (embedding, norm weights), the init that fills the share and
 * the whole compute copies, the views the optimizer and the SDC check
 * take of the weights every DP replica holds, and the share's own check
 * (its bf16 weights and fp32 copies follow from it). */
#include <stdint.h>
#include <string.h>
#include "bf16.h"
#include "model_impl.h"

/* the tensors model_step.c reads in fp32: norm weights (every 1-D tensor)
 * and the first stage's embedding */
static int read_f32(const llmt_model *m, const llmt_param_info *p)
{
	return p->ndim == 1 || (m->first && !p->tied_copy && p->offset == m->off_embed);
}

int llmt_model_wf_plan(llmt_model *m, void *(*alloc)(llmt_model *, size_t))
{
	size_t np = (size_t)m->nparams_t + 1;
	if (!(m->wf_flat = alloc(m, np * sizeof(size_t))) || !(m->wf_at = alloc(m, np * sizeof(size_t))) ||
		!(m->wf_n = alloc(m, np * sizeof(size_t))))
		return -1;
	for (int t = 0; t < m->nparams_t; t++) {
		const llmt_param_info *p = &m->params[t];
		if (!read_f32(m, p))
			continue;
		m->wf_flat[m->nwf] = p->offset;
		m->wf_at[m->nwf] = m->wf_len;
		m->wf_n[m->nwf] = p->numel;
		m->wf_len += p->numel;
		m->nwf++;
	}
	return (m->wf = alloc(m, m->wf_len * sizeof(float))) ? 0 : -1;
}

const float *llmt_model_w32(const llmt_model *m, size_t off)
{
	if (!m->mshare)
		return m->master + off;
	for (int i = 0; i < m->nwf; i++)
		if (off >= m->wf_flat[i] && off < m->wf_flat[i] + m->wf_n[i])
			return m->wf + m->wf_at[i] + (off - m->wf_flat[i]);
	return NULL; /* not a tensor read in fp32: a caller's bug, seen at once */
}

/* the init of llmt_model_init element by element (the same values): the
 * share, the bf16 copy of every element and the fp32 copies */
void llmt_model_init_share(llmt_model *m)
{
	for (int t = 0; t < m->nparams_t; t++) {
		const llmt_param_info *p = &m->params[t];
		float *cp = read_f32(m, p) ? (float *)llmt_model_w32(m, p->offset) : NULL;
		size_t off = p->offset, lo = m->mlo, hi = m->mhi;
		uint64_t key;
		double std;
		llmt_model_init_key(m, p, &key, &std);
#pragma omp parallel for schedule(static)
		for (size_t k = 0; k < p->numel; k++) {
			float v = llmt_model_init_value(p, key, std, k);
			m->wc[off + k] = f32_to_bf16(v);
			if (off + k >= lo && off + k < hi)
				m->master[off + k - lo] = v;
			if (cp)
				cp[k] = v;
		}
	}
	llmt_model_zero_grad(m);
}

uint16_t *llmt_model_compute_bf16(llmt_model *m)
{
	return m->mshare ? m->wc : NULL;
}

float *llmt_model_f32_copies(llmt_model *m, size_t *len)
{
	*len = m->mshare ? m->wf_len : 0;
	return m->mshare ? m->wf : NULL;
}

size_t llmt_model_f32_at(const llmt_model *m, size_t flat)
{
	for (int i = 0; i < m->nwf; i++)
		if (flat < m->wf_flat[i] + m->wf_n[i])
			return m->wf_at[i] + (flat > m->wf_flat[i] ? flat - m->wf_flat[i] : 0);
	return m->wf_len;
}

const float *llmt_model_replica_weights(llmt_model *m, float *buf)
{
	if (!m->mshare)
		return m->master;
	size_t n = m->n;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i += 4096)
		bf16_to_f32_n(buf + i, m->wc + i, n - i < 4096 ? n - i : 4096);
	for (int i = 0; i < m->nwf; i++)
		memcpy(buf + m->wf_flat[i], m->wf + m->wf_at[i], m->wf_n[i] * sizeof(float));
	return buf;
}

static void flip(void *x, size_t bytes, int bit)
{
	uint32_t u = 0;
	memcpy(&u, x, bytes);
	u ^= 1u << bit;
	memcpy(x, &u, bytes);
}

int llmt_model_flip_master(llmt_model *m, int bit, size_t *at)
{
	if (!m->mshare || m->mhi <= m->mlo)
		return -1;
	*at = m->mlo;
	flip(m->master, 4, bit);
	return 0;
}

size_t llmt_model_share_check(const llmt_model *m)
{
	size_t bad = 0, lo = m->mlo, hi = m->mhi;

	if (!m->mshare)
		return 0;
	/* the conversion of llmt_model_sync_compute, chunk for chunk (its
	 * vector path flushes subnormals, the scalar one rounds them) */
#pragma omp parallel for schedule(static) reduction(+ : bad)
	for (size_t i = 0; i < hi - lo; i += 4096) {
		bf16 t[4096];
		size_t c = hi - lo - i < 4096 ? hi - lo - i : 4096;
		f32_to_bf16_n(t, m->master + i, c);
		if (memcmp(t, m->wc + lo + i, c * sizeof(bf16)))   /* the rare case: count */
			for (size_t k = 0; k < c; k++)
				bad += t[k] != m->wc[lo + i + k];
	}
	for (int k = 0; k < m->nwf; k++) {
		size_t a = m->wf_flat[k] > lo ? m->wf_flat[k] : lo;
		size_t z = m->wf_flat[k] + m->wf_n[k] < hi ? m->wf_flat[k] + m->wf_n[k] : hi;
		for (size_t i = a; i < z; i++)
			bad += memcmp(m->wf + m->wf_at[k] + (i - m->wf_flat[k]), m->master + (i - lo), 4) != 0;
	}
	return bad;
}

void llmt_model_flip_bit(llmt_model *m, size_t at, int bit)
{
	float *cp = m->mshare ? (float *)llmt_model_w32(m, at) : NULL;
	if (!m->mshare || (at >= m->mlo && at < m->mhi)) {
		float *w = m->master + (at - m->mlo);
		flip(w, 4, bit);
		if (!m->mshare) {
			llmt_model_sync_compute(m);
			return;
		}
		if (cp)
			*cp = *w;
		m->wc[at] = f32_to_bf16(*w);
	} else if (cp) {
		flip(cp, 4, bit);
		m->wc[at] = f32_to_bf16(*cp);
	} else if (bit >= 16) {
		flip(&m->wc[at], 2, bit - 16);
	}
}
