/* op.c - the operations of a group at one worker, as a pure state machine (see op.h). */
#include "op.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/log.h"

/* Index of a pair in rx (row: local d) or tx (row: local s). */
#define PAIR(op, l, other) ((size_t)(l) * (op)->g->n + (size_t)(other))

/* ---- actions ---- */

void
op_out_init(op_out *o)
{
    memset(o, 0, sizeof(*o));
}

void
op_out_reset(op_out *o)
{
    for (size_t i = 0; i < o->n; i++) {
        free(o->a[i].f.srcs);
        free(o->a[i].f.counts);
        free(o->a[i].bytes);
    }
    o->n = 0;
    o->oom = 0;
}

void
op_out_fini(op_out *o)
{
    op_out_reset(o);
    free(o->a);
    memset(o, 0, sizeof(*o));
}

/* push appends an action (zeroed but for its type); NULL when out of memory (counted). */
static op_act *
push(op_out *o, op_act_type type)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 16;
        op_act *a = realloc(o->a, cap * sizeof(*a));
        if (a == NULL) {
            o->oom++;
            return NULL;
        }
        o->a = a;
        o->cap = cap;
    }
    op_act *a = &o->a[o->n++];
    memset(a, 0, sizeof(*a));
    a->type = type;
    return a;
}

static void
push_call(op_out *o, op_act_type type, op_call *c)
{
    op_act *a = push(o, type);
    if (a != NULL) {
        a->call = c;
        a->op = c->op;
    }
}

/* frame_of starts a frame of op's identity. */
static frame
frame_of(const op_op *op, frame_type type)
{
    frame f = {.type = type};
    snprintf(f.id.group, sizeof(f.id.group), "%s", op->g->name);
    f.id.epoch = op->g->epoch;
    f.id.op = op->num;
    return f;
}

/* send_frame queues f to peer for op (op: NULL for frames no operation depends on). */
static op_act *
send_frame(op_out *o, int peer, op_op *op, const frame *f)
{
    op_act *a = push(o, OPA_SEND);
    if (a == NULL) {
        if (op != NULL && op->status == A2A_OK) {
            /* cannot even say so: the operation fails here, its peers see their deadline */
            op->status = A2A_ERR_RESOURCE_EXHAUSTED;
            snprintf(op->msg, sizeof(op->msg), "out of memory");
            group_seq_fail(&op->g->seq, op->num, op->status, op->msg);
        }
        return NULL;
    }
    a->peer = peer;
    a->op = op;
    a->f = *f;
    a->f.srcs = NULL;
    a->f.counts = NULL;
    a->f.payload = NULL;
    a->f.payload_len = 0;
    return a;
}

static const char *
peer_name(const op_group *g, int peer)
{
    return peer >= 0 && (size_t)peer < g->env->nworkers ? g->env->workers[peer] : "?";
}

/* ---- operations ---- */

uint64_t
op_eager_max(size_t n)
{
    uint64_t per = n > 0 ? (uint64_t)OP_EAGER_TOTAL / ((uint64_t)n * n) : 0;
    return per < FRAME_EAGER_MAX ? per : FRAME_EAGER_MAX;
}

static void
rows_free(op_rows *rw)
{
    free(rw->in);
    free(rw->total);
    free(rw->cap);
    free(rw->dtype);
    free(rw->before);
}

