/* http: a minimal HTTP/1.0 server for one document (the job's Prometheus
 * text on /metrics): one thread serves up to 32 connections at once on a
 * loopback (or given) address, answers GET /metrics with the newest text
 * and anything else with 404. Each connection has a deadline for its
 * request and one for its answer, so a slow, silent or non-reading client
 * cannot stall a scrape, the server or its caller. */
#ifndef LLMT_WRAP_HTTP_H
#define LLMT_WRAP_HTTP_H

#include <stddef.h>

struct wr_http;

/* Binds host:port (port 0: any free one; *bound gets it). NULL with a
 * message naming the address on error. */
struct wr_http *wr_http_start(const char *host, int port, int *bound);
/* Replaces the document (copied; answers under way keep theirs). */
void wr_http_set(struct wr_http *h, const char *body, size_t len);
void wr_http_stop(struct wr_http *h);

#endif
