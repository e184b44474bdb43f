/*
 * nonblock_check.c - the non-blocking calls end to end (a2a_all_to_all_v_start, a2a_wait,
 * a2a_test, a2a_wait_all, a2a_wait_any, a2a_request_free), under a2a-launch. argv[1]:
 *
 *   pipeline SEED      12 operations in flight on the world group at once, one per dtype,
 *                      random matrices (zero, eager and streamed slices), known counts and
 *                      count discovery mixed; half completed by a2a_test polling, half by
 *                      a2a_wait; then a blocking call, which runs after them; every element
 *                      and count checked
 *   threads SEED       three threads, each on its own group (world, reversed, rotated),
 *                      8 operations in flight per thread, completed by a2a_wait_any and
 *                      a2a_wait_all
 *   free SEED          requests freed at once without waiting; a blocking call on the group
 *                      afterwards returns after them, and their data is right
 *   deadline           the last rank starts 3 s late: the others' requests in flight fail
 *                      DEADLINE_EXCEEDED naming it, its own fail too; the next operation works
 *   leave close|exit   rank 1 starts operations that cannot complete (rank 0 is 1.5 s late)
 *                      and closes its job (close), or its process exits with them in flight
 *                      (exit: a child process, the rank's job meanwhile); the others fail
 *                      instead of hanging, rank 1 opens its rank again, the next operation
 *                      works for everyone
 *   kill               (test_nonblock_kill.sh) requests in flight when a worker is killed
 *                      fail UNAVAILABLE; after its restart every rank meets again
 *   single SEED        100 operations one at a time, small enough (mostly) that the start
 *                      sends each to the worker itself and whoever waits ends it: ended by
 *                      a2a_wait, by a2a_test polling, by a2a_test after a pause (done or not
 *                      yet), by a2a_wait_any, freed unwaited before a blocking call, or
 *                      followed by a blocking call at once; ranks start up to 2 ms apart;
 *                      every element, count and guard byte checked
 *   args               start's argument checks: NULL job, args, request; a group name too
 *                      long; a2a_wait/a2a_test/a2a_wait_any with NULL
 *
 * Each rank prints "rank R: MODE ok" and exits 0, or prints why and exits 1.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "a2a.h"

#define NDTYPES 12
#define GUARD 0xA5

static int64_t world_me = -1;
static uint64_t slice_cap; /* op_make: no slice larger than this many bytes (0: any) */
static const char *mode = "?";

static void
say(const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("rank %" PRId64 ": %s: %s\n", world_me, mode, line);
    fflush(stdout);
}

static void
sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static uint64_t
mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static uint64_t
value_of(int64_t src, int64_t dst, int64_t k, uint64_t tag)
{
    return mix64(tag * 0xD6E8FEB86659FD93ULL ^ (uint64_t)src * 0x100000001B3ULL ^
                 (uint64_t)dst << 40 ^ (uint64_t)k << 1);
}

/* One operation of this rank on a group of n ranks where it is group rank me. */
typedef struct {
    int64_t n, me;
    const int64_t *world; /* world rank of each group rank (the values name world ranks) */
    a2a_dtype dt;
    uint64_t tag;
    int discover;
    int64_t *sc, *sd, *rc, *rd, *out;
    uint8_t *send, *recv;
    size_t slen, rlen;
    a2a_alltoallv_args a;
    a2a_request *req;
} op;

