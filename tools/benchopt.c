/* benchopt.c - the shared command line of a2a-bench and the MPI reference bench. */
#include "tools/benchopt.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_version.h"
#include "tools/workload.h"

const char *const bo_dtype_names[BO_DTYPE_COUNT] = {"int8",    "uint8",   "int16",   "uint16",
                                                    "int32",   "uint32",  "int64",   "uint64",
                                                    "float16", "float32", "float64", "bfloat16"};
static const size_t bo_dtype_sizes[BO_DTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 4, 8, 2};

size_t
bo_dtype_size(int i)
{
    return i >= 0 && i < BO_DTYPE_COUNT ? bo_dtype_sizes[i] : 0;
}

void
bo_usage_options(FILE *f, const char *extra)
{
    fprintf(f,
            "Sizes (bytes each rank sends in all, self included; k/M/G = 1024-based):\n"
            "  -b, --minbytes S     first size (64)\n"
            "  -e, --maxbytes S     last size (64M)\n"
            "  -f, --stepfactor F   multiply the size by F (4)\n"
            "  -i, --stepbytes S    or add S to it (instead of -f)\n"
            "Iterations:\n"
            "  -w, --warmup_iters W untimed ops after the first verified one (3)\n"
            "  -n, --iters N        exactly N timed ops per size (default: as many as fit in\n"
            "                       --target seconds, within --min-iters..--max-iters)\n"
            "  --target S           seconds of timed ops per size (0.3)\n"
            "  --min-iters N        at least N timed ops (5)\n"
            "  --max-iters N        at most N timed ops (10000)\n"
            "Workload:\n"
            "  -d, --datatype T     int8 .. bfloat16 (int32); S stays in bytes, T = S / size\n"
            "  --patterns LIST      all, or some of uniform,skew,incast,sparse (all)\n"
            "  --seed N             seed of the sparse pattern (1)\n"
            "  -c, --check 1        every size is verified twice; -c 0 is refused\n"
            "Output:\n"
            "  --quiet              no \"#   iters=\" detail lines\n"
            "  --json               one JSON object per size instead of the table\n"
            "  --output FILE        rank 0 also writes its result lines to FILE, unprefixed\n"
            "%s"
            "  --help, --version\n"
            "nccl-tests' -t -g -o -r -m -p -a -z do not apply and are refused.\n",
            extra);
}

/* bo_size reads 64, 4k, 64M, 1G; -1 when s is not such a size. */
static int
bo_size(const char *s, uint64_t *v)
{
    char *end;
    int shift = 0;
    errno = 0;
    if (*s == '-')
        return -1;
    *v = strtoull(s, &end, 0);
    if (errno != 0 || end == s)
        return -1;
    switch (*end) {
    case 'k':
    case 'K': shift = 10, end++; break;
    case 'm':
    case 'M': shift = 20, end++; break;
    case 'g':
    case 'G': shift = 30, end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || (shift > 0 && *v > (UINT64_MAX >> shift)))
        return -1;
    *v <<= shift;
    return 0;
}

/* bo_int reads an integer in [lo, hi]; -1 when s is not one. */
static int
bo_int(const char *s, long lo, long hi, int *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || x < lo || x > hi)
        return -1;
    *v = (int)x;
    return 0;
}

static int
bo_bad(const char *prog, const char *opt, const char *val, const char *why)
{
    fprintf(stderr, "%s: %s%s%s: %s (see %s --help)\n", prog, opt, val ? " " : "", val ? val : "",
            why, prog);
    return -1;
}

