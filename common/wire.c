/* wire.c - the msgpack codec of the control messages. */
#include "wire.h"

#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a bounds scan before msgpack-c allocates ---- */

/*
 * wire_scan walks one msgpack object at buf[*pos..len) without allocating:
 * it checks that every string, bin and ext fits in the bytes left and that
 * every array or map claims no more items than bytes left (each item takes
 * at least one byte), so that a 5-byte header cannot make msgpack-c
 * allocate gigabytes. Returns 0 and advances *pos, or -1.
 */
static int
wire_scan(const uint8_t *buf, size_t len, size_t *pos, int depth)
{
    uint64_t items = 0, skip = 0;
    size_t p = *pos;
    uint8_t t;

    if (depth > WIRE_MAX_DEPTH || p >= len)
        return -1;
    t = buf[p++];
#define NEED(k)                    \
    do {                           \
        if (len - p < (size_t)(k)) \
            return -1;             \
    } while (0)
#define BE(k, v)                         \
    do {                                 \
        NEED(k);                         \
        v = 0;                           \
        for (int i_ = 0; i_ < (k); i_++) \
            v = (v << 8) | buf[p++];     \
    } while (0)
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
        skip = 0;
    } else if (t >= 0x80 && t <= 0x8f) {
        items = 2u * (t & 0x0f);
    } else if (t >= 0x90 && t <= 0x9f) {
        items = t & 0x0f;
    } else if (t >= 0xa0 && t <= 0xbf) {
        skip = t & 0x1f;
    } else {
        switch (t) {
        case 0xc4:
        case 0xd9: BE(1, skip); break; /* bin8, str8 */
        case 0xc5:
        case 0xda: BE(2, skip); break; /* bin16, str16 */
        case 0xc6:
        case 0xdb: BE(4, skip); break; /* bin32, str32 */
        case 0xc7:
            BE(1, skip);
            skip += 1;
            break; /* ext8: type byte */
        case 0xc8:
            BE(2, skip);
            skip += 1;
            break;
        case 0xc9:
            BE(4, skip);
            skip += 1;
            break;
        case 0xca: skip = 4; break; /* float32 */
        case 0xcb: skip = 8; break; /* float64 */
        case 0xcc:
        case 0xd0: skip = 1; break;
        case 0xcd:
        case 0xd1: skip = 2; break;
        case 0xce:
        case 0xd2: skip = 4; break;
        case 0xcf:
        case 0xd3: skip = 8; break;
        case 0xd4: skip = 2; break; /* fixext1..16 */
        case 0xd5: skip = 3; break;
        case 0xd6: skip = 5; break;
        case 0xd7: skip = 9; break;
        case 0xd8: skip = 17; break;
        case 0xdc: BE(2, items); break; /* array16 */
        case 0xdd: BE(4, items); break; /* array32 */
        case 0xde:
            BE(2, items);
            items *= 2;
            break; /* map16 */
        case 0xdf:
            BE(4, items);
            items *= 2;
            break;          /* map32 */
        default: return -1; /* 0xc1: never used */
        }
    }
    NEED(skip);
    p += skip;
    if (items > len - p)
        return -1;
    for (uint64_t i = 0; i < items; i++)
        if (wire_scan(buf, len, &p, depth + 1) != 0)
            return -1;
#undef NEED
#undef BE
    *pos = p;
    return 0;
}

int
wire_parse(msgpack_object *root, msgpack_zone *zone, const uint8_t *buf, size_t len, char *err,
           size_t errlen)
{
    size_t pos = 0, off = 0;
    msgpack_unpack_return r;

    if (buf == NULL || len == 0)
        return msg_fail(err, errlen, "empty message");
    if (wire_scan(buf, len, &pos, 0) != 0)
        return msg_fail(err, errlen, "malformed msgpack (truncated, too deep or bad lengths)");
    if (pos != len)
        return msg_fail(err, errlen, "%zu trailing bytes after the message", len - pos);
    r = msgpack_unpack((const char *)buf, len, &off, zone, root);
    if (r != MSGPACK_UNPACK_SUCCESS || off != len)
        return msg_fail(err, errlen, "malformed msgpack (unpack returned %d)", (int)r);
    return 0;
}

int
wire_array(const msgpack_object *o, int64_t n, size_t max, const char *what, char *err,
           size_t errlen)
{
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return msg_fail(err, errlen, "%s: expected an array", what);
    if (n >= 0 && o->via.array.size != (uint64_t)n)
        return msg_fail(err, errlen, "%s: expected %lld fields, got %u", what, (long long)n,
                        o->via.array.size);
    if (n < 0 && o->via.array.size > max)
        return msg_fail(err, errlen, "%s: %u items, more than the limit %zu", what,
                        o->via.array.size, max);
    return 0;
}

