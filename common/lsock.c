/* lsock.c - length-prefixed frames with an optional descriptor over a Unix stream socket. */
#include "lsock.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t
lsock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* lsock_wait waits until sock is ready for events, at most until deadline (< 0: for ever). */
static int
lsock_wait(int sock, short events, int64_t deadline)
{
    struct pollfd p = {.fd = sock, .events = events};
    for (;;) {
        int64_t left = deadline < 0 ? -1 : deadline - lsock_now_ms();
        if (deadline >= 0 && left <= 0)
            return ETIMEDOUT;
        int r = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return errno;
    }
}

int
lsock_send(int sock, const void *buf, size_t len, int fd, int64_t timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? -1 : lsock_now_ms() + timeout_ms;
    uint32_t hdr = (uint32_t)len;
    size_t done = 0, total = sizeof(hdr) + len;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;

    if (len > UINT32_MAX)
        return EMSGSIZE;
    while (done < total) {
        struct iovec iov[2];
        struct msghdr m = {0};
        int n = 0;
        if (done < sizeof(hdr))
            iov[n++] = (struct iovec){(char *)&hdr + done, sizeof(hdr) - done};
        size_t off = done > sizeof(hdr) ? done - sizeof(hdr) : 0;
        if (len > off)
            iov[n++] = (struct iovec){(char *)buf + off, len - off};
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)n;
        if (done == 0 && fd >= 0) { /* the descriptor goes with the first byte */
            memset(&u, 0, sizeof(u));
            m.msg_control = u.buf;
            m.msg_controllen = sizeof(u.buf);
            struct cmsghdr *c = CMSG_FIRSTHDR(&m);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        ssize_t r = sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0) {
            done += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int e = lsock_wait(sock, POLLOUT, deadline);
            if (e != 0)
                return e;
            continue;
        }
        return r < 0 ? errno : EPIPE;
    }
    return 0;
}

/* lsock_take keeps the first descriptor of m in *fd (or closes it) and closes any other. */
static void
lsock_take(struct msghdr *m, int *fd)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c != NULL; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (fd != NULL && *fd < 0)
                *fd = f;
            else
                close(f);
        }
    }
}

/* lsock_read reads exactly len bytes (with descriptors into *fd at the first read). */
static int
lsock_read(int sock, void *buf, size_t len, int *fd, int first, int64_t deadline)
{
    size_t done = 0;
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } u;

    while (done < len) {
        struct iovec iov = {(char *)buf + done, len - done};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
        if (first) {
            m.msg_control = u.buf;
            m.msg_controllen = sizeof(u.buf);
        }
        ssize_t r = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r > 0) {
            if (first)
                lsock_take(&m, fd);
            first = 0;
            done += (size_t)r;
            continue;
        }
        if (r == 0)
            return ECONNRESET;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int e = lsock_wait(sock, POLLIN, deadline);
            if (e == ETIMEDOUT && (done > 0 || !first))
                return EIO; /* within a frame: the stream is out of step */
            if (e != 0)
                return e;
            continue;
        }
        return errno;
    }
    return 0;
}

int
lsock_recv(int sock, uint8_t **buf, size_t *len, size_t max, int *fd, int64_t timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? -1 : lsock_now_ms() + timeout_ms;
    int got = -1, e;
    uint32_t hdr;
    uint8_t *b;

    *buf = NULL;
    *len = 0;
    if (fd != NULL)
        *fd = -1;
    if ((e = lsock_read(sock, &hdr, sizeof(hdr), &got, 1, deadline)) != 0)
        goto fail;
    if (hdr > max) {
        e = EMSGSIZE;
        goto fail;
    }
    if ((b = malloc(hdr > 0 ? hdr : 1)) == NULL) {
        e = ENOMEM;
        goto fail;
    }
    if ((e = lsock_read(sock, b, hdr, NULL, 0, deadline)) != 0) {
        free(b);
        goto fail;
    }
    *buf = b;
    *len = hdr;
    if (fd != NULL)
        *fd = got;
    else if (got >= 0)
        close(got);
    return 0;
fail:
    if (got >= 0)
        close(got);
    return e;
}

int
lsock_peer_gone(int sock)
{
    struct pollfd p = {.fd = sock, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}
