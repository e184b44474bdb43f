/*
 * test_frame.c - the peer-link frame codec: prefix encode and decode, round
 * trips of every frame type, and every class of malformed prefix and header.
 * Headers are decoded from exact-size heap copies so that an over-read shows
 * under ASan and valgrind; every decoded frame is released with frame_fini.
 */
#include "cu_main.h"
#include "mbuf.h"
#include <CUnit/Basic.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/frame.h"
#include "common/status.h"

/* ---- helpers ---- */

static char err[2048];

/* decode copies buf[0..len) to an exact-size heap buffer and decodes it into f. */
static int
decode(frame *f, const void *buf, size_t len, uint64_t payload_len)
{
    uint8_t *copy = malloc(len > 0 ? len : 1);
    int r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
    if (len > 0)
        memcpy(copy, buf, len);
    err[0] = '\0';
    r = frame_header_decode(f, copy, len, payload_len, err, sizeof(err));
    free(copy);
    return r;
}

/*
 * expect_fail checks that buf does not decode, that the error contains
 * needle (when not NULL) and that the failed decode left nothing to free.
 */
static void
expect_fail_at(const void *buf, size_t len, uint64_t payload_len, const char *needle,
               const char *what, int line)
{
    frame f;
    char ctx[128];
    int r;

    memset(&f, 0xa5, sizeof(f)); /* decode must clear it */
    r = decode(&f, buf, len, payload_len);
    snprintf(ctx, sizeof(ctx), "%s (line %d)", what, line);
    CU_ASSERT_EQUAL(r, -1);
    CU_ASSERT(err[0] != '\0');
    CU_ASSERT_PTR_NULL(f.srcs);
    CU_ASSERT_PTR_NULL(f.counts);
    CU_ASSERT_EQUAL(f.n, 0);
    if (r == 0)
        frame_fini(&f);
    if (needle != NULL && strstr(err, needle) == NULL) {
        fprintf(stderr, "\n%s: error \"%s\" does not name \"%s\"\n", ctx, err, needle);
        CU_FAIL("error message does not name the fault");
    }
    if (r == 0) {
        fprintf(stderr, "\n%s: decoded\n", ctx);
        CU_FAIL("malformed header decoded");
    }
}
#define expect_fail(buf, len, pl, needle, what) expect_fail_at(buf, len, pl, needle, what, __LINE__)

/* expect_ok_mb checks that the header in b decodes, then frees the frame. */
static void
expect_ok_at(const void *buf, size_t len, uint64_t payload_len, const char *what, int line)
{
    frame f;
    if (decode(&f, buf, len, payload_len) != 0) {
        fprintf(stderr, "\n%s (line %d): %s\n", what, line, err);
        CU_FAIL("valid header did not decode");
    }
    frame_fini(&f);
}
#define expect_ok(buf, len, pl, what) expect_ok_at(buf, len, pl, what, __LINE__)

static void
set_opid(frame *f, const char *group, uint64_t epoch, uint64_t op)
{
    snprintf(f->id.group, sizeof(f->id.group), "%s", group);
    f->id.epoch = epoch;
    f->id.op = op;
}

/* encode encodes f into a fresh sbuffer (the caller destroys it). */
static void
encode(msgpack_sbuffer *sb, const frame *f)
{
    msgpack_sbuffer_init(sb);
    CU_ASSERT_EQUAL_FATAL(frame_header_encode(sb, f), 0);
    CU_ASSERT_FATAL(sb->size > 0);
}

/* round_trip encodes in, decodes the result into out, and checks the header limit. */
static void
round_trip(const frame *in, uint64_t payload_len, frame *out)
{
    msgpack_sbuffer sb;
    encode(&sb, in);
    CU_ASSERT(sb.size <= FRAME_HEADER_MAX);
    if (decode(out, sb.data, sb.size, payload_len) != 0) {
        fprintf(stderr, "\nround trip of type %d: %s\n", in->type, err);
        CU_FAIL("round trip did not decode");
    }
    msgpack_sbuffer_destroy(&sb);
}

static void
check_opid(const frame *a, const frame *b)
{
    CU_ASSERT_STRING_EQUAL(a->id.group, b->id.group);
    CU_ASSERT_EQUAL(a->id.epoch, b->id.epoch);
    CU_ASSERT_EQUAL(a->id.op, b->id.op);
}

/* ---- prefix ---- */

static void
test_prefix_round_trip(void)
{
    static const struct {
        uint32_t hl;
        uint64_t pl;
    } cases[] = {{1, 0}, {FRAME_HEADER_MAX, 0}, {17, FRAME_PAYLOAD_MAX}, {300, 1}, {0x1234, 65536}};
    uint8_t p[FRAME_PREFIX_LEN];
    uint32_t hl;
    uint64_t pl;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        frame_prefix_encode(p, cases[i].hl, cases[i].pl);
        hl = 0;
        pl = 99;
        CU_ASSERT_EQUAL(frame_prefix_decode(p, &hl, &pl, err, sizeof(err)), 0);
        CU_ASSERT_EQUAL(hl, cases[i].hl);
        CU_ASSERT_EQUAL(pl, cases[i].pl);
    }
}

static void
test_prefix_bytes(void)
{
    static const uint8_t want[FRAME_PREFIX_LEN] = {'A',  '2',  'A',  'L',  0x00, 0x00, 0x12, 0x34,
                                                   0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00};
    uint8_t p[FRAME_PREFIX_LEN];

    frame_prefix_encode(p, 0x1234, FRAME_PAYLOAD_MAX);
    CU_ASSERT_EQUAL(memcmp(p, want, sizeof(p)), 0);
    frame_prefix_encode(p, 0x01020304u, 0x0102030405060708ull);
    CU_ASSERT_EQUAL(memcmp(p, "A2AL\x01\x02\x03\x04\x01\x02\x03\x04\x05\x06\x07\x08", 16), 0);
}

static void
expect_prefix_fail(const uint8_t *p, const char *needle)
{
    uint32_t hl = 7;
    uint64_t pl = 7;
    err[0] = '\0';
    CU_ASSERT_EQUAL(frame_prefix_decode(p, &hl, &pl, err, sizeof(err)), -1);
    if (strstr(err, needle) == NULL) {
        fprintf(stderr, "\nprefix error \"%s\" does not name \"%s\"\n", err, needle);
        CU_FAIL("prefix error does not name the fault");
    }
}

static void
test_prefix_malformed(void)
{
    uint8_t p[FRAME_PREFIX_LEN];
    char v[32];

    frame_prefix_encode(p, 10, 0);
    p[0] = 'B';
    expect_prefix_fail(p, "magic");
    expect_prefix_fail(p, "0x4232414c");
    frame_prefix_encode(p, 10, 0);
    p[3] = 'l';
    expect_prefix_fail(p, "magic");
    memset(p, 0, sizeof(p));
    expect_prefix_fail(p, "magic");

    frame_prefix_encode(p, 0, 0);
    expect_prefix_fail(p, "header of 0 bytes");
    frame_prefix_encode(p, FRAME_HEADER_MAX + 1, 0);
    snprintf(v, sizeof(v), "%u", FRAME_HEADER_MAX + 1);
    expect_prefix_fail(p, v);
    frame_prefix_encode(p, UINT32_MAX, 0);
    expect_prefix_fail(p, "4294967295");

    frame_prefix_encode(p, 10, FRAME_PAYLOAD_MAX + 1ull);
    expect_prefix_fail(p, "4194305");
    frame_prefix_encode(p, 10, UINT64_MAX);
    expect_prefix_fail(p, "18446744073709551615");
    frame_prefix_encode(p, 10, 1ull << 32); /* high word only */
    expect_prefix_fail(p, "payload");
}

/* ---- round trips ---- */

static void
test_hello_round_trip(void)
{
    frame in = {.type = FRAME_HELLO, .incarnation = UINT64_MAX}, out;
    char *name = repeat('w', CFG_WORKER_NAME_MAX);

    snprintf(in.worker, sizeof(in.worker), "%s", "worker-3.rack_7");
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_HELLO);
    CU_ASSERT_STRING_EQUAL(out.worker, "worker-3.rack_7");
    CU_ASSERT_EQUAL(out.incarnation, UINT64_MAX);
    CU_ASSERT_PTR_NULL(out.srcs);
    frame_fini(&out);

    snprintf(in.worker, sizeof(in.worker), "%s", name);
    in.incarnation = 0;
    round_trip(&in, 0, &out);
    CU_ASSERT_STRING_EQUAL(out.worker, name);
    CU_ASSERT_EQUAL(out.incarnation, 0);
    CU_ASSERT_FALSE(out.has_mac);
    frame_fini(&out);
    free(name);

    in.has_mac = 1; /* with a proof of the token */
    memset(in.mac, 0xAB, sizeof(in.mac));
    round_trip(&in, 0, &out);
    CU_ASSERT_TRUE(out.has_mac);
    CU_ASSERT_FALSE(out.has_nonce);
    CU_ASSERT_EQUAL(memcmp(out.mac, in.mac, sizeof(in.mac)), 0);
    frame_fini(&out);

    in.has_nonce = 1; /* and a nonce for the listener's proof */
    for (size_t i = 0; i < sizeof(in.nonce); i++)
        in.nonce[i] = (uint8_t)(255 - i);
    round_trip(&in, 0, &out);
    CU_ASSERT_TRUE(out.has_mac && out.has_nonce);
    CU_ASSERT_EQUAL(memcmp(out.mac, in.mac, sizeof(in.mac)), 0);
    CU_ASSERT_EQUAL(memcmp(out.nonce, in.nonce, sizeof(in.nonce)), 0);
    frame_fini(&out);
}

