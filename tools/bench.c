/*
 * bench.c - a2a-bench: the ALLTOALLV workloads of bench/WORKLOADS.md
 * over a2a_all_to_all_v, with the methodology of the MPI reference bench
 * (bench/mpi_alltoallv_bench.c), so that both outputs can be put side by side.
 *
 * A job: run it under a2a-launch (or with A2A_WORKER_URL and A2A_RANK set).
 * For every pattern and size S (bytes each rank sends, self included):
 *   1. fill the send buffer, poison the receive buffer (0xA5), one op, verify
 *      every element and the checksum;
 *   2. -w warm-up ops; their mean time (max over ranks) sets the number of
 *      timed iterations, floor(--target / mean) clamped to [--min-iters, --max-iters] (or -n);
 *   3. timed ops: barrier (not timed); t0; op; t = now - t0 on every rank;
 *      per iteration the max over ranks; the median is reported;
 *   4. poison again, one more op, verify again.
 * The barrier, the max and the sums over ranks are all_to_all_v calls too.
 * Rank 0 prints WORKLOADS.md section 6 (or JSON lines with --json).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "a2a.h"
#include "tools/benchopt.h"
#include "tools/workload.h"

typedef struct {
    a2a_job *job;
    uint32_t n, me;
    int64_t *sc, *sd, *rc, *rd; /* the measured op */
    int64_t *xc, *xd, *yc, *yd; /* the helper collectives */
    int64_t *got;               /* --discover: the counts received */
    FILE *out;                  /* rank 0: -o FILE, or NULL */
    double t_start;
    const char *what; /* "uniform S=1024", for messages */
} bench_ctx;

/* one size of one pattern */
typedef struct {
    int pattern;
    uint64_t s_bytes, stot, rtot;
    uint64_t *counts; /* n * n */
    void *sbuf, *rbuf;
    double *times, *tmax;
} bench_size;

static double
bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void
bench_die(bench_ctx *c, const char *fmt, const char *detail)
{
    fprintf(stderr, "a2a-bench: rank %u: ", c != NULL ? c->me : 0);
    fprintf(stderr, fmt, detail);
    fputc('\n', stderr);
    if (c != NULL && c->job != NULL)
        a2a_job_close(c->job);
    exit(2);
}

/* bench_a2a runs one all_to_all_v; any failure ends the run. */
static void
bench_a2a(bench_ctx *c, a2a_dtype dt, const void *s, size_t slen, const int64_t *sc,
          const int64_t *sd, void *r, size_t rlen, const int64_t *rc, const int64_t *rd)
{
    a2a_alltoallv_args a = {.dtype = dt,
                            .send_data = s,
                            .send_len = slen,
                            .send_counts = sc,
                            .send_displacements = sd,
                            .recv_data = r,
                            .recv_len = rlen,
                            .recv_counts = rc,
                            .recv_displacements = rd};
    a2a_status st = a2a_all_to_all_v(c->job, &a);
    if (st != A2A_OK) {
        char msg[768];
        snprintf(msg, sizeof(msg), "%s: all_to_all_v: %s: %s", c->what, a2a_status_name(st),
                 a2a_job_error(c->job));
        bench_die(c, "%s", msg);
    }
}

/* bench_barrier: one byte to every rank; nobody returns before all arrived. */
static void
bench_barrier(bench_ctx *c)
{
    static const uint8_t one = 1;
    uint8_t in[1024];
    for (uint32_t j = 0; j < c->n; j++) {
        c->xc[j] = 1, c->xd[j] = 0;
        c->yc[j] = 1, c->yd[j] = j;
    }
    bench_a2a(c, A2A_UINT8, &one, 1, c->xc, c->xd, in, c->n, c->yc, c->yd);
}

/* bench_allgather gives every rank the k 64-bit values of every rank:
 * all[s * k + i] = rank s's vals[i]. all holds n * k values. */
static void
bench_allgather(bench_ctx *c, const uint64_t *vals, size_t k, uint64_t *all)
{
    for (uint32_t j = 0; j < c->n; j++) {
        c->xc[j] = (int64_t)k, c->xd[j] = 0;
        c->yc[j] = (int64_t)k, c->yd[j] = (int64_t)(j * k);
    }
    bench_a2a(c, A2A_UINT64, vals, k, c->xc, c->xd, all, c->n * k, c->yc, c->yd);
}

