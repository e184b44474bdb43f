/*
 * fakepeer.c - a fake peer worker that speaks the peer-link protocol
 * (common/frame.h; the handshake of worker/link.c, without a token) to a real
 * worker, and misbehaves. It is a worker of the cluster YAML (NAME, with its
 * own data_url, where it accepts the real worker's link) that runs no
 * a2a-worker. Every line it prints starts with "fakepeer MODE:".
 *
 *   trickle NAME OWN_DATA_URL PEER_DATA_URL SECONDS
 *       waits (30 s at most) for a READY from the real worker in which a rank
 *       of its own is to send a slice; confirms with a READY of its own (it
 *       expects 0 elements back), announces the SLICE, then sends the DATA
 *       frame's header and its payload over SECONDS, one small write a second.
 *       Test_trickle.sh checks that the real rank's call returns in time and
 *       that no byte lands in its buffer after it returned.
 *   late NAME OWN_DATA_URL PEER_DATA_URL DELAY_MS
 *       waits for a READY in which a rank of its own is to send a slice;
 *       answers at once with a READY of its own that expects as much back (so
 *       every member has come), then, DELAY_MS after that READY came, sends its
 *       slice as SLICE and one DATA frame holding what seqcheck's call 0
 *       expects from it (seqcheck.c's encoding). Test_flight_grace.sh checks
 *       that a call whose deadline falls with that slice on its way takes it
 *       within the worker's grace (OK, right data), and fails in time beyond.
 *   flood NAME OWN_DATA_URL PEER_DATA_URL FRAMES PAIRS HOLD_S [GROUP EPOCH]
 *       sends FRAMES READY frames of PAIRS (src, count) pairs each as fast as
 *       the worker reads them: for groups that do not exist ("flood-I"), and
 *       with GROUP, every other one for GROUP at epochs above EPOCH (the
 *       future); then heartbeats for HOLD_S seconds and closes.
 *   stall NAME PEER_DATA_URL SECONDS
 *       says HELLO, then writes a READY frame (a group name of 120 bytes): its
 *       prefix and 8 bytes of its header at once, then one byte every 300 ms
 *       for SECONDS, and stops one byte short of its end
 *       (sooner if SECONDS would reach it): prints "stopped mid-frame", then
 *       waits 15 s at most for the worker to close the link, which it must
 *       once the link has been silent for its dead-link time (3 s). Exit 0
 *       when it closed it, 1 when not. Test_link_loop.sh makes calls between
 *       two other workers meanwhile.
 *   hello NAME PEER_DATA_URL VERSION
 *       says HELLO in link protocol VERSION (1: without the version field, as
 *       workers before PROBE and ALIVE did), then heartbeats for 2 s: exit 0
 *       when the worker closed the link, 1 when it kept it.
 *
 * Exit status: 0 when it did what it was asked (the checks are the caller's),
 * 1 when it could not (no connection, no READY), 2 bad usage.
 */
#include <inttypes.h>
#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/frame.h"

static const char *mode = "?";

static void
say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("fakepeer %s: ", mode);
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

/* ---- streams ---- */

typedef struct {
    nng_stream *s;
    nng_aio *aio;
} conn;

/* conn_io sends or receives exactly n bytes; 0 or an NNG error. */
static int
conn_io(conn *c, void *buf, size_t n, int recv, int timeout_ms)
{
    while (n > 0) {
        nng_iov iov = {buf, n};
        size_t got;
        int rv;
        nng_aio_set_iov(c->aio, 1, &iov);
        nng_aio_set_timeout(c->aio, timeout_ms);
        if (recv)
            nng_stream_recv(c->s, c->aio);
        else
            nng_stream_send(c->s, c->aio);
        nng_aio_wait(c->aio);
        if ((rv = nng_aio_result(c->aio)) != 0)
            return rv;
        if ((got = nng_aio_count(c->aio)) == 0)
            return NNG_ECLOSED;
        buf = (uint8_t *)buf + got;
        n -= got;
    }
    return 0;
}

