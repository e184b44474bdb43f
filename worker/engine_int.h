/* engine_int.h - the engine's structures, shared by engine.c, op.c and link.c. */
#ifndef A2A_WORKER_ENGINE_INT_H
#define A2A_WORKER_ENGINE_INT_H

#include <nng/nng.h>
#include <pthread.h>
#include <sys/types.h>

#include "awake.h"
#include "common/frame.h"
#include "engine.h"
#include "group.h"
#include "op.h"
#include "server/rpc.h"
#include "sock.h"
#include "xfer.h"

/* A call whose deadline passed while a link still moves bytes of it (a peer trickling DATA, a
 * send stuck on a full socket) waits this long more, then closes that link to let go of it. */
#define ENGINE_PIN_GRACE_MS 500
/* A call whose deadline passes when every member has come and only bytes on their way are
 * missing (op_all_arrived) waits this long more for them before it fails, within the pin
 * grace, which still counts from the deadline: without it, a member whose deadline fell with
 * the last frames in flight failed while the others, a moment later, completed OK */
#define ENGINE_FLIGHT_GRACE_MS 250
/* how long a new job's first call waits for the others' frames when every member worker said
 * its ranks are idle after a failure (op_ask_number); at most half the call's timeout */
#define ENGINE_ASK_PATIENCE_MS 500
typedef struct eng_call eng_call;
typedef struct eng_peer eng_peer;

/* A control frame waiting on a peer's outgoing link. */
typedef struct eng_ctl {
    struct eng_ctl *next;
    size_t len;
    uint64_t gen; /* 0: whole frames, for any link; else the rest of link_flush's write on the
                   * link of that out_gen, dropped if that link is gone by its turn */
    uint8_t bytes[];
} eng_ctl;

/* A slice being streamed to a peer, one chunk at a time. */
typedef struct eng_send {
    struct eng_send *next;
    eng_call *call; /* the source rank's call */
    int64_t dst;    /* group rank */
    uint64_t total, sent;
    uint64_t addr; /* the slice in the source job's memory */
} eng_send;

/* One peer worker and its links: outgoing (ours, send-only) and incoming (theirs, receive-only). */
struct eng_peer {
    engine *e;
    int idx;
    const cfg_worker *w;
    wsock *out;
    int out_reset; /* link_peer_down closed out: the sender frees it, quietly */
    pthread_t sender;
    int started;       /* the sender thread runs */
    pthread_cond_t cv; /* work for the sender */
    eng_ctl *ctl_head, *ctl_tail;
    uint64_t out_gen; /* counts the links out has been (eng_ctl.gen) */
    eng_send *sends;  /* round robin */
    int64_t last_sent_ms;
    struct eng_call *chunk_call; /* the call whose memory the sender is writing out, or NULL */
    wsock *in;                   /* the current incoming link */
    uint64_t incarnation;        /* from its HELLO; 0 before */
    int failing;                 /* the sender is failing its queue */
    int writing; /* a thread writes on out (the sender, or link_flush): only it may */
    int lost;    /* link_peer_down ran since its last HELLO: what it had in flight has failed */
    int64_t out_up_ms; /* when out came up: a link of p's must come within ENGINE_LINK_DEAD_MS */
    int link_back;     /* p linked to us: have a link to p too, so that p hears our heartbeats */
    int retired;       /* the coordinator no longer lists p: not dialed, its links refused */
};

/* A pair of group ranks s -> d. */
typedef struct {
    int64_t s, d;
} eng_pair;