int
wire_str(char *dst, size_t max, const msgpack_object *o, const char *what, char *err, size_t errlen)
{
    if (o->type != MSGPACK_OBJECT_STR)
        return msg_fail(err, errlen, "%s: expected a string", what);
    if (o->via.str.size > max)
        return msg_fail(err, errlen, "%s: %u bytes, more than the limit %zu", what, o->via.str.size,
                        max);
    if (o->via.str.size > 0 && memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL)
        return msg_fail(err, errlen, "%s: contains a NUL byte", what);
    if (o->via.str.size > 0)
        memcpy(dst, o->via.str.ptr, o->via.str.size);
    dst[o->via.str.size] = '\0';
    return 0;
}

int
wire_u64(uint64_t *v, const msgpack_object *o, const char *what, char *err, size_t errlen)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return msg_fail(err, errlen, "%s: expected a non-negative integer", what);
    *v = o->via.u64;
    return 0;
}

int
wire_i64(int64_t *v, const msgpack_object *o, const char *what, char *err, size_t errlen)
{
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *v = o->via.i64;
        return 0;
    }
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > INT64_MAX)
        return msg_fail(err, errlen, "%s: expected an int64", what);
    *v = (int64_t)o->via.u64;
    return 0;
}

int
wire_bin(const uint8_t **p, size_t *len, size_t max, const msgpack_object *o, const char *what,
         char *err, size_t errlen)
{
    if (o->type != MSGPACK_OBJECT_BIN)
        return msg_fail(err, errlen, "%s: expected bin", what);
    if (o->via.bin.size > max)
        return msg_fail(err, errlen, "%s: %u bytes, more than the limit %zu", what, o->via.bin.size,
                        max);
    *p = (const uint8_t *)o->via.bin.ptr;
    *len = o->via.bin.size;
    return 0;
}

/* ---- packing helpers ---- */

static int
pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    if (msgpack_pack_str(pk, n) != 0)
        return -1;
    return msgpack_pack_str_body(pk, s, n);
}

static int
pack_bin(msgpack_packer *pk, const uint8_t *p, size_t n)
{
    if (msgpack_pack_bin(pk, n) != 0)
        return -1;
    return n == 0 ? 0 : msgpack_pack_bin_body(pk, p, n);
}

/*
 * A decoder's frame: the zone and root object, with the top-level array
 * checked to hold n fields.
 */
typedef struct {
    msgpack_zone zone;
    msgpack_object root;
    const msgpack_object *f; /* the fields */
} wire_frame;

static int
frame_open(wire_frame *fr, const uint8_t *buf, size_t len, uint32_t n, const char *what, char *err,
           size_t errlen)
{
    msgpack_zone_init(&fr->zone, 256);
    if (wire_parse(&fr->root, &fr->zone, buf, len, err, errlen) != 0 ||
        wire_array(&fr->root, n, 0, what, err, errlen) != 0) {
        msgpack_zone_destroy(&fr->zone);
        return -1;
    }
    fr->f = fr->root.via.array.ptr;
    return 0;
}

static void
frame_close(wire_frame *fr)
{
    msgpack_zone_destroy(&fr->zone);
}

/* ---- envelopes ---- */

int
wire_request_encode(msgpack_sbuffer *sb, const wire_request *r)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, 4) != 0 || pack_str(&pk, r->method) != 0 ||
        msgpack_pack_uint64(&pk, r->id) != 0 || msgpack_pack_uint64(&pk, r->timeout_ms) != 0 ||
        pack_bin(&pk, r->body, r->body_len) != 0)
        return -1;
    return 0;
}

int
wire_request_decode(wire_request *r, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    int rc = -1;

    memset(r, 0, sizeof(*r));
    if (frame_open(&fr, buf, len, 4, "request", err, errlen) != 0)
        return -1;
    if (wire_str(r->method, WIRE_METHOD_MAX, &fr.f[0], "request method", err, errlen) != 0 ||
        wire_u64(&r->id, &fr.f[1], "request id", err, errlen) != 0 ||
        wire_u64(&r->timeout_ms, &fr.f[2], "request timeout", err, errlen) != 0 ||
        wire_bin(&r->body, &r->body_len, WIRE_BODY_MAX, &fr.f[3], "request body", err, errlen) != 0)
        goto out;
    if (r->method[0] == '\0') {
        msg_fail(err, errlen, "request method: empty");
        goto out;
    }
    rc = 0;
out:
    frame_close(&fr);
    return rc;
}

int
wire_reply_encode(msgpack_sbuffer *sb, const wire_reply *r)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, 4) != 0 || msgpack_pack_uint64(&pk, r->id) != 0 ||
        msgpack_pack_int(&pk, (int)r->status) != 0 || pack_str(&pk, r->message) != 0 ||
        pack_bin(&pk, r->body, r->body_len) != 0)
        return -1;
    return 0;
}

