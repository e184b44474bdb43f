/*
 * local.c - the worker's Unix socket: sessions of the jobs beside it (local.h).
 *
 * One acceptor thread, and one thread per connection that reads its frames
 * (common/lsock.h: RPC envelopes, a descriptor with some) and answers them in
 * order. Methods: AuthChallenge / AuthProve (with a token, before anything
 * else), Attach [world_rank], MapBuffer / UnmapBuffer [addr, len] (+ memfd),
 * OpenChannel [addr, len] (+ memfd), AllToAllV (wire_a2av: the job's own
 * addresses, which must lie in memory it handed over). The rank a call runs
 * as is the session's, whatever the body says.
 */
#include "local.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/args.h"
#include "common/log.h"
#include "common/lsock.h"
#include "common/shmchan.h"
#include "common/status.h"
#include "common/wire.h"
#include "server/rpc.h"
#include "shm.h"
#include "engine_int.h"
#include "xfer.h"

typedef struct local_sess local_sess;

/* What one memfd a local job handed over is, for ListJobs (its name says: liba2a's staging, or a
 * shared buffer); informational only, nothing is decided by it. */
typedef struct local_kind {
    struct local_kind *next;
    uint64_t addr;
    int staging;
} local_kind;

struct local_sess {
    local_sess *next;
    local_srv *srv;
    int sock;
    pthread_t thread;
    xfer_sess x; /* what the engine and the channels see */
    int proved;  /* past the token (or no token) */
    int claimed; /* x.world_rank is this session's: others may not attach as it */
    uint8_t snonce[AUTH_NONCE_LEN], cnonce[AUTH_NONCE_LEN];
    int challenged;
    pthread_mutex_t wmtx; /* one frame written at a time: replies come from several threads */
    size_t ncalls;        /* AllToAllV threads running (under srv->mtx) */
    /* a remote session (no socket, sock -1): its key, its staging, its users (under srv->mtx) */
    int remote;
    uint64_t rkey[2];
    size_t rrefs; /* calls using it now */
    uint64_t slot_len[LOCAL_REMOTE_SLOTS];
    uint64_t rbytes;   /* staging held, in all slots */
    uint32_t pipe_id;  /* the RPC connection it came on: when that closes, the job is gone */
    int gone;          /* out of s->live already: released when its last call ends */
    local_kind *kinds; /* a local session's memfds (under srv->mtx) */
    int ever_shared;   /* it handed over a shared buffer once: its mode is shared (ListJobs) */
};

struct local_srv {
    engine *e;
    chan_set *cs;
    auth_key key;
    int has_key;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int lsock;
    pthread_t acceptor;
    pthread_mutex_t mtx; /* everything below */
    pthread_cond_t cv;   /* a session ended, or released its rank */
    local_sess *live;
    size_t nlive, nunproved;
    uint64_t next_id;
    int stopping;
    rpc_server *rpc; /* the TCP API whose connections remote sessions come on (local_watch) */
    size_t nzombie;  /* remote sessions out of live whose calls (or release) are not over */
};

/* ---- replies ---- */

static int
local_reply(local_sess *ls, uint64_t id, a2a_status st, const char *msg, msgpack_sbuffer *body)
{
    wire_reply rep = {.id = id, .status = st};
    msgpack_sbuffer sb;
    int rc;

    if (body != NULL && (st == A2A_OK || body->size > 0)) { /* a failure may have one too */
        rep.body = (const uint8_t *)body->data;
        rep.body_len = body->size;
    }
    if (st != A2A_OK)
        snprintf(rep.message, sizeof(rep.message), "%s", msg);
    msgpack_sbuffer_init(&sb);
    pthread_mutex_lock(&ls->wmtx);
    rc = wire_reply_encode(&sb, &rep) != 0 ? ENOMEM
                                           : lsock_send(ls->sock, sb.data, sb.size, -1, 10000);
    pthread_mutex_unlock(&ls->wmtx);
    msgpack_sbuffer_destroy(&sb);
    if (rc != 0)
        shutdown(ls->sock, SHUT_RDWR); /* the session's reader sees it and ends the session */
    return rc;
}

/* ---- the token ---- */

static a2a_status
m_challenge(local_sess *ls, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    uint8_t in[1][WIRE_BIN32], mac[AUTH_MAC_LEN];
    const uint8_t *out[2] = {ls->snonce, mac};

    ls->challenged = 0;
    if (wire_bins_decode(in, 1, body, len, ctx->message, sizeof(ctx->message)) != 0) {
        ctx->close_after = 1;
        return A2A_ERR_INVALID_ARGUMENT;
    }
    memcpy(ls->cnonce, in[0], AUTH_NONCE_LEN);
    auth_nonce(ls->snonce);
    pthread_mutex_lock(&ls->srv->mtx); /* local_set_key may replace the key */
    auth_mac(&ls->srv->key, LSOCK_LOCAL_LABEL_SERVER, ls->cnonce, AUTH_NONCE_LEN, ls->snonce,
             AUTH_NONCE_LEN, mac);
    pthread_mutex_unlock(&ls->srv->mtx);
    ls->challenged = 1;
    if (wire_bins_encode(ctx->body, 2, out) != 0)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return A2A_OK;
}

