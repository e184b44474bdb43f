/*
 * preauth_check.c - floods of peers that never prove the secret, for
 * test_preauth.sh. Every line it prints starts with "preauth_check MODE:";
 * exit 0 when the server behaved as it must, 1 when not, 2 on bad usage.
 * Attackers dial from 127.0.0.2 ... 127.0.0.(1 + SOURCES); the legitimate
 * client from 127.0.0.1.
 *
 *   rpc-flood URL TOKEN_FILE SECONDS SOURCES
 *       48 connections at a time at an RPC port (coordinator or worker API),
 *       one per thread; most threads churn: unauthenticated calls pipelined
 *       and then 4 MiB streaming until the server closes (it must shed the
 *       connection while bytes arrive), a malformed envelope; the others hold
 *       their connection: a request trickled one byte per 100 ms, an SP
 *       greeting and nothing more, a bare TCP connection, a request
 *       announcing 8 MiB sent up to its last byte. Meanwhile a client with
 *       the token calls Health every 20 ms on its connection, and every
 *       second on a new one; their latencies before, during and after the
 *       flood are printed and must stay under 1 s, with no failed call.
 *
 *   link-slowloris DATA_URL SECONDS CONNS SOURCES
 *       CONNS connections at a time at a worker's data port, each sending
 *       one byte a second: of a HELLO, of a prefix announcing a 1 MiB header,
 *       of one announcing a 4 MiB payload. A connection the worker closes is
 *       opened again. Checks that the worker closes every one within the
 *       handshake deadline (plus slack) and refuses some at once when CONNS
 *       is over its cap.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/frame.h"
#include "common/wire.h"
#include "server/rpc.h"
#include "tests/sp_raw.h"

#define FLOOD_THREADS 48
#define DEADLINE_SLACK_MS 2500 /* past the 5 s handshake deadline: still a pass */

static const char *mode = "?";