int
wire_reply_decode(wire_reply *r, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    uint64_t st;
    int rc = -1;

    memset(r, 0, sizeof(*r));
    if (frame_open(&fr, buf, len, 4, "reply", err, errlen) != 0)
        return -1;
    if (wire_u64(&r->id, &fr.f[0], "reply id", err, errlen) != 0 ||
        wire_u64(&st, &fr.f[1], "reply status", err, errlen) != 0 ||
        wire_str(r->message, WIRE_MESSAGE_MAX, &fr.f[2], "reply message", err, errlen) != 0 ||
        wire_bin(&r->body, &r->body_len, WIRE_BODY_MAX, &fr.f[3], "reply body", err, errlen) != 0)
        goto out;
    if (st > INT64_MAX || !status_valid((int64_t)st)) {
        msg_fail(err, errlen, "reply status: %llu is not a status", (unsigned long long)st);
        goto out;
    }
    r->status = (a2a_status)st;
    rc = 0;
out:
    frame_close(&fr);
    return rc;
}

/* ---- coordinator bodies ---- */

int
wire_group_name_encode(msgpack_sbuffer *sb, const char *name)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return msgpack_pack_array(&pk, 1) != 0 || pack_str(&pk, name) != 0 ? -1 : 0;
}

/*
 * group_name_field reads a group name; one byte over the limit is read so
 * that an over-long name is INVALID_ARGUMENT with its length, not a codec
 * error, and the check itself is cfg_check_group_name's.
 */
static int
group_name_field(char *dst, const msgpack_object *o, char *err, size_t errlen)
{
    if (o->type == MSGPACK_OBJECT_STR && o->via.str.size > A2A_GROUP_NAME_MAX)
        return msg_fail(err, errlen, "group name is %u bytes, longer than the limit of %d",
                        o->via.str.size, A2A_GROUP_NAME_MAX);
    if (wire_str(dst, A2A_GROUP_NAME_MAX, o, "group name", err, errlen) != 0)
        return -1;
    return cfg_check_group_name(dst, strlen(dst), err, errlen);
}

int
wire_group_name_decode(wire_group_name *g, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    int rc;

    memset(g, 0, sizeof(*g));
    if (frame_open(&fr, buf, len, 1, "group name message", err, errlen) != 0)
        return -1;
    rc = group_name_field(g->name, &fr.f[0], err, errlen);
    frame_close(&fr);
    return rc;
}

/* ranks_decode reads an array of at most WIRE_MAX_MEMBERS world ranks into a malloc'd array. */
static int
ranks_decode(int64_t **ranks, size_t *n, const msgpack_object *a, char *err, size_t errlen)
{
    if (wire_array(a, -1, WIRE_MAX_MEMBERS, "ranks", err, errlen) != 0)
        return -1;
    *n = 0;
    *ranks = NULL;
    if (a->via.array.size == 0)
        return 0;
    if ((*ranks = calloc(a->via.array.size, sizeof(int64_t))) == NULL)
        return msg_fail(err, errlen, "out of memory");
    *n = a->via.array.size;
    for (size_t i = 0; i < *n; i++)
        if (wire_i64(&(*ranks)[i], &a->via.array.ptr[i], "rank", err, errlen) != 0)
            return -1;
    return 0;
}

int
wire_create_encode(msgpack_sbuffer *sb, const char *name, size_t n, const int64_t *ranks)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, 2) != 0 || pack_str(&pk, name) != 0 ||
        msgpack_pack_array(&pk, n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (msgpack_pack_int64(&pk, ranks[i]) != 0)
            return -1;
    return 0;
}

int
wire_create_decode(wire_create *c, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    int rc = -1;

    memset(c, 0, sizeof(*c));
    if (frame_open(&fr, buf, len, 2, "CreateGroup", err, errlen) != 0)
        return -1;
    if (group_name_field(c->name, &fr.f[0], err, errlen) != 0 ||
        ranks_decode(&c->ranks, &c->n, &fr.f[1], err, errlen) != 0)
        goto out;
    if (c->n == 0) {
        msg_fail(err, errlen, "group \"%s\" has no ranks", c->name);
        goto out;
    }
    rc = 0;
out:
    if (rc != 0)
        wire_create_fini(c);
    frame_close(&fr);
    return rc;
}

void
wire_create_fini(wire_create *c)
{
    free(c->ranks);
    c->ranks = NULL;
    c->n = 0;
}

int
wire_group_encode(msgpack_sbuffer *sb, const wire_group *g)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, 3) != 0 || pack_str(&pk, g->name) != 0 ||
        msgpack_pack_uint64(&pk, g->epoch) != 0 || msgpack_pack_array(&pk, g->n) != 0)
        return -1;
    for (size_t i = 0; i < g->n; i++) {
        const wire_member *m = &g->members[i];
        if (msgpack_pack_array(&pk, 4) != 0 || msgpack_pack_int64(&pk, m->world_rank) != 0 ||
            pack_str(&pk, m->worker) != 0 || pack_str(&pk, m->url) != 0 ||
            pack_str(&pk, m->data_url) != 0)
            return -1;
    }
    return 0;
}

