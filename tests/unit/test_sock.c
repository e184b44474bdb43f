/*
 * test_sock.c - worker/sock.c's read-ahead (wsock_buffer) over real loopback TCP sockets:
 * every byte in order whatever the sizes of the writes and the reads, pieces larger than the
 * buffer read straight after what was read ahead, timeouts, deadlines, the peer closing, and
 * wsock_close from another thread waking a read; and wsock_read_now as the link loop drives it
 * (poll, then what is there, a budget of system calls a turn, pieces cut anywhere).
 */
#include "cu_main.h"
#include <CUnit/Basic.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/rpc.h"
#include "worker/sock.h"

#define CAP 4096 /* small, so that reads cross it often */

static uint8_t
pattern(uint64_t i)
{
    return (uint8_t)(i * 2654435761u >> 13);
}

static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* pair: a connected link (tx dialed, rx accepted); rx reads ahead with cap bytes (0: not). */
static void
pair(wsock **tx, wsock **rx, size_t cap)
{
    wsock_listener *l = NULL;
    int port = 0;
    char url[64];

    CU_ASSERT_EQUAL_FATAL(wsock_listen("tcp://127.0.0.1:0", NULL, &l, &port), 0);
    CU_ASSERT_FATAL(port > 0);
    snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
    CU_ASSERT_EQUAL_FATAL(wsock_dial(url, NULL, 2000, tx), 0);
    CU_ASSERT_EQUAL_FATAL(wsock_accept(l, rx), 0);
    wsock_listener_close(l);
    wsock_listener_free(l);
    if (cap > 0)
        CU_ASSERT_EQUAL_FATAL(wsock_buffer(*rx, cap), 0);
}

typedef struct {
    wsock *s;
    uint64_t total, seed;
} writer;

/* writer_main sends pattern bytes 0..total in writes of random sizes, now and then pausing */
static void *
writer_main(void *arg)
{
    writer *w = arg;
    uint8_t *buf = malloc(300000);
    uint64_t off = 0, seed = w->seed;

    while (buf != NULL && off < w->total) {
        uint64_t r = rnd(&seed), n;
        nng_iov iov;
        switch (r % 4) {
        case 0: n = 1 + (r >> 8) % 16; break;          /* a few bytes: a prefix */
        case 1: n = 1 + (r >> 8) % CAP; break;         /* within the buffer */
        case 2: n = CAP + (r >> 8) % (CAP * 4); break; /* across it */
        default: n = 1 + (r >> 8) % 300000; break;     /* a chunk */
        }
        if (n > w->total - off)
            n = w->total - off;
        for (uint64_t i = 0; i < n; i++)
            buf[i] = pattern(off + i);
        iov = (nng_iov){buf, n};
        if (wsock_io(w->s, &iov, 1, 0, 5000) != 0)
            break;
        off += n;
        if (r % 7 == 0)
            usleep(200); /* let the reader find the buffer empty */
    }
    free(buf);
    return NULL;
}

/* reads of random sizes and iov counts (1..4), pieces below, at and above the buffer */
static void
read_in_order(size_t cap, uint64_t seed)
{
    wsock *tx = NULL, *rx = NULL;
    writer w;
    pthread_t t;
    uint64_t off = 0, total = 6u << 20, bad = 0;
    uint8_t *buf = malloc(4 * 200000);

    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    pair(&tx, &rx, cap);
    w = (writer){tx, total, seed};
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, writer_main, &w), 0);
    while (off < total) {
        uint64_t r = rnd(&seed);
        unsigned n = 1 + r % 4;
        nng_iov iov[4];
        size_t lens[4], sum = 0;
        for (unsigned i = 0; i < n; i++) {
            uint64_t q = rnd(&seed);
            switch (q % 5) {
            case 0: lens[i] = q >> 8 & 1 ? 0 : 1 + (q >> 9) % 20; break;
            case 1: lens[i] = 1 + (q >> 8) % CAP; break;
            case 2: lens[i] = CAP; break;
            case 3: lens[i] = CAP - 1 + (q >> 8) % 3; break;
            default: lens[i] = 1 + (q >> 8) % 200000; break;
            }
            if (lens[i] > total - off - sum)
                lens[i] = total - off - sum;
            iov[i] = (nng_iov){buf + sum, lens[i]};
            sum += lens[i];
        }
        memset(buf, 0xEE, sum);
        if (wsock_io(rx, iov, n, 1, 5000) != 0) {
            CU_FAIL("a read failed before the end of the stream");
            break;
        }
        for (size_t i = 0; i < sum; i++)
            bad += buf[i] != pattern(off + i);
        off += sum;
    }
    CU_ASSERT_EQUAL(off, total);
    CU_ASSERT_EQUAL(bad, 0);
    pthread_join(t, NULL);
    wsock_free(tx);
    wsock_free(rx);
    free(buf);
}

