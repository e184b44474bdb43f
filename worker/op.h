/*
 * op.h - the operations of a group at one worker, as a pure state machine.
 *
 * Events come in as calls (a local rank arrives; a READY, SLICE, eager
 * SLICE or ABORT frame; a DATA frame's target and its landing; a slice sent
 * or copied; a deadline; a peer worker lost), each under the engine's lock.
 * What must happen outside (frames to send, slices to stream, local copies,
 * bytes to land in a job's memory, calls to wake) comes out as actions in an
 * op_out, which the engine runs in order after the transition, still under
 * its lock, feeding results back as events (op_landed, op_sent, op_copied).
 * No I/O, no locks, no clock: time comes as arguments. op.c includes only
 * a2a.h, common/, group.h and this header (lint.pure_includes checks it).
 *
 * Pair states (one enum per pair and direction):
 *
 *   send side, local s -> d (op_tx.state)
 *     TX_WAIT      nothing known of d          READY(d)            -> TX_READY
 *                                              s arrives, eager    -> TX_EAGER
 *     TX_READY     d's count known             s arrives, counts = -> TX_MOVING (SLICE + stream,
 *                                                                     or local copy, or done at 0)
 *                                              counts differ       -> COUNT_MISMATCH (op fails)
 *     TX_EAGER     SLICE + bytes sent early    READY(d), counts =  -> TX_DONE
 *     TX_MOVING    bytes on their way          op_sent / op_copied -> TX_DONE
 *     TX_DONE
 *
 *   receive side, s -> local d (op_rx.state)
 *     RX_WAIT      nothing from s              eager SLICE, d away -> RX_STASHED
 *                                              eager SLICE, d here -> RX_LANDING
 *                                              SLICE(count) = exp. -> RX_DATA (RX_DONE at 0)
 *     RX_STASHED   eager bytes kept for d      d arrives           -> RX_LANDING
 *     RX_LANDING   bytes being written         op_landed           -> RX_DONE
 *     RX_DATA      announced, DATA coming      op_data_landed, all -> RX_DONE
 *     RX_DONE
 *
 * Count discovery (op_call.discover: the receiving call gave no counts): d's READY carries
 * FRAME_DISCOVER for every source; a sender answers a READY(FRAME_DISCOVER) with its count
 * alone (SLICE, no payload: TX_ANNOUNCED) unless its slice went eagerly; once d knows every
 * count (local senders here, eager SLICEs kept, announced counts) it places the slices packed
 * in group-rank order within its receive buffer (or fails the operation RESOURCE_EXHAUSTED for
 * everyone when they do not fit, before anything is written), lands the eager ones, has local
 * pairs copied and sends a second READY with the real counts to every remote sender (the go
 * of an announced slice, the confirmation of an eager one: a pair to a discoverer is done only
 * then, so that a receiver whose slices do not fit fails the operation for every member):
 *     TX_ANNOUNCED count sent to a discoverer  READY(count)        -> TX_READY (as above)
 *     RX_COUNTED   count known, no data yet    SLICE(count) after d placed -> RX_DATA
 *     RX_STASHED   (discovery) eager bytes kept until d has placed its slices
 *
 * Rows (groups of at most FRAME_ROW_MAX ranks): every READY also carries its rank's send
 * counts to every group rank and, when it discovers, its capacity (the first READY of each
 * call, sent as it arrives). So one hop after the last rank arrived every worker knows every
 * receiver's total, as it knows every READY with counts given: it judges once (op_op.judged)
 * whether every discoverer's slices fit, and fails the operation RESOURCE_EXHAUSTED naming the
 * lowest group rank that overflows (the same message at every worker) or else completes its
 * eager pairs to discoverers at once (TX_EAGER -> TX_DONE, without the second READY) and lets
 * its local discoverers place (they learn remote counts from the rows, so they do not wait for
 * the announced counts either). A slice to a remote discoverer is not announced: it streams at
 * the judgement (TX_READY -> TX_MOVING, rows_stream), its SLICE saying where it goes in the
 * discoverer's buffer (place: what the ranks before it send that rank, op_rows.before), and no
 * go is sent. The receiver takes it whether it has placed or not (RX_WAIT -> RX_DATA at the
 * SLICE's place, op_rx.at, rows_slice), and checks the place against its capacity and, when it
 * places, against its own sum: a place past the buffer or elsewhere fails the operation.
 * A first READY without a row (a bigger group, or a worker that sends none) turns rows off for
 * that operation: everything then goes as above (a pair that waited for the judgement is
 * announced then). With rows, to a remote discoverer d:
 *     TX_READY     READY(FRAME_DISCOVER) came  judged (every row)  -> TX_MOVING (SLICE + place,
 *                                                                     stream; no go awaited)
 *     TX_EAGER     sent early                  judged              -> TX_DONE
 *     RX_WAIT      (d discovers)               SLICE(count, place) -> RX_DATA (checked: place
 *                                                                     in d's buffer, and = d's
 *                                                                     own sum once d places)
 *
 * Probes (a late call must not complete with a member's data that member gave up on). A remote
 * member s's READY says how long its call had left (ttl): past its expiry here (receipt + ttl)
 * s has failed the operation for sure, and a call that arrives then fails at once (op_arrive).
 * Just before it, s may have failed already at its own worker, its ABORT on the way, and s's
 * eager slice, kept here, would let a call that is really of the application's next round
 * complete OK with s's data of the round s gave up (a new job numbering its call one behind
 * the others after a fault). So a call that arrives within a guard of s's expiry
 * (op_probe_guard_ms: a tenth of s's ttl, at least OP_PROBE_GUARD_MIN_MS, more than a READY's
 * one-way delay on any link that is not broken) sends PROBE(s, d) after its READY, and
 * completes only with ALIVE(s, d) from s's worker: s's call was in the operation (or had
 * completed it) when the PROBE came, after d's READY. A worker whose operation failed answers
 * ABORT, and one where s has not come yet keeps the PROBE (op_tx.probed) and answers as s comes
 * or the operation fails. Calls that arrive close together never probe; a late one pays one
 * round trip. Per pair (op_rx.probe): 0 none, 1 PROBE sent, 2 ALIVE came.
 *
 * Any state: the operation fails (ABORT, deadline, peer lost, mismatch,
 * memory) -> every pair stops where it is; calls are woken and answered with
 * the operation's status. A pair never goes back; a frame for a pair in a
 * state that does not expect it is ignored (duplicates) or fails the
 * operation (DATA out of order or beyond the count).
 */
