/* shmchan.c - the job channel in shared memory: layout, request codec, futex. */
#include "shmchan.h"

#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "dtype.h"
#include "status.h"

_Static_assert(SHMCHAN_COUNTS_OFF % 8 == 0, "counts are aligned");
_Static_assert(SHMCHAN_SIZE >= SHMCHAN_COUNTS_OFF + 4 * SHMCHAN_MAX_N * sizeof(int64_t),
               "the counts of the largest group fit");

/* shmchan_cap returns how many ranks' counts a channel of len bytes holds. */
static size_t
shmchan_cap(size_t len)
{
    size_t n;
    if (len < SHMCHAN_COUNTS_OFF)
        return 0;
    n = (len - SHMCHAN_COUNTS_OFF) / (4 * sizeof(int64_t));
    return n < SHMCHAN_MAX_N ? n : SHMCHAN_MAX_N;
}

void
shmchan_init(void *mem, size_t len)
{
    shmchan_hdr *h = mem;
    memset(h, 0, sizeof(*h));
    h->version = SHMCHAN_VERSION;
    h->magic = SHMCHAN_MAGIC;
    h->size = len;
    __atomic_store_n(&h->state, SHMCHAN_IDLE, __ATOMIC_RELEASE);
}

int
shmchan_check(const void *mem, size_t len, char *err, size_t errlen)
{
    shmchan_hdr h;
    if (len < SHMCHAN_COUNTS_OFF)
        return msg_fail(err, errlen, "a channel of %zu bytes is smaller than its header (%zu)", len,
                        (size_t)SHMCHAN_COUNTS_OFF);
    memcpy(&h, mem, sizeof(h));
    if (h.magic != SHMCHAN_MAGIC || h.version != SHMCHAN_VERSION)
        return msg_fail(err, errlen, "not a channel of version %d (magic 0x%llx, version %u)",
                        SHMCHAN_VERSION, (unsigned long long)h.magic, h.version);
    if (h.size != len)
        return msg_fail(err, errlen, "the channel says it has %llu bytes, not %zu",
                        (unsigned long long)h.size, len);
    return 0;
}

int
shmchan_req_write(void *mem, size_t len, uint64_t seq, const wire_a2av *a)
{
    shmchan_hdr *h = mem;
    if (a->n == 0 || a->n > shmchan_cap(len))
        return -1;
    h->seq = seq;
    snprintf(h->group, sizeof(h->group), "%s", a->group);
    h->dtype = a->dtype;
    h->timeout_ms = a->timeout_ms;
    h->send_addr = a->send_addr;
    h->send_len = (int64_t)a->send_len;
    h->recv_addr = a->recv_addr;
    h->recv_len = (int64_t)a->recv_len;
    h->n = (int64_t)a->n;
    h->self_copied = a->self_copied;
    h->op_next = a->op_next;
    h->op_failed = a->op_failed;
    memcpy((uint8_t *)mem + SHMCHAN_COUNTS_OFF, a->counts, 4 * a->n * sizeof(int64_t));
    return 0;
}

