/* engine.c - the engine's groups and the calls of local ranks. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/args.h"
#include "common/dtype.h"
#include "common/log.h"
#include "common/status.h"
#include "engine_int.h"
#include "xfer.h"

static void engine_register(engine *e, int64_t timeout_ms);
static void prior_load(engine *e);

/* waitv_works: futex_waitv(2) (Linux 5.16) is there and allowed (a seccomp profile may refuse
 * it): with no waiters it fails EINVAL, where it is missing ENOSYS or EPERM. */
static int
waitv_works(void)
{
#ifdef SYS_futex_waitv
    errno = 0;
    return syscall(SYS_futex_waitv, NULL, 0, 0, NULL, 0) == -1 && errno == EINVAL;
#else
    return 0;
#endif
}

static uint64_t
random_u64(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
        v = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (fd >= 0)
        close(fd);
    return v == 0 ? 1 : v;
}

/* keep_awake starts the keep-awake thread (awake.h) when the worker's keep_awake_us, or
 * $A2A_KEEP_AWAKE_US (which overrides it; 0 turns it off), is above 0. */
static a2a_status
keep_awake(engine *e, char *err, size_t errlen)
{
    const char *env = getenv("A2A_KEEP_AWAKE_US");
    int64_t us = e->self->keep_awake_us;

    if (env != NULL && *env != '\0') {
        char *end;
        long long v = strtoll(env, &end, 10);
        if (*end != '\0' || v < 0 || v > CFG_KEEP_AWAKE_MAX_US)
            return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                               "A2A_KEEP_AWAKE_US=\"%s\" is not a number of microseconds from 0 "
                               "to %d",
                               env, CFG_KEEP_AWAKE_MAX_US);
        us = v;
    }
    if (us <= 0)
        return A2A_OK;
    if (awake_start(&e->awake, us) != 0)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED,
                           "cannot start the keep-awake thread");
    log_info("keep-awake: a SCHED_IDLE thread spins while calls are in the worker and %lld us "
             "after",
             (long long)us);
    return A2A_OK;
}

a2a_status
engine_alloc(engine **out, const cfg_cluster *cfg, const char *name, const secure *sec, char *err,
             size_t errlen)
{
    engine *e;
    a2a_status st;

    *out = NULL;
    if ((e = calloc(1, sizeof(*e))) == NULL)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    pthread_mutex_init(&e->mtx, NULL);
    pthread_cond_init(&e->map_cv, NULL);
    e->cfg = cfg;
    e->sec = sec;
    e->incarnation = random_u64();
    e->waitv = waitv_works() && getenv("A2A_NO_WAITV") == NULL;
    if (e->waitv)
        log_debug("job channels: a channel's thread sleeps through answers given by other "
                  "threads (futex_waitv)");
    else
        log_debug("job channels: futex_waitv is missing, refused or off (A2A_NO_WAITV): "
                  "channel threads are woken by every answer");
    const cfg_worker *me = cfg_find_worker(cfg, name);
    if (me == NULL) {
        engine_free(e);
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT, "no worker \"%s\" in %s", name,
                           cfg->path);
    }
    e->self_idx = (int)(me - cfg->workers);
    e->npeers = cfg->nworkers;
    e->cap = cfg->nworkers + ENGINE_WORKERS_ADDED;
    e->world_size = cfg->world_size;
    if ((e->peers = calloc(e->cap, sizeof(*e->peers))) == NULL ||
        (e->names = calloc(e->cap, sizeof(*e->names))) == NULL ||
        (e->wtab = calloc(e->cap, sizeof(*e->wtab))) == NULL) {
        engine_free(e);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    memcpy(e->wtab, cfg->workers, cfg->nworkers * sizeof(*e->wtab));
    e->self = &e->wtab[e->self_idx];
    e->env = (op_env){.self = e->self->name, .workers = e->names, .nworkers = e->npeers};
    for (size_t i = 0; i < e->cap; i++) { /* every slot, so that engine_free may destroy all */
        e->names[i] = e->wtab[i].name;
        e->peers[i].e = e;
        e->peers[i].idx = (int)i;
        e->peers[i].w = &e->wtab[i];
        pthread_cond_init(&e->peers[i].cv, NULL);
    }
    prior_load(e);
    if ((st = keep_awake(e, err, errlen)) != A2A_OK) {
        engine_free(e);
        return st;
    }
    if ((st = rpc_client_alloc(&e->coord, cfg->coordinator_url, &sec->client, err, errlen)) !=
        A2A_OK) {
        engine_free(e);
        return st;
    }
    if (link_start(e, err, errlen) != 0) {
        engine_free(e);
        return A2A_ERR_UNAVAILABLE;
    }
    /* Register before serving, so that the first operations see the final epochs. */
    for (int i = 0; i < 3 && !e->registered; i++)
        engine_register(e, 3000);
    if (watch_start(e) != 0) {
        engine_free(e);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "cannot start a thread");
    }
    *out = e;
    return A2A_OK;
}

void
engine_stop(engine *e)
{
    op_out o;
    op_out_init(&o);
    pthread_mutex_lock(&e->mtx);
    for (op_group *g = e->groups; g != NULL; g = g->next)
        group_fail_all(&o, g, A2A_ERR_UNAVAILABLE, "the worker is stopping");
    engine_run(e, &o);
    e->stopping = 1;
    pthread_mutex_unlock(&e->mtx);
    op_out_fini(&o);
}

void
engine_free(engine *e)
{
    if (e == NULL)
        return;
    engine_stop(e);
    watch_stop(e);
    link_stop(e);
    awake_stop(e->awake);
    rpc_client_free(e->coord);
    while (e->groups != NULL) {
        op_group *g = e->groups;
        e->groups = g->next;
        g->next = NULL;
        g->retired = 1;
        if (g->ops == NULL)
            group_free(g);
    }
    early_clear(&e->early);
    for (size_t i = 0; e->peers != NULL && e->names != NULL && e->wtab != NULL && i < e->cap; i++)
        pthread_cond_destroy(&e->peers[i].cv);
    shm_free_all(e);
    pthread_cond_destroy(&e->map_cv);
    free(e->peers);
    free(e->names);
    free(e->wtab);
    free(e->prior);
    pthread_mutex_destroy(&e->mtx);
    free(e);
}

const char *
engine_data_url(const engine *e)
{
    return e->data_url;
}

uint64_t
engine_incarnation(const engine *e)
{
    return e->incarnation;
}

int
engine_owns(const engine *e, int64_t r)
{
    return r >= e->self->first_rank && r < e->self->first_rank + e->self->ranks;
}

op_group *
engine_group_find(engine *e, const char *name)
{
    for (op_group *g = e->groups; g != NULL; g = g->next)
        if (strcmp(g->name, name) == 0)
            return g;
    return NULL;
}

int
engine_keep_early(engine *e, int peer, frame *f, int may_wait)
{
    if (early_keep(&e->early, peer, f, rpc_now_ms()) == 0)
        return 0;
    if (may_wait) { /* the caller resolves the group and offers f again */
        e->early.refused--;
        return 1;
    }
    early_lost_note(&e->early, f, peer);
    if ((e->early.refused & (e->early.refused - 1)) == 0) /* the 1st, 2nd, 4th, 8th... */
        log_warn("dropped a frame of group \"%s\" from %s: the store of frames for groups not "
                 "resolved yet is full (%zu frames, %zu bytes; %llu dropped so far)",
                 f->id.group, e->peers[peer].w->name, e->early.n, e->early.bytes,
                 (unsigned long long)e->early.refused);
    return 0;
}

/* replay_early processes the kept frames of g's epoch, in order of arrival, and drops older
 * ones of g. */
