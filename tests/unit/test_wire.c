/*
 * test_wire.c - the msgpack codec: round trips of every message, and every
 * class of malformed input for every decoder. Malformed inputs are copied
 * into exact-size heap buffers so that an over-read shows under ASan and
 * valgrind.
 */
#include "cu_main.h"
#include "mbuf.h"
#include <CUnit/Basic.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "common/wire.h"

/* ---- helpers ---- */

static void
mb_bin(mbuf *b, const void *p, size_t n)
{
    msgpack_pack_bin(&b->pk, n);
    if (n > 0)
        msgpack_pack_bin_body(&b->pk, p, n);
}

static void
mb_raw(mbuf *b, const void *p, size_t n)
{
    msgpack_sbuffer_write(&b->sb, p, n);
}

enum kind {
    K_REQUEST,
    K_REPLY,
    K_GROUP_NAME,
    K_CREATE,
    K_GROUP,
    K_GROUP_LIST,
    K_HEALTH,
    K_EMPTY,
    K_A2AV,
    K_A2AV_REPLY,
    K_JOB_LIST,
    K_COUNT
};

static const char *const kind_names[K_COUNT] = {
    "request", "reply", "group name", "create",          "group",    "group list",
    "health",  "empty", "AllToAllV",  "AllToAllV reply", "job list",
};

/*
 * decode_kind runs the decoder of kind k on an exact-size heap copy of buf
 * and frees what it decoded; returns the decoder's result. err is always
 * written on failure.
 */
static int
decode_kind(enum kind k, const void *buf, size_t len, char *err, size_t errlen)
{
    uint8_t *copy = malloc(len > 0 ? len : 1);
    int rc = -1;

    CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
    if (len > 0)
        memcpy(copy, buf, len);
    err[0] = '\0';
    switch (k) {
    case K_REQUEST: {
        wire_request r;
        rc = wire_request_decode(&r, copy, len, err, errlen);
        break;
    }
    case K_REPLY: {
        wire_reply r;
        rc = wire_reply_decode(&r, copy, len, err, errlen);
        break;
    }
    case K_GROUP_NAME: {
        wire_group_name g;
        rc = wire_group_name_decode(&g, copy, len, err, errlen);
        break;
    }
    case K_CREATE: {
        wire_create c;
        rc = wire_create_decode(&c, copy, len, err, errlen);
        if (rc != 0)
            CU_ASSERT(c.ranks == NULL && c.n == 0);
        wire_create_fini(&c);
        break;
    }
    case K_GROUP: {
        wire_group g;
        rc = wire_group_decode(&g, copy, len, err, errlen);
        if (rc != 0)
            CU_ASSERT(g.members == NULL && g.n == 0);
        wire_group_fini(&g);
        break;
    }
    case K_GROUP_LIST: {
        wire_group_list l;
        rc = wire_group_list_decode(&l, copy, len, err, errlen);
        if (rc != 0)
            CU_ASSERT(l.groups == NULL && l.n == 0);
        wire_group_list_fini(&l);
        break;
    }
    case K_HEALTH: {
        wire_health h;
        rc = wire_health_decode(&h, copy, len, err, errlen);
        break;
    }
    case K_JOB_LIST: {
        wire_job_list l;
        rc = wire_job_list_decode(&l, copy, len, err, errlen);
        if (rc != 0)
            CU_ASSERT(l.jobs == NULL && l.n == 0);
        if (rc == 0 && l.n == 2) /* the valid one of encode_valid */
            CU_ASSERT(l.jobs[0].world_rank == 3 && strcmp(l.jobs[0].mode, "shared") == 0 &&
                      l.jobs[0].pid == 4242 && l.jobs[1].pid == -1 &&
                      strcmp(l.jobs[1].mode, "remote") == 0 && l.jobs[1].staging == 2);
        wire_job_list_fini(&l);
        break;
    }
    case K_EMPTY: rc = wire_empty_decode(copy, len, err, errlen); break;
    case K_A2AV: {
        wire_a2av a;
        rc = wire_a2av_decode(&a, copy, len, err, errlen);
        if (rc == 0)
            wire_a2av_fini(&a);
        else
            CU_ASSERT_PTR_NULL(a.counts);
        break;
    }
    case K_A2AV_REPLY: {
        int64_t next;
        rc = wire_a2av_reply_decode(&next, copy, len, err, errlen);
        break;
    }
    default: CU_FAIL("bad kind");
    }
    free(copy);
    if (rc != 0)
        CU_ASSERT(err[0] != '\0');
    return rc;
}

/* expect_fail checks that decoder k refuses buf, and that err contains want (if not NULL). */
static void
expect_fail_at(enum kind k, const void *buf, size_t len, const char *want, int line)
{
    char err[512];
    int rc = decode_kind(k, buf, len, err, sizeof(err));
    CU_ASSERT_NOT_EQUAL(rc, 0);
    if (rc == 0)
        fprintf(stderr, "\n  line %d: %s decoder accepted a bad message\n", line, kind_names[k]);
    if (rc != 0 && want != NULL && strstr(err, want) == NULL) {
        fprintf(stderr, "\n  line %d: %s error \"%s\" does not mention \"%s\"\n", line,
                kind_names[k], err, want);
        CU_FAIL("error message does not mention what is wrong");
    }
}
#define expect_fail(k, buf, len, want) expect_fail_at(k, buf, len, want, __LINE__)
#define expect_fail_mb(k, b, want) expect_fail_at(k, (b)->sb.data, (b)->sb.size, want, __LINE__)

static void
expect_ok_at(enum kind k, const void *buf, size_t len, int line)
{
    char err[512];
    int rc = decode_kind(k, buf, len, err, sizeof(err));
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0)
        fprintf(stderr, "\n  line %d: %s decoder refused: %s\n", line, kind_names[k], err);
}
#define expect_ok_mb(k, b) expect_ok_at(k, (b)->sb.data, (b)->sb.size, __LINE__)

