/* guard.c - caps, deadline and shedding of RPC connections (see guard.h). */
#include "guard.h"

#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/log.h"
#include "rpc.h"

#define GUARD_BUCKETS 256
#define GUARD_SHED_BATCH 256 /* connections shed per descriptor scan */
#define GUARD_NOTES_PER_S 5  /* refusals logged a second, the rest counted */

typedef struct gpipe {
    struct gpipe *next;
    nng_pipe pipe;
    uint32_t id;
    int has_addr;                          /* TCP (or TLS over TCP): sheddable by shutdown() */
    struct sockaddr_storage local, remote; /* the socket's two ends, as getsockname sees them */
    uint8_t source[17]; /* family byte + address: what the per-source cap counts */
    int64_t added_ms;
    int proved;
    int calls;
    int64_t shed_at; /* 0: not to be shed */
    int tries;       /* scans that did not find its socket */
    int rounds;      /* times it was shed: the first by SHUT_RD, later ones by SHUT_RDWR */
} gpipe;

struct guard {
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    pthread_t thread;
    int stop;
    int auth;
    gpipe *b[GUARD_BUCKETS];
    size_t npipes, pending;
    long over_cap, deadline, shed, dropped, noted, unnoted; /* since the last summary */
    int64_t note_second, summary_ms, scan_ms;
    char url[300];
};

/* to_sockaddr converts NNG's address into a socket address; 0, or -1 when not IP. */
static int
to_sockaddr(const nng_sockaddr *a, struct sockaddr_storage *ss, uint8_t source[17])
{
    memset(ss, 0, sizeof(*ss));
    memset(source, 0, 17);
    if (a->s_family == NNG_AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        in->sin_port = a->s_in.sa_port;
        in->sin_addr.s_addr = a->s_in.sa_addr;
        source[0] = 4;
        memcpy(source + 1, &a->s_in.sa_addr, 4);
        return 0;
    }
    if (a->s_family == NNG_AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = a->s_in6.sa_port;
        memcpy(&in6->sin6_addr, a->s_in6.sa_addr, 16);
        source[0] = 6;
        memcpy(source + 1, a->s_in6.sa_addr, 16);
        return 0;
    }
    return -1;
}

static int
same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return 0;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
    return x->sin6_port == y->sin6_port && memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
}

static gpipe **
slot(guard *g, uint32_t id)
{
    gpipe **pp = &g->b[id % GUARD_BUCKETS];
    while (*pp != NULL && (*pp)->id != id)
        pp = &(*pp)->next;
    return pp;
}

/* ---- shedding: shutdown() of the sockets, found by their address pairs ---- */

typedef struct {
    nng_pipe pipe;
    int has_addr, found;
    int how; /* SHUT_RD, or SHUT_RDWR for a connection still there a round later */
    struct sockaddr_storage local, remote;
} victim;

/* shed_scan shuts down the sockets of v[0..n) among this process's descriptors. */
static void
shed_scan(victim *v, size_t n)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        struct sockaddr_storage l, r;
        socklen_t ll = sizeof(l), rl = sizeof(r);
        int fd = atoi(de->d_name);
        if (de->d_name[0] < '0' || de->d_name[0] > '9' || fd == dirfd(d) ||
            getsockname(fd, (struct sockaddr *)&l, &ll) != 0 ||
            (l.ss_family != AF_INET && l.ss_family != AF_INET6) ||
            getpeername(fd, (struct sockaddr *)&r, &rl) != 0)
            continue;
        for (size_t i = 0; i < n; i++)
            if (v[i].has_addr && !v[i].found && same_addr(&l, &v[i].local) &&
                same_addr(&r, &v[i].remote)) {
                shutdown(fd, v[i].how); /* NNG's read sees the end; NNG closes the pipe */
                v[i].found = 1;
                break;
            }
    }
    closedir(d);
}

/* collect: the connections due to be shed (marking those past the deadline); *busy: whether
 * any connection is still to prove the secret or to be shed. Under g->mtx. */
static size_t
collect(guard *g, int64_t now, victim *v, int *busy)
{
    size_t n = 0;
    *busy = 0;
    for (int b = 0; b < GUARD_BUCKETS; b++)
        for (gpipe *p = g->b[b]; p != NULL; p = p->next) {
            *busy |= (g->auth && !p->proved) || p->shed_at != 0;
            if (g->auth && !p->proved && p->shed_at == 0 &&
                now - p->added_ms >= GUARD_DEADLINE_MS) {
                p->shed_at = now;
                g->deadline++;
            }
            if (p->shed_at == 0 || p->shed_at > now || n == GUARD_SHED_BATCH)
                continue;
            v[n++] = (victim){.pipe = p->pipe,
                              .has_addr = p->has_addr,
                              .how = p->rounds++ == 0 ? SHUT_RD : SHUT_RDWR,
                              .local = p->local,
                              .remote = p->remote};
            p->shed_at = now + 1000; /* again in a second if it is still there */
        }
    return n;
}

