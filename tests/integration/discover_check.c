/*
 * discover_check.c - count discovery end to end (recv_counts == NULL, counts to
 * recv_counts_out), run under a2a-launch (one process per rank). argv[1]:
 *
 *   random SEED ITERS  random count matrices in all 12 dtypes on the world group: zero,
 *                      eager (<= 32 KiB) and streamed slices (some over 1 MiB, several DATA
 *                      chunks), the self slice, local pairs and remote pairs. Each rank
 *                      discovers or gives its counts (then recv_counts_out gets them too) at
 *                      random, with a plain buffer or one from a2a_buffer_alloc, and a capacity
 *                      of exactly what comes or more. Every element is checked against its
 *                      sender and position (packed in group-rank order), every count, and
 *                      every byte from the end of what came to the end of the buffer (guard).
 *   small SEED ITERS   each iteration one rank (in turn) gets a receive buffer too small by
 *                      1..all elements: every member fails RESOURCE_EXHAUSTED with a message
 *                      naming that rank, the elements it needed and its capacity; no byte of
 *                      any rank's buffer past its recv_len (nor, at the short rank, anywhere)
 *                      changed; the next operation (discovery again) is right.
 *
 *   ... nb             (a 4th argument, with random or small) every operation through
 *                      a2a_all_to_all_v_start, ended by a2a_wait or by a2a_test polling;
 *                      every other one with slices of at most 2 KiB, so that its start
 *                      sends it to the worker itself and the waiting thread ends it
 *   dtypes             (2 ranks) int8 sent, int64 received, the receiver late: both fail
 *                      INVALID_ARGUMENT (the slice kept for it is checked), the next op works
 *
 * Each rank prints "rank R: MODE ok" and exits 0, or prints why and exits 1.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "a2a.h"

#define GUARD 0xA5
#define NDTYPES 12
#define SLACK 64 /* guard elements past every receive buffer's recv_len */

static int64_t world_me = -1;
static int nb; /* through the non-blocking calls, and small slices every other operation */
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

static uint64_t
value_of(int64_t src, int64_t dst, int64_t k, uint64_t tag)
{
    return mix64(tag * 0xD6E8FEB86659FD93ULL ^ (uint64_t)src * 0x100000001B3ULL ^
                 (uint64_t)dst << 40 ^ (uint64_t)k << 1);
}

/* matrix fills M (n x n, M[s * n + d]) for operation tag: the same at every rank. */
static void
matrix(int64_t *M, int64_t n, size_t es, uint64_t tag)
{
    uint64_t rng = mix64(tag);
    for (int64_t i = 0; i < n * n; i++) {
        int64_t kind = rng_below(&rng, 10), b;
        if (kind < 2)
            b = 0;
        else if (kind < 6)
            b = 1 + rng_below(&rng, 32768); /* eager (at most 32 KiB) */
        else if (kind < 9)
            b = 32769 + rng_below(&rng, 200000); /* streamed, one DATA chunk */
        else
            b = (1 << 20) + rng_below(&rng, 1 << 20); /* several chunks */
        if (nb && tag % 2 == 0)
            b %= 2048;
        M[i] = (b + (int64_t)es - 1) / (int64_t)es;
    }
}

typedef struct {
    a2a_job *job;
    int64_t n, me;
} ctx;

/* A receive buffer: recv_len elements at p, SLACK guard elements after, in plain or shared
 * memory (base: what to free). */
typedef struct {
    uint8_t *base, *p;
    size_t bytes; /* of base */
    int shared;
} rbuf;

static int
rbuf_make(ctx *c, rbuf *b, size_t recv_len, size_t es, int shared)
{
    memset(b, 0, sizeof(*b));
    b->bytes = (recv_len + SLACK) * es + 64;
    b->shared = shared;
    if (shared) {
        void *p;
        if (a2a_buffer_alloc(c->job, b->bytes, &p) != A2A_OK) {
            say("FAILED: a2a_buffer_alloc: %s", a2a_job_error(c->job));
            return -1;
        }
        b->base = p;
    } else if ((b->base = malloc(b->bytes)) == NULL) {
        return -1;
    }
    memset(b->base, GUARD, b->bytes);
    b->p = b->base + 64 - (64 % es ? 64 % es : 0); /* some offset into the memory */
    return 0;
}