op_op *
op_get(op_group *g, uint64_t num, int create)
{
    op_op *op;
    const group_failed *h;

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
    op->expire = calloc(g->n, sizeof(*op->expire));
    op->guard = calloc(g->n, sizeof(*op->guard));
    op->came = calloc(g->n, sizeof(*op->came));
    op->rows = g->n <= FRAME_ROW_MAX;
    if (op->rows) {
        op->rw.in = calloc(g->n, sizeof(*op->rw.in));
        op->rw.total = calloc(g->n, sizeof(*op->rw.total));
        op->rw.cap = calloc(g->n, sizeof(*op->rw.cap));
        op->rw.dtype = calloc(g->n, sizeof(*op->rw.dtype));
        op->rw.before = calloc(g->nlocal * g->n, sizeof(*op->rw.before));
    }
    if (op->calls == NULL || op->rx == NULL || op->tx == NULL || op->expire == NULL ||
        op->guard == NULL || op->came == NULL ||
        (op->rows && (op->rw.in == NULL || op->rw.total == NULL || op->rw.cap == NULL ||
                      op->rw.dtype == NULL || op->rw.before == NULL))) {
        rows_free(&op->rw);
        free(op->expire);
        free(op->guard);
        free(op->came);
        free(op->calls);
        free(op->rx);
        free(op->tx);
        free(op);
        return NULL;
    }
    op->g = g;
    op->num = num;
    for (size_t r = 0; op->rows && r < g->n; r++)
        op->rw.cap[r] = -1;
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
op_free(op_op *op)
{
    for (size_t i = 0; i < op->g->nlocal * op->g->n; i++)
        free(op->rx[i].stash);
    rows_free(&op->rw);
    free(op->expire);
    free(op->guard);
    free(op->came);
    free(op->calls);
    free(op->rx);
    free(op->tx);
    free(op);
}

void
group_free(op_group *g)
{
    if (g == NULL)
        return;
    group_seq_fini(&g->seq);
    free(g->world);
    free(g->peer);
    free(g->lidx);
    free(g->heard);
    free(g->joined);
    free(g);
}

/* op_done_with reports whether op may go: no local call is in it, and it failed (its history
 * answers latecomers) or every local rank is past it. */
static int
op_done_with(const op_op *op)
{
    const op_group *g = op->g;
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
group_sweep(op_group *g)
{
    for (op_op **pp = &g->ops; *pp != NULL;) {
        op_op *op = *pp;
        if (!op_done_with(op)) {
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        g->nops--;
        op_free(op);
    }
    if (g->retired && g->ops == NULL && g->asks == NULL) {
        group_free(g);
        return 1;
    }
    return 0;
}

int
op_leave(op_op *op, op_call *c)
{
    if (op->calls[c->grank] == c)
        op->calls[c->grank] = NULL;
    op->left++;
    return group_sweep(op->g);
}

int
op_call_done(const op_call *c)
{
    return c->sends_left == 0 && c->recvs_left == 0 && c->probes_left == 0;
}

/* check_done wakes c's thread when every pair of c is done. */
static void
check_done(op_out *o, op_call *c)
{
    if (op_call_done(c))
        push_call(o, OPA_WAKE, c);
}

static void send_alive(op_out *o, op_op *op, int64_t s, int64_t d);

/* abort_probes answers the PROBEs kept for local calls that had not come (op failed without
 * an ABORT to the members: they learn it here). */
static void
abort_probes(op_out *o, op_op *op)
{
    op_group *g = op->g;
    frame f = frame_of(op, FRAME_ABORT);
    f.status = op->status;
    snprintf(f.message, sizeof(f.message), "%s", op->msg);
    for (size_t s = 0; s < g->n; s++) {
        if (g->lidx[s] < 0)
            continue;
        for (size_t d = 0; d < g->n; d++) {
            op_tx *tx = &op->tx[PAIR(op, g->lidx[s], d)];
            if (tx->probed && g->peer[d] >= 0) {
                tx->probed = 0;
                (void)send_frame(o, g->peer[d], NULL, &f);
            }
        }
    }
}

void
op_fail(op_out *o, op_op *op, a2a_status st, int broadcast, const char *fmt, ...)
{
    op_group *g = op->g;
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
        op_call *c = op->calls[r];
        if (c == NULL || c->finished)
            continue;
        push_call(o, OPA_DROP, c);
        push_call(o, OPA_WAKE, c);
    }
    if (!broadcast) {
        abort_probes(o, op);
        return;
    }
    frame f = frame_of(op, FRAME_ABORT);
    f.status = st;
    f.resync = op->resync;
    snprintf(f.message, sizeof(f.message), "%s", op->msg);
    for (size_t i = 0; i < g->env->nworkers; i++) {
        int member = 0;
        for (size_t r = 0; r < g->n && !member; r++)
            member = g->peer[r] == (int)i;
        if (member)
            (void)send_frame(o, (int)i, NULL, &f);
    }
}

void
op_fail_memory(op_out *o, op_op *op, int64_t grank, int write, int err)
{
    op_group *g = op->g;
    if (err == ESRCH) /* the job is gone: not the caller's fault */
        op_fail(o, op, A2A_ERR_UNAVAILABLE, 1,
                "the job of group rank %lld (world rank %lld) on worker %s exited during "
                "operation %llu",
                (long long)grank, (long long)g->world[grank], g->env->self,
                (unsigned long long)op->num);
    else if (err == ENOMEM)
        op_fail(o, op, A2A_ERR_RESOURCE_EXHAUSTED, 1, "worker %s is out of memory", g->env->self);
    else
        op_fail(o, op, A2A_ERR_INVALID_ARGUMENT, 1,
                "cannot %s the %s buffer of group rank %lld (world rank %lld): %s",
                write ? "write" : "read", write ? "receive" : "send", (long long)grank,
                (long long)g->world[grank], strerror(err));
}

void
group_fail_all(op_out *o, op_group *g, a2a_status st, const char *why)
{
    for (op_op *op = g->ops; op != NULL; op = op->next)
        op_fail(o, op, st, 0, "%s", why);
}

void
op_peer_lost(op_out *o, op_group *g, int peer, const char *why)
{
    int member = 0;
    for (size_t r = 0; r < g->n && !member; r++)
        member = g->peer[r] == peer;
    if (!member)
        return;
    g->stale = 1;
    for (op_op *op = g->ops; op != NULL; op = op->next)
        op_fail(o, op, A2A_ERR_UNAVAILABLE, 1, "%s", why);
    for (op_call *c = g->asks; c != NULL; c = c->ask_next)
        if (c->asking && peer >= 0 && (size_t)peer < c->ask_nw && c->ask_wait[peer]) {
            char msg[sizeof(c->ask_msg)];
            snprintf(msg, sizeof(msg),
                     "cannot ask worker %s where group \"%s\" is, for the first call of group "
                     "rank %lld's job: %s",
                     peer_name(g, peer), g->name, (long long)c->grank, why);
            op_ask_fail(o, c, A2A_ERR_UNAVAILABLE, msg);
            c->ask_lost = 1;
        }
}

void
op_fail_num(op_out *o, op_group *g, uint64_t num, a2a_status st, int broadcast, const char *msg)
{
    op_op *op = op_get(g, num, 0);
    if (op == NULL && broadcast)
        op = op_get(g, num, 1); /* to broadcast its ABORT; the sweep frees it */
    if (op != NULL)
        op_fail(o, op, st, broadcast, "%s", msg);
    else
        group_seq_fail(&g->seq, num, st, msg);
}

/* count_mismatch fails op: rank s sends count elements (of c's dtype) to d, which expects others.
 */
static void
count_mismatch(op_out *o, op_op *op, const op_call *c, int64_t s, int64_t count, int64_t d,
               int64_t expect)
{
    op_fail(o, op, A2A_ERR_COUNT_MISMATCH, 1,
            "rank %lld sends %lld %s to rank %lld, which expects %lld", (long long)s,
            (long long)count, dtype_name((a2a_dtype)c->dtype), (long long)d, (long long)expect);
}

/* tx_done completes pair c -> d. */
static void
tx_done(op_out *o, op_op *op, op_call *c, int64_t d)
{
    op_tx *tx = &op->tx[PAIR(op, c->lidx, d)];
    if (tx->state == TX_DONE)
        return;
    tx->state = TX_DONE;
    c->sends_left--;
    check_done(o, c);
}

/* rx_done completes pair s -> c. */
static void
rx_done(op_out *o, op_op *op, op_call *c, int64_t s)
{
    op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
    if (rx->state == RX_DONE)
        return;
    rx->state = RX_DONE;
    c->recvs_left--;
    check_done(o, c);
}

/* ---- count discovery (the pair logic for a receiver without counts; op.h) ---- */

/* disc_answer answers remote d's READY(FRAME_DISCOVER) for pair s -> d: an eager slice told its
 * count already; otherwise the count goes alone (SLICE without payload), and the slice waits
 * for d's second READY. Either way the pair is done only when that READY confirms the count,
 * so that d's failure to place its slices fails the operation for every member. */
static void
disc_answer(op_out *o, op_op *op, op_call *c, op_tx *tx, int64_t s, int64_t d)
{
    frame f = frame_of(op, FRAME_SLICE);

    tx->ready = 0; /* the next READY gives the count back */
    if (tx->state == TX_EAGER)
        return;
    if (op->g->peer[d] < 0) { /* local receivers never send READY */
        op_fail(o, op, A2A_ERR_INTERNAL, 1, "rank %lld: a discovery READY for a local pair",
                (long long)d);
        return;
    }
    f.src = s;
    f.dst = d;
    f.dtype = c->dtype;
    f.count = c->counts[d];
    tx->state = TX_ANNOUNCED;
    (void)send_frame(o, op->g->peer[d], op, &f);
}

/* disc_learn records that s sends count elements to discovering call c. */
static void
disc_learn(op_op *op, op_call *c, int64_t s, int64_t count)
{
    op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
    if (rx->known)
        return;
    rx->known = 1;
    rx->count = count;
    c->unknown--;
}

static void pair_start(op_out *o, op_op *op, int64_t s, int64_t d);
static void land_eager(op_out *o, op_op *op, op_call *c, int64_t s, uint8_t *bytes, int64_t count);

/* disc_overflow fails op: discovering group rank d needs more elements than it holds. */
static void
disc_overflow(op_out *o, op_op *op, int64_t d, uint64_t need, int32_t dtype, uint64_t cap)
{
    const op_group *g = op->g;
    op_fail(o, op, A2A_ERR_RESOURCE_EXHAUSTED, 1,
            "count discovery: group rank %lld (world rank %lld) of group \"%s\" needs %llu %s "
            "elements in operation %llu, but its receive buffer holds %llu",
            (long long)d, (long long)g->world[d], g->name, (unsigned long long)need,
            dtype_name((a2a_dtype)dtype), (unsigned long long)op->num, (unsigned long long)cap);
}

/* disc_land lands the eager slice from s kept for discovering call c, now placed. */
static void
disc_land(op_out *o, op_op *op, op_call *c, int64_t s)
{
    op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
    uint8_t *bytes = rx->stash;
    if (rx->stash_len != (uint64_t)rx->count * c->esize) {
        op_fail(o, op, A2A_ERR_INVALID_ARGUMENT, 1,
                "rank %lld sent %zu bytes for %lld elements, rank %lld receives %s", (long long)s,
                rx->stash_len, (long long)rx->count, (long long)c->grank,
                dtype_name((a2a_dtype)c->dtype));
        return;
    }
    rx->stash = NULL;
    rx->state = RX_WAIT;
    land_eager(o, op, c, s, bytes, rx->count);
}

/* rows_differ fails op: s's READY row and its SLICE gave call c two counts. */
static void
rows_differ(op_out *o, op_op *op, const op_call *c, int64_t s, int64_t row, int64_t slice)
{
    op_fail(o, op, A2A_ERR_INTERNAL, 1,
            "rank %lld announced %lld elements for rank %lld in its READY and %lld in its SLICE",
            (long long)s, (long long)row, (long long)c->grank, (long long)slice);
}

/* row_count: discovering call c learns from s's row that s sends it count elements; a count
 * that differs from the one s's SLICE gave fails the operation. */
static void
row_count(op_out *o, op_op *op, op_call *c, int64_t s, int64_t count)
{
    op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
    if (!rx->known)
        disc_learn(op, c, s, count);
    else if (rx->count != count)
        rows_differ(o, op, c, s, count, rx->count);
}

/* row_cap: c's capacity as its READY row gives it: -1 unless it discovers its counts. */
static int64_t
row_cap(const op_call *c)
{
    if (!c->discover)
        return -1;
    return c->recv_cap > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)c->recv_cap;
}

/* readys sends READY for c to the worker of every remote source (only: all), or to worker only:
 * the counts c expects, or (placed, count discovery) the counts its sources announced: the go
 * for an announced slice, the confirmation for an eager one. Stops when op fails. */
static void
readys(op_out *o, op_op *op, op_call *c, int placed, int only)
{
    op_group *g = op->g;
    for (size_t i = 0; i < g->env->nworkers && op->status == A2A_OK; i++) {
        size_t k = 0;
        if (only >= 0 && (int)i != only)
            continue;
        for (size_t s = 0; s < g->n; s++)
            k += g->peer[s] == (int)i;
        if (k == 0)
            continue;
        frame f = frame_of(op, FRAME_READY);
        f.dst = c->grank;
        f.dtype = c->dtype;
        f.ttl = c->ttl_ms > 0 ? c->ttl_ms : 0;
        if (!placed && g->n <= FRAME_ROW_MAX) { /* the row: every worker judges (rows_judge) */
            f.nrow = g->n;
            for (size_t d = 0; d < g->n; d++)
                f.row[d] = c->counts[d];
            f.cap = row_cap(c);
        }
        op_act *a = send_frame(o, (int)i, op, &f);
        if (a == NULL)
            return;
        if ((a->f.srcs = calloc(k, sizeof(int64_t))) == NULL ||
            (a->f.counts = calloc(k, sizeof(int64_t))) == NULL) {
            o->n--; /* the last action: take it back */
            free(a->f.srcs);
            free(a->f.counts);
            op_fail(o, op, A2A_ERR_RESOURCE_EXHAUSTED, 1, "out of memory");
            return;
        }
        for (size_t s = 0; s < g->n; s++)
            if (g->peer[s] == (int)i) {
                a->f.srcs[a->f.n] = (int64_t)s;
                a->f.counts[a->f.n++] =
                    placed ? op->rx[PAIR(op, c->lidx, s)].count : c->counts[2 * g->n + s];
            }
    }
}

/* disc_go sends READY with the real counts to the worker of every remote sender: the go for an
 * announced slice, the confirmation for an eager one. */
static void
disc_go(op_out *o, op_op *op, op_call *c)
{
    readys(o, op, c, 1, -1);
}

/* placed_wrong fails op: remote s streamed its slice to discovering call c at place at, which
 * is not where c's slices put it (want; or past c's capacity: want UINT64_MAX). */
static void
placed_wrong(op_out *o, op_op *op, const op_call *c, int64_t s, int64_t at, uint64_t want)
{
    if (want == UINT64_MAX)
        op_fail(o, op, A2A_ERR_INTERNAL, 1,
                "rank %lld placed its slice for rank %lld at element %lld, past its receive "
                "buffer of %llu elements",
                (long long)s, (long long)c->grank, (long long)at, (unsigned long long)c->recv_cap);
    else
        op_fail(o, op, A2A_ERR_INTERNAL, 1,
                "rank %lld placed its slice for rank %lld at element %lld, which rank %lld's "
                "counts place at %llu",
                (long long)s, (long long)c->grank, (long long)at, (long long)c->grank,
                (unsigned long long)want);
}

/*
 * disc_place places discovering call c's slices once every count is known: packed in
 * group-rank order from element 0, or, when they exceed the buffer, the operation fails for
 * every member before anything is written. Then the eager slices land, local pairs start and
 * the announced senders get their go.
 */
static void
disc_place(op_out *o, op_op *op, op_call *c)
{
    op_group *g = op->g;
    size_t n = g->n;
    uint64_t need = 0, at = 0;

    if (!c->discover || c->placed || c->unknown > 0 || c->finished || op->status != A2A_OK)
        return;
    if (op->rows && !op->judged)
        return; /* rows_judge, once every rank's row is known, places it */
    for (size_t s = 0; s < n; s++) {
        uint64_t k = (uint64_t)op->rx[PAIR(op, c->lidx, s)].count;
        need = need > UINT64_MAX - k ? UINT64_MAX : need + k;
    }
    if (need > c->recv_cap) {
        disc_overflow(o, op, c->grank, need, c->dtype, c->recv_cap);
        return;
    }
    for (size_t s = 0; s < n; s++) {
        op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
        if (rx->has_at && (uint64_t)rx->at != at) { /* streaming already, to another place */
            placed_wrong(o, op, c, (int64_t)s, rx->at, at);
            return;
        }
        c->counts[2 * n + s] = rx->count;
        c->counts[3 * n + s] = (int64_t)at;
        rx->expect = rx->count;
        at += (uint64_t)rx->count;
    }
    c->placed = 1;
    if (!op->rows) /* with rows, remote senders stream without a go (rows_stream) */
        disc_go(o, op, c);
    for (size_t s = 0; s < n && op->status == A2A_OK; s++) {
        op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
        if (g->peer[s] < 0) {
            op_tx *tx = &op->tx[PAIR(op, g->lidx[s], c->grank)];
            tx->ready = 1;
            tx->expect = rx->count;
            if (tx->state == TX_WAIT)
                tx->state = TX_READY;
            pair_start(o, op, (int64_t)s, c->grank);
        } else if (rx->state == RX_STASHED) {
            disc_land(o, op, c, (int64_t)s);
        }
    }
}

/* ---- rows (op.h, "Count discovery") ---- */

/* rows_off: a first READY came without a row; the operation goes on without rows. */
static void
rows_off(op_out *o, op_op *op)
{
    const op_group *g = op->g;
    if (!op->rows)
        return;
    op->rows = 0;
    for (size_t r = 0; r < g->n && op->status == A2A_OK; r++)
        if (g->lidx[r] >= 0 && op->calls[r] != NULL)
            disc_place(o, op, op->calls[r]);
    /* pairs to remote discoverers waited for the judge (rows_stream): announce them instead */
    for (size_t s = 0; s < g->n && op->status == A2A_OK; s++)
        for (size_t d = 0; g->lidx[s] >= 0 && d < g->n && op->status == A2A_OK; d++)
            if (g->peer[d] >= 0)
                pair_start(o, op, (int64_t)s, (int64_t)d);
}

/* rows_judge: once every rank's row is known, fail op if a discoverer's slices do not fit
 * (the lowest such rank: every worker names the same), else complete the eager pairs to
 * discoverers and let the local discoverers place their slices. */
static void
rows_judge(op_out *o, op_op *op)
{
    const op_group *g = op->g;
    size_t n = g->n;

    if (!op->rows || op->judged || op->rw.seen < n || op->status != A2A_OK)
        return;
    op->judged = 1;
    for (size_t d = 0; d < n; d++)
        if (op->rw.cap[d] >= 0 && op->rw.total[d] > (uint64_t)op->rw.cap[d]) {
            disc_overflow(o, op, (int64_t)d, op->rw.total[d], op->rw.dtype[d],
                          (uint64_t)op->rw.cap[d]);
            return;
        }
    for (size_t s = 0; s < n && op->status == A2A_OK; s++) {
        op_call *c = op->calls[s];
        if (g->lidx[s] < 0 || c == NULL || c->finished)
            continue;
        for (size_t d = 0; d < n && op->status == A2A_OK; d++) {
            if (g->peer[d] < 0 || op->rw.cap[d] < 0)
                continue;
            if (op->tx[PAIR(op, g->lidx[s], d)].state == TX_EAGER)
                tx_done(o, op, c, (int64_t)d);
            else
                pair_start(o, op, (int64_t)s, (int64_t)d); /* rows_stream, once d's READY came */
        }
    }
    for (size_t d = 0; d < n && op->status == A2A_OK; d++)
        if (g->lidx[d] >= 0 && op->calls[d] != NULL)
            disc_place(o, op, op->calls[d]);
}

/* rows_learn notes group rank r's row (its send counts), capacity (-1: it gave counts) and
 * dtype, from its first READY or, local, as it arrives; then judges when all are known. */
static void
rows_learn(op_out *o, op_op *op, int64_t r, const int64_t *row, int64_t cap, int32_t dtype)
{
    const op_group *g = op->g;

    if (!op->rows || op->rw.in[r])
        return;
    op->rw.in[r] = 1;
    op->rw.seen++;
    op->rw.cap[r] = cap;
    op->rw.dtype[r] = dtype;
    for (size_t d = 0; d < g->n && op->status == A2A_OK; d++) {
        uint64_t k = (uint64_t)row[d];
        op->rw.total[d] = op->rw.total[d] > UINT64_MAX - k ? UINT64_MAX : op->rw.total[d] + k;
        for (size_t s = (size_t)r + 1; s < g->n; s++) /* r's slice lies before s's in d's buffer */
            if (g->lidx[s] >= 0) {
                uint64_t *b = &op->rw.before[PAIR(op, g->lidx[s], d)];
                *b = *b > UINT64_MAX - k ? UINT64_MAX : *b + k;
            }
        if (g->peer[r] < 0 || g->lidx[d] < 0)
            continue; /* local pairs are learnt as their calls arrive (op_arrive) */
        op_rx *rx = &op->rx[PAIR(op, g->lidx[d], r)];
        rx->row = row[d];
        op_call *c = op->calls[d];
        if (c != NULL && c->discover && !c->finished)
            row_count(o, op, c, r, row[d]);
    }
    rows_judge(o, op);
}

/* rows_slice handles the SLICE of a slice that remote s streams to discovering call c with
 * rows (rows_stream): its data follows at once, to the place the SLICE gives, which must lie
 * within c's buffer and, once c places its slices, be where they put it (disc_place). */
static void
rows_slice(op_out *o, op_op *op, op_call *c, op_rx *rx, const frame *f)
{
    if (!op->rows || !f->has_place || f->payload != NULL || rx->state != RX_WAIT) {
        op_fail(o, op, A2A_ERR_INTERNAL, 1,
                "rank %lld streams its slice to discovering rank %lld %s", (long long)f->src,
                (long long)c->grank,
                !op->rows            ? "with a place, without rows"
                : !f->has_place      ? "without a place"
                : f->payload != NULL ? "with a place and eager bytes"
                                     : "twice");
        return;
    }
    if (rx->known && f->count != rx->count) {
        rows_differ(o, op, c, f->src, rx->count, f->count);
        return;
    }
    if ((uint64_t)f->place > c->recv_cap || (uint64_t)f->count > c->recv_cap - (uint64_t)f->place) {
        placed_wrong(o, op, c, f->src, f->place, UINT64_MAX);
        return;
    }
    if (c->placed && c->counts[3 * op->g->n + f->src] != f->place) {
        placed_wrong(o, op, c, f->src, f->place, (uint64_t)c->counts[3 * op->g->n + f->src]);
        return;
    }
    disc_learn(op, c, f->src, f->count);
    rx->has_at = 1;
    rx->at = f->place;
    rx->count = f->count;
    rx->expect = f->count;
    rx->state = RX_DATA;
    if (f->count == 0)
        rx_done(o, op, c, f->src);
    disc_place(o, op, c);
}

/* disc_slice handles a SLICE from remote s for discovering call c (f->payload: taken). */
static void
disc_slice(op_out *o, op_op *op, op_call *c, op_rx *rx, frame *f)
{
    if (f->has_place || (op->rows && f->payload == NULL && f->count > 0)) {
        rows_slice(o, op, c, rx, f);
        return;
    }
    if (rx->state == RX_COUNTED) { /* the slice itself, after our second READY */
        if (!c->placed || f->payload != NULL)
            return; /* a duplicate of the count */
        if (f->count != rx->count) {
            count_mismatch(o, op, c, f->src, f->count, f->dst, rx->count);
            return;
        }
        rx->state = RX_DATA;
        if (f->count == 0)
            rx_done(o, op, c, f->src);
        return;
    }
    /* RX_WAIT: the eager slice, or the count alone; its row may have told the count already */
    if (rx->known && f->count != rx->count) {
        rows_differ(o, op, c, f->src, rx->count, f->count);
        return;
    }
    if (f->payload != NULL || f->count == 0) { /* eager: kept until c has placed its slices */
        rx->state = RX_STASHED;
        rx->count = f->count;
        rx->stash = f->payload;
        rx->stash_len = f->payload_len;
        f->payload = NULL;
        f->payload_len = 0;
        if (c->placed) {
            disc_land(o, op, c, f->src);
            return;
        }
    } else {
        rx->state = RX_COUNTED;
    }
    disc_learn(op, c, f->src, f->count);
    disc_place(o, op, c);
}

static void stream_out(op_out *o, op_op *op, op_call *c, int64_t d, int64_t count, int64_t place);

/* rows_stream: with rows, pair s -> remote discoverer d starts once every row is known
 * (rows_judge: nothing is sent before, so a receiver whose slices do not fit fails the operation
 * for every member first). An eager slice is done then; any other streams at once, its SLICE
 * saying where it goes in d's buffer (op_rows.before), without waiting for d to place its slices
 * and send a go: one READY sooner than disc_answer's announce and go, as with known counts. */
static void
rows_stream(op_out *o, op_op *op, op_call *c, op_tx *tx, int64_t d)
{
    uint64_t at = op->rw.before[PAIR(op, c->lidx, d)];

    if (!op->judged)
        return; /* rows_judge starts it */
    if (tx->state == TX_EAGER) {
        tx_done(o, op, c, d);
        return;
    }
    tx->state = TX_MOVING;
    stream_out(o, op, c, d, c->counts[d], (int64_t)at); /* at <= total[d] <= cap[d]: judged */
}

/*
 * pair_start starts pair s -> d once s's call is here and d's expected count is known
 * (TX_READY, or TX_EAGER confirmed). A remote d gets SLICE and the data; a local d is copied
 * by the receiving call's thread (OPA_COPY) or was copied by the job itself.
 */
static void
pair_start(op_out *o, op_op *op, int64_t s, int64_t d)
{
    op_group *g = op->g;
    op_call *c = op->calls[s];
    op_tx *tx = &op->tx[PAIR(op, g->lidx[s], d)];
    int64_t count;

    if (c == NULL || c->finished || !tx->ready || op->status != A2A_OK)
        return;
    if (tx->state != TX_READY && tx->state != TX_EAGER)
        return;
    if (tx->expect == FRAME_DISCOVER) { /* remote d discovers its counts */
        if (op->rows)
            rows_stream(o, op, c, tx, d);
        else
            disc_answer(o, op, c, tx, s, d);
        return;
    }
    count = c->counts[d];
    if (count != tx->expect) {
        tx->state = TX_MOVING; /* never again: the operation fails */
        count_mismatch(o, op, c, s, count, d, tx->expect);
        return;
    }
    if (tx->state == TX_EAGER) { /* sent already: READY confirmed the count */
        tx_done(o, op, c, d);
        return;
    }
    tx->state = TX_MOVING;
    if (g->peer[d] < 0) { /* local */
        op_call *r = op->calls[d];
        if (r != NULL && r->esize != c->esize && count > 0) { /* a copy would tear it */
            op_fail(o, op, A2A_ERR_INVALID_ARGUMENT, 1, "rank %lld sends %s, rank %lld receives %s",
                    (long long)s, dtype_name((a2a_dtype)c->dtype), (long long)d,
                    dtype_name((a2a_dtype)r->dtype));
            return;
        }
        if (r == c && c->self_copied == s + 1) { /* the job copied it (discovering: will) */
            tx_done(o, op, c, d);
            rx_done(o, op, c, s);
        } else {
            op_act *a = push(o, OPA_COPY);
            if (a == NULL) {
                op_fail(o, op, A2A_ERR_RESOURCE_EXHAUSTED, 1, "out of memory");
                return;
            }
            a->op = op;
            a->call = r;
            a->s = s;
            a->d = d;
        }
        return;
    }
    stream_out(o, op, c, d, count, -1);
}

/* stream_out sends SLICE(count) for pair c -> remote d (with place >= 0: where the slice goes in
 * a discoverer's buffer) and queues the slice's bytes after it. */
static void
stream_out(op_out *o, op_op *op, op_call *c, int64_t d, int64_t count, int64_t place)
{
    op_group *g = op->g;
    frame f = frame_of(op, FRAME_SLICE);
    f.src = c->grank;
    f.dst = d;
    f.dtype = c->dtype;
    f.count = count;
    f.has_place = place >= 0;
    f.place = place;
    (void)send_frame(o, g->peer[d], op, &f);
    if (count == 0) {
        tx_done(o, op, c, d);
        return;
    }
    op_act *a = push(o, OPA_STREAM);
    if (a == NULL) {
        op_fail(o, op, A2A_ERR_RESOURCE_EXHAUSTED, 1, "out of memory");
        return;
    }
    a->peer = g->peer[d];
    a->op = op;
    a->call = c;
    a->s = c->grank;
    a->d = d;
    a->len = (uint64_t)count * c->esize;
    a->off = (uint64_t)c->counts[g->n + d] * c->esize;
}

/* send_eager sends slice s -> d (remote, small or empty) with its SLICE at once. */
static void
send_eager(op_out *o, op_op *op, int64_t s, int64_t d)
{
    op_group *g = op->g;
    op_call *c = op->calls[s];
    op_tx *tx = &op->tx[PAIR(op, g->lidx[s], d)];
    int64_t count = c->counts[d];
    uint64_t len = (uint64_t)count * c->esize;
    frame f = frame_of(op, FRAME_SLICE);
    op_act *a;

    if (tx->state != TX_WAIT && tx->state != TX_READY)
        return;
    if (op->status != A2A_OK)
        return;
    tx->state = TX_EAGER;
    f.src = s;
    f.dst = d;
    f.dtype = c->dtype;
    f.count = count;
    if ((a = send_frame(o, g->peer[d], op, &f)) != NULL && len > 0) {
        a->payload = c->pre + c->pre_at[d];
        a->plen = (size_t)len;
    }
    if (tx->ready) /* READY came first */
        pair_start(o, op, s, d);
}

/* land_eager lands an eager slice from s (bytes: taken) into local call c. */
static void
land_eager(op_out *o, op_op *op, op_call *c, int64_t s, uint8_t *bytes, int64_t count)
{
    op_group *g = op->g;
    op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
    uint64_t len = (uint64_t)count * c->esize;
    op_act *a;

    if (count != rx->expect) {
        free(bytes);
        count_mismatch(o, op, c, s, count, c->grank, rx->expect);
        return;
    }
    rx->count = count;
    if (len == 0) {
        free(bytes);
        rx_done(o, op, c, s);
        return;
    }
    if ((a = push(o, OPA_LAND)) == NULL) {
        free(bytes);
        op_fail(o, op, A2A_ERR_RESOURCE_EXHAUSTED, 1, "out of memory");
        return;
    }
    rx->state = RX_LANDING;
    a->op = op;
    a->call = c;
    a->s = s;
    a->bytes = bytes;
    a->len = len;
    a->off = (uint64_t)c->counts[3 * g->n + s] * c->esize;
}

void
op_landed(op_out *o, op_call *c, int64_t s, int rv)
{
    op_op *op = c->op;
    op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
    if (rx->state != RX_LANDING)
        return;
    if (rv != 0) {
        op_fail_memory(o, op, c->grank, 1, rv);
        return;
    }
    if (op->status != A2A_OK)
        return;
    rx->bytes = (uint64_t)rx->count * c->esize;
    rx_done(o, op, c, s);
}

/* ready_out tells the worker of every remote source what c expects (READY). */
static void
ready_out(op_out *o, op_op *op, op_call *c)
{
    readys(o, op, c, 0, -1);
}

/* take_stash lands the eager slices that came for c before it. */
static void
take_stash(op_out *o, op_op *op, op_call *c)
{
    op_group *g = op->g;
    for (size_t s = 0; s < g->n && op->status == A2A_OK; s++) {
        op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
        if (g->peer[s] < 0 || rx->state != RX_STASHED)
            continue;
        if (c->discover) { /* it lands once c has placed its slices */
            disc_learn(op, c, (int64_t)s, rx->count);
            continue;
        }
        if (rx->stash_len != (uint64_t)rx->count * c->esize) { /* another dtype's bytes */
            op_fail(o, op, A2A_ERR_INVALID_ARGUMENT, 1,
                    "rank %lld sent %zu bytes for %lld elements, rank %lld receives %s",
                    (long long)s, rx->stash_len, (long long)rx->count, (long long)c->grank,
                    dtype_name((a2a_dtype)c->dtype));
            return;
        }
        uint8_t *bytes = rx->stash;
        rx->stash = NULL;
        rx->state = RX_WAIT;
        land_eager(o, op, c, (int64_t)s, bytes, rx->count);
    }
}

int64_t
op_probe_guard_ms(int64_t ttl_ms)
{
    int64_t tenth = ttl_ms / 10;
    return tenth > OP_PROBE_GUARD_MIN_MS ? tenth : OP_PROBE_GUARD_MIN_MS;
}

/* probe asks the worker of remote s whether s's call is in op still (PROBE after c's READY):
 * c completes only with its ALIVE (op.h, "Probes"). */
static void
probe(op_out *o, op_op *op, op_call *c, int64_t s)
{
    op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];
    if (rx->probe != 0)
        return;
    frame f = frame_of(op, FRAME_PROBE);
    f.src = s;
    f.dst = c->grank;
    rx->probe = 1;
    c->probes_left++;
    log_debug("group \"%s\" operation %llu: rank %lld came close to rank %lld's deadline: "
              "asking worker %s whether its call is still in the operation",
              op->g->name, (unsigned long long)op->num, (long long)c->grank, (long long)s,
              peer_name(op->g, op->g->peer[s]));
    (void)send_frame(o, op->g->peer[s], op, &f);
}

