/* test_workload.c - the bench workloads: WORKLOADS.md tables and test vectors,
 * row sums, an emulated exchange, and agreement with the reference header
 * ../shared/bench/a2a_workload.h when it was found at configure time. */
#include "cu_main.h"
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/workload.h"

#ifdef WL_REF_HEADER
#include WL_REF_HEADER
#endif

/* WORKLOADS.md section 3: N = 4, S = 4096 bytes (T = 1024), seed 1. */
static const uint64_t table_n4[WL_PATTERN_COUNT][16] = {
    {256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256},
    {494, 245, 163, 122, 122, 494, 245, 163, 163, 122, 494, 245, 245, 163, 122, 494},
    {640, 128, 128, 128, 640, 128, 128, 128, 640, 128, 128, 128, 640, 128, 128, 128},
    {0, 0, 1024, 0, 0, 0, 1024, 0, 0, 512, 0, 512, 1024, 0, 0, 0},
};
/* wire bytes, max host out, max host in */
static const uint64_t traffic_n4[WL_PATTERN_COUNT][3] = {
    {12288, 3072, 3072}, {8480, 2120, 2120}, {12288, 3584, 7680}, {16384, 4096, 8192}};
/* section 4: run checksums, N = 4 S = 4096 and N = 8 S = 64 MiB */
static const uint64_t csum_n4[WL_PATTERN_COUNT] = {0x001010f6d41c4700ull, 0x001008de338fc505ull,
                                                   0x001c0c18c0293a80ull, 0x0016057d592aad00ull};
static const uint64_t csum_n8_64m[WL_PATTERN_COUNT] = {
    0xff71d50871400000ull, 0x03359730c656d83eull, 0xfc513e813c200000ull, 0x18f74c55e3612c34ull};

static uint64_t
run_checksum(int pattern, uint32_t n, uint64_t t, uint32_t seed, size_t esize)
{
    uint64_t *c = calloc((size_t)n * n, sizeof(*c)), sum = 0;
    CU_ASSERT_FATAL(c != NULL);
    CU_ASSERT_EQUAL(wl_counts(pattern, n, t, seed, c), 0);
    for (uint32_t r = 0; r < n; r++)
        sum += wl_checksum_expected(n, r, c, esize);
    free(c);
    return sum;
}