static void
test_welcome_round_trip(void)
{
    frame in = {.type = FRAME_WELCOME}, out;
    for (size_t i = 0; i < sizeof(in.mac); i++)
        in.mac[i] = (uint8_t)(i * 13 + 5);
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_WELCOME);
    CU_ASSERT_EQUAL(memcmp(out.mac, in.mac, sizeof(in.mac)), 0);
    frame_fini(&out);
}

/* A proof or a nonce of another length than 32 bytes is refused, naming the field. */
static void
test_auth_field_lengths(void)
{
    static const size_t lens[] = {1, 16, 31, 33, 64};
    uint8_t bytes[64] = {0};
    mbuf b;

    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        mb_init(&b); /* HELLO's nonce */
        msgpack_pack_array(&b.pk, 5);
        msgpack_pack_int(&b.pk, FRAME_HELLO);
        mb_str(&b, "w0");
        msgpack_pack_uint64(&b.pk, 1);
        msgpack_pack_bin(&b.pk, 32);
        msgpack_pack_bin_body(&b.pk, bytes, 32);
        msgpack_pack_bin(&b.pk, lens[k]);
        msgpack_pack_bin_body(&b.pk, bytes, lens[k]);
        expect_fail(b.sb.data, b.sb.size, 0, "nonce", "HELLO nonce length");
        mb_fini(&b);
        mb_init(&b); /* WELCOME's proof */
        msgpack_pack_array(&b.pk, 2);
        msgpack_pack_int(&b.pk, FRAME_WELCOME);
        msgpack_pack_bin(&b.pk, lens[k]);
        msgpack_pack_bin_body(&b.pk, bytes, lens[k]);
        expect_fail(b.sb.data, b.sb.size, 0, "proof", "WELCOME proof length");
        mb_fini(&b);
    }
    mb_init(&b); /* a WELCOME without a proof */
    msgpack_pack_array(&b.pk, 2);
    msgpack_pack_int(&b.pk, FRAME_WELCOME);
    msgpack_pack_bin(&b.pk, 0);
    expect_fail(b.sb.data, b.sb.size, 0, "proof", "WELCOME proof empty");
    mb_fini(&b);
    mb_init(&b); /* and with a payload */
    msgpack_pack_array(&b.pk, 2);
    msgpack_pack_int(&b.pk, FRAME_WELCOME);
    msgpack_pack_bin(&b.pk, 32);
    msgpack_pack_bin_body(&b.pk, bytes, 32);
    expect_fail(b.sb.data, b.sb.size, 32, "payload", "WELCOME with a payload");
    mb_fini(&b);
}

static void
test_challenge_round_trip(void)
{
    frame in = {.type = FRAME_CHALLENGE}, out;
    for (size_t i = 0; i < sizeof(in.nonce); i++)
        in.nonce[i] = (uint8_t)(i * 7 + 1);
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_CHALLENGE);
    CU_ASSERT_EQUAL(memcmp(out.nonce, in.nonce, sizeof(in.nonce)), 0);
    frame_fini(&out);
}

static void
test_heartbeat_round_trip(void)
{
    frame in = {.type = FRAME_HEARTBEAT}, out;
    msgpack_sbuffer sb;

    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_HEARTBEAT);
    frame_fini(&out);
    encode(&sb, &in);
    CU_ASSERT_EQUAL(sb.size, 2);
    CU_ASSERT_EQUAL(memcmp(sb.data, "\x91\x06", 2), 0);
    msgpack_sbuffer_destroy(&sb);
}

static void
test_ready_round_trip_empty(void)
{
    frame in = {.type = FRAME_READY, .dst = 0, .dtype = A2A_BFLOAT16, .ttl = 2999}, out;

    set_opid(&in, "hccl_world_group", 0, 0);
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_READY);
    check_opid(&in, &out);
    CU_ASSERT_EQUAL(out.dst, 0);
    CU_ASSERT_EQUAL(out.dtype, A2A_BFLOAT16);
    CU_ASSERT_EQUAL(out.n, 0);
    CU_ASSERT_EQUAL(out.ttl, 2999); /* the sender's call's time left */
    CU_ASSERT_EQUAL(out.expire, 0); /* not on the wire: the receiver's engine sets it */
    CU_ASSERT_PTR_NULL(out.srcs);
    CU_ASSERT_PTR_NULL(out.counts);
    frame_fini(&out);
}

static void ready_header(mbuf *b, int64_t dst, int64_t dtype, const int64_t *l, size_t len);

/* READY's ttl is 0 (no bound) or the ms left; a negative one is refused, naming it */
static void
test_ready_ttl(void)
{
    mbuf b;
    int64_t l[2] = {0, 1};

    ready_header(&b, 0, 0, l, 2);
    b.sb.size--; /* the ttl 0 ready_header packed: a positive fixint, one byte */
    msgpack_pack_int64(&b.pk, -5);
    expect_fail(b.sb.data, b.sb.size, 0, "negative ttl -5", "ready ttl -5");
    mb_fini(&b);
    ready_header(&b, 0, 0, l, 2);
    b.sb.size--;
    mb_str(&b, "1");
    expect_fail(b.sb.data, b.sb.size, 0, "ttl", "ready ttl a string");
    mb_fini(&b);
}

/* A READY of a small group carries the sender rank's row (its send counts to every group
 * rank) and its receive capacity (-1: it gave counts); without a row it is the 8-field
 * READY of before, and nrow is 0 after decoding. */
static void
test_ready_row_round_trip(void)
{
    int64_t src = 2, cnt = FRAME_DISCOVER;
    frame in = {.type = FRAME_READY, .dst = 1, .dtype = A2A_INT32, .ttl = 10, .n = 1}, out;
    msgpack_sbuffer sb;
    size_t size8;

    in.srcs = &src;
    in.counts = &cnt;
    set_opid(&in, "moe", 3, 17);
    encode(&sb, &in);
    size8 = sb.size;
    msgpack_sbuffer_destroy(&sb);
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.nrow, 0);
    CU_ASSERT_EQUAL(out.cap, -1);
    frame_fini(&out);

    in.nrow = 3;
    in.row[0] = 5;
    in.row[1] = 0;
    in.row[2] = INT64_MAX;
    in.cap = 4096;
    encode(&sb, &in);
    CU_ASSERT(sb.size > size8);
    msgpack_sbuffer_destroy(&sb);
    round_trip(&in, 0, &out);
    check_opid(&in, &out);
    CU_ASSERT_EQUAL(out.n, 1);
    CU_ASSERT_EQUAL(out.counts[0], FRAME_DISCOVER);
    CU_ASSERT_EQUAL(out.nrow, 3);
    CU_ASSERT_EQUAL(out.row[0], 5);
    CU_ASSERT_EQUAL(out.row[1], 0);
    CU_ASSERT_EQUAL(out.row[2], INT64_MAX);
    CU_ASSERT_EQUAL(out.cap, 4096);
    CU_ASSERT_EQUAL(out.ttl, 10);
    frame_fini(&out);

    in.nrow = FRAME_ROW_MAX;
    for (size_t i = 0; i < FRAME_ROW_MAX; i++)
        in.row[i] = (int64_t)i * 1000;
    in.cap = -1;
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.nrow, FRAME_ROW_MAX);
    CU_ASSERT_EQUAL(out.row[FRAME_ROW_MAX - 1], (FRAME_ROW_MAX - 1) * 1000);
    CU_ASSERT_EQUAL(out.cap, -1);
    frame_fini(&out);

    /* a row longer than FRAME_ROW_MAX is not encoded at all */
    in.nrow = FRAME_ROW_MAX + 1;
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL(frame_header_encode(&sb, &in), -1);
    msgpack_sbuffer_destroy(&sb);
}

enum { ROW_INT, ROW_STR, ROW_NONE };

/* ready_row_header packs a 10-field READY (one pair) whose row holds the len values of row
 * (the item at bad_at, if below len, as a string) and whose cap is cap (or a string). */
static void
ready_row_header(mbuf *b, const int64_t *row, size_t len, size_t bad_at, int cap_kind, int64_t cap)
{
    mb_init(b);
    msgpack_pack_array(&b->pk, 10);
    msgpack_pack_int(&b->pk, FRAME_READY);
    mb_str(b, "g");
    msgpack_pack_uint64(&b->pk, 1);
    msgpack_pack_uint64(&b->pk, 2);
    msgpack_pack_int64(&b->pk, 0);
    msgpack_pack_int64(&b->pk, 0);
    msgpack_pack_array(&b->pk, 2);
    msgpack_pack_int64(&b->pk, 1);
    msgpack_pack_int64(&b->pk, FRAME_DISCOVER);
    msgpack_pack_int64(&b->pk, 0); /* ttl */
    if (row == NULL) {
        msgpack_pack_int64(&b->pk, 7); /* not an array */
    } else {
        msgpack_pack_array(&b->pk, len);
        for (size_t i = 0; i < len; i++)
            if (i == bad_at)
                mb_str(b, "1");
            else
                msgpack_pack_int64(&b->pk, row[i]);
    }
    if (cap_kind == ROW_STR)
        mb_str(b, "-1");
    else if (cap_kind == ROW_INT)
        msgpack_pack_int64(&b->pk, cap);
}