/* encode_valid appends a small valid message of kind k. */
static void
encode_valid(enum kind k, msgpack_sbuffer *sb)
{
    static const uint8_t body[] = {1, 2, 3, 0, 255};
    static const int64_t ranks[] = {0, 3, 1};
    wire_member members[2] = {
        {.world_rank = 0, .worker = "node-a", .url = "tcp://a:1", .data_url = "tcp://a:2"},
        {.world_rank = 7, .worker = "node-b", .url = "tcp://b:1", .data_url = "tcp://b:2"},
    };
    wire_group_info infos[2] = {
        {.name = "g1", .epoch = 1, .size = 2, .origin = "config"},
        {.name = "g2", .epoch = 9, .size = 4, .origin = "runtime"},
    };
    int rc = -1;

    switch (k) {
    case K_REQUEST: {
        wire_request r = {
            .method = "Echo", .id = 42, .timeout_ms = 1000, .body = body, .body_len = sizeof(body)};
        rc = wire_request_encode(sb, &r);
        break;
    }
    case K_REPLY: {
        wire_reply r = {.id = 42,
                        .status = A2A_ERR_NOT_FOUND,
                        .message = "no such group",
                        .body = body,
                        .body_len = sizeof(body)};
        rc = wire_reply_encode(sb, &r);
        break;
    }
    case K_GROUP_NAME: rc = wire_group_name_encode(sb, "experts_even"); break;
    case K_CREATE: rc = wire_create_encode(sb, "experts_even", 3, ranks); break;
    case K_GROUP: {
        wire_group g = {.name = "experts_even", .epoch = 3, .n = 2, .members = members};
        rc = wire_group_encode(sb, &g);
        break;
    }
    case K_GROUP_LIST: {
        wire_group_list l = {.n = 2, .groups = infos};
        rc = wire_group_list_encode(sb, &l);
        break;
    }
    case K_HEALTH: {
        wire_health h = {.service = "worker",
                         .name = "node-a",
                         .world_size = 4,
                         .groups = 2,
                         .uptime_ms = 12345,
                         .config = "/etc/a2a.yaml"};
        rc = wire_health_encode(sb, &h);
        break;
    }
    case K_JOB_LIST: {
        wire_job_info jobs[2] = {{.session = 7,
                                  .world_rank = 3,
                                  .mode = "shared",
                                  .pid = 4242,
                                  .uid = 1000,
                                  .shared = 1,
                                  .staging = 1},
                                 {.session = 9,
                                  .world_rank = 2,
                                  .mode = "remote",
                                  .pid = -1,
                                  .uid = -1,
                                  .staging = 2,
                                  .calls = 1}};
        wire_job_list l = {.n = 2, .jobs = jobs};
        rc = wire_job_list_encode(sb, &l);
        break;
    }
    case K_EMPTY: rc = wire_empty_encode(sb); break;
    case K_A2AV: {
        int64_t counts[8] = {1, 2, 0, 1, 2, 1, 0, 2};
        wire_a2av a = {.job = {.world_rank = 3},
                       .group = "experts_even",
                       .dtype = A2A_INT32,
                       .timeout_ms = 2500,
                       .send_addr = 0x2000,
                       .send_len = 3,
                       .recv_addr = 0x3000,
                       .recv_len = 3,
                       .n = 2,
                       .counts = counts,
                       .op_next = 41,
                       .op_failed = 1};
        rc = wire_a2av_encode(sb, &a);
        break;
    }
    case K_A2AV_REPLY: rc = wire_a2av_reply_encode(sb, 42); break;
    default: break;
    }
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* ---- round trips ---- */

static void
request_round_trip(const char *method, uint64_t id, uint64_t timeout, const uint8_t *body,
                   size_t len)
{
    wire_request in = {.id = id, .timeout_ms = timeout, .body = body, .body_len = len};
    wire_request out;
    msgpack_sbuffer sb;
    char err[256] = "";

    snprintf(in.method, sizeof(in.method), "%s", method);
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_request_encode(&sb, &in), 0);
    CU_ASSERT_EQUAL(wire_request_decode(&out, (const uint8_t *)sb.data, sb.size, err, sizeof(err)),
                    0);
    CU_ASSERT_STRING_EQUAL(out.method, method);
    CU_ASSERT_EQUAL(out.id, id);
    CU_ASSERT_EQUAL(out.timeout_ms, timeout);
    CU_ASSERT_EQUAL(out.body_len, len);
    if (len > 0 && out.body_len == len) {
        CU_ASSERT(memcmp(out.body, body, len) == 0);
        /* the body points into the decoded buffer */
        CU_ASSERT(out.body >= (const uint8_t *)sb.data &&
                  out.body + len <= (const uint8_t *)sb.data + sb.size);
    }
    msgpack_sbuffer_destroy(&sb);
}

static void
test_request_round_trip(void)
{
    uint8_t small[] = {0, 1, 2, 0xc1, 0xff};
    uint8_t *big = malloc(WIRE_BODY_MAX);
    char *m63 = repeat('M', WIRE_METHOD_MAX);

    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    for (size_t i = 0; i < WIRE_BODY_MAX; i++)
        big[i] = (uint8_t)(i * 2654435761u >> 13);
    request_round_trip("Echo", 1, 0, NULL, 0);
    request_round_trip("Echo", 0, 1000, small, sizeof(small));
    request_round_trip("ResolveGroup", UINT64_MAX, UINT64_MAX, small, 1);
    request_round_trip(m63, 123456789012345ull, 5, small, sizeof(small));
    request_round_trip("Big", 7, 60000, big, 70000);
    request_round_trip("Big", 8, 60000, big, WIRE_BODY_MAX);
    free(m63);
    free(big);
}

static void
reply_round_trip(uint64_t id, a2a_status st, const char *message, const uint8_t *body, size_t len)
{
    wire_reply in = {.id = id, .status = st, .body = body, .body_len = len};
    wire_reply out;
    msgpack_sbuffer sb;
    char err[256] = "";

    snprintf(in.message, sizeof(in.message), "%s", message);
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_reply_encode(&sb, &in), 0);
    CU_ASSERT_EQUAL(wire_reply_decode(&out, (const uint8_t *)sb.data, sb.size, err, sizeof(err)),
                    0);
    CU_ASSERT_EQUAL(out.id, id);
    CU_ASSERT_EQUAL(out.status, st);
    CU_ASSERT_STRING_EQUAL(out.message, message);
    CU_ASSERT_EQUAL(out.body_len, len);
    if (len > 0 && out.body_len == len)
        CU_ASSERT(memcmp(out.body, body, len) == 0);
    msgpack_sbuffer_destroy(&sb);
}

static void
test_reply_round_trip(void)
{
    uint8_t small[] = {9, 8, 7};
    uint8_t *big = malloc(WIRE_BODY_MAX);
    char *m1023 = repeat('x', WIRE_MESSAGE_MAX);

    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    memset(big, 0xa5, WIRE_BODY_MAX);
    for (int st = 0; st < A2A_STATUS_COUNT; st++)
        reply_round_trip((uint64_t)st, (a2a_status)st, st == 0 ? "" : status_message(st), small,
                         st % 2 ? 0 : sizeof(small));
    reply_round_trip(UINT64_MAX, A2A_OK, "", NULL, 0);
    reply_round_trip(5, A2A_ERR_INTERNAL, m1023, NULL, 0);
    reply_round_trip(6, A2A_OK, "", big, WIRE_BODY_MAX);
    free(m1023);
    free(big);
}

