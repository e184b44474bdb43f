/*
 * link.c - the peer links: for each peer worker one outgoing stream (ours,
 * written by one thread at a time: its sender thread, or a handler in
 * link_flush) and one incoming stream (theirs, read only by its receiver
 * thread). Streams are worker/sock.h's: blocking TCP sockets for tcp://.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "engine_int.h"
#include "handshake.h"
#include "xfer.h"

/* An incoming link and its receiver thread. */
typedef struct eng_in {
    struct eng_in *next;
    engine *e;
    wsock *s;
    pthread_t thread;
    int done;            /* the thread no longer uses s; set under e->mtx */
    int pending;         /* in its handshake (handshake.h's caps); under e->mtx */
    int64_t deadline_ms; /* for the whole handshake */
    char source[64];     /* the dialer's address */
    eng_call *landing;   /* the call whose memory a DATA payload goes into right now, or NULL */
    struct eng_rx *rx;   /* its reading, once the link loop has it; NULL before */
    struct eng_in *loop_next; /* on e->loop_new */
} eng_in;

/* Set while a handler thread queues frames that its own link_flush will write
 * (link_flush_begin): the sender threads are then not woken for them. */
static __thread int flushing;

void
link_flush_begin(void)
{
    flushing = 1;
}

/* encode_frame writes prefix and header of f into sb (prefix first). */
static int
encode_frame(msgpack_sbuffer *sb, const frame *f, uint64_t payload_len)
{
    uint8_t prefix[FRAME_PREFIX_LEN] = {0};
    msgpack_sbuffer_write(sb, (const char *)prefix, sizeof(prefix));
    if (frame_header_encode(sb, f) != 0)
        return -1;
    frame_prefix_encode((uint8_t *)sb->data, (uint32_t)(sb->size - FRAME_PREFIX_LEN), payload_len);
    return 0;
}

int
link_send(engine *e, eng_peer *p, const frame *f, const uint8_t *payload, size_t len)
{
    msgpack_sbuffer sb;
    eng_ctl *c;

    if (e->stopping)
        return 0;
    msgpack_sbuffer_init(&sb);
    if (encode_frame(&sb, f, len) != 0 || (c = malloc(sizeof(*c) + sb.size + len)) == NULL) {
        msgpack_sbuffer_destroy(&sb);
        return -1;
    }
    c->next = NULL;
    c->gen = 0;
    c->len = sb.size + len;
    memcpy(c->bytes, sb.data, sb.size);
    if (len > 0)
        memcpy(c->bytes + sb.size, payload, len);
    msgpack_sbuffer_destroy(&sb);
    if (p->ctl_tail != NULL)
        p->ctl_tail->next = c;
    else
        p->ctl_head = c;
    p->ctl_tail = c;
    if (!flushing)
        pthread_cond_signal(&p->cv);
    return 0;
}

int
link_send_slice(engine *e, eng_peer *p, eng_call *c, int64_t dst, uint64_t total, uint64_t addr)
{
    eng_send *s = calloc(1, sizeof(*s)), **pp;
    (void)e;
    if (s == NULL)
        return -1;
    s->call = c;
    s->dst = dst;
    s->total = total;
    s->addr = addr;
    for (pp = &p->sends; *pp != NULL; pp = &(*pp)->next)
        ;
    *pp = s;
    pthread_cond_signal(&p->cv);
    return 0;
}

void
link_drop_call(engine *e, eng_call *c)
{
    for (size_t i = 0; i < e->npeers; i++)
        for (eng_send **pp = &e->peers[i].sends; *pp != NULL;) {
            eng_send *s = *pp;
            if (s->call == c) {
                *pp = s->next;
                free(s);
            } else {
                pp = &s->next;
            }
        }
}

/* ctl_copy writes the frames of the chain head, in order, into buf (room for all of them). */
static void
ctl_copy(const eng_ctl *head, uint8_t *buf)
{
    for (size_t off = 0; head != NULL; off += head->len, head = head->next)
        memcpy(buf + off, head->bytes, head->len);
}

/* ctl_free frees the chain head (off every queue). */
static void
ctl_free(eng_ctl *head)
{
    while (head != NULL) {
        eng_ctl *c = head;
        head = c->next;
        free(c);
    }
}

static void
drop_queue(eng_peer *p)
{
    ctl_free(p->ctl_head);
    p->ctl_head = p->ctl_tail = NULL;
    while (p->sends != NULL) {
        eng_send *s = p->sends;
        p->sends = s->next;
        free(s);
    }
}

void
link_release_call(engine *e, eng_call *c)
{
    for (eng_in *in = e->ins; in != NULL; in = in->next)
        if (in->landing == c && !in->done)
            wsock_close(in->s); /* its read fails, the receiver lets go and ends the link */
    for (size_t i = 0; i < e->npeers; i++) {
        eng_peer *p = &e->peers[i];
        if (p->chunk_call == c && p->out != NULL && !p->out_reset) {
            wsock_close(p->out); /* its write fails; the sender frees the link */
            p->out_reset = 1;
        }
    }
}

void
link_peer_down(engine *e, eng_peer *p, const char *why)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "worker %s (%s) is unavailable: %s", p->w->name, p->w->data_url,
             why);
    log_warn("%s", msg);
    drop_queue(p);
    p->lost = 1;
    engine_peer_lost(e, p, msg);
    /* The ABORTs just queued for p stay: a restarted p, or p once the link is back, learns
     * which of its operations failed here (when p is gone for good the next failed dial drops
     * them). */
    /* Our outgoing link is write-only: after a silent cut its far end is closed
     * (the peer saw the silence too), and frames written into it once the
     * network heals are lost until a retransmission meets the peer's RST,
     * seconds later. Start a new link with the next frame instead. */
    if (p->out != NULL && !p->out_reset) {
        wsock_close(p->out); /* the writer's pending send fails, it frees p->out */
        p->out_reset = 1;
    }
}

typedef struct {
    uint8_t *hdr; /* grows up to FRAME_HEADER_MAX */
    size_t hcap;
    uint8_t *payload; /* grows up to FRAME_PAYLOAD_MAX */
    size_t cap;
    const char *peer; /* the peer's name once it said HELLO, for messages */
    /* the last group (and epoch) that offer resolved in vain: its frames are not held again */
    char tried[A2A_GROUP_NAME_MAX + 1];
    uint64_t tried_epoch;
    int64_t resolved_ms; /* when offer last resolved a group (one a ENGINE_RESOLVE_MS at most) */
    int64_t *limit_ms;   /* the link loop's: when its last resolve ended, shared by its links */
} eng_receiver;

