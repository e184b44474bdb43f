/*
 * frame.h - the frames of the peer links between workers.
 *
 * A frame is a fixed 16-byte prefix, a msgpack header and, for DATA frames,
 * raw payload bytes:
 *
 *   u32 magic "A2AL" | u32 header length | u64 payload length   (big-endian)
 *   header: msgpack array [type, ...fields]
 *   payload: DATA, at most FRAME_PAYLOAD_MAX bytes; or an eager SLICE's
 *            whole slice (count * dtype size, at most FRAME_EAGER_MAX bytes)
 *
 * Decoders take untrusted bytes: a bad magic, a length over its limit, a
 * wrong field or trailing bytes is an error, and the link is closed.
 */
#ifndef A2A_COMMON_FRAME_H
#define A2A_COMMON_FRAME_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "a2a.h"
#include "auth.h"
#include "config.h"

#define FRAME_MAGIC 0x4132414cu /* "A2AL" */
#define FRAME_PREFIX_LEN 16
/*
 * READY frames carry one (src, count) pair per source on the receiving
 * worker, up to CFG_MAX_RANKS: at most 3 + 9 bytes a pair, plus the fields.
 */
#define FRAME_HEADER_MAX (1u << 20)
_Static_assert((uint64_t)CFG_MAX_RANKS * 12 + 512 <= FRAME_HEADER_MAX,
               "a READY for every rank must fit in a frame header");
#define FRAME_PAYLOAD_MAX (4u << 20)
/* A small slice goes with its SLICE frame (eager), without waiting for READY: at most 32 KiB,
 * and in a group of n ranks at most OP_EAGER_TOTAL / n^2 (op_eager_max in worker/op.c; measured
 * in docs/PERFORMANCE.md, "The eager limit"). */
#define FRAME_EAGER_MAX 32768u
/* A READY count of FRAME_DISCOVER: the receiver discovers its counts; the sender answers with
 * its count (a SLICE without payload, or its eager SLICE) and, for a slice that is not eager,
 * sends the slice once a second READY gives the count back (worker/op.h). */
#define FRAME_DISCOVER (-1)
/* With rows, a sender streams a slice to a discoverer as soon as every row is known, without
 * waiting for the discoverer to place its slices: its SLICE then also says where the slice goes
 * in the receive buffer (place, in elements: the sum of the counts of the ranks before it), which
 * the receiver checks against its capacity and, once it places, against its own sum (worker/op.h,
 * "Count discovery"). A SLICE without the field has has_place 0. */
/* A READY of a group of at most FRAME_ROW_MAX ranks also carries its rank's send counts to
 * every group rank (the row) and its receive capacity when it discovers its counts (cap; -1:
 * it gave counts), so that every worker knows every receiver's total one hop after the last
 * rank arrived and can tell a receiver whose slices do not fit without waiting for it
 * (worker/op.h, "Count discovery"). Bigger groups' READYs carry neither (nrow 0). */
#define FRAME_ROW_MAX 64
#define FRAME_MSG_MAX 1023

typedef enum {
    FRAME_HELLO = 1,     /* first frame of a link: who dials */
    FRAME_READY = 2,     /* a receiving rank arrived: its expected counts */
    FRAME_SLICE = 3,     /* a sender's count (answering READY, or eager with the data) */
    FRAME_DATA = 4,      /* a chunk of a slice at a byte offset */
    FRAME_ABORT = 5,     /* an operation failed: status and message */
    FRAME_HEARTBEAT = 6, /* the link is alive */
    FRAME_CHALLENGE = 7, /* from the listener, with a token: the nonce HELLO must answer */
    FRAME_WELCOME = 8,   /* from the listener, with a token: its proof for HELLO's nonce */
    FRAME_WHERE = 9,     /* a new job's first call asks where a group's ranks are (id.op: token;
                          * dst: the asking group rank) */
    FRAME_HERE = 10,     /* the answer: count, the number a call joining now takes (-1: none);
                          * idle: bit 0, no rank there is in that operation and the one before
                          * it failed; bit 1, the asking rank's frames came there before; bit 2,
                          * a rank there is in that operation right now; bit 3, the asking
                          * rank joined the group there (not in the epoch before) */
    FRAME_PROBE = 11,    /* is group rank src still in this operation? asked by dst's worker
                          * after dst's READY, when dst's call came close to src's expiry */
    FRAME_ALIVE = 12,    /* the answer: src's call was in the operation (or completed it) when
                          * the PROBE came; a failed operation answers ABORT instead */
} frame_type;
#define FRAME_TYPE_MAX FRAME_ALIVE

