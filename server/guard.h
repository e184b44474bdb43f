/*
 * guard.h - what a connection to an RPC server may cost before it proved the
 * shared secret, and how connections are dropped without tripping NNG
 * 1.5.2's reaper hang. Internal to server/.
 *
 * NNG 1.5.2 hangs its reaper for good (nanomsg/nng#1636) when a TCP pipe is
 * closed from our side (nng_pipe_close) while its receive callback is
 * resubmitting a partial read: the read is silently dropped and
 * rep0_pipe_stop waits for it forever. So the guard never closes a started
 * pipe itself. It sheds a connection by shutdown(SHUT_RD) of the pipe's TCP
 * socket (found by its address pair): NNG's read then sees the end of the
 * stream once it has read what was queued, and NNG closes the pipe from that
 * read's own callback, so no read is being resubmitted meanwhile. Not
 * SHUT_RDWR: that also fails a reply being sent, and the send's error path
 * closes the pipe from another thread while the receive callback may be
 * resubmitting a partial read, which is the hang (seen once in CI: an ASan
 * flood run kept 16,345 descriptors). Only a connection still there a round later (a
 * peer that never stops sending) gets SHUT_RDWR. Pipes over the caps are closed while NNG
 * still announces them (NNG_PIPE_EV_ADD_PRE), before any I/O is started on
 * them, which is safe.
 *
 * With a token (auth), a connection that has not proved the secret:
 *   - is refused at once beyond GUARD_PENDING_MAX such connections in all, or
 *     GUARD_PENDING_PER_SOURCE from one source address;
 *   - is shed when it has not proved the secret GUARD_DEADLINE_MS after it
 *     came (the whole handshake, however slowly its bytes come);
 *   - gets at most GUARD_CALLS_MAX calls answered: later ones are dropped
 *     unanswered, so the replies queued on it stay far below a socket
 *     buffer and never go out in parts (no partial send to race with).
 * Any connection refused or sent a malformed envelope is shed after
 * GUARD_SHED_GRACE_MS (for the reply to leave), by one reaper thread that
 * scans the process's descriptors at most every GUARD_ROUND_MS.
 */
#ifndef A2A_SERVER_GUARD_H
#define A2A_SERVER_GUARD_H

#include <nng/nng.h>

#define GUARD_DEADLINE_MS 5000
#define GUARD_PENDING_MAX 128
#define GUARD_PENDING_PER_SOURCE 32
#define GUARD_CALLS_MAX 4
#define GUARD_SHED_GRACE_MS 100
#define GUARD_ROUND_MS 50
#define GUARD_IDLE_MS 1000 /* the guard's round when no connection is to prove or to be shed */

typedef struct guard guard;

/*
 * guard_alloc starts the reaper thread of a server on url (for its log
 * lines); auth: connections must prove the secret (else each is trusted
 * from the start). NULL when out of memory or threads. Free with guard_free.
 */
guard *guard_alloc(const char *url, int auth);

/* guard_free stops the reaper and frees g; NULL is fine. */
void guard_free(guard *g);

/* guard_pipe_add: a new connection (from NNG_PIPE_EV_ADD_PRE); -1 when over a cap, and the
 * caller closes it right there. */
int guard_pipe_add(guard *g, nng_pipe p);

/* guard_pipe_gone forgets p (NNG_PIPE_EV_REM_POST). */
void guard_pipe_gone(guard *g, nng_pipe p);

/* guard_pipe_live: p is a connection NNG has not removed yet. */
int guard_pipe_live(guard *g, uint32_t pipe_id);

/* guard_proved: p proved the secret; no deadline or call limit any more. */
void guard_proved(guard *g, nng_pipe p);

/* guard_call counts a call on p: 1 when it is to be answered, 0 when it is to be dropped (p is
 * being shed, or used up its calls without proving the secret, and is shed now). */
int guard_call(guard *g, nng_pipe p);

/* guard_shed sheds p GUARD_SHED_GRACE_MS from now (refused, or malformed bytes). */
void guard_shed(guard *g, nng_pipe p);

/* guard_note logs one refusal, at most a few a second (the rest are counted). */
void guard_note(guard *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* guard_shed_all sheds every connection and waits at most ms for NNG to drop them: call it
 * after closing the listener and before nng_close, which would close them itself. */
void guard_shed_all(guard *g, int ms);

#endif
