/*
 * group.h - which operation a call of a group is, at one worker: the numbering
 * rules (docs/ARCHITECTURE.md, "Operation identity") as a pure state machine.
 *
 * An operation is named by (group, epoch, number) on every frame. Numbers are
 * per group and continuous across epochs; every job keeps the next number of
 * each group it calls and sends it with each call, so a restarted worker
 * learns them back from its jobs, and each worker keeps the next number of its
 * local ranks for a job that starts anew on a rank. Nothing here does I/O,
 * takes a lock or reads a clock: time comes in as an argument, and the caller
 * (worker/engine.c) runs what the functions decide.
 *
 * Includes only a2a.h, common/ and its own header.
 */
#ifndef A2A_WORKER_GROUP_H
#define A2A_WORKER_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "a2a.h"
#include "common/frame.h"

#define GROUP_HISTORY 64 /* failed operations remembered per group */
#define GROUP_WINDOW 4   /* how far ahead of its slowest local rank a group keeps operations */
#define GROUP_MSG_MAX 1024
#define GROUP_DIFFER 16 /* the numbers of frames that made a worker resync, remembered */
#define GROUP_RESYNC_MAX (1ull << 32) /* how far beyond its own numbers a worker follows a peer */

/* A failed operation, as a latecomer is told. */
typedef struct {
    uint64_t num;
    a2a_status status;
    char msg[GROUP_MSG_MAX];
} group_failed;

/* The numbering state of one group at one worker. */
typedef struct {
    size_t nlocal;
    int64_t *world;       /* by local index: the world rank (to carry state to a new epoch) */
    uint64_t *next;       /* by local index: the number that rank's next call gets */
    int *busy;            /* by local index: in a call (between group_seq_begin and _end) */
    uint64_t *jump;       /* by local index: a resync floor for its next call (0: none) */
    uint64_t *jump_after; /* by local index: one for the call after that (0: none) */
    int *known;           /* by local index: next is known (a call came, or a record carried) */
    int *orphaned;        /* by local index: its last call's job went away in it (orphans_fail):
                           * its replacement redoes that round, so it may be that operation's
                           * latecomer (op_ask_take) */
    int *prior;           /* by local index: a job of that rank called on a group of this name
                           * before this worker started (its state file, engine.c): a new job
                           * of it replaces one, it is not the rank's first (op_ask_number) */
    group_failed hist[GROUP_HISTORY];
    size_t nhist;        /* failures recorded (hist is a ring of the last GROUP_HISTORY) */
    uint64_t hint;       /* the highest number a peer's rank is in or was in (READY) */
    uint64_t top_failed; /* 1 + the highest failed number (0: none) */
    uint64_t floor;      /* the highest resync (numbers differed) */
    uint64_t differ[GROUP_DIFFER][2]; /* (source, number) of frames that made this worker resync */
    size_t ndiffer;
} group_seq;

/* Where a frame's operation number lies for this group. */
typedef enum {
    GROUP_ACTIVE,      /* within the window: the operation exists or may be created */
    GROUP_PAST_FAILED, /* every local rank is past it, and it failed: answer from the history */
    GROUP_PAST,        /* every local rank is past it, and it did not fail here (or it is below
                        * the last resync): numbers differ */
    GROUP_FUTURE,      /* GROUP_WINDOW or more ahead of the slowest local rank: numbers differ */
} group_pos;

/* group_seq_init makes the state of a group whose local ranks have world ranks world[0..n);
 * 0, or -1 when out of memory (then group_seq_fini is still safe). */
int group_seq_init(group_seq *gs, size_t nlocal, const int64_t *world);

/* group_seq_fini frees what group_seq_init allocated; safe on a zeroed state. */
void group_seq_fini(group_seq *gs);

/* group_seq_carry takes over from old (the same group's previous epoch) the next numbers of the
 * local ranks that both have (by world rank), the history and the hint. */
void group_seq_carry(group_seq *gs, const group_seq *old);

/* group_seq_min_next returns the smallest number a local rank whose number is known may still
 * take (UINT64_MAX when none is known): its next number or the resync due for its next call
 * (the operation a busy rank is in exists: group_seq_classify's exists covers it). */
