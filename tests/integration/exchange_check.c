/*
 * exchange_check.c - an integration job for a2a_all_to_all_v and the group
 * calls, run under a2a-launch (one process per rank). argv[1] picks a mode:
 *
 *   random SEED ITERS  random count matrices for all 12 dtypes, permuted and
 *                      gapped displacements, on the world group and on a
 *                      group created at run time (even ranks, reversed)
 *   invalid            every invalid-argument class is refused, has no effect
 *   mismatch [E S]     rank 0 sends rank 1 S int16 where it expects E (default
 *                      1002 and 1001: one too many); sizes on both sides of the
 *                      eager limit take both paths of a worker
 *   threads            two threads, two groups, at the same time
 *   deadline           the last rank comes 2.5 s late
 *   big                ~48 MiB per rank, uneven
 *   loop SECONDS [GROUP]  verified operations until SECONDS pass, surviving
 *                      errors, on the world group or GROUP (every rank a member)
 *   loop-shared SECONDS  the same on the world group, in buffers from
 *                      a2a_buffer_alloc (most calls)
 *   recreate           (4 ranks) rank 0 destroys group "rg" (0 1 2 3) and creates
 *                      it again as (3 1): calls with the old size are refused
 *                      (INVALID_ARGUMENT, PERMISSION_DENIED for ranks left out) on
 *                      every worker, and the new group exchanges right
 *   reopen             each rank closes its job and opens the rank again at once,
 *                      forty times, as a remote and as a local job in turn
 *   orphan             (1x1) this job closes (one live job per rank), a second
 *                      job of rank 0 calls from two threads and
 *                      exits without a2a_job_close: the worker's threads for
 *                      its channels must end within 5 s (/proc/PID/task)
 *
 * Every element received is checked against what its sender wrote, and every
 * byte of the receive buffer outside the receive slices against a guard.
 * Values are raw bit patterns of the dtype's width, so float16 and bfloat16
 * are tested like the integers. Each rank prints "rank R: MODE ok" and exits 0
 * on success, or prints why and exits 1.
 */
#include <dirent.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "a2a.h"

#define GUARD 0xA5
#define NDTYPES 12
#define MIB ((int64_t)1 << 20)

static int64_t world_me = -1;
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

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
rng_next(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ULL;
    return mix64(*s);
}

static int64_t
rng_below(uint64_t *s, int64_t n)
{
    return n <= 0 ? 0 : (int64_t)(rng_next(s) % (uint64_t)n);
}

/* A group as this rank sees it. */
typedef struct {
    const char *name; /* NULL: the world group */
    int64_t n;        /* size */
    int64_t me;       /* this rank's group rank, -1 when not a member */
    int64_t *world;   /* world rank of each group rank */
} grp;

/* The element k that world rank src sends world rank dst under tag: its low bytes are used. */
static uint64_t
value_of(int64_t src, int64_t dst, int64_t k, uint64_t tag)
{
    return mix64(tag * 0xD6E8FEB86659FD93ULL ^ (uint64_t)src * 0x100000001B3ULL ^
                 (uint64_t)dst << 40 ^ (uint64_t)k << 1);
}

/*
 * layout places n slices of cnt elements in shuffled order with random gaps
 * of 0..3 elements; an empty slice gets a displacement somewhere in the
 * buffer so far (possibly inside another slice). *len is the buffer length.
 */
static void
layout(uint64_t *rng, int64_t n, const int64_t *cnt, int64_t *disp, int64_t *len)
{
    int64_t *perm = malloc((size_t)n * sizeof(int64_t)), pos = rng_below(rng, 4);
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = rng_below(rng, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t r = perm[i];
        if (cnt[r] == 0) {
            disp[r] = rng_below(rng, pos + 1);
        } else {
            disp[r] = pos;
            pos += cnt[r] + rng_below(rng, 4);
        }
    }
    *len = pos + rng_below(rng, 3);
    free(perm);
}

/* One operation's parameters, seen from one rank. */
typedef struct {
    a2a_job *job;
    const grp *g;
    a2a_dtype dtype;
    const int64_t *sc; /* what this rank sends to each group rank */
    const int64_t *rc; /* what it expects from each group rank */
    uint64_t tag;      /* goes into the values */
    uint64_t seed;     /* layout seed, local */
    int64_t timeout_ms;
    int flag_out;      /* loop mode: a bit sent in element 0 of every slice, with the tag */
    int *flag_in;      /* loop mode: OR of the bits received (NULL: not loop mode). The
                        * receiver then takes each sender's tag from its element 0 (the ranks'
                        * counts of calls differ once calls fail before reaching the worker) */
    a2a_status status; /* out */
    char msg[1100];    /* out: a2a_job_error when status != OK */
    int64_t elapsed_ms;
} op_spec;

static void
put_value(uint8_t *p, size_t esize, uint64_t v)
{
    memcpy(p, &v, esize); /* the low-order bytes on this (single-host) machine */
}

typedef struct {
    int64_t d, c;
} span;

static int
by_d(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->d < y->d ? -1 : x->d > y->d;
}

/* check_guard checks that every byte of buf outside the non-empty slices is GUARD. */
static int
check_guard(const uint8_t *buf, int64_t len, size_t esize, int64_t n, const int64_t *cnt,
            const int64_t *disp, const char *what)
{
    span *v = malloc(((size_t)n + 1) * sizeof(span));
    int64_t k = 0, pos = 0;
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (cnt[i] > 0)
            v[k++] = (span){disp[i], cnt[i]};
    qsort(v, (size_t)k, sizeof(span), by_d);
    v[k++] = (span){len, 0};
    for (int64_t i = 0; i < k && !bad; i++) {
        for (int64_t b = pos * (int64_t)esize; b < v[i].d * (int64_t)esize; b++)
            if (buf[b] != GUARD) {
                say("%s: byte %" PRId64 " of the receive buffer (outside every receive slice) "
                    "changed from 0x%02x to 0x%02x",
                    what, b, GUARD, buf[b]);
                bad = 1;
                break;
            }
        if (v[i].d + v[i].c > pos)
            pos = v[i].d + v[i].c;
    }
    free(v);
    return bad;
}

/*
 * With mode "shared", buffers come from a2a_buffer_alloc (memory shared with
 * the worker): both, only the send buffer or only the receive buffer, by the
 * operation's seed, so that every path of the worker is taken.
 */
static int shared_mode;

static uint8_t *
buf_alloc(a2a_job *job, size_t len, int shared)
{
    void *p = NULL;
    if (!shared)
        return malloc(len);
    if (a2a_buffer_alloc(job, len, &p) != A2A_OK) {
        say("a2a_buffer_alloc: %s", a2a_job_error(job));
        return NULL;
    }
    return p;
}

/*
 * shrink_shared tries what a broken or hostile job could do to the worker:
 * shrink the memfds behind its a2a_buffer_alloc buffers (the worker maps
 * them; a shorter file would make its next touch a SIGBUS). Returns how many
 * it could shrink: must be 0, as they are sealed.
 */