/* bench_sum_u64 replaces vals[0..k) (k <= 4) by their sums over all ranks. */
static void
bench_sum_u64(bench_ctx *c, uint64_t *vals, size_t k)
{
    uint64_t all[4 * 1024];
    bench_allgather(c, vals, k, all);
    for (size_t i = 0; i < k; i++) {
        vals[i] = 0;
        for (uint32_t s = 0; s < c->n; s++)
            vals[i] += all[s * k + i];
    }
}

/* bench_max_double returns the largest v over all ranks. */
static double
bench_max_double(bench_ctx *c, double v)
{
    uint64_t bits, all[1024];
    double best = v, x;
    memcpy(&bits, &v, sizeof(bits));
    bench_allgather(c, &bits, 1, all);
    for (uint32_t s = 0; s < c->n; s++) {
        memcpy(&x, &all[s], sizeof(x));
        best = x > best ? x : best;
    }
    return best;
}

/* bench_gather_max: rank 0 gets tmax[i] = max over ranks of times[i]. */
static void
bench_gather_max(bench_ctx *c, const double *times, int iters, double *tmax)
{
    double *all = NULL, none = 0;
    size_t k = (size_t)iters;
    if (c->me == 0 && (all = malloc(c->n * k * sizeof(double))) == NULL)
        bench_die(c, "%s", "out of memory");
    for (uint32_t j = 0; j < c->n; j++) {
        c->xc[j] = j == 0 ? (int64_t)k : 0, c->xd[j] = 0;
        c->yc[j] = c->me == 0 ? (int64_t)k : 0, c->yd[j] = c->me == 0 ? (int64_t)(j * k) : 0;
    }
    bench_a2a(c, A2A_FLOAT64, times, k, c->xc, c->xd, all ? (void *)all : &none, all ? c->n * k : 1,
              c->yc, c->yd);
    for (size_t i = 0; all != NULL && i < k; i++) {
        tmax[i] = all[i];
        for (uint32_t s = 1; s < c->n; s++)
            tmax[i] = all[s * k + i] > tmax[i] ? all[s * k + i] : tmax[i];
    }
    free(all);
}

/* bench_op_args: the measured op's arguments; with --discover no receive counts (they land
 * packed in rank order, as c->rd has them) and c->got gets them. */
static a2a_alltoallv_args
bench_op_args(bench_ctx *c, const bench_opts *o, bench_size *z)
{
    return (a2a_alltoallv_args){.dtype = (a2a_dtype)o->dtype,
                                .send_data = z->sbuf,
                                .send_len = z->stot,
                                .send_counts = c->sc,
                                .send_displacements = c->sd,
                                .recv_data = z->rbuf,
                                .recv_len = z->rtot,
                                .recv_counts = o->discover ? NULL : c->rc,
                                .recv_displacements = o->discover ? NULL : c->rd,
                                .recv_counts_out = o->discover ? c->got : NULL};
}

static void
bench_fail(bench_ctx *c, const char *call, a2a_status st)
{
    char msg[768];
    snprintf(msg, sizeof(msg), "%s: %s: %s: %s", c->what, call, a2a_status_name(st),
             a2a_job_error(c->job));
    bench_die(c, "%s", msg);
}

static void
bench_op(bench_ctx *c, const bench_opts *o, bench_size *z)
{
    a2a_alltoallv_args a = bench_op_args(c, o, z);
    a2a_status st = a2a_all_to_all_v(c->job, &a);
    if (st != A2A_OK)
        bench_fail(c, "all_to_all_v", st);
}

/* bench_spin computes (a dependent chain of multiplications) for secs seconds. */
static double
bench_spin(double secs)
{
    double t0 = bench_now(), x = 1.0;
    while (bench_now() - t0 < secs)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    return x;
}

/* bench_idle sleeps secs seconds: a compute phase that leaves the CPU to others, as a rank's
 * thread does while its accelerator computes. */
static void
bench_idle(double secs)
{
    static int slack;
    struct timespec ts;
    if (!slack) /* the default 50 us of timer slack would make the phase longer than asked */
        slack = prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0 ? 1 : -1;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)secs;
    ts.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static int bench_cmp_double(const void *a, const void *b);
static double bench_median(const double *t, int k);

