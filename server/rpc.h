/*
 * rpc.h - the gRPC-style RPC layer over NNG REQ/REP, shared by the
 * coordinator and the worker.
 *
 * A server listens on one URL and answers with a pool of threads, each with
 * its own REP context, so that many callers are served at once and a slow
 * method holds only its own thread. Requests and replies are msgpack
 * envelopes (common/wire.h). A malformed envelope closes the caller's
 * connection (shed, server/guard.h); an unknown method or a bad body gets an
 * error reply.
 *
 * A client dials one URL (and redials it for ever); each call has a
 * deadline. No connection within the wait (rpc_client_connect_wait), or a connection lost during
 * the call, is A2A_ERR_UNAVAILABLE; no reply in time is A2A_ERR_DEADLINE_EXCEEDED. Clients are
 * thread-safe: each call uses its own REQ context.
 */
#ifndef A2A_SERVER_RPC_H
#define A2A_SERVER_RPC_H

#include <msgpack.h>
#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>
#include <stddef.h>
#include <stdint.h>

#include "a2a.h"
#include "common/auth.h"

#define RPC_RECV_MAX (8u << 20)  /* receive-size limit on every RPC socket */
#define RPC_CONNECT_WAIT_MS 1500 /* how long a call waits for a connection */
#define RPC_WHY_MS 500           /* then one direct attempt (at most) to find out why not */
#define RPC_REFUSED_MS 1000      /* refused this long, a rpc_client_connect_wait wait ends */
#define RPC_REFUSED_STEP_MS 200  /* how often that wait dials the address itself */

/*
 * What protects a server or a client: with a key, every connection proves
 * the shared secret before its first call (HMAC challenge-response, both
 * ways); with a TLS configuration, tls+tcp:// URLs are encrypted. NULL
 * fields, or a NULL rpc_security, mean neither.
 */
typedef struct {
    const auth_key *key;
    nng_tls_config *tls;
} rpc_security;

typedef struct rpc_server rpc_server;
typedef struct rpc_client rpc_client;

/* What a method handler sees of one call, and fills in for its reply. */
typedef struct {
    uint64_t timeout_ms;   /* what is left of the caller's deadline */
    nng_pipe pipe;         /* the caller's connection */
    rpc_server *server;    /* the server it came to (NULL off the RPC layer) */
    msgpack_sbuffer *body; /* the reply body; written by the handler */
    char message[1024];    /* the reply message on failure */
    int close_after;       /* close the caller's connection once the reply is sent */
} rpc_ctx;

/* A method: returns A2A_OK with the body filled, or a status with rpc_fail's message. */
typedef a2a_status (*rpc_handler_fn)(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len);

typedef struct {
    const char *name;
    rpc_handler_fn fn;
} rpc_method;

/*
 * rpc_server_alloc listens on url (port 0 takes an ephemeral port) and starts
 * nthreads threads that answer with methods[0..nmethods), which stay owned by
 * the caller and must outlive the server. *out is freed with rpc_server_free.
 * Connections are guarded as server/guard.h says (caps and a deadline before
 * they prove the secret). The first server of a process fixes glibc's
 * M_MMAP_THRESHOLD at 512 KiB (see rpc.c).
 */
a2a_status rpc_server_alloc(rpc_server **out, const char *url, const rpc_method *methods,
                            size_t nmethods, void *arg, int nthreads, const rpc_security *sec,
                            char *err, size_t errlen);

/*
 * rpc_server_set_key makes key the token that connections prove from now on
 * (SIGHUP); connections that proved the old one keep working until they
 * close. -1 for a server without a token.
 */
int rpc_server_set_key(rpc_server *s, const auth_key *key);

/* rpc_client_set_key: the token c proves on its next connections (-1: c has none). */
int rpc_client_set_key(rpc_client *c, const auth_key *key);

/*
 * rpc_server_set_tls and rpc_client_set_tls: the TLS configuration that the server's next
 * connections (SIGHUP) and c's next connections use; established ones keep theirs. 1 for a
 * server or client without TLS (nothing done), 0 when set, -1 when NNG refused it.
 */
int rpc_server_set_tls(rpc_server *s, nng_tls_config *tls);