static int
shrink_shared(void)
{
    char path[64], target[256];
    int shrunk = 0, seen = 0;
    for (int fd = 3; fd < 1024; fd++) {
        ssize_t n;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if ((n = readlink(path, target, sizeof(target) - 1)) < 0)
            continue;
        target[n] = '\0';
        if (strstr(target, "memfd:a2a-buffer") == NULL) /* "/memfd:a2a-buffer (deleted)" */
            continue;
        seen++;
        if (ftruncate(fd, 0) == 0)
            shrunk++;
    }
    if (seen == 0)
        say("no a2a-buffer memfd found to try shrinking");
    return seen == 0 ? 1 : shrunk;
}

static void
buf_free(a2a_job *job, uint8_t *p, int shared)
{
    if (shared)
        a2a_buffer_free(job, p);
    else
        free(p);
}

/*
 * run_op runs one verified operation: 0 when it succeeded with the right
 * data, 1 when the call failed cleanly (s->status, s->msg; guard intact),
 * -1 on wrong data or a changed guard (printed).
 */
static int
run_op(op_spec *s)
{
    const grp *g = s->g;
    int64_t n = g->n, me = g->me, slen, rlen;
    int64_t *sd = calloc((size_t)n, 8), *rd = calloc((size_t)n, 8);
    size_t esize = a2a_dtype_size(s->dtype);
    uint64_t rng = s->seed;
    int rv = 0;

    layout(&rng, n, s->sc, sd, &slen);
    layout(&rng, n, s->rc, rd, &rlen);
    int sshared = shared_mode && s->seed % 4 != 1, rshared = shared_mode && s->seed % 4 != 2;
    uint8_t *send = buf_alloc(s->job, (size_t)slen * esize + 1, sshared);
    uint8_t *recv = buf_alloc(s->job, (size_t)rlen * esize + 1, rshared);
    if (send == NULL || recv == NULL)
        abort();
    memset(send, 0x3C, (size_t)slen * esize);
    memset(recv, GUARD, (size_t)rlen * esize);
    for (int64_t d = 0; d < n; d++)
        for (int64_t k = 0; k < s->sc[d]; k++) {
            uint8_t *p = send + (size_t)(sd[d] + k) * esize;
            put_value(p, esize, value_of(g->world[me], g->world[d], k, s->tag));
            if (k == 0 && s->flag_in != NULL) { /* loop mode: the header */
                uint32_t h = (uint32_t)(s->tag << 1) | (uint32_t)(s->flag_out & 1);
                memcpy(p, &h, 4);
            }
        }
    a2a_alltoallv_args a = {.group = g->name,
                            .dtype = s->dtype,
                            .send_data = send,
                            .send_len = (size_t)slen,
                            .send_counts = s->sc,
                            .send_displacements = sd,
                            .recv_data = recv,
                            .recv_len = (size_t)rlen,
                            .recv_counts = s->rc,
                            .recv_displacements = rd,
                            .timeout_ms = s->timeout_ms};
    int64_t t0 = now_ms();
    s->status = a2a_all_to_all_v(s->job, &a);
    s->elapsed_ms = now_ms() - t0;
    s->msg[0] = '\0';
    if (s->status != A2A_OK) {
        snprintf(s->msg, sizeof(s->msg), "%s", a2a_job_error(s->job));
        rv = 1;
    }
    for (int64_t src = 0; src < n && s->status == A2A_OK && rv == 0; src++) {
        uint64_t tag = s->tag;
        for (int64_t k = 0; k < s->rc[src]; k++) {
            uint8_t want[8], *got = recv + (size_t)(rd[src] + k) * esize;
            if (k == 0 && s->flag_in != NULL) { /* the sender's tag and stop bit */
                uint32_t h;
                memcpy(&h, got, 4);
                *s->flag_in |= (int)(h & 1);
                tag = h >> 1;
                continue;
            }
            put_value(want, esize, value_of(g->world[src], g->world[me], k, tag));
            if (memcmp(want, got, esize) != 0) {
                uint64_t w = 0, h = 0;
                memcpy(&w, want, esize);
                memcpy(&h, got, esize);
                say("group %s, dtype %d, tag %" PRIu64 ": element %" PRId64 " of %" PRId64
                    " from group rank %" PRId64 " is 0x%" PRIx64 ", expected 0x%" PRIx64,
                    g->name ? g->name : A2A_WORLD_GROUP, (int)s->dtype, tag, k, s->rc[src], src, h,
                    w);
                rv = -1;
                break;
            }
        }
    }
    if (check_guard(recv, rlen, esize, n, s->rc, rd,
                    s->status == A2A_OK ? "after a success" : "after a failure"))
        rv = -1;
    static int tried_shrink;
    if ((sshared || rshared) && !tried_shrink) { /* once: the worker must survive, sealed */
        tried_shrink = 1;
        if (shrink_shared() != 0) {
            say("an a2a_buffer_alloc buffer could be shrunk under the worker (no F_SEAL_SHRINK)");
            rv = -1;
        }
    }
    buf_free(s->job, send, sshared);
    buf_free(s->job, recv, rshared);
    free(sd);
    free(rd);
    return rv;
}

static int
status_is(a2a_status got, a2a_status want, a2a_job *job, const char *what)
{
    if (got == want)
        return 0;
    say("%s: got %s (%s), expected %s", what, a2a_status_name(got),
        got == A2A_OK ? "" : a2a_job_error(job), a2a_status_name(want));
    return 1;
}

/* grp_load resolves group name (NULL: world) and checks its rank conversions. */
static int
grp_load(a2a_job *job, const char *name, grp *g)
{
    const char *shown = name ? name : A2A_WORLD_GROUP;
    int64_t v, world;
    a2a_status st;
    memset(g, 0, sizeof(*g));
    g->name = name;
    if ((st = a2a_get_rank_size(job, name, &g->n)) != A2A_OK) {
        say("get_rank_size(%s): %s: %s", shown, a2a_status_name(st), a2a_job_error(job));
        return 1;
    }
    if ((st = a2a_get_rank_id(job, name, &g->me)) == A2A_ERR_PERMISSION_DENIED) {
        g->me = -1;
    } else if (st != A2A_OK) {
        say("get_rank_id(%s): %s: %s", shown, a2a_status_name(st), a2a_job_error(job));
        return 1;
    }
    g->world = calloc((size_t)g->n, sizeof(int64_t));
    for (int64_t r = 0; r < g->n; r++) {
        if ((st = a2a_get_world_rank_from_group_rank(job, name, r, &g->world[r])) != A2A_OK) {
            say("get_world_rank_from_group_rank(%s, %" PRId64 "): %s: %s", shown, r,
                a2a_status_name(st), a2a_job_error(job));
            return 1;
        }
        if ((st = a2a_get_group_rank_from_world_rank(job, name, g->world[r], &v)) != A2A_OK ||
            v != r) {
            say("get_group_rank_from_world_rank(%s, %" PRId64 "): %s, %" PRId64
                " (expected %" PRId64 ")",
                shown, g->world[r], a2a_status_name(st), v, r);
            return 1;
        }
    }
    if (g->me >= 0 && g->world[g->me] != world_me) {
        say("get_rank_id(%s) = %" PRId64 ", but that group rank is world rank %" PRId64, shown,
            g->me, g->world[g->me]);
        return 1;
    }
    if ((st = a2a_get_world_rank_from_group_rank(job, name, g->n, &world)) !=
        A2A_ERR_INVALID_ARGUMENT) {
        say("get_world_rank_from_group_rank(%s, %" PRId64 ") (out of range): %s, expected "
            "INVALID_ARGUMENT",
            shown, g->n, a2a_status_name(st));
        return 1;
    }
    return 0;
}

