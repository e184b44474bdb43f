/*
 * mpi_alltoallv_bench.c - the MPI reference for a2a-bench: the same workloads
 * (bench/WORKLOADS.md, tools/workload.c), the same options (tools/benchopt.c)
 * and the same method, over MPI_Alltoallv, so that compare.sh can put both side
 * by side from any clone. ../shared/bench/ holds the definition it matches.
 *
 * Per pattern and size S (bytes each rank sends, self included):
 *   1. fill the send buffer, poison the receive buffer with 0xA5, one op, verify
 *      every element and the checksum;
 *   2. -w untimed ops; their mean time, max over ranks, sets the timed count
 *      floor(--target / t) within [--min-iters, --max-iters] (or -n exactly);
 *   3. each timed op: MPI_Barrier, then the op timed on every rank; per op the
 *      max over ranks; the median is reported;
 *   4. poison, one more op, verify again.
 * Rank 0 prints the table of WORKLOADS.md section 6 (or JSON with --json).
 *
 * Build (bench/compare.sh does it):
 *   mpicc -O2 -I. -Ibuild/generated -o mpi_alltoallv_bench bench/mpi_alltoallv_bench.c \
 *         tools/benchopt.c tools/workload.c
 *   mpirun -np 4 ./mpi_alltoallv_bench -b 64 -e 16M
 */
#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/benchopt.h"
#include "tools/workload.h"

typedef struct {
    int n, me;
    MPI_Datatype type; /* an unsigned integer type of the element size */
    int *sc, *sd, *rc, *rd;
    uint64_t *counts; /* n * n */
    void *sbuf, *rbuf;
    uint64_t stot, rtot; /* elements */
    double *times, *tmax;
    FILE *out;
} mb_ctx;

static void
mb_die(const mb_ctx *c, const char *msg)
{
    fprintf(stderr, "mpi_alltoallv_bench: rank %d: %s\n", c->me, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static void
mb_usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N mpi_alltoallv_bench [OPTIONS]\n"
               "\n"
               "The MPI reference of a2a-bench: the same workloads, options and output,\n"
               "over MPI_Alltoallv on MPI_COMM_WORLD.\n\n");
    bo_usage_options(f, "");
}

static MPI_Datatype
mb_type(size_t esize)
{
    return esize == 1   ? MPI_UINT8_T
           : esize == 2 ? MPI_UINT16_T
           : esize == 4 ? MPI_UINT32_T
                        : MPI_UINT64_T;
}

static void
mb_op(const mb_ctx *c)
{
    MPI_Alltoallv(c->sbuf, c->sc, c->sd, c->type, c->rbuf, c->rc, c->rd, c->type, MPI_COMM_WORLD);
}

/* mb_prepare sets counts, displacements and the buffers of one size. */
static void
mb_prepare(mb_ctx *c, const bench_opts *o, int pattern, uint64_t s)
{
    uint64_t soff = 0, roff = 0;
    wl_counts(pattern, (uint32_t)c->n, s / o->esize, o->seed, c->counts);
    for (int j = 0; j < c->n; j++) {
        uint64_t cs = c->counts[(size_t)c->me * c->n + j], cr = c->counts[(size_t)j * c->n + c->me];
        if (soff + cs > INT_MAX || roff + cr > INT_MAX)
            mb_die(c, "MPI counts are ints: use a smaller -e");
        c->sc[j] = (int)cs, c->sd[j] = (int)soff, soff += cs;
        c->rc[j] = (int)cr, c->rd[j] = (int)roff, roff += cr;
    }
    c->stot = soff, c->rtot = roff;
    size_t slen = (size_t)((soff * o->esize + 4095) / 4096 * 4096 + 4096);
    size_t rlen = (size_t)((roff * o->esize + 4095) / 4096 * 4096 + 4096);
    if ((c->sbuf = aligned_alloc(4096, slen)) == NULL ||
        (c->rbuf = aligned_alloc(4096, rlen)) == NULL)
        mb_die(c, "out of memory for the buffers: use a smaller -e");
    memset(c->sbuf, 0, slen); /* touch every page before the first op */
    memset(c->rbuf, 0, rlen);
    wl_fill_send((uint32_t)c->n, (uint32_t)c->me, c->counts, o->esize, c->sbuf);
}

