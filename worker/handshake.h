/*
 * handshake.h - the first frames of a peer link, both ways, before either
 * side trusts the other (common/frame.h has the frames, ARCHITECTURE.md the
 * protocol):
 *
 *   dialer                                   listener
 *                                       <-   CHALLENGE [nonce]        (with a token)
 *   HELLO [worker, incarnation, proof, nonce, version]  ->
 *                                       <-   WELCOME [proof]          (with a token)
 *
 * The listener refuses a HELLO of another link protocol version (FRAME_LINK_VERSION) by name.
 *
 * Until the other side has proved the secret, a side reads only into a fixed
 * HANDSHAKE_FRAME_MAX buffer (a prefix announcing more, or any payload,
 * closes the link) and the whole handshake has HANDSHAKE_MS, however slowly
 * its bytes come (the dialer waits HANDSHAKE_DIAL_MS for the listener).
 *
 * Liveness of a link we dialed (write-only: nothing comes back on it once up):
 * a worker that accepts a link from a peer links back to it if it has no link
 * of its own (its heartbeats then come back every ENGINE_HEARTBEAT_MS), and
 * the dialer gives the peer up when no link of the peer's came within
 * ENGINE_LINK_DEAD_MS of its own going up (link.c).
 */
#ifndef A2A_WORKER_HANDSHAKE_H
#define A2A_WORKER_HANDSHAKE_H

#include "engine_int.h"

#define HANDSHAKE_FRAME_MAX 512 /* header bytes of a CHALLENGE, HELLO or WELCOME (~150 used) */
#define HANDSHAKE_MS 5000       /* for the whole handshake, on the listener's side */
/* The dialer's side: a listener that is alive answers at once, so its silence is judged as on
 * a link that is up (ENGINE_LINK_DEAD_MS): a peer stopped before it ever linked to us, or a
 * port that accepts and never answers, is unavailable after this long, not at the deadline. */
#define HANDSHAKE_DIAL_MS ENGINE_LINK_DEAD_MS
/* Incoming links still in their handshake: at most this many in all, and from one source
 * address (plus the number of workers, which may all share a host). Beyond, closed at once. */
#define HANDSHAKE_PENDING_MAX 64
#define HANDSHAKE_PENDING_PER_SOURCE 8

/* handshake_dial runs the dialer's side on s, our new link to p; 0, NNG_ETIMEDOUT (p was silent
 * for HANDSHAKE_DIAL_MS: not logged, the caller says so), or another NNG error (logged). */
int handshake_dial(engine *e, eng_peer *p, wsock *s);

/*
 * handshake_accept runs the listener's side on s, an incoming link, until
 * deadline_ms (rpc_now_ms's clock): *hello is the dialer's HELLO, its proof
 * checked (with a token) and WELCOME sent when it names a peer of ours. 0, or
 * -1 with why.
 */
int handshake_accept(engine *e, wsock *s, int64_t deadline_ms, frame *hello, char *why,
                     size_t whylen);

/* handshake_set_key: after secure_reload_token replaced the token of e->sec, our link with the
 * coordinator proves the new one on its next connection too (links read e->sec themselves). */
void handshake_set_key(engine *e, const auth_key *key);

/* handshake_set_tls: after secure_reload_tls replaced e->sec's TLS configurations, the links
 * accepted and dialed from now on and our next connection to the coordinator use them
 * (established ones keep theirs); 0, or -1 when NNG refused one. */
int handshake_set_tls(engine *e);

/* handshake_peer_index: the peer index of the worker called name (not us, not retired), or
 * -1; under e->mtx (the watcher adds and retires workers). */
int handshake_peer_index(const engine *e, const char *name);

/* handshake_caps: how many incoming links may be in their handshake, in all and per source. */
void handshake_caps(const engine *e, size_t *total, size_t *per_source);

#endif
