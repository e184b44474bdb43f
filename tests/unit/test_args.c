/*
 * test_args.c - the argument checks of a2a_all_to_all_v (common/args.c):
 * valid layouts, and every class of invalid argument with a message that
 * names the index and the value seen.
 */
#include "cu_main.h"
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/args.h"
#include "common/dtype.h"

/* ---- helpers ---- */

/* A call's counts for n ranks: send_counts, send_displs, recv_counts, recv_displs. */
typedef struct {
    size_t n;
    int64_t *v;
} layout;

static layout
lay_alloc(size_t n)
{
    layout l = {n, calloc(4 * (n ? n : 1), sizeof(int64_t))};
    CU_ASSERT_PTR_NOT_NULL_FATAL(l.v);
    return l;
}

static int64_t *
sc(layout *l)
{
    return l->v;
}

static int64_t *
sd(layout *l)
{
    return l->v + l->n;
}

static int64_t *
rc(layout *l)
{
    return l->v + 2 * l->n;
}

static int64_t *
rd(layout *l)
{
    return l->v + 3 * l->n;
}

/* contiguous fills one side with counts c and displacements packed from 0; returns the total. */
static uint64_t
contiguous(size_t n, int64_t *c, int64_t *d, const int64_t *counts)
{
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        c[i] = counts[i];
        d[i] = (int64_t)at;
        at += (uint64_t)counts[i];
    }
    return at;
}

static char err[1024];

static a2a_status
check(const layout *l, int64_t dtype, uint64_t send_len, uint64_t recv_len)
{
    err[0] = '\0';
    return args_check(l->n, dtype, send_len, recv_len, l->v, err, sizeof(err));
}

static void
expect_ok_at(const layout *l, int64_t dtype, uint64_t send_len, uint64_t recv_len, int line)
{
    a2a_status st = check(l, dtype, send_len, recv_len);
    if (st != A2A_OK) {
        fprintf(stderr, "\nline %d: expected OK, got %d: %s\n", line, (int)st, err);
        CU_FAIL("valid arguments refused");
    }
}
#define expect_ok(l, dt, sl, rl) expect_ok_at(l, dt, sl, rl, __LINE__)

/* expect_invalid checks INVALID_ARGUMENT and that the message holds each of needles. */
static void
expect_invalid_at(const layout *l, int64_t dtype, uint64_t send_len, uint64_t recv_len,
                  const char *const *needles, int line)
{
    a2a_status st = check(l, dtype, send_len, recv_len);
    if (st != A2A_ERR_INVALID_ARGUMENT) {
        fprintf(stderr, "\nline %d: expected INVALID_ARGUMENT, got %d\n", line, (int)st);
        CU_FAIL("invalid arguments accepted");
        return;
    }
    for (size_t i = 0; needles[i] != NULL; i++)
        if (strstr(err, needles[i]) == NULL) {
            fprintf(stderr, "\nline %d: \"%s\" does not name \"%s\"\n", line, err, needles[i]);
            CU_FAIL("message does not name the index or value");
        }
}
#define expect_invalid(l, dt, sl, rl, ...)                         \
    do {                                                           \
        static const char *const needles_[] = {__VA_ARGS__, NULL}; \
        expect_invalid_at(l, dt, sl, rl, needles_, __LINE__);      \
    } while (0)

/* ---- valid ---- */

static void
test_valid_basic(void)
{
    static const int64_t counts[4] = {3, 1, 4, 1};
    layout l = lay_alloc(4);
    uint64_t s = contiguous(4, sc(&l), sd(&l), counts);
    uint64_t r = contiguous(4, rc(&l), rd(&l), counts);

    for (int64_t dt = 0; dt < A2A_DTYPE_COUNT; dt++)
        expect_ok(&l, dt, s, r);
    expect_ok(&l, A2A_FLOAT32, s + 100, r + 100); /* buffers larger than needed */
    free(l.v);
}

static void
test_valid_n1(void)
{
    layout l = lay_alloc(1);
    sc(&l)[0] = 10;
    rc(&l)[0] = 10;
    expect_ok(&l, A2A_INT64, 10, 10);
    sd(&l)[0] = 5;
    rd(&l)[0] = 90;
    expect_ok(&l, A2A_INT64, 15, 100);
    sc(&l)[0] = 0;
    rc(&l)[0] = 0;
    expect_ok(&l, A2A_INT64, 0, 0);
    free(l.v);
}

