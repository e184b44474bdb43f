/*
 * seqcheck.c - a job (one rank) whose every element says which operation it
 * belongs to, so that a call returning A2A_OK with another operation's data is
 * caught, not only corrupt bytes. Run by test_restart_race.sh, test_lockstep.sh,
 * test_trickle.sh and test_flood.sh.
 *
 * Element k of the slice world rank S sends to world rank D in call number I
 * (the call index as the test counts it) is the uint64
 *
 *     MAGIC ^ (I << 40 | S << 28 | D << 16 | k & 0xffff)
 *
 * so a wrong element is decoded and printed (which call, sender and receiver
 * it came from). Before every call the receive buffer is filled with a
 * sentinel, with one guard element after every slice; an OK call must have
 * written every element of every slice and no guard.
 *
 * usage: seqcheck [OPTIONS] MODE ARGS...
 *   --group NAME      the group (default: hccl_world_group)
 *   --members A,B,..  its world ranks in group-rank order (default: asked of
 *                     the worker; given, the job asks nothing before its first
 *                     call, so the first thing its worker sees is the call)
 *   --timeout MS      timeout_ms of every call (default 3000)
 *   --count N         elements per slice (default 8: eager; over 4096, 32 KiB,
 *                     is rendezvous)
 *   --base I          the index of the first call (default 0)
 *   --pause MS        lockstep: sleep after every round (default 20)
 *   --announce 1      lockstep: print "rank W round I begin start=T" (Unix ms)
 *                     before every call, so that a caller watching the log
 *                     sees a call that does not return (campaign.sh)
 *   --discover 1      count discovery: no receive counts; what a rank sends
 *                     another is N less 0..2 by the call index and the pair,
 *                     and an OK call must have got the right counts, the
 *                     slices packed in group-rank order and nothing after them
 *
 * modes:
 *   calls N           N calls with indices base..base+N-1
 *   serve             reads stdin: a line "N" makes N calls (indices go on
 *                     from the job's start), then prints "done K" (the K-th
 *                     command, from 1); end of input ends the job
 *   lockstep DIR SECONDS
 *                     the ranks meet at a barrier outside a2a before every
 *                     call: DIR/rank.W holds the round world rank W has
 *                     reached; a rank starts round R when every member's file
 *                     says R or more, and calls with index R. A (re)started
 *                     rank begins at the highest round any member reached, so
 *                     a restarted rank joins the current round. SECONDS counts
 *                     from the mtime of DIR/start if it exists (one end time
 *                     for ranks started later), else from now; DIR/stop ends
 *                     the loop. The end is decided per round, not per rank:
 *                     a rank that sees the end writes "R halt" instead of
 *                     "R", and round R runs on every member or on none (no
 *                     call is left alone in a round its peers skipped; a
 *                     rank restarted just as the end comes is the exception).
 *   sentinel FROM COUNT WATCH_MS [shared]
 *                     one call receiving COUNT uint64 from group rank FROM
 *                     (sending nothing) that must fail (a fake peer trickles
 *                     the slice): it must return within timeout + --bound MS
 *                     (default 2000), then the receive buffer is filled with a
 *                     sentinel and watched for WATCH_MS: no byte may change.
 *                     "shared": the buffer comes from a2a_buffer_alloc.
 *
 * Output, one line per call (key=value, for the scripts):
 *   rank W call I status=OK data=ok ms=T
 *   rank W call I status=OK data=wrong ms=T: what the first wrong element was
 *   rank W call I status=DEADLINE_EXCEEDED data=none ms=T: the message
 * lockstep adds start= and end= (Unix ms) and says "round" instead of "call".
 * Exit status: 0 all calls OK with the right data (lockstep: no wrong data),
 * 1 errors only, 2 bad usage or setup, 3 wrong data in an OK call (also when
 * there were errors), 4 sentinel: a late return or a byte landed after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "a2a.h"

#define MAGIC 0x5AC3E11E00000000ULL
#define SENTINEL 0xEEEEEEEEEEEEEEEEULL
#define MAX_RANKS 4096

static int64_t world_me = -1;
static const char *group = NULL;
static int64_t members[MAX_RANKS];
static int64_t n = 0, me = -1; /* group size, my group rank */
static int64_t timeout_ms = 3000, count = 8, base = 0, pause_ms = 20, bound_ms = 2000;
static int announce = 0;
static int discover = 0; /* --discover 1: no receive counts; each call's counts differ (sizes) */