/* op_make prepares operation tag (the same matrix at every rank) on group (NULL: world). */
static void
op_make(op *o, const char *group, int64_t n, int64_t me, const int64_t *world, a2a_dtype dt,
        uint64_t tag, int64_t timeout_ms)
{
    size_t es = a2a_dtype_size(dt);
    uint64_t rng = mix64(tag);
    int64_t *M = malloc((size_t)(n * n) * sizeof(int64_t));
    memset(o, 0, sizeof(*o));
    o->n = n, o->me = me, o->world = world, o->dt = dt, o->tag = tag;
    for (int64_t i = 0; i < n * n; i++) {
        uint64_t r = mix64(rng + (uint64_t)i), kind = r % 10, b;
        b = kind < 2 ? 0 : kind < 7 ? 1 + (r >> 8) % 32768 : 32769 + (r >> 8) % 300000;
        if (slice_cap > 0)
            b %= slice_cap;
        M[i] = (int64_t)((b + es - 1) / es);
    }
    o->discover = (mix64(tag ^ (uint64_t)me) & 1) != 0;
    o->sc = calloc((size_t)n, 8), o->sd = calloc((size_t)n, 8), o->rc = calloc((size_t)n, 8);
    o->rd = calloc((size_t)n, 8), o->out = calloc((size_t)n, 8);
    for (int64_t j = 0; j < n; j++) {
        o->sc[j] = M[me * n + j];
        o->sd[j] = (int64_t)o->slen;
        o->slen += (size_t)o->sc[j];
        o->rc[j] = M[j * n + me];
        o->rd[j] = (int64_t)o->rlen;
        o->rlen += (size_t)o->rc[j];
    }
    o->send = malloc(o->slen * es + 1);
    o->recv = malloc(o->rlen * es + 1);
    memset(o->recv, GUARD, o->rlen * es + 1);
    for (int64_t j = 0; j < n; j++)
        for (int64_t k = 0; k < o->sc[j]; k++) {
            uint64_t v = value_of(world[me], world[j], k, tag);
            memcpy(o->send + ((size_t)o->sd[j] + (size_t)k) * es, &v, es);
        }
    o->a = (a2a_alltoallv_args){.group = group,
                                .dtype = dt,
                                .send_data = o->send,
                                .send_len = o->slen,
                                .send_counts = o->sc,
                                .send_displacements = o->sd,
                                .recv_data = o->recv,
                                .recv_len = o->rlen,
                                .recv_counts = o->discover ? NULL : o->rc,
                                .recv_displacements = o->discover ? NULL : o->rd,
                                .recv_counts_out = o->out,
                                .timeout_ms = timeout_ms};
    free(M);
}

static int
op_check(const op *o)
{
    size_t es = a2a_dtype_size(o->dt);
    for (int64_t j = 0; j < o->n; j++) {
        if (o->out[j] != o->rc[j]) {
            say("FAILED: op %" PRIu64 ": count from %" PRId64 " is %" PRId64 ", not %" PRId64,
                o->tag, j, o->out[j], o->rc[j]);
            return -1;
        }
        for (int64_t k = 0; k < o->rc[j]; k++) {
            uint64_t v = value_of(o->world[j], o->world[o->me], k, o->tag), got = 0;
            memcpy(&got, o->recv + ((size_t)o->rd[j] + (size_t)k) * es, es);
            if (memcmp(&got, &v, es) != 0) {
                say("FAILED: op %" PRIu64 " dtype %d: element %" PRId64 " from %" PRId64 " wrong",
                    o->tag, (int)o->dt, k, j);
                return -1;
            }
        }
    }
    if (o->recv[o->rlen * es] != GUARD) {
        say("FAILED: op %" PRIu64 ": written past the receive buffer", o->tag);
        return -1;
    }
    return 0;
}

static void
op_fini(op *o)
{
    free(o->sc), free(o->sd), free(o->rc), free(o->rd), free(o->out);
    free(o->send), free(o->recv);
    a2a_request_free(o->req);
    o->req = NULL;
}

typedef struct {
    a2a_job *job;
    int64_t n, me;
    int64_t *world, *rev, *rot; /* world ranks of the group ranks of world, nb_rev, nb_rot */
} ctx;

static int
start(ctx *c, op *o)
{
    a2a_status st = a2a_all_to_all_v_start(c->job, &o->a, &o->req);
    if (st != A2A_OK || o->req == NULL) {
        say("FAILED: start op %" PRIu64 ": %s: %s", o->tag, a2a_status_name(st),
            a2a_job_error(c->job));
        return -1;
    }
    return 0;
}

/* verified runs one verified blocking operation on the world group. */
static int
verified(ctx *c, uint64_t tag, const char *what)
{
    op o;
    op_make(&o, NULL, c->n, c->me, c->world, A2A_INT32, tag, 20000);
    a2a_status st = a2a_all_to_all_v(c->job, &o.a);
    int rv = st == A2A_OK ? op_check(&o) : -1;
    if (st != A2A_OK)
        say("FAILED: %s: %s: %s", what, a2a_status_name(st), a2a_job_error(c->job));
    op_fini(&o);
    return rv;
}