static void
say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("preauth_check %s: ", mode);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* dial_from connects to to from 127.0.0.(2 + src); a blocking socket with timeouts, or -1. */
static int
dial_from(const struct sockaddr_in *to, int src, int timeout_ms)
{
    struct sockaddr_in from = {.sin_family = AF_INET};
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        return -1;
    from.sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)src);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (bind(fd, (struct sockaddr *)&from, sizeof(from)) != 0 ||
        connect(fd, (const struct sockaddr *)to, sizeof(*to)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int
send_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* wait_closed reads (and drops) until the server closes fd or until_ms; 1 when it closed. */
static int
wait_closed(int fd, int64_t until_ms)
{
    uint8_t buf[4096];
    while (now_ms() < until_ms) {
        ssize_t r = recv(fd, buf, sizeof(buf), 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
            return 1;
    }
    return 0;
}

/* ---- rpc-flood ---- */

typedef struct {
    struct sockaddr_in to;
    int sources;
    int64_t end_ms;
    atomic_int next;
    atomic_long conns, failed_dials, closed, held_long, calls_sent, replies;
    atomic_long max_hold_ms;
} flood;

/* sp_request: one SP message carrying a request envelope for method, with an empty body. */
static size_t
sp_request(uint8_t *out, size_t cap, const char *method, uint32_t id)
{
    msgpack_sbuffer sb, body;
    wire_request req = {.id = id, .timeout_ms = 1000};
    size_t n;

    snprintf(req.method, sizeof(req.method), "%s", method);
    msgpack_sbuffer_init(&sb);
    msgpack_sbuffer_init(&body);
    wire_empty_encode(&body);
    req.body = (const uint8_t *)body.data;
    req.body_len = body.size;
    wire_request_encode(&sb, &req);
    n = 8 + 4 + sb.size;
    if (n <= cap) {
        sp_req_head(out, sb.size, id);
        memcpy(out + 12, sb.data, sb.size);
    }
    msgpack_sbuffer_destroy(&sb);
    msgpack_sbuffer_destroy(&body);
    return n <= cap ? n : 0;
}

static void
note_hold(flood *f, int64_t held)
{
    long cur = atomic_load(&f->max_hold_ms);
    while (held > cur && !atomic_compare_exchange_weak(&f->max_hold_ms, &cur, held))
        ;
    if (held > 5000 + DEADLINE_SLACK_MS)
        atomic_fetch_add(&f->held_long, 1);
}

/* flood_one runs one attacking connection of kind k until the server closes it. */
static void
flood_one(flood *f, int k, int src)
{
    uint8_t buf[1 << 16];
    int64_t start = now_ms(), limit = start + 5000 + DEADLINE_SLACK_MS + 1000;
    int fd = dial_from(&f->to, src, 200), closed = 0;
    size_t n;

    if (fd < 0) {
        atomic_fetch_add(&f->failed_dials, 1);
        sleep_ms(10);
        return;
    }
    atomic_fetch_add(&f->conns, 1);
    if (k != 4 && send_all(fd, sp_req_greeting, sizeof(sp_req_greeting)) != 0)
        goto out;
    switch (k) {
    case 0: /* unauthenticated calls, pipelined, then bytes streaming until the server closes:
             * it must shed the connection while data arrives (nanomsg/nng#1636) */
        for (uint32_t i = 1; i <= 16; i++) {
            const char *m = i % 3 == 0 ? "ResolveGroup" : i % 3 == 1 ? "Health" : "AuthProve";
            if ((n = sp_request(buf, sizeof(buf), m, i)) == 0 || send_all(fd, buf, n) != 0)
                goto out;
            atomic_fetch_add(&f->calls_sent, 1);
        }
        memset(buf, 0, 8);
        buf[5] = 0x40; /* a 4 MiB message */
        if (send_all(fd, buf, 8) != 0)
            goto out;
        memset(buf, 0x5a, 1024);
        for (int i = 0; i < 4000 && now_ms() < limit; i++) {
            if (send_all(fd, buf, 1024) != 0) {
                closed = 1;
                goto out;
            }
            if (i % 16 == 15)
                sleep_ms(1);
        }
        break;
    case 1: /* a malformed envelope */
        sp_req_head(buf, 64, 1);
        for (int i = 12; i < 76; i++)
            buf[i] = (uint8_t)(0xc1 ^ i);
        send_all(fd, buf, 76);
        break;
    case 2: /* a request trickled: the server must shed it while bytes keep coming */
        if ((n = sp_request(buf, sizeof(buf), "Health", 7)) == 0)
            break;
        for (size_t i = 0; i < n - 1 && now_ms() < limit; i++) {
            if (send_all(fd, buf + i, 1) != 0)
                goto out;
            sleep_ms(100);
        }
        break;
    case 3: /* an SP greeting, then nothing */ break;
    case 4: /* a bare TCP connection: NNG's own 10 s negotiation deadline, not ours */
        sleep_ms(3000);
        close(fd);
        return;
    case 5: { /* announce 8 MiB and send all but its last byte, fast */
        uint64_t len = RPC_RECV_MAX - 16;
        for (int i = 0; i < 8; i++)
            buf[i] = (uint8_t)(len >> (56 - 8 * i));
        memset(buf + 8, 0x5a, sizeof(buf) - 8);
        send_all(fd, buf, 8);
        for (uint64_t sent = 0; sent + sizeof(buf) < len; sent += sizeof(buf) - 8)
            if (send_all(fd, buf + 8, sizeof(buf) - 8) != 0)
                goto out;
        break;
    }
    }
    closed = wait_closed(fd, limit);
out:
    if (closed || now_ms() < limit)
        atomic_fetch_add(&f->closed, 1);
    note_hold(f, now_ms() - start);
    close(fd);
}

/* The kind of attack of each flood thread: most churn (0, 1), the others hold connections. */
static const int flood_kinds[FLOOD_THREADS] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
    2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5,
};

static void *
flood_thread(void *arg)
{
    flood *f = arg;
    int k = flood_kinds[atomic_fetch_add(&f->next, 1) % FLOOD_THREADS];
    for (int i = 0; now_ms() < f->end_ms; i++)
        flood_one(f, k, (k + i) % f->sources);
    return NULL;
}

typedef struct {
    int n, failed;
    int64_t max, sum;
    int64_t v[4096];
} lat;

static void
lat_add(lat *l, int64_t us, int ok)
{
    if (!ok)
        l->failed++;
    if (l->n < (int)(sizeof(l->v) / sizeof(l->v[0])))
        l->v[l->n++] = us;
    l->sum += us;
    if (us > l->max)
        l->max = us;
}

static int
cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void
lat_print(lat *l, const char *what)
{
    if (l->n == 0) {
        say("%s: no calls", what);
        return;
    }
    qsort(l->v, (size_t)l->n, sizeof(l->v[0]), cmp64);
    say("%s: %d calls, %d failed, median %.2f ms, p99 %.2f ms, max %.2f ms", what, l->n, l->failed,
        l->v[l->n / 2] / 1000.0, l->v[(l->n * 99) / 100] / 1000.0, l->max / 1000.0);
}

static int64_t
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* health_call: one Health call on c; its latency into l. */
static void
health_call(rpc_client *c, lat *l, int *reported)
{
    uint8_t *rep = NULL;
    size_t len = 0;
    char err[512];
    int64_t t0 = now_us();
    a2a_status st = rpc_call(c, "Health", "\x90", 1, 3000, &rep, &len, err, sizeof(err));
    lat_add(l, now_us() - t0, st == A2A_OK);
    if (st != A2A_OK && (*reported)++ < 5)
        say("Health failed: %s: %s", a2a_status_name(st), err);
    free(rep);
}

/* measure calls Health on c every 20 ms, and on a new client every second, for ms. */
static void
measure(rpc_client *c, const char *url, const rpc_security *sec, int ms, lat *kept, lat *fresh)
{
    int64_t end = now_ms() + ms, next_fresh = now_ms();
    int reported = 0;
    while (now_ms() < end) {
        health_call(c, kept, &reported);
        if (now_ms() >= next_fresh) {
            rpc_client *n = NULL;
            char err[256];
            next_fresh = now_ms() + 1000;
            if (rpc_client_alloc(&n, url, sec, err, sizeof(err)) == A2A_OK)
                health_call(n, fresh, &reported);
            rpc_client_free(n);
        }
        sleep_ms(20);
    }
}

static int
mode_rpc_flood(const char *url, const char *token_file, int seconds, int sources)
{
    static flood f;
    static lat before, during, after, fresh_before, fresh_during, fresh_after;
    pthread_t th[FLOOD_THREADS];
    rpc_client *c = NULL;
    auth_key key;
    rpc_security sec = {.key = &key};
    char err[512];
    int bad = 0, nth = 0;

    if (auth_key_load(&key, token_file, err, sizeof(err)) != A2A_OK) {
        say("cannot load the token: %s", err);
        return 1;
    }
    if (sp_parse_url(url, &f.to) != 0 || rpc_client_alloc(&c, url, &sec, err, sizeof(err)) != 0) {
        say("bad url %s", url);
        return 2;
    }
    f.sources = sources;
    measure(c, url, &sec, 1500, &before, &fresh_before);
    f.end_ms = now_ms() + (int64_t)seconds * 1000;
    for (; nth < FLOOD_THREADS; nth++)
        if (pthread_create(&th[nth], NULL, flood_thread, &f) != 0)
            break;
    say("flooding %s from %d sources with %d connections at a time for %d s", url, sources, nth,
        seconds);
    measure(c, url, &sec, seconds * 1000, &during, &fresh_during);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    measure(c, url, &sec, 1500, &after, &fresh_after);
    lat_print(&before, "Health on a proved connection, before the flood");
    lat_print(&during, "Health on a proved connection, during the flood");
    lat_print(&after, "Health on a proved connection, after the flood");
    lat_print(&fresh_before, "Health on a new connection, before the flood");
    lat_print(&fresh_during, "Health on a new connection, during the flood");
    lat_print(&fresh_after, "Health on a new connection, after the flood");
    say("flood: %ld connections (%ld dials failed), %ld closed by the server, %ld unauthenticated "
        "calls sent, longest held %ld ms, %ld held past %d ms",
        atomic_load(&f.conns), atomic_load(&f.failed_dials), atomic_load(&f.closed),
        atomic_load(&f.calls_sent), atomic_load(&f.max_hold_ms), atomic_load(&f.held_long),
        5000 + DEADLINE_SLACK_MS);
    lat *all[] = {&before, &during, &after, &fresh_before, &fresh_during, &fresh_after};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i]->failed > 0 || all[i]->max >= 1000000 || all[i]->n == 0)
            bad = 1;
    if (bad)
        say("FAILED: a Health call with the token failed or took 1 s or more");
    if (atomic_load(&f.held_long) > 0) {
        say("FAILED: unauthenticated connections were held past the handshake deadline");
        bad = 1;
    }
    rpc_client_free(c);
    auth_key_wipe(&key);
    return bad;
}

