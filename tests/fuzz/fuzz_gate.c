/*
 * fuzz_gate.c - the RPC authentication handshake (server/gate.c) under
 * libFuzzer. The input is a script of calls on three connections: each
 * record is [op][connection][length][body]. Invariant: a connection is
 * admitted to a method only after the harness itself proved the secret on
 * it; nothing the fuzzer sends alone ever opens the gate.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"
#include "server/gate.h"
#include "fuzz.h"

static const char *const methods[] = {GATE_CHALLENGE, GATE_PROVE, "Health"};

/* honest_login proves the secret on pipe as a real client would. */
static void
honest_login(gate *g, const auth_key *k, nng_pipe pipe)
{
    uint8_t cn[AUTH_NONCE_LEN], got[2][WIRE_BIN32], mac[AUTH_MAC_LEN];
    const uint8_t *out[1] = {cn};
    msgpack_sbuffer req, rep;
    rpc_ctx ctx = {.pipe = pipe, .body = &rep};
    a2a_status st;

    memset(cn, 7, sizeof(cn));
    msgpack_sbuffer_init(&req);
    msgpack_sbuffer_init(&rep);
    wire_bins_encode(&req, 1, out);
    if (!gate_check(g, GATE_CHALLENGE, &ctx, (uint8_t *)req.data, req.size, &st) || st != A2A_OK ||
        wire_bins_decode(got, 2, (uint8_t *)rep.data, rep.size, NULL, 0) != 0)
        abort();
    auth_mac(k, GATE_CLIENT_LABEL, got[0], AUTH_NONCE_LEN, cn, AUTH_NONCE_LEN, mac);
    out[0] = mac;
    msgpack_sbuffer_clear(&req);
    msgpack_sbuffer_clear(&rep);
    wire_bins_encode(&req, 1, out);
    if (!gate_check(g, GATE_PROVE, &ctx, (uint8_t *)req.data, req.size, &st) || st != A2A_OK)
        abort(); /* the honest proof must be accepted */
    msgpack_sbuffer_destroy(&req);
    msgpack_sbuffer_destroy(&rep);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    auth_key k = {.len = 24};
    int proved[3] = {0, 0, 0};
    gate *g;

    memcpy(k.key, "fuzzing-secret-0123456789", 24);
    if ((g = gate_alloc(&k)) == NULL)
        return 0;
    while (size >= 3) {
        unsigned op = data[0] % 5, conn = data[1] % 3;
        size_t len = data[2] < size - 3 ? data[2] : size - 3;
        nng_pipe pipe = {.id = 100 + conn};
        msgpack_sbuffer rep;
        rpc_ctx ctx = {.pipe = pipe, .body = &rep};
        a2a_status st = A2A_OK;
        int answered;

        msgpack_sbuffer_init(&rep);
        if (op == 3) {
            honest_login(g, &k, pipe);
            proved[conn] = 1;
        } else if (op == 4) {
            gate_pipe_gone(g, pipe);
            proved[conn] = 0;
        } else {
            answered = gate_check(g, methods[op], &ctx, data + 3, len, &st);
            if (op == 2 && !answered && !proved[conn])
                abort(); /* admitted without a proof */
            if (op == 2 && answered && proved[conn])
                abort(); /* a proved connection refused */
            if (op != 2)
                proved[conn] = 0; /* a new challenge or a failed proof starts over */
            if (op == 1 && st == A2A_OK)
                abort(); /* the fuzzer cannot know the proof */
        }
        msgpack_sbuffer_destroy(&rep);
        data += 3 + len;
        size -= 3 + len;
    }
    gate_free(g);
    return 0;
}
