/*
 * test_auth.c - the shared secret and its proofs: auth_key_load's limits,
 * HMAC-SHA256 against known answers (computed with `openssl dgst -sha256
 * -hmac`), constant-time comparison; then an in-process RPC server with a
 * token: right, missing and wrong tokens, the handshake spoken by hand on raw
 * REQ sockets (a recorded proof replayed on another connection, a proof
 * before any challenge, a proof used twice), and every byte a client sends
 * captured by a TCP relay: the secret is never among them.
 */

#include "cu_main.h"
#include <CUnit/Basic.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/frame.h"
#include "common/wire.h"
#include "server/gate.h"
#include "server/rpc.h"

#define LOCAL_URL "tcp://127.0.0.1:0"
#define SECRET "correct horse battery staple 0123456789"
#define OTHER_SECRET "wrong horse battery staple 9876543210"

static char tmpdir[64];

/* write_file writes n bytes to a new file in tmpdir and returns its path (static buffer). */
static const char *
write_file(const char *name, const void *bytes, size_t n)
{
    static char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(bytes, 1, n, f), n);
    fclose(f);
    return path;
}

static void
key_of(auth_key *k, const char *secret)
{
    memset(k, 0, sizeof(*k));
    k->len = strlen(secret);
    memcpy(k->key, secret, k->len);
}

