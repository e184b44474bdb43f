/* rpc.c - RPC over NNG REQ/REP: a threaded server and a deadline-bound client. */
#include "rpc.h"

#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <errno.h>
#include <malloc.h>
#include <nng/supplemental/util/platform.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/status.h"
#include "common/wire.h"
#include "gate.h"
#include "guard.h"

int64_t
rpc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

a2a_status
rpc_fail(rpc_ctx *ctx, a2a_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->message, sizeof(ctx->message), fmt, ap);
    va_end(ap);
    return status;
}

/* ---- server ---- */

typedef struct {
    rpc_server *srv;
    nng_ctx ctx;
    nng_aio *aio;
    pthread_t thread;
    int started;
} rpc_worker;

struct rpc_server {
    nng_socket sock;
    nng_listener listener;
    const rpc_method *methods;
    size_t nmethods;
    void *arg;
    int nthreads;
    rpc_worker *workers;
    /*
     * Held shared around every nng_ctx_send/recv call and exclusively by
     * rpc_server_free around nng_close: NNG 1.5 panics ("pthread_mutex_lock:
     * Invalid argument" in nni_ctx_rele) when a socket closes while another
     * thread is inside nng_ctx_send or nng_ctx_recv.
     */
    pthread_rwlock_t lk;
    int closing;
    gate *gate;             /* NULL: no token */
    guard *guard;           /* caps, deadline and shedding of connections */
    pthread_mutex_t cb_mtx; /* orders the pipe callback against setup and teardown */
    rpc_gone_fn gone;       /* the watcher of connections (under cb_mtx) */
    void *gone_arg;
    char url[300];
};

/* worker_op starts a send (or receive) on w's context unless the server is closing,
 * waits for it, and returns its result (NNG_ECLOSED when closing). */
static int
worker_op(rpc_worker *w, int send)
{
    rpc_server *s = w->srv;
    int closing;

    pthread_rwlock_rdlock(&s->lk);
    closing = s->closing;
    if (!closing && send)
        nng_ctx_send(w->ctx, w->aio);
    else if (!closing)
        nng_ctx_recv(w->ctx, w->aio);
    pthread_rwlock_unlock(&s->lk);
    if (closing)
        return NNG_ECLOSED;
    nng_aio_wait(w->aio);
    return nng_aio_result(w->aio);
}

static const rpc_method *
server_lookup(const rpc_server *s, const char *name)
{
    for (size_t i = 0; i < s->nmethods; i++)
        if (strcmp(s->methods[i].name, name) == 0)
            return &s->methods[i];
    return NULL;
}

/* server_reply sends the reply for req on w's context, reusing msg. */
static void
server_reply(rpc_worker *w, nng_msg *msg, const wire_request *req, a2a_status st, rpc_ctx *ctx)
{
    msgpack_sbuffer sb;
    wire_reply rep = {.id = req->id, .status = st};

    msgpack_sbuffer_init(&sb);
    /* a failed call may have a body too (AllToAllV: the caller's next operation number) */
    rep.body = (const uint8_t *)ctx->body->data;
    rep.body_len = ctx->body->size;
    if (st != A2A_OK)
        snprintf(rep.message, sizeof(rep.message), "%s", ctx->message);
    nng_msg_clear(msg);
    if (wire_reply_encode(&sb, &rep) != 0 || nng_msg_append(msg, sb.data, sb.size) != 0) {
        nng_msg_free(msg);
        msgpack_sbuffer_destroy(&sb);
        return;
    }
    msgpack_sbuffer_destroy(&sb);
    nng_aio_set_msg(w->aio, msg);
    if (worker_op(w, 1) != 0)
        nng_msg_free(msg);
    if (ctx->close_after) /* after a grace for the reply to leave; never nng_pipe_close here */
        guard_shed(w->srv->guard, ctx->pipe);
}

/* server_handle answers one request message; it owns msg. */
static void
server_handle(rpc_worker *w, nng_msg *msg)
{
    rpc_server *s = w->srv;
    wire_request req;
    const rpc_method *m;
    msgpack_sbuffer body;
    rpc_ctx ctx;
    char err[256];
    a2a_status st;

    if (!guard_call(s->guard, nng_msg_get_pipe(msg))) { /* being shed, or out of calls */
        nng_msg_free(msg);
        return;
    }
    if (wire_request_decode(&req, nng_msg_body(msg), nng_msg_len(msg), err, sizeof(err)) != 0) {
        guard_note(s->guard, "rpc %s: malformed request from connection %d (%s): closing it",
                   s->url, nng_pipe_id(nng_msg_get_pipe(msg)), err);
        guard_shed(s->guard, nng_msg_get_pipe(msg));
        nng_msg_free(msg);
        return;
    }
    memset(&ctx, 0, sizeof(ctx));
    msgpack_sbuffer_init(&body);
    ctx.timeout_ms = req.timeout_ms;
    ctx.pipe = nng_msg_get_pipe(msg);
    ctx.server = s;
    ctx.body = &body;
    m = server_lookup(s, req.method);
    if (s->gate != NULL && gate_check(s->gate, req.method, &ctx, req.body, req.body_len, &st)) {
        if (st == A2A_OK && strcmp(req.method, GATE_PROVE) == 0)
            guard_proved(s->guard, ctx.pipe);
        else if (ctx.close_after && st != A2A_OK)
            guard_note(s->guard, "rpc %s: refusing %s from connection %d: %s", s->url, req.method,
                       nng_pipe_id(ctx.pipe), ctx.message);
    } else if (m == NULL)
        st = rpc_fail(&ctx, A2A_ERR_INVALID_ARGUMENT, "unknown method \"%s\"", req.method);
    else
        st = m->fn(s->arg, &ctx, req.body, req.body_len);
    log_debug("rpc %s: %s -> %s", s->url, req.method, a2a_status_name(st));
    server_reply(w, msg, &req, st, &ctx);
    msgpack_sbuffer_destroy(&body);
}

static void *
server_thread(void *arg)
{
    rpc_worker *w = arg;
    for (;;) {
        int rv = worker_op(w, 0);
        if (rv == NNG_ECLOSED || rv == NNG_ECANCELED)
            break;
        if (rv != 0)
            continue;
        server_handle(w, nng_aio_get_msg(w->aio));
    }
    return NULL;
}