static int
member_decode(wire_member *m, const msgpack_object *o, char *err, size_t errlen)
{
    const msgpack_object *f;
    if (wire_array(o, 4, 0, "member", err, errlen) != 0)
        return -1;
    f = o->via.array.ptr;
    if (wire_i64(&m->world_rank, &f[0], "member rank", err, errlen) != 0 ||
        wire_str(m->worker, CFG_WORKER_NAME_MAX, &f[1], "member worker", err, errlen) != 0 ||
        wire_str(m->url, CFG_URL_MAX, &f[2], "member url", err, errlen) != 0 ||
        wire_str(m->data_url, CFG_URL_MAX, &f[3], "member data_url", err, errlen) != 0)
        return -1;
    if (m->world_rank < 0)
        return msg_fail(err, errlen, "member rank %lld is negative", (long long)m->world_rank);
    return 0;
}

int
wire_group_decode(wire_group *g, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    const msgpack_object *a;
    int rc = -1;

    memset(g, 0, sizeof(*g));
    if (frame_open(&fr, buf, len, 3, "group", err, errlen) != 0)
        return -1;
    a = &fr.f[2];
    if (group_name_field(g->name, &fr.f[0], err, errlen) != 0 ||
        wire_u64(&g->epoch, &fr.f[1], "group epoch", err, errlen) != 0 ||
        wire_array(a, -1, WIRE_MAX_MEMBERS, "group members", err, errlen) != 0)
        goto out;
    if (a->via.array.size == 0) {
        msg_fail(err, errlen, "group \"%s\" has no members", g->name);
        goto out;
    }
    g->members = calloc(a->via.array.size, sizeof(*g->members));
    if (g->members == NULL) {
        msg_fail(err, errlen, "out of memory");
        goto out;
    }
    g->n = a->via.array.size;
    for (size_t i = 0; i < g->n; i++)
        if (member_decode(&g->members[i], &a->via.array.ptr[i], err, errlen) != 0)
            goto out;
    rc = 0;
out:
    if (rc != 0)
        wire_group_fini(g);
    frame_close(&fr);
    return rc;
}

void
wire_group_fini(wire_group *g)
{
    free(g->members);
    g->members = NULL;
    g->n = 0;
}

int
wire_group_list_encode(msgpack_sbuffer *sb, const wire_group_list *l)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, l->n) != 0)
        return -1;
    for (size_t i = 0; i < l->n; i++) {
        const wire_group_info *g = &l->groups[i];
        if (msgpack_pack_array(&pk, 4) != 0 || pack_str(&pk, g->name) != 0 ||
            msgpack_pack_uint64(&pk, g->epoch) != 0 || msgpack_pack_uint64(&pk, g->size) != 0 ||
            pack_str(&pk, g->origin) != 0)
            return -1;
    }
    return 0;
}

static int
group_info_decode(wire_group_info *g, const msgpack_object *o, char *err, size_t errlen)
{
    const msgpack_object *f;
    if (wire_array(o, 4, 0, "group info", err, errlen) != 0)
        return -1;
    f = o->via.array.ptr;
    if (group_name_field(g->name, &f[0], err, errlen) != 0 ||
        wire_u64(&g->epoch, &f[1], "group epoch", err, errlen) != 0 ||
        wire_u64(&g->size, &f[2], "group size", err, errlen) != 0 ||
        wire_str(g->origin, sizeof(g->origin) - 1, &f[3], "group origin", err, errlen) != 0)
        return -1;
    return 0;
}

int
wire_group_list_decode(wire_group_list *l, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    msgpack_zone zone;
    msgpack_object root;
    int rc = -1;

    memset(l, 0, sizeof(*l));
    msgpack_zone_init(&zone, 256);
    if (wire_parse(&root, &zone, buf, len, err, errlen) != 0 ||
        wire_array(&root, -1, WIRE_MAX_GROUPS, "group list", err, errlen) != 0)
        goto out;
    if (root.via.array.size > 0) {
        l->groups = calloc(root.via.array.size, sizeof(*l->groups));
        if (l->groups == NULL) {
            msg_fail(err, errlen, "out of memory");
            goto out;
        }
    }
    l->n = root.via.array.size;
    for (size_t i = 0; i < l->n; i++)
        if (group_info_decode(&l->groups[i], &root.via.array.ptr[i], err, errlen) != 0)
            goto out;
    rc = 0;
out:
    if (rc != 0)
        wire_group_list_fini(l);
    msgpack_zone_destroy(&zone);
    return rc;
}

void
wire_group_list_fini(wire_group_list *l)
{
    free(l->groups);
    l->groups = NULL;
    l->n = 0;
}

