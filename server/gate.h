/*
 * gate.h - the RPC server's door: which connections (NNG pipes) proved the
 * shared secret. Internal to server/.
 *
 *   client                                   server
 *   AuthChallenge [client nonce]        ->
 *                                       <-   [server nonce, HMAC(k, "a2a rpc server", cn, sn)]
 *   AuthProve [HMAC(k, "a2a rpc client", sn, cn)]  ->
 *                                       <-   [] or PERMISSION_DENIED, connection closed
 */
#ifndef A2A_SERVER_GATE_H
#define A2A_SERVER_GATE_H

#include <nng/nng.h>

#include "rpc.h"

#define GATE_CHALLENGE "AuthChallenge"
#define GATE_PROVE "AuthProve"
/* How the refusal of a call on a connection that has not proved the secret begins: the method
 * did not run (a client that has the token proves it on its new connection and calls again). */
#define GATE_UNPROVED "authentication required"
#define GATE_SERVER_LABEL "a2a rpc server"
#define GATE_CLIENT_LABEL "a2a rpc client"

typedef struct gate gate;

/* gate_alloc copies key; NULL when out of memory. Free with gate_free. */
gate *gate_alloc(const auth_key *key);

/* gate_set_key makes key the one new proofs are checked with; connections that proved the old
 * one stay proved. */
void gate_set_key(gate *g, const auth_key *key);

/* gate_free wipes the key and frees g; NULL is fine. */
void gate_free(gate *g);

/* gate_pipe_gone forgets connection p. */
void gate_pipe_gone(gate *g, nng_pipe p);

/*
 * gate_check runs the authentication methods and refuses the other methods
 * of a connection that has not proved the secret: it returns 1 with *st set
 * (and the reply in ctx) when it answered the call, 0 when the method may run.
 */
int gate_check(gate *g, const char *method, rpc_ctx *ctx, const uint8_t *body, size_t len,
               a2a_status *st);

#endif
