/*
 * test_shmchan.c - the job channel's layout and codec (common/shmchan.c):
 * a request written by the job decodes to the same call; every malformed
 * field (state, n, group name, dtype, lengths, timeout) is refused with a
 * message naming it; the decoded call no longer depends on the shared
 * memory; replies count only for their request; the futex wakes a waiter in
 * another process.
 */
#include "cu_main.h"
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/shmchan.h"

static uint8_t *mem;                      /* one channel, SHMCHAN_SIZE bytes */
static int64_t counts[4 * SHMCHAN_MAX_N]; /* the decoder's private copy */
static char err[1024];

static shmchan_hdr *
hdr(void)
{
    return (shmchan_hdr *)mem;
}

/* put_request writes a valid request of n ranks (each sends and receives 1 int32) as REQUEST. */
static void
put_request(size_t n, uint64_t seq)
{
    int64_t *c = calloc(4 * n, sizeof(int64_t));
    wire_a2av a = {.dtype = A2A_INT32,
                   .timeout_ms = 2500,
                   .send_addr = 0x1000,
                   .send_len = n,
                   .recv_addr = 0x9000,
                   .recv_len = n,
                   .n = n,
                   .counts = c};
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    snprintf(a.group, sizeof(a.group), "team-%zu", n);
    for (size_t i = 0; i < n; i++) {
        c[i] = 1;
        c[n + i] = (int64_t)i;
        c[2 * n + i] = 1;
        c[3 * n + i] = (int64_t)(n - 1 - i);
    }
    shmchan_init(mem, SHMCHAN_SIZE);
    CU_ASSERT_EQUAL(shmchan_req_write(mem, SHMCHAN_SIZE, seq, &a), 0);
    CU_ASSERT(shmchan_cas(mem, SHMCHAN_IDLE, SHMCHAN_REQUEST, NULL));
    free(c);
}

/* refused decodes the channel (len bytes) and expects a refusal whose message holds `what`. */
static void
refused(size_t len, const char *what)
{
    wire_a2av a;
    uint64_t seq;
    err[0] = '\0';
    CU_ASSERT_EQUAL(shmchan_req_decode(&a, &seq, counts, SHMCHAN_MAX_N, mem, len, err, sizeof(err)),
                    -1);
    CU_ASSERT_PTR_NULL(a.counts);
    if (strstr(err, what) == NULL) {
        fprintf(stderr, "\nmessage \"%s\" does not contain \"%s\"\n", err, what);
        CU_FAIL("message does not name the field");
    }
}

static void
test_roundtrip(void)
{
    wire_a2av a;
    uint64_t seq = 0;
    put_request(5, 77);
    CU_ASSERT_EQUAL_FATAL(
        shmchan_req_decode(&a, &seq, counts, SHMCHAN_MAX_N, mem, SHMCHAN_SIZE, err, sizeof(err)),
        0);
    CU_ASSERT_EQUAL(seq, 77);
    CU_ASSERT_STRING_EQUAL(a.group, "team-5");
    CU_ASSERT_EQUAL(a.dtype, A2A_INT32);
    CU_ASSERT_EQUAL(a.timeout_ms, 2500);
    CU_ASSERT_EQUAL(a.send_addr, 0x1000);
    CU_ASSERT_EQUAL(a.send_len, 5);
    CU_ASSERT_EQUAL(a.recv_addr, 0x9000);
    CU_ASSERT_EQUAL(a.recv_len, 5);
    CU_ASSERT_EQUAL(a.n, 5);
    CU_ASSERT_PTR_EQUAL(a.counts, counts);
    CU_ASSERT_EQUAL(a.counts[0], 1);
    CU_ASSERT_EQUAL(a.counts[5 + 4], 4);
    CU_ASSERT_EQUAL(a.counts[15 + 0], 4);
    CU_ASSERT_PTR_NULL(a.job.sess);
}

