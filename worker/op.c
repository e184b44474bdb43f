/* op.c - one operation of a group: matching READY and SLICE frames with local calls. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/log.h"
#include "engine_int.h"
#include "xfer.h"

/* Index of a pair in rx (row: local d) or tx (row: local s). */
#define PAIR(op, l, other) ((size_t)(l) * (op)->g->n + (size_t)(other))

static uint64_t
min_next_op(const eng_group *g)
{
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < g->nlocal; i++)
        if (g->next_op[i] < m)
            m = g->next_op[i];
    return m;
}

const eng_failed *
group_history(const eng_group *g, uint64_t num)
{
    size_t k = g->nhist < ENGINE_HISTORY ? g->nhist : ENGINE_HISTORY;
    for (size_t i = 0; i < k; i++)
        if (g->hist[i].num == num)
            return &g->hist[i];
    return NULL;
}

static void
history_add(eng_group *g, uint64_t num, a2a_status st, const char *msg)
{
    eng_failed *h;
    if (group_history(g, num) != NULL)
        return;
    h = &g->hist[g->nhist++ % ENGINE_HISTORY];
    h->num = num;
    h->status = st;
    snprintf(h->msg, sizeof(h->msg), "%s", msg);
}

eng_op *
op_get(engine *e, eng_group *g, uint64_t num, int create)
{
    eng_op *op;
    const eng_failed *h;
    (void)e;

    for (op = g->ops; op != NULL; op = op->next)
        if (op->num == num)
            return op;
    if (!create || g->nlocal == 0 || num < min_next_op(g) ||
        num >= min_next_op(g) + ENGINE_OP_WINDOW)
        return NULL;
    if ((op = calloc(1, sizeof(*op))) == NULL)
        return NULL;
    op->calls = calloc(g->n, sizeof(*op->calls));
    op->rx = calloc(g->nlocal * g->n, sizeof(*op->rx));
    op->tx = calloc(g->nlocal * g->n, sizeof(*op->tx));
    if (op->calls == NULL || op->rx == NULL || op->tx == NULL) {
        free(op->calls);
        free(op->rx);
        free(op->tx);
        free(op);
        return NULL;
    }
    op->g = g;
    op->num = num;
    if ((h = group_history(g, num)) != NULL) {
        op->status = h->status;
        snprintf(op->msg, sizeof(op->msg), "%s", h->msg);
    }
    op->next = g->ops;
    g->ops = op;
    return op;
}

static void
op_free(eng_op *op)
{
    for (size_t i = 0; i < op->g->nlocal * op->g->n; i++)
        free(op->rx[i].stash);
    free(op->calls);
    free(op->rx);
    free(op->tx);
    free(op);
}

static void
group_free(eng_group *g)
{
    free(g->world);
    free(g->peer);
    free(g->lidx);
    free(g->next_op);
    free(g);
}

void
op_release(engine *e, eng_op *op)
{
    eng_group *g = op->g;
    (void)e;
    if (++op->left < op->arrived || op->arrived < g->nlocal)
        return;
    for (eng_op **pp = &g->ops; *pp != NULL; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            break;
        }
    op_free(op);
    if (g->stale == 2 && g->ops == NULL) /* retired and empty */
        group_free(g);
}

void
op_check_done(eng_op *op, eng_call *c)
{
    if (c->sends_left != 0 || c->recvs_left != 0)
        return;
    pthread_cond_broadcast(&c->cv);
    /* every pair done and nothing touching the job's memory: answer it from here */
    if (c->done != NULL && !c->done->called && c->pins == 0 && c->ntodo == 0 && !c->finished &&
        op->status == A2A_OK) {
        c->done->called = 1;
        c->done->fn(c->done->arg);
    }
}

void
op_fail(engine *e, eng_op *op, a2a_status st, int broadcast, const char *fmt, ...)
{
    eng_group *g = op->g;
    va_list ap;

    if (op->status != A2A_OK)
        return;
    va_start(ap, fmt);
    vsnprintf(op->msg, sizeof(op->msg), fmt, ap);
    va_end(ap);
    op->status = st;
    history_add(g, op->num, st, op->msg);
    log_info("group \"%s\" operation %llu failed: %s: %s", g->name, (unsigned long long)op->num,
             a2a_status_name(st), op->msg);
    for (size_t r = 0; r < g->n; r++) {
        eng_call *c = op->calls[r];
        if (c == NULL || c->finished)
            continue;
        link_drop_call(e, c);
        pthread_cond_broadcast(&c->cv);
    }
    if (!broadcast)
        return;
    frame f = {.type = FRAME_ABORT, .status = st};
    snprintf(f.id.group, sizeof(f.id.group), "%s", g->name);
    f.id.epoch = g->epoch;
    f.id.op = op->num;
    snprintf(f.message, sizeof(f.message), "%s", op->msg);
    for (size_t i = 0; i < e->npeers; i++) {
        int member = 0;
        for (size_t r = 0; r < g->n && !member; r++)
            member = g->peer[r] == (int)i;
        if (member)
            link_send_ctl(e, &e->peers[i], &f, NULL);
    }
}

