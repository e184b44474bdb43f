/*
 * client.c - liba2a: a job's handle on its host's worker (a2a.h).
 *
 * Group calls go to the worker's url over server/'s RPC layer. Memory goes
 * only over the worker's local socket (worker/local.c, common/lsock.h): this
 * process connects there (the kernel tells the worker who we are), proves
 * the token, claims its rank (Attach) and hands over memfds, never
 * addresses in memory the worker could reach by itself:
 *   - buffers from a2a_buffer_alloc (MapBuffer): slices in them move with no
 *     copy on our side;
 *   - a staging memfd per calling path for plain buffers: the calling thread
 *     packs the send slices into it before the call and unpacks the receive
 *     slices after it (stage_in / stage_out);
 *   - job channels (OpenChannel): a call is a futex wake-up on shared
 *     memory (common/shmchan.h, worker/chan.c), one channel per thread in a
 *     call, kept in a small pool; a group too large for one, a channel the
 *     worker refuses, or A2A_CHANNEL=0 sends AllToAllV on the socket itself.
 * When the worker goes away (the socket closes), the next call connects
 * again and hands everything over anew.
 * Arguments are checked here, before anything leaves the process.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "a2a.h"
#include "common/args.h"
#include "common/config.h"
#include "common/dtype.h"
#include "common/log.h"
#include "common/lsock.h"
#include "common/shmchan.h"
#include "common/status.h"
#include "common/wire.h"
#include "server/rpc.h"
#include "server/secure.h"
#include "request.h"

#define CLIENT_CALL_MS 10000 /* deadline of group calls */
#define CLIENT_SLACK_MS 5000 /* what an operation's RPC deadline adds to the operation's */
#define CLIENT_DEFAULT_OP_MS 60000
#define CLIENT_CHAN_MAX 16        /* channels per job: threads in a call at once */
#define CLIENT_CHAN_SLICE_MS 100  /* a call on a channel looks at the worker this often */
#define CLIENT_CHAN_RETRY_MS 1000 /* no new channel for this long after one failed */
#define CLIENT_LOCAL_RETRY_MS \
    250 /* no new connection to the socket for this long after one failed */
#define CLIENT_FRAME_MAX (5u << 20) /* largest reply on the local socket */
#define CLIENT_STAGE_ALIGN 4096     /* staging sizes and the receive part's offset */
/* a2a_all_to_all_v_start sends a call to the worker itself when its send slices total at most
 * this much; a larger one is sent by its lane, while the caller goes on */
#define CLIENT_SUBMIT_COPY_MAX (32u << 10)

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

/* A request on the local socket waiting for its reply. */
typedef struct job_wait {
    struct job_wait *next;
    uint64_t id;
    int done;     /* the reply is in buf, or (err) the session broke */
    int err;      /* errno */
    uint8_t *buf; /* the reply frame (malloc'd) */
    size_t len;
} job_wait;

/* Staging memory for plain buffers: a memfd the worker maps, [send slices | receive slices]. */
typedef struct job_stage {
    struct job_stage *next; /* in job->stages, free */
    uint8_t *ptr;
    size_t len;
    int fd;
    uint64_t gen; /* the session that has it mapped (job->lgen), 0: none */
} job_stage;

/* A job channel to the worker (common/shmchan.h), free or used by one call. */
typedef struct job_chan {
    struct job_chan *next;
    uint8_t *mem; /* SHMCHAN_SIZE bytes of the memfd fd */
    int fd;
    uint64_t gen;    /* the session it was opened on */
    uint64_t seq;    /* number of the last request */
    job_stage stage; /* for the plain buffers of its calls */
} job_chan;

/* The operation number of this job's next call on a group (docs/ARCHITECTURE.md, "Operation
 * identity"), kept apart from the group cache so that a new resolve keeps it. */
typedef struct job_opnum {
    struct job_opnum *next;
    char name[A2A_GROUP_NAME_MAX + 1];
    int64_t next_op; /* -1: not known yet (the worker numbers our first call) */
    int failed;      /* the last call on the group failed */
} job_opnum;

static void opnum_put(a2a_job *job, const wire_a2av *w, int replied, int64_t next, a2a_status st);
static a2a_status counts_back(a2a_job *job, const wire_a2av *w, const a2a_alltoallv_args *args);

/* The calls of one group, one at a time (a2a_all_to_all_v): two threads' calls on a group
 * would take the same number from the job's record, and the worker cannot tell which is
 * which. */
typedef struct job_glock {
    struct job_glock *next;
    char name[A2A_GROUP_NAME_MAX + 1];
    int busy; /* a call holds it (under the job's mtx; gcv: it was given back). Not a mutex:
               * a call started with a2a_all_to_all_v_start takes it in the starting thread
               * and its lane gives it back (client_call_submit) */
} job_glock;

/* A group as this job last resolved it. */
typedef struct job_group {
    struct job_group *next;
    char name[A2A_GROUP_NAME_MAX + 1];
    size_t n;
    int64_t *world;
    int suspect; /* a call on it failed: ask the worker again before the next one */
} job_group;

struct a2a_job {
    rpc_client *cli;
    wire_job_id id; /* our world rank */
    int64_t op_timeout_ms;
    char worker[CFG_WORKER_NAME_MAX + 1]; /* its name, from Hello */
    secure sec;                           /* $A2A_TOKEN_FILE, $A2A_TLS_* */
    /* the local session: lmtx guards everything down to stage. Requests from several threads
     * are in flight at once; whoever waits and finds no reader reads the replies for all */
    pthread_mutex_t lmtx;
    pthread_cond_t lcv;              /* a reply came, the reader left, or the session changed */
    char socket[CFG_SOCKET_MAX + 1]; /* $A2A_WORKER_SOCKET, or the worker's from Hello */
    int lsock;                       /* -1: not connected */
    int lbroken;                     /* shut down: of no further use, closed once nobody reads */
    int lready;                      /* attached, buffers handed over */
    int lconnecting;                 /* a thread is connecting */
    int lreading;                    /* a thread reads replies (lmtx dropped meanwhile) */
    struct job_wait *lwaits;         /* requests waiting for their replies */
    uint64_t lgen;                   /* 1, 2, ... per connection; read without lmtx: atomic */
    uint64_t lreq;                   /* request ids */
    int64_t lretry_ms;               /* no new connection before this time */
    int lconnect_errno;              /* why the last connect failed (0: it did not) */
    wire_attach_reply attach;        /* what the worker said at Attach */
    struct job_stage *stages;        /* free staging of AllToAllV on the socket (under mtx) */
    /* remote mode (no shared kernel): the session on the worker, its slots (under mtx) */
    int remote;
    wire_remote rsess; /* session and key; rsess_gen counts attaches */
    uint64_t rsess_gen;
    uint64_t slot_len[WIRE_REMOTE_SLOTS]; /* bytes the worker holds in each slot */
    uint64_t slot_gen[WIRE_REMOTE_SLOTS]; /* ... for the session of that attach */
    unsigned slot_busy;                   /* bit i: slot i in a call */
    pthread_cond_t slot_cv;
    pthread_mutex_t mtx;
    job_err *errs;
    job_group *groups;
    job_opnum *opnums;
    job_glock *glocks;     /* never freed before the job */
    pthread_cond_t gcv;    /* a glock was given back */
    job_buf *bufs;         /* handed over to the worker */
    job_buf *plain;        /* from a2a_buffer_alloc, but the worker refused them: staged */
    int chan_off;          /* $A2A_CHANNEL=0: the RPC path only */
    job_chan *chans;       /* free channels */
    size_t nchans;         /* open channels, free or in a call */
    int64_t chan_retry_ms; /* no new channel before this time (rpc_now_ms) */
    req_lanes *lanes;      /* non-blocking calls (request.c), under its lock */
    int closing;           /* a2a_job_close began: no new session (under lmtx) */
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
    else if (st == A2A_ERR_PERMISSION_DENIED && strstr(err, "authentication required") == err)
        job_fail(job, st, "%s: give the job the cluster's token file in A2A_TOKEN_FILE", err);
    else if (st != A2A_OK)
        job_fail(job, st, "%s", err);
    return st;
}

static a2a_status
job_hello(a2a_job *job, const char *url)
{
    const char *env_sock = getenv("A2A_WORKER_SOCKET");
    msgpack_sbuffer sb;
    wire_hello_reply h;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char why[256];
    a2a_status st;

    msgpack_sbuffer_init(&sb);
    wire_job_id_encode(&sb, &job->id);
    st = call(job, "Hello", &sb, CLIENT_CALL_MS, &rep, &replen);
    if (st == A2A_OK && wire_hello_reply_decode(&h, rep, replen, why, sizeof(why)) != 0)
        st = job_fail(job, A2A_ERR_INTERNAL, "bad Hello reply from %s: %s", url, why);
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    if (st != A2A_OK)
        return st;
    snprintf(job->worker, sizeof(job->worker), "%s", h.worker);
    snprintf(job->socket, sizeof(job->socket), "%s",
             env_sock != NULL && env_sock[0] != '\0' ? env_sock : h.socket);
    return A2A_OK;
}

/* ---- the local session ---- */

/* local_broken ends the session after err: every waiter fails; under lmtx. */
static void
local_broken(a2a_job *job, int err)
{
    if (job->lsock >= 0 && !job->lbroken)
        shutdown(job->lsock, SHUT_RDWR); /* a reader wakes; the descriptor closes later */
    job->lbroken = 1;
    job->lready = 0;
    for (job_wait *w = job->lwaits; w != NULL; w = w->next)
        if (!w->done) {
            w->done = 1;
            w->err = err;
        }
    pthread_cond_broadcast(&job->lcv);
}

/* local_deliver hands a reply frame to the request it answers; under lmtx. */
static void
local_deliver(a2a_job *job, uint8_t *buf, size_t len)
{
    wire_reply rep;
    if (wire_reply_decode(&rep, buf, len, NULL, 0) != 0) {
        free(buf);
        local_broken(job, EPROTO);
        return;
    }
    for (job_wait *w = job->lwaits; w != NULL; w = w->next)
        if (w->id == rep.id && !w->done) {
            w->buf = buf;
            w->len = len;
            w->done = 1;
            return;
        }
    free(buf); /* the reply to a request that gave up waiting */
}

