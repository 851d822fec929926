/* store_tool.c: command-line front of runtime/comm/store.c for the tests:
 *   store_tool serve PORTFILE JOB [IDLE_MS]   listen on 127.0.0.1, write the port
 *   store_tool set PORT JOB KEY VALUE [--save-cred F | --cred F]
 *   store_tool get PORT JOB KEY
 * The munge socket comes from $LLMT_MUNGE_SOCKET (unset: munged's default).
 * Exit 0 ok, 1 refused or failed (one line on stderr), 64 usage. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/store.h"

static volatile int stop;
static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *sock = getenv("LLMT_MUNGE_SOCKET");
	char err[512];

	if (argc >= 4 && !strcmp(argv[1], "serve")) {
		int port = 0;
		llmt_store *s = llmt_store_listen("127.0.0.1", &port, argv[3], sock, err, sizeof err);
		if (!s) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		FILE *f = fopen(argv[2], "w");
		if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f)) {
			fprintf(stderr, "store_tool: %s: cannot write\n", argv[2]);
			return 1;
		}
		signal(SIGTERM, on_term);
		signal(SIGINT, on_term);
		int rc = llmt_store_serve(s, argc > 4 ? atoi(argv[4]) : 0, &stop, err, sizeof err);
		fprintf(stderr, "store_tool: served, %u refused\n", llmt_store_refused(s));
		llmt_store_free(s);
		return rc ? 1 : 0;
	}
	if (argc >= 5 && (!strcmp(argv[1], "set") || !strcmp(argv[1], "get"))) {
		int port = atoi(argv[2]);
		const char *save = NULL, *use = NULL;
		static char cred[LLMT_STORE_CRED_MAX + 1];
		int set = !strcmp(argv[1], "set");
		if (set && argc == 8 && !strcmp(argv[6], "--save-cred"))
			save = argv[7];
		else if (set && argc == 8 && !strcmp(argv[6], "--cred"))
			use = argv[7];
		else if (argc != (set ? 6 : 5))
			goto usage;
		if (use) {
			FILE *f = fopen(use, "r");
			if (!f || !fgets(cred, sizeof cred, f)) {
				fprintf(stderr, "store_tool: %s: cannot read\n", use);
				return 1;
			}
			fclose(f);
			cred[strcspn(cred, "\n")] = 0;
		}
		int fd = llmt_store_connect("127.0.0.1", port, argv[3], sock, 10000, use ? cred : NULL,
					    cred, sizeof cred, err, sizeof err);
		if (fd < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		if (save) {
			FILE *f = fopen(save, "w");
			if (!f || fprintf(f, "%s\n", cred) < 0 || fclose(f))
				return 1;
		}
		if (set) {
			if (llmt_store_set(fd, argv[4], argv[5], strlen(argv[5]), err, sizeof err)) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
		} else {
			char buf[LLMT_STORE_VALUE_MAX + 1];
			size_t n;
			if (llmt_store_get(fd, argv[4], buf, sizeof buf - 1, &n, 10000, err, sizeof err)) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			buf[n] = 0;
			printf("%s\n", buf);
		}
		return 0;
	}
usage:
	fprintf(stderr, "usage: store_tool serve PORTFILE JOB [IDLE_MS] | set PORT JOB KEY VALUE "
			"[--save-cred F|--cred F] | get PORT JOB KEY\n");
	return 64;
}
