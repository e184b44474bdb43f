/* sock.c - peer-link byte streams: blocking TCP sockets for tcp://, nng_stream otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sock.h"

struct wsock {
    int fd;         /* a TCP socket, or -1 */
    int rd_ms;      /* SO_RCVTIMEO as set now */
    int wr_ms;      /* SO_SNDTIMEO as set now */
    nng_stream *st; /* otherwise */
    nng_aio *rd, *wr;
    uint8_t *rbuf;     /* wsock_buffer's read-ahead (tcp:// only), or NULL */
    size_t rcap;       /* its size */
    size_t rpos, rend; /* the bytes read ahead and not taken yet: rbuf[rpos..rend) */
};

struct wsock_listener {
    int fd;
    nng_stream_listener *nl;
    nng_aio *aio;
    int tls; /* nl is a tls+tcp:// listener */
};

static int
sys_err(int e)
{
    switch (e) {
    case EAGAIN: return NNG_ETIMEDOUT;
    case EPIPE:
    case ECONNRESET: return NNG_ECONNRESET;
    case ECONNREFUSED: return NNG_ECONNREFUSED;
    case ETIMEDOUT: return NNG_ETIMEDOUT;
    case ENOMEM: return NNG_ENOMEM;
    default: return NNG_ESYSERR | e;
    }
}

/* tcp_addr resolves "tcp://host:port" into ai (freeaddrinfo); NULL when url is not tcp://. */
static int
tcp_addr(const char *url, int passive, struct addrinfo **ai)
{
    char host[300], *colon;
    const char *hp;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = passive ? AI_PASSIVE : 0};

    *ai = NULL;
    if (strncmp(url, "tcp://", 6) != 0)
        return 0;
    hp = url + 6;
    if (strlen(hp) >= sizeof(host))
        return NNG_EADDRINVAL;
    if (hp[0] == '[') { /* [IPv6]:port */
        const char *rb = strchr(hp, ']');
        if (rb == NULL || rb[1] != ':')
            return NNG_EADDRINVAL;
        snprintf(host, sizeof(host), "%.*s", (int)(rb - hp - 1), hp + 1);
        colon = (char *)rb + 1;
    } else {
        if ((colon = strrchr(hp, ':')) == NULL)
            return NNG_EADDRINVAL;
        snprintf(host, sizeof(host), "%.*s", (int)(colon - hp), hp);
    }
    if (getaddrinfo(host[0] != '\0' && strcmp(host, "*") != 0 ? host : NULL, colon + 1, &hints,
                    ai) != 0)
        return NNG_EADDRINVAL;
    return 0;
}

static wsock *
sock_of_fd(int fd)
{
    wsock *s = calloc(1, sizeof(*s));
    int one = 1;
    if (s == NULL) {
        close(fd);
        return NULL;
    }
    s->fd = fd;
    s->rd_ms = s->wr_ms = -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return s;
}

static int
nng_sock(nng_stream *st, wsock **out)
{
    wsock *s = calloc(1, sizeof(*s));
    if (s == NULL || nng_aio_alloc(&s->rd, NULL, NULL) != 0 ||
        nng_aio_alloc(&s->wr, NULL, NULL) != 0) {
        if (s != NULL) {
            nng_aio_free(s->rd);
            free(s);
        }
        nng_stream_free(st);
        return NNG_ENOMEM;
    }
    s->fd = -1;
    s->st = st;
    *out = s;
    return 0;
}

/* connect_within connects fd to a within timeout_ms; 0 or an errno. */
static int
connect_within(int fd, const struct addrinfo *a, int timeout_ms)
{
    int fl = fcntl(fd, F_GETFL), e = 0;
    socklen_t el = sizeof(e);
    struct pollfd p = {.fd = fd, .events = POLLOUT};

    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        if (errno != EINPROGRESS)
            return errno;
        int r;
        while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
            ;
        if (r == 0)
            return ETIMEDOUT;
        if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
            return errno;
        if (e != 0)
            return e;
    }
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return 0;
}

