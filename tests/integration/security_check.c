/*
 * security_check.c - attacks on a running worker that test_security.sh runs;
 * each mode exits 0 when the worker behaved as it must, 1 when not, 2 on bad
 * usage. Every line it prints starts with "security_check MODE:".
 *
 *   link-noproof DATA_URL [WORKER]          read the CHALLENGE, answer HELLO
 *                                           without a proof: the link is closed
 *   link-replay DATA_URL TOKEN_FILE [WORKER] a proof made for connection A's
 *                                           challenge, sent on connection B:
 *                                           closed
 *   link-control DATA_URL TOKEN_FILE NAME   a correct proof under a worker name
 *                                           the cluster does not know: closed
 *                                           (the worker's log tells why: the
 *                                           shell test checks the proof passed)
 *   link-garbage DATA_URL                   random bytes, and a valid prefix
 *                                           with a random header: closed
 *   rpc-replay API_URL TOKEN_FILE           the RPC handshake by hand: a proof
 *                                           replayed on a new connection, a
 *                                           proof before any challenge, a proof
 *                                           used twice: all PERMISSION_DENIED
 *   tls-peer DATA_URL CERT KEY CA refused|accepted
 *                                           a TLS link presenting CERT, trusting
 *                                           CA for the worker's certificate
 *   rogue-listener DATA_URL                 listens where a worker will dial,
 *                                           without the token: CHALLENGE, reads
 *                                           HELLO, a WELCOME with a made-up
 *                                           proof; the dialer must close the
 *                                           link without sending anything more
 */
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>
#include <nng/supplemental/util/platform.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/auth.h"
#include "common/frame.h"
#include "common/wire.h"

#define CLOSE_WAIT_MS 5000 /* a refused connection must be closed within this */

static const char *mode = "?";

static void
say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("security_check %s: ", mode);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
random_bytes(void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom((uint8_t *)buf + got, n - got, 0);
        if (r > 0)
            got += (size_t)r;
    }
}

static int
load_key(auth_key *k, const char *path)
{
    char err[512];
    if (auth_key_load(k, path, err, sizeof(err)) != A2A_OK) {
        say("cannot load the token: %s", err);
        return -1;
    }
    return 0;
}

/* ---- peer links ---- */

typedef struct {
    nng_stream_dialer *d;
    nng_stream *s;
    nng_aio *aio;
    nng_tls_config *tls;
} conn;

/* conn_open dials url (tls may be NULL); 0, or an NNG error. */
static int
conn_open(conn *c, const char *url, nng_tls_config *tls)
{
    int rv;
    memset(c, 0, sizeof(*c));
    if ((rv = nng_aio_alloc(&c->aio, NULL, NULL)) != 0 ||
        (rv = nng_stream_dialer_alloc(&c->d, url)) != 0)
        return rv;
    if (tls != NULL && (rv = nng_stream_dialer_set_ptr(c->d, NNG_OPT_TLS_CONFIG, tls)) != 0)
        return rv;
    nng_aio_set_timeout(c->aio, 5000);
    nng_stream_dialer_dial(c->d, c->aio);
    nng_aio_wait(c->aio);
    if ((rv = nng_aio_result(c->aio)) != 0)
        return rv;
    c->s = nng_aio_get_output(c->aio, 0);
    return 0;
}

static void
conn_close(conn *c)
{
    if (c->s != NULL)
        nng_stream_free(c->s);
    if (c->d != NULL)
        nng_stream_dialer_free(c->d);
    if (c->aio != NULL)
        nng_aio_free(c->aio);
    memset(c, 0, sizeof(*c));
}

/* conn_io sends or receives exactly n bytes; 0 or an NNG error. */
static int
conn_io(conn *c, void *buf, size_t n, int recv, int timeout_ms)
{
    while (n > 0) {
        nng_iov iov = {buf, n};
        size_t got;
        int rv;
        nng_aio_set_iov(c->aio, 1, &iov);
        nng_aio_set_timeout(c->aio, timeout_ms);
        if (recv)
            nng_stream_recv(c->s, c->aio);
        else
            nng_stream_send(c->s, c->aio);
        nng_aio_wait(c->aio);
        if ((rv = nng_aio_result(c->aio)) != 0)
            return rv;
        if ((got = nng_aio_count(c->aio)) == 0)
            return NNG_ECLOSED;
        buf = (uint8_t *)buf + got;
        n -= got;
    }
    return 0;
}

