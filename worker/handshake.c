/* handshake.c - CHALLENGE, HELLO and WELCOME on a new peer link (see handshake.h). */
#include "handshake.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"

/* link_proof computes a proof of the token for the other side's nonce (label: whose proof). */
static void
link_proof(const engine *e, const char *label, const uint8_t nonce[AUTH_NONCE_LEN],
           const char *worker, uint64_t incarnation, uint8_t mac[AUTH_MAC_LEN])
{
    uint8_t who[CFG_WORKER_NAME_MAX + 1 + 8] = {0};
    size_t n = strlen(worker);
    auth_key k;
    memcpy(who, worker, n);
    for (int i = 0; i < 8; i++)
        who[n + 1 + i] = (uint8_t)(incarnation >> (56 - 8 * i));
    secure_key_copy(e->sec, &k); /* SIGHUP may replace it (handshake_set_key) */
    auth_mac(&k, label, nonce, AUTH_NONCE_LEN, who, n + 9, mac);
    auth_key_wipe(&k);
}

void
handshake_set_key(engine *e, const auth_key *key)
{
    (void)rpc_client_set_key(e->coord, key);
}

int
handshake_set_tls(engine *e)
{
    nng_tls_config *srv = secure_tls_server(e->sec), *cli = secure_tls_client(e->sec);
    int rv = 0;

    int set = srv != NULL ? wsock_listener_set_tls(e->listener, srv) : 1;
    if (set < 0)
        rv = -1;
    else if (set == 0) { /* its waiting accept took the old configuration (rpc_poke) */
        pthread_mutex_lock(&e->mtx);
        e->poke_until = rpc_now_ms() + 2000; /* that link's end is ours: not worth a warning */
        pthread_mutex_unlock(&e->mtx);
        rpc_poke(e->data_url);
    }
    if (cli != NULL && rpc_client_set_tls(e->coord, cli) < 0)
        rv = -1;
    if (srv != NULL)
        nng_tls_config_free(srv);
    if (cli != NULL)
        nng_tls_config_free(cli);
    return rv;
}

/* hs_read reads one handshake frame into f by deadline, into a fixed buffer; 0, NNG_ETIMEDOUT
 * when the deadline passed first, or -1; with why. */
static int
hs_read(wsock *s, int64_t deadline, frame *f, char *why, size_t whylen)
{
    uint8_t prefix[FRAME_PREFIX_LEN], hdr[HANDSHAKE_FRAME_MAX];
    nng_iov iov = {prefix, sizeof(prefix)};
    uint32_t hlen;
    uint64_t plen;
    int rv;

    if ((rv = wsock_io_by(s, &iov, 1, 1, deadline)) != 0) {
        snprintf(why, whylen, "%s",
                 rv == NNG_ETIMEDOUT ? "no handshake frame in time" : nng_strerror(rv));
        return rv == NNG_ETIMEDOUT ? rv : -1;
    }
    if (frame_prefix_decode(prefix, &hlen, &plen, why, whylen) != 0)
        return -1;
    if (hlen > HANDSHAKE_FRAME_MAX || plen > 0) {
        snprintf(why, whylen,
                 "a handshake frame announcing a %u-byte header and %llu payload bytes (at most "
                 "%u and none)",
                 hlen, (unsigned long long)plen, HANDSHAKE_FRAME_MAX);
        return -1;
    }
    iov = (nng_iov){hdr, hlen};
    if ((rv = wsock_io_by(s, &iov, 1, 1, deadline)) != 0) {
        snprintf(why, whylen, "%s",
                 rv == NNG_ETIMEDOUT ? "no whole handshake frame in time" : nng_strerror(rv));
        return rv == NNG_ETIMEDOUT ? rv : -1;
    }
    return frame_header_decode(f, hdr, hlen, 0, why, whylen) != 0 ? -1 : 0;
}

