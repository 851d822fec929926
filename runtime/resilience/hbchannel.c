/* hbchannel.c: a rank's end of the node heartbeat channel: the shared
 * segment in /dev/shm (shm_open) and the node file (tmp + rename). */
#define _GNU_SOURCE
#include "hbchannel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "llmt/heartbeat.h"

#define BUF_LEN ((size_t)LLMT_HBN_SLOTS * (LLMT_HBN_TEXT + 16) + 128)

int llmt_hbc_wanted(const char *value, char *err, size_t errlen)
{
	if (!value || !*value || !strcmp(value, "node"))
		return 1;
	if (!strcmp(value, "rank"))
		return 0;
	snprintf(err, errlen, "LLM_TRAIN_HEARTBEAT_CHANNEL='%s': not node or rank", value);
	return -1;
}

/* a short stable tag of the heartbeat directory (FNV-1a) */
static unsigned dir_tag(const char *dir)
{
	unsigned h = 2166136261u;

	for (; *dir; dir++)
		h = (h ^ (unsigned char)*dir) * 16777619u;
	return h;
}

static void pause_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* maps the segment; the creator initialises it, the others wait for it;
 * -2 when it is someone else's */
static int map_segment(struct llmt_hbc *c, char *err, size_t errlen)
{
	int fd = shm_open(c->shm, O_RDWR | O_CREAT | O_EXCL, 0600);
	struct stat st = { 0 };

	c->created = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = shm_open(c->shm, O_RDWR, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "heartbeat segment %s: %s", c->shm, strerror(errno));
		return -1;
	}
	/* /dev/shm is shared by every user of the node and the name can be
	 * guessed: a segment someone else made (or opened to others) would
	 * let them write this job's heartbeats */
	if (!c->created && (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 077))) {
		snprintf(err, errlen, "heartbeat segment %s: not this user's own (uid %u, mode %04o): refused", c->shm,
			(unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -2;
	}
	if (c->created && ftruncate(fd, sizeof(*c->g))) {
		snprintf(err, errlen, "heartbeat segment %s: %s", c->shm, strerror(errno));
		close(fd);
		shm_unlink(c->shm);
		return -1;
	}
	for (int i = 0; !c->created && i < 1000 && (fstat(fd, &st) || (size_t)st.st_size < sizeof(*c->g)); i++)
		pause_ms(1);
	c->g = mmap(NULL, sizeof(*c->g), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (c->g == MAP_FAILED) {
		c->g = NULL;
		snprintf(err, errlen, "heartbeat segment %s: %s", c->shm, strerror(errno));
		return -1;
	}
	if (c->created)
		c->g->magic = LLMT_HBN_MAGIC;
	for (int i = 0; i < 1000 && __atomic_load_n(&c->g->magic, __ATOMIC_ACQUIRE) != LLMT_HBN_MAGIC; i++)
		pause_ms(1);
	if (c->g->magic != LLMT_HBN_MAGIC) {
		snprintf(err, errlen, "heartbeat segment %s: not a heartbeat segment", c->shm);
		munmap(c->g, sizeof(*c->g));
		c->g = NULL;
		return -1;
	}
	return 0;
}

int llmt_hbc_open(struct llmt_hbc *c, const char *dir, const char *host, const char *key, int slot, int rank,
	char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->slot = slot;
	c->rank = rank;
	snprintf(c->host, sizeof(c->host), "%s", host);
	snprintf(c->shm, sizeof(c->shm), "/llmt-hb-%u-%.60s-%.63s-%08x", (unsigned)getuid(), key, host, dir_tag(dir));
	snprintf(c->path, sizeof(c->path), LLMT_HB_NODE_PATH_FMT, dir, host);
	snprintf(c->tmp, sizeof(c->tmp), "%s.tmp.%d", c->path, rank);
	int rc = map_segment(c, err, errlen);
	if (rc)
		return rc;
	atomic_fetch_add(&c->g->attached, 1);
	return 0;
}

void llmt_hbc_write(struct llmt_hbc *c, long long t_ns, const char *text)
{
	llmt_hbn_slot_write(c->g, c->slot, c->rank, t_ns, text);
}

int llmt_hbc_flush(struct llmt_hbc *c, long long now_ns, double min_s, double force_s, int force)
{
	uint64_t gen = 0;
	char *buf;
	long n;
	FILE *f;
	int ok;

	if (!c->g || !llmt_hbn_claim(c->g, now_ns, min_s, force_s, force, &gen))
		return 0;
	if (!gen)
		gen = atomic_load(&c->g->gen);
	if (!(buf = malloc(BUF_LEN)))
		return -1;
	n = llmt_hbn_compose(c->g, c->host, now_ns, buf, BUF_LEN);
	f = n < 0 ? NULL : fopen(c->tmp, "w");
	ok = f && fwrite(buf, 1, (size_t)n, f) == (size_t)n;
	free(buf);
	if (f && fclose(f))
		ok = 0;
	if (!ok || rename(c->tmp, c->path)) {
		if (f)
			unlink(c->tmp);
		return -1;
	}
	llmt_hbn_flushed(c->g, gen);
	c->flushes++;
	return 1;
}

void llmt_hbc_close(struct llmt_hbc *c, long long now_ns)
{
	if (!c->g)
		return;
	if (atomic_fetch_sub(&c->g->attached, 1) == 1) {
		llmt_hbc_flush(c, now_ns, 0, 0, 1);
		shm_unlink(c->shm);
	}
	munmap(c->g, sizeof(*c->g));
	c->g = NULL;
}
