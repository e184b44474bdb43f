/*
 * wire.h - the msgpack codec of every control message.
 *
 * Each message is one msgpack array with a fixed number of fields. Decoders
 * take untrusted bytes: they check every type, every length against its
 * limit, refuse trailing bytes, and never read past the buffer. Containers
 * are checked against the bytes left before msgpack-c allocates anything.
 * Encoders append to a msgpack_sbuffer the caller owns.
 */
#ifndef A2A_COMMON_WIRE_H
#define A2A_COMMON_WIRE_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "a2a.h"
#include "config.h"

#define WIRE_METHOD_MAX 63
#define WIRE_MESSAGE_MAX 1023
#define WIRE_BODY_MAX (4u << 20) /* largest RPC body */
#define WIRE_MAX_DEPTH 16
#define WIRE_MAX_MEMBERS CFG_MAX_RANKS
#define WIRE_MAX_GROUPS 65536

/* ---- RPC envelopes ---- */

typedef struct {
    char method[WIRE_METHOD_MAX + 1];
    uint64_t id;
    uint64_t timeout_ms; /* what is left of the caller's deadline */
    const uint8_t *body; /* points into the decoded buffer */
    size_t body_len;
} wire_request;

typedef struct {
    uint64_t id;
    a2a_status status;
    char message[WIRE_MESSAGE_MAX + 1];
    const uint8_t *body; /* points into the decoded buffer */
    size_t body_len;
} wire_reply;