/* ---- link-slowloris ---- */

typedef struct {
    int fd;
    int kind; /* 0 HELLO, 1 a 1 MiB header, 2 a 4 MiB payload */
    int src;
    int64_t start_ms;
    size_t sent;
    int got; /* bytes from the worker (its CHALLENGE) */
    uint8_t bytes[64];
    size_t len;
} loris;

static void
loris_open(loris *l, const struct sockaddr_in *to, int kind, int src)
{
    frame f = {.type = FRAME_HELLO, .incarnation = 77};
    msgpack_sbuffer sb;
    int fl;

    memset(l, 0, sizeof(*l));
    l->kind = kind;
    l->src = src;
    l->start_ms = now_ms();
    l->fd = dial_from(to, src, 1000);
    if (l->fd >= 0 && (fl = fcntl(l->fd, F_GETFL)) >= 0)
        fcntl(l->fd, F_SETFL, fl | O_NONBLOCK);
    snprintf(f.worker, sizeof(f.worker), "node-b");
    msgpack_sbuffer_init(&sb);
    frame_header_encode(&sb, &f);
    frame_prefix_encode(l->bytes, kind == 1 ? FRAME_HEADER_MAX : (uint32_t)sb.size,
                        kind == 2 ? FRAME_PAYLOAD_MAX : 0);
    l->len = FRAME_PREFIX_LEN;
    if (sb.size <= sizeof(l->bytes) - FRAME_PREFIX_LEN) {
        memcpy(l->bytes + FRAME_PREFIX_LEN, sb.data, sb.size);
        l->len += sb.size;
    }
    msgpack_sbuffer_destroy(&sb);
}