/* Every way a row can be wrong is refused with a message naming the field. */
static void
test_ready_row_malformed(void)
{
    int64_t row[FRAME_ROW_MAX + 1];
    mbuf b;

    for (size_t i = 0; i <= FRAME_ROW_MAX; i++)
        row[i] = 3;
    ready_row_header(&b, row, 2, SIZE_MAX, ROW_INT, -1);
    expect_ok(b.sb.data, b.sb.size, 0, "a row of two");
    mb_fini(&b);
    ready_row_header(&b, row, 2, SIZE_MAX, ROW_INT, 0);
    expect_ok(b.sb.data, b.sb.size, 0, "a capacity of 0");
    mb_fini(&b);
    ready_row_header(&b, row, FRAME_ROW_MAX, SIZE_MAX, ROW_INT, INT64_MAX);
    expect_ok(b.sb.data, b.sb.size, 0, "a row of FRAME_ROW_MAX");
    mb_fini(&b);

    ready_row_header(&b, row, 0, SIZE_MAX, ROW_INT, -1);
    expect_fail(b.sb.data, b.sb.size, 0, "ready row: empty", "an empty row");
    mb_fini(&b);
    ready_row_header(&b, row, FRAME_ROW_MAX + 1, SIZE_MAX, ROW_INT, -1);
    expect_fail(b.sb.data, b.sb.size, 0, "more than the limit 64", "a row over the limit");
    mb_fini(&b);
    ready_row_header(&b, NULL, 0, SIZE_MAX, ROW_INT, -1);
    expect_fail(b.sb.data, b.sb.size, 0, "ready row: expected an array", "a row not an array");
    mb_fini(&b);
    row[1] = -3;
    ready_row_header(&b, row, 2, SIZE_MAX, ROW_INT, -1);
    expect_fail(b.sb.data, b.sb.size, 0, "negative count -3", "a negative row count");
    mb_fini(&b);
    row[1] = 3;
    ready_row_header(&b, row, 4, 2, ROW_INT, -1);
    expect_fail(b.sb.data, b.sb.size, 0, "row count", "a row count a string");
    mb_fini(&b);
    ready_row_header(&b, row, 2, SIZE_MAX, ROW_INT, -2);
    expect_fail(b.sb.data, b.sb.size, 0, "ready cap -2", "a capacity below -1");
    mb_fini(&b);
    ready_row_header(&b, row, 2, SIZE_MAX, ROW_INT, INT64_MIN);
    expect_fail(b.sb.data, b.sb.size, 0, "ready cap", "a capacity of INT64_MIN");
    mb_fini(&b);
    ready_row_header(&b, row, 2, SIZE_MAX, ROW_STR, 0);
    expect_fail(b.sb.data, b.sb.size, 0, "cap", "a capacity a string");
    mb_fini(&b);

    /* 9 fields (a row, no cap) and 11 are no READY */
    ready_row_header(&b, row, 2, SIZE_MAX, ROW_NONE, 0);
    b.sb.data[0] = (char)0x99; /* the fixarray of 10 the helper packed, now of 9 */
    expect_fail(b.sb.data, b.sb.size, 0, "with 9 fields", "a READY of 9 fields");
    mb_fini(&b);
    ready_row_header(&b, row, 2, SIZE_MAX, ROW_INT, -1);
    msgpack_pack_int64(&b.pk, 0);
    b.sb.data[0] = (char)0x9b;
    expect_fail(b.sb.data, b.sb.size, 0, "with 11 fields", "a READY of 11 fields");
    mb_fini(&b);
}

static void
test_ready_round_trip_many(void)
{
    enum { N = 4000 };
    int64_t *srcs = calloc(N, sizeof(int64_t)), *counts = calloc(N, sizeof(int64_t));
    frame in = {.type = FRAME_READY, .dst = CFG_MAX_RANKS - 1, .dtype = A2A_INT8}, out;

    CU_ASSERT_PTR_NOT_NULL_FATAL(srcs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(counts);
    for (size_t i = 0; i < N; i++) {
        srcs[i] = (int64_t)(i * 16 % CFG_MAX_RANKS); /* any order */
        counts[i] = i % 3 == 0 ? 0 : (int64_t)(i * 1000003);
    }
    srcs[N - 1] = CFG_MAX_RANKS - 1;
    counts[N - 2] = INT64_MAX;
    set_opid(&in, "g", UINT64_MAX, 1ull << 40);
    in.n = N;
    in.srcs = srcs;
    in.counts = counts;
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_READY);
    check_opid(&in, &out);
    CU_ASSERT_EQUAL(out.dst, CFG_MAX_RANKS - 1);
    CU_ASSERT_EQUAL(out.dtype, A2A_INT8);
    CU_ASSERT_EQUAL_FATAL(out.n, N);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out.srcs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out.counts);
    CU_ASSERT_EQUAL(memcmp(out.srcs, srcs, N * sizeof(int64_t)), 0);
    CU_ASSERT_EQUAL(memcmp(out.counts, counts, N * sizeof(int64_t)), 0);
    frame_fini(&out);
    CU_ASSERT_PTR_NULL(out.srcs);
    CU_ASSERT_PTR_NULL(out.counts);
    CU_ASSERT_EQUAL(out.n, 0);
    frame_fini(&out); /* twice is harmless */

    in.n = 1; /* one pair */
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL_FATAL(out.n, 1);
    CU_ASSERT_EQUAL(out.srcs[0], srcs[0]);
    CU_ASSERT_EQUAL(out.counts[0], counts[0]);
    frame_fini(&out);
    free(srcs);
    free(counts);
}

/*
 * The encoder must never produce a header that the receiving prefix decoder
 * refuses: a READY for many sources either fits in FRAME_HEADER_MAX or fails
 * to encode. (worker/engine.c sends one READY per peer worker holding every
 * source on it, up to CFG_MAX_RANKS.)
 */
static void
test_ready_header_limit(void)
{
    const size_t n = CFG_MAX_RANKS;
    int64_t *srcs = calloc(n, sizeof(int64_t)), *counts = calloc(n, sizeof(int64_t));
    frame in = {.type = FRAME_READY, .dst = 0, .dtype = A2A_INT8};
    msgpack_sbuffer sb;
    int r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(srcs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(counts);
    for (size_t i = 0; i < n; i++) {
        srcs[i] = (int64_t)i;
        counts[i] = (int64_t)1 << 40;
    }
    set_opid(&in, "hccl_world_group", 1, 1);
    in.n = n;
    in.srcs = srcs;
    in.counts = counts;
    msgpack_sbuffer_init(&sb);
    r = frame_header_encode(&sb, &in);
    if (r == 0 && sb.size > FRAME_HEADER_MAX) {
        fprintf(stderr, "\nREADY of %zu sources encoded to %zu bytes (FRAME_HEADER_MAX %u)\n", n,
                sb.size, FRAME_HEADER_MAX);
        CU_FAIL("frame_header_encode produced a header over FRAME_HEADER_MAX");
    }
    msgpack_sbuffer_destroy(&sb);
    free(srcs);
    free(counts);
}

static void
test_slice_round_trip(void)
{
    frame in = {.type = FRAME_SLICE, .src = 0, .dst = CFG_MAX_RANKS - 1, .dtype = A2A_FLOAT64}, out;
    char *msg = repeat('m', FRAME_MSG_MAX);

    set_opid(&in, "g1", 5, 6);
    in.count = 0;
    in.status = A2A_OK;
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_SLICE);
    check_opid(&in, &out);
    CU_ASSERT_EQUAL(out.src, 0);
    CU_ASSERT_EQUAL(out.dst, CFG_MAX_RANKS - 1);
    CU_ASSERT_EQUAL(out.dtype, A2A_FLOAT64);
    CU_ASSERT_EQUAL(out.count, 0);
    CU_ASSERT_EQUAL(out.status, A2A_OK);
    CU_ASSERT_STRING_EQUAL(out.message, "");
    frame_fini(&out);

    in.src = 3;
    in.dst = 7;
    in.dtype = A2A_INT32;
    in.count = 120;
    in.status = A2A_ERR_COUNT_MISMATCH;
    snprintf(in.message, sizeof(in.message), "%s",
             "rank 3 sent 120 int32 to rank 7, which expected 96");
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.src, 3);
    CU_ASSERT_EQUAL(out.dst, 7);
    CU_ASSERT_EQUAL(out.count, 120);
    CU_ASSERT_EQUAL(out.status, A2A_ERR_COUNT_MISMATCH);
    CU_ASSERT_STRING_EQUAL(out.message, in.message);
    frame_fini(&out);

    in.count = INT64_MAX;
    in.status = A2A_ERR_INTERNAL;
    snprintf(in.message, sizeof(in.message), "%s", msg);
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.count, INT64_MAX);
    CU_ASSERT_EQUAL(out.status, A2A_ERR_INTERNAL);
    CU_ASSERT_STRING_EQUAL(out.message, msg);
    frame_fini(&out);
    free(msg);
}