int
wire_job_list_encode(msgpack_sbuffer *sb, const wire_job_list *l)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, l->n) != 0)
        return -1;
    for (size_t i = 0; i < l->n; i++) {
        const wire_job_info *j = &l->jobs[i];
        if (msgpack_pack_array(&pk, 8) != 0 || msgpack_pack_uint64(&pk, j->session) != 0 ||
            msgpack_pack_int64(&pk, j->world_rank) != 0 || pack_str(&pk, j->mode) != 0 ||
            msgpack_pack_int64(&pk, j->pid) != 0 || msgpack_pack_int64(&pk, j->uid) != 0 ||
            msgpack_pack_uint64(&pk, j->shared) != 0 || msgpack_pack_uint64(&pk, j->staging) != 0 ||
            msgpack_pack_uint64(&pk, j->calls) != 0)
            return -1;
    }
    return 0;
}

static int
job_info_decode(wire_job_info *j, const msgpack_object *o, char *err, size_t errlen)
{
    const msgpack_object *f;
    if (wire_array(o, 8, 0, "job info", err, errlen) != 0)
        return -1;
    f = o->via.array.ptr;
    if (wire_u64(&j->session, &f[0], "job session", err, errlen) != 0 ||
        wire_i64(&j->world_rank, &f[1], "job world rank", err, errlen) != 0 ||
        wire_str(j->mode, sizeof(j->mode) - 1, &f[2], "job mode", err, errlen) != 0 ||
        wire_i64(&j->pid, &f[3], "job pid", err, errlen) != 0 ||
        wire_i64(&j->uid, &f[4], "job uid", err, errlen) != 0 ||
        wire_u64(&j->shared, &f[5], "job shared buffers", err, errlen) != 0 ||
        wire_u64(&j->staging, &f[6], "job staging", err, errlen) != 0 ||
        wire_u64(&j->calls, &f[7], "job calls", err, errlen) != 0)
        return -1;
    return 0;
}

int
wire_job_list_decode(wire_job_list *l, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    msgpack_zone zone;
    msgpack_object root;
    int rc = -1;

    memset(l, 0, sizeof(*l));
    msgpack_zone_init(&zone, 256);
    if (wire_parse(&root, &zone, buf, len, err, errlen) != 0 ||
        wire_array(&root, -1, WIRE_MAX_JOBS, "job list", err, errlen) != 0)
        goto out;
    if (root.via.array.size > 0 &&
        (l->jobs = calloc(root.via.array.size, sizeof(*l->jobs))) == NULL) {
        msg_fail(err, errlen, "out of memory");
        goto out;
    }
    l->n = root.via.array.size;
    for (size_t i = 0; i < l->n; i++)
        if (job_info_decode(&l->jobs[i], &root.via.array.ptr[i], err, errlen) != 0)
            goto out;
    rc = 0;
out:
    if (rc != 0)
        wire_job_list_fini(l);
    msgpack_zone_destroy(&zone);
    return rc;
}

void
wire_job_list_fini(wire_job_list *l)
{
    free(l->jobs);
    l->jobs = NULL;
    l->n = 0;
}

int
wire_health_encode(msgpack_sbuffer *sb, const wire_health *h)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, 6) != 0 || pack_str(&pk, h->service) != 0 ||
        pack_str(&pk, h->name) != 0 || msgpack_pack_uint64(&pk, h->world_size) != 0 ||
        msgpack_pack_uint64(&pk, h->groups) != 0 || msgpack_pack_uint64(&pk, h->uptime_ms) != 0 ||
        pack_str(&pk, h->config) != 0)
        return -1;
    return 0;
}

int
wire_health_decode(wire_health *h, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    int rc = -1;

    memset(h, 0, sizeof(*h));
    if (frame_open(&fr, buf, len, 6, "health", err, errlen) != 0)
        return -1;
    if (wire_str(h->service, sizeof(h->service) - 1, &fr.f[0], "service", err, errlen) == 0 &&
        wire_str(h->name, CFG_WORKER_NAME_MAX, &fr.f[1], "name", err, errlen) == 0 &&
        wire_u64(&h->world_size, &fr.f[2], "world size", err, errlen) == 0 &&
        wire_u64(&h->groups, &fr.f[3], "groups", err, errlen) == 0 &&
        wire_u64(&h->uptime_ms, &fr.f[4], "uptime", err, errlen) == 0 &&
        wire_str(h->config, CFG_PATH_MAX, &fr.f[5], "config", err, errlen) == 0)
        rc = 0;
    frame_close(&fr);
    return rc;
}

int
wire_empty_encode(msgpack_sbuffer *sb)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return msgpack_pack_array(&pk, 0);
}

int
wire_empty_decode(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    if (frame_open(&fr, buf, len, 0, "empty message", err, errlen) != 0)
        return -1;
    frame_close(&fr);
    return 0;
}

/* ---- worker API bodies ---- */

static int
pack_job(msgpack_packer *pk, const wire_job_id *j)
{
    return msgpack_pack_array(pk, 1) || msgpack_pack_int64(pk, j->world_rank) ? -1 : 0;
}