static void
rbuf_free(ctx *c, rbuf *b)
{
    if (b->shared)
        (void)a2a_buffer_free(c->job, b->base);
    else
        free(b->base);
}

/* guard_ok checks that bytes [from, to) of b->base are all GUARD. */
static int
guard_ok(const rbuf *b, size_t from, size_t to, const char *what, uint64_t tag)
{
    for (size_t i = from; i < to; i++)
        if (b->base[i] != GUARD) {
            say("FAILED: op %" PRIu64 ": byte %zu %s was written (0x%02x)", tag, i, what,
                b->base[i]);
            return -1;
        }
    return 0;
}

/* send_fill makes this rank's send buffer for M (packed, in order), *sc and *sd its counts. */
static uint8_t *
send_fill(const ctx *c, const int64_t *M, size_t es, uint64_t tag, int64_t *sc, int64_t *sd,
          size_t *len)
{
    size_t total = 0;
    for (int64_t d = 0; d < c->n; d++) {
        sc[d] = M[c->me * c->n + d];
        sd[d] = (int64_t)total;
        total += (size_t)sc[d];
    }
    uint8_t *p = malloc(total * es + 1);
    for (int64_t d = 0; p != NULL && d < c->n; d++)
        for (int64_t k = 0; k < sc[d]; k++) {
            uint64_t v = value_of(c->me, d, k, tag);
            memcpy(p + ((size_t)sd[d] + (size_t)k) * es, &v, es);
        }
    *len = total;
    return p;
}

/* one_op runs operation tag with dtype dt; short_rank >= 0: that rank's buffer is too small by
 * `less` elements (everyone must fail). Returns 0 when everything checked out. */
