/* store.h: a small TCP key-value rendezvous store (e.g. rank 0 hands out
 * the NCCL unique id at MASTER_ADDR:MASTER_PORT) that only processes of
 * the same user and job may use: every connection must present a munge
 * credential (libmunge) whose payload binds the job id and a nonce the
 * server drew for that connection; the server checks the credential's
 * uid, the payload and munge's replay detection, and refuses with one log
 * line otherwise. Wire format: frames of a 4-byte big-endian length then
 * bytes. Server: nonce -> client: credential -> server: "OK" or "ERR why";
 * then requests "S<key>\0<value>" (reply "OK") and "G<key>" (reply
 * "V<value>" once the key is set, or "ERR ..." on shutdown). */
#ifndef LLMT_STORE_H
#define LLMT_STORE_H
#include <stddef.h>

#define LLMT_STORE_KEY_MAX    256          /* bytes of a key */
#define LLMT_STORE_VALUE_MAX  (64u << 10)  /* bytes of a value */
#define LLMT_STORE_MAX_KEYS   4096
#define LLMT_STORE_MAX_CONNS  1024
#define LLMT_STORE_CRED_MAX   4096         /* bytes of a munge credential */
#define LLMT_STORE_AUTH_MS    10000        /* unauthenticated connection lifetime */

typedef struct llmt_store llmt_store;

/* Listen on bind_addr (NULL: any address) and *port (0: a free port; the
 * bound port is written back). job: the job id every credential must name
 * (SLURM_JOB_ID; "" outside Slurm). munge_socket: NULL for munged's
 * default socket. Clients must run as the calling process's uid. NULL
 * with err on failure. */
llmt_store *llmt_store_listen(const char *bind_addr, int *port, const char *job,
			      const char *munge_socket, char *err, size_t errlen);
/* Serve until *stop becomes non-zero (checked every 100 ms) or, when
 * idle_ms > 0, nothing happened for idle_ms. Refusals are logged to
 * stderr, one line each. 0, or -1 with err on a listening-socket error. */
int llmt_store_serve(llmt_store *s, int idle_ms, volatile int *stop, char *err, size_t errlen);
/* Connections refused so far (for tests and logs). */
unsigned llmt_store_refused(const llmt_store *s);
void llmt_store_free(llmt_store *s);

/* Client. cred_in: send this credential text instead of encoding one (for
 * replay tests; NULL normally); cred_out: a copy of the credential sent
 * (may be NULL). Returns a connected, authenticated fd, or -1 with err
 * ("refused: <server's reason>" when the server said no). */
int llmt_store_connect(const char *host, int port, const char *job, const char *munge_socket,
		       int timeout_ms, const char *cred_in, char *cred_out, size_t cred_out_len,
		       char *err, size_t errlen);
int llmt_store_set(int fd, const char *key, const void *val, size_t len, char *err, size_t errlen);
/* Wait up to timeout_ms for key; copies at most cap bytes, *len = value size.
 * 0, or -1 with err (timeout, refused, value larger than cap). */
int llmt_store_get(int fd, const char *key, void *buf, size_t cap, size_t *len, int timeout_ms,
		   char *err, size_t errlen);
#endif