static void
test_in_order(void)
{
    for (uint64_t seed = 1; seed <= 4; seed++)
        read_in_order(CAP, seed * 0x9E3779B97F4A7C15ull);
    read_in_order(0, 77); /* the same reads without read-ahead: the reference */
    read_in_order(1, 99); /* a one-byte buffer: every piece goes straight */
}

typedef struct {
    wsock *s;
    nng_iov iov;
    int rv;
} writer_once;

static void *
write_once(void *arg)
{
    writer_once *w = arg;
    w->rv = wsock_io(w->s, &w->iov, 1, 0, 5000);
    return NULL;
}

/* bytes read ahead with a small header come first, then the large payload straight */
static void
test_ahead_then_straight(void)
{
    wsock *tx = NULL, *rx = NULL;
    size_t big = 1u << 20;
    uint8_t *out = malloc(100 + big), *in = malloc(big), head[10], rest[90];
    nng_iov iov;

    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    for (size_t i = 0; i < 100 + big; i++)
        out[i] = pattern(i);
    pair(&tx, &rx, CAP);
    /* 1 MiB does not fit the sockets' buffers before it is read: written by a thread */
    writer_once w = {tx, {out, 100 + big}, -1};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, write_once, &w), 0);
    iov = (nng_iov){head, sizeof(head)};
    CU_ASSERT_EQUAL(wsock_io(rx, &iov, 1, 1, 5000), 0);
    nng_iov two[2] = {{rest, sizeof(rest)}, {in, big}};
    CU_ASSERT_EQUAL(wsock_io(rx, two, 2, 1, 5000), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(w.rv, 0);
    CU_ASSERT_EQUAL(memcmp(head, out, 10), 0);
    CU_ASSERT_EQUAL(memcmp(rest, out + 10, 90), 0);
    CU_ASSERT_EQUAL(memcmp(in, out + 100, big), 0);
    wsock_free(tx);
    wsock_free(rx);
    free(out);
    free(in);
}

/* a read that waits for more than comes: a timeout, within its bound; a deadline likewise */
static void
test_timeout_and_deadline(void)
{
    wsock *tx = NULL, *rx = NULL;
    uint8_t five[5] = {1, 2, 3, 4, 5}, got[10];
    nng_iov iov = {five, 5};
    int64_t t0;

    pair(&tx, &rx, CAP);
    CU_ASSERT_EQUAL(wsock_io(tx, &iov, 1, 0, 1000), 0);
    iov = (nng_iov){got, 10};
    t0 = rpc_now_ms();
    CU_ASSERT_EQUAL(wsock_io(rx, &iov, 1, 1, 150), NNG_ETIMEDOUT);
    CU_ASSERT(rpc_now_ms() - t0 >= 100);
    CU_ASSERT(rpc_now_ms() - t0 < 2000);
    CU_ASSERT_EQUAL(memcmp(got, five, 5), 0); /* what came was taken */
    iov = (nng_iov){got, 1};
    t0 = rpc_now_ms();
    CU_ASSERT_EQUAL(wsock_io_by(rx, &iov, 1, 1, t0 + 150), NNG_ETIMEDOUT);
    CU_ASSERT(rpc_now_ms() - t0 < 2000);
    /* five bytes in one read: the first taken, the other four from the buffer */
    iov = (nng_iov){five, 5};
    CU_ASSERT_EQUAL(wsock_io(tx, &iov, 1, 0, 1000), 0);
    iov = (nng_iov){got, 1};
    CU_ASSERT_EQUAL(wsock_io(rx, &iov, 1, 1, 1000), 0); /* fills the buffer with all five */
    CU_ASSERT_EQUAL(got[0], 1);
    iov = (nng_iov){got, 4};
    CU_ASSERT_EQUAL(wsock_io_by(rx, &iov, 1, 1, rpc_now_ms() + 1000), 0);
    CU_ASSERT_EQUAL(memcmp(got, five + 1, 4), 0);
    wsock_free(tx);
    wsock_free(rx);
}

