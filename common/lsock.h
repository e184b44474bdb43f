/*
 * lsock.h - framed messages over a local (AF_UNIX, SOCK_STREAM) socket, with
 * at most one file descriptor passed alongside (SCM_RIGHTS).
 *
 * NNG 1.5 cannot pass descriptors, so the job-to-worker socket is a plain
 * one (docs/ARCHITECTURE.md, "Local sessions"). A frame is a u32 length in
 * native byte order (both ends share a kernel) and that many bytes: one RPC
 * envelope of common/wire.h. A descriptor travels with the frame's first
 * byte. The reader checks the length against its limit before it allocates.
 */
#ifndef A2A_COMMON_LSOCK_H
#define A2A_COMMON_LSOCK_H

#include <stddef.h>
#include <stdint.h>

#define LSOCK_LOCAL_LABEL_SERVER "a2a local server" /* AuthChallenge proofs on the socket */
#define LSOCK_LOCAL_LABEL_CLIENT "a2a local client"

/*
 * lsock_send writes one frame of len bytes, with descriptor fd (-1: none).
 * timeout_ms < 0 waits for ever. 0, or an errno (ETIMEDOUT, EPIPE, ...).
 */
int lsock_send(int sock, const void *buf, size_t len, int fd, int64_t timeout_ms);

/*
 * lsock_recv reads one frame of at most max bytes into *buf (malloc'd; the
 * caller frees it) and *len; a descriptor that came with it goes to *fd
 * (else -1; a second one is closed, and so is the frame's when fd is NULL).
 * 0, ECONNRESET at the end of the stream (or within a frame), EMSGSIZE for a
 * frame over max, ETIMEDOUT when no byte of a frame came in time (the stream
 * is still in step), EIO when the time ran out within a frame, or another
 * errno.
 */
int lsock_recv(int sock, uint8_t **buf, size_t *len, size_t max, int *fd, int64_t timeout_ms);

/* lsock_peer_gone reports (without reading) whether the other end closed or reset sock. */
int lsock_peer_gone(int sock);

#endif