static void
replay_early(engine *e, op_group *g)
{
    early_frame *x;
    early_lost l;
    early_expire(&e->early, rpc_now_ms());
    while ((x = early_take(&e->early, g->name, g->epoch)) != NULL) {
        if (x->f.id.epoch == g->epoch)
            engine_frame(e, &e->peers[x->peer], &x->f);
        early_free(x);
    }
    /* an operation that lost a frame to the store's bounds cannot complete: it fails at its
     * deadline, at every member alike. Failing it now (an ABORT) was tried: the members whose
     * calls came first then went on to their next call before the late ranks' first call was
     * numbered, and a new job's first call there joined the others' second one (README, "Known
     * exceptions"): an OK with the data of another call of the application's. */
    while (early_lost_take(&e->early, g->name, g->epoch, &l))
        log_warn("group \"%s\" operation %llu: frames of it from worker %s came before this "
                 "worker had resolved the group and did not fit its store of early frames (%d "
                 "frames, %u MiB per group; README, \"Memory bound\"): the operation cannot "
                 "complete and fails at its deadline",
                 g->name, (unsigned long long)l.op, e->peers[l.peer].w->name, EARLY_GROUP_MAX,
                 EARLY_GROUP_BYTES >> 20);
}

/* ---- groups ---- */

int
engine_worker_index(const engine *e, const char *name)
{
    for (size_t i = 0; i < e->npeers; i++)
        if (strcmp(e->wtab[i].name, name) == 0 && (!e->peers[i].retired || (int)i == e->self_idx))
            return (int)i;
    return -1;
}

int
engine_peer_add(engine *e, const char *name, const char *url, const char *data_url, char *err,
                size_t errlen)
{
    int w = engine_worker_index(e, name);
    eng_peer *p;

    if (w >= 0)
        return w;
    for (size_t i = 0; i < e->npeers; i++) { /* back where it was: the same slot again */
        p = &e->peers[i];
        if (p->retired && strcmp(e->wtab[i].name, name) == 0 &&
            strcmp(e->wtab[i].data_url, data_url) == 0 && p->out == NULL && p->in == NULL &&
            p->ctl_head == NULL && p->sends == NULL) {
            p->retired = 0;
            p->incarnation = 0;
            p->lost = 0;
            log_info("worker %s (%s) is back in the cluster", name, data_url);
            return (int)i;
        }
    }
    if (e->npeers >= e->cap) {
        status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED,
                    "worker %s cannot take worker \"%s\" into the cluster: it knows %zu "
                    "workers already, %d more than its file, the most it takes without a restart",
                    e->self->name, name, e->npeers, ENGINE_WORKERS_ADDED);
        return -1;
    }
    if (strlen(name) > CFG_WORKER_NAME_MAX || strlen(url) > CFG_URL_MAX ||
        strlen(data_url) > CFG_URL_MAX || data_url[0] == '\0') {
        status_fail(err, errlen, A2A_ERR_INTERNAL,
                    "the coordinator listed worker \"%.64s\" with a bad address", name);
        return -1;
    }
    w = (int)e->npeers;
    cfg_worker *c = &e->wtab[w];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    snprintf(c->url, sizeof(c->url), "%s", url);
    snprintf(c->data_url, sizeof(c->data_url), "%s", data_url);
    p = &e->peers[w];
    if (link_peer_start(e, p) != 0) {
        status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED,
                    "worker %s cannot start a thread for worker \"%s\"", e->self->name, name);
        return -1;
    }
    e->npeers++;
    e->env.nworkers = e->npeers;
    log_info("worker %s (%s) joined the cluster (the coordinator lists it; it is not in %s)", name,
             data_url, e->cfg->path);
    return w;
}

void
engine_workers_seen(engine *e, const wire_group *world)
{
    uint8_t *listed = calloc(e->cap, 1);
    char err[300];

    if (listed == NULL)
        return;
    for (size_t i = 0; i < world->n; i++) {
        const wire_member *m = &world->members[i];
        int w = engine_peer_add(e, m->worker, m->url, m->data_url, err, sizeof(err));
        if (w < 0) {
            log_error("%s", err);
            continue;
        }
        listed[w] = 1;
    }
    for (size_t i = 0; i < e->npeers; i++)
        if (!listed[i] && (int)i != e->self_idx && !e->peers[i].retired) {
            log_info("worker %s (%s) left the cluster: the coordinator no longer lists it",
                     e->wtab[i].name, e->wtab[i].data_url);
            link_peer_retire(e, &e->peers[i],
                             "it left the cluster (the coordinator no longer "
                             "lists it)");
        }
    if (!listed[e->self_idx])
        log_error("the coordinator's hccl_world_group has no rank of this worker (%s): its file "
                  "and ours disagree",
                  e->self->name);
    __atomic_store_n(&e->world_size, (int64_t)world->n, __ATOMIC_RELAXED);
    free(listed);
}

/* ---- the state file: which local ranks had a job on which group ----
 *
 * SOCKET.ranks, beside the local socket (0600), one line per world rank and group name: "RANK
 * NAME\n", appended when a rank's job first calls on a group in this worker's life, read back
 * when it starts. A new job of such a rank is then a replacement even when the restart wiped
 * everything else this worker knew of it and no peer heard of it (op_ask_number, seq.prior).
 * A line that does not parse, names a rank of another worker or an invalid group name is
 * skipped with a warning; at most ENGINE_PRIOR_MAX records. */

static eng_prior *
prior_find(engine *e, const char *group, int64_t rank)
{
    for (size_t i = 0; i < e->nprior; i++)
        if (e->prior[i].rank == rank && strcmp(e->prior[i].group, group) == 0)
            return &e->prior[i];
    return NULL;
}

/* prior_add records a pair that prior_find does not know; NULL past ENGINE_PRIOR_MAX or out of
 * memory. */
static eng_prior *
prior_add(engine *e, const char *group, int64_t rank, int before)
{
    eng_prior *p;
    if (e->nprior >= ENGINE_PRIOR_MAX) {
        if (!e->prior_warned)
            log_warn("state file %s: %d records already; ranks' jobs on more groups are not "
                     "recorded",
                     e->prior_path, ENGINE_PRIOR_MAX);
        e->prior_warned = 1;
        return NULL;
    }
    if (e->prior == NULL && (e->prior = calloc(ENGINE_PRIOR_MAX, sizeof(*e->prior))) == NULL)
        return NULL;
    p = &e->prior[e->nprior++];
    snprintf(p->group, sizeof(p->group), "%s", group);
    p->rank = rank;
    p->before = before;
    return p;
}

/* prior_load reads the state file of an earlier run of this worker, if any. */
static void
prior_load(engine *e)
{
    char line[A2A_GROUP_NAME_MAX + 64], name[A2A_GROUP_NAME_MAX + 1];
    size_t nline = 0, bad = 0;
    FILE *f;

    if (e->self->socket[0] == '\0')
        return;
    snprintf(e->prior_path, sizeof(e->prior_path), "%s.ranks", e->self->socket);
    if ((f = fopen(e->prior_path, "re")) == NULL) {
        if (errno != ENOENT)
            log_warn("state file %s: %s: new jobs of this worker's ranks count as their first",
                     e->prior_path, strerror(errno));
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        int64_t rank = -1;
        size_t len = strlen(line);
        nline++;
        if (group_state_parse(line, len, &rank, name) != 0 || !engine_owns(e, rank)) {
            bad++;
            while (len > 0 && line[len - 1] != '\n' && fgets(line, sizeof(line), f) != NULL)
                len = strlen(line); /* the rest of an overlong line */
            continue;
        }
        if (prior_find(e, name, rank) == NULL)
            (void)prior_add(e, name, rank, 1);
    }
    /* a last line cut short (a crash in the middle of a write): the next record starts a
     * line of its own */
    e->prior_partial = fseek(f, -1, SEEK_END) == 0 && fgetc(f) != '\n';
    fclose(f);
    if (bad > 0)
        log_warn("state file %s: %zu of %zu lines skipped (not \"RANK GROUP\" of a rank of "
                 "worker %s)",
                 e->prior_path, bad, nline, e->self->name);
    log_debug("state file %s: %zu ranks' jobs on groups before this start", e->prior_path,
              e->nprior);
}

/* prior_note records that world rank's job calls on group (once per worker life); under
 * e->mtx. */