static a2a_status
m_prove(local_sess *ls, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    uint8_t in[1][WIRE_BIN32], want[AUTH_MAC_LEN];

    ctx->close_after = 1; /* unless the proof holds */
    if (wire_bins_decode(in, 1, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    if (!ls->challenged)
        return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED, "AuthProve before AuthChallenge");
    ls->challenged = 0; /* one proof per challenge */
    pthread_mutex_lock(&ls->srv->mtx);
    auth_mac(&ls->srv->key, LSOCK_LOCAL_LABEL_CLIENT, ls->snonce, AUTH_NONCE_LEN, ls->cnonce,
             AUTH_NONCE_LEN, want);
    pthread_mutex_unlock(&ls->srv->mtx);
    if (!auth_equal(in[0], want, AUTH_MAC_LEN))
        return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED,
                        "wrong token: the proof does not match this worker's security.token_file");
    pthread_mutex_lock(&ls->srv->mtx);
    if (!ls->proved)
        ls->srv->nunproved--;
    ls->proved = 1;
    pthread_mutex_unlock(&ls->srv->mtx);
    ctx->close_after = 0;
    wire_empty_encode(ctx->body);
    return A2A_OK;
}

/* ---- ranks ---- */

/* claim_holder returns the live session other than ls that holds world rank r; under mtx. */
static local_sess *
claim_holder(local_srv *s, local_sess *ls, int64_t r)
{
    for (local_sess *x = s->live; x != NULL; x = x->next)
        if (x != ls && x->claimed && x->x.world_rank == r)
            return x;
    return NULL;
}

static void remote_sweep(local_srv *s);

static a2a_status
m_attach(local_sess *ls, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    local_srv *s = ls->srv;
    wire_job_id j;
    wire_attach_reply r = {0};
    local_sess *h;
    struct timespec ts;
    a2a_status st = A2A_OK;

    if (wire_job_id_decode(&j, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    if (ls->claimed)
        return rpc_fail(ctx, A2A_ERR_ALREADY_EXISTS,
                        "this session is world rank %lld already: one rank per connection",
                        (long long)ls->x.world_rank);
    if (!engine_owns(s->e, j.world_rank))
        return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED,
                        "world rank %lld is not a rank of worker %s", (long long)j.world_rank,
                        engine_name(s->e));
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += LOCAL_CLAIM_WAIT_MS / 1000;
    remote_sweep(s); /* a remote job whose connection closed lets go of its rank */
    pthread_mutex_lock(&s->mtx);
    /* a holder whose connection just closed lets go at once: wait a little for that */
    while ((h = claim_holder(s, ls, j.world_rank)) != NULL &&
           pthread_cond_timedwait(&s->cv, &s->mtx, &ts) == 0)
        ;
    if ((h = claim_holder(s, ls, j.world_rank)) != NULL && h->remote) {
        st = rpc_fail(ctx, A2A_ERR_ALREADY_EXISTS,
                      "world rank %lld is held by another live job (a remote one, session %llu): "
                      "one job per rank",
                      (long long)j.world_rank, (unsigned long long)h->x.id);
    } else if (h != NULL) {
        st = rpc_fail(ctx, A2A_ERR_ALREADY_EXISTS,
                      "world rank %lld is held by another live job (process %lld, uid %lld, "
                      "session %llu): one job per rank",
                      (long long)j.world_rank, (long long)h->x.pid, (long long)h->x.uid,
                      (unsigned long long)h->x.id);
    } else {
        pthread_mutex_lock(&ls->x.mtx);
        ls->x.world_rank = j.world_rank;
        pthread_mutex_unlock(&ls->x.mtx);
        ls->claimed = 1;
    }
    pthread_mutex_unlock(&s->mtx);
    if (st != A2A_OK)
        return st;
    snprintf(r.worker, sizeof(r.worker), "%s", engine_name(s->e));
    r.world_size = engine_world_size(s->e);
    r.pid = ls->x.pid;
    r.uid = ls->x.uid;
    r.session = ls->x.id;
    log_info("session %llu: process %lld (uid %lld) is world rank %lld",
             (unsigned long long)ls->x.id, (long long)ls->x.pid, (long long)ls->x.uid,
             (long long)j.world_rank);
    if (wire_attach_reply_encode(ctx->body, &r) != 0)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return A2A_OK;
}

/* ---- memory ---- */

static a2a_status
need_rank(local_sess *ls, rpc_ctx *ctx)
{
    if (!ls->claimed)
        return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED, "Attach first: the session has no rank");
    return A2A_OK;
}

/* kind_note records the memfd fd just mapped at addr (fd -1: addr was unmapped). */
static void
kind_note(local_sess *ls, int fd, uint64_t addr)
{
    local_srv *s = ls->srv;
    local_kind *k = NULL;
    char link[64], name[128];
    ssize_t n;

    if (fd >= 0 && (k = calloc(1, sizeof(*k))) != NULL) {
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd); /* our own descriptor */
        n = readlink(link, name, sizeof(name) - 1);
        name[n > 0 ? n : 0] = '\0';
        k->addr = addr;
        k->staging = strstr(name, "memfd:a2a-staging") != NULL;
    }
    pthread_mutex_lock(&s->mtx);
    for (local_kind **pp = &ls->kinds; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->addr == addr) { /* unmapped, or replaced */
            local_kind *old = *pp;
            *pp = old->next;
            free(old);
            break;
        }
    if (k != NULL) {
        k->next = ls->kinds;
        ls->kinds = k;
        ls->ever_shared |= !k->staging;
    }
    pthread_mutex_unlock(&s->mtx);
}

static void
kinds_free(local_sess *ls)
{
    while (ls->kinds != NULL) {
        local_kind *k = ls->kinds;
        ls->kinds = k->next;
        free(k);
    }
}

