/* topology.conf parser: tree lines (SwitchName= Switches= Nodes=
 * LinkSpeed=) and block lines (BlockName= Nodes=, BlockSizes=) into a
 * node table sorted by name. Written by hand: libslurm's topology API
 * is internal and its structures changed ABI in 25.05. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostlist.h"
#include "topology.h"

#include "llmt/err.h"

struct entry {              /* one (node, leaf or block) membership */
	char name[LLMT_HOST_MAX];
	int leaf, block;
	unsigned line;
};

struct pending_sw {         /* Switches= of one switch, resolved at the end */
	char *children;
	unsigned line;
};

struct parser {
	const char *fname;
	unsigned line;
	struct llmt_topology *t;
	struct entry *ents;
	size_t nents, capents;
	struct pending_sw *pend;   /* [npend] */
	unsigned npend;
	size_t capsw, capbl;
	char *err;
	size_t errlen;
	int cur_leaf, cur_block;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t nc;
	void *np;
	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	np = realloc(*p, nc * elem);
	if (!np)
		return -1;
	*p = np;
	*cap = nc;
	return 0;
}

static int add_node(const char *name, void *arg)
{
	struct parser *ps = arg;
	if (ps->nents >= LLMT_MAX_NODES * 2u ||
	    grow((void **)&ps->ents, &ps->capents, ps->nents + 1, sizeof(*ps->ents)))
		return -1;
	struct entry *e = &ps->ents[ps->nents++];
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->leaf = ps->cur_leaf;
	e->block = ps->cur_block;
	e->line = ps->line;
	return 0;
}

static int valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= LLMT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
			return 0;
	return 1;
}

