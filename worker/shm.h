/* shm.h - memory shared by jobs (a2a_buffer_alloc), for the worker API. */
#ifndef A2A_WORKER_SHM_H
#define A2A_WORKER_SHM_H

#include <sys/types.h>

#include "engine.h"

/*
 * shm_open_memfd opens descriptor fd of process pid, a memfd the job shares
 * with us, into *out: it must hold len (> 0) bytes and be sealed against
 * shrinking, or the job could truncate it under our mapping and our next touch
 * of the lost pages would be a SIGBUS that kills the worker.
 */
a2a_status shm_open_memfd(pid_t pid, int64_t fd, uint64_t len, int *out, char *err, size_t errlen);

/* shm_map maps fd of process pid (len bytes, at addr in the job) for transfers. */
a2a_status shm_map(engine *e, pid_t pid, int fd, uint64_t addr, uint64_t len, char *err,
                   size_t errlen);

/* shm_unmap unmaps the buffer of pid at addr, once no transfer uses it. */
a2a_status shm_unmap(engine *e, pid_t pid, uint64_t addr, char *err, size_t errlen);

#endif
