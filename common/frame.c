/* frame.c - the peer link frame codec. */
#include "frame.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "status.h"
#include "wire.h"

void
frame_prefix_encode(uint8_t out[FRAME_PREFIX_LEN], uint32_t header_len, uint64_t payload_len)
{
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(FRAME_MAGIC >> (24 - 8 * i));
    for (int i = 0; i < 4; i++)
        out[4 + i] = (uint8_t)(header_len >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
        out[8 + i] = (uint8_t)(payload_len >> (56 - 8 * i));
}

int
frame_prefix_decode(const uint8_t in[FRAME_PREFIX_LEN], uint32_t *header_len, uint64_t *payload_len,
                    char *err, size_t errlen)
{
    uint32_t magic = 0, hl = 0;
    uint64_t pl = 0;

    for (int i = 0; i < 4; i++)
        magic = (magic << 8) | in[i];
    for (int i = 4; i < 8; i++)
        hl = (hl << 8) | in[i];
    for (int i = 8; i < 16; i++)
        pl = (pl << 8) | in[i];
    if (magic != FRAME_MAGIC)
        return msg_fail(err, errlen, "bad frame magic 0x%08x", magic);
    if (hl == 0 || hl > FRAME_HEADER_MAX)
        return msg_fail(err, errlen, "frame header of %u bytes (limit %u)", hl, FRAME_HEADER_MAX);
    if (pl > FRAME_PAYLOAD_MAX)
        return msg_fail(err, errlen, "frame payload of %llu bytes (limit %u)",
                        (unsigned long long)pl, FRAME_PAYLOAD_MAX);
    *header_len = hl;
    *payload_len = pl;
    return 0;
}

static int
pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    return msgpack_pack_str(pk, n) != 0 || msgpack_pack_str_body(pk, s, n) != 0 ? -1 : 0;
}

static int
pack_opid(msgpack_packer *pk, const frame_opid *id)
{
    return pack_str(pk, id->group) != 0 || msgpack_pack_uint64(pk, id->epoch) != 0 ||
                   msgpack_pack_uint64(pk, id->op) != 0
               ? -1
               : 0;
}

