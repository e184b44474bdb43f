/*
 * benchopt.h - the command line shared by a2a-bench (tools/bench.c) and the MPI
 * reference bench/mpi_alltoallv_bench.c, so that both take the same options.
 *
 * Letters keep nccl-tests' meaning where nccl-tests has them (-b -e -i -f -n -w
 * -d -c); nccl-tests letters that do not apply to alltoallv here (-t -g -o -r
 * -m -p -a -z) are refused with the reason; everything else is a long option.
 * Needs neither liba2a nor MPI.
 */
#ifndef A2A_TOOLS_BENCHOPT_H
#define A2A_TOOLS_BENCHOPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BO_DTYPE_COUNT 12

typedef struct {
    char patterns[256]; /* comma-separated, "all" expanded */
    uint64_t smin, smax;
    uint64_t factor; /* -f: multiply (0 when -i steps instead) */
    uint64_t step;   /* -i: add (0 when -f multiplies) */
    uint32_t seed;
    double target;
    int warmup, min_iters, max_iters, quiet, json, shared;
    int discover; /* a2a-bench only: count discovery (recv_counts NULL) in the measured op */
    int overlap;  /* a2a-bench only: also start + compute of the op's length + wait (1: the
                   * compute keeps the CPU busy; 2: the rank's thread sleeps meanwhile, as while
                   * an accelerator computes) */
    int dtype;    /* index in bo_dtype_names, the order of a2a_dtype */
    size_t esize; /* bytes per element */
    const char *out_path;
} bench_opts;

/* bo_dtype_names[i] is the name of a2a_dtype i ("int8" .. "bfloat16"). */
extern const char *const bo_dtype_names[BO_DTYPE_COUNT];

/* bo_dtype_size returns the bytes of one element of dtype i, 0 for a bad i. */
size_t bo_dtype_size(int i);

/* bo_parse fills o from argv (prog names the messages: "a2a-bench: -b x: ...");
 * returns 0 to run, 1 after --help or --version (exit 0), -1 after printing
 * why the command line is bad (exit 2). usage prints the help text. */
int bo_parse(bench_opts *o, int argc, char **argv, const char *prog, void (*usage)(FILE *));

/* bo_next_size returns the size after s, or 0 after the last one. */
uint64_t bo_next_size(const bench_opts *o, uint64_t s);

/* bo_usage_options prints the option list that both benches share, with extra (option
 * lines of one bench only) at the end of its Output part. */
void bo_usage_options(FILE *f, const char *extra);

#endif
