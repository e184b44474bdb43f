/* coord.c - group resolution: the coordinator's methods. */
#include "coord.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/wire.h"
#include "journal.h"

#define COORD_MAX_RUNTIME_GROUPS JOURNAL_MAX_GROUPS

typedef journal_group coord_rgroup;
typedef journal_epoch coord_epoch;
typedef journal_worker coord_incarnation;

/*
 * A worker that watches the groups (WatchGroups). Its watcher is one thread:
 * it asks again only after it has applied the last reply, so the generation
 * of that reply (sent) counts as applied (gen) at its next call.
 */
typedef struct {
    char name[CFG_WORKER_NAME_MAX + 1];
    uint64_t gen;  /* applied: the worker uses no epoch older than this generation's */
    uint64_t sent; /* the generation of the last reply */
    int64_t at_ms; /* its last call (or registration, or the coordinator's start) */
} coord_watcher;

#define COORD_WATCH_FRESH_MS 2000 /* a worker that watched this recently is waited for */
#define COORD_WATCH_WAIT_MS 1000  /* how long CreateGroup and DestroyGroup wait for them */

struct coord {
    pthread_mutex_t mtx;
    pthread_cond_t watch_cv; /* a watcher saw a newer generation */
    uint64_t gen;            /* moves whenever a group may have changed its epoch or gone */
    coord_watcher *watchers;
    size_t nwatchers;
    cfg_cluster *cfg;
    coord_rgroup *rgroups; /* created at run time */
    size_t nrgroups;
    coord_epoch *epochs;
    size_t nepochs;
    coord_incarnation *incs; /* workers' incarnations, from RegisterWorker */
    size_t nincs;
    uint64_t next_epoch;
    int64_t start_ms;
    char journal[CFG_PATH_MAX + 1]; /* "" when the state is not kept */
    int dirty;                      /* the state changed since the journal was written */
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
    pthread_cond_init(&c->watch_cv, NULL);
    c->cfg = cfg;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->next_epoch = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    c->start_ms = rpc_now_ms();
    /* every worker of the file may be running with groups cached: until it watches (or is seen
     * not to within COORD_WATCH_FRESH_MS), changes wait for it */
    if ((c->watchers = calloc(cfg->nworkers, sizeof(*c->watchers))) != NULL) {
        c->nwatchers = cfg->nworkers;
        for (size_t i = 0; i < cfg->nworkers; i++) {
            snprintf(c->watchers[i].name, sizeof(c->watchers[i].name), "%s", cfg->workers[i].name);
            c->watchers[i].at_ms = c->start_ms;
        }
    }
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
    free(c->watchers);
    cfg_free(c->cfg);
    pthread_cond_destroy(&c->watch_cv);
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

/* ---- the journal ---- */

static coord_rgroup *rgroup_find(coord *c, const char *name);

/* group_known: a group called name exists now (builtin, in the file or created at run time). */
static int
group_known(coord *c, const char *name)
{
    return strcmp(name, A2A_WORLD_GROUP) == 0 || cfg_find_group(c->cfg, name) != NULL ||
           rgroup_find(c, name) != NULL;
}

/* prune_locked drops the epochs of groups that no longer exist and the incarnations of workers
 * no longer in the file: the journal stays as large as the state. */
static void
prune_locked(coord *c)
{
    size_t kept = 0;
    for (size_t i = 0; i < c->nepochs; i++)
        if (group_known(c, c->epochs[i].name))
            c->epochs[kept++] = c->epochs[i];
    if (kept != c->nepochs)
        c->dirty = 1;
    c->nepochs = kept;
    kept = 0;
    for (size_t i = 0; i < c->nincs; i++)
        if (cfg_find_worker(c->cfg, c->incs[i].name) != NULL)
            c->incs[kept++] = c->incs[i];
    if (kept != c->nincs)
        c->dirty = 1;
    c->nincs = kept;
}

/*
 * sync_locked writes the journal if the state changed since it was last
 * written. Every reply that shows the state (an epoch, a group) comes after
 * it, so that what a worker or job saw survives a restart. Returns A2A_OK, or
 * UNAVAILABLE (in ctx, if any) when the file cannot be written; the state
 * stays marked changed, and the next call tries again.
 */
static a2a_status
sync_locked(coord *c, rpc_ctx *ctx)
{
    journal_state s = {.next_epoch = c->next_epoch,
                       .groups = c->rgroups,
                       .ngroups = c->nrgroups,
                       .epochs = c->epochs,
                       .nepochs = c->nepochs,
                       .workers = c->incs,
                       .nworkers = c->nincs};
    char why[1200], *text;
    size_t len;

    if (!c->dirty || c->journal[0] == '\0')
        return A2A_OK;
    if (journal_encode(&s, &text, &len, why, sizeof(why)) == 0) {
        int rv = journal_write(c->journal, text, len, why, sizeof(why));
        free(text);
        if (rv == 0) {
            c->dirty = 0;
            return A2A_OK;
        }
    }
    log_error("cannot write the journal %s: %s", c->journal, why);
    if (ctx == NULL)
        return A2A_ERR_UNAVAILABLE;
    return rpc_fail(ctx, A2A_ERR_UNAVAILABLE, "the coordinator cannot write its journal: %s", why);
}

a2a_status
coord_journal_open(coord *c, const char *path, char *err, size_t errlen)
{
    journal_state s;
    a2a_status st;
    uint64_t top;

    if (strlen(path) > CFG_PATH_MAX) {
        snprintf(err, errlen, "journal %s: the path is longer than %d bytes", path, CFG_PATH_MAX);
        return A2A_ERR_INVALID_ARGUMENT;
    }
    st = journal_read(path, &s, err, errlen);
    if (st == A2A_ERR_NOT_FOUND) {
        log_info("no journal at %s yet: starting without runtime groups", path);
    } else if (st == A2A_ERR_INVALID_ARGUMENT) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n,
                 " (the journal is damaged: move it aside to start without its runtime groups "
                 "and epochs)");
        return st;
    } else if (st != A2A_OK) {
        return st;
    }
    pthread_mutex_lock(&c->mtx);
    snprintf(c->journal, sizeof(c->journal), "%s", path);
    top = s.next_epoch;
    for (size_t i = 0; i < s.nepochs; i++)
        top = s.epochs[i].epoch > top ? s.epochs[i].epoch : top;
    if (top > c->next_epoch) /* never back, whatever the clock says */
        c->next_epoch = top;
    c->rgroups = s.groups;
    c->nrgroups = s.ngroups;
    c->epochs = s.epochs;
    c->nepochs = s.nepochs;
    c->incs = s.workers;
    c->nincs = s.nworkers;
    {
        size_t kept = 0;
        for (size_t i = 0; i < c->nrgroups; i++) {
            coord_rgroup *g = &c->rgroups[i];
            if (!ranks_fit(c->cfg, g->n, g->ranks) || cfg_find_group(c->cfg, g->name) != NULL) {
                log_warn("journal: dropping runtime group \"%s\": it no longer fits %s", g->name,
                         c->cfg->path);
                rgroup_fini(g);
                continue;
            }
            c->rgroups[kept++] = *g;
        }
        c->nrgroups = kept;
    }
    prune_locked(c);
    if (st == A2A_OK)
        log_info("journal %s: %zu runtime groups, %zu epochs, %zu workers' incarnations", path,
                 c->nrgroups, c->nepochs, c->nincs);
    c->dirty = 1; /* written now: a journal that cannot be written fails the start, not a call */
    st = sync_locked(c, NULL);
    pthread_mutex_unlock(&c->mtx);
    if (st != A2A_OK)
        snprintf(err, errlen, "journal %s cannot be written (see the log above)", path);
    return st;
}

