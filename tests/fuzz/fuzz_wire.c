/*
 * fuzz_wire.c - libFuzzer target for every decoder of common/wire.c: each
 * runs on the input; what decodes is encoded again, and the encoding must
 * decode to the same message (abort() if not).
 */
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"
#include "fuzz.h"

static char err[512];

/* The buffer of sb, decoded by the caller, then freed. */
#define REDECODE(sb) ((const uint8_t *)(sb).data), (sb).size

static void
fuzz_group_name(const uint8_t *data, size_t size)
{
    wire_group_name a, b;
    msgpack_sbuffer sb;

    if (wire_group_name_decode(&a, data, size, err, sizeof(err)) != 0)
        return;
    msgpack_sbuffer_init(&sb);
    CHECK(wire_group_name_encode(&sb, a.name) == 0);
    CHECK(wire_group_name_decode(&b, REDECODE(sb), err, sizeof(err)) == 0);
    CHECK(strcmp(a.name, b.name) == 0);
    msgpack_sbuffer_destroy(&sb);
}

static void
fuzz_create(const uint8_t *data, size_t size)
{
    wire_create a, b;
    msgpack_sbuffer sb;

    if (wire_create_decode(&a, data, size, err, sizeof(err)) != 0) {
        CHECK(a.ranks == NULL && a.n == 0);
        return;
    }
    msgpack_sbuffer_init(&sb);
    CHECK(wire_create_encode(&sb, a.name, a.n, a.ranks) == 0);
    CHECK(wire_create_decode(&b, REDECODE(sb), err, sizeof(err)) == 0);
    CHECK(strcmp(a.name, b.name) == 0 && a.n == b.n);
    CHECK(memcmp(a.ranks, b.ranks, a.n * sizeof(*a.ranks)) == 0);
    wire_create_fini(&a);
    wire_create_fini(&b);
    msgpack_sbuffer_destroy(&sb);
}

static void
fuzz_group(const uint8_t *data, size_t size)
{
    wire_group a, b;
    msgpack_sbuffer sb;

    if (wire_group_decode(&a, data, size, err, sizeof(err)) != 0) {
        CHECK(a.members == NULL && a.n == 0);
        return;
    }
    msgpack_sbuffer_init(&sb);
    CHECK(wire_group_encode(&sb, &a) == 0);
    CHECK(wire_group_decode(&b, REDECODE(sb), err, sizeof(err)) == 0);
    CHECK(strcmp(a.name, b.name) == 0 && a.epoch == b.epoch && a.n == b.n);
    for (size_t i = 0; i < a.n; i++) {
        CHECK(a.members[i].world_rank == b.members[i].world_rank);
        CHECK(strcmp(a.members[i].worker, b.members[i].worker) == 0);
        CHECK(strcmp(a.members[i].url, b.members[i].url) == 0);
        CHECK(strcmp(a.members[i].data_url, b.members[i].data_url) == 0);
    }
    wire_group_fini(&a);
    wire_group_fini(&b);
    msgpack_sbuffer_destroy(&sb);
}

static void
fuzz_group_list(const uint8_t *data, size_t size)
{
    wire_group_list a, b;
    msgpack_sbuffer sb;

    if (wire_group_list_decode(&a, data, size, err, sizeof(err)) != 0) {
        CHECK(a.groups == NULL && a.n == 0);
        return;
    }
    msgpack_sbuffer_init(&sb);
    CHECK(wire_group_list_encode(&sb, &a) == 0);
    CHECK(wire_group_list_decode(&b, REDECODE(sb), err, sizeof(err)) == 0);
    CHECK(a.n == b.n);
    for (size_t i = 0; i < a.n; i++) {
        CHECK(strcmp(a.groups[i].name, b.groups[i].name) == 0);
        CHECK(a.groups[i].epoch == b.groups[i].epoch && a.groups[i].size == b.groups[i].size);
        CHECK(strcmp(a.groups[i].origin, b.groups[i].origin) == 0);
    }
    wire_group_list_fini(&a);
    wire_group_list_fini(&b);
    msgpack_sbuffer_destroy(&sb);
}

