/*
 * client.c - liba2a: a job's handle on its host's worker (a2a.h).
 *
 * Calls go to the worker over server/'s RPC layer; the worker reads the
 * send buffer and writes the receive buffer of this process itself, so a
 * buffer crosses the job/worker boundary with one copy and no socket.
 * Arguments are checked here, before anything leaves the process.
 *
 * a2a_all_to_all_v goes through a job channel when it can (common/shmchan.h,
 * worker/chan.c): shared memory with a futex, one per thread in a call, kept
 * in a small pool; a group too large for it, a channel the worker refuses,
 * or A2A_CHANNEL=0 takes the AllToAllV RPC instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "a2a.h"
#include "common/args.h"
#include "common/config.h"
#include "common/dtype.h"
#include "common/shmchan.h"
#include "common/wire.h"
#include "server/rpc.h"
#include "server/secure.h"

#define CLIENT_CALL_MS 10000 /* deadline of group calls */
#define CLIENT_SLACK_MS 5000 /* what an operation's RPC deadline adds to the operation's */
#define CLIENT_DEFAULT_OP_MS 60000
#define CLIENT_CHAN_MAX 16        /* channels per job: threads in a call at once */
#define CLIENT_CHAN_SLICE_MS 100  /* a call on a channel looks at the worker this often */
#define CLIENT_CHAN_RETRY_MS 1000 /* no new channel for this long after one failed */

/* The message of the last failed call of one thread on one job. */
typedef struct job_err {
    struct job_err *next;
    pthread_t thread;
    char msg[1024];
} job_err;

/* Memory shared with the worker (a2a_buffer_alloc). */
typedef struct job_buf {
    struct job_buf *next;
    void *ptr;
    size_t len;
    int fd;
} job_buf;

/* A job channel to the worker (common/shmchan.h), free or used by one call. */
typedef struct job_chan {
    struct job_chan *next;
    uint8_t *mem; /* SHMCHAN_SIZE bytes of the memfd fd */
    int fd;
    int64_t worker_pid; /* the process that serves it (OpenChannel's reply) */
    uint64_t seq;       /* number of the last request */
} job_chan;

/* The operation number of this job's next call on a group (docs/ARCHITECTURE.md, "Operation
 * identity"), kept apart from the group cache so that a new resolve keeps it. */
typedef struct job_opnum {
    struct job_opnum *next;
    char name[A2A_GROUP_NAME_MAX + 1];
    int64_t next_op; /* -1: not known yet (the worker numbers our first call) */
    int failed;      /* the last call on the group failed */
} job_opnum;

/* A group as this job last resolved it. */
typedef struct job_group {
    struct job_group *next;
    char name[A2A_GROUP_NAME_MAX + 1];
    size_t n;
    int64_t *world;
} job_group;

struct a2a_job {
    rpc_client *cli;
    wire_job_id id; /* id.nonce is what the worker reads back from this process */
    int64_t op_timeout_ms;
    char worker[CFG_WORKER_NAME_MAX + 1]; /* its name, from Hello */
    secure sec;                           /* $A2A_TOKEN_FILE, $A2A_TLS_* */
    pthread_mutex_t mtx;
    job_err *errs;
    job_group *groups;
    job_opnum *opnums;
    job_buf *bufs;
    int chan_off;          /* $A2A_CHANNEL=0: the RPC path only */
    job_chan *chans;       /* free channels */
    size_t nchans;         /* open channels, free or in a call */
    int64_t chan_retry_ms; /* no new channel before this time (rpc_now_ms) */
};

static __thread char open_err[1024]; /* a2a_job_error(NULL): why a2a_job_open failed */

static char *
err_slot(a2a_job *job)
{
    pthread_t self = pthread_self();
    job_err *e;
    if (job == NULL)
        return open_err;
    pthread_mutex_lock(&job->mtx);
    for (e = job->errs; e != NULL && !pthread_equal(e->thread, self); e = e->next)
        ;
    if (e == NULL && (e = calloc(1, sizeof(*e))) != NULL) {
        e->thread = self;
        e->next = job->errs;
        job->errs = e;
    }
    pthread_mutex_unlock(&job->mtx);
    return e != NULL ? e->msg : open_err;
}