/* grow makes *buf (of *cap bytes) hold at least n: 0, or -1 with why (out of memory). */
static int
grow(uint8_t **buf, size_t *cap, uint64_t n, char *why, size_t whylen)
{
    uint8_t *b;

    if (n <= *cap)
        return 0;
    if ((b = realloc(*buf, n)) == NULL) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    *buf = b;
    *cap = n;
    return 0;
}

/* read_payload reads len payload bytes into dst, or into x->payload when dst is NULL. */
static int
read_payload(wsock *s, eng_receiver *x, uint8_t *dst, uint64_t len, int timeout_ms, char *why,
             size_t whylen)
{
    nng_iov iov;
    int rv;

    if (dst == NULL && grow(&x->payload, &x->cap, len, why, whylen) != 0)
        return -1;
    iov = (nng_iov){dst != NULL ? dst : x->payload, len};
    if (len > 0 && (rv = wsock_io(s, &iov, 1, 1, timeout_ms)) != 0) {
        rpc_why(rv, x->peer, NULL, 1, timeout_ms, why, whylen);
        return -1;
    }
    return 0;
}

/*
 * read_head reads a frame's prefix and header into f; its payload (DATA,
 * *plen bytes) is still on the stream. 0, or -1 with why.
 */
static int
read_head(wsock *s, eng_receiver *x, frame *f, uint64_t *plen, int timeout_ms, char *why,
          size_t whylen)
{
    uint8_t prefix[FRAME_PREFIX_LEN];
    uint32_t hlen;
    nng_iov iov = {prefix, sizeof(prefix)};
    int rv;

    if ((rv = wsock_io(s, &iov, 1, 1, timeout_ms)) != 0) {
        if (rv == NNG_ETIMEDOUT)
            snprintf(why, whylen,
                     "%s sent nothing for %d s, not even a heartbeat (stopped, overloaded, or its "
                     "network cut)",
                     x->peer != NULL ? x->peer : "the peer", timeout_ms / 1000);
        else
            rpc_why(rv, x->peer, NULL, 1, timeout_ms, why, whylen);
        return -1;
    }
    if (frame_prefix_decode(prefix, &hlen, plen, why, whylen) != 0)
        return -1;
    if (grow(&x->hdr, &x->hcap, hlen, why, whylen) != 0) /* READY grows with the group */
        return -1;
    iov = (nng_iov){x->hdr, hlen};
    if ((rv = wsock_io(s, &iov, 1, 1, timeout_ms)) != 0) {
        rpc_why(rv, x->peer, NULL, 1, timeout_ms, why, whylen);
        return -1;
    }
    return frame_header_decode(f, x->hdr, hlen, *plen, why, whylen);
}

/* ---- the sender thread of one peer ---- */

typedef struct {
    uint8_t *buf; /* ENGINE_CHUNK of staging */
} eng_sender;

static int
send_bytes(wsock *s, const void *b1, size_t n1, const void *b2, size_t n2)
{
    nng_iov iov[2] = {{(void *)b1, n1}, {(void *)b2, n2}};
    return wsock_io(s, iov, n2 > 0 ? 2 : 1, 0, ENGINE_LINK_DEAD_MS);
}

/* sender_dial connects to p and runs the handshake (HELLO); e->mtx held on entry and exit. */
static int
sender_dial(engine *e, eng_peer *p)
{
    wsock *s = NULL;
    int rv, connected = 0;

    p->link_back = 0; /* one try: a peer that is gone is not dialed again and again */
    pthread_mutex_unlock(&e->mtx);
    nng_tls_config *tls = secure_tls_client(e->sec); /* SIGHUP may replace it */
    if ((rv = wsock_dial(p->w->data_url, tls, ENGINE_DIAL_MS, &s)) == 0) {
        connected = 1;
        rv = handshake_dial(e, p, s);
    }
    if (tls != NULL)
        nng_tls_config_free(tls);
    pthread_mutex_lock(&e->mtx);
    if (rv != 0) {
        wsock_free(s);
        if (!e->stopping) {
            char why[300], what[240];
            if (connected &&
                rv == NNG_ETIMEDOUT) /* accepted by its kernel, or a port that is mute */
                snprintf(why, sizeof(why),
                         "%s took the connection but did not answer its handshake for %d s "
                         "(stopped, overloaded, or not an a2a worker)",
                         p->w->name, HANDSHAKE_DIAL_MS / 1000);
            else
                snprintf(
                    why, sizeof(why), "cannot connect: %s",
                    rpc_why(rv, p->w->name, p->w->data_url, 1, ENGINE_DIAL_MS, what, sizeof(what)));
            link_peer_down(e, p, why);
        }
        return -1;
    }
    p->out = s;
    p->out_gen++;
    p->out_reset = 0;
    p->last_sent_ms = p->out_up_ms = rpc_now_ms();
    log_debug("link to %s (%s) up", p->w->name, p->w->data_url);
    return 0;
}

/*
 * silent_peer: our link to p is up, and p has not linked back to us within
 * ENGINE_LINK_DEAD_MS (a worker that takes a link links back: handshake.h),
 * so nothing tells us p is alive; gives p up (link_peer_down). 1 when it did.
 */
static int
silent_peer(engine *e, eng_peer *p)
{
    char why[300];

    if (p->out == NULL || p->out_reset || p->in != NULL ||
        rpc_now_ms() - p->out_up_ms < ENGINE_LINK_DEAD_MS)
        return 0;
    snprintf(why, sizeof(why),
             "%s took our link but did not link back for %d s (stopped, overloaded, or its "
             "network cut)",
             p->w->name, ENGINE_LINK_DEAD_MS / 1000);
    link_peer_down(e, p, why);
    return 1;
}

static void
sender_broken(engine *e, eng_peer *p, int rv)
{
    char why[300];
    wsock_free(p->out);
    p->out = NULL;
    if (p->out_reset) { /* closed by link_peer_down, which told everyone */
        p->out_reset = 0;
        return;
    }
    if (e->stopping)
        return;
    rpc_why(rv, p->w->name, NULL, 0, ENGINE_LINK_DEAD_MS, why, sizeof(why));
    link_peer_down(e, p, why);
}

/*
 * link_flush: for each link with queued control frames and no writer, take
 * the queue, write it in one go from this thread and give the link back.
 */