/* bench_overlap: per iteration, barrier; start the op, compute for `compute` seconds (spinning,
 * or sleeping with --overlap-idle), wait; the max over ranks of each iteration's wall time goes
 * to z->tmax (rank 0). Returns (rank 0) the median over iterations of the compute phase as it
 * was (max over ranks): a sleep ends later than asked, by the timer and the wake-up, which is
 * not the operation's cost. */
static double
bench_overlap(bench_ctx *c, const bench_opts *o, bench_size *z, int iters, double compute)
{
    volatile double sink = 0;
    double *ct = calloc((size_t)iters, sizeof(double)),
           *cmax = calloc((size_t)iters, sizeof(double));
    double med = compute;
    if (ct == NULL || cmax == NULL)
        bench_die(c, "%s", "out of memory");
    for (int it = 0; it < iters; it++) {
        a2a_alltoallv_args a = bench_op_args(c, o, z);
        a2a_request *r = NULL;
        a2a_status st;
        bench_barrier(c);
        double t0 = bench_now();
        if ((st = a2a_all_to_all_v_start(c->job, &a, &r)) != A2A_OK)
            bench_fail(c, "all_to_all_v_start", st);
        double c0 = bench_now();
        if (o->overlap == 2)
            bench_idle(compute);
        else
            sink += bench_spin(compute);
        ct[it] = bench_now() - c0;
        if ((st = a2a_wait(r)) != A2A_OK)
            bench_fail(c, "wait", st);
        z->times[it] = bench_now() - t0;
        a2a_request_free(r);
    }
    (void)sink;
    bench_gather_max(c, ct, iters, cmax);
    if (c->me == 0) {
        qsort(cmax, (size_t)iters, sizeof(double), bench_cmp_double);
        med = bench_median(cmax, iters);
    }
    free(ct);
    free(cmax);
    bench_gather_max(c, z->times, iters, z->tmax);
    return med;
}

/* bench_checked_op: poison, one op, verify; adds this rank's wrong elements
 * to *bad and returns its checksum C_r. */
static uint64_t
bench_checked_op(bench_ctx *c, const bench_opts *o, bench_size *z, uint64_t *bad)
{
    uint64_t cs = 0;
    memset(z->rbuf, 0xA5, z->rtot * o->esize);
    for (uint32_t j = 0; j < c->n; j++)
        c->got[j] = -1;
    bench_op(c, o, z);
    *bad += wl_verify_recv(c->n, c->me, z->counts, o->esize, z->rbuf, &cs);
    for (uint32_t j = 0; o->discover && j < c->n; j++)
        *bad += c->got[j] != c->rc[j]; /* a wrong discovered count counts as a wrong element */
    return cs;
}

static int
bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* bench_median of sorted t[0..k) */
static double
bench_median(const double *t, int k)
{
    return k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
}

/* bench_alloc_buf: page-aligned, at least one page, every page touched; with --shared, memory
 * shared with the worker (a2a_buffer_alloc). */
static void *
bench_alloc_buf(bench_ctx *c, const bench_opts *o, uint64_t bytes)
{
    size_t len = (size_t)((bytes + 4095) / 4096 * 4096);
    void *p = NULL;
    if (len == 0)
        len = 4096;
    if (o->shared && a2a_buffer_alloc(c->job, len, &p) != A2A_OK)
        bench_die(c, "a2a_buffer_alloc: %s", a2a_job_error(c->job));
    if (!o->shared && (p = aligned_alloc(4096, len)) == NULL)
        bench_die(c, "%s", "out of memory for the buffers: use a smaller -e");
    memset(p, 0, len);
    return p;
}

static void
bench_free_buf(bench_ctx *c, const bench_opts *o, void *p)
{
    if (o->shared)
        a2a_buffer_free(c->job, p);
    else
        free(p);
}