int
frame_header_encode(msgpack_sbuffer *sb, const frame *f)
{
    msgpack_packer pk;
    size_t start = sb->size;
    int r = 0;

    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    switch (f->type) {
    case FRAME_HELLO:
        /* version 1 had no version field (5 fields): a test speaks it to check the refusal */
        r = msgpack_pack_array(&pk, f->version == 1 ? 5 : 6) || msgpack_pack_int(&pk, f->type) ||
            pack_str(&pk, f->worker) || msgpack_pack_uint64(&pk, f->incarnation) ||
            msgpack_pack_bin(&pk, f->has_mac ? AUTH_MAC_LEN : 0) ||
            (f->has_mac && msgpack_pack_bin_body(&pk, f->mac, AUTH_MAC_LEN)) ||
            msgpack_pack_bin(&pk, f->has_nonce ? AUTH_NONCE_LEN : 0) ||
            (f->has_nonce && msgpack_pack_bin_body(&pk, f->nonce, AUTH_NONCE_LEN)) ||
            (f->version != 1 &&
             msgpack_pack_uint32(&pk, f->version ? f->version : FRAME_LINK_VERSION));
        break;
    case FRAME_WELCOME:
        r = msgpack_pack_array(&pk, 2) || msgpack_pack_int(&pk, f->type) ||
            msgpack_pack_bin(&pk, AUTH_MAC_LEN) || msgpack_pack_bin_body(&pk, f->mac, AUTH_MAC_LEN);
        break;
    case FRAME_CHALLENGE:
        r = msgpack_pack_array(&pk, 2) || msgpack_pack_int(&pk, f->type) ||
            msgpack_pack_bin(&pk, AUTH_NONCE_LEN) ||
            msgpack_pack_bin_body(&pk, f->nonce, AUTH_NONCE_LEN);
        break;
    case FRAME_HEARTBEAT: r = msgpack_pack_array(&pk, 1) || msgpack_pack_int(&pk, f->type); break;
    case FRAME_READY:
        if (f->nrow > FRAME_ROW_MAX)
            return -1;
        r = msgpack_pack_array(&pk, f->nrow > 0 ? 10 : 8) || msgpack_pack_int(&pk, f->type) ||
            pack_opid(&pk, &f->id) || msgpack_pack_int64(&pk, f->dst) ||
            msgpack_pack_int(&pk, f->dtype) || msgpack_pack_array(&pk, 2 * f->n);
        for (size_t i = 0; r == 0 && i < f->n; i++)
            r = msgpack_pack_int64(&pk, f->srcs[i]) || msgpack_pack_int64(&pk, f->counts[i]);
        r = r || msgpack_pack_int64(&pk, f->ttl);
        if (f->nrow > 0) {
            r = r || msgpack_pack_array(&pk, f->nrow);
            for (size_t i = 0; r == 0 && i < f->nrow; i++)
                r = msgpack_pack_int64(&pk, f->row[i]);
            r = r || msgpack_pack_int64(&pk, f->cap);
        }
        break;
    case FRAME_SLICE:
        if (f->has_place && f->place < 0)
            return -1;
        r = msgpack_pack_array(&pk, f->has_place ? 11 : 10) || msgpack_pack_int(&pk, f->type) ||
            pack_opid(&pk, &f->id) || msgpack_pack_int64(&pk, f->src) ||
            msgpack_pack_int64(&pk, f->dst) || msgpack_pack_int(&pk, f->dtype) ||
            msgpack_pack_int64(&pk, f->count) || msgpack_pack_int(&pk, f->status) ||
            pack_str(&pk, f->message) || (f->has_place && msgpack_pack_int64(&pk, f->place));
        break;
    case FRAME_DATA:
        r = msgpack_pack_array(&pk, 7) || msgpack_pack_int(&pk, f->type) ||
            pack_opid(&pk, &f->id) || msgpack_pack_int64(&pk, f->src) ||
            msgpack_pack_int64(&pk, f->dst) || msgpack_pack_uint64(&pk, f->offset);
        break;
    case FRAME_WHERE:
        r = msgpack_pack_array(&pk, 5) || msgpack_pack_int(&pk, f->type) ||
            pack_opid(&pk, &f->id) || msgpack_pack_int64(&pk, f->dst);
        break;
    case FRAME_HERE:
        r = msgpack_pack_array(&pk, 6) || msgpack_pack_int(&pk, f->type) ||
            pack_opid(&pk, &f->id) || msgpack_pack_int64(&pk, f->count) ||
            msgpack_pack_int(&pk, f->idle);
        break;
    case FRAME_PROBE:
    case FRAME_ALIVE:
        r = msgpack_pack_array(&pk, 6) || msgpack_pack_int(&pk, f->type) ||
            pack_opid(&pk, &f->id) || msgpack_pack_int64(&pk, f->src) ||
            msgpack_pack_int64(&pk, f->dst);
        break;
    case FRAME_ABORT:
        r = msgpack_pack_array(&pk, 7) || msgpack_pack_int(&pk, f->type) ||
            pack_opid(&pk, &f->id) || msgpack_pack_int(&pk, f->status) ||
            pack_str(&pk, f->message) || msgpack_pack_uint64(&pk, f->resync);
        break;
    default: return -1;
    }
    if (r == 0 && sb->size - start > FRAME_HEADER_MAX)
        r = -1; /* the peer's frame_prefix_decode would refuse it */
    if (r != 0)
        sb->size = start;
    return r ? -1 : 0;
}

static int
opid_decode(frame_opid *id, const msgpack_object *f, char *err, size_t errlen)
{
    if (f[0].type == MSGPACK_OBJECT_STR && f[0].via.str.size > A2A_GROUP_NAME_MAX)
        return msg_fail(err, errlen, "group name of %u bytes", f[0].via.str.size);
    if (wire_str(id->group, A2A_GROUP_NAME_MAX, &f[0], "group", err, errlen) != 0 ||
        wire_u64(&id->epoch, &f[1], "epoch", err, errlen) != 0 ||
        wire_u64(&id->op, &f[2], "op", err, errlen) != 0)
        return -1;
    if (id->group[0] == '\0')
        return msg_fail(err, errlen, "empty group name");
    return 0;
}