void
link_flush(engine *e)
{
    flushing = 0;
    for (size_t i = 0; i < e->npeers; i++) {
        eng_peer *p = &e->peers[i];
        eng_ctl *head = p->ctl_head;
        size_t len = 0;
        uint8_t *buf = NULL;
        nng_iov iov;
        int rv;

        if (head == NULL)
            continue;
        if (p->writing) /* the writer looks at the queue again when it is done */
            continue;
        for (eng_ctl *c = head; c != NULL; c = c->next)
            len += c->len;
        if (e->stopping || p->out == NULL || p->out_reset || (buf = malloc(len)) == NULL) {
            pthread_cond_signal(&p->cv); /* the sender thread dials, or sends them */
            continue;
        }
        ctl_copy(head, buf);
        p->ctl_head = p->ctl_tail = NULL;
        p->writing = 1;
        uint64_t gen = p->out_gen; /* p->out stays while we write */
        pthread_mutex_unlock(&e->mtx);
        ctl_free(head);
        /* what the socket takes now: a peer that stopped reading must not hold this call
         * past its deadline (RELIABILITY finding 3); its sender thread writes the rest */
        size_t sent = 0;
        eng_ctl *rest = NULL;
        if ((rv = wsock_send_now(p->out, buf, len, &sent)) == NNG_ENOTSUP) {
            iov = (nng_iov){buf, len}; /* TLS: whole, as before */
            rv = wsock_io(p->out, &iov, 1, 0, ENGINE_LINK_DEAD_MS);
            sent = len;
        }
        if (rv == 0 && sent < len && (rest = malloc(sizeof(*rest) + len - sent)) == NULL) {
            iov = (nng_iov){buf + sent, len - sent}; /* no memory: the rest from here */
            rv = wsock_io(p->out, &iov, 1, 0, ENGINE_LINK_DEAD_MS);
        } else if (rest != NULL) {
            rest->gen = gen;
            rest->len = len - sent;
            memcpy(rest->bytes, buf + sent, rest->len);
        }
        free(buf);
        pthread_mutex_lock(&e->mtx);
        p->writing = 0;
        p->last_sent_ms = rpc_now_ms();
        if (rest != NULL) { /* before what was queued meanwhile: the stream stays in order */
            log_debug("link to %s: the socket took %zu of %zu bytes now; its sender thread "
                      "writes the rest",
                      p->w->name, sent, len);
            rest->next = p->ctl_head;
            p->ctl_head = rest;
            if (p->ctl_tail == NULL)
                p->ctl_tail = rest;
        }
        if (rv != 0)
            sender_broken(e, p, rv);
        if (p->ctl_head != NULL || p->sends != NULL || e->stopping)
            pthread_cond_signal(&p->cv); /* the sender waits for the link */
    }
}

/* sender_chunk sends the next chunk of the first slice in the round; under e->mtx. */
static int
sender_chunk(engine *e, eng_peer *p, eng_sender *x)
{
    eng_send *s = p->sends, **pp;
    eng_call *c = s->call;
    const op_op *op = c->oc.op;
    int64_t dst = s->dst;
    frame f = {.type = FRAME_DATA, .src = c->oc.grank, .dst = s->dst, .offset = s->sent};
    size_t k = s->total - s->sent < ENGINE_CHUNK ? (size_t)(s->total - s->sent) : ENGINE_CHUNK;
    msgpack_sbuffer sb;
    int rv, last;

    snprintf(f.id.group, sizeof(f.id.group), "%s", op->g->name);
    f.id.epoch = op->g->epoch;
    f.id.op = op->num;
    s->sent += k;
    last = s->sent == s->total;
    p->sends = s->next; /* to the back of the round, or out when sent */
    s->next = NULL;
    if (!last) {
        for (pp = &p->sends; *pp != NULL; pp = &(*pp)->next)
            ;
        *pp = s;
    }
    uint64_t addr = s->addr + f.offset; /* s may be dropped while unlocked, unless last */
    eng_map *m;
    uint8_t *shared = shm_get(e, c->sess, addr, k, &m); /* in a shared buffer: no copy */
    c->pins++;
    p->writing = 1;
    p->chunk_call = c;
    pthread_mutex_unlock(&e->mtx);
    msgpack_sbuffer_init(&sb);
    rv = shared != NULL ? 0 : xfer_read(c->sess, addr, x->buf, k);
    if (rv == 0 && encode_frame(&sb, &f, k) == 0)
        rv = -send_bytes(p->out, sb.data, sb.size, shared != NULL ? shared : x->buf, k);
    msgpack_sbuffer_destroy(&sb);
    pthread_mutex_lock(&e->mtx);
    p->writing = 0;
    p->chunk_call = NULL;
    shm_put(e, m);
    if (--c->pins == 0)
        engine_call_notify(c);
    if (last)
        free(s);
    if (rv < 0) {
        sender_broken(e, p, -rv);
        return -1;
    }
    if (rv > 0 || last)
        engine_sent(e, c, dst, rv);
    return 0;
}

static void
sender_wait(engine *e, eng_peer *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ENGINE_HEARTBEAT_MS * 1000000;
    ts.tv_sec += ts.tv_nsec / 1000000000;
    ts.tv_nsec %= 1000000000;
    pthread_cond_timedwait(&p->cv, &e->mtx, &ts);
}

static void
sender_step(engine *e, eng_peer *p, eng_sender *x)
{
    eng_ctl *c;
    int rv;

    if (p->writing) { /* link_flush has the link */
        sender_wait(e, p);
        return;
    }
    if (p->out != NULL && p->out_reset) { /* closed by link_peer_down while we were idle */
        wsock_free(p->out);
        p->out = NULL;
        p->out_reset = 0;
    }
    if (p->retired && p->out == NULL) { /* left the cluster: nothing is sent to it */
        drop_queue(p);
        p->link_back = 0;
        sender_wait(e, p);
        return;
    }
    if (p->out == NULL && (p->ctl_head != NULL || p->sends != NULL || p->link_back)) {
        sender_dial(e, p);
        return;
    }
    if (silent_peer(e, p))
        return;
    if ((c = p->ctl_head) != NULL && c->gen != 0 && c->gen != p->out_gen) {
        p->ctl_head = c->next; /* the rest of a frame begun on a link that is gone */
        if (p->ctl_head == NULL)
            p->ctl_tail = NULL;
        free(c);
    } else if (c != NULL) {
        /* c and the new frames behind it, in one write when they fit the staging buffer */
        eng_ctl *last = c;
        size_t len = c->len;
        while (last->next != NULL && last->next->gen == 0 &&
               len + last->next->len <= ENGINE_CHUNK) {
            last = last->next;
            len += last->len;
        }
        p->ctl_head = last->next;
        if (p->ctl_head == NULL)
            p->ctl_tail = NULL;
        last->next = NULL;
        p->writing = 1;
        pthread_mutex_unlock(&e->mtx);
        if (c == last) {
            rv = send_bytes(p->out, c->bytes, c->len, NULL, 0);
        } else {
            ctl_copy(c, x->buf);
            rv = send_bytes(p->out, x->buf, len, NULL, 0);
        }
        ctl_free(c);
        pthread_mutex_lock(&e->mtx);
        p->writing = 0;
        if (rv != 0)
            sender_broken(e, p, rv);
        p->last_sent_ms = rpc_now_ms();
    } else if (p->sends != NULL) {
        sender_chunk(e, p, x);
        p->last_sent_ms = rpc_now_ms();
    } else if (p->out != NULL && rpc_now_ms() - p->last_sent_ms >= ENGINE_HEARTBEAT_MS) {
        frame f = {.type = FRAME_HEARTBEAT};
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        encode_frame(&sb, &f, 0);
        p->writing = 1;
        pthread_mutex_unlock(&e->mtx);
        rv = send_bytes(p->out, sb.data, sb.size, NULL, 0);
        pthread_mutex_lock(&e->mtx);
        p->writing = 0;
        msgpack_sbuffer_destroy(&sb);
        if (rv != 0)
            sender_broken(e, p, rv);
        p->last_sent_ms = rpc_now_ms();
    } else {
        sender_wait(e, p);
    }
}

