/*
 * chan.c - job channels, the worker's side: a2a_all_to_all_v without an RPC.
 *
 * A job opens a channel with OpenChannel on its local session (local.c): a
 * memfd of SHMCHAN_SIZE bytes, sealed against shrinking, handed over with
 * SCM_RIGHTS, that this worker maps. Its layout (common/shmchan.h):
 *
 *   0                   u32 state (futex word: IDLE 0, REQUEST 1, REPLY 2,
 *                       CLOSED 3), u32 version, u64 magic "A2ACHAN1", u64 size
 *                       request: u64 seq, char group[128] (NUL-terminated),
 *                       i64 dtype, i64 timeout_ms, u64 send_addr,
 *                       i64 send_len, u64 recv_addr, i64 recv_len, i64 n,
 *                       i64 self_copied (0, or 1 + the rank whose own slice the job copied)
 *                       reply: u64 reply_seq, i32 status, u32 bell (the
 *                       job's doorbell), i64 reply_next, char message[1024]
 *   SHMCHAN_COUNTS_OFF  i64 counts[4n]: send_counts, send_displs,
 *                       recv_counts, recv_displs (n <= 1024)
 *
 * One thread per channel sleeps on the doorbell, which the job rings with
 * each request (FUTEX_WAIT, shared, at most CHAN_POLL_MS at a time, then
 * checks that the job's session is still open and that the worker is not
 * stopping; a session that closes rings its channels at once). The job sleeps
 * on the state word: neither side's wake-up wakes the other's sleeper, and a
 * call answered early (engine_done) lets this thread sleep through the answer
 * until the job's next request. On REQUEST it copies the request into
 * private memory, checks it (a bad one gets INVALID_ARGUMENT and the channel
 * stays usable), runs engine_alltoallv exactly as the AllToAllV method does
 * with the job id of OpenChannel, writes status and message, moves REQUEST
 * -> REPLY and wakes the job. When the job has gone, closed the channel, or
 * the worker stops, the thread sets CLOSED, unmaps and ends.
 */
#include "chan.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/args.h"
#include "common/log.h"
#include "common/shmchan.h"
#include "common/status.h"
#include "shm.h"
#include "xfer.h"

typedef struct chan chan;

struct chan {
    chan *next;
    chan_set *cs;
    wire_job_id job; /* the session's rank and the session itself: every call runs as them */
    uint8_t *mem;    /* the mapping */
    size_t len;
    pthread_t thread;
    int64_t *counts; /* private copy of a request's counts: 4 * SHMCHAN_MAX_N */
    char msg[SHMCHAN_MSG_MAX];
};

struct chan_set {
    engine *e;
    pthread_mutex_t mtx; /* everything below */
    pthread_cond_t cv;   /* a thread ended */
    chan *live;          /* threads running */
    chan *done;          /* threads that ended, to join */
    size_t nlive;
    int stopping; /* read by the threads without mtx: atomic */
};

static int
chan_stopping(chan_set *cs)
{
    return __atomic_load_n(&cs->stopping, __ATOMIC_ACQUIRE);
}

/* A reply on its way: from chan_serve, or early from the engine's completing thread. */
typedef struct {
    chan *c;
    uint64_t seq;
    uint32_t state; /* the request's state word */
    int closed;     /* the job had closed the channel */
    engine_done *done;
    const wire_a2av *a; /* the request, once decoded; discover: it discovers its counts */
    int discover;
} chan_reply;

/* chan_answer writes the reply, moves the state to REPLY and wakes the job. */
static void
chan_answer(chan_reply *r, a2a_status st, const char *msg, int64_t next)
{
    uint32_t seen;
    if (st == A2A_OK && r->discover) /* the counts it discovered, before the reply */
        shmchan_counts_write(r->c->mem, r->c->len, r->a->n, r->a->counts + 2 * r->a->n);
    shmchan_reply_write(r->c->mem, r->seq, st, msg, next);
    if (!shmchan_cas(r->c->mem, r->state, SHMCHAN_REPLY, &seen) && seen == SHMCHAN_CLOSED) {
        r->closed = 1;
        return;
    }
    shmchan_wake(r->c->mem);
}

