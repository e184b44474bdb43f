/*
 * sock.h - the byte streams of the peer links. A tcp:// link is a plain TCP
 * socket driven with blocking calls from the thread that uses it: the kernel
 * wakes that thread directly, with no I/O thread in between (NNG's aio path
 * costs two thread hand-offs per partial transfer, see NNG-NOTES.md). Other
 * schemes (tls+tcp://, ipc://) go through nng_stream.
 *
 * Errors are NNG error numbers (NNG_ETIMEDOUT, NNG_ECLOSED, ...; a system
 * error e as NNG_ESYSERR | e), so nng_strerror names them.
 */
#ifndef A2A_WORKER_SOCK_H
#define A2A_WORKER_SOCK_H

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>
#include <stdint.h>

typedef struct wsock wsock;
typedef struct wsock_listener wsock_listener;

/* wsock_dial connects to url within timeout_ms (tls: for tls+tcp://, may be NULL). */
int wsock_dial(const char *url, nng_tls_config *tls, int timeout_ms, wsock **out);

/* wsock_listen listens on url; *port is the bound TCP port (0 when not TCP). */
int wsock_listen(const char *url, nng_tls_config *tls, wsock_listener **out, int *port);

/* wsock_listener_set_tls: the TLS configuration of the links accepted from now on (SIGHUP);
 * 1 for a listener without TLS (plain TCP), 0 when set, -1 when NNG refused it. */
int wsock_listener_set_tls(wsock_listener *l, nng_tls_config *tls);

/* wsock_accept waits for the next link; NNG_ECLOSED once the listener is closed. */
int wsock_accept(wsock_listener *l, wsock **out);

/* wsock_listener_close makes a waiting wsock_accept return; wsock_listener_free frees. */
void wsock_listener_close(wsock_listener *l);
void wsock_listener_free(wsock_listener *l);

/*
 * wsock_io sends or receives all of iov[0..n) (n <= 4), waiting at most
 * timeout_ms (<= 0: no limit) for each step; iov is used up. 0, or an error.
 * One thread may send and one receive at a time.
 */
int wsock_io(wsock *s, nng_iov *iov, unsigned n, int recv, int timeout_ms);

/*
 * wsock_buffer makes s read ahead into a buffer of cap bytes of its own from now on: a receive
 * takes what came together in one system call, and later receives take from it first. For a
 * tcp:// link once its handshake is over (before it, a peer that has not proved the secret
 * costs no more than an unbuffered socket); other streams read as before. 0, or NNG_ENOMEM.
 */
int wsock_buffer(wsock *s, size_t cap);

/*
 * wsock_read_now reads what of dst[0..len) is there now, without waiting, read ahead first:
 * *got bytes (fewer than len, maybe 0, when no more has come yet, or when it would take more
 * than *reads system calls; *reads counts down). 0, or an error (NNG_ECLOSED once the peer
 * closed; NNG_ENOTSUP unless s reads ahead: wsock_buffer).
 */
int wsock_read_now(wsock *s, uint8_t *dst, size_t len, size_t *got, int *reads);

/* wsock_set_lowat: poll and epoll say the socket of a tcp:// link is readable once bytes bytes
 * have come (SO_RCVLOWAT; its end and errors at once); 0, or -1 with errno. */
int wsock_set_lowat(wsock *s, int bytes);

/* wsock_queued: the bytes the socket holds, not read yet (FIONREAD), or -1. */
long wsock_queued(const wsock *s);

/* wsock_fd: the socket of a tcp:// link that reads ahead, for poll and epoll; else -1. */
int wsock_fd(const wsock *s);

/* wsock_buffered: whether bytes read ahead are waiting to be taken (the socket may then look
 * idle to poll although a frame is there). */
int wsock_buffered(const wsock *s);

/*
 * wsock_send_now sends what of buf[0..len) the socket takes without waiting (*sent bytes:
 * fewer than len when its buffer is full); 0, an error, or NNG_ENOTSUP for a stream that
 * cannot (TLS: send with wsock_io).
 */
int wsock_send_now(wsock *s, const uint8_t *buf, size_t len, size_t *sent);

/* wsock_io_by is wsock_io with one deadline (rpc_now_ms's clock) for all of it, however the
 * bytes trickle in: NNG_ETIMEDOUT once it has passed. */
int wsock_io_by(wsock *s, nng_iov *iov, unsigned n, int recv, int64_t deadline_ms);

/* wsock_peer writes the peer's IP address into buf ("local" when it has none); 0 or -1. */
int wsock_peer(const wsock *s, char *buf, size_t len);

/* wsock_close makes pending and later I/O on s fail (from any thread); wsock_free frees it. */
void wsock_close(wsock *s);
void wsock_free(wsock *s);

#endif
