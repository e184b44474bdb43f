/*
 * boundary_check.c - attacks on a worker's local socket (the job-to-worker
 * boundary) that test_security.sh runs against node-a; each mode exits 0
 * when the worker behaved as it must, 1 when not, 2 on bad usage. Every line
 * starts with "boundary_check MODE:". The token is proved by hand, as a job
 * would; ranks 0 and 1 are node-a's (no other job may hold them meanwhile).
 *
 *   fds SOCKET TOKEN            descriptors that are no memfd (a pipe, a file,
 *                               none), a memfd not sealed against shrinking, one
 *                               of another size than announced: all refused; a
 *                               good one mapped, and shrinking it fails (EPERM)
 *   ranks SOCKET TOKEN          rank 2 (node-b's) refused; rank 0 twice at once:
 *                               the second refused (ALREADY_EXISTS); free again at
 *                               once when the first connection closes
 *   creds SOCKET TOKEN          the worker's record of us is the kernel's (pid,
 *                               uid, also as another uid); a job id that states a
 *                               pid is not even decoded; the TCP API takes no memory
 *   memory SOCKET TOKEN API_URL a call naming memory it never handed over (our own
 *                               secret, elsewhere in this process) is refused and
 *                               nothing is read or written; handed-over memory works
 *   pid-reuse SOCKET TOKEN API_URL WORKER_PID
 *                               a job maps a secret and dies (SIGKILL); a new process
 *                               on its very pid (ns_last_pid) names the dead job's
 *                               address: refused, the secret never reaches it, and
 *                               the worker unmapped the dead job's memfd
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/lsock.h"
#include "common/shmchan.h"
#include "common/wire.h"
#include "server/rpc.h"

#define SOLO "boundary_check_solo" /* a group of world rank 0 alone */
#define PAIR                                                                            \
    "boundary_check_pair" /* world ranks 1 and 0, in that order: rank 0 is group rank 1 \
                           */
#define SECRET "boundary-check secret bytes 0123456789abcdef"

static const char *mode = "?";
static const char *sock_path;
static auth_key key;

static void
say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("boundary_check %s: ", mode);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

/* ---- a raw session ---- */

typedef struct {
    a2a_status st;
    char msg[1024];
    uint8_t body[4096];
    size_t len;
} reply;

static uint64_t next_id;

/* req sends method with body (and fd) and reads the reply; -1 when the connection broke. */
static int
req(int s, const char *method, const msgpack_sbuffer *body, int fd, reply *r)
{
    wire_request q = {.id = ++next_id, .timeout_ms = 10000};
    wire_reply rep;
    msgpack_sbuffer sb;
    uint8_t *buf;
    size_t len;
    int e;

    memset(r, 0, sizeof(*r));
    snprintf(q.method, sizeof(q.method), "%s", method);
    q.body = (const uint8_t *)body->data;
    q.body_len = body->size;
    msgpack_sbuffer_init(&sb);
    wire_request_encode(&sb, &q);
    e = lsock_send(s, sb.data, sb.size, fd, 10000);
    msgpack_sbuffer_destroy(&sb);
    if (e != 0 || lsock_recv(s, &buf, &len, 1u << 20, NULL, 70000) != 0)
        return -1;
    if (wire_reply_decode(&rep, buf, len, r->msg, sizeof(r->msg)) != 0) {
        free(buf);
        return -1;
    }
    r->st = rep.status;
    snprintf(r->msg, sizeof(r->msg), "%s", rep.message);
    r->len = rep.body_len < sizeof(r->body) ? rep.body_len : sizeof(r->body);
    memcpy(r->body, rep.body, r->len);
    free(buf);
    return 0;
}