static a2a_status
m_buffer(local_sess *ls, rpc_ctx *ctx, const uint8_t *body, size_t len, int fd, int map)
{
    wire_buffer b;
    a2a_status st;

    if ((st = need_rank(ls, ctx)) != A2A_OK)
        return st;
    if (wire_buffer_decode(&b, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    st = map ? shm_map(&ls->x, fd, b.addr, b.len, ctx->message, sizeof(ctx->message))
             : shm_unmap(&ls->x, b.addr, ctx->message, sizeof(ctx->message));
    if (st == A2A_OK) {
        kind_note(ls, map ? fd : -1, b.addr);
        wire_empty_encode(ctx->body);
    }
    return st;
}

static a2a_status
m_open_channel(local_sess *ls, rpc_ctx *ctx, const uint8_t *body, size_t len, int fd)
{
    wire_buffer b;
    a2a_status st;

    if ((st = need_rank(ls, ctx)) != A2A_OK)
        return st;
    if (wire_buffer_decode(&b, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    st = chan_open(ls->srv->cs, &ls->x, fd, b.len, ctx->message, sizeof(ctx->message));
    if (st == A2A_OK && shmchan_open_reply_encode(ctx->body, (int64_t)getpid()) != 0)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return st;
}

/* An AllToAllV on the socket: it runs in a thread of its own, so that the job's other threads
 * (other groups) are served meanwhile, and answers itself. */
typedef struct {
    local_sess *ls;
    uint64_t id;
    wire_a2av a;
    char msg[1024];
} local_call;

static void *
local_call_main(void *arg)
{
    local_call *c = arg;
    local_sess *ls = c->ls;
    msgpack_sbuffer body;
    a2a_status st;

    int64_t next = -1;
    int discover = args_discover(c->a.n, c->a.counts);
    st = engine_alltoallv(ls->srv->e, &c->a, &next, c->msg, sizeof(c->msg));
    msgpack_sbuffer_init(&body);
    if (discover && st == A2A_OK) /* and the counts it discovered */
        wire_a2av_reply_encode_counts(&body, next, c->a.n, c->a.counts + 2 * c->a.n);
    else
        wire_a2av_reply_encode(&body, next); /* with a failure too: the job's next number */
    (void)local_reply(ls, c->id, st, c->msg, &body);
    msgpack_sbuffer_destroy(&body);
    wire_a2av_fini(&c->a);
    free(c);
    pthread_mutex_lock(&ls->srv->mtx);
    ls->ncalls--;
    pthread_cond_broadcast(&ls->srv->cv);
    pthread_mutex_unlock(&ls->srv->mtx);
    return NULL;
}

/* m_alltoallv starts the call's thread (*deferred: it answers) or fails at once. */
static a2a_status
m_alltoallv(local_sess *ls, rpc_ctx *ctx, uint64_t id, const uint8_t *body, size_t len,
            int *deferred)
{
    local_srv *s = ls->srv;
    local_call *c;
    pthread_attr_t attr;
    pthread_t t;
    a2a_status st;
    int rc;

    if ((st = need_rank(ls, ctx)) != A2A_OK)
        return st;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    if (wire_a2av_decode(&c->a, body, len, ctx->message, sizeof(ctx->message)) != 0) {
        free(c);
        return A2A_ERR_INVALID_ARGUMENT;
    }
    c->ls = ls;
    c->id = id;
    c->a.job.world_rank = ls->x.world_rank; /* the session's rank, not what the body says */
    c->a.job.sess = &ls->x;
    pthread_mutex_lock(&s->mtx);
    if (ls->ncalls >= CHAN_MAX_PER_JOB) {
        pthread_mutex_unlock(&s->mtx);
        wire_a2av_fini(&c->a);
        free(c);
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED,
                        "the job has %d calls on the socket already", CHAN_MAX_PER_JOB);
    }
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &attr, local_call_main, c);
    pthread_attr_destroy(&attr);
    if (rc == 0)
        ls->ncalls++;
    pthread_mutex_unlock(&s->mtx);
    if (rc != 0) {
        wire_a2av_fini(&c->a);
        free(c);
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "cannot start a thread");
    }
    pthread_setname_np(t, "a2a-lcall");
    *deferred = 1;
    return A2A_OK;
}

/* ---- remote sessions: jobs that share no kernel with us (local.h) ---- */

static uint64_t
slot_addr(uint64_t slot)
{
    return (slot + 1) * LOCAL_REMOTE_SLOT_SPAN;
}

/* remote_release frees a remote session nobody uses any more (out of s->live already). */
static void
remote_release(local_sess *ls)
{
    pthread_mutex_lock(&ls->x.mtx);
    ls->x.closed = 1;
    pthread_mutex_unlock(&ls->x.mtx);
    shm_unmap_all(&ls->x);
    log_info("remote session %llu: world rank %lld let go", (unsigned long long)ls->x.id,
             (long long)ls->x.world_rank);
    pthread_mutex_destroy(&ls->wmtx);
    pthread_cond_destroy(&ls->x.cv);
    pthread_mutex_destroy(&ls->x.mtx);
    free(ls);
}

/* remote_unlink takes ls out of s->live (and its rank claim: free at once); under s->mtx. */
static void
remote_unlink(local_srv *s, local_sess *ls)
{
    for (local_sess **pp = &s->live; *pp != NULL; pp = &(*pp)->next)
        if (*pp == ls) {
            *pp = ls->next;
            break;
        }
    ls->claimed = 0;
    s->nlive--;
    pthread_cond_broadcast(&s->cv);
}

/* remote_done: a remote session is over (its connection closed, or it detached), under s->mtx.
 * Its rank is free at once; it is returned for remote_release when no call uses it, else its
 * last call releases it (remote_put_ref). */
static local_sess *
remote_done(local_srv *s, local_sess *ls)
{
    remote_unlink(s, ls);
    ls->gone = 1;
    if (ls->rrefs > 0) {
        s->nzombie++;
        return NULL;
    }
    return ls;
}

/* remote_conn_live: the RPC connection of remote session ls is still up (or cannot be told);
 * under s->mtx. */
static int
remote_conn_live(local_srv *s, const local_sess *ls)
{
    return s->rpc == NULL || ls->pipe_id == 0 || rpc_server_pipe_live(s->rpc, ls->pipe_id);
}

/* remote_closed: the connection of remote session x closed, seen by the watcher
 * (local_pipe_gone) or by the sweep, whichever comes first; under s->mtx. It is served no more,
 * its calls in progress fail for every member, and it is over (remote_done's result). */
static local_sess *
remote_closed(local_srv *s, local_sess *x)
{
    log_info("remote session %llu (world rank %lld): its connection closed",
             (unsigned long long)x->x.id, (long long)x->x.world_rank);
    pthread_mutex_lock(&x->x.mtx);
    x->x.closed = 1; /* serve it no more (xfer_probe); its memory goes with its calls */
    pthread_mutex_unlock(&x->x.mtx);
    engine_sess_gone(s->e, &x->x); /* its calls in progress fail, for every member */
    return remote_done(s, x);
}

/* remote_sweep drops the remote sessions that detached or whose connection closed (the watcher,
 * local_watch, drops those at once; this catches one it could not see). */
static void
remote_sweep(local_srv *s)
{
    local_sess *dead = NULL, *next, *d;

    pthread_mutex_lock(&s->mtx);
    for (local_sess *x = s->live; x != NULL; x = next) {
        next = x->next;
        if (x->remote && !remote_conn_live(s, x) && (d = remote_closed(s, x)) != NULL) {
            d->next = dead;
            dead = d;
        }
    }
    pthread_mutex_unlock(&s->mtx);
    for (; dead != NULL; dead = next) {
        next = dead->next;
        remote_release(dead);
    }
}

/* release_main releases the sessions of a closed connection, off NNG's thread (unmapping waits
 * for transfers still on their memory). */
static void *
release_main(void *arg)
{
    local_sess *dead = arg, *next;
    local_srv *s = dead->srv;

    for (; dead != NULL; dead = next) {
        next = dead->next;
        remote_release(dead);
        pthread_mutex_lock(&s->mtx);
        s->nzombie--;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mtx);
    }
    return NULL;
}