static void
say(const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("rank %" PRId64 " %s\n", world_me, line);
    fflush(stdout);
}

static int64_t
mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static uint64_t
encode(int64_t call, int64_t src, int64_t dst, int64_t k)
{
    return MAGIC ^ ((uint64_t)(call & 0xffffff) << 40 | (uint64_t)(src & 0xfff) << 28 |
                    (uint64_t)(dst & 0xfff) << 16 | (uint64_t)(k & 0xffff));
}

/* describe writes what element value v claims to be. */
static void
describe(uint64_t v, char *out, size_t len)
{
    uint64_t x = v ^ MAGIC;
    if (v == SENTINEL)
        snprintf(out, len, "never written (sentinel)");
    else
        snprintf(out, len, "call %llu from %llu to %llu element %llu (0x%016llx)",
                 (unsigned long long)(x >> 40), (unsigned long long)(x >> 28 & 0xfff),
                 (unsigned long long)(x >> 16 & 0xfff), (unsigned long long)(x & 0xffff),
                 (unsigned long long)v);
}

/* ---- one call ---- */

typedef struct {
    uint64_t *send, *recv;
    int64_t *scounts, *sdispls, *rcounts, *rdispls, *rout;
} bufs;

/* sizes: with --discover, what src sends dst in call idx: count, less 0..2 by the call and the
 * pair, so that counts of another call, or of another pair, are told apart */
static int64_t
sizes(int64_t idx, int64_t src, int64_t dst)
{
    int64_t k = count - (int64_t)(((uint64_t)idx + (uint64_t)src + 2 * (uint64_t)dst) % 3);
    return discover && k > 0 ? k : discover ? 0 : count;
}

static int
bufs_init(bufs *b)
{
    b->send = calloc((size_t)(n * count + 1), sizeof(uint64_t));
    b->recv = calloc((size_t)(n * (count + 1) + 1), sizeof(uint64_t));
    b->scounts = calloc((size_t)n, sizeof(int64_t));
    b->sdispls = calloc((size_t)n, sizeof(int64_t));
    b->rcounts = calloc((size_t)n, sizeof(int64_t));
    b->rdispls = calloc((size_t)n, sizeof(int64_t));
    b->rout = calloc((size_t)n, sizeof(int64_t));
    if (!b->send || !b->recv || !b->scounts || !b->sdispls || !b->rcounts || !b->rdispls ||
        !b->rout)
        return -1;
    for (int64_t j = 0; j < n; j++) {
        b->scounts[j] = b->rcounts[j] = count;
        b->sdispls[j] = j * count;
        b->rdispls[j] = j * (count + 1); /* one guard element after every slice */
    }
    return 0;
}

typedef enum { DATA_NONE, DATA_OK, DATA_WRONG } data_verdict;

/*
 * one_call makes call number idx; returns its status, *verdict and in detail
 * the message (error) or the first wrong element (OK).
 */