static void *
sender_thread(void *arg)
{
    eng_peer *p = arg;
    engine *e = p->e;
    eng_sender x = {0};

    if ((x.buf = malloc(ENGINE_CHUNK)) == NULL) {
        log_error("sender for %s: out of memory", p->w->name);
        return NULL;
    }
    pthread_mutex_lock(&e->mtx);
    while (!e->stopping)
        sender_step(e, p, &x);
    while (p->writing) /* a link_flush still writing */
        pthread_cond_wait(&p->cv, &e->mtx);
    wsock_free(p->out);
    p->out = NULL;
    pthread_mutex_unlock(&e->mtx);
    free(x.buf);
    return NULL;
}

/* ---- incoming links ---- */

/* receiver_hello runs the handshake (handshake.h) and binds the link to its peer; NULL with why. */
static eng_peer *
receiver_hello(engine *e, eng_in *in, char *why, size_t whylen)
{
    frame f;
    eng_peer *p = NULL;
    int rv;

    if (handshake_accept(e, in->s, in->deadline_ms, &f, why, whylen) != 0)
        return NULL;
    pthread_mutex_lock(&e->mtx);
    in->pending = 0;
    if ((rv = handshake_peer_index(e, f.worker)) >= 0)
        p = &e->peers[rv];
    if (p == NULL) {
        snprintf(why, whylen, "HELLO from unknown worker \"%s\"", f.worker);
    } else {
        if (p->in != NULL && p->in != in->s)
            wsock_close(p->in); /* an older link: its thread ends */
        p->in = in->s;
        /* a new run of p: what the old one had in flight fails, unless its loss was seen and
         * handled already (then our operations since, and our link to p, are the new run's) */
        if (p->incarnation != 0 && p->incarnation != f.incarnation && !p->lost)
            link_peer_down(e, p, "it restarted");
        else if (p->incarnation != 0 && p->incarnation != f.incarnation)
            log_info("worker %s restarted (incarnation %016llx)", p->w->name,
                     (unsigned long long)f.incarnation);
        p->incarnation = f.incarnation;
        p->lost = 0;
        if (p->out == NULL || p->out_reset) { /* p hears our heartbeats only on a link of ours */
            p->link_back = 1;
            pthread_cond_signal(&p->cv);
        }
        log_debug("link from %s up", p->w->name);
    }
    pthread_mutex_unlock(&e->mtx);
    return p;
}

/*
 * data_begin: where the plen bytes of DATA frame f from p go; under e->mtx. Its call, pinned
 * (NULL: the bytes are dropped, counted and logged), *addr in its job, and *shared when the job's
 * buffer there is shared with us (*m its map, else NULL). in->landing is the call until data_end.
 */
static eng_call *
data_begin(engine *e, eng_in *in, eng_peer *p, const frame *f, uint64_t plen, uint64_t *addr,
           eng_map **m, uint8_t **shared)
{
    eng_call *c = engine_data_target(e, p, f, plen, addr);

    *m = NULL;
    *shared = c != NULL ? shm_get(e, c->sess, *addr, plen, m) : NULL;
    if (c == NULL && ++e->late_data > 0)
        log_debug("dropping %llu bytes of DATA from %s for operation %llu of group \"%s\": its "
                  "call is gone (%llu dropped so far)",
                  (unsigned long long)plen, p->w->name, (unsigned long long)f->id.op, f->id.group,
                  (unsigned long long)e->late_data);
    in->landing = c;
    return c;
}

/*
 * data_end: the payload of data_begin's frame is in (rv 0: in the shared buffer, or in payload,
 * which goes to the job now) or was lost with the link (rv -1). Called without e->mtx, returns
 * holding it, the call unpinned and the bytes counted (engine_data_landed).
 */
static void
data_end(engine *e, eng_in *in, eng_call *c, uint64_t addr, eng_map *m, const frame *f,
         uint64_t plen, const uint8_t *payload, int rv)
{
    int wr = 0;

    if (rv == 0 && c != NULL && m == NULL)
        wr = xfer_write(c->sess, addr, payload, (size_t)plen);
    pthread_mutex_lock(&e->mtx);
    in->landing = NULL;
    shm_put(e, m);
    if (c != NULL)
        engine_data_landed(e, c, f, plen, rv != 0 ? -1 : wr);
}

/*
 * receive_data takes a DATA frame's payload off the stream: straight into the
 * job's shared buffer when it has one, else through x->payload and
 * process_vm_writev. e->mtx held on entry and exit. 0, or -1 (link lost).
 */
static int
receive_data(engine *e, eng_in *in, eng_peer *p, eng_receiver *x, const frame *f, uint64_t plen,
             char *why, size_t whylen)
{
    uint64_t addr = 0;
    eng_map *m;
    uint8_t *shared;
    eng_call *c = data_begin(e, in, p, f, plen, &addr, &m, &shared);
    int rv;

    pthread_mutex_unlock(&e->mtx);
    rv = read_payload(in->s, x, shared, plen, ENGINE_LINK_DEAD_MS, why, whylen);
    data_end(e, in, c, addr, m, f, plen, x->payload, rv);
    return rv;
}