/* local_pipe_gone: RPC connection pipe_id closed (rpc_server_watch); the remote sessions that
 * came on it let go of their ranks now, and of their memory once their calls are over. */
static void
local_pipe_gone(void *arg, uint32_t pipe_id)
{
    local_srv *s = arg;
    local_sess *dead = NULL, *next, *d;
    size_t n = 0;

    pthread_mutex_lock(&s->mtx);
    for (local_sess *x = s->live; x != NULL; x = next) {
        next = x->next;
        if (x->remote && x->pipe_id == pipe_id) {
            if ((d = remote_closed(s, x)) != NULL) {
                d->next = dead;
                dead = d;
                n++;
            }
        }
    }
    s->nzombie += n; /* until release_main is through them */
    pthread_mutex_unlock(&s->mtx);
    if (dead != NULL) {
        pthread_attr_t attr;
        pthread_t t;
        int rc;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&t, &attr, release_main, dead);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            release_main(dead); /* no thread: here, then */
    }
}

void
local_watch(local_srv *s, rpc_server *rpc)
{
    pthread_mutex_lock(&s->mtx);
    s->rpc = rpc;
    pthread_mutex_unlock(&s->mtx);
    rpc_server_watch(rpc, local_pipe_gone, s);
}

/* remote_get finds the session r names (its key checked) and takes a reference; NULL with
 * UNAVAILABLE in ctx when it is gone. */
static local_sess *
remote_get(local_srv *s, const wire_remote *r, rpc_ctx *ctx)
{
    local_sess *found = NULL;
    remote_sweep(s);
    pthread_mutex_lock(&s->mtx);
    for (local_sess *x = s->live; x != NULL; x = x->next)
        if (x->remote && x->x.id == r->session &&
            auth_equal((const uint8_t *)x->rkey, (const uint8_t *)r->key, sizeof(x->rkey))) {
            found = x;
            x->rrefs++;
            break;
        }
    pthread_mutex_unlock(&s->mtx);
    if (found == NULL)
        rpc_fail(ctx, A2A_ERR_UNAVAILABLE,
                 "worker %s has no remote session %llu (it restarted, or the job's connection "
                 "closed): attach again",
                 engine_name(s->e), (unsigned long long)r->session);
    else if (r->slot >= LOCAL_REMOTE_SLOTS)
        rpc_fail(ctx, A2A_ERR_INVALID_ARGUMENT, "slot %llu: a remote session has %d",
                 (unsigned long long)r->slot, LOCAL_REMOTE_SLOTS);
    return found;
}

/* remote_put_ref ends a call's use of ls; the last call of a session that is over releases it. */
static void
remote_put_ref(local_srv *s, local_sess *ls)
{
    int release;
    pthread_mutex_lock(&s->mtx);
    ls->rrefs--;
    release = ls->gone && ls->rrefs == 0;
    pthread_cond_broadcast(&s->cv); /* local_free may wait for the calls */
    pthread_mutex_unlock(&s->mtx);
    if (release) {
        remote_release(ls);
        pthread_mutex_lock(&s->mtx);
        s->nzombie--;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mtx);
    }
}

