/*
 * overlap.c - a non-blocking exchange overlapped with compute: start the all-to-all, work
 * while it runs, wait; then several operations in flight on one group, completed in order.
 * Run: a2a-launch -n 4 -- ./overlap
 */
#include <stdint.h>
#include <stdio.h>

#include <a2a.h>

#define K 4 /* operations in flight */

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
    static int64_t send[K][64], recv[K][64];
    int64_t counts[64], displs[64];
    for (int64_t j = 0; j < n; j++)
        counts[j] = 1, displs[j] = j;
    a2a_request *req[K];
    for (int i = 0; i < K; i++) {
        for (int64_t j = 0; j < n; j++)
            send[i][j] = 100 * i + 10 * me + j;
        a2a_alltoallv_args a = {
            .dtype = A2A_INT64,
            .send_data = send[i],
            .send_len = (size_t)n,
            .send_counts = counts,
            .send_displacements = displs,
            .recv_data = recv[i],
            .recv_len = (size_t)n,
            .recv_counts = counts,
            .recv_displacements = displs,
        };
        /* the buffers and arrays belong to the operation until it completes */
        if (a2a_all_to_all_v_start(job, &a, &req[i]) != A2A_OK) {
            fprintf(stderr, "start: %s\n", a2a_job_error(job));
            return 1;
        }
    }
    double x = 0; /* compute while they run */
    for (int i = 0; i < 1000000; i++)
        x += i * 0.5;
    if (x < 0) /* never: the result is used, so the loop stays */
        printf("%f\n", x);
    int done = 0;
    (void)a2a_test(req[0], &done); /* polls; 1 once it completed */
    a2a_status st = a2a_wait_all(K, req);
    if (st != A2A_OK)
        fprintf(stderr, "wait: %s: %s\n", a2a_status_name(st), a2a_job_error(job));
    else
        printf("rank %lld: op 3 got %lld .. %lld\n", (long long)me, (long long)recv[3][0],
               (long long)recv[3][n - 1]);
    for (int i = 0; i < K; i++)
        a2a_request_free(req[i]);
    a2a_job_close(job);
    return st == A2A_OK ? 0 : 1;
}
