/*
 * request.h - liba2a's non-blocking calls (a2a_all_to_all_v_start, a2a_wait, a2a_test,
 * a2a_request_free, a2a_wait_all, a2a_wait_any): each group of a job has a lane, one thread
 * that runs the calls started on that group one after another, in the order they were started,
 * with the blocking call (so numbers, statuses and messages are the blocking call's). Lanes of
 * different groups run at the same time. A start with nothing of its group before it sends a
 * small call to the worker itself, and the thread that waits for it ends it (ARCHITECTURE.md,
 * "Non-blocking calls").
 */
#ifndef A2A_WORKER_REQUEST_H
#define A2A_WORKER_REQUEST_H

#include "a2a.h"

typedef struct req_lanes req_lanes;

/* req_close, at a2a_job_close: the calls not started yet fail (UNAVAILABLE), the running ones
 * end (client_stop_calls), the lanes' threads are joined and *lanes freed; the requests
 * themselves stay the user's (a2a_wait gives their status, a2a_request_free frees them). */
void req_close(a2a_job *job, req_lanes **lanes);

/* req_route: a blocking call on a group whose lane has calls started or running runs after
 * them, through the lane (1, *st its status); 0: it may run at once. */
int req_route(a2a_job *job, const a2a_alltoallv_args *args, a2a_status *st);

/* Hooks of client.c for request.c. */
/* client_call_submit sends a call of args (kept until the call ends) to the worker from the
 * calling thread when it can at once (1, *call set: the caller's lane ends it with
 * client_call_finish); 0: nothing was done, and the lane makes the whole call. */
typedef struct client_call client_call;
int client_call_submit(a2a_job *job, const a2a_alltoallv_args *args, client_call **call);
/* client_call_ready reports whether client_call_finish would end call without waiting: its
 * reply came, or its deadline passed. */
int client_call_ready(const client_call *call);
/* client_call_finish waits for a submitted call's end, as a2a_all_to_all_v would, and frees it:
 * its status, and a failure's message as the calling thread's a2a_job_error. */
a2a_status client_call_finish(client_call *call);
/* client_lanes returns where job keeps its lanes (NULL until the first start). */
req_lanes **client_lanes(a2a_job *job);
/* client_fail sets the calling thread's a2a_job_error(job) to msg and returns st. */
a2a_status client_fail(a2a_job *job, a2a_status st, const char *msg);
/* client_stop_calls ends job's session with its worker, so that calls in flight fail at once
 * and no new one starts (the job is closing). */
void client_stop_calls(a2a_job *job);

#endif