uint64_t group_seq_min_next(const group_seq *gs);

/* group_seq_failed returns the recorded failure of operation num, or NULL. */
const group_failed *group_seq_failed(const group_seq *gs, uint64_t num);

/* group_seq_fail records that operation num failed (once; a later record keeps the first). */
void group_seq_fail(group_seq *gs, uint64_t num, a2a_status st, const char *msg);

/* group_seq_heard_failed notes that operation num failed at a peer, out of this worker's window:
 * no history (nothing here fails in advance), but a resynchronising call goes past it. */
void group_seq_heard_failed(group_seq *gs, uint64_t num);

/* group_seq_classify says where num lies; exists: the caller holds that operation already; nops:
 * how many operations of the group it holds. With no local rank's number known (a worker that
 * just started), a frame may create an operation while fewer than GROUP_WINDOW exist. */
group_pos group_seq_classify(const group_seq *gs, uint64_t num, int exists, size_t nops);

/* group_seq_saw notes that a peer's rank is in operation num (it sent READY for it). */
void group_seq_saw(group_seq *gs, uint64_t num);

/* group_seq_top returns the highest number this worker knows in use or about to be (its ranks'
 * calls, the next calls of its idle ranks, failures, the peers' it saw, the last resync; max_op:
 * the highest of the operations it holds): a resync goes past it. */
uint64_t group_seq_top(const group_seq *gs, uint64_t max_op);

/* group_seq_differ returns 1 when a frame of number num from source (a peer worker's run: its
 * index and incarnation) already made this worker resync (a straggler of the same call: its
 * other READYs, its eager SLICE), else notes it and returns 0. */
int group_seq_differ(group_seq *gs, uint64_t source, uint64_t num);

/*
 * group_seq_resync resynchronises at r (numbers differ): a local rank in a call takes r or
 * more with its next call; an idle one, whose next call belongs to the round that failed
 * (it is late to it), with the call after that. r far beyond what this worker knows is
 * ignored (returns 0), else returns 1.
 */
int group_seq_resync(group_seq *gs, uint64_t r, uint64_t max_op);

/*
 * group_seq_begin returns the number of a call of local rank lidx: the number the job sent
 * (job_next; job_failed, whether its previous call failed, changes nothing), or for the job's
 * first call on the group (-1) the rank's next number here. A new job on a rank that an
 * earlier job used is not the latecomer of that job's calls: it skips past every failure
 * recorded or heard of (not to where a peer's rank is: that rank may have gone on past its
 * call of the same round, free-running), unless that job went away in a call here (orphaned:
 * then no failure past its number was one of its calls, and the new job takes the rank's next
 * number, failed or not). A resync (group_seq_resync)
 * due for this call raises it. The rank's next number becomes the result + 1.
 */
uint64_t group_seq_begin(group_seq *gs, size_t lidx, int64_t job_next, int job_failed);

/*
 * group_seq_where returns the number a call that joins the group now should take, by what
 * this worker knows: the highest, over its local ranks whose numbers are known, of the
 * operation a rank is in (the next one when that failed) or the number of its next call
 * (a resync due for it included); -1 when no local rank's number is known. A new job's
 * first call on a worker that knows nothing of its rank takes the highest answer of every
 * member worker (FRAME_WHERE, FRAME_HERE), so that it meets the others' calls instead of
 * guessing 0. *idle is 1 when no local rank is in the operation of the number returned and
 * the one before it failed: the idle ranks either are about to call it, or failed the one
 * before without the newcomer and wait for it outside a2a (lockstep), which only time tells.
 */
int64_t group_seq_where(const group_seq *gs, int *idle);
/* group_seq_in: a local rank is in operation num right now (its call has that number and is
 * not done with it), and num has not failed here. */
int group_seq_in(const group_seq *gs, int64_t num);

/* group_seq_end records how local rank lidx's call of operation num ended. */
void group_seq_end(group_seq *gs, size_t lidx, uint64_t num, a2a_status st);