static void
timespec_at(struct timespec *ts, int64_t deadline_ms)
{
    int64_t left = deadline_ms - rpc_now_ms();
    clock_gettime(CLOCK_REALTIME, ts);
    if (left < 0)
        left = 0;
    ts->tv_sec += left / 1000;
    ts->tv_nsec += (left % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L)
        ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

/*
 * local_request sends one request on the session's socket (with descriptor
 * fd, or -1) and waits for its reply, reading replies for every waiting
 * thread while no other does. Under lmtx, which it drops while it waits.
 */
static a2a_status
local_request(a2a_job *job, const char *method, const msgpack_sbuffer *body, int fd,
              int64_t timeout_ms, uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    int64_t deadline = rpc_now_ms() + timeout_ms;
    wire_request req = {.id = ++job->lreq, .timeout_ms = (uint64_t)timeout_ms};
    job_wait w = {.id = req.id};
    wire_reply rep;
    msgpack_sbuffer sb;
    a2a_status st;
    int e;

    if (out != NULL) {
        *out = NULL;
        *outlen = 0;
    }
    if (job->lsock < 0 || job->lbroken)
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "worker %s: local socket %s is closed",
                           job->worker, job->socket);
    snprintf(req.method, sizeof(req.method), "%s", method);
    req.body = (const uint8_t *)body->data;
    req.body_len = body->size;
    msgpack_sbuffer_init(&sb);
    if (wire_request_encode(&sb, &req) != 0) {
        msgpack_sbuffer_destroy(&sb);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    /* under lmtx: frames from several threads never interleave */
    e = lsock_send(job->lsock, sb.data, sb.size, fd, timeout_ms);
    msgpack_sbuffer_destroy(&sb);
    if (e != 0) {
        local_broken(job, e);
        w.done = 1;
        w.err = e;
    } else {
        w.next = job->lwaits;
        job->lwaits = &w;
    }
    while (!w.done && rpc_now_ms() < deadline) {
        if (!job->lreading && !job->lbroken) {
            uint8_t *buf;
            size_t len;
            int sock = job->lsock;
            job->lreading = 1;
            pthread_mutex_unlock(&job->lmtx);
            e = lsock_recv(sock, &buf, &len, CLIENT_FRAME_MAX, NULL, deadline - rpc_now_ms());
            pthread_mutex_lock(&job->lmtx);
            job->lreading = 0;
            if (e == 0)
                local_deliver(job, buf, len);
            else if (e != ETIMEDOUT)
                local_broken(job, e);
            pthread_cond_broadcast(&job->lcv); /* replies for others, or the reader's place */
        } else {
            struct timespec ts;
            timespec_at(&ts, deadline);
            pthread_cond_timedwait(&job->lcv, &job->lmtx, &ts);
        }
    }
    for (job_wait **pp = &job->lwaits; *pp != NULL; pp = &(*pp)->next)
        if (*pp == &w) {
            *pp = w.next;
            break;
        }
    if (!w.done) /* the session stays: a late reply is dropped */
        return status_fail(err, errlen, A2A_ERR_DEADLINE_EXCEEDED,
                           "no reply from worker %s on %s in time", job->worker, job->socket);
    if (w.err != 0)
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "worker %s: local socket %s: %s",
                           job->worker, job->socket,
                           w.err == ECONNRESET || w.err == EPIPE
                               ? "the worker closed it (it ended or restarted)"
                               : strerror(w.err));
    if (wire_reply_decode(&rep, w.buf, w.len, err, errlen) != 0) {
        free(w.buf);
        return A2A_ERR_INTERNAL;
    }
    st = rep.status;
    if (out != NULL && rep.body_len > 0) { /* a failure may carry a body too (AllToAllV) */
        if ((*out = malloc(rep.body_len)) == NULL)
            st = status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        else {
            memcpy(*out, rep.body, rep.body_len);
            *outlen = rep.body_len;
        }
    }
    if (st != A2A_OK && st == rep.status)
        status_fail(err, errlen, st, "%s", rep.message);
    free(w.buf);
    return st;
}

/* local_auth proves the token on the new socket; under lmtx. */
static a2a_status
local_auth(a2a_job *job, char *err, size_t errlen)
{
    uint8_t cn[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN], got[2][WIRE_BIN32];
    const uint8_t *out[1] = {cn};
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    a2a_status st;

    auth_nonce(cn);
    msgpack_sbuffer_init(&sb);
    wire_bins_encode(&sb, 1, out);
    st = local_request(job, "AuthChallenge", &sb, -1, CLIENT_CALL_MS, &rep, &replen, err, errlen);
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_OK && wire_bins_decode(got, 2, rep, replen, err, errlen) != 0)
        st = A2A_ERR_INTERNAL;
    free(rep);
    if (st != A2A_OK)
        return st;
    auth_mac(&job->sec.key, LSOCK_LOCAL_LABEL_SERVER, cn, AUTH_NONCE_LEN, got[0], AUTH_NONCE_LEN,
             mac);
    if (!auth_equal(mac, got[1], AUTH_MAC_LEN))
        return status_fail(err, errlen, A2A_ERR_PERMISSION_DENIED,
                           "the process on %s does not know the token: not worker %s", job->socket,
                           job->worker);
    auth_mac(&job->sec.key, LSOCK_LOCAL_LABEL_CLIENT, got[0], AUTH_NONCE_LEN, cn, AUTH_NONCE_LEN,
             mac);
    out[0] = mac;
    msgpack_sbuffer_init(&sb);
    wire_bins_encode(&sb, 1, out);
    st = local_request(job, "AuthProve", &sb, -1, CLIENT_CALL_MS, NULL, NULL, err, errlen);
    msgpack_sbuffer_destroy(&sb);
    return st;
}

/* local_map hands b's memfd to the worker (map) or takes it back; under lmtx. */
static a2a_status
local_map(a2a_job *job, int fd, const void *ptr, size_t len, int map, char *err, size_t errlen)
{
    wire_buffer w = {.addr = (uint64_t)(uintptr_t)ptr, .len = len};
    msgpack_sbuffer sb;
    a2a_status st;

    msgpack_sbuffer_init(&sb);
    wire_buffer_encode(&sb, &w);
    st = local_request(job, map ? "MapBuffer" : "UnmapBuffer", &sb, map ? fd : -1, CLIENT_CALL_MS,
                       NULL, NULL, err, errlen);
    msgpack_sbuffer_destroy(&sb);
    return st;
}

/* local_hand_over hands every a2a_buffer_alloc buffer to the new session; under lmtx. */
static a2a_status
local_hand_over(a2a_job *job, char *err, size_t errlen)
{
    size_t n = 0, k = 0;
    job_buf *copy;
    a2a_status st = A2A_OK;

    pthread_mutex_lock(&job->mtx);
    for (job_buf *b = job->bufs; b != NULL; b = b->next)
        n++;
    if (n > 0 && (copy = calloc(n, sizeof(*copy))) != NULL)
        for (job_buf *b = job->bufs; b != NULL; b = b->next)
            copy[k++] = *b;
    pthread_mutex_unlock(&job->mtx);
    if (n == 0)
        return A2A_OK;
    if (k == 0)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    /* lmtx keeps a2a_buffer_free from closing these descriptors meanwhile */
    for (size_t i = 0; i < k && st == A2A_OK; i++)
        st = local_map(job, copy[i].fd, copy[i].ptr, copy[i].len, 1, err, errlen);
    free(copy);
    return st;
}

/*
 * local_ensure makes sure this job has a live session: connected, proved,
 * attached as its rank, and every a2a_buffer_alloc buffer handed over. Under
 * lmtx. A2A_OK, or the reason in the job's error.
 */
static a2a_status
local_ensure(a2a_job *job)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char err[1024];
    a2a_status st;
    int fd;

    if (job->closing)
        return job_fail(job, A2A_ERR_UNAVAILABLE, "the job is closing (a2a_job_close)");
    for (;;) {
        if (job->lsock >= 0 && !job->lbroken && job->lready) {
            if (job->lreading || !lsock_peer_gone(job->lsock))
                return A2A_OK;
            local_broken(job, ECONNRESET); /* the worker went away */
        }
        if (!job->lconnecting && !job->lreading)
            break;
        pthread_cond_wait(&job->lcv, &job->lmtx); /* another thread connects, or reads */
    }
    if (job->lsock >= 0) {
        close(job->lsock);
        job->lsock = -1;
    }
    if (rpc_now_ms() < job->lretry_ms)
        return job_fail(job, A2A_ERR_UNAVAILABLE, "worker %s: cannot connect to %s (retrying)",
                        job->worker, job->socket);
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", job->socket);
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        job->lconnect_errno = e;
        job->lretry_ms = rpc_now_ms() + CLIENT_LOCAL_RETRY_MS;
        if (e == ECONNREFUSED)
            return job_fail(job, A2A_ERR_UNAVAILABLE,
                            "worker %s: nothing listens at its local socket %s (connection "
                            "refused: the worker is not running, or restarting)",
                            job->worker, job->socket);
        if (e == ENOENT)
            return job_fail(job, A2A_ERR_UNAVAILABLE,
                            "worker %s: its local socket %s does not exist (the worker is not "
                            "running on this host, or was never started; a job in a container "
                            "needs the worker's socket volume mounted)",
                            job->worker, job->socket);
        return job_fail(
            job, A2A_ERR_UNAVAILABLE, "worker %s: cannot connect to its local socket %s: %s%s",
            job->worker, job->socket, strerror(e),
            e == EACCES ? " (a job in a container needs the worker's socket volume mounted)" : "");
    }
    job->lsock = fd;
    job->lbroken = 0;
    job->lready = 0;
    job->lconnecting = 1;
    __atomic_add_fetch(&job->lgen, 1, __ATOMIC_ACQ_REL);
    st = job->sec.has_key ? local_auth(job, err, sizeof(err)) : A2A_OK;
    if (st == A2A_OK) {
        msgpack_sbuffer_init(&sb);
        wire_job_id_encode(&sb, &job->id);
        st = local_request(job, "Attach", &sb, -1, CLIENT_CALL_MS, &rep, &replen, err, sizeof(err));
        msgpack_sbuffer_destroy(&sb);
        if (st == A2A_OK &&
            wire_attach_reply_decode(&job->attach, rep, replen, err, sizeof(err)) != 0)
            st = A2A_ERR_INTERNAL;
        free(rep);
    }
    if (st == A2A_OK)
        st = local_hand_over(job, err, sizeof(err));
    job->lconnecting = 0;
    if (st != A2A_OK) {
        local_broken(job, ECONNRESET);
        job->lretry_ms = rpc_now_ms() + CLIENT_LOCAL_RETRY_MS;
        return job_fail(job, st, "%s", err);
    }
    job->lready = 1;
    pthread_cond_broadcast(&job->lcv);
    return A2A_OK;
}

