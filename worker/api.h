/* api.h - the worker API that jobs call through liba2a, served over server/'s RPC layer. */
#ifndef A2A_WORKER_API_H
#define A2A_WORKER_API_H

#include "chan.h"
#include "engine.h"
#include "local.h"
#include "server/rpc.h"

#define API_THREADS 64 /* calls served at once: one per blocked job thread */

/* What the handlers work on: the engine and the job channels (both borrowed). */
typedef struct {
    engine *e;
    chan_set *chans;
    const char *socket; /* the local socket's path, or NULL */
    local_srv *local;   /* local and remote sessions */
} api_env;

/* api_methods returns the method table; the handlers take an api_env as their argument. */
const rpc_method *api_methods(size_t *n);

#endif
