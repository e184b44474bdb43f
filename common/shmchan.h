/*
 * shmchan.h - the job channel: one page-aligned block of shared memory (a
 * memfd of the job, mapped by its worker too) that carries one
 * a2a_all_to_all_v call at a time, with a futex on its state word.
 *
 * Layout (native byte order: both sides run on the same host):
 *
 *   offset 0      shmchan_hdr: state (futex word), version, magic, size,
 *                 the request (seq, group, dtype, timeout_ms, send/recv
 *                 address and length, n, self_copied, op_next, op_failed) and the
 *                 reply (reply_seq, status, reply_next, message)
 *   SHMCHAN_COUNTS_OFF
 *                 4n int64: send_counts, send_displs, recv_counts,
 *                 recv_displs (as in wire_a2av), n <= SHMCHAN_MAX_N
 *
 * States: the job writes a request, moves IDLE or REPLY -> REQUEST and rings
 * the doorbell; the worker copies the request out, runs it, writes the reply,
 * moves REQUEST -> REPLY and wakes the state word. Either side may set CLOSED
 * (and wakes both words); a reply counts only when its reply_seq equals the
 * request's seq.
 *
 * Two futex words, one per direction: the job sleeps on the state word, the
 * worker's thread on the doorbell (bell, which the job increments with every
 * request). A wake-up of one side then never wakes the other, and the worker's
 * thread of a call answered early by another thread can sleep on until the
 * job's next request (worker/engine.c, call_sleep) instead of being woken by
 * that answer. Version 4; version 3 had no doorbell (a job of that version
 * gets no channel and uses the socket). The worker treats everything in the
 * block as untrusted: shmchan_req_decode copies before it checks.
 */
#ifndef A2A_COMMON_SHMCHAN_H
#define A2A_COMMON_SHMCHAN_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "a2a.h"
#include "wire.h"

#define SHMCHAN_MAGIC 0x314e414843413241ULL /* "A2ACHAN1" */
#define SHMCHAN_VERSION 4
#define SHMCHAN_MAX_N 1024   /* larger groups use the RPC path */
#define SHMCHAN_MSG_MAX 1024 /* reply message, with its NUL */

enum { SHMCHAN_IDLE = 0, SHMCHAN_REQUEST = 1, SHMCHAN_REPLY = 2, SHMCHAN_CLOSED = 3 };

typedef struct {
    uint32_t state; /* the futex word: SHMCHAN_IDLE .. SHMCHAN_CLOSED */
    uint32_t version;
    uint64_t magic;
    uint64_t size; /* bytes of the whole channel */
    /* the request, written by the job */
    uint64_t seq;
    char group[A2A_GROUP_NAME_MAX + 1]; /* NUL-terminated */
    int64_t dtype;
    int64_t timeout_ms;
    uint64_t send_addr;
    int64_t send_len; /* elements */
    uint64_t recv_addr;
    int64_t recv_len;
    int64_t n;
    int64_t self_copied; /* wire_a2av.self_copied: 0, or 1 + the job's group rank */
    int64_t op_next;     /* wire_a2av.op_next: -1, or the job's number for this call */
    int64_t op_failed;   /* wire_a2av.op_failed: 0 or 1 */
    /* the reply, written by the worker */
    uint64_t reply_seq;
    int32_t status;
    uint32_t bell;      /* the doorbell: + 1 by the job with each request (and at its close) */
    int64_t reply_next; /* the number of the rank's next call, -1: keep yours */
    char message[SHMCHAN_MSG_MAX];
} shmchan_hdr;

#define SHMCHAN_COUNTS_OFF ((sizeof(shmchan_hdr) + 63) & ~(size_t)63)
#define SHMCHAN_SIZE \
    ((SHMCHAN_COUNTS_OFF + 4 * SHMCHAN_MAX_N * sizeof(int64_t) + 4095) & ~(size_t)4095)

/* shmchan_init writes an empty channel (IDLE) of len bytes at mem, which the caller owns. */
void shmchan_init(void *mem, size_t len);