static int
one_op(ctx *c, uint64_t tag, a2a_dtype dt, int64_t short_rank, int64_t less)
{
    int64_t n = c->n, me = c->me;
    size_t es = a2a_dtype_size(dt), slen, need = 0;
    int64_t *M = malloc((size_t)(n * n) * sizeof(int64_t));
    int64_t *sc = malloc((size_t)n * sizeof(int64_t)), *sd = malloc((size_t)n * sizeof(int64_t));
    int64_t *rc = malloc((size_t)n * sizeof(int64_t)), *rd = malloc((size_t)n * sizeof(int64_t));
    int64_t *out = malloc((size_t)(n + 1) * sizeof(int64_t));
    uint64_t rng = mix64(tag ^ (uint64_t)me * 77);
    uint8_t *send;
    int rv = -1;
    rbuf b;

    matrix(M, n, es, tag);
    send = send_fill(c, M, es, tag, sc, sd, &slen);
    for (int64_t s = 0; s < n; s++) {
        rc[s] = M[s * n + me];
        rd[s] = (int64_t)need;
        need += (size_t)rc[s];
    }
    int64_t victim_need = 0;
    for (int64_t s = 0; short_rank >= 0 && s < n; s++)
        victim_need += M[s * n + short_rank];
    if (victim_need == 0) /* nothing comes to it: no buffer is too small */
        short_rank = -1;
    /* known counts for some ranks (never the short one), discovery for the others */
    int discover = short_rank == me || rng_below(&rng, 3) != 0;
    int shared = rng_below(&rng, 2);
    size_t cap = need + (rng_below(&rng, 2) ? 0 : (size_t)rng_below(&rng, 100));
    if (short_rank == me)
        cap = need > (size_t)less ? need - (size_t)less : 0;
    if (rbuf_make(c, &b, cap, es, shared) != 0)
        goto out;
    for (int64_t s = 0; s <= n; s++)
        out[s] = -7; /* out[n]: never written */
    a2a_alltoallv_args a = {.dtype = dt,
                            .send_data = send,
                            .send_len = slen,
                            .send_counts = sc,
                            .send_displacements = sd,
                            .recv_data = b.p,
                            .recv_len = cap,
                            .recv_counts = discover ? NULL : rc,
                            .recv_displacements = discover ? NULL : rd,
                            .recv_counts_out = out,
                            .timeout_ms = 20000};
    a2a_status st;
    if (nb) {
        a2a_request *req = NULL;
        int done = 0;
        if ((st = a2a_all_to_all_v_start(c->job, &a, &req)) == A2A_OK) {
            if (tag % 4 < 2)
                st = a2a_wait(req);
            else
                while ((st = a2a_test(req, &done)) == A2A_OK && !done)
                    ;
            a2a_request_free(req);
        }
    } else {
        st = a2a_all_to_all_v(c->job, &a);
    }
    size_t off = (size_t)(b.p - b.base);
    if (short_rank >= 0) {
        char want[200];
        const char *msg = a2a_job_error(c->job);
        if (st != A2A_ERR_RESOURCE_EXHAUSTED) {
            say("FAILED: op %" PRIu64 " (rank %" PRId64 " short by %" PRId64 "): %s (%s)", tag,
                short_rank, less, a2a_status_name(st), st == A2A_OK ? "" : msg);
            goto out_b;
        }
        snprintf(want, sizeof(want), "group rank %" PRId64 " (world rank %" PRId64 ")", short_rank,
                 short_rank);
        char needs[120], holds[120];
        snprintf(needs, sizeof(needs), "needs %" PRId64 " ", victim_need);
        snprintf(holds, sizeof(holds), "holds %" PRId64,
                 victim_need > less ? victim_need - less : 0);
        if (strstr(msg, want) == NULL || strstr(msg, needs) == NULL || strstr(msg, holds) == NULL) {
            say("FAILED: op %" PRIu64 ": message does not name %s, %s, %s: %s", tag, want, needs,
                holds, msg);
            goto out_b;
        }
        /* nothing of the failed operation past recv_len; at the short rank nothing at all;
         * its counts untouched */
        if (guard_ok(&b, short_rank == me ? 0 : off + cap * es, b.bytes, "past recv_len", tag) != 0)
            goto out_b;
        for (int64_t s = 0; s <= n; s++)
            if (out[s] != -7) {
                say("FAILED: op %" PRIu64 ": recv_counts_out[%" PRId64 "] written on failure", tag,
                    s);
                goto out_b;
            }
        rv = 0;
        goto out_b;
    }
    if (st != A2A_OK) {
        say("FAILED: op %" PRIu64 " dtype %d (%s, %s buffer): %s: %s", tag, (int)dt,
            discover ? "discovery" : "known counts", shared ? "shared" : "plain",
            a2a_status_name(st), a2a_job_error(c->job));
        goto out_b;
    }
    for (int64_t s = 0; s < n; s++)
        if (out[s] != rc[s]) {
            say("FAILED: op %" PRIu64 ": recv_counts_out[%" PRId64 "] = %" PRId64 ", rank %" PRId64
                " sent %" PRId64,
                tag, s, out[s], s, rc[s]);
            goto out_b;
        }
    if (out[n] != -7) {
        say("FAILED: op %" PRIu64 ": recv_counts_out written past n", tag);
        goto out_b;
    }
    for (int64_t s = 0; s < n; s++)
        for (int64_t k = 0; k < rc[s]; k++) {
            uint64_t v = value_of(s, me, k, tag), got = 0;
            memcpy(&got, b.p + ((size_t)rd[s] + (size_t)k) * es, es);
            if (memcmp(&got, &v, es) != 0) {
                say("FAILED: op %" PRIu64 " dtype %d (%s): element %" PRId64 " from rank %" PRId64
                    " wrong",
                    tag, (int)dt, discover ? "discovery" : "known", k, s);
                goto out_b;
            }
        }
    if (guard_ok(&b, 0, off, "before the buffer", tag) != 0 ||
        guard_ok(&b, off + need * es, b.bytes, "past what came", tag) != 0)
        goto out_b;
    rv = 0;
out_b:
    rbuf_free(c, &b);
out:
    free(M);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(out);
    free(send);
    return rv;
}

/* bad_args: the new argument checks refuse, with no effect on the group. */
static int
bad_args(ctx *c)
{
    int64_t zero[1024] = {0};
    int64_t out[1024];
    a2a_alltoallv_args a = {.send_counts = zero,
                            .send_displacements = zero,
                            .recv_counts = NULL,
                            .recv_displacements = zero,
                            .recv_counts_out = out};
    const char *want[] = {"recv_displacements is given", "needs recv_counts_out"};
    if (c->n > 1024)
        return 0;
    for (int i = 0; i < 2; i++) {
        if (i == 1) {
            a.recv_displacements = NULL;
            a.recv_counts_out = NULL;
        }
        a2a_status st = a2a_all_to_all_v(c->job, &a);
        if (st != A2A_ERR_INVALID_ARGUMENT || strstr(a2a_job_error(c->job), want[i]) == NULL) {
            say("FAILED: bad arguments %d: %s: %s", i, a2a_status_name(st), a2a_job_error(c->job));
            return -1;
        }
    }
    return 0;
}