static int
rank_field(int64_t *v, const msgpack_object *o, const char *what, char *err, size_t errlen)
{
    if (wire_i64(v, o, what, err, errlen) != 0)
        return -1;
    if (*v < 0 || *v >= CFG_MAX_RANKS)
        return msg_fail(err, errlen, "%s %lld out of range", what, (long long)*v);
    return 0;
}

static int
small_field(int32_t *v, const msgpack_object *o, int64_t max, const char *what, char *err,
            size_t errlen)
{
    int64_t x;
    if (wire_i64(&x, o, what, err, errlen) != 0)
        return -1;
    if (x < 0 || x > max)
        return msg_fail(err, errlen, "%s %lld out of range", what, (long long)x);
    *v = (int32_t)x;
    return 0;
}

static int
ready_decode(frame *f, const msgpack_object *a, uint32_t fields, char *err, size_t errlen)
{
    const msgpack_object *l = &a[6];
    if (rank_field(&f->dst, &a[4], "dst", err, errlen) != 0 ||
        small_field(&f->dtype, &a[5], A2A_DTYPE_COUNT - 1, "dtype", err, errlen) != 0 ||
        wire_array(l, -1, 2 * (size_t)CFG_MAX_RANKS, "ready counts", err, errlen) != 0)
        return -1;
    if (l->via.array.size % 2 != 0)
        return msg_fail(err, errlen, "ready counts: odd length %u", l->via.array.size);
    f->n = l->via.array.size / 2;
    if (f->n > 0) {
        f->srcs = calloc(f->n, sizeof(int64_t));
        f->counts = calloc(f->n, sizeof(int64_t));
        if (f->srcs == NULL || f->counts == NULL)
            return msg_fail(err, errlen, "out of memory");
    }
    for (size_t i = 0; i < f->n; i++) {
        if (rank_field(&f->srcs[i], &l->via.array.ptr[2 * i], "src", err, errlen) != 0 ||
            wire_i64(&f->counts[i], &l->via.array.ptr[2 * i + 1], "count", err, errlen) != 0)
            return -1;
        if (f->counts[i] < FRAME_DISCOVER)
            return msg_fail(err, errlen, "negative count");
    }
    if (wire_i64(&f->ttl, &a[7], "ttl", err, errlen) != 0)
        return -1;
    if (f->ttl < 0)
        return msg_fail(err, errlen, "negative ttl %lld", (long long)f->ttl);
    f->cap = -1;
    if (fields == 8)
        return 0;
    /* the row and the capacity (FRAME_ROW_MAX) */
    const msgpack_object *w = &a[8];
    if (wire_array(w, -1, FRAME_ROW_MAX, "ready row", err, errlen) != 0)
        return -1;
    if (w->via.array.size == 0)
        return msg_fail(err, errlen, "ready row: empty");
    f->nrow = w->via.array.size;
    for (size_t i = 0; i < f->nrow; i++) {
        if (wire_i64(&f->row[i], &w->via.array.ptr[i], "row count", err, errlen) != 0)
            return -1;
        if (f->row[i] < 0)
            return msg_fail(err, errlen, "ready row: negative count %lld", (long long)f->row[i]);
    }
    if (wire_i64(&f->cap, &a[9], "cap", err, errlen) != 0)
        return -1;
    return f->cap < -1 ? msg_fail(err, errlen, "ready cap %lld", (long long)f->cap) : 0;
}

/* auth_field reads a proof or nonce of exactly len bytes into out; with has, it may also be
 * empty (*has tells which). */
static int
auth_field(uint8_t *out, size_t len, int *has, const msgpack_object *o, const char *name, char *err,
           size_t errlen)
{
    const uint8_t *b;
    size_t blen;
    if (wire_bin(&b, &blen, len, o, name, err, errlen))
        return -1;
    if (blen != len && (has == NULL || blen != 0))
        return msg_fail(err, errlen, "%s of %zu bytes", name, blen);
    if (has != NULL)
        *has = blen == len;
    if (blen == len)
        memcpy(out, b, len);
    return 0;
}