/* req_check checks the header of a request, copied out of the channel already. */
static int
req_check(const shmchan_hdr *h, size_t cap, char *err, size_t errlen)
{
    size_t glen;
    if (h->state != SHMCHAN_REQUEST)
        return msg_fail(err, errlen, "channel state %u is not a request (%d)", h->state,
                        SHMCHAN_REQUEST);
    if (h->n <= 0 || (uint64_t)h->n > cap)
        return msg_fail(err, errlen, "n = %lld: a channel request holds 1 to %zu ranks",
                        (long long)h->n, cap);
    glen = strnlen(h->group, sizeof(h->group));
    if (glen == sizeof(h->group))
        return msg_fail(err, errlen, "the group name is not NUL-terminated within %zu bytes",
                        sizeof(h->group));
    if (cfg_check_group_name(h->group, glen, err, errlen) != 0)
        return -1;
    if (!dtype_valid(h->dtype))
        return msg_fail(err, errlen, "dtype %lld is not a data type (0..%d)", (long long)h->dtype,
                        A2A_DTYPE_COUNT - 1);
    if (h->timeout_ms < 0)
        return msg_fail(err, errlen, "timeout_ms is negative (%lld)", (long long)h->timeout_ms);
    if (h->self_copied < 0 || h->self_copied > h->n)
        return msg_fail(err, errlen, "self_copied = %lld is not 0..n (%lld)",
                        (long long)h->self_copied, (long long)h->n);
    if (h->op_next < WIRE_OP_NEXT_MIN || (h->op_failed != 0 && h->op_failed != 1))
        return msg_fail(err, errlen, "op_next = %lld or op_failed = %lld out of range",
                        (long long)h->op_next, (long long)h->op_failed);
    if (h->send_len < 0 || h->recv_len < 0)
        return msg_fail(err, errlen, "%s length is negative (%lld)",
                        h->send_len < 0 ? "send" : "recv",
                        (long long)(h->send_len < 0 ? h->send_len : h->recv_len));
    return 0;
}

int
shmchan_req_decode(wire_a2av *a, uint64_t *seq, int64_t *counts, size_t cap, const void *mem,
                   size_t len, char *err, size_t errlen)
{
    shmchan_hdr h;

    memset(a, 0, sizeof(*a));
    *seq = 0;
    if (len < SHMCHAN_COUNTS_OFF)
        return msg_fail(err, errlen, "a channel of %zu bytes holds no request", len);
    /* the state first (acquire: the request written before it is visible), then one copy
     * of the header; only the copy is looked at from here on */
    uint32_t state = __atomic_load_n((const uint32_t *)mem, __ATOMIC_ACQUIRE);
    memcpy(&h, mem, sizeof(h));
    h.state = state;
    *seq = h.seq;
    if (cap > shmchan_cap(len))
        cap = shmchan_cap(len);
    if (req_check(&h, cap, err, errlen) != 0)
        return -1;
    memcpy(counts, (const uint8_t *)mem + SHMCHAN_COUNTS_OFF, 4 * (size_t)h.n * sizeof(int64_t));
    memcpy(a->group, h.group, sizeof(a->group));
    a->dtype = h.dtype;
    a->timeout_ms = h.timeout_ms;
    a->send_addr = h.send_addr;
    a->send_len = (uint64_t)h.send_len;
    a->recv_addr = h.recv_addr;
    a->recv_len = (uint64_t)h.recv_len;
    a->n = (size_t)h.n;
    a->self_copied = h.self_copied;
    a->op_next = h.op_next;
    a->op_failed = h.op_failed;
    a->counts = counts;
    return 0;
}

void
shmchan_reply_write(void *mem, uint64_t seq, a2a_status st, const char *msg, int64_t next)
{
    shmchan_hdr *h = mem;
    h->status = (int32_t)st;
    h->reply_next = next;
    snprintf(h->message, sizeof(h->message), "%s", msg != NULL ? msg : "");
    h->reply_seq = seq;
}

void
shmchan_counts_write(void *mem, size_t len, size_t n, const int64_t *recv_counts)
{
    if (n == 0 || n > SHMCHAN_MAX_N || SHMCHAN_COUNTS_OFF + 4 * n * sizeof(int64_t) > len)
        return;
    memcpy((char *)mem + SHMCHAN_COUNTS_OFF + 2 * n * sizeof(int64_t), recv_counts,
           n * sizeof(int64_t));
}

int
shmchan_counts_read(const void *mem, size_t len, size_t n, int64_t *recv_counts)
{
    if (n == 0 || n > SHMCHAN_MAX_N || SHMCHAN_COUNTS_OFF + 4 * n * sizeof(int64_t) > len)
        return -1;
    memcpy(recv_counts, (const char *)mem + SHMCHAN_COUNTS_OFF + 2 * n * sizeof(int64_t),
           n * sizeof(int64_t));
    for (size_t i = 0; i < n; i++)
        if (recv_counts[i] < 0)
            return -1;
    return 0;
}

