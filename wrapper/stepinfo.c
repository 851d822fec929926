/* stepinfo: what the watcher learns about nodes after a step: srun's
 * task-exit lines (which node, which signal or code), sinfo's node states
 * and the runtime's sdc.json suspects. Declared in watch.h. */
#define _GNU_SOURCE
#include "watch.h"
#include "rdfile.h"
#include "slurm.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int signal_by_name(const char *what)
{
	if (strncmp(what, "Out Of Memory", 13) == 0)
		return SIGKILL;
	for (int s = 1; s < NSIG; s++) {
		const char *n = strsignal(s);
		size_t len = n ? strlen(n) : 0;
		if (len && strncmp(what, n, len) == 0 && (what[len] == '\0' || what[len] == ' '))
			return s;
	}
	return 0;
}

int wr_srun_task_line(const char *line, char *node, size_t nodelen, int *sig, int *code)
{
	*code = 0;
	const char *p = strstr(line, "srun: error: ");
	if (!p)
		return 0;
	p += 13;
	const char *colon = strchr(p, ':');
	if (!colon || colon == p || (size_t)(colon - p) >= nodelen)
		return 0;
	const char *q = colon + 1;
	while (*q == ' ')
		q++;
	if (strncmp(q, "tasks ", 6) == 0)
		q += 6;
	else if (strncmp(q, "task ", 5) == 0)
		q += 5;
	else
		return 0;
	if (!isdigit((unsigned char)*q))
		return 0;
	while (isdigit((unsigned char)*q) || *q == ',' || *q == '-')
		q++;
	if (*q != ':')
		return 0;
	q++;
	while (*q == ' ')
		q++;
	memcpy(node, p, (size_t)(colon - p));
	node[colon - p] = '\0';
	if (strncmp(q, "Exited with exit code ", 22) == 0) {
		*sig = 0;
		*code = atoi(q + 22);
		return 1;
	}
	*sig = signal_by_name(q);
	return *sig ? 1 : 0;
}

void wr_parse_node_states(char *text, struct wr_nodes *bad)
{
	for (char *save = NULL, *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
		char node[WR_NODE_LEN], state[64];
		if (sscanf(ln, "%63s %63s", node, state) != 2)
			continue;
		for (char *c = state; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		size_t n = strlen(state);
		if (strncmp(state, "down", 4) == 0 || strncmp(state, "drain", 5) == 0 ||
		    strncmp(state, "fail", 4) == 0 || strstr(state, "not_responding") ||
		    (n > 0 && (state[n - 1] == '*' || state[n - 1] == '~')))
			wr_nodes_add(bad, node);
	}
}

int wr_node_states(const char *sinfo, const char *nodelist, struct wr_nodes *bad)
{
	static char out[1 << 18];
	char err[4096];
	char *argv[] = { (char *)sinfo, "-h", "-N", "-o", "%N %T", "-n", (char *)nodelist, NULL };
	memset(bad, 0, sizeof *bad);
	if (!nodelist || !*nodelist)
		return 0;
	int rc = wr_slurm_query(argv, out, sizeof out, err, sizeof err, "node states unknown: no node excluded on Slurm's word");
	if (rc == WR_RUN_TIMEDOUT)
		return -1;
	if (rc != 0) {
		fprintf(stderr, "llm-train-wrap: sinfo failed (exit %d): %s", rc, err);
		return -1;
	}
	wr_parse_node_states(out, bad);
	return 0;
}

int wr_sdc_suspects(const char *path, struct wr_nodes *out, long *step)
{
	json_error_t err;
	json_t *o = wr_json_load_file(path, &err);
	memset(out, 0, sizeof *out);
	if (!o) {
		fprintf(stderr, "llm-train-wrap: %s: %s\n", path, err.text);
		return -1;
	}
	if (step)
		*step = json_is_integer(json_object_get(o, "step")) ? (long)json_integer_value(json_object_get(o, "step")) : -1;
	size_t i, j;
	json_t *s, *h;
	json_array_foreach(json_object_get(o, "suspects"), i, s)
		json_array_foreach(json_object_get(s, "hosts"), j, h)
			wr_nodes_add(out, json_string_value(h));
	json_decref(o);
	return 0;
}