static int parse_line(struct parser *ps, char *s)
{
	char *tok, *save = NULL;
	char *swname = NULL, *blname = NULL, *nodes = NULL, *children = NULL;
	char *err = ps->err;
	size_t errlen = ps->errlen;
	struct llmt_topology *t = ps->t;

	for (tok = strtok_r(s, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			SET_ERR("%s:%u: '%.64s' is not Key=Value", ps->fname, ps->line, tok);
			return -1;
		}
		*eq = 0;
		char *v = eq + 1;
		if (!strcasecmp(tok, "SwitchName"))
			swname = v;
		else if (!strcasecmp(tok, "BlockName"))
			blname = v;
		else if (!strcasecmp(tok, "Nodes"))
			nodes = v;
		else if (!strcasecmp(tok, "Switches"))
			children = v;
		else if (!strcasecmp(tok, "LinkSpeed") || !strcasecmp(tok, "BlockSizes"))
			;
		else {
			SET_ERR("%s:%u: unknown key '%.64s'", ps->fname, ps->line, tok);
			return -1;
		}
	}
	if (swname && blname) {
		SET_ERR("%s:%u: SwitchName and BlockName on one line", ps->fname, ps->line);
		return -1;
	}
	ps->cur_leaf = ps->cur_block = -1;
	if (swname) {
		if (!valid_name(swname)) {
			SET_ERR("%s:%u: bad switch name '%.64s'", ps->fname, ps->line, swname);
			return -1;
		}
		if (t->nswitches >= LLMT_TOPO_MAX_SWITCHES ||
		    grow((void **)&t->switches, &ps->capsw, t->nswitches + 1, sizeof(*t->switches))) {
			SET_ERR("%s:%u: too many switches", ps->fname, ps->line);
			return -1;
		}
		size_t pc = ps->capsw;
		struct pending_sw *np = realloc(ps->pend, pc * sizeof(*np));
		if (!np) {
			SET_ERR("%s:%u: out of memory", ps->fname, ps->line);
			return -1;
		}
		ps->pend = np;
		struct llmt_topo_switch *sw = &t->switches[t->nswitches];
		snprintf(sw->name, sizeof(sw->name), "%s", swname);
		sw->parent = -1;
		sw->level = nodes ? 0 : -1;
		ps->pend[t->nswitches].children = children ? strdup(children) : NULL;
		ps->pend[t->nswitches].line = ps->line;
		ps->npend = t->nswitches + 1;
		if (children && !ps->pend[t->nswitches].children) {
			SET_ERR("%s:%u: out of memory", ps->fname, ps->line);
			return -1;
		}
		if (nodes && children) {
			SET_ERR("%s:%u: switch %s has both Nodes= and Switches=", ps->fname, ps->line, swname);
			t->nswitches++;
			return -1;
		}
		ps->cur_leaf = (int)t->nswitches++;
	} else if (blname) {
		if (!valid_name(blname)) {
			SET_ERR("%s:%u: bad block name '%.64s'", ps->fname, ps->line, blname);
			return -1;
		}
		if (!nodes) {
			SET_ERR("%s:%u: block %s has no Nodes=", ps->fname, ps->line, blname);
			return -1;
		}
		if (t->nblocks >= LLMT_TOPO_MAX_BLOCKS ||
		    grow((void **)&t->blocks, &ps->capbl, t->nblocks + 1, sizeof(*t->blocks))) {
			SET_ERR("%s:%u: too many blocks", ps->fname, ps->line);
			return -1;
		}
		snprintf(t->blocks[t->nblocks], LLMT_NAME_MAX, "%s", blname);
		ps->cur_block = (int)t->nblocks++;
	} else {
		if (nodes || children) {
			SET_ERR("%s:%u: Nodes=/Switches= without SwitchName= or BlockName=", ps->fname, ps->line);
			return -1;
		}
		return 0;   /* e.g. a lone BlockSizes= line */
	}
	if (nodes) {
		char herr[256];
		if (llmt_hostlist_foreach(nodes, LLMT_MAX_NODES, add_node, ps, herr, sizeof(herr)) < 0) {
			SET_ERR("%s:%u: %s", ps->fname, ps->line, herr[0] ? herr : "too many nodes");
			return -1;
		}
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp(((const struct llmt_topo_node *)a)->name, ((const struct llmt_topo_node *)b)->name);
}

/* Sorted index of switch names for resolving Switches=. */
struct swsort { const char *name; int idx; };
static int cmp_swsort(const void *a, const void *b)
{
	return strcmp(((const struct swsort *)a)->name, ((const struct swsort *)b)->name);
}

struct resolve_ctx {
	struct parser *ps;
	struct swsort *idx;
	int parent;
};

static int resolve_child(const char *name, void *arg)
{
	struct resolve_ctx *c = arg;
	struct parser *ps = c->ps;
	char *err = ps->err;
	size_t errlen = ps->errlen;
	struct swsort key = { name, 0 };
	struct swsort *f = bsearch(&key, c->idx, ps->t->nswitches, sizeof(*c->idx), cmp_swsort);
	if (!f) {
		SET_ERR("%s:%u: switch %s lists unknown switch '%s'", ps->fname, ps->line,
			ps->t->switches[c->parent].name, name);
		return -1;
	}
	if (f->idx == c->parent || ps->t->switches[f->idx].parent >= 0) {
		SET_ERR("%s:%u: switch '%s' has two parents (or is its own)", ps->fname, ps->line, name);
		return -1;
	}
	ps->t->switches[f->idx].parent = c->parent;
	return 0;
}


/* Kahn's order over the parent links; idx is scratch of nswitches
 * entries (its idx fields are reused as a queue). 0, or -1 with err. */
static int levels_and_cycles(struct llmt_topology *t, struct parser *ps, struct swsort *idx)
{
	char *err = ps->err;
	size_t errlen = ps->errlen;
	unsigned n = t->nswitches, head = 0, tail = 0;
	unsigned *pending = calloc(n, sizeof(*pending));
	if (!pending) {
		SET_ERR("%s: out of memory", ps->fname);
		return -1;
	}
	for (unsigned i = 0; i < n; i++)
		if (t->switches[i].parent >= 0)
			pending[t->switches[i].parent]++;
	for (unsigned i = 0; i < n; i++)
		if (pending[i] == 0)
			idx[tail++].idx = (int)i;
	while (head < tail) {
		int c = idx[head++].idx, p = t->switches[c].parent;
		if (p < 0)
			continue;
		if (t->switches[c].level >= 0 && t->switches[p].level < t->switches[c].level + 1)
			t->switches[p].level = t->switches[c].level + 1;
		if (--pending[p] == 0)
			idx[tail++].idx = p;
	}
	int rc = 0;
	for (unsigned i = 0; i < n && tail < n; i++)
		if (pending[i] != 0) {
			SET_ERR("%s: switch '%s' is part of a cycle", ps->fname, t->switches[i].name);
			rc = -1;
			break;
		}
	free(pending);
	return rc;
}

static int finish(struct parser *ps)
{
	struct llmt_topology *t = ps->t;
	char *err = ps->err;
	size_t errlen = ps->errlen;
	struct swsort *idx = NULL;
	int rc = -1;

	/* Resolve switch parents. */
	if (t->nswitches) {
		idx = malloc(t->nswitches * sizeof(*idx));
		if (!idx) {
			SET_ERR("%s: out of memory", ps->fname);
			return -1;
		}
		for (unsigned i = 0; i < t->nswitches; i++) {
			idx[i].name = t->switches[i].name;
			idx[i].idx = (int)i;
		}
		qsort(idx, t->nswitches, sizeof(*idx), cmp_swsort);
		for (unsigned i = 1; i < t->nswitches; i++)
			if (!strcmp(idx[i].name, idx[i - 1].name)) {
				SET_ERR("%s: switch '%s' defined twice", ps->fname, idx[i].name);
				goto out;
			}
		for (unsigned i = 0; i < t->nswitches; i++) {
			struct resolve_ctx c = { ps, idx, (int)i };
			char herr[256];
			if (i >= ps->npend || !ps->pend[i].children)
				continue;
			ps->line = ps->pend[i].line;
			herr[0] = 0;
			if (llmt_hostlist_foreach(ps->pend[i].children, LLMT_TOPO_MAX_SWITCHES,
						  resolve_child, &c, herr, sizeof(herr)) < 0) {
				if (herr[0])
					SET_ERR("%s:%u: %s", ps->fname, ps->line, herr);
				goto out;
			}
		}
		/* Cycles and levels in one linear pass (a switch has one
		 * parent): switches whose children are all done are done, a
		 * leaf's level is 0, each ancestor's the longest way up from a
		 * leaf; a switch never done is on a cycle. */
		if (levels_and_cycles(t, ps, idx) != 0)
			goto out;
	}

	/* Merge memberships into one node table. */
	if (ps->nents)
		qsort(ps->ents, ps->nents, sizeof(*ps->ents), cmp_entry);
	t->nodes = calloc(ps->nents ? ps->nents : 1, sizeof(*t->nodes));
	if (!t->nodes) {
		SET_ERR("%s: out of memory", ps->fname);
		goto out;
	}
	for (size_t i = 0; i < ps->nents;) {
		struct llmt_topo_node *n = &t->nodes[t->nnodes++];
		const struct entry *e = &ps->ents[i];
		snprintf(n->name, sizeof(n->name), "%s", e->name);
		n->leaf = n->spine = n->block = -1;
		for (; i < ps->nents && !strcmp(ps->ents[i].name, n->name); i++) {
			e = &ps->ents[i];
			if (e->leaf >= 0) {
				if (n->leaf >= 0) {
					SET_ERR("%s:%u: node %s is already under switch %s", ps->fname, e->line,
						n->name, t->switches[n->leaf].name);
					goto out;
				}
				n->leaf = e->leaf;
				n->spine = t->switches[e->leaf].parent;
			}
			if (e->block >= 0) {
				if (n->block >= 0) {
					SET_ERR("%s:%u: node %s is already in block %s", ps->fname, e->line,
						n->name, t->blocks[n->block]);
					goto out;
				}
				n->block = e->block;
			}
		}
	}
	qsort(t->nodes, t->nnodes, sizeof(*t->nodes), cmp_node);
	rc = 0;
out:
	free(idx);
	return rc;
}

void llmt_topology_free(struct llmt_topology *t)
{
	if (!t)
		return;
	free(t->nodes);
	free(t->switches);
	free(t->blocks);
	free(t);
}

struct llmt_topology *llmt_topology_empty(void)
{
	return calloc(1, sizeof(struct llmt_topology));
}

int llmt_topology_parse(const char *text, size_t len, const char *name,
			struct llmt_topology **out, char *err, size_t errlen)
{
	struct parser ps = { 0 };
	char *buf, *line, *next;
	int rc = -1;

	*out = NULL;
	if (len > LLMT_TOPO_MAX_BYTES) {
		SET_ERR("%s: larger than %u bytes", name, LLMT_TOPO_MAX_BYTES);
		return -1;
	}
	ps.fname = name;
	ps.err = err;
	ps.errlen = errlen;
	ps.t = llmt_topology_empty();
	buf = malloc(len + 1);
	if (!ps.t || !buf) {
		SET_ERR("%s: out of memory", name);
		free(buf);
		llmt_topology_free(ps.t);
		return -1;
	}
	memcpy(buf, text, len);
	buf[len] = 0;
	if (memchr(buf, 0, len)) {
		SET_ERR("%s: holds a NUL byte", name);
		goto out;
	}
	/* Join continuation lines (trailing backslash) in place. */
	for (char *p = buf; (p = strchr(p, '\\'));) {
		if (p[1] == '\n') {
			p[0] = ' ';
			p[1] = ' ';
		} else {
			p++;
		}
	}
	for (line = buf; line; line = next) {
		ps.line++;
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		if (parse_line(&ps, line))
			goto out;
	}
	if (finish(&ps))
		goto out;
	*out = ps.t;
	ps.t = NULL;
	rc = 0;
out:
	for (unsigned i = 0; i < ps.npend; i++)
		free(ps.pend[i].children);
	free(ps.pend);
	free(ps.ents);
	free(buf);
	llmt_topology_free(ps.t);
	return rc;
}

int llmt_topology_load(const char *path, struct llmt_topology **out,
		       char *err, size_t errlen)
{
	char *buf;
	size_t n = 0;
	int rc;
	struct stat st;

	*out = NULL;
	/* Read by root (slurmstepd): no link followed, a FIFO or device
	 * never blocks the open or the read, the size is bounded. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		SET_ERR("%s: %s", path, errno == ELOOP ? "is a symbolic link (refused)" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		SET_ERR("%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_size > (off_t)LLMT_TOPO_MAX_BYTES) {
		SET_ERR("%s: larger than %u bytes", path, LLMT_TOPO_MAX_BYTES);
		close(fd);
		return -1;
	}
	buf = malloc(LLMT_TOPO_MAX_BYTES + 1);
	if (!buf) {
		close(fd);
		SET_ERR("%s: out of memory", path);
		return -1;
	}
	while (n <= LLMT_TOPO_MAX_BYTES) {
		ssize_t r = read(fd, buf + n, LLMT_TOPO_MAX_BYTES + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			SET_ERR("%s: read error: %s", path, strerror(errno));
			close(fd);
			free(buf);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n > LLMT_TOPO_MAX_BYTES) {
		SET_ERR("%s: larger than %u bytes", path, LLMT_TOPO_MAX_BYTES);
		free(buf);
		return -1;
	}
	rc = llmt_topology_parse(buf, n, path, out, err, errlen);
	free(buf);
	return rc;
}

const struct llmt_topo_node *llmt_topology_find(const struct llmt_topology *t,
						const char *host)
{
	struct llmt_topo_node key;
	if (!t || !t->nnodes || strlen(host) >= sizeof(key.name))
		return NULL;
	snprintf(key.name, sizeof(key.name), "%s", host);
	return bsearch(&key, t->nodes, t->nnodes, sizeof(*t->nodes), cmp_node);
}