static void
fuzz_health(const uint8_t *data, size_t size)
{
    wire_health a, b;
    msgpack_sbuffer sb;

    if (wire_health_decode(&a, data, size, err, sizeof(err)) != 0)
        return;
    msgpack_sbuffer_init(&sb);
    CHECK(wire_health_encode(&sb, &a) == 0);
    CHECK(wire_health_decode(&b, REDECODE(sb), err, sizeof(err)) == 0);
    CHECK(strcmp(a.service, b.service) == 0 && strcmp(a.name, b.name) == 0);
    CHECK(a.world_size == b.world_size && a.groups == b.groups && a.uptime_ms == b.uptime_ms);
    CHECK(strcmp(a.config, b.config) == 0);
    msgpack_sbuffer_destroy(&sb);
}

static void
fuzz_empty(const uint8_t *data, size_t size)
{
    msgpack_sbuffer sb;

    if (wire_empty_decode(data, size, err, sizeof(err)) != 0)
        return;
    msgpack_sbuffer_init(&sb);
    CHECK(wire_empty_encode(&sb) == 0);
    /* the input may be a longer form of the empty array (0xdc 0 0); the encoding is canonical */
    CHECK(sb.size == 1 && (uint8_t)sb.data[0] == 0x90);
    CHECK(wire_empty_decode(REDECODE(sb), err, sizeof(err)) == 0);
    msgpack_sbuffer_destroy(&sb);
}

static void
fuzz_envelopes(const uint8_t *data, size_t size)
{
    wire_request rq, rq2;
    wire_reply rp, rp2;
    msgpack_sbuffer sb;

    if (wire_request_decode(&rq, data, size, err, sizeof(err)) == 0) {
        msgpack_sbuffer_init(&sb);
        CHECK(wire_request_encode(&sb, &rq) == 0);
        CHECK(wire_request_decode(&rq2, REDECODE(sb), err, sizeof(err)) == 0);
        CHECK(strcmp(rq.method, rq2.method) == 0 && rq.id == rq2.id);
        CHECK(rq.timeout_ms == rq2.timeout_ms && rq.body_len == rq2.body_len);
        CHECK(rq.body_len == 0 || memcmp(rq.body, rq2.body, rq.body_len) == 0);
        msgpack_sbuffer_destroy(&sb);
    }
    if (wire_reply_decode(&rp, data, size, err, sizeof(err)) == 0) {
        msgpack_sbuffer_init(&sb);
        CHECK(wire_reply_encode(&sb, &rp) == 0);
        CHECK(wire_reply_decode(&rp2, REDECODE(sb), err, sizeof(err)) == 0);
        CHECK(rp.id == rp2.id && rp.status == rp2.status);
        CHECK(strcmp(rp.message, rp2.message) == 0 && rp.body_len == rp2.body_len);
        CHECK(rp.body_len == 0 || memcmp(rp.body, rp2.body, rp.body_len) == 0);
        msgpack_sbuffer_destroy(&sb);
    }
}