/* A local rank's call: the state machine's part (op_call, first), and the engine's. */
struct eng_call {
    op_call oc;
    const wire_a2av *a;
    xfer_sess *sess;
    int pins; /* transfers using its memory right now */
    /* Its thread sleeps on wake_seq (a private futex word) and, in a job channel's call, on
     * the channel's doorbell too (bell, a shared futex word the job rings with its next
     * request): engine_call_notify bumps wake_seq. A call answered early (engine_done) is not
     * notified: its thread, whose work is over, sleeps on until the job's next request rings
     * (one wake-up of the channel thread per operation instead of two). Under e->mtx. */
    uint32_t wake_seq;
    int sleeping;               /* its thread is in call_sleep */
    const uint32_t *bell;       /* NULL: none (an RPC call) */
    int left;                   /* answered early and gone from its operation (engine_run's tail) */
    struct eng_call *next_left; /* engine.left: answered early, to leave at engine_run's end */
    uint8_t *pre;     /* the eager slices' bytes, read before the call entered (or NULL) */
    uint64_t *pre_at; /* by group rank: where in pre, or UINT64_MAX: not eager */
    eng_pair *todo;   /* local pairs into this call, for its own thread to copy (n at most) */
    size_t ntodo;
    engine_done *done; /* the early answer, or NULL */
    int ask_local;     /* ask_where failed, but the rank is known here: number the call here */
};

/* engine_call_notify wakes c's thread (it sleeps on wake_seq); under e->mtx. */
void engine_call_notify(eng_call *c);

/* EC: the engine's call around a state machine's call. */
#define EC(c) ((eng_call *)(c))

/* Memory a job shares with us (a2a_buffer_alloc), mapped here too. */
typedef struct eng_map {
    struct eng_map *next;
    xfer_sess *sess;
    uint64_t addr, len; /* where the job has it */
    uint8_t *ptr;       /* where we have it */
    int refs;           /* transfers using it now */
    int dead;           /* being unmapped: no new users */
} eng_map;

/* ENGINE_PRIOR_MAX: records of the state file (which local ranks ever had a job on which
 * group name) kept and read back; past it, nothing more is recorded */
#define ENGINE_PRIOR_MAX 4096

/* A local world rank that had a job calling on a group of this name. */
typedef struct {
    char group[A2A_GROUP_NAME_MAX + 1];
    int64_t rank;
    int before; /* read from the state file: before this worker started */
} eng_prior;

struct engine {
    pthread_mutex_t mtx; /* everything below */
    const cfg_cluster *cfg;
    const secure *sec;      /* token and TLS, owned by the caller */
    const cfg_worker *self; /* &wtab[self_idx] */
    int self_idx;
    uint64_t incarnation;
    /* the workers: those of our file first, in its order, then those the coordinator listed
     * since (engine_peer_add), up to cap; an index never changes meaning, a worker that left is
     * retired in place (eng_peer.retired) */
    cfg_worker *wtab;
    eng_peer *peers; /* by worker index in wtab; peers[self_idx] unused */
    size_t npeers, cap;
    int64_t world_size;   /* hccl_world_group's size, as the coordinator last said (atomic) */
    uint64_t world_epoch; /* hccl_world_group's epoch whose workers we took (watch.c) */
    op_group *groups;
    op_env env;         /* names for the state machine's messages */
    const char **names; /* env.workers */
    early_store early;  /* frames of groups or epochs not resolved yet (group.h) */
    uint64_t late_data; /* DATA frames dropped: their call had gone, or never was here */
    int stopping;
    int run_depth;  /* engine_run calls in progress on the lock's holder */
    eng_call *left; /* calls answered early, to leave their operation at engine_run's end */
    int waitv;      /* futex_waitv works here (a call's thread can sleep on its channel) */
    awake *awake;   /* the keep-awake thread (awake.h), or NULL: off */
    /* the state file beside the local socket (SOCKET.ranks): the ranks that had a job on a group
     * survive a restart of this worker (op_ask_number: a new job of such a rank replaces one) */
    char prior_path[CFG_SOCKET_MAX + 8]; /* "" without a local socket */
    eng_prior *prior;
    size_t nprior;
    int prior_warned;
    int prior_partial; /* its last line has no newline */
    rpc_client *coord;
    int registered;
    wsock_listener *listener;
    int64_t poke_until; /* our own connection to the listener (handshake_set_tls) until then */
    pthread_t acceptor;
    char data_url[300];
    /* incoming links: a thread each for its handshake; then the link loop (link.c) reads the
     * tcp:// ones, all in one thread, and a link of another scheme keeps its thread */
    struct eng_in *ins;
    int loop_fd;   /* the loop's epoll, or -1: no loop (A2A_LINK_LOOP=0) */
    int loop_wake; /* its eventfd: a link handed over, or stopping */
    pthread_t loop;
    struct eng_in *loop_new; /* links handed to the loop, not taken yet */
    eng_map *maps;           /* shared job memory */
    pthread_cond_t map_cv;   /* a map's refs dropped */
    /* watch.c: the coordinator's epochs, polled */
    pthread_t watcher;
    int watching, watch_stop;
    pthread_cond_t watch_cv;
};