static int
server_bound_url(rpc_server *s, const char *url)
{
    int port = 0;
    const char *colon = strrchr(url, ':');

    snprintf(s->url, sizeof(s->url), "%s", url);
    if (strncmp(url, "tcp://", 6) != 0 && strncmp(url, "tls+tcp://", 10) != 0)
        return 0;
    if (nng_listener_get_int(s->listener, NNG_OPT_TCP_BOUND_PORT, &port) != 0 || colon == NULL)
        return -1;
    snprintf(s->url, sizeof(s->url), "%.*s:%d", (int)(colon - url), url, port);
    return 0;
}

static void
server_pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    rpc_server *s = arg;
    pthread_mutex_lock(&s->cb_mtx);
    if (ev == NNG_PIPE_EV_ADD_PRE && guard_pipe_add(s->guard, p) != 0) {
        nng_pipe_close(p); /* not started yet: no I/O on it, safe to close (see guard.h) */
    } else if (ev == NNG_PIPE_EV_REM_POST) {
        guard_pipe_gone(s->guard, p);
        if (s->gate != NULL)
            gate_pipe_gone(s->gate, p);
        if (s->gone != NULL) /* after guard_pipe_gone: rpc_server_pipe_live says no from here */
            s->gone(s->gone_arg, (uint32_t)nng_pipe_id(p));
    }
    pthread_mutex_unlock(&s->cb_mtx);
}

void
rpc_server_watch(rpc_server *s, rpc_gone_fn gone, void *arg)
{
    pthread_mutex_lock(&s->cb_mtx);
    s->gone = gone;
    s->gone_arg = arg;
    pthread_mutex_unlock(&s->cb_mtx);
}

int
rpc_server_pipe_live(rpc_server *s, uint32_t pipe_id)
{
    return guard_pipe_live(s->guard, pipe_id);
}

/* server_destroy frees what server_listen was given, when it fails. */
static void
server_destroy(rpc_server *s)
{
    pthread_rwlock_destroy(&s->lk);
    pthread_mutex_destroy(&s->cb_mtx);
    gate_free(s->gate);
    guard_free(s->guard);
    free(s);
}

/* server_listen opens the socket and listens on url; on failure s is freed. */
static a2a_status
server_listen(rpc_server *s, const char *url, const rpc_security *sec, char *err, size_t errlen)
{
    int rv;

    if ((rv = nng_rep0_open(&s->sock)) != 0) {
        server_destroy(s);
        return status_fail(err, errlen, A2A_ERR_INTERNAL, "rep socket: %s", nng_strerror(rv));
    }
    nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, RPC_RECV_MAX);
    pthread_mutex_lock(&s->cb_mtx); /* publishes s to the callback's thread */
    pthread_mutex_unlock(&s->cb_mtx);
    nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_PRE, server_pipe_cb, s);
    nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, server_pipe_cb, s);
    if ((rv = nng_listener_create(&s->listener, s->sock, url)) != 0 ||
        (sec != NULL && sec->tls != NULL && strncmp(url, "tls+", 4) == 0 &&
         (rv = nng_listener_set_ptr(s->listener, NNG_OPT_TLS_CONFIG, sec->tls)) != 0) ||
        (rv = nng_listener_start(s->listener, 0)) != 0) {
        nng_close(s->sock);
        server_destroy(s);
        return status_fail(err, errlen,
                           rv == NNG_EADDRINUSE ? A2A_ERR_UNAVAILABLE : A2A_ERR_INVALID_ARGUMENT,
                           "cannot listen on %s: %s", url, nng_strerror(rv));
    }
    return A2A_OK;
}

/*
 * NNG allocates a message at the length its sender announces (calloc), before
 * our code sees a byte. In pages of their own (mmap) that memory costs only
 * what arrives; glibc's default, a threshold that rises as such blocks are
 * freed, would soon take them from the heap and zero all of them at once, so
 * a connection announcing 8 MiB would cost 8 MiB without sending it.
 */
static void
server_malloc_once(void)
{
    mallopt(M_MMAP_THRESHOLD, 512 << 10);
}

a2a_status
rpc_server_alloc(rpc_server **out, const char *url, const rpc_method *methods, size_t nmethods,
                 void *arg, int nthreads, const rpc_security *sec, char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    rpc_server *s;
    a2a_status st;

    *out = NULL;
    pthread_once(&once, server_malloc_once);
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    s->methods = methods;
    s->nmethods = nmethods;
    s->arg = arg;
    pthread_rwlock_init(&s->lk, NULL);
    pthread_mutex_init(&s->cb_mtx, NULL);
    if ((sec != NULL && sec->key != NULL && (s->gate = gate_alloc(sec->key)) == NULL) ||
        (s->guard = guard_alloc(url, s->gate != NULL)) == NULL) {
        server_destroy(s);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    if ((st = server_listen(s, url, sec, err, errlen)) != A2A_OK)
        return st;
    server_bound_url(s, url);
    s->nthreads = nthreads > 0 ? nthreads : 4;
    s->workers = calloc((size_t)s->nthreads, sizeof(*s->workers));
    for (int i = 0; s->workers != NULL && i < s->nthreads; i++) {
        rpc_worker *w = &s->workers[i];
        w->srv = s;
        if (nng_ctx_open(&w->ctx, s->sock) != 0 || nng_aio_alloc(&w->aio, NULL, NULL) != 0 ||
            pthread_create(&w->thread, NULL, server_thread, w) != 0)
            break;
        pthread_setname_np(w->thread, "a2a-rpc");
        w->started = 1;
    }
    if (s->workers == NULL || !s->workers[s->nthreads - 1].started) {
        rpc_server_free(s);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "cannot start server threads");
    }
    *out = s;
    return A2A_OK;
}

const char *
rpc_server_url(const rpc_server *s)
{
    return s->url;
}

void
rpc_server_free(rpc_server *s)
{
    if (s == NULL)
        return;
    /* No new connections, then drop the ones there are the safe way (guard.h): nng_close
     * closing them from our side could hang in NNG 1.5.2 while a flood sends on them. */
    nng_listener_close(s->listener);
    guard_shed_all(s->guard, 2000);
    pthread_rwlock_wrlock(&s->lk);
    s->closing = 1;
    nng_close(s->sock);
    pthread_rwlock_unlock(&s->lk);
    for (int i = 0; s->workers != NULL && i < s->nthreads; i++) {
        rpc_worker *w = &s->workers[i];
        if (w->started)
            pthread_join(w->thread, NULL);
        if (w->aio != NULL)
            nng_aio_free(w->aio);
    }
    free(s->workers);
    pthread_mutex_lock(&s->cb_mtx); /* the last callback is done (nng_close waited for it) */
    pthread_mutex_unlock(&s->cb_mtx);
    pthread_mutex_destroy(&s->cb_mtx);
    pthread_rwlock_destroy(&s->lk);
    gate_free(s->gate);
    guard_free(s->guard);
    free(s);
}

