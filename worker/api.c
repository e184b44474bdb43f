/*
 * api.c - the worker API on its url: Hello, group management, Health. Calls
 * that touch a job's memory (MapBuffer, OpenChannel, AllToAllV) come only on
 * the job's local session (local.c), where the memory arrives as descriptors;
 * here they are refused.
 */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/wire.h"

static int64_t api_start_ms;

/* check_job refuses a job that claims a rank this worker does not own. */
static a2a_status
check_job(engine *e, rpc_ctx *ctx, const wire_job_id *j)
{
    if (!engine_owns(e, j->world_rank))
        return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED,
                        "world rank %lld is not a rank of this worker", (long long)j->world_rank);
    return A2A_OK;
}

static a2a_status
m_hello(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    engine *e = ((api_env *)arg)->e;
    wire_job_id j;
    api_env *env = arg;
    wire_hello_reply h = {0};
    a2a_status st;

    if (wire_job_id_decode(&j, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    if ((st = check_job(e, ctx, &j)) != A2A_OK)
        return st;
    snprintf(h.worker, sizeof(h.worker), "%s", engine_name(e));
    h.world_size = engine_world_size(e);
    snprintf(h.socket, sizeof(h.socket), "%s", env->socket != NULL ? env->socket : "");
    if (wire_hello_reply_encode(ctx->body, &h) != 0)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return A2A_OK;
}

/* forward sends a group request on to the coordinator and passes its reply back. */
static a2a_status
forward(engine *e, rpc_ctx *ctx, const char *method, const msgpack_sbuffer *req)
{
    uint8_t *rep = NULL;
    size_t replen = 0;
    int64_t t = ctx->timeout_ms > 0 && ctx->timeout_ms < 30000 ? (int64_t)ctx->timeout_ms : 30000;
    a2a_status st = engine_coordinator_call(e, method, req->data, req->size, t, &rep, &replen,
                                            ctx->message, sizeof(ctx->message));
    if (st == A2A_OK && replen > 0)
        msgpack_sbuffer_write(ctx->body, (const char *)rep, replen);
    free(rep);
    return st;
}

static a2a_status
m_group(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len, const char *method)
{
    engine *e = ((api_env *)arg)->e;
    wire_job_group g;
    msgpack_sbuffer sb;
    a2a_status st;

    if (wire_job_group_decode(&g, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    if ((st = check_job(e, ctx, &g.job)) != A2A_OK) {
        wire_job_group_fini(&g);
        return st;
    }
    msgpack_sbuffer_init(&sb);
    if (strcmp(method, "CreateGroup") == 0)
        wire_create_encode(&sb, g.create.name, g.create.n, g.create.ranks);
    else
        wire_group_name_encode(&sb, g.create.name);
    st = forward(e, ctx, method, &sb);
    if (st == A2A_OK && strcmp(method, "DestroyGroup") == 0)
        engine_forget(e, g.create.name);
    msgpack_sbuffer_destroy(&sb);
    wire_job_group_fini(&g);
    return st;
}

static a2a_status
m_get(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    return m_group(arg, ctx, body, len, "ResolveGroup");
}

static a2a_status
m_create(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    return m_group(arg, ctx, body, len, "CreateGroup");
}

static a2a_status
m_destroy(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    return m_group(arg, ctx, body, len, "DestroyGroup");
}

/* m_local refuses a call that needs the job's memory: only its local session carries that. */
static a2a_status
m_local(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    api_env *env = arg;
    (void)body;
    (void)len;
    return rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED,
                    "worker %s takes a job's memory only on its local socket%s%s (liba2a connects "
                    "there by itself)",
                    engine_name(env->e), env->socket != NULL ? " " : "",
                    env->socket != NULL ? env->socket
                                        : " (none configured: \"socket\" in the YAML)");
}

static a2a_status
m_jobs(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    if (wire_empty_decode(body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    return local_list(((api_env *)arg)->local, ctx);
}

static a2a_status
m_health(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    engine *e = ((api_env *)arg)->e;
    wire_health h = {.service = "worker"};

    if (wire_empty_decode(body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    snprintf(h.name, sizeof(h.name), "%s", engine_name(e));
    h.world_size = (uint64_t)engine_world_size(e);
    h.uptime_ms = (uint64_t)(rpc_now_ms() - api_start_ms);
    snprintf(h.config, sizeof(h.config), "%s", engine_config_path(e));
    if (wire_health_encode(ctx->body, &h) != 0)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return A2A_OK;
}

static a2a_status
m_remote_attach(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    return local_remote_attach(((api_env *)arg)->local, ctx, body, len);
}

static a2a_status
m_remote_detach(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    return local_remote_detach(((api_env *)arg)->local, ctx, body, len);
}

static a2a_status
m_remote_reserve(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    return local_remote_reserve(((api_env *)arg)->local, ctx, body, len);
}

static a2a_status
m_remote_put(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    return local_remote_data(((api_env *)arg)->local, ctx, body, len, 1);
}

static a2a_status
m_remote_get(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    return local_remote_data(((api_env *)arg)->local, ctx, body, len, 0);
}

static a2a_status
m_remote_call(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    return local_remote_call(((api_env *)arg)->local, ctx, body, len);
}

static const rpc_method api_table[] = {
    {"MapBuffer", m_local},
    {"UnmapBuffer", m_local},
    {"Hello", m_hello},
    {"GetGroup", m_get},
    {"CreateGroup", m_create},
    {"DestroyGroup", m_destroy},
    {"AllToAllV", m_local},
    {"Health", m_health},
    {"ListJobs", m_jobs},
    {"OpenChannel", m_local},
    /* jobs that share no kernel with this worker (local.h) */
    {"RemoteAttach", m_remote_attach},
    {"RemoteDetach", m_remote_detach},
    {"RemoteReserve", m_remote_reserve},
    {"RemotePut", m_remote_put},
    {"RemoteGet", m_remote_get},
    {"RemoteCall", m_remote_call},
};

const rpc_method *
api_methods(size_t *n)
{
    if (api_start_ms == 0)
        api_start_ms = rpc_now_ms();
    *n = sizeof(api_table) / sizeof(api_table[0]);
    return api_table;
}
