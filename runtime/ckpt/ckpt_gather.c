/* ckpt_gather.c: a checkpoint saved under any layout gathered into one
 * process's whole model (the tp = pp = 1 table, fp32 master weights), for
 * generate and other single-process readers. */
#include "ckpt_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int llmt_ckpt_gather(const char *path, llmt_config *cfg, llmt_param_info **tab, int *ntab, size_t *nflat,
                     float **flat, char *err, size_t errlen)
{
	llmt_par par = { 1, 0, 1, 0, NULL };
	char stepdir[4096], e2[2048];
	llmt_ckpt *c;
	int rc, code = 0;

	*tab = NULL;
	*flat = NULL;
	if ((rc = llmt_ckpt_resolve(path, stepdir, sizeof stepdir, err, errlen)) != 0)
		return rc;
	if (!(c = llmt_ckpt_open(stepdir, &code, e2, sizeof e2))) {
		ck_fmt(err, errlen, "%s", e2);
		return code ? code : LLMT_EXIT_DATA;
	}
	llmt_config_defaults(cfg);
	llmt_ckpt_config(c, cfg);
	if (llmt_model_table(cfg, &par, tab, ntab, nflat) != 0 ||
	    !(*flat = calloc(*nflat ? *nflat : 1, sizeof **flat))) {
		ck_fmt(err, errlen, "out of memory (%zu parameters)", *nflat);
		rc = LLMT_EXIT_SOFTWARE;
	} else {
		llmt_ckpt_state st = { .rank = 0, .world = 1, .tp = 1, .pp = 1, .dp = 1, .config = cfg,
		                       .params = *tab, .nparams = *ntab, .nflat = *nflat, .nbufs = 1 };
		st.bufs[0] = (llmt_ckpt_buf){ "master", LLMT_CKPT_F32, *flat, 0, *nflat, 1, 0 };
		rc = llmt_ckpt_load(c, &st, e2, sizeof e2);
		if (rc)
			ck_fmt(err, errlen, "%s: %s", stepdir, e2);
	}
	llmt_ckpt_close(c);
	if (rc) {
		free(*tab);
		free(*flat);
		*tab = NULL;
		*flat = NULL;
	}
	return rc;
}