static int
mode_pipeline(ctx *c, uint64_t seed)
{
    op o[NDTYPES];
    int rv = 0;
    for (int i = 0; i < NDTYPES; i++) {
        op_make(&o[i], NULL, c->n, c->me, c->world, (a2a_dtype)i, seed * 100 + (uint64_t)i, 30000);
        if (start(c, &o[i]) != 0)
            return -1;
    }
    sleep_ms(20); /* "compute" while they run */
    for (int i = 0; i < NDTYPES; i++) {
        a2a_status st;
        if (i % 2 == 0) {
            int done = 0, polls = 0;
            while ((st = a2a_test(o[i].req, &done)) == A2A_OK && !done) {
                polls++;
                sleep_ms(1);
            }
            if (st == A2A_OK && !done) {
                say("FAILED: a2a_test returned OK, not done");
                rv = -1;
            }
        } else {
            st = a2a_wait(o[i].req);
        }
        if (st != A2A_OK) {
            say("FAILED: op %d: %s: %s", i, a2a_status_name(st), a2a_job_error(c->job));
            rv = -1;
        } else if (op_check(&o[i]) != 0) {
            rv = -1;
        }
        /* waiting again gives the same */
        if (rv == 0 && a2a_wait(o[i].req) != A2A_OK)
            rv = -1;
    }
    for (int i = 0; i < NDTYPES; i++)
        op_fini(&o[i]);
    return rv != 0 ? -1 : verified(c, seed * 100 + 99, "a blocking call after them");
}

typedef struct {
    ctx *c;
    const char *group;
    const int64_t *world;
    int64_t me;
    uint64_t tag;
    int rv;
} lane_arg;

static void *
thread_main(void *arg)
{
    lane_arg *t = arg;
    op o[8];
    a2a_request *reqs[8];
    t->rv = -1;
    for (int i = 0; i < 8; i++) {
        op_make(&o[i], t->group, t->c->n, t->me, t->world, (a2a_dtype)((i * 5 + 1) % NDTYPES),
                t->tag + (uint64_t)i, 30000);
        if (start(t->c, &o[i]) != 0)
            return NULL;
        reqs[i] = o[i].req;
    }
    /* the first half by a2a_wait_any (in order: one group's operations complete in order),
     * the rest by a2a_wait_all */
    for (int k = 0; k < 4; k++) {
        size_t idx;
        a2a_status st = a2a_wait_any(8, reqs, &idx);
        if (st != A2A_OK || idx >= 8) {
            say("FAILED: %s: wait_any: %s: %s", t->group, a2a_status_name(st),
                a2a_job_error(t->c->job));
            return NULL;
        }
        if (op_check(&o[idx]) != 0)
            return NULL;
        reqs[idx] = NULL;
    }
    a2a_status st = a2a_wait_all(8, reqs);
    if (st != A2A_OK) {
        say("FAILED: %s: wait_all: %s: %s", t->group, a2a_status_name(st),
            a2a_job_error(t->c->job));
        return NULL;
    }
    for (int i = 0; i < 8; i++) {
        if (op_check(&o[i]) != 0)
            return NULL;
        op_fini(&o[i]);
    }
    t->rv = 0;
    return NULL;
}

static int64_t
index_of(const int64_t *w, int64_t n, int64_t r)
{
    for (int64_t i = 0; i < n; i++)
        if (w[i] == r)
            return i;
    return -1;
}

static int
mode_threads(ctx *c, uint64_t seed)
{
    pthread_t th[3];
    lane_arg t[3] = {
        {c, NULL, c->world, c->me, seed * 1000, -1},
        {c, "nb_rev", c->rev, index_of(c->rev, c->n, c->me), seed * 1000 + 100, -1},
        {c, "nb_rot", c->rot, index_of(c->rot, c->n, c->me), seed * 1000 + 200, -1},
    };
    for (int i = 1; i < 3; i++) {
        a2a_status st = a2a_create_group(c->job, t[i].group, (size_t)c->n, t[i].world);
        if (st != A2A_OK && st != A2A_ERR_ALREADY_EXISTS) {
            say("FAILED: create_group %s: %s", t[i].group, a2a_job_error(c->job));
            return -1;
        }
    }
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, thread_main, &t[i]);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    return t[0].rv | t[1].rv | t[2].rv;
}