static void
prior_note(engine *e, const char *group, int64_t rank)
{
    char line[A2A_GROUP_NAME_MAX + 64];
    int fd, len;

    if (e->prior_path[0] == '\0' || prior_find(e, group, rank) != NULL ||
        prior_add(e, group, rank, 0) == NULL)
        return;
    if (e->prior_partial)
        line[0] = '\n';
    if ((len = group_state_format(line + e->prior_partial, sizeof(line) - 1, rank, group)) < 0)
        return;
    len += e->prior_partial;
    fd = open(e->prior_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, line, (size_t)len) != len) {
        if (!e->prior_warned)
            log_warn("state file %s: %s: a restart of this worker will forget which ranks had "
                     "jobs",
                     e->prior_path, strerror(errno));
        e->prior_warned = 1;
    } else
        e->prior_partial = 0;
    if (fd >= 0)
        close(fd);
}

/* group_build makes an op_group from a resolved group; NULL with err. */
static op_group *
group_build(engine *e, const wire_group *wg, char *err, size_t errlen)
{
    op_group *g = calloc(1, sizeof(*g));
    int self = e->self_idx;

    int64_t *local = calloc(wg->n, sizeof(int64_t));

    if (g == NULL || local == NULL || (g->world = calloc(wg->n, sizeof(int64_t))) == NULL ||
        (g->peer = calloc(wg->n, sizeof(int))) == NULL ||
        (g->lidx = calloc(wg->n, sizeof(int))) == NULL) {
        status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        goto fail;
    }
    snprintf(g->name, sizeof(g->name), "%s", wg->name);
    g->env = &e->env;
    g->epoch = wg->epoch;
    g->n = wg->n;
    for (size_t i = 0; i < wg->n; i++) {
        const wire_member *m = &wg->members[i];
        /* a worker the coordinator added after we started: it is in the group's reply */
        int w = engine_peer_add(e, m->worker, m->url, m->data_url, err, errlen);
        g->world[i] = m->world_rank;
        if (w < 0)
            goto fail;
        if (w == self && !engine_owns(e, m->world_rank)) {
            status_fail(err, errlen, A2A_ERR_INTERNAL,
                        "group \"%s\" puts world rank %lld on this worker (%s), whose ranks are "
                        "%lld..%lld in %s: the coordinator and this worker read different files",
                        wg->name, (long long)m->world_rank, e->self->name,
                        (long long)e->self->first_rank,
                        (long long)(e->self->first_rank + e->self->ranks - 1), e->cfg->path);
            goto fail;
        }
        g->peer[i] = w == self ? -1 : w;
        if (w == self)
            local[g->nlocal] = g->world[i];
        g->lidx[i] = w == self ? (int)g->nlocal++ : -1;
    }
    if (group_seq_init(&g->seq, g->nlocal, local) != 0) {
        status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        goto fail;
    }
    for (size_t l = 0; l < g->nlocal; l++) {
        const eng_prior *p = prior_find(e, g->name, local[l]);
        g->seq.prior[l] = p != NULL && p->before;
    }
    free(local);
    return g;
fail:
    free(local);
    group_free(g);
    return NULL;
}

/*
 * group_install puts g in the cache in place of an older epoch of its name, which is retired:
 * g takes over its operation numbers and failures, its operations in progress fail, and so
 * does every operation of the same number in g's epoch at the other members (ABORT), so that
 * calls of one number that straddle the change fail together. Under e->mtx.
 */
static void
group_install(engine *e, op_group *g)
{
    static const char why[] = "the group changed while the operation ran (a member worker "
                              "restarted or the group was redefined); the next call uses the "
                              "new group";
    op_out o;
    op_out_init(&o);
    for (op_group **pp = &e->groups; *pp != NULL; pp = &(*pp)->next) {
        op_group *old = *pp;
        if (strcmp(old->name, g->name) != 0)
            continue;
        *pp = old->next;
        old->next = NULL;
        old->retired = 1;
        group_seq_carry(&g->seq, &old->seq);
        if (op_group_carry(g, old) != 0)
            log_warn("out of memory: group \"%s\" forgets which ranks were heard from", g->name);
        for (op_call *c = old->asks; c != NULL; c = c->ask_next)
            op_ask_fail(&o, c, A2A_ERR_UNAVAILABLE,
                        "group changed while the call asked where its ranks are (a member "
                        "worker restarted or the group was redefined); the next call uses the "
                        "new group");
        for (op_op *op = old->ops; op != NULL; op = op->next)
            if (op->status == A2A_OK && op->arrived > op->left) {
                op_fail(&o, op, A2A_ERR_UNAVAILABLE, 0, "%s", why);
                op_op *nop = op_get(g, op->num, 1);
                if (nop != NULL)
                    op_fail(&o, nop, A2A_ERR_UNAVAILABLE, 1, "%s", why);
            }
        engine_run(e, &o);
        (void)group_sweep(old); /* frees old when nothing runs in it */
        break;
    }
    op_out_fini(&o);
    g->next = e->groups;
    e->groups = g;
    replay_early(e, g);
    (void)group_sweep(g);
}

/* engine_register tells the coordinator our incarnation (once). */
static void
engine_register(engine *e, int64_t timeout_ms)
{
    msgpack_sbuffer sb;
    wire_register r = {.incarnation = e->incarnation};
    uint8_t *rep = NULL;
    size_t replen = 0;
    char err[256];

    if (e->registered)
        return;
    snprintf(r.worker, sizeof(r.worker), "%s", e->self->name);
    msgpack_sbuffer_init(&sb);
    if (wire_register_encode(&sb, &r) == 0 &&
        rpc_call(e->coord, "RegisterWorker", sb.data, sb.size, timeout_ms, &rep, &replen, err,
                 sizeof(err)) == A2A_OK)
        e->registered = 1;
    else
        log_warn("cannot register with the coordinator %s: %s", rpc_client_url(e->coord), err);
    free(rep);
    msgpack_sbuffer_destroy(&sb);
}

/* fetch_group asks the coordinator for name, within timeout_ms (a call's deadline bounds it). */
static a2a_status
fetch_group(engine *e, const char *name, int64_t timeout_ms, wire_group *wg, char *err,
            size_t errlen)
{
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char why[512];
    int64_t t0 = rpc_now_ms();
    a2a_status st;

    if (timeout_ms > 5000)
        timeout_ms = 5000;
    if (timeout_ms < 50)
        timeout_ms = 50;
    engine_register(e, timeout_ms / 2);
    msgpack_sbuffer_init(&sb);
    wire_group_name_encode(&sb, name);
    st = rpc_call(e->coord, "ResolveGroup", sb.data, sb.size,
                  timeout_ms - (rpc_now_ms() - t0) > 50 ? timeout_ms - (rpc_now_ms() - t0) : 50,
                  &rep, &replen, err, errlen);
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_ERR_UNAVAILABLE || st == A2A_ERR_DEADLINE_EXCEEDED) {
        snprintf(why, sizeof(why), "%s", err);
        st = status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "coordinator: %s", why);
    } else if (st == A2A_ERR_PERMISSION_DENIED) { /* refused this worker, not the job calling */
        snprintf(why, sizeof(why), "%s", err);
        st = status_fail(err, errlen, A2A_ERR_UNAVAILABLE,
                         "the coordinator refused worker %s (its security.token_file and ours "
                         "differ?): %s",
                         e->self->name, why);
    }
    if (st == A2A_OK && wire_group_decode(wg, rep, replen, why, sizeof(why)) != 0)
        st = status_fail(err, errlen, A2A_ERR_INTERNAL, "bad reply from the coordinator: %s", why);
    free(rep);
    return st;
}

/* group_fresh returns the current group called name, resolving it when needed (by deadline, in
 * rpc_now_ms time); under e->mtx. */
static op_group *
group_fresh(engine *e, const char *name, int64_t deadline, a2a_status *st, char *err, size_t errlen)
{
    op_group *g = engine_group_find(e, name);
    wire_group wg;

    if (g != NULL && !g->stale)
        return g;
    pthread_mutex_unlock(&e->mtx);
    *st = fetch_group(e, name, deadline - rpc_now_ms(), &wg, err, errlen);
    pthread_mutex_lock(&e->mtx);
    if (*st != A2A_OK)
        return NULL;
    if ((g = engine_group_offer(e, &wg, err, errlen)) == NULL)
        *st = A2A_ERR_INTERNAL;
    wire_group_fini(&wg);
    return g;
}