/* reload_moves: err says how cfg would move a worker of old that stays (its world ranks or its
 * addresses), or how it would drop one that others after it keep; 1 then, else 0 */
static int
reload_moves(const cfg_cluster *old, const cfg_cluster *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < old->nworkers; i++) {
        const cfg_worker *o = &old->workers[i], *n = cfg_find_worker(cfg, o->name);
        if (n == NULL) {
            for (size_t j = i + 1; j < old->nworkers; j++)
                if (cfg_find_worker(cfg, old->workers[j].name) != NULL) {
                    snprintf(err, errlen,
                             "worker %s is gone from the file but %s, after it, stays: its "
                             "world ranks would move (only the last workers may leave a running "
                             "cluster; restart the cluster to remove others)",
                             o->name, old->workers[j].name);
                    return 1;
                }
            continue;
        }
        if (n->first_rank != o->first_rank || n->ranks != o->ranks) {
            snprintf(err, errlen,
                     "worker %s would have world ranks %lld..%lld instead of %lld..%lld (add "
                     "workers at the end of workers:, resize or reorder only with a restart of "
                     "the cluster)",
                     o->name, (long long)n->first_rank, (long long)(n->first_rank + n->ranks - 1),
                     (long long)o->first_rank, (long long)(o->first_rank + o->ranks - 1));
            return 1;
        }
        if (strcmp(n->data_url, o->data_url) != 0 || strcmp(n->url, o->url) != 0) {
            snprintf(err, errlen,
                     "worker %s would move from %s (links %s) to %s (links %s): the running "
                     "workers keep its old address; restart the cluster to move a worker",
                     o->name, o->url, o->data_url, n->url, n->data_url);
            return 1;
        }
    }
    return 0;
}