/* session connects and proves the token; -1 on failure (said why). */
static int
session(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    uint8_t cn[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN], got[2][WIRE_BIN32];
    const uint8_t *out[1] = {cn};
    msgpack_sbuffer sb;
    reply r;
    int s;

    snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
    if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
        say("cannot connect to %s: %s", sock_path, strerror(errno));
        if (s >= 0)
            close(s);
        return -1;
    }
    auth_nonce(cn);
    msgpack_sbuffer_init(&sb);
    wire_bins_encode(&sb, 1, out);
    if (req(s, "AuthChallenge", &sb, -1, &r) != 0 || r.st != A2A_OK ||
        wire_bins_decode(got, 2, r.body, r.len, NULL, 0) != 0) {
        say("AuthChallenge failed: %s", r.msg);
        msgpack_sbuffer_destroy(&sb);
        close(s);
        return -1;
    }
    msgpack_sbuffer_destroy(&sb);
    auth_mac(&key, LSOCK_LOCAL_LABEL_CLIENT, got[0], AUTH_NONCE_LEN, cn, AUTH_NONCE_LEN, mac);
    out[0] = mac;
    msgpack_sbuffer_init(&sb);
    wire_bins_encode(&sb, 1, out);
    if (req(s, "AuthProve", &sb, -1, &r) != 0 || r.st != A2A_OK) {
        say("AuthProve failed: %s", r.msg);
        msgpack_sbuffer_destroy(&sb);
        close(s);
        return -1;
    }
    msgpack_sbuffer_destroy(&sb);
    return s;
}

static int
attach(int s, int64_t rank, reply *r, wire_attach_reply *ar)
{
    wire_job_id j = {.world_rank = rank};
    msgpack_sbuffer sb;
    int rc;
    msgpack_sbuffer_init(&sb);
    wire_job_id_encode(&sb, &j);
    rc = req(s, "Attach", &sb, -1, r);
    msgpack_sbuffer_destroy(&sb);
    if (rc == 0 && r->st == A2A_OK && ar != NULL &&
        wire_attach_reply_decode(ar, r->body, r->len, NULL, 0) != 0)
        return -1;
    return rc;
}

static int
map_buffer(int s, int fd, const void *addr, uint64_t len, reply *r)
{
    wire_buffer b = {.addr = (uint64_t)(uintptr_t)addr, .len = len};
    msgpack_sbuffer sb;
    int rc;
    msgpack_sbuffer_init(&sb);
    wire_buffer_encode(&sb, &b);
    rc = req(s, "MapBuffer", &sb, fd, r);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* memfd makes a memfd of len bytes named name, with the seals given (0: none). */
static int
memfd(const char *name, size_t len, int seals)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
        (seals != 0 && fcntl(fd, F_ADD_SEALS, seals) != 0)) {
        perror("memfd");
        exit(2);
    }
    return fd;
}

