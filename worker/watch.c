/*
 * watch.c - the worker's watch on the coordinator's groups. Every
 * ENGINE_WATCH_MS the watcher lists the coordinator's groups (WatchGroups: the
 * name and epoch of each, as ListGroups; the coordinator notes that this worker
 * has seen them, and CreateGroup and DestroyGroup wait up to 1 s for every
 * worker that watches to list them again) and marks stale each cached group whose epoch differs or
 * that is gone (destroyed, or removed from the YAML), so that the next call on
 * it resolves it again: a group destroyed and created again, or changed by a
 * reload, is seen as new by every worker, not only the one that forwarded the
 * change. While the coordinator does not answer, the cache is kept as it is.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/status.h"
#include "engine_int.h"

/* watch_mark marks stale every cached group of e that l lists with another epoch or not at all. */
static void
watch_mark(engine *e, const wire_group_list *l)
{
    pthread_mutex_lock(&e->mtx);
    for (op_group *g = e->groups; g != NULL; g = g->next) {
        size_t i;
        for (i = 0; i < l->n && strcmp(l->groups[i].name, g->name) != 0; i++)
            ;
        if (g->stale || (i < l->n && l->groups[i].epoch == g->epoch))
            continue;
        if (i == l->n)
            log_info("group \"%s\" is gone at the coordinator: resolving it at its next call",
                     g->name);
        else
            log_info("group \"%s\" has epoch %llu at the coordinator (ours %llu): resolving it "
                     "again (now when nothing runs in it, else at its next call)",
                     g->name, (unsigned long long)l->groups[i].epoch, (unsigned long long)g->epoch);
        g->stale = 1;
    }
    pthread_mutex_unlock(&e->mtx);
}

/* watch_workers: when hccl_world_group has another epoch at the coordinator than the one whose
 * workers we took (a worker added or removed by a reload of its file, or a worker restarted),
 * resolve it and take its workers (engine_workers_seen): a host joins or leaves the cluster
 * without the others restarting. (The group itself is installed by watch_ahead.) */
static void
watch_workers(engine *e, const wire_group_list *l)
{
    size_t i;
    wire_group wg = {0};
    char err[512];
    uint64_t seen;

    for (i = 0; i < l->n && strcmp(l->groups[i].name, A2A_WORLD_GROUP) != 0; i++)
        ;
    pthread_mutex_lock(&e->mtx);
    seen = e->world_epoch;
    pthread_mutex_unlock(&e->mtx);
    if (i == l->n || l->groups[i].epoch == seen)
        return;
    if (engine_resolve(e, A2A_WORLD_GROUP, &wg, err, sizeof(err)) != A2A_OK) {
        log_debug("watch: cannot resolve %s for its workers (next time): %s", A2A_WORLD_GROUP, err);
        return;
    }
    pthread_mutex_lock(&e->mtx);
    if (wg.epoch > e->world_epoch) {
        engine_workers_seen(e, &wg);
        e->world_epoch = wg.epoch;
    }
    pthread_mutex_unlock(&e->mtx);
    wire_group_fini(&wg);
}

/*
 * Groups the watch resolved that have no rank of ours (or that it could not resolve), by a hash
 * of name and epoch, sorted: not resolved again until their epoch changes. Only the watcher
 * thread uses it.
 */
#define WATCH_NOT_OURS_MAX 8192
#define WATCH_AHEAD_PER_ROUND 16 /* groups resolved ahead per watch round, at most */

typedef struct {
    uint64_t *keys;
    size_t n;
} watch_skip;

static uint64_t
skip_key(const char *name, uint64_t epoch)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)name; *c != '\0'; c++)
        h = (h ^ *c) * 1099511628211ULL;
    return (h ^ epoch) * 1099511628211ULL;
}