static void
hex_decode(uint8_t *out, const char *hex)
{
    for (size_t i = 0; hex[2 * i] != '\0'; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

/* ---- auth_key_load ---- */

static void
test_key_load_ok(void)
{
    auth_key k;
    char err[256] = "";
    const char *p = write_file("ok", SECRET, strlen(SECRET));

    CU_ASSERT_EQUAL(auth_key_load(&k, p, err, sizeof(err)), A2A_OK);
    CU_ASSERT_EQUAL(k.len, strlen(SECRET));
    CU_ASSERT(memcmp(k.key, SECRET, strlen(SECRET)) == 0);
    auth_key_wipe(&k);
    CU_ASSERT_EQUAL(k.len, 0);
    CU_ASSERT(k.key[0] == 0 && k.key[strlen(SECRET) - 1] == 0);
}

static void
test_key_load_trims(void)
{
    static const char text[] = " \t\r\n  0123456789abcdef-inner space kept\t \r\n\n";
    auth_key k;
    char err[256] = "";
    const char *p = write_file("trim", text, strlen(text));

    CU_ASSERT_EQUAL_FATAL(auth_key_load(&k, p, err, sizeof(err)), A2A_OK);
    CU_ASSERT_EQUAL(k.len, strlen("0123456789abcdef-inner space kept"));
    CU_ASSERT(memcmp(k.key, "0123456789abcdef-inner space kept", k.len) == 0);
    /* what a2a-launch and `openssl rand -hex 32 > FILE` write: the newline is not secret */
    p = write_file("nl", "00112233445566778899aabbccddeeff\n", 33);
    CU_ASSERT_EQUAL_FATAL(auth_key_load(&k, p, err, sizeof(err)), A2A_OK);
    CU_ASSERT_EQUAL(k.len, 32);
}

static void
test_key_load_short(void)
{
    auth_key k;
    char err[256] = "";
    const char *p;

    p = write_file("short", "0123456789abcde", 15); /* AUTH_KEY_MIN - 1 */
    CU_ASSERT_EQUAL(auth_key_load(&k, p, err, sizeof(err)), A2A_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "at least 16"));
    CU_ASSERT_EQUAL(k.len, 0);
    /* 15 bytes of secret padded with whitespace are still 15 */
    p = write_file("shortpad", "   0123456789abcde   \n", 22);
    CU_ASSERT_EQUAL(auth_key_load(&k, p, err, sizeof(err)), A2A_ERR_INVALID_ARGUMENT);
    p = write_file("blank", " \n\t\n", 4);
    CU_ASSERT_EQUAL(auth_key_load(&k, p, err, sizeof(err)), A2A_ERR_INVALID_ARGUMENT);
    p = write_file("empty", "", 0);
    CU_ASSERT_EQUAL(auth_key_load(&k, p, err, sizeof(err)), A2A_ERR_INVALID_ARGUMENT);
    p = write_file("min", "0123456789abcdef", 16); /* exactly AUTH_KEY_MIN */
    CU_ASSERT_EQUAL(auth_key_load(&k, p, err, sizeof(err)), A2A_OK);
    CU_ASSERT_EQUAL(k.len, 16);
}

static void
test_key_load_missing(void)
{
    auth_key k;
    char err[256] = "", path[256];

    snprintf(path, sizeof(path), "%s/no-such-token", tmpdir);
    CU_ASSERT_EQUAL(auth_key_load(&k, path, err, sizeof(err)), A2A_ERR_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no-such-token"));
    CU_ASSERT_EQUAL(k.len, 0);
}

static void
test_key_load_long(void)
{
    uint8_t *big = malloc(AUTH_KEY_MAX + 1);
    auth_key k;
    char err[256] = "";
    const char *p;

    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    for (size_t i = 0; i <= AUTH_KEY_MAX; i++)
        big[i] = (uint8_t)('a' + i % 26);
    p = write_file("max", big, AUTH_KEY_MAX);
    CU_ASSERT_EQUAL(auth_key_load(&k, p, err, sizeof(err)), A2A_OK);
    CU_ASSERT_EQUAL(k.len, AUTH_KEY_MAX);
    p = write_file("over", big, AUTH_KEY_MAX + 1);
    CU_ASSERT_EQUAL(auth_key_load(&k, p, err, sizeof(err)), A2A_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "longer than 4096"));
    CU_ASSERT_EQUAL(k.len, 0);
    free(big);
}

static void
test_key_from_env(void)
{
    auth_key k;
    char err[256] = "", path[256];

    unsetenv("A2A_TOKEN_FILE");
    CU_ASSERT_EQUAL(auth_key_from_env(&k, err, sizeof(err)), 0);
    setenv("A2A_TOKEN_FILE", "", 1);
    CU_ASSERT_EQUAL(auth_key_from_env(&k, err, sizeof(err)), 0);
    setenv("A2A_TOKEN_FILE", write_file("env", SECRET "\n", strlen(SECRET) + 1), 1);
    CU_ASSERT_EQUAL(auth_key_from_env(&k, err, sizeof(err)), 1);
    CU_ASSERT_EQUAL(k.len, strlen(SECRET));
    snprintf(path, sizeof(path), "%s/no-such-token", tmpdir);
    setenv("A2A_TOKEN_FILE", path, 1);
    CU_ASSERT_EQUAL(auth_key_from_env(&k, err, sizeof(err)), -1);
    unsetenv("A2A_TOKEN_FILE");
}

/* ---- HMAC and comparison ---- */

static void
test_mac_known_answers(void)
{
    /*
     * Vector 1, a link proof: key "0123456789abcdef0123456789abcdef", label
     * "a2a link" (its NUL included), a = bytes 0..31, b = "w0\0" + 01..08.
     * Vector 2: a 100-byte key (longer than SHA-256's block, so it is hashed
     * first), label "a2a rpc client", a = 32 x 0xaa, b = 32 x 0x55.
     * Both from `openssl dgst -sha256 -hmac KEY` / `-mac HMAC -macopt hexkey:`.
     */
    static const char want1[] = "004eb16e62560fa92e2f0cf8b943ec49b10a90dd003be8dd90786741bbbcefca";
    static const char want2[] = "5a4e0aa8f88965b0e0bcbc79012fcd1106dd9c441f1657c8e8adec9cda5ec4bf";
    uint8_t a[32], b[11] = {'w', '0', 0, 1, 2, 3, 4, 5, 6, 7, 8}, out[AUTH_MAC_LEN],
                   want[AUTH_MAC_LEN];
    auth_key k;

    for (int i = 0; i < 32; i++)
        a[i] = (uint8_t)i;
    key_of(&k, "0123456789abcdef0123456789abcdef");
    auth_mac(&k, "a2a link", a, sizeof(a), b, sizeof(b), out);
    hex_decode(want, want1);
    CU_ASSERT(memcmp(out, want, AUTH_MAC_LEN) == 0);
    CU_ASSERT_STRING_EQUAL(FRAME_LINK_LABEL, "a2a link");

    memset(&k, 0, sizeof(k));
    k.len = 100;
    for (int i = 0; i < 100; i++)
        k.key[i] = (uint8_t)(i * 7 + 3);
    uint8_t aa[32], bb[32];
    memset(aa, 0xaa, sizeof(aa));
    memset(bb, 0x55, sizeof(bb));
    auth_mac(&k, GATE_CLIENT_LABEL, aa, 32, bb, 32, out);
    hex_decode(want, want2);
    CU_ASSERT(memcmp(out, want, AUTH_MAC_LEN) == 0);

    /* the label separates the two directions of the RPC handshake */
    uint8_t other[AUTH_MAC_LEN];
    auth_mac(&k, GATE_SERVER_LABEL, aa, 32, bb, 32, other);
    CU_ASSERT(memcmp(out, other, AUTH_MAC_LEN) != 0);
    /* and the order of the nonces matters */
    auth_mac(&k, GATE_CLIENT_LABEL, bb, 32, aa, 32, other);
    CU_ASSERT(memcmp(out, other, AUTH_MAC_LEN) != 0);
}

static void
test_equal(void)
{
    uint8_t a[AUTH_MAC_LEN], b[AUTH_MAC_LEN];

    for (int i = 0; i < AUTH_MAC_LEN; i++)
        a[i] = b[i] = (uint8_t)(i * 13);
    CU_ASSERT_EQUAL(auth_equal(a, b, AUTH_MAC_LEN), 1);
    CU_ASSERT_EQUAL(auth_equal(a, b, 0), 1);
    b[0] ^= 1;
    CU_ASSERT_EQUAL(auth_equal(a, b, AUTH_MAC_LEN), 0);
    b[0] ^= 1;
    b[AUTH_MAC_LEN - 1] ^= 0x80;
    CU_ASSERT_EQUAL(auth_equal(a, b, AUTH_MAC_LEN), 0);
    CU_ASSERT_EQUAL(auth_equal(a, b, AUTH_MAC_LEN - 1), 1);
}

static void
test_nonce(void)
{
    uint8_t a[AUTH_NONCE_LEN], b[AUTH_NONCE_LEN];
    auth_nonce(a);
    auth_nonce(b);
    CU_ASSERT(memcmp(a, b, AUTH_NONCE_LEN) != 0);
}

/* ---- an RPC server with a token ---- */

static atomic_int echo_calls;

static a2a_status
echo_cb(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    (void)arg;
    atomic_fetch_add(&echo_calls, 1);
    if (len > 0)
        msgpack_sbuffer_write(ctx->body, (const char *)body, len);
    return A2A_OK;
}

static const rpc_method methods[] = {{"Echo", echo_cb}};

/* start_server starts a server; key may be NULL (no token). */
static rpc_server *
start_server(const auth_key *key)
{
    rpc_security sec = {.key = key};
    rpc_server *s = NULL;
    char err[256] = "";
    a2a_status st = rpc_server_alloc(&s, LOCAL_URL, methods, 1, NULL, 4, &sec, err, sizeof(err));
    if (st != A2A_OK)
        fprintf(stderr, "\n  cannot start a server: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(st, A2A_OK);
    return s;
}

/* echo calls Echo("ping") with a new client (key may be NULL); err gets the message. */
static a2a_status
echo(const char *url, const auth_key *key, char *err, size_t errlen)
{
    rpc_security sec = {.key = key};
    rpc_client *c = NULL;
    uint8_t *rep = NULL;
    size_t replen = 0;
    a2a_status st;

    err[0] = '\0';
    CU_ASSERT_EQUAL_FATAL(rpc_client_alloc(&c, url, &sec, err, errlen), A2A_OK);
    st = rpc_call(c, "Echo", "ping", 4, 5000, &rep, &replen, err, errlen);
    if (st == A2A_OK) {
        CU_ASSERT_EQUAL(replen, 4);
        CU_ASSERT(rep != NULL && memcmp(rep, "ping", 4) == 0);
    }
    free(rep);
    rpc_client_free(c);
    return st;
}

static void
test_rpc_tokens(void)
{
    auth_key k, wrong;
    rpc_server *s, *plain;
    char err[1024];
    int before;

    key_of(&k, SECRET);
    key_of(&wrong, OTHER_SECRET);
    s = start_server(&k);

    CU_ASSERT_EQUAL(echo(rpc_server_url(s), &k, err, sizeof(err)), A2A_OK);

    before = atomic_load(&echo_calls);
    CU_ASSERT_EQUAL(echo(rpc_server_url(s), NULL, err, sizeof(err)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "authentication required"));

    CU_ASSERT_EQUAL(echo(rpc_server_url(s), &wrong, err, sizeof(err)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "wrong token"));
    CU_ASSERT_EQUAL(atomic_load(&echo_calls), before); /* no refused call reached the method */

    /* a client with a token against a server without one */
    plain = start_server(NULL);
    CU_ASSERT_EQUAL(echo(rpc_server_url(plain), &k, err, sizeof(err)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "does not take a token"));
    CU_ASSERT_EQUAL(echo(rpc_server_url(plain), NULL, err, sizeof(err)), A2A_OK);
    rpc_server_free(plain);

    /* the refusals cost nothing: the server serves on */
    CU_ASSERT_EQUAL(echo(rpc_server_url(s), &k, err, sizeof(err)), A2A_OK);
    rpc_server_free(s);
}

/* A client that keeps its connection proves once and calls many times. */
static void
test_rpc_many_calls(void)
{
    auth_key k;
    rpc_security sec = {.key = &k};
    rpc_server *s;
    rpc_client *c = NULL;
    char err[1024] = "";

    key_of(&k, SECRET);
    s = start_server(&k);
    CU_ASSERT_EQUAL_FATAL(rpc_client_alloc(&c, rpc_server_url(s), &sec, err, sizeof(err)), A2A_OK);
    for (int i = 0; i < 20; i++) {
        uint8_t *rep = NULL;
        size_t replen = 0;
        CU_ASSERT_EQUAL(rpc_call(c, "Echo", "x", 1, 5000, &rep, &replen, err, sizeof(err)), A2A_OK);
        free(rep);
    }
    rpc_client_free(c);
    rpc_server_free(s);
}

/* ---- the handshake by hand, on raw REQ sockets ---- */

typedef struct {
    nng_socket sock;
    uint32_t last_pipe; /* the connection the last reply came on */
    atomic_int closed;  /* connections the server (or we) closed */
} raw_conn;

static void
raw_pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    raw_conn *r = arg;
    (void)p;
    if (ev == NNG_PIPE_EV_REM_POST)
        atomic_fetch_add(&r->closed, 1);
}

static void
raw_open(raw_conn *r, const char *url)
{
    r->last_pipe = 0;
    atomic_store(&r->closed, 0);
    CU_ASSERT_EQUAL_FATAL(nng_req0_open(&r->sock), 0);
    nng_socket_set_ms(r->sock, NNG_OPT_RECVTIMEO, 5000);
    nng_socket_set_ms(r->sock, NNG_OPT_SENDTIMEO, 5000);
    nng_socket_set_ms(r->sock, NNG_OPT_RECONNMINT, 100);
    nng_socket_set_ms(r->sock, NNG_OPT_RECONNMAXT, 200);
    nng_pipe_notify(r->sock, NNG_PIPE_EV_REM_POST, raw_pipe_cb, r);
    CU_ASSERT_EQUAL_FATAL(nng_dial(r->sock, url, NULL, 0), 0);
}

/* raw_wait_closed: 1 once the server closed the connection (count was `before`), within 2 s. */
static int
raw_wait_closed(raw_conn *r, int before)
{
    for (int i = 0; i < 200; i++) {
        if (atomic_load(&r->closed) > before)
            return 1;
        nng_msleep(10);
    }
    return 0;
}

static void
raw_close(raw_conn *r)
{
    nng_close(r->sock);
}

/*
 * raw_call sends one request envelope and decodes the reply; the reply body
 * (up to cap bytes) goes to out. Returns the reply's status, or -1 when no
 * reply came.
 */
static int
raw_call(raw_conn *r, const char *method, const uint8_t *body, size_t len, uint8_t *out, size_t cap,
         size_t *outlen, char *msg, size_t msglen)
{
    static uint64_t next_id = 1;
    wire_request req = {.id = next_id++, .timeout_ms = 5000, .body = body, .body_len = len};
    wire_reply rep;
    msgpack_sbuffer sb;
    nng_msg *m = NULL;
    char why[256];
    int rv;

    snprintf(req.method, sizeof(req.method), "%s", method);
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_request_encode(&sb, &req), 0);
    rv = nng_send(r->sock, sb.data, sb.size, 0);
    msgpack_sbuffer_destroy(&sb);
    if (rv != 0 || (rv = nng_recvmsg(r->sock, &m, 0)) != 0)
        return -1;
    r->last_pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(m));
    if (wire_reply_decode(&rep, nng_msg_body(m), nng_msg_len(m), why, sizeof(why)) != 0) {
        nng_msg_free(m);
        return -1;
    }
    CU_ASSERT_EQUAL(rep.id, req.id);
    if (msg != NULL)
        snprintf(msg, msglen, "%s", rep.message);
    if (out != NULL && rep.body_len <= cap) {
        memcpy(out, rep.body, rep.body_len);
        *outlen = rep.body_len;
    }
    nng_msg_free(m);
    return (int)rep.status;
}