static int
conn_dial(conn *c, const char *url)
{
    nng_stream_dialer *d = NULL;
    int rv;

    memset(c, 0, sizeof(*c));
    if ((rv = nng_aio_alloc(&c->aio, NULL, NULL)) != 0 ||
        (rv = nng_stream_dialer_alloc(&d, url)) != 0)
        return rv;
    nng_aio_set_timeout(c->aio, 5000);
    nng_stream_dialer_dial(d, c->aio);
    nng_aio_wait(c->aio);
    if ((rv = nng_aio_result(c->aio)) == 0)
        c->s = nng_aio_get_output(c->aio, 0);
    nng_stream_dialer_free(d); /* the stream outlives its dialer */
    return rv;
}

/* encode writes f's prefix and header into sb, the prefix announcing payload_len bytes. */
static int
encode(msgpack_sbuffer *sb, const frame *f, uint64_t payload_len)
{
    uint8_t prefix[FRAME_PREFIX_LEN] = {0};
    msgpack_sbuffer_init(sb);
    msgpack_sbuffer_write(sb, (const char *)prefix, sizeof(prefix));
    if (frame_header_encode(sb, f) != 0) {
        msgpack_sbuffer_destroy(sb);
        return -1;
    }
    frame_prefix_encode((uint8_t *)sb->data, (uint32_t)(sb->size - FRAME_PREFIX_LEN), payload_len);
    return 0;
}

/* send_frame sends f's prefix and header (announcing payload_len bytes that the caller sends). */
static int
send_frame(conn *c, const frame *f, uint64_t payload_len)
{
    msgpack_sbuffer sb;
    int rv;
    if (encode(&sb, f, payload_len) != 0)
        return NNG_ENOMEM;
    rv = conn_io(c, sb.data, sb.size, 0, 10000);
    msgpack_sbuffer_destroy(&sb);
    return rv;
}

static int
send_heartbeat(conn *c)
{
    frame f = {.type = FRAME_HEARTBEAT};
    return send_frame(c, &f, 0);
}

/* read_frame reads one frame (its payload is read and dropped); 0, or an NNG error, -1 bad. */
static int
read_frame(conn *c, frame *f, int timeout_ms)
{
    uint8_t prefix[FRAME_PREFIX_LEN], *hdr, junk[65536];
    uint32_t hlen;
    uint64_t plen;
    char err[256];
    int rv;

    if ((rv = conn_io(c, prefix, sizeof(prefix), 1, timeout_ms)) != 0)
        return rv;
    if (frame_prefix_decode(prefix, &hlen, &plen, err, sizeof(err)) != 0) {
        say("a bad frame prefix from the worker: %s", err);
        return -1;
    }
    if ((hdr = malloc(hlen)) == NULL)
        return NNG_ENOMEM;
    rv = conn_io(c, hdr, hlen, 1, timeout_ms);
    if (rv == 0 && frame_header_decode(f, hdr, hlen, plen, err, sizeof(err)) != 0) {
        say("a bad frame header from the worker: %s", err);
        rv = -1;
    }
    free(hdr);
    while (rv == 0 && plen > 0) {
        size_t k = plen < sizeof(junk) ? (size_t)plen : sizeof(junk);
        if ((rv = conn_io(c, junk, k, 1, timeout_ms)) != 0)
            frame_fini(f);
        plen -= k;
    }
    return rv;
}

/* ---- the real worker's link to us: accepted, read by a thread that keeps its READYs ---- */

#define MAX_READY 64

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static frame readies[MAX_READY];
static int nready;
/* WHEREs the real worker asked (a new job's first call: where is the group?), answered by the
 * main thread on our link (answer_wheres): HERE, as a worker that knows no number of it */
static frame wheres[MAX_READY];
static int nwhere;
static int quiet; /* flood: do not print every frame */

static const char *
type_name(int t)
{
    static const char *names[] = {"?",     "HELLO",     "READY",     "SLICE",  "DATA",
                                  "ABORT", "HEARTBEAT", "CHALLENGE", "WELCOME"};
    return t >= 0 && t <= 8 ? names[t] : "?";
}