static void
grp_fini(grp *g)
{
    free(g->world);
    g->world = NULL;
}

/* make_group creates name with the given world ranks and loads it; checks its shape. */
static int
make_group(a2a_job *job, const char *name, int64_t m, const int64_t *members, grp *g)
{
    a2a_status st = a2a_create_group(job, name, (size_t)m, members);
    int64_t expect_me = -1;
    if (st != A2A_OK) {
        say("create_group(%s): %s: %s", name, a2a_status_name(st), a2a_job_error(job));
        return 1;
    }
    if (grp_load(job, name, g) != 0)
        return 1;
    for (int64_t i = 0; i < m; i++)
        if (members[i] == world_me)
            expect_me = i;
    if (g->n != m || g->me != expect_me) {
        say("group %s: size %" PRId64 ", my rank %" PRId64 "; expected %" PRId64 " and %" PRId64,
            name, g->n, g->me, m, expect_me);
        return 1;
    }
    for (int64_t i = 0; i < m; i++)
        if (g->world[i] != members[i]) {
            say("group %s: group rank %" PRId64 " is world rank %" PRId64 ", expected %" PRId64,
                name, i, g->world[i], members[i]);
            return 1;
        }
    return 0;
}

/* fill_matrix makes an n x n count matrix M[s * n + d]: ~25% zeros, else 1..maxc. */
static void
fill_matrix(uint64_t seed, int64_t n, int64_t maxc, int64_t *M)
{
    uint64_t rng = seed;
    for (int64_t i = 0; i < n * n; i++)
        M[i] = rng_below(&rng, 4) == 0 ? 0 : 1 + rng_below(&rng, maxc);
}

/* matrix_op runs one verified operation of g with count matrix M. */
static int
matrix_op(a2a_job *job, const grp *g, a2a_dtype dt, const int64_t *M, uint64_t tag,
          int64_t timeout_ms, op_spec *out)
{
    int64_t n = g->n, *sc = malloc((size_t)n * 8), *rc = malloc((size_t)n * 8);
    op_spec s = {.job = job,
                 .g = g,
                 .dtype = dt,
                 .sc = sc,
                 .rc = rc,
                 .tag = tag,
                 .seed = tag * 31 + (uint64_t)world_me * 7919 + 1,
                 .timeout_ms = timeout_ms};
    for (int64_t j = 0; j < n; j++) {
        sc[j] = M[g->me * n + j];
        rc[j] = M[j * n + g->me];
    }
    int rv = run_op(&s);
    if (rv == 1)
        say("group %s, dtype %d, tag %" PRIu64 ": %s: %s", g->name ? g->name : A2A_WORLD_GROUP,
            (int)dt, tag, a2a_status_name(s.status), s.msg);
    if (out != NULL)
        *out = s;
    free(sc);
    free(rc);
    return rv;
}

static int
random_mode(a2a_job *job, int64_t N, uint64_t seed, int64_t iters)
{
    grp w, ev = {0};
    int64_t members[1024], m = 0, big_iter = iters > 1 ? 1 : 0;
    int bad = 0;

    if (grp_load(job, NULL, &w) != 0)
        return 1;
    if (w.n != N || w.me != world_me) {
        say("world group: size %" PRId64 " rank %" PRId64 ", expected %" PRId64 " and %" PRId64,
            w.n, w.me, N, world_me);
        return 1;
    }
    for (int64_t r = 0; r < w.n; r++)
        if (w.world[r] != r) {
            say("world group rank %" PRId64 " is world rank %" PRId64, r, w.world[r]);
            return 1;
        }
    if (N >= 2) {
        for (int64_t r = (N - 1) / 2 * 2; r >= 0; r -= 2)
            members[m++] = r;
        if (make_group(job, "exchange_even_reversed", m, members, &ev) != 0)
            return 1;
        if (ev.me < 0) { /* a non-member may ask, not run */
            int64_t v;
            a2a_status st = a2a_get_group_rank_from_world_rank(job, ev.name, world_me, &v);
            if (st == A2A_OK) {
                say("get_group_rank_from_world_rank of a non-member gave %" PRId64, v);
                return 1;
            }
        }
    }
    for (int64_t it = 0; it < iters && !bad; it++)
        for (int dt = 0; dt < NDTYPES && !bad; dt++) {
            const grp *gs[2] = {&w, &ev};
            for (int k = 0; k < 2 && !bad; k++) {
                const grp *g = gs[k];
                if (g->n == 0 || g->me < 0)
                    continue;
                int64_t n = g->n, *M = malloc((size_t)(n * n) * 8);
                uint64_t tag =
                    seed * 1000003ULL + (uint64_t)it * 131 + (uint64_t)dt * 7 + (uint64_t)k;
                /* up to 64 KiB a slice: both sides of the 32 KiB eager limit, every dtype */
                fill_matrix(mix64(tag), n, 65536 / (int64_t)a2a_dtype_size((a2a_dtype)dt), M);
                if (it == big_iter) { /* one slice > 2.5 MiB: several 1 MiB chunks */
                    uint64_t rng = mix64(tag ^ 0xB16);
                    int64_t s = rng_below(&rng, n), d = rng_below(&rng, n);
                    size_t es = a2a_dtype_size((a2a_dtype)dt);
                    M[s * n + d] = (5 * MIB / 2 + rng_below(&rng, MIB / 2)) / (int64_t)es + 1;
                }
                bad = matrix_op(job, g, (a2a_dtype)dt, M, tag, 30000, NULL) != 0;
                free(M);
            }
        }
    grp_fini(&w);
    grp_fini(&ev);
    return bad;
}

/* reopen_mode: the job closes and a new one opens the same rank at once, forty times, in turn
 * as a local job and as a remote one (A2A_JOB_MODE), each time without waiting and without a
 * retry: a2a_job_close returns only once the worker let go of the rank. Then a verified
 * exchange. */
static int
reopen_mode(a2a_job **job, int64_t N)
{
    for (int i = 0; i < 40; i++) {
        a2a_status st;
        const char *mode = i % 2 == 0 ? "remote" : "local";
        a2a_job_close(*job);
        *job = NULL;
        setenv("A2A_JOB_MODE", mode, 1);
        if ((st = a2a_job_open(job, NULL, -1)) != A2A_OK) {
            say("FAILED: reopen %d (%s) right after a2a_job_close: %s: %s", i, mode,
                a2a_status_name(st), a2a_job_error(NULL));
            return 1;
        }
    }
    unsetenv("A2A_JOB_MODE");
    return random_mode(*job, N, 99, 2);
}