int
engine_group_ahead(engine *e, const wire_group *wg, char *err, size_t errlen)
{
    op_group *g = engine_group_find(e, wg->name), *ng;

    if (g != NULL && (g->epoch >= wg->epoch || g->ops != NULL || g->asks != NULL))
        return 1; /* as new, or busy: its next call resolves it (it is stale) */
    if ((ng = group_build(e, wg, err, errlen)) == NULL)
        return -1;
    if (ng->nlocal == 0) {
        group_free(ng);
        return 0;
    }
    group_install(e, ng);
    return 1;
}

int
engine_resolve_ahead(engine *e, const char *name, uint64_t epoch, int64_t timeout_ms)
{
    char gname[A2A_GROUP_NAME_MAX + 1], err[512];
    wire_group wg = {0};
    op_group *g;
    a2a_status st;

    snprintf(gname, sizeof(gname), "%s", name);
    pthread_mutex_unlock(&e->mtx);
    st = fetch_group(e, gname, timeout_ms, &wg, err, sizeof(err));
    pthread_mutex_lock(&e->mtx);
    if ((g = engine_group_find(e, gname)) != NULL && g->epoch >= epoch) {
        /* another thread installed it meanwhile */
    } else if (st != A2A_OK) {
        log_warn("cannot resolve group \"%s\" for the frames of it that came first: %s", gname,
                 err);
    } else if (engine_group_ahead(e, &wg, err, sizeof(err)) < 0) {
        log_warn("cannot install group \"%s\" for the frames of it that came first: %s", gname,
                 err);
    } else if ((g = engine_group_find(e, gname)) != NULL && g->epoch >= epoch) {
        log_info("group \"%s\" (epoch %llu) resolved for the frames of it that came before a "
                 "call here did",
                 gname, (unsigned long long)g->epoch);
    }
    wire_group_fini(&wg);
    return g != NULL && g->epoch >= epoch;
}

op_group *
engine_group_offer(engine *e, const wire_group *wg, char *err, size_t errlen)
{
    op_group *g = engine_group_find(e, wg->name), *ng;

    if (g != NULL && g->epoch >= wg->epoch) {
        /* the same epoch, or another resolve installed a newer one meanwhile: never go back */
        g->stale = g->epoch == wg->epoch ? 0 : g->stale;
        return g;
    }
    if ((ng = group_build(e, wg, err, errlen)) == NULL)
        return NULL;
    group_install(e, ng);
    return ng;
}

a2a_status
engine_resolve(engine *e, const char *name, wire_group *g, char *err, size_t errlen)
{
    return fetch_group(e, name, 5000, g, err, errlen);
}

void
engine_forget(engine *e, const char *name)
{
    pthread_mutex_lock(&e->mtx);
    op_group *g = engine_group_find(e, name);
    if (g != NULL)
        g->stale = 1;
    pthread_mutex_unlock(&e->mtx);
}

a2a_status
engine_coordinator_call(engine *e, const char *method, const void *body, size_t len,
                        int64_t timeout_ms, uint8_t **reply, size_t *reply_len, char *err,
                        size_t errlen)
{
    return rpc_call(e->coord, method, body, len, timeout_ms, reply, reply_len, err, errlen);
}

/* ---- one rank's call ---- */

/* ---- the state machine's actions (op.h), and the events links bring ---- */

/* land writes an eager slice into its call (small: under the lock); then op_landed. */
static void
land(engine *e, op_out *o, const op_act *a)
{
    eng_call *c = EC(a->call);
    uint64_t to = c->a->recv_addr + a->off;
    eng_map *m = NULL;
    uint8_t *dst;
    int rv = 0;

    if (c->oc.op->status != A2A_OK || c->oc.finished)
        return;
    if ((dst = shm_get(e, c->sess, to, a->len, &m)) != NULL)
        memcpy(dst, a->bytes, (size_t)a->len);
    else
        rv = xfer_write(c->sess, to, a->bytes, (size_t)a->len);
    shm_put(e, m);
    op_landed(o, &c->oc, a->s, rv);
}

/* pair_span: local pair s -> d's length in bytes, where it is read in s's job and written in
 * d's (both calls here). */
static void
pair_span(const op_op *op, int64_t s, int64_t d, uint64_t *bytes, uint64_t *from, uint64_t *to)
{
    const eng_call *cs = EC(op->calls[s]), *cd = EC(op->calls[d]);
    size_t n = op->g->n, ses = cs->oc.esize, des = cd->oc.esize;
    *bytes = (uint64_t)cs->a->counts[d] * ses;
    *from = cs->a->send_addr + (uint64_t)cs->a->counts[n + d] * ses;
    *to = cd->a->recv_addr + (uint64_t)cd->a->counts[3 * n + s] * des;
}

/* copy_small copies local pair a->s -> a->d from here, under the lock, when it is at most
 * ENGINE_COPY_INLINE bytes (then 1): waking the receiving call's thread for it would cost more
 * than the copy (a sleeping thread takes ~50 us to wake on this kind of VM: PERFORMANCE.md), and
 * with the copy done here the call can be answered early by the thread that completes it. */
static int
copy_small(engine *e, op_out *o, const op_act *a)
{
    op_op *op = EC(a->call)->oc.op;
    eng_call *cs, *cd;
    uint64_t bytes, from, to;
    uint8_t *src, *dst, *tmp = NULL;
    eng_map *ms = NULL, *md = NULL;
    int rv = 0, wr = 0;

    if (op->calls[a->s] == NULL || op->calls[a->d] == NULL)
        return 0; /* as before: its thread's copy_local */
    cs = EC(op->calls[a->s]);
    cd = EC(op->calls[a->d]);
    pair_span(op, a->s, a->d, &bytes, &from, &to);
    if (bytes > ENGINE_COPY_INLINE)
        return 0;
    if (op->status != A2A_OK || cs->oc.finished || cd->oc.finished)
        return 1; /* as its thread would: a failed operation copies nothing more */
    src = bytes > 0 ? shm_get(e, cs->sess, from, bytes, &ms) : NULL;
    dst = bytes > 0 ? shm_get(e, cd->sess, to, bytes, &md) : NULL;
    if (bytes == 0)
        ;
    else if (src != NULL && dst != NULL)
        memcpy(dst, src, (size_t)bytes);
    else if (src != NULL)
        wr = 1, rv = xfer_write(cd->sess, to, src, (size_t)bytes);
    else if (dst != NULL)
        rv = xfer_read(cs->sess, from, dst, (size_t)bytes);
    else if ((tmp = malloc((size_t)bytes)) == NULL)
        rv = ENOMEM;
    else if ((rv = xfer_read(cs->sess, from, tmp, (size_t)bytes)) == 0)
        wr = 1, rv = xfer_write(cd->sess, to, tmp, (size_t)bytes);
    free(tmp);
    shm_put(e, ms);
    shm_put(e, md);
    op_copied(o, op, a->s, a->d, rv, wr);
    return 1;
}