static void *
reader_thread(void *arg)
{
    conn c = {.s = arg};
    int64_t frames = 0;

    if (nng_aio_alloc(&c.aio, NULL, NULL) != 0)
        return NULL;
    for (;;) {
        frame f;
        int rv = read_frame(&c, &f, 60000);
        if (rv != 0) {
            say("the real worker's link to us ended after %lld frames: %s", (long long)frames,
                rv > 0 ? nng_strerror(rv) : "bad frame");
            break;
        }
        frames++;
        if (f.type == FRAME_HEARTBEAT) {
            frame_fini(&f);
            continue;
        }
        if (!quiet) {
            if (f.type == FRAME_HELLO)
                say("received HELLO from \"%s\"", f.worker);
            else if (f.type == FRAME_ABORT)
                say("received ABORT %s epoch %" PRIu64 " op %" PRIu64 ": %s: %s", f.id.group,
                    f.id.epoch, f.id.op, a2a_status_name(f.status), f.message);
            else
                say("received %s %s epoch %" PRIu64 " op %" PRIu64 " dst %lld", type_name(f.type),
                    f.id.group, f.id.epoch, f.id.op, (long long)f.dst);
        }
        pthread_mutex_lock(&mtx);
        if (f.type == FRAME_READY && nready < MAX_READY) {
            readies[nready++] = f; /* keeps srcs and counts */
            pthread_cond_broadcast(&cv);
        } else if (f.type == FRAME_WHERE && nwhere < MAX_READY) {
            wheres[nwhere++] = f;
        } else {
            frame_fini(&f);
        }
        pthread_mutex_unlock(&mtx);
    }
    nng_stream_close(c.s);
    nng_stream_free(c.s);
    nng_aio_free(c.aio);
    return NULL;
}

static void *
acceptor_thread(void *arg)
{
    nng_stream_listener *l = arg;
    nng_aio *aio;

    if (nng_aio_alloc(&aio, NULL, NULL) != 0)
        return NULL;
    for (;;) {
        pthread_t t;
        nng_stream_listener_accept(l, aio);
        nng_aio_wait(aio);
        if (nng_aio_result(aio) != 0)
            break;
        if (pthread_create(&t, NULL, reader_thread, nng_aio_get_output(aio, 0)) == 0)
            pthread_detach(t);
    }
    nng_aio_free(aio);
    return NULL;
}

static int
start_listener(const char *url)
{
    nng_stream_listener *l;
    pthread_t t;
    int rv;

    if ((rv = nng_stream_listener_alloc(&l, url)) != 0 || (rv = nng_stream_listener_listen(l))) {
        say("cannot listen on %s: %s", url, nng_strerror(rv));
        return -1;
    }
    if (pthread_create(&t, NULL, acceptor_thread, l) != 0)
        return -1;
    pthread_detach(t);
    say("listening on %s", url);
    return 0;
}

/* the link protocol version our HELLO says (0: this build's, FRAME_LINK_VERSION) */
static uint32_t hello_version;

/* connect_peer dials the real worker's data port and says HELLO as name (no token). */
static int
connect_peer(conn *c, const char *url, const char *name)
{
    frame f = {.type = FRAME_HELLO, .version = hello_version};
    int rv;

    if ((rv = conn_dial(c, url)) != 0) {
        say("cannot connect to %s: %s", url, nng_strerror(rv));
        return -1;
    }
    snprintf(f.worker, sizeof(f.worker), "%s", name);
    while (f.incarnation == 0)
        if (getrandom(&f.incarnation, sizeof(f.incarnation), 0) != sizeof(f.incarnation))
            f.incarnation = (uint64_t)now_ms();
    if ((rv = send_frame(c, &f, 0)) != 0) {
        say("cannot send HELLO: %s", nng_strerror(rv));
        return -1;
    }
    say("connected to %s as \"%s\" (incarnation %016" PRIx64 ")", url, name, f.incarnation);
    return 0;
}

/* hold sends heartbeats on c for ms. */
static void
hold(conn *c, int64_t ms)
{
    int64_t end = now_ms() + ms;
    while (now_ms() < end) {
        if (send_heartbeat(c) != 0) {
            say("the link to the worker broke while we held it");
            return;
        }
        nng_msleep(400);
    }
}