/* bench_prepare sets counts, displacements and buffers of one size. */
static void
bench_prepare(bench_ctx *c, const bench_opts *o, bench_size *z)
{
    uint32_t n = c->n, me = c->me;
    wl_counts(z->pattern, n, z->s_bytes / o->esize, o->seed, z->counts);
    z->stot = z->rtot = 0;
    for (uint32_t j = 0; j < n; j++) {
        c->sc[j] = (int64_t)z->counts[(size_t)me * n + j];
        c->sd[j] = (int64_t)z->stot;
        z->stot += z->counts[(size_t)me * n + j];
        c->rc[j] = (int64_t)z->counts[(size_t)j * n + me];
        c->rd[j] = (int64_t)z->rtot;
        z->rtot += z->counts[(size_t)j * n + me];
    }
    z->sbuf = bench_alloc_buf(c, o, z->stot * o->esize);
    z->rbuf = bench_alloc_buf(c, o, z->rtot * o->esize);
    wl_fill_send(n, me, z->counts, o->esize, z->sbuf);
}

static void
bench_report(bench_ctx *c, const bench_opts *o, bench_size *z, int iters, int ok,
             const uint64_t *sums)
{
    char line[1024];
    uint32_t n = c->n;
    qsort(z->tmax, (size_t)iters, sizeof(double), bench_cmp_double);
    double med =
        iters % 2 ? z->tmax[iters / 2] : 0.5 * (z->tmax[iters / 2 - 1] + z->tmax[iters / 2]);
    double algbw = (double)z->s_bytes / med / 1e9;
    wl_traffic t = wl_traffic_of(n, z->counts, o->esize);
    const char *name = wl_pattern_name(z->pattern);
    int len;
    if (o->json)
        len =
            snprintf(line, sizeof(line),
                     "{\"pattern\":\"%s\",\"N\":%u,\"S_bytes\":%" PRIu64
                     ",\"dtype\":\"%s\",\"time_us_median\":%.2f,\"algbw_GBps\":%.4f,"
                     "\"busbw_GBps\":%.4f,\"ok\":%s,\"iters\":%d,\"t_min_us\":%.2f,"
                     "\"t_max_us\":%.2f,\"wire_bytes\":%" PRIu64 ",\"max_host_out\":%" PRIu64
                     ",\"max_host_in\":%" PRIu64 ",\"bad_elems\":%" PRIu64
                     ",\"checksum\":\"0x%016" PRIx64 "\"}\n",
                     name, n, z->s_bytes, bo_dtype_names[o->dtype], med * 1e6, algbw,
                     algbw * (n - 1) / n, ok ? "true" : "false", iters, z->tmax[0] * 1e6,
                     z->tmax[iters - 1] * 1e6, t.wire_bytes, t.max_out, t.max_in, sums[0], sums[2]);
    else {
        len = snprintf(line, sizeof(line), "%-7s %3u %10" PRIu64 " %12.2f %10.4f %10.4f %s\n", name,
                       n, z->s_bytes, med * 1e6, algbw, algbw * (n - 1) / n, ok ? "ok" : "FAIL");
        if (!o->quiet && len > 0 && (size_t)len < sizeof(line))
            snprintf(line + len, sizeof(line) - (size_t)len,
                     "#   iters=%d t_min_us=%.2f t_max_us=%.2f wire_bytes=%" PRIu64
                     " max_host_out=%" PRIu64 " max_host_in=%" PRIu64 " bad_elems=%" PRIu64
                     " checksum=0x%016" PRIx64 "\n",
                     iters, z->tmax[0] * 1e6, z->tmax[iters - 1] * 1e6, t.wire_bytes, t.max_out,
                     t.max_in, sums[0], sums[2]);
    }
    fputs(line, stdout);
    fflush(stdout);
    if (c->out != NULL) {
        fputs(line, c->out);
        fflush(c->out);
    }
}

/* bench_iters: the warm-up's mean time, max over ranks, sets the count. */
static int
bench_iters(const bench_opts *o, double tw)
{
    int iters = o->min_iters;
    if (tw > 0 && o->target / tw > o->min_iters)
        iters = o->target / tw > o->max_iters ? o->max_iters : (int)(o->target / tw);
    return iters;
}