void
engine_call_notify(eng_call *c)
{
    __atomic_add_fetch(&c->wake_seq, 1, __ATOMIC_RELEASE);
    if (c->sleeping)
        (void)syscall(SYS_futex, &c->wake_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/*
 * wake wakes c's thread, or answers c from here when every pair is done and nothing touches
 * its job's memory (the early answer). A call so answered whose thread sleeps on its
 * channel's doorbell too (call_sleep) is not woken: it leaves its operation at the end of
 * engine_run (leave_answered), and its thread, with nothing left to do, wakes when the job
 * rings with its next request (or at the latest in 200 ms), instead of now and again then.
 */
static void
wake(engine *e, eng_call *c)
{
    if (c->oc.op != NULL && op_call_done(&c->oc) && c->done != NULL && !c->done->called &&
        c->pins == 0 && c->ntodo == 0 && !c->oc.finished && c->oc.op->status == A2A_OK) {
        c->done->called = 1;
        c->done->next = (int64_t)c->oc.num + 1;
        c->done->fn(c->done->arg);
        if (c->bell != NULL && e->waitv) {
            c->next_left = e->left;
            e->left = c;
            return;
        }
    }
    engine_call_notify(c);
}

/* leave_answered ends the calls answered early (wake) as their threads would have: out of the
 * link queues, the rank's number past the operation, out of the operation (which the sweep may
 * free, and the group with it: hence at engine_run's end, when no action refers to them). The
 * thread finds c->left and returns at once. */
static void
leave_answered(engine *e)
{
    while (e->left != NULL) {
        eng_call *c = e->left;
        op_op *op = c->oc.op;
        e->left = c->next_left;
        c->next_left = NULL;
        c->oc.finished = 1;
        link_drop_call(e, c);
        group_seq_end(&op->g->seq, (size_t)c->oc.lidx, c->oc.num, A2A_OK);
        c->left = 1;
        c->oc.op = NULL;
        (void)op_leave(op, &c->oc); /* may free op, and its group when retired */
        /* not notified: its thread sleeps on the doorbell too, or waits for the lock */
    }
}

void
engine_run(engine *e, op_out *o)
{
    e->run_depth++;
    for (size_t i = 0; i < o->n; i++) {
        op_act a = o->a[i]; /* o->a moves when actions are added */
        eng_call *c = EC(a.call);
        switch (a.type) {
        case OPA_SEND:
            if (link_send(e, &e->peers[a.peer], &a.f, a.payload, a.plen) != 0 && a.op != NULL)
                op_fail(o, a.op, A2A_ERR_RESOURCE_EXHAUSTED, 1,
                        "cannot queue a frame of type %d for worker %s (out of memory, or its "
                        "header is over %u bytes)",
                        a.f.type, e->peers[a.peer].w->name, FRAME_HEADER_MAX);
            break;
        case OPA_STREAM:
            if (link_send_slice(e, &e->peers[a.peer], c, a.d, a.len, c->a->send_addr + a.off) != 0)
                op_fail(o, a.op, A2A_ERR_RESOURCE_EXHAUSTED, 1, "out of memory");
            break;
        case OPA_COPY:
            if (copy_small(e, o, &a))
                break;
            c->todo[c->ntodo++] = (eng_pair){a.s, a.d};
            engine_call_notify(c);
            break;
        case OPA_LAND: land(e, o, &a); break;
        case OPA_WAKE: wake(e, c); break;
        case OPA_DROP: link_drop_call(e, c); break;
        }
    }
    op_out_reset(o);
    if (--e->run_depth == 0)
        leave_answered(e);
}

void
engine_frame(engine *e, eng_peer *p, frame *f)
{
    (void)engine_frame_try(e, p, f, 0);
}

int
engine_frame_try(engine *e, eng_peer *p, frame *f, int may_wait)
{
    /* (set once: a frame offered again after its group was resolved keeps when it came) */
    if (f->type == FRAME_READY && f->ttl > 0 && f->expire == 0) /* when the sender's call has
                                                                   failed for sure */
        f->expire = rpc_now_ms() + f->ttl;
    if (f->type == FRAME_PROBE && f->expire == 0) /* when it came: a call it asks about may be
                                                     past its deadline */
        f->expire = rpc_now_ms();
    op_group *g = engine_group_find(e, f->id.group);
    op_out o;

    if (f->type == FRAME_WHERE || f->type == FRAME_HERE) { /* of any epoch, resolved or not */
        op_out_init(&o);
        op_where(&o, g, p->idx, f);
        engine_run(e, &o);
        op_out_fini(&o);
        return 0;
    }
    if (g == NULL || g->epoch < f->id.epoch) { /* not resolved yet, or we are behind */
        if (g != NULL)
            g->stale = 1;
        if (f->type == FRAME_READY || f->type == FRAME_ABORT || f->type == FRAME_SLICE ||
            f->type == FRAME_PROBE || f->type == FRAME_ALIVE)
            return engine_keep_early(e, p->idx, f, may_wait);
        return 0;
    }
    op_out_init(&o);
    op_frame(&o, g, p->idx, p->incarnation ^ ((uint64_t)p->idx << 48), f);
    engine_run(e, &o);
    op_out_fini(&o);
    return 0;
}

eng_call *
engine_data_target(engine *e, eng_peer *p, const frame *f, uint64_t len, uint64_t *addr)
{
    op_group *g = engine_group_find(e, f->id.group);
    uint64_t off = 0;
    op_call *c;
    op_out o;

    if (g == NULL)
        return NULL;
    op_out_init(&o);
    c = op_data_target(&o, g, p->idx, f, len, &off);
    engine_run(e, &o);
    op_out_fini(&o);
    if (c == NULL)
        return NULL;
    *addr = EC(c)->a->recv_addr + off;
    EC(c)->pins++;
    return EC(c);
}

void
engine_data_landed(engine *e, eng_call *c, const frame *f, uint64_t len, int rv)
{
    op_out o;
    if (--c->pins == 0)
        engine_call_notify(c);
    op_out_init(&o);
    op_data_landed(&o, &c->oc, f->src, len, rv);
    engine_run(e, &o);
    op_out_fini(&o);
}

void
engine_sent(engine *e, eng_call *c, int64_t d, int rv)
{
    op_out o;
    op_out_init(&o);
    op_sent(&o, &c->oc, d, rv);
    engine_run(e, &o);
    op_out_fini(&o);
}

void
engine_peer_lost(engine *e, eng_peer *p, const char *why)
{
    op_out o;
    op_out_init(&o);
    for (op_group *g = e->groups; g != NULL; g = g->next)
        op_peer_lost(&o, g, p->idx, why);
    engine_run(e, &o);
    op_out_fini(&o);
}

/* ---- one rank's call ---- */

/* copy_local copies the slice s -> d between two local jobs; e->mtx held on entry and exit. */
static void
copy_local(engine *e, op_op *op, eng_pair p, uint8_t **buf)
{
    eng_call *cs = EC(op->calls[p.s]), *cd = EC(op->calls[p.d]);
    uint64_t bytes, from, to, done = 0;
    int rv = 0, wr = 0;
    eng_map *ms = NULL, *md = NULL;
    uint8_t *src, *dst;
    op_out o;

    pair_span(op, p.s, p.d, &bytes, &from, &to);
    src = bytes > 0 ? shm_get(e, cs->sess, from, bytes, &ms) : NULL;
    dst = bytes > 0 ? shm_get(e, cd->sess, to, bytes, &md) : NULL;
    cs->pins++;
    cd->pins++;
    pthread_mutex_unlock(&e->mtx);
    if (src != NULL && dst != NULL) /* both shared: one memcpy */
        memcpy(dst, src, (size_t)bytes);
    else if (src != NULL) /* one copy, straight into the receiving job */
        wr = 1, rv = xfer_write(cd->sess, to, src, (size_t)bytes);
    else if (dst != NULL)
        rv = xfer_read(cs->sess, from, dst, (size_t)bytes);
    else if (bytes > 0 && *buf == NULL && (*buf = malloc(ENGINE_CHUNK)) == NULL)
        rv = ENOMEM;
    while (src == NULL && dst == NULL && rv == 0 && done < bytes) {
        size_t k = bytes - done < ENGINE_CHUNK ? (size_t)(bytes - done) : ENGINE_CHUNK;
        if ((rv = xfer_read(cs->sess, from + done, *buf, k)) == 0 &&
            (wr = 1, rv = xfer_write(cd->sess, to + done, *buf, k)) == 0)
            done += k, wr = 0;
    }
    pthread_mutex_lock(&e->mtx);
    shm_put(e, ms);
    shm_put(e, md);
    if (--cs->pins == 0)
        engine_call_notify(cs);
    if (--cd->pins == 0)
        engine_call_notify(cd);
    op_out_init(&o);
    op_copied(&o, op, p.s, p.d, rv, wr);
    engine_run(e, &o);
    op_out_fini(&o);
}

/* call_sleep lets e->mtx go and sleeps until engine_call_notify(c), the job ringing c's
 * doorbell (a channel's call, where futex_waitv works), or for left_ms (< 0: no bound); under
 * e->mtx. */
static void
call_sleep(engine *e, eng_call *c, int64_t left_ms)
{
    uint32_t seen = c->wake_seq; /* notifiers bump it under e->mtx */
    /* the bell before the lock goes: a ring after this load changes it, and the wait returns
     * at once */
    uint32_t rang = c->bell != NULL ? __atomic_load_n(c->bell, __ATOMIC_ACQUIRE) : 0;
    struct timespec ts = {.tv_sec = left_ms / 1000, .tv_nsec = (left_ms % 1000) * 1000000};

    c->sleeping = 1;
    pthread_mutex_unlock(&e->mtx);
#ifdef SYS_futex_waitv
    if (c->bell != NULL && e->waitv) {
        struct futex_waitv w[2] = {
            {.val = seen, .uaddr = (uintptr_t)&c->wake_seq, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG},
            {.val = rang, .uaddr = (uintptr_t)c->bell, .flags = FUTEX_32}, /* shared */
        };
        struct timespec at;
        clock_gettime(CLOCK_MONOTONIC, &at); /* futex_waitv's timeout is absolute */
        at.tv_sec += ts.tv_sec + (at.tv_nsec + ts.tv_nsec) / 1000000000;
        at.tv_nsec = (at.tv_nsec + ts.tv_nsec) % 1000000000;
        (void)syscall(SYS_futex_waitv, w, 2, 0, left_ms >= 0 ? &at : NULL, CLOCK_MONOTONIC);
    } else
#endif
        (void)syscall(SYS_futex, &c->wake_seq, FUTEX_WAIT_PRIVATE, seen, left_ms >= 0 ? &ts : NULL,
                      NULL, 0);
    pthread_mutex_lock(&e->mtx);
    c->sleeping = 0;
}

/* timed_wait sleeps on c (call_sleep) until at most until_ms (at most 200 ms at a time); under
 * e->mtx. */
static void
timed_wait(engine *e, eng_call *c, int64_t until_ms)
{
    int64_t left = until_ms - rpc_now_ms();
    if (left <= 0)
        return;
    call_sleep(e, c, left > 200 ? 200 : left);
}

/* call_wait copies c's local pairs and waits until c completes, fails or passes its deadline
 * (and, when only bytes on their way are missing then, ENGINE_FLIGHT_GRACE_MS more: 1 when it
 * waited into that grace); under e->mtx. */
static int
call_wait(engine *e, eng_call *c, int64_t deadline, int64_t timeout_ms, uint8_t **buf)
{
    op_op *op = c->oc.op;
    int graced = 0;

    while (!c->left && op->status == A2A_OK && !op_call_done(&c->oc)) {
        if (c->ntodo > 0) {
            copy_local(e, op, c->todo[--c->ntodo], buf);
            continue;
        }
        if (deadline - rpc_now_ms() <= 0 && !graced && op_all_arrived(&c->oc)) {
            graced = 1;
            deadline += ENGINE_FLIGHT_GRACE_MS;
            log_debug("operation %llu of group \"%s\": rank %lld's deadline passed with every "
                      "member in it and bytes on their way: %d ms more for them",
                      (unsigned long long)c->oc.num, op->g->name, (long long)c->oc.grank,
                      ENGINE_FLIGHT_GRACE_MS);
            continue;
        }
        if (deadline - rpc_now_ms() <= 0) {
            op_out o;
            op_out_init(&o);
            op_deadline(&o, op, &c->oc, timeout_ms);
            engine_run(e, &o);
            op_out_fini(&o);
            break;
        }
        timed_wait(e, c, deadline);
    }
    return graced;
}

/* unpin_wait waits until no transfer touches c's memory. A transfer still going after c's
 * deadline (or, for a call that ended early, past now) plus ENGINE_PIN_GRACE_MS has its link
 * closed (link_release_call), so that a trickling peer cannot hold a call; a call that waited
 * into the flight grace (graced) counts from its deadline alone, so that it returns within the
 * same bound; under e->mtx. */
static void
unpin_wait(engine *e, eng_call *c, int64_t deadline, int graced)
{
    int64_t now = rpc_now_ms();
    int64_t until = (graced || deadline > now ? deadline : now) + ENGINE_PIN_GRACE_MS;
    int released = 0;

    while (c->pins > 0) {
        if (until - rpc_now_ms() <= 0 && !released) {
            log_warn("operation %llu of group \"%s\": a link still moves bytes of rank %lld "
                     "%d ms after the call ended: closing it",
                     (unsigned long long)c->oc.num, c->oc.op->g->name, (long long)c->oc.grank,
                     ENGINE_PIN_GRACE_MS);
            link_release_call(e, c);
            released = 1;
        }
        if (released) {
            call_sleep(e, c, -1);
            continue;
        }
        timed_wait(e, c, until);
    }
}

/* ask_answers sends c's question (op_ask) and waits for the answers until deadline: 1 when
 * they came (c->oc.ask_st says how the ask ended), 0 when no member worker is remote (nothing
 * asked), -1 out of memory. Under e->mtx. */
static int
ask_answers(engine *e, op_group *g, eng_call *c, int64_t deadline)
{
    op_out o;
    int r;

    op_out_init(&o);
    r = op_ask(&o, g, &c->oc);
    engine_run(e, &o);
    while (r > 0 && c->oc.asking) {
        int64_t left = deadline - rpc_now_ms();
        if (left <= 0 || e->stopping) {
            char msg[400];
            size_t len = 0;
            for (size_t p = 0; p < c->oc.ask_nw && len < sizeof(msg) / 2; p++)
                if (c->oc.ask_wait[p])
                    len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s%s",
                                            len > 0 ? ", " : "", e->env.workers[p]);
            if (e->stopping)
                op_ask_fail(&o, &c->oc, A2A_ERR_UNAVAILABLE, "the worker is stopping");
            else {
                char why[800];
                snprintf(why, sizeof(why),
                         "the first call of group rank %lld's job on group \"%s\" asked where "
                         "the group's ranks are and got no answer from worker(s) %s in time",
                         (long long)c->oc.grank, g->name, msg);
                op_ask_fail(&o, &c->oc, A2A_ERR_DEADLINE_EXCEEDED, why);
            }
            engine_run(e, &o);
            break;
        }
        timed_wait(e, c, deadline);
    }
    op_out_fini(&o);
    return r;
}

/* ask_where asks the member workers where g is for c, a new job's first call (op_ask), and
 * waits for their answers until deadline; A2A_OK with *num, or the failure with err. Under
 * e->mtx. */
static a2a_status
ask_where(engine *e, op_group *g, eng_call *c, int64_t deadline, int64_t timeout_ms, uint64_t *num,
          char *err, size_t errlen)
{
    int r;
    a2a_status st = A2A_OK;

    r = ask_answers(e, g, c, deadline);
    if (r < 0)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "worker %s is out of memory",
                           e->self->name);
    if (r > 0 && c->oc.ask_st != A2A_OK)
        st = status_fail(err, errlen, c->oc.ask_st, "%s", c->oc.ask_msg);
    if (st == A2A_OK) {
        int wait = 0, late;
        int64_t patience =
            timeout_ms / 2 < ENGINE_ASK_PATIENCE_MS ? timeout_ms / 2 : ENGINE_ASK_PATIENCE_MS;
        int64_t until = rpc_now_ms() + patience;
        *num = op_ask_number(g, &c->oc, &wait);
        /* every answer idle after a failure: the others call *num soon, or wait for us */
        while (wait && op_get(g, *num, 0) == NULL && rpc_now_ms() < until && !e->stopping &&
               !g->retired)
            timed_wait(e, c, until);
        /* late to the operation they failed without us, when no frame of *num came */
        late = wait && op_get(g, *num, 0) == NULL;
        /* an orphan's replacement about to take its dead job's operation: did the others
         * call *num meanwhile (op_ask_again)? */
        if (op_ask_again(g, &c->oc, *num, late) && !g->retired && !e->stopping) {
            uint64_t first = *num;
            (void)op_ask_end(g, &c->oc); /* not retired: g stays */
            r = ask_answers(e, g, c, deadline);
            if (r > 0 && op_get(g, first, 0) == NULL && op_ask_moved(&c->oc, first)) {
                log_debug("group \"%s\": the others called operation %llu without the first "
                          "call of world rank %lld's new job: it is that call's",
                          g->name, (unsigned long long)first, (long long)g->world[c->oc.grank]);
                late = 0;
            }
            if (op_get(g, first, 0) != NULL)
                late = 0; /* a frame of it came meanwhile */
        }
        *num = op_ask_take(g, &c->oc, *num, late);
    }
    if (g->retired && st == A2A_OK)
        st = status_fail(err, errlen, A2A_ERR_UNAVAILABLE,
                         "group \"%s\" changed while the call asked where its ranks are; the "
                         "next call uses the new group",
                         g->name);
    /* a failed ask of a rank this worker knows, in a group still current: the caller numbers
     * the call here after all (g stays) */
    c->ask_local = st != A2A_OK && !g->retired && !e->stopping && g->seq.known[c->oc.lidx];
    (void)op_ask_end(g, &c->oc); /* may free g when it retired */
    return st;
}