/* answer_wheres answers every WHERE that came with HERE on c: count -1 (we know no number of
 * that group: the asking call takes its own) and no bits; under mtx. 0, or -1: c broke. */
static int
answer_wheres(conn *c)
{
    int rv = 0;
    for (int i = 0; i < nwhere; i++) {
        frame h = {.type = FRAME_HERE, .id = wheres[i].id, .dst = wheres[i].dst, .count = -1};
        if (rv == 0 && send_frame(c, &h, 0) != 0)
            rv = -1;
        if (rv == 0)
            say("answered WHERE %s op %" PRIu64 " with HERE -1", wheres[i].id.group,
                wheres[i].id.op);
        frame_fini(&wheres[i]);
    }
    nwhere = 0;
    return rv;
}

/* asks_slice: READY r asks our rank srcs[j] for a slice; asks_discovering: for a discoverer's
 * counts, with a row (wait_ready's tests) */
static int
asks_slice(const frame *r, size_t j)
{
    return r->counts[j] > 0;
}

static int
asks_discovering(const frame *r, size_t j)
{
    return r->counts[j] == FRAME_DISCOVER && r->nrow > 0;
}

/* wait_ready waits up to 30 s for a READY and a source j of it that want(READY, j) accepts, into
 * *r (j returned; -1: none came, or the link broke), answering WHEREs and sending heartbeats on
 * c meanwhile. */
static int64_t
wait_ready(conn *c, int (*want)(const frame *r, size_t j), frame *r)
{
    int64_t deadline = now_ms() + 30000, pick = -1;
    pthread_mutex_lock(&mtx);
    for (;;) {
        for (int i = 0; i < nready && pick < 0; i++)
            for (size_t j = 0; j < readies[i].n && pick < 0; j++)
                if (want(&readies[i], j)) {
                    *r = readies[i];
                    pick = (int64_t)j;
                }
        if (pick >= 0 || now_ms() > deadline)
            break;
        if (answer_wheres(c) != 0) {
            pthread_mutex_unlock(&mtx);
            say("the link to the worker broke answering WHERE");
            return -1;
        }
        pthread_mutex_unlock(&mtx);
        if (send_heartbeat(c) != 0) {
            say("the link to the worker broke before any READY");
            return -1;
        }
        nng_msleep(20);
        pthread_mutex_lock(&mtx);
    }
    pthread_mutex_unlock(&mtx);
    return pick;
}

/* meet listens on own, links to the real worker at peer as name, and waits (wait_ready) for a
 * READY that want accepts, which names what (for the message when none comes); -1: no link,
 * or no such READY. */
static int64_t
meet(conn *c, const char *name, const char *own, const char *peer,
     int (*want)(const frame *r, size_t j), frame *r, const char *what)
{
    int64_t pick;
    if (start_listener(own) != 0 || connect_peer(c, peer, name) != 0)
        return -1;
    if ((pick = wait_ready(c, want, r)) < 0)
        say("no %s within 30 s", what);
    return pick;
}

/* ---- trickle ---- */

