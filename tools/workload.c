/* workload.c - count matrices, payload, checksum and traffic of WORKLOADS.md. */
#include "tools/workload.h"

#include <string.h>

#define WL_GOLDEN 0x9E3779B1u /* step of the payload inside a slice (odd: values distinct) */

static const char *const wl_names[WL_PATTERN_COUNT] = {"uniform", "skew", "incast", "sparse"};

const char *
wl_pattern_name(int pattern)
{
    return pattern >= 0 && pattern < WL_PATTERN_COUNT ? wl_names[pattern] : "invalid";
}

int
wl_pattern_from_name(const char *name)
{
    for (int p = 0; name != NULL && p < WL_PATTERN_COUNT; p++)
        if (strcmp(name, wl_names[p]) == 0)
            return p;
    return -1;
}

uint32_t
wl_hash32(uint32_t a, uint32_t b, uint32_t seed)
{
    uint32_t x = a * 0x9E3779B1u + b * 0x85EBCA77u + seed * 0xC2B2AE3Du;
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x;
}

int
wl_sparse_active(uint32_t i, uint32_t j, uint32_t seed)
{
    return i != j && (wl_hash32(i, j, seed) >> 31) == 1;
}

/* wl_row_skew: weight K/(d+1) for ring distance d, floored; the rest to self. */
static void
wl_row_skew(uint32_t n, uint32_t i, uint64_t t, uint64_t *out)
{
    uint64_t wsum = 0, given = 0;
    for (uint32_t d = 0; d < n; d++)
        wsum += WL_SKEW_K / (d + 1);
    for (uint32_t d = 1; d < n; d++) {
        uint64_t c = t * (uint64_t)(WL_SKEW_K / (d + 1)) / wsum;
        out[(i + d) % n] = c;
        given += c;
    }
    out[i] = t - given;
}

/* wl_row_sparse: t split evenly over the active peers; the rest to the nearest one. */
static void
wl_row_sparse(uint32_t n, uint32_t i, uint64_t t, uint32_t seed, uint64_t *out)
{
    uint32_t k = 0, nearest = n;
    for (uint32_t d = 1; d < n; d++) {
        uint32_t j = (i + d) % n;
        if (wl_sparse_active(i, j, seed)) {
            k++;
            if (nearest == n)
                nearest = j;
        }
    }
    for (uint32_t j = 0; j < n; j++)
        out[j] = 0;
    if (k == 0) { /* nobody active: all of it to the next rank (to self when n == 1) */
        out[(i + 1) % n] = t;
        return;
    }
    for (uint32_t j = 0; j < n; j++)
        if (wl_sparse_active(i, j, seed))
            out[j] = t / k;
    out[nearest] += t % k;
}

int
wl_counts_row(int pattern, uint32_t n, uint32_t i, uint64_t t, uint32_t seed, uint64_t *out)
{
    if (n == 0 || i >= n || out == NULL)
        return -1;
    switch (pattern) {
    case WL_UNIFORM:
        for (uint32_t j = 0; j < n; j++)
            out[j] = t / n;
        out[i] += t % n;
        return 0;
    case WL_SKEW: wl_row_skew(n, i, t, out); return 0;
    case WL_INCAST: {
        uint64_t half = t / 2, rest = t - half;
        for (uint32_t j = 0; j < n; j++)
            out[j] = rest / n;
        out[0] += half;
        out[i] += rest % n;
        return 0;
    }
    case WL_SPARSE: wl_row_sparse(n, i, t, seed, out); return 0;
    default: return -1;
    }
}

int
wl_counts(int pattern, uint32_t n, uint64_t t, uint32_t seed, uint64_t *counts)
{
    for (uint32_t i = 0; i < n; i++)
        if (wl_counts_row(pattern, n, i, t, seed, counts + (size_t)i * n) != 0)
            return -1;
    return n > 0 ? 0 : -1;
}

uint32_t
wl_value(uint32_t src, uint32_t dst, uint64_t k)
{
    return wl_hash32(src, dst, WL_VALUE_SEED) + (uint32_t)k * WL_GOLDEN;
}

/* wl_widen turns the 32-bit payload into an esize-byte element value. */
static inline uint64_t
wl_widen(uint32_t v, size_t esize)
{
    switch (esize) {
    case 1: return v & 0xFFu;
    case 2: return v & 0xFFFFu;
    case 4: return v;
    default: return ((uint64_t)~v << 32) | v;
    }
}

uint64_t
wl_elem_value(uint32_t src, uint32_t dst, uint64_t k, size_t esize)
{
    return wl_widen(wl_value(src, dst, k), esize);
}

int
wl_esize_valid(size_t esize)
{
    return esize == 1 || esize == 2 || esize == 4 || esize == 8;
}

uint64_t
wl_send_total(uint32_t n, uint32_t i, const uint64_t *counts)
{
    uint64_t t = 0;
    for (uint32_t j = 0; j < n; j++)
        t += counts[(size_t)i * n + j];
    return t;
}

uint64_t
wl_recv_total(uint32_t n, uint32_t r, const uint64_t *counts)
{
    uint64_t t = 0;
    for (uint32_t s = 0; s < n; s++)
        t += counts[(size_t)s * n + r];
    return t;
}

/* wl_load / wl_store: element p of an esize-byte array as an unsigned integer.
 * Always inlined with a constant esize, so the loops below compile per size. */