/* bench_one measures one pattern at one size; returns 1 if it verified. */
static int
bench_one(bench_ctx *c, const bench_opts *o, bench_size *z)
{
    char what[96];
    uint64_t sums[3] = {0, 0, 0}; /* wrong elements, checksum 1, checksum 2 */
    uint64_t expect;
    snprintf(what, sizeof(what), "%s S=%" PRIu64, wl_pattern_name(z->pattern), z->s_bytes);
    c->what = what;
    bench_prepare(c, o, z);

    sums[1] = bench_checked_op(c, o, z, &sums[0]);
    double t0 = bench_now();
    for (int w = 0; w < o->warmup; w++)
        bench_op(c, o, z);
    double tw = bench_max_double(c, (bench_now() - t0) / (o->warmup > 0 ? o->warmup : 1));
    int iters = bench_iters(o, tw);
    if (c->me == 0 && bench_now() - c->t_start > 3.0) {
        fprintf(stderr,
                "# progress: %s: %.3f ms/op, %d timed iterations (~%.1f s), %.0f s so far\n", what,
                tw * 1e3, iters, tw * iters, bench_now() - c->t_start);
        fflush(stderr);
    }
    for (int it = 0; it < iters; it++) {
        bench_barrier(c);
        double a = bench_now();
        bench_op(c, o, z);
        z->times[it] = bench_now() - a;
    }
    bench_gather_max(c, z->times, iters, z->tmax);
    sums[2] = bench_checked_op(c, o, z, &sums[0]);

    expect = wl_checksum_expected(c->n, c->me, z->counts, o->esize);
    uint64_t v[4] = {sums[0], sums[1], sums[2], expect};
    bench_sum_u64(c, v, 4);
    int ok = v[0] == 0 && v[1] == v[3] && v[2] == v[3];
    if (c->me == 0) {
        uint64_t shown[3] = {v[0], v[1], v[2]};
        bench_report(c, o, z, iters, ok, shown);
    }
    if (o->overlap) { /* a compute phase as long as the op (its median, max over ranks) */
        double op_med = c->me == 0 ? bench_median(z->tmax, iters) : 0;
        /* as long as the op's median just measured (rank 0's, to every rank): the warm-up mean
         * is longer (first touches), and would hide more of the op than a phase of its length */
        double cw = bench_overlap(c, o, z, iters, bench_max_double(c, op_med));
        if (c->me == 0) {
            qsort(z->tmax, (size_t)iters, sizeof(double), bench_cmp_double);
            double both = bench_median(z->tmax, iters), base = op_med > cw ? op_med : cw;
            char line[512];
            snprintf(line, sizeof(line),
                     "# overlap%s %s: op_us=%.2f compute_us=%.2f start+compute+wait_us=%.2f "
                     "extra_pct=%.1f\n",
                     o->overlap == 2 ? "-idle" : "", what, op_med * 1e6, cw * 1e6, both * 1e6,
                     100.0 * (both - base) / base);
            fputs(line, stdout);
            fflush(stdout);
            if (c->out != NULL)
                fputs(line, c->out);
        }
    }
    bench_free_buf(c, o, z->sbuf);
    bench_free_buf(c, o, z->rbuf);
    z->sbuf = z->rbuf = NULL;
    return ok;
}

static void
bench_usage(FILE *f)
{
    fprintf(f, "usage: a2a-bench [OPTIONS]\n"
               "\n"
               "A job (run it under a2a-launch, e.g. a2a-launch -n 4 -- a2a-bench -b 1M -e 16M):\n"
               "the ALLTOALLV workloads of bench/WORKLOADS.md over a2a_all_to_all_v on\n"
               "hccl_world_group, every size verified twice. bench/mpi_alltoallv_bench takes\n"
               "the same options but --shared, --discover, --overlap and --overlap-idle.\n"
               "\n");
    bo_usage_options(f,
                     "  --shared             buffers from a2a_buffer_alloc (shared with the "
                     "worker)\n"
                     "  --discover           count discovery: no receive counts given, the "
                     "worker's answered\n"
                     "  --overlap            also: start, compute as long as one op, wait "
                     "(a line \"# overlap\")\n"
                     "  --overlap-idle       the same, sleeping instead of computing, as while "
                     "an\n"
                     "                       accelerator computes (a line \"# overlap-idle\")\n");
    fprintf(f, "\n"
               "Rank 0 prints: pattern N S_bytes time_us_median algbw_GBps busbw_GBps ok\n"
               "Exit status: 0 when every size was ok, 1 when one was not, 2 for bad usage\n"
               "or a failed call.\n");
}

