/* group.c - the numbering rules of a group's operations, and the store of early frames. */
#include "group.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

int
group_seq_init(group_seq *gs, size_t nlocal, const int64_t *world)
{
    memset(gs, 0, sizeof(*gs));
    gs->nlocal = nlocal;
    if (nlocal == 0)
        return 0;
    gs->world = calloc(nlocal, sizeof(*gs->world));
    gs->next = calloc(nlocal, sizeof(*gs->next));
    gs->busy = calloc(nlocal, sizeof(*gs->busy));
    gs->jump = calloc(nlocal, sizeof(*gs->jump));
    gs->jump_after = calloc(nlocal, sizeof(*gs->jump_after));
    gs->known = calloc(nlocal, sizeof(*gs->known));
    gs->orphaned = calloc(nlocal, sizeof(*gs->orphaned));
    gs->prior = calloc(nlocal, sizeof(*gs->prior));
    if (gs->world == NULL || gs->next == NULL || gs->busy == NULL || gs->jump == NULL ||
        gs->jump_after == NULL || gs->known == NULL || gs->orphaned == NULL || gs->prior == NULL)
        return -1;
    memcpy(gs->world, world, nlocal * sizeof(*world));
    return 0;
}

void
group_seq_fini(group_seq *gs)
{
    free(gs->world);
    free(gs->next);
    free(gs->busy);
    free(gs->jump);
    free(gs->jump_after);
    free(gs->known);
    free(gs->orphaned);
    free(gs->prior);
    gs->known = NULL;
    gs->orphaned = NULL;
    gs->prior = NULL;
    gs->world = NULL;
    gs->next = NULL;
    gs->busy = NULL;
    gs->jump = NULL;
    gs->jump_after = NULL;
    gs->nlocal = 0;
}

void
group_seq_carry(group_seq *gs, const group_seq *old)
{
    for (size_t i = 0; i < gs->nlocal; i++)
        for (size_t j = 0; j < old->nlocal; j++)
            if (gs->world[i] == old->world[j] && old->prior[j])
                gs->prior[i] = 1;
    for (size_t i = 0; i < gs->nlocal; i++)
        for (size_t j = 0; j < old->nlocal; j++)
            if (gs->world[i] == old->world[j] && old->known[j]) {
                gs->next[i] = old->next[j];
                gs->busy[i] = old->busy[j];
                gs->jump[i] = old->jump[j];
                gs->jump_after[i] = old->jump_after[j];
                gs->orphaned[i] = old->orphaned[j];
                gs->known[i] = 1;
            }
    memcpy(gs->hist, old->hist, sizeof(gs->hist));
    gs->nhist = old->nhist;
    gs->hint = old->hint;
    gs->top_failed = old->top_failed;
    gs->floor = old->floor;
    memcpy(gs->differ, old->differ, sizeof(gs->differ));
    gs->ndiffer = old->ndiffer;
}

uint64_t
group_seq_min_next(const group_seq *gs)
{
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < gs->nlocal; i++) {
        /* a rank with a resync due takes at least that with its next call (a busy rank's
         * current operation exists: its frames are active anyway) */
        uint64_t n = gs->jump[i] > gs->next[i] ? gs->jump[i] : gs->next[i];
        if (gs->known[i] && n < m)
            m = n;
    }
    return m;
}

const group_failed *
group_seq_failed(const group_seq *gs, uint64_t num)
{
    size_t k = gs->nhist < GROUP_HISTORY ? gs->nhist : GROUP_HISTORY;
    for (size_t i = 0; i < k; i++)
        if (gs->hist[i].num == num)
            return &gs->hist[i];
    return NULL;
}

void
group_seq_fail(group_seq *gs, uint64_t num, a2a_status st, const char *msg)
{
    group_failed *h;
    if (group_seq_failed(gs, num) != NULL)
        return;
    h = &gs->hist[gs->nhist++ % GROUP_HISTORY];
    h->num = num;
    h->status = st;
    snprintf(h->msg, sizeof(h->msg), "%s", msg != NULL ? msg : "");
    if (num + 1 > gs->top_failed)
        gs->top_failed = num + 1;
}