/* read_frame reads one frame header (no payload expected); 0, or -1 with a message printed. */
static int
read_frame(conn *c, frame *f)
{
    uint8_t prefix[FRAME_PREFIX_LEN], hdr[4096];
    uint32_t hlen;
    uint64_t plen;
    char err[256];
    int rv;

    if ((rv = conn_io(c, prefix, sizeof(prefix), 1, 5000)) != 0) {
        say("no frame from the worker: %s", nng_strerror(rv));
        return -1;
    }
    if (frame_prefix_decode(prefix, &hlen, &plen, err, sizeof(err)) != 0 || hlen > sizeof(hdr) ||
        plen != 0) {
        say("bad frame prefix from the worker: %s", err);
        return -1;
    }
    if ((rv = conn_io(c, hdr, hlen, 1, 5000)) != 0) {
        say("no frame header from the worker: %s", nng_strerror(rv));
        return -1;
    }
    if (frame_header_decode(f, hdr, hlen, plen, err, sizeof(err)) != 0) {
        say("bad frame header from the worker: %s", err);
        return -1;
    }
    return 0;
}

/* read_challenge reads the CHALLENGE the worker sends first on a link with a token. */
static int
read_challenge(conn *c, uint8_t nonce[AUTH_NONCE_LEN])
{
    frame f;
    if (read_frame(c, &f) != 0)
        return -1;
    if (f.type != FRAME_CHALLENGE) {
        say("the first frame is of type %d, not CHALLENGE (7): has the worker a token?", f.type);
        frame_fini(&f);
        return -1;
    }
    memcpy(nonce, f.nonce, AUTH_NONCE_LEN);
    frame_fini(&f);
    return 0;
}

static int
send_frame(conn *c, const frame *f)
{
    msgpack_sbuffer sb;
    uint8_t prefix[FRAME_PREFIX_LEN] = {0};
    int rv;

    msgpack_sbuffer_init(&sb);
    msgpack_sbuffer_write(&sb, (const char *)prefix, sizeof(prefix));
    if (frame_header_encode(&sb, f) != 0) {
        msgpack_sbuffer_destroy(&sb);
        return NNG_ENOMEM;
    }
    frame_prefix_encode((uint8_t *)sb.data, (uint32_t)(sb.size - FRAME_PREFIX_LEN), 0);
    rv = conn_io(c, sb.data, sb.size, 0, 5000);
    msgpack_sbuffer_destroy(&sb);
    return rv;
}

/* send_hello sends HELLO as worker with incarnation; mac may be NULL (no proof). */
static int
send_hello(conn *c, const char *worker, uint64_t incarnation, const uint8_t *mac)
{
    frame f = {.type = FRAME_HELLO, .incarnation = incarnation, .has_nonce = 1};
    snprintf(f.worker, sizeof(f.worker), "%s", worker);
    random_bytes(f.nonce, sizeof(f.nonce)); /* for the WELCOME we never wait for */
    if (mac != NULL) {
        f.has_mac = 1;
        memcpy(f.mac, mac, AUTH_MAC_LEN);
    }
    return send_frame(c, &f);
}

/* link_proof: HMAC(k, "a2a link", nonce, worker || 0 || incarnation big-endian), as worker/link.c.
 */
static void
link_proof(const auth_key *k, const uint8_t nonce[AUTH_NONCE_LEN], const char *worker,
           uint64_t incarnation, uint8_t mac[AUTH_MAC_LEN])
{
    uint8_t who[CFG_WORKER_NAME_MAX + 1 + 8] = {0};
    size_t n = strlen(worker);
    memcpy(who, worker, n);
    for (int i = 0; i < 8; i++)
        who[n + 1 + i] = (uint8_t)(incarnation >> (56 - 8 * i));
    auth_mac(k, FRAME_LINK_LABEL, nonce, AUTH_NONCE_LEN, who, n + 9, mac);
}

/*
 * expect_closed reads until the worker closes c: 0 when it did within
 * CLOSE_WAIT_MS (whatever it sent before), -1 when the connection stayed open.
 */