static int
mode_free(ctx *c, uint64_t seed)
{
    op o[6];
    for (int i = 0; i < 6; i++) {
        op_make(&o[i], NULL, c->n, c->me, c->world, (a2a_dtype)(i * 2), seed * 10 + (uint64_t)i,
                30000);
        if (start(c, &o[i]) != 0)
            return -1;
        a2a_request_free(o[i].req); /* at once, maybe before it ran */
        o[i].req = NULL;
    }
    /* a blocking call runs after them: once it returns, they completed */
    if (verified(c, seed * 10 + 9, "a blocking call after freed requests") != 0)
        return -1;
    for (int i = 0; i < 6; i++) {
        if (op_check(&o[i]) != 0)
            return -1;
        op_fini(&o[i]);
    }
    return 0;
}

static int
mode_single(ctx *c, uint64_t seed)
{
    for (int k = 0; k < 100; k++) {
        uint64_t tag = seed * 1000 + (uint64_t)k, r = mix64(tag ^ (uint64_t)c->me);
        a2a_status st = A2A_OK;
        int how = k % 6, done = 0;
        op o;
        /* most under the start's own limit (32 KiB to others), one in eight over it */
        slice_cap = k % 8 == 7 ? 40000 : 8192 / (uint64_t)c->n;
        op_make(&o, NULL, c->n, c->me, c->world, (a2a_dtype)(k % NDTYPES), tag, 20000);
        sleep_ms((int64_t)(r % 3)); /* ranks apart: a test may find it not done yet */
        if (start(c, &o) != 0)
            return -1;
        switch (how) {
        case 0: st = a2a_wait(o.req); break;
        case 1: /* polling, as fast as it goes */
            while ((st = a2a_test(o.req, &done)) == A2A_OK && !done)
                ;
            break;
        case 2: /* one look after a pause, then the wait */
            sleep_ms((int64_t)(r >> 8) % 3);
            if ((st = a2a_test(o.req, &done)) == A2A_OK && !done)
                st = a2a_wait(o.req);
            break;
        case 3: { /* wait_any of it alone, among NULLs */
            a2a_request *set[3] = {NULL, o.req, NULL};
            size_t idx = 9;
            if ((st = a2a_wait_any(3, set, &idx)) == A2A_OK && idx != 1) {
                say("FAILED: op %d: wait_any gave index %zu, not 1", k, idx);
                return -1;
            }
            break;
        }
        case 4: /* freed unwaited: the blocking call after it returns after it */
            a2a_request_free(o.req);
            o.req = NULL;
            if (verified(c, tag + 500000, "a blocking call after a freed request") != 0)
                return -1;
            break;
        case 5: /* a blocking call on the group at once: it runs after the request */
            if (verified(c, tag + 500000, "a blocking call behind a request") != 0)
                return -1;
            if ((st = a2a_test(o.req, &done)) == A2A_OK && !done) {
                say("FAILED: op %d: not done after the blocking call behind it", k);
                return -1;
            }
            break;
        }
        if (st != A2A_OK) {
            say("FAILED: op %d (way %d): %s: %s", k, how, a2a_status_name(st),
                a2a_job_error(c->job));
            return -1;
        }
        if (op_check(&o) != 0)
            return -1;
        op_fini(&o);
    }
    slice_cap = 0;
    return verified(c, seed * 1000 + 999, "a blocking call after them");
}

/* wait_ops waits for o[0..k), of which o[first_fail..last_fail] must fail (the others may
 * succeed, then with the right data); o[first_fail] with want_st (A2A_OK: any failure) and a
 * message naming want, or (or_unavailable given) UNAVAILABLE with a message naming that. */
static int
wait_ops(ctx *c, op *o, int k, int first_fail, int last_fail, a2a_status want_st, const char *want,
         const char *or_unavailable)
{
    int rv = 0;
    for (int i = 0; i < k; i++) {
        a2a_status st = a2a_wait(o[i].req);
        const char *msg = c->job != NULL ? a2a_job_error(c->job) : "";
        if (st == A2A_OK && i >= first_fail && i <= last_fail) {
            say("FAILED: op %d returned OK", i);
            rv = -1;
        } else if (st == A2A_OK && op_check(&o[i]) != 0) {
            rv = -1;
        } else if (i == first_fail && want_st != A2A_OK &&
                   (st != want_st || (c->job != NULL && strstr(msg, want) == NULL)) &&
                   !(or_unavailable != NULL && st == A2A_ERR_UNAVAILABLE &&
                     (c->job == NULL || strstr(msg, or_unavailable) != NULL))) {
            say("FAILED: op %d: %s: %s (not %s naming \"%s\")", i, a2a_status_name(st), msg,
                a2a_status_name(want_st), want);
            rv = -1;
        }
        op_fini(&o[i]);
    }
    return rv;
}