/*
 * rpc_poke connects to url over plain TCP and closes at once (within 1 s; nothing when it
 * cannot). NNG's TLS listener takes its configuration when an accept begins, so the accept
 * waiting when the configuration is replaced would give the next peer the old one: after
 * rpc_server_set_tls (or a stream listener's) a poke ends that accept.
 */
void rpc_poke(const char *url);
int rpc_client_set_tls(rpc_client *c, nng_tls_config *tls);

/* rpc_server_url returns the URL the server listens on, with the bound port. */
const char *rpc_server_url(const rpc_server *s);

/* rpc_server_free closes the socket, waits for every thread and frees s; NULL is fine. */
void rpc_server_free(rpc_server *s);

/*
 * A server's watcher of its connections: gone(arg, id) runs once for each
 * connection as NNG removes it (id: nng_pipe_id of rpc_ctx.pipe), on NNG's
 * thread, so it must not block for long nor call back into the server.
 * rpc_server_watch sets it (NULL clears it; once it returns, the old watcher
 * runs no more). rpc_server_pipe_live reports whether connection id is still
 * up: what a handler that ties state to ctx->pipe checks (with its own lock
 * held, which gone also takes) so that no connection is missed that went
 * between the request and the handler.
 */
typedef void (*rpc_gone_fn)(void *arg, uint32_t pipe_id);
void rpc_server_watch(rpc_server *s, rpc_gone_fn gone, void *arg);
int rpc_server_pipe_live(rpc_server *s, uint32_t pipe_id);

/* rpc_fail sets ctx's reply message and returns status, for "return rpc_fail(...)". */
a2a_status rpc_fail(rpc_ctx *ctx, a2a_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * rpc_client_alloc starts dialling url; *out is freed with rpc_client_free.
 * sec (copied) may be NULL.
 */
a2a_status rpc_client_alloc(rpc_client **out, const char *url, const rpc_security *sec, char *err,
                            size_t errlen);

/*
 * rpc_call calls method with body and waits at most timeout_ms. *reply is a
 * malloc'd copy of the reply body (freed by the caller, also after a remote
 * failure whose reply has a body; NULL when empty) and *reply_len its length.
 * On failure err holds the message, which for a remote failure is the
 * server's.
 */
a2a_status rpc_call(rpc_client *c, const char *method, const void *body, size_t len,
                    int64_t timeout_ms, uint8_t **reply, size_t *reply_len, char *err,
                    size_t errlen);

/* rpc_client_connect_wait sets how long a call waits for a connection before it fails with
 * UNAVAILABLE (default RPC_CONNECT_WAIT_MS, so that a job's calls to a worker that is gone fail
 * fast; a tool that should wait all of its --timeout gives that). Never more than a call's own
 * deadline; call before the first call. A wait set here ends early when the address refuses
 * connections, or its host name does not resolve, for RPC_REFUSED_MS (nothing listens there:
 * "connection refused"); an address that accepts, or stays silent, is waited for all of ms. */
void rpc_client_connect_wait(rpc_client *c, int64_t ms);

/* rpc_client_url returns the URL the client dials. */
const char *rpc_client_url(const rpc_client *c);

/* rpc_client_free closes the socket, failing calls in flight, and frees c; NULL is fine. */
void rpc_client_free(rpc_client *c);

/* rpc_now_ms returns a monotonic clock in milliseconds. */
int64_t rpc_now_ms(void);

/*
 * rpc_why writes into buf what the NNG (or OS, NNG_ESYSERR | errno) failure rv
 * on a connection to `who` (a worker's name, "the coordinator", or NULL:
 * the address alone) at url means, in words that say what failed instead of
 * NNG's short strings: "nothing listens at tcp://...:7101 (is w3 running?)",
 * "the link to w3 was closed by w3", "w3 did not answer for 3 s". recv: rv
 * came from a receive or a dial, where an answer was awaited (an end of
 * stream is then the peer closing, a timeout its silence). ms: the
 * wait that timed out (0: none stated). Returns buf.
 */
const char *rpc_why(int rv, const char *who, const char *url, int recv, int64_t ms, char *buf,
                    size_t len);

#endif