/* hs_write writes a frame without payload (CHALLENGE, HELLO, WELCOME) by deadline. */
static int
hs_write(wsock *s, const frame *f, int64_t deadline)
{
    uint8_t prefix[FRAME_PREFIX_LEN];
    msgpack_sbuffer sb;
    nng_iov iov[2];
    int rv = NNG_ENOMEM;

    msgpack_sbuffer_init(&sb);
    if (frame_header_encode(&sb, f) == 0) {
        frame_prefix_encode(prefix, (uint32_t)sb.size, 0);
        iov[0] = (nng_iov){prefix, sizeof(prefix)};
        iov[1] = (nng_iov){sb.data, sb.size};
        rv = wsock_io_by(s, iov, 2, 0, deadline);
    }
    msgpack_sbuffer_destroy(&sb);
    return rv;
}

/* ---- the dialer ---- */

/* read_handshake reads the next frame on our link s to p, which must be of type want; 0,
 * NNG_ETIMEDOUT (p sent nothing by deadline), or -1 (logged, with hint). */
static int
read_handshake(eng_peer *p, wsock *s, int64_t deadline, frame_type want, const char *name,
               const char *hint, frame *f)
{
    char why[256];
    int rv;

    if ((rv = hs_read(s, deadline, f, why, sizeof(why))) == NNG_ETIMEDOUT)
        return rv; /* said by the caller: the peer is silent (stopped, overloaded, cut off) */
    if (rv != 0) {
        log_warn("link to %s (%s): no %s from the peer (%s): %s", p->w->name, p->w->data_url, name,
                 why, hint);
        return -1;
    }
    if (f->type != want) {
        log_warn("link to %s (%s): the peer sent frame type %d, not %s: %s", p->w->name,
                 p->w->data_url, f->type, name, hint);
        frame_fini(f);
        return -1;
    }
    return 0;
}

/* answer_challenge reads the listener's CHALLENGE on s and puts the proof into hello. */
static int
answer_challenge(engine *e, eng_peer *p, wsock *s, int64_t deadline, frame *hello)
{
    frame ch;
    int rv;

    if ((rv = read_handshake(p, s, deadline, FRAME_CHALLENGE, "CHALLENGE",
                             "is its security.token_file set as ours is?", &ch)) != 0)
        return rv == NNG_ETIMEDOUT ? rv : NNG_EPROTO;
    link_proof(e, FRAME_LINK_LABEL, ch.nonce, hello->worker, hello->incarnation, hello->mac);
    hello->has_mac = 1;
    auth_nonce(hello->nonce); /* the listener proves the token for this one (WELCOME) */
    hello->has_nonce = 1;
    return 0;
}

/* check_welcome reads the listener's WELCOME on s: 0 when it proves the token, as p. */
static int
check_welcome(engine *e, eng_peer *p, wsock *s, int64_t deadline, const frame *hello)
{
    static const char hint[] = "the listener did not prove the token: it is not the worker we "
                               "dialed, or has another security.token_file";
    uint8_t want[AUTH_MAC_LEN];
    frame w;
    int rv;

    if ((rv = read_handshake(p, s, deadline, FRAME_WELCOME, "WELCOME", hint, &w)) != 0)
        return rv == NNG_ETIMEDOUT ? rv : NNG_EPEERAUTH;
    link_proof(e, FRAME_LINK_LISTENER_LABEL, hello->nonce, p->w->name, 0, want);
    if (!auth_equal(want, w.mac, AUTH_MAC_LEN)) {
        log_warn("link to %s (%s): a wrong proof in WELCOME: %s", p->w->name, p->w->data_url, hint);
        return NNG_EPEERAUTH;
    }
    return 0;
}