static int
mode_deadline(ctx *c)
{
    op o[3];
    int64_t late = c->n - 1;
    char want[64];
    if (c->me == late)
        sleep_ms(2500);
    for (int i = 0; i < 3; i++) {
        op_make(&o[i], NULL, c->n, c->me, c->world, A2A_FLOAT32, 500 + (uint64_t)i, 1000);
        if (start(c, &o[i]) != 0)
            return -1;
    }
    /* the others' first fails naming the late rank; the late rank's first fails (a latecomer);
     * later ones may meet again (the late rank resynchronises), then with the right data */
    snprintf(want, sizeof(want), "waiting for group rank(s) %" PRId64, late);
    if (wait_ops(c, o, 3, 0, 0, c->me == late ? A2A_OK : A2A_ERR_DEADLINE_EXCEEDED, want, NULL) !=
        0)
        return -1;
    return verified(c, 600, "the next operation after a deadline");
}

/* mark_path: a file named what, one per cluster, that ranks of "leave" make to say how far they
 * are, so that the test's order holds however slow the machine is (a2a-launch gives every rank
 * the same coordinator URL, with its own port) */
static void
mark_path(char *buf, size_t len, const char *what)
{
    const char *u = getenv("A2A_COORDINATOR_URL");
    uint64_t h = u != NULL ? 0 : mix64((uint64_t)getppid()); /* no URL: the launcher's pid */
    for (; u != NULL && *u != '\0'; u++)
        h = mix64(h ^ (uint8_t)*u);
    snprintf(buf, len, "/tmp/a2a-nonblock-%016llx-%s", (unsigned long long)h, what);
}

static void
mark(const char *what)
{
    char path[96];
    FILE *f;
    mark_path(path, sizeof(path), what);
    if ((f = fopen(path, "w")) != NULL)
        fclose(f);
}

/* mark_wait waits (60 s at most) for mark(what), and removes it. */
static int
mark_wait(const char *what)
{
    char path[96];
    mark_path(path, sizeof(path), what);
    for (int i = 0; i < 6000; i++) {
        if (access(path, F_OK) == 0) {
            unlink(path);
            return 0;
        }
        sleep_ms(10);
    }
    say("FAILED: no \"%s\" from the other ranks within 60 s", what);
    return -1;
}

/* leave_child: the leaver's second job, which exits with its operations in flight. */
static int
leave_child(ctx *c)
{
    op o[3];
    for (int i = 0; i < 3; i++) {
        op_make(&o[i], NULL, c->n, c->me, c->world, A2A_INT64, 700 + (uint64_t)i, 20000);
        if (start(c, &o[i]) != 0)
            return 4;
    }
    sleep_ms(300);
    fflush(stdout);
    mark("left"); /* its process ends now: the kernel closes its session to the worker */
    _exit(0);     /* requests in flight, no a2a_job_close */
}

#define LEAVE_TIMEOUT_MS 1500