/*
 * offer gives the engine frame f; under e->mtx. A frame of a group not installed here that the
 * store of early frames has no room for (the first operation of a large group: the READYs and
 * slices of every other member come at once, before a call of ours resolved it) is not dropped
 * at once: the receiver resolves the group itself (ENGINE_RESOLVE_MS at most, reading nothing
 * more of the link meanwhile, so TCP holds the rest) and offers it again. Dropped (logged) when
 * the group cannot be installed now (the coordinator does not answer; an older epoch of it is
 * still busy here), and then its next frames of that epoch are dropped without trying again.
 * One resolve a second at most, so that a peer's flood of frames of groups that do not exist
 * (or of epochs to come) costs the coordinator no more than that. In the link loop, which reads
 * every link, a second at least passes between the end of one resolve and the next of any of
 * its links: while the coordinator does not answer, the loop still reads half the time.
 */
static void
offer(engine *e, eng_peer *p, eng_receiver *x, frame *f)
{
    int64_t now = rpc_now_ms();
    int may = !(x->tried_epoch == f->id.epoch && strcmp(x->tried, f->id.group) == 0) &&
              (x->resolved_ms == 0 || now - x->resolved_ms >= ENGINE_RESOLVE_MS) &&
              (x->limit_ms == NULL || *x->limit_ms == 0 || now - *x->limit_ms >= ENGINE_RESOLVE_MS);

    if (engine_frame_try(e, p, f, may) == 0)
        return;
    x->resolved_ms = now;
    if (engine_resolve_ahead(e, f->id.group, f->id.epoch, ENGINE_RESOLVE_MS) == 0) {
        snprintf(x->tried, sizeof(x->tried), "%s", f->id.group);
        x->tried_epoch = f->id.epoch;
    }
    if (x->limit_ms != NULL) /* the loop waits at most half its time for the coordinator */
        *x->limit_ms = rpc_now_ms();
    if (!e->stopping)
        engine_frame(e, p, f);
}

static void
receiver_loop(engine *e, eng_in *in, eng_peer *p, eng_receiver *x, char *why, size_t whylen)
{
    for (;;) {
        frame f;
        uint64_t plen;
        int rv = 0;
        if (read_head(in->s, x, &f, &plen, ENGINE_LINK_DEAD_MS, why, whylen) != 0)
            return;
        pthread_mutex_lock(&e->mtx);
        if (e->stopping) {
            pthread_mutex_unlock(&e->mtx);
            frame_fini(&f);
            return;
        }
        if (f.type == FRAME_SLICE && plen > 0) { /* eager: the slice is here; small */
            pthread_mutex_unlock(&e->mtx);
            if ((f.payload = malloc(plen)) == NULL) {
                snprintf(why, whylen, "out of memory");
                rv = -1;
            } else {
                f.payload_len = (size_t)plen;
                rv = read_payload(in->s, x, f.payload, plen, ENGINE_LINK_DEAD_MS, why, whylen);
            }
            pthread_mutex_lock(&e->mtx);
            if (rv == 0 && !e->stopping)
                offer(e, p, x, &f);
        } else if (f.type == FRAME_DATA)
            rv = receive_data(e, in, p, x, &f, plen, why, whylen);
        else if (f.type != FRAME_HEARTBEAT && f.type != FRAME_HELLO)
            offer(e, p, x, &f);
        pthread_mutex_unlock(&e->mtx);
        frame_fini(&f);
        if (rv != 0)
            return;
    }
}

/*
 * receiver_end ends incoming link in once nothing reads it any more (its thread, or the link
 * loop): p's loss is handled when in was p's link; in may be freed once this returns.
 */
static void
receiver_end(engine *e, eng_in *in, eng_peer *p, eng_receiver *x, const char *why)
{
    wsock *s = in->s;

    pthread_mutex_lock(&e->mtx);
    if (p != NULL && p->in == s) {
        p->in = NULL;
        if (!e->stopping)
            link_peer_down(e, p, why);
    } else if (p == NULL && !e->stopping && rpc_now_ms() < e->poke_until) {
        e->poke_until = 0; /* handshake_set_tls's own connection */
        log_debug("closing an incoming link: %s (ours: the listener took its new TLS files)", why);
    } else if (p == NULL && !e->stopping) {
        log_warn("closing an incoming link: %s", why);
    }
    in->done = 1;
    pthread_mutex_unlock(&e->mtx);
    wsock_free(s);
    free(x->hdr);
    free(x->payload);
}

static int loop_take(engine *e, eng_in *in, eng_peer *p, eng_receiver *x);

static void *
receiver_thread(void *arg)
{
    eng_in *in = arg;
    engine *e = in->e;
    eng_receiver x = {0};
    eng_peer *p = NULL;
    char why[300] = "out of memory";

    if ((p = receiver_hello(e, in, why, sizeof(why))) != NULL) {
        x.peer = p->w->name;
        /* the frames that came together in one read, not three reads a frame (prefix, header,
         * payload); a link without it still works, one read at a time */
        if (wsock_buffer(in->s, ENGINE_READ_AHEAD) != 0)
            log_warn("link from %s: no memory to read ahead; reading frame by frame", x.peer);
        if (loop_take(e, in, p, &x) == 0)
            return NULL; /* the link loop reads it from now on */
        receiver_loop(e, in, p, &x, why, sizeof(why));
    }
    receiver_end(e, in, p, &x, why);
    return NULL;
}

/*
 * ---- the link loop ----
 * One thread reads every incoming tcp:// link once its handshake is over (epoll): the frames of
 * an operation that come from several peers at once wake one thread, not one a link, and the
 * call they complete is answered from it. A link's reading is a small state machine (prefix,
 * header, payload), fed with what its socket has now (wsock_read_now), so no link waits for
 * another's bytes. What it does with a frame is the receiver thread's (receiver_loop).
 */
enum { RX_PREFIX, RX_HEADER, RX_BODY };

#define RX_FRAMES 64 /* frames of one link in a row before the others get their turn */

typedef struct eng_rx {
    eng_receiver x;
    eng_peer *p;
    int stage;     /* RX_*: what is being read */
    int hot;       /* may have more to read now (epoll said so, or its turn ran out) */
    int has_frame; /* f is decoded and not finished */
    uint8_t prefix[FRAME_PREFIX_LEN];
    uint32_t hlen;
    uint64_t plen;
    uint64_t got; /* bytes of the piece being read */
    frame f;
    uint8_t *dst;    /* where the payload goes */
    eng_call *c;     /* DATA: its call (pinned by engine_data_target), or NULL: dropped */
    uint64_t addr;   /* DATA: where in c's job */
    eng_map *m;      /* DATA: the shared buffer dst is in, or NULL */
    int64_t last_ms; /* when bytes last came */
    int reads;       /* system calls rx_step may still make in this turn */
    int lowat;       /* the socket's SO_RCVLOWAT: 0 (1, the default), or while a payload comes */
    long queued;     /* what it held when the loop last looked at its silence (lowat only) */
} eng_rx;

