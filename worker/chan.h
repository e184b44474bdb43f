/* chan.h - the worker's side of job channels (common/shmchan.h): one thread per channel. */
#ifndef A2A_WORKER_CHAN_H
#define A2A_WORKER_CHAN_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "xfer.h"

#define CHAN_MAX 256        /* channels per worker */
#define CHAN_MAX_PER_JOB 64 /* channels per job process */
#define CHAN_POLL_MS 500    /* an idle channel thread looks for its job and for stop this often */

typedef struct chan_set chan_set;

/* chan_set_alloc makes an empty set of channels that run calls on e (borrowed). */
a2a_status chan_set_alloc(chan_set **out, engine *e);

/*
 * chan_open maps the channel that the job of session sess handed over (fd,
 * our descriptor of its memfd, which the caller keeps; len bytes) and starts
 * its thread, whose calls run as the session's rank on the session's memory.
 * The caller has checked that the session holds a rank of this worker.
 */
a2a_status chan_open(chan_set *cs, xfer_sess *sess, int fd, uint64_t len, char *err, size_t errlen);

/* chan_close_sess closes every channel of sess (its job is gone) and waits for their threads
 * to end: at once when idle, else once their call is over. */
void chan_close_sess(chan_set *cs, xfer_sess *sess);

/* chan_set_stop makes every channel thread close its channel and waits for them all to end. */
void chan_set_stop(chan_set *cs);

/* chan_set_free stops cs and frees it; NULL is fine. */
void chan_set_free(chan_set *cs);

#endif
