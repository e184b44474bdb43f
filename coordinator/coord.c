/* coord.c - group resolution: the coordinator's methods. */
#include "coord.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/wire.h"

#define COORD_MAX_RUNTIME_GROUPS 4096

typedef struct {
    char name[A2A_GROUP_NAME_MAX + 1];
    size_t n;
    int64_t *ranks;
} coord_rgroup;

/* What a group's epoch was given for: the fingerprint of its member list. */
typedef struct {
    char name[A2A_GROUP_NAME_MAX + 1];
    uint64_t fingerprint;
    uint64_t epoch;
} coord_epoch;

typedef struct {
    char name[CFG_WORKER_NAME_MAX + 1];
    uint64_t incarnation;
} coord_incarnation;

struct coord {
    pthread_mutex_t mtx;
    cfg_cluster *cfg;
    coord_rgroup *rgroups; /* created at run time */
    size_t nrgroups;
    coord_epoch *epochs;
    size_t nepochs;
    coord_incarnation *incs; /* workers' incarnations, from RegisterWorker */
    size_t nincs;
    uint64_t next_epoch;
    int64_t start_ms;
};

a2a_status
coord_alloc(coord **out, cfg_cluster *cfg)
{
    coord *c = calloc(1, sizeof(*c));
    struct timespec ts;

    *out = NULL;
    if (c == NULL)
        return A2A_ERR_RESOURCE_EXHAUSTED;
    pthread_mutex_init(&c->mtx, NULL);
    c->cfg = cfg;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->next_epoch = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    c->start_ms = rpc_now_ms();
    *out = c;
    return A2A_OK;
}

static void
rgroup_fini(coord_rgroup *g)
{
    free(g->ranks);
    g->ranks = NULL;
}

void
coord_free(coord *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->nrgroups; i++)
        rgroup_fini(&c->rgroups[i]);
    free(c->rgroups);
    free(c->epochs);
    free(c->incs);
    cfg_free(c->cfg);
    pthread_mutex_destroy(&c->mtx);
    free(c);
}

static int
ranks_fit(const cfg_cluster *cfg, size_t n, const int64_t *ranks)
{
    for (size_t i = 0; i < n; i++)
        if (ranks[i] < 0 || ranks[i] >= cfg->world_size)
            return 0;
    return 1;
}

void
coord_reload(coord *c, cfg_cluster *cfg)
{
    size_t kept = 0;

    pthread_mutex_lock(&c->mtx);
    cfg_free(c->cfg);
    c->cfg = cfg;
    for (size_t i = 0; i < c->nrgroups; i++) {
        coord_rgroup *g = &c->rgroups[i];
        if (!ranks_fit(cfg, g->n, g->ranks) || cfg_find_group(cfg, g->name) != NULL) {
            log_warn("reload: dropping runtime group \"%s\": it no longer fits the file", g->name);
            rgroup_fini(g);
            continue;
        }
        c->rgroups[kept++] = *g;
    }
    c->nrgroups = kept;
    pthread_mutex_unlock(&c->mtx);
}

/* ---- lookups, under c->mtx ---- */

static coord_rgroup *
rgroup_find(coord *c, const char *name)
{
    for (size_t i = 0; i < c->nrgroups; i++)
        if (strcmp(c->rgroups[i].name, name) == 0)
            return &c->rgroups[i];
    return NULL;
}

static uint64_t
incarnation_of(const coord *c, const char *worker)
{
    for (size_t i = 0; i < c->nincs; i++)
        if (strcmp(c->incs[i].name, worker) == 0)
            return c->incs[i].incarnation;
    return 0;
}

/*
 * group_members finds a group by name and returns its world ranks: the world
 * group's are generated into *scratch (freed by the caller). *origin says
 * where it comes from. Returns NULL for an unknown group.
 */