/* raw_bins calls method with an array of n 32-byte bins; the reply's bins go to got. */
static int
raw_bins(raw_conn *r, const char *method, size_t n, const uint8_t *const *bins,
         uint8_t (*got)[WIRE_BIN32], size_t ngot, char *msg, size_t msglen)
{
    msgpack_sbuffer sb;
    uint8_t rep[256];
    size_t replen = 0;
    char why[256];
    int st;

    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_bins_encode(&sb, n, bins), 0);
    st = raw_call(r, method, (const uint8_t *)sb.data, sb.size, rep, sizeof(rep), &replen, msg,
                  msglen);
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_OK && got != NULL)
        CU_ASSERT_EQUAL(wire_bins_decode(got, ngot, rep, replen, why, sizeof(why)), 0);
    return st;
}

/* raw_challenge sends AuthChallenge [cn]; *sn gets the server's nonce (its proof is checked). */
static int
raw_challenge(raw_conn *r, const auth_key *k, const uint8_t cn[AUTH_NONCE_LEN],
              uint8_t sn[AUTH_NONCE_LEN])
{
    const uint8_t *out[1] = {cn};
    uint8_t got[2][WIRE_BIN32], want[AUTH_MAC_LEN];
    char msg[1024];
    int st = raw_bins(r, GATE_CHALLENGE, 1, out, got, 2, msg, sizeof(msg));

    if (st != A2A_OK)
        return st;
    memcpy(sn, got[0], AUTH_NONCE_LEN);
    /* the server proves the secret too, with its own label */
    auth_mac(k, GATE_SERVER_LABEL, cn, AUTH_NONCE_LEN, sn, AUTH_NONCE_LEN, want);
    CU_ASSERT(auth_equal(want, got[1], AUTH_MAC_LEN));
    return st;
}

