/* ckpt_cover.c: that the pieces of one (kind, tensor) of a stored
 * checkpoint tile the tensor exactly: no element held by two pieces (two
 * rank files whose ranges overlap), none held by no piece (a gap). A row
 * sweep over the pieces' boxes, pure; the message names the files and the
 * ranges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ckpt_int.h"

typedef struct {
	int64_t row;
	int add;        /* 0: the piece ends at row, 1: it starts there */
	int piece;
} event;

static int cmp_event(const void *a, const void *b)
{
	const event *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->add != y->add)
		return x->add - y->add; /* ends before starts: touching boxes do not overlap */
	return x->piece - y->piece; /* the manifest's order: the same message every time */
}

/* "elements [a, b)" when the box is whole rows (a flat range of the
 * tensor), else "rows [r0, r1) x cols [c0, c1)". */
static void range_str(char *buf, size_t len, const ck_box *b, int64_t cols)
{
	if (b->c0 == 0 && b->nc == cols)
		snprintf(buf, len, "elements [%lld, %lld)", (long long)(b->r0 * cols),
			(long long)((b->r0 + b->nr) * cols));
	else
		snprintf(buf, len, "rows [%lld, %lld) x cols [%lld, %lld)", (long long)b->r0,
			(long long)(b->r0 + b->nr), (long long)b->c0, (long long)(b->c0 + b->nc));
}

static void piece_str(char *buf, size_t len, const ck_source *s, const ck_piece *p, int64_t cols)
{
	char r[96];

	range_str(r, sizeof r, &p->box, cols);
	snprintf(buf, len, "%s %s", s->files[p->file].name, r);
}

/* The piece of grp holding element (r, c), or NULL. */
static const ck_piece *holder(const ck_piece *grp, int n, int64_t r, int64_t c)
{
	for (int i = 0; i < n; i++) {
		const ck_box *b = &grp[i].box;
		if (r >= b->r0 && r < b->r0 + b->nr && c >= b->c0 && c < b->c0 + b->nc)
			return &grp[i];
	}
	return NULL;
}

/* One line for the gap box g, with the pieces just before and after it in
 * row-major order when there are. */
static void gap_msg(char *err, size_t errlen, const ck_source *s, const ck_tensor *t, int kind,
	const ck_piece *grp, int n, const ck_box *g)
{
	char what[96], before[192] = "", after[192] = "";
	const ck_piece *p = NULL, *q = NULL;
	int64_t end_r = g->r0 + g->nr - 1, end_c = g->c0 + g->nc;

	range_str(what, sizeof what, g, t->cols);
	if (g->c0 > 0)
		p = holder(grp, n, g->r0, g->c0 - 1);
	else if (g->r0 > 0)
		p = holder(grp, n, g->r0 - 1, t->cols - 1);
	if (end_c < t->cols)
		q = holder(grp, n, end_r, end_c);
	else if (end_r + 1 < t->rows)
		q = holder(grp, n, end_r + 1, 0);
	if (p) {
		char ps[160];
		piece_str(ps, sizeof ps, s, p, t->cols);
		snprintf(before, sizeof before, " after %s", ps);
	}
	if (q) {
		char qs[160];
		piece_str(qs, sizeof qs, s, q, t->cols);
		snprintf(after, sizeof after, "%s %s", p ? " and before" : " before", qs);
	}
	ck_fmt(err, errlen, "tensor %s (%s): %s in no file (a gap%s%s)", t->name, s->kinds[kind], what,
		before, after);
}

int ck_cover_check(const ck_source *s, const ck_piece *grp, int n, char *err, size_t errlen)
{
	const ck_tensor *t = &s->tensors[grp[0].tensor];
	event *ev = malloc(sizeof *ev * 2 * (size_t)n);
	int *act = malloc(sizeof *act * (size_t)n);   /* active pieces, by c0 */
	int na = 0, rc = 0;
	int64_t width = 0, prev = 0;

	if (!ev || !act) {
		free(ev);
		free(act);
		ck_fmt(err, errlen, "out of memory");
		return LLMT_EXIT_SOFTWARE;
	}
	for (int i = 0; i < n; i++) {
		ev[2 * i] = (event){ grp[i].box.r0, 1, i };
		ev[2 * i + 1] = (event){ grp[i].box.r0 + grp[i].box.nr, 0, i };
	}
	qsort(ev, 2 * (size_t)n, sizeof *ev, cmp_event);
	for (int e = 0; e <= 2 * n && !rc; ) {
		int64_t row = e < 2 * n ? ev[e].row : t->rows;
		/* the band [prev, row) has the active set: it must span every column */
		if (row > prev && width < t->cols) {
			/* the first column no active piece holds, up to the next piece */
			int64_t c = 0, next = t->cols;
			for (int k = 0; k < na; k++) {
				const ck_box *b = &grp[act[k]].box;
				if (b->c0 > c) {
					next = b->c0;
					break;
				}
				c = b->c0 + b->nc;
			}
			ck_box g = { prev, row - prev, c, next - c };
			gap_msg(err, errlen, s, t, grp[0].kind, grp, n, &g);
			rc = LLMT_EXIT_DATA;
			break;
		}
		if (e == 2 * n)
			break;
		prev = row;
		for (; e < 2 * n && ev[e].row == row && !rc; e++) {
			const ck_box *b = &grp[ev[e].piece].box;
			int lo = 0, hi = na;
			while (lo < hi) {   /* first active with c0 >= b->c0 */
				int mid = (lo + hi) / 2;
				if (grp[act[mid]].box.c0 < b->c0)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (!ev[e].add) {
				while (lo < na && act[lo] != ev[e].piece)
					lo++;
				if (lo < na) {
					memmove(act + lo, act + lo + 1, sizeof *act * (size_t)(na - lo - 1));
					na--;
					width -= b->nc;
				}
				continue;
			}
			const ck_piece *other = NULL;
			if (lo > 0 && grp[act[lo - 1]].box.c0 + grp[act[lo - 1]].box.nc > b->c0)
				other = &grp[act[lo - 1]];
			else if (lo < na && b->c0 + b->nc > grp[act[lo]].box.c0)
				other = &grp[act[lo]];
			if (other) {
				char a[160], o[160];
				piece_str(a, sizeof a, s, other, t->cols);
				piece_str(o, sizeof o, s, &grp[ev[e].piece], t->cols);
				ck_fmt(err, errlen, "tensor %s (%s): %s overlaps %s", t->name, s->kinds[grp[0].kind], a, o);
				rc = LLMT_EXIT_DATA;
				break;
			}
			memmove(act + lo + 1, act + lo, sizeof *act * (size_t)(na - lo));
			act[lo] = ev[e].piece;
			na++;
			width += b->nc;
		}
	}
	free(ev);
	free(act);
	return rc;
}