static int
expect_closed(conn *c, const char *what, size_t *more)
{
    int64_t end = now_ms() + CLOSE_WAIT_MS, start = now_ms();
    size_t extra = 0;
    uint8_t buf[4096];

    for (;;) {
        int64_t left = end - now_ms();
        nng_iov iov = {buf, sizeof(buf)};
        int rv;
        if (left <= 0) {
            say("FAILED: %s: the connection is still open after %d ms (%zu bytes received)", what,
                CLOSE_WAIT_MS, extra);
            return -1;
        }
        nng_aio_set_iov(c->aio, 1, &iov);
        nng_aio_set_timeout(c->aio, (nng_duration)left);
        nng_stream_recv(c->s, c->aio);
        nng_aio_wait(c->aio);
        rv = nng_aio_result(c->aio);
        if (rv == 0 && nng_aio_count(c->aio) > 0) {
            extra += nng_aio_count(c->aio);
            continue;
        }
        if (rv == NNG_ETIMEDOUT)
            continue; /* the loop reports it */
        say("%s: closed by the worker after %lld ms (%s; %zu more bytes first)", what,
            (long long)(now_ms() - start), rv == 0 ? "end of stream" : nng_strerror(rv), extra);
        if (more != NULL)
            *more = extra;
        return 0;
    }
}

static int
mode_link_noproof(const char *url, const char *worker)
{
    conn c;
    uint8_t nonce[AUTH_NONCE_LEN];
    int rv, bad;

    if ((rv = conn_open(&c, url, NULL)) != 0) {
        say("cannot connect to %s: %s", url, nng_strerror(rv));
        conn_close(&c);
        return 1;
    }
    if (read_challenge(&c, nonce) != 0) {
        conn_close(&c);
        return 1;
    }
    say("CHALLENGE received; answering HELLO as \"%s\" without a proof", worker);
    if ((rv = send_hello(&c, worker, 0x5ec0de, NULL)) != 0)
        say("sending HELLO: %s (closed already)", nng_strerror(rv));
    bad = expect_closed(&c, "HELLO without a proof", NULL);
    conn_close(&c);
    return bad ? 1 : 0;
}

static int
mode_link_replay(const char *url, const char *token_file, const char *worker)
{
    conn a, b;
    auth_key k;
    uint8_t na[AUTH_NONCE_LEN], nb[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN];
    int rv, bad = 1;

    if (load_key(&k, token_file) != 0)
        return 1;
    if ((rv = conn_open(&a, url, NULL)) != 0 || read_challenge(&a, na) != 0) {
        say("connection A to %s: %s", url, rv ? nng_strerror(rv) : "no challenge");
        conn_close(&a);
        return 1;
    }
    if ((rv = conn_open(&b, url, NULL)) != 0 || read_challenge(&b, nb) != 0) {
        say("connection B to %s: %s", url, rv ? nng_strerror(rv) : "no challenge");
        conn_close(&a);
        conn_close(&b);
        return 1;
    }
    if (memcmp(na, nb, AUTH_NONCE_LEN) == 0) {
        say("FAILED: two connections got the same challenge nonce");
    } else {
        link_proof(&k, na, worker, 0x5ec0de, mac);
        say("sending on connection B the proof made for connection A's challenge, as \"%s\"",
            worker);
        if ((rv = send_hello(&b, worker, 0x5ec0de, mac)) != 0)
            say("sending HELLO: %s (closed already)", nng_strerror(rv));
        bad = expect_closed(&b, "a proof for another connection's challenge", NULL);
    }
    conn_close(&a);
    conn_close(&b);
    auth_key_wipe(&k);
    return bad ? 1 : 0;
}

static int
mode_link_control(const char *url, const char *token_file, const char *name)
{
    conn c;
    auth_key k;
    uint8_t nonce[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN];
    int rv, bad;

    if (load_key(&k, token_file) != 0)
        return 1;
    if ((rv = conn_open(&c, url, NULL)) != 0 || read_challenge(&c, nonce) != 0) {
        say("connection to %s: %s", url, rv ? nng_strerror(rv) : "no challenge");
        conn_close(&c);
        return 1;
    }
    link_proof(&k, nonce, name, 0x5ec0de, mac);
    say("sending a correct proof as the unknown worker \"%s\"", name);
    if ((rv = send_hello(&c, name, 0x5ec0de, mac)) != 0)
        say("sending HELLO: %s (closed already)", nng_strerror(rv));
    bad = expect_closed(&c, "a correct proof from an unknown worker", NULL);
    conn_close(&c);
    auth_key_wipe(&k);
    return bad ? 1 : 0;
}