a2a_status
local_remote_attach(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    wire_job_id j;
    wire_remote r = {0};
    local_sess *ls, *h;
    a2a_status st = A2A_OK;
    int64_t until = rpc_now_ms() + LOCAL_CLAIM_WAIT_MS;

    if (wire_job_id_decode(&j, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    if (!engine_owns(s->e, j.world_rank))
        return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED,
                        "world rank %lld is not a rank of worker %s", (long long)j.world_rank,
                        engine_name(s->e));
    if ((ls = calloc(1, sizeof(*ls))) == NULL)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    ls->srv = s;
    ls->sock = -1;
    ls->remote = 1;
    ls->proved = 1; /* the RPC gate checked the token on this connection */
    ls->x.world_rank = j.world_rank;
    ls->x.pid = 0;
    ls->x.uid = (uid_t)-1;
    ls->pipe_id = ctx->server != NULL ? (uint32_t)nng_pipe_id(ctx->pipe) : 0;
    uint8_t nonce[AUTH_NONCE_LEN];
    auth_nonce(nonce);
    memcpy(ls->rkey, nonce, sizeof(ls->rkey));
    pthread_mutex_init(&ls->x.mtx, NULL);
    pthread_cond_init(&ls->x.cv, NULL);
    pthread_mutex_init(&ls->wmtx, NULL);
    /* a holder whose connection just closed lets go at once; NNG may tell us a little later */
    for (;;) {
        remote_sweep(s);
        pthread_mutex_lock(&s->mtx);
        if ((h = claim_holder(s, ls, j.world_rank)) == NULL || rpc_now_ms() >= until)
            break;
        pthread_mutex_unlock(&s->mtx);
        usleep(20000);
    }
    if (h != NULL) {
        st = rpc_fail(ctx, A2A_ERR_ALREADY_EXISTS,
                      "world rank %lld is held by another live job (%s session %llu): one job "
                      "per rank",
                      (long long)j.world_rank, h->remote ? "remote" : "local",
                      (unsigned long long)h->x.id);
    } else if (s->nlive >= LOCAL_MAX_SESSIONS) {
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "too many sessions");
    } else if (!remote_conn_live(s, ls)) { /* the watcher would never see it go */
        st = rpc_fail(ctx, A2A_ERR_UNAVAILABLE, "the job's connection closed");
    } else {
        ls->x.id = ++s->next_id;
        ls->claimed = 1;
        ls->next = s->live;
        s->live = ls;
        s->nlive++;
        /* ls is the session's from here: its connection may close and free it at once */
        r.session = ls->x.id;
        r.key[0] = ls->rkey[0];
        r.key[1] = ls->rkey[1];
    }
    pthread_mutex_unlock(&s->mtx);
    if (st != A2A_OK) {
        pthread_mutex_destroy(&ls->wmtx);
        pthread_cond_destroy(&ls->x.cv);
        pthread_mutex_destroy(&ls->x.mtx);
        free(ls);
        return st;
    }
    log_info("remote session %llu: world rank %lld (its slices come over its TCP connection)",
             (unsigned long long)r.session, (long long)j.world_rank);
    if (wire_remote_encode(ctx->body, &r) != 0)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return A2A_OK;
}