static inline uint64_t
wl_load(const void *buf, uint64_t p, size_t esize)
{
    const unsigned char *b = (const unsigned char *)buf + p * esize;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (esize) {
    case 1: memcpy(&u8, b, 1); return u8;
    case 2: memcpy(&u16, b, 2); return u16;
    case 4: memcpy(&u32, b, 4); return u32;
    default: memcpy(&u64, b, 8); return u64;
    }
}

static inline void
wl_store(void *buf, uint64_t p, size_t esize, uint64_t v)
{
    unsigned char *b = (unsigned char *)buf + p * esize;
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    switch (esize) {
    case 1: memcpy(b, &u8, 1); break;
    case 2: memcpy(b, &u16, 2); break;
    case 4: memcpy(b, &u32, 4); break;
    default: memcpy(b, &v, 8); break;
    }
}

static inline void
wl_fill_as(uint32_t n, uint32_t me, const uint64_t *counts, size_t esize, void *sbuf)
{
    uint64_t p = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t v = wl_hash32(me, j, WL_VALUE_SEED);
        for (uint64_t k = 0; k < counts[(size_t)me * n + j]; k++, p++, v += WL_GOLDEN)
            wl_store(sbuf, p, esize, wl_widen(v, esize));
    }
}

void
wl_fill_send(uint32_t n, uint32_t me, const uint64_t *counts, size_t esize, void *sbuf)
{
    switch (esize) {
    case 1: wl_fill_as(n, me, counts, 1, sbuf); break;
    case 2: wl_fill_as(n, me, counts, 2, sbuf); break;
    case 4: wl_fill_as(n, me, counts, 4, sbuf); break;
    default: wl_fill_as(n, me, counts, 8, sbuf); break;
    }
}

static inline uint64_t
wl_checksum_as(const void *rbuf, uint64_t nelem, size_t esize)
{
    uint64_t c = 0;
    for (uint64_t p = 0; p < nelem; p++)
        c += wl_load(rbuf, p, esize) * (p + 1);
    return c;
}

uint64_t
wl_checksum_buf(const void *rbuf, uint64_t nelem, size_t esize)
{
    switch (esize) {
    case 1: return wl_checksum_as(rbuf, nelem, 1);
    case 2: return wl_checksum_as(rbuf, nelem, 2);
    case 4: return wl_checksum_as(rbuf, nelem, 4);
    default: return wl_checksum_as(rbuf, nelem, 8);
    }
}

uint64_t
wl_checksum_expected(uint32_t n, uint32_t r, const uint64_t *counts, size_t esize)
{
    uint64_t c = 0, p = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t v = wl_hash32(s, r, WL_VALUE_SEED);
        for (uint64_t k = 0; k < counts[(size_t)s * n + r]; k++, p++, v += WL_GOLDEN)
            c += wl_widen(v, esize) * (p + 1);
    }
    return c;
}

/* wl_verify_as counts wrong elements and sums the checksum in one pass. */
static inline uint64_t
wl_verify_as(uint32_t n, uint32_t r, const uint64_t *counts, size_t esize, const void *rbuf,
             uint64_t *checksum)
{
    uint64_t bad = 0, p = 0, c = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t v = wl_hash32(s, r, WL_VALUE_SEED);
        for (uint64_t k = 0; k < counts[(size_t)s * n + r]; k++, p++, v += WL_GOLDEN) {
            uint64_t got = wl_load(rbuf, p, esize);
            bad += got != wl_widen(v, esize);
            c += got * (p + 1);
        }
    }
    if (checksum != NULL)
        *checksum = c;
    return bad;
}

uint64_t
wl_verify_recv(uint32_t n, uint32_t r, const uint64_t *counts, size_t esize, const void *rbuf,
               uint64_t *checksum)
{
    switch (esize) {
    case 1: return wl_verify_as(n, r, counts, 1, rbuf, checksum);
    case 2: return wl_verify_as(n, r, counts, 2, rbuf, checksum);
    case 4: return wl_verify_as(n, r, counts, 4, rbuf, checksum);
    default: return wl_verify_as(n, r, counts, 8, rbuf, checksum);
    }
}

wl_traffic
wl_traffic_of(uint32_t n, const uint64_t *counts, size_t esize)
{
    wl_traffic t = {0, 0, 0, 0};
    for (uint32_t h = 0; h < n; h++) {
        uint64_t out = 0, in = 0;
        for (uint32_t o = 0; o < n; o++) {
            if (o == h)
                continue;
            out += counts[(size_t)h * n + o] * esize;
            in += counts[(size_t)o * n + h] * esize;
        }
        t.wire_bytes += out;
        t.max_out = out > t.max_out ? out : t.max_out;
        t.max_in = in > t.max_in ? in : t.max_in;
        t.max_out_in = out > t.max_out_in ? out : t.max_out_in;
        t.max_out_in = in > t.max_out_in ? in : t.max_out_in;
    }
    return t;
}

double
wl_ideal_cluster_s(const wl_traffic *t, double rate_Bps)
{
    return rate_Bps > 0 ? (double)t->max_out_in / rate_Bps : 0.0;
}

double
wl_ideal_loopback_s(const wl_traffic *t, double rate_Bps)
{
    return rate_Bps > 0 ? (double)t->wire_bytes / rate_Bps : 0.0;
}