/* send_alive answers a PROBE of remote d's worker: local s's call is (or was, completing it) in
 * op. */
static void
send_alive(op_out *o, op_op *op, int64_t s, int64_t d)
{
    frame f = frame_of(op, FRAME_ALIVE);
    op->tx[PAIR(op, op->g->lidx[s], d)].probed = 0;
    f.src = s;
    f.dst = d;
    (void)send_frame(o, op->g->peer[d], op, &f);
}

void
op_arrive(op_out *o, op_op *op, op_call *c)
{
    op_group *g = op->g;
    size_t n = g->n;
    int64_t me = c->grank;

    op->calls[me] = c;
    op->came[me] = 1;
    op->arrived++;
    c->sends_left = n;
    c->recvs_left = n;
    c->probes_left = 0;
    /* a sender whose READY said its call would be over by now failed this operation without
     * us (its deadline; its ABORT may still be on its way, slower than the application's own
     * barrier): it cannot have completed, for that needed this call; so neither may we */
    for (size_t s = 0; s < n && c->arrive_ms > 0 && op->status == A2A_OK; s++)
        if (g->peer[s] >= 0 && op->expire[s] > 0 && c->arrive_ms > op->expire[s])
            op_fail(o, op, A2A_ERR_DEADLINE_EXCEEDED, 1,
                    "operation %llu on group \"%s\" timed out at group rank %zu (world rank "
                    "%lld) %lld ms before group rank %lld's call came",
                    (unsigned long long)op->num, g->name, s, (long long)g->world[s],
                    (long long)(c->arrive_ms - op->expire[s]), (long long)me);
    if (op->status != A2A_OK)
        return; /* its thread sees the failure (a latecomer's, sent to the members too) */
    c->unknown = c->discover ? n : 0;
    c->placed = 0;
    for (size_t s = 0; s < n; s++)
        op->rx[PAIR(op, c->lidx, s)].expect = c->counts[2 * n + s];
    ready_out(o, op, c);
    take_stash(o, op, c);
    for (size_t s = 0; c->discover && op->rows && s < n && op->status == A2A_OK; s++)
        if (g->peer[s] >= 0 && op->rw.in[s])
            row_count(o, op, c, (int64_t)s, op->rx[PAIR(op, c->lidx, s)].row);
    for (size_t r = 0; r < n && op->status == A2A_OK; r++) {
        op_call *other = op->calls[r];
        if (g->peer[r] >= 0) {
            if (c->counts[r] == 0 || (c->pre != NULL && c->pre_at[r] != UINT64_MAX))
                send_eager(o, op, me, (int64_t)r); /* small: no need to wait for READY */
            else
                pair_start(o, op, me, (int64_t)r); /* READY may have come first */
            continue;
        }
        if (other == NULL || other->finished)
            continue;
        /* local pairs me -> r and r -> me (once for r == me); a discovering receiver
         * learns the count and starts the pair when it places its slices */
        op_tx *t1 = &op->tx[PAIR(op, c->lidx, r)];
        if (other->discover) {
            disc_learn(op, other, me, c->counts[r]);
            if (other != c)
                disc_place(o, op, other);
        } else {
            t1->ready = 1;
            t1->expect = other->counts[2 * n + (size_t)me];
            if (t1->state == TX_WAIT)
                t1->state = TX_READY;
            pair_start(o, op, me, (int64_t)r);
        }
        if (other == c)
            continue;
        op_tx *t2 = &op->tx[PAIR(op, other->lidx, me)];
        if (c->discover) {
            disc_learn(op, c, (int64_t)r, other->counts[me]);
            continue;
        }
        t2->ready = 1;
        t2->expect = c->counts[2 * n + r];
        if (t2->state == TX_WAIT)
            t2->state = TX_READY;
        pair_start(o, op, (int64_t)r, me);
    }
    if (op->status == A2A_OK)
        rows_learn(o, op, me, c->counts, row_cap(c), c->dtype);
    for (size_t r = 0; r < n && op->status == A2A_OK; r++) {
        if (g->peer[r] < 0)
            continue;
        if (g->env->probe_all ||
            (op->guard[r] > 0 && c->arrive_ms > 0 && c->arrive_ms >= op->guard[r]))
            probe(o, op, c, (int64_t)r);
        if (op->tx[PAIR(op, c->lidx, r)].probed) /* r's worker asked before this call came */
            send_alive(o, op, me, (int64_t)r);
    }
    disc_place(o, op, c);
}