/* bench_ctx_init opens the job and allocates the per-rank arrays. */
static void
bench_ctx_init(bench_ctx *c, const bench_opts *o)
{
    int64_t n = 0, me = 0;
    memset(c, 0, sizeof(*c));
    c->what = "start";
    for (size_t i = 0; i < 2; i++) { /* liba2a's "pass its URL" is for a2a_job_open's callers */
        const char *var = i == 0 ? "A2A_WORKER_URL" : "A2A_RANK", *v = getenv(var);
        if (v == NULL || *v == '\0') {
            fprintf(stderr,
                    "a2a-bench: no %s: run it under a2a-launch (a2a-launch -n 4 -- a2a-bench), "
                    "or set A2A_WORKER_URL (its worker) and A2A_RANK (its world rank)\n",
                    var);
            exit(2);
        }
    }
    if (a2a_job_open(&c->job, NULL, -1) != A2A_OK)
        bench_die(c, "%s", a2a_job_error(NULL));
    if (a2a_get_rank_size(c->job, NULL, &n) != A2A_OK ||
        a2a_get_rank_id(c->job, NULL, &me) != A2A_OK)
        bench_die(c, "%s", a2a_job_error(c->job));
    if (n < 1 || n > 1024)
        bench_die(c, "%s", "hccl_world_group must have 1 to 1024 ranks");
    c->n = (uint32_t)n, c->me = (uint32_t)me;
    int64_t **arrays[] = {&c->sc, &c->sd, &c->rc, &c->rd, &c->xc, &c->xd, &c->yc, &c->yd, &c->got};
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
        if ((*arrays[i] = calloc((size_t)n, sizeof(int64_t))) == NULL)
            bench_die(c, "%s", "out of memory");
    if (c->me == 0 && o->out_path != NULL && (c->out = fopen(o->out_path, "w")) == NULL)
        bench_die(c, "cannot write %s", o->out_path);
    c->t_start = bench_now();
}

static void
bench_header(bench_ctx *c, const bench_opts *o)
{
    char host[256] = "?", line[768];
    if (c->me != 0 || o->json)
        return;
    gethostname(host, sizeof(host) - 1);
    snprintf(line, sizeof(line),
             "# a2a-bench  N=%u  seed=%u  target=%.2fs  warmup=%d  iters=[%d,%d]  host=%s"
             "  lib=a2a  dtype=%s\n"
             "# pattern N S_bytes time_us_median algbw_GBps busbw_GBps ok\n",
             c->n, o->seed, o->target, o->warmup, o->min_iters, o->max_iters, host,
             bo_dtype_names[o->dtype]);
    fputs(line, stdout);
    fflush(stdout);
    if (c->out != NULL)
        fputs(line, c->out);
}

int
main(int argc, char **argv)
{
    bench_opts o;
    bench_ctx c;
    bench_size z = {0};
    int all_ok = 1, r = bo_parse(&o, argc, argv, "a2a-bench", bench_usage);
    if (r != 0)
        return r < 0 ? 2 : 0;
    for (int i = 0; i < BO_DTYPE_COUNT; i++) /* benchopt's table follows a2a_dtype */
        if (bo_dtype_size(i) != a2a_dtype_size((a2a_dtype)i)) {
            fprintf(stderr, "a2a-bench: dtype table out of date at %s\n", bo_dtype_names[i]);
            return 2;
        }
    bench_ctx_init(&c, &o);
    bench_header(&c, &o);
    z.counts = malloc((size_t)c.n * c.n * sizeof(uint64_t));
    z.times = malloc((size_t)o.max_iters * sizeof(double));
    z.tmax = malloc((size_t)o.max_iters * sizeof(double));
    if (z.counts == NULL || z.times == NULL || z.tmax == NULL)
        bench_die(&c, "%s", "out of memory");
    for (char *tok = strtok(o.patterns, ","); tok != NULL; tok = strtok(NULL, ",")) {
        z.pattern = wl_pattern_from_name(tok);
        for (uint64_t s = o.smin; s != 0; s = bo_next_size(&o, s)) {
            z.s_bytes = s;
            all_ok &= bench_one(&c, &o, &z);
        }
    }
    free(z.counts), free(z.times), free(z.tmax);
    free(c.sc), free(c.sd), free(c.rc), free(c.rd);
    free(c.xc), free(c.xd), free(c.yc), free(c.yd), free(c.got);
    if (c.out != NULL)
        fclose(c.out);
    a2a_job_close(c.job);
    return all_ok ? 0 : 1;
}
