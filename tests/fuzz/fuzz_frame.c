/*
 * fuzz_frame.c - libFuzzer target for the peer-link frame codec of
 * common/frame.c. The input is read three ways: as a 16-byte prefix and the
 * header after it (with the prefix's payload length if the prefix decodes,
 * else 0), and whole as a header with payload lengths 0 and 1. Whatever
 * decodes is encoded again, and the encoding must decode to the same frame
 * (abort() if not).
 */
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "fuzz.h"

static char err[512];

/* frame_equal reports whether a and b hold the same frame, field by field. */
static int
frame_equal(const frame *a, const frame *b)
{
    if (a->type != b->type || strcmp(a->id.group, b->id.group) != 0 || a->id.epoch != b->id.epoch ||
        a->id.op != b->id.op || strcmp(a->worker, b->worker) != 0 ||
        a->incarnation != b->incarnation || a->src != b->src || a->dst != b->dst ||
        a->dtype != b->dtype || a->n != b->n || a->count != b->count || a->status != b->status ||
        a->offset != b->offset || a->ttl != b->ttl || a->version != b->version ||
        strcmp(a->message, b->message) != 0)
        return 0;
    if (a->has_mac != b->has_mac || a->has_nonce != b->has_nonce ||
        memcmp(a->mac, b->mac, sizeof(a->mac)) != 0 || memcmp(a->nonce, b->nonce, sizeof(a->nonce)))
        return 0;
    if (a->n > 0 && (memcmp(a->srcs, b->srcs, a->n * sizeof(*a->srcs)) != 0 ||
                     memcmp(a->counts, b->counts, a->n * sizeof(*a->counts)) != 0))
        return 0;
    return 1;
}

/* fuzz_header decodes buf as a header; what decodes must survive encode and decode. */
static void
fuzz_header(const uint8_t *buf, size_t len, uint64_t payload_len)
{
    frame a, b;
    msgpack_sbuffer sb;

    if (frame_header_decode(&a, buf, len, payload_len, err, sizeof(err)) != 0) {
        CHECK(a.srcs == NULL && a.counts == NULL && a.n == 0);
        frame_fini(&a);
        return;
    }
    CHECK(a.type >= FRAME_HELLO && a.type <= FRAME_TYPE_MAX);
    CHECK((a.n == 0) == (a.srcs == NULL) && (a.n == 0) == (a.counts == NULL));
    CHECK(a.type == FRAME_READY || a.n == 0);
    msgpack_sbuffer_init(&sb);
    CHECK(frame_header_encode(&sb, &a) == 0);
    CHECK(sb.size <= len); /* the canonical encoding is never longer */
    CHECK(frame_header_decode(&b, (const uint8_t *)sb.data, sb.size, payload_len, err,
                              sizeof(err)) == 0);
    CHECK(frame_equal(&a, &b));
    msgpack_sbuffer_destroy(&sb);
    frame_fini(&a);
    frame_fini(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t header_len = 0;
    uint64_t payload_len = 0;
    uint8_t prefix[FRAME_PREFIX_LEN];

    if (size >= FRAME_PREFIX_LEN) {
        if (frame_prefix_decode(data, &header_len, &payload_len, err, sizeof(err)) == 0) {
            CHECK(header_len > 0 && header_len <= FRAME_HEADER_MAX);
            CHECK(payload_len <= FRAME_PAYLOAD_MAX);
            frame_prefix_encode(prefix, header_len, payload_len);
            CHECK(memcmp(prefix, data, FRAME_PREFIX_LEN) == 0);
        } else {
            payload_len = 0;
        }
        fuzz_header(data + FRAME_PREFIX_LEN, size - FRAME_PREFIX_LEN, payload_len);
    }
    fuzz_header(data, size, 0);
    fuzz_header(data, size, 1);
    return 0;
}