/* ---- client ---- */

typedef struct rpc_inflight {
    nng_aio *aio;
    int lost; /* the connection went away during the call */
    struct rpc_inflight *next;
} rpc_inflight;

struct rpc_client {
    nng_socket sock;
    nng_dialer dialer;
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    int pipes;              /* connections up */
    rpc_inflight *inflight; /* calls waiting, failed when the last pipe goes */
    int calls;              /* calls inside rpc_call */
    int closing;            /* rpc_client_free has begun */
    atomic_uint_fast64_t next_id;
    uint32_t pipe_id;         /* the connection up, 0 for none */
    uint32_t proved_pipe;     /* the connection that proved the secret */
    pthread_mutex_t auth_mtx; /* one handshake at a time */
    int has_key;
    auth_key key;
    nng_tls_config *tls;     /* held, for client_why; NULL without TLS */
    int64_t connect_wait_ms; /* how long a call waits for a connection (at most its deadline) */
    int refused_ends;        /* the wait ends once the address refuses (rpc_client_connect_wait) */
    char url[300];
};

static void
client_pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    rpc_client *c = arg;
    pthread_mutex_lock(&c->mtx);
    if (ev == NNG_PIPE_EV_ADD_POST) {
        c->pipe_id = (uint32_t)nng_pipe_id(p);
        c->pipes++;
        pthread_cond_broadcast(&c->cv);
    } else if (ev == NNG_PIPE_EV_REM_POST && c->pipes > 0) {
        if (c->pipe_id == (uint32_t)nng_pipe_id(p))
            c->pipe_id = 0;
        if (c->proved_pipe == (uint32_t)nng_pipe_id(p))
            c->proved_pipe = 0;
        if (--c->pipes == 0)
            for (rpc_inflight *f = c->inflight; f != NULL; f = f->next) {
                f->lost = 1;
                nng_aio_cancel(f->aio);
            }
    }
    pthread_mutex_unlock(&c->mtx);
}

a2a_status
rpc_client_alloc(rpc_client **out, const char *url, const rpc_security *sec, char *err,
                 size_t errlen)
{
    rpc_client *c;
    int rv;

    *out = NULL;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    pthread_mutex_init(&c->mtx, NULL);
    pthread_mutex_init(&c->auth_mtx, NULL);
    pthread_cond_init(&c->cv, NULL);
    atomic_init(&c->next_id, 1);
    c->connect_wait_ms = RPC_CONNECT_WAIT_MS;
    if (sec != NULL && sec->key != NULL) {
        c->key = *sec->key;
        c->has_key = 1;
    }
    snprintf(c->url, sizeof(c->url), "%s", url);
    if (sec != NULL && sec->tls != NULL && strncmp(url, "tls+", 4) == 0) {
        c->tls = sec->tls;
        nng_tls_config_hold(c->tls);
    }
    if ((rv = nng_req0_open(&c->sock)) != 0) {
        if (c->tls != NULL)
            nng_tls_config_free(c->tls);
        pthread_mutex_destroy(&c->auth_mtx);
        pthread_mutex_destroy(&c->mtx);
        pthread_cond_destroy(&c->cv);
        free(c);
        return status_fail(err, errlen, A2A_ERR_INTERNAL, "req socket: %s", nng_strerror(rv));
    }
    nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, RPC_RECV_MAX);
    nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 20);
    nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 500);
    /* Never resend: a method must not run twice because it ran long. */
    nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
    pthread_mutex_lock(&c->mtx); /* publishes c to the callback's thread */
    pthread_mutex_unlock(&c->mtx);
    nng_pipe_notify(c->sock, NNG_PIPE_EV_ADD_POST, client_pipe_cb, c);
    nng_pipe_notify(c->sock, NNG_PIPE_EV_REM_POST, client_pipe_cb, c);
    if ((rv = nng_dialer_create(&c->dialer, c->sock, url)) != 0 ||
        (sec != NULL && sec->tls != NULL && strncmp(url, "tls+", 4) == 0 &&
         (rv = nng_dialer_set_ptr(c->dialer, NNG_OPT_TLS_CONFIG, sec->tls)) != 0) ||
        (rv = nng_dialer_start(c->dialer, NNG_FLAG_NONBLOCK)) != 0) {
        rpc_client_free(c);
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT, "cannot dial %s: %s", url,
                           nng_strerror(rv));
    }
    *out = c;
    return A2A_OK;
}

const char *
rpc_client_url(const rpc_client *c)
{
    return c->url;
}

/* client_wait_pipe waits until deadline for a connection; 0 when one is up. */
static int
client_wait_pipe(rpc_client *c, int64_t deadline)
{
    int up;
    pthread_mutex_lock(&c->mtx);
    while (c->pipes == 0 && !c->closing) {
        int64_t now = rpc_now_ms();
        struct timespec ts;
        if (now >= deadline)
            break;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (deadline - now) / 1000;
        ts.tv_nsec += ((deadline - now) % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&c->cv, &c->mtx, &ts);
    }
    up = c->pipes > 0;
    pthread_mutex_unlock(&c->mtx);
    return up ? 0 : -1;
}

/* client_wait_other_pipe waits until deadline for a connection other than gone; 0 when one is
 * up. */
static int
client_wait_other_pipe(rpc_client *c, uint32_t gone, int64_t deadline)
{
    int up;
    pthread_mutex_lock(&c->mtx);
    while ((c->pipes == 0 || c->pipe_id == gone) && !c->closing) {
        int64_t now = rpc_now_ms(), wait = deadline - now > 50 ? 50 : deadline - now;
        struct timespec ts;
        if (now >= deadline)
            break;
        clock_gettime(CLOCK_REALTIME, &ts); /* a short wait: a connection going is not signalled */
        ts.tv_nsec += wait * 1000000;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&c->cv, &c->mtx, &ts);
    }
    up = c->pipes > 0 && c->pipe_id != gone;
    pthread_mutex_unlock(&c->mtx);
    return up ? 0 : -1;
}

/* probe_step waits for aio's operation; its result. */
static int
probe_step(nng_aio *aio)
{
    nng_aio_wait(aio);
    return nng_aio_result(aio);
}