static a2a_status
one_call(a2a_job *job, bufs *b, int64_t idx, data_verdict *verdict, char *detail, size_t dlen,
         int64_t *ms)
{
    int64_t rlen = n * (count + 1), t0;
    a2a_status st;

    for (int64_t j = 0; j < n; j++) {
        b->scounts[j] = sizes(idx, world_me, members[j]);
        for (int64_t k = 0; k < b->scounts[j]; k++)
            b->send[j * count + k] = encode(idx, world_me, members[j], k);
    }
    for (int64_t i = 0; i < rlen; i++)
        b->recv[i] = SENTINEL;
    if (discover) { /* expected: packed in group-rank order, each followed by what comes next */
        for (int64_t i = 0, at = 0; i < n; i++) {
            b->rcounts[i] = sizes(idx, members[i], world_me);
            b->rdispls[i] = at;
            b->rout[i] = -1;
            at += b->rcounts[i];
        }
    }
    a2a_alltoallv_args a = {
        .group = group,
        .dtype = A2A_UINT64,
        .send_data = b->send,
        .send_len = (size_t)(n * count),
        .send_counts = b->scounts,
        .send_displacements = b->sdispls,
        .recv_data = b->recv,
        .recv_len = (size_t)rlen,
        .recv_counts = discover ? NULL : b->rcounts,
        .recv_displacements = discover ? NULL : b->rdispls,
        .timeout_ms = timeout_ms,
        .recv_counts_out = discover ? b->rout : NULL,
    };
    t0 = mono_ms();
    st = a2a_all_to_all_v(job, &a);
    *ms = mono_ms() - t0;
    detail[0] = '\0';
    if (st != A2A_OK) {
        *verdict = DATA_NONE;
        snprintf(detail, dlen, "%s", a2a_job_error(job));
        return st;
    }
    *verdict = DATA_OK;
    for (int64_t i = 0; i < n && discover && *verdict == DATA_OK; i++)
        if (b->rout[i] != b->rcounts[i]) {
            snprintf(detail, dlen, "group rank %lld (world %lld) sent %lld elements, expected %lld",
                     (long long)i, (long long)members[i], (long long)b->rout[i],
                     (long long)b->rcounts[i]);
            *verdict = DATA_WRONG;
        }
    for (int64_t i = 0; i < n && *verdict == DATA_OK; i++) {
        for (int64_t k = 0; k < b->rcounts[i]; k++) {
            uint64_t got = b->recv[b->rdispls[i] + k], want = encode(idx, members[i], world_me, k);
            if (got != want) {
                char g[160], w[160];
                describe(got, g, sizeof(g));
                describe(want, w, sizeof(w));
                snprintf(detail, dlen,
                         "from group rank %lld (world %lld) element %lld is %s, expected %s",
                         (long long)i, (long long)members[i], (long long)k, g, w);
                *verdict = DATA_WRONG;
                break;
            }
        }
        /* the guard after the slice (discovering: after the last slice only, packed) */
        int64_t guard = b->rdispls[i] + b->rcounts[i];
        if (*verdict == DATA_OK && (!discover || i == n - 1) && b->recv[guard] != SENTINEL) {
            char g[160];
            describe(b->recv[guard], g, sizeof(g));
            snprintf(detail, dlen, "the guard after group rank %lld's slice was overwritten: %s",
                     (long long)i, g);
            *verdict = DATA_WRONG;
        }
    }
    return st;
}

/* Failed calls by status, for the lockstep summary. */
#define NSTATUS 32
static int64_t by_status[NSTATUS];

/* call_line makes call idx and prints its line; the return: 0 OK, 1 error, 3 wrong. */
static int
call_line(a2a_job *job, bufs *b, const char *word, int64_t idx, const char *extra)
{
    data_verdict v;
    char detail[1400];
    int64_t ms, start = unix_ms();
    a2a_status st = one_call(job, b, idx, &v, detail, sizeof(detail), &ms);
    char when[96] = "";

    if (extra != NULL)
        snprintf(when, sizeof(when), " start=%lld end=%lld", (long long)start,
                 (long long)unix_ms());
    say("%s %lld status=%s data=%s ms=%lld%s%s%s", word, (long long)idx, a2a_status_name(st),
        v == DATA_NONE ? "none"
        : v == DATA_OK ? "ok"
                       : "wrong",
        (long long)ms, when, detail[0] ? ": " : "", detail);
    if (st != A2A_OK && (int)st >= 0 && (int)st < NSTATUS)
        by_status[st]++;
    return st != A2A_OK ? 1 : v == DATA_WRONG ? 3 : 0;
}

/* ---- setup ---- */

