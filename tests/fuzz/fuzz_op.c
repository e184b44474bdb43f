/*
 * fuzz_op.c - worker/op.c, the operations' state machine, under orders of events and hostile
 * frames chosen by the fuzzer (tests/unit/opsim.h plays the workers around it).
 *
 * Input: a configuration byte (group shape, calls, faults allowed), then steps: a byte below
 * 0xe0 picks one of the enabled events (arrivals, deliveries, chunks, copies, returns,
 * deadlines, lost links, worker restarts, and with an odd number of faults one job kill: a
 * rank's job dying anywhere, its replacement's first call asking); 0xe0 and above injects a frame
 * no worker sent, built from the next bytes and passed through the real frame codec first, so that
 * only well-formed frames reach the machine (what the link's decoder lets through): any type, any
 * operation, epoch, ranks, counts, offsets, payloads. Checked: no crash or sanitizer report,
 * every call returns exactly once, counters stay in range, and while no hostile frame was
 * injected, every OK call received exactly its operation's data.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <msgpack.h>

#include "common/frame.h"
#include "common/log.h"
#include "opsim.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} input;

static uint8_t
take(input *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

static int64_t
pick_rank(uint8_t b, size_t n)
{
    return b < 0xf0 ? (int64_t)(b % n) : (int64_t)(b & 0x0f) - 2; /* now and then out of range */
}