/*
 * probe dials url once within ms (with tls, if not NULL), sends NNG's 8-byte
 * greeting of a REQ socket and reads 8 bytes of the answer into got (*ngot
 * of them); *stage says how far it came: -1 not a stream URL (inproc://), 0 no connection,
 * 1 connected (and
 * through TLS), 2 sent, 3 answered. Returns the first error (0: none).
 */
static int
probe(const char *url, nng_tls_config *tls, int ms, uint8_t got[8], size_t *ngot, int *stage)
{
    static const uint8_t greeting[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0}; /* REQ0 (protocol 48) */
    nng_stream_dialer *d = NULL;
    nng_stream *st = NULL;
    nng_aio *aio = NULL;
    nng_iov iov;
    int rv;

    *stage = -1;
    *ngot = 0;
    if ((rv = nng_stream_dialer_alloc(&d, url)) != 0)
        return rv;
    *stage = 0;
    if ((rv = nng_aio_alloc(&aio, NULL, NULL)) != 0 ||
        (tls != NULL && (rv = nng_stream_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tls)) != 0))
        goto out;
    nng_aio_set_timeout(aio, ms);
    nng_stream_dialer_dial(d, aio);
    if ((rv = probe_step(aio)) != 0)
        goto out;
    st = nng_aio_get_output(aio, 0);
    *stage = 1;
    iov = (nng_iov){(void *)greeting, sizeof(greeting)};
    nng_aio_set_iov(aio, 1, &iov);
    nng_stream_send(st, aio);
    if ((rv = probe_step(aio)) != 0)
        goto out;
    *stage = 2;
    iov = (nng_iov){got, 8};
    nng_aio_set_iov(aio, 1, &iov);
    nng_stream_recv(st, aio);
    rv = probe_step(aio);
    *ngot = nng_aio_count(aio);
    if (*ngot > 0)
        *stage = 3;
out:
    if (st != NULL) {
        nng_stream_close(st);
        nng_stream_free(st);
    }
    nng_aio_free(aio);
    nng_stream_dialer_free(d);
    return rv;
}

/* dial_only dials url's TCP (or IPC) address once within ms, without TLS nor a greeting, and
 * hangs up: 0 when something accepts, else the dial's error (NNG_ECONNREFUSED: nothing listens). */
static int
dial_only(const char *url, int ms)
{
    nng_stream_dialer *d = NULL;
    nng_aio *aio = NULL;
    int rv;

    if (strncmp(url, "tls+", 4) == 0)
        url += 4; /* the TCP connection under TLS is what may be refused */
    if ((rv = nng_stream_dialer_alloc(&d, url)) != 0)
        return rv;
    if ((rv = nng_aio_alloc(&aio, NULL, NULL)) == 0) {
        nng_aio_set_timeout(aio, ms);
        nng_stream_dialer_dial(d, aio);
        if ((rv = probe_step(aio)) == 0) {
            nng_stream *st = nng_aio_get_output(aio, 0);
            nng_stream_close(st);
            nng_stream_free(st);
        }
        nng_aio_free(aio);
    }
    nng_stream_dialer_free(d);
    return rv;
}

/* speaks_tls: a TLS handshake (no certificate checked) gets a TLS answer at host:port of
 * url, a tcp:// URL. */
static int
speaks_tls(const char *url, int ms)
{
    nng_tls_config *cfg = NULL;
    char tls_url[320];
    uint8_t got[8];
    size_t n;
    int stage, rv;

    if (nng_tls_config_alloc(&cfg, NNG_TLS_MODE_CLIENT) != 0)
        return 0;
    nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_NONE);
    snprintf(tls_url, sizeof(tls_url), "tls+%s", url);
    rv = probe(tls_url, cfg, ms, got, &n, &stage);
    nng_tls_config_free(cfg);
    /* through the handshake, or refused by it (no client certificate): TLS either way */
    return stage >= 1 || rv == NNG_ECRYPTO || rv == NNG_EPEERAUTH;
}

/*
 * client_why finds out why no connection to c->url comes up, for the error
 * message: one direct attempt of at most ms (TCP, then the TLS handshake and
 * NNG's 8-byte greeting, which an a2a service answers with its own), whose
 * outcome it writes to why as ": reason".
 */
