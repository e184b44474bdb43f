/*
 * workload.h - the benchmark workloads of ../shared/bench/WORKLOADS.md: the
 * four count-matrix patterns (uniform, skew, incast, sparse), the payload
 * values, the position-weighted checksum and the traffic / ideal-time figures.
 *
 * Conventions (WORKLOADS.md section 1): N ranks, S bytes each rank sends in
 * total (self included), E bytes per element, T = S / E elements; c[i][j] is
 * the number of elements rank i sends to rank j, and every row sums to T.
 * WORKLOADS.md fixes E = 4 (int32); here E may also be 1, 2 or 8: element k of
 * a slice is then the low E bytes of wl_elem_value(), which for E = 4 is the
 * normative int32 payload, so E = 4 reproduces the reference numbers exactly.
 *
 * Buffer layout: the send buffer of rank i holds its slices for j = 0..N-1
 * back to back; the receive buffer of rank r holds the slices from s = 0..N-1
 * back to back.
 */
#ifndef A2A_TOOLS_WORKLOAD_H
#define A2A_TOOLS_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#define WL_SKEW_K 720720u    /* lcm(1..16): skew weights are exact for N <= 16 */
#define WL_VALUE_SEED 0xA2Au /* seed of the payload hash */
#define WL_DEFAULT_SEED 1u   /* default seed of the sparse pattern */

typedef enum { WL_UNIFORM = 0, WL_SKEW, WL_INCAST, WL_SPARSE, WL_PATTERN_COUNT } wl_pattern;

/* Traffic of one workload in bytes; self slices never count. */
typedef struct {
    uint64_t wire_bytes; /* E * sum over i != j of c[i][j] */
    uint64_t max_out;    /* max over hosts h of E * sum_{j != h} c[h][j] */
    uint64_t max_in;     /* max over hosts h of E * sum_{i != h} c[i][h] */
    uint64_t max_out_in; /* max over hosts of max(out_h, in_h) */
} wl_traffic;

/* wl_pattern_name returns the pattern's lower-case name, or "invalid". */
const char *wl_pattern_name(int pattern);

/* wl_pattern_from_name returns the pattern called name, or -1. */
int wl_pattern_from_name(const char *name);

/* wl_hash32 is the lowbias32 finaliser of a linear mix of (a, b, seed), mod 2^32. */
uint32_t wl_hash32(uint32_t a, uint32_t b, uint32_t seed);

/* wl_sparse_active reports whether the sparse pattern lets rank i send to j
 * (before the "no active peer" fix-up): j != i and the hash's top bit is set. */
int wl_sparse_active(uint32_t i, uint32_t j, uint32_t seed);

/* wl_counts_row writes row i of the count matrix (out[j] = c[i][j], n entries,
 * caller-owned) for t elements per rank; 0, or -1 on a bad pattern or rank. */
int wl_counts_row(int pattern, uint32_t n, uint32_t i, uint64_t t, uint32_t seed, uint64_t *out);

/* wl_counts writes the whole matrix, counts[i * n + j] = c[i][j] (n * n
 * entries, caller-owned); 0, or -1 on bad arguments. */
int wl_counts(int pattern, uint32_t n, uint64_t t, uint32_t seed, uint64_t *counts);

/* wl_value is the normative int32 payload v(src, dst, k) of WORKLOADS.md section 4. */
uint32_t wl_value(uint32_t src, uint32_t dst, uint64_t k);

/* wl_elem_value is element k of the slice src -> dst for esize-byte elements,
 * as an unsigned integer: the low esize bytes of v for esize <= 4, and
 * (~v << 32) | v for esize 8. */
uint64_t wl_elem_value(uint32_t src, uint32_t dst, uint64_t k, size_t esize);

/* wl_esize_valid reports whether esize (bytes per element) is 1, 2, 4 or 8. */
int wl_esize_valid(size_t esize);

/* wl_send_total returns the elements rank i sends, sum_j c[i][j]. */
uint64_t wl_send_total(uint32_t n, uint32_t i, const uint64_t *counts);

/* wl_recv_total returns the elements rank r receives, sum_s c[s][r]. */
uint64_t wl_recv_total(uint32_t n, uint32_t r, const uint64_t *counts);

/* wl_fill_send writes rank me's send buffer (caller-owned, at least
 * wl_send_total elements of esize bytes) from the full matrix. */
void wl_fill_send(uint32_t n, uint32_t me, const uint64_t *counts, size_t esize, void *sbuf);

/* wl_checksum_buf returns sum_p elem[p] * (p + 1) mod 2^64 over the first
 * nelem esize-byte elements of rbuf, each read as an unsigned integer. */
uint64_t wl_checksum_buf(const void *rbuf, uint64_t nelem, size_t esize);

/* wl_checksum_expected returns the C_r that a correct receive buffer of rank r
 * gives, from the definition (no buffer needed). */
uint64_t wl_checksum_expected(uint32_t n, uint32_t r, const uint64_t *counts, size_t esize);

/* wl_verify_recv compares every element of rank r's receive buffer with the
 * payload and returns the number of wrong elements; *checksum (if not NULL)
 * gets C_r of the buffer as it is. */
uint64_t wl_verify_recv(uint32_t n, uint32_t r, const uint64_t *counts, size_t esize,
                        const void *rbuf, uint64_t *checksum);

/* wl_traffic_of returns wire bytes and the largest per-host out / in bytes. */
wl_traffic wl_traffic_of(uint32_t n, const uint64_t *counts, size_t esize);

/* wl_ideal_cluster_s is the ideal time (s) with one rank per host, each host a
 * full-duplex link of rate_Bps bytes/s each way: max_h max(out_h, in_h) / B. */
double wl_ideal_cluster_s(const wl_traffic *t, double rate_Bps);

/* wl_ideal_loopback_s is the ideal time (s) on one machine whose best
 * aggregate loopback goodput is rate_Bps bytes/s: wire bytes / B. */
double wl_ideal_loopback_s(const wl_traffic *t, double rate_Bps);

#endif