static const int64_t *
group_members(coord *c, const char *name, size_t *n, int64_t **scratch, const char **origin)
{
    const cfg_group *g;
    coord_rgroup *rg;

    *scratch = NULL;
    if (strcmp(name, A2A_WORLD_GROUP) == 0) {
        *n = (size_t)c->cfg->world_size;
        if ((*scratch = malloc(*n * sizeof(int64_t))) == NULL)
            return NULL;
        for (size_t i = 0; i < *n; i++)
            (*scratch)[i] = (int64_t)i;
        *origin = "builtin";
        return *scratch;
    }
    if ((g = cfg_find_group(c->cfg, name)) != NULL) {
        *n = g->n;
        *origin = "config";
        return g->ranks;
    }
    if ((rg = rgroup_find(c, name)) != NULL) {
        *n = rg->n;
        *origin = "runtime";
        return rg->ranks;
    }
    return NULL;
}

static uint64_t
fnv1a(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* group_epoch returns the epoch of name's member list g, giving a new one if it changed. */
static uint64_t
group_epoch(coord *c, const wire_group *g)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    coord_epoch *e;

    for (size_t i = 0; i < g->n; i++) {
        const wire_member *m = &g->members[i];
        uint64_t inc = incarnation_of(c, m->worker);
        h = fnv1a(h, &m->world_rank, sizeof(m->world_rank));
        h = fnv1a(h, m->worker, strlen(m->worker) + 1);
        h = fnv1a(h, m->url, strlen(m->url) + 1);
        h = fnv1a(h, m->data_url, strlen(m->data_url) + 1);
        h = fnv1a(h, &inc, sizeof(inc));
    }
    for (size_t i = 0; i < c->nepochs; i++) {
        e = &c->epochs[i];
        if (strcmp(e->name, g->name) != 0)
            continue;
        if (e->fingerprint != h) {
            e->fingerprint = h;
            e->epoch = ++c->next_epoch;
        }
        return e->epoch;
    }
    e = realloc(c->epochs, (c->nepochs + 1) * sizeof(*e));
    if (e == NULL)
        return ++c->next_epoch;
    c->epochs = e;
    e = &c->epochs[c->nepochs++];
    snprintf(e->name, sizeof(e->name), "%s", g->name);
    e->fingerprint = h;
    e->epoch = ++c->next_epoch;
    return e->epoch;
}