static void
test_tables_n4(void)
{
    uint64_t c[16];
    for (int p = 0; p < WL_PATTERN_COUNT; p++) {
        CU_ASSERT_EQUAL(wl_counts(p, 4, 1024, 1, c), 0);
        for (int k = 0; k < 16; k++)
            CU_ASSERT_EQUAL(c[k], table_n4[p][k]);
        wl_traffic t = wl_traffic_of(4, c, 4);
        CU_ASSERT_EQUAL(t.wire_bytes, traffic_n4[p][0]);
        CU_ASSERT_EQUAL(t.max_out, traffic_n4[p][1]);
        CU_ASSERT_EQUAL(t.max_in, traffic_n4[p][2]);
        CU_ASSERT_EQUAL(t.max_out_in,
                        traffic_n4[p][1] > traffic_n4[p][2] ? traffic_n4[p][1] : traffic_n4[p][2]);
        CU_ASSERT_EQUAL(run_checksum(p, 4, 1024, 1, 4), csum_n4[p]);
    }
    /* ideal times: bandwidth term only */
    wl_traffic t = {.wire_bytes = 1000, .max_out = 300, .max_in = 500, .max_out_in = 500};
    CU_ASSERT_DOUBLE_EQUAL(wl_ideal_cluster_s(&t, 1000.0), 0.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(wl_ideal_loopback_s(&t, 100.0), 10.0, 1e-12);
}

static void
test_sparse_n8_rows(void)
{
    static const uint64_t row1[8] = {0, 0, 342, 0, 0, 341, 341, 0};
    static const uint64_t row3[8] = {341, 0, 0, 0, 0, 0, 342, 341};
    uint64_t r[8];
    CU_ASSERT_EQUAL(wl_counts_row(WL_SPARSE, 8, 1, 1024, 1, r), 0);
    CU_ASSERT_EQUAL(memcmp(r, row1, sizeof(r)), 0);
    CU_ASSERT_EQUAL(wl_counts_row(WL_SPARSE, 8, 3, 1024, 1, r), 0);
    CU_ASSERT_EQUAL(memcmp(r, row3, sizeof(r)), 0);
}

static void
test_vectors(void)
{
    CU_ASSERT_EQUAL(wl_hash32(0, 0, 1), 0xaa6f94b3u);
    CU_ASSERT_EQUAL(wl_hash32(1, 2, 1), 0xc76cd430u);
    CU_ASSERT_EQUAL(wl_hash32(3, 0, 7), 0x76bbc69fu);
    CU_ASSERT_EQUAL(wl_value(0, 1, 0), 0x7b52233eu);
    CU_ASSERT_EQUAL(wl_value(0, 1, 1), 0x19899cefu);
    CU_ASSERT_EQUAL(wl_value(1, 0, 0), 0x7d4b21d1u);
    CU_ASSERT_EQUAL(wl_value(2, 3, 5), 0x562e9b63u);
    CU_ASSERT_EQUAL((int32_t)wl_value(2, 3, 5), 1445895011);
    CU_ASSERT_EQUAL(wl_elem_value(2, 3, 5, 4), 0x562e9b63u);
    CU_ASSERT_EQUAL(wl_elem_value(2, 3, 5, 2), 0x9b63u);
    CU_ASSERT_EQUAL(wl_elem_value(2, 3, 5, 1), 0x63u);
    CU_ASSERT_EQUAL(wl_elem_value(2, 3, 5, 8), 0xa9d1649c562e9b63ull);
    /* sparse top bits of hash32(i, j, 1) for N = 4: 1010, 0010, 0111, 1001 */
    static const char *bits[4] = {"1010", "0010", "0111", "1001"};
    for (uint32_t i = 0; i < 4; i++)
        for (uint32_t j = 0; j < 4; j++)
            CU_ASSERT_EQUAL((int)(wl_hash32(i, j, 1) >> 31), bits[i][j] - '0');
    CU_ASSERT_STRING_EQUAL(wl_pattern_name(WL_SKEW), "skew");
    CU_ASSERT_STRING_EQUAL(wl_pattern_name(WL_PATTERN_COUNT), "invalid");
    CU_ASSERT_EQUAL(wl_pattern_from_name("sparse"), WL_SPARSE);
    CU_ASSERT_EQUAL(wl_pattern_from_name("Sparse"), -1);
    CU_ASSERT_EQUAL(wl_pattern_from_name(NULL), -1);
    CU_ASSERT_EQUAL(wl_counts_row(WL_PATTERN_COUNT, 4, 0, 8, 1, (uint64_t[4]){0}), -1);
    CU_ASSERT_EQUAL(wl_counts_row(WL_UNIFORM, 4, 4, 8, 1, (uint64_t[4]){0}), -1);
    CU_ASSERT_EQUAL(wl_counts_row(WL_UNIFORM, 0, 0, 8, 1, (uint64_t[4]){0}), -1);
}

static void
test_checksums_n8_64m(void)
{
    for (int p = 0; p < WL_PATTERN_COUNT; p++)
        CU_ASSERT_EQUAL(run_checksum(p, 8, (64ull << 20) / 4, 1, 4), csum_n8_64m[p]);
}

static const uint64_t some_t[] = {
    0, 1, 3, 7, 16, 17, 255, 1024, 1031, 65536, 999983, (64ull << 20) / 4, 1ull << 40};

static void
test_row_sums(void)
{
    uint64_t c[16 * 16];
    for (uint32_t n = 1; n <= 16; n++)
        for (size_t k = 0; k < sizeof(some_t) / sizeof(some_t[0]); k++)
            for (int p = 0; p < WL_PATTERN_COUNT; p++)
                for (uint32_t seed = 1; seed <= 3; seed++) {
                    uint64_t t = some_t[k];
                    CU_ASSERT_EQUAL_FATAL(wl_counts(p, n, t, seed, c), 0);
                    for (uint32_t i = 0; i < n; i++) {
                        CU_ASSERT_EQUAL(wl_send_total(n, i, c), t);
                        if (p == WL_SKEW) /* circulant: every rank also receives T */
                            CU_ASSERT_EQUAL(wl_recv_total(n, i, c), t);
                        if (p == WL_SPARSE && n > 1)
                            CU_ASSERT_EQUAL(c[(size_t)i * n + i], 0);
                    }
                }
}

/* exchange emulates the op: every rank's send slices land in the receivers' buffers. */
static void
exchange(uint32_t n, const uint64_t *c, size_t esize, unsigned char **sbuf, unsigned char **rbuf)
{
    for (uint32_t r = 0; r < n; r++) {
        uint64_t p = 0;
        for (uint32_t s = 0; s < n; s++) {
            uint64_t off = 0;
            for (uint32_t j = 0; j < r; j++)
                off += c[(size_t)s * n + j];
            memcpy(rbuf[r] + p * esize, sbuf[s] + off * esize, c[(size_t)s * n + r] * esize);
            p += c[(size_t)s * n + r];
        }
    }
}

static void
test_emulated_exchange(void)
{
    enum { N = 5 };
    static const size_t sizes[] = {1, 2, 4, 8};
    uint64_t c[N * N];
    unsigned char *sbuf[N], *rbuf[N];
    for (size_t e = 0; e < 4; e++)
        for (int p = 0; p < WL_PATTERN_COUNT; p++) {
            size_t esize = sizes[e];
            CU_ASSERT_EQUAL_FATAL(wl_counts(p, N, 1003, 1, c), 0);
            for (uint32_t r = 0; r < N; r++) {
                sbuf[r] = malloc(wl_send_total(N, r, c) * esize + 1);
                rbuf[r] = malloc(wl_recv_total(N, r, c) * esize + 1);
                CU_ASSERT_FATAL(sbuf[r] != NULL && rbuf[r] != NULL);
                wl_fill_send(N, r, c, esize, sbuf[r]);
                memset(rbuf[r], 0xA5, wl_recv_total(N, r, c) * esize);
            }
            exchange(N, c, esize, sbuf, rbuf);
            for (uint32_t r = 0; r < N; r++) {
                uint64_t cs = 1, total = wl_recv_total(N, r, c);
                CU_ASSERT_EQUAL(wl_verify_recv(N, r, c, esize, rbuf[r], &cs), 0);
                CU_ASSERT_EQUAL(cs, wl_checksum_expected(N, r, c, esize));
                CU_ASSERT_EQUAL(cs, wl_checksum_buf(rbuf[r], total, esize));
                /* swapping two elements keeps the sum of values but not the checksum */
                if (total >= 2) {
                    unsigned char tmp[8];
                    memcpy(tmp, rbuf[r], esize);
                    memcpy(rbuf[r], rbuf[r] + esize, esize);
                    memcpy(rbuf[r] + esize, tmp, esize);
                    CU_ASSERT(wl_verify_recv(N, r, c, esize, rbuf[r], &cs) == 2);
                    CU_ASSERT(cs != wl_checksum_expected(N, r, c, esize));
                }
                free(sbuf[r]);
                free(rbuf[r]);
            }
        }
}

#ifdef WL_REF_HEADER
static void
test_reference_header(void)
{
    static const uint64_t sizes[] = {64, 100, 256, 1024, 4096, 65536, 1048576, 4194304 + 12};
    uint64_t mine[16 * 16], ref[16 * 16];
    long checked = 0;
    CU_ASSERT_EQUAL(A2A_SKEW_K, WL_SKEW_K);
    CU_ASSERT_EQUAL(A2A_VALUE_SEED, WL_VALUE_SEED);
    for (uint32_t a = 0; a < 300; a++)
        for (uint32_t b = 0; b < 40; b++) {
            CU_ASSERT_EQUAL(a2a_hash32(a, b, a ^ b), wl_hash32(a, b, a ^ b));
            CU_ASSERT_EQUAL(a2a_value(a, b, (uint64_t)a * b * 977), wl_value(a, b, a * b * 977));
        }
    for (uint32_t n = 1; n <= 16; n++)
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
            for (int p = 0; p < WL_PATTERN_COUNT; p++)
                for (uint32_t seed = 0; seed < 6; seed++) {
                    uint64_t t = sizes[k] / A2A_ELEM;
                    CU_ASSERT_STRING_EQUAL(a2a_pattern_names[p], wl_pattern_name(p));
                    CU_ASSERT_EQUAL_FATAL(a2a_counts(p, n, t, seed, ref), 0);
                    CU_ASSERT_EQUAL_FATAL(wl_counts(p, n, t, seed, mine), 0);
                    CU_ASSERT_EQUAL(memcmp(mine, ref, (size_t)n * n * sizeof(uint64_t)), 0);
                    struct a2a_traffic rt = a2a_traffic_of(n, ref);
                    wl_traffic mt = wl_traffic_of(n, mine, 4);
                    CU_ASSERT(rt.wire_bytes == mt.wire_bytes && rt.max_out == mt.max_out &&
                              rt.max_in == mt.max_in && rt.max_out_in == mt.max_out_in);
                    CU_ASSERT_DOUBLE_EQUAL(a2a_ideal_seconds(n, ref, 1.25e8),
                                           wl_ideal_cluster_s(&mt, 1.25e8), 1e-12);
                    if (sizes[k] <= 65536)
                        for (uint32_t r = 0; r < n; r++)
                            CU_ASSERT_EQUAL(a2a_checksum_expected(n, r, ref),
                                            wl_checksum_expected(n, r, mine, 4));
                    checked++;
                }
    printf("\n    compared %ld workloads with %s ", checked, WL_REF_HEADER);
}
#else
static void
test_reference_header(void)
{
    printf("\n    SKIPPED: ../shared/bench/a2a_workload.h was not found at configure time ");
}
#endif

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"section 3 tables, N=4 S=4096", test_tables_n4},
        {"sparse rows, N=8", test_sparse_n8_rows},
        {"hash32 and payload test vectors", test_vectors},
        {"checksums, N=8 S=64MiB", test_checksums_n8_64m},
        {"row sums = T, N=1..16", test_row_sums},
        {"emulated exchange verifies", test_emulated_exchange},
        {"agrees with a2a_workload.h", test_reference_header},
    };
    return cu_main("workload", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