static int
mode_leave(ctx *c, const char *how)
{
    int64_t leaver = 1;
    op o[3];
    if (c->n < 2)
        return 0;
    if (c->me == leaver) {
        if (strcmp(how, "exit") == 0) {
            a2a_job_close(c->job); /* one live job per rank: the child's */
            c->job = NULL;
            pid_t child = fork();
            if (child == 0) {
                execl("/proc/self/exe", "nonblock_check", "leave-child", (char *)NULL);
                _exit(5);
            }
            int status = 0;
            waitpid(child, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                say("FAILED: the child exited with %d", status);
                return -1;
            }
        } else {
            for (int i = 0; i < 3; i++) {
                op_make(&o[i], NULL, c->n, c->me, c->world, A2A_INT64, 700 + (uint64_t)i, 20000);
                if (start(c, &o[i]) != 0)
                    return -1;
            }
            sleep_ms(300);
            a2a_job_close(c->job); /* with requests in flight: they end at once */
            c->job = NULL;
            mark("left");
            for (int i = 0; i < 3; i++) {
                a2a_status st = a2a_wait(o[i].req); /* valid after the close */
                if (st != A2A_ERR_UNAVAILABLE) {
                    say("FAILED: op %d of a closed job: %s", i, a2a_status_name(st));
                    return -1;
                }
                op_fini(&o[i]);
            }
        }
        /* back once the others' operations are over (they must not meet the new job) */
        for (int64_t r = 0; r < c->n; r++) {
            char what[32];
            snprintf(what, sizeof(what), "done-%lld", (long long)r);
            if (r != leaver && mark_wait(what) != 0)
                return -1;
        }
        if (a2a_job_open(&c->job, NULL, -1) != A2A_OK) {
            say("FAILED: reopen: %s", a2a_job_error(NULL));
            return -1;
        }
    } else {
        /* the leaver's operations cannot complete before it left: rank 0 comes after it left
         * (and not before 1.5 s) */
        if (c->me == 0) {
            sleep_ms(1500);
            if (mark_wait("left") != 0)
                return -1;
        }
        for (int i = 0; i < 3; i++) {
            op_make(&o[i], NULL, c->n, c->me, c->world, A2A_INT64, 700 + (uint64_t)i,
                    LEAVE_TIMEOUT_MS);
            if (start(c, &o[i]) != 0)
                return -1;
        }
        /* op 0 had the leaver's slices handed over (its worker completes it); 1 and 2 never
         * left the leaver: they fail */
        /* op 1 times out waiting for the leaver, or, when op 0 timed out at the others first
         * (a slow machine), the leaver's job was in op 1 as it left: it fails naming that */
        if (wait_ops(c, o, 3, 1, 2, A2A_ERR_DEADLINE_EXCEEDED, "waiting for group rank(s)",
                     "(world rank 1) on worker") != 0)
            return -1;
        char what[32];
        snprintf(what, sizeof(what), "done-%lld", (long long)c->me);
        mark(what);
    }
    return verified(c, 800, "the next operation after a job left");
}

/* gate_wait waits until the file $NB_GATE exists (the test script creates it). */
static int
gate_wait(int64_t max_ms)
{
    const char *gate = getenv("NB_GATE");
    for (int64_t t = 0; gate != NULL && t < max_ms; t += 100) {
        if (access(gate, F_OK) == 0)
            return 0;
        sleep_ms(100);
    }
    return gate == NULL ? 0 : -1;
}

/* retry_verified: blocking operations with the same matrix and values until one succeeds and
 * verifies (after a failure the ranks' numbers resynchronise and meet again). */
static int
retry_verified(ctx *c)
{
    for (int attempt = 1; attempt <= 10; attempt++) {
        op o;
        op_make(&o, NULL, c->n, c->me, c->world, A2A_INT32, 42, 8000);
        a2a_status st = a2a_all_to_all_v(c->job, &o.a);
        int ok = st == A2A_OK && op_check(&o) == 0;
        if (st != A2A_OK)
            say("attempt %d: %s: %s", attempt, a2a_status_name(st), a2a_job_error(c->job));
        op_fini(&o);
        if (ok) {
            say("verified after %d attempts", attempt);
            return 0;
        }
        if (st == A2A_OK)
            return -1; /* wrong data: printed */
    }
    say("FAILED: no verified operation in 10 attempts");
    return -1;
}

/* mode_kill (test_nonblock_kill.sh): ranks 1..n-1 start 3 operations that cannot complete
 * (rank 0 waits for the gate) and the script kills a worker: each must fail (UNAVAILABLE),
 * the first within 10 s; after the restart (the gate) everyone meets again. */
static int
mode_kill(ctx *c)
{
    op o[3];
    if (c->me != 0) {
        struct timespec t0, t1;
        for (int i = 0; i < 3; i++) {
            op_make(&o[i], NULL, c->n, c->me, c->world, A2A_INT32, 42, 30000);
            if (start(c, &o[i]) != 0)
                return -1;
        }
        say("started");
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < 3; i++) {
            a2a_status st = a2a_wait(o[i].req);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            int64_t ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
            say("in flight: op %d: %s: %s (%lld ms)", i, a2a_status_name(st),
                st == A2A_OK ? "" : a2a_job_error(c->job), (long long)ms);
            if (st != A2A_ERR_UNAVAILABLE) {
                say("FAILED: op %d in flight at the kill: %s, not UNAVAILABLE", i,
                    a2a_status_name(st));
                return -1;
            }
            op_fini(&o[i]);
        }
    }
    if (gate_wait(60000) != 0) {
        say("FAILED: no gate within 60 s");
        return -1;
    }
    return retry_verified(c);
}