int
coord_reload(coord *c, cfg_cluster *cfg, char *err, size_t errlen)
{
    size_t kept = 0;

    pthread_mutex_lock(&c->mtx);
    if (reload_moves(c->cfg, cfg, err, errlen)) {
        pthread_mutex_unlock(&c->mtx);
        cfg_free(cfg);
        return -1;
    }
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
    if (kept != c->nrgroups)
        c->dirty = 1;
    c->nrgroups = kept;
    c->gen++; /* any group of the file may have changed */
    prune_locked(c);
    (void)sync_locked(c, NULL); /* logged; the next change tries again */
    pthread_mutex_unlock(&c->mtx);
    return 0;
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
            c->dirty = 1;
            c->gen++;
        }
        return e->epoch;
    }
    c->dirty = 1;
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
    if (st == A2A_OK)
        st = sync_locked(c, ctx);
    pthread_mutex_unlock(&c->mtx);
    if (st == A2A_OK && wire_group_encode(ctx->body, &g) != 0)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    wire_group_fini(&g);
    return st;
}

/* ---- watchers: workers that list the groups to find changed epochs (worker/watch.c) ---- */

/* wait_watchers waits (under c->mtx, at most COORD_WATCH_WAIT_MS) until every worker that watched
 * in the last COORD_WATCH_FRESH_MS has seen generation gen: then none of them uses a group of an
 * older epoch for a new call. Workers that do not come in time are named in the log. */
static void
wait_watchers(coord *c, uint64_t gen, const char *what)
{
    int64_t start = rpc_now_ms(), deadline = start + COORD_WATCH_WAIT_MS;

    for (;;) {
        const coord_watcher *late = NULL;
        int64_t now = rpc_now_ms();
        struct timespec ts;
        for (size_t i = 0; i < c->nwatchers && late == NULL; i++)
            if (c->watchers[i].gen < gen && now - c->watchers[i].at_ms < COORD_WATCH_FRESH_MS)
                late = &c->watchers[i];
        if (late == NULL)
            return;
        if (now >= deadline) {
            log_warn("%s: worker %s has not listed the groups for %lld ms: it learns the change "
                     "at its next listing",
                     what, late->name, (long long)(now - late->at_ms));
            return;
        }
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ms = deadline - now < 50 ? deadline - now : 50;
        ts.tv_nsec += (long)ms * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&c->watch_cv, &c->mtx, &ts);
    }
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

/* list_reply lists every group as ctx's reply; a watcher (non-NULL) is recorded as having seen
 * the generation listed. */
static a2a_status
list_reply(coord *c, rpc_ctx *ctx, const char *watcher)
{
    wire_group_list l = {0};
    a2a_status st = A2A_OK;

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
    if (st == A2A_OK)
        st = sync_locked(c, ctx);
    if (st == A2A_OK && watcher != NULL) {
        size_t i;
        for (i = 0; i < c->nwatchers && strcmp(c->watchers[i].name, watcher) != 0; i++)
            ;
        if (i == c->nwatchers) {
            coord_watcher *w = realloc(c->watchers, (i + 1) * sizeof(*w));
            if (w != NULL) {
                c->watchers = w;
                snprintf(w[i].name, sizeof(w[i].name), "%s", watcher);
                c->nwatchers++;
            }
        }
        if (i < c->nwatchers) {
            c->watchers[i].gen = c->watchers[i].sent; /* applied, or it would not ask */
            c->watchers[i].sent = c->gen;
            c->watchers[i].at_ms = rpc_now_ms();
            pthread_cond_broadcast(&c->watch_cv);
        }
    }
    pthread_mutex_unlock(&c->mtx);
    if (st == A2A_OK && wire_group_list_encode(ctx->body, &l) != 0)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    wire_group_list_fini(&l);
    return st;
}