/* solo_call runs AllToAllV on the one-rank group: n int8 from send to recv (job addresses). */
static int
solo_call(int s, uint64_t send, uint64_t recv, int64_t n, reply *r)
{
    int64_t counts[4] = {n, 0, n, 0};
    wire_a2av a = {.dtype = A2A_INT8,
                   .timeout_ms = 10000,
                   .send_addr = send,
                   .send_len = n,
                   .recv_addr = recv,
                   .recv_len = n,
                   .n = 1,
                   .op_next = -1, /* the worker numbers each call: a raw client keeps none */
                   .counts = counts};
    msgpack_sbuffer sb;
    int rc;
    snprintf(a.group, sizeof(a.group), "%s", SOLO);
    msgpack_sbuffer_init(&sb);
    wire_a2av_encode(&sb, &a);
    rc = req(s, "AllToAllV", &sb, -1, r);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* stale_call runs a call on PAIR through a job channel (OpenChannel: the path where a job
 * copies its own slice), as world rank 0 (group rank 1), with self_copied saying it copied the
 * slice of group rank 0 to itself, as a job whose copy of the group is older than the group
 * would (its staging leaves that slice out: the worker must not send it on). r gets the
 * reply; -1 when the channel does not work at all. */
static int
stale_call(int s, uint64_t send, uint64_t recv, reply *r)
{
    int64_t counts[8] = {4, 4, 0, 4, 4, 4, 0, 4};
    wire_a2av a = {.dtype = A2A_INT8,
                   .timeout_ms = 3000,
                   .send_addr = send,
                   .send_len = 8,
                   .recv_addr = recv,
                   .recv_len = 8,
                   .n = 2,
                   .self_copied = 1, /* group rank 0: it is 1 */
                   .op_next = -1,
                   .counts = counts};
    wire_buffer w = {.len = SHMCHAN_SIZE};
    msgpack_sbuffer sb;
    int64_t next = -1;
    int fd = memfd("boundary-chan", SHMCHAN_SIZE, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    uint8_t *mem = mmap(NULL, SHMCHAN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

    if (mem == MAP_FAILED)
        return -1;
    shmchan_init(mem, SHMCHAN_SIZE);
    w.addr = (uint64_t)(uintptr_t)mem;
    msgpack_sbuffer_init(&sb);
    wire_buffer_encode(&sb, &w);
    if (req(s, "OpenChannel", &sb, fd, r) != 0 || r->st != A2A_OK) {
        say("OpenChannel: %s %s", a2a_status_name(r->st), r->msg);
        msgpack_sbuffer_destroy(&sb);
        return -1;
    }
    msgpack_sbuffer_destroy(&sb);
    snprintf(a.group, sizeof(a.group), "%s", PAIR);
    if (shmchan_req_write(mem, SHMCHAN_SIZE, 1, &a) != 0 ||
        !shmchan_cas(mem, SHMCHAN_IDLE, SHMCHAN_REQUEST, NULL))
        return -1;
    shmchan_ring(mem);
    for (int i = 0; i < 100 && shmchan_state(mem) == SHMCHAN_REQUEST; i++)
        shmchan_wait(mem, SHMCHAN_REQUEST, 100);
    r->msg[0] = '\0';
    if (shmchan_reply_read(mem, 1, &r->st, r->msg, sizeof(r->msg), &next) != 0)
        return -1;
    shmchan_close(mem);
    munmap(mem, SHMCHAN_SIZE);
    close(fd);
    return 0;
}

/* make_solo creates the one-rank group (and PAIR) through the worker's API. */
static int
make_solo(const char *api)
{
    rpc_security sec = {.key = &key};
    rpc_client *c = NULL;
    wire_job_id j = {.world_rank = 0};
    int64_t ranks[1] = {0};
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char err[1024];
    a2a_status st;

    if (rpc_client_alloc(&c, api, &sec, err, sizeof(err)) != A2A_OK) {
        say("rpc client: %s", err);
        return -1;
    }
    int64_t pair[2] = {1, 0};
    msgpack_sbuffer_init(&sb);
    wire_job_group_encode(&sb, &j, SOLO, 1, ranks);
    st = rpc_call(c, "CreateGroup", sb.data, sb.size, 10000, &rep, &replen, err, sizeof(err));
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    if (st != A2A_OK)
        say("CreateGroup %s: %s: %s", SOLO, a2a_status_name(st), err);
    msgpack_sbuffer_init(&sb);
    wire_job_group_encode(&sb, &j, PAIR, 2, pair);
    a2a_status pst =
        rpc_call(c, "CreateGroup", sb.data, sb.size, 10000, &rep, &replen, err, sizeof(err));
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    if (pst != A2A_OK) {
        say("CreateGroup %s: %s: %s", PAIR, a2a_status_name(pst), err);
        st = pst;
    }
    /* a call that needs the job's memory on the TCP API: refused, whatever it names */
    msgpack_sbuffer_init(&sb);
    wire_buffer b = {.addr = 4096, .len = 4096};
    wire_buffer_encode(&sb, &b);
    a2a_status m =
        rpc_call(c, "MapBuffer", sb.data, sb.size, 10000, &rep, &replen, err, sizeof(err));
    msgpack_sbuffer_destroy(&sb);
    free(rep);
    rpc_client_free(c);
    if (m != A2A_ERR_PERMISSION_DENIED) {
        say("MapBuffer on the TCP API was not refused: %s", a2a_status_name(m));
        return -1;
    }
    say("MapBuffer on the TCP API: PERMISSION_DENIED: %s", err);
    return st == A2A_OK ? 0 : -1;
}

/* ---- modes ---- */

static int
expect(const reply *r, a2a_status want, const char *needle, const char *what)
{
    if (r->st != want || (needle != NULL && strstr(r->msg, needle) == NULL)) {
        say("FAIL %s: got %s \"%s\", want %s%s%s", what, a2a_status_name(r->st), r->msg,
            a2a_status_name(want), needle ? " with " : "", needle ? needle : "");
        return 1;
    }
    say("%s: %s%s%s", what, a2a_status_name(r->st), r->st != A2A_OK ? ": " : "", r->msg);
    return 0;
}

static int
mode_fds(void)
{
    int s = session(), bad = 0, p[2], f;
    reply r;
    char tmp[] = "/tmp/boundary-check.XXXXXX";
    void *mem;

    if (s < 0 || attach(s, 0, &r, NULL) != 0 || expect(&r, A2A_OK, NULL, "attach rank 0"))
        return 1;
    mem = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    map_buffer(s, -1, mem, 65536, &r);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, "no descriptor", "MapBuffer without a descriptor");
    if (pipe(p) != 0 || (f = mkstemp(tmp)) < 0 || ftruncate(f, 65536) != 0)
        return 2;
    unlink(tmp);
    map_buffer(s, p[0], mem, 65536, &r);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, "no memfd", "MapBuffer of a pipe");
    map_buffer(s, f, mem, 65536, &r);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, "no memfd", "MapBuffer of a regular file");
    int m0 = memfd("boundary-unsealed", 65536, 0);
    map_buffer(s, m0, mem, 65536, &r);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, "F_SEAL_SHRINK", "MapBuffer of an unsealed memfd");
    if (ftruncate(m0, 4096) != 0) /* what the worker guards against: shrinking under it */
        bad |= 1;
    int m1 = memfd("boundary-sealed", 65536, F_SEAL_SHRINK);
    map_buffer(s, m1, mem, 1 << 20, &r);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, "not the 1048576 announced",
                  "MapBuffer announcing more than the memfd holds");
    map_buffer(s, m1, mem, 65536, &r);
    bad |= expect(&r, A2A_OK, NULL, "MapBuffer of a sealed memfd of the announced size");
    if (ftruncate(m1, 4096) == 0 || errno != EPERM) {
        say("FAIL the mapped memfd could be shrunk");
        bad = 1;
    } else {
        say("shrinking the mapped memfd: %s (the kernel refuses: F_SEAL_SHRINK)", strerror(errno));
    }
    wire_buffer b = {.len = 4096};
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    wire_buffer_encode(&sb, &b);
    req(s, "OpenChannel", &sb, p[1], &r);
    msgpack_sbuffer_destroy(&sb);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, NULL, "OpenChannel of a pipe");
    /* the session still serves */
    map_buffer(s, -1, (char *)mem + 65536 * 4, 65536, &r);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, NULL, "the session still answers");
    close(s);
    return bad;
}

