/*
 * fuzz_rpc.c - libFuzzer target for the RPC envelope (wire_request_decode
 * and wire_reply_decode): what decodes is encoded again and must decode to
 * the same envelope (abort() if not), with the body pointing into the
 * buffer it was decoded from. The first input byte picks the decoder tried
 * first, so both get the whole input.
 */
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "common/wire.h"
#include "fuzz.h"

static int
in_buffer(const uint8_t *p, size_t n, const uint8_t *buf, size_t len)
{
    return n == 0 || (p >= buf && n <= len && (size_t)(p - buf) <= len - n);
}

static void
fuzz_request(const uint8_t *data, size_t size)
{
    wire_request a, b;
    msgpack_sbuffer sb;
    char err[256];

    if (wire_request_decode(&a, data, size, err, sizeof(err)) != 0) {
        CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
        return;
    }
    CHECK(a.method[0] != '\0' && strlen(a.method) <= WIRE_METHOD_MAX);
    CHECK(a.body_len <= WIRE_BODY_MAX && in_buffer(a.body, a.body_len, data, size));
    msgpack_sbuffer_init(&sb);
    CHECK(wire_request_encode(&sb, &a) == 0);
    CHECK(wire_request_decode(&b, (const uint8_t *)sb.data, sb.size, err, sizeof(err)) == 0);
    CHECK(strcmp(a.method, b.method) == 0 && a.id == b.id && a.timeout_ms == b.timeout_ms);
    CHECK(a.body_len == b.body_len);
    CHECK(a.body_len == 0 || memcmp(a.body, b.body, a.body_len) == 0);
    msgpack_sbuffer_destroy(&sb);
}

static void
fuzz_reply(const uint8_t *data, size_t size)
{
    wire_reply a, b;
    msgpack_sbuffer sb;
    char err[256];

    if (wire_reply_decode(&a, data, size, err, sizeof(err)) != 0) {
        CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
        return;
    }
    CHECK(status_valid(a.status) && strlen(a.message) <= WIRE_MESSAGE_MAX);
    CHECK(a.body_len <= WIRE_BODY_MAX && in_buffer(a.body, a.body_len, data, size));
    msgpack_sbuffer_init(&sb);
    CHECK(wire_reply_encode(&sb, &a) == 0);
    CHECK(wire_reply_decode(&b, (const uint8_t *)sb.data, sb.size, err, sizeof(err)) == 0);
    CHECK(a.id == b.id && a.status == b.status && strcmp(a.message, b.message) == 0);
    CHECK(a.body_len == b.body_len);
    CHECK(a.body_len == 0 || memcmp(a.body, b.body, a.body_len) == 0);
    msgpack_sbuffer_destroy(&sb);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 0 && (data[0] & 1)) {
        fuzz_reply(data, size);
        fuzz_request(data, size);
    } else {
        fuzz_request(data, size);
        fuzz_reply(data, size);
    }
    return 0;
}
