/* fuzz_driver.c: runs a fuzz target without libFuzzer, as a regression
 * test: every file named on the command line, or every file in a named
 * directory, is fed once to LLVMFuzzerTestOneInput. A crash or sanitizer
 * report fails the test; exit 0 after all inputs, printing the count. */
#include "fuzz_util.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "fuzz_driver: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fuzz_driver: %s: short read\n", path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned count = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st)) {
			fprintf(stderr, "fuzz_driver: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]))
				return 1;
			count++;
			continue;
		}
		struct dirent **ents;
		int n = scandir(argv[i], &ents, NULL, alphasort);
		if (n < 0) {
			fprintf(stderr, "fuzz_driver: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		for (int k = 0; k < n; k++) {
			char p[4096];
			snprintf(p, sizeof p, "%s/%s", argv[i], ents[k]->d_name);
			if (ents[k]->d_name[0] != '.' && !stat(p, &st) && S_ISREG(st.st_mode)) {
				if (run_file(p))
					return 1;
				count++;
			}
			free(ents[k]);
		}
		free(ents);
	}
	printf("fuzz_driver: %u inputs ran clean\n", count);
	return count ? 0 : 1;
}
