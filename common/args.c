/* args.c - argument checks of an alltoallv call. */
#include "status.h"
#include "args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "dtype.h"

/* check_side checks counts c and displacements d against a buffer of len elements. */
static a2a_status
check_side(size_t n, size_t esize, uint64_t len, const int64_t *c, const int64_t *d,
           const char *side, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        if (c[i] < 0)
            return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                               "%s_counts[%zu] is negative (%lld)", side, i, (long long)c[i]);
        if (d[i] < 0)
            return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                               "%s_displacements[%zu] is negative (%lld)", side, i,
                               (long long)d[i]);
        if (c[i] == 0)
            continue; /* an empty slice may sit anywhere: nothing is read or written there */
        /* both are below 2^63, so their sum does not wrap in uint64_t */
        if ((uint64_t)c[i] + (uint64_t)d[i] > (uint64_t)INT64_MAX / esize)
            return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                               "%s slice %zu overflows: %lld elements at %lld of %zu bytes", side,
                               i, (long long)c[i], (long long)d[i], esize);
        if ((uint64_t)c[i] + (uint64_t)d[i] > len)
            return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                               "%s slice %zu (%lld elements at displacement %lld) ends past the "
                               "buffer's %llu elements",
                               side, i, (long long)c[i], (long long)d[i], (unsigned long long)len);
    }
    return A2A_OK;
}

typedef struct {
    int64_t d, c;
    size_t i;
} args_slice;

static int
by_displ(const void *a, const void *b)
{
    const args_slice *x = a, *y = b;
    return x->d < y->d ? -1 : x->d > y->d;
}

/* check_overlap checks that no two non-empty receive slices overlap. */
static a2a_status
check_overlap(size_t n, const int64_t *c, const int64_t *d, char *err, size_t errlen)
{
    args_slice *v = malloc((n ? n : 1) * sizeof(*v));
    size_t k = 0;
    a2a_status st = A2A_OK;

    if (v == NULL)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (c[i] > 0)
            v[k++] = (args_slice){d[i], c[i], i};
    qsort(v, k, sizeof(*v), by_displ);
    for (size_t i = 1; i < k && st == A2A_OK; i++)
        if (v[i - 1].d + v[i - 1].c > v[i].d)
            st =
                status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                            "receive slices %zu ([%lld, %lld)) and %zu ([%lld, %lld)) overlap",
                            v[i - 1].i, (long long)v[i - 1].d, (long long)(v[i - 1].d + v[i - 1].c),
                            v[i].i, (long long)v[i].d, (long long)(v[i].d + v[i].c));
    free(v);
    return st;
}

int
args_discover(size_t n, const int64_t *counts)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (counts[2 * n + i] != ARGS_DISCOVER || counts[3 * n + i] != ARGS_DISCOVER)
            return 0;
    return 1;
}

a2a_status
args_check(size_t n, int64_t dtype, uint64_t send_len, uint64_t recv_len, const int64_t *counts,
           char *err, size_t errlen)
{
    a2a_status st;
    size_t esize;

    if (!dtype_valid(dtype))
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "dtype %lld is not one of the 12 data types", (long long)dtype);
    esize = a2a_dtype_size((a2a_dtype)dtype);
    if ((st = check_side(n, esize, send_len, counts, counts + n, "send", err, errlen)) != A2A_OK)
        return st;
    if (args_discover(n, counts)) { /* the receive side: recv_len elements from element 0 */
        if (recv_len > (uint64_t)INT64_MAX / esize)
            return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                               "recv_len %llu overflows in elements of %zu bytes",
                               (unsigned long long)recv_len, esize);
        return A2A_OK;
    }
    if ((st = check_side(n, esize, recv_len, counts + 2 * n, counts + 3 * n, "recv", err,
                         errlen)) != A2A_OK)
        return st;
    return check_overlap(n, counts + 2 * n, counts + 3 * n, err, errlen);
}