static void
test_group_name_round_trip(void)
{
    const char *names[] = {A2A_WORLD_GROUP, "g", "experts even/odd #1", "\xc3\xa9quipe"};
    char *n127 = repeat('n', A2A_GROUP_NAME_MAX);
    char err[256];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) + 1; i++) {
        const char *name = i < sizeof(names) / sizeof(names[0]) ? names[i] : n127;
        msgpack_sbuffer sb;
        wire_group_name g;
        msgpack_sbuffer_init(&sb);
        CU_ASSERT_EQUAL_FATAL(wire_group_name_encode(&sb, name), 0);
        CU_ASSERT_EQUAL(
            wire_group_name_decode(&g, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
        CU_ASSERT_STRING_EQUAL(g.name, name);
        msgpack_sbuffer_destroy(&sb);
    }
    free(n127);
}

static void
create_round_trip(const char *name, size_t n, const int64_t *ranks)
{
    msgpack_sbuffer sb;
    wire_create c;
    char err[256] = "";

    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_create_encode(&sb, name, n, ranks), 0);
    CU_ASSERT_EQUAL_FATAL(
        wire_create_decode(&c, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(c.name, name);
    CU_ASSERT_EQUAL(c.n, n);
    if (c.n == n)
        CU_ASSERT(memcmp(c.ranks, ranks, n * sizeof(*ranks)) == 0);
    wire_create_fini(&c);
    CU_ASSERT_PTR_NULL(c.ranks);
    wire_create_fini(&c); /* twice is fine */
    msgpack_sbuffer_destroy(&sb);
}

static void
test_create_round_trip(void)
{
    int64_t few[] = {0, 2, 1, 127, 128, 65535, 65536, INT64_MAX, 4294967296ll};
    int64_t *many = malloc(WIRE_MAX_MEMBERS * sizeof(*many));

    CU_ASSERT_PTR_NOT_NULL_FATAL(many);
    for (size_t i = 0; i < WIRE_MAX_MEMBERS; i++)
        many[i] = (int64_t)(WIRE_MAX_MEMBERS - 1 - i);
    create_round_trip("g", 1, few);
    create_round_trip("experts_even", sizeof(few) / sizeof(few[0]), few);
    create_round_trip("all", WIRE_MAX_MEMBERS, many);
    free(many);
}

static void
test_group_round_trip(void)
{
    wire_member m[5];
    wire_group in = {.name = "experts_even", .epoch = UINT64_MAX, .n = 5, .members = m};
    wire_group out;
    msgpack_sbuffer sb;
    char err[256] = "";

    memset(m, 0, sizeof(m));
    for (int i = 0; i < 5; i++) {
        m[i].world_rank = i == 4 ? INT64_MAX : 2 * i;
        snprintf(m[i].worker, sizeof(m[i].worker), "node-%c", 'a' + i);
        snprintf(m[i].url, sizeof(m[i].url), "tcp://10.0.0.%d:7100", i + 1);
        snprintf(m[i].data_url, sizeof(m[i].data_url), "tcp://10.0.0.%d:7101", i + 1);
    }
    memset(m[3].url, 'u', CFG_URL_MAX); /* a URL at its limit */
    m[3].url[CFG_URL_MAX] = '\0';
    memset(m[2].worker, 'w', CFG_WORKER_NAME_MAX);
    m[2].worker[CFG_WORKER_NAME_MAX] = '\0';
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_group_encode(&sb, &in), 0);
    CU_ASSERT_EQUAL_FATAL(
        wire_group_decode(&out, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(out.name, in.name);
    CU_ASSERT_EQUAL(out.epoch, in.epoch);
    CU_ASSERT_EQUAL_FATAL(out.n, 5);
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(out.members[i].world_rank, m[i].world_rank);
        CU_ASSERT_STRING_EQUAL(out.members[i].worker, m[i].worker);
        CU_ASSERT_STRING_EQUAL(out.members[i].url, m[i].url);
        CU_ASSERT_STRING_EQUAL(out.members[i].data_url, m[i].data_url);
    }
    wire_group_fini(&out);
    CU_ASSERT_PTR_NULL(out.members);
    CU_ASSERT_EQUAL(out.n, 0);
    msgpack_sbuffer_destroy(&sb);

    /* one member */
    in.n = 1;
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_group_encode(&sb, &in), 0);
    CU_ASSERT_EQUAL_FATAL(
        wire_group_decode(&out, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(out.n, 1);
    wire_group_fini(&out);
    msgpack_sbuffer_destroy(&sb);
}

static void
group_list_round_trip(size_t n)
{
    wire_group_info *g = calloc(n > 0 ? n : 1, sizeof(*g));
    wire_group_list in = {.n = n, .groups = n > 0 ? g : NULL}, out;
    static const char *const origins[] = {"builtin", "config", "runtime"};
    msgpack_sbuffer sb;
    char err[256] = "";

    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    for (size_t i = 0; i < n; i++) {
        snprintf(g[i].name, sizeof(g[i].name), "group-%zu", i);
        g[i].epoch = i * 3;
        g[i].size = i + 1;
        snprintf(g[i].origin, sizeof(g[i].origin), "%s", origins[i % 3]);
    }
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_group_list_encode(&sb, &in), 0);
    CU_ASSERT_EQUAL_FATAL(
        wire_group_list_decode(&out, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(out.n, n);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_STRING_EQUAL(out.groups[i].name, g[i].name);
        CU_ASSERT_EQUAL(out.groups[i].epoch, g[i].epoch);
        CU_ASSERT_EQUAL(out.groups[i].size, g[i].size);
        CU_ASSERT_STRING_EQUAL(out.groups[i].origin, g[i].origin);
    }
    wire_group_list_fini(&out);
    CU_ASSERT_PTR_NULL(out.groups);
    msgpack_sbuffer_destroy(&sb);
    free(g);
}

static void
test_group_list_round_trip(void)
{
    group_list_round_trip(0);
    group_list_round_trip(1);
    group_list_round_trip(17);
    group_list_round_trip(5000);
}

static void
test_health_round_trip(void)
{
    wire_health in, out;
    msgpack_sbuffer sb;
    char err[256] = "";

    memset(&in, 0, sizeof(in));
    snprintf(in.service, sizeof(in.service), "coordinator");
    snprintf(in.name, sizeof(in.name), "node-a");
    in.world_size = 65536;
    in.groups = 3;
    in.uptime_ms = UINT64_MAX;
    memset(in.config, 'c', CFG_PATH_MAX);
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_health_encode(&sb, &in), 0);
    CU_ASSERT_EQUAL_FATAL(
        wire_health_decode(&out, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(out.service, in.service);
    CU_ASSERT_STRING_EQUAL(out.name, in.name);
    CU_ASSERT_EQUAL(out.world_size, in.world_size);
    CU_ASSERT_EQUAL(out.groups, in.groups);
    CU_ASSERT_EQUAL(out.uptime_ms, in.uptime_ms);
    CU_ASSERT_STRING_EQUAL(out.config, in.config);
    msgpack_sbuffer_destroy(&sb);

    /* empty strings are fine */
    memset(&in, 0, sizeof(in));
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_health_encode(&sb, &in), 0);
    CU_ASSERT_EQUAL(wire_health_decode(&out, (const uint8_t *)sb.data, sb.size, err, sizeof(err)),
                    0);
    CU_ASSERT_STRING_EQUAL(out.service, "");
    msgpack_sbuffer_destroy(&sb);
}

static void
test_empty_round_trip(void)
{
    msgpack_sbuffer sb;
    char err[256] = "";

    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL_FATAL(wire_empty_encode(&sb), 0);
    CU_ASSERT_EQUAL(sb.size, 1);
    CU_ASSERT_EQUAL((uint8_t)sb.data[0], 0x90);
    CU_ASSERT_EQUAL(wire_empty_decode((const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    msgpack_sbuffer_destroy(&sb);
}

/* Every decoder accepts its own valid message (the base of the malformed tests). */
static void
test_valid_messages(void)
{
    for (int k = 0; k < K_COUNT; k++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        encode_valid((enum kind)k, &sb);
        expect_ok_at((enum kind)k, sb.data, sb.size, __LINE__);
        msgpack_sbuffer_destroy(&sb);
    }
}

/* ---- malformed input ---- */

static void
test_empty_buffer(void)
{
    char err[256];
    wire_request r;
    msgpack_object root;
    msgpack_zone zone;

    for (int k = 0; k < K_COUNT; k++)
        expect_fail((enum kind)k, "", 0, "empty");
    /* a NULL buffer too */
    CU_ASSERT_NOT_EQUAL(wire_request_decode(&r, NULL, 0, err, sizeof(err)), 0);
    CU_ASSERT_NOT_EQUAL(wire_empty_decode(NULL, 0, err, sizeof(err)), 0);
    msgpack_zone_init(&zone, 256);
    CU_ASSERT_NOT_EQUAL(wire_parse(&root, &zone, NULL, 0, err, sizeof(err)), 0);
    msgpack_zone_destroy(&zone);
    /* a NULL or zero-length err is fine */
    CU_ASSERT_NOT_EQUAL(wire_request_decode(&r, NULL, 0, NULL, 0), 0);
    CU_ASSERT_NOT_EQUAL(wire_request_decode(&r, (const uint8_t *)"\xc1", 1, err, 0), 0);
}

static void
test_truncated(void)
{
    for (int k = 0; k < K_COUNT; k++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        encode_valid((enum kind)k, &sb);
        for (size_t cut = 0; cut < sb.size; cut++)
            expect_fail_at((enum kind)k, sb.data, cut, NULL, (int)cut);
        msgpack_sbuffer_destroy(&sb);
    }
}

static void
test_trailing_bytes(void)
{
    static const uint8_t extra[][3] = {{0xc0}, {0x00}, {0x90}, {0xc1}, {0xa1, 'x'}};
    static const size_t extra_len[] = {1, 1, 1, 1, 2};

    for (int k = 0; k < K_COUNT; k++)
        for (size_t e = 0; e < sizeof(extra_len) / sizeof(extra_len[0]); e++) {
            mbuf b;
            mb_init(&b);
            encode_valid((enum kind)k, &b.sb);
            mb_raw(&b, extra[e], extra_len[e]);
            expect_fail_mb((enum kind)k, &b, NULL);
            mb_fini(&b);
        }
    /* the message names the trailing bytes */
    {
        mbuf b;
        mb_init(&b);
        encode_valid(K_REQUEST, &b.sb);
        mb_raw(&b, "\xc0\xc0\xc0", 3);
        expect_fail_mb(K_REQUEST, &b, "trailing");
        mb_fini(&b);
    }
}

static void
test_wrong_top_level_type(void)
{
    for (int k = 0; k < K_COUNT; k++) {
        mbuf b;

        mb_init(&b); /* a map */
        msgpack_pack_map(&b.pk, 1);
        mb_str(&b, "method");
        mb_str(&b, "Echo");
        expect_fail_mb((enum kind)k, &b, "array");
        mb_fini(&b);

        mb_init(&b); /* an empty map */
        msgpack_pack_map(&b.pk, 0);
        expect_fail_mb((enum kind)k, &b, NULL);
        mb_fini(&b);

        mb_init(&b); /* a string */
        mb_str(&b, "hello");
        expect_fail_mb((enum kind)k, &b, NULL);
        mb_fini(&b);

        mb_init(&b); /* a bin holding a valid message */
        {
            msgpack_sbuffer inner;
            msgpack_sbuffer_init(&inner);
            encode_valid((enum kind)k, &inner);
            mb_bin(&b, inner.data, inner.size);
            msgpack_sbuffer_destroy(&inner);
        }
        expect_fail_mb((enum kind)k, &b, NULL);
        mb_fini(&b);

        mb_init(&b); /* scalars */
        msgpack_pack_int(&b.pk, 4);
        expect_fail_mb((enum kind)k, &b, NULL);
        mb_fini(&b);
        mb_init(&b);
        msgpack_pack_nil(&b.pk);
        expect_fail_mb((enum kind)k, &b, NULL);
        mb_fini(&b);
        mb_init(&b);
        msgpack_pack_double(&b.pk, 1.5);
        expect_fail_mb((enum kind)k, &b, NULL);
        mb_fini(&b);
    }
}

/* A top-level array of n small integers. */
static void
pack_ints(mbuf *b, unsigned n)
{
    msgpack_pack_array(&b->pk, n);
    for (unsigned i = 0; i < n; i++)
        msgpack_pack_int(&b->pk, 1);
}

static void
test_wrong_field_count(void)
{
    static const struct {
        enum kind k;
        unsigned bad[3];
    } cases[] = {
        {K_REQUEST, {0, 3, 5}}, {K_REPLY, {0, 3, 5}}, {K_GROUP_NAME, {0, 2, 3}},
        {K_CREATE, {0, 1, 3}},  {K_GROUP, {0, 2, 4}}, {K_HEALTH, {0, 5, 7}},
        {K_EMPTY, {1, 2, 16}},
    };
    mbuf b;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (int j = 0; j < 3; j++) {
            mb_init(&b);
            pack_ints(&b, cases[i].bad[j]);
            expect_fail_mb(cases[i].k, &b, "fields");
            mb_fini(&b);
        }

    /* a request whose first four fields are right but has a fifth */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 5);
    mb_str(&b, "Echo");
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    mb_bin(&b, "x", 1);
    msgpack_pack_nil(&b.pk);
    expect_fail_mb(K_REQUEST, &b, "fields");
    mb_fini(&b);

    /* a member with three fields */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 3);
    mb_str(&b, "g");
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_array(&b.pk, 3);
    msgpack_pack_int(&b.pk, 0);
    mb_str(&b, "w");
    mb_str(&b, "tcp://a:1");
    expect_fail_mb(K_GROUP, &b, "member");
    mb_fini(&b);

    /* a group info with five fields */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_array(&b.pk, 5);
    mb_str(&b, "g");
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    mb_str(&b, "config");
    mb_str(&b, "extra");
    expect_fail_mb(K_GROUP_LIST, &b, "group info");
    mb_fini(&b);
}

/* Field values for the request and reply generators. */
typedef enum { V_GOOD, V_STR, V_NEG, V_NIL, V_TRUE, V_FLOAT, V_BIN, V_INT, V_MAP, V_ARR } val;

static void
pack_val(mbuf *b, val v, int good_kind)
{
    switch (v) {
    case V_STR: mb_str(b, "12"); break;
    case V_NEG: msgpack_pack_int64(&b->pk, -1); break;
    case V_NIL: msgpack_pack_nil(&b->pk); break;
    case V_TRUE: msgpack_pack_true(&b->pk); break;
    case V_FLOAT: msgpack_pack_double(&b->pk, 3.0); break;
    case V_BIN: mb_bin(b, "Echo", 4); break;
    case V_INT: msgpack_pack_uint64(&b->pk, 3); break;
    case V_MAP: msgpack_pack_map(&b->pk, 0); break;
    case V_ARR: msgpack_pack_array(&b->pk, 0); break;
    case V_GOOD:
        switch (good_kind) {
        case 's': mb_str(b, "Echo"); break;
        case 'u': msgpack_pack_uint64(&b->pk, 3); break;
        case 'b': mb_bin(b, "body", 4); break;
        }
        break;
    }
}

/* A request (kinds "suub") or reply (kinds "uusb") with field f replaced by v. */
static void
pack_envelope(mbuf *b, const char *kinds, int f, val v)
{
    msgpack_pack_array(&b->pk, 4);
    for (int i = 0; i < 4; i++)
        pack_val(b, i == f ? v : V_GOOD, kinds[i]);
}

static void
test_wrong_field_types(void)
{
    static const val bad_for_str[] = {V_INT, V_NEG, V_NIL, V_TRUE, V_FLOAT, V_BIN, V_MAP, V_ARR};
    static const val bad_for_u64[] = {V_STR, V_NEG, V_NIL, V_TRUE, V_FLOAT, V_BIN, V_MAP, V_ARR};
    static const val bad_for_bin[] = {V_STR, V_INT, V_NEG, V_NIL, V_TRUE, V_FLOAT, V_MAP, V_ARR};
    static const struct {
        enum kind k;
        const char *kinds;
        const char *names[4];
    } env[] = {
        {K_REQUEST, "suub", {"method", "id", "timeout", "body"}},
        {K_REPLY, "uusb", {"id", "status", "message", "body"}},
    };
    mbuf b;

    for (size_t e = 0; e < 2; e++)
        for (int f = 0; f < 4; f++) {
            const val *bad;
            char kind = env[e].kinds[f];
            bad = kind == 's' ? bad_for_str : kind == 'u' ? bad_for_u64 : bad_for_bin;
            for (int i = 0; i < 8; i++) {
                mb_init(&b);
                pack_envelope(&b, env[e].kinds, f, bad[i]);
                expect_fail_mb(env[e].k, &b, env[e].names[f]);
                mb_fini(&b);
            }
            mb_init(&b); /* and the generator itself is right */
            pack_envelope(&b, env[e].kinds, f, V_GOOD);
            expect_ok_mb(env[e].k, &b);
            mb_fini(&b);
        }

    /* group name: not a string */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 1);
    mb_bin(&b, "g", 1);
    expect_fail_mb(K_GROUP_NAME, &b, "group name");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_int(&b.pk, 5);
    expect_fail_mb(K_GROUP_NAME, &b, "group name");
    mb_fini(&b);

    /* create: ranks not an array, a rank not an integer, a rank over INT64_MAX, no ranks */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 2);
    mb_str(&b, "g");
    msgpack_pack_map(&b.pk, 0);
    expect_fail_mb(K_CREATE, &b, "ranks");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 2);
    mb_str(&b, "g");
    msgpack_pack_array(&b.pk, 2);
    msgpack_pack_int(&b.pk, 0);
    mb_str(&b, "1");
    expect_fail_mb(K_CREATE, &b, "rank");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 2);
    mb_str(&b, "g");
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_double(&b.pk, 1.0);
    expect_fail_mb(K_CREATE, &b, "rank");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 2);
    mb_str(&b, "g");
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, (uint64_t)INT64_MAX + 1);
    expect_fail_mb(K_CREATE, &b, "rank");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 2);
    mb_str(&b, "g");
    msgpack_pack_array(&b.pk, 0);
    expect_fail_mb(K_CREATE, &b, "no ranks");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 2);
    msgpack_pack_int(&b.pk, 1);
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_int(&b.pk, 1);
    expect_fail_mb(K_CREATE, &b, "group name");
    mb_fini(&b);
}