static int
raw_prove(raw_conn *r, const uint8_t proof[AUTH_MAC_LEN], char *msg, size_t msglen)
{
    const uint8_t *out[1] = {proof};
    return raw_bins(r, GATE_PROVE, 1, out, NULL, 0, msg, msglen);
}

static int
raw_echo(raw_conn *r, char *msg, size_t msglen)
{
    uint8_t rep[16];
    size_t replen = 0;
    return raw_call(r, "Echo", (const uint8_t *)"hi", 2, rep, sizeof(rep), &replen, msg, msglen);
}

static void
test_replay_other_connection(void)
{
    auth_key k;
    rpc_server *s;
    raw_conn a, b;
    uint8_t cn[AUTH_NONCE_LEN], sa[AUTH_NONCE_LEN], sb_[AUTH_NONCE_LEN], proof[AUTH_MAC_LEN];
    char msg[1024] = "";
    uint32_t pipe_b;

    key_of(&k, SECRET);
    s = start_server(&k);

    /* connection A: the real handshake, recorded */
    raw_open(&a, rpc_server_url(s));
    auth_nonce(cn);
    CU_ASSERT_EQUAL_FATAL(raw_challenge(&a, &k, cn, sa), A2A_OK);
    auth_mac(&k, GATE_CLIENT_LABEL, sa, AUTH_NONCE_LEN, cn, AUTH_NONCE_LEN, proof);
    CU_ASSERT_EQUAL(raw_prove(&a, proof, msg, sizeof(msg)), A2A_OK);
    CU_ASSERT_EQUAL(raw_echo(&a, msg, sizeof(msg)), A2A_OK);

    /* connection B: the recorded messages played again, same client nonce, same proof */
    raw_open(&b, rpc_server_url(s));
    CU_ASSERT_EQUAL_FATAL(raw_challenge(&b, &k, cn, sb_), A2A_OK);
    CU_ASSERT(memcmp(sa, sb_, AUTH_NONCE_LEN) != 0); /* a fresh server nonce */
    pipe_b = b.last_pipe;
    CU_ASSERT_EQUAL(raw_prove(&b, proof, msg, sizeof(msg)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "wrong token"));
    CU_ASSERT_EQUAL(b.last_pipe, pipe_b); /* refused on the connection it was sent on */
    CU_ASSERT(raw_wait_closed(&b, 0));    /* which the server then closed */
    /* B is not let in: a call after the refusal is refused as well */
    CU_ASSERT_EQUAL(raw_echo(&b, msg, sizeof(msg)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "authentication required"));

    /* A, proved, is unaffected */
    CU_ASSERT_EQUAL(raw_echo(&a, msg, sizeof(msg)), A2A_OK);
    raw_close(&a);
    raw_close(&b);
    rpc_server_free(s);
}