void
group_fail_all(engine *e, eng_group *g, a2a_status st, const char *why)
{
    for (eng_op *op = g->ops; op != NULL; op = op->next)
        op_fail(e, op, st, 0, "%s", why);
}

static const char *
esize_name(const eng_call *c)
{
    return dtype_name((a2a_dtype)c->a->dtype);
}

/* count_mismatch fails op: rank s sends count elements (of c's dtype) to d, which expects others.
 */
static void
count_mismatch(engine *e, eng_op *op, const eng_call *c, int64_t s, int64_t count, int64_t d,
               int64_t expect)
{
    op_fail(e, op, A2A_ERR_COUNT_MISMATCH, 1,
            "rank %lld sends %lld %s to rank %lld, which expects %lld", (long long)s,
            (long long)count, esize_name(c), (long long)d, (long long)expect);
}

/*
 * op_pair_ready starts pair s -> d once s's call is here and d's expected
 * count is known. A remote d gets SLICE and the data; a local d is copied by
 * the caller (returns 1).
 */
int
op_pair_start(engine *e, eng_op *op, int64_t s, int64_t d)
{
    eng_group *g = op->g;
    eng_call *c = op->calls[s];
    eng_tx *tx = &op->tx[PAIR(op, g->lidx[s], d)];
    int64_t count;
    frame f = {.type = FRAME_SLICE};

    if (c == NULL || c->finished || !tx->ready || op->status != A2A_OK)
        return 0;
    if (tx->started && (!tx->eager || tx->done))
        return 0;
    count = c->a->counts[d];
    if (count != tx->expect) {
        tx->started = 1;
        count_mismatch(e, op, c, s, count, d, tx->expect);
        return 0;
    }
    if (tx->eager) { /* sent already: READY confirmed the count */
        tx->done = 1;
        c->sends_left--;
        op_check_done(op, c);
        return 0;
    }
    tx->started = 1;
    if (g->peer[d] < 0)
        return 1;
    snprintf(f.id.group, sizeof(f.id.group), "%s", g->name);
    f.id.epoch = g->epoch;
    f.id.op = op->num;
    f.src = s;
    f.dst = d;
    f.dtype = (int32_t)c->a->dtype;
    f.count = count;
    link_send_ctl(e, &e->peers[g->peer[d]], &f, op);
    if (count > 0) {
        link_send_slice(e, &e->peers[g->peer[d]], c, d, (uint64_t)count * c->esize,
                        c->a->send_addr + (uint64_t)c->a->counts[g->n + d] * c->esize);
    } else {
        tx->done = 1;
        c->sends_left--;
        op_check_done(op, c);
    }
    return 0;
}

void
op_pair_ready(engine *e, eng_op *op, int64_t s, int64_t d)
{
    (void)op_pair_start(e, op, s, d);
}

void
op_send_eager(engine *e, eng_op *op, int64_t s, int64_t d)
{
    eng_group *g = op->g;
    eng_call *c = op->calls[s];
    eng_tx *tx = &op->tx[PAIR(op, g->lidx[s], d)];
    int64_t count = c->a->counts[d];
    uint64_t len = (uint64_t)count * c->esize;
    frame f = {
        .type = FRAME_SLICE, .src = s, .dst = d, .dtype = (int32_t)c->a->dtype, .count = count};

    if (tx->started || op->status != A2A_OK)
        return;
    tx->started = 1;
    tx->eager = 1;
    snprintf(f.id.group, sizeof(f.id.group), "%s", g->name);
    f.id.epoch = g->epoch;
    f.id.op = op->num;
    link_send_eager(e, &e->peers[g->peer[d]], &f, op, len > 0 ? c->pre + c->pre_at[d] : NULL,
                    (size_t)len);
    if (tx->ready) /* READY came first */
        op_pair_ready(e, op, s, d);
}

