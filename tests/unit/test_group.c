/* test_group.c - worker/group.c: the numbering rules of operations, and the early-frame store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "worker/group.h"

static const int64_t world2[] = {4, 5};

static void
fresh(group_seq *gs)
{
    CU_ASSERT_EQUAL_FATAL(group_seq_init(gs, 2, world2), 0);
}

/* a job's first call is the rank's next number here; then the job's own numbers rule */
static void
test_numbers(void)
{
    group_seq gs;
    fresh(&gs);
    CU_ASSERT_EQUAL(group_seq_min_next(&gs), UINT64_MAX); /* nobody called yet */
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, -1, 0), 0);
    group_seq_end(&gs, 0, 0, A2A_OK);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, 1, 0), 1);
    group_seq_end(&gs, 0, 1, A2A_OK);
    CU_ASSERT_EQUAL(group_seq_min_next(&gs), 2);
    /* a restarted worker knows nothing: the job's number stands */
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 1, 57, 0), 57);
    CU_ASSERT_EQUAL(gs.next[1], 58);
    CU_ASSERT_EQUAL(group_seq_min_next(&gs), 2);
    group_seq_fini(&gs);
}

/* a latecomer of a failed operation gets that operation (and its failure), never the next */
static void
test_latecomer(void)
{
    group_seq gs;
    fresh(&gs);
    group_seq_fail(&gs, 5, A2A_ERR_DEADLINE_EXCEEDED, "operation 5 timed out");
    group_seq_saw(&gs, 6); /* the others went on to 6 */
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, 5, 0), 5);
    CU_ASSERT_PTR_NOT_NULL(group_seq_failed(&gs, 5));
    CU_ASSERT_STRING_EQUAL(group_seq_failed(&gs, 5)->msg, "operation 5 timed out");
    group_seq_end(&gs, 0, 5, A2A_ERR_DEADLINE_EXCEEDED);
    /* its next call resynchronises: past the failure, up to where the others are */
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, 6, 1), 6);
    /* a rank's very first call here is the group's first operation for it: late, not new */
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 1, -1, 0), 0);
    group_seq_fini(&gs);
}

/* a failure alone moves nothing (the jobs' numbers stay in step); a resync floor moves all */
static void
test_resync(void)
{
    group_seq gs;
    fresh(&gs);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, 3, 0), 3);
    group_seq_fail(&gs, 3, A2A_ERR_UNAVAILABLE, "x");
    group_seq_end(&gs, 0, 3, A2A_ERR_UNAVAILABLE);
    group_seq_fail(&gs, 8, A2A_ERR_UNAVAILABLE, "y");
    group_seq_saw(&gs, 20);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, 4, 1), 4);
    /* numbers differ: the floor is past everything known, and every next call takes it */
    CU_ASSERT_EQUAL(group_seq_top(&gs, 0), 20); /* the peer seen in 20 */
    CU_ASSERT_EQUAL(group_seq_top(&gs, 25), 25);
    CU_ASSERT(gs.busy[0] && !gs.busy[1]);
    CU_ASSERT(group_seq_resync(&gs, 21, 0));
    group_seq_end(&gs, 0, 4, A2A_ERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, 5, 1), 21); /* was in a call: its next jumps */
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 1, 0, 0), 0);  /* was idle: late to the failed round */
    group_seq_end(&gs, 1, 0, A2A_ERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 1, 1, 1), 21);  /* and jumps with the call after */
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, 30, 0), 30); /* no resync due: the job's */
    /* a floor far beyond anything known is refused: the numbers cannot be exhausted */
    CU_ASSERT(!group_seq_resync(&gs, UINT64_MAX - 5, 0));
    CU_ASSERT_EQUAL(gs.floor, 21);
    /* failures heard of beyond the window leave no history: nothing fails in advance */
    group_seq_heard_failed(&gs, 40);
    CU_ASSERT_PTR_NULL(group_seq_failed(&gs, 40));
    CU_ASSERT_EQUAL(group_seq_top(&gs, 0), 41); /* a new job would take 41 */
    group_seq_fini(&gs);
}