static int
parse_members(const char *s)
{
    char *end;
    n = 0;
    while (*s != '\0') {
        if (n == MAX_RANKS)
            return -1;
        members[n++] = strtoll(s, &end, 10);
        if (end == s || (*end != ',' && *end != '\0'))
            return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n > 0 ? 0 : -1;
}

/* find_me sets me from members; -1 when world_me is not one of them. */
static int
find_me(void)
{
    for (int64_t i = 0; i < n; i++)
        if (members[i] == world_me)
            me = i;
    return me >= 0 ? 0 : -1;
}

/* load_members asks the worker for the group's members. */
static a2a_status
load_members(a2a_job *job)
{
    a2a_status st = a2a_get_rank_size(job, group, &n);
    if (st != A2A_OK)
        return st;
    if (n > MAX_RANKS)
        return A2A_ERR_INVALID_ARGUMENT;
    for (int64_t i = 0; i < n && st == A2A_OK; i++)
        st = a2a_get_world_rank_from_group_rank(job, group, i, &members[i]);
    return st;
}

/* ---- modes ---- */

static int
calls_mode(a2a_job *job, bufs *b, int64_t ncalls)
{
    int worst = 0;
    for (int64_t i = 0; i < ncalls; i++) {
        int r = call_line(job, b, "call", base + i, NULL);
        worst = r > worst ? r : worst;
    }
    return worst;
}

static int
serve_mode(a2a_job *job, bufs *b)
{
    char line[64];
    int64_t next = base, k = 0;
    int worst = 0;

    say("serve ready");
    while (fgets(line, sizeof(line), stdin) != NULL) {
        long long m = strtoll(line, NULL, 10);
        for (long long i = 0; i < m; i++) {
            int r = call_line(job, b, "call", next++, NULL);
            worst = r > worst ? r : worst;
        }
        say("done %lld", (long long)++k);
    }
    return worst;
}

/* read_round: the round in file path, or -1; *halt: the file says the rank
 * stops at that round. */
static int64_t
read_round(const char *path, int *halt)
{
    char buf[32] = {0}, *end;
    int fd = open(path, O_RDONLY);
    ssize_t r;
    int64_t v;
    *halt = 0;
    if (fd < 0)
        return -1;
    r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return -1;
    v = strtoll(buf, &end, 10);
    *halt = strncmp(end, " halt", 5) == 0;
    return v;
}

/* write_round: "R" (this rank has finished round R-1 and waits at barrier R)
 * or "R halt" (it stops there). Written once per round, before the barrier. */
static void
write_round(const char *dir, int64_t round, int halt)
{
    char tmp[4200], path[4200], buf[40];
    int fd, len = snprintf(buf, sizeof(buf), "%lld%s\n", (long long)round, halt ? " halt" : "");
    snprintf(tmp, sizeof(tmp), "%s/.rank.%lld.%d", dir, (long long)world_me, (int)getpid());
    snprintf(path, sizeof(path), "%s/rank.%lld", dir, (long long)world_me);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
        return;
    if (write(fd, buf, (size_t)len) != len) {
        close(fd);
        return;
    }
    close(fd);
    rename(tmp, path); /* readers see the old round or the new one, never half */
}

/* lowest/highest round over the members' files (missing: -1); *halt: some
 * member's file says it stops at round `at`. */
static void
rounds(const char *dir, int64_t at, int64_t *lo, int64_t *hi, int *halt)
{
    char path[4200];
    *lo = INT64_MAX;
    *hi = -1;
    *halt = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t r;
        int h;
        snprintf(path, sizeof(path), "%s/rank.%lld", dir, (long long)members[i]);
        r = read_round(path, &h);
        *lo = r < *lo ? r : *lo;
        *hi = r > *hi ? r : *hi;
        if (h && r == at)
            *halt = 1;
    }
}