int
wsock_dial(const char *url, nng_tls_config *tls, int timeout_ms, wsock **out)
{
    struct addrinfo *ai = NULL;
    nng_stream_dialer *d = NULL;
    nng_aio *aio = NULL;
    int rv, e = ECONNREFUSED;

    *out = NULL;
    if ((rv = tcp_addr(url, 0, &ai)) != 0)
        return rv;
    if (ai != NULL) {
        for (struct addrinfo *a = ai; a != NULL; a = a->ai_next) {
            int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
            if (fd < 0) {
                e = errno;
                continue;
            }
            if ((e = connect_within(fd, a, timeout_ms)) == 0) {
                freeaddrinfo(ai);
                return (*out = sock_of_fd(fd)) != NULL ? 0 : NNG_ENOMEM;
            }
            close(fd);
        }
        freeaddrinfo(ai);
        return sys_err(e);
    }
    if ((rv = nng_stream_dialer_alloc(&d, url)) == 0 && tls != NULL && strncmp(url, "tls+", 4) == 0)
        rv = nng_stream_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tls);
    if (rv == 0 && (rv = nng_aio_alloc(&aio, NULL, NULL)) == 0) {
        nng_aio_set_timeout(aio, timeout_ms);
        nng_stream_dialer_dial(d, aio);
        nng_aio_wait(aio);
        if ((rv = nng_aio_result(aio)) == 0)
            rv = nng_sock(nng_aio_get_output(aio, 0), out);
    }
    nng_aio_free(aio);
    nng_stream_dialer_free(d);
    return rv;
}

int
wsock_listener_set_tls(wsock_listener *l, nng_tls_config *tls)
{
    if (l == NULL || l->nl == NULL || tls == NULL || !l->tls)
        return 1;
    return nng_stream_listener_set_ptr(l->nl, NNG_OPT_TLS_CONFIG, tls) == 0 ? 0 : -1;
}

int
wsock_listen(const char *url, nng_tls_config *tls, wsock_listener **out, int *port)
{
    struct addrinfo *ai = NULL;
    wsock_listener *l;
    int rv, e = EADDRNOTAVAIL;

    *out = NULL;
    *port = 0;
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return NNG_ENOMEM;
    l->fd = -1;
    if ((rv = tcp_addr(url, 1, &ai)) != 0) {
        free(l);
        return rv;
    }
    if (ai != NULL) {
        for (struct addrinfo *a = ai; a != NULL && l->fd < 0; a = a->ai_next) {
            int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol), one = 1;
            if (fd < 0) {
                e = errno;
                continue;
            }
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 128) != 0) {
                e = errno;
                close(fd);
                continue;
            }
            l->fd = fd;
        }
        freeaddrinfo(ai);
        if (l->fd < 0) {
            free(l);
            return sys_err(e);
        }
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(l->fd, (struct sockaddr *)&ss, &sl) == 0)
            *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
        *out = l;
        return 0;
    }
    l->tls = tls != NULL && strncmp(url, "tls+", 4) == 0;
    if ((rv = nng_stream_listener_alloc(&l->nl, url)) != 0 ||
        (tls != NULL && strncmp(url, "tls+", 4) == 0 &&
         (rv = nng_stream_listener_set_ptr(l->nl, NNG_OPT_TLS_CONFIG, tls)) != 0) ||
        (rv = nng_stream_listener_listen(l->nl)) != 0 ||
        (rv = nng_aio_alloc(&l->aio, NULL, NULL)) != 0) {
        nng_stream_listener_free(l->nl);
        free(l);
        return rv;
    }
    if (nng_stream_listener_get_int(l->nl, NNG_OPT_TCP_BOUND_PORT, port) != 0)
        *port = 0;
    *out = l;
    return 0;
}

int
wsock_accept(wsock_listener *l, wsock **out)
{
    int rv;
    *out = NULL;
    if (l->fd >= 0) {
        for (;;) {
            int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                return (*out = sock_of_fd(fd)) != NULL ? 0 : NNG_ENOMEM;
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            /* shut down by wsock_listener_close (EINVAL), or out of descriptors */
            return errno == EINVAL ? NNG_ECLOSED : sys_err(errno);
        }
    }
    nng_stream_listener_accept(l->nl, l->aio);
    nng_aio_wait(l->aio);
    if ((rv = nng_aio_result(l->aio)) != 0)
        return rv == NNG_ECANCELED ? NNG_ECLOSED : rv;
    return nng_sock(nng_aio_get_output(l->aio, 0), out);
}

void
wsock_listener_close(wsock_listener *l)
{
    if (l == NULL)
        return;
    if (l->fd >= 0)
        shutdown(l->fd, SHUT_RDWR); /* wakes accept() */
    else
        nng_stream_listener_close(l->nl);
}

void
wsock_listener_free(wsock_listener *l)
{
    if (l == NULL)
        return;
    if (l->fd >= 0)
        close(l->fd);
    else
        nng_stream_listener_free(l->nl);
    nng_aio_free(l->aio);
    free(l);
}