/* in_sess: c's job is the one of session arg (op_orphan) */
static int
in_sess(const op_call *c, const void *arg)
{
    return EC(c)->sess == arg;
}

/* orphans_fail fails every operation of g in which a call of group rank r (any rank: r < 0) is
 * not done and its job is gone: the call's session is sess (closed), or, sess NULL, a new job of
 * the rank called (keep, which a rank has one job at a time). The others must not complete with
 * what the dead job sent, nor wait for the rest until their deadline: its replacement knows
 * nothing of that operation and joins the one they go on to. Under e->mtx. */
static void
orphans_fail(engine *e, op_group *g, int64_t r, const xfer_sess *sess, const op_call *keep)
{
    op_out o;
    op_op *op;
    size_t i;

    op_out_init(&o);
    while ((op = op_orphan(g, r, keep, sess != NULL ? in_sess : NULL, sess, &i)) != NULL) {
        if (g->lidx[i] >= 0 && g->seq.next[g->lidx[i]] == op->num + 1)
            g->seq.orphaned[g->lidx[i]] = 1; /* its replacement may be this one's latecomer */
        log_info("group \"%s\": the job of world rank %lld went away during operation %llu: "
                 "failing it",
                 g->name, (long long)g->world[i], (unsigned long long)op->num);
        op_fail(&o, op, A2A_ERR_UNAVAILABLE, 1,
                "the job of group rank %zu (world rank %lld) on worker %s ended during "
                "operation %llu",
                i, (long long)g->world[i], e->self->name, (unsigned long long)op->num);
    }
    engine_run(e, &o);
    op_out_fini(&o);
}