static a2a_status
job_fail(a2a_job *job, a2a_status st, const char *fmt, ...)
{
    char *slot = err_slot(job);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(slot, 1024, fmt, ap);
    va_end(ap);
    return st;
}

const char *
a2a_job_error(const a2a_job *job)
{
    return err_slot((a2a_job *)job);
}

static int
parse_i64(const char *s, int64_t *v)
{
    char *end;
    long long x;
    errno = 0;
    x = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0')
        return -1;
    *v = x;
    return 0;
}

static void
fill_nonce(uint64_t nonce[2])
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, nonce, 2 * sizeof(uint64_t)) != (ssize_t)(2 * sizeof(uint64_t))) {
        nonce[0] = (uint64_t)getpid() * 0x9E3779B97F4A7C15ULL;
        nonce[1] = (uint64_t)(uintptr_t)nonce ^ 0xC2B2AE3D27D4EB4FULL;
    }
    if (fd >= 0)
        close(fd);
}

/* call runs one worker method; on failure the job's error holds the message. */
static a2a_status
call(a2a_job *job, const char *method, msgpack_sbuffer *req, int64_t timeout_ms, uint8_t **rep,
     size_t *replen)
{
    char err[1024];
    a2a_status st =
        rpc_call(job->cli, method, req->data, req->size, timeout_ms, rep, replen, err, sizeof(err));
    if (st == A2A_ERR_UNAVAILABLE && job->worker[0] != '\0' && strstr(err, "worker ") != err)
        job_fail(job, st, "worker %s: %s", job->worker, err);
    else if (st != A2A_OK)
        job_fail(job, st, "%s", err);
    return st;
}

static a2a_status
job_hello(a2a_job *job, const char *url)
{
    msgpack_sbuffer sb;
    wire_hello_reply h;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char why[256];
    a2a_status st;

    msgpack_sbuffer_init(&sb);
    wire_job_id_encode(&sb, &job->id);
    for (int attempt = 0; attempt < 2; attempt++) {
        free(rep);
        rep = NULL;
        st = call(job, "Hello", &sb, CLIENT_CALL_MS, &rep, &replen);
        if (st == A2A_OK && wire_hello_reply_decode(&h, rep, replen, why, sizeof(why)) != 0)
            st = job_fail(job, A2A_ERR_INTERNAL, "bad Hello reply from %s: %s", url, why);
        if (st != A2A_OK || h.direct)
            break;
        /* where ptrace is restricted (Yama), let the worker read and write us, then ask again */
        prctl(PR_SET_PTRACER, (unsigned long)h.pid, 0, 0, 0);
    }
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_OK && !h.direct)
        st = job_fail(job, A2A_ERR_PERMISSION_DENIED,
                      "worker %s at %s cannot reach this process's memory: run the job on the "
                      "worker's host, as the same user",
                      h.worker, url);
    else if (st == A2A_OK)
        snprintf(job->worker, sizeof(job->worker), "%s", h.worker);
    free(rep);
    return st;
}