static void
test_data_round_trip(void)
{
    frame in = {.type = FRAME_DATA, .src = 9, .dst = 0, .offset = 0}, out;
    char *group = repeat('x', A2A_GROUP_NAME_MAX);

    set_opid(&in, group, 1, 2);
    round_trip(&in, 1, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_DATA);
    check_opid(&in, &out);
    CU_ASSERT_EQUAL(out.src, 9);
    CU_ASSERT_EQUAL(out.dst, 0);
    CU_ASSERT_EQUAL(out.offset, 0);
    frame_fini(&out);

    in.offset = UINT64_MAX;
    round_trip(&in, FRAME_PAYLOAD_MAX, &out);
    CU_ASSERT_EQUAL(out.offset, UINT64_MAX);
    frame_fini(&out);
    free(group);
}

static void
test_abort_round_trip(void)
{
    frame in = {.type = FRAME_ABORT, .status = A2A_ERR_DEADLINE_EXCEEDED}, out;

    set_opid(&in, "hccl_world_group", 4, 99);
    snprintf(in.message, sizeof(in.message), "%s", "rank 5 did not arrive within 30000 ms");
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_ABORT);
    check_opid(&in, &out);
    CU_ASSERT_EQUAL(out.status, A2A_ERR_DEADLINE_EXCEEDED);
    CU_ASSERT_STRING_EQUAL(out.message, in.message);
    CU_ASSERT_EQUAL(out.resync, 0);
    frame_fini(&out);

    in.resync = UINT64_MAX - 1; /* where the next calls resynchronise */
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.resync, UINT64_MAX - 1);
    frame_fini(&out);
    in.resync = 0;

    in.status = A2A_STATUS_COUNT - 1;
    in.message[0] = '\0';
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.status, A2A_STATUS_COUNT - 1);
    CU_ASSERT_STRING_EQUAL(out.message, "");
    frame_fini(&out);
}

static void
test_encode_unknown_type(void)
{
    frame f = {.type = (frame_type)0};
    msgpack_sbuffer sb;

    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL(frame_header_encode(&sb, &f), -1);
    f.type = (frame_type)(FRAME_TYPE_MAX + 1); /* one past the last */
    CU_ASSERT_EQUAL(frame_header_encode(&sb, &f), -1);
    msgpack_sbuffer_destroy(&sb);
}

/* mb_head starts a header of n fields of type t for operation 99 of group "grp", epoch 3 */
static void
mb_head(mbuf *b, uint32_t n, int t)
{
    mb_init(b);
    msgpack_pack_array(&b->pk, n);
    msgpack_pack_int(&b->pk, t);
    mb_str(b, "grp");
    msgpack_pack_uint64(&b->pk, 3);
    msgpack_pack_uint64(&b->pk, 99);
}

/* WHERE and HERE round-trip; a HERE below -1 is refused. */
static void
test_where_here(void)
{
    int64_t nums[] = {-1, 0, 7, INT64_MAX};
    frame in = {.type = FRAME_WHERE, .id = {.group = "grp", .epoch = 3, .op = 99}, .dst = 2}, out;
    mbuf b;

    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.type, FRAME_WHERE);
    CU_ASSERT_EQUAL(out.dst, 2);
    CU_ASSERT_STRING_EQUAL(out.id.group, "grp");
    CU_ASSERT_EQUAL(out.id.epoch, 3);
    CU_ASSERT_EQUAL(out.id.op, 99);
    frame_fini(&out);
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        in.type = FRAME_HERE;
        in.count = nums[i];
        in.idle = (int32_t)(i * 5 + 3) % 16; /* bits 0..3 */
        round_trip(&in, 0, &out);
        CU_ASSERT_EQUAL(out.type, FRAME_HERE);
        CU_ASSERT_EQUAL(out.count, nums[i]);
        CU_ASSERT_EQUAL(out.idle, (int32_t)(i * 5 + 3) % 16);
        CU_ASSERT_EQUAL(out.id.op, 99);
        frame_fini(&out);
    }
    static const struct {
        int64_t count;
        int idle;
        const char *needle, *what;
    } bad[] = {{-2, 0, "HERE with number -2", "HERE below -1"},
               {4, 16, "idle", "HERE with idle bit 4"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        mb_head(&b, 6, FRAME_HERE);
        msgpack_pack_int64(&b.pk, bad[i].count);
        msgpack_pack_int(&b.pk, bad[i].idle);
        expect_fail(b.sb.data, b.sb.size, 0, bad[i].needle, bad[i].what);
        mb_fini(&b);
    }
    /* no payload on either */
    mb_head(&b, 5, FRAME_WHERE);
    msgpack_pack_int64(&b.pk, 2);
    expect_ok(b.sb.data, b.sb.size, 0, "WHERE");
    expect_fail(b.sb.data, b.sb.size, 10, NULL, "WHERE with a payload");
    mb_fini(&b);
}

/* PROBE and ALIVE round-trip; no payload, ranks in range. */
static void
test_probe_alive(void)
{
    static const frame_type types[] = {FRAME_PROBE, FRAME_ALIVE};
    mbuf b;

    for (size_t t = 0; t < 2; t++) {
        frame in = {.type = types[t],
                    .id = {.group = "grp", .epoch = 3, .op = 99},
                    .src = 2,
                    .dst = CFG_MAX_RANKS - 1},
              out;
        round_trip(&in, 0, &out);
        CU_ASSERT_EQUAL(out.type, types[t]);
        CU_ASSERT_EQUAL(out.src, 2);
        CU_ASSERT_EQUAL(out.dst, CFG_MAX_RANKS - 1);
        CU_ASSERT_STRING_EQUAL(out.id.group, "grp");
        CU_ASSERT_EQUAL(out.id.epoch, 3);
        CU_ASSERT_EQUAL(out.id.op, 99);
        frame_fini(&out);
        for (int field = 4; field <= 5; field++) {
            mb_head(&b, 6, types[t]);
            msgpack_pack_int64(&b.pk, field == 4 ? CFG_MAX_RANKS : 0);
            msgpack_pack_int64(&b.pk, field == 5 ? CFG_MAX_RANKS : 0);
            expect_fail(b.sb.data, b.sb.size, 0, field == 4 ? "src" : "dst", "rank out of range");
            mb_fini(&b);
        }
        mb_head(&b, 6, types[t]);
        msgpack_pack_int64(&b.pk, 0);
        msgpack_pack_int64(&b.pk, 1);
        expect_ok(b.sb.data, b.sb.size, 0, "PROBE or ALIVE");
        expect_fail(b.sb.data, b.sb.size, 8, NULL, "PROBE or ALIVE with a payload");
        mb_fini(&b);
    }
}

/* HELLO carries the link protocol's version; one without it is version 1; 0 is refused. */
static void
test_hello_version(void)
{
    frame in = {.type = FRAME_HELLO, .worker = "w1", .incarnation = 77}, out;
    mbuf b;

    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.version, FRAME_LINK_VERSION);
    CU_ASSERT_STRING_EQUAL(out.worker, "w1");
    CU_ASSERT_EQUAL(out.incarnation, 77);
    in.version = 1; /* as a worker of version 1 sends it: 5 fields */
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.version, 1);
    in.version = 9; /* a later version decodes: the handshake refuses it by name */
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.version, 9);
    for (int bad = 0; bad < 2; bad++) {
        mb_init(&b);
        msgpack_pack_array(&b.pk, 6);
        msgpack_pack_int(&b.pk, FRAME_HELLO);
        mb_str(&b, "w1");
        msgpack_pack_uint64(&b.pk, 77);
        msgpack_pack_bin(&b.pk, 0);
        msgpack_pack_bin(&b.pk, 0);
        msgpack_pack_uint64(&b.pk, bad ? (uint64_t)UINT32_MAX + 1 : 0);
        expect_fail(b.sb.data, b.sb.size, 0, "version", "HELLO version 0 or over 32 bits");
        mb_fini(&b);
    }
}

static void
test_fini_zeroed(void)
{
    frame f;
    memset(&f, 0, sizeof(f));
    frame_fini(&f);
    frame_fini(&f);
    CU_ASSERT_PTR_NULL(f.srcs);
}

/* ---- malformed headers, built field by field ---- */

/* The number of fields of each type, the type itself included. */
static const uint32_t nfields[] = {
    [FRAME_HELLO] = 6, [FRAME_READY] = 8,     [FRAME_SLICE] = 10,    [FRAME_DATA] = 7,
    [FRAME_ABORT] = 7, [FRAME_HEARTBEAT] = 1, [FRAME_CHALLENGE] = 2, [FRAME_WELCOME] = 2,
    [FRAME_WHERE] = 5, [FRAME_HERE] = 6,      [FRAME_PROBE] = 6,     [FRAME_ALIVE] = 6};

enum field_kind { F_TYPE, F_STR, F_U64, F_I64, F_LIST, F_BIN32 };