void
op_copied(op_out *o, op_op *op, int64_t s, int64_t d, int rv, int wr)
{
    op_call *cs = op->calls[s], *cd = op->calls[d];
    if (rv != 0) {
        op_fail_memory(o, op, wr ? d : s, wr, rv);
        return;
    }
    if (cs == NULL || cd == NULL)
        return;
    tx_done(o, op, cs, d);
    rx_done(o, op, cd, s);
}

void
op_sent(op_out *o, op_call *c, int64_t d, int rv)
{
    op_op *op = c->op;
    if (rv != 0) {
        op_fail_memory(o, op, c->grank, 0, rv);
        return;
    }
    if (op->tx[PAIR(op, c->lidx, d)].state == TX_MOVING)
        tx_done(o, op, c, d);
}

int
op_all_arrived(const op_call *c)
{
    const op_op *op = c->op;
    if (op == NULL || op->status != A2A_OK || c->probes_left > 0)
        return 0;
    for (size_t r = 0; r < op->g->n; r++)
        if (op->g->peer[r] < 0 ? !op->came[r] : !op->tx[PAIR(op, c->lidx, r)].heard)
            return 0;
    return 1;
}

void
op_missing(const op_call *c, char *buf, size_t len)
{
    const op_op *op = c->op;
    size_t n = op->g->n, k = 0, off = 0;
    buf[0] = '\0';
    for (size_t r = 0; r < n && off + 24 < len; r++) {
        const op_rx *rx = &op->rx[PAIR(op, c->lidx, r)];
        const op_tx *tx = &op->tx[PAIR(op, c->lidx, r)];
        int waiting =
            op->g->peer[r] < 0 ? op->calls[r] == NULL : (rx->state == RX_WAIT || !tx->heard);
        if (waiting)
            off += (size_t)snprintf(buf + off, len - off, "%s%zu", k++ ? ", " : "", r);
    }
    if (k == 0 && c->probes_left > 0) {
        off = (size_t)snprintf(buf, len, "none (all arrived; asked whether rank(s) ");
        for (size_t r = 0; r < n && off + 24 < len; r++)
            if (op->rx[PAIR(op, c->lidx, r)].probe == 1)
                off += (size_t)snprintf(buf + off, len - off, "%s%zu", k++ ? ", " : "", r);
        if (off < len)
            snprintf(buf + off, len - off,
                     " are still in it, as this call came close to their "
                     "deadline: no answer)");
    } else if (k == 0)
        snprintf(buf, len, "none (all arrived; data still in flight)");
}