/* ---- invalid ---- */

/* refused checks that a call was refused with want and a message holding one of keys. */
static int
refused(a2a_job *job, a2a_status got, a2a_status want, const char *what, const char *keys)
{
    const char *msg = got == A2A_OK ? "" : a2a_job_error(job);
    char buf[256], *k, *save = NULL;
    int named = keys == NULL;
    if (got != want) {
        say("%s: got %s (%s), expected %s", what, a2a_status_name(got), msg, a2a_status_name(want));
        return 1;
    }
    if (msg == NULL || msg[0] == '\0') {
        say("%s: %s with an empty message", what, a2a_status_name(got));
        return 1;
    }
    snprintf(buf, sizeof(buf), "%s", keys ? keys : "");
    for (k = strtok_r(buf, "|", &save); k != NULL && !named; k = strtok_r(NULL, "|", &save))
        named = strstr(msg, k) != NULL;
    if (!named) {
        say("%s: the message \"%s\" does not name the problem (none of \"%s\")", what, msg, keys);
        return 1;
    }
    say("refused as expected: %s: %s: %s", what, a2a_status_name(got), msg);
    return 0;
}

typedef struct {
    int64_t n;
    int64_t sc[1024], sd[1024], rc[1024], rd[1024];
    uint32_t *send, *recv;
    int64_t slen, rlen;
} base_args;

static int64_t
base_count(int64_t s, int64_t d)
{
    return 3 + (s * 5 + d * 3) % 7;
}

static void
base_init(base_args *b, int64_t n, int64_t me)
{
    b->n = n;
    b->slen = b->rlen = 0;
    for (int64_t j = 0; j < n; j++) {
        b->sc[j] = base_count(me, j);
        b->sd[j] = b->slen;
        b->slen += b->sc[j];
        b->rc[j] = base_count(j, me);
        b->rd[j] = b->rlen + 1;
        b->rlen += b->rc[j] + 1;
    }
    free(b->send); /* base_init runs again to restore the arguments */
    free(b->recv);
    b->send = calloc((size_t)b->slen, 4);
    b->recv = malloc((size_t)b->rlen * 4);
    memset(b->recv, GUARD, (size_t)b->rlen * 4);
}

static a2a_alltoallv_args
base_call(base_args *b)
{
    return (a2a_alltoallv_args){.dtype = A2A_UINT32,
                                .send_data = b->send,
                                .send_len = (size_t)b->slen,
                                .send_counts = b->sc,
                                .send_displacements = b->sd,
                                .recv_data = b->recv,
                                .recv_len = (size_t)b->rlen,
                                .recv_counts = b->rc,
                                .recv_displacements = b->rd,
                                .timeout_ms = 5000};
}