static void
client_why(rpc_client *c, int ms, char *why, size_t len)
{
    static const uint8_t rep0[8] = {0, 'S', 'P', 0, 0, 0x31, 0, 0}; /* REP0 (protocol 49) */
    int tls_url = strncmp(c->url, "tls+", 4) == 0, tcp_url = strncmp(c->url, "tcp", 3) == 0;
    uint8_t got[8] = {0};
    uint8_t pgot[8] = {0}; /* the plain probe's, under a tls+ URL */
    size_t n = 0, pn = 0;
    int stage, pstage, rv, closed;

    why[0] = '\0';
    pthread_mutex_lock(&c->mtx); /* rpc_client_set_tls may replace it */
    nng_tls_config *tls = c->tls;
    if (tls != NULL)
        nng_tls_config_hold(tls);
    pthread_mutex_unlock(&c->mtx);
    rv = probe(c->url, tls, ms, got, &n, &stage);
    if (tls != NULL)
        nng_tls_config_free(tls);
    closed = rv == NNG_ECONNSHUT || rv == NNG_ECLOSED || rv == NNG_ECONNRESET || rv == NNG_EPROTO;
    if (stage < 0)
        return; /* not a stream (inproc://): nothing more to learn */
    if (stage == 3 && (n < 8 || memcmp(got, rep0, 8) != 0)) {
        char shown[40];
        size_t k = 0;
        for (size_t i = 0; i < n && k + 5 < sizeof(shown); i++)
            k += (size_t)snprintf(shown + k, sizeof(shown) - k,
                                  got[i] >= 0x20 && got[i] < 0x7f ? "%c" : "\\x%02x", got[i]);
        shown[k] = '\0';
        if (n >= 3 && got[0] == 0 && got[1] == 'S' && got[2] == 'P')
            snprintf(why, len,
                     ": an NNG service of another kind answers there, not an a2a "
                     "service (wrong port?)");
        else if (n >= 2 && got[0] == 0x15 && got[1] == 0x03)
            snprintf(why, len, ": it answers with TLS: use tls+%.200s with the TLS settings",
                     c->url);
        else
            snprintf(why, len,
                     ": something that is not an a2a service answers there (it said \"%s\"): "
                     "the wrong host or port, or a proxy in the way",
                     shown);
    } else if (stage == 3) {
        snprintf(why, len, " (a new connection works: it may have been starting, or busy)");
    } else if (rv == NNG_ETIMEDOUT && stage == 0) {
        snprintf(why, len,
                 ": no TCP connection within %d ms: the host is down or unreachable, or a "
                 "firewall drops the connection",
                 ms);
    } else if (rv == NNG_ETIMEDOUT) {
        snprintf(why, len,
                 ": it accepts connections but does not answer within %d ms: not an a2a "
                 "service%s, or too busy",
                 ms, tls_url ? "" : " (or a TLS port that waits for a handshake)");
    } else if (tls_url && (rv == NNG_ECRYPTO || rv == NNG_EPEERAUTH || closed) &&
               probe(c->url + 4, NULL, ms, pgot, &pn, &pstage) == 0 && pn == 8 &&
               memcmp(pgot, rep0, 8) == 0) {
        /* a plain a2a port closes on the ClientHello: the handshake then fails with
         * ECRYPTO (the port's greeting read as a TLS record) or, when the close comes
         * first, with the connection shut or reset */
        snprintf(why, len,
                 ": TLS handshake failed: it is a plain (not TLS) a2a port: use %.200s, or turn "
                 "TLS on there",
                 c->url + 4);
    } else if (tls_url && (rv == NNG_ECRYPTO || rv == NNG_EPEERAUTH)) {
        snprintf(why, len, ": TLS handshake failed (%s): %s", nng_strerror(rv),
                 c->tls == NULL ? "this side has no TLS settings (certificate, key and CA)"
                                : "each side's certificate must come from a CA that the other "
                                  "side trusts");
    } else if (tls_url && stage == 0 &&
               (rv == NNG_ECONNSHUT || rv == NNG_ECLOSED || rv == NNG_ECONNRESET ||
                rv == NNG_EPROTO)) {
        snprintf(why, len, ": the TLS handshake got no TLS answer (%s): is it a plain tcp:// port?",
                 nng_strerror(rv));
    } else if (tcp_url && stage >= 1 &&
               (rv == NNG_ECONNSHUT || rv == NNG_ECLOSED || rv == NNG_ECONNRESET)) {
        if (speaks_tls(c->url, ms))
            snprintf(why, len,
                     ": it speaks TLS and closed our plain connection: use tls+%.200s with the TLS "
                     "settings (certificate, key and CA)",
                     c->url);
        else
            snprintf(why, len,
                     ": it closed the connection without answering (%s): not an a2a "
                     "service?",
                     nng_strerror(rv));
    } else if (rv == NNG_ECONNREFUSED) {
        snprintf(why, len, ": nothing listens there (connection refused: is it running?)");
    } else if (rv != 0) {
        char what[300];
        snprintf(why, len, ": %s", rpc_why(rv, NULL, c->url, 1, ms, what, sizeof(what)));
    } else {
        snprintf(why, len, " (a new connection works: it may have been starting, or busy)");
    }
}

/* client_track adds or removes a call's aio; adding fails once the client is closing. */
static int
client_track(rpc_client *c, rpc_inflight *f, int add)
{
    int rc = 0;
    pthread_mutex_lock(&c->mtx);
    if (add && c->closing) {
        rc = -1;
    } else if (add) {
        f->next = c->inflight;
        c->inflight = f;
    } else {
        for (rpc_inflight **pp = &c->inflight; *pp != NULL; pp = &(*pp)->next)
            if (*pp == f) {
                *pp = f->next;
                break;
            }
    }
    pthread_mutex_unlock(&c->mtx);
    return rc;
}

/*
 * client_start starts aio's send (or receive) on ctx unless the connection
 * went away (no pipe, or f lost) or the client is closing: 0, else -1. Under
 * c->mtx, so that a connection that goes (client_pipe_cb) either finds the
 * aio running and cancels it, or comes first and is seen here: a call begun
 * just as the last connection went must not wait on NNG for a pipe until its
 * deadline (the REQ socket never fails it, and never resends).
 */
static int
client_start(rpc_client *c, rpc_inflight *f, nng_ctx ctx, int send)
{
    int rc = 0;
    pthread_mutex_lock(&c->mtx);
    if (c->closing || c->pipes == 0 || f->lost) {
        f->lost = 1;
        rc = -1;
    } else if (send) {
        nng_ctx_send(ctx, f->aio);
    } else {
        nng_ctx_recv(ctx, f->aio);
    }
    pthread_mutex_unlock(&c->mtx);
    return rc;
}

/* client_exchange sends msg (owned from here on) on ctx and waits for the reply. */
static a2a_status
client_exchange(rpc_client *c, nng_ctx ctx, nng_aio *aio, nng_msg *msg, int64_t deadline,
                nng_msg **replyp, char *err, size_t errlen)
{
    rpc_inflight f = {.aio = aio};
    int rv;

    if (client_track(c, &f, 1) != 0) {
        nng_msg_free(msg);
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "client for %s is closed", c->url);
    }
    nng_aio_set_msg(aio, msg);
    nng_aio_set_timeout(aio,
                        (nng_duration)(deadline - rpc_now_ms() > 0 ? deadline - rpc_now_ms() : 0));
    if (client_start(c, &f, ctx, 1) != 0) {
        rv = NNG_ECLOSED;
    } else {
        nng_aio_wait(aio);
        rv = nng_aio_result(aio);
    }
    if (rv != 0) {
        nng_msg_free(msg);
    } else {
        int64_t left = deadline - rpc_now_ms();
        nng_aio_set_timeout(aio, (nng_duration)(left > 0 ? left : 0));
        if (client_start(c, &f, ctx, 0) != 0) {
            rv = NNG_ECLOSED;
        } else {
            nng_aio_wait(aio);
            rv = nng_aio_result(aio);
        }
    }
    client_track(c, &f, 0);
    if (rv == 0) {
        *replyp = nng_aio_get_msg(aio);
        return A2A_OK;
    }
    if (f.lost || rv == NNG_ECLOSED)
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "connection to %s lost", c->url);
    if (rv == NNG_ETIMEDOUT)
        return status_fail(err, errlen, A2A_ERR_DEADLINE_EXCEEDED, "no reply from %s in time",
                           c->url);
    {
        char what[300];
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "%s: %s", c->url,
                           rpc_why(rv, NULL, c->url, 1, 0, what, sizeof(what)));
    }
}