#ifndef A2A_WORKER_OP_H
#define A2A_WORKER_OP_H

#include <stddef.h>
#include <stdint.h>

#include "a2a.h"
#include "common/frame.h"
#include "group.h"

/* Eager slices: at most FRAME_EAGER_MAX bytes, and at most OP_EAGER_TOTAL bytes for a whole
 * operation of n ranks at a receiver (n * n * limit), so what a worker keeps for ranks that
 * have not arrived yet stays bounded (op_eager_max). */
#define OP_EAGER_TOTAL (4u << 20)
/* The least guard before a member's expiry within which an arriving call probes (op.h). */
#define OP_PROBE_GUARD_MIN_MS 10

typedef struct op_group op_group;
typedef struct op_op op_op;

/* Names for messages: this worker, and every worker by index (peer numbers index it). */
typedef struct {
    const char *self;
    const char *const *workers;
    size_t nworkers;
    int probe_all; /* every call probes every remote member (tests: a model without a clock,
                    * where any call may come within the guard) */
} op_env;

/* What the state machine knows of a local rank's call. The engine embeds it first in its own
 * call structure. */
typedef struct op_call {
    op_op *op;
    uint64_t num;
    int64_t grank;
    int lidx;
    int32_t dtype;
    size_t esize;
    int64_t *counts;        /* 4n elements: send counts, send displs, recv counts, recv displs (with
                               discovery, the receive half is written when d places its slices) */
    const uint8_t *pre;     /* its eager slices' bytes, read before it entered (or NULL) */
    const uint64_t *pre_at; /* by group rank: where in pre, or UINT64_MAX: not eager */
    int64_t self_copied;    /* grank + 1 when the job copied its own slice itself */
    size_t sends_left, recvs_left;
    size_t probes_left; /* PROBEs whose ALIVE has not come (op.h, "Probes") */
    int finished;       /* its thread has given up on it: no new work for it */
    int discover;       /* count discovery: the receive half of counts is ARGS_DISCOVER */
    uint64_t recv_cap;  /* discovery: the receive buffer's capacity, in elements */
    size_t unknown;     /* discovery: sources whose count is not known yet */
    int placed;         /* discovery: the receive counts and displacements are written */
    /* asking the member workers where the group is (op_ask), before it has a number */
    int64_t ttl_ms;    /* ms its call has left as it arrives (READY's ttl; 0: no bound) */
    int64_t arrive_ms; /* when it arrives, in the engine's clock (0: not told): a sender whose
                        * READY said it would have failed by then failed this operation */
    uint64_t earlier;  /* calls its job made on the group before this one, none numbered (they
                        * failed before: liba2a sends op_next -1 - earlier) */
    struct op_call *ask_next; /* in its group's list of asking calls */
    int asking;               /* 1 while answers are awaited */
    uint64_t ask_token;
    size_t ask_left;   /* answers still awaited */
    uint8_t *ask_wait; /* by peer: 1 while its answer is awaited */
    size_t ask_nw;     /* the peers ask_wait has room for (workers may join meanwhile) */
    int64_t ask_num;   /* the highest number heard (-1: none) */
    int ask_idle;      /* every answer of ask_num said idle (group_seq_where) */
    int64_t ask_busy;  /* the highest number of an answer whose worker has a rank in that
                        * operation right now (HERE bit 2; -1: none) */
    int ask_heard;     /* a member worker had frames of this rank before: a replacement */
    int ask_joined;    /* a member worker saw this rank join the group (op_group.joined) */
    a2a_status ask_st; /* not A2A_OK: the ask failed, ask_msg says why */
    int ask_lost;      /* the ask failed because a member worker was lost (op_peer_lost) */
    char ask_msg[512];
} op_call;