int
handshake_dial(engine *e, eng_peer *p, wsock *s)
{
    frame f = {.type = FRAME_HELLO, .incarnation = e->incarnation};
    /* a live listener answers at once: silence is judged as on a link that is up */
    int64_t deadline = rpc_now_ms() + HANDSHAKE_DIAL_MS;
    int rv;

    snprintf(f.worker, sizeof(f.worker), "%s", e->self->name);
    if (e->sec->has_key && (rv = answer_challenge(e, p, s, deadline, &f)) != 0)
        return rv;
    if ((rv = hs_write(s, &f, deadline)) == 0 && e->sec->has_key)
        rv = check_welcome(e, p, s, deadline, &f);
    return rv;
}

/* ---- the listener ---- */

int
handshake_peer_index(const engine *e, const char *name)
{
    int w = engine_worker_index(e, name);
    return w == e->self_idx ? -1 : w;
}

void
handshake_caps(const engine *e, size_t *total, size_t *per_source)
{
    *total = HANDSHAKE_PENDING_MAX + 2 * e->npeers;
    *per_source = HANDSHAKE_PENDING_PER_SOURCE + e->npeers;
}

/* check_hello verifies the proof in the dialer's HELLO f for our challenge nonce. */
static int
check_hello(engine *e, const frame *f, const uint8_t nonce[AUTH_NONCE_LEN], char *why,
            size_t whylen)
{
    uint8_t want[AUTH_MAC_LEN];

    link_proof(e, FRAME_LINK_LABEL, nonce, f->worker, f->incarnation, want);
    if (!f->has_mac || !auth_equal(want, f->mac, AUTH_MAC_LEN)) {
        snprintf(why, whylen, "HELLO from \"%s\" %s: PERMISSION_DENIED", f->worker,
                 f->has_mac ? "with a wrong proof of the token" : "without a proof of the token");
        return -1;
    }
    if (!f->has_nonce) {
        snprintf(why, whylen, "HELLO from \"%s\" without a nonce for our proof", f->worker);
        return -1;
    }
    return 0;
}

int
handshake_accept(engine *e, wsock *s, int64_t deadline, frame *hello, char *why, size_t whylen)
{
    frame ch = {.type = FRAME_CHALLENGE}, w = {.type = FRAME_WELCOME};
    int rv;

    if (e->sec->has_key) {
        auth_nonce(ch.nonce);
        if ((rv = hs_write(s, &ch, deadline)) != 0) {
            snprintf(why, whylen, "cannot send the challenge: %s", nng_strerror(rv));
            return -1;
        }
    }
    if ((rv = hs_read(s, deadline, hello, why, whylen)) != 0) {
        if (rv == NNG_ETIMEDOUT)
            snprintf(why, whylen, "no whole HELLO within the handshake's %d s",
                     HANDSHAKE_MS / 1000);
        return -1;
    }
    if (hello->type != FRAME_HELLO) {
        snprintf(why, whylen, "the first frame is of type %d, not HELLO", hello->type);
        frame_fini(hello);
        return -1;
    }
    if (hello->version != FRAME_LINK_VERSION) {
        snprintf(why, whylen,
                 "HELLO from \"%s\" speaks link protocol %u, this worker %u: every worker of a "
                 "cluster must run the same a2a version",
                 hello->worker, hello->version, FRAME_LINK_VERSION);
        return -1;
    }
    if (!e->sec->has_key)
        return 0;
    if (check_hello(e, hello, ch.nonce, why, whylen) != 0)
        return -1;
    pthread_mutex_lock(&e->mtx); /* the watcher may add or retire workers meanwhile */
    int known = handshake_peer_index(e, hello->worker) >= 0;
    pthread_mutex_unlock(&e->mtx);
    if (!known)
        return 0; /* no WELCOME: the caller refuses the unknown name */
    link_proof(e, FRAME_LINK_LISTENER_LABEL, hello->nonce, e->self->name, 0, w.mac);
    if ((rv = hs_write(s, &w, deadline)) != 0) {
        snprintf(why, whylen, "cannot send WELCOME to \"%s\": %s", hello->worker, nng_strerror(rv));
        return -1;
    }
    return 0;
}