/* wire_request_encode appends a request envelope to sb; 0 or -1 (out of memory). */
int wire_request_encode(msgpack_sbuffer *sb, const wire_request *r);
/* wire_request_decode parses buf into *r (whose body points into buf); 0, or -1 with err. */
int wire_request_decode(wire_request *r, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* wire_reply_encode appends a reply envelope to sb; 0 or -1. */
int wire_reply_encode(msgpack_sbuffer *sb, const wire_reply *r);
/* wire_reply_decode parses buf into *r (whose body points into buf); 0, or -1 with err. */
int wire_reply_decode(wire_reply *r, const uint8_t *buf, size_t len, char *err, size_t errlen);

/* ---- coordinator bodies ---- */

/* A group name alone: ResolveGroup and DestroyGroup requests. */
typedef struct {
    char name[A2A_GROUP_NAME_MAX + 1];
} wire_group_name;

int wire_group_name_encode(msgpack_sbuffer *sb, const char *name);
int wire_group_name_decode(wire_group_name *g, const uint8_t *buf, size_t len, char *err,
                           size_t errlen);

/* CreateGroup request: a name and world ranks. */
typedef struct {
    char name[A2A_GROUP_NAME_MAX + 1];
    size_t n;
    int64_t *ranks; /* malloc'd; freed by wire_create_fini */
} wire_create;

int wire_create_encode(msgpack_sbuffer *sb, const char *name, size_t n, const int64_t *ranks);
int wire_create_decode(wire_create *c, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* wire_create_fini frees what wire_create_decode allocated. */
void wire_create_fini(wire_create *c);

/* One member of a resolved group. */
typedef struct {
    int64_t world_rank;
    char worker[CFG_WORKER_NAME_MAX + 1];
    char url[CFG_URL_MAX + 1];
    char data_url[CFG_URL_MAX + 1];
} wire_member;

/* A resolved group (ResolveGroup and CreateGroup replies). */
typedef struct {
    char name[A2A_GROUP_NAME_MAX + 1];
    uint64_t epoch;
    size_t n;
    wire_member *members; /* malloc'd; group rank = index */
} wire_group;

int wire_group_encode(msgpack_sbuffer *sb, const wire_group *g);
int wire_group_decode(wire_group *g, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* wire_group_fini frees g->members. */
void wire_group_fini(wire_group *g);

/* One line of ListGroups. */
typedef struct {
    char name[A2A_GROUP_NAME_MAX + 1];
    uint64_t epoch;
    uint64_t size;
    char origin[16]; /* "builtin", "config" or "runtime" */
} wire_group_info;

typedef struct {
    size_t n;
    wire_group_info *groups; /* malloc'd */
} wire_group_list;

int wire_group_list_encode(msgpack_sbuffer *sb, const wire_group_list *l);
int wire_group_list_decode(wire_group_list *l, const uint8_t *buf, size_t len, char *err,
                           size_t errlen);
void wire_group_list_fini(wire_group_list *l);

/* One line of a worker's ListJobs: a job session that holds a rank. */
typedef struct {
    uint64_t session;
    int64_t world_rank;
    char mode[16]; /* "remote", or local: "shared" (it handed over shared buffers), "staging" */
    int64_t pid;   /* the kernel's (SO_PEERCRED), -1 for a remote job */
    int64_t uid;   /* likewise */
    uint64_t shared, staging; /* memfds of each kind mapped now (remote: staging slots) */
    uint64_t calls;           /* calls running now */
} wire_job_info;

typedef struct {
    size_t n;
    wire_job_info *jobs; /* malloc'd */
} wire_job_list;

#define WIRE_MAX_JOBS 4096
int wire_job_list_encode(msgpack_sbuffer *sb, const wire_job_list *l);
int wire_job_list_decode(wire_job_list *l, const uint8_t *buf, size_t len, char *err,
                         size_t errlen);
void wire_job_list_fini(wire_job_list *l);

/* Health reply. */
typedef struct {
    char service[32]; /* "coordinator" or "worker" */
    char name[CFG_WORKER_NAME_MAX + 1];
    uint64_t world_size;
    uint64_t groups;
    uint64_t uptime_ms;
    char config[CFG_PATH_MAX + 1];
} wire_health;

int wire_health_encode(msgpack_sbuffer *sb, const wire_health *h);
int wire_health_decode(wire_health *h, const uint8_t *buf, size_t len, char *err, size_t errlen);

/* wire_empty_encode appends an empty array (a request or reply without fields). */
int wire_empty_encode(msgpack_sbuffer *sb);
/* wire_empty_decode accepts exactly an empty array. */
int wire_empty_decode(const uint8_t *buf, size_t len, char *err, size_t errlen);

/* ---- decoding helpers for other modules' messages ---- */

/*
 * wire_parse checks buf (container counts against the bytes left, depth,
 * no trailing bytes) and unpacks it into *root, allocated in zone, which the
 * caller has initialised and destroys. 0, or -1 with err.
 */
int wire_parse(msgpack_object *root, msgpack_zone *zone, const uint8_t *buf, size_t len, char *err,
               size_t errlen);
/* wire_array checks that o is an array of exactly n items (n < 0: any size up to max). */
int wire_array(const msgpack_object *o, int64_t n, size_t max, const char *what, char *err,
               size_t errlen);
/* wire_str copies a string of at most max bytes without NUL bytes into dst[max + 1]. */
int wire_str(char *dst, size_t max, const msgpack_object *o, const char *what, char *err,
             size_t errlen);
/* wire_u64 reads a non-negative integer. */
int wire_u64(uint64_t *v, const msgpack_object *o, const char *what, char *err, size_t errlen);
/* wire_i64 reads an integer that fits int64_t. */
int wire_i64(int64_t *v, const msgpack_object *o, const char *what, char *err, size_t errlen);
/* wire_bin reads a bin of at most max bytes, pointing into the parsed buffer. */
int wire_bin(const uint8_t **p, size_t *len, size_t max, const msgpack_object *o, const char *what,
             char *err, size_t errlen);

/* RegisterWorker request: a worker that starts names its incarnation. */
typedef struct {
    char worker[CFG_WORKER_NAME_MAX + 1];
    uint64_t incarnation;
} wire_register;

int wire_register_encode(msgpack_sbuffer *sb, const wire_register *r);
int wire_register_decode(wire_register *r, const uint8_t *buf, size_t len, char *err,
                         size_t errlen);

/* ---- authentication bodies: arrays of 32-byte bins (nonces, proofs) ---- */

#define WIRE_BIN32 32

/* wire_bins_encode appends an array of n 32-byte bins. */
int wire_bins_encode(msgpack_sbuffer *sb, size_t n, const uint8_t *const *bins);
/* wire_bins_decode accepts exactly an array of n bins of 32 bytes each, copied to out. */
int wire_bins_decode(uint8_t (*out)[WIRE_BIN32], size_t n, const uint8_t *buf, size_t len,
                     char *err, size_t errlen);

/* ---- worker API bodies ---- */

struct xfer_sess;

/* Who a job is: on the wire only its world rank ([world_rank]). */
typedef struct {
    int64_t world_rank;
    /* the job's local session (worker/xfer.h), whose memory the call uses: set by the worker
     * for calls that come on that session, never decoded from a message (NULL) */
    struct xfer_sess *sess;
} wire_job_id;

/* Hello reply: the worker's side, and where a job on its host hands its memory over. */
typedef struct {
    char worker[CFG_WORKER_NAME_MAX + 1];
    int64_t world_size;
    char socket[CFG_SOCKET_MAX + 1]; /* the worker's Unix socket (config "socket"), or "" */
} wire_hello_reply;

/* Attach reply (the local socket): the worker, and who the kernel says the caller is. */
typedef struct {
    char worker[CFG_WORKER_NAME_MAX + 1];
    int64_t world_size;
    int64_t pid; /* SO_PEERCRED, in the worker's PID namespace */
    int64_t uid;
    uint64_t session;
} wire_attach_reply;

int wire_attach_reply_encode(msgpack_sbuffer *sb, const wire_attach_reply *r);
int wire_attach_reply_decode(wire_attach_reply *r, const uint8_t *buf, size_t len, char *err,
                             size_t errlen);

int wire_job_id_encode(msgpack_sbuffer *sb, const wire_job_id *j);
int wire_job_id_decode(wire_job_id *j, const uint8_t *buf, size_t len, char *err, size_t errlen);
int wire_hello_reply_encode(msgpack_sbuffer *sb, const wire_hello_reply *h);
int wire_hello_reply_decode(wire_hello_reply *h, const uint8_t *buf, size_t len, char *err,
                            size_t errlen);

/* A group request from a job: CreateGroup / DestroyGroup / GetGroup through its worker. */
typedef struct {
    wire_job_id job;
    wire_create create; /* name, and ranks for CreateGroup (n = 0 otherwise) */
} wire_job_group;

int wire_job_group_encode(msgpack_sbuffer *sb, const wire_job_id *j, const char *name, size_t n,
                          const int64_t *ranks);
int wire_job_group_decode(wire_job_group *g, const uint8_t *buf, size_t len, char *err,
                          size_t errlen);
void wire_job_group_fini(wire_job_group *g);

/* AllToAllV request: the arguments of a2a_all_to_all_v, with addresses in the job. */
typedef struct {
    wire_job_id job;
    char group[A2A_GROUP_NAME_MAX + 1];
    int64_t dtype;
    int64_t timeout_ms;
    uint64_t send_addr, send_len; /* send_len, recv_len in elements */
    uint64_t recv_addr, recv_len;
    size_t n;
    int64_t *counts; /* 4n: send_counts, send_displs, recv_counts, recv_displs */
    /* 1 + the group rank whose own slice (to itself) the job copied before the call, 0:
     * none; only job channels carry it (common/shmchan.h), the msgpack codec leaves it 0 */
    int64_t self_copied;
    /* the job's number for this call on the group (-1 - k: a call of a job none of whose k
     * calls there before was numbered; -1: its first call there), and whether its previous call
     * on the group failed (docs/ARCHITECTURE.md, "Operation identity") */
    int64_t op_next;
    int64_t op_failed;
} wire_a2av;

/* The lowest op_next: a job counts at most this many unnumbered calls (-1 - WIRE_OP_NEXT_MIN). */
#define WIRE_OP_NEXT_MIN (-(INT64_C(1) << 30))

/* AllToAllV reply body: [next], the number of the rank's next call on the group (-1: keep
 * yours: the call was refused before it was numbered). */
int wire_a2av_reply_encode(msgpack_sbuffer *sb, int64_t next);
int wire_a2av_reply_decode(int64_t *next, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* wire_a2av_reply_encode_counts: [next, [counts]], the n counts a discovering call received
 * (common/args.h ARGS_DISCOVER). */
int wire_a2av_reply_encode_counts(msgpack_sbuffer *sb, int64_t next, size_t n,
                                  const int64_t *counts);
/* wire_a2av_reply_decode_counts decodes either reply; with counts, only [next, [n counts]]
 * (each non-negative) is taken. */
int wire_a2av_reply_decode_counts(int64_t *next, int64_t *counts, size_t n, const uint8_t *buf,
                                  size_t len, char *err, size_t errlen);

/* MapBuffer / UnmapBuffer / OpenChannel request on the local socket: [addr, len]; the memfd
 * itself comes with the message (SCM_RIGHTS), never as a number. */
typedef struct {
    uint64_t addr; /* where the job mapped it (its own view; the worker keys nothing else by it) */
    uint64_t len;
} wire_buffer;

int wire_buffer_encode(msgpack_sbuffer *sb, const wire_buffer *b);
int wire_buffer_decode(wire_buffer *b, const uint8_t *buf, size_t len, char *err, size_t errlen);

/*
 * The remote-job methods on the TCP API (RemoteAttach, RemoteReserve,
 * RemotePut, RemoteGet, RemoteCall, RemoteDetach), one form for all:
 * [session, key0, key1, slot, offset, length, bin]. A remote session is named
 * by its number and its 128-bit key (a capability RemoteAttach hands out);
 * slot picks one of its staging areas, offset and length a range in it; bin
 * carries data (RemotePut, RemoteGet's reply) or RemoteCall's wire_a2av.
 */
#define WIRE_REMOTE_CHUNK (1u << 20)       /* bytes of data per RemotePut / RemoteGet */
#define WIRE_REMOTE_SLOT_SPAN (1ull << 40) /* the address of slot i in calls: (i + 1) * this */
#define WIRE_REMOTE_SLOTS 16               /* slots of a session: its calls at once */
typedef struct {
    uint64_t session;
    uint64_t key[2];
    uint64_t slot;
    uint64_t offset;
    uint64_t len;
    const uint8_t *data; /* decoded: points into the message */
    size_t data_len;
} wire_remote;

int wire_remote_encode(msgpack_sbuffer *sb, const wire_remote *r);
int wire_remote_decode(wire_remote *r, const uint8_t *buf, size_t len, char *err, size_t errlen);

int wire_a2av_encode(msgpack_sbuffer *sb, const wire_a2av *a);
int wire_a2av_decode(wire_a2av *a, const uint8_t *buf, size_t len, char *err, size_t errlen);
void wire_a2av_fini(wire_a2av *a);

#endif