typedef enum { TX_WAIT, TX_READY, TX_EAGER, TX_MOVING, TX_DONE, TX_ANNOUNCED } op_tx_state;
typedef enum { RX_WAIT, RX_STASHED, RX_LANDING, RX_DATA, RX_DONE, RX_COUNTED } op_rx_state;

typedef struct {
    op_tx_state state;
    int ready;      /* READY(d) came (or d is local and here) */
    int64_t expect; /* d's recv_count from s, once ready */
    int heard;      /* a READY of d came (ready is 0 again while a discoverer d places) */
    int probed;     /* d's worker asked whether s is in the operation before s came (PROBE) */
} op_tx;

typedef struct {
    op_rx_state state;
    int64_t expect; /* d's recv_count from s, once d is here */
    int64_t count;  /* what s announced */
    uint64_t bytes; /* received so far */
    uint8_t *stash; /* RX_STASHED: the eager bytes (malloc'd) */
    size_t stash_len;
    int known;   /* discovery: count is s's */
    int64_t row; /* rows: remote s's count to d, once its READY row came (op_rows.in[s]) */
    int has_at;  /* discovery with rows: s streamed before d placed, its SLICE said where */
    int64_t at;  /* with has_at: that place, in elements (checked when d places) */
    int probe;   /* 0; 1: PROBE(s, d) sent, ALIVE awaited; 2: ALIVE came */
} op_rx;

/* What the READY rows told of an operation (op.h, "Count discovery"; groups of at most
 * FRAME_ROW_MAX ranks), by group rank. */
typedef struct {
    size_t seen;      /* ranks whose row is known (remote: their READY; local: their arrival) */
    uint8_t *in;      /* its row is known */
    uint64_t *total;  /* as a receiver: the elements every rank known so far sends it */
    int64_t *cap;     /* as a receiver: its capacity when it discovers its counts, else -1 */
    int32_t *dtype;   /* as a receiver */
    uint64_t *before; /* [lidx(s) * n + d]: what the ranks before local s send d (known so far):
                       * where s's slice goes in a discoverer d's buffer (the SLICE's place) */
} op_rows;