void
group_seq_heard_failed(group_seq *gs, uint64_t num)
{
    if (num + 1 > gs->top_failed)
        gs->top_failed = num + 1;
}

group_pos
group_seq_classify(const group_seq *gs, uint64_t num, int exists, size_t nops)
{
    uint64_t lo = group_seq_min_next(gs);
    if (exists)
        return GROUP_ACTIVE;
    if (lo == UINT64_MAX) /* nobody here has called yet: keep a few, where peers are */
        return nops < GROUP_WINDOW ? GROUP_ACTIVE : GROUP_FUTURE;
    if (num < lo) /* failures from before a resync belong to the old numbering */
        return num >= gs->floor && group_seq_failed(gs, num) != NULL ? GROUP_PAST_FAILED
                                                                     : GROUP_PAST;
    if (num - lo >= GROUP_WINDOW)
        return GROUP_FUTURE;
    return GROUP_ACTIVE;
}

void
group_seq_saw(group_seq *gs, uint64_t num)
{
    if (num > gs->hint)
        gs->hint = num;
}

uint64_t
group_seq_top(const group_seq *gs, uint64_t max_op)
{
    uint64_t top = max_op;
    /* an idle rank's next call may take its next number (or a resync due, or, for a new job,
     * top_failed) */
    for (size_t i = 0; i < gs->nlocal; i++) {
        uint64_t n = !gs->known[i] ? 0 : gs->busy[i] ? gs->next[i] - 1 : gs->next[i];
        if (gs->known[i] && gs->jump[i] > n)
            n = gs->jump[i];
        if (gs->known[i] && n > top)
            top = n;
    }
    if (gs->hint > top)
        top = gs->hint;
    if (gs->top_failed > top)
        top = gs->top_failed;
    return top;
}

int
group_seq_differ(group_seq *gs, uint64_t source, uint64_t num)
{
    size_t k = gs->ndiffer < GROUP_DIFFER ? gs->ndiffer : GROUP_DIFFER;
    for (size_t i = 0; i < k; i++)
        if (gs->differ[i][0] == source && gs->differ[i][1] == num)
            return 1;
    gs->differ[gs->ndiffer % GROUP_DIFFER][0] = source;
    gs->differ[gs->ndiffer++ % GROUP_DIFFER][1] = num;
    return 0;
}

int
group_seq_resync(group_seq *gs, uint64_t r, uint64_t max_op)
{
    if (r > group_seq_top(gs, max_op) + GROUP_RESYNC_MAX)
        return 0; /* no worker is that far on: a bogus frame must not exhaust the numbers */
    if (r > gs->floor)
        gs->floor = r;
    for (size_t i = 0; i < gs->nlocal; i++) {
        uint64_t *j = gs->busy[i] ? &gs->jump[i] : &gs->jump_after[i];
        if (r > *j)
            *j = r;
    }
    return 1;
}

uint64_t
group_seq_begin(group_seq *gs, size_t lidx, int64_t job_next, int job_failed)
{
    uint64_t num;

    (void)job_failed;
    if (job_next >= 0) {
        num = (uint64_t)job_next;
    } else {
        /* the job's first call: after an earlier job on this rank, it is not the latecomer of
         * that job's calls; as the rank's first call here, it is the group's first operation
         * for this rank and may well be late */
        num = gs->next[lidx];
        /* the earlier job went away in operation next - 1 here (orphans_fail): no failure at
         * or past next is one of its calls, and a lockstep replacement joins the round the
         * others are in, which may be one that failed already (a member lost): its latecomer,
         * not the operation after it, or the rank runs one ahead of the others for good */
        if (gs->known[lidx] && !gs->orphaned[lidx]) {
            if (gs->top_failed > num)
                num = gs->top_failed;
            while (group_seq_failed(gs, num) != NULL) /* at most GROUP_HISTORY steps */
                num++;
        }
    }
    if (gs->jump[lidx] > num)
        num = gs->jump[lidx];
    gs->jump[lidx] = gs->jump_after[lidx];
    gs->jump_after[lidx] = 0;
    gs->next[lidx] = num + 1;
    gs->busy[lidx] = 1;
    gs->known[lidx] = 1;
    gs->orphaned[lidx] = 0;
    return num;
}