static a2a_status
m_list(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    if (wire_empty_decode(body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    return list_reply(arg, ctx, NULL);
}

/* WatchGroups: ListGroups for a worker (body: RegisterWorker's), which is then waited for by
 * CreateGroup and DestroyGroup. */
static a2a_status
m_watch(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    coord *c = arg;
    wire_register req;
    int known;

    if (wire_register_decode(&req, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&c->mtx);
    known = cfg_find_worker(c->cfg, req.worker) != NULL;
    pthread_mutex_unlock(&c->mtx);
    if (!known)
        return rpc_fail(ctx, A2A_ERR_NOT_FOUND, "no worker \"%s\" in the coordinator's file",
                        req.worker);
    return list_reply(c, ctx, req.worker);
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

/* create_locked adds req's group (*added = 1), or finds it already there with the same members. */
static a2a_status
create_locked(coord *c, wire_create *req, rpc_ctx *ctx, int *added)
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
    c->dirty = 1;
    *added = 1;
    return A2A_OK;
}

static a2a_status
m_create(void *arg, rpc_ctx *ctx, const uint8_t *body, size_t len)
{
    coord *c = arg;
    wire_create req;
    wire_group g = {0};
    a2a_status st;
    int added = 0;

    if (wire_create_decode(&req, body, len, ctx->message, sizeof(ctx->message)) != 0)
        return A2A_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&c->mtx);
    st = create_locked(c, &req, ctx, &added);
    if (st == A2A_OK)
        st = resolve_locked(c, req.name, &g, ctx);
    if (st == A2A_OK)
        st = sync_locked(c, ctx);
    if (st != A2A_OK && added) { /* not on disk: it never existed */
        rgroup_fini(&c->rgroups[--c->nrgroups]);
        prune_locked(c);
    } else if (added) {
        log_info("created group \"%s\" with %zu ranks, epoch %llu", req.name, g.n,
                 (unsigned long long)g.epoch);
        wait_watchers(c, ++c->gen, "create");
    }
    pthread_mutex_unlock(&c->mtx);
    wire_create_fini(&req);
    if (st == A2A_OK && wire_group_encode(ctx->body, &g) != 0)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    wire_group_fini(&g);
    return st;
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
        /* a new group of that name gets a new epoch: next_epoch is kept, its epoch record not */
        coord_rgroup gone = *g;
        coord_epoch *ep = NULL, ep_gone = {0};
        *g = c->rgroups[--c->nrgroups];
        for (size_t i = 0; i < c->nepochs && ep == NULL; i++)
            if (strcmp(c->epochs[i].name, req.name) == 0) {
                ep_gone = c->epochs[i];
                c->epochs[i] = c->epochs[--c->nepochs];
                ep = &ep_gone;
            }
        c->dirty = 1;
        if ((st = sync_locked(c, ctx)) != A2A_OK) { /* not on disk: put it back (room is there) */
            c->rgroups[c->nrgroups++] = gone;
            if (ep != NULL)
                c->epochs[c->nepochs++] = ep_gone;
        } else {
            rgroup_fini(&gone);
            log_info("destroyed group \"%s\"", req.name);
            wait_watchers(c, ++c->gen, "destroy");
        }
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
    if (c->incs[i].incarnation != req.incarnation) {
        uint64_t old = c->incs[i].incarnation;
        c->incs[i].incarnation = req.incarnation;
        c->dirty = 1;
        if ((st = sync_locked(c, ctx)) != A2A_OK) {
            c->incs[i].incarnation = old; /* the worker registers again at its next resolve */
            goto out;
        }
        c->gen++;
        log_info("worker %s registered (incarnation %016llx): its groups get new epochs",
                 req.worker, (unsigned long long)req.incarnation);
    }
    for (size_t k = 0; k < c->nwatchers; k++) /* it starts with nothing cached */
        if (strcmp(c->watchers[k].name, req.worker) == 0) {
            c->watchers[k].gen = c->watchers[k].sent = c->gen;
            c->watchers[k].at_ms = rpc_now_ms();
            pthread_cond_broadcast(&c->watch_cv);
        }
out:
    pthread_mutex_unlock(&c->mtx);
    if (st == A2A_OK && wire_empty_encode(ctx->body) != 0)
        st = rpc_fail(ctx, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return st;
}

static const rpc_method coord_method_table[] = {
    {"RegisterWorker", m_register}, {"Health", m_health},      {"ResolveGroup", m_resolve},
    {"ListGroups", m_list},         {"CreateGroup", m_create}, {"DestroyGroup", m_destroy},
    {"WatchGroups", m_watch},
};

const rpc_method *
coord_methods(size_t *n)
{
    *n = sizeof(coord_method_table) / sizeof(coord_method_table[0]);
    return coord_method_table;
}