/* A group message with a negative epoch, a negative rank, or a bad member field. */
static void
pack_group(mbuf *b, int bad)
{
    msgpack_pack_array(&b->pk, 3);
    mb_str(b, "g");
    if (bad == 1)
        msgpack_pack_int64(&b->pk, -3);
    else
        msgpack_pack_uint64(&b->pk, 3);
    if (bad == 2) {
        msgpack_pack_map(&b->pk, 0);
        return;
    }
    if (bad == 3) {
        msgpack_pack_array(&b->pk, 0);
        return;
    }
    msgpack_pack_array(&b->pk, 2);
    msgpack_pack_array(&b->pk, 4);
    msgpack_pack_int(&b->pk, 0);
    mb_str(b, "a");
    mb_str(b, "tcp://a:1");
    mb_str(b, "tcp://a:2");
    if (bad == 4) {
        mb_str(b, "not an array");
        return;
    }
    msgpack_pack_array(&b->pk, 4);
    if (bad == 5)
        msgpack_pack_int64(&b->pk, -1);
    else if (bad == 6)
        mb_str(b, "1");
    else
        msgpack_pack_int(&b->pk, 1);
    if (bad == 7)
        msgpack_pack_int(&b->pk, 1);
    else
        mb_str(b, "b");
    if (bad == 8)
        mb_bin(b, "tcp://b:1", 9);
    else
        mb_str(b, "tcp://b:1");
    if (bad == 9)
        msgpack_pack_nil(&b->pk);
    else
        mb_str(b, "tcp://b:2");
}