/* land_eager writes an eager slice from s into local call c and completes the pair. */
static void
land_eager(engine *e, eng_op *op, eng_call *c, int64_t s, const uint8_t *bytes, int64_t count)
{
    eng_group *g = op->g;
    eng_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
    uint64_t len = (uint64_t)count * c->esize;
    uint64_t to = c->a->recv_addr + (uint64_t)c->a->counts[3 * g->n + s] * c->esize;
    eng_map *m = NULL;
    uint8_t *dst;
    int rv = 0;

    if (count != rx->expect) {
        count_mismatch(e, op, c, s, count, c->grank, rx->expect);
        return;
    }
    rx->have_slice = 1;
    rx->count = count;
    /* small (engine_eager_max): copied under the lock */
    if (len > 0 && (dst = shm_get(e, c->sess, to, len, &m)) != NULL)
        memcpy(dst, bytes, (size_t)len);
    else if (len > 0)
        rv = xfer_write(c->sess, to, bytes, (size_t)len);
    shm_put(e, m);
    if (rv != 0) {
        op_fail(e, op, A2A_ERR_INVALID_ARGUMENT, 1, "cannot write rank %lld's receive buffer: %s",
                (long long)c->grank, strerror(rv));
        return;
    }
    rx->bytes = len;
    rx->done = 1;
    c->recvs_left--;
    op_check_done(op, c);
}

void
op_take_stash(engine *e, eng_op *op, eng_call *c)
{
    eng_group *g = op->g;
    for (size_t s = 0; s < g->n && op->status == A2A_OK; s++) {
        eng_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
        if (g->peer[s] < 0 || !rx->have_slice || rx->done)
            continue;
        rx->have_slice = 0;
        land_eager(e, op, c, (int64_t)s, rx->stash, rx->count);
        free(rx->stash);
        rx->stash = NULL;
    }
}

/* frame_reply_abort tells peer p that the operation of f failed (or is gone). */
static void
reply_abort(engine *e, eng_peer *p, const frame *f, a2a_status st, const char *msg)
{
    frame r = {.type = FRAME_ABORT, .id = f->id, .status = st};
    snprintf(r.message, sizeof(r.message), "%s", msg);
    link_send_ctl(e, p, &r, NULL);
}

static void
on_ready(engine *e, eng_peer *p, eng_group *g, eng_op *op, const frame *f)
{
    if (f->dst >= (int64_t)g->n || g->peer[f->dst] != p->idx) {
        log_warn("READY from %s for rank %lld, which it does not host", p->w->name,
                 (long long)f->dst);
        return;
    }
    for (size_t i = 0; i < f->n; i++) {
        int64_t s = f->srcs[i];
        eng_tx *tx;
        if (s >= (int64_t)g->n || g->lidx[s] < 0)
            continue;
        tx = &op->tx[PAIR(op, g->lidx[s], f->dst)];
        if (tx->ready)
            continue;
        tx->ready = 1;
        tx->expect = f->counts[i];
        op_pair_ready(e, op, s, f->dst);
    }
}

static void
on_slice(engine *e, eng_peer *p, eng_group *g, eng_op *op, frame *f)
{
    eng_call *c;
    eng_rx *rx;

    if (f->src >= (int64_t)g->n || f->dst >= (int64_t)g->n || g->peer[f->src] != p->idx ||
        g->lidx[f->dst] < 0)
        return;
    c = op->calls[f->dst];
    rx = &op->rx[PAIR(op, g->lidx[f->dst], f->src)];
    if (rx->have_slice || op->status != A2A_OK || (c != NULL && c->finished))
        return;
    if (f->count > 0 && f->payload == NULL && c == NULL)
        return; /* not eager, yet before READY: not from a worker that follows the protocol */
    /* the frame decoder checked payload == count * dtype size <= FRAME_EAGER_MAX; the group's
     * own limit is ours to check */
    if (f->payload != NULL && f->payload_len > engine_eager_max(g->n)) {
        op_fail(e, op, A2A_ERR_INTERNAL, 1,
                "rank %lld sent rank %lld an eager slice of %zu bytes (limit %llu in a group of "
                "%zu)",
                (long long)f->src, (long long)f->dst, f->payload_len,
                (unsigned long long)engine_eager_max(g->n), g->n);
        return;
    }
    if (c == NULL) { /* eager, before d: keep it until d comes (bounded: engine_eager_max) */
        rx->have_slice = 1;
        rx->count = f->count;
        rx->stash = f->payload;
        f->payload = NULL;
        f->payload_len = 0;
        return;
    }
    if (f->payload != NULL) {
        if (f->payload_len != (uint64_t)f->count * c->esize) {
            op_fail(e, op, A2A_ERR_INVALID_ARGUMENT, 1, "rank %lld sends %s, rank %lld receives %s",
                    (long long)f->src, dtype_name((a2a_dtype)f->dtype), (long long)f->dst,
                    esize_name(c));
            return;
        }
        land_eager(e, op, c, f->src, f->payload, f->count);
        return;
    }
    if (f->count != rx->expect) {
        count_mismatch(e, op, c, f->src, f->count, f->dst, rx->expect);
        return;
    }
    rx->have_slice = 1;
    rx->count = f->count;
    if (f->count == 0) {
        rx->done = 1;
        c->recvs_left--;
        op_check_done(op, c);
    }
}