static int
exists(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static int
lockstep_mode(a2a_job *job, bufs *b, const char *dir, int64_t seconds)
{
    char path[4200];
    struct stat sb;
    int64_t end, lo, hi, round, nrounds = 0, ok = 0, wrong = 0, err = 0, first;
    int halt;

    snprintf(path, sizeof(path), "%s/start", dir);
    end = (stat(path, &sb) == 0 ? (int64_t)sb.st_mtime * 1000 : unix_ms()) + seconds * 1000;
    rounds(dir, -1, &lo, &hi, &halt);
    round = hi < 0 ? 0 : hi;
    first = round;
    say("lockstep joins at round %lld (members' rounds %lld..%lld)", (long long)round,
        (long long)lo, (long long)hi);
    /* Whether a round runs is decided once, by the files: a rank checks the
     * end (DIR/stop, the time) when it writes its round, before the barrier,
     * and a round runs only if no member's file says "halt" at it. A file at
     * round R does not change until its rank has run R, so every member that
     * passes barrier R sees the same flags: all ranks run R or none does. */
    write_round(dir, round, unix_ms() >= end || exists(dir, "stop"));
    for (;;) {
        int r;
        rounds(dir, round, &lo, &hi, &halt);
        if (halt)
            break;
        if (lo < round) {
            /* a member has not finished round-1 yet (or is gone): once the
             * end has come it can only write "round halt", so nobody runs
             * this round and leaving is safe. (Rewriting our own file with
             * "halt" is not: the member may have just written the round,
             * and others may have started it on our old file.) */
            if (unix_ms() >= end || exists(dir, "stop"))
                break;
            sleep_ms(5);
            continue;
        }
        if (announce)
            say("round %lld begin start=%lld", (long long)round, (long long)unix_ms());
        r = call_line(job, b, "round", round, "");
        nrounds++;
        if (r == 0) {
            ok++;
        } else if (r == 3) {
            wrong++;
        } else {
            err++;
        }
        round++;
        write_round(dir, round, unix_ms() >= end || exists(dir, "stop"));
        if (pause_ms > 0)
            sleep_ms(pause_ms);
    }
    {
        char errs[512] = "";
        size_t off = 0;
        for (int s = 0; s < NSTATUS && off < sizeof(errs); s++)
            if (by_status[s] > 0)
                off += (size_t)snprintf(errs + off, sizeof(errs) - off, " %s=%lld",
                                        a2a_status_name((a2a_status)s), (long long)by_status[s]);
        say("lockstep summary rounds=%lld ok=%lld wrong=%lld errors=%lld first=%lld last=%lld%s",
            (long long)nrounds, (long long)ok, (long long)wrong, (long long)err, (long long)first,
            (long long)round - 1, errs);
    }
    return wrong > 0 ? 3 : 0;
}

static int
sentinel_mode(a2a_job *job, int64_t from, int64_t cnt, int64_t watch_ms, int shared)
{
    size_t len = (size_t)cnt + 1, bytes = len * sizeof(uint64_t);
    uint64_t *recv = NULL, dummy = 0;
    int64_t *zero = calloc((size_t)n, sizeof(int64_t)), *rc = calloc((size_t)n, sizeof(int64_t));
    int64_t t0, took, changed_at = -1, changed_idx = -1;
    a2a_status st;
    int bad = 0;

    if (zero == NULL || rc == NULL || from < 0 || from >= n)
        return 2;
    if (shared) {
        if ((st = a2a_buffer_alloc(job, bytes, (void **)&recv)) != A2A_OK) {
            say("sentinel FAIL: a2a_buffer_alloc: %s: %s", a2a_status_name(st), a2a_job_error(job));
            return 2;
        }
    } else if ((recv = malloc(bytes)) == NULL) {
        return 2;
    }
    for (size_t i = 0; i < len; i++)
        recv[i] = SENTINEL;
    rc[from] = cnt;
    a2a_alltoallv_args a = {
        .group = group,
        .dtype = A2A_UINT64,
        .send_data = &dummy,
        .send_len = 1,
        .send_counts = zero,
        .send_displacements = zero,
        .recv_data = recv,
        .recv_len = len,
        .recv_counts = rc,
        .recv_displacements = zero,
        .timeout_ms = timeout_ms,
    };
    say("sentinel: calling, receiving %lld uint64 (%zu bytes, %s buffer) from group rank %lld, "
        "timeout %lld ms",
        (long long)cnt, (size_t)cnt * 8, shared ? "shared" : "private", (long long)from,
        (long long)timeout_ms);
    t0 = mono_ms();
    st = a2a_all_to_all_v(job, &a);
    took = mono_ms() - t0;
    say("sentinel: call returned status=%s ms=%lld: %s", a2a_status_name(st), (long long)took,
        st == A2A_OK ? "" : a2a_job_error(job));
    if (st == A2A_OK) {
        say("sentinel FAIL: the call returned OK although the peer never sent its slice");
        bad = 1;
    }
    if (took > timeout_ms + bound_ms) {
        say("sentinel FAIL: the call returned after %lld ms, more than its timeout %lld ms + %lld",
            (long long)took, (long long)timeout_ms, (long long)bound_ms);
        bad = 1;
    }
    for (size_t i = 0; i < len; i++)
        recv[i] = SENTINEL;
    t0 = mono_ms();
    while (mono_ms() - t0 < watch_ms) {
        for (size_t i = 0; i < len && changed_at < 0; i++)
            if (__atomic_load_n(&recv[i], __ATOMIC_RELAXED) != SENTINEL) {
                changed_at = mono_ms() - t0;
                changed_idx = (int64_t)i;
            }
        if (changed_at >= 0)
            break;
        sleep_ms(50);
    }
    if (changed_at >= 0) {
        size_t nchanged = 0;
        sleep_ms(200);
        for (size_t i = 0; i < len; i++)
            nchanged += recv[i] != SENTINEL;
        say("sentinel FAIL: the receive buffer changed %lld ms after the call returned (element "
            "%lld first; %zu of %zu elements changed 200 ms later)",
            (long long)changed_at, (long long)changed_idx, nchanged, len);
        bad = 1;
    } else {
        say("sentinel: no byte of the receive buffer changed in the %lld ms after the call "
            "returned",
            (long long)watch_ms);
    }
    if (shared)
        a2a_buffer_free(job, recv);
    else
        free(recv);
    free(zero);
    free(rc);
    say("sentinel %s", bad ? "FAILED" : "ok");
    return bad ? 4 : 0;
}

static int
usage(void)
{
    fprintf(stderr,
            "usage: seqcheck [--group NAME] [--members A,B,...] [--timeout MS] [--count N]\n"
            "                [--base I] [--pause MS] [--bound MS] [--announce 1] [--discover 1]\n"
            "                MODE ARGS...\n"
            "  modes: calls N | serve | lockstep DIR SECONDS |\n"
            "         sentinel FROM COUNT WATCH_MS [shared]\n");
    return 2;
}

int
main(int argc, char **argv)
{
    const char *rank_env = getenv("A2A_RANK"), *mode;
    const char *members_arg = NULL;
    a2a_job *job = NULL;
    a2a_status st;
    bufs b;
    int i, rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--group") == 0)
            group = argv[i + 1];
        else if (strcmp(argv[i], "--members") == 0)
            members_arg = argv[i + 1];
        else if (strcmp(argv[i], "--timeout") == 0)
            timeout_ms = strtoll(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--count") == 0)
            count = strtoll(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--base") == 0)
            base = strtoll(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--pause") == 0)
            pause_ms = strtoll(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--bound") == 0)
            bound_ms = strtoll(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--announce") == 0)
            announce = strtoll(argv[i + 1], NULL, 10) != 0;
        else if (strcmp(argv[i], "--discover") == 0)
            discover = strtoll(argv[i + 1], NULL, 10) != 0;
        else
            return usage();
    }
    if (i >= argc || rank_env == NULL || count < 0 || count > 65536)
        return usage();
    mode = argv[i++];
    world_me = strtoll(rank_env, NULL, 10);
    if (members_arg != NULL && parse_members(members_arg) != 0)
        return usage();
    if ((st = a2a_job_open(&job, NULL, -1)) != A2A_OK) {
        say("open status=%s: %s", a2a_status_name(st), a2a_job_error(NULL));
        return 1;
    }
    if (members_arg == NULL && (st = load_members(job)) != A2A_OK) {
        say("members status=%s: %s", a2a_status_name(st), a2a_job_error(job));
        a2a_job_close(job);
        return 1;
    }
    if (find_me() != 0) {
        say("setup: world rank %lld is not a member of the group", (long long)world_me);
        a2a_job_close(job);
        return 2;
    }
    if (bufs_init(&b) != 0) {
        say("setup: out of memory");
        return 2;
    }
    if (strcmp(mode, "calls") == 0 && i + 1 == argc)
        rc = calls_mode(job, &b, strtoll(argv[i], NULL, 10));
    else if (strcmp(mode, "serve") == 0 && i == argc)
        rc = serve_mode(job, &b);
    else if (strcmp(mode, "lockstep") == 0 && i + 2 == argc)
        rc = lockstep_mode(job, &b, argv[i], strtoll(argv[i + 1], NULL, 10));
    else if (strcmp(mode, "sentinel") == 0 && (i + 3 == argc || i + 4 == argc))
        rc = sentinel_mode(job, strtoll(argv[i], NULL, 10), strtoll(argv[i + 1], NULL, 10),
                           strtoll(argv[i + 2], NULL, 10),
                           i + 4 == argc && strcmp(argv[i + 3], "shared") == 0);
    else
        rc = usage();
    a2a_job_close(job);
    free(b.send);
    free(b.recv);
    free(b.scounts);
    free(b.sdispls);
    free(b.rcounts);
    free(b.rdispls);
    free(b.rout);
    return rc;
}