/* a new job on a rank that an earlier job used is not the latecomer of that job's calls */
static void
test_new_job(void)
{
    group_seq gs;
    fresh(&gs);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, -1, 0), 0);
    group_seq_end(&gs, 0, 0, A2A_OK); /* the old job's last call; it dies before calling 1 */
    group_seq_fail(&gs, 1, A2A_ERR_DEADLINE_EXCEEDED, "waiting for the dead job");
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, -1, 0), 2);
    group_seq_fini(&gs);
}

/* the second 500-fault run (seed 500): the earlier job went away in operation 4371 here; the
 * others' round after it, 4372, failed at once (a member worker lost) before the replacement's
 * first call was numbered here (its ask failed). The replacement is 4372's latecomer, not in
 * 4373, which would put it one ahead of the others for good */
static void
test_new_job_orphaned(void)
{
    group_seq gs;
    fresh(&gs);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, 4371, 0), 4371);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 1, 4371, 0), 4371);
    gs.orphaned[0] = 1; /* orphans_fail: rank 0's job went away in 4371 */
    group_seq_fail(&gs, 4371, A2A_ERR_UNAVAILABLE, "the job of group rank 0 ended");
    group_seq_end(&gs, 0, 4371, A2A_ERR_UNAVAILABLE);
    group_seq_end(&gs, 1, 4371, A2A_ERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 1, 4372, 1), 4372); /* rank 1's retry */
    group_seq_fail(&gs, 4372, A2A_ERR_UNAVAILABLE, "worker w2 was lost");
    group_seq_end(&gs, 1, 4372, A2A_ERR_UNAVAILABLE);
    CU_ASSERT_EQUAL(gs.top_failed, 4373);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, -1, 0), 4372); /* the replacement: a latecomer */
    CU_ASSERT_EQUAL(gs.orphaned[0], 0);
    group_seq_end(&gs, 0, 4372, A2A_ERR_UNAVAILABLE);
    /* the round after: both in 4373 */
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, 4373, 1), 4373);
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 1, 4373, 1), 4373);
    /* a job that went away idle (its last call returned) still skips: test_new_job */
    group_seq_end(&gs, 0, 4373, A2A_OK);
    group_seq_end(&gs, 1, 4373, A2A_OK);
    group_seq_fail(&gs, 4374, A2A_ERR_DEADLINE_EXCEEDED, "waiting for the dead job");
    CU_ASSERT_EQUAL(group_seq_begin(&gs, 0, -1, 0), 4375);
    group_seq_fini(&gs);
}

static void
test_classify(void)
{
    group_seq gs;
    fresh(&gs);
    /* nobody called: a few operations may be kept where peers are */
    CU_ASSERT_EQUAL(group_seq_classify(&gs, 1000, 0, 0), GROUP_ACTIVE);
    CU_ASSERT_EQUAL(group_seq_classify(&gs, 1000, 0, GROUP_WINDOW), GROUP_FUTURE);
    group_seq_begin(&gs, 0, 10, 0); /* next 11 */
    group_seq_begin(&gs, 1, 12, 0); /* next 13 */
    CU_ASSERT_EQUAL(group_seq_min_next(&gs), 11);
    CU_ASSERT_EQUAL(group_seq_classify(&gs, 11, 0, 0), GROUP_ACTIVE);
    CU_ASSERT_EQUAL(group_seq_classify(&gs, 11 + GROUP_WINDOW - 1, 0, 0), GROUP_ACTIVE);
    CU_ASSERT_EQUAL(group_seq_classify(&gs, 11 + GROUP_WINDOW, 0, 0), GROUP_FUTURE);
    CU_ASSERT_EQUAL(group_seq_classify(&gs, 10, 0, 0), GROUP_PAST);
    CU_ASSERT_EQUAL(group_seq_classify(&gs, 10, 1, 0), GROUP_ACTIVE); /* held: it is live */
    group_seq_fail(&gs, 9, A2A_ERR_DEADLINE_EXCEEDED, "late");
    CU_ASSERT_EQUAL(group_seq_classify(&gs, 9, 0, 0), GROUP_PAST_FAILED);
    group_seq_fini(&gs);
}