static int
mode_link_garbage(const char *url)
{
    uint8_t junk[8192], prefix[FRAME_PREFIX_LEN];
    int bad = 0;

    for (int round = 0; round < 2; round++) {
        conn c;
        int rv;
        if ((rv = conn_open(&c, url, NULL)) != 0) {
            say("cannot connect to %s: %s", url, nng_strerror(rv));
            conn_close(&c);
            return 1;
        }
        random_bytes(junk, sizeof(junk));
        if (round == 0) {
            junk[0] = 'X'; /* never the magic */
            rv = conn_io(&c, junk, sizeof(junk), 0, 5000);
        } else { /* a valid prefix announcing a 200-byte header, then 200 random bytes */
            frame_prefix_encode(prefix, 200, 0);
            junk[0] = 0xc1; /* msgpack's "never used" byte: no header can start with it */
            if ((rv = conn_io(&c, prefix, sizeof(prefix), 0, 5000)) == 0)
                rv = conn_io(&c, junk, 200, 0, 5000);
        }
        if (rv != 0)
            say("sending: %s (closed already)", nng_strerror(rv));
        bad |= expect_closed(
            &c, round == 0 ? "8 KiB of random bytes" : "a valid prefix and a random header", NULL);
        conn_close(&c);
    }
    return bad ? 1 : 0;
}

/*
 * mode_rogue_listener: a listener on a worker's data port that does not know
 * the token. A worker that dials it gets a CHALLENGE, answers HELLO (with
 * its proof, useless to us, and a nonce), and must refuse our made-up WELCOME:
 * close the link without a single frame more (no READY, no data).
 */
static int
mode_rogue_listener(const char *url)
{
    nng_stream_listener *l = NULL;
    frame ch = {.type = FRAME_CHALLENGE}, hello, w = {.type = FRAME_WELCOME};
    conn c = {0};
    size_t more = 0;
    int rv, bad = 1;

    if ((rv = nng_stream_listener_alloc(&l, url)) != 0 ||
        (rv = nng_stream_listener_listen(l)) != 0 || (rv = nng_aio_alloc(&c.aio, NULL, NULL))) {
        say("cannot listen on %s: %s", url, nng_strerror(rv));
        goto out;
    }
    say("listening on %s", url);
    nng_aio_set_timeout(c.aio, 20000);
    nng_stream_listener_accept(l, c.aio);
    nng_aio_wait(c.aio);
    if ((rv = nng_aio_result(c.aio)) != 0) {
        say("no worker dialed within 20 s: %s", nng_strerror(rv));
        goto out;
    }
    c.s = nng_aio_get_output(c.aio, 0);
    random_bytes(ch.nonce, sizeof(ch.nonce));
    if ((rv = send_frame(&c, &ch)) != 0) {
        say("sending CHALLENGE: %s", nng_strerror(rv));
        goto out;
    }
    if (read_frame(&c, &hello) != 0)
        goto out;
    say("HELLO from \"%s\" (%s, %s)", hello.worker, hello.has_mac ? "a proof" : "no proof",
        hello.has_nonce ? "a nonce for ours" : "no nonce");
    if (hello.type != FRAME_HELLO || !hello.has_nonce) {
        say("FAILED: the dialer sent no HELLO with a nonce: it could not check the listener");
        goto out;
    }
    random_bytes(w.mac, sizeof(w.mac));
    if ((rv = send_frame(&c, &w)) != 0)
        say("sending WELCOME: %s (closed already)", nng_strerror(rv));
    if (expect_closed(&c, "a WELCOME with a made-up proof", &more) != 0)
        goto out;
    if (more > 0) {
        say("FAILED: the dialer sent %zu bytes after HELLO to a listener that did not prove "
            "the token",
            more);
        goto out;
    }
    bad = 0;
out:
    conn_close(&c);
    if (l != NULL)
        nng_stream_listener_free(l);
    return bad;
}