/* The version of the link protocol, in HELLO: a listener refuses a dialer of another version,
 * naming both (HELLO without the field: version 1, before PROBE and ALIVE). */
#define FRAME_LINK_VERSION 3 /* 3: SLICE's place; 2: PROBE and ALIVE */

/* The label of a link's proofs: HMAC(secret, label || nonce || worker || incarnation). The
 * dialer proves the token for the CHALLENGE nonce, as itself; the listener for the HELLO nonce,
 * as the worker that was dialed (incarnation 0). */
#define FRAME_LINK_LABEL "a2a link"
#define FRAME_LINK_LISTENER_LABEL "a2a link listener"

/* The operation a frame belongs to. */
typedef struct {
    char group[A2A_GROUP_NAME_MAX + 1];
    uint64_t epoch;
    uint64_t op;
} frame_opid;

typedef struct {
    frame_type type;
    frame_opid id; /* READY, SLICE, DATA, ABORT */
    /* HELLO */
    char worker[CFG_WORKER_NAME_MAX + 1];
    uint64_t incarnation;
    uint32_t version;              /* HELLO: its link protocol (FRAME_LINK_VERSION) */
    int has_mac;                   /* HELLO: a proof of the token follows */
    uint8_t mac[AUTH_MAC_LEN];     /* HELLO, WELCOME */
    int has_nonce;                 /* HELLO: a nonce for the listener's proof follows */
    uint8_t nonce[AUTH_NONCE_LEN]; /* CHALLENGE, HELLO */
    /* READY: dst expects counts[i] elements from group rank srcs[i] */
    int64_t src, dst;                /* SLICE, DATA, PROBE, ALIVE: group ranks; READY: dst */
    int32_t dtype;                   /* READY, SLICE */
    size_t n;                        /* READY */
    int64_t *srcs;                   /* READY, malloc'd */
    int64_t *counts;                 /* READY, malloc'd */
    size_t nrow;                     /* READY: 0, or the group's size (FRAME_ROW_MAX) */
    int64_t row[FRAME_ROW_MAX];      /* READY: dst's send count to each group rank */
    int64_t cap;                     /* READY with a row: dst's receive capacity in elements
                                        when it discovers its counts, else -1 */
    int64_t count;                   /* SLICE: the sender's count; HERE: a number, or -1 */
    int has_place;                   /* SLICE: place follows (an 11th field) */
    int64_t place;                   /* SLICE with has_place: where in a discoverer's receive
                                        buffer the slice goes, in elements (>= 0) */
    int32_t idle;                    /* HERE: bits (FRAME_HERE) */
    int64_t ttl;                     /* READY: ms its call had left when it was sent (0: no
                                        bound); a call that arrives later than that (expire)
                                        meets an operation the sender has failed for sure */
    int64_t expire;                  /* READY received: the local ms past which (engine_frame:
                                        receipt + ttl; 0: none); PROBE received: the local ms it
                                        came (0: not told). Not on the wire */
    a2a_status status;               /* SLICE, ABORT */
    uint64_t offset;                 /* DATA: byte offset in the slice */
    uint64_t resync;                 /* ABORT: 0, or the lowest number the next calls may take */
    char message[FRAME_MSG_MAX + 1]; /* SLICE, ABORT */
    uint8_t *payload;                /* an eager SLICE's data, malloc'd by its reader */
    size_t payload_len;
} frame;

/* frame_prefix_encode writes the 16-byte prefix. */
void frame_prefix_encode(uint8_t out[FRAME_PREFIX_LEN], uint32_t header_len, uint64_t payload_len);

/* frame_prefix_decode checks magic and limits; 0, or -1 with err. */
int frame_prefix_decode(const uint8_t in[FRAME_PREFIX_LEN], uint32_t *header_len,
                        uint64_t *payload_len, char *err, size_t errlen);

/* frame_header_encode appends f's header to sb; 0 or -1. */
int frame_header_encode(msgpack_sbuffer *sb, const frame *f);

/*
 * frame_header_decode parses a header; payload_len (from the prefix) must be
 * > 0 for DATA, 0 or count * dtype size (at most FRAME_EAGER_MAX) for SLICE,
 * and 0 for the others. On success f may own srcs/counts: free with frame_fini.
 */
int frame_header_decode(frame *f, const uint8_t *buf, size_t len, uint64_t payload_len, char *err,
                        size_t errlen);

/* frame_fini frees srcs, counts and payload; safe on a zeroed frame. */
void frame_fini(frame *f);

#endif