/* ---- remote mode: no shared kernel, the slices over the TCP connection ---- */

/* remote_rpc calls a Remote* method with r; with out, the reply's wire_remote, whose data
 * points into *keep (the caller frees it). */
static a2a_status
remote_rpc(a2a_job *job, const char *method, const wire_remote *r, int64_t timeout_ms,
           wire_remote *out, uint8_t **keep)
{
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char why[256];
    a2a_status st;

    msgpack_sbuffer_init(&sb);
    if (wire_remote_encode(&sb, r) != 0) {
        msgpack_sbuffer_destroy(&sb);
        return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    st = call(job, method, &sb, timeout_ms, &rep, &replen);
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_OK && out != NULL && wire_remote_decode(out, rep, replen, why, sizeof(why)) != 0)
        st = job_fail(job, A2A_ERR_INTERNAL, "bad %s reply: %s", method, why);
    if (keep != NULL && st == A2A_OK)
        *keep = rep;
    else
        free(rep);
    return st;
}

/* remote_attach opens a remote session for our rank (again, after the worker lost it). */
static a2a_status
remote_attach(a2a_job *job)
{
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    wire_remote r;
    char why[256];
    a2a_status st;

    msgpack_sbuffer_init(&sb);
    wire_job_id_encode(&sb, &job->id);
    st = call(job, "RemoteAttach", &sb, CLIENT_CALL_MS, &rep, &replen);
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_OK && wire_remote_decode(&r, rep, replen, why, sizeof(why)) != 0)
        st = job_fail(job, A2A_ERR_INTERNAL, "bad RemoteAttach reply: %s", why);
    free(rep);
    if (st != A2A_OK)
        return st;
    pthread_mutex_lock(&job->mtx);
    job->rsess = (wire_remote){.session = r.session, .key = {r.key[0], r.key[1]}};
    job->rsess_gen++;
    pthread_mutex_unlock(&job->mtx);
    return A2A_OK;
}

static void
remote_detach(a2a_job *job)
{
    wire_remote r = job->rsess;
    (void)remote_rpc(job, "RemoteDetach", &r, CLIENT_CALL_MS, NULL, NULL);
}

/*
 * job_pick_mode settles how our memory reaches the worker: local when the
 * worker's socket can be reached, remote when there is none or it is not
 * there for us ($A2A_JOB_MODE=local|remote decides instead).
 */
static a2a_status
job_pick_mode(a2a_job *job)
{
    const char *want = getenv("A2A_JOB_MODE");
    int force_local = want != NULL && strcmp(want, "local") == 0;
    int force_remote = want != NULL && strcmp(want, "remote") == 0;
    a2a_status st;
    int e = 0;

    if (want != NULL && want[0] != '\0' && !force_local && !force_remote &&
        strcmp(want, "auto") != 0)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT,
                        "A2A_JOB_MODE is \"%s\": local, remote or auto", want);
    if (!force_remote && job->socket[0] != '\0') {
        pthread_mutex_lock(&job->lmtx);
        st = local_ensure(job);
        e = job->lconnect_errno;
        pthread_mutex_unlock(&job->lmtx);
        if (st == A2A_OK) {
            log_debug("rank %lld: local mode: memory handed to worker %s on %s",
                      (long long)job->id.world_rank, job->worker, job->socket);
            return A2A_OK;
        }
        /* a socket that is not there for us (another kernel's path) means remote; any other
         * failure (a wrong token, a rank held by another job) is the answer */
        if (force_local || !(e == ENOENT || e == EACCES || e == ENOTDIR || e == ECONNREFUSED))
            return st;
    } else if (force_local) {
        return job_fail(job, A2A_ERR_UNAVAILABLE,
                        "A2A_JOB_MODE=local, but worker %s has no local socket (\"socket\" in its "
                        "YAML) and A2A_WORKER_SOCKET is not set",
                        job->worker);
    }
    if ((st = remote_attach(job)) != A2A_OK)
        return st;
    job->remote = 1;
    log_info("rank %lld: remote mode: worker %s %s; the slices travel over %s",
             (long long)job->id.world_rank, job->worker,
             job->socket[0] == '\0' ? "has no local socket"
             : force_remote         ? "is reached remotely (A2A_JOB_MODE=remote)"
                                    : "has its socket out of this job's reach",
             rpc_client_url(job->cli));
    return A2A_OK;
}

a2a_mode
a2a_job_mode(const a2a_job *job)
{
    return job != NULL && job->remote ? A2A_MODE_REMOTE : A2A_MODE_LOCAL;
}

/* remote_slot_take waits for a free slot of the remote session. */
static unsigned
remote_slot_take(a2a_job *job)
{
    unsigned slot;
    pthread_mutex_lock(&job->mtx);
    while (job->slot_busy == (1u << WIRE_REMOTE_SLOTS) - 1)
        pthread_cond_wait(&job->slot_cv, &job->mtx);
    for (slot = 0; job->slot_busy & (1u << slot); slot++)
        ;
    job->slot_busy |= 1u << slot;
    pthread_mutex_unlock(&job->mtx);
    return slot;
}

static void
remote_slot_give(a2a_job *job, unsigned slot)
{
    pthread_mutex_lock(&job->mtx);
    job->slot_busy &= ~(1u << slot);
    pthread_cond_signal(&job->slot_cv);
    pthread_mutex_unlock(&job->mtx);
}

/*
 * A call's packed stream in remote mode: its send (or receive) slices one
 * after the other, moved to (or from) the slot in chunks of at most
 * WIRE_REMOTE_CHUNK bytes, up to CLIENT_REMOTE_WINDOW of them in flight at
 * once (one RPC each, on threads of their own: the REQ socket serves each on
 * its own context), so that one chunk's round trip overlaps the next ones'.
 * Memory: one chunk buffer per mover.
 */
#define CLIENT_REMOTE_WINDOW 4

typedef struct {
    a2a_job *job;
    wire_remote r; /* session, key, slot */
    int put;       /* RemotePut (send slices), else RemoteGet (receive slices) */
    uint8_t *user; /* the user's buffer */
    const int64_t *displs;
    size_t n, es;
    size_t *starts; /* n + 1: where slice j begins in the stream (bytes) */
    size_t base;    /* where the stream begins in the slot */
    size_t total;   /* bytes */
    pthread_mutex_t mtx;
    size_t next; /* the next chunk to move */
    a2a_status st;
    char err[1024]; /* the first failure's message */
} rstream;

/* rs_copy copies stream bytes [off, off + len) between buf and the user's slices (out: from the
 * slices into buf). */
static void
rs_copy(const rstream *rs, size_t off, size_t len, uint8_t *buf, int out)
{
    size_t lo = 0, hi = rs->n; /* the slice that holds off: starts[j] <= off < starts[j + 1] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (rs->starts[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    for (size_t j = lo, done = 0; j < rs->n && done < len; j++) {
        size_t in = off + done - rs->starts[j], b = rs->starts[j + 1] - rs->starts[j];
        if (in >= b)
            continue; /* an empty slice */
        size_t k = b - in < len - done ? b - in : len - done;
        uint8_t *u = rs->user + (size_t)rs->displs[j] * rs->es + in;
        memcpy(out ? buf + done : u, out ? u : buf + done, k);
        done += k;
    }
}

/* rs_fail records the first failure of rs. */
static void
rs_fail(rstream *rs, a2a_status st, const char *msg)
{
    pthread_mutex_lock(&rs->mtx);
    if (rs->st == A2A_OK) {
        rs->st = st;
        snprintf(rs->err, sizeof(rs->err), "%s", msg);
    }
    pthread_mutex_unlock(&rs->mtx);
}