static int
mode_args(ctx *c)
{
    int64_t z[64] = {0};
    a2a_alltoallv_args a = {
        .send_counts = z, .send_displacements = z, .recv_counts = z, .recv_displacements = z};
    a2a_request *r = (a2a_request *)&a;
    char longname[200];
    int done = 5;
    size_t idx = 0;
    memset(longname, 'g', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    if (a2a_all_to_all_v_start(NULL, &a, &r) != A2A_ERR_INVALID_ARGUMENT || r != NULL ||
        a2a_all_to_all_v_start(c->job, NULL, &r) != A2A_ERR_INVALID_ARGUMENT ||
        strstr(a2a_job_error(c->job), "args is NULL") == NULL ||
        a2a_all_to_all_v_start(c->job, &a, NULL) != A2A_ERR_INVALID_ARGUMENT ||
        strstr(a2a_job_error(c->job), "request is NULL") == NULL) {
        say("FAILED: NULL arguments to start");
        return -1;
    }
    a.group = longname;
    if (a2a_all_to_all_v_start(c->job, &a, &r) != A2A_ERR_INVALID_ARGUMENT || r != NULL ||
        strstr(a2a_job_error(c->job), "longer than 127") == NULL) {
        say("FAILED: a long group name: %s", a2a_job_error(c->job));
        return -1;
    }
    if (a2a_wait(NULL) != A2A_ERR_INVALID_ARGUMENT ||
        a2a_test(NULL, &done) != A2A_ERR_INVALID_ARGUMENT || done != 0 ||
        a2a_wait_any(0, NULL, &idx) != A2A_OK || idx != (size_t)-1 ||
        a2a_wait_all(0, NULL) != A2A_OK) {
        say("FAILED: NULL requests");
        return -1;
    }
    a2a_request_free(NULL);
    /* a call with bad counts fails at its wait with the blocking call's status, and has no
     * effect: the next operation works */
    a.group = NULL;
    z[0] = -1;
    if (a2a_all_to_all_v_start(c->job, &a, &r) != A2A_OK ||
        a2a_wait(r) != A2A_ERR_INVALID_ARGUMENT ||
        strstr(a2a_job_error(c->job), "negative") == NULL) {
        say("FAILED: bad counts through start: %s", a2a_job_error(c->job));
        return -1;
    }
    a2a_request_free(r);
    return verified(c, 900, "the next operation after bad arguments");
}

int
main(int argc, char **argv)
{
    ctx c = {0};
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    int rv;

    mode = argc > 1 ? argv[1] : "pipeline";
    if (a2a_job_open(&c.job, NULL, -1) != A2A_OK) {
        say("FAILED: a2a_job_open: %s", a2a_job_error(NULL));
        return 1;
    }
    if (a2a_get_rank_size(c.job, NULL, &c.n) != A2A_OK ||
        a2a_get_rank_id(c.job, NULL, &c.me) != A2A_OK) {
        say("FAILED: world group: %s", a2a_job_error(c.job));
        return 1;
    }
    world_me = c.me;
    c.world = malloc((size_t)c.n * 8), c.rev = malloc((size_t)c.n * 8);
    c.rot = malloc((size_t)c.n * 8);
    for (int64_t i = 0; i < c.n; i++) {
        c.world[i] = i;
        c.rev[i] = c.n - 1 - i;
        c.rot[i] = (i + 1) % c.n;
    }
    if (strcmp(mode, "pipeline") == 0)
        rv = mode_pipeline(&c, seed);
    else if (strcmp(mode, "threads") == 0)
        rv = mode_threads(&c, seed);
    else if (strcmp(mode, "free") == 0)
        rv = mode_free(&c, seed);
    else if (strcmp(mode, "deadline") == 0)
        rv = mode_deadline(&c);
    else if (strcmp(mode, "leave") == 0)
        rv = mode_leave(&c, argc > 2 ? argv[2] : "close");
    else if (strcmp(mode, "args") == 0)
        rv = mode_args(&c);
    else if (strcmp(mode, "single") == 0)
        rv = mode_single(&c, seed);
    else if (strcmp(mode, "leave-child") == 0)
        rv = leave_child(&c);
    else if (strcmp(mode, "kill") == 0)
        rv = mode_kill(&c);
    else {
        say("FAILED: unknown mode");
        rv = -1;
    }
    if (rv != 0)
        return 1;
    say("ok");
    a2a_job_close(c.job);
    free(c.world), free(c.rev), free(c.rot);
    return 0;
}
