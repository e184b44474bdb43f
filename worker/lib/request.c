/* request.c - non-blocking calls on lanes, one thread per group of a job (see request.h). */
#include "request.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One lock for every request of the process, and one condition for their ends: a request
 * outlives its job (a2a_wait after a2a_job_close), and a2a_wait_any waits on several at once.
 * Each lane sleeps on a condition of its own. */
static pthread_mutex_t req_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t req_cv = PTHREAD_COND_INITIALIZER;
static __thread int in_lane; /* this thread is a lane's: its calls run directly */

struct a2a_request {
    a2a_request *next;     /* in its lane's queue */
    a2a_request *all;      /* in its job's list of requests the user holds */
    a2a_job *job;          /* NULL once the job closed */
    struct req_lane *lane; /* NULL once the job closed */
    a2a_alltoallv_args args;
    client_call *call; /* sent by the starting thread already, not ended */
    int lane_ends;     /* ... and its lane ends it: nobody else will soon */
    char group[A2A_GROUP_NAME_MAX + 1];
    a2a_status st;
    char msg[1024];
    int done;
    int freed; /* a2a_request_free came first: whoever ends it frees it */
};

typedef struct req_lane {
    struct req_lane *next;
    req_lanes *ls;
    char group[A2A_GROUP_NAME_MAX + 1];
    a2a_request *head, *tail; /* started, not running yet */
    int running;              /* one of them is running (in the lane or in a waiter) */
    int sending;              /* a start sends its call itself: the lane waits for it */
    pthread_cond_t cv;        /* for the lane's thread: there may be work */
    pthread_t thread;
} req_lane;

struct req_lanes {
    a2a_job *job;
    req_lane *lanes;
    a2a_request *all; /* requests not freed by the user */
    int closing;
};

/* finish records r's outcome; under req_mtx. */
static void
finish(a2a_request *r, a2a_status st, const char *msg)
{
    r->st = st;
    snprintf(r->msg, sizeof(r->msg), "%s", st != A2A_OK && msg != NULL ? msg : "");
    r->done = 1;
    if (r->freed)
        free(r);
    pthread_cond_broadcast(&req_cv);
}

/*
 * lane_takes reports whether l's thread runs its first request now; under
 * req_mtx. A call its start sent (client_call_submit) it leaves to whoever
 * waits for it, so that the reply wakes that thread alone and the lane's
 * stays asleep, unless a request is queued behind it, somebody handed it over
 * (r->lane_ends), or the job is closing.
 */
static int
lane_takes(const req_lane *l)
{
    const a2a_request *r = l->head;
    return r != NULL && !l->running && !l->sending &&
           (r->call == NULL || r->next != NULL || r->lane_ends || l->ls->closing);
}

/* run_first runs l's first request in the calling thread (a lane's or a waiter's), then
 * records its end; under req_mtx, dropped meanwhile. */
static void
run_first(req_lane *l)
{
    a2a_request *r = l->head;
    a2a_job *job = l->ls->job;
    client_call *c = r->call;
    if ((l->head = r->next) == NULL)
        l->tail = NULL;
    r->next = NULL;
    r->call = NULL;
    l->running = 1;
    pthread_mutex_unlock(&req_mtx);
    /* the blocking call, as the user's thread would make it: its number, status, message (or
     * the end of it, when its start sent it) */
    a2a_status st = c != NULL ? client_call_finish(c) : a2a_all_to_all_v(job, &r->args);
    const char *msg = st != A2A_OK ? a2a_job_error(job) : NULL;
    pthread_mutex_lock(&req_mtx);
    l->running = 0;
    if (!in_lane && (lane_takes(l) || l->ls->closing))
        pthread_cond_signal(&l->cv); /* the next one, or a closing job's lane may end */
    finish(r, st, msg);
}

static void *
lane_main(void *arg)
{
    req_lane *l = arg;

    in_lane = 1;
    pthread_mutex_lock(&req_mtx);
    for (;;) {
        while (!lane_takes(l) && !(l->ls->closing && l->head == NULL && !l->running && !l->sending))
            pthread_cond_wait(&l->cv, &req_mtx);
        if (!lane_takes(l))
            break; /* closing, nothing left */
        run_first(l);
    }
    pthread_mutex_unlock(&req_mtx);
    return NULL;
}

/*
 * drive moves r on when its start sent its call and nobody ends it yet: the
 * calling thread ends it, when wait says it may block for it or the reply is
 * there already (1: r is done now); else its lane's thread will (0). Under
 * req_mtx.
 */
static int
drive(a2a_request *r, int wait)
{
    req_lane *l = r->lane;
    if (r->done || r->call == NULL || r->lane_ends || l == NULL || l->head != r || l->running ||
        l->sending)
        return r->done;
    if (wait || client_call_ready(r->call)) {
        run_first(l);
        return 1;
    }
    r->lane_ends = 1;
    pthread_cond_signal(&l->cv);
    return 0;
}

