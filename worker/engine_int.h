/* engine_int.h - the engine's structures, shared by engine.c, op.c and link.c. */
#ifndef A2A_WORKER_ENGINE_INT_H
#define A2A_WORKER_ENGINE_INT_H

#include <nng/nng.h>
#include <pthread.h>
#include <sys/types.h>

#include "common/frame.h"
#include "engine.h"
#include "group.h"
#include "server/rpc.h"
#include "sock.h"
#include "xfer.h"

/* A call whose deadline passed while a link still moves bytes of it (a peer trickling DATA, a
 * send stuck on a full socket) waits this long more, then closes that link to let go of it. */
#define ENGINE_PIN_GRACE_MS 500
/* Eager slices: at most FRAME_EAGER_MAX bytes, and at most ENGINE_EAGER_OP bytes for a whole
 * operation of n ranks at a receiver (n * n * limit), so what a worker keeps for ranks that
 * have not arrived yet stays bounded (engine_eager_max). */
#define ENGINE_EAGER_OP (4u << 20)

typedef struct eng_call eng_call;
typedef struct eng_op eng_op;
typedef struct eng_group eng_group;
typedef struct eng_peer eng_peer;

/* A control frame waiting on a peer's outgoing link. */
typedef struct eng_ctl {
    struct eng_ctl *next;
    eng_op *op; /* NULL for frames that belong to no operation */
    size_t len;
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
    eng_send *sends; /* round robin */
    int64_t last_sent_ms;
    struct eng_call *chunk_call; /* the call whose memory the sender is writing out, or NULL */
    wsock *in;                   /* the current incoming link */
    uint64_t incarnation;        /* from its HELLO; 0 before */
    int failing;                 /* the sender is failing its queue */
    int writing; /* a thread writes on out (the sender, or link_flush): only it may */
    int lost;    /* link_peer_down ran since its last HELLO: what it had in flight has failed */
};

/* Receive state of one pair s -> local d. */
typedef struct {
    int64_t expect; /* d's recv_count from s */
    int64_t count;  /* what s announced */
    int have_slice;
    uint64_t bytes; /* received so far */
    int done;
    uint8_t *stash; /* an eager slice that came before d: its bytes (malloc'd) */
} eng_rx;

/* Send state of one pair local s -> d. */
typedef struct {
    int ready;      /* READY(d) arrived (or d is local and arrived) */
    int64_t expect; /* d's recv_count from s */
    int started;
    int eager; /* sent with its SLICE; done once READY confirms the count */
    int done;
} eng_tx;

/* A pair of group ranks s -> d. */
typedef struct {
    int64_t s, d;
} eng_pair;

struct eng_call {
    eng_op *op;
    uint64_t num; /* its operation number (group.h) */
    int64_t grank;
    int lidx;
    const wire_a2av *a;
    xfer_sess *sess;
    size_t esize;
    size_t sends_left, recvs_left;
    a2a_status status;
    char msg[1024];
    int finished; /* the handler has given up on it: touch its memory no more */
    int pins;     /* transfers using its memory right now */
    pthread_cond_t cv;
    uint8_t *pre;     /* the eager slices' bytes, read before the call entered (or NULL) */
    uint64_t *pre_at; /* by group rank: where in pre, or UINT64_MAX: not eager */
    eng_pair *todo;   /* local pairs into this call, for its own thread to copy (n at most) */
    size_t ntodo;
    engine_done *done; /* the early answer, or NULL */
};

struct eng_op {
    eng_op *next;
    eng_group *g;
    uint64_t num;
    eng_call **calls;     /* by group rank; local ranks only */
    eng_rx *rx;           /* [lidx(d) * n + s] */
    eng_tx *tx;           /* [lidx(s) * n + d] */
    size_t arrived, left; /* local calls that came, and that went */
    uint64_t resync;      /* its ABORT's resync (numbers differ), or 0 */
    a2a_status status;
    char msg[1024];
};

struct eng_group {
    eng_group *next;
    char name[A2A_GROUP_NAME_MAX + 1];
    uint64_t epoch;
    size_t n;
    int64_t *world; /* world rank of each group rank */
    int *peer;      /* its worker: -1 for us, else a peer index */
    int *lidx;      /* its local index, or -1 */
    size_t nlocal;
    group_seq seq; /* operation numbers, failures (group.h) */
    eng_op *ops;
    size_t nops;
    int stale;   /* resolve again before the next operation */
    int retired; /* replaced by a newer epoch: freed when its last operation goes */
};

/* Memory a job shares with us (a2a_buffer_alloc), mapped here too. */
typedef struct eng_map {
    struct eng_map *next;
    xfer_sess *sess;
    uint64_t addr, len; /* where the job has it */
    uint8_t *ptr;       /* where we have it */
    int refs;           /* transfers using it now */
    int dead;           /* being unmapped: no new users */
} eng_map;

struct engine {
    pthread_mutex_t mtx; /* everything below */
    const cfg_cluster *cfg;
    const secure *sec; /* token and TLS, owned by the caller */
    const cfg_worker *self;
    uint64_t incarnation;
    eng_peer *peers; /* by worker index in cfg; peers[self] unused */
    size_t npeers;
    eng_group *groups;
    early_store early;  /* frames of groups or epochs not resolved yet (group.h) */
    uint64_t late_data; /* DATA frames dropped: their call had gone, or never was here */
    int stopping;
    rpc_client *coord;
    int registered;
    wsock_listener *listener;
    pthread_t acceptor;
    char data_url[300];
    /* incoming links: one thread each */
    struct eng_in *ins;
    eng_map *maps;         /* shared job memory */
    pthread_cond_t map_cv; /* a map's refs dropped */
    /* watch.c: the coordinator's epochs, polled */
    pthread_t watcher;
    int watching, watch_stop;
    pthread_cond_t watch_cv;
};