/* dtypes (2 ranks): rank 0 sends rank 1 three int8 while rank 1 expects three int64 and comes
 * late (the slice waits for it at its worker): both fail (INVALID_ARGUMENT), never OK; the
 * next operation works. */
static int
mode_dtypes(ctx *c)
{
    int64_t sc[2] = {0, 0}, sd[2] = {0, 0}, rc[2] = {0, 0}, rd[2] = {0, 0};
    uint8_t send8[3] = {1, 2, 3};
    int64_t recv64[3 + SLACK];
    if (c->n != 2)
        return 0;
    memset(recv64, GUARD, sizeof(recv64));
    if (c->me == 0)
        sc[1] = 3;
    else
        rc[0] = 3;
    a2a_alltoallv_args a = {.dtype = c->me == 0 ? A2A_INT8 : A2A_INT64,
                            .send_data = send8,
                            .send_len = 3,
                            .send_counts = sc,
                            .send_displacements = sd,
                            .recv_data = recv64,
                            .recv_len = 3,
                            .recv_counts = rc,
                            .recv_displacements = rd,
                            .timeout_ms = 10000};
    if (c->me == 1) {
        struct timespec ts = {0, 500 * 1000000};
        nanosleep(&ts, NULL); /* rank 0's eager slice is kept for us */
    }
    a2a_status st = a2a_all_to_all_v(c->job, &a);
    if (st != A2A_ERR_INVALID_ARGUMENT) {
        say("FAILED: int8 sent, int64 received: %s (%s)", a2a_status_name(st),
            st == A2A_OK ? "" : a2a_job_error(c->job));
        return -1;
    }
    for (size_t i = 3; i < 3 + SLACK; i++)
        if (((uint8_t *)&recv64[i])[0] != GUARD) {
            say("FAILED: written past the receive buffer");
            return -1;
        }
    return one_op(c, 77, A2A_INT64, -1, 0);
}

int
main(int argc, char **argv)
{
    ctx c = {0};
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    int iters = argc > 3 ? atoi(argv[3]) : 2;
    a2a_status st;

    mode = argc > 1 ? argv[1] : "random";
    nb = argc > 4 && strcmp(argv[4], "nb") == 0;
    if ((st = a2a_job_open(&c.job, NULL, -1)) != A2A_OK) {
        say("FAILED: a2a_job_open: %s", a2a_job_error(NULL));
        return 1;
    }
    if (a2a_get_rank_size(c.job, NULL, &c.n) != A2A_OK ||
        a2a_get_rank_id(c.job, NULL, &c.me) != A2A_OK) {
        say("FAILED: world group: %s", a2a_job_error(c.job));
        return 1;
    }
    world_me = c.me;
    if (bad_args(&c) != 0)
        return 1;
    if (strcmp(mode, "dtypes") == 0) {
        if (mode_dtypes(&c) != 0)
            return 1;
        say("ok");
        a2a_job_close(c.job);
        return 0;
    }
    uint64_t tag = seed * 1000;
    for (int it = 0; it < iters; it++)
        for (int dt = 0; dt < NDTYPES; dt++) {
            tag++;
            if (strcmp(mode, "small") == 0) {
                int64_t victim = (it * NDTYPES + dt) % c.n;
                uint64_t r = mix64(tag);
                /* short by exactly 1 (the boundary), 2, or up to everything */
                int64_t less = 1 + (int64_t)(r % 3 == 0 ? r % 1000000 : r % 3 - 1);
                if (one_op(&c, tag, (a2a_dtype)dt, victim, less) != 0)
                    return 1;
                tag++;
            }
            if (one_op(&c, tag, (a2a_dtype)dt, -1, 0) != 0)
                return 1;
        }
    say("ok");
    a2a_job_close(c.job);
    return 0;
}
