/* op.c - one operation of a group: matching READY and SLICE frames with local calls. */
#include <errno.h>
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

eng_op *
op_get(engine *e, eng_group *g, uint64_t num, int create)
{
    eng_op *op;
    const group_failed *h;
    (void)e;

    for (op = g->ops; op != NULL; op = op->next)
        if (op->num == num)
            return op;
    if (!create || g->nlocal == 0)
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
    if ((h = group_seq_failed(&g->seq, num)) != NULL) {
        op->status = h->status;
        snprintf(op->msg, sizeof(op->msg), "%s", h->msg);
    }
    op->next = g->ops;
    g->ops = op;
    g->nops++;
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

void
group_free(eng_group *g)
{
    if (g == NULL)
        return;
    group_seq_fini(&g->seq);
    free(g->world);
    free(g->peer);
    free(g->lidx);
    free(g);
}

/* op_done_with reports whether op may go: no local call is in it, and it failed (its history
 * answers latecomers) or every local rank is past it. */
static int
op_done_with(const eng_op *op)
{
    const eng_group *g = op->g;
    if (op->arrived != op->left)
        return 0;
    if (op->status != A2A_OK)
        return 1;
    for (size_t i = 0; i < g->nlocal; i++)
        if (!g->seq.known[i] || g->seq.next[i] <= op->num)
            return 0;
    return 1;
}

int
group_sweep(engine *e, eng_group *g)
{
    (void)e;
    for (eng_op **pp = &g->ops; *pp != NULL;) {
        eng_op *op = *pp;
        if (!op_done_with(op)) {
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        g->nops--;
        op_free(op);
    }
    if (g->retired && g->ops == NULL) {
        group_free(g);
        return 1;
    }
    return 0;
}

void
op_release(engine *e, eng_op *op)
{
    op->left++;
    (void)group_sweep(e, op->g);
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
        c->done->next = (int64_t)c->num + 1;
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
    group_seq_fail(&g->seq, op->num, st, op->msg);
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
    frame f = {.type = FRAME_ABORT, .status = st, .resync = op->resync};
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
op_fail_memory(engine *e, eng_op *op, int64_t grank, int write, int err)
{
    eng_group *g = op->g;
    if (err == ESRCH) /* the job is gone: not the caller's fault */
        op_fail(e, op, A2A_ERR_UNAVAILABLE, 1,
                "the job of group rank %lld (world rank %lld) on worker %s exited during "
                "operation %llu",
                (long long)grank, (long long)g->world[grank], e->self->name,
                (unsigned long long)op->num);
    else if (err == ENOMEM)
        op_fail(e, op, A2A_ERR_RESOURCE_EXHAUSTED, 1, "worker %s is out of memory", e->self->name);
    else
        op_fail(e, op, A2A_ERR_INVALID_ARGUMENT, 1,
                "cannot %s the %s buffer of group rank %lld (world rank %lld): %s",
                write ? "write" : "read", write ? "receive" : "send", (long long)grank,
                (long long)g->world[grank], strerror(err));
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
        op_fail_memory(e, op, c->grank, 1, rv);
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

/* reply_abort tells peer p that the operation of f failed (or is gone); resync: 0, or where
 * the next calls resynchronise. */
static void
reply_abort(engine *e, eng_peer *p, const frame *f, a2a_status st, const char *msg, uint64_t resync)
{
    frame r = {.type = FRAME_ABORT, .id = f->id, .status = st, .resync = resync};
    snprintf(r.message, sizeof(r.message), "%s", msg);
    link_send_ctl(e, p, &r, NULL);
}

void
op_fail_num(engine *e, eng_group *g, uint64_t num, a2a_status st, int broadcast, const char *msg)
{
    eng_op *op = op_get(e, g, num, 0);
    if (op == NULL && broadcast)
        op = op_get(e, g, num, 1); /* to broadcast its ABORT; the sweep frees it */
    if (op != NULL)
        op_fail(e, op, st, broadcast, "%s", msg);
    else
        group_seq_fail(&g->seq, num, st, msg);
}

/* ops_top returns the highest number of g's operations here (0 with none). */
static uint64_t
ops_top(const eng_group *g)
{
    uint64_t top = 0;
    for (const eng_op *op = g->ops; op != NULL; op = op->next)
        if (op->num > top)
            top = op->num;
    return top;
}

/*
 * numbers_differ: a peer sent a frame of operation f->id.op, which none of our ranks can be
 * in (they are all past it, and it did not fail here; or it is GROUP_WINDOW or more ahead):
 * a worker and its jobs started anew. Both sides' calls in progress fail, and every member
 * resynchronises at r, a number past everything this worker and the frame know: the floor
 * of the next calls here and, by the ABORTs' resync field, at the sender and the others.
 */
static void
numbers_differ(engine *e, eng_peer *p, eng_group *g, const frame *f)
{
    char msg[600];
    uint64_t top = group_seq_top(&g->seq, ops_top(g));
    uint64_t r = (f->id.op > top ? f->id.op : top) + 1;

    if (group_seq_differ(&g->seq, p->incarnation ^ ((uint64_t)p->idx << 48),
                         f->id.op)) { /* a straggler of the call that made us resync */
        if (f->type == FRAME_READY || f->type == FRAME_SLICE)
            reply_abort(e, p, f, A2A_ERR_UNAVAILABLE,
                        "operation numbers differ (a worker and its jobs restarted): the next "
                        "calls resynchronise",
                        g->seq.floor);
        return;
    }
    snprintf(msg, sizeof(msg),
             "worker %s is at operation %llu of group \"%s\" and worker %s at %llu: their "
             "operation numbers differ (a worker and its jobs restarted); this call fails and "
             "the next ones resynchronise at %llu",
             p->w->name, (unsigned long long)f->id.op, g->name, e->self->name,
             (unsigned long long)top, (unsigned long long)r);
    log_info("%s", msg);
    (void)group_seq_resync(&g->seq, r, ops_top(g));
    if (f->type == FRAME_READY || f->type == FRAME_SLICE)
        reply_abort(e, p, f, A2A_ERR_UNAVAILABLE, msg, r);
    for (eng_op *op = g->ops; op != NULL; op = op->next)
        if (op->arrived > op->left && op->status == A2A_OK) {
            op->resync = r;
            op_fail(e, op, A2A_ERR_UNAVAILABLE, 1, "%s", msg);
        }
}

/* older_epoch: a frame of an epoch before ours; its sender has not seen the group change. */
static void
older_epoch(engine *e, eng_peer *p, eng_group *g, const frame *f)
{
    char msg[600];
    group_pos pos =
        group_seq_classify(&g->seq, f->id.op, op_get(e, g, f->id.op, 0) != NULL, g->nops);

    if (f->type == FRAME_ABORT && f->resync > 0)
        (void)group_seq_resync(&g->seq, f->resync, ops_top(g));
    snprintf(msg, sizeof(msg),
             "group \"%s\" changed while operation %llu ran (epoch %llu at worker %s, %llu at "
             "%s: a member worker restarted or the group was redefined); the next call uses the "
             "new group",
             g->name, (unsigned long long)f->id.op, (unsigned long long)f->id.epoch, p->w->name,
             (unsigned long long)g->epoch, e->self->name);
    if (f->type == FRAME_READY || f->type == FRAME_SLICE) {
        frame newer = *f;
        reply_abort(e, p, f, A2A_ERR_UNAVAILABLE, msg, 0);
        /* and the same in our epoch: newer for the sender, which then resolves the group again
         * before its next call instead of running it in the old epoch once more */
        newer.id.epoch = g->epoch;
        newer.srcs = NULL;
        newer.counts = NULL;
        newer.payload = NULL;
        reply_abort(e, p, &newer, A2A_ERR_UNAVAILABLE, msg, 0);
    }
    /* the sender's call of that number fails: ours of the same number fails with it */
    if (pos == GROUP_ACTIVE)
        op_fail_num(e, g, f->id.op, f->type == FRAME_ABORT ? f->status : A2A_ERR_UNAVAILABLE,
                    f->type != FRAME_ABORT, f->type == FRAME_ABORT ? f->message : msg);
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
    const group_failed *h;
    eng_op *op;

    if (g == NULL || g->epoch < f->id.epoch) { /* not resolved yet, or we are behind */
        if (g != NULL)
            g->stale = 1;
        if (f->type == FRAME_READY || f->type == FRAME_ABORT || f->type == FRAME_SLICE)
            engine_keep_early(e, p->idx, (frame *)f);
        return;
    }
    if (g->epoch > f->id.epoch) {
        older_epoch(e, p, g, f);
        (void)group_sweep(e, g);
        return;
    }
    if (f->type == FRAME_ABORT && f->resync > 0 &&
        !group_seq_resync(&g->seq, f->resync, ops_top(g)))
        log_warn("ABORT from %s for operation %llu of group \"%s\" resynchronises at %llu, far "
                 "beyond any number here: ignored",
                 p->w->name, (unsigned long long)f->id.op, g->name, (unsigned long long)f->resync);
    op = op_get(e, g, f->id.op, 0);
    switch (group_seq_classify(&g->seq, f->id.op, op != NULL, g->nops)) {
    case GROUP_ACTIVE: break;
    case GROUP_PAST_FAILED:
        h = group_seq_failed(&g->seq, f->id.op);
        if (f->type == FRAME_READY || f->type == FRAME_SLICE)
            reply_abort(e, p, f, h->status, h->msg, 0);
        return;
    case GROUP_PAST:
    case GROUP_FUTURE:
        if (f->type == FRAME_READY)
            group_seq_saw(&g->seq, f->id.op);
        if (f->type == FRAME_ABORT)
            group_seq_heard_failed(&g->seq, f->id.op);
        else
            numbers_differ(e, p, g, f);
        (void)group_sweep(e, g);
        return;
    }
    if (f->type == FRAME_READY)
        group_seq_saw(&g->seq, f->id.op);
    if (op == NULL && (op = op_get(e, g, f->id.op, 1)) == NULL) {
        log_warn("out of memory: dropping a frame of group \"%s\"", g->name);
        return;
    }
    switch (f->type) {
    case FRAME_READY:
        if (op->status != A2A_OK)
            reply_abort(e, p, f, op->status, op->msg, 0);
        else
            on_ready(e, p, g, op, f);
        break;
    case FRAME_SLICE: on_slice(e, p, g, op, (frame *)f); break;
    case FRAME_ABORT: op_fail(e, op, f->status, 0, "%s", f->message); break;
    default: break;
    }
    (void)group_sweep(e, g);
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
        op_fail_memory(e, op, f->dst, 1, rv);
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
