/*
 * xfer.h - a job's memory, as the worker reaches it: only through the
 * descriptors the job handed over on its local session (worker/local.c).
 *
 * A session is one job's connection to the worker's Unix socket. Every
 * mapping of job memory belongs to exactly one session and is found by that
 * session and an address in the job's own view (where the job mapped the
 * same memfd): what the job says can only ever point into memory it gave us.
 * Nothing is keyed by a pid, and nothing reads another process's memory.
 */
#ifndef A2A_WORKER_XFER_H
#define A2A_WORKER_XFER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct eng_map;

/* One job's local session: created by local.c when a job connects, freed once it closed and
 * nothing uses it. */
typedef struct xfer_sess {
    pthread_mutex_t mtx;  /* maps, nmaps, the maps' refs, closed */
    pthread_cond_t cv;    /* a map's refs dropped */
    struct eng_map *maps; /* the memory the job handed over */
    size_t nmaps;
    int closed;         /* the connection closed: the job is gone, serve it no more */
    uint64_t id;        /* 1, 2, ... in this worker, for logs; never reused */
    int64_t world_rank; /* the rank it claimed (Attach), or -1 */
    pid_t pid;          /* SO_PEERCRED: the kernel's word, in this worker's PID namespace */
    uid_t uid;
    gid_t gid;
} xfer_sess;

/* xfer_read copies len bytes at addr in the job's view of s's memory into buf: 0, or EFAULT
 * when [addr, addr + len) is not inside one buffer the job handed over. */
int xfer_read(xfer_sess *s, uint64_t addr, void *buf, size_t len);

/* xfer_write copies len bytes of buf to addr in the job's view of s's memory: 0 or EFAULT. */
int xfer_write(xfer_sess *s, uint64_t addr, const void *buf, size_t len);

/* xfer_probe reports whether s is a session whose job is still connected. */
int xfer_probe(xfer_sess *s);

#endif