a2a_status
a2a_job_open(a2a_job **out, const char *worker_url, int64_t world_rank)
{
    const char *env_url = getenv("A2A_WORKER_URL"), *env_rank = getenv("A2A_RANK");
    const char *env_to = getenv("A2A_OP_TIMEOUT_MS");
    char err[512];
    a2a_job *job;
    a2a_status st;

    if (out == NULL)
        return job_fail(NULL, A2A_ERR_INVALID_ARGUMENT, "a2a_job_open: job is NULL");
    *out = NULL;
    if (worker_url == NULL && (worker_url = env_url) == NULL)
        return job_fail(NULL, A2A_ERR_INVALID_ARGUMENT,
                        "no worker: pass its URL or set A2A_WORKER_URL");
    if (world_rank < 0 &&
        (env_rank == NULL || parse_i64(env_rank, &world_rank) != 0 || world_rank < 0))
        return job_fail(NULL, A2A_ERR_INVALID_ARGUMENT,
                        "no rank: pass it or set A2A_RANK to a world rank (got \"%s\")",
                        env_rank ? env_rank : "");
    if ((job = calloc(1, sizeof(*job))) == NULL)
        return job_fail(NULL, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    pthread_mutex_init(&job->mtx, NULL);
    job->id.world_rank = world_rank;
    job->id.pid = getpid();
    fill_nonce(job->id.nonce);
    job->id.probe_addr = (uint64_t)(uintptr_t)job->id.nonce;
    job->op_timeout_ms = CLIENT_DEFAULT_OP_MS;
    if (env_to != NULL &&
        (parse_i64(env_to, &job->op_timeout_ms) != 0 || job->op_timeout_ms <= 0)) {
        fprintf(
            stderr,
            "liba2a: warning: A2A_OP_TIMEOUT_MS=\"%s\" is not a positive number of ms: using %d\n",
            env_to, CLIENT_DEFAULT_OP_MS);
        job->op_timeout_ms = CLIENT_DEFAULT_OP_MS;
    }
    job->chan_off = getenv("A2A_CHANNEL") != NULL && strcmp(getenv("A2A_CHANNEL"), "0") == 0;
    if ((st = secure_from_env(&job->sec, NULL, err, sizeof(err))) != A2A_OK ||
        (st = rpc_client_alloc(&job->cli, worker_url, &job->sec.client, err, sizeof(err))) !=
            A2A_OK ||
        (st = job_hello(job, worker_url)) != A2A_OK) {
        if (job->cli == NULL)
            job_fail(NULL, st, "%s", err);
        else
            job_fail(NULL, st, "%s", a2a_job_error(job));
        a2a_job_close(job);
        return st;
    }
    *out = job;
    return A2A_OK;
}

static void
group_free(job_group *g)
{
    free(g->world);
    free(g);
}

static void
chan_free(job_chan *c)
{
    if (c->mem != NULL) {
        shmchan_close(c->mem); /* the worker's thread for it ends */
        munmap(c->mem, SHMCHAN_SIZE);
    }
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

void
a2a_job_close(a2a_job *job)
{
    if (job == NULL)
        return;
    while (job->chans != NULL) {
        job_chan *c = job->chans;
        job->chans = c->next;
        chan_free(c);
    }
    while (job->bufs != NULL)
        a2a_buffer_free(job, job->bufs->ptr);
    rpc_client_free(job->cli);
    secure_fini(&job->sec);
    while (job->errs != NULL) {
        job_err *e = job->errs;
        job->errs = e->next;
        free(e);
    }
    while (job->groups != NULL) {
        job_group *g = job->groups;
        job->groups = g->next;
        group_free(g);
    }
    while (job->opnums != NULL) {
        job_opnum *o = job->opnums;
        job->opnums = o->next;
        free(o);
    }
    pthread_mutex_destroy(&job->mtx);
    free(job);
}

/* group_request encodes a group call's body. */
static void
group_request(const a2a_job *job, msgpack_sbuffer *sb, const char *name, size_t n,
              const int64_t *ranks)
{
    msgpack_sbuffer_init(sb);
    wire_job_group_encode(sb, &job->id, name, n, ranks);
}

static a2a_status
check_name(a2a_job *job, const char **name)
{
    char why[256];
    if (job == NULL)
        return job_fail(NULL, A2A_ERR_INVALID_ARGUMENT, "job is NULL");
    if (*name == NULL)
        *name = A2A_WORLD_GROUP;
    if (cfg_check_group_name(*name, strlen(*name), why, sizeof(why)) != 0)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "%s", why);
    return A2A_OK;
}

/* cache_group stores g (resolved) in the job's cache, replacing an older copy; under mtx. */
static void
cache_group(a2a_job *job, const wire_group *wg)
{
    job_group *g = calloc(1, sizeof(*g));
    if (g == NULL || (g->world = calloc(wg->n, sizeof(int64_t))) == NULL) {
        free(g);
        return;
    }
    snprintf(g->name, sizeof(g->name), "%s", wg->name);
    g->n = wg->n;
    for (size_t i = 0; i < wg->n; i++)
        g->world[i] = wg->members[i].world_rank;
    for (job_group **pp = &job->groups; *pp != NULL; pp = &(*pp)->next)
        if (strcmp((*pp)->name, g->name) == 0) {
            job_group *old = *pp;
            *pp = old->next;
            group_free(old);
            break;
        }
    g->next = job->groups;
    job->groups = g;
}

static void
uncache_group(a2a_job *job, const char *name)
{
    pthread_mutex_lock(&job->mtx);
    for (job_group **pp = &job->groups; *pp != NULL; pp = &(*pp)->next)
        if (strcmp((*pp)->name, name) == 0) {
            job_group *old = *pp;
            *pp = old->next;
            group_free(old);
            break;
        }
    pthread_mutex_unlock(&job->mtx);
}

/* resolve asks the worker for a group and caches it; *gp is a copy the caller frees. */
static a2a_status
resolve(a2a_job *job, const char *name, const char *method, size_t n, const int64_t *ranks,
        job_group **gp)
{
    msgpack_sbuffer sb;
    wire_group wg;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char why[256];
    a2a_status st;

    group_request(job, &sb, name, n, ranks);
    st = call(job, method, &sb, CLIENT_CALL_MS, &rep, &replen);
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_OK && wire_group_decode(&wg, rep, replen, why, sizeof(why)) != 0)
        st = job_fail(job, A2A_ERR_INTERNAL, "bad group from the worker: %s", why);
    free(rep);
    if (st != A2A_OK)
        return st;
    pthread_mutex_lock(&job->mtx);
    cache_group(job, &wg);
    pthread_mutex_unlock(&job->mtx);
    if (gp != NULL) {
        job_group *g = calloc(1, sizeof(*g));
        if (g == NULL || (g->world = calloc(wg.n, sizeof(int64_t))) == NULL) {
            free(g);
            wire_group_fini(&wg);
            return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        }
        g->n = wg.n;
        for (size_t i = 0; i < wg.n; i++)
            g->world[i] = wg.members[i].world_rank;
        *gp = g;
    }
    wire_group_fini(&wg);
    return A2A_OK;
}