static int
skip_has(const watch_skip *k, uint64_t key)
{
    size_t lo = 0, hi = k->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->keys[mid] == key)
            return 1;
        if (k->keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static void
skip_add(watch_skip *k, uint64_t key)
{
    size_t i;
    if (skip_has(k, key))
        return;
    if (k->keys == NULL && (k->keys = malloc(WATCH_NOT_OURS_MAX * sizeof(uint64_t))) == NULL)
        return;
    if (k->n == WATCH_NOT_OURS_MAX)
        k->n = 0; /* forget them all: they are resolved once more, then skipped again */
    for (i = k->n; i > 0 && k->keys[i - 1] > key; i--)
        k->keys[i] = k->keys[i - 1];
    k->keys[i] = key;
    k->n++;
}

/*
 * watch_ahead resolves and installs the listed groups that have ranks of ours before a call
 * needs them (engine_group_ahead): those not cached, and those cached with an older epoch in
 * which nothing runs. A worker that resolves a group at its first call gets every other
 * member's frames of that call first (the READYs and eager slices of N - L ranks at once), and
 * keeps those that come before it resolved the group in its store of early frames, whose
 * bounds a large group passes (64 ranks on 16 workers: 300 frames for 256 places); installed
 * ahead, the frames go to the operation itself. Groups created at run time are installed
 * before CreateGroup returns (it waits for the workers that watch to ask again, and the
 * watcher asks again only after this). At most WATCH_AHEAD_PER_ROUND resolves a round.
 */
static void
watch_ahead(engine *e, const wire_group_list *l, watch_skip *skip)
{
    int budget = WATCH_AHEAD_PER_ROUND;

    for (size_t i = 0; i < l->n && budget > 0; i++) {
        const wire_group_info *gi = &l->groups[i];
        uint64_t key = skip_key(gi->name, gi->epoch);
        wire_group wg = {0};
        char err[512];
        op_group *g;
        int want, rv;

        pthread_mutex_lock(&e->mtx);
        g = engine_group_find(e, gi->name);
        want = g == NULL ? !skip_has(skip, key)
                         : g->epoch < gi->epoch && g->ops == NULL && g->asks == NULL;
        pthread_mutex_unlock(&e->mtx);
        if (!want)
            continue;
        budget--;
        if (engine_resolve(e, gi->name, &wg, err, sizeof(err)) != A2A_OK) {
            log_debug("watch: cannot resolve group \"%s\" ahead of its calls: %s", gi->name, err);
            skip_add(skip, key); /* until its epoch changes; its first call resolves it */
            continue;
        }
        pthread_mutex_lock(&e->mtx);
        rv = engine_group_ahead(e, &wg, err, sizeof(err));
        pthread_mutex_unlock(&e->mtx);
        if (rv == 0) { /* not ours: under the epoch listed and the one resolved */
            skip_add(skip, key);
            skip_add(skip, skip_key(wg.name, wg.epoch));
        } else if (rv < 0) {
            log_debug("watch: cannot install group \"%s\" ahead of its calls: %s", gi->name, err);
            skip_add(skip, key);
        } else {
            log_debug("watch: group \"%s\" (epoch %llu) installed ahead of its calls", gi->name,
                      (unsigned long long)wg.epoch);
        }
        wire_group_fini(&wg);
    }
}

static void *
watch_main(void *arg)
{
    engine *e = arg;
    int failing = 0;
    watch_skip skip = {0};
    /* A2A_WATCH_AHEAD=0: groups are resolved at their first call only (as before 2026-12-06;
     * for tests of the early store, and a way back should installing ahead ever misbehave) */
    const char *env = getenv("A2A_WATCH_AHEAD");
    int ahead = env == NULL || strcmp(env, "0") != 0;

    for (;;) {
        struct timespec ts;
        uint8_t *rep = NULL;
        size_t replen = 0;
        char err[512];
        wire_group_list l = {0};
        a2a_status st;

        pthread_mutex_lock(&e->mtx);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)ENGINE_WATCH_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        while (!e->watch_stop && pthread_cond_timedwait(&e->watch_cv, &e->mtx, &ts) == 0)
            ;
        if (e->watch_stop) {
            pthread_mutex_unlock(&e->mtx);
            free(skip.keys);
            return NULL;
        }
        pthread_mutex_unlock(&e->mtx);
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        wire_register me = {.incarnation = e->incarnation};
        snprintf(me.worker, sizeof(me.worker), "%s", e->self->name);
        if (wire_register_encode(&sb, &me) != 0)
            st = status_fail(err, sizeof(err), A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
        else
            st = rpc_call(e->coord, "WatchGroups", sb.data, sb.size, 2 * ENGINE_WATCH_MS + 1000,
                          &rep, &replen, err, sizeof(err));
        msgpack_sbuffer_destroy(&sb);
        if (st == A2A_OK && wire_group_list_decode(&l, rep, replen, err, sizeof(err)) != 0)
            st = A2A_ERR_INTERNAL;
        free(rep);
        if (st != A2A_OK) {
            if (!failing)
                log_warn("cannot list the coordinator's groups (keeping the cached ones): %s", err);
            failing = 1;
            continue;
        }
        if (failing)
            log_info("the coordinator answers again");
        failing = 0;
        log_debug("watch: %zu groups listed", l.n);
        watch_mark(e, &l);
        watch_workers(e, &l);
        if (ahead)
            watch_ahead(e, &l, &skip);
        wire_group_list_fini(&l);
    }
}

int
watch_start(engine *e)
{
    pthread_cond_init(&e->watch_cv, NULL);
    e->watch_stop = 0;
    if (pthread_create(&e->watcher, NULL, watch_main, e) != 0) {
        pthread_cond_destroy(&e->watch_cv);
        return -1;
    }
    pthread_setname_np(e->watcher, "a2a-watch");
    e->watching = 1;
    return 0;
}

void
watch_stop(engine *e)
{
    if (!e->watching)
        return;
    pthread_mutex_lock(&e->mtx);
    e->watch_stop = 1;
    pthread_cond_broadcast(&e->watch_cv);
    pthread_mutex_unlock(&e->mtx);
    pthread_join(e->watcher, NULL);
    pthread_cond_destroy(&e->watch_cv);
    e->watching = 0;
}