static void
fuzz_a2av(const uint8_t *data, size_t size)
{
    wire_a2av a, b;
    msgpack_sbuffer sb;
    int64_t next, next2;

    if (wire_a2av_reply_decode(&next, data, size, err, sizeof(err)) == 0) {
        CHECK(next >= -1);
        msgpack_sbuffer_init(&sb);
        CHECK(wire_a2av_reply_encode(&sb, next) == 0);
        CHECK(wire_a2av_reply_decode(&next2, REDECODE(sb), err, sizeof(err)) == 0);
        CHECK(next == next2);
        msgpack_sbuffer_destroy(&sb);
    }
    if (wire_a2av_decode(&a, data, size, err, sizeof(err)) != 0) {
        CHECK(a.counts == NULL && a.n == 0);
        return;
    }
    CHECK(a.n >= 1 && a.op_next >= WIRE_OP_NEXT_MIN && (a.op_failed == 0 || a.op_failed == 1));
    msgpack_sbuffer_init(&sb);
    CHECK(wire_a2av_encode(&sb, &a) == 0);
    CHECK(wire_a2av_decode(&b, REDECODE(sb), err, sizeof(err)) == 0);
    CHECK(strcmp(a.group, b.group) == 0 && a.n == b.n && a.dtype == b.dtype &&
          a.timeout_ms == b.timeout_ms && a.send_addr == b.send_addr && a.send_len == b.send_len &&
          a.recv_addr == b.recv_addr && a.recv_len == b.recv_len && a.op_next == b.op_next &&
          a.op_failed == b.op_failed && a.job.world_rank == b.job.world_rank);
    CHECK(memcmp(a.counts, b.counts, 4 * a.n * sizeof(int64_t)) == 0);
    wire_a2av_fini(&a);
    wire_a2av_fini(&b);
    msgpack_sbuffer_destroy(&sb);
}

/* the job-facing bodies of the local socket and the remote methods */
static void
fuzz_job_bodies(const uint8_t *data, size_t size)
{
    wire_attach_reply a, a2;
    wire_remote r, r2;
    wire_buffer b, b2;
    wire_job_id j, j2;
    msgpack_sbuffer sb;

    if (wire_attach_reply_decode(&a, data, size, err, sizeof(err)) == 0) {
        msgpack_sbuffer_init(&sb);
        CHECK(wire_attach_reply_encode(&sb, &a) == 0);
        CHECK(wire_attach_reply_decode(&a2, REDECODE(sb), err, sizeof(err)) == 0);
        CHECK(strcmp(a.worker, a2.worker) == 0 && a.world_size == a2.world_size);
        CHECK(a.pid == a2.pid && a.uid == a2.uid && a.session == a2.session);
        msgpack_sbuffer_destroy(&sb);
    }
    if (wire_remote_decode(&r, data, size, err, sizeof(err)) == 0) {
        msgpack_sbuffer_init(&sb);
        CHECK(wire_remote_encode(&sb, &r) == 0);
        CHECK(wire_remote_decode(&r2, REDECODE(sb), err, sizeof(err)) == 0);
        CHECK(r.session == r2.session && r.key[0] == r2.key[0] && r.key[1] == r2.key[1]);
        CHECK(r.slot == r2.slot && r.offset == r2.offset && r.len == r2.len);
        CHECK(r.data_len == r2.data_len &&
              (r.data_len == 0 || memcmp(r.data, r2.data, r.data_len) == 0));
        msgpack_sbuffer_destroy(&sb);
    }
    if (wire_buffer_decode(&b, data, size, err, sizeof(err)) == 0) {
        msgpack_sbuffer_init(&sb);
        CHECK(wire_buffer_encode(&sb, &b) == 0);
        CHECK(wire_buffer_decode(&b2, REDECODE(sb), err, sizeof(err)) == 0);
        CHECK(b.addr == b2.addr && b.len == b2.len);
        msgpack_sbuffer_destroy(&sb);
    }
    if (wire_job_id_decode(&j, data, size, err, sizeof(err)) == 0) {
        CHECK(j.sess == NULL); /* never from a message */
        msgpack_sbuffer_init(&sb);
        CHECK(wire_job_id_encode(&sb, &j) == 0);
        CHECK(wire_job_id_decode(&j2, REDECODE(sb), err, sizeof(err)) == 0);
        CHECK(j.world_rank == j2.world_rank);
        msgpack_sbuffer_destroy(&sb);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_job_bodies(data, size);
    fuzz_envelopes(data, size);
    fuzz_group_name(data, size);
    fuzz_create(data, size);
    fuzz_group(data, size);
    fuzz_group_list(data, size);
    fuzz_health(data, size);
    fuzz_empty(data, size);
    fuzz_a2av(data, size);
    return 0;
}