static void
test_wrong_field_types_group(void)
{
    static const char *const want[] = {NULL,     "epoch",    "members",     "no members",
                                       "member", "negative", "member rank", "worker",
                                       "url",    "data_url"};
    mbuf b;

    mb_init(&b);
    pack_group(&b, 0);
    expect_ok_mb(K_GROUP, &b);
    mb_fini(&b);
    for (int bad = 1; bad <= 9; bad++) {
        mb_init(&b);
        pack_group(&b, bad);
        expect_fail_mb(K_GROUP, &b, want[bad]);
        mb_fini(&b);
    }

    /* group list: an element not an array, a negative epoch, a size as a string */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 1);
    mb_str(&b, "g");
    expect_fail_mb(K_GROUP_LIST, &b, "group info");
    mb_fini(&b);
    for (int f = 0; f < 4; f++) {
        mb_init(&b);
        msgpack_pack_array(&b.pk, 1);
        msgpack_pack_array(&b.pk, 4);
        if (f == 0)
            msgpack_pack_int(&b.pk, 1);
        else
            mb_str(&b, "g");
        if (f == 1)
            msgpack_pack_int64(&b.pk, -1);
        else
            msgpack_pack_uint64(&b.pk, 1);
        if (f == 2)
            mb_str(&b, "2");
        else
            msgpack_pack_uint64(&b.pk, 2);
        if (f == 3)
            mb_bin(&b, "config", 6);
        else
            mb_str(&b, "config");
        expect_fail_mb(K_GROUP_LIST, &b, NULL);
        mb_fini(&b);
    }

    /* health: each field of the wrong type */
    for (int f = 0; f < 6; f++) {
        mb_init(&b);
        msgpack_pack_array(&b.pk, 6);
        for (int i = 0; i < 6; i++) {
            int is_str = i == 0 || i == 1 || i == 5;
            if (i == f && is_str) {
                msgpack_pack_int(&b.pk, 1);
            } else if (i == f) {
                msgpack_pack_int64(&b.pk, -1);
            } else if (is_str) {
                mb_str(&b, "x");
            } else {
                msgpack_pack_uint64(&b.pk, 1);
            }
        }
        expect_fail_mb(K_HEALTH, &b, NULL);
        mb_fini(&b);
    }
}

/* A request with method m (of n bytes). */
static void
pack_request_method(mbuf *b, const char *m, size_t n)
{
    msgpack_pack_array(&b->pk, 4);
    mb_strn(b, m, n);
    msgpack_pack_uint64(&b->pk, 1);
    msgpack_pack_uint64(&b->pk, 1);
    mb_bin(b, NULL, 0);
}

/* A reply with message m (of n bytes) and status st. */
static void
pack_reply(mbuf *b, const char *m, size_t n, uint64_t st)
{
    msgpack_pack_array(&b->pk, 4);
    msgpack_pack_uint64(&b->pk, 1);
    msgpack_pack_uint64(&b->pk, st);
    mb_strn(b, m, n);
    mb_bin(b, NULL, 0);
}

static void
pack_group_name(mbuf *b, const char *name, size_t n)
{
    msgpack_pack_array(&b->pk, 1);
    mb_strn(b, name, n);
}

static void
test_string_limits(void)
{
    char *s = repeat('a', 2000);
    char err[256];
    mbuf b;

    mb_init(&b);
    pack_request_method(&b, s, WIRE_METHOD_MAX);
    expect_ok_mb(K_REQUEST, &b);
    mb_fini(&b);
    mb_init(&b);
    pack_request_method(&b, s, WIRE_METHOD_MAX + 1);
    expect_fail_mb(K_REQUEST, &b, "64");
    mb_fini(&b);
    mb_init(&b);
    pack_request_method(&b, s, 0);
    expect_fail_mb(K_REQUEST, &b, "method");
    mb_fini(&b);

    mb_init(&b);
    pack_reply(&b, s, WIRE_MESSAGE_MAX, 1);
    expect_ok_mb(K_REPLY, &b);
    mb_fini(&b);
    mb_init(&b);
    pack_reply(&b, s, WIRE_MESSAGE_MAX + 1, 1);
    expect_fail_mb(K_REPLY, &b, "1024");
    mb_fini(&b);

    mb_init(&b);
    pack_group_name(&b, s, A2A_GROUP_NAME_MAX);
    expect_ok_mb(K_GROUP_NAME, &b);
    mb_fini(&b);
    for (size_t n = A2A_GROUP_NAME_MAX + 1; n <= 2000; n += 1872) {
        mb_init(&b);
        pack_group_name(&b, s, n);
        snprintf(err, sizeof(err), "%zu", n);
        expect_fail_mb(K_GROUP_NAME, &b, err);
        mb_fini(&b);
    }
    mb_init(&b);
    pack_group_name(&b, s, 0);
    expect_fail_mb(K_GROUP_NAME, &b, "empty");
    mb_fini(&b);

    /* a group name with a control character */
    mb_init(&b);
    pack_group_name(&b, "a\tb", 3);
    expect_fail_mb(K_GROUP_NAME, &b, NULL);
    mb_fini(&b);

    /* a create and a group list with a name over the limit */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 2);
    mb_strn(&b, s, A2A_GROUP_NAME_MAX + 1);
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_int(&b.pk, 0);
    expect_fail_mb(K_CREATE, &b, "128");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_array(&b.pk, 4);
    mb_strn(&b, s, A2A_GROUP_NAME_MAX + 1);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    mb_str(&b, "config");
    expect_fail_mb(K_GROUP_LIST, &b, "128");
    mb_fini(&b);

    /* group info origin over 15 bytes; health service over 31 */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 1);
    msgpack_pack_array(&b.pk, 4);
    mb_str(&b, "g");
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    mb_strn(&b, s, 16);
    expect_fail_mb(K_GROUP_LIST, &b, "origin");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 6);
    mb_strn(&b, s, 32);
    mb_str(&b, "n");
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    mb_str(&b, "c");
    expect_fail_mb(K_HEALTH, &b, "service");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 6);
    mb_str(&b, "worker");
    mb_str(&b, "n");
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    mb_strn(&b, s, CFG_PATH_MAX + 1);
    expect_fail_mb(K_HEALTH, &b, "config");
    mb_fini(&b);
    free(s);
}

