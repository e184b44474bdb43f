/*
 * opsim.h - a simulator of workers around worker/op.c, the operations' state machine: what
 * the engine does with its actions, links as FIFO queues, jobs' buffers whose every element
 * names its operation, sender, receiver and index. Used by tests/unit/test_op.c (every order
 * of events) and tests/fuzz/fuzz_op.c (orders and hostile frames chosen by the fuzzer).
 * Static functions only: include it once per program.
 *
 * Job kills (sim.kills, EV_JOBKILL) model engine.c: a rank's job dies in a call, asking or
 * between calls; its call thread goes on in the worker as a "ghost" (slot n + i of S->r, with
 * the dead job's buffers, which the worker keeps mapped) whose result nobody sees, until the
 * worker sees the session close (EV_GONE: engine_sess_gone, orphans_fail) or the rank's new
 * job calls while the ghost is still in an operation (call_run: orphans_fail of that rank);
 * either fails, for every member, the operations the ghost is in and not done with. The new
 * job's first call has no number and asks (op_ask). In lockstep the new job first reads the
 * barrier (EV_JOBSTART: seqcheck.c's lockstep_mode, the highest round any member's file says),
 * before or after the others leave the dead job's round (can_jobstart), and the data names the
 * round as well as the operation. Also checked: a ghost never enters an operation, nor completes
 * one it was not done with, after its worker saw the job gone; no rank is twice in one
 * operation. sim_kill_asking (on by default: a job dies while its first call asks) and
 * sim_early_read (off: the known gap test_op.c describes) widen the model.
 */
#ifndef A2A_TESTS_OPSIM_H
#define A2A_TESTS_OPSIM_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/op.h"

#define MAXW 3
#define MAXN 4
#define MAXK 4               /* calls per rank */
#define MAXQ 128             /* frames queued on one link */
#define BIGSLICE 4200        /* int64: over the eager limit (FRAME_EAGER_MAX bytes) */
#define CHUNK (BIGSLICE * 4) /* bytes of a DATA frame: slices of BIGSLICE int64 go in two */
_Static_assert(BIGSLICE * 8 > FRAME_EAGER_MAX, "BIGSLICE must be streamed");

typedef struct {
    frame f;
    uint8_t *payload;
    size_t plen;
} qmsg;

typedef struct {
    qmsg m[MAXQ];
    size_t head, tail;
} queue;

typedef struct {
    int w;      /* its worker */
    int id;     /* its group rank */
    op_call oc; /* in the machine while in a call */
    int64_t counts[MAXK][4 * MAXN];
    int64_t *sendbuf[MAXK], *recvbuf[MAXK];
    int64_t send_len[MAXK], recv_len[MAXK];
    uint64_t pre_at[MAXN];
    int k;       /* calls made so far */
    int in_call; /* between arrival and return */
    int asking;  /* its call asks where the group is (op_ask), before it has a number */
    int patient; /* its ask ended idle: it waits for the others' frames of patient_num */
    uint64_t patient_num;
    int reasking;     /* patience ran out, late to patient_num - 1 as an orphan's replacement: it
                       * asks again whether the others called patient_num meanwhile (ask_where) */
    int64_t job_next; /* the job's next number (-1: first call) */
    int job_failed;
    a2a_status st[MAXK];
    uint64_t num[MAXK];
    int returned[MAXK];
    int64_t todo[MAXN][2];
    size_t ntodo;
    /* job kills (EV_JOBKILL): a slot of S->r past n is the call thread of a dead job, which
     * goes on in the worker as the engine's does (a ghost: nobody sees its results) */
    int ghost;        /* this slot holds a dead job's call (in a call or asking) */
    int sess_open;    /* its job died, the worker has not seen its session close (EV_GONE) */
    int nojob;        /* lockstep: its job died, the replacement has not read the barrier */
    int64_t file;     /* lockstep, nojob: the round the dead job's barrier file says */
    int killed[MAXK]; /* its job died in this call (or the replacement skipped the round) */
    int dead_in;      /* its dead job died in a call (or asking) */
    int dead_asking;  /* ... asking: its call had no number, nothing of it in an operation */
    int seen;         /* a ghost: its worker knows the job is gone (EV_GONE, or a new job called) */
    int seen_done;    /* a ghost: its call was done then (every pair of it) */
    int dead_st;      /* 1 + the status its dead job's call ended with (0: not yet) */
} rank;

typedef struct {
    int64_t s, d;
    int rank; /* the sender's slot in S->r (a dead job's call: past n) */
    int peer;
    uint64_t off, len, sent;
    int live;
} stream;

typedef struct {
    size_t n, nw, K;
    int where[MAXN]; /* worker of each group rank */
    op_group *g[MAXW];
    op_env env[MAXW];
    const char *names[MAXW];
    queue q[MAXW][MAXW]; /* q[a][b]: a -> b */
    rank r[2 * MAXN];    /* the ranks' jobs; r[n + i]: rank i's dead job's call (ghost) */
    stream st[MAXW][64];
    size_t nst[MAXW];
    int faults;         /* faults allowed in this run */
    int faulted;        /* faults that happened */
    int kills;          /* job kills allowed in this run (EV_JOBKILL; not in faults) */
    int killed;         /* job kills that happened */
    int lost;           /* a dead job's call ended unnumbered: its rank made one call less, so
                         * (not in lockstep) another rank's last call may have no partner */
    int hostile;        /* frames no worker sent were delivered (fuzz_op.c): data is unchecked */
    int restarts[MAXW]; /* times each worker restarted (its incarnation) */
    int lockstep;       /* ranks call round k only when every rank returned from round k - 1, faults
                           come in rounds 0 and 1 only, and the last round must be OK everywhere */
    int recorded[MAXN]; /* a call of that rank reached its worker: its state file says so
                           (engine.c prior_note), which survives a restart (seq.prior) */
    int no_prior;       /* restarts forget that too (before the state file: OP_NO_PRIOR=1) */
    int no_reask;       /* an orphan's replacement late to its dead job's operation takes it
                           without asking again (ask_where before the re-ask: OP_NO_REASK=1) */
    char err[512];      /* the first broken invariant */
} sim;

static const char *wnames[MAXW] = {"w0", "w1", "w2"};
static int sim_lockstep; /* the next sims are in lockstep (sim.lockstep) */
static int sim_jobkills; /* job kills allowed in the next sims (sim.kills) */
static int sim_kill_asking =
    1; /* a job may die while its first call asks (OP_KILL_ASKING=0: not) */
/* lockstep: a replacement may read the barrier while the others are still in the round its
 * dead job was in, even when that round's operation may still complete (see can_jobstart) */
static int sim_early_read = 0;
/* every call probes every remote member (op_env.probe_all): without a clock, any call may come
 * within the guard of a member's expiry, which the engine's probes are for (OP_PROBE_ALL) */
static int sim_probe_all = 0;
/* lockstep: the last round must be OK on every rank (0: only the other checks, for a walk
 * whose recovery is a known gap while its safety is not) */
static int sim_recovery = 1;

/* elem: element i of s's slice to d in operation num, round k (lockstep: the round is what the
 * application sees, so it is in the data too; elsewhere call indices mean nothing to others) */
static int64_t
elem(const sim *S, uint64_t num, int k, int64_t s, int64_t d, int64_t i)
{
    uint64_t round = S->lockstep ? (uint64_t)k << 16 : 0;
    return (int64_t)((num << 40) | ((uint64_t)s << 32) | ((uint64_t)d << 24) | round | (uint64_t)i);
}