static void
chan_answer_early(void *arg)
{
    chan_reply *r = arg;
    chan_answer(r, A2A_OK, "", r->done->next);
}

/* chan_serve answers the request (or garbage) in c; 0, or -1 when the job closed the channel. */
static int
chan_serve(chan *c, uint32_t state)
{
    wire_a2av a;
    chan_reply r = {.c = c, .state = state};
    engine_done done = {.fn = chan_answer_early, .arg = &r, .bell = shmchan_bell_word(c->mem)};
    int64_t next = -1;
    a2a_status st;

    r.done = &done;
    c->msg[0] = '\0';
    if (shmchan_req_decode(&a, &r.seq, c->counts, SHMCHAN_MAX_N, c->mem, c->len, c->msg,
                           sizeof(c->msg)) != 0) {
        st = A2A_ERR_INVALID_ARGUMENT;
    } else {
        a.job = c->job;
        r.a = &a;
        r.discover = args_discover(a.n, a.counts);
        st = engine_alltoallv_done(c->cs->e, &a, &done, &next, c->msg, sizeof(c->msg));
        if (st == A2A_OK)
            c->msg[0] = '\0';
    }
    if (!done.called) /* else the job has its answer (and may have sent the next request) */
        chan_answer(&r, st, c->msg, next);
    return r.closed ? -1 : 0;
}

static void
chan_reap(chan_set *cs)
{
    while (cs->done != NULL) {
        chan *c = cs->done;
        cs->done = c->next;
        pthread_join(c->thread, NULL);
        free(c->counts);
        free(c);
    }
}

static void *
chan_main(void *arg)
{
    chan *c = arg;
    chan_set *cs = c->cs;
    uint32_t s;

    for (;;) {
        uint32_t b = shmchan_bell(c->mem); /* before the state: a ring after it is seen */
        s = shmchan_state(c->mem);
        if (s == SHMCHAN_CLOSED)
            break;
        if (s != SHMCHAN_IDLE && s != SHMCHAN_REPLY) { /* a request, or garbage: answer it */
            if (chan_serve(c, s) != 0)
                break;
            continue;
        }
        if (chan_stopping(cs))
            break;
        shmchan_bell_wait(c->mem, b, CHAN_POLL_MS);
        if (shmchan_state(c->mem) == s && !xfer_probe(c->job.sess)) {
            log_debug("channel of session %llu: the job is gone",
                      (unsigned long long)c->job.sess->id);
            break;
        }
    }
    shmchan_close(c->mem); /* a request that came meanwhile was not started: the job retries */
    pthread_mutex_lock(&cs->mtx);
    munmap(c->mem, c->len); /* under mtx: chan_set_stop wakes only mapped channels */
    c->mem = NULL;
    for (chan **pp = &cs->live; *pp != NULL; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    cs->nlive--;
    c->next = cs->done;
    cs->done = c;
    pthread_cond_broadcast(&cs->cv);
    pthread_mutex_unlock(&cs->mtx);
    return NULL;
}

a2a_status
chan_set_alloc(chan_set **out, engine *e)
{
    chan_set *cs;
    *out = NULL;
    if ((cs = calloc(1, sizeof(*cs))) == NULL)
        return A2A_ERR_RESOURCE_EXHAUSTED;
    cs->e = e;
    pthread_mutex_init(&cs->mtx, NULL);
    pthread_cond_init(&cs->cv, NULL);
    *out = cs;
    return A2A_OK;
}

/* chan_map checks and maps the job's memfd into *mem. */
static a2a_status
chan_map(uint8_t **mem, int fd, uint64_t len, char *err, size_t errlen)
{
    a2a_status st;
    void *p;

    *mem = NULL;
    if ((st = shm_map_fd(fd, len, "channel", 1, &p, err, errlen)) != A2A_OK)
        return st;
    if (shmchan_check(p, (size_t)len, err, errlen) != 0) {
        munmap(p, (size_t)len);
        return A2A_ERR_INVALID_ARGUMENT;
    }
    *mem = p;
    return A2A_OK;
}

/* chan_admit checks the caps and adds c to the live list; under cs->mtx. */
static a2a_status
chan_admit(chan_set *cs, chan *c, char *err, size_t errlen)
{
    size_t mine = 0;
    if (cs->stopping)
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "worker %s is stopping",
                           engine_name(cs->e));
    for (chan *x = cs->live; x != NULL; x = x->next)
        mine += x->job.sess == c->job.sess;
    if (cs->nlive >= CHAN_MAX || mine >= CHAN_MAX_PER_JOB)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED,
                           "%s has %zu channels open already (limit %d)",
                           cs->nlive >= CHAN_MAX ? "this worker" : "the job",
                           cs->nlive >= CHAN_MAX ? cs->nlive : mine,
                           cs->nlive >= CHAN_MAX ? CHAN_MAX : CHAN_MAX_PER_JOB);
    if (pthread_create(&c->thread, NULL, chan_main, c) != 0)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "cannot start a thread");
    pthread_setname_np(c->thread, "a2a-chan");
    c->next = cs->live;
    cs->live = c;
    cs->nlive++;
    return A2A_OK;
}