static int
mode_trickle(const char *name, const char *own, const char *peer, int64_t seconds)
{
    conn c;
    frame r;
    int64_t t0, pick;
    size_t esize;
    uint64_t total, sent = 0;
    uint8_t *payload;

    /* wait for a READY that asks one of our ranks for a slice; heartbeats meanwhile */
    if ((pick = meet(&c, name, own, peer, asks_slice, &r, "READY asking for a slice")) < 0)
        return 1;
    esize = a2a_dtype_size((a2a_dtype)r.dtype);
    total = (uint64_t)r.counts[pick] * esize;
    say("READY %s epoch %" PRIu64 " op %" PRIu64 ": group rank %lld expects %lld elements "
        "(%" PRIu64 " bytes) from our group rank %lld",
        r.id.group, r.id.epoch, r.id.op, (long long)r.dst, (long long)r.counts[pick], total,
        (long long)r.srcs[pick]);
    if (total == 0 || total > FRAME_PAYLOAD_MAX || (payload = malloc(total)) == NULL) {
        say("cannot trickle %" PRIu64 " bytes (one DATA frame of at most %u)", total,
            FRAME_PAYLOAD_MAX);
        return 1;
    }
    memset(payload, 0x77, total);
    {
        int64_t srcs[1] = {r.dst}, counts[1] = {0};
        frame ready = {.type = FRAME_READY,
                       .id = r.id,
                       .dst = r.srcs[pick],
                       .dtype = r.dtype,
                       .n = 1,
                       .srcs = srcs,
                       .counts = counts};
        frame slice = {.type = FRAME_SLICE,
                       .id = r.id,
                       .src = r.srcs[pick],
                       .dst = r.dst,
                       .dtype = r.dtype,
                       .count = r.counts[pick],
                       .status = A2A_OK};
        frame data = {.type = FRAME_DATA, .id = r.id, .src = r.srcs[pick], .dst = r.dst};
        if (send_frame(&c, &ready, 0) != 0 || send_frame(&c, &slice, 0) != 0 ||
            send_frame(&c, &data, total) != 0) {
            say("the link broke while sending READY, SLICE, DATA");
            return 1;
        }
    }
    say("sent READY (we expect 0 back), SLICE of %lld elements and a DATA header of %" PRIu64
        " bytes; now its payload over %lld s, one write a second",
        (long long)r.counts[pick], total, (long long)seconds);
    t0 = now_ms();
    for (int64_t i = 0; sent < total; i++) {
        uint64_t want = total * (uint64_t)(i + 1) / (uint64_t)seconds, k;
        if (want > total || i + 1 >= seconds)
            want = total;
        k = want - sent;
        if (k > 0 && conn_io(&c, payload + sent, (size_t)k, 0, 10000) != 0) {
            say("the worker closed the link after %" PRIu64 " of %" PRIu64 " payload bytes, at "
                "+%lld ms",
                sent, total, (long long)(now_ms() - t0));
            free(payload);
            return 0;
        }
        sent += k;
        say("payload %" PRIu64 "/%" PRIu64 " bytes at +%lld ms", sent, total,
            (long long)(now_ms() - t0));
        if (sent < total)
            nng_msleep(1000);
    }
    free(payload);
    say("the whole DATA frame is sent (+%lld ms); holding the link 2 s",
        (long long)(now_ms() - t0));
    hold(&c, 2000);
    say("done");
    return 0;
}

/* ---- misplace ---- */

/*
 * mode_misplace plays a worker whose rank streams its slice to a discovering rank with a SLICE
 * whose place is wrong (kind "past": past the receiver's buffer; "over": at element 0, where the
 * receiver's own slice goes): it waits for a READY that discovers (count FRAME_DISCOVER) with a
 * row, answers with its own first READY (its row: count elements to that rank, none to itself;
 * it expects what the row said it gets), then SLICE(count, place) and count elements of DATA.
 * The real worker must fail the operation INTERNAL, naming the place, and drop the DATA.
 */
static int
mode_misplace(const char *name, const char *own, const char *peer, const char *kind, int64_t count)
{
    conn c;
    frame r;
    int64_t pick;
    uint8_t *payload;
    size_t esize;

    if ((pick = meet(&c, name, own, peer, asks_discovering, &r, "discovering READY with a row")) <
        0)
        return 1;
    int64_t me = r.srcs[pick], place = strcmp(kind, "past") == 0 ? r.cap - count + 1 : 0;
    esize = a2a_dtype_size((a2a_dtype)r.dtype);
    say("READY %s epoch %" PRIu64 " op %" PRIu64 ": group rank %lld discovers, capacity %lld; "
        "we (group rank %lld) send %lld elements at place %lld (%s)",
        r.id.group, r.id.epoch, r.id.op, (long long)r.dst, (long long)r.cap, (long long)me,
        (long long)count, (long long)place, kind);
    if (count <= 0 || (uint64_t)count * esize > FRAME_PAYLOAD_MAX ||
        (payload = malloc((size_t)count * esize)) == NULL || r.nrow <= (size_t)me)
        return 1;
    memset(payload, 0x77, (size_t)count * esize);
    {
        int64_t srcs[1] = {r.dst}, counts[1] = {r.row[me]};
        frame ready = {.type = FRAME_READY,
                       .id = r.id,
                       .dst = me,
                       .dtype = r.dtype,
                       .n = 1,
                       .srcs = srcs,
                       .counts = counts,
                       .nrow = r.nrow,
                       .cap = -1};
        ready.row[r.dst] = count;
        frame slice = {.type = FRAME_SLICE,
                       .id = r.id,
                       .src = me,
                       .dst = r.dst,
                       .dtype = r.dtype,
                       .count = count,
                       .status = A2A_OK,
                       .has_place = 1,
                       .place = place < 0 ? 0 : place};
        frame data = {.type = FRAME_DATA, .id = r.id, .src = me, .dst = r.dst};
        if (send_frame(&c, &ready, 0) != 0 || send_frame(&c, &slice, 0) != 0 ||
            send_frame(&c, &data, (uint64_t)count * esize) != 0 ||
            conn_io(&c, payload, (size_t)count * esize, 0, 10000) != 0) {
            free(payload);
            say("the link broke while sending READY, SLICE, DATA");
            return 1;
        }
    }
    free(payload);
    say("sent READY, SLICE with place %lld and %lld elements of DATA; holding the link 2 s",
        (long long)place, (long long)count);
    hold(&c, 2000);
    say("done");
    return 0;
}