/* a new epoch keeps the numbers of the ranks it shares with the old one, and the history */
static void
test_carry(void)
{
    static const int64_t world_new[] = {5, 7, 4};
    group_seq old, gs;
    fresh(&old);
    group_seq_begin(&old, 0, 40, 0); /* world rank 4: next 41 */
    group_seq_fail(&old, 40, A2A_ERR_UNAVAILABLE, "restart");
    group_seq_end(&old, 0, 40, A2A_ERR_UNAVAILABLE);
    group_seq_saw(&old, 41);
    CU_ASSERT_EQUAL_FATAL(group_seq_init(&gs, 3, world_new), 0);
    CU_ASSERT(!gs.prior[0] && !gs.prior[1] && !gs.prior[2]);
    old.prior[1] = 1; /* the state file's word on world rank 5, which never called since */
    group_seq_carry(&gs, &old);
    CU_ASSERT(gs.prior[0] && !gs.prior[1] && !gs.prior[2]);
    CU_ASSERT_EQUAL(gs.next[2], 41);
    CU_ASSERT(gs.known[2] && !gs.busy[2]);
    CU_ASSERT(!gs.known[0] && !gs.known[1]); /* world 5 never called; 7 is new */
    CU_ASSERT_PTR_NOT_NULL(group_seq_failed(&gs, 40));
    CU_ASSERT_EQUAL(gs.hint, 41);
    CU_ASSERT_EQUAL(group_seq_min_next(&gs), 41);
    group_seq_fini(&old);
    group_seq_fini(&gs);
}

/* the state file's lines: "RANK NAME\n" with any valid group name (spaces too), nothing else */
static void
test_state_line(void)
{
    static const char *bad[] = {
        "",           "\n",
        "1\n",        "1 \n",
        "x m\n",      "-1 m\n",
        " 1 m\n",     "1 m",
        "1  m\x01\n", "99999999999999999999 m\n",
        "1\tm\n",     "12345678901234567890123 m\n",
    };
    char name[A2A_GROUP_NAME_MAX + 1], line[256], longname[200];
    int64_t rank = -7;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_EQUAL(group_state_parse(bad[i], strlen(bad[i]), &rank, name), -1);
    CU_ASSERT_EQUAL(rank, -7);
    CU_ASSERT_EQUAL(group_state_parse("0 m\n", 4, &rank, name), 0);
    CU_ASSERT_EQUAL(rank, 0);
    CU_ASSERT_STRING_EQUAL(name, "m");
    CU_ASSERT_EQUAL(group_state_parse("12 a b  c\n", 10, &rank, name), 0); /* spaces are fine */
    CU_ASSERT_EQUAL(rank, 12);
    CU_ASSERT_STRING_EQUAL(name, "a b  c");
    CU_ASSERT_EQUAL(group_state_parse("1 m\0x\n", 6, &rank, name), -1); /* a NUL inside */
    memset(longname, 'g', sizeof(longname));
    longname[A2A_GROUP_NAME_MAX] = '\0'; /* the longest name */
    CU_ASSERT_EQUAL(group_state_format(line, sizeof(line), 4095, longname),
                    (int)strlen(longname) + 6);
    CU_ASSERT_EQUAL(group_state_parse(line, strlen(line), &rank, name), 0);
    CU_ASSERT_EQUAL(rank, 4095);
    CU_ASSERT_STRING_EQUAL(name, longname);
    longname[A2A_GROUP_NAME_MAX] = 'g';
    longname[A2A_GROUP_NAME_MAX + 1] = '\0'; /* one over */
    CU_ASSERT_EQUAL(group_state_format(line, sizeof(line), 1, longname), -1);
    snprintf(line, sizeof(line), "1 %s\n", longname);
    CU_ASSERT_EQUAL(group_state_parse(line, strlen(line), &rank, name), -1);
    CU_ASSERT_EQUAL(group_state_format(line, sizeof(line), -1, "m"), -1);
    CU_ASSERT_EQUAL(group_state_format(line, sizeof(line), 1, ""), -1);
    CU_ASSERT_EQUAL(group_state_format(line, sizeof(line), 1, "a\nb"), -1);
    CU_ASSERT_EQUAL(group_state_format(line, 4, 1, "m"), -1); /* "1 m\n" needs 5 */
    CU_ASSERT_EQUAL(group_state_format(line, 5, 1, "m"), 4);
}