static int
mode_link_slowloris(const char *url, int seconds, int nconn, int sources)
{
    struct sockaddr_in to;
    loris *ls;
    int64_t end, next_tick;
    long opened = 0, at_once = 0, by_deadline = 0, late = 0, failed_dials = 0, max_hold = 0;
    int bad = 0;

    if (sp_parse_url(url, &to) != 0 || (ls = calloc((size_t)nconn, sizeof(*ls))) == NULL)
        return 2;
    for (int i = 0; i < nconn; i++) {
        loris_open(&ls[i], &to, i % 3, i % sources);
        opened++;
    }
    say("%d connections from %d sources at %s, one byte a second each, for %d s", nconn, sources,
        url, seconds);
    end = now_ms() + (int64_t)seconds * 1000;
    next_tick = now_ms();
    while (now_ms() < end) {
        int tick = now_ms() >= next_tick;
        if (tick)
            next_tick += 1000;
        for (int i = 0; i < nconn; i++) {
            loris *l = &ls[i];
            uint8_t buf[512];
            ssize_t r;
            int gone = 0;
            if (l->fd < 0) {
                failed_dials++;
                loris_open(l, &to, l->kind, l->src);
                opened++;
                continue;
            }
            while ((r = recv(l->fd, buf, sizeof(buf), 0)) > 0)
                l->got += (int)r;
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
                gone = 1;
            if (!gone && tick) {
                uint8_t b = l->sent < l->len ? l->bytes[l->sent] : 0x5a;
                if (send(l->fd, &b, 1, MSG_NOSIGNAL) == 1)
                    l->sent++;
                else if (errno != EAGAIN)
                    gone = 1;
            }
            if (gone) {
                int64_t held = now_ms() - l->start_ms;
                if (held > max_hold)
                    max_hold = held;
                if (held < 1000 && l->got == 0)
                    at_once++; /* refused: closed before the worker said anything */
                else if (held <= 5000 + DEADLINE_SLACK_MS)
                    by_deadline++;
                else
                    late++;
                close(l->fd);
                loris_open(l, &to, l->kind, l->src);
                opened++;
            }
        }
        sleep_ms(50);
    }
    for (int i = 0; i < nconn; i++) {
        if (ls[i].fd < 0)
            continue;
        int64_t held = now_ms() - ls[i].start_ms;
        if (held > 5000 + DEADLINE_SLACK_MS)
            late++;
        close(ls[i].fd);
    }
    free(ls);
    say("%ld connections opened (%ld dials failed): %ld refused at once, %ld closed within the "
        "handshake deadline, %ld held longer; longest held %ld ms",
        opened, failed_dials, at_once, by_deadline, late, max_hold);
    if (late > 0) {
        say("FAILED: connections were held past the handshake deadline (5 s + %d ms)",
            DEADLINE_SLACK_MS);
        bad = 1;
    }
    return bad;
}

static int
usage(void)
{
    fprintf(stderr, "usage: preauth_check rpc-flood URL TOKEN_FILE SECONDS SOURCES\n"
                    "       preauth_check link-slowloris DATA_URL SECONDS CONNS SOURCES\n");
    return 2;
}

int
main(int argc, char **argv)
{
    int rc;

    if (argc < 2)
        return usage();
    mode = argv[1];
    if (strcmp(mode, "rpc-flood") == 0 && argc == 6)
        rc = mode_rpc_flood(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]) > 0 ? atoi(argv[5]) : 1);
    else if (strcmp(mode, "link-slowloris") == 0 && argc == 6)
        rc = mode_link_slowloris(argv[2], atoi(argv[3]), atoi(argv[4]) > 0 ? atoi(argv[4]) : 1,
                                 atoi(argv[5]) > 0 ? atoi(argv[5]) : 1);
    else
        return usage();
    say("%s", rc == 0 ? "ok" : "FAILED");
    return rc;
}