/* kind_of returns what field i of a frame of type t holds. */
static enum field_kind
kind_of(int t, uint32_t i)
{
    if (i == 0)
        return F_TYPE;
    switch (t) {
    case FRAME_HELLO: return i == 1 ? F_STR : i == 2 || i == 5 ? F_U64 : F_BIN32;
    case FRAME_CHALLENGE:
    case FRAME_WELCOME: return F_BIN32;
    case FRAME_READY: return i == 1 ? F_STR : i <= 3 ? F_U64 : i == 6 ? F_LIST : F_I64;
    case FRAME_SLICE: return i == 1 || i == 9 ? F_STR : i <= 3 ? F_U64 : F_I64;
    case FRAME_DATA: return i == 1 ? F_STR : i <= 3 || i == 6 ? F_U64 : F_I64;
    case FRAME_ABORT: return i == 1 || i == 5 ? F_STR : i <= 3 || i == 6 ? F_U64 : F_I64;
    case FRAME_WHERE:
    case FRAME_HERE:
    case FRAME_PROBE:
    case FRAME_ALIVE: return i == 1 ? F_STR : i <= 3 ? F_U64 : F_I64;
    }
    return F_I64;
}

/* put_valid packs a valid value of field i of a frame of type t. */
static void
put_valid(mbuf *b, int t, uint32_t i)
{
    switch (kind_of(t, i)) {
    case F_TYPE: msgpack_pack_int(&b->pk, t); break;
    case F_STR: mb_str(b, i == 1 && t != FRAME_HELLO ? "grp" : i == 1 ? "w0" : "msg"); break;
    case F_U64: msgpack_pack_uint64(&b->pk, 5); break;
    case F_BIN32:
        msgpack_pack_bin(&b->pk, 32);
        msgpack_pack_bin_body(&b->pk, "0123456789abcdef0123456789abcdef", 32);
        break;
    case F_LIST:
        msgpack_pack_array(&b->pk, 4);
        msgpack_pack_int64(&b->pk, 1);
        msgpack_pack_int64(&b->pk, 10);
        msgpack_pack_int64(&b->pk, 2);
        msgpack_pack_int64(&b->pk, 0);
        break;
    case F_I64:
        /* 1 is a valid rank, dtype, count and status (ABORT's must not be OK) */
        msgpack_pack_int64(&b->pk, 1);
        break;
    }
}

/* The wrong values put in place of a field. */
enum wrong {
    W_NIL,
    W_BOOL,
    W_FLOAT,
    W_MAP,
    W_BIN,
    W_OTHER, /* a string for numbers and lists, an integer for strings */
    W_NEG,   /* -1: no u64, and out of range for every int64 field */
    W_BIGU,  /* 2^63: no int64 */
    W_COUNT
};

static void
put_wrong(mbuf *b, enum wrong w, enum field_kind k)
{
    switch (w) {
    case W_NIL: msgpack_pack_nil(&b->pk); break;
    case W_BOOL: msgpack_pack_true(&b->pk); break;
    case W_FLOAT: msgpack_pack_double(&b->pk, 1.0); break;
    case W_MAP: msgpack_pack_map(&b->pk, 0); break;
    case W_BIN:
        msgpack_pack_bin(&b->pk, 3);
        msgpack_pack_bin_body(&b->pk, "grp", 3);
        break;
    case W_OTHER:
        if (k == F_STR)
            msgpack_pack_int(&b->pk, 1);
        else
            mb_str(b, "1");
        break;
    case W_NEG: msgpack_pack_int64(&b->pk, -1); break;
    case W_BIGU: msgpack_pack_uint64(&b->pk, (uint64_t)1 << 63); break;
    case W_COUNT: break;
    }
}

/* build packs a frame of type t with n fields, field bad replaced by w (bad < 0: none). */
static void
build(mbuf *b, int t, uint32_t n, int64_t bad, enum wrong w)
{
    mb_init(b);
    msgpack_pack_array(&b->pk, n);
    for (uint32_t i = 0; i < n; i++) {
        if ((int64_t)i == bad)
            put_wrong(b, w, kind_of(t, i));
        else if (i < nfields[t])
            put_valid(b, t, i);
        else
            msgpack_pack_int(&b->pk, 0);
    }
}

static uint64_t
payload_for(int t)
{
    return t == FRAME_DATA ? 100 : 0;
}

/* a SLICE that streams to a discoverer says where the slice goes (an 11th field): round trips
 * for 0, 1 and INT64_MAX, none without the field; a negative place, a place of another type and
 * a SLICE of 12 fields are refused, naming it; the encoder refuses a negative place too */
static void
test_slice_place(void)
{
    frame in = {.type = FRAME_SLICE, .src = 1, .dst = 2, .dtype = A2A_INT8, .count = 9}, out;
    const int64_t places[] = {0, 1, INT64_MAX};
    msgpack_sbuffer sb;

    set_opid(&in, "g", 5, 6);
    round_trip(&in, 0, &out);
    CU_ASSERT_EQUAL(out.has_place, 0);
    frame_fini(&out);
    for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
        in.has_place = 1;
        in.place = places[i];
        round_trip(&in, 0, &out);
        CU_ASSERT_EQUAL(out.has_place, 1);
        CU_ASSERT_EQUAL(out.place, places[i]);
        CU_ASSERT_EQUAL(out.count, 9);
        frame_fini(&out);
    }
    in.place = -1;
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL(frame_header_encode(&sb, &in), -1);
    CU_ASSERT_EQUAL(sb.size, 0);
    msgpack_sbuffer_destroy(&sb);

    static const struct {
        enum wrong w;
        const char *needle;
    } bad[] = {{W_NEG, "negative place -1"},
               {W_OTHER, "place"},
               {W_NIL, "place"},
               {W_BIGU, "place"},
               {W_FLOAT, "place"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        mbuf b;
        build(&b, FRAME_SLICE, 11, 10, bad[i].w);
        expect_fail(b.sb.data, b.sb.size, 0, bad[i].needle, "SLICE place");
        mb_fini(&b);
    }
    mbuf b;
    build(&b, FRAME_SLICE, 12, -1, W_NIL);
    expect_fail(b.sb.data, b.sb.size, 0, "with 12 fields", "SLICE of 12 fields");
    mb_fini(&b);
}

static void
test_builder_valid(void)
{
    mbuf b;
    for (int t = FRAME_HELLO; t <= FRAME_TYPE_MAX; t++) {
        build(&b, t, nfields[t], -1, W_NIL);
        expect_ok(b.sb.data, b.sb.size, payload_for(t), "built frame");
        mb_fini(&b);
    }
}

static void
test_wrong_field_count(void)
{
    char needle[64];
    mbuf b;

    for (int t = FRAME_HELLO; t <= FRAME_TYPE_MAX; t++) {
        uint32_t counts[] = {1, nfields[t] - 1, nfields[t] + 1, 11, 16};
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            if (counts[k] == nfields[t] || counts[k] == 0)
                continue;
            if (t == FRAME_HELLO && counts[k] == 5)
                continue; /* version 1's HELLO, without the version (test_hello_version) */
            if (t == FRAME_SLICE && counts[k] == 11)
                continue; /* a SLICE with its place (test_slice_place) */
            build(&b, t, counts[k], -1, W_NIL);
            snprintf(needle, sizeof(needle), "with %u fields", counts[k]);
            expect_fail(b.sb.data, b.sb.size, payload_for(t), needle, "field count");
            mb_fini(&b);
        }
    }
    /* more than 16 items at the top level */
    build(&b, FRAME_HEARTBEAT, 17, -1, W_NIL);
    expect_fail(b.sb.data, b.sb.size, 0, "17", "17 fields");
    mb_fini(&b);
}

static void
test_wrong_field_types(void)
{
    mbuf b;

    for (int t = FRAME_HELLO; t <= FRAME_TYPE_MAX; t++)
        for (uint32_t i = 0; i < nfields[t]; i++)
            for (int w = 0; w < W_COUNT; w++) {
                /* every wrong value fails every field, but 2^63 is a valid u64 */
                if (w == W_BIGU && kind_of(t, i) == F_U64)
                    continue;
                if (w == W_NEG && t == FRAME_HERE && i == 4) /* -1: no number known */
                    continue;
                build(&b, t, nfields[t], i, (enum wrong)w);
                expect_fail(b.sb.data, b.sb.size, payload_for(t), NULL, "wrong field type");
                mb_fini(&b);
            }
}

static void
test_top_level(void)
{
    mbuf b;
    static const uint8_t map[] = {0x81, 0x01, 0x01};
    static const uint8_t fixint[] = {0x06};
    static const uint8_t str[] = {0xa1, 'x'};

    expect_fail(map, sizeof(map), 0, "array", "a map");
    expect_fail(fixint, sizeof(fixint), 0, "array", "an integer");
    expect_fail(str, sizeof(str), 0, "array", "a string");
    expect_fail("", 0, 0, NULL, "empty buffer");
    expect_fail("\xc1", 1, 0, NULL, "reserved byte");
    mb_init(&b);
    msgpack_pack_array(&b.pk, 0);
    expect_fail(b.sb.data, b.sb.size, 0, "empty", "empty array");
    mb_fini(&b);
}