/* RX_LOWAT: while a large payload comes, epoll wakes the loop once this much more of it is there
 * (or all of it), not at every segment: one wake-up and one recv for 256 KiB instead of several
 * (64 MiB a rank at 2x2: 6 % slower without it than a thread per link, whose recv(MSG_WAITALL)
 * waited in the kernel for the whole chunk) */
#define RX_LOWAT (256 << 10)

/* rx_lowat sets link in's SO_RCVLOWAT to bytes when it is not so already (0: the default). */
static void
rx_lowat(eng_in *in, int bytes)
{
    eng_rx *r = in->rx;
    if (r->lowat == bytes || wsock_set_lowat(in->s, bytes > 0 ? bytes : 1) != 0)
        return;
    r->lowat = bytes;
    r->queued = bytes != 0 ? wsock_queued(in->s) : -1;
}

/* loop_take hands in (past its handshake, p its peer) to the link loop, with x; 0, or -1 when
 * the loop cannot take it (none, not tcp://, stopping, out of memory): its thread reads it. */
static int
loop_take(engine *e, eng_in *in, eng_peer *p, eng_receiver *x)
{
    eng_rx *r;
    uint64_t one = 1;

    if (e->loop_fd < 0 || wsock_fd(in->s) < 0 || (r = calloc(1, sizeof(*r))) == NULL)
        return -1;
    r->x = *x;
    r->p = p;
    r->stage = RX_PREFIX;
    r->hot = 1; /* bytes may be read ahead already */
    r->last_ms = rpc_now_ms();
    pthread_mutex_lock(&e->mtx);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mtx);
        free(r);
        return -1;
    }
    in->rx = r;
    in->loop_next = e->loop_new;
    e->loop_new = in;
    if (write(e->loop_wake, &one, sizeof(one)) < 0) /* EAGAIN: it is awake already */
        log_debug("link loop: cannot wake it: %s", strerror(errno));
    pthread_mutex_unlock(&e->mtx);
    return 0;
}

/* rx_read reads more of the piece dst[0..len) (r->got of it so far): 1 once it is all there,
 * 0 when the socket has no more now, -1 when the link failed (why). */
static int
rx_read(eng_in *in, uint8_t *dst, uint64_t len, char *why, size_t whylen)
{
    eng_rx *r = in->rx;
    size_t got;
    int rv;

    if (r->got >= len)
        return 1;
    rv = wsock_read_now(in->s, dst + r->got, (size_t)(len - r->got), &got, &r->reads);
    r->got += got;
    if (rv != 0) {
        rpc_why(rv, r->x.peer, NULL, 1, ENGINE_LINK_DEAD_MS, why, whylen);
        return -1;
    }
    return r->got >= len;
}

/* rx_head acts on a frame whose header is in: a frame without payload is done here; for one
 * with a payload, where it goes is decided (r->dst) and RX_BODY is next. 0, or -1 (why). */
static int
rx_head(engine *e, eng_in *in, char *why, size_t whylen)
{
    eng_rx *r = in->rx;
    frame *f = &r->f;
    uint8_t *shared = NULL;

    pthread_mutex_lock(&e->mtx);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mtx);
        snprintf(why, whylen, "stopping");
        return -1;
    }
    if (f->type == FRAME_SLICE && r->plen > 0) { /* eager: the slice comes with it; small */
        pthread_mutex_unlock(&e->mtx);
        if ((f->payload = malloc(r->plen)) == NULL) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        f->payload_len = (size_t)r->plen;
        r->dst = f->payload;
        r->stage = RX_BODY;
        return 0;
    }
    if (f->type == FRAME_DATA) {
        r->c = data_begin(e, in, r->p, f, r->plen, &r->addr, &r->m, &shared);
        pthread_mutex_unlock(&e->mtx);
        r->stage = RX_BODY; /* from here, rx_end lets go of the call */
        if (shared == NULL && grow(&r->x.payload, &r->x.cap, r->plen, why, whylen) != 0)
            return -1;
        r->dst = shared != NULL ? shared : r->x.payload;
        return 0;
    }
    if (f->type != FRAME_HEARTBEAT && f->type != FRAME_HELLO)
        offer(e, r->p, &r->x, f);
    pthread_mutex_unlock(&e->mtx);
    frame_fini(f);
    r->has_frame = 0;
    r->stage = RX_PREFIX;
    return 0;
}

/* rx_body acts on a frame whose payload is in (rv: 0, or -1 when the link failed under it). */
static void
rx_body(engine *e, eng_in *in, int rv)
{
    eng_rx *r = in->rx;
    frame *f = &r->f;

    if (f->type == FRAME_DATA) {
        data_end(e, in, r->c, r->addr, r->m, f, r->plen, r->x.payload, rv);
        r->c = NULL;
        r->m = NULL;
    } else {
        pthread_mutex_lock(&e->mtx);
        if (rv == 0 && !e->stopping)
            offer(e, r->p, &r->x, f);
    }
    pthread_mutex_unlock(&e->mtx);
    frame_fini(f);
    r->has_frame = 0;
    r->stage = RX_PREFIX;
}

/* rx_step reads and acts on what link in has now, RX_FRAMES frames at most, with one system
 * call (epoll says when there is more: one read that finds nothing costs as much as one that
 * finds a frame): 0 when it has no more read ahead, 1 when its turn ran out first, -1 when the
 * link failed (why). */
static int
rx_step(engine *e, eng_in *in, char *why, size_t whylen)
{
    eng_rx *r = in->rx;

    r->reads = 1;
    for (int frames = 0; frames < RX_FRAMES;) {
        int rv;
        switch (r->stage) {
        case RX_PREFIX:
            if ((rv = rx_read(in, r->prefix, FRAME_PREFIX_LEN, why, whylen)) <= 0)
                return rv;
            if (frame_prefix_decode(r->prefix, &r->hlen, &r->plen, why, whylen) != 0)
                return -1;
            if (grow(&r->x.hdr, &r->x.hcap, r->hlen, why, whylen) != 0)
                return -1;
            r->stage = RX_HEADER;
            r->got = 0;
            break;
        case RX_HEADER:
            if ((rv = rx_read(in, r->x.hdr, r->hlen, why, whylen)) <= 0)
                return rv;
            if (frame_header_decode(&r->f, r->x.hdr, r->hlen, r->plen, why, whylen) != 0)
                return -1;
            r->has_frame = 1;
            r->got = 0;
            if (rx_head(e, in, why, whylen) != 0)
                return -1;
            frames += r->stage == RX_PREFIX;
            break;
        default:
            if ((rv = rx_read(in, r->dst, r->plen, why, whylen)) < 0)
                return rv;
            if (rv == 0) { /* more to come: wake when a good part of it is there */
                uint64_t left = r->plen - r->got;
                rx_lowat(in, left > 1 && left < RX_LOWAT ? (int)left : left > 1 ? RX_LOWAT : 0);
                return 0;
            }
            rx_lowat(in, 0);
            rx_body(e, in, 0);
            r->got = 0;
            frames++;
            break;
        }
    }
    return 1;
}