/* ---- late ---- */

/* seqcheck.c's element k of call 0 from world rank src to world rank dst */
#define SEQ_MAGIC 0x5AC3E11E00000000ULL

static int
mode_late(const char *name, const char *own, const char *peer, int64_t delay_ms)
{
    conn c;
    frame r;
    int64_t t0, pick;
    uint64_t total;
    uint64_t *payload;

    if ((pick = meet(&c, name, own, peer, asks_slice, &r, "READY asking for a slice")) < 0)
        return 1;
    t0 = now_ms();
    int64_t me = r.srcs[pick], count = r.counts[pick];
    total = (uint64_t)count * 8;
    say("READY %s epoch %" PRIu64 " op %" PRIu64 ": group rank %lld expects %lld elements from "
        "our group rank %lld",
        r.id.group, r.id.epoch, r.id.op, (long long)r.dst, (long long)count, (long long)me);
    if (a2a_dtype_size((a2a_dtype)r.dtype) != 8 || total == 0 || total > FRAME_PAYLOAD_MAX ||
        (payload = malloc(total)) == NULL) {
        say("cannot send %lld elements of dtype %d (uint64, one DATA frame)", (long long)count,
            (int)r.dtype);
        return 1;
    }
    for (int64_t k = 0; k < count; k++) /* group ranks are world ranks in this test */
        payload[k] = SEQ_MAGIC ^ ((uint64_t)(me & 0xfff) << 28 | (uint64_t)(r.dst & 0xfff) << 16 |
                                  (uint64_t)(k & 0xffff));
    int64_t srcs[1] = {r.dst}, counts[1] = {count};
    frame ready = {.type = FRAME_READY,
                   .id = r.id,
                   .dst = me,
                   .dtype = r.dtype,
                   .n = 1,
                   .srcs = srcs,
                   .counts = counts};
    if (send_frame(&c, &ready, 0) != 0) {
        say("the link broke sending READY");
        free(payload);
        return 1;
    }
    say("sent READY (we expect %lld back); our slice goes %lld ms after theirs came",
        (long long)count, (long long)delay_ms);
    while (now_ms() < t0 + delay_ms) {
        int64_t left = t0 + delay_ms - now_ms();
        if (left > 300 && send_heartbeat(&c) != 0) {
            say("the link broke while we waited");
            free(payload);
            return 1;
        }
        nng_msleep(left > 300 ? 300 : (nng_duration)left);
    }
    frame slice = {.type = FRAME_SLICE,
                   .id = r.id,
                   .src = me,
                   .dst = r.dst,
                   .dtype = r.dtype,
                   .count = count,
                   .status = A2A_OK};
    frame data = {.type = FRAME_DATA, .id = r.id, .src = me, .dst = r.dst};
    if (send_frame(&c, &slice, 0) != 0 || send_frame(&c, &data, total) != 0 ||
        conn_io(&c, payload, (size_t)total, 0, 10000) != 0) {
        say("the link broke sending SLICE and DATA");
        free(payload);
        return 1;
    }
    free(payload);
    say("sent SLICE and DATA of %lld elements at +%lld ms; holding the link 2 s", (long long)count,
        (long long)(now_ms() - t0));
    hold(&c, 2000);
    say("done");
    return 0;
}