/* hello_version reads HELLO's version (absent: 1, before it had the field); a version it does
 * not speak is the handshake's to refuse, naming it, so any number of 1 or more decodes. */
static int
hello_version(frame *f, const msgpack_object *a, uint32_t n, char *err, size_t errlen)
{
    uint64_t v;
    f->version = 1;
    if (n < 6)
        return 0;
    if (wire_u64(&v, &a[5], "version", err, errlen) != 0)
        return -1;
    if (v == 0 || v > UINT32_MAX)
        return msg_fail(err, errlen, "link protocol version %llu", (unsigned long long)v);
    f->version = (uint32_t)v;
    return 0;
}

static int
body_decode(frame *f, const msgpack_object *a, uint32_t n, char *err, size_t errlen)
{
    int32_t st = 0;
    static const uint32_t fields[] = {
        [FRAME_HELLO] = 6, [FRAME_READY] = 8,     [FRAME_SLICE] = 10,    [FRAME_DATA] = 7,
        [FRAME_ABORT] = 7, [FRAME_HEARTBEAT] = 1, [FRAME_CHALLENGE] = 2, [FRAME_WELCOME] = 2,
        [FRAME_WHERE] = 5, [FRAME_HERE] = 6,      [FRAME_PROBE] = 6,     [FRAME_ALIVE] = 6};
    if (n != fields[f->type] && !(f->type == FRAME_READY && n == 10) &&
        !(f->type == FRAME_HELLO && n == 5) && !(f->type == FRAME_SLICE && n == 11))
        return msg_fail(err, errlen, "frame type %d with %u fields", f->type, n);
    switch (f->type) {
    case FRAME_HELLO:
        return wire_str(f->worker, CFG_WORKER_NAME_MAX, &a[1], "worker", err, errlen) ||
                       wire_u64(&f->incarnation, &a[2], "incarnation", err, errlen) ||
                       auth_field(f->mac, AUTH_MAC_LEN, &f->has_mac, &a[3], "proof", err, errlen) ||
                       auth_field(f->nonce, AUTH_NONCE_LEN, &f->has_nonce, &a[4], "nonce", err,
                                  errlen) ||
                       hello_version(f, a, n, err, errlen)
                   ? -1
                   : 0;
    case FRAME_WELCOME: return auth_field(f->mac, AUTH_MAC_LEN, NULL, &a[1], "proof", err, errlen);
    case FRAME_CHALLENGE:
        return auth_field(f->nonce, AUTH_NONCE_LEN, NULL, &a[1], "nonce", err, errlen);
    case FRAME_HEARTBEAT: return 0;
    case FRAME_READY:
        return opid_decode(&f->id, &a[1], err, errlen) || ready_decode(f, a, n, err, errlen) ? -1
                                                                                             : 0;
    case FRAME_SLICE:
        if (opid_decode(&f->id, &a[1], err, errlen) ||
            rank_field(&f->src, &a[4], "src", err, errlen) ||
            rank_field(&f->dst, &a[5], "dst", err, errlen) ||
            small_field(&f->dtype, &a[6], A2A_DTYPE_COUNT - 1, "dtype", err, errlen) ||
            wire_i64(&f->count, &a[7], "count", err, errlen) ||
            small_field(&st, &a[8], A2A_STATUS_COUNT - 1, "status", err, errlen) ||
            wire_str(f->message, FRAME_MSG_MAX, &a[9], "message", err, errlen))
            return -1;
        f->status = (a2a_status)st;
        if (f->count < 0)
            return msg_fail(err, errlen, "negative count");
        if ((f->has_place = n == 11) == 0)
            return 0;
        if (wire_i64(&f->place, &a[10], "place", err, errlen) != 0)
            return -1;
        return f->place < 0 ? msg_fail(err, errlen, "negative place %lld", (long long)f->place) : 0;
    case FRAME_DATA:
        return opid_decode(&f->id, &a[1], err, errlen) ||
                       rank_field(&f->src, &a[4], "src", err, errlen) ||
                       rank_field(&f->dst, &a[5], "dst", err, errlen) ||
                       wire_u64(&f->offset, &a[6], "offset", err, errlen)
                   ? -1
                   : 0;
    case FRAME_WHERE:
        return opid_decode(&f->id, &a[1], err, errlen) ||
                       rank_field(&f->dst, &a[4], "dst", err, errlen)
                   ? -1
                   : 0;
    case FRAME_PROBE:
    case FRAME_ALIVE:
        return opid_decode(&f->id, &a[1], err, errlen) ||
                       rank_field(&f->src, &a[4], "src", err, errlen) ||
                       rank_field(&f->dst, &a[5], "dst", err, errlen)
                   ? -1
                   : 0;
    case FRAME_HERE:
        if (opid_decode(&f->id, &a[1], err, errlen) ||
            wire_i64(&f->count, &a[4], "count", err, errlen) ||
            small_field(&f->idle, &a[5], 15, "idle", err, errlen))
            return -1;
        return f->count < -1 ? msg_fail(err, errlen, "HERE with number %lld", (long long)f->count)
                             : 0;
    case FRAME_ABORT:
        if (opid_decode(&f->id, &a[1], err, errlen) ||
            small_field(&st, &a[4], A2A_STATUS_COUNT - 1, "status", err, errlen) ||
            wire_str(f->message, FRAME_MSG_MAX, &a[5], "message", err, errlen) ||
            wire_u64(&f->resync, &a[6], "resync", err, errlen))
            return -1;
        f->status = (a2a_status)st;
        return st == A2A_OK ? msg_fail(err, errlen, "abort with status OK") : 0;
    }
    return -1;
}