/* ---- watch.c: marks cached groups stale whose epoch changed at the coordinator ---- */
#define ENGINE_WATCH_MS 250 /* how often the coordinator's groups are listed */
/* watch_start starts the watcher thread (0, or -1); watch_stop stops and joins it. */
int watch_start(engine *e);
void watch_stop(engine *e);

/* ---- op.c: operations, under e->mtx ---- */
/* op_get returns operation num of g, creating it when asked (NULL: out of memory). */
eng_op *op_get(engine *e, eng_group *g, uint64_t num, int create);
void op_fail(engine *e, eng_op *op, a2a_status st, int broadcast, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void op_pair_ready(engine *e, eng_op *op, int64_t s, int64_t d);
int op_pair_start(engine *e, eng_op *op, int64_t s, int64_t d);
void op_on_frame(engine *e, eng_peer *p, const frame *f);
/* op_data_target checks a DATA frame of len bytes and pins the call it is for, returning it
 * with *addr, where the bytes go in its job (NULL: drop them). */
eng_call *op_data_target(engine *e, eng_peer *p, const frame *f, size_t len, uint64_t *addr);
/* op_send_eager sends slice s -> d (remote, small) with its SLICE at once; under e->mtx. */
void op_send_eager(engine *e, eng_op *op, int64_t s, int64_t d);
/* op_take_stash lands the eager slices that came for local call c before it; under e->mtx. */
void op_take_stash(engine *e, eng_op *op, eng_call *c);
/* op_data_landed unpins c and counts the bytes (rv: 0 written, > 0 errno, < 0 link lost). */
void op_data_landed(engine *e, eng_call *c, const frame *f, size_t len, int rv);
void op_check_done(eng_op *op, eng_call *c);
/* op_release: a local call left op (which may be freed now, and its group if retired). */
void op_release(engine *e, eng_op *op);
/* group_sweep frees g's operations that nobody needs any more (and g itself when it is retired
 * and has none left: returns 1 then). */
int group_sweep(engine *e, eng_group *g);
void group_fail_all(engine *e, eng_group *g, a2a_status st, const char *why);
/* op_fail_num fails operation num of g, which need not exist here (then its history records it),
 * with an ABORT to the members when broadcast is set. */
void op_fail_num(engine *e, eng_group *g, uint64_t num, a2a_status st, int broadcast,
                 const char *msg);
/* op_fail_memory fails op because group rank grank's memory could not be read or written (err:
 * an errno): UNAVAILABLE when its job has exited, else INVALID_ARGUMENT. */
void op_fail_memory(engine *e, eng_op *op, int64_t grank, int write, int err);
/* group_free frees a group that no operation uses any more. */
void group_free(eng_group *g);

/* ---- link.c: peer links ---- */
int link_start(engine *e, char *err, size_t errlen);
void link_stop(engine *e);
/* link_send_ctl queues a frame (header only) to peer p; under e->mtx. */
void link_send_ctl(engine *e, eng_peer *p, const frame *f, eng_op *op);
/* link_send_eager queues a SLICE frame with its payload (len <= FRAME_EAGER_MAX). */
void link_send_eager(engine *e, eng_peer *p, const frame *f, eng_op *op, const uint8_t *payload,
                     size_t len);
/* link_flush writes the queued control frames of every idle link from the calling thread
 * (no hand-off to the sender thread); under e->mtx, which it drops while writing. Only
 * threads that never read a link may call it (a reader blocked writing could deadlock). */
void link_flush(engine *e);
/* link_flush_begin: this thread calls link_flush before it drops e->mtx, so the frames it
 * queues until then need not wake the sender threads. */
void link_flush_begin(void);
/* link_send_slice queues a slice to peer p; under e->mtx. */
void link_send_slice(engine *e, eng_peer *p, eng_call *c, int64_t dst, uint64_t total,
                     uint64_t addr);
/* link_drop_call removes c's queued slices from every peer; under e->mtx. */
void link_drop_call(engine *e, eng_call *c);
/* link_release_call closes the links whose threads move bytes of c right now, so that they let
 * go of its memory (a peer trickling DATA after c's deadline); under e->mtx. */
void link_release_call(engine *e, eng_call *c);
/* link_peer_down fails what depends on p; under e->mtx. */
void link_peer_down(engine *e, eng_peer *p, const char *why);

/* ---- shm.c: shared job memory, under e->mtx ---- */
/* shm_get returns where [addr, addr+len) of sess's memory is mapped here (taking a reference
 * in *m), or NULL when it is not in a shared buffer. */
uint8_t *shm_get(engine *e, xfer_sess *sess, uint64_t addr, uint64_t len, eng_map **m);
/* shm_put drops the reference shm_get took; NULL is fine. */
void shm_put(engine *e, eng_map *m);
void shm_free_all(engine *e);

/* ---- engine.c ---- */
eng_group *engine_group_find(engine *e, const char *name);
/* engine_eager_max returns the largest slice (bytes) sent eagerly in a group of n ranks. */
uint64_t engine_eager_max(size_t n);
/* engine_keep_early keeps f (of peer) until its group's epoch is installed, within the store's
 * bounds, and asks for the group to be resolved; under e->mtx. */
void engine_keep_early(engine *e, int peer, frame *f);

#endif