static void
test_valid_n0(void)
{
    layout l = lay_alloc(0);
    expect_ok(&l, A2A_INT8, 0, 0);
    free(l.v);
}

static void
test_valid_zero_counts(void)
{
    layout l = lay_alloc(4);

    /* everything zero, empty buffers */
    expect_ok(&l, A2A_FLOAT64, 0, 0);
    /* zero-count slices anywhere: past the end, inside other slices, far away */
    sc(&l)[1] = 8;
    rc(&l)[2] = 8;
    sd(&l)[0] = 1000;
    sd(&l)[2] = 3; /* inside slice 1 */
    sd(&l)[3] = 8; /* exactly at the end */
    rd(&l)[0] = 9; /* one past the end */
    rd(&l)[1] = 4; /* inside slice 2 */
    rd(&l)[3] = (int64_t)1 << 40;
    expect_ok(&l, A2A_FLOAT64, 8, 8);
    expect_ok(&l, A2A_INT8, 8, 8);
    /* a zero-count slice at INT64_MAX, where count * size cannot overflow */
    rd(&l)[3] = INT64_MAX;
    sd(&l)[0] = INT64_MAX;
    expect_ok(&l, A2A_INT8, 8, 8);
    /* and with zero-length buffers */
    rd(&l)[3] = 5;
    sd(&l)[0] = 1000;
    sc(&l)[1] = 0;
    rc(&l)[2] = 0;
    expect_ok(&l, A2A_INT32, 0, 0);
    free(l.v);
}

/*
 * A zero-count slice may have any non-negative displacement, even one whose
 * byte offset does not fit in 64 bits: nothing is read or written there
 * (worker/engine.c and op.c only add it to an address, in uint64_t).
 */
static void
test_valid_zero_count_any_displacement(void)
{
    layout l = lay_alloc(2);

    sc(&l)[0] = 1;
    rc(&l)[0] = 1;
    sd(&l)[1] = INT64_MAX;
    rd(&l)[1] = INT64_MAX;
    for (int64_t dt = 0; dt < A2A_DTYPE_COUNT; dt++)
        expect_ok(&l, dt, 1, 1);
    free(l.v);
}

static void
test_valid_adjacent_and_permuted(void)
{
    layout l = lay_alloc(5);
    static const int64_t c[5] = {2, 3, 1, 4, 5};

    /* receive slices adjacent, in reverse order of rank */
    uint64_t at = 0;
    for (int i = 4; i >= 0; i--) {
        rc(&l)[i] = c[i];
        rd(&l)[i] = (int64_t)at;
        at += (uint64_t)c[i];
    }
    uint64_t s = contiguous(5, sc(&l), sd(&l), c);
    expect_ok(&l, A2A_UINT16, s, at);
    /* a permutation with gaps */
    static const int64_t d[5] = {40, 0, 10, 20, 30};
    for (int i = 0; i < 5; i++)
        rd(&l)[i] = d[i];
    expect_ok(&l, A2A_UINT16, s, 42); /* slice 0 ends exactly at recv_len */
    expect_invalid(&l, A2A_UINT16, s, 41, "recv slice 0", "displacement 40", "41 elements");
    free(l.v);
}

static void
test_send_overlap_allowed(void)
{
    layout l = lay_alloc(3);

    /* every rank gets the same 4 elements, and 2..5 overlap 0..3 */
    sc(&l)[0] = 4;
    sc(&l)[1] = 4;
    sc(&l)[2] = 4;
    sd(&l)[2] = 2;
    rc(&l)[0] = 1;
    rd(&l)[0] = 0;
    expect_ok(&l, A2A_BFLOAT16, 6, 1);
    free(l.v);
}

/* ---- invalid ---- */

static void
test_bad_dtype(void)
{
    static const int64_t bad[] = {-1, A2A_DTYPE_COUNT, 12, 100, INT64_MIN, INT64_MAX};
    char v[32];
    layout l = lay_alloc(2);

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(v, sizeof(v), "dtype %lld", (long long)bad[i]);
        err[0] = '\0';
        CU_ASSERT_EQUAL(check(&l, bad[i], 0, 0), A2A_ERR_INVALID_ARGUMENT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, v));
    }
    free(l.v);
}

static void
test_negative_count(void)
{
    layout l = lay_alloc(4);

    sc(&l)[2] = -5;
    expect_invalid(&l, A2A_INT32, 100, 100, "send_counts[2]", "-5");
    sc(&l)[2] = INT64_MIN;
    expect_invalid(&l, A2A_INT32, 100, 100, "send_counts[2]", "-9223372036854775808");
    sc(&l)[2] = 0;
    rc(&l)[3] = -1;
    expect_invalid(&l, A2A_INT32, 100, 100, "recv_counts[3]", "-1");
    free(l.v);
}