static void
test_body_limit(void)
{
    size_t n = WIRE_BODY_MAX + 1;
    uint8_t *body = calloc(1, n);
    mbuf b;

    CU_ASSERT_PTR_NOT_NULL_FATAL(body);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 4);
    mb_str(&b, "Echo");
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    mb_bin(&b, body, n);
    expect_fail_mb(K_REQUEST, &b, "body");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 4);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 0);
    mb_str(&b, "");
    mb_bin(&b, body, n);
    expect_fail_mb(K_REPLY, &b, "body");
    mb_fini(&b);
    free(body);
}

static void
test_nul_in_string(void)
{
    mbuf b;

    mb_init(&b);
    pack_request_method(&b, "Ec\0ho", 5);
    expect_fail_mb(K_REQUEST, &b, "NUL");
    mb_fini(&b);
    mb_init(&b);
    pack_request_method(&b, "\0", 1);
    expect_fail_mb(K_REQUEST, &b, "NUL");
    mb_fini(&b);
    mb_init(&b);
    pack_reply(&b, "bad\0", 4, 2);
    expect_fail_mb(K_REPLY, &b, "NUL");
    mb_fini(&b);
    mb_init(&b);
    pack_group_name(&b, "g\0x", 3);
    expect_fail_mb(K_GROUP_NAME, &b, "NUL");
    mb_fini(&b);
    mb_init(&b);
    msgpack_pack_array(&b.pk, 6);
    mb_str(&b, "worker");
    mb_strn(&b, "n\0", 2);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    msgpack_pack_uint64(&b.pk, 1);
    mb_str(&b, "c");
    expect_fail_mb(K_HEALTH, &b, "NUL");
    mb_fini(&b);
}

static void
test_reply_status_range(void)
{
    const uint64_t bad[] = {
        A2A_STATUS_COUNT,        11,        127, 255, 65536, (uint64_t)INT64_MAX,
        (uint64_t)INT64_MAX + 1, UINT64_MAX};
    mbuf b;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        mb_init(&b);
        pack_reply(&b, "m", 1, bad[i]);
        expect_fail_mb(K_REPLY, &b, "status");
        mb_fini(&b);
    }
    for (uint64_t st = 0; st < A2A_STATUS_COUNT; st++) {
        mb_init(&b);
        pack_reply(&b, "m", 1, st);
        expect_ok_mb(K_REPLY, &b);
        mb_fini(&b);
    }
}

/*
 * Container and string headers that claim far more than the buffer holds:
 * each must fail without msgpack-c allocating (ASan would abort on a 100 GB
 * allocation).
 */
static void
test_huge_headers(void)
{
    static const struct {
        const char *bytes;
        size_t len;
    } heads[] = {
        {"\xdd\xff\xff\xff\xff", 5},     /* array32 of 2^32-1 */
        {"\xdf\xff\xff\xff\xff", 5},     /* map32 */
        {"\xdb\xff\xff\xff\xff", 5},     /* str32 */
        {"\xc6\xff\xff\xff\xff", 5},     /* bin32 */
        {"\xc9\xff\xff\xff\xff\x01", 6}, /* ext32 */
        {"\xdc\xff\xff", 3},             /* array16 */
        {"\xde\xff\xff", 3},             /* map16 */
        {"\xdd\x00\x01\x00\x00", 5},     /* array32 of 65536 */
        {"\x9f", 1},                     /* fixarray of 15 */
    };
    for (size_t h = 0; h < sizeof(heads) / sizeof(heads[0]); h++)
        for (int k = 0; k < K_COUNT; k++) {
            mbuf b;

            expect_fail((enum kind)k, heads[h].bytes, heads[h].len, NULL);

            /* the same header as the last field of a request, and in a list */
            mb_init(&b);
            msgpack_pack_array(&b.pk, 4);
            mb_str(&b, "Echo");
            msgpack_pack_uint64(&b.pk, 1);
            msgpack_pack_uint64(&b.pk, 1);
            mb_raw(&b, heads[h].bytes, heads[h].len);
            expect_fail_mb((enum kind)k, &b, NULL);
            mb_fini(&b);
            mb_init(&b);
            msgpack_pack_array(&b.pk, 1);
            mb_raw(&b, heads[h].bytes, heads[h].len);
            expect_fail_mb((enum kind)k, &b, NULL);
            mb_fini(&b);
        }
}

static void
nest(mbuf *b, size_t depth)
{
    for (size_t i = 0; i + 1 < depth; i++)
        msgpack_pack_array(&b->pk, 1);
    msgpack_pack_array(&b->pk, 0);
}

static void
test_depth(void)
{
    static const size_t deep[] = {WIRE_MAX_DEPTH + 2, WIRE_MAX_DEPTH + 10, 1000, 200000};
    msgpack_object root;
    msgpack_zone zone;
    char err[256];
    mbuf b;

    /* as deep as the limit: parses */
    mb_init(&b);
    nest(&b, WIRE_MAX_DEPTH + 1);
    msgpack_zone_init(&zone, 256);
    CU_ASSERT_EQUAL(
        wire_parse(&root, &zone, (const uint8_t *)b.sb.data, b.sb.size, err, sizeof(err)), 0);
    msgpack_zone_destroy(&zone);
    mb_fini(&b);

    for (size_t d = 0; d < sizeof(deep) / sizeof(deep[0]); d++) {
        mb_init(&b);
        nest(&b, deep[d]);
        msgpack_zone_init(&zone, 256);
        CU_ASSERT_NOT_EQUAL(
            wire_parse(&root, &zone, (const uint8_t *)b.sb.data, b.sb.size, err, sizeof(err)), 0);
        msgpack_zone_destroy(&zone);
        for (int k = 0; k < K_COUNT; k++)
            expect_fail_mb((enum kind)k, &b, NULL);
        mb_fini(&b);

        /* deep nesting inside a field, and inside maps */
        mb_init(&b);
        msgpack_pack_array(&b.pk, 4);
        mb_str(&b, "Echo");
        msgpack_pack_uint64(&b.pk, 1);
        msgpack_pack_uint64(&b.pk, 1);
        nest(&b, deep[d]);
        expect_fail_mb(K_REQUEST, &b, "deep");
        mb_fini(&b);
        mb_init(&b);
        for (size_t i = 0; i < deep[d]; i++) {
            msgpack_pack_map(&b.pk, 1);
            msgpack_pack_int(&b.pk, 0);
        }
        msgpack_pack_nil(&b.pk);
        expect_fail_mb(K_GROUP_LIST, &b, NULL);
        mb_fini(&b);
    }
}

static void
test_reserved_byte(void)
{
    mbuf b;

    for (int k = 0; k < K_COUNT; k++) {
        expect_fail((enum kind)k, "\xc1", 1, NULL);
        mb_init(&b);
        msgpack_pack_array(&b.pk, 4);
        mb_raw(&b, "\xc1", 1);
        msgpack_pack_uint64(&b.pk, 1);
        msgpack_pack_uint64(&b.pk, 1);
        mb_bin(&b, "x", 1);
        expect_fail_mb((enum kind)k, &b, NULL);
        mb_fini(&b);
        /* 0xc1 as the last byte, in place of the body */
        mb_init(&b);
        msgpack_pack_array(&b.pk, 4);
        mb_str(&b, "Echo");
        msgpack_pack_uint64(&b.pk, 1);
        msgpack_pack_uint64(&b.pk, 1);
        mb_raw(&b, "\xc1", 1);
        expect_fail_mb((enum kind)k, &b, NULL);
        mb_fini(&b);
    }
}