/* summary: one log line a second at most for what the guard did; under g->mtx. */
static void
summary(guard *g, int64_t now)
{
    if (now - g->summary_ms < 1000 ||
        (g->over_cap | g->deadline | g->shed | g->dropped | g->unnoted) == 0)
        return;
    log_warn("rpc %s: connections without the secret: %ld refused over the caps (%d in all, %d "
             "per source), %ld closed after %d s without proving it, %ld closed after a refusal "
             "or malformed bytes, %ld calls dropped; %zu unproved now (%ld refusals not logged)",
             g->url, g->over_cap, GUARD_PENDING_MAX, GUARD_PENDING_PER_SOURCE, g->deadline,
             GUARD_DEADLINE_MS / 1000, g->shed, g->dropped, g->pending, g->unnoted);
    g->over_cap = g->deadline = g->shed = g->dropped = g->unnoted = 0;
    g->summary_ms = now;
}

static void *
guard_thread(void *arg)
{
    guard *g = arg;
    victim *v = calloc(GUARD_SHED_BATCH, sizeof(*v));
    int busy = 1;

    pthread_mutex_lock(&g->mtx);
    while (!g->stop && v != NULL) {
        int64_t now = rpc_now_ms();
        size_t n = now - g->scan_ms >= GUARD_ROUND_MS ? collect(g, now, v, &busy) : 0;
        struct timespec ts;
        /* a round every GUARD_ROUND_MS while a connection is to prove the secret or to be shed
         * or a summary is due; else a round a second (an idle server's guard costs no CPU to
         * speak of: 20 wake-ups a second were ~0.45 ms of CPU a second), woken at once by a new
         * connection or a shed (guard_pipe_add, mark) */
        int ms = busy || (g->over_cap | g->deadline | g->shed | g->dropped | g->unnoted) != 0
                     ? GUARD_ROUND_MS
                     : GUARD_IDLE_MS;
        summary(g, now);
        if (n > 0)
            g->scan_ms = now; /* one scan a round at most, however many refusals come */
        if (n > 0) {
            pthread_mutex_unlock(&g->mtx);
            shed_scan(v, n);
            for (size_t i = 0; i < n; i++)
                if (!v[i].has_addr)
                    nng_pipe_close(v[i].pipe); /* not TCP (ipc://, inproc://): NNG must close it */
            pthread_mutex_lock(&g->mtx);
        }
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += ms * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&g->cv, &g->mtx, &ts);
    }
    pthread_mutex_unlock(&g->mtx);
    free(v);
    return NULL;
}

guard *
guard_alloc(const char *url, int auth)
{
    guard *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    pthread_mutex_init(&g->mtx, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->auth = auth;
    snprintf(g->url, sizeof(g->url), "%s", url);
    if (pthread_create(&g->thread, NULL, guard_thread, g) != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mtx);
        free(g);
        return NULL;
    }
    pthread_setname_np(g->thread, "a2a-guard");
    return g;
}

void
guard_free(guard *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mtx);
    g->stop = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mtx);
    pthread_join(g->thread, NULL);
    for (int b = 0; b < GUARD_BUCKETS; b++)
        while (g->b[b] != NULL) {
            gpipe *p = g->b[b];
            g->b[b] = p->next;
            free(p);
        }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mtx);
    free(g);
}