/* mb_checked: poison, one op, verify; adds this rank's wrong elements to *bad, returns C_r. */
static uint64_t
mb_checked(mb_ctx *c, const bench_opts *o, uint64_t *bad)
{
    uint64_t cs = 0;
    memset(c->rbuf, 0xA5, c->rtot * o->esize);
    mb_op(c);
    *bad += wl_verify_recv((uint32_t)c->n, (uint32_t)c->me, c->counts, o->esize, c->rbuf, &cs);
    return cs;
}

static int
mb_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void
mb_print(const mb_ctx *c, const char *line)
{
    fputs(line, stdout);
    fflush(stdout);
    if (c->out != NULL) {
        fputs(line, c->out);
        fflush(c->out);
    }
}

/* mb_report prints rank 0's line(s) for one size; v = {bad, checksum 1, checksum 2}. */
static void
mb_report(const mb_ctx *c, const bench_opts *o, int pattern, uint64_t s, int iters, int ok,
          const uint64_t *v)
{
    char line[1024];
    int n = c->n, len;
    qsort(c->tmax, (size_t)iters, sizeof(double), mb_cmp);
    double med =
        iters % 2 ? c->tmax[iters / 2] : 0.5 * (c->tmax[iters / 2 - 1] + c->tmax[iters / 2]);
    double algbw = (double)s / med / 1e9, busbw = algbw * (n - 1) / n;
    wl_traffic t = wl_traffic_of((uint32_t)n, c->counts, o->esize);
    const char *name = wl_pattern_name(pattern);
    if (o->json) {
        snprintf(line, sizeof(line),
                 "{\"pattern\":\"%s\",\"N\":%d,\"S_bytes\":%" PRIu64 ",\"dtype\":\"%s\","
                 "\"time_us_median\":%.2f,\"algbw_GBps\":%.4f,\"busbw_GBps\":%.4f,\"ok\":%s,"
                 "\"iters\":%d,\"t_min_us\":%.2f,\"t_max_us\":%.2f,\"wire_bytes\":%" PRIu64
                 ",\"max_host_out\":%" PRIu64 ",\"max_host_in\":%" PRIu64 ",\"bad_elems\":%" PRIu64
                 ",\"checksum\":\"0x%016" PRIx64 "\"}\n",
                 name, n, s, bo_dtype_names[o->dtype], med * 1e6, algbw, busbw,
                 ok ? "true" : "false", iters, c->tmax[0] * 1e6, c->tmax[iters - 1] * 1e6,
                 t.wire_bytes, t.max_out, t.max_in, v[0], v[2]);
        mb_print(c, line);
        return;
    }
    len = snprintf(line, sizeof(line), "%-7s %3d %10" PRIu64 " %12.2f %10.4f %10.4f %s\n", name, n,
                   s, med * 1e6, algbw, busbw, ok ? "ok" : "FAIL");
    if (!o->quiet && len > 0 && (size_t)len < sizeof(line))
        snprintf(line + len, sizeof(line) - (size_t)len,
                 "#   iters=%d t_min_us=%.2f t_max_us=%.2f wire_bytes=%" PRIu64
                 " max_host_out=%" PRIu64 " max_host_in=%" PRIu64 " bad_elems=%" PRIu64
                 " checksum=0x%016" PRIx64 "\n",
                 iters, c->tmax[0] * 1e6, c->tmax[iters - 1] * 1e6, t.wire_bytes, t.max_out,
                 t.max_in, v[0], v[2]);
    mb_print(c, line);
}