static void
test_ext_types(void)
{
    static const struct {
        const char *bytes;
        size_t len;
    } exts[] = {
        {"\xd4\x01\x41", 3},             /* fixext1 */
        {"\xd5\x01\x41\x42", 4},         /* fixext2 */
        {"\xd6\xff\x00\x00\x00\x00", 6}, /* timestamp32 */
        {"\xc7\x04\x05"
         "Echo",
         7}, /* ext8 */
        {"\xc8\x00\x04\x05"
         "Echo",
         8}, /* ext16 */
        {"\xc9\x00\x00\x00\x04\x05"
         "Echo",
         10}, /* ext32 */
    };
    for (size_t e = 0; e < sizeof(exts) / sizeof(exts[0]); e++) {
        mbuf b;

        /* where a method, a message, a group name and a body are expected */
        mb_init(&b);
        msgpack_pack_array(&b.pk, 4);
        mb_raw(&b, exts[e].bytes, exts[e].len);
        msgpack_pack_uint64(&b.pk, 1);
        msgpack_pack_uint64(&b.pk, 1);
        mb_bin(&b, "x", 1);
        expect_fail_mb(K_REQUEST, &b, "method");
        mb_fini(&b);
        mb_init(&b);
        msgpack_pack_array(&b.pk, 4);
        msgpack_pack_uint64(&b.pk, 1);
        msgpack_pack_uint64(&b.pk, 1);
        mb_raw(&b, exts[e].bytes, exts[e].len);
        mb_bin(&b, "x", 1);
        expect_fail_mb(K_REPLY, &b, "message");
        mb_fini(&b);
        mb_init(&b);
        msgpack_pack_array(&b.pk, 1);
        mb_raw(&b, exts[e].bytes, exts[e].len);
        expect_fail_mb(K_GROUP_NAME, &b, "group name");
        mb_fini(&b);
        mb_init(&b);
        msgpack_pack_array(&b.pk, 4);
        mb_str(&b, "Echo");
        msgpack_pack_uint64(&b.pk, 1);
        msgpack_pack_uint64(&b.pk, 1);
        mb_raw(&b, exts[e].bytes, exts[e].len);
        expect_fail_mb(K_REQUEST, &b, "body");
        mb_fini(&b);
        /* truncated ext */
        for (size_t cut = 1; cut < exts[e].len; cut++) {
            mb_init(&b);
            msgpack_pack_array(&b.pk, 1);
            mb_raw(&b, exts[e].bytes, cut);
            expect_fail_mb(K_GROUP_NAME, &b, NULL);
            mb_fini(&b);
        }
    }
}

static void
test_limits_on_counts(void)
{
    mbuf b;

    /* create with one rank more than the limit */
    mb_init(&b);
    msgpack_pack_array(&b.pk, 2);
    mb_str(&b, "g");
    pack_ints(&b, WIRE_MAX_MEMBERS + 1);
    expect_fail_mb(K_CREATE, &b, "limit");
    mb_fini(&b);
    /* a group list with one group more than the limit (nil entries) */
    mb_init(&b);
    msgpack_pack_array(&b.pk, WIRE_MAX_GROUPS + 1);
    for (unsigned i = 0; i < WIRE_MAX_GROUPS + 1; i++)
        msgpack_pack_nil(&b.pk);
    expect_fail_mb(K_GROUP_LIST, &b, "limit");
    mb_fini(&b);
}

