/* ports.h: the step's rendezvous port (MASTER_PORT). The last of the
 * ports Slurm reserved for the step (SLURM_STEP_RESV_PORTS, given when
 * slurm.conf has MpiParams=ports=LO-HI), read strictly; else a mixing hash
 * of (job id, step id) over the policy's rendezvous.fallback_ports. Also
 * the port list parser the policy uses for that range. Pure. */
#ifndef LLMT_PORTS_H
#define LLMT_PORTS_H

#include <stddef.h>
#include <stdint.h>

#define LLMT_PORT_MIN          1024u   /* lowest port a task (not root) can bind */
#define LLMT_PORT_MAX          65535u
#define LLMT_FALLBACK_PORT_LO  20000u  /* built-in rendezvous.fallback_ports */
#define LLMT_FALLBACK_PORT_HI  29999u
#define LLMT_RESV_PORTS_MAX    1024    /* longest SLURM_STEP_RESV_PORTS read (bytes) */

/* A port list as Slurm writes it: "12000", "12000-12003",
 * "12000,12005-12006" (ascending, no overlap, no spaces). */
struct llmt_ports {
	unsigned first, last;   /* lowest and highest port */
	unsigned count;         /* ports in the list */
	unsigned items;         /* comma-separated items */
};

/* Parse s strictly (at most LLMT_RESV_PORTS_MAX bytes, every port in
 * LLMT_PORT_MIN-LLMT_PORT_MAX, decimal without leading zeros). 0, or -1
 * with err quoting (printable bytes only) the value and saying why. */
int llmt_ports_parse(const char *s, struct llmt_ports *out, char *err, size_t errlen);

/* A port in lo-hi (lo <= hi) from a 64-bit mix of job and step id: ids
 * in regular patterns (arrays, ids a fixed distance apart) land on
 * unrelated ports. */
unsigned llmt_port_hash(uint32_t job_id, uint32_t step_id, unsigned lo, unsigned hi);

/* MASTER_PORT. resv: SLURM_STEP_RESV_PORTS as the step has it (NULL =
 * unset): its last port (the first may be the PMI control port of
 * Slurm's mpi/cray_shasta, and MPI libraries take one port per local
 * rank from the front; Slurm reserves tasks-per-node + 1 by default).
 * Unset or malformed: llmt_port_hash over lo-hi; for a malformed value
 * note says so in one line (else note is ""). */
unsigned llmt_master_port(const char *resv, uint32_t job_id, uint32_t step_id, unsigned lo,
			  unsigned hi, char *note, size_t notelen);

#endif