/* mb_one measures one pattern at one size; returns 1 if it verified on every rank. */
static int
mb_one(mb_ctx *c, const bench_opts *o, int pattern, uint64_t s)
{
    uint64_t mine[4] = {0, 0, 0, 0}, all[4]; /* bad, checksum 1, checksum 2, expected */
    double tw, twmax;
    int iters = o->min_iters;

    mb_prepare(c, o, pattern, s);
    mine[1] = mb_checked(c, o, &mine[0]);
    double t0 = MPI_Wtime();
    for (int w = 0; w < o->warmup; w++)
        mb_op(c);
    tw = (MPI_Wtime() - t0) / (o->warmup > 0 ? o->warmup : 1);
    MPI_Allreduce(&tw, &twmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (twmax > 0 && o->target / twmax > o->min_iters)
        iters = o->target / twmax > o->max_iters ? o->max_iters : (int)(o->target / twmax);
    for (int it = 0; it < iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double a = MPI_Wtime();
        mb_op(c);
        c->times[it] = MPI_Wtime() - a;
    }
    MPI_Reduce(c->times, c->tmax, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    mine[2] = mb_checked(c, o, &mine[0]);
    mine[3] = wl_checksum_expected((uint32_t)c->n, (uint32_t)c->me, c->counts, o->esize);
    MPI_Allreduce(mine, all, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    int ok = all[0] == 0 && all[1] == all[3] && all[2] == all[3];
    if (c->me == 0)
        mb_report(c, o, pattern, s, iters, ok, all);
    free(c->sbuf), free(c->rbuf);
    return ok;
}

static void
mb_header(const mb_ctx *c, const bench_opts *o)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[256] = "?", line[1024];
    int len;
    if (c->me != 0 || o->json)
        return;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n,")] = '\0';
    gethostname(host, sizeof(host) - 1);
    snprintf(line, sizeof(line),
             "# mpi_alltoallv_bench  N=%d  seed=%u  target=%.2fs  warmup=%d  iters=[%d,%d]"
             "  host=%s  lib=%s  dtype=%s\n"
             "# pattern N S_bytes time_us_median algbw_GBps busbw_GBps ok\n",
             c->n, o->seed, o->target, o->warmup, o->min_iters, o->max_iters, host, lib,
             bo_dtype_names[o->dtype]);
    mb_print(c, line);
}

int
main(int argc, char **argv)
{
    bench_opts o;
    mb_ctx c = {0};
    int all_ok = 1, r;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.me);
    MPI_Comm_size(MPI_COMM_WORLD, &c.n);
    if ((r = bo_parse(&o, argc, argv, "mpi_alltoallv_bench", mb_usage)) != 0 || o.shared ||
        o.discover || o.overlap) {
        if ((o.shared || o.discover || o.overlap) && r == 0)
            fprintf(stderr, "mpi_alltoallv_bench: --%s: a2a-bench only\n",
                    o.shared         ? "shared"
                    : o.discover     ? "discover"
                    : o.overlap == 2 ? "overlap-idle"
                                     : "overlap");
        MPI_Finalize();
        return r > 0 ? 0 : 2;
    }
    c.type = mb_type(o.esize);
    c.counts = malloc((size_t)c.n * (size_t)c.n * sizeof(uint64_t));
    c.sc = calloc((size_t)c.n, sizeof(int)), c.sd = calloc((size_t)c.n, sizeof(int));
    c.rc = calloc((size_t)c.n, sizeof(int)), c.rd = calloc((size_t)c.n, sizeof(int));
    c.times = malloc((size_t)o.max_iters * sizeof(double));
    c.tmax = malloc((size_t)o.max_iters * sizeof(double));
    if (!c.counts || !c.sc || !c.sd || !c.rc || !c.rd || !c.times || !c.tmax)
        mb_die(&c, "out of memory");
    if (c.me == 0 && o.out_path != NULL && (c.out = fopen(o.out_path, "w")) == NULL)
        mb_die(&c, "cannot write the --output file");
    mb_header(&c, &o);
    for (char *tok = strtok(o.patterns, ","); tok != NULL; tok = strtok(NULL, ","))
        for (uint64_t s = o.smin; s != 0; s = bo_next_size(&o, s))
            all_ok &= mb_one(&c, &o, wl_pattern_from_name(tok), s);
    if (c.out != NULL)
        fclose(c.out);
    free(c.counts), free(c.sc), free(c.sd), free(c.rc), free(c.rd), free(c.times), free(c.tmax);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
