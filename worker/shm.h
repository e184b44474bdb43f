/* shm.h - memory a job shares with its worker: memfds handed over on its session (xfer.h). */
#ifndef A2A_WORKER_SHM_H
#define A2A_WORKER_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "a2a.h"
#include "xfer.h"

struct eng_map;

#define SHM_MAX_PER_JOB 1024 /* buffers one session may hand over */

/*
 * shm_check_memfd checks a descriptor a job handed over (what names it in
 * messages): a memfd, exactly len (> 0) bytes long, sealed against shrinking
 * (F_SEAL_SHRINK), or the job could truncate it under our mapping and our
 * next touch of the lost pages would be a SIGBUS that kills the worker.
 */
a2a_status shm_check_memfd(int fd, uint64_t len, const char *what, char *err, size_t errlen);

/* shm_map_fd checks fd and maps its len bytes (MAP_SHARED; populate: MAP_POPULATE too, for
 * small mappings used at once; a large buffer's pages that the job never touched would be
 * allocated, and zeroed, for nothing) into *out. */
a2a_status shm_map_fd(int fd, uint64_t len, const char *what, int populate, void **out, char *err,
                      size_t errlen);

/* shm_map maps fd (the caller keeps it) as s's buffer at addr in the job's view, len bytes. */
a2a_status shm_map(xfer_sess *s, int fd, uint64_t addr, uint64_t len, char *err, size_t errlen);

/* shm_unmap unmaps s's buffer at addr, once no transfer uses it. */
a2a_status shm_unmap(xfer_sess *s, uint64_t addr, char *err, size_t errlen);

/* shm_unmap_all unmaps every buffer of s (closed), waiting for the transfers that use them. */
void shm_unmap_all(xfer_sess *s);

/* shm_find returns where [addr, addr + len) of s's memory is mapped here, taking a reference
 * in *m, or NULL when it lies in no buffer of s. Takes s->mtx only. */
uint8_t *shm_find(xfer_sess *s, uint64_t addr, uint64_t len, struct eng_map **m);

/* shm_release drops the reference shm_find took; NULL is fine. */
void shm_release(struct eng_map *m);

#endif