/* set_timeout sets SO_RCVTIMEO or SO_SNDTIMEO when it changes. */
static void
set_timeout(wsock *s, int recv, int ms)
{
    int *cur = recv ? &s->rd_ms : &s->wr_ms;
    struct timeval tv = {.tv_sec = ms > 0 ? ms / 1000 : 0,
                         .tv_usec = ms > 0 ? (ms % 1000) * 1000 : 0};
    if (*cur == ms)
        return;
    if (setsockopt(s->fd, SOL_SOCKET, recv ? SO_RCVTIMEO : SO_SNDTIMEO, &tv, sizeof(tv)) == 0)
        *cur = ms;
}

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* step_ms: the wait for one system call, timeout_ms bounded by deadline_ms (0: none); -1 when
 * the deadline has passed. */
static int
step_ms(int timeout_ms, int64_t deadline_ms)
{
    if (timeout_ms < 0)
        timeout_ms = 0;
    if (deadline_ms > 0) {
        int64_t left = deadline_ms - now_ms();
        if (left <= 0)
            return -1;
        if (timeout_ms <= 0 || left < timeout_ms)
            timeout_ms = (int)left;
    }
    return timeout_ms;
}

/* io_result: what a blocking recv or send that returned r says: 0 (bytes moved), -1
 * (interrupted: call it again), or an error (NNG_ECLOSED when the peer closed). */
static int
io_result(ssize_t r)
{
    if (r > 0)
        return 0;
    if (r == 0)
        return NNG_ECLOSED;
    return errno == EINTR ? -1 : sys_err(errno);
}

/*
 * buffered_recv: sock_io's receive once the link reads ahead (wsock_buffer). What is read
 * ahead is taken first; what is left of a piece of at least rcap bytes is read straight into
 * it; a smaller one is taken from one recv of up to rcap bytes (all the frames that came
 * together, at the cost of one system call instead of three per frame).
 */
static int
buffered_recv(wsock *s, nng_iov *iov, unsigned n, int timeout_ms, int64_t deadline_ms)
{
    for (unsigned i = 0; i < n; i++) {
        uint8_t *dst = iov[i].iov_buf;
        size_t need = iov[i].iov_len;
        while (need > 0) {
            ssize_t r;
            int ms, rv;
            if (s->rpos < s->rend) {
                size_t k = s->rend - s->rpos < need ? s->rend - s->rpos : need;
                memcpy(dst, s->rbuf + s->rpos, k);
                s->rpos += k;
                dst += k;
                need -= k;
                continue;
            }
            if ((ms = step_ms(timeout_ms, deadline_ms)) < 0)
                return NNG_ETIMEDOUT;
            set_timeout(s, 1, ms);
            if (need >= s->rcap)
                r = recv(s->fd, dst, need, MSG_WAITALL);
            else
                r = recv(s->fd, s->rbuf, s->rcap, 0);
            if ((rv = io_result(r)) < 0)
                continue;
            if (rv != 0)
                return rv;
            if (need >= s->rcap) {
                dst += r;
                need -= (size_t)r;
            } else {
                s->rpos = 0;
                s->rend = (size_t)r;
            }
        }
    }
    return 0;
}

/* sock_io: wsock_io, each step also bounded by deadline_ms (monotonic; 0: none). */
static int
sock_io(wsock *s, nng_iov *iov, unsigned n, int recv, int timeout_ms, int64_t deadline_ms)
{
    while (n > 0 && iov[0].iov_len == 0)
        iov++, n--;
    if (recv && s->rbuf != NULL)
        return buffered_recv(s, iov, n, timeout_ms, deadline_ms);
    while (n > 0) {
        size_t got;
        if ((timeout_ms = step_ms(timeout_ms, deadline_ms)) < 0)
            return NNG_ETIMEDOUT;
        if (s->fd >= 0) {
            struct iovec v[4];
            struct msghdr m = {.msg_iov = v, .msg_iovlen = n};
            ssize_t r;
            int rv;
            for (unsigned i = 0; i < n && i < 4; i++)
                v[i] = (struct iovec){iov[i].iov_buf, iov[i].iov_len};
            m.msg_iovlen = n < 4 ? n : 4;
            set_timeout(s, recv, timeout_ms);
            r = recv ? recvmsg(s->fd, &m, MSG_WAITALL) : sendmsg(s->fd, &m, MSG_NOSIGNAL);
            if ((rv = io_result(r)) < 0)
                continue;
            if (rv != 0)
                return rv;
            got = (size_t)r;
        } else {
            nng_aio *aio = recv ? s->rd : s->wr;
            int rv;
            nng_aio_set_iov(aio, n, iov);
            nng_aio_set_timeout(aio, timeout_ms > 0 ? timeout_ms : NNG_DURATION_INFINITE);
            if (recv)
                nng_stream_recv(s->st, aio);
            else
                nng_stream_send(s->st, aio);
            nng_aio_wait(aio);
            if ((rv = nng_aio_result(aio)) != 0)
                return rv;
            if ((got = nng_aio_count(aio)) == 0)
                return NNG_ECLOSED;
        }
        while (n > 0 && got >= iov[0].iov_len) { /* advance past what went */
            got -= iov[0].iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov[0].iov_buf = (uint8_t *)iov[0].iov_buf + got;
            iov[0].iov_len -= got;
        }
    }
    return 0;
}

