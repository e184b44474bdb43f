/*
 * a2a.h - the public API of liba2a: alltoallv as a networked service.
 *
 * A job (one process per rank) opens a handle on its host's worker and runs
 * a2a_all_to_all_v and the group functions through it. Every call returns an
 * a2a_status; a2a_job_error() gives the message of the last failed call made
 * on that job by the calling thread. Wherever a group name is taken, NULL
 * means "hccl_world_group".
 */
#ifndef A2A_H
#define A2A_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    A2A_INT8,
    A2A_UINT8,
    A2A_INT16,
    A2A_UINT16,
    A2A_INT32,
    A2A_UINT32,
    A2A_INT64,
    A2A_UINT64,
    A2A_FLOAT16,
    A2A_FLOAT32,
    A2A_FLOAT64,
    A2A_BFLOAT16
} a2a_dtype;

typedef enum { /* modelled on gRPC status codes */
               A2A_OK = 0,
               A2A_ERR_INVALID_ARGUMENT,  /* bad counts, displacements, dtype, name */
               A2A_ERR_NOT_FOUND,         /* unknown group */
               A2A_ERR_ALREADY_EXISTS,    /* create_group with other members */
               A2A_ERR_PERMISSION_DENIED, /* caller not in the group; bad credentials */
               A2A_ERR_COUNT_MISMATCH,    /* a sender's count differs from the receiver's */
               A2A_ERR_DEADLINE_EXCEEDED, /* a peer did not arrive in time */
               A2A_ERR_UNAVAILABLE,       /* worker, peer or coordinator unreachable or gone */
               A2A_ERR_RESOURCE_EXHAUSTED,
               A2A_ERR_INTERNAL
} a2a_status;

/* The name of the world group, which always exists and holds every rank. */
#define A2A_WORLD_GROUP "hccl_world_group"
/* Longest group name in bytes, without the terminator (128 with it, as HCCL). */
#define A2A_GROUP_NAME_MAX 127

typedef struct a2a_job a2a_job; /* one rank's handle on its host's worker */

/* worker_url NULL: $A2A_WORKER_URL; world_rank < 0: $A2A_RANK */
a2a_status a2a_job_open(a2a_job **job, const char *worker_url, int64_t world_rank);
/* a2a_job_close fails and waits for the job's requests (a2a_all_to_all_v_start) and frees the
 * job: no other thread may be inside a blocking call on it (or call it later). The Python
 * package counts its calls and closes only once the last has returned. */
void a2a_job_close(a2a_job *job);
const char *a2a_job_error(const a2a_job *job);

/* How a job's memory reaches its worker (a2a_job_mode). */
typedef enum {
    A2A_MODE_LOCAL = 0, /* handed over as memfds on the worker's Unix socket: the same kernel */
    A2A_MODE_REMOTE = 1 /* no shared kernel: the slices travel over the job's TCP connection */
} a2a_mode;

/* a2a_job_mode returns the mode a2a_job_open settled on ($A2A_JOB_MODE=local|remote picks one;
 * by default local when the worker's socket can be reached, else remote). */
a2a_mode a2a_job_mode(const a2a_job *job);
const char *a2a_status_name(a2a_status status);
size_t a2a_dtype_size(a2a_dtype dtype);

typedef struct {
    const char *group; /* NULL: "hccl_world_group" */
    a2a_dtype dtype;
    const void *send_data;
    size_t send_len;            /* elements in send_data */
    const int64_t *send_counts; /* group-size arrays, in elements */
    const int64_t *send_displacements;
    void *recv_data;
    size_t recv_len;            /* capacity of recv_data, in elements */
    const int64_t *recv_counts; /* NULL (with recv_displacements NULL): count discovery */
    const int64_t *recv_displacements;
    int64_t timeout_ms; /* 0: the default ($A2A_OP_TIMEOUT_MS) */
    /* group-size array or NULL: on success, the counts received from each group rank. With
     * recv_counts == NULL it is required: the slices land packed in group-rank order from
     * element 0 of recv_data; more than recv_len elements in all fail the operation for every
     * member with A2A_ERR_RESOURCE_EXHAUSTED, and nothing is written past recv_len. */
    int64_t *recv_counts_out;
} a2a_alltoallv_args;

a2a_status a2a_all_to_all_v(a2a_job *job, const a2a_alltoallv_args *args);

/*
 * Non-blocking operations. a2a_all_to_all_v_start starts the call a2a_all_to_all_v would make
 * and returns at once with *request (NULL when it fails: bad job, args or request, a group name
 * too long, the job closing). The buffers and arrays of args belong to the operation until it
 * completes; the struct itself and the group name are copied. A job's operations on one group
 * run one after another in the order they were started (the k-th started is the group's k-th
 * call, as for blocking calls), those on different groups at the same time; start them from
 * any thread. a2a_wait blocks until the operation completed and returns its status (the
 * blocking call's); a2a_job_error(job) then gives its message to the waiting thread. a2a_test
 * sets *done and, once done, returns the status as a2a_wait. a2a_wait_all waits for all (the
 * first failure's status and message), a2a_wait_any for one: *index is its position ((size_t)-1
 * when every entry is NULL). A request may be waited for again; a2a_request_free frees it,
 * also before it completed (the operation goes on; its buffers stay in use until then). A job
 * closed with operations in flight fails them (UNAVAILABLE), as a job that exits (a remote
 * job's running operation is waited for: it ends by itself, at the latest at its deadline);
 * its requests stay valid until freed.
 */
typedef struct a2a_request a2a_request;
a2a_status a2a_all_to_all_v_start(a2a_job *job, const a2a_alltoallv_args *args,
                                  a2a_request **request);
a2a_status a2a_wait(a2a_request *request);
a2a_status a2a_test(a2a_request *request, int *done);
a2a_status a2a_wait_all(size_t n, a2a_request *const *requests);
a2a_status a2a_wait_any(size_t n, a2a_request *const *requests, size_t *index);
void a2a_request_free(a2a_request *request);

/* group management, as HCCL's hccl.manage.api */
a2a_status a2a_create_group(a2a_job *job, const char *group, size_t n, const int64_t *world_ranks);
a2a_status a2a_destroy_group(a2a_job *job, const char *group);
a2a_status a2a_get_rank_size(a2a_job *job, const char *group, int64_t *size);
a2a_status a2a_get_rank_id(a2a_job *job, const char *group, int64_t *group_rank);
a2a_status a2a_get_world_rank_from_group_rank(a2a_job *job, const char *group, int64_t group_rank,
                                              int64_t *world_rank);
a2a_status a2a_get_group_rank_from_world_rank(a2a_job *job, const char *group, int64_t world_rank,
                                              int64_t *group_rank);

/*
 * Beyond DESIGN.md's API: memory the job shares with its worker. Send and
 * receive buffers that lie inside it go between the job and the sockets with
 * no copy in between (elsewhere the worker copies them through its own
 * buffers). a2a_buffer_alloc maps `bytes` of such memory at *ptr (zeroed,
 * already faulted in); a2a_buffer_free unmaps it. If the worker cannot map it
 * (it restarted, or runs elsewhere), the memory still works as a plain buffer.
 */
a2a_status a2a_buffer_alloc(a2a_job *job, size_t bytes, void **ptr);
a2a_status a2a_buffer_free(a2a_job *job, void *ptr);

#ifdef __cplusplus
}
#endif
#endif /* A2A_H */