void
engine_sess_gone(engine *e, const xfer_sess *sess)
{
    op_out o;

    op_out_init(&o);
    pthread_mutex_lock(&e->mtx);
    for (op_group *g = e->groups; g != NULL; g = g->next) {
        orphans_fail(e, g, -1, sess, NULL);
        /* a first call still asking where the group is ends now, unnumbered (call_run) */
        for (op_call *c = g->asks; c != NULL; c = c->ask_next)
            if (c->asking && EC(c)->sess == sess)
                op_ask_fail(&o, c, A2A_ERR_UNAVAILABLE, "the job is gone");
    }
    engine_run(e, &o);
    pthread_mutex_unlock(&e->mtx);
    op_out_fini(&o);
}

/* call_run numbers c (group_seq_begin), enters it into that operation of g, copies local pairs
 * and waits; *next is the number of the rank's next call. Under e->mtx. */
static a2a_status
call_run(engine *e, op_group *g, eng_call *c, int64_t deadline, int64_t timeout_ms, int64_t *next,
         char *err, size_t errlen)
{
    size_t l = (size_t)c->oc.lidx;
    uint64_t num;
    op_out o;

    op_out_init(&o);
    /* the job's previous call failed without reaching us (we restarted under it): the others
     * need not wait for it until their deadline */
    if (c->a->op_failed && c->a->op_next > 0 &&
        (!g->seq.known[l] || g->seq.next[l] < (uint64_t)c->a->op_next) &&
        group_seq_classify(&g->seq, (uint64_t)c->a->op_next - 1, 0, g->nops) == GROUP_ACTIVE &&
        group_seq_failed(&g->seq, (uint64_t)c->a->op_next - 1) == NULL) {
        char why[300];
        snprintf(why, sizeof(why),
                 "the call of group rank %lld (world rank %lld) for operation %lld failed before "
                 "it reached worker %s (it restarted)",
                 (long long)c->oc.grank, (long long)g->world[c->oc.grank],
                 (long long)c->a->op_next - 1, e->self->name);
        op_fail_num(&o, g, (uint64_t)c->a->op_next - 1, A2A_ERR_UNAVAILABLE, 1, why);
        engine_run(e, &o);
    }
    int64_t job_next = c->a->op_next;
    char lost[sizeof(c->oc.ask_msg)] = "";
    if (!g->seq.known[l]) /* the rank's first call on g here: its record survives a restart */
        prior_note(e, g->name, g->world[c->oc.grank]);
    if (job_next < 0) { /* a new job: where are the others? */
        uint64_t asked = 0;
        c->oc.earlier = (uint64_t)(-1 - job_next); /* its calls that failed before numbering */
        if (g->seq.busy[l]) /* a call of the rank's previous job is still in an operation here */
            orphans_fail(e, g, c->oc.grank, NULL, &c->oc);
        a2a_status ast = ask_where(e, g, c, deadline, timeout_ms, &asked, err, errlen);
        if (ast != A2A_OK && !c->ask_local) {
            op_out_fini(&o);
            return ast; /* not numbered: the job's next call asks again */
        }
        if (ast != A2A_OK) {
            /* a member worker cannot answer (down, stopped): a rank this worker knows keeps up
             * with the group by its own record, past the failures heard of, as before asking
             * existed; else its calls would fail unnumbered while the others' advance, and
             * frames of the group's numbers would soon be too far ahead of it here
             * (GROUP_WINDOW) for anyone's call to complete */
            log_debug("group \"%s\": %s; numbering the call of world rank %lld here", g->name, err,
                      (long long)g->world[c->oc.grank]);
            /* a member worker was lost (it went silent or closed its link): the operation
             * cannot complete without it; it fails now, numbered, rather than wait for that
             * worker a second time (test_outgoing_liveness: 6 s instead of 3) */
            if (c->oc.ask_lost)
                snprintf(lost, sizeof(lost), "%s", err);
            err[0] = '\0';
        } else
            job_next = (int64_t)asked;
    }
    /* its job went away while the call waited for the lock or asked (engine_sess_gone, which
     * fails what a gone job's calls are in, found nothing of this one): it must not enter an
     * operation with the slices it read before */
    if (!xfer_probe(c->sess)) {
        op_out_fini(&o);
        return status_fail(err, errlen, A2A_ERR_UNAVAILABLE,
                           "the job of world rank %lld went away before its call was numbered",
                           (long long)g->world[c->oc.grank]);
    }
    num = group_seq_begin(&g->seq, l, job_next, (int)c->a->op_failed);
    log_debug("group \"%s\": world rank %lld's call is operation %llu (its job said %lld%s)",
              g->name, (long long)g->world[c->oc.grank], (unsigned long long)num,
              (long long)c->a->op_next, c->a->op_failed ? ", after a failure" : "");
    op_op *op = op_get(g, num, 1);
    uint8_t *buf = NULL;
    a2a_status st;

    c->oc.num = num;
    *next = (int64_t)num + 1;
    if (op == NULL) {
        op_out_fini(&o);
        group_seq_end(&g->seq, l, num, A2A_ERR_RESOURCE_EXHAUSTED);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (lost[0] != '\0' && op->status == A2A_OK)
        op_fail(&o, op, A2A_ERR_UNAVAILABLE, 1, "%s", lost);
    /* The job copied "its own" slice by a group rank it cached (self_copied), and left that
     * slice out of its staging: if it is not its rank (the group was created again with another
     * order since the job read it), the slice it left out is another rank's, which the others
     * would receive as whatever the staging held. The operation fails for everyone instead, and
     * the job reads the group again before its next call (liba2a: a failed call's group is
     * suspect). */
    if (c->a->self_copied != 0 && c->a->self_copied != c->oc.grank + 1 && op->status == A2A_OK)
        op_fail(&o, op, A2A_ERR_UNAVAILABLE, 1,
                "world rank %lld's job took itself for group rank %lld of group \"%s\", but it "
                "is group rank %lld: its copy of the group is older than the group's members; "
                "its next call reads the group again",
                (long long)g->world[c->oc.grank], (long long)c->a->self_copied - 1, g->name,
                (long long)c->oc.grank);
    if (op->status == A2A_OK && (c->todo = calloc(g->n, sizeof(*c->todo))) == NULL)
        op_fail(&o, op, A2A_ERR_RESOURCE_EXHAUSTED, 1, "worker %s is out of memory", e->self->name);
    engine_run(e, &o);
    if (op->status != A2A_OK) { /* failed before this rank came: a latecomer */
        st = status_fail(err, errlen, op->status, "%s", op->msg);
        group_seq_end(&g->seq, l, num, st);
        op->arrived++;
        (void)op_leave(op, &c->oc);
        op_out_fini(&o);
        free(c->todo);
        c->todo = NULL;
        return st;
    }
    c->oc.op = op;
    c->oc.arrive_ms = rpc_now_ms();
    c->oc.ttl_ms = deadline - c->oc.arrive_ms > 0 ? deadline - c->oc.arrive_ms : 1;
    link_flush_begin();
    op_arrive(&o, op, &c->oc);
    engine_run(e, &o);
    link_flush(e); /* READY and eager slices leave from this thread, now */
    int graced = call_wait(e, c, deadline, timeout_ms, &buf);
    if (c->left) { /* answered early, and out of the operation already (leave_answered) */
        op_out_fini(&o);
        free(c->todo);
        c->todo = NULL;
        free(buf);
        return A2A_OK;
    }
    c->oc.finished = 1;
    link_drop_call(e, c);
    unpin_wait(e, c, deadline, graced);
    st = op->status;
    if (st != A2A_OK)
        status_fail(err, errlen, st, "%s", op->msg);
    group_seq_end(&g->seq, l, num, st);
    (void)op_leave(op, &c->oc);
    op_out_fini(&o);
    free(c->todo);
    c->todo = NULL;
    free(buf);
    return st;
}

/*
 * pre_read reads c's eager slices (op_eager_max) from its job before the
 * call enters, so that they leave with their SLICE frames; on any failure c
 * has none, and the usual path reports what is wrong with the buffer.
 */
static void
pre_read(eng_call *c)
{
    const wire_a2av *a = c->a;
    size_t esize = c->oc.esize;
    uint64_t emax = op_eager_max(a->n), total = 0;
    int whole = a->send_len <= 65536 / esize;         /* one read of the whole buffer */
    uint64_t bytes = whole ? a->send_len * esize : 0; /* send_len is in elements */

    for (size_t d = 0; d < a->n; d++) {
        uint64_t b = (uint64_t)a->counts[d] * esize;
        total += b > 0 && b <= emax ? b : 0;
    }
    if (total == 0 || (c->pre_at = malloc(a->n * sizeof(uint64_t))) == NULL ||
        (c->pre = malloc(whole ? (size_t)bytes : (size_t)total)) == NULL)
        goto none;
    if (whole && xfer_read(c->sess, a->send_addr, c->pre, (size_t)bytes) != 0)
        goto none;
    total = 0;
    for (size_t d = 0; d < a->n; d++) {
        uint64_t b = (uint64_t)a->counts[d] * esize, at = (uint64_t)a->counts[a->n + d] * esize;
        c->pre_at[d] = UINT64_MAX;
        if (b == 0 || b > emax)
            continue;
        if (whole) {
            c->pre_at[d] = at;
            continue;
        }
        if (xfer_read(c->sess, a->send_addr + at, c->pre + total, (size_t)b) != 0)
            goto none;
        c->pre_at[d] = total;
        total += b;
    }
    return;
none:
    free(c->pre);
    free(c->pre_at);
    c->pre = NULL;
    c->pre_at = NULL;
}

static int64_t
group_rank_of(const op_group *g, int64_t world)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->world[i] == world)
            return (int64_t)i;
    return -1;
}