a2a_status
a2a_create_group(a2a_job *job, const char *group, size_t n, const int64_t *world_ranks)
{
    a2a_status st;
    if ((st = check_name(job, &group)) != A2A_OK)
        return st;
    if (n == 0 || world_ranks == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "group \"%s\" needs at least one rank",
                        group);
    if (n > CFG_MAX_RANKS)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "%zu ranks is more than the limit %d", n,
                        CFG_MAX_RANKS);
    return resolve(job, group, "CreateGroup", n, world_ranks, NULL);
}

a2a_status
a2a_destroy_group(a2a_job *job, const char *group)
{
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    a2a_status st;

    if ((st = check_name(job, &group)) != A2A_OK)
        return st;
    group_request(job, &sb, group, 0, NULL);
    st = call(job, "DestroyGroup", &sb, CLIENT_CALL_MS, &rep, &replen);
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    if (st == A2A_OK)
        uncache_group(job, group);
    return st;
}

/* lookup resolves group afresh (the group calls always ask). */
static a2a_status
lookup(a2a_job *job, const char *group, job_group **g)
{
    a2a_status st;
    *g = NULL;
    if ((st = check_name(job, &group)) != A2A_OK)
        return st;
    return resolve(job, group, "GetGroup", 0, NULL, g);
}

static int64_t
index_of(const job_group *g, int64_t world)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->world[i] == world)
            return (int64_t)i;
    return -1;
}

a2a_status
a2a_get_rank_size(a2a_job *job, const char *group, int64_t *size)
{
    job_group *g;
    a2a_status st;
    if (size == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "size is NULL");
    if ((st = lookup(job, group, &g)) != A2A_OK)
        return st;
    *size = (int64_t)g->n;
    group_free(g);
    return A2A_OK;
}

a2a_status
a2a_get_rank_id(a2a_job *job, const char *group, int64_t *group_rank)
{
    job_group *g;
    a2a_status st;
    if (group_rank == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "group_rank is NULL");
    if ((st = lookup(job, group, &g)) != A2A_OK)
        return st;
    *group_rank = index_of(g, job->id.world_rank);
    group_free(g);
    if (*group_rank < 0)
        return job_fail(job, A2A_ERR_PERMISSION_DENIED,
                        "world rank %lld is not a member of group \"%s\"",
                        (long long)job->id.world_rank, group ? group : A2A_WORLD_GROUP);
    return A2A_OK;
}