/* The field helpers on hand-made objects. */
static void
test_field_helpers(void)
{
    msgpack_object o;
    char dst[8], err[128];
    uint64_t u;
    int64_t i;
    const uint8_t *p;
    size_t n;

    memset(&o, 0, sizeof(o));
    o.type = MSGPACK_OBJECT_STR;
    o.via.str.ptr = "abcdefg";
    o.via.str.size = 7;
    CU_ASSERT_EQUAL(wire_str(dst, 7, &o, "s", err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(dst, "abcdefg");
    CU_ASSERT_NOT_EQUAL(wire_str(dst, 6, &o, "s", err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "7"));
    o.via.str.size = 0;
    CU_ASSERT_EQUAL(wire_str(dst, 7, &o, "s", err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(dst, "");

    o.type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
    o.via.i64 = INT64_MIN;
    CU_ASSERT_EQUAL(wire_i64(&i, &o, "i", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(i, INT64_MIN);
    CU_ASSERT_NOT_EQUAL(wire_u64(&u, &o, "u", err, sizeof(err)), 0);
    o.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
    o.via.u64 = UINT64_MAX;
    CU_ASSERT_EQUAL(wire_u64(&u, &o, "u", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(u, UINT64_MAX);
    CU_ASSERT_NOT_EQUAL(wire_i64(&i, &o, "i", err, sizeof(err)), 0);
    o.via.u64 = INT64_MAX;
    CU_ASSERT_EQUAL(wire_i64(&i, &o, "i", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(i, INT64_MAX);
    o.type = MSGPACK_OBJECT_FLOAT64;
    o.via.f64 = 1.0;
    CU_ASSERT_NOT_EQUAL(wire_i64(&i, &o, "i", err, sizeof(err)), 0);
    CU_ASSERT_NOT_EQUAL(wire_u64(&u, &o, "u", err, sizeof(err)), 0);
    CU_ASSERT_NOT_EQUAL(wire_bin(&p, &n, 10, &o, "b", err, sizeof(err)), 0);
    CU_ASSERT_NOT_EQUAL(wire_array(&o, 0, 0, "a", err, sizeof(err)), 0);

    o.type = MSGPACK_OBJECT_BIN;
    o.via.bin.ptr = "xyz";
    o.via.bin.size = 3;
    CU_ASSERT_EQUAL(wire_bin(&p, &n, 3, &o, "b", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT_PTR_EQUAL(p, (const uint8_t *)o.via.bin.ptr);
    CU_ASSERT_NOT_EQUAL(wire_bin(&p, &n, 2, &o, "b", err, sizeof(err)), 0);
    CU_ASSERT_NOT_EQUAL(wire_str(dst, 7, &o, "s", err, sizeof(err)), 0);

    o.type = MSGPACK_OBJECT_ARRAY;
    o.via.array.size = 3;
    o.via.array.ptr = NULL;
    CU_ASSERT_EQUAL(wire_array(&o, 3, 0, "a", err, sizeof(err)), 0);
    CU_ASSERT_NOT_EQUAL(wire_array(&o, 2, 0, "a", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(wire_array(&o, -1, 3, "a", err, sizeof(err)), 0);
    CU_ASSERT_NOT_EQUAL(wire_array(&o, -1, 2, "a", err, sizeof(err)), 0);
}

/* AllToAllV carries the job's operation number and failed flag; the reply the next number */
static void
test_a2av_round_trip(void)
{
    msgpack_sbuffer sb;
    wire_a2av a;
    int64_t next;
    char err[256];

    msgpack_sbuffer_init(&sb);
    encode_valid(K_A2AV, &sb);
    CU_ASSERT_EQUAL_FATAL(wire_a2av_decode(&a, (const uint8_t *)sb.data, sb.size, err, sizeof(err)),
                          0);
    CU_ASSERT_STRING_EQUAL(a.group, "experts_even");
    CU_ASSERT_EQUAL(a.n, 2);
    CU_ASSERT_EQUAL(a.counts[7], 2);
    CU_ASSERT_EQUAL(a.op_next, 41);
    CU_ASSERT_EQUAL(a.op_failed, 1);
    wire_a2av_fini(&a);
    msgpack_sbuffer_destroy(&sb);
    /* -1 (no number yet) and -1 - k (k calls before, none numbered) are fine, below
     * WIRE_OP_NEXT_MIN is not; the flag is 0 or 1 */
    for (int i = 0; i < 4; i++) {
        int64_t counts[4] = {1, 0, 1, 0};
        wire_a2av b = {.group = "g",
                       .n = 1,
                       .counts = counts,
                       .op_next = i == 0   ? -1
                                  : i == 3 ? WIRE_OP_NEXT_MIN
                                  : i == 1 ? WIRE_OP_NEXT_MIN - 1
                                           : 5,
                       .op_failed = i == 2 ? 3 : 0};
        msgpack_sbuffer_init(&sb);
        CU_ASSERT_EQUAL(wire_a2av_encode(&sb, &b), 0);
        CU_ASSERT_EQUAL(wire_a2av_decode(&a, (const uint8_t *)sb.data, sb.size, err, sizeof(err)),
                        i == 0 || i == 3 ? 0 : -1);
        if (i == 0 || i == 3)
            wire_a2av_fini(&a);
        else
            CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of range"));
        msgpack_sbuffer_destroy(&sb);
    }
    msgpack_sbuffer_init(&sb);
    encode_valid(K_A2AV_REPLY, &sb);
    CU_ASSERT_EQUAL(
        wire_a2av_reply_decode(&next, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(next, 42);
    msgpack_sbuffer_destroy(&sb);
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL(wire_a2av_reply_encode(&sb, -3), 0);
    CU_ASSERT_EQUAL(
        wire_a2av_reply_decode(&next, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), -1);
    msgpack_sbuffer_destroy(&sb);
    /* with the counts a discovering call received: decoded either way; with counts asked for,
     * only exactly n non-negative ones */
    int64_t got[3] = {0}, sent[3] = {4, 0, 9};
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL(wire_a2av_reply_encode_counts(&sb, 5, 3, sent), 0);
    CU_ASSERT_EQUAL(wire_a2av_reply_decode_counts(&next, got, 3, (const uint8_t *)sb.data, sb.size,
                                                  err, sizeof(err)),
                    0);
    CU_ASSERT_EQUAL(next, 5);
    CU_ASSERT(got[0] == 4 && got[1] == 0 && got[2] == 9);
    CU_ASSERT_EQUAL(
        wire_a2av_reply_decode(&next, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(wire_a2av_reply_decode_counts(&next, got, 2, (const uint8_t *)sb.data, sb.size,
                                                  err, sizeof(err)),
                    -1);
    msgpack_sbuffer_destroy(&sb);
    sent[1] = -1;
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL(wire_a2av_reply_encode_counts(&sb, 5, 3, sent), 0);
    CU_ASSERT_EQUAL(wire_a2av_reply_decode_counts(&next, got, 3, (const uint8_t *)sb.data, sb.size,
                                                  err, sizeof(err)),
                    -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "negative"));
    msgpack_sbuffer_destroy(&sb);
    msgpack_sbuffer_init(&sb); /* [next] alone when counts are asked for */
    CU_ASSERT_EQUAL(wire_a2av_reply_encode(&sb, 5), 0);
    CU_ASSERT_EQUAL(wire_a2av_reply_decode_counts(&next, got, 3, (const uint8_t *)sb.data, sb.size,
                                                  err, sizeof(err)),
                    -1);
    msgpack_sbuffer_destroy(&sb);
}

/* the job-facing bodies: job id (rank only), Hello and Attach replies, buffers, remote calls */
static void
test_job_bodies_round_trip(void)
{
    msgpack_sbuffer sb;
    char err[256];
    wire_job_id j = {.world_rank = 7}, j2;
    wire_hello_reply h = {.worker = "node-a", .world_size = 4, .socket = "/run/a2a/a.sock"}, h2;
    wire_attach_reply a = {.worker = "node-a",
                           .world_size = 4,
                           .pid = 42,
                           .uid = 10002,
                           .session = 9},
                      a2;
    wire_buffer b = {.addr = 0x7f0000001000ULL, .len = 65536}, b2;
    static const uint8_t data[5] = {1, 2, 3, 4, 5};
    wire_remote r = {.session = 3,
                     .key = {11, 12},
                     .slot = 2,
                     .offset = 4096,
                     .len = 5,
                     .data = data,
                     .data_len = sizeof(data)},
                r2;

    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL(wire_job_id_encode(&sb, &j), 0);
    CU_ASSERT_EQUAL_FATAL(wire_job_id_decode(&j2, (uint8_t *)sb.data, sb.size, err, sizeof(err)),
                          0);
    CU_ASSERT_EQUAL(j2.world_rank, 7);
    CU_ASSERT_PTR_NULL(j2.sess); /* never from the wire */
    msgpack_sbuffer_clear(&sb);
    CU_ASSERT_EQUAL(wire_hello_reply_encode(&sb, &h), 0);
    CU_ASSERT_EQUAL_FATAL(
        wire_hello_reply_decode(&h2, (uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(h2.worker, "node-a");
    CU_ASSERT_EQUAL(h2.world_size, 4);
    CU_ASSERT_STRING_EQUAL(h2.socket, "/run/a2a/a.sock");
    msgpack_sbuffer_clear(&sb);
    CU_ASSERT_EQUAL(wire_attach_reply_encode(&sb, &a), 0);
    CU_ASSERT_EQUAL_FATAL(
        wire_attach_reply_decode(&a2, (uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT(a2.pid == 42 && a2.uid == 10002 && a2.session == 9 && a2.world_size == 4);
    msgpack_sbuffer_clear(&sb);
    CU_ASSERT_EQUAL(wire_buffer_encode(&sb, &b), 0);
    CU_ASSERT_EQUAL_FATAL(wire_buffer_decode(&b2, (uint8_t *)sb.data, sb.size, err, sizeof(err)),
                          0);
    CU_ASSERT(b2.addr == b.addr && b2.len == b.len);
    msgpack_sbuffer_clear(&sb);
    CU_ASSERT_EQUAL(wire_remote_encode(&sb, &r), 0);
    CU_ASSERT_EQUAL_FATAL(wire_remote_decode(&r2, (uint8_t *)sb.data, sb.size, err, sizeof(err)),
                          0);
    CU_ASSERT(r2.session == 3 && r2.key[0] == 11 && r2.key[1] == 12 && r2.slot == 2);
    CU_ASSERT(r2.offset == 4096 && r2.len == 5 && r2.data_len == 5);
    CU_ASSERT(memcmp(r2.data, data, 5) == 0);
    /* the old job id, which stated a pid and an address, is refused */
    msgpack_sbuffer_clear(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 5);
    for (int i = 0; i < 5; i++)
        msgpack_pack_int64(&pk, i);
    CU_ASSERT_EQUAL(wire_job_id_decode(&j2, (uint8_t *)sb.data, sb.size, err, sizeof(err)), -1);
    msgpack_sbuffer_destroy(&sb);
}

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"request round trip", test_request_round_trip},
        {"reply round trip", test_reply_round_trip},
        {"group name round trip", test_group_name_round_trip},
        {"create round trip", test_create_round_trip},
        {"group round trip", test_group_round_trip},
        {"group list round trip", test_group_list_round_trip},
        {"health round trip", test_health_round_trip},
        {"empty round trip", test_empty_round_trip},
        {"AllToAllV round trip", test_a2av_round_trip},
        {"valid messages", test_valid_messages},
        {"empty buffer", test_empty_buffer},
        {"truncated at every byte", test_truncated},
        {"trailing bytes", test_trailing_bytes},
        {"wrong top-level type", test_wrong_top_level_type},
        {"wrong field count", test_wrong_field_count},
        {"wrong field types (envelopes)", test_wrong_field_types},
        {"wrong field types (bodies)", test_wrong_field_types_group},
        {"string limits", test_string_limits},
        {"body limit", test_body_limit},
        {"NUL in a string", test_nul_in_string},
        {"reply status out of range", test_reply_status_range},
        {"huge container headers", test_huge_headers},
        {"nesting depth", test_depth},
        {"reserved byte 0xc1", test_reserved_byte},
        {"ext where a string is expected", test_ext_types},
        {"limits on counts", test_limits_on_counts},
        {"field helpers", test_field_helpers},
        {"job bodies round trip", test_job_bodies_round_trip},
    };
    return cu_main("wire", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