a2a_status
engine_alltoallv(engine *e, const wire_a2av *a, int64_t *next, char *err, size_t errlen)
{
    return engine_alltoallv_done(e, a, NULL, next, err, errlen);
}

/* spend: a call that fails before it is numbered for want of something outside it (the
 * coordinator, the worker itself) still counts: the other members' calls of its round went on
 * without it, and ranks that retry in lockstep must stay at the same number. Its job's next
 * call is its number + 1 (which then fails this one here for the others, call_run). A call
 * refused for its arguments does not count. */
static void
spend(const wire_a2av *a, int64_t *next)
{
    if (a->op_next >= 0)
        *next = a->op_next + 1;
}

a2a_status
engine_alltoallv_done(engine *e, const wire_a2av *a, engine_done *done, int64_t *next, char *err,
                      size_t errlen)
{
    eng_call c = {
        .a = a, .sess = a->job.sess, .done = done, .bell = done != NULL ? done->bell : NULL};
    int64_t timeout = a->timeout_ms > 0 ? a->timeout_ms : ENGINE_DEFAULT_TIMEOUT_MS;
    int64_t unused, deadline;
    a2a_status st;
    op_group *g;

    if (next == NULL)
        next = &unused;
    *next = -1; /* not numbered: the job keeps its own number */
    if (timeout > ENGINE_MAX_TIMEOUT_MS)
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "timeout_ms %lld is over the limit of %lld ms (%d days)",
                           (long long)a->timeout_ms, (long long)ENGINE_MAX_TIMEOUT_MS,
                           (int)(ENGINE_MAX_TIMEOUT_MS / 86400000));
    if (!engine_owns(e, a->job.world_rank))
        return status_fail(err, errlen, A2A_ERR_PERMISSION_DENIED,
                           "world rank %lld is not a rank of worker %s",
                           (long long)a->job.world_rank, e->self->name);
    if ((st = args_check(a->n, a->dtype, a->send_len, a->recv_len, a->counts, err, errlen)) !=
        A2A_OK)
        return st;
    if (!xfer_probe(c.sess))
        return status_fail(err, errlen, A2A_ERR_PERMISSION_DENIED,
                           "worker %s has no open local session for world rank %lld: the job "
                           "hands its memory over on the worker's socket",
                           e->self->name, (long long)a->job.world_rank);
    c.oc.esize = a2a_dtype_size((a2a_dtype)a->dtype);
    c.oc.dtype = (int32_t)a->dtype;
    c.oc.counts = a->counts; /* with count discovery, the receive half is written */
    c.oc.discover = args_discover(a->n, a->counts);
    c.oc.recv_cap = a->recv_len;
    c.oc.self_copied = a->self_copied; /* with discovery too: the job places it after the reply */
    deadline = rpc_now_ms() + timeout; /* resolving the group counts against it too */
    awake_enter(e->awake);
    pre_read(&c);
    c.oc.pre = c.pre;
    c.oc.pre_at = c.pre_at;
    pthread_mutex_lock(&e->mtx);
    if (e->stopping) {
        st = status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "worker %s is stopping", e->self->name);
        spend(a, next);
    } else if ((g = group_fresh(e, a->group, deadline, &st, err, errlen)) == NULL) {
        /* st and err set */
        if (st == A2A_ERR_UNAVAILABLE || st == A2A_ERR_DEADLINE_EXCEEDED ||
            st == A2A_ERR_RESOURCE_EXHAUSTED)
            spend(a, next);
    } else if ((c.oc.grank = group_rank_of(g, a->job.world_rank)) < 0) {
        st = status_fail(err, errlen, A2A_ERR_PERMISSION_DENIED,
                         "world rank %lld is not a member of group \"%s\"",
                         (long long)a->job.world_rank, a->group);
    } else if (a->n != g->n) {
        st = status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                         "group \"%s\" has %zu ranks, but the call gave counts for %zu", a->group,
                         g->n, a->n);
    } else {
        c.oc.lidx = g->lidx[c.oc.grank];
        st = call_run(e, g, &c, deadline, timeout, next, err, errlen);
    }
    pthread_mutex_unlock(&e->mtx);
    free(c.pre);
    free(c.pre_at);
    awake_leave(e->awake);
    return st;
}

const char *
engine_name(const engine *e)
{
    return e->self->name;
}

int64_t
engine_world_size(const engine *e)
{
    return __atomic_load_n(&e->world_size, __ATOMIC_RELAXED);
}

const char *
engine_config_path(const engine *e)
{
    return e->cfg->path;
}