/* the history is a ring: the oldest of more than GROUP_HISTORY failures is forgotten */
static void
test_history_ring(void)
{
    group_seq gs;
    fresh(&gs);
    for (uint64_t i = 0; i <= GROUP_HISTORY; i++)
        group_seq_fail(&gs, 100 + i, A2A_ERR_DEADLINE_EXCEEDED, "t");
    CU_ASSERT_PTR_NULL(group_seq_failed(&gs, 100));
    CU_ASSERT_PTR_NOT_NULL(group_seq_failed(&gs, 101));
    CU_ASSERT_PTR_NOT_NULL(group_seq_failed(&gs, 100 + GROUP_HISTORY));
    group_seq_fail(&gs, 101, A2A_ERR_INTERNAL, "second"); /* the first record stays */
    CU_ASSERT_EQUAL(group_seq_failed(&gs, 101)->status, A2A_ERR_DEADLINE_EXCEEDED);
    group_seq_fini(&gs);
}

/* ---- a lockstep campaign of the rules: workers, jobs, faults, rounds ---- */

#define SIM_W 3
#define SIM_R 2
#define SIM_N (SIM_W * SIM_R)

typedef struct {
    group_seq seq[SIM_W];
    int64_t job_next[SIM_N];
    int job_failed[SIM_N];
    uint64_t incarnation[SIM_W];
    uint64_t rng;
} sim;

static uint32_t
sim_rand(sim *s)
{
    s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(s->rng >> 33);
}

static void
sim_worker_start(sim *s, int w)
{
    int64_t world[SIM_R];
    for (int l = 0; l < SIM_R; l++)
        world[l] = w * SIM_R + l;
    group_seq_fini(&s->seq[w]);
    CU_ASSERT_EQUAL_FATAL(group_seq_init(&s->seq[w], SIM_R, world), 0);
    s->incarnation[w] = ((uint64_t)w << 48) + sim_rand(s);
}

/* sim_deliver hands worker w a READY (ready) or ABORT of operation num from worker from, as
 * op_on_frame classifies it; here[]: the numbers the ranks are in this round (-1: none). A
 * READY whose numbers differ resynchronises every worker (ABORTs with the resync field). */
static void
sim_deliver(sim *s, int w, int from, uint64_t num, int ready, const int64_t *here)
{
    group_seq *gs = &s->seq[w];
    uint64_t top = 0, r;
    int exists = 0;
    for (int l = 0; l < SIM_R; l++)
        if (here[w * SIM_R + l] >= 0) {
            exists |= here[w * SIM_R + l] == (int64_t)num;
            if ((uint64_t)here[w * SIM_R + l] > top)
                top = (uint64_t)here[w * SIM_R + l];
        }
    switch (group_seq_classify(gs, num, exists, exists)) {
    case GROUP_ACTIVE:
        if (ready)
            group_seq_saw(gs, num);
        else
            group_seq_fail(gs, num, A2A_ERR_UNAVAILABLE, "abort");
        break;
    case GROUP_PAST_FAILED: break;
    case GROUP_PAST:
    case GROUP_FUTURE:
        if (!ready) {
            group_seq_heard_failed(gs, num);
            break;
        }
        group_seq_saw(gs, num);
        if (group_seq_differ(gs, s->incarnation[from], num)) {
            r = gs->floor; /* a straggler */
            (void)group_seq_resync(&s->seq[from], r, 0);
            break;
        }
        top = group_seq_top(gs, top);
        r = (num > top ? num : top) + 1;
        if (getenv("SIM_DEBUG"))
            printf("  w%d from w%d: %s %llu (lo %llu) -> resync %llu\n", w, from,
                   num < group_seq_min_next(gs) ? "past" : "future", (unsigned long long)num,
                   (unsigned long long)group_seq_min_next(gs), (unsigned long long)r);
        for (int v = 0; v < SIM_W; v++) /* our reply, and the ABORTs of our calls */
            (void)group_seq_resync(&s->seq[v], r, 0);
        break;
    }
}

/*
 * sim_round runs one lockstep round: every present rank calls once, in a random order, with
 * the READYs of those that called before delivered to the other workers at random points;
 * absent ranks (a killed job, a stopped worker) do not call. The operation succeeds when
 * every rank called with the same number; else every call fails and each worker's ABORT
 * reaches the others. Returns 1 when the round succeeded.
 */
