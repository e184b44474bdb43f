/*
 * engine.h - the exchange engine of a worker: groups and their epochs,
 * operations, the calls of local ranks, and the peer links that carry
 * slices to the other workers.
 *
 * The protocol of one operation (group G, epoch E, operation k), for every
 * pair of group ranks s -> d:
 *   1. d arrives: its worker sends READY(d, the counts d expects) to the
 *      worker of every source.
 *   2. s arrives and holds READY(d): its worker compares s's count with d's.
 *      Equal: SLICE(count) then DATA chunks, streamed from s's memory.
 *      Different: the operation fails with COUNT_MISMATCH for everyone.
 *   3. d's worker writes the chunks into d's receive slice.
 * Ranks of the same worker copy directly. Any failure (mismatch, deadline,
 * lost worker) is broadcast as ABORT, so the operation fails for every
 * member; the next call of each rank is operation k+1.
 */
#ifndef A2A_WORKER_ENGINE_H
#define A2A_WORKER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "a2a.h"
#include "common/config.h"
#include "common/wire.h"
#include "server/secure.h"

#define ENGINE_CHUNK (1u << 20)       /* bytes per DATA frame */
#define ENGINE_READ_AHEAD (64u << 10) /* bytes an incoming link reads at once (sock.h) */
#define ENGINE_COPY_INLINE \
    16384                       /* a local pair this small is copied by the thread that starts it */
#define ENGINE_HEARTBEAT_MS 500 /* an idle link sends a heartbeat this often */
#define ENGINE_LINK_DEAD_MS 3000 /* a link silent this long is dead */
#define ENGINE_DIAL_MS 2000      /* how long to try to reach a peer */
#define ENGINE_RESOLVE_MS 1000   /* how long a link's receiver may resolve a group (link.c) */
#define ENGINE_DEFAULT_TIMEOUT_MS 60000
#define ENGINE_MAX_TIMEOUT_MS (7 * 86400000LL) /* a week: deadlines never overflow */

typedef struct engine engine;

/*
 * engine_alloc starts the engine of worker `name` of cfg (which the engine
 * borrows and the caller frees after engine_free): it listens for peer links
 * on the worker's data_url and resolves groups through the coordinator.
 */
a2a_status engine_alloc(engine **out, const cfg_cluster *cfg, const char *name, const secure *sec,
                        char *err, size_t errlen);

/* engine_stop fails the calls in progress with UNAVAILABLE and refuses new ones. */
void engine_stop(engine *e);

/* engine_free stops the engine and frees it, once no call is inside it; NULL is fine. */
void engine_free(engine *e);

/* engine_data_url returns where the engine listens for peer links (with the bound port). */
const char *engine_data_url(const engine *e);

/* engine_incarnation returns the random number that names this run of the worker. */
uint64_t engine_incarnation(const engine *e);

/* engine_name returns this worker's name. */
const char *engine_name(const engine *e);

/* engine_world_size returns the number of world ranks. */
int64_t engine_world_size(const engine *e);

/* engine_config_path returns the file the cluster came from. */
const char *engine_config_path(const engine *e);

/* engine_owns reports whether world rank r is one of this worker's ranks. */
int engine_owns(const engine *e, int64_t r);

/*
 * engine_resolve returns the group called name in *g (the caller frees it
 * with wire_group_fini), from the cache or the coordinator.
 */
a2a_status engine_resolve(engine *e, const char *name, wire_group *g, char *err, size_t errlen);

/*
 * engine_alltoallv runs one rank's part of an operation and blocks until it
 * completes or fails. The arguments were checked by the caller against the
 * group's size; the engine checks them again. The operation is number
 * a->op_next of the group (the job's count; -1: the job's first call, numbered
 * by the worker), resynchronised after a failure when a->op_failed is set
 * (docs/ARCHITECTURE.md, "Operation identity"). *next is the number of the
 * rank's next call, or -1 when the call was refused before it was numbered
 * (the job keeps its own). With count discovery (args_discover), the receive
 * counts and displacements in a->counts are written once known (a->counts is
 * the caller's array): the counts to answer the job with.
 */
a2a_status engine_alltoallv(engine *e, const wire_a2av *a, int64_t *next, char *err, size_t errlen);

/*
 * An early answer: when the call completes successfully, the thread that
 * completes it (a link receiver, a sender, another rank's call) calls fn(arg)
 * at once, under the engine's lock, with no further access to the job's memory
 * to come, and sets called; the caller's own thread wakes later to clean up.
 * This saves the hand-off from that thread to the caller's (a job channel
 * answers its job from fn). fn must not block.
 */
typedef struct engine_done {
    void (*fn)(void *arg);
    void *arg;
    int called;
    int64_t next; /* set before fn: the number of the rank's next call */
    /* the doorbell the job rings with its next request (a shared futex word), or NULL: the
     * caller's thread, whose call was answered early, sleeps until then (chan.c) */
    const uint32_t *bell;
} engine_done;

/* engine_alltoallv_done is engine_alltoallv with an early answer (done may be NULL). When
 * done->called is set on return, the call succeeded for the caller whatever it returns. */
a2a_status engine_alltoallv_done(engine *e, const wire_a2av *a, engine_done *done, int64_t *next,
                                 char *err, size_t errlen);

/* engine_coordinator_call forwards a request to the coordinator (for group management). */
a2a_status engine_coordinator_call(engine *e, const char *method, const void *body, size_t len,
                                   int64_t timeout_ms, uint8_t **reply, size_t *reply_len,
                                   char *err, size_t errlen);

/* engine_sess_gone: the job of local session sess is gone (its connection closed); the
 * operations its calls are in and not done with fail (UNAVAILABLE naming its rank) for every
 * member, rather than complete with what it sent: its replacement knows nothing of them. */
struct xfer_sess;
void engine_sess_gone(engine *e, const struct xfer_sess *sess);

/* engine_forget drops name from the group cache (after it was destroyed). */
void engine_forget(engine *e, const char *name);

#endif