static const struct option bo_longs[] = {{"minbytes", required_argument, NULL, 'b'},
                                         {"maxbytes", required_argument, NULL, 'e'},
                                         {"stepfactor", required_argument, NULL, 'f'},
                                         {"stepbytes", required_argument, NULL, 'i'},
                                         {"warmup_iters", required_argument, NULL, 'w'},
                                         {"iters", required_argument, NULL, 'n'},
                                         {"datatype", required_argument, NULL, 'd'},
                                         {"check", required_argument, NULL, 'c'},
                                         {"target", required_argument, NULL, 'T'},
                                         {"min-iters", required_argument, NULL, 'N'},
                                         {"max-iters", required_argument, NULL, 'M'},
                                         {"patterns", required_argument, NULL, 'P'},
                                         {"seed", required_argument, NULL, 'S'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"json", no_argument, NULL, 'J'},
                                         {"output", required_argument, NULL, 'O'},
                                         {"shared", no_argument, NULL, 'H'},
                                         {"discover", no_argument, NULL, 'D'},
                                         {"overlap", no_argument, NULL, 'L'},
                                         {"overlap-idle", no_argument, NULL, 'I'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {NULL, 0, NULL, 0}};

/* bo_not_applicable: why an nccl-tests letter is refused here, or NULL. */
static const char *
bo_not_applicable(int ch)
{
    switch (ch) {
    case 't': return "nccl-tests' threads per process: here one rank is one process";
    case 'g': return "nccl-tests' GPUs per thread: there are no GPUs here";
    case 'o': return "nccl-tests' reduction operation: alltoallv reduces nothing";
    case 'r': return "nccl-tests' root rank: alltoallv has none";
    case 'm': return "nccl-tests' aggregated iterations: not supported (--max-iters is the cap)";
    case 'p': return "nccl-tests' parallel init: not applicable (--patterns picks the patterns)";
    case 'a': return "nccl-tests' averaging across ranks: the time is always the max over ranks";
    case 'z': return "nccl-tests' blocking collectives: every call blocks here";
    }
    return NULL;
}

/* bo_one applies option ch; 0, 1 (exit 0) or -1. */
static int
bo_one(bench_opts *o, int ch, const char *arg, const char *opt, const char *prog,
       void (*usage)(FILE *), int *factor_given)
{
    int v;
    char *end;
    switch (ch) {
    case 'b': return bo_size(arg, &o->smin) ? bo_bad(prog, opt, arg, "not a size") : 0;
    case 'e': return bo_size(arg, &o->smax) ? bo_bad(prog, opt, arg, "not a size") : 0;
    case 'f':
        *factor_given = 1;
        if (bo_int(arg, 2, 1 << 20, &v) != 0)
            return bo_bad(prog, opt, arg, "the step factor must be an integer >= 2");
        o->factor = (uint64_t)v, o->step = 0;
        return 0;
    case 'i':
        if (bo_size(arg, &o->step) != 0 || o->step == 0)
            return bo_bad(prog, opt, arg, "the step must be a size > 0");
        if (!*factor_given)
            o->factor = 0;
        return 0;
    case 'w':
        return bo_int(arg, 0, 1000000, &o->warmup) ? bo_bad(prog, opt, arg, "not a count >= 0") : 0;
    case 'n':
        if (bo_int(arg, 1, 100000000, &v) != 0)
            return bo_bad(prog, opt, arg, "not a count >= 1");
        o->min_iters = o->max_iters = v;
        return 0;
    case 'N':
        return bo_int(arg, 1, 100000000, &o->min_iters) ? bo_bad(prog, opt, arg, "not a count >= 1")
                                                        : 0;
    case 'M':
        return bo_int(arg, 1, 100000000, &o->max_iters) ? bo_bad(prog, opt, arg, "not a count >= 1")
                                                        : 0;
    case 'T':
        errno = 0;
        o->target = strtod(arg, &end);
        return errno || end == arg || *end || o->target < 0
                   ? bo_bad(prog, opt, arg, "not a number of seconds")
                   : 0;
    case 'S':
        if (bo_int(arg, 0, INT32_MAX, &v) != 0)
            return bo_bad(prog, opt, arg, "not a seed (0..2^31-1)");
        o->seed = (uint32_t)v;
        return 0;
    case 'c':
        return strcmp(arg, "1") ? bo_bad(prog, opt, arg, "verification cannot be turned off") : 0;
    case 'd':
        for (int i = 0; i < BO_DTYPE_COUNT; i++)
            if (strcmp(arg, bo_dtype_names[i]) == 0) {
                o->dtype = i, o->esize = bo_dtype_sizes[i];
                return 0;
            }
        return bo_bad(prog, opt, arg,
                      "not one of int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16 "
                      "float32 float64 bfloat16");
    case 'P': snprintf(o->patterns, sizeof(o->patterns), "%s", arg); return 0;
    case 'q': o->quiet = 1; return 0;
    case 'J': o->json = 1; return 0;
    case 'O': o->out_path = arg; return 0;
    case 'H': o->shared = 1; return 0;
    case 'D': o->discover = 1; return 0;
    case 'L': o->overlap = 1; return 0;
    case 'I': o->overlap = 2; return 0;
    case 'h': usage(stdout); return 1;
    case 'V': printf("%s %s\n", prog, A2A_VERSION); return 1;
    }
    return -1;
}

/* bo_check checks the options together once all are read. */
static int
bo_check(bench_opts *o, const char *prog)
{
    if (o->smin < o->esize || o->smin % o->esize != 0)
        return bo_bad(prog, "-b", NULL, "the first size must be a multiple of the element size");
    if (o->step % o->esize != 0)
        return bo_bad(prog, "-i", NULL, "the step must be a multiple of the element size");
    if (o->smax < o->smin)
        return bo_bad(prog, "-e", NULL, "the last size is below the first (-b)");
    if (o->max_iters < o->min_iters)
        return bo_bad(prog, "--max-iters", NULL, "below --min-iters");
    if (strcmp(o->patterns, "all") == 0)
        snprintf(o->patterns, sizeof(o->patterns), "uniform,skew,incast,sparse");
    for (char *p = o->patterns, *end; *p != '\0'; p = *end ? end + 1 : end) {
        char name[32];
        end = p + strcspn(p, ",");
        snprintf(name, sizeof(name), "%.*s", (int)(end - p), p);
        if (wl_pattern_from_name(name) < 0)
            return bo_bad(prog, "--patterns", name, "not all, uniform, skew, incast or sparse");
    }
    return 0;
}

int
bo_parse(bench_opts *o, int argc, char **argv, const char *prog, void (*usage)(FILE *))
{
    int ch, r, factor_given = 0;
    const char *why;
    char opt[64];

    *o = (bench_opts){.smin = 64,
                      .smax = 64ull << 20,
                      .factor = 4,
                      .seed = WL_DEFAULT_SEED,
                      .target = 0.3,
                      .warmup = 3,
                      .min_iters = 5,
                      .max_iters = 10000,
                      .dtype = 4,
                      .esize = 4};
    snprintf(o->patterns, sizeof(o->patterns), "all");
    opterr = 0;
    optind = 1;
    for (;;) {
        int li = -1;
        if ((ch = getopt_long(argc, argv, ":b:e:f:i:w:n:d:c:tgormpazqh", bo_longs, &li)) == -1)
            break;
        if (li >= 0)
            snprintf(opt, sizeof(opt), "--%s", bo_longs[li].name);
        else if ((ch == ':' || ch == '?') && strncmp(argv[optind - 1], "--", 2) == 0)
            snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(argv[optind - 1], "="),
                     argv[optind - 1]);
        else
            snprintf(opt, sizeof(opt), "-%c", ch == ':' || ch == '?' ? optopt : ch);
        if (ch == ':')
            return bo_bad(prog, opt, NULL, "needs a value");
        if (ch == '?')
            return bo_bad(prog, opt, NULL, "unknown option");
        if ((why = bo_not_applicable(ch)) != NULL) {
            char how[160];
            if (ch == 't') { /* the ranks are processes: how to have more */
                snprintf(how, sizeof(how), "%s (%s N)", why,
                         strcmp(prog, "a2a-bench") == 0 ? "a2a-launch -n" : "mpirun -np");
                why = how;
            }
            return bo_bad(prog, opt, NULL, why);
        }
        if ((r = bo_one(o, ch, optarg, opt, prog, usage, &factor_given)) != 0)
            return r;
    }
    if (optind != argc)
        return bo_bad(prog, argv[optind], NULL, "unexpected argument");
    return bo_check(o, prog);
}

uint64_t
bo_next_size(const bench_opts *o, uint64_t s)
{
    uint64_t next;
    if (o->factor > 0) {
        if (s > o->smax / o->factor)
            return 0;
        next = s * o->factor;
    } else {
        if (s > o->smax - o->step)
            return 0;
        next = s + o->step;
    }
    return next <= o->smax ? next : 0;
}
