/* gate.c - per-connection challenge-response on the RPC server. */
#include "gate.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"

#define GATE_MAX_PIPES 65536 /* connections remembered at once */

typedef struct gate_pipe {
    struct gate_pipe *next;
    uint32_t id;
    int proved;
    uint8_t cnonce[AUTH_NONCE_LEN], snonce[AUTH_NONCE_LEN];
} gate_pipe;

struct gate {
    pthread_mutex_t mtx;
    auth_key key;
    gate_pipe *pipes;
    size_t npipes;
};

gate *
gate_alloc(const auth_key *key)
{
    gate *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    pthread_mutex_init(&g->mtx, NULL);
    g->key = *key;
    return g;
}

void
gate_set_key(gate *g, const auth_key *key)
{
    pthread_mutex_lock(&g->mtx);
    g->key = *key;
    pthread_mutex_unlock(&g->mtx);
}

void
gate_free(gate *g)
{
    if (g == NULL)
        return;
    while (g->pipes != NULL) {
        gate_pipe *p = g->pipes;
        g->pipes = p->next;
        free(p);
    }
    auth_key_wipe(&g->key);
    pthread_mutex_destroy(&g->mtx);
    free(g);
}

/* find returns p's entry, creating it when create; under g->mtx. */
static gate_pipe *
find(gate *g, uint32_t id, int create)
{
    gate_pipe *p;
    for (p = g->pipes; p != NULL; p = p->next)
        if (p->id == id)
            return p;
    if (!create || g->npipes >= GATE_MAX_PIPES || (p = calloc(1, sizeof(*p))) == NULL)
        return NULL;
    p->id = id;
    p->next = g->pipes;
    g->pipes = p;
    g->npipes++;
    return p;
}

void
gate_pipe_gone(gate *g, nng_pipe pipe)
{
    uint32_t id = (uint32_t)nng_pipe_id(pipe);
    pthread_mutex_lock(&g->mtx);
    for (gate_pipe **pp = &g->pipes; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            gate_pipe *p = *pp;
            *pp = p->next;
            free(p);
            g->npipes--;
            break;
        }
    pthread_mutex_unlock(&g->mtx);
}

static a2a_status
challenge(gate *g, gate_pipe *p, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    uint8_t in[1][WIRE_BIN32], mac[AUTH_MAC_LEN];
    const uint8_t *out[2] = {p->snonce, mac};

    p->proved = 0; /* a new challenge, even a malformed one, starts over */
    if (wire_bins_decode(in, 1, body, len, ctx->message, sizeof(ctx->message)) != 0) {
        ctx->close_after = 1;
        return A2A_ERR_INVALID_ARGUMENT;
    }
    memcpy(p->cnonce, in[0], AUTH_NONCE_LEN);
    auth_nonce(p->snonce);
    auth_mac(&g->key, GATE_SERVER_LABEL, p->cnonce, AUTH_NONCE_LEN, p->snonce, AUTH_NONCE_LEN, mac);
    if (wire_bins_encode(ctx->body, 2, out) != 0)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return A2A_OK;
}

static a2a_status
prove(gate *g, gate_pipe *p, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    uint8_t in[1][WIRE_BIN32], want[AUTH_MAC_LEN];
    static const uint8_t zero[AUTH_NONCE_LEN];

    ctx->close_after = 1; /* unless the proof holds */
    p->proved = 0;
    if (wire_bins_decode(in, 1, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    if (auth_equal(p->snonce, zero, AUTH_NONCE_LEN))
        return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED, "AuthProve before AuthChallenge");
    auth_mac(&g->key, GATE_CLIENT_LABEL, p->snonce, AUTH_NONCE_LEN, p->cnonce, AUTH_NONCE_LEN,
             want);
    memset(p->snonce, 0, sizeof(p->snonce)); /* one proof per challenge */
    if (!auth_equal(in[0], want, AUTH_MAC_LEN))
        return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED,
                        "wrong token: the proof does not match this server's security.token_file");
    p->proved = 1;
    ctx->close_after = 0;
    wire_empty_encode(ctx->body);
    return A2A_OK;
}

int
gate_check(gate *g, const char *method, rpc_ctx *ctx, const uint8_t *body, size_t len,
           a2a_status *st)
{
    int is_challenge = strcmp(method, GATE_CHALLENGE) == 0;
    int is_prove = strcmp(method, GATE_PROVE) == 0;
    gate_pipe *p;

    pthread_mutex_lock(&g->mtx);
    p = find(g, (uint32_t)nng_pipe_id(ctx->pipe), is_challenge);
    if (is_challenge && p == NULL)
        *st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "too many connections");
    else if (is_challenge)
        *st = challenge(g, p, ctx, body, len);
    else if (is_prove && p == NULL) {
        *st = rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED, "AuthProve before AuthChallenge");
        ctx->close_after = 1;
    } else if (is_prove)
        *st = prove(g, p, ctx, body, len);
    else if (p == NULL || !p->proved) {
        *st = rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED,
                       GATE_UNPROVED ": this server has a security.token_file, and "
                                     "the caller proved no token");
        ctx->close_after = 1;
    }
    pthread_mutex_unlock(&g->mtx);
    return is_challenge || is_prove || ctx->close_after;
}
