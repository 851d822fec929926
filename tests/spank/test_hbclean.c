/* test_hbclean.c: the plugin's removal of a step's leftover node heartbeat
 * segments (spank/hbclean.c): exactly the files named for the step's
 * user, job and step, not those of another step, job or user whose names
 * share a prefix. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "hbclean.h"

static const char *names[] = {
	"llmt-hb-1000-12.3-node1-0badcafe", "llmt-hb-1000-12.3-node2-0badcafe",   /* the step's */
	"llmt-hb-1000-12.30-node1-0badcafe", "llmt-hb-1000-123.3-node1-0badcafe",
	"llmt-hb-100-12.3-node1-0badcafe", "llmt-hb-10001-12.3-node1-0badcafe", "other",
};

static void test_clean(void **st)
{
	char dir[] = "/tmp/llmt-hbclean.XXXXXX", p[256];
	size_t n = sizeof(names) / sizeof(names[0]);
	(void)st;

	assert_non_null(mkdtemp(dir));
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		fclose(f);
	}
	assert_int_equal(llmt_hb_clean_step(dir, 1000, 12, 3), 2);
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		assert_int_equal(access(p, F_OK), i < 2 ? -1 : 0);
		if (i >= 2)
			unlink(p);
	}
	assert_int_equal(llmt_hb_clean_step(dir, 1000, 12, 3), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(llmt_hb_clean_step(dir, 1000, 12, 3), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_clean) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