static int
mode_ranks(void)
{
    int a = session(), b = session(), c, bad = 0;
    reply r;

    if (a < 0 || b < 0)
        return 1;
    attach(a, 2, &r, NULL);
    bad |= expect(&r, A2A_ERR_PERMISSION_DENIED, "not a rank of worker",
                  "attach rank 2 (node-b's) on node-a");
    attach(a, 0, &r, NULL);
    bad |= expect(&r, A2A_OK, NULL, "attach rank 0");
    attach(a, 1, &r, NULL);
    bad |= expect(&r, A2A_ERR_ALREADY_EXISTS, "one rank per connection",
                  "the same connection as rank 1 too");
    attach(b, 0, &r, NULL);
    bad |= expect(&r, A2A_ERR_ALREADY_EXISTS, "held by another live job",
                  "a second connection claims rank 0");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    close(a); /* the holder goes: its rank is free at once */
    attach(b, 0, &r, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    bad |= expect(&r, A2A_OK, NULL, "the second connection, once the first closed");
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    say("rank 0 was free %ld ms after its holder's connection closed", ms);
    bad |= ms > 500;
    if ((c = session()) < 0)
        return 1;
    attach(c, 0, &r, NULL);
    bad |= expect(&r, A2A_ERR_ALREADY_EXISTS, "held by another live job", "a third one meanwhile");
    close(b);
    close(c);
    return bad;
}

static int
mode_creds(void)
{
    int s = session(), bad = 0, p[2];
    wire_attach_reply ar;
    reply r;
    pid_t child;

    if (s < 0)
        return 1;
    /* a job id that states a pid (the old [rank, pid, addr, nonce, nonce]): not decoded */
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 5);
    msgpack_pack_int64(&pk, 0);
    msgpack_pack_int64(&pk, 1); /* "I am init" */
    msgpack_pack_uint64(&pk, 0x400000);
    msgpack_pack_uint64(&pk, 0);
    msgpack_pack_uint64(&pk, 0);
    req(s, "Attach", &sb, -1, &r);
    msgpack_sbuffer_destroy(&sb);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, NULL, "Attach stating pid 1");
    if (attach(s, 0, &r, &ar) != 0 || expect(&r, A2A_OK, NULL, "attach rank 0"))
        return 1;
    say("the worker's record: pid %lld uid %lld (we are pid %d uid %d)", (long long)ar.pid,
        (long long)ar.uid, (int)getpid(), (int)getuid());
    bad |= ar.pid != getpid() || ar.uid != getuid();
    close(s);
    if (getuid() != 0) {
        say("not root: the check as another uid is skipped");
        return bad;
    }
    /* another uid, no shared anything but the socket: the kernel's word again */
    if (pipe(p) != 0)
        return 2;
    if ((child = fork()) == 0) {
        int64_t out[3] = {-1, -1, -1};
        if (setgid(65534) == 0 && setuid(65534) == 0 && (s = session()) >= 0 &&
            attach(s, 1, &r, &ar) == 0 && r.st == A2A_OK) {
            out[0] = ar.pid;
            out[1] = ar.uid;
            out[2] = getpid();
        }
        if (write(p[1], out, sizeof(out)) != (ssize_t)sizeof(out))
            _exit(1);
        _exit(0);
    }
    int64_t got[3] = {-1, -1, -1};
    if (read(p[0], got, sizeof(got)) != (ssize_t)sizeof(got))
        bad = 1;
    waitpid(child, NULL, 0);
    say("as uid 65534: the worker's record: pid %lld uid %lld (the child is pid %lld)",
        (long long)got[0], (long long)got[1], (long long)got[2]);
    bad |= got[0] != got[2] || got[1] != 65534;
    return bad;
}