static void
test_unknown_type(void)
{
    static const int64_t types[] = {0, 9, 10, 255, -1, -128, INT64_MIN, INT64_MAX};
    char needle[32];
    mbuf b;

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        mb_init(&b);
        msgpack_pack_array(&b.pk, 1);
        msgpack_pack_int64(&b.pk, types[i]);
        snprintf(needle, sizeof(needle), "%lld", (long long)types[i]);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "unknown type");
        mb_fini(&b);
        /* with the fields of a HELLO after it */
        mb_init(&b);
        msgpack_pack_array(&b.pk, 3);
        msgpack_pack_int64(&b.pk, types[i]);
        mb_str(&b, "w");
        msgpack_pack_uint64(&b.pk, 1);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "unknown type, 3 fields");
        mb_fini(&b);
    }
    mb_init(&b);
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, UINT64_MAX);
    expect_fail(b.sb.data, b.sb.size, 0, "frame type", "type 2^64-1");
    mb_fini(&b);
}

/* A valid header of every type, encoded by the codec (the caller destroys each). */
static size_t
valid_headers(msgpack_sbuffer *sb, uint64_t *payload, size_t max)
{
    static int64_t srcs[3] = {0, 5, 65535}, counts[3] = {0, 300, INT64_MAX};
    frame f[10];
    size_t n = 0;

    memset(f, 0, sizeof(f));
    f[n].type = FRAME_HELLO;
    snprintf(f[n].worker, sizeof(f[n].worker), "worker-1");
    f[n].has_mac = f[n].has_nonce = 1;
    memset(f[n].mac, 0x11, sizeof(f[n].mac));
    memset(f[n].nonce, 0x22, sizeof(f[n].nonce));
    f[n++].incarnation = 77777;
    f[n].type = FRAME_WELCOME;
    memset(f[n++].mac, 0x33, sizeof(f[0].mac));
    f[n++].type = FRAME_HEARTBEAT;
    f[n].type = FRAME_READY;
    set_opid(&f[n], "grp", 2, 3);
    f[n].dst = 1;
    f[n].dtype = A2A_FLOAT32;
    f[n].n = 3;
    f[n].srcs = srcs;
    f[n++].counts = counts;
    f[n].type = FRAME_READY;
    set_opid(&f[n++], "grp", 2, 3);
    f[n].type = FRAME_SLICE;
    set_opid(&f[n], "grp", 2, 3);
    f[n].src = 1;
    f[n].dst = 2;
    f[n].count = 1000;
    f[n].status = A2A_ERR_COUNT_MISMATCH;
    snprintf(f[n++].message, sizeof(f[0].message), "count mismatch");
    f[n].type = FRAME_DATA;
    set_opid(&f[n], "grp", 2, 3);
    f[n].src = 1;
    f[n].dst = 2;
    f[n++].offset = 65536;
    f[n].type = FRAME_ABORT;
    set_opid(&f[n], "grp", 2, 3);
    f[n].status = A2A_ERR_UNAVAILABLE;
    snprintf(f[n++].message, sizeof(f[0].message), "peer gone");
    CU_ASSERT_FATAL(n <= max);
    for (size_t i = 0; i < n; i++) {
        encode(&sb[i], &f[i]);
        payload[i] = payload_for(f[i].type);
    }
    return n;
}

static void
test_truncated(void)
{
    msgpack_sbuffer sb[10];
    uint64_t pl[10];
    size_t n = valid_headers(sb, pl, 10);

    for (size_t i = 0; i < n; i++) {
        expect_ok(sb[i].data, sb[i].size, pl[i], "whole header");
        for (size_t len = 0; len < sb[i].size; len++)
            expect_fail(sb[i].data, len, pl[i], NULL, "truncated header");
        msgpack_sbuffer_destroy(&sb[i]);
    }
}

static void
test_trailing_bytes(void)
{
    msgpack_sbuffer sb[10];
    uint64_t pl[10];
    size_t n = valid_headers(sb, pl, 10);

    for (size_t i = 0; i < n; i++) {
        msgpack_sbuffer_write(&sb[i], "\x00", 1);
        expect_fail(sb[i].data, sb[i].size, pl[i], "trailing", "one trailing byte");
        msgpack_sbuffer_write(&sb[i], "\x91\x06", 2); /* a second frame glued on */
        expect_fail(sb[i].data, sb[i].size, pl[i], "3 trailing", "trailing frame");
        msgpack_sbuffer_destroy(&sb[i]);
    }
}

static void
test_payload_rules(void)
{
    msgpack_sbuffer sb[10];
    uint64_t pl[10];
    size_t n = valid_headers(sb, pl, 10);

    for (size_t i = 0; i < n; i++) {
        if (pl[i] == 0) {
            /* payload on a non-DATA frame */
            expect_fail(sb[i].data, sb[i].size, 1, "1 payload bytes", "payload on non-DATA");
            expect_fail(sb[i].data, sb[i].size, FRAME_PAYLOAD_MAX, "payload", "payload max");
        } else {
            /* DATA without payload */
            expect_fail(sb[i].data, sb[i].size, 0, "0 payload bytes", "DATA without payload");
            expect_ok(sb[i].data, sb[i].size, 1, "DATA with 1 byte");
            expect_ok(sb[i].data, sb[i].size, FRAME_PAYLOAD_MAX, "DATA with the maximum");
        }
        msgpack_sbuffer_destroy(&sb[i]);
    }
}

/* eager_case encodes a SLICE of count elements of dtype and decodes it with payload bytes. */
static int
eager_case(int64_t count, a2a_dtype dtype, uint64_t payload, const char *needle)
{
    frame f = {.type = FRAME_SLICE, .src = 0, .dst = 1, .dtype = (int32_t)dtype, .count = count};
    msgpack_sbuffer sb;
    set_opid(&f, "g", 1, 2);
    encode(&sb, &f);
    if (needle == NULL)
        expect_ok(sb.data, sb.size, payload, "eager SLICE");
    else
        expect_fail(sb.data, sb.size, payload, needle, "eager SLICE");
    msgpack_sbuffer_destroy(&sb);
    return 0;
}

static void
test_eager_slice(void)
{
    /* a SLICE may carry its slice: exactly count * dtype size bytes, at most FRAME_EAGER_MAX */
    eager_case(10, A2A_INT32, 40, NULL);
    _Static_assert(FRAME_EAGER_MAX == 32768, "the messages below name the limit");
    eager_case(FRAME_EAGER_MAX / 4, A2A_FLOAT32, FRAME_EAGER_MAX, NULL);
    eager_case(FRAME_EAGER_MAX, A2A_INT8, FRAME_EAGER_MAX, NULL);
    eager_case(FRAME_EAGER_MAX / 8, A2A_INT64, FRAME_EAGER_MAX, NULL);
    eager_case(10, A2A_INT32, 0, NULL); /* no payload: the data follows after READY */
    eager_case(10, A2A_INT32, 39, "39 payload bytes");
    eager_case(10, A2A_INT32, 41, "41 payload bytes");
    eager_case(10, A2A_INT64, 40, "40 payload bytes"); /* the dtype decides the size */
    eager_case(1025, A2A_FLOAT32, 4100, NULL);         /* over the old 4 KiB limit: eager now */
    eager_case(FRAME_EAGER_MAX / 4 + 1, A2A_FLOAT32, FRAME_EAGER_MAX + 4, "32772 payload bytes");
    eager_case(FRAME_EAGER_MAX + 1, A2A_INT8, FRAME_EAGER_MAX + 1, "at most 32768");
    eager_case(FRAME_EAGER_MAX + 1, A2A_INT8, FRAME_EAGER_MAX, "32768 payload bytes");
    eager_case(FRAME_EAGER_MAX / 8 + 1, A2A_INT64, FRAME_EAGER_MAX + 8, "at most 32768");
    eager_case(0, A2A_INT32, 1, "1 payload bytes"); /* nothing to carry */
    /* a count whose byte size wraps around must not pass for a small payload */
    eager_case(((int64_t)1 << 62) + 1, A2A_INT32, 4, "payload bytes");
}

/* opid_header packs a frame of type t whose group is the n bytes of g. */
static void
opid_header(mbuf *b, int t, const char *g, size_t n)
{
    mb_init(b);
    msgpack_pack_array(&b->pk, nfields[t]);
    for (uint32_t i = 0; i < nfields[t]; i++) {
        if (i == 1)
            mb_strn(b, g, n);
        else if (t == FRAME_ABORT && i == 4)
            msgpack_pack_int(&b->pk, A2A_ERR_INTERNAL);
        else
            put_valid(b, t, i);
    }
}