/* hostile builds a frame from the input, encodes and decodes it, and delivers it */
static void
hostile(sim *S, input *in)
{
    static const frame_type types[] = {FRAME_READY, FRAME_SLICE, FRAME_ABORT, FRAME_DATA,
                                       FRAME_WHERE, FRAME_HERE,  FRAME_PROBE, FRAME_ALIVE};
    frame f = {.type = types[take(in) % 8]};
    int from = take(in) % (int)S->nw, to = take(in) % (int)S->nw;
    int64_t srcs[MAXN + 1], counts[MAXN + 1];
    uint8_t payload[64];
    uint64_t plen = 0;
    uint8_t b = take(in);

    if (from == to)
        to = (to + 1) % (int)S->nw;
    snprintf(f.id.group, sizeof(f.id.group), "%s", b & 0x80 ? "other" : "sim");
    f.id.epoch = 7 + (uint64_t)(int8_t)(take(in) % 3) - 1; /* 6, 7 or 8 */
    f.id.op = take(in) % 8;
    if (b & 0x40)
        f.id.op += (uint64_t)take(in) << 24;
    f.src = pick_rank(take(in), S->n);
    f.dst = pick_rank(take(in), S->n);
    f.dtype = A2A_INT64;
    switch (take(in) % 4) {
    case 0: f.count = 0; break;
    case 1: f.count = 3; break;
    case 2: f.count = 600; break;
    default: f.count = take(in);
    }
    if (f.src < 0 || f.dst < 0) {
        f.src = f.src < 0 ? 0 : f.src;
        f.dst = f.dst < 0 ? (int64_t)S->n + 1 : f.dst;
    }
    if (f.type == FRAME_READY) {
        f.n = take(in) % (MAXN + 1);
        for (size_t i = 0; i < f.n; i++) {
            srcs[i] = pick_rank(take(in), S->n);
            srcs[i] = srcs[i] < 0 ? (int64_t)S->n : srcs[i];
            counts[i] = take(in) % 2 ? 3 : 600;
        }
        f.srcs = srcs;
        f.counts = counts;
        f.cap = -1;
        if (take(in) % 2) { /* a row: right-sized, short or long; counts 0, 3, 600, big */
            uint8_t k = take(in);
            f.nrow = k % 3 == 0 ? S->n : 1 + k % (FRAME_ROW_MAX - 1);
            for (size_t i = 0; i < f.nrow; i++) {
                static const int64_t rc[] = {0, 3, 600, INT64_MAX / 2};
                f.row[i] = rc[take(in) % 4];
            }
            f.cap = take(in) % 3 == 0 ? -1 : (int64_t)take(in) * 10;
            for (size_t i = 0; i < f.n; i++)
                if (take(in) % 2)
                    counts[i] = FRAME_DISCOVER;
        }
    } else if (f.type == FRAME_SLICE && take(in) % 2) {
        plen = (uint64_t)(f.count > 0 && f.count <= 8 ? f.count : 1) * 8;
        for (size_t i = 0; i < plen; i++)
            payload[i] = take(in);
    } else if (f.type == FRAME_SLICE && take(in) % 2) { /* streams to a discoverer: its place */
        static const int64_t pc[] = {0, 1, 3, 600, INT64_MAX};
        f.has_place = 1;
        f.place = pc[take(in) % 5];
    } else if (f.type == FRAME_ABORT) {
        f.status = (a2a_status)(take(in) % 10);
        f.resync = take(in) % 3 == 0 ? take(in) : 0;
        snprintf(f.message, sizeof(f.message), "hostile");
    } else if (f.type == FRAME_HERE && take(in) % 2) {
        f.count = -1; /* an answer of a worker that knows nothing */
    } else if (f.type == FRAME_DATA) {
        f.offset = (uint64_t)take(in) * 8;
        plen = 8 * (1 + take(in) % 8);
        for (size_t i = 0; i < plen; i++)
            payload[i] = take(in);
    }
    /* through the codec: only what a link would decode reaches the machine */
    msgpack_sbuffer sb;
    frame g;
    char err[256];
    msgpack_sbuffer_init(&sb);
    if (frame_header_encode(&sb, &f) == 0 &&
        frame_header_decode(&g, (const uint8_t *)sb.data, sb.size, plen, err, sizeof(err)) == 0) {
        S->hostile = 1;
        S->faulted++;
        enqueue(S, from, to, &g, payload, (size_t)plen);
        frame_fini(&g);
    }
    msgpack_sbuffer_destroy(&sb);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("A2A_LOG_LEVEL", "error", 1); /* every failed operation logs a line at info */
    log_init("fuzz_op");
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int shapes[][MAXN] = {{0, 1, 0, 0}, {0, 0, 1, 0}, {0, 1, 2, 0}, {0, 0, 1, 2}};
    static const size_t sizes[] = {2, 3, 3, 4}, workers[] = {2, 2, 3, 3};
    input in = {data, size};
    static sim *S; /* one, reused: a sim is large */
    event ev[MAXEV];
    size_t steps = 0;

    if (size < 1)
        return 0;
    uint8_t cfg = take(&in);
    size_t shape = cfg % 4, K = 1 + (cfg >> 2) % MAXK;
    int faults = (cfg >> 4) % 4;
    if (S == NULL && (S = malloc(sizeof(*S))) == NULL)
        abort();
    sim_probe_all = data[size - 1] & 1; /* every call probes (op.h, "Probes"), or none does */
    sim_init(S, sizes[shape], workers[shape], shapes[shape], K, faults, cfg >> 6);
    S->kills = faults & 1;
    while (steps++ < MAXSTEPS && S->err[0] == '\0') {
        size_t ne = enabled(S, ev), progress = 0;
        for (size_t i = 0; i < ne; i++)
            progress += ev[i].type < EV_DEADLINE;
        if (progress == 0) {
            if (stuck_calls(S))
                continue;
            break;
        }
        uint8_t b = in.n > 0 ? take(&in) : 0;
        if (b >= 0xe0) {
            hostile(S, &in);
            continue;
        }
        fire(S, &ev[b % ne]);
    }
    if (S->err[0] == '\0' && steps < MAXSTEPS)
        check_end(S);
    if (S->err[0] != '\0' && strstr(S->err, "over ") == NULL && strstr(S->err, "hangs") == NULL) {
        fprintf(stderr, "fuzz_op: %s\n", S->err);
        abort();
    }
    sim_fini(S);
    return 0;
}