static void bad(sim *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
bad(sim *S, const char *fmt, ...)
{
    va_list ap;
    if (S->err[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(S->err, sizeof(S->err), fmt, ap);
    va_end(ap);
}

/* Count discovery: bit i set, rank i's calls give no receive counts (capacity: what its
 * partners of the same call index send); op.c writes them (test_op.c sets it). */
static unsigned sim_discover_mask;

/* counts: 0, 3 (eager) or BIGSLICE int64 (streamed, two chunks) by a pattern of the pair and
 * call */
static int64_t
pattern(size_t s, size_t d, int k, unsigned mix)
{
    unsigned v = (unsigned)(s * 7 + d * 3 + (size_t)k * 5 + mix) % 5;
    return v == 0 ? 0 : v == 4 ? BIGSLICE : 3;
}

static void
sim_init(sim *S, size_t n, size_t nw, const int *where, size_t K, int faults, unsigned mix)
{
    memset(S, 0, sizeof(*S));
    S->n = n;
    S->nw = nw;
    S->K = K;
    S->faults = faults;
    S->kills = sim_jobkills;
    S->lockstep = sim_lockstep;
    S->no_reask = getenv("OP_NO_REASK") != NULL && atoi(getenv("OP_NO_REASK")) != 0;
    S->no_prior = getenv("OP_NO_PRIOR") != NULL && atoi(getenv("OP_NO_PRIOR")) != 0;
    for (size_t w = 0; w < nw; w++)
        S->names[w] = wnames[w];
    for (size_t w = 0; w < nw; w++) {
        op_group *g = calloc(1, sizeof(*g));
        int64_t world[MAXN];
        S->env[w] = (op_env){
            .self = wnames[w], .workers = S->names, .nworkers = nw, .probe_all = sim_probe_all};
        g->env = &S->env[w];
        snprintf(g->name, sizeof(g->name), "sim");
        g->epoch = 7;
        g->n = n;
        g->world = calloc(n, sizeof(int64_t));
        g->peer = calloc(n, sizeof(int));
        g->lidx = calloc(n, sizeof(int));
        for (size_t i = 0; i < n; i++) {
            g->world[i] = (int64_t)i;
            g->peer[i] = where[i] == (int)w ? -1 : where[i];
            g->lidx[i] = where[i] == (int)w ? (int)g->nlocal : -1;
            if (where[i] == (int)w)
                world[g->nlocal++] = (int64_t)i;
        }
        if (group_seq_init(&g->seq, g->nlocal, world) != 0)
            abort();
        S->g[w] = g;
    }
    for (size_t i = 0; i < n; i++) {
        rank *R = &S->r[i];
        S->where[i] = where[i];
        R->w = where[i];
        R->id = (int)i;
        R->job_next = -1;
        for (size_t k = 0; k < K; k++) {
            int64_t *c = R->counts[k], sl = 0, rl = 0;
            for (size_t d = 0; d < n; d++) {
                c[d] = pattern(i, d, (int)k, mix);
                c[n + d] = sl;
                sl += c[d];
                c[2 * n + d] = pattern(d, i, (int)k, mix);
                c[3 * n + d] = rl;
                rl += c[2 * n + d];
            }
            R->send_len[k] = sl;
            R->recv_len[k] = rl;
            R->sendbuf[k] = calloc((size_t)sl + 1, sizeof(int64_t));
            R->recvbuf[k] = calloc((size_t)rl + 1, sizeof(int64_t));
            R->st[k] = (a2a_status)-1;
        }
    }
}

static void
sim_fini(sim *S)
{
    for (size_t w = 0; w < S->nw; w++) {
        op_group *g = S->g[w];
        while (g->ops != NULL) { /* what is left: force it out */
            op_op *op = g->ops;
            op->left = op->arrived;
            op->status = op->status == A2A_OK ? A2A_ERR_INTERNAL : op->status;
            group_sweep(g);
            if (g->ops == op)
                break;
        }
        if (g->ops == NULL)
            group_free(g);
        else {
            g->retired = 1;
            for (op_op *op = g->ops; op != NULL; op = op->next)
                op->left = op->arrived, op->status = A2A_ERR_INTERNAL;
            group_sweep(g);
        }
        for (size_t b = 0; b < S->nw; b++)
            for (size_t i = S->q[w][b].head; i < S->q[w][b].tail; i++) {
                free(S->q[w][b].m[i].f.srcs);
                free(S->q[w][b].m[i].f.counts);
                free(S->q[w][b].m[i].payload);
            }
    }
    for (size_t i = 0; i < 2 * S->n; i++) {
        if (i >= S->n && !S->r[i].ghost)
            continue;
        for (size_t k = 0; k < S->K; k++) {
            free(S->r[i].sendbuf[k]);
            free(S->r[i].recvbuf[k]);
        }
        if (S->r[i].asking) /* a run cut short (a state seen before) while it asked */
            free(S->r[i].oc.ask_wait);
    }
}

static void
enqueue(sim *S, int from, int to, const frame *f, const uint8_t *payload, size_t plen)
{
    queue *q = &S->q[from][to];
    qmsg *m;
    if (q->tail == MAXQ) {
        bad(S, "link w%d -> w%d over %d frames", from, to, MAXQ);
        return;
    }
    m = &q->m[q->tail++];
    m->f = *f;
    m->f.srcs = NULL;
    m->f.counts = NULL;
    if (f->n > 0) {
        m->f.srcs = malloc(f->n * sizeof(int64_t));
        m->f.counts = malloc(f->n * sizeof(int64_t));
        memcpy(m->f.srcs, f->srcs, f->n * sizeof(int64_t));
        memcpy(m->f.counts, f->counts, f->n * sizeof(int64_t));
    }
    m->payload = NULL;
    m->plen = plen;
    if (plen > 0) {
        m->payload = malloc(plen);
        memcpy(m->payload, payload, plen);
    }
}

static rank *
rank_of(sim *S, const op_call *c)
{
    for (size_t i = 0; i < 2 * S->n; i++)
        if (&S->r[i].oc == c && (i < S->n || S->r[i].ghost))
            return &S->r[i];
    return NULL;
}

/* run: what the engine does with the actions (engine_run) */
static void
run(sim *S, int w, op_out *o)
{
    for (size_t i = 0; i < o->n; i++) {
        op_act a = o->a[i];
        rank *R = a.call != NULL ? rank_of(S, a.call) : NULL;
        switch (a.type) {
        case OPA_SEND: enqueue(S, w, a.peer, &a.f, a.payload, a.plen); break;
        case OPA_STREAM: {
            stream *st = &S->st[w][S->nst[w]++];
            *st = (stream){.s = a.s,
                           .d = a.d,
                           .rank = (int)(R - S->r), /* its slot */
                           .peer = a.peer,
                           .off = a.off,
                           .len = a.len,
                           .live = 1};
            break;
        }
        case OPA_COPY:
            if (R->ntodo == MAXN) {
                bad(S, "more than %d local copies for rank %td", MAXN, R - S->r);
                break;
            }
            R->todo[R->ntodo][0] = a.s;
            R->todo[R->ntodo++][1] = a.d;
            break;
        case OPA_LAND: {
            if (a.call->op->status != A2A_OK || a.call->finished)
                break;
            int k = R->k - 1;
            if (a.off + a.len > (uint64_t)R->recv_len[k] * 8)
                bad(S, "LAND past rank %td's receive buffer", R - S->r);
            else
                memcpy((uint8_t *)R->recvbuf[k] + a.off, a.bytes, (size_t)a.len);
            op_landed(o, a.call, a.s, 0);
            break;
        }
        case OPA_WAKE: break;
        case OPA_DROP:
            for (size_t j = 0; j < S->nst[w]; j++)
                if (S->st[w][j].live && &S->r[S->st[w][j].rank].oc == a.call)
                    S->st[w][j].live = 0;
            break;
        }
    }
    op_out_reset(o);
}

/* ---- events ---- */

typedef enum {
    EV_ARRIVE,
    EV_DELIVER,
    EV_CHUNK,
    EV_COPY,
    EV_RETURN,
    EV_GONE,     /* a dead job's worker sees its session close (engine_sess_gone) */
    EV_JOBSTART, /* lockstep: a dead job's replacement reads the barrier */
    EV_DEADLINE, /* the faults: from here on */
    EV_LOSS,
    EV_RESTART,
    EV_DOWN,   /* a restart after which what was queued for the worker is lost too (it was down) */
    EV_JOBKILL /* a rank's job dies (anywhere: in a call, asking, between calls) */
} ev_type;

typedef struct {
    ev_type type;
    int a,
        b; /* rank (its slot: past n, a dead job's call); or link a -> b; or worker a, stream b */
} event;

/* file_of: the round lockstep rank i's barrier file says (seqcheck.c: the round it is in, or
 * the next one once it returned) */
static int64_t
file_of(const sim *S, size_t i)
{
    const rank *R = &S->r[i];
    if (R->nojob)
        return R->file;
    return R->k - (R->in_call || R->asking ? 1 : 0);
}

/* can_jobstart: lockstep, rank i's replacement may read the barrier now. It begins at the
 * highest round the members' files say: after the others returned from the round its dead job
 * was in, the next one; before, that round again. The latter is safe only when that round
 * fails for everyone: a rank that returns OK from it will not call it again, and the
 * replacement, doing it again alone, waits for its deadline (seqcheck.c does the same; the
 * ranks then stay one operation apart, see sim_early_read). So while another rank is not past
 * that round, the replacement reads the barrier only once that rank's call of it failed. */
static int
can_jobstart(const sim *S, size_t i)
{
    const rank *R = &S->r[i];
    if (sim_early_read || !R->dead_in)
        return 1;
    /* a job that died asking, whose call can no longer enter an operation (it ended
     * unnumbered, or its worker saw the job gone: call_run refuses it), left nothing there: the
     * others' round waits for the rank (the replacement's call) or fails without it, either way
     * for everyone. Once it entered one (dead_asking cleared), as a job that died in a call. */
    if (R->dead_asking) {
        const rank *G = &S->r[S->n + i];
        return !(G->ghost && G->asking && !G->seen);
    }
    for (size_t j = 0; j < S->n; j++) {
        const rank *Q = &S->r[j];
        if (j == i || file_of(S, j) > R->file) /* past it */
            continue;
        if (!Q->in_call || Q->oc.op->status == A2A_OK)
            return 0;
    }
    return 1;
}

static int
can_return(const rank *R)
{
    return R->in_call && (R->oc.op->status != A2A_OK || op_call_done(&R->oc)) &&
           (R->ntodo == 0 || R->oc.op->status != A2A_OK);
}

static size_t
enabled(const sim *S, event *ev)
{
    size_t n = 0;
    for (size_t i = 0; i < 2 * S->n; i++) {
        const rank *R = &S->r[i];
        int barrier = 0; /* lockstep: a rank is still in an earlier round, or in this one */
        if (i >= S->n && !R->ghost)
            continue;
        for (size_t j = 0; S->lockstep && !R->asking && i < S->n && j < S->n; j++)
            barrier |= file_of(S, j) < R->k;
        if (R->nojob && can_jobstart(S, i))
            ev[n++] = (event){EV_JOBSTART, (int)i, 0};
        if (R->sess_open)
            ev[n++] = (event){EV_GONE, (int)i, 0};
        /* !sess_open: a new job of the rank calls only after its worker saw the dead one's
         * session close (local.c releases the rank's claim after engine_sess_gone) */
        if (!R->in_call && !R->nojob && !R->sess_open &&
            (R->asking
                 ? !R->oc.asking && (!R->patient || op_get(S->g[R->w], R->patient_num, 0) != NULL)
                 : i < S->n && (size_t)R->k < S->K && !barrier))
            ev[n++] = (event){EV_ARRIVE, (int)i, 0}; /* a call, or the end of its ask */
        if (R->in_call && R->ntodo > 0 && R->oc.op->status == A2A_OK)
            ev[n++] = (event){EV_COPY, (int)i, 0};
        if (can_return(R))
            ev[n++] = (event){EV_RETURN, (int)i, 0};
    }
    for (size_t a = 0; a < S->nw; a++)
        for (size_t b = 0; b < S->nw; b++)
            if (S->q[a][b].head < S->q[a][b].tail)
                ev[n++] = (event){EV_DELIVER, (int)a, (int)b};
    for (size_t w = 0; w < S->nw; w++)
        for (size_t j = 0; j < S->nst[w]; j++)
            if (S->st[w][j].live) {
                ev[n++] = (event){EV_CHUNK, (int)w, (int)j};
                break; /* one stream at a time per worker: the sender's round */
            }
    int late = 0;
    for (size_t i = 0; S->lockstep && i < S->n; i++)
        late |= S->r[i].k > 2;
    if (S->faulted < S->faults && !late) {
        for (size_t i = 0; i < S->n; i++)
            if ((S->r[i].in_call && !can_return(&S->r[i])) || (S->r[i].asking && S->r[i].oc.asking))
                ev[n++] = (event){EV_DEADLINE, (int)i, 0};
        for (size_t a = 0; a < S->nw; a++)
            for (size_t b = a + 1; b < S->nw; b++)
                ev[n++] = (event){EV_LOSS, (int)a, (int)b};
        for (size_t w = 0; w < S->nw; w++)
            ev[n++] = (event){EV_RESTART, (int)w, 0};
        for (size_t w = 0; S->lockstep && w < S->nw; w++)
            ev[n++] = (event){EV_DOWN, (int)w, 0};
    }
    for (size_t i = 0; S->killed < S->kills && !late && i < S->n; i++) {
        const rank *R = &S->r[i];
        if (!R->nojob && !R->sess_open && !S->r[S->n + i].ghost &&
            (R->in_call || (R->asking && sim_kill_asking) || (!R->asking && (size_t)R->k < S->K)))
            ev[n++] = (event){EV_JOBKILL, (int)i, 0};
    }
    return n;
}

/* ---- job kills: what engine.c does when a job dies (orphans_fail, engine_sess_gone) ---- */

/* ghost_of: c is the call of a dead job (a ghost) of sim arg (op_orphan) */
static int
ghost_of(const op_call *c, const void *arg)
{
    const rank *C = rank_of((sim *)arg, c);
    return C != NULL && C->ghost;
}

/* orphans_fail: engine.c's, on worker w: every operation in which a call of group rank r (any:
 * r < 0) is not done fails, for every member; dead: only the calls of the dead job's session
 * (ghosts), else every call of rank r but keep (a new job of the rank called). */
static void
orphans_fail(sim *S, int w, int64_t r, int dead, const op_call *keep)
{
    op_group *g = S->g[w];
    op_out o;
    op_op *op;
    size_t i;

    op_out_init(&o);
    while ((op = op_orphan(g, r, keep, dead ? ghost_of : NULL, S, &i)) != NULL) {
        if (g->lidx[i] >= 0 && g->seq.next[g->lidx[i]] == op->num + 1)
            g->seq.orphaned[g->lidx[i]] = 1; /* engine.c's orphans_fail */
        if (getenv("OP_TRACE"))
            fprintf(stderr, "    -> w%d fails operation %llu: rank %zu's job is gone\n", w,
                    (unsigned long long)op->num, i);
        op_fail(&o, op, A2A_ERR_UNAVAILABLE, 1,
                "the job of group rank %zu on worker w%d ended during operation %llu", i, w,
                (unsigned long long)op->num);
    }
    run(S, w, &o);
    op_out_fini(&o);
}

/* ghost_sweep frees the slots of dead jobs' calls that ended (returned, asked in vain) */
static void
ghost_sweep(sim *S)
{
    for (size_t i = S->n; i < 2 * S->n; i++) {
        rank *G = &S->r[i];
        if (!G->ghost || G->in_call || G->asking)
            continue;
        for (size_t k = 0; k < S->K; k++) {
            free(G->sendbuf[k]);
            free(G->recvbuf[k]);
        }
        memset(G, 0, sizeof(*G));
    }
}

/* jobkill: rank i's job dies. Its call (in one, or asking) goes on in its worker as a ghost in
 * slot n + i, with the job's memory (the worker keeps it mapped while a call uses it), until
 * the worker sees the session close (EV_GONE) or a new job of the rank calls; nobody sees its
 * result. The rank gets a new job: its first call has no number (job_next -1); in lockstep it
 * first reads the barrier (EV_JOBSTART). */
static void
jobkill(sim *S, int i)
{
    rank *R = &S->r[i];
    int was = R->in_call || R->asking;

    S->killed++;
    R->sess_open = 1;
    if (was) {
        rank *G = &S->r[S->n + (size_t)i];
        int k = R->k - 1;
        op_group *g = S->g[R->w];
        *G = *R; /* its buffers go with it; the new job has its own */
        G->ghost = 1;
        G->sess_open = 0;
        for (size_t c = 0; c < S->K; c++) {
            R->sendbuf[c] = calloc((size_t)R->send_len[c] + 1, sizeof(int64_t));
            R->recvbuf[c] = calloc((size_t)R->recv_len[c] + 1, sizeof(int64_t));
        }
        if (G->in_call) {
            G->oc.counts = G->counts[k];
            G->oc.pre = (const uint8_t *)G->sendbuf[k];
            G->oc.pre_at = G->pre_at;
            if (G->oc.op->calls[i] != &R->oc)
                bad(S, "rank %d's call is not in its operation", i);
            G->oc.op->calls[i] = &G->oc;
            for (size_t j = 0; j < S->nst[R->w]; j++)
                if (S->st[R->w][j].rank == i)
                    S->st[R->w][j].rank = (int)S->n + i;
        } else {
            for (op_call **pp = &g->asks; *pp != NULL; pp = &(*pp)->ask_next)
                if (*pp == &R->oc) {
                    *pp = &G->oc;
                    break;
                }
        }
        R->killed[k] = 1;
    }
    R->dead_in = was;
    R->dead_asking = R->asking;
    R->dead_st = 0;
    if (S->lockstep) {
        R->file = file_of(S, (size_t)i); /* the dead job's last word */
        R->nojob = 1;
    }
    R->in_call = R->asking = R->patient = R->reasking = 0;
    R->ntodo = 0;
    memset(&R->oc, 0, sizeof(R->oc));
    R->job_next = -1;
    R->job_failed = 0;
}

/* seen: rank i's worker learns that its dead job is gone: from then on the dead job's call
 * must not complete an operation it was not done with, nor enter one (engine.c) */
static void
seen(sim *S, size_t i)
{
    rank *G = &S->r[S->n + i];
    if (!G->ghost || G->seen)
        return;
    G->seen = 1;
    G->seen_done = G->in_call && op_call_done(&G->oc);
}

/* gone: rank i's worker sees the dead job's session close (engine_sess_gone) */
static void
gone(sim *S, int i)
{
    rank *G = &S->r[S->n + (size_t)i];
    seen(S, (size_t)i);
    S->r[i].sess_open = 0;
    orphans_fail(S, S->r[i].w, -1, 1, NULL);
    if (G->ghost && G->asking && G->oc.asking) { /* engine_sess_gone ends its ask */
        op_out o;
        op_out_init(&o);
        op_ask_fail(&o, &G->oc, A2A_ERR_UNAVAILABLE, "the job is gone");
        run(S, G->w, &o);
        op_out_fini(&o);
    }
}

/* jobstart: lockstep, the new job of rank i reads the barrier (seqcheck.c lockstep_mode): it
 * begins at the highest round any member's file says; the rounds it skips are the dead job's */
static void
jobstart(sim *S, int i)
{
    rank *R = &S->r[i];
    int64_t hi = -1;
    for (size_t j = 0; j < S->n; j++) {
        int64_t f = file_of(S, j);
        hi = f > hi ? f : hi;
    }
    for (int64_t k = R->file; k < hi && k < (int64_t)S->K; k++)
        if (R->returned[k] == 0)
            R->killed[k] = 1;
    if (getenv("OP_TRACE"))
        fprintf(stderr, "    -> rank %d's new job joins at round %lld (its file: %lld)\n", i,
                (long long)hi, (long long)R->file);
    R->k = (int)hi;
    R->nojob = 0;
}

static void
arrive(sim *S, int i)
{
    rank *R = &S->r[i];
    op_group *g = S->g[R->w];
    int k;
    size_t l = (size_t)g->lidx[R->id];
    op_out o;
    int64_t job_next = R->job_next;
    int lost = 0; /* engine.c's call_run: the ask failed for a lost member worker */

    if (R->asking && R->reasking) { /* engine.c ask_where: the second ask's answers */
        uint64_t first = R->patient_num;
        int late = op_get(g, first, 0) == NULL;
        k = R->k - 1;
        R->asking = R->reasking = R->patient = 0;
        if (late && op_ask_moved(&R->oc, first))
            late = 0; /* the others called it meanwhile: its round */
        if (getenv("OP_TRACE"))
            fprintf(stderr,
                    "    -> rank %d re-asked: answers %lld (busy %lld), %s operation %llu%s\n",
                    R->id, (long long)R->oc.ask_num, (long long)R->oc.ask_busy,
                    late ? "late to the one before" : "takes", (unsigned long long)first,
                    R->oc.ask_st != A2A_OK ? " (the ask failed)" : "");
        job_next = (int64_t)op_ask_take(g, &R->oc, first, late);
        (void)op_ask_end(g, &R->oc);
    } else if (R->asking) { /* its ask ended: failed (the call returns, not numbered), or its number
                             */
        k = R->k - 1;
        R->asking = 0;
        if (R->oc.ask_st != A2A_OK && g->seq.known[l] && !(R->ghost && R->seen)) {
            /* engine.c's call_run: a failed ask of a rank its worker knows is numbered there
             * after all, by the rank's own record (job_next as the job sent it); when a member
             * worker was lost, that operation fails at once */
            lost = R->oc.ask_lost;
        } else if (R->oc.ask_st != A2A_OK) {
            S->lost |= R->ghost;
            if (!R->ghost && R->job_next < 0) /* liba2a's opnum_put: counted, unnumbered */
                R->job_next--;
            R->st[k] = R->oc.ask_st;
            R->returned[k]++;
            (void)op_ask_end(g, &R->oc);
            return;
        } else if (!R->patient) {
            int wait = 0;
            uint64_t t = op_ask_number(g, &R->oc, &wait);
            if (wait && op_get(g, t, 0) == NULL) { /* engine.c: ENGINE_ASK_PATIENCE_MS */
                R->patient = 1;
                R->patient_num = t;
                R->asking = 1;
                return;
            }
            job_next = (int64_t)op_ask_take(g, &R->oc, t, 0);
        } else { /* the others' frames came, or (stuck_calls) patience ran out */
            int late = op_get(g, R->patient_num, 0) == NULL;
            if (!S->no_reask && op_ask_again(g, &R->oc, R->patient_num, late)) {
                int r;
                (void)op_ask_end(g, &R->oc); /* engine.c ask_where: ask again */
                op_out_init(&o);
                r = op_ask(&o, g, &R->oc);
                run(S, R->w, &o);
                op_out_fini(&o);
                if (r < 0)
                    abort();
                if (r > 0) {
                    R->asking = 1;
                    R->reasking = 1;
                    R->patient = 0;
                    return;
                }
            }
            job_next = (int64_t)op_ask_take(g, &R->oc, R->patient_num, late);
            R->patient = 0;
        }
        (void)op_ask_end(g, &R->oc);
    } else {
        k = R->k++;
        S->recorded[R->id] = 1; /* engine.c call_run: prior_note */
        if (job_next < 0) {     /* engine.c's ask_where */
            int r;
            memset(&R->oc, 0, sizeof(R->oc));
            R->oc.grank = R->id;
            R->oc.lidx = (int)l;
            R->oc.earlier = (uint64_t)(-1 - job_next); /* engine.c call_run */
            if (g->seq.busy[l]) { /* engine.c's call_run: the previous job's call is still in */
                seen(S, (size_t)R->id);
                orphans_fail(S, R->w, R->id, 0, &R->oc);
            }
            op_out_init(&o);
            r = op_ask(&o, g, &R->oc);
            run(S, R->w, &o);
            op_out_fini(&o);
            if (r < 0)
                abort(); /* out of memory */
            if (r > 0) {
                R->asking = 1;
                return;
            }
            /* no other member worker: numbered at once, but as in ask_where, after a failure
             * the local ranks may be about to call it, or wait for this one (its patience) */
            int wait = 0;
            uint64_t t = op_ask_number(g, &R->oc, &wait);
            if (wait && op_get(g, t, 0) == NULL) {
                R->patient = 1;
                R->patient_num = t;
                R->asking = 1;
                return;
            }
            job_next = (int64_t)op_ask_take(g, &R->oc, t, 0);
        }
    }
    if (R->ghost && R->seen) { /* engine.c call_run: its job went away before it was numbered */
        S->lost = 1;
        R->st[k] = A2A_ERR_UNAVAILABLE;
        R->returned[k]++;
        S->r[R->id].dead_st = 1 + (int)A2A_ERR_UNAVAILABLE;
        if (getenv("OP_TRACE"))
            fprintf(stderr, "    -> rank %d (dead job) call %d: gone before it was numbered\n",
                    R->id, k);
        return;
    }
    uint64_t num = group_seq_begin(&g->seq, l, job_next, R->job_failed);
    op_op *op = op_get(g, num, 1);

    if (R->ghost) /* a dead job's call that asked enters an operation after all */
        S->r[R->id].dead_asking = 0;
    for (size_t d = 0; d < S->n; d++) /* the data names the operation the call is */
        for (int64_t x = 0; x < R->counts[k][d]; x++)
            R->sendbuf[k][R->counts[k][S->n + d] + x] = elem(S, num, k, R->id, (int64_t)d, x);
    R->num[k] = num;
    if (getenv("OP_TRACE"))
        fprintf(stderr, "    -> rank %d%s call %d is operation %llu\n", R->id,
                R->ghost ? " (dead job)" : "", k, (unsigned long long)num);
    R->in_call = 1;
    memset(&R->oc, 0, sizeof(R->oc));
    R->oc.num = num;
    R->oc.grank = R->id;
    R->oc.lidx = (int)l;
    R->oc.dtype = A2A_INT64;
    R->oc.esize = 8;
    R->oc.counts = R->counts[k];
    if (sim_discover_mask >> R->id & 1) { /* no receive counts: the machine finds them */
        for (size_t j = 2 * S->n; j < 4 * S->n; j++)
            R->counts[k][j] = FRAME_DISCOVER;
        R->oc.discover = 1;
        R->oc.recv_cap = (uint64_t)R->recv_len[k];
    }
    for (size_t d = 0; d < S->n; d++)
        R->pre_at[d] = R->counts[k][d] * 8 <= (int64_t)op_eager_max(S->n)
                           ? (uint64_t)R->counts[k][S->n + d] * 8
                           : UINT64_MAX;
    R->oc.pre = (const uint8_t *)R->sendbuf[k];
    R->oc.pre_at = R->pre_at;
    R->ntodo = 0;
    if (op == NULL)
        abort(); /* out of memory */
    R->oc.op = op;
    op_out_init(&o);
    if (lost && op->status == A2A_OK) {
        op_fail(&o, op, A2A_ERR_UNAVAILABLE, 1, "a member worker was lost while the call asked");
        run(S, R->w, &o);
        op_out_fini(&o);
        op_out_init(&o);
    }
    if (op->status != A2A_OK) { /* a latecomer: answered at once */
        op->arrived++;
        R->oc.finished = 1;
        R->st[k] = op->status;
        R->returned[k]++;
        R->in_call = 0;
        R->job_next = (int64_t)num + 1;
        R->job_failed = 1;
        group_seq_end(&g->seq, l, num, op->status);
        (void)op_leave(op, &R->oc);
        op_out_fini(&o);
        return;
    }
    if (R->ghost && R->seen)
        bad(S,
            "rank %d's dead job's call entered operation %" PRIu64
            " after its worker saw the job gone",
            R->id, num);
    if (op->calls[R->id] != NULL) /* two calls of one rank: the dead job's and the new one's */
        bad(S, "rank %d entered operation %" PRIu64 " twice (a dead job's call is in it)", R->id,
            num);
    op_arrive(&o, op, &R->oc);
    run(S, R->w, &o);
    op_out_fini(&o);
}

static void
verify(sim *S, int i, int k)
{
    rank *R = &S->r[i];
    if (S->hostile)
        return; /* a peer with the secret can send any bytes; only the machine's own rules hold */
    if (sim_discover_mask >> i & 1) { /* placed, packed in rank order, within the capacity */
        int64_t at = 0;
        for (size_t s = 0; s < S->n; s++) {
            if (R->counts[k][2 * S->n + s] < 0 || R->counts[k][3 * S->n + s] != at) {
                bad(S,
                    "rank %d call %d returned OK with slice %zu placed at %" PRId64
                    " (count %" PRId64 "), not packed at %" PRId64,
                    i, k, s, R->counts[k][3 * S->n + s], R->counts[k][2 * S->n + s], at);
                return;
            }
            at += R->counts[k][2 * S->n + s];
        }
        if (at > R->recv_len[k]) {
            bad(S, "rank %d call %d returned OK with %" PRId64 " elements in a buffer of %" PRId64,
                i, k, at, R->recv_len[k]);
            return;
        }
    }
    for (size_t s = 0; s < S->n; s++)
        for (int64_t x = 0; x < R->counts[k][2 * S->n + s]; x++) {
            int64_t got = R->recvbuf[k][R->counts[k][3 * S->n + s] + x];
            int64_t want = elem(S, R->num[k], k, (int64_t)s, i, x);
            if (got != want) {
                bad(S,
                    "rank %d call %d (operation %" PRIu64 ") returned OK with element %" PRId64
                    " from rank %zu = %#" PRIx64 ", expected %#" PRIx64 "%s",
                    i, k, R->num[k], x, s, (uint64_t)got, (uint64_t)want,
                    S->lockstep ? " (operation << 40 | from << 32 | to << 24 | round << 16 | i)"
                                : " (operation << 40 | from << 32 | to << 24 | i)");
                return;
            }
        }
}

static void
ret(sim *S, int i)
{
    rank *R = &S->r[i];
    op_group *g = S->g[R->w];
    op_op *op = R->oc.op;
    int k = R->k - 1;
    op_out o;

    if (R->oc.sends_left > S->n || R->oc.recvs_left > S->n)
        bad(S, "rank %d: counters out of range (%zu sends, %zu receives left)", i, R->oc.sends_left,
            R->oc.recvs_left);
    R->oc.finished = 1;
    op_out_init(&o);
    for (size_t j = 0; j < S->nst[R->w]; j++) /* link_drop_call */
        if (S->st[R->w][j].live && S->st[R->w][j].rank == i)
            S->st[R->w][j].live = 0;
    R->st[k] = op->status;
    R->returned[k]++;
    if (getenv("OP_TRACE"))
        fprintf(stderr, "    -> rank %d%s call %d (operation %llu) returns %s\n", R->id,
                R->ghost ? " (dead job)" : "", k, (unsigned long long)op->num,
                a2a_status_name(op->status));
    if (op->status == A2A_OK && !R->ghost) /* a dead job's result: nobody sees it */
        verify(S, i, k);
    if (R->ghost)
        S->r[R->id].dead_st = 1 + (int)op->status;
    if (R->ghost && R->seen && !R->seen_done && op->status == A2A_OK && !S->hostile)
        bad(S,
            "rank %d's dead job's call completed operation %" PRIu64
            " after its worker saw the job gone (it was not done then)",
            R->id, op->num);
    R->in_call = 0;
    R->job_next = (int64_t)R->num[k] + 1;
    R->job_failed = op->status != A2A_OK;
    group_seq_end(&g->seq, (size_t)R->oc.lidx, R->num[k], op->status);
    if (op->left >= op->arrived)
        bad(S, "operation %" PRIu64 " at w%d: %zu left of %zu arrived", op->num, R->w, op->left + 1,
            op->arrived);
    (void)op_leave(op, &R->oc);
    op_out_fini(&o);
}

static void
deliver(sim *S, int a, int b)
{
    queue *q = &S->q[a][b];
    qmsg m = q->m[q->head++];
    op_group *g = S->g[b];
    op_out o;

    op_out_init(&o);
    if (m.f.type == FRAME_DATA) {
        uint64_t off = 0;
        op_call *c = op_data_target(&o, g, a, &m.f, m.plen, &off);
        run(S, b, &o);
        if (c != NULL) {
            rank *R = rank_of(S, c);
            int k = R->k - 1;
            if (off + m.plen > (uint64_t)R->recv_len[k] * 8)
                bad(S, "DATA past rank %td's receive buffer", R - S->r);
            else
                memcpy((uint8_t *)R->recvbuf[k] + off, m.payload, m.plen);
            op_data_landed(&o, c, m.f.src, m.plen, 0);
            run(S, b, &o);
        }
    } else {
        m.f.payload = m.payload;
        m.f.payload_len = m.plen;
        m.payload = NULL;
        op_frame(&o, g, a, (uint64_t)a + 1 + 100 * (uint64_t)S->restarts[a], &m.f);
        run(S, b, &o);
        free(m.f.payload);
    }
    free(m.f.srcs);
    free(m.f.counts);
    free(m.payload);
    op_out_fini(&o);
}

static void
chunk(sim *S, int w, int j)
{
    stream *st = &S->st[w][j];
    rank *R = &S->r[st->rank];
    int k = R->k - 1;
    uint64_t n = st->len - st->sent < CHUNK ? st->len - st->sent : CHUNK;
    const op_op *op = R->oc.op;
    frame f = {.type = FRAME_DATA, .src = st->s, .dst = st->d, .offset = st->sent};
    op_out o;

    snprintf(f.id.group, sizeof(f.id.group), "%s", op->g->name);
    f.id.epoch = op->g->epoch;
    f.id.op = op->num;
    enqueue(S, w, st->peer, &f, (const uint8_t *)R->sendbuf[k] + st->off + st->sent, (size_t)n);
    st->sent += n;
    if (st->sent == st->len) {
        st->live = 0;
        op_out_init(&o);
        op_sent(&o, &R->oc, st->d, 0);
        run(S, w, &o);
        op_out_fini(&o);
    }
}

static void
copy(sim *S, int i)
{
    rank *R = &S->r[i]; /* the receiver */
    size_t t = --R->ntodo;
    int64_t s = R->todo[t][0], d = R->todo[t][1];
    rank *Q = R->oc.op->calls[s] != NULL ? rank_of(S, R->oc.op->calls[s]) : NULL;
    int kq, kr = R->k - 1;
    op_out o;

    if (Q == NULL) {
        bad(S, "a local copy from rank %" PRId64 ", which is not in operation %" PRIu64, s,
            R->oc.op->num);
        return;
    }
    kq = Q->k - 1;
    memcpy(R->recvbuf[kr] + R->counts[kr][3 * S->n + s], Q->sendbuf[kq] + Q->counts[kq][S->n + d],
           (size_t)Q->counts[kq][d] * 8);
    op_out_init(&o);
    op_copied(&o, R->oc.op, s, d, 0, 0);
    run(S, R->w, &o);
    op_out_fini(&o);
}

/* clear_link drops what is queued or in flight between a and b, both ways */
static void
clear_link(sim *S, int a, int b)
{
    for (int side = 0; side < 2; side++) {
        queue *q = side ? &S->q[b][a] : &S->q[a][b];
        for (size_t i = q->head; i < q->tail; i++) {
            free(q->m[i].f.srcs);
            free(q->m[i].f.counts);
            free(q->m[i].payload);
        }
        q->head = q->tail = 0;
        int w = side ? b : a, p = side ? a : b;
        for (size_t j = 0; j < S->nst[w]; j++)
            if (S->st[w][j].peer == p)
                S->st[w][j].live = 0;
    }
}

static void
loss(sim *S, int a, int b)
{
    op_out o;
    char why[64];
    S->faulted++;
    clear_link(S, a, b); /* in flight: lost; queued: dropped */
    op_out_init(&o);
    snprintf(why, sizeof(why), "worker w%d is unavailable: lost", b);
    op_peer_lost(&o, S->g[a], b, why);
    run(S, a, &o);
    snprintf(why, sizeof(why), "worker w%d is unavailable: lost", a);
    op_peer_lost(&o, S->g[b], a, why);
    run(S, b, &o);
    op_out_fini(&o);
}

/* restart: worker w dies and starts anew (same epoch, a new incarnation): its jobs' calls fail
 * on their connection (the call's number is spent), it forgets everything, its peers lose it */
static void
restart(sim *S, int w)
{
    op_group *old = S->g[w], *g = calloc(1, sizeof(*g));
    int64_t world[MAXN];
    op_out o;
    char why[64];

    S->faulted++;
    S->restarts[w]++;
    for (size_t i = S->n; i < 2 * S->n; i++) { /* dead jobs' calls: gone with the worker */
        rank *G = &S->r[i];
        if (!G->ghost || G->w != w)
            continue;
        if (G->asking)
            (void)op_ask_end(old, &G->oc);
        G->asking = G->in_call = 0;
        S->r[i - S->n].sess_open = 0;
    }
    for (size_t i = 0; i < S->n; i++) {
        rank *R = &S->r[i];
        if (R->w == w)
            R->sess_open = 0;         /* a dead job's session went with the worker */
        if (R->w == w && R->asking) { /* not numbered: the job's next call asks again */
            if (i < S->n && !R->ghost && R->job_next < 0) /* liba2a: no answer, counted */
                R->job_next--;
            R->st[R->k - 1] = A2A_ERR_UNAVAILABLE;
            R->returned[R->k - 1]++;
            R->asking = 0;
            R->patient = 0;
            R->reasking = 0;
            (void)op_ask_end(old, &R->oc);
            continue;
        }
        if (R->w != w || !R->in_call)
            continue;
        int k = R->k - 1;
        R->st[k] = A2A_ERR_UNAVAILABLE;
        R->returned[k]++;
        R->in_call = 0;
        R->job_next = (int64_t)R->num[k] + 1;
        R->job_failed = 1;
    }
    for (size_t j = 0; j < S->nst[w]; j++)
        S->st[w][j].live = 0;
    for (size_t p = 0; p < S->nw; p++)
        if ((int)p != w)
            clear_link(S, w, (int)p);
    *g = *old;
    g->world = calloc(S->n, sizeof(int64_t));
    g->peer = calloc(S->n, sizeof(int));
    g->lidx = calloc(S->n, sizeof(int));
    memcpy(g->world, old->world, S->n * sizeof(int64_t));
    memcpy(g->peer, old->peer, S->n * sizeof(int));
    memcpy(g->lidx, old->lidx, S->n * sizeof(int));
    g->ops = NULL;
    g->nops = 0;
    g->stale = 0;
    g->heard = NULL; /* it forgets: old keeps its own */
    g->asks = NULL;
    for (size_t i = 0, l = 0; i < S->n; i++)
        if (S->where[i] == w)
            world[l++] = (int64_t)i;
    if (group_seq_init(&g->seq, g->nlocal, world) != 0)
        abort();
    for (size_t l = 0; l < g->nlocal && !S->no_prior; l++) /* its state file, read back */
        g->seq.prior[l] = S->recorded[world[l]];
    old->retired = 1;
    for (op_op *op = old->ops; op != NULL; op = op->next)
        op->left = op->arrived, op->status = op->status ? op->status : A2A_ERR_UNAVAILABLE;
    if (group_sweep(old) == 0)
        group_free(old);
    S->g[w] = g;
    op_out_init(&o);
    snprintf(why, sizeof(why), "worker w%d is unavailable: it restarted", w);
    for (size_t p = 0; p < S->nw; p++)
        if ((int)p != w) {
            op_peer_lost(&o, S->g[p], w, why);
            run(S, (int)p, &o);
        }
    op_out_fini(&o);
}

static void
fire(sim *S, const event *e)
{
    op_out o;
    if (getenv("OP_TRACE")) {
        static const char *nm[] = {"arrive",   "deliver",  "chunk", "copy",    "return", "gone",
                                   "jobstart", "deadline", "loss",  "restart", "down",   "jobkill"};
        if (e->type == EV_DELIVER) {
            const frame *f = &S->q[e->a][e->b].m[S->q[e->a][e->b].head].f;
            fprintf(stderr,
                    "  deliver w%d->w%d type %d op %llu src %lld dst %lld count %lld resync %llu "
                    "st %d\n",
                    e->a, e->b, f->type, (unsigned long long)f->id.op, (long long)f->src,
                    (long long)f->dst, (long long)f->count, (unsigned long long)f->resync,
                    f->status);
        } else if (e->type == EV_ARRIVE)
            fprintf(stderr, "  arrive rank %d%s call %d job_next %lld failed %d\n", S->r[e->a].id,
                    S->r[e->a].ghost ? " (dead job)" : "", S->r[e->a].k,
                    (long long)S->r[e->a].job_next, S->r[e->a].job_failed);
        else
            fprintf(stderr, "  %s %d %d\n", nm[e->type], e->a, e->b);
    }
    switch (e->type) {
    case EV_ARRIVE: arrive(S, e->a); break;
    case EV_DELIVER: deliver(S, e->a, e->b); break;
    case EV_CHUNK: chunk(S, e->a, e->b); break;
    case EV_COPY: copy(S, e->a); break;
    case EV_RETURN: ret(S, e->a); break;
    case EV_DEADLINE:
        S->faulted++;
        op_out_init(&o);
        if (S->r[e->a].asking)
            op_ask_fail(&o, &S->r[e->a].oc, A2A_ERR_DEADLINE_EXCEEDED, "no answer in time");
        else
            op_deadline(&o, S->r[e->a].oc.op, &S->r[e->a].oc, 1000);
        run(S, S->r[e->a].w, &o);
        op_out_fini(&o);
        break;
    case EV_LOSS: loss(S, e->a, e->b); break;
    case EV_RESTART: restart(S, e->a); break;
    case EV_DOWN:
        restart(S, e->a);
        for (size_t p = 0; p < S->nw; p++)
            if ((int)p != e->a)
                clear_link(S, e->a, (int)p);
        break;
    case EV_GONE: gone(S, e->a); break;
    case EV_JOBSTART: jobstart(S, e->a); break;
    case EV_JOBKILL: jobkill(S, e->a); break;
    }
    ghost_sweep(S);
}

/* passed: lockstep, another rank returned from the round rank i is in. It happens when a job
 * died after its call completed but before it returned: its replacement reads the barrier
 * before the others return, and does that round again, alone (seqcheck.c does it too); the
 * others wait for it at the barrier, it waits for them until its deadline. No worker can tell
 * that call that nobody else comes. */
static int
passed(const sim *S, size_t i)
{
    for (size_t j = 0; S->lockstep && j < S->n; j++)
        if (file_of(S, j) > S->r[i].k - 1)
            return 1;
    return 0;
}

/* finish: no event is enabled but faults; calls still in progress have their deadline */
static int
stuck_calls(sim *S)
{
    int any = 0;
    for (size_t i = 0; i < 2 * S->n; i++)
        if (i >= S->n && !S->r[i].ghost) /* a dead job's call may wait: the others must not */
            continue;
        else if (S->r[i].asking && S->r[i].patient) { /* nothing else can happen: patience ends */
            arrive(S, (int)i);
            ghost_sweep(S);
            return 1;
        } else if (S->r[i].asking && S->r[i].oc.asking) {
            op_out o;
            if (S->faulted == 0 && i < S->n)
                bad(S, "rank %zu hangs asking where the group is, without any fault%s", i,
                    S->killed ? " but a job kill" : "");
            op_out_init(&o);
            op_ask_fail(&o, &S->r[i].oc, A2A_ERR_DEADLINE_EXCEEDED, "no answer in time");
            run(S, S->r[i].w, &o);
            op_out_fini(&o);
            any = 1;
        } else if (S->r[i].in_call && !can_return(&S->r[i])) {
            op_out o;
            if (S->faulted == 0 && i < S->n && !passed(S, i) && !(S->lost && !S->lockstep))
                bad(S, "rank %zu hangs in operation %" PRIu64 " without any fault%s", i,
                    S->r[i].oc.num, S->killed ? " but a job kill" : "");
            op_out_init(&o);
            op_deadline(&o, S->r[i].oc.op, &S->r[i].oc, 1000);
            run(S, S->r[i].w, &o);
            op_out_fini(&o);
            any = 1;
        }
    return any;
}

static void
check_end(sim *S)
{
    for (size_t i = 0; i < S->n; i++)
        for (size_t k = 0; k < S->K; k++) {
            const rank *R = &S->r[i];
            if (R->killed[k] ? R->returned[k] > 1 : R->returned[k] != 1)
                bad(S, "rank %zu call %zu returned %d times%s", i, k, R->returned[k],
                    R->killed[k] ? " (its job died in it)" : "");
            else if (R->returned[k] == 0) /* its job died in it: nobody saw it return */
                continue;
            else if (S->lockstep && sim_recovery && k == S->K - 1 && R->st[k] != A2A_OK)
                bad(S,
                    "rank %zu: lockstep round %zu (the last; faults only in rounds 0 and 1) "
                    "failed: %s",
                    i, k, a2a_status_name(R->st[k]));
            else if (S->faulted + S->killed == 0 && R->st[k] != A2A_OK)
                bad(S, "rank %zu call %zu failed without any fault: %s", i, k,
                    a2a_status_name(R->st[k]));
        }
    for (size_t i = 0; i < S->n; i++)
        if (S->r[S->n + i].ghost || S->r[i].sess_open || S->r[i].nojob)
            bad(S, "rank %zu: its dead job's call, session or replacement is still there", i);
}

/* ---- the state's fingerprint: two states with the same one have the same futures ---- */

static uint64_t
mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* mix_bytes: 8 bytes a step (the buffers are int64 slices, up to BIGSLICE each: hashed at
 * every state, the fingerprint's main cost) */
static uint64_t
mix_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return mix64(h, n);
}

__attribute__((unused)) static uint64_t
fingerprint(const sim *S)
{
    uint64_t h =
        mix64(0, (uint64_t)S->faulted << 8 | (uint64_t)S->killed | (uint64_t)S->lost << 16);
    for (size_t i = 0; i < S->n; i++) /* the state files */
        h = mix64(h, (uint64_t)S->recorded[i] << 8 ^ i);
    for (size_t w = 0; w < S->nw; w++) {
        const op_group *g = S->g[w];
        const group_seq *q = &g->seq;
        for (size_t l = 0; l < q->nlocal; l++) {
            h = mix64(h, q->next[l]);
            h = mix64(h, (uint64_t)q->known[l] << 8 | (uint64_t)q->busy[l] |
                             (uint64_t)q->orphaned[l] << 9 | (uint64_t)q->prior[l] << 10);
            h = mix64(h, q->jump[l]);
            h = mix64(h, q->jump_after[l]);
        }
        h = mix64(h, q->nhist);
        for (size_t i = 0; i < q->nhist && i < GROUP_HISTORY; i++)
            h = mix64(h, q->hist[i].num << 8 | (uint64_t)q->hist[i].status);
        h = mix64(h, q->hint);
        h = mix64(h, q->top_failed);
        h = mix64(h, q->floor);
        h = mix64(h, q->ndiffer);
        h = mix64(h, g->stale);
        h = mix64(h, g->ask_seq);
        h = mix64(h, (uint64_t)S->restarts[w]);
        /* operations, in order of number (the list's order depends on history) */
        uint64_t ops = 0;
        for (const op_op *op = g->ops; op != NULL; op = op->next) {
            uint64_t x = mix64(op->num, (uint64_t)op->status);
            x = mix64(x, op->arrived << 16 | op->left);
            x = mix64(x, op->resync);
            for (size_t r = 0; r < g->n; r++)
                x = mix64(x, op->calls[r] != NULL);
            for (size_t i = 0; i < g->nlocal * g->n; i++) {
                const op_rx *rx = &op->rx[i];
                const op_tx *tx = &op->tx[i];
                x = mix64(x, (uint64_t)rx->state << 8 | (uint64_t)tx->state << 4 |
                                 (uint64_t)tx->ready | (uint64_t)tx->heard << 1 |
                                 (uint64_t)rx->known << 2);
                x = mix64(x, (uint64_t)rx->expect ^ (uint64_t)rx->count << 20 ^ rx->bytes << 40);
                x = mix64(x, (uint64_t)tx->expect);
                if (rx->stash != NULL)
                    x = mix_bytes(x, rx->stash, (size_t)rx->count * 8);
            }
            ops += mix64(x, 1); /* order-free */
        }
        h = mix64(h, ops);
        for (size_t b = 0; b < S->nw; b++) {
            const queue *qu = &S->q[w][b];
            h = mix64(h, qu->tail - qu->head);
            for (size_t i = qu->head; i < qu->tail; i++) {
                const frame *f = &qu->m[i].f;
                h = mix64(h, (uint64_t)f->type << 56 ^ f->id.op << 8 ^ f->id.epoch);
                h = mix64(h, (uint64_t)f->src << 32 ^ (uint64_t)f->dst ^ (uint64_t)f->count << 40);
                h = mix64(h, f->offset ^ (uint64_t)f->status << 48 ^ f->resync << 20 ^ f->n);
                for (size_t j = 0; j < f->n; j++)
                    h = mix64(h, (uint64_t)f->srcs[j] << 32 ^ (uint64_t)f->counts[j]);
                h = mix_bytes(h, qu->m[i].payload, qu->m[i].plen);
            }
        }
        for (size_t j = 0; j < S->nst[w]; j++) {
            const stream *st = &S->st[w][j];
            if (st->live)
                h = mix64(h, (uint64_t)st->s << 48 ^ (uint64_t)st->d << 40 ^ st->sent ^
                                 (uint64_t)st->peer << 36 ^ (uint64_t)st->rank << 56);
        }
    }
    for (size_t i = 0; i < 2 * S->n; i++) {
        const rank *R = &S->r[i];
        if (i >= S->n && !R->ghost) {
            h = mix64(h, 0);
            continue;
        }
        h = mix64(h, (uint64_t)R->seen << 5 ^ (uint64_t)R->seen_done << 6);
        h = mix64(h, (uint64_t)R->sess_open << 3 ^ (uint64_t)R->nojob << 2 ^
                         (uint64_t)R->file << 8 ^ (uint64_t)R->ghost ^ (uint64_t)R->dead_in << 4 ^
                         (uint64_t)R->dead_asking << 5 ^ (uint64_t)R->dead_st << 16);
        for (size_t k = 0; k < S->K; k++)
            h = mix64(h, (uint64_t)R->killed[k]);
        h = mix64(h, (uint64_t)R->k << 32 ^ (uint64_t)R->in_call << 16 ^ (uint64_t)R->job_failed);
        h = mix64(h, (uint64_t)R->job_next);
        if (R->asking) {
            h = mix64(h, (uint64_t)R->patient << 56 ^ (uint64_t)R->reasking << 60 ^ R->patient_num);
            h = mix64(h, (uint64_t)R->oc.asking << 48 ^ R->oc.ask_left << 32 ^
                             (uint64_t)R->oc.ask_st << 24 ^ R->oc.ask_token);
            h = mix64(h, (uint64_t)R->oc.ask_num);
            for (size_t w = 0; w < S->nw; w++)
                h = mix64(h, R->oc.ask_wait != NULL ? R->oc.ask_wait[w] : 2);
        }
        for (size_t k = 0; k < S->K; k++)
            h = mix64(h, (uint64_t)R->returned[k] << 40 ^ (uint64_t)(uint32_t)R->st[k] ^
                             R->num[k] << 8);
        if (R->in_call) {
            h = mix64(h, R->oc.sends_left << 32 ^ R->oc.recvs_left ^ R->oc.num << 48);
            h = mix64(h, R->ntodo);
            for (size_t t = 0; t < R->ntodo; t++)
                h = mix64(h, (uint64_t)R->todo[t][0] << 32 ^ (uint64_t)R->todo[t][1]);
            h = mix_bytes(h, R->recvbuf[R->k - 1], (size_t)R->recv_len[R->k - 1] * 8);
        }
    }
    return h | 1; /* 0 marks an empty slot */
}

/* a set of fingerprints (open addressing) */
typedef struct {
    uint64_t *v;
    size_t cap, n;
} fpset;

/* fpset_add: 1 when fp is new (and now in), 0 when it was there */
__attribute__((unused)) static int
fpset_add(fpset *s, uint64_t fp)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : (1u << 16);
        uint64_t *v = calloc(cap, sizeof(uint64_t));
        if (v == NULL)
            abort();
        for (size_t i = 0; i < s->cap; i++)
            if (s->v[i] != 0) {
                size_t j = (size_t)(s->v[i] * 0x9e3779b97f4a7c15ull) & (cap - 1);
                while (v[j] != 0)
                    j = (j + 1) & (cap - 1);
                v[j] = s->v[i];
            }
        free(s->v);
        s->v = v;
        s->cap = cap;
    }
    size_t j = (size_t)(fp * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
    while (s->v[j] != 0) {
        if (s->v[j] == fp)
            return 0;
        j = (j + 1) & (s->cap - 1);
    }
    s->v[j] = fp;
    s->n++;
    return 1;
}

/* ---- drivers ---- */

#define MAXSTEPS 4000
#define MAXEV 96

typedef struct {
    uint16_t pick[MAXSTEPS], nopts[MAXSTEPS];
    size_t len;
} path;

/* run_once plays one schedule: picks from p (and 0 past its end, recording options) or random
 * (rnd != NULL). With seen, a state reached past the replayed prefix that was seen before ends
 * the run (its futures were explored from there). Returns 0, or -1 with err. */
__attribute__((unused)) static int
run_once(size_t n, size_t nw, const int *where, size_t K, int faults, unsigned mix, path *p,
         unsigned *rnd, fpset *seen, char *err, size_t errlen)
{
    static sim *S; /* one, reused: runs are many and a sim is large (mmap and page faults) */
    event ev[MAXEV];
    size_t step = 0, ne, prefix = p != NULL && p->len > 0 ? p->len - 1 : 0;
    int rc, pruned = 0;

    if (S == NULL && (S = malloc(sizeof(*S))) == NULL)
        abort();
    sim_init(S, n, nw, where, K, faults, mix);
    for (;;) {
        ne = enabled(S, ev);
        /* faults only as options: with none else enabled, the run ends */
        size_t progress = 0;
        for (size_t i = 0; i < ne; i++)
            progress += ev[i].type < EV_DEADLINE;
        if (progress == 0) {
            if (stuck_calls(S))
                continue;
            break;
        }
        if (step == MAXSTEPS) {
            bad(S, "over %d steps", MAXSTEPS);
            break;
        }
        size_t pick;
        if (rnd != NULL) {
            *rnd = *rnd * 1103515245u + 12345u;
            pick = (*rnd >> 8) % ne;
        } else if (step < p->len) {
            pick = p->pick[step];
            if (pick >= ne || p->nopts[step] != ne) {
                bad(S, "replay diverged at step %zu", step);
                break;
            }
        } else {
            p->pick[step] = 0;
            p->nopts[step] = (uint16_t)ne;
            p->len = step + 1;
            pick = 0;
        }
        fire(S, &ev[pick]);
        step++;
        if (S->err[0] != '\0')
            break;
        if (seen != NULL && step > prefix && !fpset_add(seen, fingerprint(S))) {
            pruned = 1;
            break;
        }
    }
    if (S->err[0] == '\0' && !pruned)
        check_end(S);
    rc = S->err[0] != '\0' ? -1 : 0;
    snprintf(err, errlen, "%s", S->err);
    sim_fini(S);
    return rc;
}

#endif