a2a_status
local_remote_detach(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    wire_remote r;
    local_sess *ls;

    if (wire_remote_decode(&r, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    r.slot = 0;
    if ((ls = remote_get(s, &r, ctx)) == NULL)
        return A2A_ERR_UNAVAILABLE;
    pthread_mutex_lock(&s->mtx);
    if (!ls->gone)
        (void)remote_done(s, ls); /* NULL: this call still uses it */
    pthread_mutex_unlock(&s->mtx);
    remote_put_ref(s, ls); /* the last user releases it */
    wire_empty_encode(ctx->body);
    return A2A_OK;
}

a2a_status
local_remote_reserve(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    wire_remote r;
    local_sess *ls;
    a2a_status st = A2A_OK;
    uint64_t bytes;
    int fd = -1;

    if (wire_remote_decode(&r, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    if ((ls = remote_get(s, &r, ctx)) == NULL || r.slot >= LOCAL_REMOTE_SLOTS)
        return ls == NULL ? A2A_ERR_UNAVAILABLE : (remote_put_ref(s, ls), A2A_ERR_INVALID_ARGUMENT);
    bytes = (r.len + 4095) & ~(uint64_t)4095;
    pthread_mutex_lock(&s->mtx);
    if (bytes == 0 || bytes > LOCAL_REMOTE_SLOT_SPAN ||
        ls->rbytes - ls->slot_len[r.slot] + bytes > LOCAL_REMOTE_MAX)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED,
                      "a remote job holds at most %llu bytes of staging in its worker (asked "
                      "%llu more)",
                      (unsigned long long)LOCAL_REMOTE_MAX, (unsigned long long)bytes);
    pthread_mutex_unlock(&s->mtx);
    if (st == A2A_OK && ls->slot_len[r.slot] != 0)
        (void)shm_unmap(&ls->x, slot_addr(r.slot), ctx->message, sizeof(ctx->message));
    if (st == A2A_OK) {
        pthread_mutex_lock(&s->mtx);
        ls->rbytes -= ls->slot_len[r.slot];
        ls->slot_len[r.slot] = 0;
        pthread_mutex_unlock(&s->mtx);
        /* the worker's own memfd, mapped like a job's: the engine reads and writes it */
        if ((fd = memfd_create("a2a-remote", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0 ||
            ftruncate(fd, (off_t)bytes) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0)
            st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "cannot make %llu bytes of staging: %s",
                          (unsigned long long)bytes, strerror(errno));
        else
            st = shm_map(&ls->x, fd, slot_addr(r.slot), bytes, ctx->message, sizeof(ctx->message));
        if (fd >= 0)
            close(fd);
    }
    if (st == A2A_OK) {
        pthread_mutex_lock(&s->mtx);
        ls->slot_len[r.slot] = bytes;
        ls->rbytes += bytes;
        pthread_mutex_unlock(&s->mtx);
        wire_empty_encode(ctx->body);
    }
    remote_put_ref(s, ls);
    return st;
}

/* local_remote_data is RemotePut (put) and RemoteGet: a chunk into or out of a slot. */
a2a_status
local_remote_data(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len, int put)
{
    wire_remote r, out = {0};
    local_sess *ls;
    eng_map *m;
    uint8_t *p;
    size_t n;

    if (wire_remote_decode(&r, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    if ((ls = remote_get(s, &r, ctx)) == NULL || r.slot >= LOCAL_REMOTE_SLOTS)
        return ls == NULL ? A2A_ERR_UNAVAILABLE : (remote_put_ref(s, ls), A2A_ERR_INVALID_ARGUMENT);
    n = put ? r.data_len : (size_t)r.len;
    if (n > WIRE_REMOTE_CHUNK || r.offset > LOCAL_REMOTE_SLOT_SPAN ||
        (p = shm_find(&ls->x, slot_addr(r.slot) + r.offset, n, &m)) == NULL) {
        remote_put_ref(s, ls);
        return rpc_fail(ctx, A2A_ERR_INVALID_ARGUMENT,
                        "%llu bytes at %llu are not in slot %llu (or more than %u at once)",
                        (unsigned long long)n, (unsigned long long)r.offset,
                        (unsigned long long)r.slot, WIRE_REMOTE_CHUNK);
    }
    if (put) {
        memcpy(p, r.data, n);
        wire_empty_encode(ctx->body);
    } else {
        out.data = p;
        out.data_len = n;
        wire_remote_encode(ctx->body, &out);
    }
    shm_release(m);
    remote_put_ref(s, ls);
    return A2A_OK;
}

a2a_status
local_remote_call(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    wire_remote r;
    wire_a2av a;
    local_sess *ls;
    a2a_status st;

    if (wire_remote_decode(&r, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    if ((ls = remote_get(s, &r, ctx)) == NULL)
        return A2A_ERR_UNAVAILABLE;
    if (wire_a2av_decode(&a, r.data, r.data_len, ctx->message, sizeof(ctx->message)) != 0) {
        remote_put_ref(s, ls);
        return A2A_ERR_INVALID_ARGUMENT;
    }
    a.job.world_rank = ls->x.world_rank; /* the session's rank, not what the body says */
    a.job.sess = &ls->x;
    int64_t next = -1;
    int discover = args_discover(a.n, a.counts);
    st = engine_alltoallv(s->e, &a, &next, ctx->message, sizeof(ctx->message));
    if (discover && st == A2A_OK) /* and the counts it discovered */
        wire_a2av_reply_encode_counts(ctx->body, next, a.n, a.counts + 2 * a.n);
    else
        wire_a2av_reply_encode(ctx->body, next); /* with a failure too: the job's next number */
    wire_a2av_fini(&a);
    remote_put_ref(s, ls);
    return st;
}

a2a_status
local_list(local_srv *s, rpc_ctx *ctx)
{
    wire_job_list l = {0};
    int rc;

    pthread_mutex_lock(&s->mtx);
    if ((l.jobs = calloc(s->nlive > 0 ? s->nlive : 1, sizeof(*l.jobs))) == NULL) {
        pthread_mutex_unlock(&s->mtx);
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    for (local_sess *x = s->live; x != NULL && l.n < s->nlive; x = x->next) {
        wire_job_info *j = &l.jobs[l.n];
        if (!x->claimed)
            continue;
        j->session = x->x.id;
        j->world_rank = x->x.world_rank;
        j->pid = x->remote ? -1 : (int64_t)x->x.pid;
        j->uid = x->remote ? -1 : (int64_t)x->x.uid;
        if (x->remote) {
            for (int i = 0; i < LOCAL_REMOTE_SLOTS; i++)
                j->staging += x->slot_len[i] > 0;
            j->calls = x->rrefs;
        } else {
            for (local_kind *k = x->kinds; k != NULL; k = k->next)
                *(k->staging ? &j->staging : &j->shared) += 1;
            j->calls = x->ncalls;
        }
        snprintf(j->mode, sizeof(j->mode), "%s",
                 x->remote                         ? "remote"
                 : j->shared > 0 || x->ever_shared ? "shared"
                                                   : "staging");
        l.n++;
    }
    pthread_mutex_unlock(&s->mtx);
    rc = wire_job_list_encode(ctx->body, &l);
    wire_job_list_fini(&l);
    return rc != 0 ? rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory") : A2A_OK;
}

uint64_t
local_remote_slot_addr(uint64_t slot)
{
    return slot_addr(slot);
}

/* ---- one session ---- */

static a2a_status
local_dispatch(local_sess *ls, const wire_request *req, int fd, rpc_ctx *ctx, int *deferred)
{
    const char *m = req->method;
    int is_auth = strcmp(m, "AuthChallenge") == 0 || strcmp(m, "AuthProve") == 0;

    if (is_auth && !ls->srv->has_key)
        return rpc_fail(ctx, A2A_ERR_INVALID_ARGUMENT,
                        "this worker has no security.token_file: no %s", m);
    if (strcmp(m, "AuthChallenge") == 0)
        return m_challenge(ls, ctx, req->body, req->body_len);
    if (strcmp(m, "AuthProve") == 0)
        return m_prove(ls, ctx, req->body, req->body_len);
    if (!ls->proved) {
        ctx->close_after = 1;
        return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED,
                        "authentication required: this worker has a security.token_file; give "
                        "the job the same token (A2A_TOKEN_FILE)");
    }
    if (strcmp(m, "Attach") == 0)
        return m_attach(ls, ctx, req->body, req->body_len);
    if (strcmp(m, "MapBuffer") == 0)
        return m_buffer(ls, ctx, req->body, req->body_len, fd, 1);
    if (strcmp(m, "UnmapBuffer") == 0)
        return m_buffer(ls, ctx, req->body, req->body_len, fd, 0);
    if (strcmp(m, "OpenChannel") == 0)
        return m_open_channel(ls, ctx, req->body, req->body_len, fd);
    if (strcmp(m, "AllToAllV") == 0)
        return m_alltoallv(ls, ctx, req->id, req->body, req->body_len, deferred);
    return rpc_fail(ctx, A2A_ERR_INVALID_ARGUMENT, "unknown method \"%s\" on the local socket", m);
}

/* local_serve answers frames until the connection closes, breaks, or the worker stops. */
static void
local_serve(local_sess *ls)
{
    local_srv *s = ls->srv;
    int64_t deadline = rpc_now_ms() + LOCAL_HANDSHAKE_MS;

    for (;;) {
        uint8_t *buf = NULL;
        size_t len = 0;
        int fd = -1, e, deferred = 0;
        int64_t wait = ls->proved ? -1 : deadline - rpc_now_ms();
        wire_request req;
        msgpack_sbuffer body;
        rpc_ctx ctx;
        a2a_status st;

        if (!ls->proved && wait <= 0) {
            log_warn("session %llu (process %lld): no proof of the token in time; closing",
                     (unsigned long long)ls->x.id, (long long)ls->x.pid);
            return;
        }
        e = lsock_recv(ls->sock, &buf, &len, ls->proved ? LOCAL_FRAME_MAX : LOCAL_FRAME_PREAUTH,
                       &fd, wait);
        if (e != 0) {
            if (e != ECONNRESET && !__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
                log_warn("session %llu (process %lld): %s; closing", (unsigned long long)ls->x.id,
                         (long long)ls->x.pid, e == EMSGSIZE ? "frame too large" : strerror(e));
            return;
        }
        if (wire_request_decode(&req, buf, len, NULL, 0) != 0) {
            log_warn("session %llu (process %lld): malformed frame; closing",
                     (unsigned long long)ls->x.id, (long long)ls->x.pid);
            free(buf);
            if (fd >= 0)
                close(fd);
            return;
        }
        memset(&ctx, 0, sizeof(ctx));
        msgpack_sbuffer_init(&body);
        ctx.body = &body;
        ctx.timeout_ms = req.timeout_ms;
        st = local_dispatch(ls, &req, fd, &ctx, &deferred);
        if (fd >= 0)
            close(fd); /* a mapping keeps what it needs */
        e = deferred ? 0 : local_reply(ls, req.id, st, ctx.message, &body);
        msgpack_sbuffer_destroy(&body);
        free(buf);
        if (e != 0 || ctx.close_after)
            return;
    }
}

/* local_release lets go of everything the session held; the thread ends afterwards. */
static void
local_release(local_sess *ls)
{
    local_srv *s = ls->srv;

    pthread_mutex_lock(&ls->x.mtx);
    ls->x.closed = 1; /* no new calls */
    pthread_mutex_unlock(&ls->x.mtx);
    engine_sess_gone(s->e, &ls->x); /* its calls in progress fail, for every member */
    pthread_mutex_lock(&s->mtx);
    if (ls->claimed)
        log_info("session %llu: process %lld let go of world rank %lld",
                 (unsigned long long)ls->x.id, (long long)ls->x.pid, (long long)ls->x.world_rank);
    ls->claimed = 0; /* the rank is free at once */
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mtx);
    chan_close_sess(s->cs, &ls->x); /* waits for the channel threads of this session */
    pthread_mutex_lock(&s->mtx);
    while (ls->ncalls > 0) /* and for its calls on the socket */
        pthread_cond_wait(&s->cv, &s->mtx);
    pthread_mutex_unlock(&s->mtx);
    shm_unmap_all(&ls->x); /* waits for transfers still on its memory */
}

static void *
local_main(void *arg)
{
    local_sess *ls = arg;
    local_srv *s = ls->srv;

    local_serve(ls);
    local_release(ls);
    pthread_mutex_lock(&s->mtx);
    for (local_sess **pp = &s->live; *pp != NULL; pp = &(*pp)->next)
        if (*pp == ls) {
            *pp = ls->next;
            break;
        }
    s->nlive--;
    if (!ls->proved)
        s->nunproved--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mtx);
    close(ls->sock);
    kinds_free(ls);
    pthread_mutex_destroy(&ls->wmtx);
    pthread_cond_destroy(&ls->x.cv);
    pthread_mutex_destroy(&ls->x.mtx);
    free(ls);
    return NULL;
}

/* local_admit starts a session for connection fd, or refuses it (closing fd). */
static void
local_admit(local_srv *s, int fd)
{
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    local_sess *ls;
    pthread_attr_t attr;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 ||
        (ls = calloc(1, sizeof(*ls))) == NULL) {
        close(fd);
        return;
    }
    ls->srv = s;
    ls->sock = fd;
    ls->proved = !s->has_key;
    ls->x.world_rank = -1;
    ls->x.pid = cred.pid;
    ls->x.uid = cred.uid;
    ls->x.gid = cred.gid;
    pthread_mutex_init(&ls->x.mtx, NULL);
    pthread_cond_init(&ls->x.cv, NULL);
    pthread_mutex_init(&ls->wmtx, NULL);
    pthread_mutex_lock(&s->mtx);
    int stopping = __atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE);
    if (stopping || s->nlive >= LOCAL_MAX_SESSIONS ||
        (!ls->proved && s->nunproved >= LOCAL_MAX_UNPROVED)) {
        pthread_mutex_unlock(&s->mtx);
        log_warn("refusing a local connection from process %lld: %s", (long long)cred.pid,
                 stopping ? "stopping" : "too many connections");
        goto fail;
    }
    ls->x.id = ++s->next_id;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&ls->thread, &attr, local_main, ls) != 0) {
        pthread_attr_destroy(&attr);
        pthread_mutex_unlock(&s->mtx);
        goto fail;
    }
    pthread_attr_destroy(&attr);
    pthread_setname_np(ls->thread, "a2a-local");
    ls->next = s->live;
    s->live = ls;
    s->nlive++;
    if (!ls->proved)
        s->nunproved++;
    uint64_t id = ls->x.id; /* ls is its thread's from here: it may end and free it */
    pthread_mutex_unlock(&s->mtx);
    log_debug("session %llu: process %lld uid %lld connected", (unsigned long long)id,
              (long long)cred.pid, (long long)cred.uid);
    return;
fail:
    pthread_mutex_destroy(&ls->wmtx);
    pthread_cond_destroy(&ls->x.cv);
    pthread_mutex_destroy(&ls->x.mtx);
    free(ls);
    close(fd);
}

static void *
local_accept_main(void *arg)
{
    local_srv *s = arg;
    for (;;) {
        int fd = accept4(s->lsock, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
                return NULL;
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                usleep(100000);
                continue;
            }
            log_error("local socket %s: accept: %s", s->path, strerror(errno));
            return NULL;
        }
        local_admit(s, fd);
    }
}

/* local_bind binds a listening socket at path, replacing a stale socket file. */
static int
local_bind(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    struct stat st;
    int fd;

    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    char dir[sizeof(a.sun_path)], *slash;
    snprintf(dir, sizeof(dir), "%s", path);
    if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
        *slash = '\0';
        (void)mkdir(dir, 0755); /* the folder of the socket, when it is not there (one level) */
    }
    if (lstat(path, &st) == 0) {
        int probe;
        if (!S_ISSOCK(st.st_mode)) {
            status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                        "socket %s: a file that is no socket is there", path);
            return -1;
        }
        /* a live worker answers: leave it alone; a dead one's file goes */
        if ((probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
            int live = connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0;
            close(probe);
            if (live) {
                status_fail(err, errlen, A2A_ERR_UNAVAILABLE,
                            "socket %s: another process listens there", path);
                return -1;
            }
        }
        unlink(path);
    }
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        /* who may connect is the socket's folder's business (a volume in compose); the token
         * and the rank claim guard the rest */
        chmod(path, 0666) != 0 || listen(fd, 128) != 0) {
        status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "cannot listen on %s: %s", path,
                    strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int
local_set_key(local_srv *s, const auth_key *key)
{
    if (!s->has_key)
        return -1;
    pthread_mutex_lock(&s->mtx);
    s->key = *key;
    pthread_mutex_unlock(&s->mtx);
    return 0;
}

a2a_status
local_alloc(local_srv **out, const char *path, engine *e, chan_set *cs, const auth_key *key,
            char *err, size_t errlen)
{
    local_srv *s;

    *out = NULL;
    if (path != NULL && strlen(path) >= sizeof(s->path))
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT, "socket path %s is too long",
                           path);
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    s->e = e;
    s->cs = cs;
    if (key != NULL && key->len > 0) {
        s->key = *key;
        s->has_key = 1;
    }
    snprintf(s->path, sizeof(s->path), "%s", path != NULL ? path : "");
    pthread_mutex_init(&s->mtx, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->lsock = -1;
    if (path == NULL) { /* remote sessions only */
        *out = s;
        return A2A_OK;
    }
    if ((s->lsock = local_bind(path, err, errlen)) < 0) {
        auth_key_wipe(&s->key);
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mtx);
        free(s);
        return A2A_ERR_UNAVAILABLE;
    }
    if (pthread_create(&s->acceptor, NULL, local_accept_main, s) != 0) {
        close(s->lsock);
        unlink(path);
        auth_key_wipe(&s->key);
        free(s);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "cannot start a thread");
    }
    pthread_setname_np(s->acceptor, "a2a-laccept");
    *out = s;
    return A2A_OK;
}