static int
job_decode(wire_job_id *j, const msgpack_object *o, char *err, size_t errlen)
{
    const msgpack_object *f;
    j->sess = NULL;
    if (wire_array(o, 1, 0, "job", err, errlen) != 0)
        return -1;
    f = o->via.array.ptr;
    if (wire_i64(&j->world_rank, &f[0], "job rank", err, errlen) != 0)
        return -1;
    if (j->world_rank < 0 || j->world_rank >= CFG_MAX_RANKS)
        return msg_fail(err, errlen, "world rank %lld is out of range", (long long)j->world_rank);
    return 0;
}

int
wire_job_id_encode(msgpack_sbuffer *sb, const wire_job_id *j)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return pack_job(&pk, j);
}

int
wire_job_id_decode(wire_job_id *j, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    msgpack_zone zone;
    msgpack_object root;
    int rc = -1;

    memset(j, 0, sizeof(*j));
    msgpack_zone_init(&zone, 256);
    if (wire_parse(&root, &zone, buf, len, err, errlen) == 0)
        rc = job_decode(j, &root, err, errlen);
    msgpack_zone_destroy(&zone);
    return rc;
}

int
wire_hello_reply_encode(msgpack_sbuffer *sb, const wire_hello_reply *h)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return msgpack_pack_array(&pk, 3) || pack_str(&pk, h->worker) ||
                   msgpack_pack_int64(&pk, h->world_size) || pack_str(&pk, h->socket)
               ? -1
               : 0;
}

int
wire_hello_reply_decode(wire_hello_reply *h, const uint8_t *buf, size_t len, char *err,
                        size_t errlen)
{
    wire_frame fr;
    int rc = -1;

    memset(h, 0, sizeof(*h));
    if (frame_open(&fr, buf, len, 3, "hello reply", err, errlen) != 0)
        return -1;
    if (wire_str(h->worker, CFG_WORKER_NAME_MAX, &fr.f[0], "worker", err, errlen) == 0 &&
        wire_i64(&h->world_size, &fr.f[1], "world size", err, errlen) == 0 &&
        wire_str(h->socket, CFG_SOCKET_MAX, &fr.f[2], "socket", err, errlen) == 0)
        rc = 0;
    frame_close(&fr);
    return rc;
}

int
wire_attach_reply_encode(msgpack_sbuffer *sb, const wire_attach_reply *r)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return msgpack_pack_array(&pk, 5) || pack_str(&pk, r->worker) ||
                   msgpack_pack_int64(&pk, r->world_size) || msgpack_pack_int64(&pk, r->pid) ||
                   msgpack_pack_int64(&pk, r->uid) || msgpack_pack_uint64(&pk, r->session)
               ? -1
               : 0;
}

int
wire_attach_reply_decode(wire_attach_reply *r, const uint8_t *buf, size_t len, char *err,
                         size_t errlen)
{
    wire_frame fr;
    int rc = -1;

    memset(r, 0, sizeof(*r));
    if (frame_open(&fr, buf, len, 5, "attach reply", err, errlen) != 0)
        return -1;
    if (wire_str(r->worker, CFG_WORKER_NAME_MAX, &fr.f[0], "worker", err, errlen) == 0 &&
        wire_i64(&r->world_size, &fr.f[1], "world size", err, errlen) == 0 &&
        wire_i64(&r->pid, &fr.f[2], "pid", err, errlen) == 0 &&
        wire_i64(&r->uid, &fr.f[3], "uid", err, errlen) == 0 &&
        wire_u64(&r->session, &fr.f[4], "session", err, errlen) == 0)
        rc = 0;
    frame_close(&fr);
    return rc;
}

int
wire_job_group_encode(msgpack_sbuffer *sb, const wire_job_id *j, const char *name, size_t n,
                      const int64_t *ranks)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, 2) != 0 || pack_job(&pk, j) != 0)
        return -1;
    return wire_create_encode(sb, name, n, ranks);
}

int
wire_job_group_decode(wire_job_group *g, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    const msgpack_object *in;
    int rc = -1;

    memset(g, 0, sizeof(*g));
    if (frame_open(&fr, buf, len, 2, "group request", err, errlen) != 0)
        return -1;
    in = &fr.f[1];
    if (job_decode(&g->job, &fr.f[0], err, errlen) == 0 &&
        wire_array(in, 2, 0, "group", err, errlen) == 0 &&
        group_name_field(g->create.name, &in->via.array.ptr[0], err, errlen) == 0 &&
        ranks_decode(&g->create.ranks, &g->create.n, &in->via.array.ptr[1], err, errlen) == 0)
        rc = 0;
    if (rc != 0)
        wire_job_group_fini(g);
    frame_close(&fr);
    return rc;
}

void
wire_job_group_fini(wire_job_group *g)
{
    wire_create_fini(&g->create);
}