static void
test_negative_displacement(void)
{
    layout l = lay_alloc(4);

    sd(&l)[1] = -3;
    expect_invalid(&l, A2A_INT32, 100, 100, "send_displacements[1]", "-3");
    sd(&l)[1] = 0;
    rd(&l)[0] = -7; /* even with a zero count */
    expect_invalid(&l, A2A_INT32, 100, 100, "recv_displacements[0]", "-7");
    rd(&l)[0] = INT64_MIN;
    expect_invalid(&l, A2A_INT32, 100, 100, "recv_displacements[0]", "-9223372036854775808");
    free(l.v);
}

static void
test_past_send_len(void)
{
    layout l = lay_alloc(3);

    sc(&l)[1] = 4;
    sd(&l)[1] = 7;
    expect_ok(&l, A2A_INT16, 11, 0);
    expect_invalid(&l, A2A_INT16, 10, 0, "send slice 1", "4 elements", "displacement 7", "10");
    sd(&l)[1] = 0;
    sc(&l)[1] = 11;
    expect_invalid(&l, A2A_INT16, 10, 0, "send slice 1", "11 elements");
    expect_invalid(&l, A2A_INT16, 0, 0, "send slice 1");
    free(l.v);
}

static void
test_past_recv_len(void)
{
    layout l = lay_alloc(3);

    rc(&l)[2] = 1;
    rd(&l)[2] = 99;
    expect_ok(&l, A2A_UINT64, 0, 100);
    expect_invalid(&l, A2A_UINT64, 0, 99, "recv slice 2", "1 elements", "displacement 99",
                   "99 elements");
    expect_invalid(&l, A2A_UINT64, 0, 0, "recv slice 2");
    free(l.v);
}

static void
test_overflow(void)
{
    layout l = lay_alloc(2);

    /* count * 8 overflows */
    sc(&l)[1] = INT64_MAX;
    expect_invalid(&l, A2A_FLOAT64, UINT64_MAX, 0, "send slice 1", "overflow",
                   "9223372036854775807");
    sc(&l)[1] = INT64_MAX / 8 + 1;
    expect_invalid(&l, A2A_FLOAT64, UINT64_MAX, 0, "send slice 1", "overflow");
    /* (count + displacement) * 8 overflows int64 though each alone does not */
    sc(&l)[1] = (int64_t)1 << 60;
    sd(&l)[1] = (int64_t)1 << 60;
    expect_invalid(&l, A2A_FLOAT64, UINT64_MAX, 0, "send slice 1", "overflow",
                   "1152921504606846976");
    sc(&l)[1] = 0;
    sd(&l)[1] = 0;
    rc(&l)[0] = INT64_MAX / 4;
    rd(&l)[0] = 1;
    expect_invalid(&l, A2A_FLOAT32, 0, UINT64_MAX, "recv slice 0", "overflow");
    /* count + displacement overflows int64 itself, for a 1-byte type */
    rc(&l)[0] = INT64_MAX;
    rd(&l)[0] = 1;
    expect_invalid(&l, A2A_INT8, 0, UINT64_MAX, "recv slice 0");
    rc(&l)[0] = 1;
    rd(&l)[0] = INT64_MAX;
    expect_invalid(&l, A2A_UINT8, 0, UINT64_MAX, "recv slice 0");
    rc(&l)[0] = INT64_MAX;
    rd(&l)[0] = INT64_MAX;
    expect_invalid(&l, A2A_INT8, 0, UINT64_MAX, "recv slice 0");
    /* the largest slice that fits: INT64_MAX bytes in all */
    rc(&l)[0] = INT64_MAX - 1;
    rd(&l)[0] = 1;
    expect_ok(&l, A2A_INT8, 0, UINT64_MAX);
    free(l.v);
}