void
op_deadline(op_out *o, op_op *op, const op_call *c, int64_t timeout_ms)
{
    char miss[512];
    op_missing(c, miss, sizeof(miss));
    op_fail(o, op, A2A_ERR_DEADLINE_EXCEEDED, 1,
            "operation %llu on group \"%s\" timed out after %lld ms waiting for group rank(s) %s",
            (unsigned long long)op->num, op->g->name, (long long)timeout_ms, miss);
}

/* ---- asking where the group is ---- */

int
op_ask(op_out *o, op_group *g, op_call *c)
{
    size_t nw = g->env->nworkers;
    frame f = {.type = FRAME_WHERE};

    c->asking = 0;
    c->ask_left = 0;
    c->ask_num = -1;
    c->ask_idle = 1;
    c->ask_busy = -1;
    c->ask_heard = 0;
    c->ask_joined = 0;
    c->ask_st = A2A_OK;
    c->ask_lost = 0;
    c->ask_msg[0] = '\0';
    if ((c->ask_wait = calloc(nw > 0 ? nw : 1, 1)) == NULL)
        return -1;
    c->ask_nw = nw;
    for (size_t r = 0; r < g->n; r++) {
        int p = g->peer[r];
        if (p >= 0 && (size_t)p < nw && !c->ask_wait[p]) {
            c->ask_wait[p] = 1;
            c->ask_left++;
        }
    }
    if (c->ask_left == 0) {
        free(c->ask_wait);
        c->ask_wait = NULL;
        return 0;
    }
    c->ask_token = ++g->ask_seq;
    c->asking = 1;
    c->ask_next = g->asks;
    g->asks = c;
    snprintf(f.id.group, sizeof(f.id.group), "%s", g->name);
    f.id.epoch = g->epoch;
    f.id.op = c->ask_token;
    f.dst = c->grank;
    for (size_t p = 0; p < nw; p++)
        if (c->ask_wait[p] && send_frame(o, (int)p, NULL, &f) == NULL) {
            op_ask_fail(o, c, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
            break;
        }
    return 1;
}

void
op_ask_fail(op_out *o, op_call *c, a2a_status st, const char *msg)
{
    if (!c->asking)
        return;
    c->asking = 0;
    c->ask_st = st;
    snprintf(c->ask_msg, sizeof(c->ask_msg), "%s", msg);
    push_call(o, OPA_WAKE, c);
}

uint64_t
op_ask_number(const op_group *g, const op_call *c, int *wait)
{
    int idle = 0;
    int64_t here = group_seq_where(&g->seq, &idle), n = c->ask_num;
    int known = c->lidx >= 0 && (size_t)c->lidx < g->nlocal && g->seq.known[c->lidx];
    int prior = c->lidx >= 0 && (size_t)c->lidx < g->nlocal && g->seq.prior[c->lidx];
    /* the rank's first job: its k-th call is operation k; unless a member worker saw the rank
     * join the group (HERE bit 3: its world rank was not in the epoch before): the others'
     * numbers went on without it, and no operation of the new members can complete without it,
     * so it joins them (a host added: before, its first call failed on every rank). A first
     * call that is only late must not: it would hold the others' next call's data. Nor is it
     * the first job when an earlier one of the rank called here before this worker restarted
     * (seq.prior: its state file), although nobody heard of it since (it died before any frame
     * of it left, and the restart wiped what this worker knew: the simulator's trace-less job
     * kill), as long as somebody knows a number: else every member is new, and the rule of
     * first jobs is the one they all keep. */
    if (!c->ask_heard && !known && !c->ask_joined && (!prior || (n < 0 && here < 0))) {
        *wait = 0;
        return c->earlier;
    }
    if (here > n)
        *wait = idle;
    else if (here == n)
        *wait = idle && c->ask_idle;
    else
        *wait = c->ask_idle;
    if (here > n)
        n = here;
    *wait = *wait && n > 0;
    /* a rank is still in n - 1, which failed where n came from */
    if (*wait && (c->ask_busy == n - 1 || group_seq_in(&g->seq, n - 1))) {
        *wait = 0;
        return (uint64_t)(n - 1);
    }
    return n > 0 ? (uint64_t)n : 0;
}

op_op *
op_orphan(op_group *g, int64_t r, const op_call *keep,
          int (*gone)(const op_call *c, const void *arg), const void *arg, size_t *grank)
{
    for (op_op *op = g->ops; op != NULL; op = op->next) {
        if (op->status != A2A_OK)
            continue;
        for (size_t i = 0; i < g->n; i++) {
            const op_call *oc = op->calls[i];
            if (oc == NULL || oc == keep || oc->finished || op_call_done(oc) ||
                (r >= 0 && (int64_t)i != r) || (gone != NULL && !gone(oc, arg)))
                continue;
            *grank = i;
            return op;
        }
    }
    return NULL;
}

uint64_t
op_ask_take(const op_group *g, const op_call *c, uint64_t n, int late)
{
    const group_seq *gs = &g->seq;
    size_t l = (size_t)c->lidx;

    int known = l < gs->nlocal && gs->known[l];

    /* late to n - 1: only when the rank's earlier job went away in it here (orphans_fail: a
     * lockstep replacement redoes that round), or when this worker knows nothing of the rank.
     * An operation n - 1 whose failure the earlier job saw (its call returned) is behind the
     * rank; one that failed here without the rank is one the others went on from, and a new
     * job of theirs may well be patient for n too: two new jobs must take the same number. */
    if (late && n > 0 && (!known || (gs->next[l] == n && gs->orphaned[l])))
        n--;
    /* the numbers an earlier job of the rank took here are its own, unless that operation
     * failed: then this call is its latecomer and gets the failure, as the others did */
    if (known && n < gs->next[l] && group_seq_failed(gs, n) == NULL)
        n = gs->next[l];
    return n;
}

int
op_ask_again(const op_group *g, const op_call *c, uint64_t n, int late)
{
    size_t l = (size_t)c->lidx;
    return late && l < g->seq.nlocal && g->seq.orphaned[l] &&
           op_ask_take(g, c, n, 1) < op_ask_take(g, c, n, 0);
}

int
op_ask_moved(const op_call *c, uint64_t first)
{
    return c->ask_st == A2A_OK && (c->ask_num > (int64_t)first || c->ask_busy >= (int64_t)first);
}

int
op_ask_end(op_group *g, op_call *c)
{
    for (op_call **pp = &g->asks; *pp != NULL; pp = &(*pp)->ask_next)
        if (*pp == c) {
            *pp = c->ask_next;
            break;
        }
    c->ask_next = NULL;
    c->asking = 0;
    free(c->ask_wait);
    c->ask_wait = NULL;
    return group_sweep(g);
}

void
op_where(op_out *o, op_group *g, int peer, const frame *f)
{
    if (f->type == FRAME_WHERE) {
        frame r = {.type = FRAME_HERE, .id = f->id, .count = -1};
        int idle = 0;
        if (g != NULL)
            r.count = group_seq_where(&g->seq, &idle);
        r.idle = idle | (g != NULL && g->heard != NULL && f->dst >= 0 && (size_t)f->dst < g->n &&
                                 g->heard[f->dst]
                             ? 2
                             : 0);
        if (g != NULL && group_seq_in(&g->seq, r.count)) /* a rank is in it now */
            r.idle |= 4;
        if (g != NULL && g->joined != NULL && f->dst >= 0 && (size_t)f->dst < g->n &&
            g->joined[f->dst]) /* it is new to the group: its first call joins the others */
            r.idle |= 8;
        (void)send_frame(o, peer, NULL, &r);
        return;
    }
    if (f->type != FRAME_HERE || g == NULL || peer < 0 || (size_t)peer >= g->env->nworkers)
        return;
    for (op_call *c = g->asks; c != NULL; c = c->ask_next)
        if (c->asking && c->ask_token == f->id.op && (size_t)peer < c->ask_nw &&
            c->ask_wait[peer]) {
            c->ask_wait[peer] = 0;
            c->ask_heard |= (f->idle & 2) != 0;
            c->ask_joined |= (f->idle & 8) != 0;
            if ((f->idle & 4) && f->count > c->ask_busy)
                c->ask_busy = f->count;
            if (f->count > c->ask_num) {
                c->ask_num = f->count;
                c->ask_idle = f->idle & 1;
            } else if (f->count == c->ask_num)
                c->ask_idle = c->ask_idle && (f->idle & 1);
            if (--c->ask_left == 0) {
                c->asking = 0;
                push_call(o, OPA_WAKE, c);
            }
            return;
        }
}

int
op_group_carry(op_group *g, const op_group *old)
{
    int rv = 0;
    for (size_t i = 0; i < g->n; i++) {
        int was = 0, joined = 0, heard = 0;
        for (size_t j = 0; j < old->n && !was; j++)
            if (g->world[i] == old->world[j]) {
                was = 1;
                heard = old->heard != NULL && old->heard[j];
                joined = old->joined != NULL && old->joined[j];
            }
        if (heard) {
            if (g->heard == NULL && (g->heard = calloc(g->n > 0 ? g->n : 1, 1)) == NULL)
                rv = -1;
            else
                g->heard[i] = 1;
        } else if (!was || joined) {
            if (g->joined == NULL && (g->joined = calloc(g->n > 0 ? g->n : 1, 1)) == NULL)
                rv = -1;
            else
                g->joined[i] = 1;
        }
    }
    return rv;
}

/* heard notes that a frame of group rank r came from its worker peer. */
static void
heard(op_group *g, int peer, int64_t r)
{
    if (r < 0 || (size_t)r >= g->n || g->peer[r] != peer)
        return;
    if (g->heard == NULL && (g->heard = calloc(g->n, 1)) == NULL)
        return;
    g->heard[r] = 1;
    if (g->joined != NULL)
        g->joined[r] = 0;
}

/* ---- frames ---- */

/* reply_abort tells peer that the operation of f failed (or is gone); resync: 0, or where
 * the next calls resynchronise. */
static void
reply_abort(op_out *o, int peer, const frame *f, a2a_status st, const char *msg, uint64_t resync)
{
    frame r = {.type = FRAME_ABORT, .id = f->id, .status = st, .resync = resync};
    snprintf(r.message, sizeof(r.message), "%s", msg);
    (void)send_frame(o, peer, NULL, &r);
}

/* ops_top returns the highest number of g's operations here (0 with none). */
static uint64_t
ops_top(const op_group *g)
{
    uint64_t top = 0;
    for (const op_op *op = g->ops; op != NULL; op = op->next)
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
numbers_differ(op_out *o, op_group *g, int peer, uint64_t source, const frame *f)
{
    char msg[GROUP_MSG_MAX];
    uint64_t top = group_seq_top(&g->seq, ops_top(g));
    uint64_t r = (f->id.op > top ? f->id.op : top) + 1;

    if (group_seq_differ(&g->seq, source, f->id.op)) { /* a straggler of the call that made us
                                                          resync */
        if (f->type == FRAME_READY || f->type == FRAME_SLICE)
            reply_abort(o, peer, f, A2A_ERR_UNAVAILABLE,
                        "operation numbers differ (a worker and its jobs restarted): the next "
                        "calls resynchronise",
                        g->seq.floor);
        return;
    }
    /* where this worker's ranks are, and why the frame's number is none of theirs */
    uint64_t lo = UINT64_MAX; /* the slowest local rank's operation: the one it is in, or next */
    for (size_t i = 0; i < g->seq.nlocal; i++) {
        uint64_t n = g->seq.busy[i] ? g->seq.next[i] - 1 : g->seq.next[i];
        if (g->seq.known[i] && n < lo)
            lo = n;
    }
    char where[200];
    if (lo == UINT64_MAX)
        snprintf(where, sizeof(where), "knows no rank's number and holds %zu operations", g->nops);
    else if (f->id.op < lo)
        snprintf(where, sizeof(where),
                 "has every rank past it (the slowest at operation %llu), and it did not fail "
                 "there",
                 (unsigned long long)lo);
    else
        snprintf(where, sizeof(where),
                 "has its slowest rank at operation %llu, %d or more behind it",
                 (unsigned long long)lo, GROUP_WINDOW);
    snprintf(msg, sizeof(msg),
             "worker %s is at operation %llu of group \"%s\", which no rank of worker %s can "
             "be in: worker %s %s (their operation numbers differ: a worker and its jobs "
             "restarted); this call fails and the next ones resynchronise at %llu",
             peer_name(g, peer), (unsigned long long)f->id.op, g->name, g->env->self, g->env->self,
             where, (unsigned long long)r);
    log_info("%s", msg);
    (void)group_seq_resync(&g->seq, r, ops_top(g));
    if (f->type == FRAME_READY || f->type == FRAME_SLICE)
        reply_abort(o, peer, f, A2A_ERR_UNAVAILABLE, msg, r);
    for (op_op *op = g->ops; op != NULL; op = op->next)
        if (op->arrived > op->left && op->status == A2A_OK) {
            op->resync = r;
            op_fail(o, op, A2A_ERR_UNAVAILABLE, 1, "%s", msg);
        }
}

/* older_epoch: a frame of an epoch before ours; its sender has not seen the group change. */
static void
older_epoch(op_out *o, op_group *g, int peer, const frame *f)
{
    char msg[600];
    group_pos pos = group_seq_classify(&g->seq, f->id.op, op_get(g, f->id.op, 0) != NULL, g->nops);

    if (f->type == FRAME_ABORT && f->resync > 0)
        (void)group_seq_resync(&g->seq, f->resync, ops_top(g));
    snprintf(msg, sizeof(msg),
             "group \"%s\" changed while operation %llu ran (epoch %llu at worker %s, %llu at "
             "%s: a member worker restarted or the group was redefined); the next call uses the "
             "new group",
             g->name, (unsigned long long)f->id.op, (unsigned long long)f->id.epoch,
             peer_name(g, peer), (unsigned long long)g->epoch, g->env->self);
    if (f->type == FRAME_READY || f->type == FRAME_SLICE || f->type == FRAME_PROBE) {
        frame newer = *f;
        reply_abort(o, peer, f, A2A_ERR_UNAVAILABLE, msg, 0);
        /* and the same in our epoch: newer for the sender, which then resolves the group again
         * before its next call instead of running it in the old epoch once more */
        newer.id.epoch = g->epoch;
        reply_abort(o, peer, &newer, A2A_ERR_UNAVAILABLE, msg, 0);
    }
    /* the sender's call of that number fails: ours of the same number fails with it */
    if (pos == GROUP_ACTIVE)
        op_fail_num(o, g, f->id.op, f->type == FRAME_ABORT ? f->status : A2A_ERR_UNAVAILABLE,
                    f->type != FRAME_ABORT, f->type == FRAME_ABORT ? f->message : msg);
}

static void
on_ready(op_out *o, op_group *g, int peer, op_op *op, const frame *f)
{
    if (f->dst < 0 || f->dst >= (int64_t)g->n || g->peer[f->dst] != peer) {
        log_warn("READY from %s for rank %lld, which it does not host", peer_name(g, peer),
                 (long long)f->dst);
        return;
    }
    for (size_t i = 0; i < f->n; i++) {
        int64_t s = f->srcs[i];
        op_tx *tx;
        if (s < 0 || s >= (int64_t)g->n || g->lidx[s] < 0)
            continue;
        tx = &op->tx[PAIR(op, g->lidx[s], f->dst)];
        tx->heard = 1;
        if (tx->ready)
            continue;
        tx->ready = 1;
        tx->expect = f->counts[i];
        if (tx->state == TX_WAIT || tx->state == TX_ANNOUNCED)
            tx->state = TX_READY;
        pair_start(o, op, s, f->dst);
    }
    if (!op->rows || op->rw.in[f->dst] || op->status != A2A_OK)
        return; /* a second READY (a discoverer's go) carries no row */
    if (f->nrow == g->n)
        rows_learn(o, op, f->dst, f->row, f->cap, f->dtype);
    else
        rows_off(o, op);
}

static void
on_slice(op_out *o, op_group *g, int peer, op_op *op, frame *f)
{
    op_call *c;
    op_rx *rx;

    if (f->src < 0 || f->dst < 0 || f->src >= (int64_t)g->n || f->dst >= (int64_t)g->n ||
        g->peer[f->src] != peer || g->lidx[f->dst] < 0)
        return;
    c = op->calls[f->dst];
    rx = &op->rx[PAIR(op, g->lidx[f->dst], f->src)];
    if ((rx->state != RX_WAIT && rx->state != RX_COUNTED) || op->status != A2A_OK ||
        (c != NULL && c->finished))
        return;
    if (f->count > 0 && f->payload == NULL && c == NULL)
        return; /* not eager, yet before READY: not from a worker that follows the protocol */
    /* the frame decoder checked payload == count * dtype size <= FRAME_EAGER_MAX; the group's
     * own limit is ours to check */
    if (f->payload != NULL && f->payload_len > op_eager_max(g->n)) {
        op_fail(o, op, A2A_ERR_INTERNAL, 1,
                "rank %lld sent rank %lld an eager slice of %zu bytes (limit %llu in a group of "
                "%zu)",
                (long long)f->src, (long long)f->dst, f->payload_len,
                (unsigned long long)op_eager_max(g->n), g->n);
        return;
    }
    if (c == NULL) { /* eager, before d: keep it until d comes (bounded: op_eager_max) */
        rx->state = RX_STASHED;
        rx->count = f->count;
        rx->stash_len = f->payload_len;
        rx->stash = f->payload;
        f->payload = NULL;
        f->payload_len = 0;
        return;
    }
    if (c->discover) {
        disc_slice(o, op, c, rx, f);
        return;
    }
    if (f->payload != NULL) {
        if (f->payload_len != (uint64_t)f->count * c->esize) {
            op_fail(o, op, A2A_ERR_INVALID_ARGUMENT, 1, "rank %lld sends %s, rank %lld receives %s",
                    (long long)f->src, dtype_name((a2a_dtype)f->dtype), (long long)f->dst,
                    dtype_name((a2a_dtype)c->dtype));
            return;
        }
        uint8_t *bytes = f->payload;
        f->payload = NULL;
        f->payload_len = 0;
        land_eager(o, op, c, f->src, bytes, f->count);
        return;
    }
    if (f->count != rx->expect) {
        count_mismatch(o, op, c, f->src, f->count, f->dst, rx->expect);
        return;
    }
    rx->count = f->count;
    rx->state = RX_DATA;
    if (f->count == 0)
        rx_done(o, op, c, f->src);
}

/* on_probe handles a PROBE (answered ALIVE, ABORT, or kept until the call it asks about comes)
 * or an ALIVE (the awaited answer lets the call that asked complete) of g's epoch. */
static void
on_probe(op_out *o, op_group *g, int peer, const frame *f)
{
    op_op *op = op_get(g, f->id.op, 0);
    group_pos pos = group_seq_classify(&g->seq, f->id.op, op != NULL, g->nops);
    int64_t s = f->src, d = f->dst; /* s: the rank asked about; d: the rank that asks */

    if (s < 0 || d < 0 || (size_t)s >= g->n || (size_t)d >= g->n) /* the decoder bounds them */
        return;
    if (f->type == FRAME_ALIVE) {
        op_call *c = op != NULL ? op->calls[d] : NULL;
        op_rx *rx;
        if (c == NULL || c->finished || g->peer[s] != peer || pos != GROUP_ACTIVE)
            return; /* the call is gone (failed, or answered by an ABORT): nothing waits */
        rx = &op->rx[PAIR(op, c->lidx, s)];
        if (rx->probe != 1)
            return; /* not asked, or answered: a duplicate */
        rx->probe = 2;
        c->probes_left--;
        check_done(o, c);
        return;
    }
    if (g->lidx[s] < 0 || g->peer[d] != peer) {
        log_warn("PROBE from %s about rank %lld for rank %lld of group \"%s\": not ranks of "
                 "this worker and of the sender",
                 peer_name(g, peer), (long long)s, (long long)d, g->name);
        return;
    }
    switch (pos) {
    case GROUP_PAST_FAILED: {
        const group_failed *h = group_seq_failed(&g->seq, f->id.op);
        reply_abort(o, peer, f, h->status, h->msg, 0);
        return;
    }
    case GROUP_PAST: { /* every rank here is past it, and it did not fail: s completed it */
        frame a = *f;
        a.type = FRAME_ALIVE;
        (void)send_frame(o, peer, NULL, &a);
        return;
    }
    case GROUP_FUTURE: {
        char msg[300];
        snprintf(msg, sizeof(msg),
                 "worker %s has no operation %llu of group \"%s\" (its ranks are far behind "
                 "it): rank %lld's call cannot be confirmed",
                 g->env->self, (unsigned long long)f->id.op, g->name, (long long)s);
        reply_abort(o, peer, f, A2A_ERR_UNAVAILABLE, msg, 0);
        return;
    }
    case GROUP_ACTIVE: break;
    }
    if (op == NULL && (op = op_get(g, f->id.op, 1)) == NULL) {
        log_warn("out of memory: dropping a PROBE of group \"%s\"", g->name);
        return; /* the asking call sees its deadline */
    }
    op_call *c = op->calls[s];
    if (op->status == A2A_OK && c != NULL && !c->finished && !op_call_done(c) && f->expire > 0 &&
        c->arrive_ms > 0 && c->ttl_ms > 0 && f->expire >= c->arrive_ms + c->ttl_ms)
        /* s's deadline passed and its thread has not said so yet (this worker was stopped, or
         * busy): s is not in it any more, and the operation fails for everyone now. Not when
         * s is done: it completed (its answer may be out already), ALIVE says so */
        op_deadline(o, op, c, c->ttl_ms);
    if (op->status != A2A_OK)
        reply_abort(o, peer, f, op->status, op->msg, 0);
    else if (op->came[s])
        send_alive(o, op, s, d); /* in it, or completed it */
    else
        op->tx[PAIR(op, g->lidx[s], d)].probed = 1; /* answered as s comes, or fails */
}

void
op_frame(op_out *o, op_group *g, int peer, uint64_t source, frame *f)
{
    const group_failed *h;
    op_op *op;

    if (f->type == FRAME_WHERE || f->type == FRAME_HERE) { /* of any epoch */
        op_where(o, g, peer, f);
        return;
    }
    if (g->epoch > f->id.epoch) {
        if (f->type != FRAME_ALIVE) /* an answer for an operation gone with its epoch */
            older_epoch(o, g, peer, f);
        (void)group_sweep(g);
        return;
    }
    if (f->type == FRAME_PROBE || f->type == FRAME_ALIVE) {
        on_probe(o, g, peer, f);
        (void)group_sweep(g);
        return;
    }
    if (f->type == FRAME_ABORT && f->resync > 0 &&
        !group_seq_resync(&g->seq, f->resync, ops_top(g)))
        log_warn("ABORT from %s for operation %llu of group \"%s\" resynchronises at %llu, far "
                 "beyond any number here: ignored",
                 peer_name(g, peer), (unsigned long long)f->id.op, g->name,
                 (unsigned long long)f->resync);
    op = op_get(g, f->id.op, 0);
    switch (group_seq_classify(&g->seq, f->id.op, op != NULL, g->nops)) {
    case GROUP_ACTIVE: break;
    case GROUP_PAST_FAILED:
        h = group_seq_failed(&g->seq, f->id.op);
        if (f->type == FRAME_READY || f->type == FRAME_SLICE)
            reply_abort(o, peer, f, h->status, h->msg, 0);
        return;
    case GROUP_PAST:
        if (f->type == FRAME_READY && f->nrow == 0 && g->n <= FRAME_ROW_MAX) {
            /* a discoverer's go (first READYs of such groups carry their row) for an operation
             * done here: its eager slices from here were done at the rows' judgement */
            log_debug("group \"%s\": the go READY of rank %lld for operation %llu, done here",
                      g->name, (long long)f->dst, (unsigned long long)f->id.op);
            return;
        }
        /* fall through */
    case GROUP_FUTURE:
        if (f->type == FRAME_READY)
            group_seq_saw(&g->seq, f->id.op);
        if (f->type == FRAME_ABORT)
            group_seq_heard_failed(&g->seq, f->id.op);
        else
            numbers_differ(o, g, peer, source, f);
        (void)group_sweep(g);
        return;
    }
    if (f->type == FRAME_READY)
        group_seq_saw(&g->seq, f->id.op);
    if (f->type == FRAME_READY || f->type == FRAME_SLICE)
        heard(g, peer, f->type == FRAME_READY ? f->dst : f->src);
    if (op == NULL) {
        if ((op = op_get(g, f->id.op, 1)) == NULL) {
            log_warn("out of memory: dropping a frame of group \"%s\"", g->name);
            return;
        }
        for (op_call *c = g->asks; c != NULL; c = c->ask_next)
            push_call(o, OPA_WAKE, c); /* one may wait for the others' frames (op_ask_number) */
    }
    switch (f->type) {
    case FRAME_READY:
        if (op->status != A2A_OK)
            reply_abort(o, peer, f, op->status, op->msg, 0);
        else {
            if (f->expire > 0 && f->dst >= 0 && (size_t)f->dst < g->n && g->peer[f->dst] == peer) {
                int64_t guard = op_probe_guard_ms(f->ttl);
                op->expire[f->dst] = f->expire;
                op->guard[f->dst] = f->expire - guard;
                /* calls here already: their READYs went before this one came, and it had
                 * less than the guard left (calls that come later judge by the guard) */
                for (size_t r = 0; f->ttl <= guard && r < g->n; r++)
                    if (op->calls[r] != NULL && !op->calls[r]->finished)
                        probe(o, op, op->calls[r], f->dst);
            }
            on_ready(o, g, peer, op, f);
        }
        break;
    case FRAME_SLICE: on_slice(o, g, peer, op, f); break;
    case FRAME_ABORT: op_fail(o, op, f->status, 0, "%s", f->message); break;
    default: break;
    }
    (void)group_sweep(g);
}

op_call *
op_data_target(op_out *o, op_group *g, int peer, const frame *f, uint64_t len, uint64_t *off)
{
    op_op *op;
    op_call *c;
    op_rx *rx;

    if (g->epoch != f->id.epoch || (op = op_get(g, f->id.op, 0)) == NULL)
        return NULL;
    if (f->src < 0 || f->dst < 0 || f->src >= (int64_t)g->n || f->dst >= (int64_t)g->n ||
        g->peer[f->src] != peer || g->lidx[f->dst] < 0)
        return NULL;
    c = op->calls[f->dst];
    rx = &op->rx[PAIR(op, g->lidx[f->dst], f->src)];
    if (c == NULL || c->finished || op->status != A2A_OK || rx->state != RX_DATA)
        return NULL;
    if (f->offset != rx->bytes || len > (uint64_t)rx->count * c->esize - rx->bytes) {
        op_fail(o, op, A2A_ERR_INTERNAL, 1,
                "rank %lld's data for rank %lld arrived out of order (offset %llu, expected %llu)",
                (long long)f->src, (long long)f->dst, (unsigned long long)f->offset,
                (unsigned long long)rx->bytes);
        return NULL;
    }
    /* a discoverer's slice may stream before it placed them: at the SLICE's place (rows_slice) */
    *off = (uint64_t)(rx->has_at ? rx->at : c->counts[3 * g->n + f->src]) * c->esize + f->offset;
    return c;
}

void
op_data_landed(op_out *o, op_call *c, int64_t s, uint64_t len, int rv)
{
    op_op *op = c->op;
    op_rx *rx = &op->rx[PAIR(op, c->lidx, s)];

    if (rv < 0) /* the link broke: the peer's loss fails the operation */
        return;
    if (rv > 0) {
        op_fail_memory(o, op, c->grank, 1, rv);
        return;
    }
    if (c->finished || op->status != A2A_OK || rx->state != RX_DATA)
        return;
    rx->bytes += len;
    if (rx->bytes == (uint64_t)rx->count * c->esize)
        rx_done(o, op, c, s);
}