/* client_unpack checks the reply envelope and copies out its body. */
static a2a_status
client_unpack(rpc_client *c, nng_msg *msg, uint64_t id, uint8_t **reply, size_t *reply_len,
              char *err, size_t errlen)
{
    wire_reply rep;
    char why[256];

    if (wire_reply_decode(&rep, nng_msg_body(msg), nng_msg_len(msg), why, sizeof(why)) != 0)
        return status_fail(err, errlen, A2A_ERR_INTERNAL, "bad reply from %s: %s", c->url, why);
    if (rep.id != id)
        return status_fail(err, errlen, A2A_ERR_INTERNAL,
                           "reply from %s answers call %llu, not %llu", c->url,
                           (unsigned long long)rep.id, (unsigned long long)id);
    if (rep.body_len > 0) {
        if ((*reply = malloc(rep.body_len)) == NULL)
            return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        memcpy(*reply, rep.body, rep.body_len);
        *reply_len = rep.body_len;
    }
    if (rep.status != A2A_OK)
        return status_fail(err, errlen, rep.status, "%s", rep.message);
    return A2A_OK;
}

static a2a_status rpc_call_counted(rpc_client *c, const char *method, const void *body, size_t len,
                                   int64_t timeout_ms, uint8_t **reply, size_t *reply_len,
                                   char *err, size_t errlen);

a2a_status
rpc_call(rpc_client *c, const char *method, const void *body, size_t len, int64_t timeout_ms,
         uint8_t **reply, size_t *reply_len, char *err, size_t errlen)
{
    a2a_status st;

    *reply = NULL;
    *reply_len = 0;
    if (strlen(method) > WIRE_METHOD_MAX)
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "method name \"%.16s...\" is "
                           "longer than %d bytes",
                           method, WIRE_METHOD_MAX);
    pthread_mutex_lock(&c->mtx);
    if (c->closing) {
        pthread_mutex_unlock(&c->mtx);
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "client for %s is closed", c->url);
    }
    c->calls++;
    pthread_mutex_unlock(&c->mtx);
    st = rpc_call_counted(c, method, body, len, timeout_ms, reply, reply_len, err, errlen);
    pthread_mutex_lock(&c->mtx);
    if (--c->calls == 0)
        pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mtx);
    return st;
}

/* client_roundtrip sends one request and waits for its reply until deadline; *via (when not
 * NULL) is the connection that answered, 0 for none. */
static a2a_status
client_roundtrip(rpc_client *c, const char *method, const void *body, size_t len, int64_t deadline,
                 uint8_t **reply, size_t *reply_len, uint32_t *via, char *err, size_t errlen)
{
    wire_request req = {.body = body, .body_len = len};
    msgpack_sbuffer sb;
    nng_msg *msg = NULL, *rmsg = NULL;
    nng_aio *aio = NULL;
    nng_ctx ctx;
    a2a_status st;

    snprintf(req.method, sizeof(req.method), "%s", method);
    req.id = atomic_fetch_add(&c->next_id, 1);
    req.timeout_ms = (uint64_t)(deadline - rpc_now_ms() > 0 ? deadline - rpc_now_ms() : 0);
    msgpack_sbuffer_init(&sb);
    if (wire_request_encode(&sb, &req) != 0 || nng_msg_alloc(&msg, 0) != 0 ||
        nng_msg_append(msg, sb.data, sb.size) != 0) {
        msgpack_sbuffer_destroy(&sb);
        nng_msg_free(msg);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    msgpack_sbuffer_destroy(&sb);
    if (nng_ctx_open(&ctx, c->sock) != 0) {
        nng_msg_free(msg);
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "client for %s is closed", c->url);
    }
    if (nng_aio_alloc(&aio, NULL, NULL) != 0) {
        nng_msg_free(msg);
        nng_ctx_close(ctx);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (via != NULL)
        *via = 0;
    st = client_exchange(c, ctx, aio, msg, deadline, &rmsg, err, errlen);
    if (st == A2A_OK) {
        if (via != NULL)
            *via = (uint32_t)nng_pipe_id(nng_msg_get_pipe(rmsg));
        st = client_unpack(c, rmsg, req.id, reply, reply_len, err, errlen);
        nng_msg_free(rmsg);
    }
    nng_aio_free(aio);
    nng_ctx_close(ctx);
    return st;
}

int
rpc_server_set_key(rpc_server *s, const auth_key *key)
{
    if (s->gate == NULL)
        return -1;
    gate_set_key(s->gate, key);
    return 0;
}

int
rpc_client_set_key(rpc_client *c, const auth_key *key)
{
    if (!c->has_key)
        return -1;
    pthread_mutex_lock(&c->auth_mtx); /* no handshake uses it meanwhile */
    c->key = *key;
    pthread_mutex_unlock(&c->auth_mtx);
    return 0;
}

void
rpc_poke(const char *url)
{
    char tcp[320];
    const char *rest = strncmp(url, "tls+", 4) == 0 ? url + 4 : url;
    nng_stream_dialer *d = NULL;
    nng_stream *st;
    nng_aio *aio = NULL;

    if (strncmp(rest, "tcp://*:", 8) == 0) /* a wildcard: ourselves on loopback */
        snprintf(tcp, sizeof(tcp), "tcp://127.0.0.1:%s", rest + 8);
    else
        snprintf(tcp, sizeof(tcp), "%s", rest);
    if (strncmp(tcp, "tcp", 3) != 0 || nng_stream_dialer_alloc(&d, tcp) != 0)
        return;
    if (nng_aio_alloc(&aio, NULL, NULL) == 0) {
        nng_aio_set_timeout(aio, 1000);
        nng_stream_dialer_dial(d, aio);
        nng_aio_wait(aio);
        if (nng_aio_result(aio) == 0 && (st = nng_aio_get_output(aio, 0)) != NULL) {
            nng_stream_close(st);
            nng_stream_free(st);
        }
        nng_aio_free(aio);
    }
    nng_stream_dialer_free(d);
}

int
rpc_server_set_tls(rpc_server *s, nng_tls_config *tls)
{
    if (tls == NULL || strncmp(s->url, "tls+", 4) != 0)
        return 1;
    if (nng_listener_set_ptr(s->listener, NNG_OPT_TLS_CONFIG, tls) != 0)
        return -1;
    rpc_poke(s->url); /* the accept waiting now took the old configuration when it began */
    return 0;
}

int
rpc_client_set_tls(rpc_client *c, nng_tls_config *tls)
{
    nng_tls_config *old;

    if (tls == NULL || c->tls == NULL)
        return 1;
    if (nng_dialer_set_ptr(c->dialer, NNG_OPT_TLS_CONFIG, tls) != 0)
        return -1;
    nng_tls_config_hold(tls);
    pthread_mutex_lock(&c->mtx);
    old = c->tls;
    c->tls = tls;
    pthread_mutex_unlock(&c->mtx);
    nng_tls_config_free(old);
    return 0;
}

/*
 * client_handshake proves the secret on the current connection (see server/gate.h); *proved is
 * the connection that took the proof. NNG's REQ socket sends each call on whatever connection
 * is up when it goes out: when the connection changed between the two calls, the proof was for
 * another connection's challenge, and the handshake is UNAVAILABLE (tried again on the new one).
 */
static a2a_status
client_handshake(rpc_client *c, int64_t deadline, uint32_t *proved, char *err, size_t errlen)
{
    uint8_t cnonce[AUTH_NONCE_LEN], got[2][WIRE_BIN32], mac[AUTH_MAC_LEN], *rep = NULL;
    const uint8_t *out[1] = {cnonce};
    size_t replen = 0;
    uint32_t via_challenge = 0, via_prove = 0;
    msgpack_sbuffer sb;
    char why[256];
    a2a_status st;

    auth_nonce(cnonce);
    msgpack_sbuffer_init(&sb);
    wire_bins_encode(&sb, 1, out);
    st = client_roundtrip(c, GATE_CHALLENGE, sb.data, sb.size, deadline, &rep, &replen,
                          &via_challenge, err, errlen);
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_ERR_INVALID_ARGUMENT) /* a server without a token knows no AuthChallenge */
        st = status_fail(err, errlen, A2A_ERR_PERMISSION_DENIED,
                         "%s does not take a token, but this client has one: the sides are set up "
                         "differently",
                         c->url);
    if (st == A2A_OK && wire_bins_decode(got, 2, rep, replen, why, sizeof(why)) != 0)
        st = status_fail(err, errlen, A2A_ERR_PERMISSION_DENIED, "bad challenge from %s: %s",
                         c->url, why);
    free(rep);
    if (st != A2A_OK)
        return st;
    auth_mac(&c->key, GATE_SERVER_LABEL, cnonce, AUTH_NONCE_LEN, got[0], AUTH_NONCE_LEN, mac);
    if (!auth_equal(mac, got[1], AUTH_MAC_LEN))
        return status_fail(err, errlen, A2A_ERR_PERMISSION_DENIED,
                           "%s does not know our token: wrong token on one side", c->url);
    auth_mac(&c->key, GATE_CLIENT_LABEL, got[0], AUTH_NONCE_LEN, cnonce, AUTH_NONCE_LEN, mac);
    out[0] = mac;
    msgpack_sbuffer_init(&sb);
    wire_bins_encode(&sb, 1, out);
    rep = NULL;
    st = client_roundtrip(c, GATE_PROVE, sb.data, sb.size, deadline, &rep, &replen, &via_prove, err,
                          errlen);
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    if (via_prove != 0 && via_prove != via_challenge)
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE,
                           "the connection to %s changed during the handshake", c->url);
    *proved = via_prove;
    return st;
}