struct op_op {
    op_op *next;
    op_group *g;
    uint64_t num;
    op_call **calls;      /* by group rank; local ranks only */
    op_rx *rx;            /* [lidx(d) * n + s] */
    op_tx *tx;            /* [lidx(s) * n + d] */
    size_t arrived, left; /* local calls that came, and that went */
    uint64_t resync;      /* its ABORT's resync (numbers differ), or 0 */
    int64_t *expire;      /* by group rank: when its call has failed for sure (READY), or 0 */
    int64_t *guard;       /* by group rank: from when a call arriving probes it (READY), or 0 */
    uint8_t *came;        /* by group rank: its local call entered (it may have left since) */
    int rows;             /* READYs carry rows (n <= FRAME_ROW_MAX, and every READY had one) */
    int judged;           /* rows: every rank's row is known and every discoverer's slices fit */
    op_rows rw;
    a2a_status status;
    char msg[1024];
};

struct op_group {
    op_group *next;
    const op_env *env;
    char name[A2A_GROUP_NAME_MAX + 1];
    uint64_t epoch;
    size_t n;
    int64_t *world; /* world rank of each group rank */
    int *peer;      /* its worker: -1 for us, else a peer index */
    int *lidx;      /* its local index, or -1 */
    size_t nlocal;
    group_seq seq; /* operation numbers, failures (group.h) */
    op_op *ops;
    size_t nops;
    int stale;        /* resolve again before the next operation */
    int retired;      /* replaced by a newer epoch: freed when its last operation and ask go */
    op_call *asks;    /* calls asking where the group is (op_ask) */
    uint8_t *heard;   /* by group rank: a frame of that rank came here (NULL: none yet) */
    uint8_t *joined;  /* by group rank: its world rank was not a member of the epoch installed
                       * before, here (a host added, the group created again with it), nor
                       * heard since (NULL: none) */
    uint64_t ask_seq; /* the last ask's token */
};

typedef enum {
    OPA_SEND,   /* frame f to worker peer; payload (an eager SLICE) or none */
    OPA_STREAM, /* stream call's slice to group rank d over peer: len bytes at send offset off */
    OPA_COPY,   /* local pair s -> d: the receiving call's thread copies it (then op_copied) */
    OPA_LAND,   /* write len eager bytes from s at receive offset off of call (then op_landed) */
    OPA_WAKE,   /* call's operation failed, or the call may be complete: wake its thread */
    OPA_DROP,   /* the operation failed: drop call's slices still queued on links */
} op_act_type;

typedef struct {
    op_act_type type;
    int peer;
    op_op *op;
    op_call *call;
    int64_t s, d;
    uint64_t off, len;
    frame f;                /* OPA_SEND; f.srcs and f.counts belong to the op_out */
    const uint8_t *payload; /* OPA_SEND: an eager SLICE's bytes (the call's), plen of them */
    size_t plen;
    uint8_t *bytes; /* OPA_LAND: belongs to the op_out */
} op_act;

/* The actions of one or more transitions, in order. */
typedef struct {
    op_act *a;
    size_t n, cap;
    size_t oom; /* actions lost for want of memory (their operations failed) */
} op_out;

void op_out_init(op_out *o);
/* op_out_reset frees what the actions own and empties o. */
void op_out_reset(op_out *o);
void op_out_fini(op_out *o);

/* op_probe_guard_ms returns how long before a member's expiry an arriving call probes it, for a
 * member whose READY gave ttl_ms. */
int64_t op_probe_guard_ms(int64_t ttl_ms);

/* op_eager_max returns the largest slice (bytes) sent eagerly in a group of n ranks. */
uint64_t op_eager_max(size_t n);

/* op_get returns operation num of g, creating it when asked (NULL: out of memory, or no local
 * rank in g). */
op_op *op_get(op_group *g, uint64_t num, int create);

