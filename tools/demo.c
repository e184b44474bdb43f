/*
 * demo.c - a2a-demo: the README's demo job. Each rank sends a differently
 * sized slice to every rank of hccl_world_group (some empty), then checks
 * every received element and that nothing outside the slices changed.
 *
 * Run it under a2a-launch: a2a-launch --workers 2 --ranks-per-worker 2 -- a2a-demo
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a.h"
#include "a2a_version.h"

#define GUARD 0x5A5A5A5Au

/* count of elements rank i sends to rank j: varied, with zeros */
static int64_t
count_of(int64_t i, int64_t j, int64_t n)
{
    return ((i * 7 + j * 3 + n) % 5) * (1 + (i + j) % 3);
}

static uint32_t
value_of(int64_t src, int64_t dst, int64_t k)
{
    return (uint32_t)(src * 1000003 + dst * 10007 + k * 13 + 1);
}

static void
demo_usage(FILE *f)
{
    fprintf(f, "usage: a2a-demo [ROUNDS]\n"
               "\n"
               "A job: one rank of hccl_world_group. Run it under a2a-launch, e.g.\n"
               "  a2a-launch -n 4 -- a2a-demo\n"
               "or with A2A_WORKER_URL (its worker) and A2A_RANK (its world rank) set.\n"
               "Each rank sends a differently sized uint32 slice to every rank (some empty),\n"
               "then checks every received element and that nothing outside the receive\n"
               "slices changed, ROUNDS times (default 1), and prints one line:\n"
               "  rank R of N: sent COUNTS | received COUNTS uint32 | verified\n"
               "  --help      this text\n"
               "  --version   print \"a2a-demo VERSION\" and exit\n"
               "\n"
               "Exit status: 0 when every round verified, 1 otherwise, 2 for bad usage.\n");
}

/* demo_args reads ROUNDS from argv: 0 to run, 1 to exit 0 (--help, --version), 2 for bad usage. */
static int
demo_args(int argc, char **argv, int64_t *rounds)
{
    char *end;
    *rounds = 1;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        demo_usage(stdout);
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("a2a-demo %s\n", A2A_VERSION);
        return 1;
    }
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "a2a-demo: unexpected argument \"%s\" (see a2a-demo --help)\n",
                argv[argc > 2 ? 2 : 1]);
        return 2;
    }
    if (argc == 2) {
        errno = 0;
        *rounds = strtoll(argv[1], &end, 10);
        if (errno != 0 || end == argv[1] || *end != '\0' || *rounds < 1) {
            fprintf(stderr, "a2a-demo: ROUNDS must be a positive integer, got \"%s\"\n", argv[1]);
            return 2;
        }
    }
    return 0;
}

int
main(int argc, char **argv)
{
    a2a_job *job;
    int64_t me, n, rounds;
    int bad = 0, parsed = demo_args(argc, argv, &rounds);

    if (parsed != 0)
        return parsed == 1 ? 0 : 2;

    for (size_t i = 0; i < 2; i++) { /* liba2a's "pass its URL" is for a2a_job_open's callers */
        const char *var = i == 0 ? "A2A_WORKER_URL" : "A2A_RANK", *v = getenv(var);
        if (v == NULL || *v == '\0') {
            fprintf(stderr,
                    "a2a-demo: no %s: run it under a2a-launch (a2a-launch -n 4 -- a2a-demo), or "
                    "set A2A_WORKER_URL (its worker) and A2A_RANK (its world rank)\n",
                    var);
            return 2;
        }
    }
    if (a2a_job_open(&job, NULL, -1) != A2A_OK) {
        fprintf(stderr, "a2a-demo: %s\n", a2a_job_error(NULL));
        return 1;
    }
    if (a2a_get_rank_size(job, NULL, &n) != A2A_OK || a2a_get_rank_id(job, NULL, &me) != A2A_OK) {
        fprintf(stderr, "a2a-demo: %s\n", a2a_job_error(job));
        a2a_job_close(job);
        return 1;
    }
    int64_t *sc = calloc((size_t)n, 8), *sd = calloc((size_t)n, 8), *rc = calloc((size_t)n, 8),
            *rd = calloc((size_t)n, 8), stot = 0, rtot = 0;
    for (int64_t j = 0; j < n; j++) { /* send slices in order, receive slices reversed, gaps of 1 */
        sc[j] = count_of(me, j, n);
        sd[j] = stot;
        stot += sc[j];
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        rc[i] = count_of(i, me, n);
        rd[i] = rtot + 1;
        rtot += rc[i] + 1;
    }
    uint32_t *send = malloc((size_t)(stot + 1) * 4), *recv = malloc((size_t)(rtot + 1) * 4);
    for (int64_t j = 0; j < n; j++)
        for (int64_t k = 0; k < sc[j]; k++)
            send[sd[j] + k] = value_of(me, j, k);
    for (int64_t r = 0; r < rounds && !bad; r++) {
        for (int64_t k = 0; k <= rtot; k++)
            recv[k] = GUARD;
        a2a_alltoallv_args a = {.dtype = A2A_UINT32,
                                .send_data = send,
                                .send_len = (size_t)stot,
                                .send_counts = sc,
                                .send_displacements = sd,
                                .recv_data = recv,
                                .recv_len = (size_t)rtot + 1,
                                .recv_counts = rc,
                                .recv_displacements = rd};
        a2a_status st = a2a_all_to_all_v(job, &a);
        if (st != A2A_OK) {
            fprintf(stderr, "a2a-demo: all_to_all_v: %s: %s\n", a2a_status_name(st),
                    a2a_job_error(job));
            bad = 1;
            break;
        }
        int64_t expect_guards = rtot + 1, guards = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < rc[i]; k++)
                if (recv[rd[i] + k] != value_of(i, me, k)) {
                    if (!bad)
                        fprintf(stderr,
                                "rank %" PRId64 ": element %" PRId64 " from rank %" PRId64
                                " is %u, expected %u\n",
                                me, k, i, recv[rd[i] + k], value_of(i, me, k));
                    bad = 1;
                }
        for (int64_t i = 0; i < n; i++)
            expect_guards -= rc[i];
        for (int64_t k = 0; k <= rtot; k++)
            guards += recv[k] == GUARD;
        if (guards != expect_guards) {
            fprintf(stderr, "rank %" PRId64 ": bytes outside the receive slices changed\n", me);
            bad = 1;
        }
    }
    printf("rank %" PRId64 " of %" PRId64 ": sent", me, n);
    for (int64_t j = 0; j < n; j++)
        printf(" %" PRId64, sc[j]);
    printf(" | received");
    for (int64_t i = 0; i < n; i++)
        printf(" %" PRId64, rc[i]);
    printf(" uint32 | %s\n", bad ? "MISMATCH" : "verified");
    free(sc), free(sd), free(rc), free(rd), free(send), free(recv);
    a2a_job_close(job);
    return bad;
}