/* lane_of returns the lane of group in ls, started if new (NULL: no thread); under req_mtx. */
static req_lane *
lane_of(req_lanes *ls, const char *group)
{
    req_lane *l;
    for (l = ls->lanes; l != NULL; l = l->next)
        if (strcmp(l->group, group) == 0)
            return l;
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return NULL;
    l->ls = ls;
    snprintf(l->group, sizeof(l->group), "%s", group);
    pthread_cond_init(&l->cv, NULL);
    if (pthread_create(&l->thread, NULL, lane_main, l) != 0) {
        pthread_cond_destroy(&l->cv);
        free(l);
        return NULL;
    }
    l->next = ls->lanes;
    ls->lanes = l;
    return l;
}

a2a_status
a2a_all_to_all_v_start(a2a_job *job, const a2a_alltoallv_args *args, a2a_request **request)
{
    const char *group;
    req_lanes **lsp;
    req_lane *l;
    a2a_request *r;

    if (request != NULL)
        *request = NULL;
    if (job == NULL)
        return A2A_ERR_INVALID_ARGUMENT;
    if (request == NULL || args == NULL)
        return client_fail(job, A2A_ERR_INVALID_ARGUMENT,
                           request == NULL ? "a2a_all_to_all_v_start: request is NULL"
                                           : "args is NULL");
    group = args->group != NULL ? args->group : A2A_WORLD_GROUP;
    if (strnlen(group, A2A_GROUP_NAME_MAX + 1) > A2A_GROUP_NAME_MAX)
        return client_fail(job, A2A_ERR_INVALID_ARGUMENT,
                           "the group name is longer than 127 bytes");
    if ((r = calloc(1, sizeof(*r))) == NULL)
        return client_fail(job, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    r->job = job;
    r->args = *args;
    snprintf(r->group, sizeof(r->group), "%s", group);
    r->args.group = r->group;
    pthread_mutex_lock(&req_mtx);
    lsp = client_lanes(job);
    if (*lsp == NULL && (*lsp = calloc(1, sizeof(**lsp))) != NULL)
        (*lsp)->job = job;
    if (*lsp == NULL || (*lsp)->closing || (l = lane_of(*lsp, group)) == NULL) {
        int closing = *lsp != NULL && (*lsp)->closing;
        pthread_mutex_unlock(&req_mtx);
        free(r);
        return client_fail(job, closing ? A2A_ERR_UNAVAILABLE : A2A_ERR_RESOURCE_EXHAUSTED,
                           closing ? "the job is closing"
                                   : "out of memory or threads for the group's lane");
    }
    r->lane = l;
    if (l->head == NULL && !l->running && !l->sending) {
        /* nothing of the group before it: the call goes to the worker from this thread, not
         * one thread wake-up later from the lane's; the lane holds back meanwhile, and starts
         * made meanwhile queue after it */
        l->sending = 1;
        pthread_mutex_unlock(&req_mtx);
        (void)client_call_submit(job, &r->args, &r->call);
        pthread_mutex_lock(&req_mtx);
        l->sending = 0;
        r->next = l->head; /* first */
        l->head = r;
        if (l->tail == NULL)
            l->tail = r;
    } else {
        if (l->tail != NULL)
            l->tail->next = r;
        else
            l->head = r;
        l->tail = r;
    }
    r->all = (*lsp)->all;
    (*lsp)->all = r;
    if (lane_takes(l))
        pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&req_mtx);
    *request = r;
    return A2A_OK;
}

int
req_route(a2a_job *job, const a2a_alltoallv_args *args, a2a_status *st)
{
    const char *group = args != NULL && args->group != NULL ? args->group : A2A_WORLD_GROUP;
    a2a_request *r;
    int busy = 0;

    if (in_lane || job == NULL)
        return 0;
    pthread_mutex_lock(&req_mtx);
    for (req_lane *l = *client_lanes(job) != NULL ? (*client_lanes(job))->lanes : NULL;
         l != NULL && !busy; l = l->next)
        busy = strcmp(l->group, group) == 0 && (l->running || l->sending || l->head != NULL);
    pthread_mutex_unlock(&req_mtx);
    if (!busy)
        return 0;
    if ((*st = a2a_all_to_all_v_start(job, args, &r)) == A2A_OK) {
        *st = a2a_wait(r);
        a2a_request_free(r);
    }
    return 1;
}

/* outcome gives r's status and, for a failure, sets the caller's a2a_job_error; under
 * req_mtx, r done. */
static a2a_status
outcome(const a2a_request *r)
{
    if (r->st != A2A_OK && r->job != NULL)
        return client_fail(r->job, r->st, r->msg);
    return r->st;
}