/* ---- flood ---- */

static int
mode_flood(const char *name, const char *own, const char *peer, int64_t frames, int64_t pairs,
           int64_t hold_s, const char *group, uint64_t epoch)
{
    conn c;
    int64_t *srcs = calloc((size_t)pairs + 1, sizeof(int64_t));
    int64_t *counts = calloc((size_t)pairs + 1, sizeof(int64_t));
    int64_t t0, i, last = 0;
    uint64_t wire = 0;

    quiet = 1;
    if (srcs == NULL || counts == NULL)
        return 1;
    for (int64_t k = 0; k < pairs; k++) {
        srcs[k] = k % CFG_MAX_RANKS;
        counts[k] = 1 + k % 100;
    }
    if (start_listener(own) != 0 || connect_peer(&c, peer, name) != 0)
        return 1;
    t0 = now_ms();
    for (i = 0; i < frames; i++) {
        frame f = {.type = FRAME_READY,
                   .dst = 0,
                   .dtype = A2A_UINT8,
                   .n = (size_t)pairs,
                   .srcs = srcs,
                   .counts = counts};
        msgpack_sbuffer sb;
        int rv;
        if (group != NULL && i % 2 == 1) {
            snprintf(f.id.group, sizeof(f.id.group), "%s", group);
            f.id.epoch = epoch + 1000000 + (uint64_t)i;
        } else {
            snprintf(f.id.group, sizeof(f.id.group), "flood-%lld", (long long)i);
            f.id.epoch = 1 + (uint64_t)i;
        }
        f.id.op = (uint64_t)i % 3;
        if (encode(&sb, &f, 0) != 0) {
            say("cannot encode a READY of %lld pairs", (long long)pairs);
            return 1;
        }
        wire += sb.size;
        rv = conn_io(&c, sb.data, sb.size, 0, 10000);
        msgpack_sbuffer_destroy(&sb);
        if (rv != 0) {
            say("the worker closed the link after %lld frames (%.1f MiB): %s", (long long)i,
                (double)wire / 1048576.0, nng_strerror(rv));
            break;
        }
        if (now_ms() - last >= 2000) {
            last = now_ms();
            say("%lld frames sent (%.1f MiB on the wire)", (long long)i + 1,
                (double)wire / 1048576.0);
        }
    }
    say("flood over: %lld READY frames of %lld pairs, %.1f MiB on the wire, in %lld ms",
        (long long)i, (long long)pairs, (double)wire / 1048576.0, (long long)(now_ms() - t0));
    if (i == frames) {
        say("holding the link %lld s", (long long)hold_s);
        hold(&c, hold_s * 1000);
    }
    say("done");
    free(srcs);
    free(counts);
    return 0;
}

/* ---- hello: a HELLO of another version of the link protocol ---- */

/* mode_hello says HELLO as name to the worker at peer in link protocol version, then sends
 * heartbeats for 2 s: 0 when the worker closed the link (as it must for another version), 1
 * when it kept it */
static int
mode_hello(const char *name, const char *peer, uint32_t version)
{
    conn c;
    int64_t end;
    hello_version = version;
    if (connect_peer(&c, peer, name) != 0)
        return 1;
    end = now_ms() + 2000;
    while (now_ms() < end) {
        if (send_heartbeat(&c) != 0) {
            say("the worker closed the link after our HELLO of version %u", version);
            return 0;
        }
        nng_msleep(100);
    }
    say("the worker kept the link after our HELLO of version %u", version);
    return 1;
}

/* ---- stall: a frame begun, trickled and never finished ---- */