static int
invalid_mode(a2a_job *job, int64_t N)
{
    grp w;
    base_args *b = calloc(1, sizeof(*b));
    a2a_alltoallv_args a;
    a2a_status st;
    int64_t v, j1 = N > 1 ? 1 : 0;
    char name128[129], name127[128];
    int bad = 0;

    if (grp_load(job, NULL, &w) != 0)
        return 1;
    base_init(b, N, world_me);
    memset(name128, 'g', 128);
    name128[128] = '\0';
    memset(name127, 'u', 127);
    name127[127] = '\0';

#define TRY(want, keys, what, ...)                                        \
    do {                                                                  \
        a = base_call(b);                                                 \
        __VA_ARGS__;                                                      \
        bad |= refused(job, a2a_all_to_all_v(job, &a), want, what, keys); \
    } while (0)
    TRY(A2A_ERR_NOT_FOUND, "no_such_group", "unknown group", a.group = "no_such_group");
    TRY(A2A_ERR_NOT_FOUND, "uuuu", "unknown group with a 127-byte name", a.group = name127);
    TRY(A2A_ERR_INVALID_ARGUMENT, "128|long|127", "group name of 128 bytes", a.group = name128);
    TRY(A2A_ERR_INVALID_ARGUMENT, "empty", "empty group name", a.group = "");
    TRY(A2A_ERR_INVALID_ARGUMENT, "control", "group name with a control character",
        a.group = "bad\x01name");
    TRY(A2A_ERR_INVALID_ARGUMENT, "negative", "negative send count", b->sc[j1] = -1);
    b->sc[j1] = base_count(world_me, j1);
    TRY(A2A_ERR_INVALID_ARGUMENT, "negative", "negative recv count", b->rc[0] = -3);
    b->rc[0] = base_count(0, world_me);
    TRY(A2A_ERR_INVALID_ARGUMENT, "negative", "negative send displacement", b->sd[0] = -5);
    b->sd[0] = 0;
    TRY(A2A_ERR_INVALID_ARGUMENT, "negative", "negative recv displacement", b->rd[j1] = -1);
    base_init(b, N, world_me); /* restore all */
    TRY(A2A_ERR_INVALID_ARGUMENT, "past|beyond|exceed|length", "send slice past send_len",
        a.send_len = (size_t)b->slen - 1);
    TRY(A2A_ERR_INVALID_ARGUMENT, "past|beyond|exceed|length", "recv slice past recv_len",
        a.recv_len = (size_t)b->rd[N - 1] + (size_t)b->rc[N - 1] - 1);
    TRY(A2A_ERR_INVALID_ARGUMENT, "overflow", "count * size overflows", a.dtype = A2A_FLOAT64;
        b->sc[j1] = INT64_MAX / 2);
    b->sc[j1] = base_count(world_me, j1);
    TRY(A2A_ERR_INVALID_ARGUMENT, "overflow|past", "displacement + count overflows",
        b->rd[0] = INT64_MAX - 1);
    b->rd[0] = 1;
    if (N > 1) {
        TRY(A2A_ERR_INVALID_ARGUMENT, "overlap", "overlapping receive slices",
            b->rd[1] = b->rd[0] + 1);
        base_init(b, N, world_me);
    }
    TRY(A2A_ERR_INVALID_ARGUMENT, "dtype|type", "dtype 99", a.dtype = (a2a_dtype)99);
    TRY(A2A_ERR_INVALID_ARGUMENT, "dtype|type", "dtype -1", a.dtype = (a2a_dtype)-1);
    TRY(A2A_ERR_INVALID_ARGUMENT, "count", "NULL send_counts", a.send_counts = NULL);
    TRY(A2A_ERR_INVALID_ARGUMENT, "displacement", "NULL send_displacements",
        a.send_displacements = NULL);
    TRY(A2A_ERR_INVALID_ARGUMENT, "count", "NULL recv_counts", a.recv_counts = NULL);
    TRY(A2A_ERR_INVALID_ARGUMENT, "displacement", "NULL recv_displacements",
        a.recv_displacements = NULL);
    TRY(A2A_ERR_INVALID_ARGUMENT, "NULL", "NULL send_data with send_len > 0", a.send_data = NULL);
    bad |= refused(job, a2a_all_to_all_v(job, NULL), A2A_ERR_INVALID_ARGUMENT, "NULL args",
                   "NULL|args");
    st = a2a_all_to_all_v(NULL, &a); /* its message is a2a_job_error(NULL)'s */
    if (st != A2A_ERR_INVALID_ARGUMENT || a2a_job_error(NULL)[0] == '\0') {
        say("NULL job: got %s (%s), expected INVALID_ARGUMENT", a2a_status_name(st),
            a2a_job_error(NULL));
        bad = 1;
    }
    if (N > 1) { /* a group without this rank: it may ask about it, not run on it */
        int64_t others[1024], m = 0;
        char name[64];
        for (int64_t r = 0; r < N; r++)
            if (r != world_me)
                others[m++] = r;
        snprintf(name, sizeof(name), "exchange_without_%" PRId64, world_me);
        bad |= status_is(a2a_create_group(job, name, (size_t)m, others), A2A_OK, job,
                         "create a group without me");
        bad |= status_is(a2a_get_rank_size(job, name, &v), A2A_OK, job, "size of it");
        bad |= refused(job, a2a_get_rank_id(job, name, &v), A2A_ERR_PERMISSION_DENIED,
                       "get_rank_id of a non-member", "member");
        bad |= refused(job, a2a_get_group_rank_from_world_rank(job, name, world_me, &v),
                       A2A_ERR_NOT_FOUND, "group rank of a non-member", "not");
        TRY(A2A_ERR_PERMISSION_DENIED, "member", "all_to_all_v by a non-member", a.group = name);
    }
    /* the group calls */
    bad |= refused(job, a2a_get_rank_size(job, "no_such_group", &v), A2A_ERR_NOT_FOUND,
                   "get_rank_size of an unknown group", "no_such_group");
    bad |= refused(job, a2a_get_rank_size(job, name128, &v), A2A_ERR_INVALID_ARGUMENT,
                   "get_rank_size with a 128-byte name", "128|long");
    bad |= refused(job, a2a_get_world_rank_from_group_rank(job, NULL, N, &v),
                   A2A_ERR_INVALID_ARGUMENT, "group rank out of range", "range");
    bad |= refused(job, a2a_get_world_rank_from_group_rank(job, NULL, -1, &v),
                   A2A_ERR_INVALID_ARGUMENT, "group rank -1", "range");
    {
        int64_t bad_ranks[2] = {0, N}, dup[2] = {0, 0}, one[1] = {0};
        bad |= refused(job, a2a_create_group(job, "exchange_bad_rank", 2, bad_ranks),
                       A2A_ERR_INVALID_ARGUMENT, "create_group with a rank out of range",
                       "range|rank");
        if (N > 1) {
            bad |= refused(job, a2a_create_group(job, "exchange_dup_rank", 2, dup),
                           A2A_ERR_INVALID_ARGUMENT, "create_group with a duplicate rank",
                           "duplicate|twice|more than once");
            st = a2a_create_group(job, A2A_WORLD_GROUP, 1, one);
            bad |= refused(job, st, st == A2A_OK ? A2A_ERR_ALREADY_EXISTS : st,
                           "create_group of the world with other members", A2A_WORLD_GROUP);
        }
        if (N > 1) { /* a name taken with other members; the same members again is fine */
            int64_t mine[2] = {world_me, (world_me + 1) % N};
            char name[64];
            snprintf(name, sizeof(name), "exchange_taken_%" PRId64, world_me);
            bad |= status_is(a2a_create_group(job, name, 1, mine), A2A_OK, job, "create_group");
            bad |= status_is(a2a_create_group(job, name, 1, mine), A2A_OK, job,
                             "create_group again with the same members");
            bad |= refused(job, a2a_create_group(job, name, 2, mine), A2A_ERR_ALREADY_EXISTS,
                           "create_group of a taken name with other members", name);
        }
        bad |= refused(job, a2a_create_group(job, "exchange_empty", 0, one),
                       A2A_ERR_INVALID_ARGUMENT, "create_group with no ranks", "rank");
        bad |= refused(job, a2a_create_group(job, name128, 1, one), A2A_ERR_INVALID_ARGUMENT,
                       "create_group with a 128-byte name", "128|long");
    }
#undef TRY
    /* none of that may have touched the receive buffer */
    for (int64_t k = 0; k < b->rlen * 4; k++)
        if (((uint8_t *)b->recv)[k] != GUARD) {
            say("byte %" PRId64 " of the receive buffer changed in a refused call", k);
            bad = 1;
            break;
        }
    /* and the world group still works, for everyone */
    int64_t *M = malloc((size_t)(N * N) * 8);
    fill_matrix(77, N, 500, M);
    if (matrix_op(job, &w, A2A_INT32, M, 4242, 30000, NULL) != 0) {
        say("the valid operation after the refused ones failed");
        bad = 1;
    }
    free(M);
    free(b->send);
    free(b->recv);
    free(b);
    grp_fini(&w);
    return bad;
}

/* ---- mismatch ---- */

static int
has_number(const char *msg, int64_t x)
{
    char num[32];
    size_t l = (size_t)snprintf(num, sizeof(num), "%" PRId64, x);
    for (const char *p = msg; (p = strstr(p, num)) != NULL; p++)
        if ((p == msg || p[-1] < '0' || p[-1] > '9') && (p[l] < '0' || p[l] > '9'))
            return 1;
    return 0;
}

static int
mismatch_mode(a2a_job *job, int64_t N, int64_t expect, int64_t sent)
{
    grp w;
    int64_t sc[1024], rc[1024];
    int bad = 0;

    if (N < 2) {
        say("needs at least 2 ranks");
        return 1;
    }
    if (grp_load(job, NULL, &w) != 0)
        return 1;
    for (int64_t j = 0; j < N; j++) {
        sc[j] = 200 + 10 * world_me + j;
        rc[j] = 200 + 10 * j + world_me;
    }
    if (world_me == 0)
        sc[1] = sent;
    if (world_me == 1)
        rc[0] = expect;
    op_spec s = {.job = job,
                 .g = &w,
                 .dtype = A2A_INT16,
                 .sc = sc,
                 .rc = rc,
                 .tag = 9,
                 .seed = 5 + (uint64_t)world_me,
                 .timeout_ms = 10000};
    int rv = run_op(&s);
    if (rv < 0)
        bad = 1;
    if (world_me <= 1) {
        if (s.status != A2A_ERR_COUNT_MISMATCH) {
            say("the mismatched call gave %s (%s), expected COUNT_MISMATCH",
                a2a_status_name(s.status), s.msg);
            bad = 1;
        } else if (!strstr(s.msg, "rank 0") || !strstr(s.msg, "rank 1") ||
                   !has_number(s.msg, expect) || !has_number(s.msg, sent)) {
            say("the COUNT_MISMATCH message \"%s\" does not name ranks 0 and 1 and counts %" PRId64
                " and %" PRId64,
                s.msg, sent, expect);
            bad = 1;
        } else {
            say("mismatched call: COUNT_MISMATCH as expected (%" PRId64 " ms): %s", s.elapsed_ms,
                s.msg);
        }
    } else {
        say("observed for an uninvolved rank: %s (%" PRId64 " ms)%s%s", a2a_status_name(s.status),
            s.elapsed_ms, s.status ? ": " : "", s.msg);
    }
    int64_t *M = malloc((size_t)(N * N) * 8);
    fill_matrix(99, N, 2000, M);
    if (matrix_op(job, &w, A2A_INT16, M, 10, 10000, NULL) != 0) {
        say("the operation after the mismatch failed");
        bad = 1;
    }
    free(M);
    grp_fini(&w);
    return bad;
}