void
op_on_frame(engine *e, eng_peer *p, const frame *f)
{
    eng_group *g = engine_group_find(e, f->id.group);
    eng_op *op;
    const eng_failed *h;

    if (g == NULL || g->epoch < f->id.epoch) {
        if (g != NULL)
            g->stale = 1;
        if (f->type == FRAME_READY || f->type == FRAME_ABORT || f->type == FRAME_SLICE)
            engine_keep_early(e, p->idx, (frame *)f);
        return;
    }
    if (g->epoch > f->id.epoch) {
        if (f->type == FRAME_READY)
            reply_abort(e, p, f, A2A_ERR_UNAVAILABLE,
                        "the group changed (a member worker restarted): try again");
        return;
    }
    /* an eager SLICE may come before the local rank it is for: it may create the op */
    op = op_get(e, g, f->id.op, f->type != FRAME_SLICE || f->payload != NULL || f->count == 0);
    if (op == NULL) {
        if (f->type == FRAME_READY && (h = group_history(g, f->id.op)) != NULL)
            reply_abort(e, p, f, h->status, h->msg);
        else if (f->type == FRAME_ABORT) /* for latecomers beyond the window */
            history_add(g, f->id.op, f->status, f->message);
        return;
    }
    switch (f->type) {
    case FRAME_READY:
        if (op->status != A2A_OK)
            reply_abort(e, p, f, op->status, op->msg);
        else
            on_ready(e, p, g, op, f);
        break;
    case FRAME_SLICE: on_slice(e, p, g, op, (frame *)f); break;
    case FRAME_ABORT: op_fail(e, op, f->status, 0, "%s", f->message); break;
    default: break;
    }
}

eng_call *
op_data_target(engine *e, eng_peer *p, const frame *f, size_t len, uint64_t *addr)
{
    eng_group *g = engine_group_find(e, f->id.group);
    eng_op *op;
    eng_call *c;
    eng_rx *rx;

    if (g == NULL || g->epoch != f->id.epoch || (op = op_get(e, g, f->id.op, 0)) == NULL)
        return NULL;
    if (f->src >= (int64_t)g->n || f->dst >= (int64_t)g->n || g->peer[f->src] != p->idx ||
        g->lidx[f->dst] < 0)
        return NULL;
    c = op->calls[f->dst];
    rx = &op->rx[PAIR(op, g->lidx[f->dst], f->src)];
    if (c == NULL || c->finished || op->status != A2A_OK || !rx->have_slice)
        return NULL;
    if (f->offset != rx->bytes || len > (uint64_t)rx->count * c->esize - rx->bytes) {
        op_fail(e, op, A2A_ERR_INTERNAL, 1,
                "rank %lld's data for rank %lld arrived out of order (offset %llu, expected %llu)",
                (long long)f->src, (long long)f->dst, (unsigned long long)f->offset,
                (unsigned long long)rx->bytes);
        return NULL;
    }
    *addr = c->a->recv_addr + (uint64_t)c->a->counts[3 * g->n + f->src] * c->esize + f->offset;
    c->pins++;
    return c;
}

void
op_data_landed(engine *e, eng_call *c, const frame *f, size_t len, int rv)
{
    eng_op *op = c->op;
    eng_rx *rx = &op->rx[PAIR(op, c->lidx, f->src)];

    if (--c->pins == 0)
        pthread_cond_broadcast(&c->cv);
    if (rv < 0) /* the link broke: the peer's loss fails the operation */
        return;
    if (rv > 0) {
        op_fail(e, op, A2A_ERR_INVALID_ARGUMENT, 1, "cannot write rank %lld's receive buffer: %s",
                (long long)f->dst, strerror(rv));
        return;
    }
    if (c->finished || op->status != A2A_OK)
        return;
    rx->bytes += len;
    if (rx->bytes == (uint64_t)rx->count * c->esize) {
        rx->done = 1;
        c->recvs_left--;
        op_check_done(op, c);
    }
}