a2a_status
a2a_get_world_rank_from_group_rank(a2a_job *job, const char *group, int64_t group_rank,
                                   int64_t *world_rank)
{
    job_group *g;
    a2a_status st;
    if (world_rank == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "world_rank is NULL");
    if ((st = lookup(job, group, &g)) != A2A_OK)
        return st;
    if (group_rank < 0 || group_rank >= (int64_t)g->n)
        st = job_fail(job, A2A_ERR_INVALID_ARGUMENT,
                      "group rank %lld is out of range: the group has %zu ranks",
                      (long long)group_rank, g->n);
    else
        *world_rank = g->world[group_rank];
    group_free(g);
    return st;
}

a2a_status
a2a_get_group_rank_from_world_rank(a2a_job *job, const char *group, int64_t world_rank,
                                   int64_t *group_rank)
{
    job_group *g;
    a2a_status st;
    if (group_rank == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "group_rank is NULL");
    if ((st = lookup(job, group, &g)) != A2A_OK)
        return st;
    *group_rank = index_of(g, world_rank);
    if (*group_rank < 0)
        st = job_fail(job, A2A_ERR_NOT_FOUND, "world rank %lld is not in group \"%s\"",
                      (long long)world_rank, group ? group : A2A_WORLD_GROUP);
    group_free(g);
    return st;
}

/* group_size returns the cached size of group and our rank in it (*me), resolving once. */
static a2a_status
group_size(a2a_job *job, const char *group, size_t *n, int64_t *me_out)
{
    a2a_status st = A2A_OK;
    int64_t me = -1;

    for (int pass = 0; pass < 2; pass++) {
        pthread_mutex_lock(&job->mtx);
        for (job_group *g = job->groups; g != NULL; g = g->next)
            if (strcmp(g->name, group) == 0) {
                *n = g->n;
                me = index_of(g, job->id.world_rank);
                *me_out = me;
                pthread_mutex_unlock(&job->mtx);
                if (me < 0)
                    return job_fail(job, A2A_ERR_PERMISSION_DENIED,
                                    "world rank %lld is not a member of group \"%s\"",
                                    (long long)job->id.world_rank, group);
                return A2A_OK;
            }
        pthread_mutex_unlock(&job->mtx);
        if (pass == 0 && (st = resolve(job, group, "GetGroup", 0, NULL, NULL)) != A2A_OK)
            return st;
    }
    return job_fail(job, A2A_ERR_INTERNAL, "group \"%s\" vanished from the cache", group);
}

/* check_args checks what a2a.h's arguments can get wrong before counts are read. */
static a2a_status
check_pointers(a2a_job *job, const a2a_alltoallv_args *a)
{
    if (a == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "args is NULL");
    if (a->send_counts == NULL || a->send_displacements == NULL || a->recv_counts == NULL ||
        a->recv_displacements == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT,
                        "send_counts, send_displacements, recv_counts and recv_displacements "
                        "must all be given");
    if ((a->send_data == NULL && a->send_len > 0) || (a->recv_data == NULL && a->recv_len > 0))
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "a buffer is NULL but its length is not 0");
    if (a->timeout_ms < 0)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "timeout_ms is negative (%lld)",
                        (long long)a->timeout_ms);
    return A2A_OK;
}