static int
sim_round(sim *s, const int *absent, const int *late)
{
    int64_t num[SIM_N];
    int order[SIM_N], pending[SIM_N][SIM_W], ok = 1;

    for (int i = 0; i < SIM_N; i++) {
        order[i] = i;
        num[i] = -1;
        for (int w = 0; w < SIM_W; w++)
            pending[i][w] = 0;
    }
    for (int i = SIM_N - 1; i > 0; i--) {
        int j = (int)(sim_rand(s) % (uint32_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < SIM_N; k++) {
        int r = order[k], w = r / SIM_R;
        if (absent[r] || late[r])
            continue;
        for (int q = 0; q < SIM_N; q++) /* some READYs reach w before r calls */
            if (pending[q][w] && sim_rand(s) % 2 == 0) {
                sim_deliver(s, w, q / SIM_R, (uint64_t)num[q], 1, num);
                pending[q][w] = 0;
            }
        num[r] = (int64_t)group_seq_begin(&s->seq[w], (size_t)(r % SIM_R), s->job_next[r],
                                          s->job_failed[r]);
        for (int v = 0; v < SIM_W; v++)
            pending[r][v] = v != w;
    }
    for (int q = 0; q < SIM_N; q++)
        for (int w = 0; w < SIM_W; w++)
            if (pending[q][w])
                sim_deliver(s, w, q / SIM_R, (uint64_t)num[q], 1, num);
    for (int r = 0; r < SIM_N; r++)
        ok &= !absent[r] && !late[r] && num[r] == num[0];
    if (getenv("SIM_DEBUG")) {
        for (int r = 0; r < SIM_N; r++)
            printf(" %lld", (long long)num[r]);
        printf(" | floors");
        for (int w = 0; w < SIM_W; w++)
            printf(" %llu", (unsigned long long)s->seq[w].floor);
        printf("\n");
    }
    for (int r = 0; r < SIM_N && !ok; r++) {
        if (absent[r] || late[r])
            continue;
        group_seq_fail(&s->seq[r / SIM_R], (uint64_t)num[r], A2A_ERR_DEADLINE_EXCEEDED, "t");
        for (int w = 0; w < SIM_W; w++)
            if (w != r / SIM_R)
                sim_deliver(s, w, r / SIM_R, (uint64_t)num[r], 0, num);
    }
    for (int r = 0; r < SIM_N; r++) /* latecomers call once the others have given up */
        if (late[r])
            num[r] = (int64_t)group_seq_begin(&s->seq[r / SIM_R], (size_t)(r % SIM_R),
                                              s->job_next[r], s->job_failed[r]);
    for (int r = 0; r < SIM_N; r++) {
        if (absent[r])
            continue;
        group_seq_end(&s->seq[r / SIM_R], (size_t)(r % SIM_R), (uint64_t)num[r],
                      ok ? A2A_OK : A2A_ERR_DEADLINE_EXCEEDED);
        s->job_next[r] = num[r] + 1; /* the worker's reply */
        s->job_failed[r] = !ok;
    }
    return ok;
}

/*
 * Every fault of the campaign in turn, thousands of times with random orders of events: a
 * worker restart (its jobs keep their numbers), a job killed before a round and started anew,
 * a whole host restarted (worker and jobs), a worker stopped for a round. After the round of
 * the fault, the group must succeed again within two lockstep calls.
 */
static void
test_lockstep_campaign(void)
{
    sim s;
    int worst = 0, faults = 0;
    memset(&s, 0, sizeof(s));
    s.rng = 12345;
    for (int w = 0; w < SIM_W; w++)
        sim_worker_start(&s, w);
    for (int r = 0; r < SIM_N; r++)
        s.job_next[r] = -1;
    for (int i = 0; i < 3; i++)
        CU_ASSERT(sim_round(&s, (int[SIM_N]){0}, (int[SIM_N]){0}));
    for (int f = 0; f < 20000; f++) {
        int absent[SIM_N] = {0}, late[SIM_N] = {0}, kind = (int)(sim_rand(&s) % 4);
        int w = (int)(sim_rand(&s) % SIM_W);
        int r = (int)(sim_rand(&s) % SIM_N), bad = 0;
        switch (kind) {
        case 0: sim_worker_start(&s, w); break; /* kill -9 + restart of a worker */
        case 1:                                 /* a job killed: its round is missed */
            absent[r] = 1;
            (void)sim_round(&s, absent, late);
            s.job_next[r] = -1;
            s.job_failed[r] = 0;
            break;
        case 2: /* a host: worker and its jobs */
            sim_worker_start(&s, w);
            for (int l = 0; l < SIM_R; l++)
                s.job_next[w * SIM_R + l] = -1, s.job_failed[w * SIM_R + l] = 0;
            break;
        case 3: /* a stopped worker: its ranks' calls of a round come after the others gave up */
            for (int l = 0; l < SIM_R; l++)
                late[w * SIM_R + l] = 1;
            (void)sim_round(&s, absent, late);
            break;
        }
        faults++;
        while (!sim_round(&s, (int[SIM_N]){0}, (int[SIM_N]){0}) && bad < 10)
            bad++;
        if (bad > worst)
            worst = bad;
        CU_ASSERT(bad <= 1); /* the first call after the fault may fail, the second works */
        if (bad > 1) {
            printf("fault %d (kind %d): %d failed rounds after it\n", f, kind, bad);
            break;
        }
    }
    printf("\n    %d faults: at most %d failed lockstep round(s) after one\n", faults, worst);
    for (int w = 0; w < SIM_W; w++)
        group_seq_fini(&s.seq[w]);
}

/* ---- the early store ---- */

static frame
ready(const char *group, uint64_t epoch, uint64_t op, size_t n)
{
    frame f = {.type = FRAME_READY, .n = n};
    snprintf(f.id.group, sizeof(f.id.group), "%s", group);
    f.id.epoch = epoch;
    f.id.op = op;
    f.srcs = calloc(n > 0 ? n : 1, sizeof(int64_t));
    f.counts = calloc(n > 0 ? n : 1, sizeof(int64_t));
    return f;
}

static void
test_early_order(void)
{
    early_store s = {0};
    frame f;
    early_frame *x;
    for (uint64_t i = 0; i < 5; i++) {
        f = ready(i % 2 ? "b" : "a", 7 + i % 3, i, 2);
        CU_ASSERT_EQUAL(early_keep(&s, 1, &f, 1000), 0);
        CU_ASSERT_PTR_NULL(f.srcs); /* taken over */
    }
    /* group a, epochs <= 8: ops 0 (epoch 7) then 2 (epoch 9) is too new, 4 (epoch 8) */
    x = early_take(&s, "a", 8);
    CU_ASSERT_EQUAL_FATAL(x != NULL, 1);
    CU_ASSERT_EQUAL(x->f.id.op, 0);
    early_free(x);
    x = early_take(&s, "a", 8);
    CU_ASSERT_EQUAL_FATAL(x != NULL, 1);
    CU_ASSERT_EQUAL(x->f.id.op, 4);
    early_free(x);
    CU_ASSERT_PTR_NULL(early_take(&s, "a", 8));
    CU_ASSERT_EQUAL(s.n, 3);
    early_clear(&s);
    CU_ASSERT_EQUAL(s.n, 0);
    CU_ASSERT_EQUAL(s.bytes, 0);
}

static void
test_early_bounds(void)
{
    early_store s = {0};
    frame f;
    char name[32];
    size_t kept = 0;
    /* one group name gets at most EARLY_GROUP_MAX frames */
    for (int i = 0; i < EARLY_GROUP_MAX + 10; i++) {
        f = ready("flood", 1, (uint64_t)i, 0);
        if (early_keep(&s, 0, &f, 0) == 0)
            kept++;
        frame_fini(&f);
    }
    CU_ASSERT_EQUAL(kept, EARLY_GROUP_MAX);
    CU_ASSERT_EQUAL(s.refused, 10);
    /* many names from one peer: half the store at most; the other half stays for the others */
    for (int i = 0; i < 3 * EARLY_MAX; i++) {
        snprintf(name, sizeof(name), "g%d", i);
        f = ready(name, 1, 0, 0);
        (void)early_keep(&s, 0, &f, 0);
        frame_fini(&f);
    }
    CU_ASSERT_EQUAL(s.n, EARLY_PEER_MAX);
    f = ready("healthy", 1, 0, 0);
    CU_ASSERT_EQUAL(early_keep(&s, 1, &f, 0), 0);
    for (int p = 2; p < 8; p++)
        for (int i = 0; i < EARLY_MAX; i++) {
            snprintf(name, sizeof(name), "p%d-%d", p, i);
            f = ready(name, 1, 0, 0);
            (void)early_keep(&s, p, &f, 0);
            frame_fini(&f);
        }
    CU_ASSERT_EQUAL(s.n, EARLY_MAX); /* and EARLY_MAX in all */
    /* a healthy group still gets its own share once the flood has aged out */
    early_expire(&s, EARLY_AGE_MS + 1);
    CU_ASSERT_EQUAL(s.n, 0);
    /* bytes: a READY of 65536 pairs costs 1 MiB here; a group holds two at most */
    kept = 0;
    for (int i = 0; i < 4; i++) {
        f = ready("big", 1, (uint64_t)i, 65536);
        if (early_keep(&s, 0, &f, 100000) == 0)
            kept++;
        frame_fini(&f);
    }
    CU_ASSERT_EQUAL(kept, 1);
    CU_ASSERT(s.bytes <= EARLY_GROUP_BYTES);
    early_clear(&s);
}

/* what the store refused is remembered by operation: once each, taken by group and epoch */
static void
test_early_lost(void)
{
    early_store s = {0};
    early_lost l;
    frame f = ready("g", 5, 3, 0);

    early_lost_note(&s, &f, 2);
    early_lost_note(&s, &f, 4); /* the same operation: one record, the first peer */
    f.id.op = 4;
    early_lost_note(&s, &f, 1);
    f.id.epoch = 6; /* a newer epoch than the one installed below: kept for it */
    early_lost_note(&s, &f, 1);
    f.id.epoch = 4; /* an older one: dropped by the take of epoch 5 */
    early_lost_note(&s, &f, 1);
    f.type = FRAME_PROBE; /* a PROBE is asked again: not an operation's loss */
    f.id.epoch = 5;
    f.id.op = 9;
    early_lost_note(&s, &f, 1);
    snprintf(f.id.group, sizeof(f.id.group), "other");
    f.type = FRAME_SLICE;
    early_lost_note(&s, &f, 3);
    CU_ASSERT_EQUAL(s.nlost, 5);

    CU_ASSERT_EQUAL_FATAL(early_lost_take(&s, "g", 5, &l), 1);
    CU_ASSERT_EQUAL(l.op, 3);
    CU_ASSERT_EQUAL(l.peer, 2);
    CU_ASSERT_EQUAL_FATAL(early_lost_take(&s, "g", 5, &l), 1);
    CU_ASSERT_EQUAL(l.op, 4);
    CU_ASSERT_EQUAL(l.epoch, 5);
    CU_ASSERT_EQUAL(early_lost_take(&s, "g", 5, &l), 0);
    CU_ASSERT_EQUAL(s.nlost, 2); /* g's epoch 6 and other's */
    CU_ASSERT_EQUAL_FATAL(early_lost_take(&s, "g", 6, &l), 1);
    CU_ASSERT_EQUAL(l.op, 4);
    CU_ASSERT_EQUAL_FATAL(early_lost_take(&s, "other", 5, &l), 1);
    CU_ASSERT_EQUAL(l.op, 9);
    CU_ASSERT_EQUAL(s.nlost, 0);

    /* bounded: the oldest give way */
    for (uint64_t i = 0; i < EARLY_LOST_MAX + 10; i++) {
        f.id.op = i;
        early_lost_note(&s, &f, 0);
    }
    CU_ASSERT_EQUAL(s.nlost, EARLY_LOST_MAX);
    CU_ASSERT_EQUAL_FATAL(early_lost_take(&s, "other", 5, &l), 1);
    CU_ASSERT_EQUAL(l.op, 10);
    frame_fini(&f);
}

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"numbers: the job's, else the worker's", test_numbers},
        {"latecomer of a failed operation", test_latecomer},
        {"resynchronise after a failure", test_resync},
        {"a new job on a used rank", test_new_job},
        {"a replacement of a job gone in a call", test_new_job_orphaned},
        {"state file lines", test_state_line},
        {"classify a frame's number", test_classify},
        {"carry to a new epoch", test_carry},
        {"history ring", test_history_ring},
        {"lockstep campaign of the rules", test_lockstep_campaign},
        {"early store: order and epochs", test_early_order},
        {"early store: bounds and age", test_early_bounds},
        {"early store: the operations of refused frames", test_early_lost},
    };
    return cu_main("group", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
