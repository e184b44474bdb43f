/*
 * discover.c - count discovery: each rank sends a different number of int32 to every rank
 * (routed tokens), and the receivers give no receive counts: the slices land packed in rank
 * order and the counts come back in recv_counts_out. Run: a2a-launch -n 4 -- ./discover
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <a2a.h>

int
main(void)
{
    a2a_job *job;
    int64_t me, n;

    if (a2a_job_open(&job, NULL, -1) != A2A_OK) {
        fprintf(stderr, "open: %s\n", a2a_job_error(NULL));
        return 1;
    }
    if (a2a_get_rank_size(job, NULL, &n) != A2A_OK || a2a_get_rank_id(job, NULL, &me) != A2A_OK ||
        n > 64) {
        fprintf(stderr, "rank: %s\n", a2a_job_error(job));
        return 1;
    }
    /* rank me sends (me + j) % 3 tokens to rank j, each worth 1000 * me + j */
    int32_t send[192], recv[192]; /* at most 2 per rank: 64 ranks * 2 fit */
    int64_t sc[64], sd[64], got[64];
    size_t slen = 0;
    for (int64_t j = 0; j < n; j++) {
        sc[j] = (me + j) % 3;
        sd[j] = (int64_t)slen;
        for (int64_t k = 0; k < sc[j]; k++)
            send[slen++] = (int32_t)(1000 * me + j);
    }
    a2a_alltoallv_args a = {
        .dtype = A2A_INT32,
        .send_data = send,
        .send_len = slen,
        .send_counts = sc,
        .send_displacements = sd,
        .recv_data = recv,
        .recv_len = 192, /* capacity */
        .recv_counts = NULL,
        .recv_displacements = NULL, /* discover them */
        .recv_counts_out = got,
    };
    a2a_status st = a2a_all_to_all_v(job, &a);
    if (st != A2A_OK) { /* too many for recv_len: RESOURCE_EXHAUSTED, for every rank */
        fprintf(stderr, "all_to_all_v: %s: %s\n", a2a_status_name(st), a2a_job_error(job));
        a2a_job_close(job);
        return 1;
    }
    size_t at = 0;
    printf("rank %lld got", (long long)me);
    for (int64_t s = 0; s < n; s++) { /* packed in rank order */
        printf(" [%lld from %lld:", (long long)got[s], (long long)s);
        for (int64_t k = 0; k < got[s]; k++)
            printf(" %d", recv[at++]);
        printf("]");
    }
    printf("\n");
    a2a_job_close(job);
    return 0;
}