/* ---- RPC, spoken by hand on raw REQ sockets ---- */

typedef struct {
    nng_socket sock;
} raw;

static int
raw_open(raw *r, const char *url)
{
    int rv;
    if ((rv = nng_req0_open(&r->sock)) != 0)
        return rv;
    nng_socket_set_ms(r->sock, NNG_OPT_RECVTIMEO, 5000);
    nng_socket_set_ms(r->sock, NNG_OPT_SENDTIMEO, 5000);
    nng_socket_set_ms(r->sock, NNG_OPT_RECONNMINT, 100);
    nng_socket_set_ms(r->sock, NNG_OPT_RECONNMAXT, 200);
    return nng_dial(r->sock, url, NULL, 0);
}

/* raw_call: the reply's status (bins into got when ngot > 0), or -1 when no reply came. */
static int
raw_call(raw *r, const char *method, size_t n, const uint8_t *const *bins,
         uint8_t (*got)[WIRE_BIN32], size_t ngot, char *msg, size_t msglen)
{
    static uint64_t next_id = 1;
    wire_request req = {.id = next_id++, .timeout_ms = 5000};
    wire_reply rep;
    msgpack_sbuffer body, sb;
    nng_msg *m = NULL;
    char why[256];
    int rv, st;

    snprintf(req.method, sizeof(req.method), "%s", method);
    msgpack_sbuffer_init(&body);
    msgpack_sbuffer_init(&sb);
    if (bins != NULL)
        wire_bins_encode(&body, n, bins);
    else
        wire_empty_encode(&body);
    req.body = (const uint8_t *)body.data;
    req.body_len = body.size;
    wire_request_encode(&sb, &req);
    rv = nng_send(r->sock, sb.data, sb.size, 0);
    msgpack_sbuffer_destroy(&sb);
    msgpack_sbuffer_destroy(&body);
    if (rv != 0 || (rv = nng_recvmsg(r->sock, &m, 0)) != 0) {
        snprintf(msg, msglen, "no reply: %s", nng_strerror(rv));
        return -1;
    }
    if (wire_reply_decode(&rep, nng_msg_body(m), nng_msg_len(m), why, sizeof(why)) != 0) {
        snprintf(msg, msglen, "bad reply: %s", why);
        nng_msg_free(m);
        return -1;
    }
    snprintf(msg, msglen, "%s", rep.message);
    st = (int)rep.status;
    if (st == A2A_OK && ngot > 0 &&
        wire_bins_decode(got, ngot, rep.body, rep.body_len, why, sizeof(why)) != 0) {
        snprintf(msg, msglen, "bad reply body: %s", why);
        st = -1;
    }
    nng_msg_free(m);
    return st;
}

static const char *
st_name(int st)
{
    return st < 0 ? "no reply" : a2a_status_name((a2a_status)st);
}

/* check: prints and counts an unexpected status. */
static int
check(const char *what, int got, int want, const char *msg)
{
    say("%s: %s%s%s", what, st_name(got), msg[0] ? ": " : "", msg);
    if (got != want) {
        say("FAILED: %s: expected %s", what, st_name(want));
        return 1;
    }
    return 0;
}

/* challenge: AuthChallenge [cn] on r; *sn gets the server nonce, whose MAC is checked. */
static int
challenge(raw *r, const auth_key *k, const uint8_t *cn, uint8_t *sn, char *msg, size_t msglen)
{
    const uint8_t *out[1] = {cn};
    uint8_t got[2][WIRE_BIN32], want[AUTH_MAC_LEN];
    int st = raw_call(r, "AuthChallenge", 1, out, got, 2, msg, msglen);
    if (st != A2A_OK)
        return st;
    memcpy(sn, got[0], AUTH_NONCE_LEN);
    auth_mac(k, "a2a rpc server", cn, AUTH_NONCE_LEN, sn, AUTH_NONCE_LEN, want);
    if (!auth_equal(want, got[1], AUTH_MAC_LEN)) {
        snprintf(msg, msglen, "the server's proof does not match our token");
        return -1;
    }
    return A2A_OK;
}