static void
test_prove_before_challenge(void)
{
    auth_key k;
    rpc_server *s;
    raw_conn r;
    uint8_t cn[AUTH_NONCE_LEN], sn[AUTH_NONCE_LEN], proof[AUTH_MAC_LEN];
    char msg[1024] = "";

    key_of(&k, SECRET);
    s = start_server(&k);
    raw_open(&r, rpc_server_url(s));
    /* a proof computed for an all-zero server nonce: nothing was challenged yet */
    memset(sn, 0, sizeof(sn));
    auth_nonce(cn);
    auth_mac(&k, GATE_CLIENT_LABEL, sn, AUTH_NONCE_LEN, cn, AUTH_NONCE_LEN, proof);
    CU_ASSERT_EQUAL(raw_prove(&r, proof, msg, sizeof(msg)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "before AuthChallenge"));
    /*
     * gate.h: "[] or PERMISSION_DENIED, connection closed". (gate_check's branch for an
     * AuthProve on a connection it has no entry for did not set close_after.)
     */
    CU_ASSERT(raw_wait_closed(&r, 0));
    CU_ASSERT_EQUAL(raw_echo(&r, msg, sizeof(msg)), A2A_ERR_PERMISSION_DENIED);
    raw_close(&r);
    rpc_server_free(s);
}