static int
mode_memory(const char *api)
{
    static char secret[4096] = SECRET; /* ours, never handed over */
    int s, bad = 0, fd;
    uint8_t *buf;
    reply r;

    if (make_solo(api) != 0 || (s = session()) < 0 || attach(s, 0, &r, NULL) != 0 ||
        expect(&r, A2A_OK, NULL, "attach rank 0"))
        return 1;
    fd = memfd("boundary-mine", 65536, F_SEAL_SHRINK);
    buf = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    memset(buf, 0, 65536);
    map_buffer(s, fd, buf, 65536, &r);
    bad |= expect(&r, A2A_OK, NULL, "MapBuffer of our memfd");
    /* send from memory we never handed over (it is ours, in this very process) */
    solo_call(s, (uint64_t)(uintptr_t)secret, (uint64_t)(uintptr_t)buf, 64, &r);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, "Bad address",
                  "AllToAllV from memory not handed over");
    if (memcmp(buf, SECRET, 16) == 0) {
        say("FAIL the worker read memory it was never given");
        bad = 1;
    }
    /* receive into memory we never handed over */
    memcpy(buf, "handed-over data", 16);
    solo_call(s, (uint64_t)(uintptr_t)buf, (uint64_t)(uintptr_t)secret, 64, &r);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, "Bad address",
                  "AllToAllV into memory not handed over");
    if (memcmp(secret, SECRET, sizeof(SECRET)) != 0) {
        say("FAIL the worker wrote memory it was never given");
        bad = 1;
    }
    /* a slice reaching past the end of the buffer handed over */
    solo_call(s, (uint64_t)(uintptr_t)buf + 65536 - 32, (uint64_t)(uintptr_t)buf, 64, &r);
    bad |= expect(&r, A2A_ERR_INVALID_ARGUMENT, "Bad address",
                  "AllToAllV reading past the handed-over buffer");
    /* and inside it: works */
    solo_call(s, (uint64_t)(uintptr_t)buf, (uint64_t)(uintptr_t)buf + 4096, 64, &r);
    bad |= expect(&r, A2A_OK, NULL, "AllToAllV inside the handed-over buffer");
    if (memcmp(buf + 4096, "handed-over data", 16) != 0) {
        say("FAIL the data did not arrive");
        bad = 1;
    }
    /* a self_copied naming another group rank than the caller's: the operation fails at once
     * (before: it waited for world rank 1 and would have sent it the slice the job left out) */
    if (stale_call(s, (uint64_t)(uintptr_t)buf, (uint64_t)(uintptr_t)buf + 8192, &r) != 0) {
        say("FAIL the job channel for the stale self_copied did not answer");
        bad = 1;
    }
    bad |= expect(&r, A2A_ERR_UNAVAILABLE,
                  "took itself for group rank 0 of group \"" PAIR "\", but it is group rank 1",
                  "AllToAllV with a stale self_copied");
    close(s);
    return bad;
}

static int
worker_maps(pid_t w, const char *name)
{
    char path[64], line[512];
    int n = 0;
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)w);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, name) != NULL;
    fclose(f);
    return n;
}