/* shmchan_check checks the magic, version and size of a channel of len bytes; 0 or -1 with err. */
int shmchan_check(const void *mem, size_t len, char *err, size_t errlen);

/*
 * shmchan_req_write writes request a (its job id is not used) with number
 * seq into the channel of len bytes, leaving the state alone; -1 when a->n
 * does not fit.
 */
int shmchan_req_write(void *mem, size_t len, uint64_t seq, const wire_a2av *a);

/*
 * shmchan_req_decode copies the request out of the channel of len bytes at
 * mem (shared with an untrusted job that may change it meanwhile) and checks
 * the copy: state REQUEST, n from 1 to what the channel and cap hold, a
 * NUL-terminated valid group name, a valid dtype, no negative length or
 * timeout. On 0, *a holds it with a->counts = counts (4 * cap int64 owned by
 * the caller) and a->job zeroed; *seq is the request's number either way
 * (0 if unknown). -1 with the reason in err.
 */
int shmchan_req_decode(wire_a2av *a, uint64_t *seq, int64_t *counts, size_t cap, const void *mem,
                       size_t len, char *err, size_t errlen);

/* shmchan_reply_write writes the reply to request seq (state left alone); msg may be NULL;
 * next: the number of the rank's next call on the group (-1: the job keeps its own). */
void shmchan_reply_write(void *mem, uint64_t seq, a2a_status st, const char *msg, int64_t next);

/* shmchan_counts_write writes the n receive counts of a discovering call (common/args.h) over
 * the request's receive counts in the channel of len bytes, before the reply. */
void shmchan_counts_write(void *mem, size_t len, size_t n, const int64_t *recv_counts);
/* shmchan_counts_read reads them back (the job's side); -1 when n does not fit or a count is
 * negative. */
int shmchan_counts_read(const void *mem, size_t len, size_t n, int64_t *recv_counts);

/*
 * shmchan_reply_read reads the reply to request seq into *st, msg and *next
 * (-1, or at least 0); 0, or -1 when the channel holds no reply to seq.
 */
int shmchan_reply_read(const void *mem, uint64_t seq, a2a_status *st, char *msg, size_t msglen,
                       int64_t *next);

/* shmchan_state loads the state word (acquire). */
uint32_t shmchan_state(const void *mem);

/* shmchan_cas moves the state from `from` to `to` (acq_rel); 1 on success, else *seen. */
int shmchan_cas(void *mem, uint32_t from, uint32_t to, uint32_t *seen);

/* shmchan_close sets the state to CLOSED and wakes the other side. */
void shmchan_close(void *mem);

/*
 * shmchan_wait sleeps while the state equals expected, at most timeout_ms
 * (FUTEX_WAIT, shared: the block is MAP_SHARED between processes); returns
 * early on a wake-up, a signal or a changed state.
 */
void shmchan_wait(void *mem, uint32_t expected, int64_t timeout_ms);

/* shmchan_wake wakes whoever waits on the state word (the job). */
void shmchan_wake(void *mem);

/* shmchan_ring rings the doorbell (+ 1, then a wake-up of the worker's thread). */
void shmchan_ring(void *mem);

/* shmchan_bell loads the doorbell (before the state, so that a ring after the load is seen by
 * shmchan_bell_wait); shmchan_bell_word: its address, for futex_waitv. */
uint32_t shmchan_bell(const void *mem);
const uint32_t *shmchan_bell_word(const void *mem);

/* shmchan_bell_wait sleeps while the doorbell equals seen, at most timeout_ms (shared
 * FUTEX_WAIT); returns early on a ring, a signal or a changed bell. */
void shmchan_bell_wait(void *mem, uint32_t seen, int64_t timeout_ms);

/* OpenChannel reply: the worker's process id. Request: a wire_buffer (job, fd, addr, len). */
int shmchan_open_reply_encode(msgpack_sbuffer *sb, int64_t worker_pid);
int shmchan_open_reply_decode(int64_t *worker_pid, const uint8_t *buf, size_t len, char *err,
                              size_t errlen);

#endif