static void
test_proof_used_twice(void)
{
    auth_key k;
    rpc_server *s;
    raw_conn r;
    uint8_t cn[AUTH_NONCE_LEN], sn[AUTH_NONCE_LEN], proof[AUTH_MAC_LEN];
    char msg[1024] = "";
    uint32_t pipe;
    int before;

    key_of(&k, SECRET);
    s = start_server(&k);
    raw_open(&r, rpc_server_url(s));
    auth_nonce(cn);
    CU_ASSERT_EQUAL_FATAL(raw_challenge(&r, &k, cn, sn), A2A_OK);
    pipe = r.last_pipe;
    auth_mac(&k, GATE_CLIENT_LABEL, sn, AUTH_NONCE_LEN, cn, AUTH_NONCE_LEN, proof);
    CU_ASSERT_EQUAL(raw_prove(&r, proof, msg, sizeof(msg)), A2A_OK);
    CU_ASSERT_EQUAL(raw_echo(&r, msg, sizeof(msg)), A2A_OK);
    /* the same proof again, without a new challenge, on the same connection */
    CU_ASSERT_EQUAL(raw_prove(&r, proof, msg, sizeof(msg)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_EQUAL(r.last_pipe, pipe);
    CU_ASSERT(raw_wait_closed(&r, 0));
    /* and the connection lost what it had proved */
    before = atomic_load(&echo_calls);
    CU_ASSERT_EQUAL(raw_echo(&r, msg, sizeof(msg)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_EQUAL(atomic_load(&echo_calls), before);
    raw_close(&r);
    rpc_server_free(s);
}

/* A method call with no handshake at all, and a malformed challenge. */
static void
test_no_handshake(void)
{
    auth_key k;
    rpc_server *s;
    raw_conn r;
    uint8_t shortnonce[8] = {0};
    msgpack_sbuffer sb;
    msgpack_packer pk;
    char msg[1024] = "";
    int before = atomic_load(&echo_calls);

    key_of(&k, SECRET);
    s = start_server(&k);
    raw_open(&r, rpc_server_url(s));
    CU_ASSERT_EQUAL(raw_echo(&r, msg, sizeof(msg)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "authentication required"));
    CU_ASSERT(raw_wait_closed(&r, 0));
    /* a challenge whose nonce is 8 bytes, not 32 */
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_bin(&pk, sizeof(shortnonce));
    msgpack_pack_bin_body(&pk, shortnonce, sizeof(shortnonce));
    CU_ASSERT_EQUAL(raw_call(&r, GATE_CHALLENGE, (const uint8_t *)sb.data, sb.size, NULL, 0, NULL,
                             msg, sizeof(msg)),
                    A2A_ERR_INVALID_ARGUMENT);
    msgpack_sbuffer_destroy(&sb);
    CU_ASSERT_EQUAL(raw_echo(&r, msg, sizeof(msg)), A2A_ERR_PERMISSION_DENIED);
    CU_ASSERT_EQUAL(atomic_load(&echo_calls), before);
    raw_close(&r);
    rpc_server_free(s);
}

/* ---- what crosses the wire: a TCP relay that records both directions ---- */

typedef struct {
    int lfd;      /* listening socket of the relay */
    int port;     /* where the relay listens */
    int dst_port; /* the server */
    atomic_int stop;
    pthread_t thread;
    pthread_mutex_t mtx;
    uint8_t *up; /* client -> server bytes */
    size_t nup;
    uint8_t *down; /* server -> client bytes */
    size_t ndown;
    int conns;
} relay;

static void
relay_keep(relay *r, int upward, const uint8_t *b, size_t n)
{
    uint8_t **buf = upward ? &r->up : &r->down;
    size_t *len = upward ? &r->nup : &r->ndown;
    pthread_mutex_lock(&r->mtx);
    uint8_t *nb = realloc(*buf, *len + n);
    if (nb != NULL) {
        memcpy(nb + *len, b, n);
        *buf = nb;
        *len += n;
    }
    pthread_mutex_unlock(&r->mtx);
}

/* relay_pair copies bytes both ways between c (client) and s (server) until one closes. */
static void
relay_pair(relay *r, int c, int s)
{
    struct pollfd pf[2] = {{.fd = c, .events = POLLIN}, {.fd = s, .events = POLLIN}};
    uint8_t buf[65536];

    while (!atomic_load(&r->stop)) {
        int n = poll(pf, 2, 50);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return;
        for (int i = 0; i < 2; i++) {
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t got = read(pf[i].fd, buf, sizeof(buf));
            if (got <= 0)
                return;
            relay_keep(r, i == 0, buf, (size_t)got);
            for (ssize_t off = 0; off < got;) {
                ssize_t w = write(pf[1 - i].fd, buf + off, (size_t)(got - off));
                if (w <= 0)
                    return;
                off += w;
            }
        }
    }
}

/* One connection at a time is enough: the client keeps its connection. */
static void *
relay_thread(void *arg)
{
    relay *r = arg;
    while (!atomic_load(&r->stop)) {
        struct pollfd pf = {.fd = r->lfd, .events = POLLIN};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        int c = accept(r->lfd, NULL, NULL);
        if (c < 0)
            continue;
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->dst_port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            pthread_mutex_lock(&r->mtx);
            r->conns++;
            pthread_mutex_unlock(&r->mtx);
            relay_pair(r, c, s);
        }
        if (s >= 0)
            close(s);
        close(c);
    }
    return NULL;
}

static void
relay_start(relay *r, int dst_port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t n = sizeof(sa);

    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mtx, NULL);
    r->dst_port = dst_port;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    r->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CU_ASSERT_FATAL(r->lfd >= 0);
    CU_ASSERT_EQUAL_FATAL(bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CU_ASSERT_EQUAL_FATAL(listen(r->lfd, 8), 0);
    CU_ASSERT_EQUAL_FATAL(getsockname(r->lfd, (struct sockaddr *)&sa, &n), 0);
    r->port = ntohs(sa.sin_port);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&r->thread, NULL, relay_thread, r), 0);
}

static void
relay_stop(relay *r)
{
    atomic_store(&r->stop, 1);
    pthread_join(r->thread, NULL);
    close(r->lfd);
}

/* relay_free frees what the relay recorded, once it is stopped. */
static void
relay_free(relay *r)
{
    free(r->up);
    free(r->down);
    pthread_mutex_destroy(&r->mtx);
}

/* contains_window: some window of w bytes of needle occurs in hay. */
static int
contains_window(const uint8_t *hay, size_t n, const uint8_t *needle, size_t m, size_t w)
{
    for (size_t i = 0; i + w <= m; i++)
        if (memmem(hay, n, needle + i, w) != NULL)
            return 1;
    return 0;
}

static void
test_secret_not_on_wire(void)
{
    auth_key k;
    rpc_security sec = {.key = &k};
    rpc_server *s;
    rpc_client *c = NULL;
    relay r;
    char url[64], err[1024] = "";
    const char *colon;

    key_of(&k, SECRET);
    s = start_server(&k);
    colon = strrchr(rpc_server_url(s), ':');
    CU_ASSERT_PTR_NOT_NULL_FATAL(colon);
    relay_start(&r, atoi(colon + 1));
    snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", r.port);
    CU_ASSERT_EQUAL_FATAL(rpc_client_alloc(&c, url, &sec, err, sizeof(err)), A2A_OK);
    for (int i = 0; i < 3; i++) {
        uint8_t *rep = NULL;
        size_t replen = 0;
        CU_ASSERT_EQUAL(
            rpc_call(c, "Echo", "payload-marker", 14, 5000, &rep, &replen, err, sizeof(err)),
            A2A_OK);
        free(rep);
    }
    rpc_client_free(c);
    /* also a client with the wrong token: what it sends must not reveal its secret either */
    auth_key wrong;
    rpc_security wsec = {.key = &wrong};
    key_of(&wrong, OTHER_SECRET);
    c = NULL;
    CU_ASSERT_EQUAL_FATAL(rpc_client_alloc(&c, url, &wsec, err, sizeof(err)), A2A_OK);
    {
        uint8_t *rep = NULL;
        size_t replen = 0;
        CU_ASSERT_EQUAL(rpc_call(c, "Echo", "x", 1, 5000, &rep, &replen, err, sizeof(err)),
                        A2A_ERR_PERMISSION_DENIED);
        free(rep);
    }
    rpc_client_free(c);
    relay_stop(&r);
    rpc_server_free(s);

    /* the capture saw the handshake and the calls... */
    pthread_mutex_lock(&r.mtx);
    CU_ASSERT(r.conns >= 1);
    CU_ASSERT_PTR_NOT_NULL(memmem(r.up, r.nup, GATE_CHALLENGE, strlen(GATE_CHALLENGE)));
    CU_ASSERT_PTR_NOT_NULL(memmem(r.up, r.nup, GATE_PROVE, strlen(GATE_PROVE)));
    CU_ASSERT_PTR_NOT_NULL(memmem(r.up, r.nup, "payload-marker", 14));
    CU_ASSERT_PTR_NOT_NULL(memmem(r.down, r.ndown, "payload-marker", 14));
    /* ...and not 8 consecutive bytes of either secret, in either direction */
    CU_ASSERT_FALSE(contains_window(r.up, r.nup, k.key, k.len, 8));
    CU_ASSERT_FALSE(contains_window(r.down, r.ndown, k.key, k.len, 8));
    CU_ASSERT_FALSE(contains_window(r.up, r.nup, wrong.key, wrong.len, 8));
    CU_ASSERT_FALSE(contains_window(r.down, r.ndown, wrong.key, wrong.len, 8));
    pthread_mutex_unlock(&r.mtx);
    relay_free(&r);
}

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"key load", test_key_load_ok},
        {"key load trims whitespace", test_key_load_trims},
        {"key load too short", test_key_load_short},
        {"key load missing file", test_key_load_missing},
        {"key load over 4096 bytes", test_key_load_long},
        {"key from environment", test_key_from_env},
        {"hmac known answers", test_mac_known_answers},
        {"constant-time equal", test_equal},
        {"nonces differ", test_nonce},
        {"rpc right, missing and wrong tokens", test_rpc_tokens},
        {"rpc one proof, many calls", test_rpc_many_calls},
        {"rpc replayed proof on another connection", test_replay_other_connection},
        {"rpc prove before challenge", test_prove_before_challenge},
        {"rpc proof used twice", test_proof_used_twice},
        {"rpc no handshake, malformed challenge", test_no_handshake},
        {"rpc secret never on the wire", test_secret_not_on_wire},
    };
    int rc = cu_main("auth", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);

    nng_fini();
    return rc;
}