/* ---- engine.c: running the state machine's actions, and what links call up ---- */
/* engine_run runs o's actions in order (they may add more) and empties o; under e->mtx. */
void engine_run(engine *e, op_out *o);
/* engine_frame: a READY, SLICE or ABORT frame from peer p; under e->mtx. */
void engine_frame(engine *e, eng_peer *p, frame *f);
/* engine_frame_try is engine_frame; with may_wait, a frame of a group or epoch not installed
 * that the store of early frames has no room for is left as it is and 1 returned, for the
 * caller to resolve the group (engine_resolve_ahead) and offer it again (the link's receiver:
 * it reads no more of the link meanwhile). */
int engine_frame_try(engine *e, eng_peer *p, frame *f, int may_wait);
/* engine_resolve_ahead resolves group name (unlocking e->mtx meanwhile, within timeout_ms) and
 * installs it as the watch installs groups ahead of their calls (engine_group_ahead): 1 when
 * an epoch >= epoch of it is installed after, else 0. Under e->mtx. */
int engine_resolve_ahead(engine *e, const char *name, uint64_t epoch, int64_t timeout_ms);
/* engine_data_target: the call a DATA frame of len bytes from p is for, pinned, with *addr where
 * the bytes go in its job (NULL: drop them); under e->mtx. */
eng_call *engine_data_target(engine *e, eng_peer *p, const frame *f, uint64_t len, uint64_t *addr);
/* engine_data_landed unpins c and counts the bytes (rv: 0 written, > 0 errno, < 0 link lost). */
void engine_data_landed(engine *e, eng_call *c, const frame *f, uint64_t len, int rv);
/* engine_sent: c's slice to d left (rv 0) or could not be read (an errno); under e->mtx. */
void engine_sent(engine *e, eng_call *c, int64_t d, int rv);
/* engine_peer_lost fails what depends on peer p (why); under e->mtx. */
void engine_peer_lost(engine *e, eng_peer *p, const char *why);

/* engine_worker_index: the index of the worker called name (us included) that is not retired,
 * or -1; under e->mtx. */
int engine_worker_index(const engine *e, const char *name);
/* ENGINE_WORKERS_ADDED: how many workers the coordinator may list beyond our file's */
#define ENGINE_WORKERS_ADDED 256
/* engine_peer_add returns the index of the worker called name, adding it (url, data_url: where
 * the coordinator says it is) when it is new, or when it left and comes back elsewhere; an idle
 * worker that left and comes back at the same address is taken back. -1 with err when there is
 * no room or no thread. Under e->mtx. */
int engine_peer_add(engine *e, const char *name, const char *url, const char *data_url, char *err,
                    size_t errlen);
/* engine_workers_seen takes the workers of hccl_world_group as the coordinator resolved it
 * (world): new ones are added, those no longer listed retired; under e->mtx. */
void engine_workers_seen(engine *e, const wire_group *world);