a2a_status
chan_open(chan_set *cs, xfer_sess *sess, int fd, uint64_t len, char *err, size_t errlen)
{
    chan *c = NULL;
    a2a_status st;

    if (len != SHMCHAN_SIZE || fd < 0)
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "a channel is a memfd of %zu bytes (got %s, %llu bytes)",
                           (size_t)SHMCHAN_SIZE, fd < 0 ? "no descriptor" : "one",
                           (unsigned long long)len);
    if ((c = calloc(1, sizeof(*c))) == NULL ||
        (c->counts = malloc(4 * SHMCHAN_MAX_N * sizeof(int64_t))) == NULL) {
        if (c != NULL)
            free(c);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    c->cs = cs;
    c->job.world_rank = sess->world_rank;
    c->job.sess = sess;
    c->len = (size_t)len;
    if ((st = chan_map(&c->mem, fd, len, err, errlen)) != A2A_OK) {
        free(c->counts);
        free(c);
        return st;
    }
    pthread_mutex_lock(&cs->mtx);
    chan_reap(cs);
    st = chan_admit(cs, c, err, errlen);
    pthread_mutex_unlock(&cs->mtx);
    if (st != A2A_OK) {
        munmap(c->mem, c->len);
        free(c->counts);
        free(c);
        return st;
    }
    log_debug("channel of process %lld (rank %lld) opened, session %llu", (long long)sess->pid,
              (long long)sess->world_rank, (unsigned long long)sess->id);
    return A2A_OK;
}

void
chan_close_sess(chan_set *cs, xfer_sess *sess)
{
    int mine;
    if (cs == NULL)
        return;
    pthread_mutex_lock(&cs->mtx);
    for (;;) {
        mine = 0;
        for (chan *c = cs->live; c != NULL; c = c->next)
            if (c->job.sess == sess) {
                mine = 1;
                shmchan_ring(c->mem); /* it sees the session closed (xfer_probe) and ends */
            }
        if (!mine)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L; /* a thread in a call wakes later: look again */
        if (ts.tv_nsec >= 1000000000L)
            ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&cs->cv, &cs->mtx, &ts);
    }
    chan_reap(cs);
    pthread_mutex_unlock(&cs->mtx);
}

void
chan_set_stop(chan_set *cs)
{
    if (cs == NULL)
        return;
    pthread_mutex_lock(&cs->mtx);
    __atomic_store_n(&cs->stopping, 1, __ATOMIC_RELEASE);
    for (chan *c = cs->live; c != NULL; c = c->next)
        shmchan_ring(c->mem); /* the thread is asleep on it, or busy in the engine */
    while (cs->nlive > 0)
        pthread_cond_wait(&cs->cv, &cs->mtx);
    chan_reap(cs);
    pthread_mutex_unlock(&cs->mtx);
}

void
chan_set_free(chan_set *cs)
{
    if (cs == NULL)
        return;
    chan_set_stop(cs);
    pthread_cond_destroy(&cs->cv);
    pthread_mutex_destroy(&cs->mtx);
    free(cs);
}