/* rx_end ends a link of the loop's: what it was reading lets go, then receiver_end. */
static void
rx_end(engine *e, eng_in *in, const char *why)
{
    eng_rx *r = in->rx;
    eng_receiver x = r->x;
    eng_peer *p = r->p;

    epoll_ctl(e->loop_fd, EPOLL_CTL_DEL, wsock_fd(in->s), NULL);
    if (r->has_frame && r->stage == RX_BODY)
        rx_body(e, in, -1); /* a DATA frame's call lets go; a slice is dropped with the link */
    else if (r->has_frame)
        frame_fini(&r->f);
    in->rx = NULL;
    free(r);
    receiver_end(e, in, p, &x, why);
}

static void *
loop_thread(void *arg)
{
    engine *e = arg;
    eng_in **own = NULL; /* the links the loop reads */
    size_t n = 0, cap = 0;
    int64_t limit_ms = 0; /* offer's, for all of them */
    char why[300];

    for (;;) {
        struct epoll_event ev[32];
        int64_t now = rpc_now_ms(), wait = ENGINE_LINK_DEAD_MS;
        int k, stop;
        eng_in *fresh;

        for (size_t i = 0; i < n; i++) {
            int64_t left = own[i]->rx->last_ms + ENGINE_LINK_DEAD_MS - now;
            wait = own[i]->rx->hot ? 0 : left < wait ? (left > 0 ? left : 0) : wait;
        }
        k = epoll_wait(e->loop_fd, ev, 32, (int)wait);
        for (int i = 0; i < k; i++) {
            if (ev[i].data.ptr == NULL) {
                uint64_t v;
                if (read(e->loop_wake, &v, sizeof(v)) < 0)
                    (void)0; /* another read took it */
            } else {
                ((eng_in *)ev[i].data.ptr)->rx->hot = 1;
            }
        }
        pthread_mutex_lock(&e->mtx);
        stop = e->stopping;
        fresh = e->loop_new;
        e->loop_new = NULL;
        pthread_mutex_unlock(&e->mtx);
        while (fresh != NULL) {
            eng_in *in = fresh;
            struct epoll_event one = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = in};
            fresh = in->loop_next;
            if (n == cap) {
                size_t nc = cap != 0 ? 2 * cap : 16;
                eng_in **b = realloc(own, nc * sizeof(*own));
                if (b == NULL) {
                    rx_end(e, in, "out of memory");
                    continue;
                }
                own = b;
                cap = nc;
            }
            if (epoll_ctl(e->loop_fd, EPOLL_CTL_ADD, wsock_fd(in->s), &one) != 0) {
                snprintf(why, sizeof(why), "cannot poll it: %s", strerror(errno));
                rx_end(e, in, why);
                continue;
            }
            own[n++] = in;
        }
        if (stop)
            break;
        /* silence first, as epoll saw the links just now: a link is not silent because the
         * loop spent time on the others (a resolve in offer) */
        now = rpc_now_ms();
        for (size_t i = 0; i < n;) {
            eng_rx *r = own[i]->rx;
            long q;
            if (!r->hot && now - r->last_ms >= ENGINE_LINK_DEAD_MS && r->lowat != 0 &&
                (q = wsock_queued(own[i]->s)) != r->queued) {
                r->queued = q; /* bytes came, fewer than SO_RCVLOWAT: not silent */
                r->last_ms = now;
            }
            if (!r->hot && now - r->last_ms >= ENGINE_LINK_DEAD_MS) {
                snprintf(why, sizeof(why),
                         "%s sent nothing for %d s, not even a heartbeat (stopped, overloaded, "
                         "or its network cut)",
                         r->x.peer, ENGINE_LINK_DEAD_MS / 1000);
                rx_end(e, own[i], why);
                own[i] = own[--n];
                continue;
            }
            i++;
        }
        for (size_t i = 0; i < n;) {
            eng_in *in = own[i];
            eng_rx *r = in->rx;
            int rv;
            if (!r->hot) {
                i++;
                continue;
            }
            r->last_ms = now; /* epoll said it has something (bytes, or its end) */
            r->x.limit_ms = &limit_ms;
            snprintf(why, sizeof(why), "out of memory");
            rv = rx_step(e, in, why, sizeof(why));
            r->hot = rv > 0;
            if (rv < 0) {
                rx_end(e, in, why);
                own[i] = own[--n];
                continue;
            }
            i++;
        }
    }
    for (size_t i = 0; i < n; i++)
        rx_end(e, own[i], "stopping");
    free(own);
    return NULL;
}

/* reap_ins joins the receiver threads that ended; under e->mtx. */
static void
reap_ins(engine *e)
{
    for (eng_in **pp = &e->ins; *pp != NULL;) {
        eng_in *in = *pp;
        if (!in->done) {
            pp = &in->next;
            continue;
        }
        *pp = in->next;
        pthread_join(in->thread, NULL);
        free(in);
    }
}

/* admit: whether an incoming link from source may start its handshake (handshake.h's caps);
 * under e->mtx. */
static int
admit(engine *e, const char *source)
{
    static int64_t said_ms;
    static long refused;
    size_t total = 0, same = 0, max_total, max_source;

    handshake_caps(e, &max_total, &max_source);
    for (eng_in *in = e->ins; in != NULL; in = in->next)
        if (in->pending && !in->done) {
            total++;
            same += strcmp(in->source, source) == 0;
        }
    if (total < max_total && same < max_source)
        return 1;
    refused++;
    if (rpc_now_ms() - said_ms >= 1000) { /* one line a second under a flood */
        log_warn("refusing incoming links still in their handshake beyond %zu in all and %zu "
                 "from one address (%zu now, %zu from %s): %ld refused",
                 max_total, max_source, total, same, source, refused);
        said_ms = rpc_now_ms();
        refused = 0;
    }
    return 0;
}