int
shmchan_reply_read(const void *mem, uint64_t seq, a2a_status *st, char *msg, size_t msglen,
                   int64_t *next)
{
    shmchan_hdr h;
    memcpy(&h, mem, sizeof(h));
    if (h.reply_seq != seq)
        return -1;
    *next = h.reply_next >= -1 ? h.reply_next : -1;
    h.message[sizeof(h.message) - 1] = '\0';
    *st = status_valid(h.status) ? (a2a_status)h.status : A2A_ERR_INTERNAL;
    snprintf(msg, msglen, "%s", h.message);
    return 0;
}

uint32_t
shmchan_state(const void *mem)
{
    return __atomic_load_n((const uint32_t *)mem, __ATOMIC_ACQUIRE);
}

int
shmchan_cas(void *mem, uint32_t from, uint32_t to, uint32_t *seen)
{
    uint32_t expected = from;
    int ok = __atomic_compare_exchange_n((uint32_t *)mem, &expected, to, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE);
    if (seen != NULL)
        *seen = expected;
    return ok;
}

void
shmchan_close(void *mem)
{
    __atomic_store_n((uint32_t *)mem, SHMCHAN_CLOSED, __ATOMIC_RELEASE);
    shmchan_wake(mem);
    shmchan_ring(mem);
}

/* futex_wait_ms sleeps while *word equals expected, at most timeout_ms (FUTEX_WAIT, not
 * _PRIVATE: the word lies in a mapping shared between processes). */
static void
futex_wait_ms(uint32_t *word, uint32_t expected, int64_t timeout_ms)
{
    struct timespec ts;
    if (timeout_ms <= 0)
        return;
    ts.tv_sec = (time_t)(timeout_ms / 1000);
    ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
    (void)syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

void
shmchan_wait(void *mem, uint32_t expected, int64_t timeout_ms)
{
    futex_wait_ms((uint32_t *)mem, expected, timeout_ms);
}

void
shmchan_wake(void *mem)
{
    (void)syscall(SYS_futex, (uint32_t *)mem, FUTEX_WAKE, 1, NULL, NULL, 0);
}

const uint32_t *
shmchan_bell_word(const void *mem)
{
    return &((const shmchan_hdr *)mem)->bell;
}

uint32_t
shmchan_bell(const void *mem)
{
    return __atomic_load_n(shmchan_bell_word(mem), __ATOMIC_SEQ_CST);
}

void
shmchan_ring(void *mem)
{
    uint32_t *bell = &((shmchan_hdr *)mem)->bell;
    __atomic_add_fetch(bell, 1, __ATOMIC_SEQ_CST); /* after the state it announces */
    (void)syscall(SYS_futex, bell, FUTEX_WAKE, 1, NULL, NULL, 0);
}

void
shmchan_bell_wait(void *mem, uint32_t seen, int64_t timeout_ms)
{
    futex_wait_ms(&((shmchan_hdr *)mem)->bell, seen, timeout_ms);
}

int
shmchan_open_reply_encode(msgpack_sbuffer *sb, int64_t worker_pid)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    return msgpack_pack_array(&pk, 1) || msgpack_pack_int64(&pk, worker_pid) ? -1 : 0;
}

int
shmchan_open_reply_decode(int64_t *worker_pid, const uint8_t *buf, size_t len, char *err,
                          size_t errlen)
{
    msgpack_zone zone;
    msgpack_object root;
    int rc = -1;

    *worker_pid = 0;
    msgpack_zone_init(&zone, 256);
    if (wire_parse(&root, &zone, buf, len, err, errlen) == 0 &&
        wire_array(&root, 1, 1, "OpenChannel reply", err, errlen) == 0 &&
        wire_i64(worker_pid, &root.via.array.ptr[0], "pid", err, errlen) == 0)
        rc = *worker_pid > 0 ? 0 : msg_fail(err, errlen, "worker pid %lld", (long long)*worker_pid);
    msgpack_zone_destroy(&zone);
    return rc;
}