int64_t
group_seq_where(const group_seq *gs, int *idle)
{
    int64_t w = -1;
    int in = 0; /* a rank is in operation w (or will be, by a resync) */
    for (size_t i = 0; i < gs->nlocal; i++) {
        uint64_t n;
        int busy_in;
        if (!gs->known[i])
            continue;
        n = gs->next[i];
        busy_in = gs->busy[i] && group_seq_failed(gs, n - 1) == NULL;
        if (busy_in)
            n--; /* in operation next - 1, which may still meet a newcomer */
        if (gs->jump[i] > n) {
            n = gs->jump[i];
            busy_in = 1;
        }
        /* idle after an operation that did not fail: the rank's next call is n for sure */
        if (!busy_in && (n == 0 || group_seq_failed(gs, n - 1) == NULL))
            busy_in = 1;
        if (n > (uint64_t)INT64_MAX)
            continue;
        if ((int64_t)n > w) {
            w = (int64_t)n;
            in = busy_in;
        } else if ((int64_t)n == w)
            in |= busy_in;
    }
    *idle = w > 0 && !in;
    return w;
}

int
group_seq_in(const group_seq *gs, int64_t num)
{
    if (num < 0 || group_seq_failed(gs, (uint64_t)num) != NULL)
        return 0;
    for (size_t i = 0; i < gs->nlocal; i++)
        if (gs->known[i] && gs->busy[i] && gs->next[i] == (uint64_t)num + 1)
            return 1;
    return 0;
}

void
group_seq_end(group_seq *gs, size_t lidx, uint64_t num, a2a_status st)
{
    if (gs->next[lidx] < num + 1)
        gs->next[lidx] = num + 1;
    (void)st;
    gs->busy[lidx] = 0;
}

/* ---- the state file's lines ---- */