int
guard_pipe_add(guard *g, nng_pipe pipe)
{
    gpipe *p = calloc(1, sizeof(*p)), **pp;
    nng_sockaddr la, ra;
    size_t same = 0;

    if (p == NULL)
        return -1;
    p->pipe = pipe;
    p->id = (uint32_t)nng_pipe_id(pipe);
    p->proved = !g->auth;
    p->added_ms = rpc_now_ms();
    p->has_addr = nng_pipe_get_addr(pipe, NNG_OPT_LOCADDR, &la) == 0 &&
                  nng_pipe_get_addr(pipe, NNG_OPT_REMADDR, &ra) == 0 &&
                  to_sockaddr(&la, &p->local, p->source) == 0 &&
                  to_sockaddr(&ra, &p->remote, p->source) == 0;
    pthread_mutex_lock(&g->mtx);
    if (!p->proved) {
        for (int b = 0; b < GUARD_BUCKETS && p->has_addr; b++)
            for (gpipe *q = g->b[b]; q != NULL; q = q->next)
                same += !q->proved && q->has_addr && memcmp(q->source, p->source, 17) == 0;
        if (g->pending >= GUARD_PENDING_MAX || same >= GUARD_PENDING_PER_SOURCE) {
            g->over_cap++;
            pthread_mutex_unlock(&g->mtx);
            free(p);
            return -1;
        }
        g->pending++;
        pthread_cond_signal(&g->cv); /* rounds again, for its deadline */
    }
    pp = slot(g, p->id);
    p->next = *pp;
    *pp = p;
    g->npipes++;
    pthread_mutex_unlock(&g->mtx);
    return 0;
}

void
guard_pipe_gone(guard *g, nng_pipe pipe)
{
    gpipe **pp, *p;
    pthread_mutex_lock(&g->mtx);
    if ((p = *(pp = slot(g, (uint32_t)nng_pipe_id(pipe)))) != NULL) {
        *pp = p->next;
        g->npipes--;
        g->pending -= !p->proved;
        free(p);
        pthread_cond_broadcast(&g->cv); /* guard_shed_all may wait for the last one */
    }
    pthread_mutex_unlock(&g->mtx);
}

int
guard_pipe_live(guard *g, uint32_t pipe_id)
{
    int live;
    pthread_mutex_lock(&g->mtx);
    live = *slot(g, pipe_id) != NULL;
    pthread_mutex_unlock(&g->mtx);
    return live;
}

void
guard_proved(guard *g, nng_pipe pipe)
{
    gpipe *p;
    pthread_mutex_lock(&g->mtx);
    if ((p = *slot(g, (uint32_t)nng_pipe_id(pipe))) != NULL && !p->proved && p->shed_at == 0) {
        p->proved = 1;
        g->pending--;
    }
    pthread_mutex_unlock(&g->mtx);
}

/* mark sheds p GUARD_SHED_GRACE_MS from now; under g->mtx. */
static void
mark(guard *g, gpipe *p)
{
    if (p->shed_at != 0)
        return;
    p->shed_at = rpc_now_ms() + GUARD_SHED_GRACE_MS;
    g->shed++;
    pthread_cond_signal(&g->cv);
}

int
guard_call(guard *g, nng_pipe pipe)
{
    gpipe *p;
    int ok = 1;
    pthread_mutex_lock(&g->mtx);
    if ((p = *slot(g, (uint32_t)nng_pipe_id(pipe))) != NULL) {
        if (p->shed_at != 0)
            ok = 0;
        else if (!p->proved && ++p->calls > GUARD_CALLS_MAX)
            ok = 0, mark(g, p);
        g->dropped += !ok;
    }
    pthread_mutex_unlock(&g->mtx);
    return ok;
}

void
guard_shed(guard *g, nng_pipe pipe)
{
    gpipe *p;
    pthread_mutex_lock(&g->mtx);
    if ((p = *slot(g, (uint32_t)nng_pipe_id(pipe))) != NULL)
        mark(g, p);
    pthread_mutex_unlock(&g->mtx);
}

void
guard_note(guard *g, const char *fmt, ...)
{
    int64_t second = rpc_now_ms() / 1000;
    char msg[1200];
    va_list ap;
    int say;

    pthread_mutex_lock(&g->mtx);
    if (second != g->note_second) {
        g->note_second = second;
        g->noted = 0;
    }
    say = g->noted++ < GUARD_NOTES_PER_S;
    g->unnoted += !say;
    pthread_mutex_unlock(&g->mtx);
    if (!say)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_warn("%s", msg);
}

void
guard_shed_all(guard *g, int ms)
{
    int64_t end = rpc_now_ms() + ms, now;
    pthread_mutex_lock(&g->mtx);
    for (int b = 0; b < GUARD_BUCKETS; b++)
        for (gpipe *p = g->b[b]; p != NULL; p = p->next)
            if (p->shed_at == 0 || p->shed_at > rpc_now_ms())
                p->shed_at = rpc_now_ms();
    pthread_cond_broadcast(&g->cv);
    while (g->npipes > 0 && (now = rpc_now_ms()) < end) {
        struct timespec ts;
        int64_t wait = end - now < GUARD_ROUND_MS ? end - now : GUARD_ROUND_MS;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += wait * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&g->cv, &g->mtx, &ts);
    }
    pthread_mutex_unlock(&g->mtx);
}