/*
 * raw_settle_close: one more AuthChallenge (which the server answers and keeps
 * the connection for), then close. Every socket above ends on a refusal after
 * which the server closes the connection and NNG redials; NNG 1.5.2 leaks the
 * dialer's connection objects when the socket is closed while that redial is
 * under way (seen by LeakSanitizer in 2 of 60 runs on a loaded machine). A
 * completed call means the redial is over.
 */
static int
raw_settle_close(raw *r, const auth_key *k)
{
    uint8_t cn[AUTH_NONCE_LEN], sn[AUTH_NONCE_LEN];
    char msg[1100];
    int bad;

    auth_nonce(cn);
    bad = check("AuthChallenge before closing", challenge(r, k, cn, sn, msg, sizeof(msg)), A2A_OK,
                msg);
    nng_close(r->sock);
    return bad;
}

static int
mode_rpc_replay(const char *url, const char *token_file)
{
    raw a, b, c;
    auth_key k;
    uint8_t cn[AUTH_NONCE_LEN], sa[AUTH_NONCE_LEN], sb[AUTH_NONCE_LEN], proof[AUTH_MAC_LEN];
    const uint8_t *out[1] = {proof};
    char msg[1100];
    int bad = 0, rv;

    if (load_key(&k, token_file) != 0)
        return 1;
    if ((rv = raw_open(&a, url)) != 0 || (rv = raw_open(&b, url)) != 0 ||
        (rv = raw_open(&c, url)) != 0) {
        say("cannot connect to %s: %s", url, nng_strerror(rv));
        return 1;
    }
    /* A: the real handshake, recorded; then a call */
    auth_nonce(cn);
    bad |= check("A AuthChallenge", challenge(&a, &k, cn, sa, msg, sizeof(msg)), A2A_OK, msg);
    auth_mac(&k, "a2a rpc client", sa, AUTH_NONCE_LEN, cn, AUTH_NONCE_LEN, proof);
    bad |= check("A AuthProve", raw_call(&a, "AuthProve", 1, out, NULL, 0, msg, sizeof(msg)),
                 A2A_OK, msg);
    bad |=
        check("A Health", raw_call(&a, "Health", 0, NULL, NULL, 0, msg, sizeof(msg)), A2A_OK, msg);
    /* B: A's messages played again: same client nonce, same proof */
    bad |= check("B AuthChallenge (A's client nonce)", challenge(&b, &k, cn, sb, msg, sizeof(msg)),
                 A2A_OK, msg);
    if (memcmp(sa, sb, AUTH_NONCE_LEN) == 0) {
        say("FAILED: the server nonce repeated on a new connection");
        bad = 1;
    }
    bad |= check("B AuthProve (A's proof)",
                 raw_call(&b, "AuthProve", 1, out, NULL, 0, msg, sizeof(msg)),
                 A2A_ERR_PERMISSION_DENIED, msg);
    bad |= check("B Health", raw_call(&b, "Health", 0, NULL, NULL, 0, msg, sizeof(msg)),
                 A2A_ERR_PERMISSION_DENIED, msg);
    /* C: a proof before any challenge */
    bad |= check("C AuthProve before AuthChallenge",
                 raw_call(&c, "AuthProve", 1, out, NULL, 0, msg, sizeof(msg)),
                 A2A_ERR_PERMISSION_DENIED, msg);
    bad |= check("C Health", raw_call(&c, "Health", 0, NULL, NULL, 0, msg, sizeof(msg)),
                 A2A_ERR_PERMISSION_DENIED, msg);
    /* A again: its proof a second time, without a new challenge */
    bad |= check("A AuthProve again", raw_call(&a, "AuthProve", 1, out, NULL, 0, msg, sizeof(msg)),
                 A2A_ERR_PERMISSION_DENIED, msg);
    bad |= check("A Health after", raw_call(&a, "Health", 0, NULL, NULL, 0, msg, sizeof(msg)),
                 A2A_ERR_PERMISSION_DENIED, msg);
    bad |= raw_settle_close(&a, &k) | raw_settle_close(&b, &k) | raw_settle_close(&c, &k);
    auth_key_wipe(&k);
    return bad ? 1 : 0;
}

/* ---- TLS ---- */

static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;
    if (f == NULL)
        return NULL;
    buf = calloc(1, 1 << 20);
    n = buf != NULL ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    (void)n;
    fclose(f);
    return buf;
}