static void
test_largest_group(void)
{
    wire_a2av a;
    uint64_t seq;
    put_request(SHMCHAN_MAX_N, 1);
    CU_ASSERT_EQUAL(
        shmchan_req_decode(&a, &seq, counts, SHMCHAN_MAX_N, mem, SHMCHAN_SIZE, err, sizeof(err)),
        0);
    CU_ASSERT_EQUAL(a.n, SHMCHAN_MAX_N);
    CU_ASSERT_EQUAL(a.counts[4 * SHMCHAN_MAX_N - 1], 0);
    CU_ASSERT_EQUAL(a.counts[4 * SHMCHAN_MAX_N - 2], 1);
}

/* the job changes the channel after the decoder copied it: the call stays as it was */
static void
test_copy_before_use(void)
{
    wire_a2av a;
    uint64_t seq;
    put_request(3, 9);
    CU_ASSERT_EQUAL_FATAL(
        shmchan_req_decode(&a, &seq, counts, SHMCHAN_MAX_N, mem, SHMCHAN_SIZE, err, sizeof(err)),
        0);
    memset(mem + SHMCHAN_COUNTS_OFF, 0xff, 4 * 3 * sizeof(int64_t));
    hdr()->n = 1000000;
    memset(hdr()->group, 'x', sizeof(hdr()->group));
    CU_ASSERT_EQUAL(a.n, 3);
    CU_ASSERT_STRING_EQUAL(a.group, "team-3");
    CU_ASSERT_EQUAL(a.counts[0], 1);
    CU_ASSERT_EQUAL(a.counts[3 + 2], 2);
}

static void
test_n_too_large(void)
{
    put_request(4, 1);
    hdr()->n = SHMCHAN_MAX_N + 1;
    refused(SHMCHAN_SIZE, "n = 1025");
    hdr()->n = INT64_MAX;
    refused(SHMCHAN_SIZE, "n = 9223372036854775807");
    /* a channel smaller than the standard one holds fewer ranks */
    hdr()->n = 11;
    refused(SHMCHAN_COUNTS_OFF + 10 * 4 * sizeof(int64_t), "1 to 10 ranks");
}

static void
test_n_too_large_for_cap(void)
{
    wire_a2av a;
    uint64_t seq;
    put_request(8, 1);
    CU_ASSERT_EQUAL(shmchan_req_decode(&a, &seq, counts, 7, mem, SHMCHAN_SIZE, err, sizeof(err)),
                    -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "n = 8"));
}

static void
test_n_zero_or_negative(void)
{
    put_request(4, 1);
    hdr()->n = 0;
    refused(SHMCHAN_SIZE, "n = 0");
    hdr()->n = -3;
    refused(SHMCHAN_SIZE, "n = -3");
    hdr()->n = INT64_MIN;
    refused(SHMCHAN_SIZE, "n = -9223372036854775808");
}

static void
test_group_unterminated(void)
{
    put_request(2, 1);
    memset(hdr()->group, 'g', sizeof(hdr()->group));
    refused(SHMCHAN_SIZE, "not NUL-terminated");
}

static void
test_group_invalid(void)
{
    put_request(2, 1);
    memset(hdr()->group, 0, sizeof(hdr()->group));
    refused(SHMCHAN_SIZE, "group");
    memcpy(hdr()->group, "bad\nname", 9);
    refused(SHMCHAN_SIZE, "group");
}

static void
test_negative_lengths(void)
{
    put_request(2, 1);
    hdr()->send_len = -1;
    refused(SHMCHAN_SIZE, "send length is negative (-1)");
    hdr()->send_len = 2;
    hdr()->recv_len = INT64_MIN;
    refused(SHMCHAN_SIZE, "recv length is negative");
}

static void
test_bad_dtype(void)
{
    static const int64_t bad[] = {-1, 12, 13, INT64_MAX, INT64_MIN};
    put_request(2, 1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[64];
        hdr()->dtype = bad[i];
        snprintf(want, sizeof(want), "dtype %lld", (long long)bad[i]);
        refused(SHMCHAN_SIZE, want);
    }
}

static void
test_negative_timeout(void)
{
    put_request(2, 1);
    hdr()->timeout_ms = -5;
    refused(SHMCHAN_SIZE, "timeout_ms is negative (-5)");
}