/* ---- watch.c: marks cached groups stale whose epoch changed at the coordinator ---- */
#define ENGINE_WATCH_MS 250 /* how often the coordinator's groups are listed */
/* watch_start starts the watcher thread (0, or -1); watch_stop stops and joins it. */
int watch_start(engine *e);
void watch_stop(engine *e);

/* ---- link.c: peer links ---- */
int link_start(engine *e, char *err, size_t errlen);
void link_stop(engine *e);
/* link_peer_start starts p's sender thread (0, or -1); under e->mtx. */
int link_peer_start(engine *e, eng_peer *p);
/* link_peer_retire: the coordinator no longer lists p; what depends on it fails (why), its
 * links close, it is not dialed again; under e->mtx. */
void link_peer_retire(engine *e, eng_peer *p, const char *why);
/* link_send queues frame f with its payload (an eager SLICE: len <= FRAME_EAGER_MAX, or none)
 * to peer p; under e->mtx. 0, or -1 (out of memory, or a header over FRAME_HEADER_MAX). */
int link_send(engine *e, eng_peer *p, const frame *f, const uint8_t *payload, size_t len);
/* link_flush writes the queued control frames of every idle link from the calling thread
 * (no hand-off to the sender thread); under e->mtx, which it drops while writing. Only
 * threads that never read a link may call it (a reader blocked writing could deadlock). */
void link_flush(engine *e);
/* link_flush_begin: this thread calls link_flush before it drops e->mtx, so the frames it
 * queues until then need not wake the sender threads. */
void link_flush_begin(void);
/* link_send_slice queues a slice to peer p; under e->mtx. 0, or -1 (out of memory). */
int link_send_slice(engine *e, eng_peer *p, eng_call *c, int64_t dst, uint64_t total,
                    uint64_t addr);
/* link_drop_call removes c's queued slices from every peer; under e->mtx. */
void link_drop_call(engine *e, eng_call *c);
/* link_release_call closes the links whose threads move bytes of c right now, so that they let
 * go of its memory (a peer trickling DATA after c's deadline); under e->mtx. */
void link_release_call(engine *e, eng_call *c);
/* link_peer_down drops p's queues and fails what depends on p (engine_peer_lost); under
 * e->mtx. */
void link_peer_down(engine *e, eng_peer *p, const char *why);

/* ---- shm.c: shared job memory, under e->mtx ---- */
/* shm_get returns where [addr, addr+len) of sess's memory is mapped here (taking a reference
 * in *m), or NULL when it is not in a shared buffer. */
uint8_t *shm_get(engine *e, xfer_sess *sess, uint64_t addr, uint64_t len, eng_map **m);
/* shm_put drops the reference shm_get took; NULL is fine. */
void shm_put(engine *e, eng_map *m);
void shm_free_all(engine *e);

/* ---- engine.c ---- */
op_group *engine_group_find(engine *e, const char *name);
/* engine_group_offer installs the resolved group wg when it is newer than the cached group of
 * its name (whose operations in progress then fail, as at a call that resolves it) and returns
 * the current group; NULL with err when it cannot be built. Under e->mtx. */
op_group *engine_group_offer(engine *e, const wire_group *wg, char *err, size_t errlen);
/* engine_group_ahead installs the resolved group wg ahead of any call, as the watch does: when
 * no epoch of it is cached, or an older one in which nothing runs (no operation, no call asking
 * where it is); a busy one is left to its next call. 1 (installed, or left), 0 when wg has no
 * rank of this worker (nothing installed), -1 with err. Under e->mtx. */
int engine_group_ahead(engine *e, const wire_group *wg, char *err, size_t errlen);
/* engine_keep_early keeps f (of peer) until its group's epoch is installed, within the store's
 * bounds; past them it drops f (counted, logged), or with may_wait leaves it and returns 1.
 * Under e->mtx. */
int engine_keep_early(engine *e, int peer, frame *f, int may_wait);

#endif