static void
test_group_names(void)
{
    static const int types[] = {FRAME_READY, FRAME_SLICE, FRAME_DATA, FRAME_ABORT};
    char *max = repeat('g', A2A_GROUP_NAME_MAX), *over = repeat('g', A2A_GROUP_NAME_MAX + 1),
         *huge = repeat('g', 70000);
    mbuf b;
    frame f;

    for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
        int t = types[k];
        opid_header(&b, t, max, A2A_GROUP_NAME_MAX);
        CU_ASSERT_EQUAL(decode(&f, b.sb.data, b.sb.size, payload_for(t)), 0);
        CU_ASSERT_STRING_EQUAL(f.id.group, max);
        frame_fini(&f);
        mb_fini(&b);

        opid_header(&b, t, over, A2A_GROUP_NAME_MAX + 1);
        expect_fail(b.sb.data, b.sb.size, payload_for(t), "128", "group of 128 bytes");
        mb_fini(&b);
        opid_header(&b, t, huge, 70000);
        expect_fail(b.sb.data, b.sb.size, payload_for(t), "70000", "group of 70000 bytes");
        mb_fini(&b);
        opid_header(&b, t, "", 0);
        expect_fail(b.sb.data, b.sb.size, payload_for(t), "empty group", "empty group");
        mb_fini(&b);
        opid_header(&b, t, "a\0b", 3);
        expect_fail(b.sb.data, b.sb.size, payload_for(t), "NUL", "NUL in group");
        mb_fini(&b);
        opid_header(&b, t, "\0", 1);
        expect_fail(b.sb.data, b.sb.size, payload_for(t), "NUL", "group of one NUL");
        mb_fini(&b);
    }
    free(max);
    free(over);
    free(huge);
}

static void
test_string_limits(void)
{
    char *w = repeat('w', CFG_WORKER_NAME_MAX + 1), *m = repeat('m', FRAME_MSG_MAX + 1);
    mbuf b;

    mb_init(&b);
    msgpack_pack_array(&b.pk, 5);
    msgpack_pack_int(&b.pk, FRAME_HELLO);
    mb_str(&b, w);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_bin(&b.pk, 0);
    msgpack_pack_bin(&b.pk, 0);
    expect_fail(b.sb.data, b.sb.size, 0, "64", "worker of 64 bytes");
    mb_fini(&b);

    mb_init(&b);
    msgpack_pack_array(&b.pk, 5);
    msgpack_pack_int(&b.pk, FRAME_HELLO);
    mb_strn(&b, "w\0", 2);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_bin(&b.pk, 0);
    msgpack_pack_bin(&b.pk, 0);
    expect_fail(b.sb.data, b.sb.size, 0, "NUL", "NUL in worker");
    mb_fini(&b);

    mb_init(&b);
    msgpack_pack_array(&b.pk, 7);
    msgpack_pack_int(&b.pk, FRAME_ABORT);
    mb_str(&b, "g");
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_int(&b.pk, A2A_ERR_INTERNAL);
    mb_str(&b, m);
    msgpack_pack_uint64(&b.pk, 0);
    expect_fail(b.sb.data, b.sb.size, 0, "1024", "abort message of 1024 bytes");
    mb_fini(&b);

    mb_init(&b);
    msgpack_pack_array(&b.pk, 10);
    msgpack_pack_int(&b.pk, FRAME_SLICE);
    mb_str(&b, "g");
    for (int i = 0; i < 7; i++)
        msgpack_pack_int(&b.pk, 1);
    mb_str(&b, m);
    expect_fail(b.sb.data, b.sb.size, 0, "1024", "slice message of 1024 bytes");
    mb_fini(&b);
    free(w);
    free(m);
}

/* slice_header packs a SLICE with the given src, dst, dtype, count and status. */
static void
slice_header(mbuf *b, int64_t src, int64_t dst, int64_t dtype, int64_t count, int64_t status)
{
    mb_init(b);
    msgpack_pack_array(&b->pk, 10);
    msgpack_pack_int(&b->pk, FRAME_SLICE);
    mb_str(b, "g");
    msgpack_pack_uint64(&b->pk, 1);
    msgpack_pack_uint64(&b->pk, 2);
    msgpack_pack_int64(&b->pk, src);
    msgpack_pack_int64(&b->pk, dst);
    msgpack_pack_int64(&b->pk, dtype);
    msgpack_pack_int64(&b->pk, count);
    msgpack_pack_int64(&b->pk, status);
    mb_str(b, "");
}

/* data_header packs a DATA frame from src to dst. */
static void
data_header(mbuf *b, int64_t src, int64_t dst)
{
    mb_init(b);
    msgpack_pack_array(&b->pk, 7);
    msgpack_pack_int(&b->pk, FRAME_DATA);
    mb_str(b, "g");
    msgpack_pack_uint64(&b->pk, 1);
    msgpack_pack_uint64(&b->pk, 2);
    msgpack_pack_int64(&b->pk, src);
    msgpack_pack_int64(&b->pk, dst);
    msgpack_pack_uint64(&b->pk, 0);
}

/* ready_header packs a READY whose list holds the len values of l. */
static void
ready_header(mbuf *b, int64_t dst, int64_t dtype, const int64_t *l, size_t len)
{
    mb_init(b);
    msgpack_pack_array(&b->pk, 8);
    msgpack_pack_int(&b->pk, FRAME_READY);
    mb_str(b, "g");
    msgpack_pack_uint64(&b->pk, 1);
    msgpack_pack_uint64(&b->pk, 2);
    msgpack_pack_int64(&b->pk, dst);
    msgpack_pack_int64(&b->pk, dtype);
    msgpack_pack_array(&b->pk, len);
    for (size_t i = 0; i < len; i++)
        msgpack_pack_int64(&b->pk, l[i]);
    msgpack_pack_int64(&b->pk, 0); /* ttl: no bound */
}

static void
test_rank_ranges(void)
{
    static const int64_t bad[] = {-1, INT64_MIN, CFG_MAX_RANKS, CFG_MAX_RANKS + 1, INT64_MAX};
    static const int64_t ok[] = {0, 1, CFG_MAX_RANKS - 1};
    int64_t l[4] = {0, 1, 1, 1};
    char needle[64];
    mbuf b;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        slice_header(&b, ok[i], ok[i], 0, 0, 0);
        expect_ok(b.sb.data, b.sb.size, 0, "slice ranks in range");
        mb_fini(&b);
        data_header(&b, ok[i], ok[i]);
        expect_ok(b.sb.data, b.sb.size, 1, "data ranks in range");
        mb_fini(&b);
        l[2] = ok[i];
        ready_header(&b, ok[i], 0, l, 4);
        expect_ok(b.sb.data, b.sb.size, 0, "ready ranks in range");
        mb_fini(&b);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(needle, sizeof(needle), "src %lld", (long long)bad[i]);
        slice_header(&b, bad[i], 0, 0, 0, 0);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "slice src");
        mb_fini(&b);
        data_header(&b, bad[i], 0);
        expect_fail(b.sb.data, b.sb.size, 1, needle, "data src");
        mb_fini(&b);
        l[2] = bad[i];
        ready_header(&b, 0, 0, l, 4);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "ready src");
        mb_fini(&b);
        l[2] = 1;

        snprintf(needle, sizeof(needle), "dst %lld", (long long)bad[i]);
        slice_header(&b, 0, bad[i], 0, 0, 0);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "slice dst");
        mb_fini(&b);
        data_header(&b, 0, bad[i]);
        expect_fail(b.sb.data, b.sb.size, 1, needle, "data dst");
        mb_fini(&b);
        ready_header(&b, bad[i], 0, l, 4);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "ready dst");
        mb_fini(&b);
    }
}

static void
test_counts(void)
{
    int64_t l[6] = {0, 1, 1, 0, 2, INT64_MAX};
    mbuf b;

    ready_header(&b, 0, 0, l, 6);
    expect_ok(b.sb.data, b.sb.size, 0, "ready counts 1, 0 and INT64_MAX");
    mb_fini(&b);
    l[3] = FRAME_DISCOVER; /* -1: the receiver discovers its counts */
    ready_header(&b, 0, 0, l, 6);
    expect_ok(b.sb.data, b.sb.size, 0, "ready count -1 (FRAME_DISCOVER)");
    mb_fini(&b);
    l[3] = -2;
    ready_header(&b, 0, 0, l, 6);
    expect_fail(b.sb.data, b.sb.size, 0, "negative count", "ready count -2");
    mb_fini(&b);
    l[3] = INT64_MIN;
    ready_header(&b, 0, 0, l, 6);
    expect_fail(b.sb.data, b.sb.size, 0, "negative count", "ready count INT64_MIN");
    mb_fini(&b);

    slice_header(&b, 0, 0, 0, INT64_MAX, 0);
    expect_ok(b.sb.data, b.sb.size, 0, "slice count INT64_MAX");
    mb_fini(&b);
    slice_header(&b, 0, 0, 0, -1, 0);
    expect_fail(b.sb.data, b.sb.size, 0, "negative count", "slice count -1");
    mb_fini(&b);
    slice_header(&b, 0, 0, 0, INT64_MIN, 0);
    expect_fail(b.sb.data, b.sb.size, 0, "negative count", "slice count INT64_MIN");
    mb_fini(&b);
}