int
frame_header_decode(frame *f, const uint8_t *buf, size_t len, uint64_t payload_len, char *err,
                    size_t errlen)
{
    msgpack_zone zone;
    msgpack_object root;
    int32_t type;
    int rc = -1;

    memset(f, 0, sizeof(*f));
    msgpack_zone_init(&zone, 512);
    if (wire_parse(&root, &zone, buf, len, err, errlen) != 0 ||
        wire_array(&root, -1, 16, "frame", err, errlen) != 0)
        goto out;
    if (root.via.array.size == 0) {
        msg_fail(err, errlen, "empty frame header");
        goto out;
    }
    type = 0;
    if (small_field(&type, &root.via.array.ptr[0], FRAME_TYPE_MAX, "frame type", err, errlen) != 0)
        goto out;
    if (type < FRAME_HELLO) {
        msg_fail(err, errlen, "unknown frame type %d", type);
        goto out;
    }
    f->type = (frame_type)type;
    if (body_decode(f, root.via.array.ptr, root.via.array.size, err, errlen) != 0)
        goto out;
    if (f->type == FRAME_SLICE && payload_len > 0) {
        /* eager: exactly the slice, and small */
        uint64_t want = (uint64_t)f->count * a2a_dtype_size((a2a_dtype)f->dtype);
        if (f->count > (int64_t)FRAME_EAGER_MAX || payload_len != want ||
            payload_len > FRAME_EAGER_MAX) {
            msg_fail(err, errlen,
                     "SLICE of %lld elements of dtype %d with %llu payload bytes (eager "
                     "slices carry exactly their bytes, at most %u)",
                     (long long)f->count, (int)f->dtype, (unsigned long long)payload_len,
                     FRAME_EAGER_MAX);
            goto out;
        }
    } else if ((f->type == FRAME_DATA) != (payload_len > 0)) {
        msg_fail(err, errlen, "frame of type %d with %llu payload bytes", f->type,
                 (unsigned long long)payload_len);
        goto out;
    }
    rc = 0;
out:
    if (rc != 0)
        frame_fini(f);
    msgpack_zone_destroy(&zone);
    return rc;
}

void
frame_fini(frame *f)
{
    free(f->srcs);
    free(f->counts);
    free(f->payload);
    f->srcs = NULL;
    f->counts = NULL;
    f->payload = NULL;
    f->payload_len = 0;
    f->n = 0;
}