/* self_copied names the job's own rank (1-based) or is 0; it survives the round trip */
static void
test_self_copied(void)
{
    wire_a2av a;
    uint64_t seq;
    put_request(3, 1);
    hdr()->self_copied = 3;
    CU_ASSERT_EQUAL(
        shmchan_req_decode(&a, &seq, counts, SHMCHAN_MAX_N, mem, SHMCHAN_SIZE, err, sizeof(err)),
        0);
    CU_ASSERT_EQUAL(a.self_copied, 3);
    put_request(3, 1);
    hdr()->self_copied = 4;
    refused(SHMCHAN_SIZE, "self_copied = 4 is not 0..n (3)");
    put_request(3, 1);
    hdr()->self_copied = -1;
    refused(SHMCHAN_SIZE, "self_copied = -1");
}

static void
test_garbage_state(void)
{
    static const uint32_t states[] = {SHMCHAN_IDLE, SHMCHAN_REPLY, SHMCHAN_CLOSED, 4, 0xdeadbeef};
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        char want[64];
        put_request(2, 1);
        hdr()->state = states[i];
        snprintf(want, sizeof(want), "state %u", states[i]);
        refused(SHMCHAN_SIZE, want);
    }
}

static void
test_short_channel(void)
{
    uint64_t seq = 5;
    wire_a2av a;
    put_request(1, 3);
    CU_ASSERT_EQUAL(shmchan_req_decode(&a, &seq, counts, SHMCHAN_MAX_N, mem, SHMCHAN_COUNTS_OFF - 1,
                                       err, sizeof(err)),
                    -1);
    CU_ASSERT_EQUAL(seq, 0);
    CU_ASSERT_EQUAL(shmchan_check(mem, SHMCHAN_COUNTS_OFF - 1, err, sizeof(err)), -1);
}