/* op_fail fails op with st (nothing when it failed already); broadcast: ABORT to the members. */
void op_fail(op_out *o, op_op *op, a2a_status st, int broadcast, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* op_fail_num fails operation num of g, which need not exist here (then its history records
 * it), with an ABORT to the members when broadcast is set. */
void op_fail_num(op_out *o, op_group *g, uint64_t num, a2a_status st, int broadcast,
                 const char *msg);
/* op_fail_memory: group rank grank's memory could not be read or written (err: an errno):
 * UNAVAILABLE when its job has exited, RESOURCE_EXHAUSTED for ENOMEM, else INVALID_ARGUMENT. */
void op_fail_memory(op_out *o, op_op *op, int64_t grank, int write, int err);
/* group_fail_all fails every operation of g (no ABORT). */
void group_fail_all(op_out *o, op_group *g, a2a_status st, const char *why);
/* op_peer_lost: worker peer is unavailable (why): g is stale and its operations fail, when
 * peer hosts a member. */
void op_peer_lost(op_out *o, op_group *g, int peer, const char *why);

/* op_arrive enters local call c into op (c->op == op), announcing what it expects (READY),
 * sending its eager slices and starting every pair that can start. */
void op_arrive(op_out *o, op_op *op, op_call *c);
/* op_deadline fails op: c's deadline (timeout_ms after it came) passed. */
void op_deadline(op_out *o, op_op *op, const op_call *c, int64_t timeout_ms);
/* op_leave: c left op; frees what nobody needs any more. 1 when g itself was freed (retired). */
int op_leave(op_op *op, op_call *c);

/* op_frame handles a READY, SLICE (eager or not), ABORT, PROBE or ALIVE frame of g's epoch or an
 * older one, or
 * a WHERE or HERE of any epoch (op_where),
 * from worker peer; source: the peer's incarnation, told apart by peer (group_seq_differ).
 * Takes f->payload when it keeps it. */
void op_frame(op_out *o, op_group *g, int peer, uint64_t source, frame *f);

/* op_data_target checks a DATA frame of len bytes from peer for g: the call it is for, with
 * *off, where in its receive buffer (bytes) they go; NULL: drop them (counted by the caller). */
op_call *op_data_target(op_out *o, op_group *g, int peer, const frame *f, uint64_t len,
                        uint64_t *off);
/* op_data_landed counts len bytes of s's DATA written into c (rv: 0 written, > 0 errno of the
 * write, < 0 the link broke, which the peer's loss reports). */
void op_data_landed(op_out *o, op_call *c, int64_t s, uint64_t len, int rv);
/* op_landed: the OPA_LAND of s's eager slice into c ended (rv: 0, or an errno). */
void op_landed(op_out *o, op_call *c, int64_t s, int rv);
/* op_sent: c's slice to d left (rv 0), or its memory could not be read (rv an errno). */
void op_sent(op_out *o, op_call *c, int64_t d, int rv);
/* op_copied: local pair s -> d was copied (rv 0) or not (rv an errno of the side wr: 1 the
 * write, 0 the read). */
void op_copied(op_out *o, op_op *op, int64_t s, int64_t d, int rv, int wr);
/* op_call_done: every pair of c is done. */
int op_call_done(const op_call *c);

/*
 * Asking where the group is. The first call of a new job on a rank has no number of its own.
 * On a worker that knows no number of the rank (it started, or restarted, since that rank's
 * last call), guessing 0 would put it one or more operations away from the others' calls, and
 * ranks that retry in lockstep would stay apart; on one that does, the rank's next number there
 * may be past the operation the others are still in (it failed here, as they will), or before
 * the one they went on to. It asks every member worker instead
 * (FRAME_WHERE) and takes the highest of their answers (FRAME_HERE, group_seq_where) and its
 * own. op_ask starts that for c (lidx set, not numbered yet): 0 when no other worker hosts a
 * member (number it now, by op_ask_number), 1 when asking (OPA_WAKE on c when the last
 * answer came or the ask failed: ask_st), -1 out of memory.
 */
int op_ask(op_out *o, op_group *g, op_call *c);
/* op_ask_fail ends c's ask with st and msg (its deadline, the group retired); nothing when it
 * ended already. */
void op_ask_fail(op_out *o, op_call *c, a2a_status st, const char *msg);
/*
 * op_ask_number returns the number c takes after its ask ended well. When no member worker
 * ever had a frame of c's rank, this is the rank's first job: its k-th call is operation k,
 * so c->earlier (0 for its first call; a latecomer to that operation gets its failure). Else c
 * replaces a job the others knew: the highest answer, or this worker's own (group_seq_where), or 0
 * when nobody knows. *wait is 1 when every worker that gave it said idle (its ranks failed the
 * operation before and are not in this one): c then takes it only if a peer's frame for it comes
 * (op_get(g, number, 0) exists) within ENGINE_ASK_PATIENCE_MS, the others calling it; else it is
 * late to the one before (number - 1), which the others failed without it while they wait for it
 * outside a2a. But when another worker answered number - 1 with a rank of it still in that
 * operation (HERE bit 2; or a rank of this worker is), c takes number - 1 at once, *wait 0: a call
 * of the rank arriving now is that operation's, which cannot complete anyway (it failed where
 * number came from), and in lockstep the others wait in it for this rank's call of the same round
 * (campaign seed 22051: a new job took the next number, while the others were still in the
 * operation its own worker had failed at an epoch change, and stayed one ahead for good).
 */
uint64_t op_ask_number(const op_group *g, const op_call *c, int *wait);
/* op_ask_take returns the number c takes: n from op_ask_number, less one when late (the
 * patience above ran out without a frame of n). Never a number an earlier job of the rank took
 * here, unless that operation failed: the call is then its latecomer, as the others were. */
uint64_t op_ask_take(const op_group *g, const op_call *c, uint64_t n, int late);
/*
 * op_ask_again: 1 when c, late to n (the patience ran out without a frame of it), should ask
 * the member workers again before taking n - 1: it replaces a job that went away in n - 1 here
 * (orphaned), and would take that operation as its latecomer, which is right when the others
 * wait outside a2a for this rank to redo that round (lockstep: a replacement that read the
 * barrier before their call of the round failed), wrong when they called n meanwhile and it
 * failed there before any frame of it left (a group change): they did not wait, and this
 * call's round is n (the campaign's stuck window of seed 7127, RELIABILITY.md). Only for an
 * orphan's replacement: a first job late to what the others failed without it stays its
 * latecomer whatever they did since, or its calls would meet their next ones.
 */
int op_ask_again(const op_group *g, const op_call *c, uint64_t n, int late);
/* op_ask_moved: the answers of that second ask (op_ask again) say the others called first
 * meanwhile: a worker's highest number is past it, or a rank of it is in it now (HERE bit 2).
 * Then c takes first (op_ask_take with late 0). */
int op_ask_moved(const op_call *c, uint64_t first);
/* op_ask_end takes c out of g's asks (once its ask ended, or to give up); 1 when g itself was
 * freed (retired, nothing left in it). */
int op_ask_end(op_group *g, op_call *c);
/* op_where handles a WHERE (answered with HERE) or HERE frame from peer, of any epoch; g: the
 * group of that name here, or NULL when this worker has not resolved it (the answer is -1). */
void op_where(op_out *o, op_group *g, int peer, const frame *f);
/* op_group_carry takes over from old (the same group's previous epoch) which ranks' frames
 * came here, by world rank, and notes which ranks joined (not in old, or joined in old and not
 * heard); 0, or -1 out of memory. */
int op_group_carry(op_group *g, const op_group *old);

/* op_orphan returns the first operation of g, not failed yet, in which a call of group rank r
 * (any: r < 0) other than keep is neither done nor finished and gone(call, arg) says its job
 * is gone (gone NULL: any such call), with that call's group rank in *grank; NULL when there is
 * none. Failing each in turn (op_fail) fails a dead job's operations (engine.c orphans_fail). */
op_op *op_orphan(op_group *g, int64_t r, const op_call *keep,
                 int (*gone)(const op_call *c, const void *arg), const void *arg, size_t *grank);

/* op_all_arrived reports whether every member of c's operation has come (local calls entered,
 * remote members' READYs here), none is probed without an answer, and the operation has not
 * failed: what c still waits for is bytes already on their way (the engine's deadline grace). */
int op_all_arrived(const op_call *c);
/* op_missing writes the group ranks c still waits for. */
void op_missing(const op_call *c, char *buf, size_t len);

/* group_sweep frees g's operations that nobody needs any more (and g itself when it is retired
 * and has none left: returns 1 then). */
int group_sweep(op_group *g);
/* group_free frees a group that no operation uses any more. */
void group_free(op_group *g);

#endif