/* rs_mover moves chunks of rs until none is left or one failed. */
static void *
rs_mover(void *arg)
{
    rstream *rs = arg;
    uint8_t *buf = rs->put ? malloc(WIRE_REMOTE_CHUNK) : NULL;
    wire_remote r = rs->r;

    if (rs->put && buf == NULL) {
        rs_fail(rs, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    for (;;) {
        msgpack_sbuffer sb;
        uint8_t *rep = NULL;
        size_t replen = 0, off, len;
        char err[1024];
        a2a_status st;

        pthread_mutex_lock(&rs->mtx);
        off = rs->next * (size_t)WIRE_REMOTE_CHUNK;
        if (rs->st != A2A_OK || off >= rs->total) {
            pthread_mutex_unlock(&rs->mtx);
            break;
        }
        rs->next++;
        pthread_mutex_unlock(&rs->mtx);
        len = rs->total - off < WIRE_REMOTE_CHUNK ? rs->total - off : WIRE_REMOTE_CHUNK;
        r.offset = rs->base + off;
        if (rs->put) {
            rs_copy(rs, off, len, buf, 1);
            r.data = buf;
            r.data_len = len;
            r.len = 0;
        } else {
            r.data = NULL;
            r.data_len = 0;
            r.len = len;
        }
        msgpack_sbuffer_init(&sb);
        if (wire_remote_encode(&sb, &r) != 0) {
            msgpack_sbuffer_destroy(&sb);
            rs_fail(rs, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
            break;
        }
        st = rpc_call(rs->job->cli, rs->put ? "RemotePut" : "RemoteGet", sb.data, sb.size,
                      CLIENT_CALL_MS, &rep, &replen, err, sizeof(err));
        msgpack_sbuffer_destroy(&sb);
        if (st == A2A_OK && !rs->put) {
            wire_remote got;
            char why[256];
            if (wire_remote_decode(&got, rep, replen, why, sizeof(why)) != 0) {
                snprintf(err, sizeof(err), "bad RemoteGet reply: %s", why);
                st = A2A_ERR_INTERNAL;
            } else if (got.data_len != len) {
                snprintf(err, sizeof(err), "RemoteGet returned %zu bytes, not %zu", got.data_len,
                         len);
                st = A2A_ERR_INTERNAL;
            } else {
                rs_copy(rs, off, len, (uint8_t *)got.data, 0);
            }
        }
        free(rep);
        if (st != A2A_OK) {
            rs_fail(rs, st, err);
            break;
        }
    }
    free(buf);
    return NULL;
}

/*
 * remote_stream moves the send slices of args into the slot (put; at offset 0) or the
 * receive slices out of it (at offset base), packed in the order of the ranks; bytes:
 * their sum. The job's error holds the first failure's message.
 */
static a2a_status
remote_stream(a2a_job *job, const wire_remote *r, const a2a_alltoallv_args *args, size_t n, int put,
              size_t base, size_t bytes)
{
    const int64_t *counts = put ? args->send_counts : args->recv_counts;
    rstream rs = {.job = job,
                  .r = *r,
                  .put = put,
                  .user = put ? (uint8_t *)(uintptr_t)args->send_data : (uint8_t *)args->recv_data,
                  .displs = put ? args->send_displacements : args->recv_displacements,
                  .n = n,
                  .es = a2a_dtype_size(args->dtype),
                  .base = base,
                  .total = bytes};
    pthread_t t[CLIENT_REMOTE_WINDOW - 1];
    size_t chunks = (bytes + WIRE_REMOTE_CHUNK - 1) / WIRE_REMOTE_CHUNK, nt = 0;

    if (bytes == 0)
        return A2A_OK;
    if ((rs.starts = malloc((n + 1) * sizeof(size_t))) == NULL)
        return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    rs.starts[0] = 0;
    for (size_t j = 0; j < n; j++)
        rs.starts[j + 1] = rs.starts[j] + (size_t)counts[j] * rs.es;
    pthread_mutex_init(&rs.mtx, NULL);
    for (; nt + 1 < chunks && nt < CLIENT_REMOTE_WINDOW - 1; nt++) /* the caller is one mover */
        if (pthread_create(&t[nt], NULL, rs_mover, &rs) != 0)
            break;
    rs_mover(&rs);
    for (size_t i = 0; i < nt; i++)
        pthread_join(t[i], NULL);
    pthread_mutex_destroy(&rs.mtx);
    free(rs.starts);
    if (rs.st == A2A_ERR_UNAVAILABLE && job->worker[0] != '\0' &&
        strstr(rs.err, "worker ") != rs.err)
        return job_fail(job, rs.st, "worker %s: %s", job->worker, rs.err);
    if (rs.st != A2A_OK)
        return job_fail(job, rs.st, "%s", rs.err);
    return A2A_OK;
}

/*
 * remote_once runs w (the counts copied from args) on the remote session,
 * in slot: the send slices packed and put in chunks, the call, the receive
 * slices got in chunks and unpacked. *gone: the worker no longer knows the
 * session (it restarted, or our connection to it closed) before the call
 * ran, so attaching again and retrying is safe.
 */
static a2a_status
remote_once(a2a_job *job, unsigned slot, wire_a2av *w, const a2a_alltoallv_args *args, int *gone)
{
    size_t n = w->n, es = a2a_dtype_size(args->dtype), sbytes = 0, rbytes = 0, roff, total;
    uint64_t base = (slot + 1) * WIRE_REMOTE_SLOT_SPAN, gen;
    wire_remote r;
    msgpack_sbuffer sb;
    a2a_status st = A2A_OK;

    int discover = args->recv_counts == NULL;

    *gone = 0;
    for (size_t j = 0; j < n; j++)
        if (__builtin_add_overflow(sbytes, (size_t)w->counts[j] * es, &sbytes) ||
            (!discover &&
             __builtin_add_overflow(rbytes, (size_t)w->counts[2 * n + j] * es, &rbytes)))
            return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "the slices are too large");
    if (discover) /* room for the whole capacity (args_check: no overflow) */
        rbytes = args->recv_len * es;
    roff = (sbytes + 4095) & ~(size_t)4095;
    total = roff + rbytes;
    pthread_mutex_lock(&job->mtx);
    r = job->rsess;
    gen = job->rsess_gen;
    pthread_mutex_unlock(&job->mtx);
    r.slot = slot;
    if (job->slot_gen[slot] != gen || job->slot_len[slot] < total) { /* the slot is ours */
        r.len = total > 0 ? total : 4096;
        if ((st = remote_rpc(job, "RemoteReserve", &r, CLIENT_CALL_MS, NULL, NULL)) != A2A_OK)
            goto out;
        job->slot_len[slot] = r.len;
        job->slot_gen[slot] = gen;
        r.len = 0;
    }
    if ((st = remote_stream(job, &r, args, n, 1, 0, sbytes)) != A2A_OK)
        goto out;
    size_t off = 0, roff_j = 0; /* the slices' displacements in the slot: packed */
    for (size_t j = 0; j < n; j++) {
        w->counts[n + j] = (int64_t)(off / es);
        off += (size_t)w->counts[j] * es;
        if (discover)
            continue;
        w->counts[3 * n + j] = (int64_t)(roff_j / es);
        roff_j += (size_t)w->counts[2 * n + j] * es;
    }
    w->send_addr = base;
    w->send_len = sbytes / es;
    w->recv_addr = base + roff;
    w->recv_len = rbytes / es;
    msgpack_sbuffer_init(&sb);
    if (wire_a2av_encode(&sb, w) != 0) {
        st = job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        msgpack_sbuffer rb;
        uint8_t *rep = NULL;
        size_t replen = 0;
        int64_t next = -1;
        char bad[128];
        r.data = (const uint8_t *)sb.data;
        r.data_len = sb.size;
        msgpack_sbuffer_init(&rb);
        if (wire_remote_encode(&rb, &r) != 0)
            st = job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        else
            st = call(job, "RemoteCall", &rb, w->timeout_ms + CLIENT_SLACK_MS, &rep, &replen);
        msgpack_sbuffer_destroy(&rb);
        /* the reply's body is our next operation number (none: the call never got through); decoded
         * before the call, whose arguments C evaluates in no set order, and with count discovery
         * the counts received */
        int64_t *got = discover && st == A2A_OK ? w->counts + 2 * n : NULL;
        int ok = rep != NULL &&
                 wire_a2av_reply_decode_counts(&next, got, n, rep, replen, bad, sizeof(bad)) == 0;
        opnum_put(job, w, ok, next, st);
        free(rep);
        if (st == A2A_OK && !ok)
            st = job_fail(job, A2A_ERR_INTERNAL, "worker %s: a bad RemoteCall reply: %s",
                          job->worker, bad);
        else if (st == A2A_OK)
            st = counts_back(job, w, args);
        r.data = NULL;
        r.data_len = 0;
    }
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_OK && discover) { /* what came, packed: get it as its own counts say */
        int64_t *displs = malloc(n * sizeof(int64_t));
        a2a_alltoallv_args got = *args;
        size_t at = 0;
        if (displs == NULL)
            return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        for (size_t j = 0; j < n; j++) {
            displs[j] = (int64_t)at;
            at += (size_t)w->counts[2 * n + j]; /* counts_back: at most recv_len in all */
        }
        got.recv_counts = w->counts + 2 * n;
        got.recv_displacements = displs;
        st = remote_stream(job, &r, &got, n, 0, roff, at * es);
        free(displs);
        return st;
    }
    if (st == A2A_OK) { /* the call ran: running it again would be another operation */
        st = remote_stream(job, &r, args, n, 0, roff, rbytes);
        return st;
    }
out:
    if (st == A2A_ERR_UNAVAILABLE && strstr(a2a_job_error(job), "has no remote session") != NULL)
        *gone = 1;
    return st;
}

/* remote_all_to_all_v runs a call in remote mode; once again after attaching anew when the
 * worker lost our session (it restarted: the call never ran). */
static a2a_status
remote_all_to_all_v(a2a_job *job, wire_a2av *w, const a2a_alltoallv_args *args)
{
    unsigned slot = remote_slot_take(job);
    int gone = 0;
    a2a_status st = remote_once(job, slot, w, args, &gone);
    if (gone && remote_attach(job) == A2A_OK) {
        memcpy(w->counts + w->n, args->send_displacements, w->n * sizeof(int64_t));
        if (args->recv_displacements != NULL)
            memcpy(w->counts + 3 * w->n, args->recv_displacements, w->n * sizeof(int64_t));
        st = remote_once(job, slot, w, args, &gone);
    }
    remote_slot_give(job, slot);
    return st;
}

req_lanes **
client_lanes(a2a_job *job)
{
    return &job->lanes;
}

a2a_status
client_fail(a2a_job *job, a2a_status st, const char *msg)
{
    return job_fail(job, st, "%s", msg);
}

void
client_stop_calls(a2a_job *job)
{
    pthread_mutex_lock(&job->lmtx);
    job->closing = 1;
    if (job->lsock >= 0)
        local_broken(job, ESHUTDOWN);
    pthread_mutex_unlock(&job->lmtx);
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
    pthread_mutex_init(&job->lmtx, NULL);
    pthread_cond_init(&job->lcv, NULL);
    pthread_cond_init(&job->slot_cv, NULL);
    pthread_cond_init(&job->gcv, NULL);
    job->lsock = -1;
    job->id.world_rank = world_rank;
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
        (st = job_hello(job, worker_url)) != A2A_OK || (st = job_pick_mode(job)) != A2A_OK) {
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
stage_free(job_stage *st)
{
    if (st->ptr != NULL)
        munmap(st->ptr, st->len);
    if (st->fd >= 0)
        close(st->fd);
    st->ptr = NULL;
    st->len = 0;
    st->fd = -1;
    st->gen = 0;
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
    /* the worker lets go of the staging with the channel's session, or when it is replaced */
    stage_free(&c->stage);
    free(c);
}

void
a2a_job_close(a2a_job *job)
{
    if (job == NULL)
        return;
    req_close(job, &job->lanes); /* requests in flight end first */
    while (job->chans != NULL) {
        job_chan *c = job->chans;
        job->chans = c->next;
        chan_free(c);
    }
    while (job->bufs != NULL)
        a2a_buffer_free(job, job->bufs->ptr);
    while (job->plain != NULL)
        a2a_buffer_free(job, job->plain->ptr);
    if (job->lsock >= 0)
        close(job->lsock); /* the worker frees our rank and everything we handed over */
    if (job->remote && job->rsess.session != 0)
        remote_detach(job);
    while (job->stages != NULL) {
        job_stage *st = job->stages;
        job->stages = st->next;
        stage_free(st);
        free(st);
    }
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
    while (job->glocks != NULL) {
        job_glock *l = job->glocks;
        job->glocks = l->next;
        free(l);
    }
    pthread_cond_destroy(&job->gcv);
    pthread_cond_destroy(&job->slot_cv);
    pthread_cond_destroy(&job->lcv);
    pthread_mutex_destroy(&job->lmtx);
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
                if (g->suspect && pass == 0) {
                    /* the last call failed: the group may have been destroyed and created
                     * again with another size; keep the copy only if nobody can tell */
                    g->suspect = 0;
                    pthread_mutex_unlock(&job->mtx);
                    st = resolve(job, group, "GetGroup", 0, NULL, NULL);
                    if (st == A2A_ERR_NOT_FOUND || st == A2A_ERR_INVALID_ARGUMENT)
                        return st;
                    pthread_mutex_lock(&job->mtx);
                    pass = 1;
                    g = job->groups; /* the cache changed: look again */
                    for (; g != NULL && strcmp(g->name, group) != 0; g = g->next)
                        ;
                    if (g == NULL)
                        break;
                }
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

/* pointers_why says what a2a.h's arguments get wrong before counts are read (in buf), or
 * NULL. */
static const char *
pointers_why(const a2a_alltoallv_args *a, char *buf, size_t len)
{
    if (a == NULL)
        return "args is NULL";
    if (a->send_counts == NULL || a->send_displacements == NULL)
        return "send_counts and send_displacements must be given";
    if ((a->recv_counts == NULL) != (a->recv_displacements == NULL)) {
        snprintf(buf, len,
                 "recv_counts is %s but recv_displacements is %s: give both, or neither for "
                 "count discovery",
                 a->recv_counts == NULL ? "NULL" : "given",
                 a->recv_displacements == NULL ? "NULL" : "given");
        return buf;
    }
    if (a->recv_counts == NULL && a->recv_counts_out == NULL)
        return "count discovery (recv_counts NULL) needs recv_counts_out for the counts";
    if ((a->send_data == NULL && a->send_len > 0) || (a->recv_data == NULL && a->recv_len > 0))
        return "a buffer is NULL but its length is not 0";
    if (a->timeout_ms < 0) {
        snprintf(buf, len, "timeout_ms is negative (%lld)", (long long)a->timeout_ms);
        return buf;
    }
    return NULL;
}

/* check_pointers: pointers_why as the job's error. */
static a2a_status
check_pointers(a2a_job *job, const a2a_alltoallv_args *a)
{
    char buf[256];
    const char *why = pointers_why(a, buf, sizeof(buf));
    return why != NULL ? job_fail(job, A2A_ERR_INVALID_ARGUMENT, "%s", why) : A2A_OK;
}

/* chan_new makes a channel and has the worker open it; NULL when either fails (no job error). */
static job_chan *
chan_new(a2a_job *job)
{
    job_chan *c = calloc(1, sizeof(*c));
    wire_buffer w = {.len = SHMCHAN_SIZE};
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    int64_t worker_pid;
    char err[1024];
    int rc = -1;

    if (c == NULL)
        return NULL;
    c->stage.fd = -1;
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
    w.addr = (uint64_t)(uintptr_t)c->mem;
    msgpack_sbuffer_init(&sb);
    wire_buffer_encode(&sb, &w);
    pthread_mutex_lock(&job->lmtx);
    if (local_ensure(job) == A2A_OK &&
        local_request(job, "OpenChannel", &sb, c->fd, CLIENT_CALL_MS, &rep, &replen, err,
                      sizeof(err)) == A2A_OK &&
        shmchan_open_reply_decode(&worker_pid, rep, replen, err, sizeof(err)) == 0) {
        c->gen = job->lgen;
        rc = 0;
    }
    pthread_mutex_unlock(&job->lmtx);
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    if (rc != 0) {
        chan_free(c);
        return NULL;
    }
    return c;
}

/* chan_take returns a channel for a call over a group of n ranks, or NULL: use the socket (or,
 * may_open == 0, none is free and none is opened now). */
static job_chan *
chan_take(a2a_job *job, size_t n, int may_open)
{
    uint64_t gen = __atomic_load_n(&job->lgen, __ATOMIC_ACQUIRE);
    job_chan *c = NULL, *stale = NULL;
    int open = 0;

    if (job->chan_off || n > SHMCHAN_MAX_N)
        return NULL;
    pthread_mutex_lock(&job->mtx);
    while ((c = job->chans) != NULL && c->gen != gen) { /* of a session that is gone */
        job->chans = c->next;
        job->nchans--;
        c->next = stale;
        stale = c;
    }
    if (c != NULL)
        job->chans = c->next;
    else if (may_open && job->nchans < CLIENT_CHAN_MAX && rpc_now_ms() >= job->chan_retry_ms)
        open = 1, job->nchans++;
    pthread_mutex_unlock(&job->mtx);
    while (stale != NULL) {
        job_chan *x = stale;
        stale = x->next;
        chan_free(x);
    }
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

/* session_gone reports whether the session that channel c was opened on has ended. */
static int
session_gone(a2a_job *job, const job_chan *c)
{
    int gone;
    if (__atomic_load_n(&job->lgen, __ATOMIC_ACQUIRE) != c->gen)
        return 1;
    /* a peek at the socket: a worker that died closed it (its kernel did) */
    pthread_mutex_lock(&job->lmtx);
    gone = c->gen != job->lgen || job->lsock < 0 || job->lbroken ||
           (!job->lreading && lsock_peer_gone(job->lsock));
    pthread_mutex_unlock(&job->lmtx);
    return gone;
}

/* chan_send puts w into channel c and rings the worker; 0: the worker closed c, and never
 * started the call. */
static int
chan_send(job_chan *c, const wire_a2av *w)
{
    uint32_t s = shmchan_state(c->mem);
    if ((s != SHMCHAN_IDLE && s != SHMCHAN_REPLY) ||
        shmchan_req_write(c->mem, SHMCHAN_SIZE, ++c->seq, w) != 0 ||
        !shmchan_cas(c->mem, s, SHMCHAN_REQUEST, NULL))
        return 0;
    shmchan_ring(c->mem);
    return 1;
}

/*
 * chan_end waits until deadline (rpc_now_ms) for the reply to the call that
 * chan_send put in channel c. *served = 0: the worker never started it (the
 * channel was closed), so the socket may run it. *keep = 0: the channel is of
 * no further use.
 */
static a2a_status
chan_end(a2a_job *job, job_chan *c, int64_t deadline, int *served, int *keep, int64_t *next)
{
    char msg[SHMCHAN_MSG_MAX];
    int64_t left;
    a2a_status st;
    uint32_t s;

    *served = 0;
    *keep = 0;
    *next = -2; /* no reply */
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
        if (shmchan_state(c->mem) == SHMCHAN_REQUEST && session_gone(job, c)) {
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
 * call. With count discovery the slice's place is known only from the reply:
 * it is only announced here, and stage_out copies it after the call. If our
 * cached rank were stale, the worker fails the operation for everyone
 * (engine.c call_run: it checks self_copied against the rank it knows), as
 * the staging leaves that rank's slice out.
 */
static void
self_copy(wire_a2av *w, const a2a_alltoallv_args *args, int64_t me)
{
    size_t n = w->n, es = a2a_dtype_size(args->dtype);
    if (me < 0 || (size_t)me >= n || w->counts[me] == 0)
        return;
    if (args->recv_counts == NULL) { /* count discovery: after the call (stage_out) */
        w->self_copied = me + 1;
        return;
    }
    if (w->counts[me] != w->counts[2 * n + (size_t)me])
        return;
    memmove((char *)args->recv_data + (size_t)w->counts[3 * n + (size_t)me] * es,
            (const char *)args->send_data + (size_t)w->counts[n + (size_t)me] * es,
            (size_t)w->counts[me] * es);
    w->self_copied = me + 1;
}

/* The call of this thread whose number was taken and not yet put back (opnum_take, opnum_put):
 * a call that fails on its way to the worker still was the job's call of that number. */
static __thread struct {
    int pending;
    char group[A2A_GROUP_NAME_MAX + 1];
    int64_t op_next;
} opnum_taken;

/* opnum_take fills w's operation number for its group (from this job's record). */
static void
opnum_take(a2a_job *job, wire_a2av *w)
{
    opnum_taken.pending = 1;
    snprintf(opnum_taken.group, sizeof(opnum_taken.group), "%s", w->group);
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
    opnum_taken.op_next = w->op_next;
}

/*
 * opnum_put records how w's call ended: next is the worker's number for our next call (-1: it
 * refused the call before numbering it, so ours stands); without an answer (replied == 0) the
 * call may have been numbered, so the next one resynchronises. A job that has no number yet
 * counts its calls that failed before they were numbered, for want of the worker or the
 * coordinator or by their deadline (as a worker's spend does for a numbered job; a call refused
 * for its arguments does not count): its next call says -1 - that count, and as the rank's first
 * job's k-th call it is operation k, where the others' calls of those rounds went on without it.
 */
static void
opnum_put(a2a_job *job, const wire_a2av *w, int replied, int64_t next, a2a_status st)
{
    job_opnum *o;
    opnum_taken.pending = 0;
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
        o->next_op = w->op_next >= 0                 ? w->op_next + 1
                     : w->op_next > WIRE_OP_NEXT_MIN ? w->op_next - 1
                                                     : w->op_next;
        o->failed = 1;
    } else if (o != NULL && w->op_next < 0 && w->op_next > WIRE_OP_NEXT_MIN &&
               (st == A2A_ERR_UNAVAILABLE || st == A2A_ERR_DEADLINE_EXCEEDED ||
                st == A2A_ERR_RESOURCE_EXHAUSTED)) {
        o->next_op = w->op_next - 1; /* refused before it was numbered, for want of something */
        o->failed = 1;
    }
    pthread_mutex_unlock(&job->mtx);
}

/* in_shared reports whether [p, p + len) lies in one a2a_buffer_alloc buffer (mapped by the
 * worker already). */
static int
in_shared(a2a_job *job, const void *p, size_t len)
{
    int in = 0;
    uintptr_t a = (uintptr_t)p;
    pthread_mutex_lock(&job->mtx);
    for (job_buf *b = job->bufs; b != NULL && !in; b = b->next) {
        uintptr_t s = (uintptr_t)b->ptr;
        in = a >= s && len <= b->len && a - s <= b->len - len;
    }
    pthread_mutex_unlock(&job->mtx);
    return in;
}

/*
 * stage_reserve makes st hold at least bytes, mapped by the worker on the
 * current session; under lmtx (the session must be live). A new memfd
 * replaces a smaller one (the worker lets go of the old one first).
 */
static a2a_status
stage_reserve(a2a_job *job, job_stage *st, size_t bytes)
{
    char err[1024];
    a2a_status s;
    size_t len;
    int fd;
    void *p;

    if (st->ptr != NULL && st->len >= bytes && st->gen == job->lgen)
        return A2A_OK;
    if (st->ptr != NULL && st->len >= bytes) { /* a new session: hand it over again */
        if ((s = local_map(job, st->fd, st->ptr, st->len, 1, err, sizeof(err))) != A2A_OK)
            return job_fail(job, s, "%s", err);
        st->gen = job->lgen;
        return A2A_OK;
    }
    if (st->ptr != NULL && st->gen == job->lgen)
        (void)local_map(job, -1, st->ptr, st->len, 0, err, sizeof(err));
    stage_free(st);
    len = bytes < ((size_t)1 << 62) ? bytes : ((size_t)1 << 62);
    len = (len + CLIENT_STAGE_ALIGN - 1) & ~(size_t)(CLIENT_STAGE_ALIGN - 1);
    if (len == 0)
        len = CLIENT_STAGE_ALIGN;
    /* no MAP_POPULATE: the pages a call never touches (its own slice) stay unallocated */
    fd = memfd_create("a2a-staging", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED,
                        "cannot make %zu bytes of staging memory: %s", len, strerror(e));
    }
    st->ptr = p;
    st->len = len;
    st->fd = fd;
    if ((s = local_map(job, fd, p, len, 1, err, sizeof(err))) != A2A_OK) {
        stage_free(st);
        return job_fail(job, s, "%s", err);
    }
    st->gen = job->lgen;
    return A2A_OK;
}

/* A call's plan for its plain buffers: where each slice sits in the staging memory. */
typedef struct {
    int send, recv; /* staged (plain) or not (shared, or nothing to move) */
    int discover;   /* count discovery: the receive slices land packed from element 0 */
    size_t recv_off;
    size_t bytes;
} stage_plan;

/*
 * stage_in packs the plain buffers' slices of w (from args) into st and points
 * w at the staging memory (the displacements rewritten to packed ones): the
 * send slices copied now, the receive slices unpacked by stage_out after the
 * call. The slice to ourselves (w->self_copied) is neither copied nor touched
 * by the worker; its room in the staging stays a hole. lmtx held when
 * locked is STAGE_LOCKED, else taken here; with STAGE_QUICK, a staging that
 * must be made or handed over again first is not (A2A_ERR_UNAVAILABLE, and no
 * job error): the caller takes the slow way. STAGE_CHECK says whether
 * STAGE_QUICK would succeed, and copies nothing.
 */
enum { STAGE_UNLOCKED, STAGE_LOCKED, STAGE_QUICK, STAGE_CHECK };
static a2a_status
stage_in(a2a_job *job, job_stage *st, wire_a2av *w, const a2a_alltoallv_args *args,
         stage_plan *plan, int locked)
{
    size_t n = w->n, es = a2a_dtype_size(args->dtype), sbytes = 0, rbytes = 0;
    int64_t self = w->self_copied - 1;
    a2a_status s = A2A_OK;

    memset(plan, 0, sizeof(*plan));
    plan->send = args->send_len > 0 && !in_shared(job, args->send_data, args->send_len * es);
    plan->recv = args->recv_len > 0 && !in_shared(job, args->recv_data, args->recv_len * es);
    plan->discover = args->recv_counts == NULL;
    for (size_t j = 0; j < n; j++) {
        if (plan->send && __builtin_add_overflow(sbytes, (size_t)w->counts[j] * es, &sbytes))
            return locked >= STAGE_QUICK
                       ? A2A_ERR_RESOURCE_EXHAUSTED
                       : job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "the send slices are too large");
        if (plan->recv && !plan->discover &&
            __builtin_add_overflow(rbytes, (size_t)w->counts[2 * n + j] * es, &rbytes))
            return locked >= STAGE_QUICK ? A2A_ERR_RESOURCE_EXHAUSTED
                                         : job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED,
                                                    "the receive slices are too large");
    }
    if (plan->recv && plan->discover) /* the whole capacity (args_check: no overflow) */
        rbytes = args->recv_len * es;
    plan->send = plan->send && sbytes > 0;
    plan->recv = plan->recv && rbytes > 0;
    if (!plan->send && !plan->recv)
        return A2A_OK;
    plan->recv_off = (sbytes + CLIENT_STAGE_ALIGN - 1) & ~(size_t)(CLIENT_STAGE_ALIGN - 1);
    plan->bytes = plan->recv_off + rbytes;
    /* the usual case needs no word with the worker: staging big enough, on this session */
    if (locked == STAGE_LOCKED || st->ptr == NULL || st->len < plan->bytes ||
        st->gen != __atomic_load_n(&job->lgen, __ATOMIC_ACQUIRE)) {
        if (locked >= STAGE_QUICK)
            return A2A_ERR_UNAVAILABLE;
        if (locked == STAGE_UNLOCKED)
            pthread_mutex_lock(&job->lmtx);
        if ((s = local_ensure(job)) == A2A_OK)
            s = stage_reserve(job, st, plan->bytes);
        if (locked == STAGE_UNLOCKED)
            pthread_mutex_unlock(&job->lmtx);
        if (s != A2A_OK)
            return s;
    }
    if (locked == STAGE_CHECK)
        return A2A_OK;
    size_t off = 0;
    for (size_t j = 0; plan->send && j < n; j++) {
        size_t b = (size_t)w->counts[j] * es;
        if (b > 0 && (int64_t)j != self)
            memcpy(st->ptr + off, (const char *)args->send_data + (size_t)w->counts[n + j] * es, b);
        w->counts[n + j] = (int64_t)(off / es);
        off += b;
    }
    if (plan->send) {
        w->send_addr = (uint64_t)(uintptr_t)st->ptr;
        w->send_len = sbytes / es;
    }
    off = 0;
    for (size_t j = 0; plan->recv && !plan->discover && j < n; j++) {
        w->counts[3 * n + j] = (int64_t)(off / es);
        off += (size_t)w->counts[2 * n + j] * es;
    }
    if (plan->recv) {
        w->recv_addr = (uint64_t)(uintptr_t)(st->ptr + plan->recv_off);
        w->recv_len = rbytes / es;
    }
    return A2A_OK;
}

/* stage_out unpacks the receive slices that the call landed in st into args->recv_data (and
 * places a discovering call's own slice, after the counts of the ranks before it). */
static void
stage_out(const job_stage *st, const wire_a2av *w, const a2a_alltoallv_args *args,
          const stage_plan *plan)
{
    size_t n = w->n, es = a2a_dtype_size(args->dtype), off = plan->recv_off;
    int64_t self = w->self_copied - 1;

    if (plan->discover) {                       /* packed already: as many as came (checked) */
        size_t before = 0, mine = 0, total = 0; /* the slices before our own, ours, all */
        for (size_t j = 0; j < n; j++) {
            size_t k = (size_t)w->counts[2 * n + j];
            before += (int64_t)j < self ? k : 0;
            mine += (int64_t)j == self ? k : 0;
            total += k;
        }
        /* our own slice (self_copy announced it: the worker left it out) first, from the send
         * buffer, before the copy out of the staging could overwrite that (send and receive
         * buffers may overlap); then the others, around the hole it left */
        if (self >= 0) {
            size_t k =
                mine < (size_t)args->send_counts[self] ? mine : (size_t)args->send_counts[self];
            memmove((char *)args->recv_data + before * es,
                    (const char *)args->send_data + (size_t)args->send_displacements[self] * es,
                    k * es);
        }
        if (plan->recv) {
            memcpy(args->recv_data, st->ptr + off, before * es);
            memcpy((char *)args->recv_data + (before + mine) * es,
                   st->ptr + off + (before + mine) * es, (total - before - mine) * es);
        }
        return;
    }
    for (size_t j = 0; plan->recv && j < n; j++) {
        size_t b = (size_t)args->recv_counts[j] * es;
        if (b > 0 && (int64_t)j != self)
            memcpy((char *)args->recv_data + (size_t)args->recv_displacements[j] * es,
                   st->ptr + off, b);
        off += b;
    }
}

/* fill_request builds w from args: the counts copied, our buffers' addresses. */
static void
fill_request(a2a_job *job, wire_a2av *w, const a2a_alltoallv_args *args, const char *group)
{
    size_t n = w->n;
    memcpy(w->counts, args->send_counts, n * sizeof(int64_t));
    memcpy(w->counts + n, args->send_displacements, n * sizeof(int64_t));
    for (size_t j = 0; args->recv_counts == NULL && j < 2 * n; j++)
        w->counts[2 * n + j] = ARGS_DISCOVER; /* count discovery */
    if (args->recv_counts != NULL) {
        memcpy(w->counts + 2 * n, args->recv_counts, n * sizeof(int64_t));
        memcpy(w->counts + 3 * n, args->recv_displacements, n * sizeof(int64_t));
    }
    w->job = job->id;
    snprintf(w->group, sizeof(w->group), "%s", group);
    w->dtype = (int64_t)(int)args->dtype;
    w->timeout_ms = args->timeout_ms > 0 ? args->timeout_ms : job->op_timeout_ms;
    w->send_addr = (uint64_t)(uintptr_t)args->send_data;
    w->send_len = args->send_len;
    w->recv_addr = (uint64_t)(uintptr_t)args->recv_data;
    w->recv_len = args->recv_len;
    w->self_copied = 0;
}

/*
 * counts_back checks the receive counts a discovering call got (the receive half of w->counts,
 * from the worker's reply) against recv_len, so that nothing is unpacked past it, and writes
 * them to args->recv_counts_out; with known counts it writes those.
 */
static a2a_status
counts_back(a2a_job *job, const wire_a2av *w, const a2a_alltoallv_args *args)
{
    size_t n = w->n;
    uint64_t total = 0;

    if (args->recv_counts != NULL) {
        if (args->recv_counts_out != NULL)
            memcpy(args->recv_counts_out, args->recv_counts, n * sizeof(int64_t));
        return A2A_OK;
    }
    for (size_t j = 0; j < n; j++) {
        int64_t c = w->counts[2 * n + j];
        if (c < 0 || (uint64_t)c > args->recv_len - total)
            return job_fail(job, A2A_ERR_INTERNAL,
                            "worker %s answered received counts beyond recv_len (%zu elements): "
                            "count %lld from group rank %zu",
                            job->worker, args->recv_len, (long long)c, j);
        total += (uint64_t)c;
    }
    memcpy(args->recv_counts_out, w->counts + 2 * n, n * sizeof(int64_t));
    return A2A_OK;
}

/*
 * A call between its start and its end: from a2a_all_to_all_v in one thread, or from
 * client_call_submit (a2a_all_to_all_v_start's thread) to client_call_finish (its lane).
 */
struct client_call {
    a2a_job *job;
    const a2a_alltoallv_args *args;
    char group[A2A_GROUP_NAME_MAX + 1];
    job_glock *one; /* held: the group's calls, one at a time */
    int64_t t0;     /* when the call began: its timeout counts from here */
    int64_t me;     /* our rank in the group */
    wire_a2av w;
    job_chan *ch;     /* the channel it runs on, or NULL: the socket */
    int sent;         /* in ch, the worker rung */
    int64_t deadline; /* of the reply on ch (rpc_now_ms) */
    stage_plan plan;
};

/* glock_of finds (or makes) the lock of group's calls in job; NULL out of memory. */
static job_glock *
glock_of(a2a_job *job, const char *group)
{
    job_glock *l;
    char name[A2A_GROUP_NAME_MAX + 1];

    snprintf(name, sizeof(name), "%s", group); /* a longer name fails check_name anyway */
    pthread_mutex_lock(&job->mtx);
    for (l = job->glocks; l != NULL && strcmp(l->name, name) != 0; l = l->next)
        ;
    if (l == NULL && (l = calloc(1, sizeof(*l))) != NULL) {
        snprintf(l->name, sizeof(l->name), "%s", name);
        l->next = job->glocks;
        job->glocks = l;
    }
    pthread_mutex_unlock(&job->mtx);
    return l;
}

/* glock_take takes l, waiting for the call that holds it; glock_try only if nobody does (1). */
static void
glock_take(a2a_job *job, job_glock *l)
{
    pthread_mutex_lock(&job->mtx);
    while (l->busy)
        pthread_cond_wait(&job->gcv, &job->mtx);
    l->busy = 1;
    pthread_mutex_unlock(&job->mtx);
}

static int
glock_try(a2a_job *job, job_glock *l)
{
    int got;
    pthread_mutex_lock(&job->mtx);
    if ((got = !l->busy) != 0)
        l->busy = 1;
    pthread_mutex_unlock(&job->mtx);
    return got;
}

static void
glock_give(a2a_job *job, job_glock *l)
{
    pthread_mutex_lock(&job->mtx);
    l->busy = 0;
    pthread_cond_broadcast(&job->gcv);
    pthread_mutex_unlock(&job->mtx);
}

static a2a_status call_run(client_call *c);
static a2a_status call_end(client_call *c);

/* call_after ends a call of args on job that returned st, holding one (or NULL). */
static a2a_status
call_after(a2a_job *job, const a2a_alltoallv_args *args, a2a_status st, job_glock *one)
{
    /* a failure that a changed group explains (destroyed, created again with another size or
     * without us): the group is asked for again before the next call */
    if ((st == A2A_ERR_INVALID_ARGUMENT || st == A2A_ERR_NOT_FOUND ||
         st == A2A_ERR_PERMISSION_DENIED) &&
        job != NULL) {
        const char *group = args != NULL && args->group != NULL ? args->group : A2A_WORLD_GROUP;
        pthread_mutex_lock(&job->mtx);
        for (job_group *g = job->groups; g != NULL; g = g->next)
            if (strcmp(g->name, group) == 0)
                g->suspect = 1;
        pthread_mutex_unlock(&job->mtx);
    }
    if (opnum_taken.pending) { /* it failed before reaching a worker: its number is spent */
        wire_a2av w = {.op_next = opnum_taken.op_next};
        snprintf(w.group, sizeof(w.group), "%s", opnum_taken.group);
        opnum_put(job, &w, 0, -1, st);
    }
    if (one != NULL)
        glock_give(job, one);
    return st;
}

a2a_status
a2a_all_to_all_v(a2a_job *job, const a2a_alltoallv_args *args)
{
    client_call c = {.job = job, .args = args, .me = -1};
    a2a_status st;
    if (req_route(job, args, &st)) /* after the calls started before it on the group */
        return st;
    /* calls on one group from several threads: one at a time, each with the number the one
     * before left (calls on different groups still run at the same time) */
    if (job != NULL && args != NULL &&
        (c.one = glock_of(job, args->group != NULL ? args->group : A2A_WORLD_GROUP)) != NULL)
        glock_take(job, c.one);
    opnum_taken.pending = 0;
    st = call_run(&c);
    return call_after(job, args, st, c.one);
}

/* timeout_left makes w's timeout what is left of it since t0, when the call began: resolving
 * the group or reaching a restarted worker again takes part of it, and the worker counts what
 * it is told afresh (calls 0.9-1.1 s late in campaign seed 22051) */
static void
timeout_left(wire_a2av *w, int64_t t0)
{
    int64_t spent = rpc_now_ms() - t0;
    if (spent > 0)
        w->timeout_ms = w->timeout_ms > spent ? w->timeout_ms - spent : 1;
}

/* call_send sends c on its channel (after the copies into its staging); not OK: the call
 * failed there (its channel given back). quick: nothing is touched unless it can be sent
 * without a word with the worker, since the lane makes the call again otherwise (and the
 * self copy, done twice over overlapping buffers, would copy what it wrote) */
static a2a_status
call_send(client_call *c, int quick)
{
    a2a_status st;
    if (quick &&
        (st = stage_in(c->job, &c->ch->stage, &c->w, c->args, &c->plan, STAGE_CHECK)) != A2A_OK) {
        chan_give(c->job, c->ch, 1);
        c->ch = NULL;
        return st;
    }
    self_copy(&c->w, c->args, c->me);
    if ((st = stage_in(c->job, &c->ch->stage, &c->w, c->args, &c->plan,
                       quick ? STAGE_QUICK : STAGE_UNLOCKED)) != A2A_OK) {
        chan_give(c->job, c->ch, 1);
        c->ch = NULL;
        return st;
    }
    timeout_left(&c->w, c->t0);
    c->deadline = rpc_now_ms() + c->w.timeout_ms + CLIENT_SLACK_MS;
    c->sent = chan_send(c->ch, &c->w);
    return A2A_OK;
}

/* call_run makes the call c (job, args, one set) from the start: its checks, its number, its
 * channel or the socket. */
static a2a_status
call_run(client_call *c)
{
    a2a_job *job = c->job;
    const a2a_alltoallv_args *args = c->args;
    const char *group = args != NULL ? args->group : NULL;
    char why[512];
    a2a_status st;

    c->t0 = rpc_now_ms(); /* the call's timeout counts from here, whatever path it takes */
    if ((st = check_name(job, &group)) != A2A_OK || (st = check_pointers(job, args)) != A2A_OK)
        return st;
    snprintf(c->group, sizeof(c->group), "%s", group);
    if ((st = group_size(job, group, &c->w.n, &c->me)) != A2A_OK) {
        /* our worker could not be asked: the other members' calls of this round went on
         * without ours, so its number is spent as if it had been sent (a2a_all_to_all_v puts
         * it back), and lockstep ranks stay at the same number */
        if (st == A2A_ERR_UNAVAILABLE || st == A2A_ERR_DEADLINE_EXCEEDED) {
            snprintf(c->w.group, sizeof(c->w.group), "%s", group);
            opnum_take(job, &c->w);
        }
        return st;
    }
    if ((c->w.counts = malloc(4 * c->w.n * sizeof(int64_t))) == NULL)
        return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    fill_request(job, &c->w, args, c->group);
    if ((st = args_check(c->w.n, (int64_t)(int)args->dtype, args->send_len, args->recv_len,
                         c->w.counts, why, sizeof(why))) != A2A_OK) {
        free(c->w.counts);
        return job_fail(job, st, "%s", why);
    }
    opnum_take(job, &c->w);
    if (job->remote) {
        timeout_left(&c->w, c->t0);
        st = remote_all_to_all_v(job, &c->w, args);
        free(c->w.counts);
        return st;
    }
    if ((c->ch = chan_take(job, c->w.n, 1)) != NULL && (st = call_send(c, 0)) != A2A_OK) {
        free(c->w.counts);
        return st;
    }
    return call_end(c);
}

/* call_end ends c, sent on its channel or not sent yet: the channel's reply, or the socket
 * (without a channel, or when the worker closed it before it took the call). */
static a2a_status
call_end(client_call *c)
{
    a2a_job *job = c->job;
    const a2a_alltoallv_args *args = c->args;
    wire_a2av *w = &c->w;
    msgpack_sbuffer sb;
    char why[512];
    a2a_status st = A2A_OK;

    if (c->ch != NULL) {
        int served = 0, keep = 0;
        int64_t next = -2;
        if (c->sent)
            st = chan_end(job, c->ch, c->deadline, &served, &keep, &next);
        if (served && st == A2A_OK && args->recv_counts == NULL &&
            shmchan_counts_read(c->ch->mem, SHMCHAN_SIZE, w->n, w->counts + 2 * w->n) != 0)
            st = job_fail(job, A2A_ERR_INTERNAL, "worker %s answered no received counts",
                          job->worker);
        if (served && st == A2A_OK && (st = counts_back(job, w, args)) == A2A_OK)
            stage_out(&c->ch->stage, w, args, &c->plan);
        chan_give(job, c->ch, keep);
        c->ch = NULL;
        if (served) {
            opnum_put(job, w, next >= -1, next, st);
            free(w->counts);
            return st;
        }
        fill_request(job, w, args, c->group); /* afresh for the socket */
        opnum_take(job, w);
    }
    /* on the socket itself, with staging of its own while it runs */
    job_stage *sg;
    pthread_mutex_lock(&job->mtx);
    if ((sg = job->stages) != NULL)
        job->stages = sg->next;
    pthread_mutex_unlock(&job->mtx);
    if (sg == NULL && (sg = calloc(1, sizeof(*sg))) == NULL) {
        free(w->counts);
        return job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (sg->ptr == NULL)
        sg->fd = -1;
    pthread_mutex_lock(&job->lmtx);
    if ((st = local_ensure(job)) == A2A_OK &&
        (st = stage_in(job, sg, w, args, &c->plan, STAGE_LOCKED)) == A2A_OK) {
        timeout_left(w, c->t0);
        msgpack_sbuffer_init(&sb);
        if (wire_a2av_encode(&sb, w) != 0) {
            st = job_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        } else {
            uint8_t *rep = NULL;
            size_t replen = 0;
            int64_t next = -1;
            char bad[128];
            st = local_request(job, "AllToAllV", &sb, -1, w->timeout_ms + CLIENT_SLACK_MS, &rep,
                               &replen, why, sizeof(why));
            /* without our body the reply came from no worker (the call never got through) */
            int64_t *got = args->recv_counts == NULL && st == A2A_OK ? w->counts + 2 * w->n : NULL;
            int ok = rep != NULL && wire_a2av_reply_decode_counts(&next, got, w->n, rep, replen,
                                                                  bad, sizeof(bad)) == 0;
            opnum_put(job, w, ok, next, st);
            free(rep);
            if (st != A2A_OK)
                chan_reply(job, st, why);
            else if (!ok)
                st = job_fail(job, A2A_ERR_INTERNAL, "worker %s: a bad AllToAllV reply: %s",
                              job->worker, bad);
            else if ((st = counts_back(job, w, args)) == A2A_OK)
                stage_out(sg, w, args, &c->plan);
        }
        msgpack_sbuffer_destroy(&sb);
    }
    pthread_mutex_unlock(&job->lmtx);
    pthread_mutex_lock(&job->mtx);
    sg->next = job->stages;
    job->stages = sg;
    pthread_mutex_unlock(&job->mtx);
    free(w->counts);
    return st;
}

/* group_cached gives group's size and our rank in it from the cache, when it holds the group
 * and no call has made it suspect (1); it asks nobody. */
static int
group_cached(a2a_job *job, const char *group, size_t *n, int64_t *me)
{
    int hit = 0;
    pthread_mutex_lock(&job->mtx);
    for (job_group *g = job->groups; g != NULL && !hit; g = g->next)
        if (strcmp(g->name, group) == 0 && !g->suspect) {
            *n = g->n;
            *me = index_of(g, job->id.world_rank);
            hit = *me >= 0;
        }
    pthread_mutex_unlock(&job->mtx);
    return hit;
}

int
client_call_submit(a2a_job *job, const a2a_alltoallv_args *args, client_call **out)
{
    const char *group = args->group != NULL ? args->group : A2A_WORLD_GROUP;
    client_call *c;
    char why[512];
    size_t es, bytes = 0;

    *out = NULL;
    /* only what needs no word with anybody, from a cached group, a free channel and staging
     * that fits, and no call of the group running: what the call would check otherwise, or
     * wait for, its lane does, with the error in its thread */
    if (job->remote || job->chan_off ||
        cfg_check_group_name(group, strlen(group), why, sizeof(why)) != 0 ||
        pointers_why(args, why, sizeof(why)) != NULL || (c = calloc(1, sizeof(*c))) == NULL)
        return 0;
    c->job = job;
    c->args = args;
    c->me = -1;
    c->t0 = rpc_now_ms();
    snprintf(c->group, sizeof(c->group), "%s", group);
    if (!group_cached(job, group, &c->w.n, &c->me) || c->w.n > SHMCHAN_MAX_N)
        goto slow;
    /* the copies into the staging (the slices to others and our own): larger ones the lane
     * makes while the caller goes on; counted before anything else, as most calls are */
    es = a2a_dtype_size(args->dtype);
    for (size_t j = 0; j < c->w.n && bytes <= CLIENT_SUBMIT_COPY_MAX; j++) {
        int64_t k = args->send_counts[j];
        bytes = k < 0 || (uint64_t)k > CLIENT_SUBMIT_COPY_MAX ? SIZE_MAX : bytes + (size_t)k * es;
    }
    if (bytes > CLIENT_SUBMIT_COPY_MAX ||
        (c->w.counts = malloc(4 * c->w.n * sizeof(int64_t))) == NULL)
        goto slow;
    fill_request(job, &c->w, args, c->group);
    if (args_check(c->w.n, (int64_t)(int)args->dtype, args->send_len, args->recv_len, c->w.counts,
                   why, sizeof(why)) != A2A_OK)
        goto slow;
    if ((c->one = glock_of(job, group)) == NULL || !glock_try(job, c->one)) {
        c->one = NULL;
        goto slow;
    }
    opnum_take(job, &c->w);
    opnum_taken.pending = 0; /* the lane's thread puts it back (client_call_finish) */
    if ((c->ch = chan_take(job, c->w.n, 0)) == NULL || call_send(c, 1) != A2A_OK)
        goto slow;
    if (!c->sent) { /* the worker closed the channel: its socket, in the lane */
        chan_give(job, c->ch, 0);
        c->ch = NULL;
        goto slow;
    }
    *out = c;
    return 1;
slow:
    if (c->one != NULL)
        glock_give(job, c->one);
    free(c->w.counts);
    free(c);
    return 0;
}

int
client_call_ready(const client_call *c)
{
    return !c->sent || shmchan_state(c->ch->mem) != SHMCHAN_REQUEST || rpc_now_ms() >= c->deadline;
}

a2a_status
client_call_finish(client_call *c)
{
    a2a_job *job = c->job;
    const a2a_alltoallv_args *args = c->args;
    job_glock *one = c->one;
    a2a_status st;

    opnum_taken.pending = 0;
    st = call_end(c);
    free(c);
    return call_after(job, args, st, one);
}

a2a_status
a2a_buffer_alloc(a2a_job *job, size_t bytes, void **ptr)
{
    job_buf *b;
    void *mem;
    char err[1024];

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
    /* the worker maps it too; if it cannot, the memory is still a plain buffer (staged) */
    mem = b->ptr;
    pthread_mutex_lock(&job->lmtx);
    if (!job->remote && local_ensure(job) == A2A_OK &&
        local_map(job, b->fd, b->ptr, b->len, 1, err, sizeof(err)) == A2A_OK) {
        pthread_mutex_lock(&job->mtx);
        b->next = job->bufs;
        job->bufs = b;
        pthread_mutex_unlock(&job->mtx);
        b = NULL;
    }
    pthread_mutex_unlock(&job->lmtx);
    if (b != NULL) { /* kept aside: plain memory that a2a_buffer_free still takes */
        pthread_mutex_lock(&job->mtx);
        b->next = job->plain;
        job->plain = b;
        pthread_mutex_unlock(&job->mtx);
    }
    *ptr = mem;
    return A2A_OK;
}

a2a_status
a2a_buffer_free(a2a_job *job, void *ptr)
{
    job_buf *b = NULL;
    int shared = 0;
    char err[1024];

    if (job == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "job is NULL");
    pthread_mutex_lock(&job->lmtx); /* no session hands it over again meanwhile */
    pthread_mutex_lock(&job->mtx);
    for (job_buf **pp = &job->bufs; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->ptr == ptr) {
            b = *pp;
            *pp = b->next;
            shared = 1;
            break;
        }
    for (job_buf **pp = &job->plain; b == NULL && *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->ptr == ptr) {
            b = *pp;
            *pp = b->next;
            break;
        }
    pthread_mutex_unlock(&job->mtx);
    /* the worker lets go of it before we unmap (it waits for transfers on it) */
    if (b != NULL && shared && job->lready)
        (void)local_map(job, -1, b->ptr, b->len, 0, err, sizeof(err));
    pthread_mutex_unlock(&job->lmtx);
    if (b == NULL)
        return job_fail(job, A2A_ERR_INVALID_ARGUMENT, "%p is not from a2a_buffer_alloc", ptr);
    munmap(b->ptr, b->len);
    close(b->fd);
    free(b);
    return A2A_OK;
}