/* client_auth makes sure the current connection proved the secret. */
static a2a_status
client_auth(rpc_client *c, int64_t deadline, char *err, size_t errlen)
{
    a2a_status st = A2A_OK;
    uint32_t pipe;

    pthread_mutex_lock(&c->auth_mtx);
    int proved;

    pthread_mutex_lock(&c->mtx);
    pipe = c->pipe_id;
    proved = pipe != 0 && pipe == c->proved_pipe;
    pthread_mutex_unlock(&c->mtx);
    if (!proved) {
        uint32_t via = 0;
        st = client_handshake(c, deadline, &via, err, errlen);
        pthread_mutex_lock(&c->mtx);
        if (st == A2A_OK) /* the connection that took the proof, whichever is up now */
            c->proved_pipe = via;
        pthread_mutex_unlock(&c->mtx);
    }
    pthread_mutex_unlock(&c->auth_mtx);
    return st;
}

/*
 * client_wait_refused waits for a connection until end, dialling the address
 * itself every RPC_REFUSED_STEP_MS meanwhile. It returns the dial's error once
 * every dial has failed the same way for RPC_REFUSED_MS, either refused
 * (NNG_ECONNREFUSED: nothing listens there) or a host name that does not
 * resolve (NNG_EADDRINVAL): waiting longer would only delay the answer.
 * Else 0 (connected, or end reached: the caller sees which). Once a dial gets
 * through (a service starting, or one that accepts and never answers) it
 * dials no more and waits until end like client_wait_pipe; a dial that times
 * out (an unroutable host, a firewall that drops) is waited on too.
 */
static int
client_wait_refused(rpc_client *c, int64_t start, int64_t end)
{
    int64_t since = start; /* every dial failed with last since then */
    int last = 0;

    for (;;) {
        int64_t now = rpc_now_ms(), step = now + RPC_REFUSED_STEP_MS;
        int rv;
        if (client_wait_pipe(c, step < end ? step : end) == 0 || rpc_now_ms() >= end)
            return 0;
        rv = dial_only(c->url, RPC_REFUSED_STEP_MS);
        now = rpc_now_ms();
        if (rv == (int)(NNG_ESYSERR | ECONNREFUSED))
            rv = NNG_ECONNREFUSED;
        if (rv != NNG_ECONNREFUSED && rv != NNG_EADDRINVAL && rv != NNG_ETIMEDOUT)
            break; /* it listens (or cannot be dialled this way): wait for NNG's connection */
        if (rv != last && last != 0)
            since = now - RPC_REFUSED_STEP_MS; /* another failure: it counts from now */
        last = rv;
        if (rv == NNG_ETIMEDOUT)
            since = now; /* silent, neither refusing nor unknown: wait on */
        else if (now - since >= RPC_REFUSED_MS && client_wait_pipe(c, now) != 0)
            return rv;
    }
    client_wait_pipe(c, end);
    return 0;
}