static int
mode_pid_reuse(const char *api, pid_t worker)
{
    int p[2], bad = 0, n;
    pid_t a, b;
    uint64_t addr = 0;
    reply r;

    if (make_solo(api) != 0 || pipe(p) != 0)
        return 1;
    if ((a = fork()) == 0) { /* the job that dies */
        int s = session(), fd = memfd("boundary-secret", 65536, F_SEAL_SHRINK);
        uint8_t *buf = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        memcpy(buf, SECRET, sizeof(SECRET));
        if (s < 0 || attach(s, 0, &r, NULL) != 0 || r.st != A2A_OK ||
            map_buffer(s, fd, buf, 65536, &r) != 0 || r.st != A2A_OK ||
            solo_call(s, (uint64_t)(uintptr_t)buf, (uint64_t)(uintptr_t)buf + 8192, 64, &r) != 0 ||
            r.st != A2A_OK)
            _exit(1);
        addr = (uint64_t)(uintptr_t)buf;
        if (write(p[1], &addr, sizeof(addr)) != (ssize_t)sizeof(addr))
            _exit(1);
        pause();
        _exit(0);
    }
    if (read(p[0], &addr, sizeof(addr)) != (ssize_t)sizeof(addr)) {
        say("FAIL the first job did not get going");
        return 1;
    }
    say("job A (pid %d) handed over its secret at 0x%llx; worker maps of it: %d", (int)a,
        (unsigned long long)addr, worker_maps(worker, "boundary-secret"));
    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    /* the next process gets A's pid when the kernel's last pid is set just below it */
    FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
    if (f != NULL) {
        fprintf(f, "%d", (int)a - 1);
        fclose(f);
    }
    if ((b = fork()) == 0) { /* the new process on the dead job's pid */
        int s, fd = memfd("boundary-new", 65536, F_SEAL_SHRINK), ok = 0;
        /* at the dead job's address: memory of ours that we never hand over */
        void *at = mmap((void *)(uintptr_t)addr, 65536, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        uint8_t *buf = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        say("B: at the dead job's address: %s",
            at == (void *)(uintptr_t)addr ? "plain memory of B, not handed over" : "nothing");
        memset(buf, 0, 65536);
        if ((s = session()) < 0 || attach(s, 0, &r, NULL) != 0 ||
            expect(&r, A2A_OK, NULL, "B: attach rank 0 (A's claim is gone)"))
            _exit(1);
        map_buffer(s, fd, buf, 65536, &r);
        ok |= expect(&r, A2A_OK, NULL, "B: MapBuffer of its own memfd");
        solo_call(s, addr, (uint64_t)(uintptr_t)buf, 64, &r);
        ok |= expect(&r, A2A_ERR_INVALID_ARGUMENT, "Bad address",
                     "B: AllToAllV from the dead job's address");
        if (memcmp(buf, SECRET, 16) == 0) {
            say("FAIL B was served the dead job's memory");
            ok = 1;
        }
        _exit(ok);
    }
    int st = 0;
    waitpid(b, &st, 0);
    say("job B is pid %d: %s", (int)b,
        b == a ? "the dead job's own pid" : "not A's pid (ns_last_pid not writable here)");
    bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    for (int i = 0; i < 40 && (n = worker_maps(worker, "boundary-secret")) > 0; i++)
        usleep(50000);
    say("worker maps of the dead job's memfd now: %d", n);
    bad |= n != 0;
    return bad;
}

int
main(int argc, char **argv)
{
    char err[512];
    int bad;

    if (argc < 4) {
        fprintf(stderr, "usage: boundary_check fds|ranks|creds SOCKET TOKEN_FILE\n"
                        "       boundary_check memory SOCKET TOKEN_FILE API_URL\n"
                        "       boundary_check pid-reuse SOCKET TOKEN_FILE API_URL WORKER_PID\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    mode = argv[1];
    sock_path = argv[2];
    if (auth_key_load(&key, argv[3], err, sizeof(err)) != A2A_OK) {
        fprintf(stderr, "boundary_check: %s\n", err);
        return 2;
    }
    if (strcmp(mode, "fds") == 0)
        bad = mode_fds();
    else if (strcmp(mode, "ranks") == 0)
        bad = mode_ranks();
    else if (strcmp(mode, "creds") == 0)
        bad = mode_creds();
    else if (strcmp(mode, "memory") == 0 && argc == 5)
        bad = mode_memory(argv[4]);
    else if (strcmp(mode, "pid-reuse") == 0 && argc == 6)
        bad = mode_pid_reuse(argv[4], (pid_t)atoi(argv[5]));
    else
        return 2;
    say(bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}