int
wire_a2av_encode(msgpack_sbuffer *sb, const wire_a2av *a)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, 11) || pack_job(&pk, &a->job) || pack_str(&pk, a->group) ||
        msgpack_pack_int64(&pk, a->dtype) || msgpack_pack_int64(&pk, a->timeout_ms) ||
        msgpack_pack_uint64(&pk, a->send_addr) || msgpack_pack_uint64(&pk, a->send_len) ||
        msgpack_pack_uint64(&pk, a->recv_addr) || msgpack_pack_uint64(&pk, a->recv_len) ||
        msgpack_pack_array(&pk, 4 * a->n))
        return -1;
    for (size_t i = 0; i < 4 * a->n; i++)
        if (msgpack_pack_int64(&pk, a->counts[i]) != 0)
            return -1;
    return msgpack_pack_int64(&pk, a->op_next) || msgpack_pack_int64(&pk, a->op_failed) ? -1 : 0;
}

int
wire_a2av_decode(wire_a2av *a, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    const msgpack_object *c;
    int rc = -1;

    memset(a, 0, sizeof(*a));
    if (frame_open(&fr, buf, len, 11, "AllToAllV", err, errlen) != 0)
        return -1;
    c = &fr.f[8];
    if (job_decode(&a->job, &fr.f[0], err, errlen) ||
        group_name_field(a->group, &fr.f[1], err, errlen) ||
        wire_i64(&a->dtype, &fr.f[2], "dtype", err, errlen) ||
        wire_i64(&a->timeout_ms, &fr.f[3], "timeout", err, errlen) ||
        wire_u64(&a->send_addr, &fr.f[4], "send address", err, errlen) ||
        wire_u64(&a->send_len, &fr.f[5], "send length", err, errlen) ||
        wire_u64(&a->recv_addr, &fr.f[6], "recv address", err, errlen) ||
        wire_u64(&a->recv_len, &fr.f[7], "recv length", err, errlen) ||
        wire_array(c, -1, 4 * (size_t)WIRE_MAX_MEMBERS, "counts", err, errlen) ||
        wire_i64(&a->op_next, &fr.f[9], "operation number", err, errlen) ||
        wire_i64(&a->op_failed, &fr.f[10], "failed flag", err, errlen))
        goto out;
    if (a->op_next < WIRE_OP_NEXT_MIN || (a->op_failed != 0 && a->op_failed != 1)) {
        msg_fail(err, errlen, "operation number %lld or failed flag %lld out of range",
                 (long long)a->op_next, (long long)a->op_failed);
        goto out;
    }
    if (c->via.array.size == 0 || c->via.array.size % 4 != 0) {
        msg_fail(err, errlen, "counts: %u values, not 4 arrays of the group size",
                 c->via.array.size);
        goto out;
    }
    a->n = c->via.array.size / 4;
    if ((a->counts = calloc(4 * a->n, sizeof(int64_t))) == NULL) {
        msg_fail(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < 4 * a->n; i++)
        if (wire_i64(&a->counts[i], &c->via.array.ptr[i], "count", err, errlen) != 0)
            goto out;
    rc = 0;
out:
    if (rc != 0)
        wire_a2av_fini(a);
    frame_close(&fr);
    return rc;
}

int
wire_a2av_reply_encode(msgpack_sbuffer *sb, int64_t next)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return msgpack_pack_array(&pk, 1) || msgpack_pack_int64(&pk, next) ? -1 : 0;
}

int
wire_a2av_reply_encode_counts(msgpack_sbuffer *sb, int64_t next, size_t n, const int64_t *counts)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, 2) || msgpack_pack_int64(&pk, next) || msgpack_pack_array(&pk, n))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (msgpack_pack_int64(&pk, counts[i]))
            return -1;
    return 0;
}

int
wire_a2av_reply_decode_counts(int64_t *next, int64_t *counts, size_t n, const uint8_t *buf,
                              size_t len, char *err, size_t errlen)
{
    msgpack_zone zone;
    msgpack_object root;
    int rc = -1;

    *next = -1;
    msgpack_zone_init(&zone, 256);
    if (wire_parse(&root, &zone, buf, len, err, errlen) != 0 ||
        wire_array(&root, -1, 2, "AllToAllV reply", err, errlen) != 0)
        goto out;
    if (root.via.array.size < 1 || (counts != NULL && root.via.array.size != 2)) {
        msg_fail(err, errlen, "AllToAllV reply: %u fields", root.via.array.size);
        goto out;
    }
    if (wire_i64(next, &root.via.array.ptr[0], "next operation number", err, errlen) != 0)
        goto out;
    if (*next < -1) {
        msg_fail(err, errlen, "next operation number %lld out of range", (long long)*next);
        goto out;
    }
    if (root.via.array.size == 2) {
        const msgpack_object *c = &root.via.array.ptr[1];
        if (wire_array(c, -1, WIRE_MAX_MEMBERS, "received counts", err, errlen) != 0)
            goto out;
        if (counts != NULL && c->via.array.size != n) {
            msg_fail(err, errlen, "received counts: %u, expected %zu", c->via.array.size, n);
            goto out;
        }
        for (size_t i = 0; counts != NULL && i < n; i++)
            if (wire_i64(&counts[i], &c->via.array.ptr[i], "received count", err, errlen) != 0)
                goto out;
            else if (counts[i] < 0) {
                msg_fail(err, errlen, "received count %zu is negative", i);
                goto out;
            }
    }
    rc = 0;
out:
    msgpack_zone_destroy(&zone);
    return rc;
}