static void
test_check(void)
{
    shmchan_init(mem, SHMCHAN_SIZE);
    CU_ASSERT_EQUAL(shmchan_check(mem, SHMCHAN_SIZE, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(shmchan_check(mem, SHMCHAN_SIZE - 4096, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bytes"));
    hdr()->version = SHMCHAN_VERSION + 1;
    CU_ASSERT_EQUAL(shmchan_check(mem, SHMCHAN_SIZE, err, sizeof(err)), -1);
    shmchan_init(mem, SHMCHAN_SIZE);
    hdr()->magic ^= 1;
    CU_ASSERT_EQUAL(shmchan_check(mem, SHMCHAN_SIZE, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "magic"));
}

static void
test_write_refuses_big_n(void)
{
    int64_t c[4] = {0};
    wire_a2av a = {.group = "g", .n = SHMCHAN_MAX_N + 1, .counts = c};
    shmchan_init(mem, SHMCHAN_SIZE);
    CU_ASSERT_EQUAL(shmchan_req_write(mem, SHMCHAN_SIZE, 1, &a), -1);
    a.n = 0;
    CU_ASSERT_EQUAL(shmchan_req_write(mem, SHMCHAN_SIZE, 1, &a), -1);
}

static void
test_reply(void)
{
    char msg[SHMCHAN_MSG_MAX];
    a2a_status st = A2A_OK;
    int64_t next = 0;
    shmchan_init(mem, SHMCHAN_SIZE);
    CU_ASSERT_EQUAL(shmchan_reply_read(mem, 1, &st, msg, sizeof(msg), &next), -1); /* none yet */
    shmchan_reply_write(mem, 6, A2A_ERR_COUNT_MISMATCH, "rank 0 sends 3 int16 to rank 1", 42);
    CU_ASSERT_EQUAL(shmchan_reply_read(mem, 5, &st, msg, sizeof(msg), &next), -1);
    CU_ASSERT_EQUAL_FATAL(shmchan_reply_read(mem, 6, &st, msg, sizeof(msg), &next), 0);
    CU_ASSERT_EQUAL(st, A2A_ERR_COUNT_MISMATCH);
    CU_ASSERT_STRING_EQUAL(msg, "rank 0 sends 3 int16 to rank 1");
    CU_ASSERT_EQUAL(next, 42); /* the number of the rank's next call */
    /* a garbage status, next number and an unterminated message stay bounded */
    hdr()->status = 99;
    hdr()->reply_next = -7;
    memset(hdr()->message, 'm', sizeof(hdr()->message));
    CU_ASSERT_EQUAL_FATAL(shmchan_reply_read(mem, 6, &st, msg, sizeof(msg), &next), 0);
    CU_ASSERT_EQUAL(st, A2A_ERR_INTERNAL);
    CU_ASSERT_EQUAL(next, -1);
    CU_ASSERT_EQUAL(strlen(msg), SHMCHAN_MSG_MAX - 1);
}

/* op_next is a number, or -1 - k (a new job's call after k unnumbered ones) down to
 * WIRE_OP_NEXT_MIN; op_failed 0 or 1; both survive the round trip */
static void
test_op_number(void)
{
    wire_a2av a;
    uint64_t seq;
    put_request(3, 1);
    hdr()->op_next = 17;
    hdr()->op_failed = 1;
    CU_ASSERT_EQUAL_FATAL(
        shmchan_req_decode(&a, &seq, counts, SHMCHAN_MAX_N, mem, SHMCHAN_SIZE, err, sizeof(err)),
        0);
    CU_ASSERT_EQUAL(a.op_next, 17);
    CU_ASSERT_EQUAL(a.op_failed, 1);
    put_request(3, 1);
    hdr()->op_next = -3;
    CU_ASSERT_EQUAL_FATAL(
        shmchan_req_decode(&a, &seq, counts, SHMCHAN_MAX_N, mem, SHMCHAN_SIZE, err, sizeof(err)),
        0);
    CU_ASSERT_EQUAL(a.op_next, -3);
    put_request(3, 1);
    hdr()->op_next = WIRE_OP_NEXT_MIN - 1;
    refused(SHMCHAN_SIZE, "op_next = -1073741825");
    put_request(3, 1);
    hdr()->op_failed = 2;
    refused(SHMCHAN_SIZE, "op_failed = 2 out of range");
}

static void
test_open_reply(void)
{
    msgpack_sbuffer sb;
    int64_t pid = 0;
    static const uint8_t not_array[] = {0x05}, two[] = {0x92, 0x01, 0x02}, neg[] = {0x91, 0xff};
    msgpack_sbuffer_init(&sb);
    CU_ASSERT_EQUAL(shmchan_open_reply_encode(&sb, 4242), 0);
    CU_ASSERT_EQUAL(
        shmchan_open_reply_decode(&pid, (const uint8_t *)sb.data, sb.size, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(pid, 4242);
    msgpack_sbuffer_destroy(&sb);
    CU_ASSERT_EQUAL(shmchan_open_reply_decode(&pid, not_array, 1, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(shmchan_open_reply_decode(&pid, two, 3, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(shmchan_open_reply_decode(&pid, neg, 2, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(shmchan_open_reply_decode(&pid, NULL, 0, err, sizeof(err)), -1);
}

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* the futex crosses processes: a child's REQUEST + wake ends the parent's 5 s wait at once */
static void
test_futex_between_processes(void)
{
    uint8_t *shared =
        mmap(NULL, SHMCHAN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int64_t t0, took;
    int status = 0;
    pid_t child;

    CU_ASSERT_FATAL(shared != MAP_FAILED);
    shmchan_init(shared, SHMCHAN_SIZE);
    t0 = now_ms();
    shmchan_wait(shared, SHMCHAN_IDLE, 150); /* nobody wakes it: the timeout ends it */
    took = now_ms() - t0;
    CU_ASSERT(took >= 100 && took < 2000);
    if ((child = fork()) == 0) {
        usleep(200000);
        shmchan_cas(shared, SHMCHAN_IDLE, SHMCHAN_REQUEST, NULL);
        shmchan_wake(shared);
        _exit(0);
    }
    CU_ASSERT_FATAL(child > 0);
    t0 = now_ms();
    while (shmchan_state(shared) == SHMCHAN_IDLE && now_ms() - t0 < 5000)
        shmchan_wait(shared, SHMCHAN_IDLE, 5000);
    took = now_ms() - t0;
    CU_ASSERT_EQUAL(shmchan_state(shared), SHMCHAN_REQUEST);
    CU_ASSERT(took < 2000);
    waitpid(child, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    t0 = now_ms();
    shmchan_wait(shared, SHMCHAN_IDLE, 3000); /* the state differs: no sleep at all */
    CU_ASSERT(now_ms() - t0 < 1000);
    munmap(shared, SHMCHAN_SIZE);
}

/* bell_change waits (at most 5 s) for the doorbell to leave b, as the worker's thread does;
 * the ms it took */
static int64_t
bell_change(uint8_t *shared, uint32_t b)
{
    int64_t t0 = now_ms();
    while (shmchan_bell(shared) == b && now_ms() - t0 < 5000)
        shmchan_bell_wait(shared, b, 5000);
    return now_ms() - t0;
}

/* the doorbell: the job's ring (another process) ends the worker's bell wait at once; the
 * worker's wake of the state word (its reply, for the job) does not end it; a close rings it */
static void
test_doorbell(void)
{
    uint8_t *shared =
        mmap(NULL, SHMCHAN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int64_t t0, took;
    int status = 0;
    uint32_t b;
    pid_t child;

    CU_ASSERT_FATAL(shared != MAP_FAILED);
    shmchan_init(shared, SHMCHAN_SIZE);
    b = shmchan_bell(shared);
    CU_ASSERT_EQUAL(b, 0);
    CU_ASSERT_PTR_EQUAL(shmchan_bell_word(shared), &((shmchan_hdr *)shared)->bell);
    if ((child = fork()) == 0) {
        usleep(100000);
        shmchan_wake(shared); /* the state word's sleeper is the job: not this wait */
        usleep(200000);
        shmchan_cas(shared, SHMCHAN_IDLE, SHMCHAN_REQUEST, NULL);
        shmchan_ring(shared);
        _exit(0);
    }
    CU_ASSERT_FATAL(child > 0);
    took = bell_change(shared, b);
    CU_ASSERT_EQUAL(shmchan_bell(shared), b + 1);
    CU_ASSERT_EQUAL(shmchan_state(shared), SHMCHAN_REQUEST); /* the state before the ring */
    CU_ASSERT(took >= 250 && took < 2500);                   /* the ring ended it, not the wake */
    waitpid(child, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    t0 = now_ms();
    shmchan_bell_wait(shared, b, 3000); /* the bell differs: no sleep at all */
    CU_ASSERT(now_ms() - t0 < 1000);
    b = shmchan_bell(shared);
    if ((child = fork()) == 0) {
        usleep(100000);
        shmchan_close(shared); /* the job's close wakes the worker's thread too */
        _exit(0);
    }
    CU_ASSERT_FATAL(child > 0);
    CU_ASSERT(bell_change(shared, b) < 2500);
    CU_ASSERT_EQUAL(shmchan_state(shared), SHMCHAN_CLOSED);
    waitpid(child, &status, 0);
    munmap(shared, SHMCHAN_SIZE);
}

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"request round trip", test_roundtrip},
        {"largest group", test_largest_group},
        {"decoded call is a private copy", test_copy_before_use},
        {"n too large for the channel", test_n_too_large},
        {"n too large for the caller's buffer", test_n_too_large_for_cap},
        {"n zero or negative", test_n_zero_or_negative},
        {"group name not NUL-terminated", test_group_unterminated},
        {"group name invalid", test_group_invalid},
        {"negative lengths", test_negative_lengths},
        {"bad dtype", test_bad_dtype},
        {"negative timeout", test_negative_timeout},
        {"self_copied", test_self_copied},
        {"operation number", test_op_number},
        {"garbage state", test_garbage_state},
        {"channel shorter than its header", test_short_channel},
        {"magic, version and size", test_check},
        {"writer refuses n it cannot hold", test_write_refuses_big_n},
        {"reply for its request only", test_reply},
        {"OpenChannel reply", test_open_reply},
        {"futex between processes", test_futex_between_processes},
        {"doorbell", test_doorbell},
    };
    int rc;
    if ((mem = aligned_alloc(4096, SHMCHAN_SIZE)) == NULL)
        return 2;
    rc = cu_main("shmchan", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
    free(mem);
    return rc;
}