static a2a_status
rpc_call_counted(rpc_client *c, const char *method, const void *body, size_t len,
                 int64_t timeout_ms, uint8_t **reply, size_t *reply_len, char *err, size_t errlen)
{
    int64_t start = rpc_now_ms(), deadline = start + (timeout_ms > 0 ? timeout_ms : 0);
    int64_t wait = timeout_ms < c->connect_wait_ms ? timeout_ms : c->connect_wait_ms;
    a2a_status st;
    int rv;

    /* waiting all of the deadline for a connection leaves the probe below a part of it */
    if (wait >= timeout_ms)
        wait = timeout_ms - (timeout_ms / 4 < RPC_WHY_MS ? timeout_ms / 4 : RPC_WHY_MS);
    if (c->refused_ends && (rv = client_wait_refused(c, start, start + wait)) != 0)
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "cannot reach %s in %lld ms: %s",
                           c->url, (long long)(rpc_now_ms() - start),
                           rv == NNG_EADDRINVAL
                               ? "its host name does not resolve (a typo, or a host or "
                                 "container that is not up?)"
                               : "nothing listens there (connection refused: is it running?)");
    if (client_wait_pipe(c, start + wait) != 0) {
        char why[512];
        int64_t left = deadline - rpc_now_ms(); /* the probe keeps to the caller's time, mostly */
        int ms = left > RPC_WHY_MS ? RPC_WHY_MS : left > 50 ? (int)left : 50;
        client_why(c, ms, why, sizeof(why));
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "cannot reach %s in %lld ms%s", c->url,
                           (long long)(rpc_now_ms() - start), why);
    }
    for (int sends = 0;; sends++) {
        uint32_t via = 0;
        /* A server over its cap of connections not yet proved (server/guard.h) closes a new one
         * at once: the handshake has no effect, so prove the secret again on the next
         * connection. */
        for (int tries = 0; c->has_key; tries++) {
            st = client_auth(c, deadline, err, errlen);
            if (st == A2A_OK)
                break;
            if (st != A2A_ERR_UNAVAILABLE || tries == 4 || rpc_now_ms() + 20 >= deadline)
                return st;
            nng_msleep(20); /* NNG redials (RECONNMINT) */
            if (client_wait_pipe(c, deadline) != 0)
                return st;
        }
        st = client_roundtrip(c, method, body, len, deadline, reply, reply_len, &via, err, errlen);
        /* The check above and the send are not one step: when the connection went and NNG dialed
         * a new one in between, the REQ socket sent the call on the new one, which has not proved
         * the secret, and the server refused it before running it. Prove the secret on the
         * connection that comes after the refused one (the server closes that) and call again. */
        if (st != A2A_ERR_PERMISSION_DENIED || !c->has_key ||
            strncmp(err, GATE_UNPROVED, strlen(GATE_UNPROVED)) != 0 || sends == 2 ||
            rpc_now_ms() + 20 >= deadline)
            return st;
        free(*reply);
        *reply = NULL;
        *reply_len = 0;
        pthread_mutex_lock(&c->mtx);
        if (c->proved_pipe == via)
            c->proved_pipe = 0;
        pthread_mutex_unlock(&c->mtx);
        if (client_wait_other_pipe(c, via, deadline) != 0)
            return st;
    }
}

void
rpc_client_connect_wait(rpc_client *c, int64_t ms)
{
    c->connect_wait_ms = ms > 0 ? ms : RPC_CONNECT_WAIT_MS;
    c->refused_ends = 1;
}

void
rpc_client_free(rpc_client *c)
{
    if (c == NULL)
        return;
    /* Fail the calls in flight and wait until none is inside NNG: NNG 1.5 must not see
     * the socket close under a thread in nng_ctx_send/recv. */
    pthread_mutex_lock(&c->mtx);
    c->closing = 1;
    for (rpc_inflight *f = c->inflight; f != NULL; f = f->next) {
        f->lost = 1;
        nng_aio_cancel(f->aio);
    }
    pthread_cond_broadcast(&c->cv);
    while (c->calls > 0)
        pthread_cond_wait(&c->cv, &c->mtx);
    pthread_mutex_unlock(&c->mtx);
    nng_close(c->sock);          /* returns once the pipes, and their callbacks, are done */
    pthread_mutex_lock(&c->mtx); /* orders the last callback's writes before the free */
    pthread_mutex_unlock(&c->mtx);
    pthread_mutex_destroy(&c->mtx);
    pthread_mutex_destroy(&c->auth_mtx);
    pthread_cond_destroy(&c->cv);
    auth_key_wipe(&c->key);
    if (c->tls != NULL)
        nng_tls_config_free(c->tls);
    free(c);
}

const char *
rpc_why(int rv, const char *who, const char *url, int recv, int64_t ms, char *buf, size_t len)
{
    int sys = (rv & NNG_ESYSERR) ? rv & ~NNG_ESYSERR : 0;
    const char *w = who != NULL ? who : url != NULL ? url : "the peer";
    char secs[48] = "";

    if (ms > 0)
        snprintf(secs, sizeof(secs), ms % 1000 == 0 ? " for %.0f s" : " for %.1f s",
                 (double)ms / 1000.0);
    if (rv == NNG_ECONNREFUSED || sys == ECONNREFUSED)
        snprintf(buf, len, "nothing listens at %s (connection refused%s%s%s)",
                 url != NULL ? url : w, who != NULL ? ": is " : "", who != NULL ? who : "",
                 who != NULL ? " running?" : "");
    else if (rv == NNG_ECONNSHUT || (rv == NNG_ECLOSED && recv))
        snprintf(buf, len,
                 "the link to %s was closed by %s (it ended, restarted or gave the link up)", w, w);
    else if (rv == NNG_ECONNRESET || sys == ECONNRESET || sys == EPIPE)
        snprintf(buf, len,
                 "the link to %s was reset by %s's end (%s ended, restarted or gave the link up)",
                 w, w, w);
    else if (rv == NNG_ECLOSED)
        snprintf(buf, len, "the link to %s was closed on this side", w);
    else if (rv == NNG_ETIMEDOUT)
        snprintf(buf, len,
                 recv ? "%s did not answer%s (stopped, overloaded, or its network cut)"
                      : "%s took no data%s (stopped, overloaded, or its network cut)",
                 w, secs);
    else if (rv == NNG_EUNREACHABLE || sys == EHOSTUNREACH || sys == ENETUNREACH)
        snprintf(buf, len, "no route to %s (its host is down or its network cut)",
                 url != NULL ? url : w);
    else if (rv == NNG_EADDRINVAL)
        snprintf(buf, len, "%s is not an address that can be dialed (does its host name resolve?)",
                 url != NULL ? url : w);
    else if (rv == NNG_ECRYPTO)
        snprintf(buf, len, "the TLS handshake with %s failed (%s)", w, nng_strerror(rv));
    else if (rv == NNG_EPEERAUTH)
        snprintf(buf, len,
                 "%s could not be authenticated (it proved neither the token nor a "
                 "trusted certificate)",
                 w);
    else if (rv == NNG_EPROTO)
        snprintf(buf, len, "%s did not follow the protocol (another program, version or token?)",
                 w);
    else
        snprintf(buf, len, "the link to %s failed: %s", w, nng_strerror(rv));
    return buf;
}