/* chan_new makes a channel and has the worker open it; NULL when either fails (no job error). */
static job_chan *
chan_new(a2a_job *job)
{
    job_chan *c = calloc(1, sizeof(*c));
    wire_buffer w = {.job = job->id, .len = SHMCHAN_SIZE};
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char err[1024];
    int rc = -1;

    if (c == NULL)
        return NULL;
    c->fd = memfd_create("a2a-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (c->fd < 0 || ftruncate(c->fd, SHMCHAN_SIZE) != 0 ||
        fcntl(c->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        (c->mem = mmap(NULL, SHMCHAN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, c->fd,
                       0)) == MAP_FAILED) {
        c->mem = NULL;
        chan_free(c);
        return NULL;
    }
    shmchan_init(c->mem, SHMCHAN_SIZE);
    w.fd = c->fd;
    w.addr = (uint64_t)(uintptr_t)c->mem;
    msgpack_sbuffer_init(&sb);
    if (wire_buffer_encode(&sb, &w) == 0 &&
        rpc_call(job->cli, "OpenChannel", sb.data, sb.size, CLIENT_CALL_MS, &rep, &replen, err,
                 sizeof(err)) == A2A_OK &&
        shmchan_open_reply_decode(&c->worker_pid, rep, replen, err, sizeof(err)) == 0)
        rc = 0;
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    if (rc != 0) {
        chan_free(c);
        return NULL;
    }
    return c;
}

/* chan_take returns a channel for a call over a group of n ranks, or NULL: use the RPC path. */
static job_chan *
chan_take(a2a_job *job, size_t n)
{
    job_chan *c = NULL;
    int open = 0;

    if (job->chan_off || n > SHMCHAN_MAX_N)
        return NULL;
    pthread_mutex_lock(&job->mtx);
    if ((c = job->chans) != NULL)
        job->chans = c->next;
    else if (job->nchans < CLIENT_CHAN_MAX && rpc_now_ms() >= job->chan_retry_ms)
        open = 1, job->nchans++;
    pthread_mutex_unlock(&job->mtx);
    if (open && (c = chan_new(job)) == NULL) {
        pthread_mutex_lock(&job->mtx);
        job->nchans--;
        job->chan_retry_ms = rpc_now_ms() + CLIENT_CHAN_RETRY_MS;
        pthread_mutex_unlock(&job->mtx);
    }
    return c;
}

/* chan_give puts c back in the pool, or (keep == 0) closes it. */
static void
chan_give(a2a_job *job, job_chan *c, int keep)
{
    pthread_mutex_lock(&job->mtx);
    if (keep) {
        c->next = job->chans;
        job->chans = c;
    } else {
        job->nchans--;
    }
    pthread_mutex_unlock(&job->mtx);
    if (!keep)
        chan_free(c);
}

/* chan_reply turns the worker's reply into the job's status and error, as call() does. */
static a2a_status
chan_reply(a2a_job *job, a2a_status st, const char *msg)
{
    if (st == A2A_OK)
        return A2A_OK;
    if (st == A2A_ERR_UNAVAILABLE && job->worker[0] != '\0' && strstr(msg, "worker ") != msg)
        return job_fail(job, st, "worker %s: %s", job->worker, msg);
    return job_fail(job, st, "%s", msg);
}

/*
 * chan_call runs w through channel c. *served = 0: the worker never started
 * it (the channel was closed), so the RPC path may run it. *keep = 0: the
 * channel is of no further use.
 */
static a2a_status
chan_call(a2a_job *job, job_chan *c, const wire_a2av *w, int *served, int *keep, int64_t *next)
{
    int64_t deadline = rpc_now_ms() + w->timeout_ms + CLIENT_SLACK_MS, left;
    char msg[SHMCHAN_MSG_MAX];
    a2a_status st;
    uint32_t s;

    *served = 0;
    *keep = 0;
    *next = -2; /* no reply */
    s = shmchan_state(c->mem);
    if ((s != SHMCHAN_IDLE && s != SHMCHAN_REPLY) ||
        shmchan_req_write(c->mem, SHMCHAN_SIZE, ++c->seq, w) != 0 ||
        !shmchan_cas(c->mem, s, SHMCHAN_REQUEST, NULL))
        return A2A_OK; /* closed by the worker */
    shmchan_wake(c->mem);
    /* no spinning before the sleep: on 2 vCPUs a sched_yield spin of 50-200 rounds gained
     * little at 1x1 and cost up to 40 % at 2x2 (measured with a2a-bench -p uniform) */
    while (shmchan_state(c->mem) == SHMCHAN_REQUEST) {
        if ((left = deadline - rpc_now_ms()) <= 0) {
            *served = 1;
            return job_fail(job, A2A_ERR_DEADLINE_EXCEEDED, "no reply from %s in time",
                            rpc_client_url(job->cli));
        }
        shmchan_wait(c->mem, SHMCHAN_REQUEST,
                     left < CLIENT_CHAN_SLICE_MS ? left : CLIENT_CHAN_SLICE_MS);
        if (shmchan_state(c->mem) == SHMCHAN_REQUEST && kill((pid_t)c->worker_pid, 0) != 0 &&
            errno == ESRCH) {
            *served = 1;
            return job_fail(job, A2A_ERR_UNAVAILABLE, "worker %s exited", job->worker);
        }
    }
    s = shmchan_state(c->mem);
    if (shmchan_reply_read(c->mem, c->seq, &st, msg, sizeof(msg), next) != 0) {
        *next = -2;
        return A2A_OK; /* closed before the worker took it */
    }
    *served = 1;
    *keep = s == SHMCHAN_REPLY;
    return chan_reply(job, st, msg);
}

/*
 * self_copy copies this rank's slice to itself here, with one memmove, and
 * says so in w, instead of the worker's two copies between processes. Only
 * when the counts agree (a mismatch is the worker's to report), and before the
 * call: if our cached rank were stale, the worker copies every slice anyway
 * (it checks self_copied against the rank it knows) and overwrites this one.
 */
static void
self_copy(wire_a2av *w, const a2a_alltoallv_args *args, int64_t me)
{
    size_t n = w->n, es = a2a_dtype_size(args->dtype);
    if (me < 0 || (size_t)me >= n || w->counts[me] != w->counts[2 * n + (size_t)me] ||
        w->counts[me] == 0)
        return;
    memmove((char *)args->recv_data + (size_t)w->counts[3 * n + (size_t)me] * es,
            (const char *)args->send_data + (size_t)w->counts[n + (size_t)me] * es,
            (size_t)w->counts[me] * es);
    w->self_copied = me + 1;
}

/* opnum_take fills w's operation number for its group (from this job's record). */
static void
opnum_take(a2a_job *job, wire_a2av *w)
{
    w->op_next = -1;
    w->op_failed = 0;
    pthread_mutex_lock(&job->mtx);
    for (job_opnum *o = job->opnums; o != NULL; o = o->next)
        if (strcmp(o->name, w->group) == 0) {
            w->op_next = o->next_op;
            w->op_failed = o->failed;
            break;
        }
    pthread_mutex_unlock(&job->mtx);
}

/*
 * opnum_put records how w's call ended: next is the worker's number for our next call (-1: it
 * refused the call before numbering it, so ours stands); without an answer (replied == 0) the
 * call may have been numbered, so the next one resynchronises.
 */
static void
opnum_put(a2a_job *job, const wire_a2av *w, int replied, int64_t next, a2a_status st)
{
    job_opnum *o;
    pthread_mutex_lock(&job->mtx);
    for (o = job->opnums; o != NULL && strcmp(o->name, w->group) != 0; o = o->next)
        ;
    if (o == NULL && (o = calloc(1, sizeof(*o))) != NULL) {
        snprintf(o->name, sizeof(o->name), "%s", w->group);
        o->next_op = -1;
        o->next = job->opnums;
        job->opnums = o;
    }
    if (o != NULL && replied && next >= 0) {
        o->next_op = next;
        o->failed = st != A2A_OK;
    } else if (o != NULL && !replied) {
        o->next_op = w->op_next >= 0 ? w->op_next + 1 : -1;
        o->failed = 1;
    }
    pthread_mutex_unlock(&job->mtx);
}

a2a_status
a2a_all_to_all_v(a2a_job *job, const a2a_alltoallv_args *args)
{
    const char *group = args != NULL ? args->group : NULL;
    wire_a2av w = {0};
    int64_t me = -1;
    job_chan *ch;
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char why[512];
    a2a_status st;

    if ((st = check_name(job, &group)) != A2A_OK || (st = check_pointers(job, args)) != A2A_OK ||
        (st = group_size(job, group, &w.n, &me)) != A2A_OK)
        return st;
    if ((w.counts = malloc(4 * w.n * sizeof(int64_t))) == NULL)
        return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    memcpy(w.counts, args->send_counts, w.n * sizeof(int64_t));
    memcpy(w.counts + w.n, args->send_displacements, w.n * sizeof(int64_t));
    memcpy(w.counts + 2 * w.n, args->recv_counts, w.n * sizeof(int64_t));
    memcpy(w.counts + 3 * w.n, args->recv_displacements, w.n * sizeof(int64_t));
    if ((st = args_check(w.n, (int64_t)(int)args->dtype, args->send_len, args->recv_len, w.counts,
                         why, sizeof(why))) != A2A_OK) {
        free(w.counts);
        return job_fail(job, st, "%s", why);
    }
    w.job = job->id;
    snprintf(w.group, sizeof(w.group), "%s", group);
    w.dtype = (int64_t)(int)args->dtype;
    w.timeout_ms = args->timeout_ms > 0 ? args->timeout_ms : job->op_timeout_ms;
    w.send_addr = (uint64_t)(uintptr_t)args->send_data;
    w.send_len = args->send_len;
    w.recv_addr = (uint64_t)(uintptr_t)args->recv_data;
    w.recv_len = args->recv_len;
    opnum_take(job, &w);
    if ((ch = chan_take(job, w.n)) != NULL) {
        int served, keep;
        int64_t next;
        self_copy(&w, args, me);
        st = chan_call(job, ch, &w, &served, &keep, &next);
        w.self_copied = 0; /* the AllToAllV RPC copies it in the worker */
        chan_give(job, ch, keep);
        if (served) {
            opnum_put(job, &w, next >= -1, next, st);
            free(w.counts);
            return st;
        }
    }
    msgpack_sbuffer_init(&sb);
    if (wire_a2av_encode(&sb, &w) != 0) {
        st = job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        int64_t next = -1;
        st = call(job, "AllToAllV", &sb, w.timeout_ms + CLIENT_SLACK_MS, &rep, &replen);
        /* a reply without our body came from no worker (the call never got through) */
        int replied =
            rep != NULL && wire_a2av_reply_decode(&next, rep, replen, why, sizeof(why)) == 0;
        opnum_put(job, &w, replied, next, st);
    }
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    free(w.counts);
    return st;
}

/* buffer_call tells the worker to map (fd >= 0) or unmap (fd < 0) b; its answer matters little. */
static a2a_status
buffer_call(a2a_job *job, const job_buf *b, int map)
{
    wire_buffer w = {
        .job = job->id, .fd = map ? b->fd : -1, .addr = (uint64_t)(uintptr_t)b->ptr, .len = b->len};
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    a2a_status st;

    msgpack_sbuffer_init(&sb);
    wire_buffer_encode(&sb, &w);
    st = call(job, map ? "MapBuffer" : "UnmapBuffer", &sb, CLIENT_CALL_MS, &rep, &replen);
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    return st;
}

a2a_status
a2a_buffer_alloc(a2a_job *job, size_t bytes, void **ptr)
{
    job_buf *b;

    if (job == NULL || ptr == NULL || bytes == 0)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "a2a_buffer_alloc: %s",
                        job == NULL   ? "job is NULL"
                        : ptr == NULL ? "ptr is NULL"
                                      : "0 bytes");
    *ptr = NULL;
    if ((b = calloc(1, sizeof(*b))) == NULL)
        return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    b->len = bytes;
    b->fd = memfd_create("a2a-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    /* sealed against shrinking: the worker maps it, and a shorter file would crash it */
    if (b->fd < 0 || ftruncate(b->fd, (off_t)bytes) != 0 ||
        fcntl(b->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        (b->ptr = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, b->fd, 0)) ==
            MAP_FAILED) {
        int e = errno;
        if (b->fd >= 0)
            close(b->fd);
        free(b);
        return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED,
                        "cannot make %zu bytes of shared memory: %s", bytes, strerror(e));
    }
    /* the worker maps it too; if it cannot, the memory is still a plain buffer */
    (void)buffer_call(job, b, 1);
    pthread_mutex_lock(&job->mtx);
    b->next = job->bufs;
    job->bufs = b;
    pthread_mutex_unlock(&job->mtx);
    *ptr = b->ptr;
    return A2A_OK;
}

a2a_status
a2a_buffer_free(a2a_job *job, void *ptr)
{
    job_buf *b = NULL;

    if (job == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "job is NULL");
    pthread_mutex_lock(&job->mtx);
    for (job_buf **pp = &job->bufs; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->ptr == ptr) {
            b = *pp;
            *pp = b->next;
            break;
        }
    pthread_mutex_unlock(&job->mtx);
    if (b == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "%p is not from a2a_buffer_alloc", ptr);
    (void)buffer_call(job, b, 0); /* the worker lets go of it before we unmap */
    munmap(b->ptr, b->len);
    close(b->fd);
    free(b);
    return A2A_OK;
}
