/*
 * fuzz_chan.c - libFuzzer target for the job channel's decoders of
 * common/shmchan.c. The input is a channel as a job may leave it (header and
 * counts, any length): the request decoder runs on it in place (so that a
 * read past its end is caught) and on a full-size copy. A request that
 * decodes must satisfy the checks the worker relies on, and written again
 * into a fresh channel it must decode to the same call (abort() if not). The
 * input is also tried as an OpenChannel reply.
 */
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/shmchan.h"
#include "fuzz.h"

static char err[1024];
static int64_t counts[4 * SHMCHAN_MAX_N], again_counts[4 * SHMCHAN_MAX_N];
static uint8_t chan[SHMCHAN_SIZE], fresh[SHMCHAN_SIZE];

/* fuzz_request decodes the channel of len bytes at mem; what decodes must round-trip. */
static void
fuzz_request(const void *mem, size_t len, size_t cap)
{
    wire_a2av a, b;
    uint64_t seq, seq2;

    if (shmchan_req_decode(&a, &seq, counts, cap, mem, len, err, sizeof(err)) != 0) {
        CHECK(a.counts == NULL && a.n == 0);
        CHECK(strlen(err) > 0);
        return;
    }
    CHECK(a.n >= 1 && a.n <= cap && a.n <= SHMCHAN_MAX_N);
    CHECK(SHMCHAN_COUNTS_OFF + 4 * a.n * sizeof(int64_t) <= len);
    CHECK(a.counts == counts);
    CHECK(strlen(a.group) >= 1 && strlen(a.group) <= A2A_GROUP_NAME_MAX);
    CHECK(dtype_valid(a.dtype) && a.timeout_ms >= 0);
    CHECK(a.self_copied >= 0 && a.self_copied <= (int64_t)a.n);
    CHECK(a.op_next >= WIRE_OP_NEXT_MIN && (a.op_failed == 0 || a.op_failed == 1));
    CHECK(a.send_len <= INT64_MAX && a.recv_len <= INT64_MAX);
    shmchan_init(fresh, sizeof(fresh));
    CHECK(shmchan_req_write(fresh, sizeof(fresh), seq, &a) == 0);
    CHECK(shmchan_cas(fresh, SHMCHAN_IDLE, SHMCHAN_REQUEST, NULL));
    CHECK(shmchan_req_decode(&b, &seq2, again_counts, cap, fresh, sizeof(fresh), err,
                             sizeof(err)) == 0);
    CHECK(seq == seq2 && strcmp(a.group, b.group) == 0 && a.dtype == b.dtype &&
          a.timeout_ms == b.timeout_ms && a.send_addr == b.send_addr && a.send_len == b.send_len &&
          a.recv_addr == b.recv_addr && a.recv_len == b.recv_len && a.n == b.n &&
          a.self_copied == b.self_copied && a.op_next == b.op_next && a.op_failed == b.op_failed);
    CHECK(memcmp(a.counts, b.counts, 4 * a.n * sizeof(int64_t)) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t pid;
    msgpack_sbuffer sb;

    fuzz_request(data, size, SHMCHAN_MAX_N);
    fuzz_request(data, size, 3);
    memset(chan, 0, sizeof(chan));
    memcpy(chan, data, size < sizeof(chan) ? size : sizeof(chan));
    fuzz_request(chan, sizeof(chan), SHMCHAN_MAX_N);
    (void)shmchan_check(data, size, err, sizeof(err));

    if (shmchan_open_reply_decode(&pid, data, size, err, sizeof(err)) == 0) {
        int64_t pid2;
        CHECK(pid > 0);
        msgpack_sbuffer_init(&sb);
        CHECK(shmchan_open_reply_encode(&sb, pid) == 0);
        CHECK(shmchan_open_reply_decode(&pid2, (const uint8_t *)sb.data, sb.size, err,
                                        sizeof(err)) == 0);
        CHECK(pid == pid2);
        msgpack_sbuffer_destroy(&sb);
    }
    return 0;
}