/* the peer closes: what it sent is read, then the read says closed */
static void
test_peer_closes(void)
{
    wsock *tx = NULL, *rx = NULL;
    uint8_t out[20], got[20];
    nng_iov iov = {out, sizeof(out)};

    for (int i = 0; i < 20; i++)
        out[i] = (uint8_t)i;
    pair(&tx, &rx, CAP);
    CU_ASSERT_EQUAL(wsock_io(tx, &iov, 1, 0, 1000), 0);
    wsock_free(tx);
    iov = (nng_iov){got, 7};
    CU_ASSERT_EQUAL(wsock_io(rx, &iov, 1, 1, 1000), 0);
    iov = (nng_iov){got + 7, 13};
    CU_ASSERT_EQUAL(wsock_io(rx, &iov, 1, 1, 1000), 0);
    CU_ASSERT_EQUAL(memcmp(got, out, 20), 0);
    iov = (nng_iov){got, 1};
    CU_ASSERT_EQUAL(wsock_io(rx, &iov, 1, 1, 1000), NNG_ECLOSED);
    wsock_free(rx);
}

static void *
close_later(void *arg)
{
    usleep(100 * 1000);
    wsock_close(arg);
    return NULL;
}

/* wsock_close from another thread ends a read waiting without a limit */
static void
test_close_wakes(void)
{
    wsock *tx = NULL, *rx = NULL;
    uint8_t got[8];
    nng_iov iov = {got, sizeof(got)};
    pthread_t t;
    int64_t t0 = rpc_now_ms();
    int rv;

    pair(&tx, &rx, CAP);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, close_later, rx), 0);
    rv = wsock_io(rx, &iov, 1, 1, 0);
    CU_ASSERT_NOT_EQUAL(rv, 0);
    CU_ASSERT(rpc_now_ms() - t0 < 5000);
    pthread_join(t, NULL);
    wsock_free(tx);
    wsock_free(rx);
}

/* read_now_in_order: the link loop's way: wait until poll says readable (or bytes are read
 * ahead), then take what is there of pieces of random sizes with a budget of one recv a turn;
 * every byte in order, no piece ever claimed longer than asked, and then the end */
static void
read_now_in_order(uint64_t seed)
{
    wsock *tx = NULL, *rx = NULL;
    writer w;
    pthread_t t;
    uint64_t off = 0, total = 6u << 20, bad = 0, partial = 0;
    uint8_t *buf = malloc(200000);
    size_t want = 0, got = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    pair(&tx, &rx, CAP);
    CU_ASSERT_FATAL(wsock_fd(rx) >= 0);
    w = (writer){tx, total, seed};
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, writer_main, &w), 0);
    while (off < total) {
        size_t n = 0;
        int reads = 1, rv;
        if (want == 0) { /* a new piece: a prefix, a header, a payload below or above CAP */
            uint64_t q = rnd(&seed);
            want = q % 3 == 0 ? 16 : q % 3 == 1 ? 1 + (q >> 8) % CAP : 1 + (q >> 8) % 200000;
            if (want > total - off)
                want = total - off;
            got = 0;
            memset(buf, 0xEE, want);
        }
        if (!wsock_buffered(rx)) {
            struct pollfd p = {.fd = wsock_fd(rx), .events = POLLIN};
            CU_ASSERT_EQUAL_FATAL(poll(&p, 1, 5000), 1);
        }
        rv = wsock_read_now(rx, buf + got, want - got, &n, &reads);
        CU_ASSERT_EQUAL_FATAL(rv, 0);
        CU_ASSERT_FATAL(got + n <= want);
        CU_ASSERT(reads >= 0);
        got += n;
        if (got < want) {
            partial++;
            continue;
        }
        for (size_t i = 0; i < want; i++)
            bad += buf[i] != pattern(off + i);
        off += want;
        want = 0;
    }
    CU_ASSERT_EQUAL(off, total);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(partial > 0); /* pieces were cut: the test saw what it is about */
    pthread_join(t, NULL);
    wsock_free(tx);
    {
        size_t n = 1;
        int reads = 4;
        uint8_t b;
        struct pollfd p = {.fd = wsock_fd(rx), .events = POLLIN};
        CU_ASSERT_EQUAL(poll(&p, 1, 5000), 1);
        CU_ASSERT_EQUAL(wsock_read_now(rx, &b, 1, &n, &reads), NNG_ECLOSED);
        CU_ASSERT_EQUAL(n, 0);
    }
    wsock_free(rx);
    free(buf);
}