static void *
acceptor_thread(void *arg)
{
    engine *e = arg;

    for (;;) {
        char source[64];
        eng_in *in;
        wsock *s;
        int rv = wsock_accept(e->listener, &s);
        if (rv == NNG_ECLOSED)
            break;
        if (rv != 0) { /* e.g. out of descriptors: do not spin */
            struct timespec ts = {0, 50 * 1000000};
            log_warn("cannot accept a peer link: %s", nng_strerror(rv));
            nanosleep(&ts, NULL);
            continue;
        }
        wsock_peer(s, source, sizeof(source));
        pthread_mutex_lock(&e->mtx);
        reap_ins(e);
        if (e->stopping || !admit(e, source) || (in = calloc(1, sizeof(*in))) == NULL) {
            int stop = e->stopping; /* read under the lock */
            wsock_free(s);
            pthread_mutex_unlock(&e->mtx);
            if (stop)
                break;
            continue;
        }
        in->e = e;
        in->s = s;
        in->pending = 1;
        in->deadline_ms = rpc_now_ms() + HANDSHAKE_MS;
        snprintf(in->source, sizeof(in->source), "%s", source);
        if (pthread_create(&in->thread, NULL, receiver_thread, in) != 0) {
            wsock_free(in->s);
            free(in);
        } else {
            pthread_setname_np(in->thread, "a2a-recv");
            in->next = e->ins;
            e->ins = in;
        }
        pthread_mutex_unlock(&e->mtx);
    }
    return NULL;
}

/* loop_start starts the link loop, unless A2A_LINK_LOOP=0 (then each link keeps its thread):
 * 0, or -1 with errno. */
static int
loop_start(engine *e)
{
    const char *env = getenv("A2A_LINK_LOOP");
    struct epoll_event wake = {.events = EPOLLIN, .data.ptr = NULL};

    e->loop_fd = e->loop_wake = -1;
    e->loop_new = NULL;
    if (env != NULL && strcmp(env, "0") == 0)
        return 0;
    if ((e->loop_fd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (e->loop_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        epoll_ctl(e->loop_fd, EPOLL_CTL_ADD, e->loop_wake, &wake) != 0 ||
        pthread_create(&e->loop, NULL, loop_thread, e) != 0) {
        int err = errno;
        if (e->loop_fd >= 0)
            close(e->loop_fd);
        if (e->loop_wake >= 0)
            close(e->loop_wake);
        e->loop_fd = e->loop_wake = -1;
        errno = err;
        return -1;
    }
    pthread_setname_np(e->loop, "a2a-links");
    return 0;
}

int
link_start(engine *e, char *err, size_t errlen)
{
    const char *url = e->self->data_url, *colon = strrchr(url, ':');
    int rv, port = 0;

    if ((rv = wsock_listen(url, e->sec->tls_server, &e->listener, &port)) != 0) {
        snprintf(err, errlen, "cannot listen for peer links on %s: %s", url, nng_strerror(rv));
        e->listener = NULL;
        return -1;
    }
    snprintf(e->data_url, sizeof(e->data_url), "%s", url);
    if (loop_start(e) != 0) {
        snprintf(err, errlen, "cannot start the link loop: %s", strerror(errno));
        wsock_listener_free(e->listener);
        e->listener = NULL;
        return -1;
    }
    if (port > 0 && colon != NULL)
        snprintf(e->data_url, sizeof(e->data_url), "%.*s:%d", (int)(colon - url), url, port);
    if (pthread_create(&e->acceptor, NULL, acceptor_thread, e) != 0) {
        snprintf(err, errlen, "cannot start threads");
        wsock_listener_free(e->listener);
        e->listener = NULL; /* link_stop has nothing to stop */
        return -1;
    }
    pthread_setname_np(e->acceptor, "a2a-accept");
    for (size_t i = 0; i < e->npeers; i++) {
        if ((int)i == e->self_idx)
            continue;
        if (link_peer_start(e, &e->peers[i]) != 0) {
            snprintf(err, errlen, "cannot start threads");
            return -1;
        }
    }
    return 0;
}

int
link_peer_start(engine *e, eng_peer *p)
{
    (void)e;
    if (pthread_create(&p->sender, NULL, sender_thread, p) != 0)
        return -1;
    pthread_setname_np(p->sender, "a2a-send");
    p->started = 1;
    return 0;
}

void
link_peer_retire(engine *e, eng_peer *p, const char *why)
{
    link_peer_down(e, p, why); /* fails what depends on it, closes our link */
    drop_queue(p);             /* the ABORTs it just queued: nobody is there to hear them */
    p->retired = 1;
    p->link_back = 0;
    p->incarnation = 0;
    if (p->in != NULL)
        wsock_close(p->in); /* its receiver ends */
    pthread_cond_signal(&p->cv);
}

void
link_stop(engine *e)
{
    if (e->listener == NULL)
        return;
    pthread_mutex_lock(&e->mtx);
    e->stopping = 1;
    for (size_t i = 0; i < e->npeers; i++) {
        pthread_cond_broadcast(&e->peers[i].cv);
        if (e->peers[i].out != NULL)
            wsock_close(e->peers[i].out);
    }
    for (eng_in *in = e->ins; in != NULL; in = in->next)
        if (!in->done)
            wsock_close(in->s);
    pthread_mutex_unlock(&e->mtx);
    if (e->loop_fd >= 0) { /* it ends its links and stops */
        uint64_t one = 1;
        if (write(e->loop_wake, &one, sizeof(one)) < 0)
            log_warn("link loop: cannot wake it: %s", strerror(errno));
    }
    wsock_listener_close(e->listener);
    pthread_join(e->acceptor, NULL);
    for (size_t i = 0; i < e->npeers; i++)
        if (e->peers[i].started)
            pthread_join(e->peers[i].sender, NULL);
    if (e->loop_fd >= 0) /* its descriptors stay until the handshake threads are joined */
        pthread_join(e->loop, NULL);
    pthread_mutex_lock(&e->mtx);
    for (size_t i = 0; i < e->npeers; i++)
        drop_queue(&e->peers[i]);
    while (e->ins != NULL) {
        eng_in *in = e->ins;
        e->ins = in->next;
        pthread_mutex_unlock(&e->mtx);
        pthread_join(in->thread, NULL);
        pthread_mutex_lock(&e->mtx);
        free(in);
    }
    pthread_mutex_unlock(&e->mtx);
    if (e->loop_fd >= 0) {
        close(e->loop_fd);
        close(e->loop_wake);
        e->loop_fd = e->loop_wake = -1;
    }
    wsock_listener_free(e->listener);
    e->listener = NULL;
}