/*
 * A line of the worker's state file (SOCKET.ranks, engine.c): "RANK NAME\n", a world rank that
 * had a job calling on the group NAME (which may hold spaces, not control characters: the rest
 * of the line). group_state_parse reads the len bytes of line (with its '\n'): 0 with *rank
 * (>= 0) and name (A2A_GROUP_NAME_MAX + 1 bytes), else -1 (no newline at its end, no rank, an
 * invalid name). group_state_format writes the line for rank and name into buf (cap bytes,
 * NUL-terminated): its length, or -1 when it does not fit or is not valid.
 */
int group_state_parse(const char *line, size_t len, int64_t *rank, char *name);
int group_state_format(char *buf, size_t cap, int64_t rank, const char *name);

/*
 * The store of frames for groups or epochs this worker has not resolved yet:
 * bounded in count, bytes and age, per group, per peer and in total (so that
 * one peer's flood cannot take the others' share), replayed in order
 * of arrival. Frames past a bound are refused (the caller counts and logs
 * them, and notes their operations: early_lost_note); frames older than EARLY_AGE_MS are
 * dropped.
 */
#define EARLY_MAX 1024                     /* frames in all */
#define EARLY_BYTES (8u << 20)             /* bytes in all (headers' lists and payloads) */
#define EARLY_GROUP_MAX 256                /* frames of one group name */
#define EARLY_GROUP_BYTES (2u << 20)       /* bytes of one group name */
#define EARLY_PEER_MAX (EARLY_MAX / 2)     /* frames from one peer worker */
#define EARLY_PEER_BYTES (EARLY_BYTES / 2) /* bytes from one peer worker */
#define EARLY_AGE_MS 30000                 /* how long a frame is kept */

typedef struct early_frame {
    struct early_frame *next;
    int peer;
    int64_t at_ms;
    size_t bytes;
    frame f;
} early_frame;

/*
 * What a refused frame leaves behind: which operation of which group and epoch misses a frame
 * (READY, SLICE or ABORT), for the log when the group is resolved: that operation cannot
 * complete and fails at its deadline (engine.c, replay_early). The last EARLY_LOST_MAX
 * operations are remembered.
 */
#define EARLY_LOST_MAX 64

typedef struct {
    char group[A2A_GROUP_NAME_MAX + 1];
    uint64_t epoch, op;
    int peer; /* the first peer whose frame of it was refused */
} early_lost;

typedef struct {
    early_frame *head, *tail;
    size_t n, bytes;
    uint64_t refused, expired; /* counters, for logs and metrics */
    early_lost lost[EARLY_LOST_MAX];
    size_t nlost;
} early_store;

/* early_frame_bytes returns what keeping f costs (its lists, its payload and the record). */
size_t early_frame_bytes(const frame *f);

/* early_keep stores *f from peer (taking over its lists and payload, so that *f is left empty)
 * at time now_ms; 0, or -1 when a bound refuses it (then *f is unchanged). */
int early_keep(early_store *s, int peer, frame *f, int64_t now_ms);

/* early_lost_note records that operation f->id.op of f's group and epoch misses f, a READY,
 * SLICE or ABORT that the store refused (once per operation; the oldest record gives way when
 * they are EARLY_LOST_MAX). */
void early_lost_note(early_store *s, const frame *f, int peer);

/* early_lost_take removes the records of lost operations of group name with an epoch <= epoch,
 * and returns the first of those with exactly epoch in *out (1), or 0 when there is none. */
int early_lost_take(early_store *s, const char *name, uint64_t epoch, early_lost *out);

/* early_take removes and returns, oldest first, the next frame of group name with an epoch
 * <= epoch (NULL: none); the caller frees it with early_free. */
early_frame *early_take(early_store *s, const char *name, uint64_t epoch);

/* early_expire drops the frames kept since before now_ms - EARLY_AGE_MS. */
void early_expire(early_store *s, int64_t now_ms);

/* early_free frees one frame taken from the store; NULL is fine. */
void early_free(early_frame *x);

/* early_clear frees every frame of the store. */
void early_clear(early_store *s);

#endif