static void
test_read_now_in_order(void)
{
    for (uint64_t seed = 1; seed <= 3; seed++)
        read_now_in_order(seed * 0x2545F4914F6CDD1Dull);
}

/* nothing there: 0 bytes and no error; the budget is kept to; no read-ahead: not supported */
static void
test_read_now_edges(void)
{
    wsock *tx = NULL, *rx = NULL, *tx2 = NULL, *plain = NULL;
    uint8_t out[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, got[10];
    nng_iov iov = {out, sizeof(out)};
    size_t n = 99;
    int reads = 1;

    pair(&tx, &rx, CAP);
    CU_ASSERT_EQUAL(wsock_read_now(rx, got, 10, &n, &reads), 0); /* nothing came yet */
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(reads, 0); /* the one recv was made, and found nothing */
    CU_ASSERT_EQUAL(wsock_io(tx, &iov, 1, 0, 1000), 0);
    usleep(50 * 1000);
    reads = 0;
    CU_ASSERT_EQUAL(wsock_read_now(rx, got, 10, &n, &reads), 0); /* no budget: no recv */
    CU_ASSERT_EQUAL(n, 0);
    reads = 1;
    CU_ASSERT_EQUAL(wsock_read_now(rx, got, 4, &n, &reads), 0); /* one recv takes all ten */
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT(wsock_buffered(rx));
    reads = 0;
    CU_ASSERT_EQUAL(wsock_read_now(rx, got + 4, 6, &n, &reads), 0); /* read ahead: no recv */
    CU_ASSERT_EQUAL(n, 6);
    CU_ASSERT_EQUAL(memcmp(got, out, 10), 0);
    CU_ASSERT(!wsock_buffered(rx));
    /* SO_RCVLOWAT: poll waits for that many bytes; FIONREAD counts what is there */
    CU_ASSERT_EQUAL(wsock_set_lowat(rx, 8), 0);
    iov = (nng_iov){out, 5};
    CU_ASSERT_EQUAL(wsock_io(tx, &iov, 1, 0, 1000), 0);
    usleep(50 * 1000);
    {
        struct pollfd p = {.fd = wsock_fd(rx), .events = POLLIN};
        CU_ASSERT_EQUAL(poll(&p, 1, 100), 0); /* 5 < 8 */
        CU_ASSERT_EQUAL(wsock_queued(rx), 5);
        iov = (nng_iov){out + 5, 5};
        CU_ASSERT_EQUAL(wsock_io(tx, &iov, 1, 0, 1000), 0);
        CU_ASSERT_EQUAL(poll(&p, 1, 2000), 1);
    }
    CU_ASSERT_EQUAL(wsock_set_lowat(rx, 1), 0);
    reads = 1;
    CU_ASSERT_EQUAL(wsock_read_now(rx, got, 10, &n, &reads), 0);
    CU_ASSERT_EQUAL(n, 10);
    CU_ASSERT_EQUAL(memcmp(got, out, 10), 0);
    /* a link without read-ahead (or not tcp://) is not for the loop */
    pair(&tx2, &plain, 0);
    CU_ASSERT_EQUAL(wsock_fd(plain), -1);
    reads = 1;
    CU_ASSERT_EQUAL(wsock_read_now(plain, got, 1, &n, &reads), NNG_ENOTSUP);
    wsock_free(tx);
    wsock_free(rx);
    wsock_free(tx2);
    wsock_free(plain);
}

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"read-ahead in order", test_in_order},
        {"read-ahead then straight", test_ahead_then_straight},
        {"read-ahead timeout and deadline", test_timeout_and_deadline},
        {"read-ahead peer closes", test_peer_closes},
        {"read-ahead close wakes", test_close_wakes},
        {"read now, in order", test_read_now_in_order},
        {"read now, edges", test_read_now_edges},
    };
    return cu_main("sock", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