/* resolve_locked fills g for the group called name; NOT_FOUND when unknown. */
static a2a_status
resolve_locked(coord *c, const char *name, wire_group *g, rpc_ctx *ctx)
{
    size_t n = 0;
    int64_t *scratch;
    const char *origin;
    const int64_t *ranks = group_members(c, name, &n, &scratch, &origin);

    memset(g, 0, sizeof(*g));
    if (ranks == NULL)
        return rpc_fail(ctx, A2A_ERR_NOT_FOUND, "no group \"%s\"", name);
    snprintf(g->name, sizeof(g->name), "%s", name);
    if ((g->members = calloc(n, sizeof(*g->members))) == NULL) {
        free(scratch);
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    g->n = n;
    for (size_t i = 0; i < n; i++) {
        const cfg_worker *w = cfg_worker_of_rank(c->cfg, ranks[i]);
        wire_member *m = &g->members[i];
        m->world_rank = ranks[i];
        snprintf(m->worker, sizeof(m->worker), "%s", w->name);
        snprintf(m->url, sizeof(m->url), "%s", w->url);
        snprintf(m->data_url, sizeof(m->data_url), "%s", w->data_url);
    }
    free(scratch);
    g->epoch = group_epoch(c, g);
    return A2A_OK;
}

/* reply_group resolves name and encodes it as ctx's reply body. */
static a2a_status
reply_group(coord *c, const char *name, rpc_ctx *ctx)
{
    wire_group g;
    a2a_status st;

    pthread_mutex_lock(&c->mtx);
    st = resolve_locked(c, name, &g, ctx);
    pthread_mutex_unlock(&c->mtx);
    if (st == A2A_OK && wire_group_encode(ctx->body, &g) != 0)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    wire_group_fini(&g);
    return st;
}

/* ---- methods ---- */

static a2a_status
m_health(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    coord *c = arg;
    wire_health h = {.service = "coordinator"};

    if (wire_empty_decode(body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&c->mtx);
    h.world_size = (uint64_t)c->cfg->world_size;
    h.groups = 1 + c->cfg->ngroups + c->nrgroups;
    snprintf(h.config, sizeof(h.config), "%s", c->cfg->path);
    pthread_mutex_unlock(&c->mtx);
    h.uptime_ms = (uint64_t)(rpc_now_ms() - c->start_ms);
    if (wire_health_encode(ctx->body, &h) != 0)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return A2A_OK;
}

static a2a_status
m_resolve(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    wire_group_name req;
    if (wire_group_name_decode(&req, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    return reply_group(arg, req.name, ctx);
}

static int
list_add(wire_group_list *l, coord *c, const char *name, size_t n, const char *origin)
{
    wire_group_info *gi = &l->groups[l->n++];
    wire_group g = {0};
    rpc_ctx dummy;

    snprintf(gi->name, sizeof(gi->name), "%s", name);
    snprintf(gi->origin, sizeof(gi->origin), "%s", origin);
    gi->size = n;
    if (resolve_locked(c, name, &g, &dummy) != A2A_OK)
        return -1;
    gi->epoch = g.epoch;
    wire_group_fini(&g);
    return 0;
}

static a2a_status
m_list(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    coord *c = arg;
    wire_group_list l = {0};
    a2a_status st = A2A_OK;

    if (wire_empty_decode(body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&c->mtx);
    l.groups = calloc(1 + c->cfg->ngroups + c->nrgroups, sizeof(*l.groups));
    if (l.groups == NULL ||
        list_add(&l, c, A2A_WORLD_GROUP, (size_t)c->cfg->world_size, "builtin") != 0)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t i = 0; st == A2A_OK && i < c->cfg->ngroups; i++)
        if (list_add(&l, c, c->cfg->groups[i].name, c->cfg->groups[i].n, "config") != 0)
            st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t i = 0; st == A2A_OK && i < c->nrgroups; i++)
        if (list_add(&l, c, c->rgroups[i].name, c->rgroups[i].n, "runtime") != 0)
            st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    pthread_mutex_unlock(&c->mtx);
    if (st == A2A_OK && wire_group_list_encode(ctx->body, &l) != 0)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    wire_group_list_fini(&l);
    return st;
}

/* check_ranks checks a new group's world ranks: in range, no duplicates. */
static a2a_status
check_ranks(const coord *c, const wire_create *req, rpc_ctx *ctx)
{
    for (size_t i = 0; i < req->n; i++) {
        if (req->ranks[i] < 0 || req->ranks[i] >= c->cfg->world_size)
            return rpc_fail(ctx, A2A_ERR_INVALID_ARGUMENT,
                            "rank %lld is out of range: the world has %lld ranks (0..%lld)",
                            (long long)req->ranks[i], (long long)c->cfg->world_size,
                            (long long)c->cfg->world_size - 1);
        for (size_t j = 0; j < i; j++)
            if (req->ranks[j] == req->ranks[i])
                return rpc_fail(ctx, A2A_ERR_INVALID_ARGUMENT,
                                "rank %lld appears twice (group ranks %zu and %zu)",
                                (long long)req->ranks[i], j, i);
    }
    return A2A_OK;
}

static int
same_ranks(size_t n1, const int64_t *r1, size_t n2, const int64_t *r2)
{
    return n1 == n2 && memcmp(r1, r2, n1 * sizeof(*r1)) == 0;
}

/* create_locked adds req's group, or finds it already there with the same members. */
static a2a_status
create_locked(coord *c, wire_create *req, rpc_ctx *ctx)
{
    size_t n = 0;
    int64_t *scratch;
    const char *origin;
    const int64_t *have;
    coord_rgroup *g;
    a2a_status st;

    if (strcmp(req->name, A2A_WORLD_GROUP) == 0)
        return rpc_fail(ctx, A2A_ERR_INVALID_ARGUMENT, "\"%s\" always exists and cannot be created",
                        A2A_WORLD_GROUP);
    if ((st = check_ranks(c, req, ctx)) != A2A_OK)
        return st;
    if ((have = group_members(c, req->name, &n, &scratch, &origin)) != NULL) {
        free(scratch);
        if (same_ranks(n, have, req->n, req->ranks))
            return A2A_OK;
        return rpc_fail(ctx, A2A_ERR_ALREADY_EXISTS, "group \"%s\" exists (%s) with other members",
                        req->name, origin);
    }
    if (c->nrgroups >= COORD_MAX_RUNTIME_GROUPS)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "too many groups (limit %d)",
                        COORD_MAX_RUNTIME_GROUPS);
    g = realloc(c->rgroups, (c->nrgroups + 1) * sizeof(*g));
    if (g == NULL)
        return rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    c->rgroups = g;
    g = &c->rgroups[c->nrgroups++];
    snprintf(g->name, sizeof(g->name), "%s", req->name);
    g->n = req->n;
    g->ranks = req->ranks; /* hand-off */
    req->ranks = NULL;
    req->n = 0;
    log_info("created group \"%s\" with %zu ranks", g->name, g->n);
    return A2A_OK;
}

static a2a_status
m_create(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    coord *c = arg;
    wire_create req;
    a2a_status st;

    if (wire_create_decode(&req, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&c->mtx);
    st = create_locked(c, &req, ctx);
    pthread_mutex_unlock(&c->mtx);
    wire_create_fini(&req);
    if (st != A2A_OK)
        return st;
    return reply_group(c, req.name, ctx);
}

static a2a_status
m_destroy(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    coord *c = arg;
    wire_group_name req;
    coord_rgroup *g;
    a2a_status st = A2A_OK;

    if (wire_group_name_decode(&req, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&c->mtx);
    if (strcmp(req.name, A2A_WORLD_GROUP) == 0)
        st =
            rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED, "\"%s\" cannot be destroyed", A2A_WORLD_GROUP);
    else if (cfg_find_group(c->cfg, req.name) != NULL)
        st = rpc_fail(ctx, A2A_ERR_PERMISSION_DENIED,
                      "group \"%s\" is defined in %s: remove it there and reload", req.name,
                      c->cfg->path);
    else if ((g = rgroup_find(c, req.name)) == NULL)
        st = rpc_fail(ctx, A2A_ERR_NOT_FOUND, "no group \"%s\"", req.name);
    else {
        rgroup_fini(g);
        *g = c->rgroups[--c->nrgroups];
        for (size_t i = 0; i < c->nepochs; i++) /* a new group of that name gets a new epoch */
            if (strcmp(c->epochs[i].name, req.name) == 0) {
                c->epochs[i] = c->epochs[--c->nepochs];
                break;
            }
        log_info("destroyed group \"%s\"", req.name);
    }
    pthread_mutex_unlock(&c->mtx);
    if (st == A2A_OK && wire_empty_encode(ctx->body) != 0)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return st;
}

static a2a_status
m_register(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    coord *c = arg;
    wire_register req;
    coord_incarnation *inc;
    a2a_status st = A2A_OK;
    size_t i;

    if (wire_register_decode(&req, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&c->mtx);
    if (cfg_find_worker(c->cfg, req.worker) == NULL) {
        st = rpc_fail(ctx, A2A_ERR_NOT_FOUND, "no worker \"%s\" in %s", req.worker, c->cfg->path);
        goto out;
    }
    for (i = 0; i < c->nincs && strcmp(c->incs[i].name, req.worker) != 0; i++)
        ;
    if (i == c->nincs) {
        inc = realloc(c->incs, (c->nincs + 1) * sizeof(*inc));
        if (inc == NULL) {
            st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
            goto out;
        }
        c->incs = inc;
        snprintf(c->incs[c->nincs++].name, sizeof(inc->name), "%s", req.worker);
    }
    if (c->incs[i].incarnation != req.incarnation)
        log_info("worker %s registered (incarnation %016llx): its groups get new epochs",
                 req.worker, (unsigned long long)req.incarnation);
    c->incs[i].incarnation = req.incarnation;
out:
    pthread_mutex_unlock(&c->mtx);
    if (st == A2A_OK && wire_empty_encode(ctx->body) != 0)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return st;
}

static const rpc_method coord_method_table[] = {
    {"RegisterWorker", m_register}, {"Health", m_health},      {"ResolveGroup", m_resolve},
    {"ListGroups", m_list},         {"CreateGroup", m_create}, {"DestroyGroup", m_destroy},
};

const rpc_method *
coord_methods(size_t *n)
{
    *n = sizeof(coord_method_table) / sizeof(coord_method_table[0]);
    return coord_method_table;
}