/* ---- threads ---- */

typedef struct {
    a2a_job *job;
    const grp *g;
    uint64_t seed;
    int bad;
} thread_arg;

static void *
thread_main(void *p)
{
    thread_arg *t = p;
    int64_t n = t->g->n, *M = malloc((size_t)(n * n) * 8);
    for (int i = 0; i < 20 && !t->bad; i++) {
        uint64_t tag = t->seed * 1000 + (uint64_t)i;
        fill_matrix(mix64(tag), n, 20000, M);
        t->bad = matrix_op(t->job, t->g, (a2a_dtype)(i % NDTYPES), M, tag, 30000, NULL) != 0;
    }
    free(M);
    return NULL;
}

static int
threads_mode(a2a_job *job, int64_t N)
{
    grp w, o;
    int64_t members[1024];
    pthread_t th[2];
    for (int64_t i = 0; i < N; i++)
        members[i] = (N - 1 - i + N / 2) % N; /* another order: reversed and rotated */
    if (grp_load(job, NULL, &w) != 0 || make_group(job, "exchange_threads", N, members, &o) != 0)
        return 1;
    thread_arg ta[2] = {{job, &w, 1, 0}, {job, &o, 2, 0}};
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, thread_main, &ta[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    grp_fini(&w);
    grp_fini(&o);
    return ta[0].bad || ta[1].bad;
}

/* ---- orphan: a job that exits without closing ---- */

/* worker_pid finds the a2a-worker that a2a-launch (our parent) started; -1 if not exactly one. */
static pid_t
worker_pid(void)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    pid_t found = -1;
    int n = 0;
    while (d != NULL && (de = readdir(d)) != NULL) {
        char path[300], comm[64];
        int ppid = 0;
        FILE *f;
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        if (fscanf(f, "%*d (%63[^)]) %*c %d", comm, &ppid) == 2 && ppid == (int)getppid() &&
            strcmp(comm, "a2a-worker") == 0) {
            found = (pid_t)atoi(de->d_name);
            n++;
        }
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return n == 1 ? found : -1;
}

static int
thread_count(pid_t pid)
{
    char path[64];
    DIR *d;
    struct dirent *de;
    int n = 0;
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    if ((d = opendir(path)) == NULL)
        return -1;
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* orphan_child: the second job's part; says "calls done", waits for EOF on stdin, exits. */
static _Noreturn void
orphan_child(a2a_job *job)
{
    grp w;
    pthread_t th[2];
    char c;
    if (grp_load(job, NULL, &w) != 0)
        _exit(1);
    thread_arg ta[2] = {{job, &w, 11, 0}, {job, &w, 12, 0}};
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, thread_main, &ta[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("calls %s\n", ta[0].bad || ta[1].bad ? "failed" : "done");
    fflush(stdout);
    while (read(0, &c, 1) > 0)
        ;
    _exit(0); /* no a2a_job_close: the channels are left to the worker */
}

static int
orphan_mode(a2a_job **jobp, int64_t N, const char *self)
{
    pid_t w = worker_pid(), child;
    int base, during, after = -1, in[2], out[2], st = 0;
    char line[64] = "";
    struct pollfd pfd;
    int64_t t0;
    FILE *f;

    if (N != 1 || w < 0) {
        say("needs a 1x1 cluster under a2a-launch (worker pid %d)", (int)w);
        return 1;
    }
    a2a_job_close(*jobp); /* the rank is free for the second job */
    *jobp = NULL;
    base = thread_count(w);
    if (pipe(in) != 0 || pipe(out) != 0)
        return 1;
    if ((child = fork()) == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl("/proc/self/exe", self, "orphan-child", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    pfd = (struct pollfd){.fd = out[0], .events = POLLIN};
    f = fdopen(out[0], "r");
    if (poll(&pfd, 1, 60000) != 1 || fgets(line, sizeof(line), f) == NULL ||
        strcmp(line, "calls done\n") != 0) {
        say("the second job did not finish its calls: \"%s\"", line);
        return 1;
    }
    during = thread_count(w);
    close(in[1]); /* the child exits */
    waitpid(child, &st, 0);
    fclose(f);
    t0 = now_ms();
    while (now_ms() - t0 < 5000 && (after = thread_count(w)) > base)
        sleep_ms(50);
    say("worker threads: %d before, %d with the second job's channels, %d %" PRId64
        " ms after it exited",
        base, during, after, now_ms() - t0);
    if (during <= base || after > base) /* fewer is fine: another thread of the worker ended */
        return 1;
    if ((st = a2a_job_open(jobp, NULL, -1)) != A2A_OK) { /* the dead job's rank is free */
        say("a2a_job_open after the second job: %s", a2a_job_error(NULL));
        return 1;
    }
    return random_mode(*jobp, N, 99, 1); /* and the worker still serves */
}

/* ---- deadline ---- */

static int
deadline_mode(a2a_job *job, int64_t N)
{
    grp w;
    int64_t *M = malloc((size_t)(N * N) * 8);
    op_spec s;
    int bad = 0;

    if (N < 2) {
        say("needs at least 2 ranks");
        return 1;
    }
    if (grp_load(job, NULL, &w) != 0)
        return 1;
    fill_matrix(5, N, 1000, M);
    if (world_me == N - 1) {
        sleep_ms(2500);
        int rv = matrix_op(job, &w, A2A_FLOAT32, M, 1, 1000, &s);
        say("the latecomer's call: %s after %" PRId64 " ms: %s", a2a_status_name(s.status),
            s.elapsed_ms, s.msg);
        if (rv == 0 || s.status == A2A_OK) {
            say("the latecomer's call succeeded, but the operation had failed for the others");
            bad = 1;
        } else if (rv < 0 || s.elapsed_ms > 3000) {
            bad = 1;
        }
    } else {
        int rv = matrix_op(job, &w, A2A_FLOAT32, M, 1, 1000, &s);
        if (rv < 0) {
            bad = 1;
        } else if (s.status != A2A_ERR_DEADLINE_EXCEEDED) {
            say("expected DEADLINE_EXCEEDED, got %s (%s)", a2a_status_name(s.status), s.msg);
            bad = 1;
        } else if (s.elapsed_ms > 2000) {
            say("DEADLINE_EXCEEDED took %" PRId64 " ms with timeout_ms 1000", s.elapsed_ms);
            bad = 1;
        } else if (!has_number(s.msg, N - 1) || !strstr(s.msg, "rank")) {
            say("the DEADLINE_EXCEEDED message \"%s\" does not name group rank %" PRId64, s.msg,
                N - 1);
            bad = 1;
        } else {
            say("DEADLINE_EXCEEDED after %" PRId64 " ms as expected: %s", s.elapsed_ms, s.msg);
        }
    }
    fill_matrix(6, N, 1000, M);
    if (matrix_op(job, &w, A2A_FLOAT32, M, 2, 15000, NULL) != 0) {
        say("the operation after the deadline failed");
        bad = 1;
    }
    free(M);
    grp_fini(&w);
    return bad;
}

/* ---- big ---- */

static int
big_mode(a2a_job *job, int64_t N)
{
    grp w;
    int64_t *M = calloc((size_t)(N * N), 8), base = 48 * MIB / 4 / N;
    op_spec s = {0};
    if (M == NULL || grp_load(job, NULL, &w) != 0)
        return 1;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < N; j++)
            M[i * N + j] = base / 2 + base * ((i * 7 + j * 3) % 5) / 4 + i + j;
    int rv = matrix_op(job, &w, A2A_FLOAT32, M, 48, 120000, &s);
    if (rv == 0) {
        int64_t bytes = 0;
        for (int64_t j = 0; j < N; j++)
            bytes += 4 * (M[world_me * N + j] + M[j * N + world_me]);
        say("%" PRId64 " bytes sent+received in %" PRId64 " ms", bytes, s.elapsed_ms);
    }
    free(M);
    grp_fini(&w);
    return rv != 0;
}

/* ---- loop ---- */

/*
 * Operations until SECONDS pass. A rank whose time is up says so in a bit of
 * every slice it sends; all ranks stop after the first successful operation
 * that carried such a bit, so they stop at the same operation.
 */
static int
loop_mode(a2a_job *job, int64_t seconds, const char *group)
{
    grp w;
    int64_t t0 = now_ms(), hard = t0 + (seconds + 60) * 1000, ok = 0, errors = 0,
            ok_after_error = 0;
    int bad = 0, stop = 0;

    if (grp_load(job, group, &w) != 0)
        return 1;
    if (w.me < 0) {
        say("not a member of group %s", group);
        return 1;
    }
    int64_t N = w.n, *M = malloc((size_t)(N * N) * 8), *sc = malloc((size_t)N * 8),
            *rc = malloc((size_t)N * 8);
    uint64_t rng = 1000;                /* one matrix for all: the ranks' call counts drift apart */
    for (int64_t k = 0; k < N * N; k++) /* no zeros: every flag gets through */
        M[k] = 1 + (rng_below(&rng, 4) == 0 ? rng_below(&rng, 300000) : rng_below(&rng, 3000));
    for (int64_t j = 0; j < N; j++) {
        sc[j] = M[w.me * N + j];
        rc[j] = M[j * N + w.me];
    }
    for (uint64_t i = 0; !stop && !bad; i++) {
        int flag = 0;
        op_spec s = {.job = job,
                     .g = &w,
                     .dtype = A2A_UINT32,
                     .sc = sc,
                     .rc = rc,
                     .tag = i & 0x7FFFFFFF,
                     .seed = i * 3 + (uint64_t)world_me,
                     .timeout_ms = 3000,
                     .flag_out = now_ms() - t0 >= seconds * 1000,
                     .flag_in = &flag};
        int rv = run_op(&s);
        if (rv < 0) {
            bad = 1;
        } else if (rv == 1) {
            errors++;
            ok_after_error = 0;
            say("operation %" PRIu64 " (%" PRId64 " ms): %s: %s", i, now_ms() - t0,
                a2a_status_name(s.status), s.msg);
            sleep_ms(100);
        } else {
            ok++;
            ok_after_error++;
            stop = flag | s.flag_out;
        }
        if (now_ms() > hard) {
            say("no common successful operation to stop at after %" PRId64 " s", seconds + 60);
            bad = 1;
        }
    }
    say("%" PRId64 " operations verified, %" PRId64 " failed, %" PRId64 " succeeded after the "
        "last failure",
        ok, errors, ok_after_error);
    if (!bad && ok_after_error < 1)
        bad = 1;
    free(M);
    free(sc);
    free(rc);
    grp_fini(&w);
    return bad;
}

/* recreate_op: one verified operation on g with counts 1 + (s * 7 + d) % 5; its status. */
static a2a_status
recreate_op(a2a_job *job, const grp *g, uint64_t tag, const char *what)
{
    int64_t *sc = malloc((size_t)g->n * 8), *rc = malloc((size_t)g->n * 8);
    for (int64_t j = 0; j < g->n; j++) {
        sc[j] = 1 + (g->me * 7 + j) % 5;
        rc[j] = 1 + (j * 7 + g->me) % 5;
    }
    op_spec s = {.job = job,
                 .g = g,
                 .dtype = A2A_INT64,
                 .sc = sc,
                 .rc = rc,
                 .tag = tag,
                 .seed = tag * 5 + (uint64_t)world_me,
                 .timeout_ms = 10000};
    int rv = run_op(&s);
    free(sc);
    free(rc);
    if (rv < 0)
        return A2A_ERR_INTERNAL; /* wrong data: printed */
    if (rv > 0)
        say("%s: %s: %s", what, a2a_status_name(s.status), s.msg);
    return s.status;
}

static int
recreate_mode(a2a_job *job, int64_t N)
{
    static const int64_t old_members[] = {0, 1, 2, 3}, new_members[] = {3, 1};
    grp world, old, fresh;
    a2a_status st, want;
    int64_t size = 0;
    int bad = 0;

    if (N != 4) {
        say("needs 4 ranks");
        return 1;
    }
    if (grp_load(job, NULL, &world) != 0 || make_group(job, "rg", 4, old_members, &old) != 0)
        return 1;
    if (recreate_op(job, &old, 1, "the first group") != A2A_OK ||
        recreate_op(job, &world, 2, "world, before") != A2A_OK)
        return 1;
    if (world_me == 0) {
        if ((st = a2a_destroy_group(job, "rg")) != A2A_OK ||
            (st = a2a_create_group(job, "rg", 2, new_members)) != A2A_OK) {
            say("destroy and create rg: %s: %s", a2a_status_name(st), a2a_job_error(job));
            return 1;
        }
    }
    if (recreate_op(job, &world, 3, "world, after the new rg") != A2A_OK)
        return 1;
    /* the call as the job last saw the group (4 ranks): every worker knows it changed */
    want = world_me == 1 || world_me == 3 ? A2A_ERR_INVALID_ARGUMENT : A2A_ERR_PERMISSION_DENIED;
    st = recreate_op(job, &old, 4, "a call with the old size");
    if (st != want) {
        say("a call on the destroyed group's size gave %s, expected %s", a2a_status_name(st),
            a2a_status_name(want));
        bad = 1;
    }
    if (world_me == 1 || world_me == 3) {
        /* the new size, before any group call: liba2a asks for the group again by itself */
        int64_t world2[] = {3, 1};
        grp guess = {.name = "rg", .n = 2, .me = world_me == 3 ? 0 : 1, .world = world2};
        if (recreate_op(job, &guess, 7, "the new group, its size not asked for") != A2A_OK)
            bad = 1;
    }
    if ((st = a2a_get_rank_size(job, "rg", &size)) != A2A_OK || size != 2) {
        say("get_rank_size(rg) after it was created again: %s, %lld (expected 2)",
            a2a_status_name(st), (long long)size);
        bad = 1;
    }
    if (world_me == 1 || world_me == 3) {
        if (make_group(job, "rg", 2, new_members, &fresh) != 0)
            return 1;
        if (recreate_op(job, &fresh, 5, "the new group") != A2A_OK)
            bad = 1;
        grp_fini(&fresh);
    }
    if (recreate_op(job, &world, 6, "world, at the end") != A2A_OK)
        bad = 1;
    grp_fini(&old);
    grp_fini(&world);
    return bad;
}

/*
 * huge: rank 0 sends rank 1 one slice of more than 2 GiB of int8 (a count that
 * does not fit in 32 bits), every other pair sends 3 elements; every byte is
 * checked. Needs about 5 GiB of memory for two ranks.
 */
#define HUGE_BYTES (((int64_t)9 << 28) + 12345) /* 2.25 GiB + a bit */

static uint8_t
huge_byte(int64_t k)
{
    return (uint8_t)((k * 131 + (k >> 20) * 7 + 3) & 0xff);
}

static int
huge_mode(a2a_job *job, int64_t N)
{
    int64_t *c = calloc((size_t)N * 4, sizeof(int64_t)), send_total = 0, recv_total = 0;
    int64_t *sc = c, *sd = c + N, *rc = c + 2 * N, *rd = c + 3 * N, bad = 0;
    uint8_t *sb, *rb;
    a2a_status st;

    if (N < 2) {
        say("needs at least 2 ranks");
        return 1;
    }
    for (int64_t j = 0; j < N; j++) {
        sc[j] = world_me == 0 && j == 1 ? HUGE_BYTES : 3;
        rc[j] = world_me == 1 && j == 0 ? HUGE_BYTES : 3;
        sd[j] = send_total;
        rd[j] = recv_total;
        send_total += sc[j];
        recv_total += rc[j];
    }
    sb = malloc((size_t)send_total);
    rb = malloc((size_t)recv_total);
    if (sb == NULL || rb == NULL) {
        say("cannot allocate %" PRId64 " + %" PRId64 " bytes", send_total, recv_total);
        return 1;
    }
    for (int64_t j = 0; j < N; j++)
        for (int64_t k = 0; k < sc[j]; k++)
            sb[sd[j] + k] = sc[j] == HUGE_BYTES ? huge_byte(k) : (uint8_t)(world_me * 16 + j);
    memset(rb, GUARD, (size_t)recv_total);
    a2a_alltoallv_args a = {.dtype = A2A_INT8,
                            .send_data = sb,
                            .send_len = (size_t)send_total,
                            .send_counts = sc,
                            .send_displacements = sd,
                            .recv_data = rb,
                            .recv_len = (size_t)recv_total,
                            .recv_counts = rc,
                            .recv_displacements = rd,
                            .timeout_ms = 120000};
    int64_t t0 = now_ms();
    if ((st = a2a_all_to_all_v(job, &a)) != A2A_OK) {
        say("a2a_all_to_all_v: %s: %s", a2a_status_name(st), a2a_job_error(job));
        return 1;
    }
    for (int64_t i = 0; i < N && !bad; i++)
        for (int64_t k = 0; k < rc[i] && !bad; k++) {
            uint8_t want = rc[i] == HUGE_BYTES ? huge_byte(k) : (uint8_t)(i * 16 + world_me);
            if (rb[rd[i] + k] != want) {
                say("byte %" PRId64 " from rank %" PRId64 " is %u, expected %u", k, i,
                    rb[rd[i] + k], want);
                bad = 1;
            }
        }
    if (world_me == 1 && !bad)
        say("%" PRId64 " bytes from rank 0 verified (%" PRId64 " ms)", (int64_t)HUGE_BYTES,
            now_ms() - t0);
    free(sb);
    free(rb);
    free(c);
    return (int)bad;
}

int
main(int argc, char **argv)
{
    const char *env_n = getenv("A2A_WORLD_SIZE"), *env_r = getenv("A2A_RANK");
    a2a_job *job;
    int64_t N;
    a2a_status st;
    int bad;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || env_n == NULL || env_r == NULL) {
        fprintf(stderr,
                "usage: exchange_check random SEED ITERS | invalid | mismatch | threads |"
                " deadline | big | huge | loop SECONDS [GROUP] | loop-shared SECONDS | recreate"
                "  (under a2a-launch)\n");
        return 2;
    }
    mode = argv[1];
    N = atoll(env_n);
    world_me = atoll(env_r);
    if ((st = a2a_job_open(&job, NULL, -1)) != A2A_OK) {
        say("a2a_job_open: %s: %s", a2a_status_name(st), a2a_job_error(NULL));
        return 1;
    }
    if (strcmp(mode, "shared") == 0 && argc == 4) { /* random, in shared buffers */
        shared_mode = 1;
        bad = random_mode(job, N, strtoull(argv[2], NULL, 10), atoll(argv[3]));
    } else if (strcmp(mode, "random") == 0 && argc == 4)
        bad = random_mode(job, N, strtoull(argv[2], NULL, 10), atoll(argv[3]));
    else if (strcmp(mode, "invalid") == 0)
        bad = invalid_mode(job, N);
    else if (strcmp(mode, "mismatch") == 0)
        bad = mismatch_mode(job, N, argc >= 4 ? atoll(argv[2]) : 1001,
                            argc >= 4 ? atoll(argv[3]) : 1002);
    else if (strcmp(mode, "threads") == 0)
        bad = threads_mode(job, N);
    else if (strcmp(mode, "deadline") == 0)
        bad = deadline_mode(job, N);
    else if (strcmp(mode, "big") == 0)
        bad = big_mode(job, N);
    else if (strcmp(mode, "huge") == 0)
        bad = huge_mode(job, N);
    else if (strcmp(mode, "orphan") == 0)
        bad = orphan_mode(&job, N, argv[0]);
    else if (strcmp(mode, "reopen") == 0)
        bad = reopen_mode(&job, N);
    else if (strcmp(mode, "orphan-child") == 0)
        orphan_child(job);
    else if (strcmp(mode, "loop") == 0 && (argc == 3 || argc == 4))
        bad = loop_mode(job, atoll(argv[2]), argc == 4 ? argv[3] : NULL);
    else if (strcmp(mode, "loop-shared") == 0 && argc == 3) { /* loop, in shared buffers */
        shared_mode = 1;
        bad = loop_mode(job, atoll(argv[2]), NULL);
    } else if (strcmp(mode, "recreate") == 0)
        bad = recreate_mode(job, N);
    else {
        say("unknown mode or wrong arguments");
        bad = 2;
    }
    a2a_job_close(job);
    if (bad == 0)
        printf("rank %" PRId64 ": %s ok\n", world_me, mode);
    else
        printf("rank %" PRId64 ": %s FAILED\n", world_me, mode);
    return bad ? 1 : 0;
}