int
wire_a2av_reply_decode(int64_t *next, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    return wire_a2av_reply_decode_counts(next, NULL, 0, buf, len, err, errlen);
}

int
wire_remote_encode(msgpack_sbuffer *sb, const wire_remote *r)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return msgpack_pack_array(&pk, 7) || msgpack_pack_uint64(&pk, r->session) ||
                   msgpack_pack_uint64(&pk, r->key[0]) || msgpack_pack_uint64(&pk, r->key[1]) ||
                   msgpack_pack_uint64(&pk, r->slot) || msgpack_pack_uint64(&pk, r->offset) ||
                   msgpack_pack_uint64(&pk, r->len) ||
                   pack_bin(&pk, r->data != NULL ? r->data : (const uint8_t *)"", r->data_len)
               ? -1
               : 0;
}

int
wire_remote_decode(wire_remote *r, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    int rc = -1;

    memset(r, 0, sizeof(*r));
    if (frame_open(&fr, buf, len, 7, "remote request", err, errlen) != 0)
        return -1;
    if (wire_u64(&r->session, &fr.f[0], "session", err, errlen) == 0 &&
        wire_u64(&r->key[0], &fr.f[1], "key", err, errlen) == 0 &&
        wire_u64(&r->key[1], &fr.f[2], "key", err, errlen) == 0 &&
        wire_u64(&r->slot, &fr.f[3], "slot", err, errlen) == 0 &&
        wire_u64(&r->offset, &fr.f[4], "offset", err, errlen) == 0 &&
        wire_u64(&r->len, &fr.f[5], "length", err, errlen) == 0 &&
        wire_bin(&r->data, &r->data_len, WIRE_BODY_MAX, &fr.f[6], "data", err, errlen) == 0)
        rc = 0;
    frame_close(&fr);
    return rc;
}

void
wire_a2av_fini(wire_a2av *a)
{
    free(a->counts);
    a->counts = NULL;
    a->n = 0;
}

int
wire_register_encode(msgpack_sbuffer *sb, const wire_register *r)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return msgpack_pack_array(&pk, 2) || pack_str(&pk, r->worker) ||
                   msgpack_pack_uint64(&pk, r->incarnation)
               ? -1
               : 0;
}

int
wire_register_decode(wire_register *r, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    int rc = -1;

    memset(r, 0, sizeof(*r));
    if (frame_open(&fr, buf, len, 2, "RegisterWorker", err, errlen) != 0)
        return -1;
    if (wire_str(r->worker, CFG_WORKER_NAME_MAX, &fr.f[0], "worker", err, errlen) == 0 &&
        wire_u64(&r->incarnation, &fr.f[1], "incarnation", err, errlen) == 0)
        rc = 0;
    frame_close(&fr);
    return rc;
}

int
wire_bins_encode(msgpack_sbuffer *sb, size_t n, const uint8_t *const *bins)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (msgpack_pack_array(&pk, n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (pack_bin(&pk, bins[i], WIRE_BIN32) != 0)
            return -1;
    return 0;
}

int
wire_bins_decode(uint8_t (*out)[WIRE_BIN32], size_t n, const uint8_t *buf, size_t len, char *err,
                 size_t errlen)
{
    wire_frame fr;
    int rc = 0;

    if (frame_open(&fr, buf, len, (uint32_t)n, "auth message", err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const uint8_t *p;
        size_t plen;
        if (wire_bin(&p, &plen, WIRE_BIN32, &fr.f[i], "auth field", err, errlen) != 0)
            rc = -1;
        else if (plen != WIRE_BIN32)
            rc = msg_fail(err, errlen, "auth field %zu: %zu bytes, not %d", i, plen, WIRE_BIN32);
        else
            memcpy(out[i], p, WIRE_BIN32);
    }
    frame_close(&fr);
    return rc;
}

int
wire_buffer_encode(msgpack_sbuffer *sb, const wire_buffer *b)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return msgpack_pack_array(&pk, 2) || msgpack_pack_uint64(&pk, b->addr) ||
                   msgpack_pack_uint64(&pk, b->len)
               ? -1
               : 0;
}

int
wire_buffer_decode(wire_buffer *b, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    wire_frame fr;
    int rc = -1;

    memset(b, 0, sizeof(*b));
    if (frame_open(&fr, buf, len, 2, "buffer", err, errlen) != 0)
        return -1;
    if (wire_u64(&b->addr, &fr.f[0], "address", err, errlen) == 0 &&
        wire_u64(&b->len, &fr.f[1], "length", err, errlen) == 0)
        rc = 0;
    frame_close(&fr);
    return rc;
}