static void
test_ready_list(void)
{
    int64_t *l = calloc(2 * (size_t)CFG_MAX_RANKS + 2, sizeof(int64_t));
    int64_t odd[3] = {0, 1, 2};
    frame f;
    mbuf b;

    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    ready_header(&b, 0, 0, odd, 1);
    expect_fail(b.sb.data, b.sb.size, 0, "odd length 1", "list of 1");
    mb_fini(&b);
    ready_header(&b, 0, 0, odd, 3);
    expect_fail(b.sb.data, b.sb.size, 0, "odd length 3", "list of 3");
    mb_fini(&b);

    /* the list limit: one pair per rank */
    ready_header(&b, 0, 0, l, 2 * (size_t)CFG_MAX_RANKS);
    CU_ASSERT_EQUAL(decode(&f, b.sb.data, b.sb.size, 0), 0);
    CU_ASSERT_EQUAL(f.n, CFG_MAX_RANKS);
    frame_fini(&f);
    mb_fini(&b);
    ready_header(&b, 0, 0, l, 2 * (size_t)CFG_MAX_RANKS + 2);
    expect_fail(b.sb.data, b.sb.size, 0, "131074", "list over the limit");
    mb_fini(&b);

    /* a list claiming more items than bytes left */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 8);
    msgpack_pack_int(&b.pk, FRAME_READY);
    mb_str(&b, "g");
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 2);
    msgpack_pack_int64(&b.pk, 0);
    msgpack_pack_int64(&b.pk, 0);
    msgpack_sbuffer_write(&b.sb, "\xdd\xff\xff\xff\xfe", 5);
    expect_fail(b.sb.data, b.sb.size, 0, NULL, "array32 of 2^32-2 items");
    mb_fini(&b);

    /* list items of the wrong type */
    for (size_t pos = 0; pos < 4; pos++) {
        mb_init(&b);
        msgpack_pack_array(&b.pk, 8);
        msgpack_pack_int(&b.pk, FRAME_READY);
        mb_str(&b, "g");
        msgpack_pack_uint64(&b.pk, 1);
        msgpack_pack_uint64(&b.pk, 2);
        msgpack_pack_int64(&b.pk, 0);
        msgpack_pack_int64(&b.pk, 0);
        msgpack_pack_array(&b.pk, 4);
        for (size_t i = 0; i < 4; i++)
            if (i == pos)
                mb_str(&b, "1");
            else
                msgpack_pack_int(&b.pk, 1);
        msgpack_pack_int64(&b.pk, 0);
        expect_fail(b.sb.data, b.sb.size, 0, pos % 2 ? "count" : "src", "list item a string");
        mb_fini(&b);
        /* and 2^63, which is no int64 */
        mb_init(&b);
        msgpack_pack_array(&b.pk, 8);
        msgpack_pack_int(&b.pk, FRAME_READY);
        mb_str(&b, "g");
        msgpack_pack_uint64(&b.pk, 1);
        msgpack_pack_uint64(&b.pk, 2);
        msgpack_pack_int64(&b.pk, 0);
        msgpack_pack_int64(&b.pk, 0);
        msgpack_pack_array(&b.pk, 4);
        for (size_t i = 0; i < 4; i++)
            if (i == pos)
                msgpack_pack_uint64(&b.pk, (uint64_t)1 << 63);
            else
                msgpack_pack_int(&b.pk, 1);
        msgpack_pack_int64(&b.pk, 0);
        expect_fail(b.sb.data, b.sb.size, 0, pos % 2 ? "count" : "src", "list item 2^63");
        mb_fini(&b);
    }
    free(l);
}

static void
test_dtype_range(void)
{
    static const int64_t bad[] = {-1, A2A_DTYPE_COUNT, 255, INT64_MAX, INT64_MIN};
    int64_t l[2] = {0, 1};
    char needle[64];
    mbuf b;

    for (int64_t d = 0; d < A2A_DTYPE_COUNT; d++) {
        frame f;
        ready_header(&b, 0, d, l, 2);
        CU_ASSERT_EQUAL(decode(&f, b.sb.data, b.sb.size, 0), 0);
        CU_ASSERT_EQUAL(f.dtype, d);
        frame_fini(&f);
        mb_fini(&b);
        slice_header(&b, 0, 0, d, 0, 0);
        CU_ASSERT_EQUAL(decode(&f, b.sb.data, b.sb.size, 0), 0);
        CU_ASSERT_EQUAL(f.dtype, d);
        frame_fini(&f);
        mb_fini(&b);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(needle, sizeof(needle), "dtype %lld", (long long)bad[i]);
        ready_header(&b, 0, bad[i], l, 2);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "ready dtype");
        mb_fini(&b);
        slice_header(&b, 0, 0, bad[i], 0, 0);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "slice dtype");
        mb_fini(&b);
    }
}

/* abort_header packs an ABORT with status st. */
static void
abort_header(mbuf *b, int64_t st)
{
    mb_init(b);
    msgpack_pack_array(&b->pk, 7);
    msgpack_pack_int(&b->pk, FRAME_ABORT);
    mb_str(b, "g");
    msgpack_pack_uint64(&b->pk, 1);
    msgpack_pack_uint64(&b->pk, 2);
    msgpack_pack_int64(&b->pk, st);
    mb_str(b, "why");
    msgpack_pack_uint64(&b->pk, 0);
}

static void
test_status_range(void)
{
    static const int64_t bad[] = {-1, A2A_STATUS_COUNT, 100, INT64_MAX, INT64_MIN};
    char needle[64];
    frame f;
    mbuf b;

    for (int64_t st = 0; st < A2A_STATUS_COUNT; st++) {
        slice_header(&b, 0, 0, 0, 0, st);
        CU_ASSERT_EQUAL(decode(&f, b.sb.data, b.sb.size, 0), 0);
        CU_ASSERT_EQUAL(f.status, st);
        frame_fini(&f);
        mb_fini(&b);
        abort_header(&b, st);
        if (st == A2A_OK) {
            expect_fail(b.sb.data, b.sb.size, 0, "status OK", "abort with OK");
        } else {
            CU_ASSERT_EQUAL(decode(&f, b.sb.data, b.sb.size, 0), 0);
            CU_ASSERT_EQUAL(f.status, st);
            CU_ASSERT_STRING_EQUAL(f.message, "why");
            frame_fini(&f);
        }
        mb_fini(&b);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(needle, sizeof(needle), "status %lld", (long long)bad[i]);
        slice_header(&b, 0, 0, 0, 0, bad[i]);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "slice status");
        mb_fini(&b);
        abort_header(&b, bad[i]);
        expect_fail(b.sb.data, b.sb.size, 0, needle, "abort status");
        mb_fini(&b);
    }
}

static void
test_small_errlen(void)
{
    static const uint8_t bad[] = {0x91, 0x07};
    frame f;
    char small[8];
    uint8_t p[FRAME_PREFIX_LEN] = {0};
    uint32_t hl;
    uint64_t pl;

    memset(small, 'z', sizeof(small));
    CU_ASSERT_EQUAL(frame_header_decode(&f, bad, sizeof(bad), 0, small, sizeof(small)), -1);
    CU_ASSERT_EQUAL(small[sizeof(small) - 1], '\0');
    CU_ASSERT_EQUAL(frame_prefix_decode(p, &hl, &pl, small, 1), -1);
    CU_ASSERT_EQUAL(small[0], '\0');
}

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"prefix round trip", test_prefix_round_trip},
        {"prefix bytes", test_prefix_bytes},
        {"prefix malformed", test_prefix_malformed},
        {"HELLO round trip", test_hello_round_trip},
        {"CHALLENGE round trip", test_challenge_round_trip},
        {"WELCOME round trip", test_welcome_round_trip},
        {"proof and nonce lengths", test_auth_field_lengths},
        {"HEARTBEAT round trip", test_heartbeat_round_trip},
        {"READY round trip, no pairs", test_ready_round_trip_empty},
        {"READY ttl", test_ready_ttl},
        {"READY with a row, round trip", test_ready_row_round_trip},
        {"READY with a malformed row", test_ready_row_malformed},
        {"READY round trip, many pairs", test_ready_round_trip_many},
        {"READY of CFG_MAX_RANKS sources fits the header limit", test_ready_header_limit},
        {"SLICE round trip", test_slice_round_trip},
        {"SLICE with a place: round trip and malformed", test_slice_place},
        {"DATA round trip", test_data_round_trip},
        {"ABORT round trip", test_abort_round_trip},
        {"encode unknown type", test_encode_unknown_type},
        {"frame_fini on a zeroed frame", test_fini_zeroed},
        {"WHERE and HERE: round trip, a number below -1", test_where_here},
        {"PROBE and ALIVE: round trip, ranks in range, no payload", test_probe_alive},
        {"HELLO: the link protocol version, 1 without it, 0 refused", test_hello_version},
        {"built headers are valid", test_builder_valid},
        {"wrong field count", test_wrong_field_count},
        {"wrong field types", test_wrong_field_types},
        {"wrong top level", test_top_level},
        {"unknown frame type", test_unknown_type},
        {"truncated at every byte", test_truncated},
        {"trailing bytes", test_trailing_bytes},
        {"payload only on DATA", test_payload_rules},
        {"eager SLICE payload", test_eager_slice},
        {"group names", test_group_names},
        {"string limits", test_string_limits},
        {"ranks out of range", test_rank_ranges},
        {"negative counts", test_counts},
        {"READY list", test_ready_list},
        {"dtype out of range", test_dtype_range},
        {"status out of range", test_status_range},
        {"small error buffer", test_small_errlen},
    };
    return cu_main("frame", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