static int
mode_stall(const char *name, const char *peer, int64_t seconds)
{
    frame f = {.type = FRAME_READY};
    msgpack_sbuffer sb;
    conn c;
    size_t sent = 0;
    int64_t end, last;
    uint8_t b;
    int rv;

    memset(f.id.group, 'x', 120);
    f.id.epoch = 1;
    if (connect_peer(&c, peer, name) != 0 || encode(&sb, &f, 0) != 0)
        return 1;
    /* its prefix and the start of its header at once: the worker reads the header from now */
    if ((rv = conn_io(&c, sb.data, FRAME_PREFIX_LEN + 8, 0, 5000)) != 0) {
        say("cannot send: %s", nng_strerror(rv));
        return 1;
    }
    sent = FRAME_PREFIX_LEN + 8;
    say("sent %zu bytes of a READY frame of %zu; the rest one byte every 300 ms", sent, sb.size);
    end = now_ms() + seconds * 1000;
    last = now_ms();
    while (now_ms() < end && sent + 1 < sb.size) {
        if ((rv = conn_io(&c, sb.data + sent, 1, 0, 5000)) != 0) {
            say("the worker closed the link while we trickled (%zu bytes sent): %s", sent,
                nng_strerror(rv));
            return 1;
        }
        sent++;
        last = now_ms();
        nng_msleep(300);
    }
    say("stopped mid-frame: %zu of its %zu bytes sent", sent, sb.size);
    msgpack_sbuffer_destroy(&sb);
    rv = conn_io(&c, &b, 1, 1, 15000);
    if (rv == NNG_ETIMEDOUT) {
        say("the worker kept the silent link for 15 s");
        return 1;
    }
    say("the worker closed the link %lld ms after our last byte (%s)", (long long)(now_ms() - last),
        rv == 0 ? "it sent a byte" : nng_strerror(rv));
    return rv == 0;
}

static int
usage(void)
{
    fprintf(stderr, "usage: fakepeer trickle NAME OWN_DATA_URL PEER_DATA_URL SECONDS\n"
                    "       fakepeer flood NAME OWN_DATA_URL PEER_DATA_URL FRAMES PAIRS HOLD_S "
                    "[GROUP EPOCH]\n"
                    "       fakepeer hello NAME PEER_DATA_URL VERSION\n"
                    "       fakepeer stall NAME PEER_DATA_URL SECONDS\n"
                    "       fakepeer misplace NAME OWN_DATA_URL PEER_DATA_URL past|over COUNT\n"
                    "       fakepeer late NAME OWN_DATA_URL PEER_DATA_URL DELAY_MS\n");
    return 2;
}

int
main(int argc, char **argv)
{
    int rc;

    if (argc < 2)
        return usage();
    mode = argv[1];
    if (strcmp(mode, "trickle") == 0 && argc == 6 && atoll(argv[5]) > 0)
        rc = mode_trickle(argv[2], argv[3], argv[4], atoll(argv[5]));
    else if (strcmp(mode, "flood") == 0 && (argc == 8 || argc == 10) && atoll(argv[6]) >= 0)
        rc = mode_flood(argv[2], argv[3], argv[4], atoll(argv[5]), atoll(argv[6]), atoll(argv[7]),
                        argc == 10 ? argv[8] : NULL, argc == 10 ? strtoull(argv[9], NULL, 10) : 0);
    else if (strcmp(mode, "misplace") == 0 && argc == 7 &&
             (strcmp(argv[5], "past") == 0 || strcmp(argv[5], "over") == 0))
        rc = mode_misplace(argv[2], argv[3], argv[4], argv[5], atoll(argv[6]));
    else if (strcmp(mode, "late") == 0 && argc == 6 && atoll(argv[5]) >= 0)
        rc = mode_late(argv[2], argv[3], argv[4], atoll(argv[5]));
    else if (strcmp(mode, "stall") == 0 && argc == 5 && atoll(argv[4]) > 0)
        rc = mode_stall(argv[2], argv[3], atoll(argv[4]));
    else if (strcmp(mode, "hello") == 0 && argc == 5 && atoll(argv[4]) > 0)
        rc = mode_hello(argv[2], argv[3], (uint32_t)atoll(argv[4]));
    else
        return usage();
    fflush(stdout);
    _exit(rc); /* reader threads may still block on their streams */
}