static int
mode_tls_peer(const char *url, const char *cert, const char *key, const char *ca,
              const char *expect)
{
    nng_tls_config *t = NULL;
    char *cpem = slurp(cert), *kpem = slurp(key);
    int want_refused = strcmp(expect, "refused") == 0, rv, refused;
    conn c;

    if (cpem == NULL || kpem == NULL) {
        say("cannot read %s or %s", cert, key);
        return 1;
    }
    if ((rv = nng_tls_config_alloc(&t, NNG_TLS_MODE_CLIENT)) != 0 ||
        (rv = nng_tls_config_ca_file(t, ca)) != 0 ||
        (rv = nng_tls_config_own_cert(t, cpem, kpem, NULL)) != 0 ||
        (rv = nng_tls_config_auth_mode(t, NNG_TLS_AUTH_MODE_REQUIRED)) != 0) {
        say("TLS configuration: %s", nng_strerror(rv));
        return 1;
    }
    free(cpem);
    free(kpem);
    if ((rv = conn_open(&c, url, t)) != 0) {
        say("dial %s: %s", url, nng_strerror(rv));
        refused = 1;
    } else {
        /* a worker with a token sends CHALLENGE first: reading it proves the session is up */
        uint8_t prefix[FRAME_PREFIX_LEN];
        rv = conn_io(&c, prefix, sizeof(prefix), 1, 3000);
        if (rv == 0) {
            uint32_t hlen;
            uint64_t plen;
            char err[256];
            say("TLS session up: the worker sent a frame (%s)",
                frame_prefix_decode(prefix, &hlen, &plen, err, sizeof(err)) == 0 ? "a valid prefix"
                                                                                 : err);
            refused = 0;
        } else if (rv == NNG_ETIMEDOUT) {
            say("TLS session up: the worker waits for our HELLO (it has no token)");
            refused = 0;
        } else {
            say("the worker refused the session: %s", nng_strerror(rv));
            refused = 1;
        }
    }
    conn_close(&c);
    nng_tls_config_free(t);
    if (refused != want_refused) {
        say("FAILED: expected the worker to %s this certificate",
            want_refused ? "refuse" : "accept");
        return 1;
    }
    return 0;
}

static int
usage(void)
{
    fprintf(stderr, "usage: security_check link-noproof DATA_URL [WORKER]\n"
                    "       security_check link-replay DATA_URL TOKEN_FILE [WORKER]\n"
                    "       security_check link-control DATA_URL TOKEN_FILE NAME\n"
                    "       security_check link-garbage DATA_URL\n"
                    "       security_check rogue-listener DATA_URL\n"
                    "       security_check rpc-replay API_URL TOKEN_FILE\n"
                    "       security_check tls-peer DATA_URL CERT KEY CA refused|accepted\n");
    return 2;
}

int
main(int argc, char **argv)
{
    int rc;

    if (argc < 3)
        return usage();
    mode = argv[1];
    if (strcmp(mode, "link-noproof") == 0 && argc <= 4)
        rc = mode_link_noproof(argv[2], argc == 4 ? argv[3] : "node-b");
    else if (strcmp(mode, "link-replay") == 0 && (argc == 4 || argc == 5))
        rc = mode_link_replay(argv[2], argv[3], argc == 5 ? argv[4] : "node-b");
    else if (strcmp(mode, "link-control") == 0 && argc == 5)
        rc = mode_link_control(argv[2], argv[3], argv[4]);
    else if (strcmp(mode, "link-garbage") == 0 && argc == 3)
        rc = mode_link_garbage(argv[2]);
    else if (strcmp(mode, "rogue-listener") == 0 && argc == 3)
        rc = mode_rogue_listener(argv[2]);
    else if (strcmp(mode, "rpc-replay") == 0 && argc == 4)
        rc = mode_rpc_replay(argv[2], argv[3]);
    else if (strcmp(mode, "tls-peer") == 0 && argc == 7 &&
             (strcmp(argv[6], "refused") == 0 || strcmp(argv[6], "accepted") == 0))
        rc = mode_tls_peer(argv[2], argv[3], argv[4], argv[5], argv[6]);
    else
        return usage();
    say("%s", rc == 0 ? "ok" : "FAILED");
    nng_fini();
    return rc;
}