static void
test_recv_overlap(void)
{
    layout l = lay_alloc(4);

    rc(&l)[0] = 4;
    rd(&l)[0] = 0;
    rc(&l)[2] = 4;
    rd(&l)[2] = 2;
    expect_invalid(&l, A2A_INT32, 0, 100, "slices 0", "and 2", "overlap");
    /* the later rank lower in the buffer */
    rd(&l)[0] = 3;
    rd(&l)[2] = 0;
    expect_invalid(&l, A2A_INT32, 0, 100, "slices 2", "and 0", "overlap");
    /* one slice inside another, with a third between them in order of rank */
    rc(&l)[0] = 100;
    rd(&l)[0] = 0;
    rc(&l)[1] = 0;
    rc(&l)[2] = 0;
    rc(&l)[3] = 1;
    rd(&l)[3] = 99;
    expect_invalid(&l, A2A_INT32, 0, 100, "slices 0", "and 3", "overlap");
    /* same displacement */
    rc(&l)[0] = 1;
    rd(&l)[0] = 99;
    expect_invalid(&l, A2A_INT32, 0, 100, "overlap", "99");
    /* touching is no overlap */
    rd(&l)[0] = 98;
    expect_ok(&l, A2A_INT32, 0, 100);
    free(l.v);
}

static void
test_large_n(void)
{
    const size_t n = 65536;
    layout l = lay_alloc(n);
    clock_t t0 = clock();
    double secs;

    for (size_t i = 0; i < n; i++) {
        sc(&l)[i] = (int64_t)(i % 3);
        sd(&l)[i] = (int64_t)(3 * i);
        rc(&l)[i] = (int64_t)(i % 5);
        rd(&l)[i] = (int64_t)(5 * (n - 1 - i)); /* reverse order */
    }
    expect_ok(&l, A2A_FLOAT32, 3 * n, 5 * n);
    rd(&l)[n / 2] += 2; /* overlaps its neighbour in the buffer */
    rc(&l)[n / 2] = 4;
    rc(&l)[n / 2 - 1] = 4;
    expect_invalid(&l, A2A_FLOAT32, 3 * n, 5 * n + 1, "overlap");
    secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CU_ASSERT(secs < 1.0);
    if (secs >= 1.0)
        fprintf(stderr, "\nargs_check of n = %zu took %.3f s\n", n, secs);
    free(l.v);
}

static void
test_small_errlen(void)
{
    layout l = lay_alloc(1);
    char small[4];

    sc(&l)[0] = -1;
    memset(small, 'z', sizeof(small));
    CU_ASSERT_EQUAL(args_check(1, A2A_INT8, 0, 0, l.v, small, sizeof(small)),
                    A2A_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(small[3], '\0');
    free(l.v);
}

/* count discovery: every receive count and displacement ARGS_DISCOVER; only the send side and
 * recv_len are checked; a partly discovering layout is refused as negative */
static void
test_discover(void)
{
    layout l = lay_alloc(3);
    int64_t c[3] = {2, 0, 5};
    uint64_t total = contiguous(3, sc(&l), sd(&l), c);
    for (size_t i = 0; i < 6; i++)
        l.v[6 + i] = ARGS_DISCOVER;
    CU_ASSERT_TRUE(args_discover(3, l.v));
    expect_ok(&l, A2A_INT32, total, 0);
    expect_ok(&l, A2A_INT32, total, 1000);
    expect_invalid(&l, A2A_INT64, total, (uint64_t)INT64_MAX, "recv_len", "overflows");
    sc(&l)[2] = 6; /* the send side is still checked */
    expect_invalid(&l, A2A_INT32, total, 10, "send slice 2");
    sc(&l)[2] = 5;
    l.v[3 * 3 + 1] = 0; /* one displacement given: not discovery */
    CU_ASSERT_FALSE(args_discover(3, l.v));
    expect_invalid(&l, A2A_INT32, total, 10, "recv_counts[0] is negative (-1)");
    CU_ASSERT_FALSE(args_discover(0, l.v));
    free(l.v);
}

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"valid, every dtype", test_valid_basic},
        {"count discovery", test_discover},
        {"valid, n = 1", test_valid_n1},
        {"valid, n = 0", test_valid_n0},
        {"valid, zero counts anywhere", test_valid_zero_counts},
        {"valid, zero count at displacement INT64_MAX", test_valid_zero_count_any_displacement},
        {"valid, adjacent and permuted", test_valid_adjacent_and_permuted},
        {"overlapping send slices are allowed", test_send_overlap_allowed},
        {"bad dtype", test_bad_dtype},
        {"negative count", test_negative_count},
        {"negative displacement", test_negative_displacement},
        {"slice past send_len", test_past_send_len},
        {"slice past recv_len", test_past_recv_len},
        {"overflow", test_overflow},
        {"overlapping receive slices", test_recv_overlap},
        {"n = 65536 runs fast", test_large_n},
        {"small error buffer", test_small_errlen},
    };
    return cu_main("args", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