void
local_free(local_srv *s)
{
    if (s == NULL)
        return;
    __atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
    if (s->rpc != NULL)
        rpc_server_watch(s->rpc, NULL, NULL); /* no local_pipe_gone from here on */
    if (s->lsock >= 0) {
        shutdown(s->lsock, SHUT_RDWR); /* wakes accept */
        pthread_join(s->acceptor, NULL);
        close(s->lsock);
        unlink(s->path);
    }
    pthread_mutex_lock(&s->mtx);
    for (;;) {
        local_sess *rs = NULL;
        for (local_sess *ls = s->live; ls != NULL; ls = ls->next)
            if (ls->sock >= 0)
                shutdown(ls->sock, SHUT_RDWR); /* wakes its thread, which lets go and ends */
            else if (ls->rrefs == 0 && rs == NULL)
                rs = ls;
        if (rs != NULL) { /* a remote session: no thread of its own */
            remote_unlink(s, rs);
            pthread_mutex_unlock(&s->mtx);
            remote_release(rs);
            pthread_mutex_lock(&s->mtx);
            continue;
        }
        if (s->nlive == 0 && s->nzombie == 0)
            break;
        pthread_cond_wait(&s->cv, &s->mtx);
    }
    pthread_mutex_unlock(&s->mtx);
    auth_key_wipe(&s->key);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mtx);
    free(s);
}