a2a_status
a2a_wait(a2a_request *request)
{
    a2a_status st;
    if (request == NULL)
        return A2A_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&req_mtx);
    while (!drive(request, 1))
        pthread_cond_wait(&req_cv, &req_mtx);
    st = outcome(request);
    pthread_mutex_unlock(&req_mtx);
    return st;
}

a2a_status
a2a_test(a2a_request *request, int *done)
{
    a2a_status st = A2A_OK;
    if (done != NULL)
        *done = 0;
    if (request == NULL || done == NULL)
        return A2A_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&req_mtx);
    if ((*done = drive(request, 0)) != 0)
        st = outcome(request);
    pthread_mutex_unlock(&req_mtx);
    return st;
}

a2a_status
a2a_wait_all(size_t n, a2a_request *const *requests)
{
    a2a_status first = A2A_OK;
    for (size_t i = 0; i < n; i++) {
        a2a_status st = requests != NULL && requests[i] != NULL ? a2a_wait(requests[i]) : A2A_OK;
        if (first == A2A_OK && st != A2A_OK)
            first = st;
    }
    if (first != A2A_OK) /* the message is the first failure's */
        for (size_t i = 0; i < n; i++)
            if (requests[i] != NULL && requests[i]->st != A2A_OK) {
                (void)a2a_wait(requests[i]);
                break;
            }
    return first;
}

a2a_status
a2a_wait_any(size_t n, a2a_request *const *requests, size_t *index)
{
    a2a_status st;
    size_t live = 0;

    if (index != NULL)
        *index = (size_t)-1;
    if (index == NULL || (requests == NULL && n > 0))
        return A2A_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        live += requests[i] != NULL;
    if (live == 0)
        return A2A_OK; /* nothing to wait for: *index stays (size_t)-1 */
    pthread_mutex_lock(&req_mtx);
    for (;;) {
        for (size_t i = 0; i < n; i++)
            if (requests[i] != NULL && drive(requests[i], 0)) {
                *index = i;
                st = outcome(requests[i]);
                pthread_mutex_unlock(&req_mtx);
                return st;
            }
        pthread_cond_wait(&req_cv, &req_mtx);
    }
}

void
a2a_request_free(a2a_request *request)
{
    if (request == NULL)
        return;
    pthread_mutex_lock(&req_mtx);
    if (request->job != NULL) { /* out of its job's list */
        req_lanes *ls = *client_lanes(request->job);
        for (a2a_request **pp = ls != NULL ? &ls->all : NULL; pp != NULL && *pp != NULL;
             pp = &(*pp)->all)
            if (*pp == request) {
                *pp = request->all;
                break;
            }
    }
    if (request->done) {
        free(request);
    } else {
        request->freed = 1;      /* whoever ends it frees it */
        (void)drive(request, 0); /* nobody will wait for it: its lane ends it */
    }
    pthread_mutex_unlock(&req_mtx);
}

void
req_close(a2a_job *job, req_lanes **lanes)
{
    req_lanes *ls;
    pthread_mutex_lock(&req_mtx);
    if ((ls = *lanes) == NULL) {
        pthread_mutex_unlock(&req_mtx);
        return;
    }
    ls->closing = 1;
    for (req_lane *l = ls->lanes; l != NULL; l = l->next) {
        pthread_cond_signal(&l->cv);
        /* a call its start sent is first in its lane, and ends in the lane, as a running one */
        a2a_request *keep = l->head != NULL && l->head->call != NULL ? l->head : NULL;
        a2a_request *r = keep != NULL ? keep->next : l->head;
        while (r != NULL) {
            a2a_request *next = r->next;
            char msg[300];
            snprintf(msg, sizeof(msg),
                     "a2a_job_close: the job closed before its operation on group \"%s\" started",
                     r->group);
            finish(r, A2A_ERR_UNAVAILABLE, msg);
            r = next;
        }
        if ((l->head = l->tail = keep) != NULL)
            keep->next = NULL;
    }
    pthread_cond_broadcast(&req_cv);
    pthread_mutex_unlock(&req_mtx);
    client_stop_calls(job); /* the running calls end now, not at their deadline */
    for (req_lane *l = ls->lanes; l != NULL; l = l->next)
        pthread_join(l->thread, NULL);
    pthread_mutex_lock(&req_mtx);
    for (a2a_request *r = ls->all; r != NULL; r = r->all) {
        r->job = NULL; /* their status stays; the job's messages go with it */
        r->lane = NULL;
    }
    while (ls->lanes != NULL) {
        req_lane *l = ls->lanes;
        ls->lanes = l->next;
        pthread_cond_destroy(&l->cv);
        free(l);
    }
    free(ls);
    *lanes = NULL;
    pthread_mutex_unlock(&req_mtx);
}