int
wsock_io(wsock *s, nng_iov *iov, unsigned n, int recv, int timeout_ms)
{
    return sock_io(s, iov, n, recv, timeout_ms, 0);
}

int
wsock_buffer(wsock *s, size_t cap)
{
    if (s->fd < 0 || s->rbuf != NULL || cap == 0)
        return 0;
    if ((s->rbuf = malloc(cap)) == NULL)
        return NNG_ENOMEM;
    s->rcap = cap;
    s->rpos = s->rend = 0;
    return 0;
}

int
wsock_read_now(wsock *s, uint8_t *dst, size_t len, size_t *got, int *reads)
{
    *got = 0;
    if (s->fd < 0 || s->rbuf == NULL)
        return NNG_ENOTSUP;
    while (*got < len) {
        size_t need = len - *got;
        ssize_t r;
        if (s->rpos < s->rend) {
            size_t k = s->rend - s->rpos < need ? s->rend - s->rpos : need;
            memcpy(dst + *got, s->rbuf + s->rpos, k);
            s->rpos += k;
            *got += k;
            continue;
        }
        if (*reads <= 0)
            return 0;
        --*reads;
        if (need >= s->rcap)
            r = recv(s->fd, dst + *got, need, MSG_DONTWAIT);
        else
            r = recv(s->fd, s->rbuf, s->rcap, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 ? NNG_ECLOSED : sys_err(errno);
        if (need >= s->rcap) {
            *got += (size_t)r;
        } else {
            s->rpos = 0;
            s->rend = (size_t)r;
        }
    }
    return 0;
}

int
wsock_set_lowat(wsock *s, int bytes)
{
    return setsockopt(s->fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof(bytes));
}

long
wsock_queued(const wsock *s)
{
    int n = 0;
    return s->fd >= 0 && ioctl(s->fd, FIONREAD, &n) == 0 ? n : -1;
}

int
wsock_fd(const wsock *s)
{
    return s->rbuf != NULL ? s->fd : -1;
}

int
wsock_buffered(const wsock *s)
{
    return s->rpos < s->rend;
}

int
wsock_send_now(wsock *s, const uint8_t *buf, size_t len, size_t *sent)
{
    *sent = 0;
    if (s->fd < 0)
        return NNG_ENOTSUP;
    while (*sent < len) {
        ssize_t r = send(s->fd, buf + *sent, len - *sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (r < 0)
            return sys_err(errno);
        *sent += (size_t)r;
    }
    return 0;
}

int
wsock_io_by(wsock *s, nng_iov *iov, unsigned n, int recv, int64_t deadline_ms)
{
    return sock_io(s, iov, n, recv, 0, deadline_ms);
}

int
wsock_peer(const wsock *s, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    nng_sockaddr sa;
    const void *a;
    int af;

    buf[0] = '\0';
    if (s->fd >= 0) {
        if (getpeername(s->fd, (struct sockaddr *)&ss, &sl) != 0)
            return -1;
        af = ss.ss_family;
        a = af == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                           : (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
    } else {
        if (nng_stream_get_addr(s->st, NNG_OPT_REMADDR, &sa) != 0)
            return -1;
        af = sa.s_family == NNG_AF_INET6 ? AF_INET6 : sa.s_family == NNG_AF_INET ? AF_INET : -1;
        a = af == AF_INET6 ? (const void *)sa.s_in6.sa_addr : (const void *)&sa.s_in.sa_addr;
    }
    if ((af != AF_INET && af != AF_INET6) || inet_ntop(af, a, buf, (socklen_t)len) == NULL) {
        snprintf(buf, len, "local"); /* ipc:// and the like: one source */
        return 0;
    }
    return 0;
}

void
wsock_close(wsock *s)
{
    if (s == NULL)
        return;
    if (s->fd >= 0)
        shutdown(s->fd, SHUT_RDWR); /* blocked calls return; the descriptor stays until free */
    else
        nng_stream_close(s->st);
}

void
wsock_free(wsock *s)
{
    if (s == NULL)
        return;
    if (s->fd >= 0) {
        close(s->fd);
    } else {
        nng_stream_free(s->st);
        nng_aio_free(s->rd);
        nng_aio_free(s->wr);
    }
    free(s->rbuf);
    free(s);
}