int
group_state_parse(const char *line, size_t len, int64_t *rank, char *name)
{
    char digits[24], why[200];
    size_t i = 0, nlen;
    char *end = NULL;
    long long r;

    if (len < 4 || line[len - 1] != '\n')
        return -1;
    while (i < len && i < sizeof(digits) - 1 && line[i] >= '0' && line[i] <= '9')
        i++;
    if (i == 0 || i >= len || line[i] != ' ')
        return -1;
    memcpy(digits, line, i);
    digits[i] = '\0';
    errno = 0;
    r = strtoll(digits, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    nlen = len - 1 - (i + 1);
    if (nlen == 0 || nlen > A2A_GROUP_NAME_MAX || memchr(line + i + 1, '\0', nlen) != NULL ||
        cfg_check_group_name(line + i + 1, nlen, why, sizeof(why)) != 0)
        return -1;
    memcpy(name, line + i + 1, nlen);
    name[nlen] = '\0';
    *rank = (int64_t)r;
    return 0;
}

int
group_state_format(char *buf, size_t cap, int64_t rank, const char *name)
{
    char why[200];
    size_t nlen = strlen(name);
    int n;
    if (rank < 0 || nlen == 0 || nlen > A2A_GROUP_NAME_MAX ||
        cfg_check_group_name(name, nlen, why, sizeof(why)) != 0)
        return -1;
    n = snprintf(buf, cap, "%lld %s\n", (long long)rank, name);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

/* ---- early frames ---- */

size_t
early_frame_bytes(const frame *f)
{
    return sizeof(early_frame) + f->n * 2 * sizeof(int64_t) + f->payload_len;
}

/* usage counts the frames and bytes kept for name, and those from peer. */
static void
usage(const early_store *s, const char *name, int peer, size_t n_bytes[4])
{
    memset(n_bytes, 0, 4 * sizeof(size_t));
    for (const early_frame *x = s->head; x != NULL; x = x->next) {
        if (strcmp(x->f.id.group, name) == 0) {
            n_bytes[0]++;
            n_bytes[1] += x->bytes;
        }
        if (x->peer == peer) {
            n_bytes[2]++;
            n_bytes[3] += x->bytes;
        }
    }
}

void
early_lost_note(early_store *s, const frame *f, int peer)
{
    early_lost *l;

    if (f->type != FRAME_READY && f->type != FRAME_SLICE && f->type != FRAME_ABORT)
        return;
    for (size_t i = 0; i < s->nlost; i++)
        if (s->lost[i].epoch == f->id.epoch && s->lost[i].op == f->id.op &&
            strcmp(s->lost[i].group, f->id.group) == 0)
            return;
    if (s->nlost == EARLY_LOST_MAX) {
        memmove(&s->lost[0], &s->lost[1], (EARLY_LOST_MAX - 1) * sizeof(s->lost[0]));
        s->nlost--;
    }
    l = &s->lost[s->nlost++];
    snprintf(l->group, sizeof(l->group), "%s", f->id.group);
    l->epoch = f->id.epoch;
    l->op = f->id.op;
    l->peer = peer;
}

int
early_lost_take(early_store *s, const char *name, uint64_t epoch, early_lost *out)
{
    int found = 0;
    size_t k = 0;

    for (size_t i = 0; i < s->nlost; i++) {
        early_lost *l = &s->lost[i];
        if (strcmp(l->group, name) != 0 || l->epoch > epoch) {
            s->lost[k++] = *l;
            continue;
        }
        if (l->epoch == epoch && !found) {
            *out = *l;
            found = 1;
        } else if (l->epoch == epoch) {
            s->lost[k++] = *l; /* for the next call */
        }
    }
    s->nlost = k;
    return found;
}

int
early_keep(early_store *s, int peer, frame *f, int64_t now_ms)
{
    size_t bytes = early_frame_bytes(f), u[4];
    early_frame *x;

    early_expire(s, now_ms);
    usage(s, f->id.group, peer, u);
    if (s->n >= EARLY_MAX || s->bytes + bytes > EARLY_BYTES || u[0] >= EARLY_GROUP_MAX ||
        u[1] + bytes > EARLY_GROUP_BYTES || u[2] >= EARLY_PEER_MAX ||
        u[3] + bytes > EARLY_PEER_BYTES || (x = calloc(1, sizeof(*x))) == NULL) {
        s->refused++;
        return -1;
    }
    x->peer = peer;
    x->at_ms = now_ms;
    x->bytes = bytes;
    x->f = *f; /* takes over srcs, counts and payload */
    f->srcs = NULL;
    f->counts = NULL;
    f->n = 0;
    f->payload = NULL;
    f->payload_len = 0;
    if (s->tail != NULL)
        s->tail->next = x;
    else
        s->head = x;
    s->tail = x;
    s->n++;
    s->bytes += bytes;
    return 0;
}

/* unlink removes x, whose predecessor is prev (NULL: the head). */
static void
unlink_frame(early_store *s, early_frame *prev, early_frame *x)
{
    if (prev != NULL)
        prev->next = x->next;
    else
        s->head = x->next;
    if (s->tail == x)
        s->tail = prev;
    x->next = NULL;
    s->n--;
    s->bytes -= x->bytes;
}

early_frame *
early_take(early_store *s, const char *name, uint64_t epoch)
{
    for (early_frame *x = s->head, *prev = NULL; x != NULL; prev = x, x = x->next)
        if (strcmp(x->f.id.group, name) == 0 && x->f.id.epoch <= epoch) {
            unlink_frame(s, prev, x);
            return x;
        }
    return NULL;
}

void
early_expire(early_store *s, int64_t now_ms)
{
    while (s->head != NULL && s->head->at_ms < now_ms - EARLY_AGE_MS) {
        early_frame *x = s->head;
        unlink_frame(s, NULL, x);
        s->expired++;
        early_free(x);
    }
}

void
early_free(early_frame *x)
{
    if (x == NULL)
        return;
    frame_fini(&x->f);
    free(x);
}

void
early_clear(early_store *s)
{
    while (s->head != NULL) {
        early_frame *x = s->head;
        unlink_frame(s, NULL, x);
        early_free(x);
    }
}
